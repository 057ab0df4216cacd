"""Rényi curve of sampling without replacement (Wang, Balle & Kasiviswanathan 2019).

Any inner mechanism with an RDP curve: WBK 2019, Thm 9, at integer α (replace-one);
between integers (α−1)R(α) (a cumulant generating function, hence convex) is bounded by
the chord, which is valid. Every order is also bounded by the inner curve itself and,
for a pure-DP inner mechanism, by the amplified ε′ = log(1 + γ(e^ε − 1)) (D_α ≤ D_∞;
Balle, Barthe & Gaboardi 2018, Thm 9), so the conversion is never looser than pure
amplification. For a Gaussian inner mechanism, Thm 27 (Pearson–Vajda moments) where
tighter. Thm 9 needs the inner curve at every integer up to α; it is used up to α = 2¹⁴
(Thm 27, for Gaussians, up to 2¹⁷), and larger orders take the other bounds — a bound at
every order, at a bounded cost (an order scan once took minutes).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from dpledger import _mpcontext
from dpledger._numerics import ratio_squared_up, round_up
from dpledger.accountant.basic import amplify_by_subsampling
from dpledger.accountant.rdp._curves import (
    Curve,
    _log_expm1,
    _pure_epsilon,
    _single_gaussian_multiplier,
)


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
            # this thread's mpmath context (the global one's precision is shared by all
            # threads); the e_n carry it, so the products and sums below are at prec too
            with _mpcontext.context(prec=prec) as ctx:
                m = ctx.mpf(mu2)
                e_i = [ctx.exp(m * (n * (n - 1) // 2)) for n in range(_PV_MAX_ORDER + 1)]
        with _mpcontext.context(prec=prec) as ctx:
            total = ctx.mpf(0)
            magnitude = ctx.mpf(0)
            for n in range(k + 1):
                term = e_i[n] * math.comb(k, n)
                magnitude += term
                total = total + term if (k - n) % 2 == 0 else total - term
            # each e_n within 2 ulps, each product and sum within 1 ulp of Σ|terms|
            error = magnitude * (k + 8) * ctx.mpf(2) ** (2 - prec)
            if total - error <= 0:
                break  # not resolved: the remaining orders use Thm 9 terms
            value = ctx.log(total + error)
            bound = float(value)
            if ctx.mpf(bound) < value:
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


def _amplified_curve(atom: Any, inner_curve: Curve) -> Curve:
    """The curve of ``atom`` (sampled without replacement) from its inner release's curve."""
    # Thm 9 at order α needs the inner curve at every integer j ≤ α: cached, so that a
    # scan over orders evaluates each once (the cache holds every j ≤ _WBK_MAX_ORDER)
    inner = functools.lru_cache(maxsize=1 << 16)(inner_curve)
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
