"""The functional mechanism family: FM, relaxed FM and Gaussian FM, for linear and logistic loss.

The functional mechanism perturbs the *objective* instead of the answer. The empirical
loss, summed over the (clipped, scaled) rows, is a polynomial in w,

    L(w) = C₀ + C₁ᵀw + wᵀC₂w,

with data-dependent coefficients (linear regression exactly; logistic regression by the
second-order Taylor expansion at 0 of Zhang et al. 2012):

=============  ==============  =================  ===========
loss           C₀ (per row)    C₁ (per row)       C₂ (per row)
=============  ==============  =================  ===========
linear         y²              −2yx               xxᵀ
logistic       log 2 (public)  (½ − y)x           xxᵀ/8
=============  ==============  =================  ===========

The coefficients are released with noise (sums over rows, so nothing needs the private
count under add/remove; the paper's 1/N normalisation cancels from the minimiser), C₂ is
symmetrised and its eigenvalues raised to at least a floor λ (post-processing), and
w = argmin C₁ᵀw + wᵀC₂w = −½·C₂⁻¹C₁ (:func:`noisy_minimiser`).

The floor (``eigenvalue_floor``). The papers project C̃₂'s eigenvalues onto [0, ∞) and
invert what is left (λ = 0, ``"zero"``). That is unstable: C̃₂ = C₂ + E with E symmetric
noise of spectral norm ‖E‖ ≈ 2s√m (s the sd of an off-diagonal entry, m the dimension;
:func:`noise_spectral_scale`), and by Weyl's inequality an eigenvalue of C̃₂ below ‖E‖ is
not distinguishable from noise. Where C₂ has little curvature (one-hot blocks that sum to
a constant, rare levels; Adult has 9 zero eigenvalues of 108 and most others below the
noise at ε ≤ 1), some of C̃₂'s eigenvalues land just above 0, and −½C₁ᵀv/λᵥ multiplies
C̃₁'s noise without bound: on Adult the papers' solve falls below the majority class at
ε = 0.5–2 with an IQR of 5–10 points over seeds (benchmarks/functional_mechanism.py,
``--adult-floor``). The default for the calibrated variants (``"noise"``) is the
Frobenius projection of C̃₂ onto {M ⪰ λI} with λ = 2s√m, the typical ‖E‖ (eigenvalues
max(λᵢ, λ)): directions whose curvature stands above the noise are left as released, the
others get curvature λ, so no direction amplifies C̃₁'s noise by more than 1/(2λ). λ is a
function of the calibrated noise and the dimension only — (ε, δ, D, the bounds, the
adjacency) — never of the data, and it acts on the released values only: post-processing,
nothing more is charged. (Rejected: a ridge C̃₂ + λI, which biases every direction,
well-determined ones included — worse on the synthetic linear set at ε = 0.1; a ridge on
top of the projection, the same bias; half the noise scale, which leaves eigenvalues near
0 where ‖E‖ exceeds it.) The published variants keep the papers' λ = 0 (``"auto"``).

Methods (the noise), each ``variant="published"`` (the paper's constants, charged at the
true cost of what is released) or ``"calibrated"`` (solved to meet (ε, δ) exactly):

* ``"original"`` — FM (Zhang et al. 2012): Laplace noise on every monomial coefficient
  (C₀, C₁, C₂'s diagonal, 2·C₂'s off-diagonal). Published scale b = Δ₁/ε with the paper's
  L1 sensitivity 2(1 + D)² (linear) or D²/4 + 3D (logistic), D the dimension. The true
  L1 sensitivity under ‖x‖ ≤ 1, |y| ≤ 1 is smaller: one row's coefficient vector has
  L1 norm y² + 2|y|‖x‖₁ + ‖x‖₁² ≤ (1 + √D)² (linear) or ‖x‖₁/2 + ‖x‖₁²/8 ≤ √D/2 + D/8
  (logistic), twice that under replace-one — the ledger charges the true one.
* ``"relaxed"`` — relaxed FM (Ding et al. 2020): Gaussian noise on the same vector, with
  the paper's L2 sensitivity 2√(1 + 4D + D²) (linear) or √(D²/16 + D) (logistic). True,
  with a = ‖x‖ ≤ 1 and M(x) the monomials of xxᵀ (2xⱼxₖ off the diagonal), for which
  ‖M(x)‖² = a⁴ + 2Σⱼ<ₖxⱼ²xₖ² ≤ (2 − 1/D)a⁴ and ‖M(x) − M(x′)‖² ≤ 2‖xxᵀ − x′x′ᵀ‖²_F =
  2(a⁴ + b⁴ − 2t²), t = xᵀx′, b = ‖x′‖:

  - add/remove, one row's vector: √(7 − 1/D) (linear: y⁴ + 4y²a² + ‖M(x)‖²) and
    √(1/4 + (2 − 1/D)/64) (logistic: (½ − y)x and M(x)/8);
  - replace-one, the difference of two rows: 4 (linear: maximising
    (y² − y′²)² + 4‖yx − y′x′‖² + 2(a⁴ + b⁴ − 2t²) over t gives t = −yy′ and a total of
    (y² + y′²)² + 4y²a² + 4y′²b² + 2a⁴ + 2b⁴ ≤ 16) and 1 (logistic: the same over t
    leaves a²/4 + b²/4 + ab/2 − a²b²/16 + (a⁴ + b⁴)/32, increasing in a and b, 1 at
    a = b = 1) — attained (x′ = x, y′ = −y), not twice the one-row norm.
* ``"gaussian"`` — Gaussian FM (Tasnim et al. 2023): one Gaussian release per order, with
  per-order sensitivities. Published: each order gets the full (ε, δ) with the classical
  σⱼ = Δⱼ√(2 ln(1.25/δ))/ε and the paper's Δ = (1, 4, 1) (linear, replace-one, in sums)
  — but C₂'s entries move by up to √2 (‖xxᵀ − x′x′ᵀ‖ over the released entries), and three
  releases each at (ε, δ) are not (ε, δ) jointly. Charged as the three releases they are:
  at nominal (1, 1e-5) the true cost is ε ≈ 1.61 (≈ 1.37 with C₂'s sensitivity
  corrected; SEED-NOTES 003). Calibrated: C₁ and C₂ only (C₀ does not move the
  minimiser), released *together*: noise p·a₁ on C₁ and p·a₂ on C₂'s upper triangle is
  one Gaussian release of (C₁/a₁, C₂/a₂) with noise p, whose L2 sensitivity S is the
  supremum over two rows of ‖ΔC₁‖²/a₁² + ‖ΔC₂‖²/a₂² (:func:`pair_supremum`) — below the
  composition Σⱼ(Δⱼ/aⱼ)², since C₁'s extreme pair (x′ = ±x) leaves C₂ unchanged and
  C₂'s (x ⟂ x′) moves C₁ by less than its maximum. ``noise_scales_`` = (p·a₁, p·a₂).

True per-order sensitivities (sums, unit bounds): linear C₀ 1, C₁ 2 (add/remove) or 4
(replace-one), C₂ 1 or √2 (Frobenius, = the upper-triangle L2 bound); logistic C₁ ½ or 1,
C₂ ⅛ or √2/8.

Budget split (calibrated Gaussian FM): the noise in the minimiser is
≈ −½C₂⁻¹(E₁ + 2E₂w), so the expected excess loss grows with E‖E₁ + 2E₂w‖² ≈
d(σ₁² + 4‖w‖²σ₂²) = d·p²(a₁² + 4‖w‖²a₂²), and p ∝ S. The ratio a₂/a₁ minimises
(a₁² + 4a₂²)·S(a₁, a₂)² (a one-dimensional search, public quantities only, with the
public assumption ‖w‖ = 1 on scaled data; :func:`gaussian_fm_split`). Under add/remove
S² = (G₁/a₁)² + (G₂/a₂)² and this is the Lagrange split μⱼ² ∝ Δⱼ√(weightⱼ):
w₁ : w₂ = Δ₁ : 2Δ₂. ``budget_split`` sets the μ² shares of the composed analysis
instead (aⱼ = Δⱼ/√wⱼ), still released and charged jointly.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, TypeVar

import numpy as np

from dpledger._public import namespace
from dpledger._validation import check_choice, check_int_at_least, check_positive
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._labels import CLASSES
from dpledger.algorithms._linear_base import (
    BinaryClassifierMixin,
    LinearRegressorMixin,
    SufficientStatisticsModel,
    solve_ridge,
)
from dpledger.algorithms._params import Constraint, Options, OrNone, Parameters, Shares
from dpledger.algorithms.base import (
    fill_docstring,
    fit_context,
    store_parameters,
    symmetric_from_upper,
    upper,
)
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import Gaussian, Laplace
from dpledger.mechanisms.exact_value import ExactValue, concatenate

__all__ = [
    "EIGENVALUE_FLOORS",
    "FM_METHODS",
    "FMLinearRegression",
    "FMLogisticRegression",
    "gaussian_fm_split",
    "noise_spectral_scale",
    "noisy_minimiser",
    "pair_supremum",
]

FM_METHODS = ("gaussian", "relaxed", "original")
#: how the noisy C₂ is made positive definite (module docstring, "The floor")
EIGENVALUE_FLOORS = ("auto", "noise", "zero")


def noise_spectral_scale(entry_sd: float, dimension: int) -> float:
    """2s√m: the spectral norm a symmetric m × m noise matrix typically has.

    For a symmetric matrix with independent centred entries whose off-diagonal ones have
    standard deviation s (the diagonal's does not matter to first order), the eigenvalues
    fill Wigner's semicircle on [−2s√m, 2s√m] and the largest |eigenvalue| concentrates at
    its edge: E‖E‖ ≤ 2s√m(1 + o(1)) for Gaussian entries (Bandeira & van Handel 2016,
    Ann. Probab. 44(4), Thm 1.1). On Adult (m = 108) the measured ‖E‖ is 1.02× this.
    Both arguments are public (the calibrated noise and the number of features).
    """
    entry_sd = check_positive("entry_sd", entry_sd)
    dimension = check_int_at_least("dimension", dimension, 1)
    return 2.0 * math.sqrt(dimension) * entry_sd


def noisy_minimiser(c1: np.ndarray, c2: np.ndarray, floor: float) -> np.ndarray:
    """The minimiser of C̃₁ᵀw + wᵀPC̃₂w, P the Frobenius projection onto {M ⪰ floor·I}.

    Post-processing of the released (C̃₁, C̃₂) only. C̃₂ is symmetrised and its eigenvalues
    λᵢ replaced by max(λᵢ, floor) — the nearest matrix (Frobenius) whose eigenvalues are all
    at least ``floor``; then w = −½(PC̃₂)⁻¹C̃₁. With ``floor`` = 0 this is the papers'
    projection onto the PSD cone with a pseudo-inverse over the directions left
    (:func:`~._linear_base.solve_ridge`). The module docstring says why the default floor
    is the noise's spectral scale (:func:`noise_spectral_scale`).
    """
    if not (math.isfinite(floor) and floor >= 0.0):
        raise InvalidArgumentError(f"`floor` must be finite and ≥ 0. Found {floor!r}.")
    if floor == 0.0:
        return solve_ridge(c2, -0.5 * np.asarray(c1, dtype=float), 0.0)
    values, vectors = np.linalg.eigh((c2 + c2.T) / 2.0)
    projected = vectors.T @ (-0.5 * np.asarray(c1, dtype=float))
    return np.asarray(vectors @ (projected / np.maximum(values, floor)))


def _monomials(c0: Any, c1: Any, c2: Any) -> Any:
    """The vector of monomial coefficients: C₀, C₁, diag C₂, 2·C₂ⱼₖ (j < k).

    Exact for :class:`~dpledger.mechanisms.ExactValue` coefficients, float for arrays.
    """
    rows, cols = np.triu_indices(c2.shape[0])
    factors = np.where(rows == cols, 1, 2)
    if isinstance(c2, ExactValue):
        head = [] if c0 is None else [c0]
        return concatenate([*head, c1, c2[rows, cols].times(factors)])
    return np.concatenate([[] if c0 is None else [c0], c1, factors * c2[rows, cols]])


def _from_monomials(vector: np.ndarray, d: int, with_c0: bool) -> tuple[np.ndarray, np.ndarray]:
    """(C₁, symmetric C₂) back from a (noisy) monomial vector."""
    start = 1 if with_c0 else 0
    c1 = vector[start : start + d]
    quadratic = vector[start + d :]
    rows, cols = np.triu_indices(d)
    c2 = np.zeros((d, d))
    values = quadratic / np.where(rows == cols, 1.0, 2.0)
    c2[rows, cols] = values
    c2[cols, rows] = values
    return c1, c2


def pair_supremum(first: float, second: float) -> float:
    """The supremum of A(a² + b² + 2abu) + B(a⁴ + b⁴ − 2a²b²u²) on [0, 1]³, rounded up.

    With A = G₁²/a₁², B = G₂²/a₂², this bounds the whitened squared distance
    ‖ΔC₁‖²/a₁² + ‖ΔC₂‖²/a₂² between two rows under replace-one, for C₁ = Σg₁(y)x with
    |g₁| ≤ G₁ and C₂ = Σg₂xxᵀ with a constant |g₂| = G₂ (‖x‖ = a, ‖x′‖ = b ≤ 1, u the
    |cosine| between them): ‖g₁x − g₁′x′‖² ≤ G₁²(a² + b² + 2abu) and
    ‖xxᵀ − x′x′ᵀ‖²_F = a⁴ + b⁴ − 2a²b²u² (the released upper triangle is no larger).
    For fixed (a, b) the bound is a concave quadratic in u, maximised at
    u* = A/(2Bab): where u* < 1 its maximum A(a² + b²) + B(a⁴ + b⁴) + A²/(2B) grows with
    a and b, so it is largest at a = b = 1 (when 2B > A); where u* ≥ 1 it is
    A(a + b)² + B(a² − b²)², increasing in the larger of a, b, so a = 1 and a cubic's
    stationary points in b (with b = 0, 1) give its maximum.
    """
    first = check_positive("first", first)
    second = check_positive("second", second)
    if math.isinf(first) or math.isinf(second):
        raise InvalidArgumentError(
            f"`first` and `second` must be finite. Found {first!r}, {second!r}."
        )
    scale = max(first, second)  # the supremum is homogeneous: work on (A, B)/scale
    return scale * _unit_pair_supremum(first / scale, second / scale)


def _unit_pair_supremum(a_: float, b_: float) -> float:
    """:func:`pair_supremum` for max(A, B) = 1."""
    candidates = [4 * a_, a_ + b_]  # (1, 1, 1) and (1, 0, ·)
    if 2 * b_ > a_:
        candidates.append(2 * a_ + 2 * b_ + a_ * a_ / (2 * b_))

    def f(b: float) -> float:
        return a_ * (1 + b) ** 2 + b_ * (1 - b * b) ** 2

    for root in np.roots([4 * b_, 0.0, 2 * a_ - 4 * b_, 2 * a_]):
        if abs(root.imag) > 1e-9 * (1 + abs(root.real)):
            continue
        b = float(root.real)
        for _ in range(3):  # Newton polish of f′(b) = 0
            slope = 2 * a_ * (1 + b) - 4 * b_ * b * (1 - b * b)
            curve = 2 * a_ - 4 * b_ * (1 - 3 * b * b)
            if curve != 0:
                b -= slope / curve
        if 0.0 <= b <= 1.0:
            candidates.append(f(b))
    return max(candidates) * (1 + 1e-12)


def gaussian_fm_split(
    first: float, second: float, adjacency: str, weight: float = 4.0
) -> tuple[float, float, float]:
    """Noise shapes (a₁, a₂) and the whitened sensitivity S of calibrated Gaussian FM.

    C₁ gets noise σ₁ = p·a₁ and C₂'s upper triangle σ₂ = p·a₂: one Gaussian release of
    (C₁/a₁, C₂/a₂) with noise p and L2 sensitivity S (the supremum over neighbours, by
    :func:`pair_supremum` under replace-one; √(G₁²/a₁² + G₂²/a₂²) under add/remove, one
    row). The ratio a₂/a₁ minimises the expected excess loss ∝ (a₁² + weight·a₂²)·S²
    (weight = 4‖w‖², ‖w‖ = 1 on scaled data); first = G₁, second = G₂.
    """
    from scipy.optimize import minimize_scalar

    first = check_positive("first", first)
    second = check_positive("second", second)
    adjacency = check_choice("adjacency", adjacency, ev.ADJACENCIES)
    weight = check_positive("weight", weight)
    if any(math.isinf(v) for v in (first, second, weight)):
        raise InvalidArgumentError(
            f"`first`, `second` and `weight` must be finite. Found {first!r}, {second!r}, "
            f"{weight!r}."
        )

    def squared(ratio: float) -> float:
        a1, a2 = 1.0, ratio
        if adjacency == ev.REPLACE_ONE:
            return pair_supremum(first**2 / a1**2, second**2 / a2**2)
        return (first**2 / a1**2 + second**2 / a2**2) * (1 + 1e-12)

    def cost(log_ratio: float) -> float:
        ratio = math.exp(log_ratio)
        return math.log((1 + weight * ratio * ratio) * squared(ratio))

    best = minimize_scalar(cost, bounds=(-12.0, 12.0), method="bounded", options={"xatol": 1e-9})
    ratio = math.exp(float(best.x))
    return 1.0, ratio, math.sqrt(squared(ratio))


def _linear_weights(X: np.ndarray, y: Any) -> tuple[None, np.ndarray, np.ndarray]:
    """(–, y, y²), y put on the exact sums' grid first (2⁻²⁰ of its bound 1).

    Then C₀'s term is exactly the square of the y in C₁'s: relaxed FM's joint sensitivity
    (4 under replace-one) assumes it.
    """
    grid = np.rint(np.asarray(y, dtype=float) * 2.0**20) * 2.0**-20
    return None, grid, grid * grid


_Self = TypeVar("_Self", bound="_FunctionalMechanism")


class _FunctionalMechanism(SufficientStatisticsModel):
    """Shared parts: coefficients in one pass, releases per method, the noisy minimiser."""

    #: the loss is the logistic one (two classes, coded 0 and 1), not a loss of a bounded y
    _logistic: ClassVar[bool] = False

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **SufficientStatisticsModel._parameter_constraints,
        "method": Options(FM_METHODS),
        "budget_split": OrNone(Shares(2, of="(C1, C2)")),
        "eigenvalue_floor": Options(EIGENVALUE_FLOORS),
    }

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        if params.method != "original" and params.delta == 0:
            raise InvalidArgumentError(
                f"method={params.method!r} adds Gaussian noise: `delta` must be > 0."
            )

    def _coefficients(self, X: Any, y: Any) -> tuple[ExactValue, ExactValue, ExactValue, int]:
        """(C₀ (one entry), C₁, C₂) summed over the rows, exactly, and the number of features.

        Exact (:class:`~dpledger.mechanisms.ExactValue`): the mechanism floors the exact
        coefficients (whitened, or as monomials) to its grid.
        """
        Xd = _data.as_design(X)
        rows = None if _data.is_dask(Xd) else Xd.shape[0]
        logistic = self._logistic
        if logistic:  # each label against the two public classes; others add nothing
            yd = BinaryClassifierMixin._label_codes(self, y, rows)
            transform = self._label_rows()
        else:
            yd = _data.as_target(y, rows)
            transform = self._transform()

        if logistic:  # C₁ = Σ x(½ − y), C₂ = Σ xxᵀ/8, C₀ = 0 (constant in w)
            moments = _data.Moments(
                lambda Xb, yb: (None, 0.5 - np.asarray(yb), None), b=(-0.5, 0.5)
            )
        else:  # C₀ = Σ y², C₁ = −2 Σ xy, C₂ = Σ xxᵀ
            moments = _data.Moments(_linear_weights, c=(0.0, 1.0))
        stats = _data.sufficient_statistics(Xd, yd, transform, moments)
        self.n_features_in_ = int(Xd.shape[1])
        exact, d = stats.exact, int(Xd.shape[1])
        if logistic:
            return exact.scalar * 0, exact.vector, exact.gram / 8, d
        return exact.scalar, exact.vector * -2, exact.gram, d

    def _sensitivities(self, d: int, adjacency: str) -> dict[str, float]:
        """True sensitivities (sums, unit bounds) of every release, per the docstring."""
        two = 2.0 if adjacency == ev.REPLACE_ONE else 1.0
        if self._logistic:
            return {
                "c1": 0.5 * two,
                "c2": (math.sqrt(2.0) if two == 2.0 else 1.0) / 8.0,
                "l1": two * (math.sqrt(d) / 2.0 + d / 8.0),
                "l2": 1.0 if two == 2.0 else math.sqrt(0.25 + (2.0 - 1.0 / d) / 64.0),
            }
        return {
            "c0": 1.0,
            "c1": 2.0 * two,
            "c2": math.sqrt(2.0) if two == 2.0 else 1.0,
            "l1": two * (1.0 + math.sqrt(d)) ** 2,
            "l2": 4.0 if two == 2.0 else math.sqrt(7.0 - 1.0 / d),
        }

    def _paper_sensitivities(self, d: int) -> dict[str, float]:
        """The published papers' sensitivities (replace-one, in sums: N·Δ/N)."""
        if self._logistic:
            return {
                "c1": 1.0,
                "c2": 1.0 / 8.0,
                "l1": d * d / 4.0 + 3.0 * d,
                "l2": math.sqrt(d * d / 16.0 + d),
            }
        return {
            "c0": 1.0,
            "c1": 4.0,
            "c2": 1.0,
            "l1": 2.0 * (1.0 + d) ** 2,
            "l2": 2.0 * math.sqrt(1.0 + 4.0 * d + d * d),
        }

    def _split(self, sens: dict[str, float]) -> tuple[float, float]:
        shares = self._params.budget_split
        first, second = (sens["c1"], 2.0 * sens["c2"]) if shares is None else shares
        total = first + second
        return first / total, second / total

    def _pair_terms(self, d: int) -> tuple[float, float] | None:
        """(G₁, G₂): sup|g₁| and the constant |g₂| of C₁ = Σg₁(y)x, C₂ = Σg₂xxᵀ.

        None where g₂ depends on the label (then the orders are composed).
        """
        one = self._sensitivities(d, ev.ADD_REMOVE)
        return one["c1"], one["c2"]

    def _noise_shape(
        self, d: int, adjacency: str, true: dict[str, float]
    ) -> tuple[float, float, float]:
        """(a₁, a₂, S): noise p·aⱼ on Cⱼ, and the L2 sensitivity S of (C₁/a₁, C₂/a₂).

        S is the supremum over neighbours of the whitened difference
        (:func:`pair_supremum`), not the composition of per-order sensitivities — the
        C₁ and C₂ extremes need different pairs of rows. Without ``budget_split`` the
        ratio a₂/a₁ minimises the expected excess loss (:func:`gaussian_fm_split`).
        """
        terms = self._pair_terms(d)
        if self._params.budget_split is None and terms is not None:
            return gaussian_fm_split(terms[0], terms[1], adjacency)
        w1, w2 = self._split(true)
        a1, a2 = true["c1"] / math.sqrt(w1), true["c2"] / math.sqrt(w2)
        if terms is None:  # composed: μ² = Σ(Δⱼ/aⱼ)² = w₁ + w₂ = 1
            return a1, a2, 1.0
        first, second = terms[0] ** 2 / a1**2, terms[1] ** 2 / a2**2
        if adjacency == ev.REPLACE_ONE:
            return a1, a2, math.sqrt(pair_supremum(first, second))
        return a1, a2, math.sqrt((first + second) * (1 + 1e-12))

    @fit_context
    def fit(self: _Self, X: Any, y: Any) -> _Self:
        """Release the loss's coefficients with noise and minimise the noisy loss."""
        n1, n2, entry_sd = self._noisy_coefficients(X, y)
        # argmin C₁ᵀw + wᵀC₂w over C₂ projected onto {M ⪰ λI} (post-processing)
        self.eigenvalue_floor_ = self._floor(entry_sd, n2.shape[0])
        theta = noisy_minimiser(n1, n2, self.eigenvalue_floor_)
        self._set_coefficients(theta, self.n_features_in_)
        return self

    def _floor(self, entry_sd: float, dimension: int) -> float:
        """λ for ``eigenvalue_floor``: public (the calibrated noise, the dimension) only."""
        params = self._params
        choice = params.eigenvalue_floor
        if choice == "auto":  # the papers' projection for their own constants
            choice = "zero" if params.variant == "published" else "noise"
        return 0.0 if choice == "zero" else noise_spectral_scale(entry_sd, dimension)

    def _noisy_coefficients(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, float]:
        """(C̃₁, C̃₂, s): the coefficients released by ``method`` and ``variant``.

        Sets ``method_``. s is the noise sd on one off-diagonal entry of C̃₂ (public: the
        noise scale as calibrated or published; the scale, for the discrete Gaussian).
        """
        params = self._params
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        method, variant, ledger = params.method, params.variant, params.ledger
        c0, c1, c2, _ = self._coefficients(X, y)
        d = c2.shape[0]
        logistic = self._logistic
        true = self._sensitivities(d, adjacency)
        paper = self._paper_sensitivities(d)
        safe = params.safe_noise
        classical = math.sqrt(2.0 * math.log(1.25 / delta)) if delta > 0 else math.inf
        with_c0 = not logistic and (method != "gaussian" or variant == "published")
        vector = _monomials(c0 if with_c0 else None, c1, c2)
        if method in ("original", "relaxed"):
            family = Laplace if method == "original" else Gaussian
            key = "l1" if method == "original" else "l2"

            def one(noise: float) -> list[Any]:
                return [family(noise, true[key], dimension=vector.size, safe=safe)]

            if variant == "published":
                noise = (
                    paper[key] / epsilon
                    if method == "original"
                    else paper[key] * classical / epsilon
                )
                reservation = self._reserve(one(noise), ledger)
            else:
                reservation = self._reserve(one, ledger, initial=true[key] / epsilon)
            (noisy,) = self._release(reservation, [("coefficients", vector)])
            n1, n2 = _from_monomials(np.asarray(noisy, dtype=float), d, with_c0)
            # noise b (Laplace scale) or σ on the monomial 2·C₂ⱼₖ: C₂ⱼₖ gets half of it
            (released,) = reservation.mechanisms
            noise = float(released.scale if method == "original" else released.sigma)
            entry_sd = noise * (math.sqrt(2.0) if method == "original" else 1.0) / 2.0
        else:
            entries = d * (d + 1) // 2
            if variant == "published":
                # the paper's per-order noise, each order at the full (ε, δ); C₂ as the
                # paper releases it: iid noise on the upper triangle, mirrored
                rows, cols = np.triu_indices(d)
                sizes = {"c0": 1, "c1": d, "c2": entries}
                orders = [("C1", c1), ("C2", c2[rows, cols])]
                if not logistic:
                    orders.insert(0, ("C0", c0))
                schedule = [
                    Gaussian(
                        paper[name.lower()] * classical / epsilon,
                        true[name.lower()],
                        dimension=sizes[name.lower()],
                        safe=safe,
                    )
                    for name, _ in orders
                ]
                outputs = self._release(self._reserve(schedule, ledger), orders)
                n1 = np.asarray(outputs[-2], dtype=float)
                upper_noisy = np.asarray(outputs[-1], dtype=float)
                n2 = np.zeros((d, d))
                n2[rows, cols] = upper_noisy
                n2[cols, rows] = upper_noisy
                entry_sd = float(schedule[-1].sigma)  # iid on each entry, mirrored
            else:
                a1, a2, sensitivity = self._noise_shape(d, adjacency, true)
                whitened = concatenate([c1 / a1, upper(c2) / a2])

                def scaled(p: float) -> list[Any]:
                    return [Gaussian(p, sensitivity, dimension=whitened.size, safe=safe)]

                guess = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
                reservation = self._reserve(scaled, ledger, initial=guess)
                (mechanism,) = reservation.mechanisms
                (noisy,) = self._release(reservation, [("C1 and C2, whitened", whitened)])
                values = np.asarray(noisy, dtype=float)
                self.noise_scales_ = (mechanism.sigma * a1, mechanism.sigma * a2)
                n1 = a1 * values[:d]
                n2 = symmetric_from_upper(a2 * values[d:], d)
                entry_sd = self.noise_scales_[1] / math.sqrt(2.0)  # σ₂ on √2·C₂ⱼₖ
        self.method_ = method
        return n1, n2, entry_sd


class FMLinearRegression(LinearRegressorMixin, _FunctionalMechanism):
    """Functional-mechanism linear regression: FM, relaxed FM or Gaussian FM.

    Args:
        {budget}
        {x_bound}
        {y_bound}
        adjacency: "add_remove" or "replace_one" (declared; the papers use replace-one).
        method: "gaussian" (Gaussian FM), "relaxed" (relaxed FM) or "original" (FM).
        {fit_intercept}
        row_norm: "clip" (default) or "unit" (every row scaled to norm ``x_bound``).
        {noise}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import FMLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(20_000, 3)) / 3
        >>> y = np.clip(X @ [0.5, -0.2, 0.1] + 0.05 * rng.normal(size=20_000), -1, 1)
        >>> model = FMLinearRegression(epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0,
        ...                            adjacency="replace_one", rng=0).fit(X, y)
        >>> [type(e).__name__ for e in model.releases_]  # C₁ and C₂, whitened together
        ['DiscreteGaussian']

    Attributes:
        coef_: The minimiser's coefficients in data units (post-processing of the release).
        intercept_: The intercept in the units of y (0.0 without ``fit_intercept``).
        {fitted}
    """

    loss = "linear"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        y_bound: float | None = None,
        adjacency: str | None = None,
        method: str = "gaussian",
        fit_intercept: bool = True,
        row_norm: str = "clip",
        budget_split: Any = None,
        eigenvalue_floor: str = "auto",
        variant: str = "calibrated",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class FMLogisticRegression(BinaryClassifierMixin, _FunctionalMechanism):
    """Functional-mechanism logistic regression (2nd-order Taylor expansion at 0).

    Two classes, declared or named by ``y``'s dtype (``classes``). Same parameters as
    :class:`FMLinearRegression`, without ``y_bound`` (the labels bound themselves).

    Args:
        {budget}
        {x_bound}
        {adjacency}
        {classes}
        method: "gaussian", "relaxed" or "original".
        {fit_intercept}
        row_norm: "clip" (default) or "unit".
        {noise}

    Attributes:
        coef_: The minimiser's coefficients: the log-odds per unit of each feature.
        intercept_: The log-odds at x = 0 (0.0 without ``fit_intercept``).
        {classes_}
        {fitted}
    """

    loss = "logistic"
    _logistic = True
    _target_scaled = False
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **_FunctionalMechanism._parameter_constraints,
        "classes": CLASSES,
    }

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        adjacency: str | None = None,
        classes: Any = None,
        method: str = "gaussian",
        fit_intercept: bool = True,
        row_norm: str = "clip",
        budget_split: Any = None,
        eigenvalue_floor: str = "auto",
        variant: str = "calibrated",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


