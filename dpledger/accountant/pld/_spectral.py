"""δ(ε) of a band-limited composition, summed from its kept frequencies (issue #33).

A long composition keeps only a few dozen frequencies of its window's transform (10⁵
DP-SGD steps: 34 of 320,001 — :func:`._composition._compose` drops those below e^-70);
its composed masses are a trigonometric polynomial of that degree. The inverse transform
computed all N of them (a third of a cold DP-SGD query at 10⁵ steps) for the few sums a
query reads. Here the sums are evaluated from the frequencies themselves, in closed form:
for the computed spectrum ŝ (zero where not kept), the masses that the inverse transform
would compute *exactly* are m̂ₜ = Re Σⱼ cⱼ e^{iθⱼ(b + t)}, θⱼ = 2πj/N, b the buffer index of
window point 0, c₀ = Re ŝ₀/N, c_{N/2} = Re ŝ_{N/2}/N, cⱼ = 2ŝⱼ/N otherwise (the real inverse
DFT, as ``irfft`` defines it), and for a ≤ 0 and L points from window index t₀:

    Σ_{u<L} m̂_{t₀+u} e^{au} = Re Σⱼ cⱼ e^{iθⱼ(b + t₀)} Qⱼ,   Qⱼ = (1 − e^{zL})/(1 − e^{z}),
    z = a + iθⱼ (Q = L at z = 0).

The transform's error bound (:func:`._transform._transform_error`, without its inverse
transform's own rounding, which no longer happens) bounds m̂ − m against the exact cyclic
convolution; :func:`_geometric_sums` bounds the rounding of the closed form (derived there),
and :meth:`._composition._SpectralComposition._evaluate` adds that bound to the guard.
"""

from __future__ import annotations

import math

import numpy as np

from dpledger.accountant.pld._discretise import _Discrete
from dpledger.accountant.pld._transform import (
    _TOTAL_ERROR,
    _UNIT,
    _accurate_power,
    _direct_transform_w,
    _fft_error,
    _mass_total,
    _power_rho,
    _reduced_angles,
)


