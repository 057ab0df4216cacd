"""KNG and the exponential mechanism for the squared loss on a ball Θ, sampled exactly.

Both release one θ ∈ Θ = {‖θ‖₂ ≤ r} for ℓₙ(θ) = θᵀAθ − 2bᵀθ + const, A = XᵀX + ridge·I,
b = Xᵀy: KNG (Reimherr & Awan 2019) with density ∝ exp(−(ε/Δ)‖Aθ − b‖₂), the exponential
mechanism (McSherry & Talwar 2007) with density ∝ exp(−εℓₙ(θ)/(2Δ_ℓ)). The samplers are
exact rejection samplers of the density truncated to Θ (:func:`kng_linear_sample`,
:func:`exponential_linear_sample`), with a Geometric number of proposals of public mean
``max_proposals`` (:func:`_first_inside`): their failure, :class:`SamplingError` after the
charge, is part of the release, and :func:`sampler_epsilon` proves the whole output
ε-bounded-range (Durfee & Rogers 2019) when the density is sampled at its ε_d. The
mechanism (``LinearRelease``) is what :class:`~dpledger.algorithms.KNGLinearRegression`
and :class:`~dpledger.algorithms.ExponentialLinearRegression` charge and release; the
sensitivities Δ, Δ_ℓ of the declared bounds are theirs (:mod:`dpledger.algorithms.kng`).
The derivations are in docs/algorithms.md ("KNG and the exponential mechanism").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._solve import step_up
from dpledger._validation import check_choice, check_positive
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError, SamplingError
from dpledger.mechanisms.base import Mechanism, warn_floating_point

__all__ = [
    "MAX_PROPOSALS",
    "LinearRelease",
    "SamplingError",
    "auto_ridge",
    "exponential_linear_sample",
    "kng_linear_sample",
    "sampler_epsilon",
]


#: The largest rejection-sampling cap accepted (proposals per release).
MAX_PROPOSALS = 10**8


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
    # λ = ‖c‖/r has ‖t‖ < r in exact arithmetic, and is finite (the caller's public scale
    # check); rounding may leave it outside: step up from it by itself, i.e. through
    # ‖c‖/r·2ᵏ (x + x = 2x exactly), to the first λ with ‖t‖ ≤ r
    first = k * math.sqrt(float(np.sum((c / k) ** 2))) / radius
    lo = 0.0
    hi = step_up(lambda lam: not outside(lam), first, first_step=first, what="λ")
    # bisection to adjacent floats, keeping the upper end on the safe side (‖t‖ ≤ r):
    # _solve's largest_holding returns the other end and stops at a relative tolerance
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


# -- the mechanism ------------------------------------------------------------------------


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


class LinearRelease(Mechanism):
    """KNG (ℓ₂) or the exponential mechanism for the squared loss, sampled exactly.

    ``value`` is (XᵀX, Xᵀy) of the clipped model rows; the public ridge is added here.
    The event is :class:`~dpledger.events.BoundedRange` (ε) for the whole release —
    the drawn θ *or* the sampler's failure: the density is sampled at the smaller
    ``sampler_epsilon`` of :func:`sampler_epsilon`, which makes the failure event's
    cost part of ε.
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


__dir__ = namespace(__all__)
