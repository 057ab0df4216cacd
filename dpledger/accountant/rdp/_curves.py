"""Rényi curves of the releases that are not subsampled, and the helpers the others share.

A mechanism is (α, R(α))-RDP if D_α(M(D) ‖ M(D′)) ≤ R(α) for all neighbours (Mironov
2017, Def. 4). Curves implemented here (Δ = sensitivity; all for α > 1):

* Gaussian: R(α) = αΔ²/(2σ²) (Mironov 2017, Prop. 7); the same bound for the discrete
  Gaussian on integer-valued statistics (Canonne, Kamath & Steinke 2020, §2).
* Laplace, ε₀ = Δ₁/b: R(α) = 1/(α−1) · log[α/(2α−1) e^{(α−1)ε₀} + (α−1)/(2α−1) e^{−αε₀}]
  (Mironov 2017, Prop. 6).
* Pure ε-DP: the binary randomized-response curve
  R(α) = 1/(α−1) · log[(e^{αε} + e^{(1−α)ε}) / (1 + e^ε)], the tightest RDP bound implied
  by ε-DP alone (Bun & Steinke 2016, proof of Prop. 3.3; attained by randomized
  response).
* k-ary randomized response: 1/(α−1) · log[p^α q^{1−α} + q^α p^{1−α} + (k−2)q].
* ε-bounded range: the smaller of the pure-DP curve and ε²/8-zCDP (Cesar & Rogers 2021,
  Lemma 3.2).
* ρ-zCDP (ξ, ρ): ξ + ρα (Bun & Steinke 2016, Def. 1.1); (μ, τ)-mCDP: μ + (α−1)τ²/2,
  from the subgaussian moment bound of Dwork & Rothblum 2016, Def. 3.1.

Each ``_…_curve`` builds the curve of one release from its event (the accountant's
handler table, :data:`._accountant._CURVES`). The subsampled releases build on these
(:mod:`._poisson`, :mod:`._without_replacement`), through the helpers at the end: the
pure ε of an inner composition and the one Gaussian it collapses to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger import _mpcontext
from dpledger._numerics import float_up, round_up, square_up
from dpledger._validation import check_nonnegative, check_positive
from dpledger.accountant import events as ev
from dpledger.accountant.costs import gaussian_mu_squared, pure_epsilon
from dpledger.errors import InvalidArgumentError, NotApplicableError

Curve = Callable[[float], float]


def _check_order(alpha: float) -> float:
    alpha = check_positive("alpha", alpha, allow_inf=False)
    if alpha <= 1:
        raise InvalidArgumentError(f"`alpha` must be greater than 1. Found {alpha!r}.")
    return alpha


def rdp_gaussian(alpha: float, sigma: float, sensitivity: float = 1.0) -> float:
    """RDP of the Gaussian mechanism: αΔ²/(2σ²) (Mironov 2017, Prop. 7)."""
    alpha = _check_order(alpha)
    mu = check_positive("sensitivity", sensitivity) / check_positive("sigma", sigma)
    return alpha * mu * mu / 2


def _log_sum_exp(terms: list[float]) -> float:
    """Log Σ e^{tᵢ} of a few floats.

    scipy's logsumexp costs ~100 µs a call, and a scan over the orders of a subsampled
    release calls it hundreds of thousands of times.
    """
    top = max(terms)
    if math.isinf(top):
        return top
    return top + math.log(math.fsum(math.exp(t - top) for t in terms))


def rdp_laplace(alpha: float, epsilon: float) -> float:
    """RDP of the Laplace mechanism with ε₀ = Δ₁/b (Mironov 2017, Prop. 6)."""
    alpha = _check_order(alpha)
    epsilon = check_nonnegative("epsilon", epsilon)
    if epsilon == 0:
        return 0.0
    log_terms = [
        math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * epsilon,
        math.log((alpha - 1) / (2 * alpha - 1)) - alpha * epsilon,
    ]
    # a few ulps of float error in the terms and the sum, added (an upper bound)
    error = 16 * 2.0**-52 * (max(abs(t) for t in log_terms) + 1.0)
    return min(epsilon, round_up((_log_sum_exp(log_terms) + error) / (alpha - 1)))


def rdp_randomized_response(alpha: float, epsilon: float, categories: int = 2) -> float:
    """RDP of k-ary randomized response; with k = 2, the tight RDP bound of ε-DP.

    D_α = 1/(α−1) log[p^α q^{1−α} + q^α p^{1−α} + (k−2) q] for p = e^ε/(e^ε+k−1),
    q = 1/(e^ε+k−1) (Mironov 2017, Def. 3 applied to the two output distributions).
    """
    alpha = _check_order(alpha)
    epsilon = check_nonnegative("epsilon", epsilon)
    if epsilon == 0:
        return 0.0
    log_norm = float(np.logaddexp(epsilon, math.log(categories - 1)))
    log_q = -log_norm
    # p^α q^{1−α} = q e^{αε} and q^α p^{1−α} = q e^{(1−α)ε} (log p − log q = ε exactly):
    # written so, the terms do not cancel inside (α log p + (1−α) log q does, for large α)
    log_terms = [alpha * epsilon, (1 - alpha) * epsilon]
    if categories > 2:
        log_terms.append(math.log(categories - 2))
    log_sum = log_q + _log_sum_exp(log_terms)
    # float error of the terms and of logsumexp, added so that the float path is an upper
    # bound; where it would be loose (the sum is 1 + tiny: cancellation), 50 digits
    error = 16 * 2.0**-52 * (max(abs(t) for t in log_terms) + abs(log_q) + 1.0)
    if log_sum < 1e-3 or error > 1e-6 * log_sum:
        # the sum is 1 + tiny: in floats the tiny part cancels (relative errors up to 1 %
        # at ε ~ 1e-6, α ~ 1.001, below the exact value: issue 10 item 20). 50 digits, in
        # this thread's mpmath context (the global one's precision is shared by threads)
        with _mpcontext.context(50) as ctx:
            e, a = ctx.mpf(epsilon), ctx.mpf(alpha)
            norm = ctx.exp(e) + (categories - 1)
            p, q = ctx.exp(e) / norm, 1 / norm
            total = p**a * q ** (1 - a) + q**a * p ** (1 - a) + (categories - 2) * q
            exact = ctx.log1p(total - 1) / (a - 1)
            value = float(exact)
            if ctx.mpf(value) < exact:
                value = math.nextafter(value, math.inf)
        return min(epsilon, value)
    return min(epsilon, round_up((log_sum + error) / (alpha - 1)))


def rdp_pure_dp(alpha: float, epsilon: float) -> float:
    """Tightest RDP curve implied by ε-DP alone (Bun & Steinke 2016, proof of Prop. 3.3)."""
    return rdp_randomized_response(alpha, epsilon, 2)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(eˣ − 1) for x > 0, without overflow (∞ at ∞); arrays or numpy scalars."""
    big = x > 30.0
    safe = np.where(big, 1.0, x)
    result: np.ndarray = np.where(
        big, x + np.log1p(-np.exp(-np.where(big, x, 30.0))), np.log(np.expm1(safe))
    )
    return result


