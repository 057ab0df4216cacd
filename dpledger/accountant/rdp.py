"""Rényi differential privacy with the optimal order found by continuous optimisation.

A mechanism is (α, R(α))-RDP if D_α(M(D) ‖ M(D′)) ≤ R(α) for all neighbours (Mironov
2017, Def. 4). RDP curves add under adaptive composition (Mironov 2017, Prop. 1).

Curves implemented (Δ = sensitivity; all for α > 1):

* Gaussian: R(α) = αΔ²/(2σ²) (Mironov 2017, Prop. 7); the same bound for the discrete
  Gaussian on integer-valued statistics (Canonne, Kamath & Steinke 2020, §2).
* Laplace, ε₀ = Δ₁/b: R(α) = 1/(α−1) · log[α/(2α−1) e^{(α−1)ε₀} + (α−1)/(2α−1) e^{−αε₀}]
  (Mironov 2017, Prop. 6).
* Pure ε-DP: the binary randomized-response curve
  R(α) = 1/(α−1) · log[(e^{αε} + e^{(1−α)ε}) / (1 + e^ε)], the tightest RDP bound implied
  by ε-DP alone (Bun & Steinke 2016, proof of Prop. 3.3; attained by randomized
  response).
* k-ary randomized response: 1/(α−1) · log[p^α q^{1−α} + q^α p^{1−α} + (k−2)q].
* ρ-zCDP (ξ, ρ): ξ + ρα (Bun & Steinke 2016, Def. 1.1); (μ, τ)-mCDP: μ + (α−1)τ²/2,
  from the subgaussian moment bound of Dwork & Rothblum 2016, Def. 3.1.
* Poisson-subsampled Gaussian, **real** α: the series of Mironov, Talwar & Zhang 2019,
  §3.3, summed in log space; the alternating tail is bounded by its first omitted term
  and added, so the value is an upper bound. Integer α use the finite sum (§3.2).
* Sampling without replacement, any inner mechanism with an RDP curve: Wang, Balle &
  Kasiviswanathan 2019, Thm 9, at integer α; between integers (α−1)R(α) (a cumulant
  generating function, hence convex) is bounded by the chord, which is valid. Every
  order is also bounded by the inner curve itself and, for a pure-DP inner mechanism,
  by the amplified ε′ = log(1 + γ(e^ε − 1)) (D_α ≤ D_∞; Balle, Barthe & Gaboardi 2018,
  Thm 9), so the conversion is never looser than pure amplification. Thm 9 needs the
  inner curve at every integer up to α; it is used up to α = 2¹⁴ (Thm 27, for Gaussians,
  up to 2¹⁷), and larger orders take the other two bounds — a bound at every order, at a
  bounded cost (an order scan once took minutes).

Conversion to (ε, δ): for any α > 1, (α, R)-RDP implies (ε, δ)-DP with
ε = R + log(1 − 1/α) − (log δ + log α)/(α − 1) (Balle et al. 2020, Thm 21; Canonne,
Kamath & Steinke 2020, Prop. 12). Every α gives a valid bound, so the reported ε is
the value at the α the optimiser finds: a log-spaced scan seeds a bounded Brent search
in the continuous order — no fixed grid limits the answer.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpledger._numerics import float_up, ratio_squared_up, round_up, square_up
from dpledger._public import namespace
from dpledger._validation import (
    check_callable,
    check_nonnegative,
    check_positive,
    check_probability,
)
from dpledger.accountant import events as ev
from dpledger.accountant._atoms import gaussian_mu_squared, pure_epsilon
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.basic import amplify_by_subsampling
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = [
    "RDPAccountant",
    "RDPSummary",
    "budget_at_order",
    "conversion_offset",
    "epsilon_at_order",
    "rdp_curve",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_poisson_gaussian",
    "rdp_pure_dp",
    "rdp_randomized_response",
    "rdp_to_delta",
    "rdp_to_epsilon",
]

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
        # at ε ~ 1e-6, α ~ 1.001, below the exact value: issue 10 item 20). 50 digits.
        import mpmath  # imported on first use, not with dpledger (issue #32)

        with mpmath.workdps(50):
            e, a = mpmath.mpf(epsilon), mpmath.mpf(alpha)
            norm = mpmath.exp(e) + (categories - 1)
            p, q = mpmath.exp(e) / norm, 1 / norm
            total = p**a * q ** (1 - a) + q**a * p ** (1 - a) + (categories - 2) * q
            exact = mpmath.log1p(total - 1) / (a - 1)
        value = float(exact)
        if mpmath.mpf(value) < exact:
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


_INTEGER_CHUNK = 1 << 16
"""Terms of the integer-order sum evaluated at once (memory stays at a few MB)."""
_EXACT_BLOCKS = 512
"""Blocks summed exactly (:data:`_INTEGER_CHUNK` terms) or split (64 bounds) at most."""
MAX_INTEGER_ORDER = 1 << 52
"""Largest integer order :func:`_log_a_integer` takes (its indices exact as floats).

