"""Validation helpers shared by every public constructor and function.

Each helper checks one argument and raises an error whose message names the argument,
states the requirement and shows the value found, e.g.
"`sigma` must be positive and finite. Found -1.0."
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "check_callable",
    "check_choice",
    "check_int_at_least",
    "check_nonnegative",
    "check_positive",
    "check_probability",
    "check_real",
    "check_reals",
]


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, shortened for messages (a 400-digit integer is not a message)."""
    try:
        text = repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to show>"
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-8:]} ({len(text)} chars)"


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a float, refusing non-real types, booleans and NaN.

    Accepts int, float, Fraction, Decimal-free ``numbers.Real`` and numpy scalars. A value
    beyond the float range (``10**400``) becomes ±inf, which the range checks then refuse
    where infinity is not allowed; it never raises a raw OverflowError.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise InvalidArgumentTypeError(
            f"`{name}` must be a real number. Found {shown(value)} of type {type(value).__name__}."
        )
    try:
        result = float(value)
    except OverflowError:
        result = math.inf if value > 0 else -math.inf  # type: ignore[operator]
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(
            f"`{name}` must be a real number. Found {shown(value)}."
        ) from error
    if math.isnan(result):
        raise InvalidArgumentError(f"`{name}` must be a number, not NaN. Found {shown(value)}.")
    if result == 0 and value != 0:
        # a positive (or negative) value below the smallest float: refuse rather than
        # silently use 0 (for a privacy parameter 0 would be the unsafe direction)
        raise InvalidArgumentError(
            f"`{name}` is too small to represent as a float (below 5e-324). Found {shown(value)}."
        )
    return result


def check_positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is > 0 (and finite unless ``allow_inf``)."""
    result = check_real(name, value)
    if not result > 0 or (math.isinf(result) and not allow_inf):
        need = "positive" if allow_inf else "positive and finite"
        raise InvalidArgumentError(f"`{name}` must be {need}. Found {shown(value)}.")
    return result


def check_nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is >= 0 (and finite unless ``allow_inf``)."""
    result = check_real(name, value)
    if not result >= 0 or (math.isinf(result) and not allow_inf):
        need = "non-negative" if allow_inf else "non-negative and finite"
        raise InvalidArgumentError(f"`{name}` must be {need}. Found {shown(value)}.")
    return result


def check_probability(
    name: str, value: Any, *, low_open: bool = False, high_open: bool = True
) -> float:
    """Return ``value`` as a float if it lies in the stated interval within [0, 1].

    Args:
        name: The argument's name, for the message.
        value: The value to check.
        low_open: Exclude 0.
        high_open: Exclude 1 (the default: δ = 1 is no guarantee at all).
    """
    result = check_real(name, value)
    low_ok = result > 0 if low_open else result >= 0
    high_ok = result < 1 if high_open else result <= 1
    if not (low_ok and high_ok):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise InvalidArgumentError(f"`{name}` must lie in {interval}. Found {shown(value)}.")
    return result


def check_int_at_least(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an int if it is an integer (not a bool) >= ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise InvalidArgumentTypeError(
            f"`{name}` must be an integer. Found {shown(value)} of type {type(value).__name__}."
        )
    result = int(value)
    if result < minimum:
        raise InvalidArgumentError(
            f"`{name}` must be an integer >= {minimum}. Found {shown(value)}."
        )
    return result


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise InvalidArgumentError(f"`{name}` must be one of {options}. Found {shown(value)}.")
    return value


def check_callable(name: str, value: Any) -> Any:
    """Return ``value`` if it is callable."""
    if not callable(value):
        raise InvalidArgumentTypeError(
            f"`{name}` must be a callable. Found {shown(value)} of type {type(value).__name__}."
        )
    return value


def check_reals(name: str, values: Any) -> list[float]:
    """Return a non-empty sequence of real numbers as floats (each checked by check_real)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidArgumentTypeError(
            f"`{name}` must be a sequence of numbers. Found {shown(values)} of type "
            f"{type(values).__name__}."
        )
    out = [check_real(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if not out:
        raise InvalidArgumentError(f"`{name}` must contain at least one number. Found none.")
    return out