_BUDGET_ARGS = """epsilon: The ε this fit must meet (the nominal ε for ``variant="published"``).
        delta: The δ this fit must meet (0 allowed for ``method="original"``)."""

_NOISE_ARGS = """budget_split: Shares of μ² for (C₁, C₂) in calibrated Gaussian FM.
        eigenvalue_floor: How the noisy C₂ is made positive definite before the solve
            (post-processing): "noise" raises its eigenvalues to the noise's spectral scale
            2s√m (s the noise sd of an off-diagonal entry, m the dimension; public), "zero"
            projects them onto [0, ∞) as the papers do, "auto" (default) is "noise" for the
            calibrated variant and "zero" for the published one.
        {variant}
        {ledger_safe_noise_rng}"""

_FITTED = """method_: The method used ("gaussian", "relaxed" or "original").
        noise_scales_: (σ₁, σ₂), the noise on C₁ and on C₂'s upper triangle. Only for the
            calibrated Gaussian FM (one whitened release).
        eigenvalue_floor_: λ, the least eigenvalue the noisy C₂ was given before the solve
            (0.0 for the papers' projection).
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order."""

fill_docstring(
    FMLinearRegression,
    FMLogisticRegression,
    budget=_BUDGET_ARGS,
    noise=_NOISE_ARGS,
    fitted=_FITTED,
)

__dir__ = namespace(__all__)
