"""Composition of grid PLDs by one real FFT, with its proven rounding guard.

The window is sized by Chernoff bounds (:func:`_compose`); the transform's rounding
error is bounded (:func:`._transform._transform_error`) and charged to both ends
(:meth:`_Composition.rounding_guard`); tilting (:func:`_tilted`) keeps small δ accurate.
A band-limited composition is kept as its few frequencies instead, without any
transform of the window (:class:`_SpectralComposition`, :mod:`._spectral`).
See :mod:`dpledger.accountant.pld`.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dpledger._numerics import round_up
from dpledger.accountant.pld._discretise import _TAIL, _check_grid, _Discrete
from dpledger.accountant.pld._spectral import (
    _band_spectrum,
    _geometric_sums,
    _point_mass,
)
from dpledger.accountant.pld._transform import (
    _TOTAL_ERROR,
    _UNIT,
    _accurate_power,
    _centre,
    _direct_frequencies,
    _direct_transform_w,
    _fft_error,
    _mass_total,
    _power_rho,
    _transform_error,
)
from dpledger.errors import NotApplicableError

if not TYPE_CHECKING:  # (hidden from type checkers: every other name stays checked)

    def __getattr__(name: str) -> Any:
        """The module's former ``sp_fft`` name (scipy.fft), imported on first use (#32)."""
        if name == "sp_fft":
            from scipy import fft

            return fft
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LAMBDAS = np.logspace(-2.0, 2.3, 18)
_GUARD_TILT = 1e-5  # above _TILT_BELOW, tilt where the rounding guard exceeds this of δ
_WINDOW_TAIL = 1e-20  # default finite mass allowed outside the FFT window on either side