Beyond it the unsampled bound α/(2z²) is used (:func:`_rdp_poisson_gaussian_cached`)."""


def _exponents(i: np.ndarray, z: float) -> np.ndarray:
    """(i² − i)/(2z²), ∞ where 2z² underflows to 0 (and i² > i)."""
    twice = 2 * z * z
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((i * i - i) / twice if twice > 0 else np.where(i * i > i, np.inf, 0.0))


def _log_weights(alpha: int, i: np.ndarray, q: float) -> np.ndarray:
    """Log of the binomial weights C(α,i)qⁱ(1−q)^{α−i}."""
    return np.asarray(
        special.gammaln(alpha + 1)
        - special.gammaln(i + 1)
        - special.gammaln(alpha - i + 1)
        + i * math.log(q)
        + (alpha - i) * math.log1p(-q)
    )


def _log_pmf_terms(alpha: int, i: np.ndarray, q: float, z: float) -> np.ndarray:
    """Log of C(α,i)qⁱ(1−q)^{α−i}·(e^{(i²−i)/2z²} − 1), the i-th term of A_α − 1."""
    return np.asarray(_log_weights(alpha, i, q) + _log_expm1(_exponents(i, z)))


def _log_block_bound(alpha: int, lo: int, hi: int, q: float, z: float) -> float:
    """Log of an upper bound on the terms i = lo..hi of A_α − 1 (1e-6 relative margin).

    The binomial weight is unimodal with its mode at ⌊(α + 1)q⌋, and e^{(i²−i)/2z²} − 1
    grows with i ≥ 1: every term is at most the weight at the mode clamped to [lo, hi]
    times the factor at hi, so the block is at most (hi − lo + 1) times that. The mode is
    computed in floating point, so the largest weight of the clamped mode and its two
    neighbours is taken (a rounded mode is at most one off).
    """
    mode = math.floor((alpha + 1) * q)
    near = np.array([float(min(max(m, lo), hi)) for m in (mode - 1, mode, mode + 1)])
    weight = float(np.max(_log_weights(alpha, near, q)))
    factor = float(_log_expm1(_exponents(np.array([float(hi)]), z))[0])
    return weight + factor + math.log(hi - lo + 1) + 1e-6


def _log_a_integer(alpha: int, q: float, z: float) -> float:
    """Log A_α for integer α (Mironov, Talwar & Zhang 2019, §3.2): a finite sum.

    A_α = Σᵢ C(α,i) qⁱ(1−q)^{α−i} e^{(i²−i)/2z²}. The binomial weights sum to 1, so
    A_α − 1 = Σ_{i≥2} C(α,i) qⁱ(1−q)^{α−i} (e^{(i²−i)/2z²} − 1), a sum of non-negative
    terms: it is accumulated as such and log A = log1p(A − 1). (Summing A itself and taking
    its log loses the small part: 3.5e-10 relative at A ≈ 1 + 1e-6, issue 10 item 20.)
    The float error of the terms is bounded and added, so the result is an upper bound.

    Up to :data:`_INTEGER_CHUNK` terms are summed directly. Beyond, the range is split
    into blocks, each with a cheap upper bound (:func:`_log_block_bound`); the block with
    the largest bound is summed exactly (if small enough) or split again, until the
    bounds left are below e^-60 of the exact part or :data:`_EXACT_BLOCKS` blocks were
    summed or split; the bounds left are added. Work and memory stay bounded whatever α (an audit
    claim at α = 10⁹ allocated 23 GB, and an order of 2·10⁷ took a minute per
    evaluation); the result is an upper bound either way.
    """
    if alpha < 2:
        return 0.0
    if alpha > MAX_INTEGER_ORDER:
        raise ValueError(f"internal error: integer order {alpha} beyond MAX_INTEGER_ORDER")
    exact: list[float] = []
    magnitude = 0.0
    pending: list[tuple[float, int, int]] = []

    def push(lo: int, hi: int) -> None:
        heapq.heappush(pending, (-_log_block_bound(alpha, lo, hi, q, z), lo, hi))

    def split(lo: int, hi: int) -> None:
        width = -(-(hi - lo + 1) // 64)
        for start in range(lo, hi + 1, width):
            push(start, min(start + width - 1, hi))

    if alpha - 1 <= _INTEGER_CHUNK:
        pending.append((0.0, 2, alpha))
    else:
        split(2, alpha)
    work = 0  # blocks summed exactly and blocks split (64 bounds each) alike
    while pending and work < _EXACT_BLOCKS:
        if exact:
            rest = -pending[0][0] + math.log(len(pending))
            if rest < float(special.logsumexp(exact)) - 60:
                break
        _, lo, hi = heapq.heappop(pending)
        work += 1
        if hi - lo + 1 > _INTEGER_CHUNK:
            split(lo, hi)
            continue
        log_terms = _log_pmf_terms(alpha, np.arange(lo, hi + 1, dtype=float), q, z)
        exact.append(float(special.logsumexp(log_terms)))
        magnitude = max(magnitude, float(np.max(np.abs(log_terms))))
    log_excess = float(special.logsumexp(exact + [-b for b, _, _ in pending]))
    # each log term carries a few ulps of its parts — the log-gammas (about α·log α) and
    # the exponents, before they cancel — and logsumexp adds a few more per level
    parts = (
        3 * float(special.gammaln(alpha + 1))
        + alpha * (abs(math.log(q)) - math.log1p(-q))
        + float(_exponents(np.array([float(alpha)]), z)[0])
    )
    log_excess += 4 * 2.0**-52 * parts + 16 * 2.0**-52 * (magnitude + 2 * math.log(alpha + 1) + 2.0)
    if log_excess > 30:
        return log_excess + math.log1p(math.exp(-log_excess))
    return math.log1p(math.exp(log_excess))


def _log_a_fractional(alpha: float, q: float, z: float) -> float | None:
    """Log A_α for real α (Mironov, Talwar & Zhang 2019, §3.3), as an upper bound.

    A_α = Σᵢ C(α,i) [q^i (1−q)^{α−i} e^{(i²−i)/2z²} Φ((z₁−i)/z)
                     + q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/2z²} Φ((α−i−z₁)/z)],
    z₁ = z² log(1/q − 1) + 1/2, from splitting E_{N(0,z²)}[(1 − q + q e^{(2x−1)/2z²})^α] at
    x = z₁ and expanding each side binomially. For i > α the coefficients alternate in
    sign with eventually decreasing magnitude, so the partial sum plus the magnitude of the
    first omitted term bounds A_α from above.

    Returns None if the series has not provably converged within
    :data:`_MAX_SERIES_TERMS` terms (e.g. q within 1e-16 of 1); the caller then uses the
    convexity chord between integer orders instead.
    """
    z1 = z * z * math.log(1 / q - 1) + 0.5
    log_q, log_1mq = math.log(q), math.log1p(-q)
    start = 0
    chunk = 4096
    total_log, total_sign = -math.inf, 1.0
    minimum_terms = math.ceil(_series_terms(alpha, q, z))
    while start < _MAX_SERIES_TERMS:
        chunk = min(chunk, _MAX_SERIES_TERMS - start)
        i = np.arange(start, start + chunk, dtype=float)
        log_binom = (
            special.gammaln(alpha + 1) - special.gammaln(i + 1) - special.gammaln(alpha - i + 1)
        )
        sign = np.asarray(special.gammasgn(alpha - i + 1))
        log_binom = np.where(np.isfinite(log_binom), log_binom, -np.inf)
        t1 = (
            log_binom
            + i * log_q
            + (alpha - i) * log_1mq
            + (i * i - i) / (2 * z * z)
            + special.log_ndtr((z1 - i) / z)
        )
        j = alpha - i
        t2 = (
            log_binom
            + j * log_q
            + i * log_1mq
            + (j * j - j) / (2 * z * z)
            + special.log_ndtr((j - z1) / z)
        )
        log_mag = np.logaddexp(t1, t2)
        chunk_log, chunk_sign = special.logsumexp(log_mag, b=sign, return_sign=True)
        total_log, total_sign = special.logsumexp(
            [total_log, float(chunk_log)], b=[total_sign, float(chunk_sign)], return_sign=True
        )
        total_log, total_sign = float(total_log), float(total_sign)
        end = start + chunk
        # Stop once past the increasing part and the last terms are negligible and shrinking.
        if end >= minimum_terms and log_mag[-1] < total_log - 36 and log_mag[-1] <= log_mag[-2]:
            tail = float(log_mag[-1])  # bounds the first omitted term (magnitudes decrease)
            return float(np.logaddexp(total_log, tail))
        start = end
        chunk *= 2
    return None


@functools.lru_cache(maxsize=65536)
def _rdp_poisson_gaussian_cached(alpha: float, q: float, z: float) -> float:
    unsampled = alpha / (2 * z * z) if z * z > 0 else math.inf
    if q == 1.0 or alpha > MAX_INTEGER_ORDER:
        # (beyond MAX_INTEGER_ORDER: the unsampled bound, see the paragraph below)
        return unsampled
    log_a: float | None = None
    if float(alpha).is_integer():
        log_a = _log_a_integer(int(alpha), q, z)
    elif _series_terms(alpha, q, z) <= _SERIES_START_LIMIT:
        log_a = _log_a_fractional(alpha, q, z)
    if log_a is None:
        # log A_α = log E[(μ/μ₀)^α] is convex in α, so the chord between the neighbouring
        # integer orders bounds it from above (valid, slightly loose); used where the
        # real-order series would need too many terms (large noise, z₁ far out, q ≈ 1).
        lo = math.floor(alpha)
        t = alpha - lo
        log_lo = 0.0 if lo == 1 else _log_a_integer(lo, q, z)
        log_a = (1 - t) * log_lo + t * _log_a_integer(lo + 1, q, z)
    # Subsampling never hurts: exp((α−1)D_α) is jointly convex, so
    # A_α(q) ≤ (1 − q) + q·A_α(1) ≤ A_α(1) = exp((α−1)α/(2z²)).
    return max(0.0, min(log_a / (alpha - 1), unsampled))


_SERIES_START_LIMIT = 20_000
"""Use the real-order series only when it is expected to need at most this many terms."""
_MAX_SERIES_TERMS = 2**17
"""Hard cap on the terms summed; past it the chord bound is used (never unbounded memory)."""


def _series_terms(alpha: float, q: float, z: float) -> float:
    """Terms the real-order series needs before its tail is provably decreasing."""
    z1 = z * z * math.log(1 / q - 1) + 0.5
    return max(alpha, z1) + 10 * z + 3


def rdp_poisson_gaussian(alpha: float, rate: float, noise_multiplier: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism at a real order α > 1.

    Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian
    Mechanism", §3.2 (integer α, exact) and §3.3 (real α, an upper bound through the
    alternating-series remainder). Add/remove adjacency.

    Args:
        alpha: Order α > 1.
        rate: Poisson sampling rate q in (0, 1].
        noise_multiplier: σ/Δ₂.
    """
    alpha = _check_order(alpha)
    rate = check_probability("rate", rate, low_open=True, high_open=False)
    z = check_positive("noise_multiplier", noise_multiplier)
    return _rdp_poisson_gaussian_cached(alpha, rate, z)


