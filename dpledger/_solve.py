"""The one safe-side root finder every inversion and calibration in dpledger uses.

Problem: ``excess`` is continuous and non-increasing in ``x`` (e.g. log δ(ε) − log δ*
as a function of ε, or of σ); find the smallest ``x`` in ``[lo, hi]`` with
``excess(x) <= 0``. The root is bracketed, refined with Brent's method, then
*re-evaluated*: if float rounding left it on the wrong side, it is stepped up until
the condition holds. The answer therefore always satisfies the condition as
evaluated; it is never "close enough on either side".

When no safe value exists in the bracket it raises :class:`NoSafeValueError`, a neutral
internal error: an accountant's inversion maps it to ``NotApplicableError`` (its
``_evaluate`` isolates arithmetic failures), a calibration to ``CalibrationError``, a
filter's construction to ``InvalidArgumentError`` — each caller says what failed in its
own terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["NoSafeValueError", "largest_holding", "smallest_satisfying", "step_up"]

_BIG = 1e300


class NoSafeValueError(ArithmeticError):
    """No value in the bracket satisfies the condition (internal; callers map it).

    Attributes:
        bracket: The (lo, hi) searched.
    """

    def __init__(self, message: str, bracket: tuple[float, float]) -> None:
        super().__init__(message)
        self.bracket = bracket


def _finite(value: float) -> float:
    if math.isnan(value):
        raise ValueError("internal error: the function being solved returned NaN")
    if value == 0.0:
        # "exactly on target" is safe: keep it strictly negative so that Brent's method
        # does not stop at a bracket end that merely touches the target
        return -1e-300
    return max(-_BIG, min(_BIG, value))


def smallest_satisfying(
    excess: Callable[[float], float],
    lo: float,
    hi: float,
    *,
    rtol: float = 8.9e-16,
    xtol: float = 1e-300,
    what: str = "parameter",
) -> float:
    """Return (up to ``rtol``) the smallest ``x`` in ``[lo, hi]`` with ``excess(x) <= 0``.

    Args:
        excess: Continuous, non-increasing function; ``excess(x) <= 0`` means "x is safe".
        lo: Lower end of the search. Returned as is if it is already safe.
        hi: Upper end; must be safe, otherwise :class:`NoSafeValueError` is raised.
        rtol: Relative tolerance of the root.
        xtol: Absolute tolerance of the root.
        what: Name of the parameter, for error messages.

    Returns:
        ``x`` with ``excess(x) <= 0`` (verified by evaluation), within about ``rtol`` of
        the smallest such ``x``.

    Raises:
        NoSafeValueError: ``hi`` is not safe, or no safe value could be confirmed.
    """
    if excess(lo) <= 0:
        return lo
    f_hi = excess(hi)
    if f_hi > 0:
        raise NoSafeValueError(
            f"no {what} in [{lo!r}, {hi!r}] meets the target (at {what} = {hi!r} the "
            f"target is exceeded by {f_hi!r} in log space)",
            bracket=(lo, hi),
        )
    # scipy.optimize is imported here, not at module level: it costs ~0.1 s at import
    # and most programs that import dpledger never solve anything (issue #32)
    from scipy import optimize

    try:
        root = float(
            optimize.brentq(
                lambda x: _finite(excess(x)),
                lo,
                hi,
                xtol=xtol,
                rtol=max(rtol, 8.9e-16),
                maxiter=500,
            )
        )
    except RuntimeError:
        # Brent did not converge (extreme scales): bisect, keeping excess(safe) <= 0, so
        # the value returned is still verified safe (never a raw RuntimeError).
        unsafe, safe = lo, hi
        for _ in range(2200):
            mid = unsafe + (safe - unsafe) / 2
            if mid in (unsafe, safe):
                break
            if excess(mid) <= 0:
                safe = mid
            else:
                unsafe = mid
        return safe
    # Safe-side step: re-evaluate, and walk up by growing steps if needed. The root is
    # within ~rtol of the boundary: start stepping at a fraction of that scale (fine
    # enough to stay within rtol of the smallest safe x, few doublings to reach it).
    return step_up(
        lambda x: excess(x) <= 0,
        root,
        first_step=max(abs(root) * max(rtol / 16, 2.0**-50), xtol),
        high=hi,
        what=what,
    )


def step_up(
    holds: Callable[[float], bool],
    start: float,
    *,
    first_step: float | None = None,
    relative: float = 2.0**-40,
    high: float = math.inf,
    tries: int = 200,
    what: str = "parameter",
) -> float:
    """The first of ``start``, ``start + s``, ``start + 3s``, … where ``holds`` (safe side).

    The one "step to the safe side" of every calibration (capped at ``high``).

    A value computed in floating point (a root, a scaled noise, a rounded share) can land
    a hair on the unsafe side of an exact test; this walks it up by a step that doubles
    each time, so a value whose last bits carry no precision (a subnormal, a huge scale)
    still gets there in a few dozen evaluations, and the answer is always one where
    ``holds`` was *seen* to be true. ``holds(high)`` is trusted when the walk reaches it
    (the caller has checked the bracket's upper end).

    Args:
        holds: The exact test ("this noise is accepted"), non-decreasing in its argument.
        start: The first value tried.
        first_step: The first (absolute) step; default ``relative · |start|``.
        relative: The default first step relative to ``start``.
        high: The bracket's safe upper end (never exceeded).
        tries: Evaluations before giving up.
        what: The parameter's name, for the error message.

    Raises:
        NoSafeValueError: No value tried held.
    """
    x = start
    step = first_step if first_step is not None else max(abs(start) * relative, 5e-324)
    for _ in range(tries):
        if x >= high:
            return high
        if holds(x):
            return x
        x = min(high, x + step)
        step *= 2.0
    raise NoSafeValueError(
        f"could not confirm a safe {what} near {start!r} (up to {x!r})", bracket=(start, x)
    )


def largest_holding(
    holds: Callable[[float], bool], low: float, high: float, *, rtol: float = 1e-12
) -> float:
    """The largest ``x`` found in [low, high] where ``holds(x)``, by bisection.

    ``holds(low)`` must be true (the caller has checked it). Only evaluated points are
    returned — a certified lower bound is one where the condition was *seen* to hold,
    never a root the search merely bracketed.
    """
    for _ in range(200):
        if high - low <= rtol * high:
            break
        middle = (low + high) / 2
        if holds(middle):
            low = middle
        else:
            high = middle
    return low