def _pure_epsilon(event: ev.Event) -> float:
    """ε such that ``event`` is ε-DP (basic composition, summed exactly, rounded up), or inf."""
    total = Fraction(0)
    for atom, count in ev.flatten(event).items():
        epsilon = pure_epsilon(atom)
        if epsilon is None or math.isinf(epsilon):
            return math.inf
        total += Fraction(epsilon) * count
    return float_up(total)


def _single_gaussian_multiplier(event: ev.Event) -> float | None:
    """σ/Δ of the one Gaussian equivalent to ``event`` if it composes only Gaussians."""
    mu2 = gaussian_mu_squared(ev.flatten(event))
    if mu2 is None:
        return None
    # Σμ² exactly, rounded up once; the equivalent noise multiplier rounded down (less
    # noise is the unsafe direction): the square root, the division and the product
    # each err by at most 2⁻⁵³ relative, and the factor takes off 2⁻⁵⁰
    return (1.0 / math.sqrt(float_up(mu2))) * (1.0 - 2.0**-50)


def _gaussian_curve(atom: Any) -> Curve:
    mu2 = square_up(atom.mu)  # ∞ when μ² overflows (a valid bound), never an OverflowError
    return lambda a: a * mu2 / 2


def _laplace_curve(atom: Any) -> Curve:
    e = atom.epsilon
    return lambda a: rdp_laplace(a, e)


def _pure_curve(atom: Any) -> Curve:
    e = pure_epsilon(atom)
    if e is None:  # an (ε, δ) release with δ > 0
        raise _no_curve(atom)
    return lambda a: rdp_pure_dp(a, e)


def _randomized_response_curve(atom: Any) -> Curve:
    e, k = atom.epsilon, atom.categories
    return lambda a: rdp_randomized_response(a, e, k)


def _bounded_range_curve(atom: Any) -> Curve:
    # ε-DP, and ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2): the smaller at each order
    e = atom.epsilon
    rho = square_up(e, 8)
    return lambda a: min(rdp_pure_dp(a, e), round_up(a * rho))


def _zcdp_curve(atom: Any) -> Curve:
    xi, rho = atom.xi, atom.rho
    return lambda a: xi + rho * a


def _mcdp_curve(atom: Any) -> Curve:
    mu, tau = atom.mu, atom.tau
    return lambda a: mu + (a - 1) * tau * tau / 2


def _no_curve(atom: ev.Event) -> NotApplicableError:
    return NotApplicableError(
        f"method 'rdp' cannot account for {type(atom).__name__} events (found {atom!r}); an "
        "(ε, δ) guarantee with δ > 0 has no Rényi curve. Use method='basic', 'optimal' or 'auto'."
    )
