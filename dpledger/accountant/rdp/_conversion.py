"""Rényi → (ε, δ): the conversion at one order, and its best value over the orders.

For any α > 1, (α, R)-RDP implies (ε, δ)-DP with
ε = R + log(1 − 1/α) − (log δ + log α)/(α − 1) (Balle et al. 2020, Thm 21; Canonne,
Kamath & Steinke 2020, Prop. 12). Every α gives a valid bound, so the reported ε is the
value at the α the order search finds (:func:`._order.minimise_over_order`): a
log-spaced scan seeds a bounded Brent search in the continuous order — no fixed grid
limits the answer.
"""

from __future__ import annotations

import math

from dpledger._numerics import round_up
from dpledger._validation import check_callable, check_nonnegative, check_probability
from dpledger.accountant.rdp._curves import Curve
from dpledger.accountant.rdp._order import _MAX_ORDER, minimise_over_order


def _safe_eval(curve: Curve, alpha: float) -> float:
    try:
        value = curve(alpha)
    except (OverflowError, FloatingPointError):
        return math.inf
    if math.isnan(value):
        return math.inf
    return value


def conversion_offset(alpha: float, log_delta: float) -> float:
    """ε − R(α) in the Rényi → (ε, δ) conversion at order α (Balle et al. 2020, Thm 21).

    A mechanism with Rényi divergence R at order α > 1 is (R + offset, δ)-DP with
    offset = log(1 − 1/α) − (log δ + log α)/(α − 1). The one place this conversion is
    written: :func:`rdp_to_epsilon`, the ledger's Rényi and zCDP filters and their
    budgets all use it (directly or through the two helpers below).

    Returned as an upper bound on the exact offset: the two terms nearly cancel against R
    at small ε (R ≈ 0.0083 for ε = 1e-9 at δ = 0.01), so their few ulps of rounding —
    the logarithms, the sum, the divisions, and the caller's log δ itself, each within 2u
    relative of the magnitudes involved — are bounded and added (8u of those magnitudes,
    twice what they can reach). Unrounded, a Rényi ledger of ε = 1e-9 certified
    ε = 1.0000000069e-9 (helper-37).

    Args:
        alpha: The order, > 1.
        log_delta: log δ (δ in (0, 1)), as computed by ``math.log`` (within 1 ulp).
    """
    log_alpha = math.log(alpha)
    if alpha < 2:
        # log(1 − 1/α) = log(α − 1) − log α, α − 1 exact (Sterbenz): log1p(−1/α) would
        # amplify the rounding of 1/α by 1/(α − 1) (1000-fold at α = 1.001)
        log_gap = math.log(alpha - 1)
        first = log_gap - log_alpha
        first_size = abs(log_gap) + abs(log_alpha)
    else:
        first = math.log1p(-1 / alpha)
        first_size = abs(first)
    second = (log_delta + log_alpha) / (alpha - 1)
    error = 8 * 2.0**-53 * (first_size + (abs(log_delta) + abs(log_alpha)) / (alpha - 1))
    return first - second + error + 5e-324


def epsilon_at_order(value: float, alpha: float, delta: float) -> float:
    """ε certified at δ by Rényi divergence ``value`` at order ``alpha`` (rounded up)."""
    if value == 0:
        return 0.0
    return round_up(max(0.0, value + conversion_offset(alpha, math.log(delta))))


def budget_at_order(epsilon: float, alpha: float, delta: float) -> float:
    """The Rényi divergence at order ``alpha`` that converts to exactly (ε, δ).

    Not rounded: a caller that uses it as a budget settles it downwards itself.
    """
    return epsilon - conversion_offset(alpha, math.log(delta))


def rdp_to_epsilon(curve: Curve, delta: float) -> float:
    """Smallest ε over α > 1 of the RDP → (ε, δ) conversion of Balle et al. 2020, Thm 21.

    ε(α) = R(α) + log(1 − 1/α) − (log δ + log α)/(α − 1), minimised over real α by a
    log-spaced scan and bounded Brent refinement; the value returned is ε at the α found
    (every α > 1 gives a valid bound), rounded up.
    """
    curve = check_callable("curve", curve)
    delta = check_probability("delta", delta)
    if delta == 0:
        return math.inf
    log_delta = math.log(delta)

    def objective(alpha: float) -> float:
        r = _safe_eval(curve, alpha)
        return r + conversion_offset(alpha, log_delta)

    _, value = minimise_over_order(objective)
    return round_up(max(0.0, value))


def rdp_to_delta(curve: Curve, epsilon: float) -> float:
    """Smallest δ over α > 1 certified at ``epsilon`` (Canonne, Kamath & Steinke 2020, Prop. 12).

    δ(α) = exp((α−1)(R(α) − ε)) / α · (1 − 1/α)^{α−1}, minimised over real α; rounded up.
    """
    curve = check_callable("curve", curve)
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if math.isinf(epsilon):
        return 0.0

    def objective(alpha: float) -> float:
        r = _safe_eval(curve, alpha)
        return (alpha - 1) * (r - epsilon) - math.log(alpha) + (alpha - 1) * math.log1p(-1 / alpha)

    _, value = minimise_over_order(objective)
    delta = min(1.0, round_up(math.exp(min(value, 0.0))))
    if delta == 0.0 and math.isfinite(value) and not _stays_below(curve, epsilon):
        # the certificate exp(value) at this α is positive but below the smallest float,
        # and the curve is not seen to stay below ε (a pure-DP curve, whose bound does
        # tend to 0): report that float, never 0 (0 made "auto" return δ(200) = 0 for a
        # Gaussian of σ = 0.5, a claim of (200, 0)-DP), as gdp_delta does
        return 5e-324
    return delta


def _stays_below(curve: Curve, epsilon: float) -> bool:
    """Whether the curve is seen to be bounded by ε: the RDP bound on δ(ε) then tends to 0.

    R(α) ≤ ε at the largest order searched is not enough (R = ρα of a Gaussian with
    ε ≥ 10³⁰⁰ρ passes it, and δ = 0 was reported); the curve must also have stopped
    growing: R(10³⁰⁰) within 1e-9 relative of R(10¹⁵⁰), as a pure-DP curve (which
    approaches its ε₀) is and an unbounded one (linear, logarithmic, …) is not. False
    where the curve cannot be evaluated there.
    """
    try:
        top = _safe_eval(curve, _MAX_ORDER)
        middle = _safe_eval(curve, math.sqrt(_MAX_ORDER))
    except (ValueError, MemoryError, ArithmeticError):
        return False
    return top <= epsilon and top <= middle * (1 + 1e-9)
