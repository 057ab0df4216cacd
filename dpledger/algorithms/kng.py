"""KNG and the exponential mechanism for linear and quantile regression on a bounded Θ.

**KNG** (Reimherr & Awan 2019, "KNG: The K-Norm Gradient Mechanism", Thm "KNG") releases
θ ∈ Θ with density f_D(θ) ∝ exp(−ε‖∇ℓₙ(θ; D)‖_K / (2Δ)), where Δ bounds the K-norm
change of the gradient between neighbouring data sets *for every θ ∈ Θ*. It is the
exponential mechanism (McSherry & Talwar 2007) with utility −‖∇ℓₙ(θ; D)‖_K, whose
sensitivity is at most Δ (reverse triangle inequality), on the data-independent base
measure Lebesgue-on-Θ. The privacy loss of an output θ is
(ε/(2Δ))(‖∇ℓₙ(θ; D′)‖_K − ‖∇ℓₙ(θ; D)‖_K) + log(Z_D′/Z_D): its first term ranges over an
interval of width ≤ ε, so the release is ε-bounded-range (Durfee & Rogers 2019), hence
ε-DP and ε²/8-zCDP, under either adjacency. It is charged as
:class:`~dpledger.events.BoundedRange` (ε), like :func:`~dpledger.algorithms.quantile`.

**The exponential mechanism** with utility −ℓₙ(θ; D) releases θ with density
∝ exp(−εℓₙ(θ; D)/(2Δ_ℓ)), Δ_ℓ = sup over θ ∈ Θ and neighbours of |ℓₙ(θ; D) − ℓₙ(θ; D′)|:
ε-bounded-range by the same argument, charged the same. (Under add/remove the loss is
monotone — adding a row only adds a non-negative term — so the exactly truncated density
alone would be ε/2-bounded-range; with the sampler's failure as an output it is not, see
:func:`sampler_epsilon`.) KNG adds O_p(1/n) noise to the
minimiser, the exponential mechanism O_p(1/√n) (Reimherr & Awan; ``examples/kng_rates.py``
measures both slopes).

Declared bounds (never read from the data): rows x are clipped to ‖x‖ ≤ ``x_bound`` = B
(in the K-norm for KNG quantile regression, in ℓ₂ otherwise), y to |y| ≤ ``y_bound`` = C,
and Θ = {θ: ‖θ‖₂ ≤ ``theta_bound``} = r. With ``fit_intercept`` the model acts on the
augmented row z = (x, 1) and θ = (coef, intercept); the intercept column is counted in the
row bound: b = ‖(B, 1)‖ (√(B² + 1) in ℓ₂, B + 1 in ℓ₁, max(B, 1) in ℓ∞), else b = B.
So |zᵀθ| ≤ b₂r on Θ (b₂ the ℓ₂ row bound).

Sensitivities (for one record; derivations in each function's docstring and in
docs/algorithms.md, checked against brute-force worst cases in tests/test_kng.py):

=========================  ===================  ======================  ====================
release                    norm                 add/remove              replace-one
=========================  ===================  ======================  ====================
KNG, squared loss          ℓ₂ of ∇              2b(br + C)              4b(br + C) (bound)
KNG, check loss ρ_τ        K of ∇               max(τ, 1 − τ)·b_K       2·max(τ, 1 − τ)·b_K
exponential, squared loss  |Δℓ|                 (C + br)²               (C + br)²
exponential, check loss    |Δℓ|                 max(τ, 1 − τ)(C + b₂r)  max(τ, 1 − τ)(C + b₂r)
=========================  ===================  ======================  ====================

**Sampling.** KNG for the squared loss with K = ℓ₂ and the exponential mechanism for the
squared loss are sampled *exactly* (up to floating point): the untruncated densities are
an affine image of exp(−(ε/Δ)‖z‖₂) and a (tilted) Gaussian, and rejection of draws
outside Θ yields exactly the density truncated to Θ. The number of proposals is not a
fixed cap — with one, the failure probability (1 − p_D)^N is a release whose ratio
between neighbours is unbounded — but Geometric with the public mean ``max_proposals``.
Then the failure (:class:`SamplingError`, after the charge) is part of the release: the
output θ-or-failure is ε-bounded-range whatever the data, with the density sampled at
the ε_d of :func:`sampler_epsilon` (= ε at the default ``ridge="auto"``). The work is
Geometric with a public mean; its realised length still depends on the data (a timing
channel, not an output).

Quantile regression has no exact sampler for d > 1: it is sampled by random-walk
Metropolis (:func:`metropolis`), whose output is only approximately distributed as the
mechanism's density. **The ε guarantee holds for exact sampling only**; the ledger label
says so. ``mcmc_diagnostics_`` (acceptance, effective sample size, split R̂) are
computed from every chain's draws, so they are functions of the data *not* covered by the
guarantee: they are for the data holder, never for release, and exist only with
``diagnostics=True``.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import RegressorMixin

from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_positive,
    check_probability,
)
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms.base import PrivateEstimator, Release, store_parameters
from dpledger.algorithms.linear import _clip_rows
from dpledger.errors import DPLedgerError, InvalidArgumentError
from dpledger.mechanisms._rng import resolve_rng
from dpledger.mechanisms.base import Mechanism, warn_floating_point
from dpledger.mechanisms.knorm import uniform_in_ball

__all__ = [
    "MAX_MCMC_STEPS",
    "MAX_MCMC_WORK",
    "MAX_PROPOSALS",
    "MCMC_LABEL",
    "ExponentialLinearRegression",
    "ExponentialQuantileRegression",
    "KNGLinearRegression",
    "KNGQuantileRegression",
    "MCMCDiagnostics",
    "MCMCDraw",
    "MCMCWarning",
    "SamplingError",
    "auto_ridge",
    "effective_sample_size",
    "exponential_linear_sample",
    "kng_linear_sample",
    "metropolis",
    "quantile_gradient_sensitivity",
    "quantile_loss_range",
    "row_bound",
    "sampler_epsilon",
    "split_rhat",
    "squared_gradient_sensitivity",
    "squared_loss_range",
]

NORMS = ("l1", "l2", "linf")

#: The largest rejection-sampling cap accepted (proposals per release).
MAX_PROPOSALS = 10**8
_MIN_BOUND, _MAX_BOUND = 2.0**-900, 2.0**470
#: The largest number of Metropolis steps per chain (burn-in + kept samples).
MAX_MCMC_STEPS = 10**6
#: The most chains one fit runs.
MAX_CHAINS = 64
#: The most work one MCMC fit may ask for: chains × (burn_in + samples) × rows × columns
#: (each step evaluates the loss on every row). About 8 minutes at the 2·10⁹ per second
#: measured on a 2-core machine; a fit beyond it is refused before anything is charged.
MAX_MCMC_WORK = 10**12
#: The ledger label's note on every MCMC release.
MCMC_LABEL = "MCMC: approximate sampler; ε holds for exact sampling only"


class SamplingError(DPLedgerError, RuntimeError):
    """A capped sampler found no draw: the budget was charged and nothing was released."""


class MCMCWarning(UserWarning):
    """The chains look unconverged (split R̂ > 1.01 or a small effective sample size)."""


# -- sensitivities ------------------------------------------------------------------------


def row_bound(x_bound: float, fit_intercept: bool, norm: str = "l2") -> float:
    """The K-norm bound b of a model row z: ``x_bound``, or ‖(x_bound, 1)‖_K with an intercept.

    The intercept column is a public constant 1 appended to the clipped x, so
    ‖(x, 1)‖_K ≤ ‖(B, 1)‖_K for every norm here (ℓ₁: B + 1, ℓ₂: √(B² + 1), ℓ∞: max(B, 1)).
    """
    if not fit_intercept:
        return float(x_bound)
    if norm == "l1":
        return float(x_bound) + 1.0
    if norm == "linf":
        return max(float(x_bound), 1.0)
    return math.hypot(float(x_bound), 1.0)


def squared_gradient_sensitivity(
    b: float, y_bound: float, theta_bound: float, adjacency: str
) -> float:
    """Δ₂ of ∇ℓₙ for ℓₙ(θ) = Σ(yᵢ − zᵢᵀθ)² (+ a public ridge), sup over θ ∈ Θ.

    One row adds g(θ; z, y) = 2z(zᵀθ − y) to the gradient (the ridge's 2λθ is the same for
    neighbours and cancels). With ‖z‖₂ ≤ b, |y| ≤ C, ‖θ‖₂ ≤ r: ‖g‖₂ = 2‖z‖₂|zᵀθ − y| ≤
    2b(br + C), attained by z = bθ/r, y = −C at ‖θ‖ = r. Add/remove: the difference is one
    row's g, so Δ₂ = 2b(br + C) (tight). Replace-one: ‖g − g′‖₂ ≤ ‖g‖₂ + ‖g′‖₂ =
    4b(br + C) by the triangle inequality — a valid bound, but *not* the supremum: no
    second row's g′ reaches −g. The supremum found numerically is
    2bC·max_φ(k·sin 2φ + 2 sin φ), k = br/C (e.g. 0.65 × the bound at k = 1), but without
    a proof it is not used: the proven bound is charged.
    """
    one = 2.0 * b * (b * theta_bound + y_bound)
    return 2.0 * one if adjacency == ev.REPLACE_ONE else one


def quantile_gradient_sensitivity(tau: float, b: float, adjacency: str) -> float:
    """Δ_K of ∇ℓₙ for ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ): max(τ, 1 − τ)·b, doubled under replace-one.

    One row adds g = z(1{y < zᵀθ} − τ) ∈ {(1 − τ)z, −τz}, so ‖g‖_K ≤ max(τ, 1 − τ)·b
    (add/remove, tight). Replace-one: g − g′ with g′ = (−z) times the same weight — both
    rows on the same side of the fit, e.g. y, y′ ≥ 0 at θ = 0 ∈ Θ for the weight −τ — has
    norm 2·max(τ, 1 − τ)·b, which is also the triangle-inequality bound: tight. (Code
    using (1 − τ) alone is too small for τ > ½.) Neither depends on y or on θ.
    """
    one = max(tau, 1.0 - tau) * b
    return 2.0 * one if adjacency == ev.REPLACE_ONE else one


def squared_loss_range(b: float, y_bound: float, theta_bound: float) -> float:
    """Δ_ℓ = (C + br)² for the squared loss on Θ, under either adjacency.

    One row's loss (y − zᵀθ)² lies in [0, (C + br)²] (|zᵀθ| ≤ br). Add/remove changes
    ℓₙ by one such term; replace-one by the difference of two, which lies in
    [−(C + br)², (C + br)²] because both are ≥ 0. Tight for both (one row with residual
    C + br against one with residual 0). The ridge is the same for neighbours.
    """
    reach = y_bound + b * theta_bound
    return reach * reach  # inf beyond the float range (refused by the caller), never a raise


def quantile_loss_range(tau: float, b: float, y_bound: float, theta_bound: float) -> float:
    """Δ_ℓ = max(τ, 1 − τ)(C + br) for the check loss on Θ, under either adjacency.

    ρ_τ(u) = u(τ − 1{u < 0}) ∈ [0, max(τ, 1 − τ)|u|] and |y − zᵀθ| ≤ C + br; the
    difference of two non-negative terms is bounded by the larger (as for the squared
    loss). Tight.
    """
    return max(tau, 1.0 - tau) * (y_bound + b * theta_bound)


# -- exact samplers with a public proposal budget -----------------------------------------
#
# A rejection sampler whose cap is fixed fails with probability (1 − p_D)^N: the failure
# is a release whose probability ratio between neighbours is unbounded (issue 31's
# reproducer: 3.3e-4 against 4.9e-2 at ε = 2). Here every proposal is preceded by a public
# coin that stops the sampler with probability s = 1/(1 + max_proposals), so the number of
# proposals is Geometric with the public mean ``max_proposals``, and the failure becomes
# part of the release. Theorem (proved in :func:`sampler_epsilon`): if an accepted
# proposal has sub-density ρ_D(θ) = K_D·e_D(θ) on Θ, with log(e_D/e_D′) confined to an
# interval of width w and |log(K_D/K_D′)| ≤ g, the whole output — θ or the failure — is
# max(w, w/2 + g)-bounded-range for *every* s, whatever the data.


def _stop_probability(max_proposals: int) -> float:
    """S = 1/(1 + max_proposals): the public per-proposal stopping probability."""
    return 1.0 / (1.0 + float(max_proposals))


def _first_inside(
    propose: Callable[[int], np.ndarray],
    radius: float,
    max_proposals: int,
    what: str,
    rng: np.random.Generator,
    accept: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The first accepted proposal within a Geometric proposal budget of public mean.

    Draws K with P(K ≥ k) = (1 − s)^k, s = 1/(1 + ``max_proposals``) (so E[K] =
    ``max_proposals``), then up to K iid proposals; a proposal is accepted if it lies in
    Θ = {‖θ‖₂ ≤ radius} and, if ``accept`` is given, with the probability it returns. The
    first accepted one is returned — exact rejection sampling of the accepted sub-density —
    and if none of the K is accepted the sampler raises :class:`SamplingError`. Drawing K
    first is the same law as a stopping coin before every proposal: P(fail) =
    s/(s + a(1 − s)), a the acceptance mass, and the output density is
    (1 − s)ρ(θ)/(s + a(1 − s)). Work: Geometric with the public mean, batches growing
    geometrically (memory ≤ 32 MB per batch).
    """
    budget = int(rng.geometric(_stop_probability(max_proposals))) - 1
    used, batch = 0, 16
    while used < budget:
        size = min(batch, budget - used)
        thetas = propose(size)
        d = thetas.shape[1] if thetas.ndim == 2 else 1
        # in units of r: squares of θ near a tiny r would underflow to 0 and pass
        inside = np.linalg.norm(thetas / radius, axis=1) <= 1.0
        if accept is not None:
            coins = rng.random(size)
            kept = np.zeros(size, dtype=bool)
            if inside.any():
                kept[inside] = coins[inside] < accept(thetas[inside])
            inside = kept
        hits = np.flatnonzero(inside)
        if hits.size:
            return np.asarray(thetas[hits[0]], dtype=float)
        used += size
        batch = min(batch * 4, max(16, (1 << 22) // d))
    raise SamplingError(
        f"{what}: none of the {budget} proposals drawn (a Geometric number with the public "
        f"mean max_proposals = {max_proposals}) was accepted in Θ = {{‖θ‖₂ ≤ {radius:g}}}. "
        "This failure is part of the release and its probability is covered by the ε "
        "charged (the budget is spent, no estimate is released): declare a larger "
        "`theta_bound` (containing the estimate with margin) or raise `max_proposals`."
    )


def _log_det_ratio_bound(b: float, ridge: float) -> float:
    """An upper bound on log J, J = 1 + b²/ridge (rounded up)."""
    return math.log1p(b * b / ridge) * (1.0 + 2.0**-50) + 2.0**-1070


def sampler_epsilon(kind: str, epsilon: float, b: float, ridge: float, adjacency: str) -> float:
    """The ε of the sampled density such that the whole release, failure included, is ε-BR.

    **Theorem.** Let a sampler stop before each proposal with the public probability s and
    otherwise accept a proposal θ with sub-density ρ_D(θ) = K_D·e_D(θ) on Θ, and let
    a_D = ∫ρ_D. It outputs θ with density (1 − s)ρ_D(θ)/(s + a_D(1 − s)) and the failure ⊥
    with probability s/(s + a_D(1 − s)). For neighbours D, D′ the log-ratio of the output
    laws is L(θ) = h(θ) + G + F and L(⊥) = F, with h = log(e_D/e_D′), G = log(K_D/K_D′) and
    F = log((s + a_D′(1 − s))/(s + a_D(1 − s))) common to every output. So the range of L
    has width max(h_hi + G, 0) − min(h_lo + G, 0) for h ∈ [h_lo, h_hi], whatever s and
    a_D: the release is bounded-range with that parameter (Durfee & Rogers 2019), hence
    DP and zCDP as :class:`~dpledger.events.BoundedRange` says.

    J = 1 + b²/ridge bounds det A_D/det A_D′ both ways, A_D = Σzzᵀ + ridge·I: adding a row
    z multiplies det A by 1 + zᵀA⁻¹z ∈ [1, 1 + b²/ridge] (matrix determinant lemma,
    A ⪰ ridge·I); replacing z by z′ multiplies it by a ratio of two such factors.

    - **KNG** (:func:`kng_linear_sample`): e_D = exp(−(ε_d/Δ)‖A_Dθ − b_D‖₂), so
      h ∈ [−ε_d/2, ε_d/2] (the gradient 2(Aθ − b) moves by ≤ Δ in norm on Θ), and
      K_D = c·det A_D (c the data-free normaliser of exp(−(ε_d/Δ)‖z‖₂)): |G| ≤ log J.
      Width ≤ max(ε_d, ε_d/2 + log J): ε_d = ε if log J ≤ ε/2, else 2(ε − log J).
    - **Exponential mechanism** (:func:`exponential_linear_sample`): e_D = exp(−ε_dℓ_D/(2Δ)),
      K_D = c·(det A_D)^{1/2}·exp(ε_d m_D/(2Δ)), m_D = min_Θ ℓ_D. Add/remove (D′ = D + a
      row): ℓ_D′ − ℓ_D ∈ [0, Δ] on Θ, so h ∈ [0, ε_d/2] and G ∈ [−ε_d/2 − ½log J, 0]:
      width ≤ ε_d/2 + ½log J, and ε_d = min(ε, 2ε − log J). Replace-one: h ∈ [−ε_d/2, ε_d/2]
      and |G| ≤ ε_d/2 + ½log J: width ≤ ε_d + ½log J, and ε_d = ε − ½log J.

    Returns ε_d (rounded down); raises :class:`InvalidArgumentError` naming ``ridge`` if no
    ε_d > 0 exists (a public condition, decided before the charge).
    """
    kind = check_choice("kind", kind, ("kng", "exponential"))
    adjacency = check_choice("adjacency", adjacency, (ev.ADD_REMOVE, ev.REPLACE_ONE))
    epsilon, b, ridge = (
        check_positive(k, v) for k, v in (("epsilon", epsilon), ("b", b), ("ridge", ridge))
    )
    log_j = _log_det_ratio_bound(b, ridge)
    if kind == "kng":
        density = epsilon if log_j <= epsilon / 2.0 else 2.0 * (epsilon - log_j)
    elif adjacency == ev.ADD_REMOVE:
        density = epsilon if log_j <= epsilon else 2.0 * epsilon - log_j
    else:
        density = epsilon - log_j / 2.0
    if density != epsilon:
        density *= 1.0 - 2.0**-50
    if not density > 0:
        raise InvalidArgumentError(
            f"`ridge` = {ridge!r} is too small for epsilon = {epsilon!r}: the rejection "
            f"sampler's failure event costs log(1 + b²/ridge) = {log_j:.6g} (b = {b:.6g} the "
            f"row bound), which leaves no ε for the density. Use ridge='auto' (at least "
            f"{auto_ridge(kind, epsilon, b):.6g})."
        )
    return density


def auto_ridge(kind: str, epsilon: float, b: float) -> float:
    """The default ridge: the smallest for which the sampler's failure event costs nothing.

    KNG: b²/(e^{ε/2} − 1), so log J ≤ ε/2 and ε_d = ε (:func:`sampler_epsilon`). The
    exponential mechanism (noise O(1/√n), so a larger ridge's O(1/n) bias is negligible):
    b²/(e^{ε/10} − 1), so ε_d = ε under add/remove and 0.95ε under replace-one. Never below
    b²·2⁻⁶⁰ (then log J ≤ 41.6, below ε/2 or ε/10 wherever the floor applies).
    """
    kind = check_choice("kind", kind, ("kng", "exponential"))
    epsilon, b = check_positive("epsilon", epsilon), check_positive("b", b)
    share = epsilon / 2.0 if kind == "kng" else epsilon / 10.0
    # beyond share = 700 the floor is larger anyway (and expm1 would overflow)
    return max(b * b / math.expm1(min(share, 700.0)) * (1.0 + 2.0**-40), b * b * 2.0**-60)


def _spectral(gram: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """(V, μ) with A = V·diag(μ)·Vᵀ, μ = max(λ, 0) + ridge, λ the eigenvalues of XᵀX.

    XᵀX is positive semi-definite; an eigenvalue below 0 is rounding, clamped to 0, so A
    is positive definite for every data set (μ ≥ ridge > 0): the sampler can never fail
    on one data set and succeed on its neighbour (a Cholesky of XᵀX + ridge·I could, once
    the ridge is below XᵀX's rounding level). The clamp moves A by rounding-size amounts
    only, far below the sensitivity.
    """
    upper = gram / 2.0
    eigenvalues, vectors = np.linalg.eigh(upper + upper.T)
    return np.asarray(vectors), np.maximum(eigenvalues, 0.0) + ridge


def _check_factor_input(gram: np.ndarray, moment: np.ndarray, ridge: float) -> None:
    d = moment.size
    if np.shape(gram) != (d, d) or not (np.all(np.isfinite(gram)) and np.isfinite(ridge)):
        raise InvalidArgumentError(
            f"`gram` must be a finite ({d}, {d}) matrix and `ridge` finite. Found shape "
            f"{np.shape(gram)} and ridge {ridge!r}."
        )
    if not ridge > 0 and np.min(np.linalg.eigvalsh(gram / 2.0 + gram.T / 2.0)) <= 0:
        raise InvalidArgumentError(
            "`gram` must be positive definite, or pass `ridge` > 0 (A = gram + ridge·I)."
        )


def kng_linear_sample(
    gram: np.ndarray,
    moment: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    theta_bound: float,
    rng: np.random.Generator,
    max_proposals: int = 10**6,
    ridge: float = 0.0,
) -> np.ndarray:
    """One draw of ℓ₂-KNG for ℓₙ(θ) = θᵀAθ − 2bᵀθ + const on ‖θ‖ ≤ r, or SamplingError.

    A = ``gram`` + ``ridge``·I (:func:`_spectral`). ∇ℓₙ = 2(Aθ − b), so
    f(θ) ∝ exp(−(ε/Δ)‖Aθ − b‖₂): z = Aθ − b has density ∝ exp(−(ε/Δ)‖z‖₂) (the Jacobian
    of θ ↦ z is the constant det A), i.e. ‖z‖ ~ Gamma(d, Δ/ε) with a uniform direction;
    θ = A⁻¹(b + z), accepted if in Θ, within a Geometric proposal budget of public mean
    ``max_proposals`` (:func:`_first_inside`). ``epsilon`` is the density's ε_d; the
    release's ε, failure included, is given by :func:`sampler_epsilon`.
    """
    d = moment.size
    _check_factor_input(gram, moment, ridge)
    vectors, mu = _spectral(gram, ridge)

    def propose(size: int) -> np.ndarray:
        radius = rng.gamma(d, sensitivity / epsilon, size)
        direction = rng.standard_normal((size, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        z = direction * radius[:, None]
        return np.asarray(((moment[None, :] + z) @ vectors / mu) @ vectors.T)

    return _first_inside(propose, theta_bound, max_proposals, "KNG (squared loss)", rng)


def _trust_region_centre(c: np.ndarray, mu: np.ndarray, radius: float) -> tuple[np.ndarray, float]:
    """(t, λ): the minimiser of θᵀAθ − 2bᵀθ on ‖θ‖ ≤ r, in A's eigenbasis (c = Vᵀb).

    t = c/(μ + λ) with λ = 0 if ‖c/μ‖ ≤ r, else the λ > 0 with ‖t‖ = r (the secular
    equation Σcᵢ²/(μᵢ + λ)² = r² is decreasing in λ and holds below λ = ‖c‖/r; μ ≥ ridge > 0,
    so there is no "hard case"). Bisection to adjacent floats, then the λ with ‖t‖ ≤ r.
    """

    def outside(lam: float) -> bool:  # ‖c/(μ + λ)‖ > r in units of r (no under/overflow)
        with np.errstate(over="ignore"):
            t = c / (mu + lam) / radius
        if not np.all(np.isfinite(t)):
            return True
        k = float(np.max(np.abs(t))) if t.size else 0.0
        return k > 0 and k * math.sqrt(float(np.sum((t / k) ** 2))) > 1.0

    if not outside(0.0):
        return c / mu, 0.0
    k = float(np.max(np.abs(c)))
    lo, hi = 0.0, k * math.sqrt(float(np.sum((c / k) ** 2))) / radius  # finite: see the
    while outside(hi):  # caller's public scale check; rounding: make the bracket valid
        hi *= 2.0
    for _ in range(2100):
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        if outside(mid):
            lo = mid
        else:
            hi = mid
    return c / (mu + hi), hi


def exponential_linear_sample(
    gram: np.ndarray,
    moment: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    theta_bound: float,
    rng: np.random.Generator,
    max_proposals: int = 10**6,
    ridge: float = 0.0,
) -> np.ndarray:
    """One draw of exp(−ε(θᵀAθ − 2bᵀθ)/(2Δ_ℓ)) on ‖θ‖ ≤ r, or SamplingError.

    Proposals are centred on Θ's constrained minimiser θ₀ = (A + λI)⁻¹b
    (:func:`_trust_region_centre`), not on the unconstrained one, so the acceptance mass
    has the public normaliser K_D of :func:`sampler_epsilon`. With κ = 2λ ≥ 0, u = θ − θ₀
    and w = ∇ℓ(θ₀) + κθ₀ (0 in exact arithmetic, kept to absorb rounding):
    ℓ(θ) = q(θ) + κ(r² − θ₀ᵀθ), q(θ) = ℓ(θ₀) − κ(r² − ‖θ₀‖²) + wᵀu + uᵀAu. On Θ,
    θ₀ᵀθ ≤ ‖θ₀‖r ≤ r², so the second term is ≥ 0: propose from the Gaussian ∝ exp(−εq/(2Δ))
    = N(θ₀ − A⁻¹w/2, (Δ/ε)A⁻¹) and accept in Θ with probability exp(−εκ(r² − θ₀ᵀθ)/(2Δ)),
    which is exact rejection sampling of the density on Θ; the accepted sub-density is
    c·(det A)^{1/2}·exp(ε·min_Θℓ/(2Δ))·exp(−εℓ(θ)/(2Δ)). Geometric proposal budget of public
    mean ``max_proposals`` (:func:`_first_inside`). ``epsilon`` is the density's ε_d.
    """
    d = moment.size
    _check_factor_input(gram, moment, ridge)
    vectors, mu = _spectral(gram, ridge)
    c = vectors.T @ moment
    t, lam = _trust_region_centre(c, mu, theta_bound)
    half_w = (mu + lam) * t - c  # w/2 in the eigenbasis: rounding only
    centre = vectors @ t
    mean = vectors @ (t - half_w / mu)
    scale = math.sqrt(sensitivity / epsilon)
    root = vectors / np.sqrt(mu)  # V·diag(μ^{-1/2})

    # the coin exp(−(ελ/Δ)(r² − θ₀ᵀθ)) in units of r: exp(−τ(1 − u₀ᵀu)), u = θ/r, with
    # τ = ελr²/Δ ≤ εn/4 (λ ≤ ‖b‖/r ≤ nbC/r and bCr ≤ (C + br)²/4): taken through logarithms,
    # since ελ/Δ and r² alone overflow or underflow at tiny r
    tilt = (
        math.exp(
            math.log(epsilon) + math.log(lam) + 2.0 * math.log(theta_bound) - math.log(sensitivity)
        )
        if lam > 0
        else 0.0
    )
    unit_centre = centre / theta_bound

    def propose(size: int) -> np.ndarray:
        xi = rng.standard_normal((size, d))
        return np.asarray(mean[None, :] + scale * (xi @ root.T))

    def accept(thetas: np.ndarray) -> np.ndarray:
        gap = np.maximum(1.0 - (thetas / theta_bound) @ unit_centre, 0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            chance = np.exp(-tilt * gap)
        return np.asarray(np.nan_to_num(chance, nan=0.0))

    return _first_inside(
        propose,
        theta_bound,
        max_proposals,
        "exponential mechanism",
        rng,
        accept if lam > 0 else None,
    )


# -- MCMC ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MCMCDiagnostics:
    """Convergence diagnostics of one Metropolis run (not private: for the data holder).

    Attributes:
        acceptance_rate: Post-burn-in acceptance rate of each chain.
        ess: Effective sample size of each coordinate, all chains pooled.
        rhat: Split R̂ of each coordinate (Gelman et al., BDA3 §11.4).
        chains: Number of chains.
        burn_in: Burn-in steps per chain (discarded; the step size adapts only here).
        samples: Kept steps per chain.
    """

    acceptance_rate: np.ndarray
    ess: np.ndarray
    rhat: np.ndarray
    chains: int
    burn_in: int
    samples: int


def split_rhat(draws: np.ndarray) -> np.ndarray:
    """Split R̂ per coordinate of ``draws`` (chains × steps × d); inf where a chain is constant.

    Each chain is split in halves; R̂ = √(V⁺/W) with W the mean within-half variance and
    V⁺ = (n − 1)/n·W + B/n (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4).
    """
    _, steps, d = draws.shape
    half = steps // 2
    if half < 2:
        return np.full(d, np.inf)
    parts = np.concatenate([draws[:, :half], draws[:, steps - half :]], axis=0)
    within = parts.var(axis=1, ddof=1).mean(axis=0)
    between = half * parts.mean(axis=1).var(axis=0, ddof=1)
    pooled = (half - 1) / half * within + between / half
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(pooled / within)
    return np.where(within > 0, rhat, np.inf)


def effective_sample_size(draws: np.ndarray) -> np.ndarray:
    """Multi-chain effective sample size per coordinate (BDA3 §11.5, Geyer's sequence).

    ρ̂ₜ = 1 − (W − mean autocovariance at lag t)/V⁺ over split chains; the sum of
    consecutive pairs ρ̂₂ₖ + ρ̂₂ₖ₊₁ is truncated at its first negative term and made
    monotone (Geyer 1992); ESS = mn/(−1 + 2Σ pairs).
    """
    _, steps, d = draws.shape
    half = steps // 2
    if half < 4:
        return np.zeros(d)
    parts = np.concatenate([draws[:, :half], draws[:, steps - half :]], axis=0)
    m, n = parts.shape[0], half
    centred = parts - parts.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    autocov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n
    within = parts.var(axis=1, ddof=1).mean(axis=0)
    between = n * parts.mean(axis=1).var(axis=0, ddof=1)
    pooled = (n - 1) / n * within + between / n
    out = np.zeros(d)
    for j in range(d):
        if not pooled[j] > 0:
            continue
        rho = 1.0 - (within[j] - autocov[:, :, j].mean(axis=0)) / pooled[j]
        rho[0] = 1.0
        total, previous = 0.0, math.inf
        for k in range(0, n - 1, 2):
            pair = rho[k] + rho[k + 1]
            if pair < 0:
                break
            pair = min(pair, previous)
            total += pair
            previous = pair
        tau = max(-1.0 + 2.0 * total, 1.0 / math.log10(max(m * n, 10)))
        out[j] = m * n / tau
    return out


def metropolis(
    log_density: Callable[[np.ndarray], np.ndarray],
    *,
    dimension: int,
    radius: float,
    rng: np.random.Generator,
    chains: int = 4,
    burn_in: int = 2000,
    samples: int = 1000,
) -> tuple[np.ndarray, MCMCDiagnostics, np.ndarray]:
    """Random-walk Metropolis on Θ = {‖θ‖₂ ≤ radius} for any log-density, several chains.

    Chains start at independent uniform points of Θ drawn from ``rng`` — data-independent,
    never the non-private estimate. During burn-in each chain's step size adapts
    (Robbins–Monro on its log, towards acceptance 0.234) and, at a quarter, half and three
    quarters of the burn-in, the proposal's shape is set to the chains' pooled
    within-chain covariance over the last quarter of the burn-in; after
    burn-in the kernel is fixed, so every kept step leaves the target invariant
    (symmetric Gaussian proposals; points outside Θ have density 0 and are rejected).

    Args:
        log_density: Maps an (m, d) array of points in Θ to their m log-densities (up to
            a constant; vectorised over the chains).
        dimension: d.
        radius: Θ's radius.
        rng: The generator (seeded per fit by the caller).
        chains: Number of chains (≥ 2 for R̂).
        burn_in: Discarded adaptive steps per chain.
        samples: Kept steps per chain.

    Returns:
        (θ, diagnostics, draws): θ is the *last state of chain 0* — one draw, the
        mechanism's output (a summary of many draws would be a different, unaccounted
        release); draws are all kept states (chains × samples × d), for diagnostics.
    """
    d = dimension
    current = radius * uniform_in_ball("l2", d, chains, rng)
    logp = np.asarray(log_density(current), dtype=float)
    scale = np.full(chains, 2.38 * radius / (2.0 * math.sqrt(d)))
    shape = np.eye(d)
    window = max(burn_in // 4, 1)
    history = np.empty((chains, window, d))  # the last `window` burn-in states (a ring)
    checkpoints = {burn_in // 4, burn_in // 2, (3 * burn_in) // 4} - {0}
    since = 0  # steps since the proposal's shape was last set

    def step(adapting: bool, t: int) -> np.ndarray:
        nonlocal current, logp, scale
        noise = rng.standard_normal((chains, d)) @ shape.T
        proposal = current + scale[:, None] * noise
        inside = np.einsum("ij,ij->i", proposal, proposal) <= radius * radius
        lp = np.full(chains, -np.inf)
        if inside.any():
            lp[inside] = log_density(proposal[inside])
        accept = np.log(rng.random(chains)) < lp - logp
        current = np.where(accept[:, None], proposal, current)
        logp = np.where(accept, lp, logp)
        if adapting:
            gain = 1.0 / math.sqrt(1.0 + (t - since) / 10.0)
            scale = scale * np.exp(gain * (accept - 0.234))
        return np.asarray(accept)

    for t in range(burn_in):
        step(True, t)
        history[:, t % window] = current
        if t + 1 in checkpoints:  # t + 1 ≥ window: the ring holds the last window steps
            recent = history
            centred = (recent - recent.mean(axis=1, keepdims=True)).reshape(-1, d)
            covariance = centred.T @ centred / max(centred.shape[0] - 1, 1)
            covariance += 1e-12 * (np.trace(covariance) / d + radius * radius * 1e-12) * np.eye(d)
            try:
                shape = np.linalg.cholesky(covariance)
                scale = np.full(chains, 2.38 / math.sqrt(d))
                since = t + 1
            except np.linalg.LinAlgError:
                pass  # keep the previous shape
    draws = np.empty((chains, samples, d))
    accepted = np.zeros(chains)
    for t in range(samples):
        accepted += step(False, t)
        draws[:, t] = current
    diagnostics = MCMCDiagnostics(
        acceptance_rate=accepted / max(samples, 1),
        ess=effective_sample_size(draws),
        rhat=split_rhat(draws),
        chains=chains,
        burn_in=burn_in,
        samples=samples,
    )
    return np.array(current[0], dtype=float), diagnostics, draws


def _warn_if_unconverged(diagnostics: MCMCDiagnostics, what: str) -> None:
    rhat = float(np.max(diagnostics.rhat))
    ess = float(np.min(diagnostics.ess))
    if not (rhat <= 1.01) or ess < 100:
        warnings.warn(
            f"{what}: the chains may not have converged (max split R̂ = {rhat:.3g}, min ESS "
            f"= {ess:.3g}; want R̂ ≤ 1.01 and ESS ≥ 100): the release may be far from the "
            "mechanism's density, whose ε it is charged. Raise `burn_in`/`samples`. (This "
            "warning depends on the data: do not publish it.)",
            MCMCWarning,
            stacklevel=4,
        )


# -- mechanisms ---------------------------------------------------------------------------


def _check_cap(name: str, value: Any, cap: int) -> int:
    count = check_int_at_least(name, value, 1)
    if count > cap:
        raise InvalidArgumentError(f"`{name}` must be at most {cap} (no hang). Found {value!r}.")
    return count


def _check_float_range(b: float, y_bound: float, theta_bound: float, ridge: float) -> None:
    """Refuse, before the charge, bounds whose worst-case statistics overflow the sampler.

    ‖Xᵀy‖ ≤ n·b·C with n < 2⁵³ rows; the sampler divides it by the ridge (A⁻¹b) and by r
    (the trust-region multiplier λ ≤ ‖b‖/r). Both must stay below 2¹⁰⁰⁰ for *every* data
    set, or whether a fit fails would depend on the data. Public: bounds and ridge only.
    """
    if not (math.isfinite(ridge) and ridge > 0):
        raise InvalidArgumentError(
            f"`ridge` = {ridge!r} must be positive and finite (with ridge='auto' this means "
            "epsilon is too small for the declared bounds: rescale the data)."
        )
    top = 53.0 + math.log2(b) + math.log2(y_bound)
    for name, value in (("ridge", ridge), ("theta_bound", theta_bound)):
        if top - math.log2(value) >= 1000.0:
            raise InvalidArgumentError(
                f"the declared bounds are too far apart for the sampler's floats: "
                f"2⁵³·b·y_bound/{name} = 2^{top - math.log2(value):.1f} (b = {b:.6g} the row "
                f"bound, {name} = {value!r}) must stay below 2¹⁰⁰⁰ so that no data set "
                "overflows it. Rescale the data (x_bound, y_bound, theta_bound)."
            )


class _LinearRelease(Mechanism):
    """KNG (ℓ₂) or the exponential mechanism for the squared loss, sampled exactly.

    ``value`` is (XᵀX, Xᵀy) of the clipped model rows; the public ridge is added here.
    The event is :class:`~dpledger.events.BoundedRange` (ε) for the whole release —
    the drawn θ *or* the sampler's failure: the density is sampled at the smaller
    ``sampler_epsilon`` of :func:`sampler_epsilon`, which makes the failure event's
    cost part of ε (see the module docstring).
    """

    def __init__(
        self,
        kind: str,
        epsilon: float,
        sensitivity: float,
        *,
        theta_bound: float,
        ridge: float,
        dimension: int,
        max_proposals: int,
        row_bound: float,
        adjacency: str,
        y_bound: float = 1.0,
    ) -> None:
        self.kind = check_choice("kind", kind, ("kng", "exponential"))
        _check_float_range(float(row_bound), float(y_bound), float(theta_bound), float(ridge))
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.theta_bound = float(theta_bound)
        self.ridge = float(ridge)
        self.dimension = int(dimension)
        self.max_proposals = int(max_proposals)
        self.sampler_epsilon = sampler_epsilon(
            self.kind, self.epsilon, float(row_bound), self.ridge, adjacency
        )
        # "exact" here means exact in distribution in real arithmetic: the draws are
        # floating point, with Mironov's caveat like every continuous sampler here
        warn_floating_point(
            "KNG" if kind == "kng" else "the exponential mechanism", no_exact_sampler=True
        )

    def _params(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "epsilon": self.epsilon,
            "sampler_epsilon": self.sampler_epsilon,
            "sensitivity": self.sensitivity,
            "theta_bound": self.theta_bound,
            "ridge": self.ridge,
            "max_proposals": self.max_proposals,
        }

    @property
    def event(self) -> ev.BoundedRange:
        """ε-bounded-range, failure included (:func:`sampler_epsilon`; Durfee & Rogers 2019)."""
        return ev.BoundedRange(self.epsilon)

    def validate(self, value: Any) -> None:
        """(XᵀX, Xᵀy): a finite d×d and a finite d-vector."""
        gram, moment = value
        d = self.dimension
        if np.shape(gram) != (d, d) or np.shape(moment) != (d,):
            raise InvalidArgumentError(
                f"`value` must be (XᵀX of shape ({d}, {d}), Xᵀy of shape ({d},)). Found "
                f"{np.shape(gram)} and {np.shape(moment)}."
            )
        if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(moment))):
            raise InvalidArgumentError("`value` must be finite (XᵀX and Xᵀy).")

    def release(self, value: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """One draw of θ ∈ Θ, or :class:`SamplingError` — an output covered by ε."""
        gram, moment = (np.asarray(v, dtype=float) for v in value)
        sample = kng_linear_sample if self.kind == "kng" else exponential_linear_sample
        return sample(
            gram,
            moment,
            ridge=self.ridge,
            epsilon=self.sampler_epsilon,
            sensitivity=self.sensitivity,
            theta_bound=self.theta_bound,
            rng=resolve_rng(rng),
            max_proposals=self.max_proposals,
        )


@dataclass(frozen=True)
class MCMCDraw:
    """What an MCMC release returns: the one released θ, and the (non-private) diagnostics."""

    theta: np.ndarray
    diagnostics: MCMCDiagnostics


def _check_loss_log_density(
    kind: str, Z: np.ndarray, y: np.ndarray, tau: float, scale: float, norm: str
) -> Callable[[np.ndarray], np.ndarray]:
    """Log-density of KNG (−scale·‖∇ℓₙ‖_K) or the exponential mechanism (−scale·ℓₙ)."""
    order = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    # (d × n) layout: BLAS is slow for (n × d) @ (d × m) with tiny d and m
    Zt = np.ascontiguousarray(Z.T)
    target = y[None, :]

    def kng(points: np.ndarray) -> np.ndarray:
        fitted = np.einsum("md,dn->mn", points, Zt)
        weights = (target < fitted).astype(float) - tau
        gradient = weights @ Z  # m × d
        return np.asarray(-scale * np.linalg.norm(gradient, ord=order, axis=1))

    def exponential(points: np.ndarray) -> np.ndarray:
        residual = target - np.einsum("md,dn->mn", points, Zt)
        loss = residual * (tau - (residual < 0))
        return np.asarray(-scale * loss.sum(axis=1))

    return kng if kind == "kng" else exponential


class _QuantileRelease(Mechanism):
    """KNG or the exponential mechanism for the check loss, sampled by Metropolis.

    ``value`` is (Z, y): the clipped model rows and targets. Charged as
    :class:`~dpledger.events.BoundedRange` (ε) — the guarantee of *exact* sampling; the
    Metropolis output only approximates the density.
    """

    def __init__(
        self,
        kind: str,
        epsilon: float,
        sensitivity: float,
        *,
        tau: float,
        norm: str,
        theta_bound: float,
        dimension: int,
        chains: int,
        burn_in: int,
        samples: int,
    ) -> None:
        self.kind = check_choice("kind", kind, ("kng", "exponential"))
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.tau = float(tau)
        self.norm = check_choice("norm", norm, NORMS)
        self.theta_bound = float(theta_bound)
        self.dimension = int(dimension)
        self.chains = int(chains)
        self.burn_in = int(burn_in)
        self.samples = int(samples)
        warn_floating_point("MCMC sampling", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "tau": self.tau,
            "norm": self.norm,
            "theta_bound": self.theta_bound,
        }

    @property
    def event(self) -> ev.BoundedRange:
        """ε-bounded-range *for exact sampling* (Durfee & Rogers 2019)."""
        return ev.BoundedRange(self.epsilon)

    def validate(self, value: Any) -> None:
        """(Z, y): a finite n×d array and a finite n-vector."""
        Z, y = value
        if np.ndim(Z) != 2 or np.shape(Z)[1] != self.dimension or np.shape(y) != (len(Z),):
            raise InvalidArgumentError(
                f"`value` must be (Z of shape (n, {self.dimension}), y of shape (n,)). Found "
                f"{np.shape(Z)} and {np.shape(y)}."
            )
        if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(y))):
            raise InvalidArgumentError("`value` must be finite (Z and y).")

    def release(self, value: Any, rng: np.random.Generator | None = None) -> MCMCDraw:
        """Run the chains; release the last state of chain 0 (one draw)."""
        Z, y = (np.asarray(v, dtype=float) for v in value)
        scale = self.epsilon / (2.0 * self.sensitivity)
        log_density = _check_loss_log_density(self.kind, Z, y, self.tau, scale, self.norm)
        theta, diagnostics, _ = metropolis(
            log_density,
            dimension=self.dimension,
            radius=self.theta_bound,
            rng=resolve_rng(rng),
            chains=self.chains,
            burn_in=self.burn_in,
            samples=self.samples,
        )
        return MCMCDraw(theta, diagnostics)


# -- estimators ---------------------------------------------------------------------------


class _BoundedThetaRegression(RegressorMixin, PrivateEstimator):  # type: ignore[misc]
    """Shared parts: declared bounds, Θ, model rows (x, 1), coefficients, prediction."""

    x_bound: Any
    y_bound: Any
    theta_bound: Any
    fit_intercept: Any

    _row_norm = "l2"

    def _bounds(self) -> tuple[float, float, float]:
        x_bound = self._bound("x_bound", self.x_bound)
        y_bound = self._bound("y_bound", self.y_bound)
        theta_bound = self._bound("theta_bound", self.theta_bound)
        for name, value in (
            ("x_bound", x_bound),
            ("y_bound", y_bound),
            ("theta_bound", theta_bound),
        ):
            if not _MIN_BOUND <= value <= _MAX_BOUND:
                raise InvalidArgumentError(
                    f"`{name}` must lie in [2**-900, 2**470] ≈ [1.2e-271, 3.0e141]: the "
                    "statistics (XᵀX over up to 2⁵³ rows), the sensitivity and the clipped "
                    "rows must stay normal floats, or whether a fit fails would depend on "
                    f"the data (rescale the data instead). Found {value!r}."
                )
        return x_bound, y_bound, theta_bound

    @staticmethod
    def _check_sensitivity(sensitivity: float, epsilon: float) -> None:
        """Δ and Δ/ε must be positive normal floats, decided before anything is charged."""
        if not (sys.float_info.min <= sensitivity < math.inf):
            raise InvalidArgumentError(
                f"the declared bounds give a sensitivity of {sensitivity!r}, outside the normal "
                "float range: rescale the data (x_bound, y_bound, theta_bound)."
            )
        if not sensitivity / epsilon < math.inf:
            raise InvalidArgumentError(
                f"`epsilon` = {epsilon!r} is too small for the sensitivity {sensitivity!r}: "
                "Δ/ε overflows a float."
            )
        if not sensitivity / epsilon >= sys.float_info.min:
            raise InvalidArgumentError(
                f"`epsilon` = {epsilon!r} is too large for the sensitivity {sensitivity!r}: "
                "Δ/ε is below the normal float range (the noise would vanish)."
            )

    def _model_rows(self, X: np.ndarray, y: np.ndarray | None, norm: str) -> Any:
        x_bound, y_bound, _ = self._bounds()
        Z = _clip_rows(X, x_bound, norm)
        if self.fit_intercept:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
        return Z, (None if y is None else np.clip(y, -y_bound, y_bound))

    def _dimension(self, features: int) -> int:
        return features + (1 if self.fit_intercept else 0)

    def _set_theta(self, theta: np.ndarray, features: int) -> None:
        self.theta_ = np.asarray(theta, dtype=float)
        self.coef_ = self.theta_[:features].copy()
        self.intercept_ = float(self.theta_[features]) if self.fit_intercept else 0.0

    def predict(self, X: Any) -> np.ndarray:
        """Predictions x·coef_ + intercept_ (post-processing of the released θ)."""
        X = self._fitted_input(X, "coef_")
        if _data.is_dask(X):
            return X @ self.coef_ + self.intercept_  # type: ignore[no-any-return]
        return np.asarray(X @ self.coef_ + self.intercept_)


class _LinearRegression(_BoundedThetaRegression):
    """Squared loss Σ(yᵢ − zᵢᵀθ)² + ridge·‖θ‖², sampled exactly from (XᵀX, Xᵀy)."""

    ridge: Any
    max_proposals: Any
    _kind = "kng"

    def _sensitivity(self, b: float, y_bound: float, theta_bound: float, adjacency: str) -> float:
        raise NotImplementedError

    def _ridge(self, epsilon: float, b: float) -> float:
        """``ridge``: "auto" (:func:`auto_ridge`) or a positive finite number."""
        ridge = self.ridge
        if isinstance(ridge, str) and ridge == "auto":
            return auto_ridge(self._kind, epsilon, b)
        if isinstance(ridge, bool) or not isinstance(ridge, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(
                f"`ridge` must be 'auto' or a positive number. Found {ridge!r}."
            )
        if not (math.isfinite(ridge) and ridge > 0):
            raise InvalidArgumentError(
                "`ridge` must be positive and finite: A = XᵀX + ridge·I ⪰ ridge·I keeps the "
                "sampler proper and bounds its failure event's cost whatever the data. Found "
                f"{ridge!r}."
            )
        return float(ridge)

    def fit(self, X: Any, y: Any) -> Any:
        """Validate, compute (XᵀX, Xᵀy) of the clipped rows, charge ε, draw θ ∈ Θ."""
        epsilon, _ = self._budget()
        adjacency = self._adjacency()
        ledger = self._shared_ledger()
        x_bound, y_bound, theta_bound = self._bounds()
        b = row_bound(x_bound, bool(self.fit_intercept))
        ridge = self._ridge(epsilon, b)
        if getattr(self, "norm", "l2") != "l2":
            raise InvalidArgumentError(
                "`norm` must be 'l2' for KNG linear regression (the exact sampler); ℓ₁ and ℓ∞ "
                f"gradients are not implemented. Found {self.norm!r}."
            )
        max_proposals = _check_cap("max_proposals", self.max_proposals, MAX_PROPOSALS)
        sensitivity = self._sensitivity(b, y_bound, theta_bound, adjacency)
        self._check_sensitivity(sensitivity, epsilon)
        X = _data.as_design(X)
        rows = None if _data.is_dask(X) else X.shape[0]
        y = _data.as_target(y, rows)
        stats = _data.sufficient_statistics(
            X,
            y,
            lambda Xb, yb: self._model_rows(Xb, yb, "l2"),
            _data.Moments(lambda Z, yc: (None, yc, None), row_norm=b, b=(-y_bound, y_bound)),
        )
        gram, moment = stats.gram, stats.vector
        features = int(X.shape[1])
        self.n_features_in_ = features
        mechanism = _LinearRelease(
            self._kind,
            epsilon,
            sensitivity,
            theta_bound=theta_bound,
            ridge=ridge,
            dimension=self._dimension(features),
            max_proposals=max_proposals,
            row_bound=b,
            adjacency=adjacency,
            y_bound=y_bound,
        )
        label = (
            f"theta ({'KNG' if self._kind == 'kng' else 'exponential mechanism'}, exact "
            f"sampler, Δ={sensitivity:.6g}, ‖θ‖₂≤{theta_bound:g})"
        )
        (theta,) = self._release_all([Release(label, mechanism, (gram, moment))], ledger)
        self.sensitivity_ = sensitivity
        self.ridge_ = ridge
        self.sampler_epsilon_ = mechanism.sampler_epsilon
        self._set_theta(theta, features)
        return self


class KNGLinearRegression(_LinearRegression):
    """Linear regression by the K-norm gradient mechanism (ℓ₂), sampled exactly on Θ.

    Releases one θ = (coef, intercept) ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−ε‖∇ℓₙ(θ)‖₂/(2Δ₂)), ℓₙ(θ) = Σ(yᵢ − zᵢᵀθ)² + ridge·‖θ‖², zᵢ = (xᵢ, 1) with an
    intercept (Reimherr & Awan 2019). Δ₂ = 2b(br + C) under add/remove and the proven
    bound 4b(br + C) under replace-one (b the row bound, see :func:`row_bound` and
    :func:`squared_gradient_sensitivity`). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε): ε-DP and ε²/8-zCDP. Noise O_p(1/n).

    The ridge (public, > 0) keeps A = XᵀX + ridge·I positive definite whatever the data,
    so the untruncated density is proper and the exact sampler (radius Gamma(d, Δ/ε),
    uniform direction, θ = A⁻¹(Xᵀy + z), rejected outside Θ) applies; it does not change
    the gradient's sensitivity. The number of proposals is Geometric with the public mean
    ``max_proposals``; if none lands in Θ the fit raises :class:`SamplingError` after the
    charge — an outcome whose probability is covered by ε (:func:`sampler_epsilon`).

    Args:
        epsilon: The ε of the release.
        delta: Ignored by the mechanism (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        y_bound: Declared bound on |y| (values beyond are clipped).
        theta_bound: Radius r of Θ (ℓ₂ ball of (coef, intercept)); finite, > 0.
        adjacency: "add_remove" or "replace_one" (declared).
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        ridge: λ > 0 in ℓₙ (public), or "auto" (default): b²/(e^{ε/2} − 1), the
            smallest λ at which the sampler's failure event costs nothing extra
            (:func:`auto_ridge`, :func:`sampler_epsilon`); kept as ``ridge_``.
        norm: The K-norm; "l2" only (the exact sampler).
        max_proposals: Public mean of the Geometric proposal budget (≤ 10⁸).
        ledger: A shared ledger to draw on, or None for a per-fit ledger.
        rng: numpy Generator or int seed (reproducible), or None (OS-seeded).

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import KNGLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(20_000, 2))
        >>> y = np.clip(X @ [0.8, -0.4] + 0.1 + 0.1 * rng.normal(size=20_000), -1, 1)
        >>> model = KNGLinearRegression(epsilon=1.0, x_bound=1.0, y_bound=1.0,
        ...                             theta_bound=2.0, adjacency="add_remove", rng=1)
        >>> bool(np.abs(model.fit(X, y).coef_ - [0.8, -0.4]).max() < 0.05)
        True
        >>> model.releases_
        [BoundedRange(epsilon=1.0)]
    """

    _kind = "kng"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        ridge: float | str = "auto",
        norm: str = "l2",
        max_proposals: int = 10**6,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def _sensitivity(self, b: float, y_bound: float, theta_bound: float, adjacency: str) -> float:
        return squared_gradient_sensitivity(b, y_bound, theta_bound, adjacency)


class ExponentialLinearRegression(_LinearRegression):
    """Linear regression by the exponential mechanism on Θ, sampled exactly.

    Releases one θ ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−εℓₙ(θ)/(2Δ_ℓ)), ℓₙ as in :class:`KNGLinearRegression` and
    Δ_ℓ = (C + br)² under either adjacency (:func:`squared_loss_range`): the Gaussian
    N(A⁻¹Xᵀy, (Δ_ℓ/ε)A⁻¹) truncated to Θ, sampled by rejection from a tilted Gaussian
    centred on Θ's constrained minimiser (:func:`exponential_linear_sample`; McSherry &
    Talwar 2007; the baseline of Reimherr & Awan). A failure of the Geometric proposal
    budget raises :class:`SamplingError`, covered by ε (:func:`sampler_epsilon`; under
    replace-one the density uses ε − ½log(1 + b²/ridge)). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε). Noise O_p(1/√n).

    Args:
        epsilon: The ε of the release.
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        y_bound: Declared bound on |y| (values beyond are clipped).
        theta_bound: Radius r of Θ; finite, > 0.
        adjacency: "add_remove" or "replace_one" (declared).
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        ridge: λ > 0 in ℓₙ (public), or "auto" (default): b²/(e^{ε/10} − 1)
            (:func:`auto_ridge`); kept as ``ridge_``.
        max_proposals: Public mean of the Geometric proposal budget (≤ 10⁸).
        ledger: A shared ledger, or None for a per-fit ledger.
        rng: numpy Generator or int seed, or None.
    """

    _kind = "exponential"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        ridge: float | str = "auto",
        max_proposals: int = 10**6,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def _sensitivity(self, b: float, y_bound: float, theta_bound: float, adjacency: str) -> float:
        return squared_loss_range(b, y_bound, theta_bound)


class _QuantileRegression(_BoundedThetaRegression):
    """Check loss Σρ_τ(yᵢ − zᵢᵀθ), sampled by Metropolis (in-memory rows)."""

    tau: Any
    chains: Any
    burn_in: Any
    samples: Any
    data_size: Any
    diagnostics: Any
    _kind = "kng"

    def _norm(self) -> str:
        return "l2"

    def fit(self, X: Any, y: Any) -> Any:
        """Validate, clip the rows, charge ε, run the chains, release one θ ∈ Θ."""
        epsilon, _ = self._budget()
        adjacency = self._adjacency()
        ledger = self._shared_ledger()
        x_bound, y_bound, theta_bound = self._bounds()
        tau = check_probability("tau", self.tau, low_open=True, high_open=True)
        norm = self._norm()
        chains = _check_cap("chains", self.chains, MAX_CHAINS)
        if chains < 2:
            raise InvalidArgumentError(f"`chains` must be at least 2 (for R̂). Found {chains}.")
        burn_in = _check_cap("burn_in", self.burn_in, MAX_MCMC_STEPS)
        samples = _check_cap("samples", self.samples, MAX_MCMC_STEPS)
        if burn_in + samples > MAX_MCMC_STEPS:
            raise InvalidArgumentError(
                f"`burn_in` + `samples` must be at most {MAX_MCMC_STEPS} steps per chain (no "
                f"hang). Found {burn_in} + {samples}."
            )
        Xd = _data.as_design(X)
        if _data.is_dask(Xd):
            raise InvalidArgumentError(
                f"{type(self).__name__} evaluates the loss at every MCMC step: it takes "
                "in-memory data (numpy/pandas), not dask."
            )
        yd = _data.as_target(y, Xd.shape[0])
        Z, yc = self._model_rows(Xd, yd, norm)
        rows = self._public_rows(adjacency, int(Z.shape[0]))
        work = chains * (burn_in + samples) * (rows or 1) * int(Z.shape[1])
        if work > MAX_MCMC_WORK:
            counted = "`data_size`" if self.data_size is not None else "rows"
            raise InvalidArgumentError(
                f"`chains` × (`burn_in` + `samples`) × {counted} × columns = {chains} × "
                f"{burn_in + samples} × {rows or 1} × {Z.shape[1]} = {work:.3g} exceeds "
                f"MAX_MCMC_WORK = {MAX_MCMC_WORK:.0e} (every step evaluates the loss on every "
                "row: hours of work). Use fewer chains or steps, or a subsample of the rows."
            )
        features = int(Xd.shape[1])
        self.n_features_in_ = features
        if self._kind == "kng":
            b = row_bound(x_bound, bool(self.fit_intercept), norm)
            sensitivity = quantile_gradient_sensitivity(tau, b, adjacency)
        else:
            b = row_bound(x_bound, bool(self.fit_intercept))
            sensitivity = quantile_loss_range(tau, b, y_bound, theta_bound)
        self._check_sensitivity(sensitivity, epsilon)
        mechanism = _QuantileRelease(
            self._kind,
            epsilon,
            sensitivity,
            tau=tau,
            norm=norm,
            theta_bound=theta_bound,
            dimension=Z.shape[1],
            chains=chains,
            burn_in=burn_in,
            samples=samples,
        )
        name = "KNG" if self._kind == "kng" else "exponential mechanism"
        label = f"theta ({name}, τ={tau:g}, Δ={sensitivity:.6g}; {MCMC_LABEL})"
        (draw,) = self._release_all([Release(label, mechanism, (Z, yc))], ledger)
        self.sensitivity_ = sensitivity
        if self.diagnostics:
            self.mcmc_diagnostics_ = draw.diagnostics
            _warn_if_unconverged(draw.diagnostics, type(self).__name__)
        self._set_theta(draw.theta, features)
        return self

    def _public_rows(self, adjacency: str, rows: int) -> int | None:
        """The row count the work cap may read: ``data_size``, or n where it is public.

        Under add/remove n is private: a cap on it would refuse n + 1 rows and release n
        (a release of ε = ∞). So the cap counts the declared ``data_size``, n under
        replace-one (neighbours share it), and no rows at all otherwise.
        """
        if not isinstance(self.diagnostics, (bool, np.bool_)):
            raise InvalidArgumentError(
                f"`diagnostics` must be True or False. Found {self.diagnostics!r}."
            )
        if self.data_size is not None:
            return check_int_at_least("data_size", self.data_size, 1)
        return rows if adjacency == ev.REPLACE_ONE else None


class KNGQuantileRegression(_QuantileRegression):
    """Quantile regression by the K-norm gradient mechanism, sampled by MCMC on Θ.

    Releases one θ = (coef, intercept) ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−ε‖∇ℓₙ(θ)‖_K/(2Δ_K)), ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ), ∇ℓₙ = Σzᵢ(1{yᵢ < zᵢᵀθ} − τ)
    (Reimherr & Awan 2019; the first private quantile regression of its kind).
    Δ_K = max(τ, 1 − τ)·b_K under add/remove, 2·max(τ, 1 − τ)·b_K under replace-one, b_K
    the K-norm row bound (x clipped in the K-norm; :func:`quantile_gradient_sensitivity`:
    the (1 − τ) of the only public code is too small for τ > ½). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε) — **a guarantee of exact sampling only**:
    θ is the last state of chain 0 of random-walk Metropolis (:func:`metropolis`), an
    approximate draw; the ledger label says "MCMC: approximate sampler; ε holds for exact
    sampling only". With ``diagnostics=True``, ``mcmc_diagnostics_`` and the
    :class:`MCMCWarning` are functions of the data outside the guarantee (do not publish
    them); by default neither exists. ``y_bound`` does not enter Δ_K
    (the gradient ignores y's size); y is clipped to it as declared.

    Args:
        epsilon: The ε of the release (for exact sampling).
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖_K (rows beyond are clipped in that norm).
        y_bound: Declared bound on |y| (values beyond are clipped).
        theta_bound: Radius r of Θ (ℓ₂); finite, > 0.
        adjacency: "add_remove" or "replace_one" (declared).
        tau: The quantile level τ ∈ (0, 1).
        norm: The K-norm of the gradient: "l1", "l2" or "linf".
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        chains: Number of Metropolis chains (2 to 64; default 4).
        burn_in: Adaptive burn-in steps per chain (discarded).
        samples: Kept steps per chain (for the diagnostics).
        data_size: Public row count for the work cap ``MAX_MCMC_WORK`` (optional; under
            add/remove without it the cap counts no rows, since n is private).
        diagnostics: Set ``mcmc_diagnostics_`` and warn (:class:`MCMCWarning`) when the
            chains look unconverged. Off by default: both are functions of the data
            outside the guarantee, for the data holder only.
        ledger: A shared ledger, or None for a per-fit ledger.
        rng: numpy Generator or int seed, or None.
    """

    _kind = "kng"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        tau: float = 0.5,
        norm: str = "l2",
        fit_intercept: bool = True,
        chains: int = 4,
        burn_in: int = 2000,
        samples: int = 1000,
        data_size: int | None = None,
        diagnostics: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def _norm(self) -> str:
        return check_choice("norm", self.norm, NORMS)


class ExponentialQuantileRegression(_QuantileRegression):
    """Quantile regression by the exponential mechanism on Θ, sampled by MCMC.

    Releases one θ ∈ Θ with density ∝ exp(−εℓₙ(θ)/(2Δ_ℓ)), ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ),
    Δ_ℓ = max(τ, 1 − τ)(C + b₂r) under either adjacency (:func:`quantile_loss_range`).
    Charged as :class:`~dpledger.events.BoundedRange` (ε) for exact sampling; sampled
    approximately by :func:`metropolis` (see :class:`KNGQuantileRegression` for what that
    means). Rows are clipped in ℓ₂.

    Args:
        epsilon: The ε of the release (for exact sampling).
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        y_bound: Declared bound on |y| (values beyond are clipped).
        theta_bound: Radius r of Θ (ℓ₂); finite, > 0.
        adjacency: "add_remove" or "replace_one" (declared).
        tau: The quantile level τ ∈ (0, 1).
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        chains: Number of Metropolis chains (2 to 64; default 4).
        burn_in: Adaptive burn-in steps per chain (discarded).
        samples: Kept steps per chain (for the diagnostics).
        data_size: Public row count for the work cap ``MAX_MCMC_WORK`` (optional; under
            add/remove without it the cap counts no rows, since n is private).
        diagnostics: Set ``mcmc_diagnostics_`` and warn (:class:`MCMCWarning`) when the
            chains look unconverged. Off by default: both are functions of the data
            outside the guarantee, for the data holder only.
        ledger: A shared ledger, or None for a per-fit ledger.
        rng: numpy Generator or int seed, or None.
    """

    _kind = "exponential"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        tau: float = 0.5,
        fit_intercept: bool = True,
        chains: int = 4,
        burn_in: int = 2000,
        samples: int = 1000,
        data_size: int | None = None,
        diagnostics: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


__dir__ = namespace(__all__)