def _one_minus_exp(a: np.ndarray | float, angles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Re, Im) of 1 − e^{a + iψ} for a ≤ 0, without cancellation.

    Re = −expm1(a) + eᵃ·2sin²(ψ/2) (two non-negative terms) and Im = −eᵃ sin ψ.
    """
    e_a = np.exp(a)
    half = np.sin(0.5 * angles)
    return -np.expm1(a) + e_a * (2.0 * half * half), -e_a * np.sin(angles)


def _geometric_sums(
    freqs: np.ndarray,
    coefficients: np.ndarray,
    size: int,
    first: int,
    length: int,
    rates: tuple[float, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """Σ_{u<L} m̂_{t₀+u} e^{au} for each a in ``rates`` (each ≤ 0), with error bounds.

    ``first`` is b + t₀ (any integer), ``length`` L ≥ 1. Returns (values, bounds).

    Error (first order in u, 1 % margin for the second, as :func:`_direct_transform_w`:
    sin and cos within 4 ulp, each reduced angle within 2.0001u of its value — the
    integer reductions of j·(b + t₀) and j·L mod N are exact, :func:`_reduced_angles` —
    so that 2sin²(x/2) is within 26u relative, sin x within 11u·|x| and cos x within 11u):

    * 1 − e^{a+iψ} (:func:`_one_minus_exp`): the real part is a sum of two non-negative
      terms, each within (30 + |a|)u relative (eᵃ and expm1 within 2 ulp, 2sin² within
      26u, a product; a's own rounding moves eᵃ by u|a|); the imaginary part within
      (14 + |a|)u·eᵃ|ψ|. As |1 − e^{a+iψ}| ≥ 2e^{a}|sin(ψ/2)| ≥ (2/π)e^{a}|ψ| (|ψ| ≤ π,
      a ≤ 0), the normwise relative error is at most the sum, e(a) = (56 + 3|a|)u, for
      the numerator (with a·L, rounded) and the denominator alike;
    * Q = num·conj(den)/|den|² in real arithmetic: a perturbed den' gives 1/den' exactly,
      so e(aL) + e(a), plus 10u for the products, the squares and the two divisions;
    * e^{iφ} within 11u·√(1 + π²) < 37u normwise; cⱼ within u (a scaling of ŝⱼ: the
      transform's own bound covers ŝⱼ against sⱼ); the product c·e^{iφ} and the real part
      of its product with Q, each within 2√2·u < 3u;
    * the real parts summed over K terms (any order): γ_K·Σ|Tⱼ| ≤ 1.01·K·u·Σ|Tⱼ|.

    So |error| ≤ 1.01·Σⱼ|cⱼ||Q̂ⱼ|·(e(aL) + e(a) + (54 + K)u), Q̂ the computed value (to
    first order the same as |Q|). At z = 0 (j = 0, a = 0) Q = L exactly (L < 2⁵³).
    ``tests/accountant/test_pld_speed.py`` compares with 40-digit sums.
    """
    count = len(freqs)
    theta = _reduced_angles(freqs, size)
    phase = _reduced_angles(freqs * np.int64(first), size)
    psi = _reduced_angles(freqs * np.int64(length), size)
    rotated = coefficients * (np.cos(phase) + 1j * np.sin(phase))
    values = np.zeros(len(rates))
    bounds = np.zeros(len(rates))
    for r, a in enumerate(rates):
        a_l = a * length
        num_r, num_i = _one_minus_exp(a_l, psi)
        den_r, den_i = _one_minus_exp(a, theta)
        square = den_r * den_r + den_i * den_i
        zero = square == 0.0  # only z = 0: j = 0 with a = 0
        with np.errstate(invalid="ignore", divide="ignore"):
            q_r = np.where(zero, float(length), (num_r * den_r + num_i * den_i) / square)
            q_i = np.where(zero, 0.0, (num_i * den_r - num_r * den_i) / square)
        terms = rotated.real * q_r - rotated.imag * q_i
        values[r] = float(np.sum(terms))
        e_num = (56 + 3 * abs(a_l)) * _UNIT
        e_den = (56 + 3 * abs(a)) * _UNIT
        relative = e_num + e_den + (54 + count) * _UNIT
        magnitude = np.abs(coefficients) * np.hypot(q_r, q_i)
        bounds[r] = 1.01 * relative * float(np.sum(magnitude))
    return values, bounds


def _point_mass(freqs: np.ndarray, coefficients: np.ndarray, size: int, index: int) -> float:
    """m̂ at buffer index ``index``: Re Σⱼ cⱼ e^{iθⱼ·index} (for the float-loss margin only)."""
    phase = _reduced_angles(freqs * np.int64(index), size)
    return float(np.sum(coefficients.real * np.cos(phase) - coefficients.imag * np.sin(phase)))


_SPECTRAL_RATIO = 64
"""A composition is band-limited when its kept frequencies are at most 1/64 of the window."""
_BAND_MAX = 4096
"""Most kept frequencies a band-limited composition computes directly."""


def _frequency_bounds(masses: np.ndarray, centre: int, points: int, total: float) -> np.ndarray:
    """Upper bounds A_a ≥ |z(ω)| for ω within π/M of ω_a = 2πa/M, a = 0, …, ⌊M/2⌋.

    z(ω) = Σₙ mₙe^{−iω(n − c)}, M = ``points`` ≥ 2·len(masses). The size-M DFTs of m and
    of (n − c)m give |z(ω_a)| and |z'(ω_a)| exactly (no aliasing: the support fits), and
    |z''| ≤ μ₂ = Σ(n − c)²mₙ everywhere, so by Taylor's theorem, for |ω − ω_a| ≤ π/M,
    |z(ω)| ≤ |z(ω_a)| + (π/M)|z'(ω_a)| + (π/M)²μ₂/2. The computed DFTs are within
    γ_F·‖·‖₁ of the exact ones (:func:`_fft_error`), the weights (n − c)mₙ within u
    relative; the moments are sums of non-negative terms (within 1e-10 relative, far
    more than their rounding), and the bound is rounded up by 1e-12 relative. |z| ≤ S
    also holds (S within 2u).
    """
    from scipy import fft as sp_fft

    gamma = _fft_error(points)
    offsets = np.arange(len(masses), dtype=float) - centre
    weighted = offsets * masses
    z = np.abs(sp_fft.rfft(masses, n=points, workers=1))
    slope = np.abs(sp_fft.rfft(weighted, n=points, workers=1))
    first = float(np.sum(np.abs(weighted))) * (1 + 1e-10)
    second = float(np.sum(offsets * weighted)) * (1 + 1e-10)
    step = math.pi / points
    bound = (z + gamma * total) + step * (slope + (gamma + 2 * _UNIT) * first)
    bound += 0.5 * step * step * second
    return np.asarray(np.minimum(bound * (1 + 1e-12), total * (1 + 4 * _UNIT)))


def _band_spectrum(
    parts: list[tuple[_Discrete, int]], centres: list[int], size: int
) -> tuple[np.ndarray, np.ndarray, float, float] | None:
    """The kept frequencies of a band-limited composition, its spectrum and error bounds.

    Returns (j, ŝⱼ, ‖e‖_∞ bound, ‖e‖₂ bound) for the composition of ``parts`` (grid PLDs
    with counts, each transformed about its centre) on a cyclic window of ``size``
    points, or None where the composition is not band-limited (then the caller transforms
    the whole window, :func:`._composition._compose`). Without any transform of the
    window:

    * every frequency ωⱼ = 2πj/N, 0 ≤ j ≤ N/2, lies within π/M of some ω_a, and
      |zⱼ| ≤ A_a there (:func:`_frequency_bounds`, M the smallest fast length ≥ twice
      the longest part and ≥ N/32; none of this where 4M > N); the composed
      |sⱼ| ≤ Π_d A_{d,a}^{k_d};
    * the frequencies of every interval a with Σ_d k_d log A_{d,a} > −70 are kept:
      computed directly with their error bounds cⱼ (:func:`_direct_transform_w`; S
      itself at j = 0, within 1.00001u·S), raised to the count as in
      :func:`._composition._compose` (:func:`_accurate_power` where its ρ' is the
      smaller, else ``z ** k`` within ρ of :func:`_power_rho`), and multiplied;
    * the error of ŝ against the exact spectrum s: at a kept j, |ŝⱼ − sⱼ| ≤ Σ_d cⱼG_dⱼ +
      Hⱼ exactly as in :func:`_transform_error` (aⱼ = |ẑⱼ| + cⱼ, Aⱼ = aᵏ(1 + ρ), G_d =
      k_d·a_d^{k_d−1}·Π_{e≠d}A_e, H = ΠA·(Σρ + 3uD)); at a dropped j (ŝⱼ = 0), |sⱼ| ≤
      Π_d A_{d,a}^{k_d}, counted for every j of the interval (at least e^-739 each, so
      that underflow never drops a term);
    * the masses' error, as the inverse DFT of ŝ − s over the half spectrum:
      ‖e‖_∞ ≤ (2/N)·Σⱼ|ŝⱼ − sⱼ| and ‖e‖₂ ≤ (2/N)^½·(Σⱼ|ŝⱼ − sⱼ|²)^½ (Parseval), with 1 %
      for the second order. No inverse transform is computed (:mod:`._spectral` sums δ
      from the kept frequencies and bounds its own rounding).

    The Taylor bound keeps a few more frequencies than the transform of the whole window
    would (10⁵ DP-SGD steps: 40 instead of 34), each computed to ~2u·S.
    """
    from scipy import fft as sp_fft

    longest = max(len(d.masses) for d, _ in parts)
    # at least N/32 (intervals of at most 32 frequencies: few kept beyond the necessary)
    points = sp_fft.next_fast_len(max(2 * longest, size // 32), real=True)
    if points * 4 > size:
        return None
    totals = [_mass_total(d.masses) for d, _ in parts]
    log_bound = np.zeros(points // 2 + 1)
    for (d, k), centre, total in zip(parts, centres, totals, strict=True):
        with np.errstate(divide="ignore"):
            log_bound += k * np.log(_frequency_bounds(d.masses, centre, points, total))
    # interval a holds the j with |j·M/N − a| ≤ ½ (a j on a boundary is in both: counted
    # twice among the dropped, a safe excess)
    a = np.arange(points // 2 + 1)
    lo = np.maximum(0, np.ceil((a - 0.5) * size / points - 1e-9)).astype(np.int64)
    hi = np.minimum(size // 2, np.floor((a + 0.5) * size / points + 1e-9)).astype(np.int64)
    counts = np.maximum(hi - lo + 1, 0)
    kept_intervals = np.flatnonzero(log_bound > -70.0)
    kept_count = int(np.sum(counts[kept_intervals]))
    if kept_count > _BAND_MAX or kept_count * _SPECTRAL_RATIO > size:
        return None
    if kept_intervals.size and kept_intervals[-1] != kept_intervals.size - 1:
        # not a low band (a periodic PLD: randomized response on a coarse lattice has
        # peaks at high frequencies), where the direct transform's bound (~170u·π·S) is
        # worse than the FFT's: the whole-window path bounds it better (issue 33 review)
        return None
    freqs = np.unique(
        np.concatenate([np.arange(lo[i], hi[i] + 1) for i in kept_intervals] + [np.zeros(1)])
    ).astype(np.int64)
    dropped = np.ones(len(a), dtype=bool)
    dropped[kept_intervals] = False
    floor_log = np.maximum(log_bound[dropped], -739.0)
    dropped_sum = float(np.sum(counts[dropped] * np.exp(floor_log)))
    dropped_sq = float(np.sum(counts[dropped] * np.exp(2.0 * floor_log)))
    # the kept frequencies, directly, and their powers
    rest = freqs[1:]
    logs_a, logs_big, rhos, bounds_all, spectrum = [], [], [], [], np.ones(len(freqs), complex)
    for (d, k), centre, total in zip(parts, centres, totals, strict=True):
        values = np.full(len(freqs), complex(total))
        bounds = np.full(len(freqs), _TOTAL_ERROR * total)
        w = np.zeros(len(freqs), dtype=complex)
        if rest.size:
            values[1:], bounds[1:], w[1:] = _direct_transform_w(d.masses, centre, size, rest, total)
        with np.errstate(divide="ignore"):
            log_a = np.log(np.abs(values) + bounds)
        plain_rho = _power_rho(log_a, k)
        raised, rho = _accurate_power(total, w, k)
        use = rho < plain_rho
        power = values**k
        power[use] = raised[use]
        rho = np.where(use, rho, plain_rho)
        spectrum *= power
        logs_a.append(log_a)
        logs_big.append(k * log_a + np.log1p(rho))
        rhos.append(rho)
        bounds_all.append(bounds)
    log_all = np.sum(logs_big, axis=0)
    with np.errstate(over="ignore"):
        errors = np.exp(log_all) * (np.sum(rhos, axis=0) + 3 * _UNIT * len(parts))
        for (_, k), log_a, log_big, bounds in zip(parts, logs_a, logs_big, bounds_all, strict=True):
            g = np.exp(math.log(k) + (k - 1) * log_a + (log_all - log_big))
            errors = errors + bounds * g
    sum_err = float(np.sum(errors)) + dropped_sum
    l2_err = math.sqrt(float(np.sum(errors * errors)) + dropped_sq)
    error_max = 1.01 * (2 / size) * sum_err + 1e-300
    error_l2 = 1.01 * math.sqrt(2 / size) * l2_err + 1e-300
    if not (math.isfinite(error_max) and math.isfinite(error_l2)):
        return None
    return freqs, spectrum, error_max, error_l2
