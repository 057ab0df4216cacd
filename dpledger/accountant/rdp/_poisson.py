"""Rényi curve of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019).

At a **real** order α the series of Mironov, Talwar & Zhang 2019, §3.3, summed in log
space; the alternating tail is bounded by its first omitted term and added, so the value
is an upper bound. Integer α use the finite sum (§3.2), with bounded work and memory
whatever α (:func:`_log_a_integer`). Add/remove adjacency.
"""

from __future__ import annotations

import functools
import heapq
import math
from typing import Any

import numpy as np
from scipy import special

from dpledger._validation import check_positive, check_probability
from dpledger.accountant.rdp._curves import (
    Curve,
    _check_order,
    _log_expm1,
    _single_gaussian_multiplier,
)
from dpledger.errors import NotApplicableError

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
