"""Printing numbers in the safe direction.

A printed ε or δ that is an upper bound, or a σ / noise scale that must be at least what
was calibrated, is rounded **up** to the digits shown; a printed lower bound is rounded
**down**. Rounding to nearest could print an ε below the certified one, or a σ whose δ
misses the target (``16.30413342`` for a certified 16.304133415…). Exact decimal
arithmetic (:mod:`decimal`) does the rounding, so the printed value is never on the
unsafe side of the float it stands for.

* :func:`up` / :func:`down` — ``digits`` significant digits, in the ``g`` style.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

__all__ = ["down", "up"]


def _directed(value: float, digits: int, rounding: str) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    exact = Decimal(value)  # the float's exact decimal value
    exponent = exact.adjusted() - digits + 1
    rounded = exact.quantize(Decimal(1).scaleb(exponent), rounding=rounding)
    if rounded.adjusted() != exact.adjusted():  # 9.99… rounded up to 10: one digit less
        rounded = rounded.quantize(Decimal(1).scaleb(exponent + 1), rounding=rounding)
    power = rounded.adjusted()
    if -4 <= power < digits:  # fixed notation, as the "g" format chooses
        places = max(digits - 1 - power, 0)
        text = f"{rounded:.{places}f}"
    else:
        mantissa = rounded.scaleb(-power)
        text = f"{mantissa:.{digits - 1}f}e{power:+03d}"
    if "." in text:  # drop trailing zeros, as "g" does
        head, _, tail = text.partition("e")
        head = head.rstrip("0").rstrip(".")
        text = head + ("e" + tail if tail else "")
    return text


def up(value: float, digits: int = 6) -> str:
    """``value`` with ``digits`` significant digits, rounded towards +∞ (never below it)."""
    return _directed(float(value), digits, ROUND_CEILING)


def down(value: float, digits: int = 6) -> str:
    """``value`` with ``digits`` significant digits, rounded towards −∞ (never above it)."""
    return _directed(float(value), digits, ROUND_FLOOR)
