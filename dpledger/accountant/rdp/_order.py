"""The search for the best Rényi order: minimise an objective over the real α > 1.

Every α > 1 gives a valid bound (in the conversion to (ε, δ), and in the ledger's Rényi
budgets), so the search affects only how tight the answer is, never its validity: a
log-spaced scan seeds a bounded Brent search in the continuous order, and no fixed range
limits it (:func:`minimise_over_order`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# The scan only seeds the continuous search: every α > 1 gives a valid bound, and the
# bounded Brent step refines α over the reals. Integer orders are used where possible
# because the subsampled-Gaussian curve is a cheap finite sum there (MTZ19 §3.2). The scan
# is not a cap: where the objective still falls at either end, the search walks on
# (α − 1 halved towards 1, α doubled upwards) until it rises — see minimise_over_order.
_SCAN = np.unique(
    np.concatenate(
        [
            1.0 + np.logspace(-4, -0.2, 12),
            np.arange(2.0, 33.0),
            np.round(np.logspace(np.log10(36.0), 5.0, 60)),
        ]
    )
)
_MAX_ORDER = 1e300
"""Where the upward walk stops (α·R(α) must stay finite); never reached in practice."""
_MIN_ORDER_GAP = 1e-300
"""Where the downward walk towards α = 1 stops (α − 1 must stay a positive float)."""


def _walk(
    objective: Callable[[float], float], start: float, value: float, step: Callable[[float], float]
) -> list[tuple[float, float]]:
    """Orders beyond ``start`` (each ``step`` of the last) while the objective falls.

    Returns the visited (order, value) pairs, ending with the first that does not fall
    (or at the representable limit).
    """
    visited: list[tuple[float, float]] = []
    alpha = start
    while True:
        nxt = step(alpha)
        if not (1.0 + _MIN_ORDER_GAP < nxt < _MAX_ORDER) or nxt == alpha:
            return visited
        nxt_value = objective(nxt)
        visited.append((nxt, nxt_value))
        if not nxt_value < value:
            return visited
        # negligible progress, or a value whose exponential (a δ) is already 0: further
        # orders cannot change the reported bound (every order is valid; this is effort)
        if nxt_value > value - 1e-12 * (1.0 + abs(value)) or nxt_value < -1000.0:
            return visited
        alpha, value = nxt, nxt_value


def minimise_over_order(objective: Callable[[float], float]) -> tuple[float, float]:
    """Minimise ``objective`` over α > 1: log scan, then bounded Brent around the best.

    The scan stops early once the objective has risen for eight consecutive orders and
    sits far above the best value so far (large orders are the expensive ones). If the
    best scanned order is at either end of the scan, the search continues past it —
    α − 1 halved towards 1, α doubled upwards — until the objective rises, so no fixed
    range limits the order (issue 15: a cap at 10⁵ made the zCDP conversion at ρ = 1e-12
    looser than Bun & Steinke's simple bound). Every α > 1 yields a valid bound, so this
    affects only how hard we look, never validity.
    """
    points: list[tuple[float, float]] = []
    best_so_far, rises = math.inf, 0
    for a in _SCAN:
        value = objective(float(a))
        if points and value > points[-1][1]:
            rises += 1
        else:
            rises = 0
        points.append((float(a), value))
        best_so_far = min(best_so_far, value)
        if rises >= 8 and value > best_so_far + 10.0 + abs(best_so_far):
            break
    values = [v for _, v in points]
    best = int(np.argmin(values))
    if best == 0 and math.isfinite(values[0]):
        below = _walk(objective, points[0][0], values[0], lambda a: 1.0 + (a - 1.0) / 2)
        points = below[::-1] + points
    elif best == len(points) - 1 and math.isfinite(values[-1]) and len(points) == len(_SCAN):
        points = points + _walk(objective, points[-1][0], values[-1], lambda a: 2.0 * a)
    values = [v for _, v in points]
    best = int(np.argmin(values))
    best_alpha, best_value = points[best]
    if not math.isfinite(best_value):
        return best_alpha, best_value
    lo = points[best - 1][0] if best > 0 else 1.0 + (best_alpha - 1.0) / 2
    hi = points[best + 1][0] if best + 1 < len(points) else 2.0 * best_alpha
    # scipy.optimize costs ~0.1 s to import: loaded on first use, not with dpledger (#32)
    from scipy import optimize

    # at extreme orders (10³⁰⁰) the parabolic step's products overflow inside scipy: it
    # then falls back to golden-section steps, and every value is re-evaluated below
    with np.errstate(over="ignore", invalid="ignore"):
        result = optimize.minimize_scalar(
            lambda a: min(objective(a), 1e150),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-9 * (hi - 1.0), "maxiter": 200},
        )
    alpha = float(result.x)
    value = objective(alpha)  # re-evaluate: the reported bound is the value at this α
    if value < best_value:
        return alpha, value
    return best_alpha, best_value
