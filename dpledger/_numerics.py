"""Log-space numerical helpers, and rounding in the privacy-safe direction."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

__all__ = [
    "SAFETY_ULPS",
    "div_down",
    "div_up",
    "float_up",
    "log1mexp",
    "logsubexp",
    "mul_up",
    "ratio_squared_up",
    "round_up",
    "square_up",
    "sum_up",
]

SAFETY_ULPS = 2.0**-48
"""Relative slack (≈ 3.6e-15) added to reported privacy losses.

It covers the few rounding errors of float64 arithmetic between a bound's formula and
the returned float, so that a reported ε or δ is never below the bound it states.
"""


def round_up(x: float) -> float:
    """Return ``x`` increased by a relative :data:`SAFETY_ULPS` (the safe direction for ε, δ)."""
    if math.isnan(x):
        raise ValueError("internal error: a privacy loss evaluated to NaN")
    if x == 0.0 or math.isinf(x):
        return x
    return x + abs(x) * SAFETY_ULPS + 5e-324


def log1mexp(x: float) -> float:
    """Return log(1 − eˣ) for x ≤ 0, accurately (Mächler 2012)."""
    if x > 0:
        raise ValueError(f"log1mexp needs x <= 0; found {x!r}")
    if x == 0:
        return -math.inf
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def logsubexp(a: float, b: float) -> float:
    """Return log(eᵃ − eᵇ) for a ≥ b."""
    if b == -math.inf:
        return a
    return a + log1mexp(b - a)


def float_up(value: Fraction) -> float:
    """The smallest float ≥ ``value`` (exact directed rounding of a rational).

    A positive value below the smallest subnormal gives 5e-324, never 0 (a positive
    privacy loss is never reported as none); one above the largest float gives ``inf``.
    """
    try:
        result = float(value)
    except OverflowError:
        return math.inf if value > 0 else -sys.float_info.max
    if math.isinf(result):
        return result if result > 0 else -sys.float_info.max
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def float_down(value: Fraction) -> float:
    """The largest float ≤ ``value`` (exact directed rounding of a rational; lower bounds).

    One below the most negative float gives ``-inf``, one above the largest the largest.
    """
    try:
        result = float(value)
    except OverflowError:
        return sys.float_info.max if value > 0 else -math.inf
    if math.isinf(result):
        return result if result < 0 else sys.float_info.max
    if Fraction(result) > value:
        result = math.nextafter(result, -math.inf)
    return result


def sqrt_up(value: float) -> float:
    """√value rounded up (exactly): the smallest float whose square is ≥ ``value``."""
    root = math.sqrt(value)
    if math.isfinite(root) and Fraction(root) ** 2 < Fraction(value):
        root = math.nextafter(root, math.inf)
    return root


def sqrt_down(value: float) -> float:
    """√value rounded down (exactly): the largest float whose square is ≤ ``value``."""
    root = math.sqrt(value)
    if math.isfinite(root) and Fraction(root) ** 2 > Fraction(value):
        root = math.nextafter(root, -math.inf)
    return root


def square_up(value: float, divisor: int = 1) -> float:
    """``value² / divisor`` rounded up, exactly (never 0 for a non-zero value)."""
    if math.isinf(value):
        return math.inf
    return float_up(Fraction(value) ** 2 / divisor)


def ratio_squared_up(numerator: float, denominator: float, divisor: int = 1) -> float:
    """``(numerator / denominator)² / divisor`` rounded up, exactly — e.g. ρ = Δ²/(2σ²).

    Rational quantities are computed exactly and rounded once, so an exactly met budget
    (σ = Δ = 1 is exactly 0.5-zCDP) is reported exactly, and a tiny one never underflows
    to a false zero.
    """
    if math.isinf(numerator) or denominator == 0:
        return math.inf
    return float_up((Fraction(numerator) / Fraction(denominator)) ** 2 / divisor)


def sum_up(*terms: float) -> float:
    """Σ terms rounded up: exact rational sum, then the next float at or above it.

    Composition adds privacy parameters; doing it exactly keeps a budget of exactly
    2e-6 able to hold two releases of 1e-6, while never rounding a total down.
    """
    if any(math.isinf(t) for t in terms):
        return math.inf
    return float_up(sum((Fraction(t) for t in terms), Fraction(0)))


def mul_up(value: float, count: int) -> float:
    """``value · count`` rounded up (exactly)."""
    if math.isinf(value):
        return math.inf if count else 0.0
    return float_up(Fraction(value) * count)


def div_down(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` rounded down (exactly), for finite positive floats."""
    exact = Fraction(numerator) / Fraction(denominator)
    result = float(exact)
    if Fraction(result) > exact:
        result = math.nextafter(result, -math.inf)
    return result


def div_up(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` rounded up (exactly), for finite positive floats."""
    return float_up(Fraction(numerator) / Fraction(denominator))
