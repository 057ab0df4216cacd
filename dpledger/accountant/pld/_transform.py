"""The rounding error of the FFT composition, bounded.

Accurate totals (:func:`_mass_total`), the transform's componentwise error
(:func:`_fft_error`), the low frequencies recomputed directly, and the bound on the
composed masses: :func:`_transform_error` bounds the error of the computed composition
(the transforms, their powers and product, the inverse transform) against the exact
cyclic convolution of the grid masses, and :func:`._composition._compose` charges it to
both ends of the bracket. The frequencies that carry a long composition are recomputed
without cancellation (:func:`_direct_transform`), to a bound ~100x below the FFT's. See
:mod:`dpledger.accountant.pld`.
"""

from __future__ import annotations

import math

import numpy as np

_UNIT = 2.0**-53  # unit roundoff of float64
_TOTAL_ERROR = _UNIT * (1 + 2.0**-17)  # relative error of _mass_total


def _mass_total(masses: np.ndarray) -> float:
    """Σ masses (finite, non-negative) within (1 + 2⁻¹⁷)·u·S of the exact sum S.

    Error-free splitting (as in Rump, Ogita & Oishi 2008, *Accurate floating-point
    summation*, SIAM J. Sci. Comput. 31): with n ≤ 2²¹ terms below 2^E and b = 52 −
    ⌈log₂ n⌉, each term is split exactly into its nearest multiple of q = 2^{E−b} and a
    remainder of at most q/2 (Sterbenz); the multiples of q sum exactly in any order
    (integers of at most 2⁵² times q). After two splits the remainders, at most 2^{E−2b−1},
    sum with an error of at most n²u·2^{E−2b−1} ≤ n⁴·2^{E−156} ≤ 2⁻⁷¹·max ≤ 2⁻⁷¹·S,
    and :func:`math.fsum` rounds the three parts once: |result − S| ≤ u·S + (1 + u)
    ·2⁻⁷¹·S. Ten times faster than :func:`math.fsum` of every term, which it falls back
    to outside that range (more terms, extreme exponents).
    """
    n = len(masses)
    top = float(np.max(masses)) if n else 0.0
    if top == 0.0:
        return 0.0
    bits = 52 - max(1, math.ceil(math.log2(n)))
    exponent = math.frexp(top)[1]  # top < 2**exponent
    if n > 1 << 21 or not -900 < exponent < 1000:
        return math.fsum(masses)
    parts = []
    rest = masses
    for _ in range(2):
        exponent -= bits
        whole = np.round(rest * math.ldexp(1.0, -exponent)) * math.ldexp(1.0, exponent)
        parts.append(float(np.sum(whole)))
        rest = rest - whole
    parts.append(float(np.sum(rest)))
    return math.fsum(parts)


def _fft_error(size: int) -> float:
    """γ_F: the componentwise error of a computed real FFT of size N relative to ‖x‖₁.

    Every output of a fast Fourier transform is computed along a tree of log₂N butterfly
    levels; the nodes of one level that feed an output are partial transforms of disjoint
    subsets of x, so their moduli sum to at most ‖x‖₁, and each level adds at most a
    complex multiplication by a computed twiddle factor and an addition: ≤ (μ + √2·γ₂ +
    2u)·‖x‖₁ per level (Higham 2002, *Accuracy and Stability of Numerical Algorithms*,
    §3.6 and §24.1; μ the twiddles' error, ≤ 2u in pocketfft). That is < 7u per binary
    level; radix-4 and radix-3/5 passes and the real-to-half-complex post-processing
    stay below it per level of log₂N. The constant used, 12u per level plus two levels,
    is a margin over that; the same γ_F bounds the Euclidean error relative to √N‖x‖₂
    (Higham Thm 24.2) and the inverse transform's. ``tests/accountant/test_pld.py`` measures the
    componentwise error against 80-bit sums: it stays below γ_F/10.
    """
    return 12 * _UNIT * (math.log2(size) + 2)