def _log1p_sum_up(log_terms: np.ndarray) -> float:
    """An upper bound on log(1 + Σ e^{tᵢ}), accurate where the sum is tiny.

    The sum is taken in log space and its float error (a few ulps of the largest term,
    plus logsumexp's) added before log1p; summing 1 with the terms instead loses the small
    part (a relative error of 1e-9 at an excess of 1e-7, issue 10 item 20).
    """
    if log_terms.size == 0:
        return 0.0
    log_excess = float(special.logsumexp(log_terms))
    magnitude = float(np.max(np.abs(log_terms[np.isfinite(log_terms)]), initial=0.0))
    log_excess += 16 * 2.0**-52 * (magnitude + math.log(log_terms.size + 1) + 1.0)
    if log_excess > 30:
        return round_up(log_excess + math.log1p(math.exp(-log_excess)))
    return round_up(math.log1p(math.exp(log_excess)))


def _wbk_integer(alpha: int, gamma: float, inner: Curve, inner_eps_inf: float) -> float:
    """Wang, Balle & Kasiviswanathan 2019, Thm 9, at integer α ≥ 2 (replace-one)."""
    if alpha < 2:
        raise ValueError("internal error: WBK bound needs alpha >= 2")
    log_gamma = math.log(gamma)
    eps2 = inner(2.0)
    if math.isinf(inner_eps_inf):
        log_cap = math.log(2.0)
        log_second_cap = math.log(2.0)
    else:
        log_pure = float(_log_expm1(np.float64(inner_eps_inf))) if inner_eps_inf > 0 else -math.inf
        log_second_cap = min(math.log(2.0), 2 * log_pure)
        log_cap = math.log(2.0)
    second = min(
        math.log(4.0) + float(_log_expm1(np.float64(eps2))) if eps2 > 0 else -math.inf,
        eps2 + log_second_cap,
    )
    first = 2 * log_gamma + math.log(alpha * (alpha - 1) / 2) + second
    # the terms j = 3 … α as arrays (one order once took O(α) Python steps, and a scan over
    # orders minutes): the same float formulas, term by term
    j = np.arange(3, alpha + 1, dtype=float)
    log_binom = math.lgamma(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)
    cap = log_cap if math.isinf(inner_eps_inf) else np.minimum(log_cap, j * log_pure)
    inner_values = np.array([inner(x) for x in j.tolist()])
    log_terms = np.concatenate(([first], j * log_gamma + log_binom + (j - 1) * inner_values + cap))
    return round_up(_log1p_sum_up(log_terms) / (alpha - 1))