def _log_mgfs(d: _Discrete, h: float, lambdas: np.ndarray) -> np.ndarray:
    """Log Σ mᵢ e^{λℓᵢ} of the finite (unnormalised) part, for each λ.

    No BLAS call: a multi-threaded BLAS product here (OpenBLAS threads products of this
    size) made a cold DP-SGD query 4x slower on a loaded machine (spinning threads); the
    products below are ``np.einsum``'s own loops, on the calling thread.
    """
    positive = d.masses > 0
    if not np.any(positive):
        return np.full(len(lambdas), -np.inf)
    lo, hi = np.flatnonzero(positive)[[0, -1]]
    # log Σ m e^{λℓ} = shift + log Σ m e^{λℓ − shift}, shift = max λℓ (at an end of support)
    shift = np.maximum(lambdas * ((d.start + lo) * h), lambdas * ((d.start + hi) * h))
    # only the positive range: no exponent below exceeds the shift by more than a block
    masses = d.masses[lo : hi + 1]
    # e^{λℓ} = e^{λ·(block start)}·e^{λ·(offset in block)}: 16 times fewer exponentials
    # (fewer per block where h·λ is large: e^{λ·h·(block − 1)} must stay finite)
    block = max(1, min(16, int(300.0 / (h * float(np.max(np.abs(lambdas))) + 1e-300))))
    size = -(-len(masses) // block) * block
    padded = np.zeros(size)
    padded[: len(masses)] = masses
    first = (d.start + lo + np.arange(0, size, block)) * h
    offsets = np.exp(np.outer(np.arange(block) * h, lambdas))  # (block, λ)
    inner = np.einsum("ib,bl->il", padded.reshape(-1, block), offsets)  # (blocks, λ)
    outer = np.exp(np.outer(first, lambdas) - shift)  # (blocks, λ)
    scaled = np.einsum("ij,ij->j", outer, inner)
    with np.errstate(divide="ignore"):
        return np.asarray(shift + np.log(scaled), dtype=float)


@dataclass(frozen=True)
class _Composition:
    """The composed grid PLD of one direction, with tail bounds and fast δ(ε).

    ``error_max`` and ``error_l2`` bound the transform's rounding error e (the computed
    composed masses, before untilting, less the exact cyclic convolution of the grid
    masses) in the max and the Euclidean norm (:func:`_transform_error`). Untilting
    multiplies point i by fᵢ = exp(log Z − λℓᵢ) (1 when ``tilt`` is 0).
    """

    start: int  # grid index of the first window point
    masses: np.ndarray  # finite part (unnormalised: total ≈ 1 − infinite)
    infinite: float
    upper_tail: float  # bound on the finite mass above the window
    lower_tail: float  # bound on the finite mass below the window
    h: float
    error_max: float = 0.0
    error_l2: float = 0.0
    tilt: float = 0.0
    log_z: float = 0.0
    suffix: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((3, 1)))
    releases: int = 1  # how many releases were composed (for _mass_margin)
    support_top: bool = False  # the window's last point is the support's top (see _delta)

    @staticmethod
    def build(
        start: int,
        masses: np.ndarray,
        infinite: float,
        upper: float,
        lower: float,
        h: float,
        errors: tuple[float, float],
        tilt: float = 0.0,
        log_z: float = 0.0,
        releases: int = 1,
        support_top: bool = False,
    ) -> _Composition:
        """``errors``: the (max, Euclidean) bounds of :func:`_transform_error`.

        Precomputes, per block of B points (:func:`_tail_block`), the suffix sums that
        :meth:`_body` needs, all in non-negative arithmetic: with c = e^{−Bh}, block
        masses M_b and V_b = Σ_t m_{bB+t}(1 − e^{−th}),
        P_b = Σ_{b'≥b} M_{b'}, X_b = Σ_{b'≥b} (1 − c^{b'−b})M_{b'} = (1 − c)P_{b+1} +
        c·X_{b+1} and Y_b = Σ_{b'≥b} c^{b'−b}V_{b'} = V_b + c·Y_{b+1}. Each is built from
        non-negative terms only; counting the sums, the products by c, c's own error
        (compounded to c^k) and the exponentials along any path gives a relative error
        of at most about γ_{3·blocks+B+12} (Higham 2002, §3.1), ≤ 2e-12 for any window
        :data:`MAX_GRID_POINTS` allows (a review measured ≤ 1.5e-14 at 2²¹ points).
        (Full cumulative sums, as before, cost two passes and an exponential per window
        point — a fifth of a DP-SGD composition — for the few dozen points a query
        reads, and their referenced form cancelled.)
        """
        block = _tail_block(len(masses))
        blocks = -(-len(masses) // block)
        # full blocks as a view (no padded copy of the window), the last partial one apart
        full = len(masses) // block
        matrix = masses[: full * block].reshape(full, block)
        spread = -np.expm1(-h * np.arange(block))
        block_m = np.zeros(blocks)
        block_v = np.zeros(blocks)
        block_m[:full] = matrix.sum(axis=1)
        block_v[:full] = np.einsum("ij,j->i", matrix, spread)
        if full < blocks:
            rest = masses[full * block :]
            block_m[full] = float(np.sum(rest))
            block_v[full] = float(np.einsum("i,i->", rest, spread[: len(rest)]))
        c = math.exp(-h * block)
        one_minus_c = -math.expm1(-h * block)
        p_suffix = np.append(np.cumsum(block_m[::-1])[::-1], 0.0)
        x_suffix = np.zeros(blocks + 1)
        y_suffix = np.zeros(blocks + 1)
        x_next = y_next = 0.0
        for b in range(blocks - 1, -1, -1):  # a first-order recursion: ≤ 4,096 blocks
            x_next = one_minus_c * float(p_suffix[b + 1]) + c * x_next
            y_next = float(block_v[b]) + c * y_next
            x_suffix[b], y_suffix[b] = x_next, y_next
        return _Composition(
            start,
            masses,
            infinite,
            upper,
            lower,
            h,
            *errors,
            tilt,
            log_z,
            np.stack([p_suffix, x_suffix, y_suffix]),
            releases,
            support_top,
        )

    def _body(self, epsilon: float, j: int) -> tuple[float, float]:
        """Σ_{i≥j} mᵢ(1 − e^{ε−ℓᵢ}) for j = :meth:`_first_above` (ε), without cancellation.

        With w = e^{ε−ℓⱼ} (ε < ℓⱼ; ℓⱼ ≤ ε + h unless ε lies below the window),
        1 − e^{ε−ℓᵢ} = (1 − w) + w(1 − e^{−(ℓᵢ−ℓⱼ)}),
        so the sum is (1 − w)·P + w·D with P = Σ_{i≥j} mᵢ and D = Σ_{i≥j} mᵢ(1 −
        e^{−(ℓᵢ−ℓⱼ)}): the rest of j's block directly, the blocks after it from the
        suffix sums of :meth:`build` (1 − e^{−(a+d)} = (1 − e^{−a}) + e^{−a}(1 − e^{−d}),
        a = ℓ(next block) − ℓⱼ). Every term is non-negative. Returns the sum and P.
        """
        block = _tail_block(len(self.masses))
        b, h = j // block, self.h
        end = (b + 1) * block
        part = self.masses[j:end]
        spread = -np.expm1(-h * np.arange(len(part)))
        p_suffix, x_suffix, y_suffix = (float(v) for v in self.suffix[:, b + 1])
        a = (end - j) * h
        total = float(np.sum(part)) + p_suffix
        spread_sum = float(np.einsum("i,i->", part, spread)) + (
            -math.expm1(-a) * p_suffix + math.exp(-a) * (x_suffix + y_suffix)
        )
        gap = epsilon - (self.start + j) * h  # < 0 (in (−h, 0) inside the window)
        return -math.expm1(gap) * total + math.exp(gap) * spread_sum, total

    @property
    def length(self) -> int:
        """The number of window points."""
        return len(self.masses)

    def delta(self, epsilon: float, kind: str) -> float:
        """δ̄(ε) (``kind="upper"``) or δ̲(ε) (``"lower"``)."""
        return self._delta(epsilon, kind)

    def _evaluate(self, epsilon: float, j: int) -> tuple[float, float, float, float]:
        """(body, P, m_{j−1}, guard) at ε, j = :meth:`_first_above` (ε) < :attr:`length`.

        The body and P of :meth:`_body`, the mass just below j (0 at j = 0), and the
        rounding guard (:meth:`rounding_guard`).
        """
        body, total = self._body(epsilon, j)
        below = self._mass(j - 1) if j >= 1 else 0.0
        return body, total, below, self.rounding_guard(epsilon)

    def _mass(self, i: int) -> float:
        """The composed mass at window index i."""
        return float(self.masses[i])

    def _first_above(self, epsilon: float) -> int:
        """The first window index with loss > ε."""
        j = max(0, math.floor(epsilon / self.h) - self.start + 1)
        while j > 0 and (self.start + j - 1) * self.h > epsilon:
            j -= 1
        while j < self.length and (self.start + j) * self.h <= epsilon:
            j += 1
        return j

    def rounding_guard(self, epsilon: float) -> float:
        """A bound on the transform's rounding error in δ(ε) = Σ_{ℓᵢ>ε} mᵢ(1 − e^{ε−ℓᵢ}).

        Each weight 1 − e^{ε−ℓᵢ} is in [0, 1], so the error is at most Σ_{i≥j} fᵢ|eᵢ| ≤
        min(‖e‖_∞·Σfᵢ, ‖e‖₂·(Σfᵢ²)^½) (Cauchy–Schwarz) over the n points above ε; fᵢ is
        geometric in i, so both sums have closed forms.
        """
        j = self._first_above(epsilon)
        count = self.length - j
        if count <= 0:
            return 0.0
        if self.tilt == 0.0:
            value = min(count * self.error_max, math.sqrt(count) * self.error_l2)
        else:
            rate = self.tilt * self.h
            try:
                first = math.exp(self.log_z - self.tilt * (self.start + j) * self.h)
            except OverflowError:
                return math.inf
            linear = first * (-math.expm1(-rate * count) / -math.expm1(-rate))
            square = first * math.sqrt(-math.expm1(-2 * rate * count) / -math.expm1(-2 * rate))
            value = min(self.error_max * linear, self.error_l2 * square)
        return round_up(value * (1 + 1e-9)) if math.isfinite(value) else math.inf

    def _delta(self, epsilon: float, kind: str) -> float:
        j = self._first_above(epsilon)
        n = self.length
        if j >= n:
            body = total = guard = 0.0
            below = self._mass(n - 1) if n >= 1 else 0.0
        else:
            body, total, below, guard = self._evaluate(epsilon, j)
        # The grid's losses are the real numbers (start + i)·h; their float values, and
        # ε − ℓ, err by at most η. Each weight 1 − e^{ε−ℓᵢ} then errs by at most η, and
        # the point below j (float loss ≤ ε) may really lie above ε, with weight ≤ η.
        # Negligible (≈ η/h relative) except at the top of a bounded support, where the
        # last point alone carries δ (δ̄(30.0) was 0 for 300 randomized responses of 0.1
        # with five categories; the exact value is 6.6e-215).
        eta = 4 * _UNIT * (abs(epsilon) + (abs(self.start) + n) * self.h)
        guard += eta * (abs(total) + abs(below))
        # plus a relative margin for the relative error of the masses themselves
        # (quadrature, tilting and untilting, the sums above), which the transform's
        # error bound does not cover: see _mass_margin
        guard += _mass_margin(self.releases) * abs(body)
        if kind == "upper":
            # below the window, the mass below it (not in the window: see _compose) counts
            below_window = self.lower_tail if epsilon < self.start * self.h else 0.0
            value = self.infinite + max(0.0, body) + self.upper_tail + below_window + guard
            if value == 0.0 and self.support_top and (self.start + n - 1) * self.h + eta > epsilon:
                # the support's top point has positive mass (a product of positive masses)
                # above ε: δ > 0 even where it underflows (200 sampled Laplace releases,
                # p ≈ 1e-328 at the top), and 0 would certify ε at δ = 0
                return math.nextafter(0.0, 1.0)
            return 1.0 if not value < 1.0 else round_up(value)
        # mass outside the window wraps into it (either side): none of it is certain
        value = self.infinite + body - self.lower_tail - self.upper_tail - guard
        return value if value > 0.0 else 0.0


@dataclass(frozen=True)
class _SpectralComposition(_Composition):
    """A composition kept as its few kept frequencies, δ summed from them (:mod:`._spectral`).

    ``masses`` is empty: the window's ``points`` masses are m̂ₜ = Re Σⱼ cⱼe^{iθⱼ(b + t)}
    (``freqs`` j, ``coefficients`` cⱼ, b = ``first``, θⱼ = 2πj/``size``), times the untilting
    factor fₜ = exp(log Z − λℓₜ) when tilted. ``error_max`` and ``error_l2`` bound m̂ − m
    (:func:`_transform_error` without an inverse transform); :meth:`_evaluate` adds the
    closed form's own rounding (:func:`._spectral._geometric_sums`) to the guard.
    """

    points: int = 0
    size: int = 1
    first: int = 0
    freqs: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    coefficients: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, complex))

    @property
    def length(self) -> int:
        """The number of window points."""
        return self.points

    def window_masses(self) -> np.ndarray:
        """Every m̂ₜ·fₜ of the window, by an inverse transform (for tests and inspection)."""
        from scipy import fft as sp_fft

        spectrum = np.zeros(self.size // 2 + 1, dtype=complex)
        spectrum[self.freqs] = self.coefficients * (self.size / 2)
        spectrum[0] *= 2
        if self.size % 2 == 0 and self.freqs.size and self.freqs[-1] == self.size // 2:
            spectrum[-1] *= 2
        cyclic = sp_fft.irfft(spectrum, n=self.size)
        window = np.roll(cyclic, -self.first)[: self.points]
        if self.tilt:
            losses = (self.start + np.arange(self.points)) * self.h
            with np.errstate(over="ignore"):
                window = window * np.exp(self.log_z - self.tilt * losses)
        return np.asarray(window)

    def _factor(self, i: int) -> float:
        """The untilting factor fᵢ (1 untilted; ∞ where it overflows)."""
        if not self.tilt:
            return 1.0
        try:
            return math.exp(self.log_z - self.tilt * (self.start + i) * self.h)
        except OverflowError:
            return math.inf

    def _mass(self, i: int) -> float:
        value = _point_mass(self.freqs, self.coefficients, self.size, self.first + i)
        return value * self._factor(i)

    def _evaluate(self, epsilon: float, j: int) -> tuple[float, float, float, float]:
        """P = f_j·Σ_{u} m̂_{j+u}e^{−λhu}, E = f_j·Σ_{u} m̂_{j+u}e^{−(λ+1)hu}, body P − wE.

        With w = e^{ε−ℓⱼ}, Σ_{t≥j} mₜ(1 − e^{ε−ℓₜ}) = P − w·E exactly. The guard: the
        transform's (:meth:`rounding_guard`), the closed forms' rounding bounds b_P, b_E
        (:func:`._spectral._geometric_sums`), and 2u(|P| + 2w|E|) for w and the
        subtraction, all times f_j (whose own relative error, like the untilting of the
        masses it replaces, is within :func:`_mass_margin`).
        """
        f = self._factor(j)
        if not math.isfinite(f):
            return 0.0, 0.0, 0.0, math.inf
        rates = (-self.tilt * self.h, -(self.tilt + 1.0) * self.h)
        (p, e), (b_p, b_e) = _geometric_sums(
            self.freqs, self.coefficients, self.size, self.first + j, self.points - j, rates
        )
        w = math.exp(epsilon - (self.start + j) * self.h)
        rounding = f * (b_p + w * b_e + 2 * _UNIT * (abs(p) + 2 * w * abs(e)))
        below = self._mass(j - 1) if j >= 1 else 0.0
        guard = self.rounding_guard(epsilon) + rounding * (1 + 1e-9)
        return f * (p - w * e), f * p, below, guard


def _tail_block(points: int) -> int:
    """Block length of a composition's suffix sums: a power of two ≥ 256 and ≥ √points."""
    return max(256, 1 << math.ceil(math.log2(max(points, 1)) / 2))


def _mass_margin(releases: int) -> float:
    """Relative margin on δ for the relative error of the grid masses, over a composition.

    One release's grid masses are quadrature sums and exact formulas: a review against
    60-digit references (issue 15) measured each release's worst relative error ρ in the
    upper tail sums of its masses at ≤ 4.6e-12 and bounded it (Gauss–Legendre remainder
    through Hermite polynomials, plus first-order rounding) at ≤ 2.4e-11, on grids with
    steps down to 1e-4. A composition of K releases then errs by at most (1 + ρ)^K − 1 ≤
    Kρ·e^{Kρ} relative: 1e-7 (tilting, untilting and the sums) plus 3e-11 per release
    covers it while Kρ ≤ 0.2.
    """
    return 1e-7 + 3e-11 * releases


def _tilted(d: _Discrete, h: float, tilt: float) -> tuple[_Discrete, float]:
    """The exponentially tilted masses mᵢe^{λℓᵢ}/Z (finite part) and log Z."""
    losses = (d.start + np.arange(len(d.masses))) * h
    with np.errstate(divide="ignore"):
        logs = np.log(d.masses) + tilt * losses
    top = float(np.max(logs))
    log_z = top + math.log(float(np.sum(np.exp(logs - top))))
    return _Discrete(d.start, np.exp(logs - log_z), 0.0), log_z


def _saddle_tilt(parts: list[tuple[_Discrete, int]], h: float, epsilon: float) -> float:
    """The λ ≥ 0 minimising the Chernoff exponent K(λ) − λε of the composed finite part."""
    exponent = sum(k * _moments(d, h).log_mgf_tilts for d, k in parts) - _TILT_GRID * epsilon
    return float(_TILT_GRID[int(np.argmin(exponent))])


def _compose(
    parts: list[tuple[_Discrete, int]],
    h: float,
    window_tail: float = _WINDOW_TAIL,
    tilt: float = 0.0,
    *,
    workers: int = -1,
) -> _Composition:
    """Compose grid PLDs (with counts) by one real FFT over a Chernoff-sized window.

    ``window_tail`` bounds the finite mass left outside the window on each side; the
    upper part is added to δ̄ in full, the lower part aliases into the window (only
    adding mass) and is subtracted from δ̲.

    ``tilt`` = λ > 0 composes the exponentially tilted masses mᵢe^{λℓᵢ}/Z instead and
    untilts the result (tilting commutes with convolution). The transform's rounding
    error is about 1e-16 of the *largest* mass; tilting makes the masses near the loss
    of interest the largest ones, so that δ(ε) far in the tail (δ ≲ 1e-8) keeps its
    relative accuracy. Points far below are then inaccurate, and their guard says so.

    The transform's rounding error is bounded (:func:`_transform_error`), and both δ̄ and
    δ̲ move by the bound (:meth:`_Composition.rounding_guard`).

    ``workers``: the FFT's threads (scipy's ``workers``; −1: every core). The answer does
    not depend on it.
    """
    if len(parts) == 1 and parts[0][1] == 1:
        # One release is its own composition: its grid PLD, exactly, with no transform and
        # so no rounding error to guard (nor a tilt to take: tilting only keeps the
        # transform accurate). The FFT path spent ~0.3 s per query on a single discrete
        # Gaussian at ε = 10 recomputing low frequencies of a window of 10⁶ points.
        (d, _) = parts[0]
        return _Composition.build(
            d.start,
            np.clip(d.masses, 0.0, None),
            min(d.infinite, 1.0),
            0.0,
            0.0,
            h,
            (0.0, 0.0),
            releases=1,
            support_top=True,
        )
    # imported here, not at module level: importing dpledger should stay light (issue #32)
    from scipy import fft as sp_fft

    log_z_total = 0.0
    if tilt:
        tilted = []
        for d, k in parts:
            t, log_z = _tilted(d, h, tilt)
            tilted.append((t, k))
            log_z_total += k * log_z
        spread_parts = tilted
    else:
        spread_parts = parts
    log_keep = 0.0
    for d, k in parts:
        if d.infinite > 0:
            log_keep += k * math.log1p(-min(d.infinite, 1.0 - 1e-300))
    infinite = -math.expm1(log_keep)
    up = sum(k * _moments(d, h).log_mgf_up for d, k in parts)
    down = sum(k * _moments(d, h).log_mgf_down for d, k in parts)
    log_tail = math.log(window_tail)
    # Chernoff: mass above t ≤ exp(K(λ) − λt); mass below t ≤ exp(K(−λ) + λt)
    hi = float(np.min((up - log_tail) / _LAMBDAS))
    lo = float(np.max((log_tail - down) / _LAMBDAS))
    if tilt:  # the tilted masses have a heavier upper tail: the window must hold it too
        up_t = sum(k * _log_mgfs(d, h, _LAMBDAS) for d, k in spread_parts)
        hi = max(hi, float(np.min((up_t - log_tail) / _LAMBDAS)))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise NotApplicableError("method 'pld': the composed losses have no finite window.")
    start, last = math.floor(lo / h) - 2, math.ceil(hi / h) + 2
    # The composed finite part lives on [Σk·first, Σk·last] (grid indices of each part's
    # first and last positive mass): a window reaching past that holds exact zeros, whose
    # rounding errors would only widen the guard (bounded losses: Laplace, pure DP)
    bottom = top_index = 0
    for d, k in parts:
        positive = np.flatnonzero(d.masses > 0)
        if positive.size:
            bottom += k * (d.start + int(positive[0]))
            top_index += k * (d.start + int(positive[-1]))
    start, last = max(start, bottom), min(last, top_index)
    if last < start:  # no finite mass at all (everything at +∞)
        start, last = bottom, bottom
    # the window grows with the count: refuse before allocating (MAX_GRID_POINTS)
    _check_grid(last - start + 4, 0.0, f"a composition of {sum(k for _, k in parts)} releases")
    # any length ≥ the window is exact (cyclic convolution; see the tails below): the
    # smallest 5-smooth one, which pocketfft transforms fast (power-of-two lengths cost up
    # to 2x more; the error bound covers radix 3 and 5, see _fft_error)
    size = max(2, sp_fft.next_fast_len(last - start + 1, real=True))
    _check_grid(size, 0.0, f"a composition of {sum(k for _, k in parts)} releases")
    # each part is transformed about its own centre c (an integer index near its mean)
    # and the composition shifted back by Σk(start + c) at the end — exactly, in index
    # space — so that its low frequencies can be computed accurately
    centres = [_centre(d.masses) for d, _ in spread_parts]
    # buffer index b holds absolute grid index b + offset (mod size)
    offset = sum(k * (d.start + c) for (d, k), c in zip(spread_parts, centres, strict=True))
    count = sum(k for _, k in parts)
    # finite mass above the window's last point and below its first (0 at the support)
    upper = 0.0 if last >= top_index else float(np.exp(np.min(up - _LAMBDAS * last * h)))
    lower = 0.0 if start <= bottom else float(np.exp(np.min(down + _LAMBDAS * start * h)))
    band = _band_spectrum(spread_parts, centres, size)
    if band is not None:
        # a band-limited composition (10⁵ DP-SGD steps: 40 of 320,001 frequencies): no
        # transform of the window at all, forward or inverse — its kept frequencies are
        # computed directly, every other one bounded (_band_spectrum), and δ summed from
        # the kept ones (_SpectralComposition)
        freqs, spectrum, error_max, error_l2 = band
        coefficients = spectrum * (2.0 / size)
        ends = (freqs == 0) | (2 * freqs == size)  # the real inverse counts these once
        coefficients[ends] = spectrum[ends].real / size
        return _SpectralComposition(
            start,
            np.zeros(0),
            infinite,
            upper,
            lower,
            h,
            error_max,
            error_l2,
            tilt,
            log_z_total,
            releases=count,
            support_top=last >= top_index,
            points=last - start + 1,
            size=size,
            first=(start - offset) % size,
            freqs=freqs,
            coefficients=coefficients,
        )
    gamma = _fft_error(size)
    transforms = []
    magnitudes = []
    # (half-spectrum arrays are allocated as few times as possible: on a loaded machine,
    # touching fresh pages costs more than the arithmetic — 14 of 39 ms of a cold query
    # of 10⁵ DP-SGD steps went to page faults before it took the band-limited path)
    log_magnitude: np.ndarray | None = None
    for (d, k), centre in zip(spread_parts, centres, strict=True):
        idx = (np.arange(len(d.masses)) - centre) % size
        buffer = np.bincount(idx, weights=d.masses, minlength=size)  # adds wrapped masses
        z = sp_fft.rfft(buffer, workers=workers)
        # The zero frequency is the total mass. The transform sums it in floating point
        # (1 + 2e-16 for a total of exactly 1); raised to the count, that excess becomes a
        # uniform floor over the whole window (issue 10 item 12b: lower bounds above the
        # exact ε at δ = 1e-15). Use an accurate sum (within 1.00001u of the exact one).
        total = _mass_total(d.masses)
        z[0] = total
        magnitude = np.abs(z)
        with np.errstate(divide="ignore"):
            part_log = np.log(magnitude)
        part_log *= k
        if log_magnitude is None:
            log_magnitude = part_log
        else:
            log_magnitude += part_log
        magnitudes.append(magnitude)
        norm2 = float(np.sqrt(np.sum(d.masses * d.masses)))
        bound = np.full(size // 2 + 1, gamma * total)  # |ẑⱼ − zⱼ| (_transform_error)
        bound[0] = _TOTAL_ERROR * total
        transforms.append((z, k, total, norm2, bound))
    # Frequencies whose composed magnitude is below e^-70 are set to zero instead of
    # raised to the power (most of them, for long compositions); the error bound counts
    # each of them in full.
    assert log_magnitude is not None  # (spread_parts is never empty)
    keep = log_magnitude > -70.0
    # the frequencies that carry the composition — whose transform error the count
    # amplifies — recomputed directly, ~100x more accurately than the FFT's bound
    direct = _direct_frequencies(log_magnitude, keep)
    kept = np.flatnonzero(keep)
    spectrum = np.zeros(size // 2 + 1, dtype=complex)
    spectrum[keep] = 1.0
    powers = []
    logs_a = []
    for (d, _), centre, (z, k, total, _, bound), magnitude in zip(
        spread_parts, centres, transforms, magnitudes, strict=True
    ):
        if direct.size:
            values, bounds, w = _direct_transform_w(d.masses, centre, size, direct, total)
            better = bounds < bound[direct]  # else the FFT's value and bound stand
            z[direct[better]], bound[direct[better]] = values[better], bounds[better]
            magnitude[direct[better]] = np.abs(values[better])
            chosen, w = direct[better], w[better]
        else:
            chosen, w = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=complex)
        power = z[keep] ** k
        # The carrying frequencies — the recomputed ones and j = 0 (z₀ = S, W₀ = 0) —
        # raised from S and Ŵ apart where that is more accurate (_accurate_power): the
        # power's own rounding, u·k·(2 + 2π) relative, was most of the rounding guard of
        # a long composition (10⁵ DP-SGD steps: it alone asked for a tilted composition)
        if keep[0]:
            chosen, w = np.concatenate([[0], chosen]).astype(np.int64), np.concatenate([[0j], w])
        raised, rho = _accurate_power(total, w, k)
        with np.errstate(divide="ignore"):
            plain = _power_rho(np.log(np.abs(z[chosen]) + bound[chosen]), k)
        use = rho < plain
        power[np.searchsorted(kept, chosen[use])] = raised[use]
        accurate = (chosen[use], rho[use])
        powers.append(accurate)
        spectrum[keep] *= power
        # log aⱼ = log(|ẑⱼ| + cⱼ) for _transform_error, in the magnitudes' own array
        magnitude += bound
        with np.errstate(divide="ignore"):
            logs_a.append(np.log(magnitude, out=magnitude))
    cyclic = sp_fft.irfft(spectrum, n=size, workers=workers)
    # A bound on the rounding error, not an estimate: the observed noise floor (the most
    # negative output) missed errors that look like mass — a perturbation of the
    # low frequencies, 4e-7 of δ for 32 Gaussians at δ = 1e-9 (issue 15)
    errors = _transform_error(transforms, spectrum, keep, size, powers, logs_a=logs_a)
    # keep [start, last] only: above `last` lies either no mass (the support ends there)
    # or mass that `upper` bounds, plus mass from below `start` wrapped around, whose
    # losses are below the window (δ̄ adds `lower` for ε there, δ̲ ignores it)
    first, length = (start - offset) % size, last - start + 1
    if first + length <= size:
        composed = np.clip(cyclic[first : first + length], 0.0, None)
    else:  # the window wraps around the buffer's end
        composed = np.concatenate([cyclic[first:], cyclic[: first + length - size]])
        np.clip(composed, 0.0, None, out=composed)
    if tilt:
        losses = (start + np.arange(len(composed))) * h
        with np.errstate(over="ignore"):
            factor = np.exp(log_z_total - tilt * losses)
        composed = composed * np.where(np.isfinite(factor), factor, 0.0)
    return _Composition.build(
        start,
        composed,
        infinite,
        upper,
        lower,
        h,
        errors,
        tilt,
        log_z_total,
        count,
        support_top=last >= top_index,
    )


def _guard_matters(
    directions: list[_Composition], epsilon: float, delta: float, level: float = _GUARD_TILT
) -> bool:
    """Whether the rounding guard in δ̄(ε) exceeds ``level`` (default :data:`_GUARD_TILT`) of δ.

    Then a tilted composition is worth its cost: the guard moves ε by about that relative
    amount times |dε/d log δ|/ε (≈ 1/20 of it for DP-SGD: 4.6e-5 of δ for 10,000 steps
    moved ε by 2.5e-6 of ε before the low frequencies were recomputed). ``epsilon`` and
    ``delta`` queries use the same rule, so that they answer from the same compositions;
    :func:`epsilon_bounds` lowers ``level`` to its ``rtol``.
    """
    return max((c.rounding_guard(epsilon) for c in directions), default=0.0) > level * delta


def _release_tail(window_tail: float, steps: int) -> float:
    """P-mass a single release may leave above its grid, for a composition of ``steps``.

    Each release's truncated upper tail goes to +∞, and the composition's mass at +∞ is
    about ``steps`` times it: keep that below 1000 × ``window_tail`` (``window_tail`` is
    1e-9 of the δ of interest, so at most 1e-6 of δ; finer tails than needed widen the
    window, and with it the rounding guard, for nothing). At most :data:`_TAIL`, a power
    of ten (shared caches).
    """
    level = max(1e3 * window_tail / max(steps, 1), 1e-300)
    return min(_TAIL, 10.0 ** math.floor(math.log10(level) + 1e-9))


def _window_tail_for(delta: float) -> float:
    """Finite mass allowed outside the FFT window (added to δ̄ in full) for answers near δ.

    A billionth of δ, at most 1e-16, rounded down to a power of ten, so that ``epsilon``
    and ``delta`` queries at the same δ level use the same window.
    """
    level = min(max(delta, 1e-290), 1e-7) * 1e-9
    # + 1e-9: log10(1e-16) evaluates to −16.000000000000004; do not drop a decade for it
    return 10.0 ** math.floor(math.log10(level) + 1e-9)


_TILT_GRID = np.logspace(-2.0, 3.0, 61)  # the λ of the saddle-point searches


@dataclass(frozen=True)
class _Moments:
    """Loss statistics of one grid PLD (for choosing a grid step, never in a bound)."""

    m2: float  # central moments under P (finite part, normalised)
    m4: float
    log_mgf_up: np.ndarray  # log Σ m e^{λℓ} at λ = _LAMBDAS
    log_mgf_down: np.ndarray  # … at −_LAMBDAS
    _owner: weakref.ref[_Discrete] = field(repr=False, compare=False)
    _h: float = field(repr=False, compare=False, default=0.0)
    _tilts: list[np.ndarray] = field(repr=False, compare=False, default_factory=list)

    @property
    def log_mgf_tilts(self) -> np.ndarray:
        """The log Σ m e^{λℓ} at λ = :data:`_TILT_GRID`, computed on first use.

        Only the saddle-point searches (tilts, the heavy-tail scale) read it; a plain
        DP-SGD query never does, and computing it with the others was 60 % of the cost
        of :func:`_moments` (61 of 97 exponents per block).
        """
        if not self._tilts:
            d = self._owner()
            if d is None:  # pragma: no cover (the caller holds the grid it asks about)
                raise RuntimeError("the grid PLD of these moments is gone")
            self._tilts.append(_log_mgfs(d, self._h, _TILT_GRID))
        return self._tilts[0]


def _tilted_moments(d: _Discrete, h: float, tilt: float) -> tuple[float, float]:
    """Central moments 2 and 4 of the loss of ``d`` under P tilted by e^{λℓ}."""
    losses = (d.start + np.arange(len(d.masses))) * h
    if tilt == 0.0:
        weights = d.masses  # untilted: the masses themselves (no log and exp round trip)
        if not np.any(weights > 0):
            return (0.0, 0.0)
    else:
        with np.errstate(divide="ignore"):
            logs = np.log(d.masses) + tilt * losses
        if not np.any(np.isfinite(logs)):
            return (0.0, 0.0)
        weights = np.exp(logs - np.max(logs))
    total = float(np.sum(weights))
    # np.einsum, not np.dot: no (multi-threaded) BLAS call, see _log_mgfs
    mean = float(np.einsum("i,i->", weights, losses)) / total
    centred = (losses - mean) ** 2
    return (
        float(np.einsum("i,i->", weights, centred)) / total,
        float(np.einsum("i,i,i->", weights, centred, centred)) / total,
    )


_MOMENTS: dict[tuple[int, float], tuple[weakref.ref[_Discrete], _Moments]] = {}


def _moments(d: _Discrete, h: float) -> _Moments:
    """:class:`_Moments` of ``d`` (cached by identity: grid PLDs come from a cache).

    The entry refers to ``d`` weakly: holding it kept grids alive after the grid cache
    had let them go (gigabytes over a calibration's probes).
    """
    key = (id(d), h)
    hit = _MOMENTS.get(key)
    if hit is not None and hit[0]() is d:
        return hit[1]
    m2, m4 = _tilted_moments(d, h, 0.0)
    # one pass for both signs of λ
    logs = _log_mgfs(d, h, np.concatenate([_LAMBDAS, -_LAMBDAS]))
    count = len(_LAMBDAS)
    ref = weakref.ref(d)
    value = _Moments(m2, m4, logs[:count], logs[count:], ref, h)
    if len(_MOMENTS) > 1024:
        _MOMENTS.clear()
    _MOMENTS[key] = (ref, value)
    return value


def _clear_caches() -> None:
    """Empty the moments cache (for cold timings: ``benchmarks/_common.py``)."""
    _MOMENTS.clear()