_DIRECT_MAX = 256
"""Most frequencies recomputed directly (:func:`_direct_frequencies`)."""
_DIRECT_LEVEL = 1e-6
"""Recompute the frequencies whose composed magnitude is at least this of the largest."""


def _centre(masses: np.ndarray) -> int:
    """An integer index near the mean of ``masses`` (any integer is exact; this is accurate)."""
    total = float(np.sum(masses))
    if not total > 0:
        return 0
    return round(float(np.sum(np.arange(len(masses), dtype=float) * masses)) / total)


def _direct_frequencies(log_magnitude: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The kept frequencies j ≥ 1 that carry the composition (at most :data:`_DIRECT_MAX`).

    Their transform error, amplified k-fold by the power, dominates the rounding guard of a
    long composition (a few dozen low frequencies for DP-SGD): those whose composed
    magnitude is at least :data:`_DIRECT_LEVEL` of the largest, the largest first.
    """
    candidates = np.flatnonzero(keep[1:]) + 1
    if candidates.size == 0:
        return candidates
    level = log_magnitude[candidates]
    chosen = candidates[level >= float(np.max(level)) + math.log(_DIRECT_LEVEL)]
    if chosen.size > _DIRECT_MAX:
        chosen = chosen[np.argsort(-log_magnitude[chosen], kind="stable")[:_DIRECT_MAX]]
    return np.sort(chosen)


def _pairwise_rows(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Row sums of ``x`` by pairwise summation, and the number of levels L.

    Zero-padded to a power of two and halved level by level: each level rounds every
    partial sum once, so |computed − exact| ≤ γ_L·Σ|xᵢ| per row, γ_L = Lu/(1 − Lu)
    (Higham 2002, §4.2).
    """
    width = x.shape[1]
    levels = max(0, (width - 1).bit_length())
    padded = np.zeros((x.shape[0], 1 << levels))
    padded[:, :width] = x
    while padded.shape[1] > 1:
        padded = padded[:, 0::2] + padded[:, 1::2]
    return padded[:, 0], levels


_BLOCK = 64
"""Block length of :func:`_direct_transform` (a power of two)."""
_DIRECT_CHUNK = 1 << 18
"""Elements per (frequency × block) array of :func:`_direct_transform` (2 MiB each)."""


def _reduced_angles(products: np.ndarray, size: int) -> np.ndarray:
    """2π·(p mod N)/N, reduced to [−π, π], for exact integer products p.

    The integer reduction is exact; each computed angle is within 2.0001u of its value.
    """
    r = products % size
    r = np.where(r > size // 2, r - size, r)
    return np.asarray(r * (2 * math.pi / size))


def _direct_transform(
    masses: np.ndarray, centre: int, size: int, freqs: np.ndarray, total: float
) -> tuple[np.ndarray, np.ndarray]:
    """zⱼ at ``freqs`` with a bound on each error: :func:`_direct_transform_w` without W."""
    values, bounds, _ = _direct_transform_w(masses, centre, size, freqs, total)
    return values, bounds


def _direct_transform_w(
    masses: np.ndarray, centre: int, size: int, freqs: np.ndarray, total: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """zⱼ = Σₙ mₙ e^{−iφₙ}, φₙ = 2πj(n − c)/N, at ``freqs``, each with a bound on its error.

    zⱼ = S − Wⱼ with Wⱼ = Σₙ mₙ(1 − e^{−iφₙ}), computed without cancellation: with n − c =
    Bb + t (blocks of B = :data:`_BLOCK`) and φ = α_b + β_t, 1 − e^{−iφ} = (1 − e^{−iα}) +
    e^{−iα}(1 − e^{−iβ}), so W = Σ_b [(1 − e^{−iα_b})M_b + e^{−iα_b}V_b] with block masses
    M_b and V_b = Σ_t m(1 − e^{−iβ_t}) (one matrix product), 1 − cos x = 2 sin²(x/2).
    Every error is then a few u of the *small* quantities, not of S. First order in u,
    with sin and cos within 4 ulp and every angle within 2.0001u of its value (integer
    reduction, :func:`_reduced_angles`): 2 sin²(x/2) within 26u relative (|x/2| ≤ π/2);
    sin x within 11u|x|; cos x within 11u; M_b (pairwise, 6 levels) within 6.01u
    relative; V_b's real part (non-negative terms; a dot product of B terms in any order
    is within γ_B of the sum of their magnitudes: Higham 2002, §3.1) within 91u relative
    and its imaginary part within 76u·Σm|β|. Term by term, the errors in Re W and Im W
    sum to at most 150u·T_b, T_b = (1 − cos α_b + |α_b|)M_b + 2 Re V_b + 2Σ_t m|β_t|;
    the sums over blocks (:func:`_pairwise_rows`, L levels, after two additions per
    block) add 2γ_{L+2}·ΣT_b; S − Re W rounds once and S (:func:`_mass_total`) is within
    1.00001u·S of Σm. So |ẑ − z| ≤ 1.01·(u·|Re ẑ| + u·S + (150 + 2.02(L + 2))u·ΣT_b). For the
    low frequencies of a concentrated PLD, ΣT_b ≈ Σm|φ| ≪ S: the bound is ≈ 2u·S, where
    the FFT's is γ_F·S ≈ 250u·S. A test compares with 50-digit sums.

    Also returns the computed Ŵⱼ themselves (ẑ = S − Ŵ, rounded): S − Ŵ, unrounded, is
    within the same bound of zⱼ (the bound's u·|Re ẑ| is the rounding of that
    subtraction), and :func:`_accurate_power` raises it to a power from S and Ŵ apart.
    """
    positive = np.flatnonzero(masses > 0)
    values = np.full(len(freqs), complex(total))
    bounds = np.full(len(freqs), _UNIT * total)
    w_values = np.zeros(len(freqs), dtype=complex)
    if positive.size == 0 or len(freqs) == 0:
        return values, bounds, w_values
    lo, hi = int(positive[0]), int(positive[-1])
    first = lo - centre  # relative index of the first mass
    block0 = first // _BLOCK
    pad = first - block0 * _BLOCK
    blocks = -(-(pad + hi - lo + 1) // _BLOCK)
    flat = np.zeros(blocks * _BLOCK)
    flat[pad : pad + hi - lo + 1] = masses[lo : hi + 1]
    mat = flat.reshape(blocks, _BLOCK)
    block_mass, _ = _pairwise_rows(mat)  # (blocks,)
    starts = _BLOCK * (block0 + np.arange(blocks, dtype=np.int64))
    # the (J, blocks) arrays below are built a few frequencies at a time, so that memory
    # stays at ~_DIRECT_CHUNK elements per array whatever the window (each frequency's
    # value and bound depend on its own row only)
    step = max(1, _DIRECT_CHUNK // blocks)
    for at in range(0, len(freqs), step):
        js = np.asarray(freqs[at : at + step], dtype=np.int64)[:, None]
        count = len(js)
        alpha = _reduced_angles(js * starts, size)  # (J, blocks)
        beta = _reduced_angles(js * np.arange(_BLOCK, dtype=np.int64), size)  # (J, B)
        half_beta = np.sin(beta * 0.5)
        # np.einsum, not ``@``: no multi-threaded BLAS call (see _composition._log_mgfs);
        # any order of the B products per block is covered by the bound below
        trig = np.concatenate([2.0 * half_beta * half_beta, np.sin(beta), np.abs(beta)])
        inner = np.einsum("bt,jt->bj", mat, trig)
        re_v, im_v, spread_v = (
            inner[:, :count].T,
            inner[:, count : 2 * count].T,
            inner[:, 2 * count :].T,
        )
        half_alpha = np.sin(alpha * 0.5)
        one_minus_cos = 2.0 * half_alpha * half_alpha  # (J, blocks)
        del half_alpha
        sin_a, cos_a = np.sin(alpha), np.cos(alpha)
        re_w, levels = _pairwise_rows(one_minus_cos * block_mass + cos_a * re_v + sin_a * im_v)
        im_w, _ = _pairwise_rows(sin_a * block_mass + cos_a * im_v - sin_a * re_v)
        del sin_a, cos_a
        magnitude = (
            (one_minus_cos + np.abs(alpha)) * block_mass + 2.0 * re_v + 2.0 * spread_v
        ).sum(axis=1) * (1.0 + 1e-6)  # ≥ ΣT_b (non-negative terms, summed within a relative nu)
        real = total - re_w
        values[at : at + count] = real - 1j * im_w
        w_values[at : at + count] = re_w + 1j * im_w
        bounds[at : at + count] = 1.01 * (
            _UNIT * (np.abs(real) + total) + (150 + 2.02 * (levels + 2)) * _UNIT * magnitude
        )
    return values, bounds, w_values


def _power_rho(log_a: np.ndarray, k: int) -> np.ndarray:
    """ρ: the relative error of a power ẑᵏ computed by NumPy (``z ** k``), |ẑ| ≤ a.

    Binary powering or exp(k·log ẑ): u·(k·(2 + 2|log a| + 2π) + 4) (see
    :func:`_transform_error`). Grows with k: for k = 10⁵ it is 9e-11, and summed over the
    frequencies of a long composition it was most of the rounding guard.
    """
    return np.asarray(_UNIT * (k * (2 + 2 * np.abs(log_a) + 2 * math.pi) + 4))


def _accurate_power(total: float, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(S − W)ᵏ for floats S > 0 and complex Ŵ, each with a bound ρ' on its relative error.

    Computed as exp(k·(log S + log(1 − ω))), ω = W/S, with log(1 − ω) from the small
    quantity ω itself: Re = ½·log1p(x), x = ω_r(ω_r − 2) + ω_i² = |1 − ω|² − 1, and
    Im = atan2(−ω_i, 1 − ω_r). NumPy's ``z ** k`` of the rounded z = S − W instead loses
    about u·k·(2 + 2π) relative (the logarithm of a z near 1 carries an *absolute* error
    of u, which the power multiplies by k); here the errors are relative to ω, and k·|ω|
    is what the composition keeps (k·|log(1 − ω)| ≲ 70 at a kept frequency).

    Error, to first order (every operation correctly rounded to within u, except log1p,
    log, atan2, exp, cos and sin, within 2 ulp), with α, β the computed ω_r, ω_i (each
    within u relative), r² = 1 + x the computed |1 − ω|²:

    * x: |Δx| ≤ E = u·(|α|(8 + 5|α|) + 4β²) (α's error through α(α − 2), the roundings
      of α − 2, of the two products and of the sum);
    * Re log: ½|Δx|/(1 + x − E) + 2u·|Re| (log1p's slope 1/(1 + x));
    * Im log: (|1 − α|·u|β| + |β|·u(|α| + |1 − α|))/(r² − E) + 2u·|Im| (atan2's
      partial derivatives are bounded by |x|/r², |y|/r²);
    * log S: 2u·|log S|;
    * y = k·(log S + Re) and θ = k·Im, rounded: + 2u·|y| and + u·|θ|;
    * exp(y)·(cos θ + i sin θ): + 8u relative (exp, cos, sin and the two products).

    ρ' = 1.01·(k·(e_Re + e_logS + e_Im) + 2u|y| + u|θ| + 8u) (the 1 % covers the second
    order while ρ' ≤ 1e-3). Only used where ω is not large (|1 − ω|² > ½), ρ' < 1e-3 and
    y > −600 (no underflow, where a relative bound fails); elsewhere ρ' is +∞ (the caller
    keeps NumPy's power). ``tests/accountant/test_pld.py``
    compares with 50-digit powers.
    """
    u = _UNIT
    if not (total > 0 and math.isfinite(total)) or len(w) == 0:
        return np.full(len(w), np.nan + 0j), np.full(len(w), np.inf)
    alpha = w.real / total
    beta = w.imag / total
    x = alpha * (alpha - 2.0) + beta * beta
    e_x = u * (np.abs(alpha) * (8.0 + 5.0 * np.abs(alpha)) + 4.0 * beta * beta)
    ok = (x > -0.5) & (e_x < 0.25)
    one_minus = 1.0 - alpha
    with np.errstate(invalid="ignore", divide="ignore"):
        re = 0.5 * np.log1p(x)
        im = np.arctan2(-beta, one_minus)
        r2 = np.where(ok, 1.0 + x - e_x, 1.0)
        e_re = 0.5 * e_x / r2 + 2 * u * np.abs(re)
        e_im = (
            np.abs(one_minus) * u * np.abs(beta)
            + np.abs(beta) * u * (np.abs(alpha) + np.abs(one_minus))
        ) / r2 + 2 * u * np.abs(im)
        log_s = math.log(total)
        y = k * (log_s + re)
        theta = k * im
        rho = 1.01 * (
            k * (e_re + 2 * u * abs(log_s) + e_im) + 2 * u * np.abs(y) + u * np.abs(theta) + 8 * u
        )
        values = np.exp(y) * (np.cos(theta) + 1j * np.sin(theta))
    # y < −600: the power may underflow, where no relative bound holds (and a kept
    # frequency is above e^-70 anyway)
    rho = np.where(ok & (rho < 1e-3) & np.isfinite(rho) & (y > -600.0), rho, np.inf)
    return values, rho


def _transform_error(
    transforms: list[tuple[np.ndarray, int, float, float, np.ndarray]],
    spectrum: np.ndarray,
    keep: np.ndarray,
    size: int,
    powers: list[tuple[np.ndarray, np.ndarray]] | None = None,
    *,
    logs_a: list[np.ndarray] | None = None,
) -> tuple[float, float]:
    """Bounds (‖e‖_∞, ‖e‖₂) on the error of the computed composition.

    ``transforms``: each part's computed half spectrum ẑ, its count k, its total mass S =
    ‖x‖₁ (x ≥ 0), ‖x‖₂ and the bounds cⱼ ≥ |ẑⱼ − zⱼ|; ``spectrum`` the computed product
    ŝ, zero where not ``keep``. Against the exact cyclic convolution y of the grid masses
    (first order in u, with a 1 % margin for the second):

    * |ẑⱼ − zⱼ| ≤ cⱼ: γ_F·S from the FFT (:func:`_fft_error`), 1.00001u·S at j = 0
      (:func:`_mass_total`), the bound of :func:`_direct_transform` where recomputed; and
      ‖ẑ − z‖₂ ≤ (γ_F²·N·‖x‖₂² + Σ_direct cⱼ²)^½; aⱼ = |ẑⱼ| + cⱼ bounds |zⱼ| and |ẑⱼ|;
    * the power: |zᵏ − ẑᵏ| ≤ k·|ẑ − z|·a^{k−1}, and the computed power (binary powering, or
      exp(k·log ẑ)) is within ρ = u·(k·(2 + 2|log a| + 2π) + 4) of ẑᵏ, relative
      (:func:`_power_rho`); Aⱼ = a^k(1 + ρ) bounds both. ``powers`` (per part: frequencies
      and their ρ') names the frequencies whose power was computed instead from S and Ŵ
      (:func:`_accurate_power`, of the base S − Ŵ, also within cⱼ of zⱼ and at most aⱼ in
      modulus): there ρ' replaces ρ — ~1000x smaller for k = 10⁵, which made the rounding
      guard of 10⁵ DP-SGD steps 5x smaller (below the level that asks for a tilted
      composition, :func:`._composition._guard_matters`);
    * the product of D parts: |ŝⱼ − sⱼ| ≤ Σ_d |ẑ_d − z_d|ⱼ·G_dⱼ + Hⱼ with G_d = k_d·a_d^{k_d−1}
      ·Π_{e≠d} A_e and H = ΠA·(Σρ + 3uD); a dropped frequency has |sⱼ| ≤ ΠA;
    * Σⱼ|ẑ − z|ⱼG_dⱼ ≤ min(Σ c·G, ‖ẑ − z‖₂‖G‖₂), and ‖(ẑ − z)∘G‖₂ ≤ min(‖c∘G‖₂,
      ‖ẑ − z‖₂·max G);
    * the inverse transform: ‖Δ‖∞ ≤ (2/N)·Σⱼ|Δⱼ| and ‖Δ‖₂ ≤ (2/N)^½·‖Δ‖₂ of the half
      spectrum (Parseval), plus its own rounding γ_F·(2/N)Σ|ŝⱼ| and γ_F·(2/N)^½‖ŝ‖₂.

    The clipping of negative outputs to 0 only moves them towards the exact masses (≥ 0).

    ``logs_a``: each part's log aⱼ = log(|ẑⱼ| + cⱼ), where
    the caller has them (computed the same way).
    """
    gamma = _fft_error(size)
    parts = len(transforms)
    if logs_a is None:
        logs_a = []
        for z, _, _, _, bound in transforms:
            with np.errstate(divide="ignore"):
                logs_a.append(np.log(np.abs(z) + bound))
    # ΠA below e^-740 (most frequencies of a long composition) adds at most N·e^-740 in
    # all: the per-frequency terms are evaluated where ΠA may exceed that only
    log_prod = transforms[0][1] * logs_a[0]
    for (_, k, _, _, _), log_a in zip(transforms[1:], logs_a[1:], strict=True):
        log_prod += k * log_a
    rows = np.flatnonzero((log_prod > -739.0) | keep)
    floor = size * math.exp(-739.0) + 1e-300
    logs_a = [log_a[rows] for log_a in logs_a]
    kept = keep[rows]
    rhos = [_power_rho(log_a, k) for (_, k, _, _, _), log_a in zip(transforms, logs_a, strict=True)]
    for rho, (indices, better) in zip(rhos, powers or [], strict=False):
        if indices.size:
            at = np.searchsorted(rows, indices)  # every such frequency is kept, so in rows
            rho[at] = better
    logs_big_a = [
        k * log_a + np.log1p(rho)
        for (_, k, _, _, _), log_a, rho in zip(transforms, logs_a, rhos, strict=True)
    ]
    log_all = np.sum(logs_big_a, axis=0)
    # H over the kept frequencies; a dropped one contributes ΠA in full
    with np.errstate(over="ignore"):
        big = np.exp(log_all)
        h_term = np.where(kept, big * (np.sum(rhos, axis=0) + 3 * _UNIT * parts), big)
    sum_err = float(np.sum(h_term)) + floor
    l2_err = float(np.sqrt(np.sum(h_term * h_term))) + floor
    for (_, k, total, norm2, bound), log_a, log_big in zip(
        transforms, logs_a, logs_big_a, strict=True
    ):
        c = bound[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.exp(math.log(k) + (k - 1) * log_a + (log_all - log_big))
        g = np.where(kept, g, 0.0)  # dropped frequencies are counted in full above
        # the FFT's normwise bound, plus the recomputed frequencies' own (see above)
        replaced = bound[1:] < gamma * total
        normwise = math.sqrt(
            (gamma * math.sqrt(size) * norm2) ** 2 + float(np.sum(bound[1:][replaced] ** 2))
        )
        g2 = float(np.sqrt(np.sum(g * g)))
        sum_err += min(float(np.sum(c * g)), normwise * g2)
        l2_err += min(
            float(np.sqrt(np.sum((c * g) ** 2))), normwise * float(np.max(g, initial=0.0))
        )
    # the inverse transform's own rounding (ŝ is zero where not kept)
    magnitude = np.abs(spectrum[keep])
    own_max = gamma * 2 / size * float(np.sum(magnitude))
    own_l2 = gamma * math.sqrt(2 / size) * float(np.sqrt(np.sum(magnitude * magnitude)))
    error_max = 1.01 * (2 / size * sum_err + own_max) + 1e-300
    error_l2 = 1.01 * (math.sqrt(2 / size) * l2_err + own_l2) + 1e-300
    if not (math.isfinite(error_max) and math.isfinite(error_l2)):
        return (math.inf, math.inf)
    return (error_max, error_l2)