_WBK_MAX_ORDER = 2**14
"""Largest order at which Thm 9 is evaluated (it needs the inner curve at every j ≤ α)."""
_WBK_GAUSSIAN_MAX_ORDER = 2**17
"""Largest order at which Thm 27 is evaluated (O(α) array terms, no inner-curve calls)."""

_PV_MAX_ORDER = 256
"""Largest j whose Pearson–Vajda moment enters the Gaussian bound (beyond: the Thm 9 term)."""
_PV_MAX_BITS = 8192
"""Working-precision cap for those moments; past it the remaining orders use Thm 9 terms."""


@functools.lru_cache(maxsize=256)
def _gaussian_pearson_vajda(mu2: float) -> tuple[float, ...]:
    """Upper bounds on log E_Q[(P/Q − 1)^k] for k = 2, 4, … of the Gaussian pair.

    P = N(μ, 1), Q = N(0, 1): E_Q[(P/Q)^i] = e^{i(i−1)μ²/2}, so the k-th Pearson–Vajda
    moment is the forward difference Σᵢ C(k,i)(−1)^{k−i} e^{i(i−1)μ²/2} (WBK 2019, §5).
    The sum cancels heavily (for σ = 10 and k = 30 float64 gets it wrong by e^8 — the
    log-space signed differences of TF Privacy/dp_accounting included), so it is summed
    in mpmath at a precision chosen from the size of its terms and from a lower bound on
    the result (Lyapunov: m_k ≥ m_{k−2}^{k/(k−2)}, m₂ = e^{μ²} − 1), and a bound on the
    rounding error of the sum is added. Returned entry i is for k = 2(i + 1); the tuple
    stops early where the precision cap is reached or the moments stop beating the Thm 9
    terms (the caller then uses Thm 9 terms, which are valid on their own).
    """
    import mpmath  # imported on first use, not with dpledger (issue #32)

    out: list[float] = []
    losing = 0  # consecutive k where the Thm 9 term 2e^{(k−1)ε(k)} is already smaller
    prec = 0
    e_i: list[Any] = []
    log_m2 = float(_log_expm1(np.float64(mu2)))
    for k in range(2, _PV_MAX_ORDER + 1, 2):
        i = np.arange(k + 1)
        log_abs = float(  # log Σ|terms|
            special.logsumexp(
                special.gammaln(k + 1)
                - special.gammaln(i + 1)
                - special.gammaln(k - i + 1)
                + i * (i - 1) / 2 * mu2
            )
        )
        # a guess of log m_k from below (Lyapunov, m_k ≥ m_{k−2}^{k/(k−2)}), used only to
        # choose the precision: validity comes from the error bound below, not from it
        guess = log_m2 if k == 2 else out[-1] * k / (k - 2)
        bits = int((log_abs - guess) / math.log(2)) + 96
        if bits > _PV_MAX_BITS:
            break
        if bits > prec:
            prec = min(_PV_MAX_BITS, max(bits, 2 * prec))
            with mpmath.workprec(prec):
                m = mpmath.mpf(mu2)
                e_i = [mpmath.exp(m * (n * (n - 1) // 2)) for n in range(_PV_MAX_ORDER + 1)]
        with mpmath.workprec(prec):
            total = mpmath.mpf(0)
            magnitude = mpmath.mpf(0)
            for n in range(k + 1):
                term = e_i[n] * math.comb(k, n)
                magnitude += term
                total = total + term if (k - n) % 2 == 0 else total - term
            # each e_n within 2 ulps, each product and sum within 1 ulp of Σ|terms|
            error = magnitude * (k + 8) * mpmath.mpf(2) ** (2 - prec)
            if total - error <= 0:
                break  # not resolved: the remaining orders use Thm 9 terms
            value = mpmath.log(total + error)
            bound = float(value)
            if mpmath.mpf(bound) < value:
                bound = math.nextafter(bound, math.inf)
        out.append(bound)
        # m_k/E_Q[(P/Q)^k] grows towards 1 with k: once 4m_k ≥ 2e^{(k−1)ε(k)} for a few
        # k in a row the Pearson–Vajda terms no longer help (Thm 9's are used beyond)
        losing = losing + 1 if bound + math.log(2.0) >= k * (k - 1) / 2 * mu2 else 0
        if losing >= 4:
            break
    return tuple(out)


def _wbk_gaussian_integer(alpha: int, gamma: float, mu2: float) -> float:
    """Wang, Balle & Kasiviswanathan 2019, Thm 27, at integer α ≥ 2, for a Gaussian.

    The subsampled Gaussian (without replacement, replace-one) is (α, R)-RDP with
    R = 1/(α−1) · log(1 + γ²C(α,2) min{4(e^{ε(2)} − 1), 2e^{ε(2)}}
    + Σ_{j=3}^{α} γ^j C(α,j) min{4 √(m_{2⌊j/2⌋} m_{2⌈j/2⌉}), 2 e^{(j−1)ε(j)}}),
    ε(j) = jμ²/2 the Gaussian's curve and m_k = E_Q[(P/Q − 1)^k] its Pearson–Vajda
    moments (odd ones bounded by Cauchy–Schwarz). Thm 27's hypothesis (their Def. 26):
    one pair of neighbours attains the inner mechanism's RDP at every order and is the
    worst pair for every Pearson–Vajda divergence too. The Gaussian mechanism satisfies
    it: every f-divergence between N(x, σ²I) and N(x′, σ²I) depends only on ‖x − x′‖₂
    and grows with it, so the pair at distance Δ is the worst for all of them at once.
    No condition on σ or γ. Each term is the smaller of the Pearson–Vajda term and the
    Thm 9 term, so the bound is never above Thm 9; beyond j = :data:`_PV_MAX_ORDER` (or
    where the moments were not resolved) the Thm 9 term alone is used (valid).
    """
    if alpha < 2:
        raise ValueError("internal error: WBK bound needs alpha >= 2")
    log_gamma = math.log(gamma)
    pv = _gaussian_pearson_vajda(mu2)
    second = min(math.log(4.0) + float(_log_expm1(np.float64(mu2))), mu2 + math.log(2.0))
    j = np.arange(3, alpha + 1, dtype=float)
    log_binom = special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)
    moment = np.log(2.0) + (j - 1) * j * mu2 / 2  # Thm 9: 2e^{(j−1)ε(j)}
    if pv and alpha >= 3:
        pv_array = np.array(pv)
        lo_index = (2 * np.floor(j / 2)).astype(int) // 2 - 1
        hi_index = (2 * np.ceil(j / 2)).astype(int) // 2 - 1
        known = hi_index < len(pv_array)
        pearson = np.full(len(j), np.inf)
        pearson[known] = math.log(4.0) + 0.5 * (
            pv_array[lo_index[known]] + pv_array[hi_index[known]]
        )
        moment = np.minimum(moment, pearson)
    log_terms = np.concatenate(
        [
            [2 * log_gamma + math.log(alpha * (alpha - 1) / 2) + second],
            j * log_gamma + log_binom + moment,
        ]
    )
    return round_up(_log1p_sum_up(log_terms) / (alpha - 1))


def _chord(alpha: float, at_integer: Callable[[int], float]) -> float:
    """Bound R(α) from integer orders using convexity of (α−1)R(α) (valid chord bound)."""
    if float(alpha).is_integer():
        return at_integer(int(alpha))
    lo = max(2, math.floor(alpha))
    hi = lo + 1
    if alpha < 2:
        return at_integer(2)  # (α−1)R(α) ≤ (α−1)R(2) on [1, 2] by convexity, K(1) = 0
    k_lo, k_hi = (lo - 1) * at_integer(lo), (hi - 1) * at_integer(hi)
    t = alpha - lo
    return ((1 - t) * k_lo + t * k_hi) / (alpha - 1)


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


def rdp_curve(event: ev.Event) -> Curve:
    """Return the RDP curve α ↦ R(α) of ``event`` (an upper bound, for α > 1).

    Raises:
        NotApplicableError: Some release in ``event`` has no RDP curve here (e.g. an
            (ε, δ) guarantee with δ > 0).
    """
    return RDPAccountant.summarize(event).curve


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


def _poisson_curve(atom: Any) -> Curve:
    z = _single_gaussian_multiplier(atom.event)
    if z is None:
        raise NotApplicableError(
            "method 'rdp' supports Poisson subsampling of Gaussian releases only "
            f"(found {atom.event!r}); for other inner mechanisms use method='basic' or "
            "'optimal' (amplification by subsampling) or method='auto'."
        )
    q = atom.rate
    twice_z2 = 2 * z * z
    if twice_z2 == 0 or 1 / twice_z2 == math.inf:  # μ = 1/z ≳ 1e154: the unsampled curve
        # α/(2z²) is ∞, and so is the sampled one wherever it matters (e^{α(α−1)/(2z²)}
        # overflows at α ≥ 2): ∞ is the bound, not a ZeroDivisionError
        return lambda a: math.inf
    return lambda a: _rdp_poisson_gaussian_cached(a, q, z)


def _without_replacement_curve(atom: Any) -> Curve:
    # Thm 9 at order α needs the inner curve at every integer j ≤ α: cached, so that a
    # scan over orders evaluates each once (the cache holds every j ≤ _WBK_MAX_ORDER)
    inner = functools.lru_cache(maxsize=1 << 16)(RDPAccountant.summarize(atom.event).curve)
    eps_inf = _pure_epsilon(atom.event)
    gamma = atom.rate
    if gamma == 1.0:
        return inner
    # D_α ≤ D_∞ ≤ the amplified pure ε at every order (inf unless the inside is pure DP)
    amplified_inf = amplify_by_subsampling(eps_inf, 0.0, gamma)[0]

    multiplier = _single_gaussian_multiplier(atom.event)
    # Σμ² of the inner Gaussians, rounded up (the multiplier is already rounded down)
    inner_mu2 = None if multiplier is None else ratio_squared_up(1.0, multiplier)

    @functools.lru_cache(maxsize=4096)
    def at_integer(j: int) -> float:
        value = min(inner(float(j)), amplified_inf)
        if j <= _WBK_MAX_ORDER:
            value = min(value, _wbk_integer(j, gamma, inner, eps_inf))
        if inner_mu2 is not None and inner_mu2 < math.inf and j <= _WBK_GAUSSIAN_MAX_ORDER:
            # Gaussian inner release: WBK Thm 27 where tighter
            value = min(value, _wbk_gaussian_integer(j, gamma, inner_mu2))
        return value

    # the inner curve bounds the sampled one at every order (as at the integers above):
    # the chord below α = 2 (R(2)) is far looser where the best order is < 2 (large μ)
    return lambda a: min(inner(a), _chord(a, at_integer))


_CURVES: dict[type[ev.Event], Callable[[Any], Curve]] = {
    ev.Gaussian: _gaussian_curve,
    ev.DiscreteGaussian: _gaussian_curve,
    ev.Laplace: _laplace_curve,
    ev.PureDP: _pure_curve,
    ev.DiscreteLaplace: _pure_curve,
    ev.ApproxDP: _pure_curve,  # δ = 0 only
    ev.RandomizedResponse: _randomized_response_curve,
    ev.BoundedRange: _bounded_range_curve,
    ev.ZCDP: _zcdp_curve,
    ev.MCDP: _mcdp_curve,
    ev.PoissonSampled: _poisson_curve,
    ev.SampledWithoutReplacement: _without_replacement_curve,
}
"""The Rényi curve of one release, by its type (:attr:`RDPAccountant.handlers`)."""


def _no_curve(atom: ev.Event) -> NotApplicableError:
    return NotApplicableError(
        f"method 'rdp' cannot account for {type(atom).__name__} events (found {atom!r}); an "
        "(ε, δ) guarantee with δ > 0 has no Rényi curve. Use method='basic', 'optimal' or 'auto'."
    )


@dataclass(frozen=True)
class RDPSummary(Summary):
    """An RDP curve, kept as a multiset of releases so that it can be evaluated at any α."""

    releases: tuple[tuple[ev.Event, int], ...] = ()
    _curves: tuple[tuple[Curve, int], ...] = field(default=(), compare=False, repr=False)

    @property
    def curve(self) -> Curve:
        """α ↦ R(α), the composed RDP curve."""
        curves = self._curves

        def total(alpha: float) -> float:
            # each curve is an upper bound; the sum is rounded up (never below the terms)
            return round_up(math.fsum(count * c(alpha) for c, count in curves))

        return total

    def __add__(self, other: RDPSummary) -> RDPSummary:
        merged: Counter[ev.Event] = Counter(dict(self.releases))
        curves = dict(zip((e for e, _ in self.releases), (c for c, _ in self._curves), strict=True))
        for (event, count), (curve, _) in zip(other.releases, other._curves, strict=True):
            merged[event] += count
            curves.setdefault(event, curve)
        items = tuple(merged.items())
        return RDPSummary(items, tuple((curves[e], k) for e, k in items))

    def scaled(self, count: int) -> RDPSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return RDPSummary(
            tuple((e, k * count) for e, k in self.releases),
            tuple((c, k * count) for c, k in self._curves),
        )

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        if not self.releases:
            return 0.0
        return rdp_to_epsilon(self.curve, delta)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        if not self.releases:
            return 0.0
        return rdp_to_delta(self.curve, epsilon)


def _safe_eval(curve: Curve, alpha: float) -> float:
    try:
        value = curve(alpha)
    except (OverflowError, FloatingPointError):
        return math.inf
    if math.isnan(value):
        return math.inf
    return value


# The scan only seeds the continuous search: every α > 1 gives a valid bound, and the
# bounded Brent step refines α over the reals. Integer orders are used where possible
# because the subsampled-Gaussian curve is a cheap finite sum there (MTZ19 §3.2). The scan
# is not a cap: where the objective still falls at either end, the search walks on
# (α − 1 halved towards 1, α doubled upwards) until it rises — see _minimise_over_order.
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


def _minimise_over_order(objective: Callable[[float], float]) -> tuple[float, float]:
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

    _, value = _minimise_over_order(objective)
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

    _, value = _minimise_over_order(objective)
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


class RDPAccountant(Accountant[RDPSummary]):
    """Rényi-DP accountant: curves of every supported release, optimal continuous order.

    Supports Gaussian, Laplace, pure DP, randomized response, zCDP, mCDP, Poisson-
    subsampled Gaussians (real orders) and sampling without replacement of any of these.
    (ε, δ) releases with δ > 0 have no Rényi curve and are refused.
    """

    method: ClassVar[str] = "rdp"
    #: event type → the Rényi curve of one such release (the summary keeps the curves)
    handlers: ClassVar[dict[type[ev.Event], Any]] = _CURVES

    @classmethod
    def zero(cls) -> RDPSummary:
        """The guarantee of releasing nothing."""
        return RDPSummary()

    @classmethod
    def summarize(cls, event: ev.Event) -> RDPSummary:
        """The RDP curve of ``event``, as a summary."""
        atoms = ev.flatten(event)
        curves = tuple((cls._curve(atom), count) for atom, count in atoms.items())
        return RDPSummary(tuple(atoms.items()), curves)

    @classmethod
    def _curve(cls, atom: ev.Event) -> Curve:
        """The Rényi curve of one release, from :attr:`handlers`."""
        handler = cls.handlers.get(type(atom))
        if handler is None:
            raise _no_curve(atom)
        curve: Curve = handler(atom)
        return curve


__dir__ = namespace(__all__)
