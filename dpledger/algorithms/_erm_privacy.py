"""The privacy arithmetic of objective perturbation: the noise plan and the ε it gives.

Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2; CMS below)
releases θ̂ = argmin Σℓ_z(θ) + (N(λ + Δ)/2)‖θ‖² + bᵀθ for a generalised linear loss
with |φ′| ≤ a, 0 ≤ φ″ ≤ c and rows ‖x‖ ≤ R (L = a·R, k = 2 under replace-one, 1 under
add/remove). Its privacy loss is a Jacobian term plus a noise term (the proof of CMS
Thm 9; in full, with the corrections below, in docs/erm.md):

* ε_J = log(1 + c·R²/(N(λ + Δ))) (:func:`_jacobian`; c·**R²**, the matrix determinant
  lemma — CMS's 2·log(1 + c/(nλ)) is for R = 1);
* ε′ for a pure K-norm b of density ∝ exp(−ε′‖b‖_K/(k·L_K)) (Hardt & Talwar 2010):
  ℓ₂ (‖b‖ ~ Gamma(d, kL/ε′)) or ℓ₁ (i.i.d. Laplace(kL₁/ε′) coordinates, L₁ = a·R₁);
* or, for b ~ N(0, σ²I) (after Kifer, Smith & Thakurta 2012), ε_G at δ =
  2Φ̄((ε_G − μ²/2)/μ) (add/remove) or 4Φ̄((ε_G − 2μ²)/(2μ)) (replace-one), μ = L/σ
  (:func:`_gaussian_delta`; with the row weights under add/remove,
  :func:`_weighted_gaussian_delta`).

For the logistic loss the two terms are bounded jointly (:func:`_logistic_joint`).
:func:`objective_perturbation_plan` splits a target (ε, δ) between them (CMS's extra
ridge Δ when ε_J would exceed ``jacobian_share``·ε); :func:`objective_perturbation_epsilon`
states what a given noise really gives. Every solved quantity is rounded, or searched
(:mod:`dpledger._solve`), towards more noise and a larger ε. The noise is floating point
(there is no exact sampler of these continuous distributions): Mironov's 2012 caveat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpledger._numerics import div_up, round_up, sum_up
from dpledger._solve import largest_holding, smallest_satisfying
from dpledger._validation import check_choice, check_positive, check_probability
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms.base import Mechanism, as_vector, warn_floating_point

__all__ = ["PerturbationPlan", "objective_perturbation_epsilon", "objective_perturbation_plan"]

NOISES = ("laplace", "l1_laplace", "gaussian")
#: The noises of a pure ε-DP b (K-norm mechanisms: ℓ₂ and ℓ₁ balls).
PURE_NOISES = ("laplace", "l1_laplace")
LOSS_BOUNDS = ("generic", "logistic")

#: Safety factor on every solved noise parameter (more noise, never less).
_MARGIN = 1e-12


@dataclass(frozen=True)
class PerturbationPlan:
    """The noise of one objective-perturbation fit and what it costs.

    Attributes:
        epsilon: The ε charged: ε_noise + ε_jacobian (rounded up).
        delta: The δ charged (0 for the pure-ε noises).
        epsilon_noise: ε′ of the noise term (ε_G for Gaussian noise).
        epsilon_jacobian: ε_J = log(1 + c·R²/(N(λ + Δ))).
        extra_regularization: Δ, added to λ.
        noise: "laplace" (‖b‖ ~ Gamma(d, scale), uniform direction), "l1_laplace" (i.i.d.
            Laplace(scale) coordinates) or "gaussian" (b ~ N(0, scale²·I)).
        scale: The Gamma scale of ‖b‖, the Laplace scale per coordinate, or σ.
    """

    epsilon: float
    delta: float
    epsilon_noise: float
    epsilon_jacobian: float
    extra_regularization: float
    noise: str
    scale: float


def _k(adjacency: str) -> int:
    return 2 if adjacency == ev.REPLACE_ONE else 1


def _jacobian(curvature: float, size: float, ridge: float) -> float:
    """ε_J = log(1 + c·R²/(N·ridge)), rounded up."""
    return round_up(math.log1p(div_up(curvature, size * ridge)))


def _logistic_joint(noise_epsilon: float, area: float, k: int) -> float:
    """The pure ε of objective perturbation for the logistic loss, by the joint bound.

    For the logistic loss φ″ = p(1 − p) where p = |φ′| ∈ [0, 1] at the same point, so the
    row z's gradient (noise term, ≤ p·R) and its curvature (Jacobian term) cannot both be
    at their maximum. With e = ε′/k and A = R²/(N(λ + Δ)), the privacy loss at any output
    is at most (k − 1)·e + max_p [e·p + log(1 + p(1 − p)·A)] — the changed row z′
    contributes its gradient (≤ R) to the noise term and a factor ≤ 1 to the Jacobian term
    (replace-one); under add/remove the added row alone, k = 1. The maximand is concave in
    p; at the computed stationary point p₀ (clamped to [0, 1]) concavity bounds its maximum
    by g(p₀) + g′(p₀)·(1 − p₀) if g′(p₀) > 0, else g(p₀) + |g′(p₀)|·p₀; then rounded up.
    """
    e, a = noise_epsilon / k, area

    def g(p: float) -> float:
        return e * p + math.log1p(p * (1 - p) * a)

    def slope(p: float) -> float:
        return e + a * (1 - 2 * p) / (1 + p * (1 - p) * a)

    # e·A·p² + (2A − e·A)·p − (e + A) = 0 (the stationary point), stably
    qa, qb, qc = e * a, 2 * a - e * a, -(e + a)
    if qa > 0:
        disc = math.sqrt(qb * qb - 4 * qa * qc)
        root = (-qb + disc) / (2 * qa) if qb <= 0 else (-2 * qc) / (qb + disc)
    else:
        root = 1.0
    p0 = min(1.0, max(0.0, root))
    rise = slope(p0)  # concavity: g ≤ g(p₀) + g′(p₀)(p − p₀) on the side g′ points to
    top = g(p0) + (rise * (1 - p0) if rise > 0 else -rise * p0)
    return round_up(sum_up(round_up((k - 1) * e), round_up(top * (1 + 1e-12))))


def _joint(noise_epsilon: float, curvature: float, size: float, ridge: float, k: int) -> float:
    """:func:`_logistic_joint` with A = R²/(N·ridge) = 4·c·R²/(N·ridge), rounded up."""
    return _logistic_joint(noise_epsilon, div_up(4 * curvature, size * ridge), k)


def _gaussian_delta(epsilon_g: float, mu: float, adjacency: str) -> float:
    """The tail bound on δ of the Gaussian noise term (module docstring), rounded up."""
    if adjacency == ev.REPLACE_ONE:
        t = (epsilon_g - 2 * mu * mu) / (2 * mu)
        return min(1.0, round_up(4 * float(stats.norm.sf(t * (1 - _MARGIN)))))
    t = (epsilon_g - mu * mu / 2) / mu
    return min(1.0, round_up(2 * float(stats.norm.sf(t * (1 - _MARGIN)))))


def _log_excess(value: float, target: float) -> float:
    """log(value/target) for a root finder, its sign that of value − target exactly.

    Two δ's a few ulps apart can have equal logarithms; "equal" must not pass for "within
    the target", so the sign comes from comparing the δ's themselves.
    """
    gap = (math.log(value) if value > 0 else -math.inf) - math.log(target)
    return max(gap, 5e-324) if value > target else min(gap, 0.0)


def _weighted_gaussian_delta(
    epsilon_g: float, mu: float, factor: float, spread: float, dimension: int
) -> float:
    """δ of a Gaussian b under add/remove with the row weights (issue 31, F5), rounded up.

    μ = L/σ (L = a·R, one row's gradient), F = ``factor``, s = ``spread`` ≥ n·(v(n) −
    v(n + 1)) for every n. Under D (n rows, weight v; D′ adds z, weight v′ = v(n + 1))
    the noise term of the privacy loss at the output θ̂ is (2bᵀΔ + ‖Δ‖²)/(2σ²), with b =
    the noise drawn (exactly N(0, σ²I)) and Δ = (v − v′)·Σ_D φ′ᵢ(θ̂)xᵢ − v′φ′_z(θ̂)x_z.
    The second part has the fixed direction x_z: |bᵀ(v′φ′_z x_z)| ≤ v′·L·σ|Z|, Z =
    bᵀx_z/(‖x_z‖σ) standard normal. The first part's direction moves with θ̂, hence
    with b (the argument for a fixed row does not apply to it; there is no dimension-free
    bound for a shift that adapts to b), so only |bᵀΔ₁| ≤ ‖b‖·(v − v′)·n·L = s·L·σχ
    with χ = ‖b‖/σ ~ χ_d. With v′ + n(v − v′) ≤ F, n(v − v′) ≤ s and |Z| ≤ χ, the loss
    is at most μ((F − s)|Z| + sχ) + (Fμ)²/2 (the worst split), in either direction (the
    reverse is the same argument at D′'s output). So δ ≤ P(A|Z| + B·√(Z² + Q) > t),
    A = (F − s)μ, B = sμ, t = ε_G − (Fμ)²/2, Q ~ χ²_{d−1} independent of Z. The event
    grows with |Z|, so an upper Riemann sum over bins [z_k, z_{k+1}) of |Z| bounds it:

        δ ≤ Σ_k P(|Z| ∈ [z_k, z_{k+1}))·P(Q > ((t − A·z_{k+1})/B)² − z_{k+1}²) + P(|Z| ≥ z_K),

    with 2048 bins up to min(t/A, 40), rounded up. Under replace-one neighbours share n,
    Δ's first part is 0, and :func:`_gaussian_delta` applies.
    """
    t = (epsilon_g - (factor * mu) ** 2 / 2) * (1 - _MARGIN)
    if not t > 0:
        return 1.0
    fixed, moving = (factor - spread) * mu, spread * mu
    top = min(t / fixed, 40.0)
    edges = np.linspace(0.0, top, 2049)
    mass = 2 * (stats.norm.sf(edges[:-1]) - stats.norm.sf(edges[1:]))  # P(|Z| in a bin)
    upper = edges[1:]
    room = np.maximum(t - fixed * upper, 0.0)  # t − A·z_{k+1} ≥ 0 up to rounding
    threshold = (room / moving) ** 2 - upper * upper
    if dimension > 1:
        rest = stats.chi2.sf(np.maximum(threshold, 0.0), dimension - 1)
    else:  # Q = 0: χ = |Z|
        rest = np.zeros_like(threshold)
    rest = np.where((threshold > 0) & (room > 0), rest, 1.0)
    total = float(np.sum(np.maximum(mass, 0.0) * rest)) + 2 * float(stats.norm.sf(top))
    return min(1.0, round_up(total * (1 + 1e-9) + 1e-300))


def _weighted_gaussian_sigma(
    plan: PerturbationPlan, lipschitz: float, factor: float, spread: float, dimension: int
) -> float:
    """The smallest σ ≥ the plan's whose :func:`_weighted_gaussian_delta` is ≤ its δ.

    δ falls as σ grows: bracketed by doubling, then
    :func:`~dpledger._solve.smallest_satisfying` on log δ(σ) − log δ, whose answer is a σ
    at which the bound was evaluated within δ.
    """

    def excess(sigma: float) -> float:  # ≤ 0: σ meets the δ charged
        mu = lipschitz / sigma
        bound = _weighted_gaussian_delta(plan.epsilon_noise, mu, factor, spread, dimension)
        return _log_excess(bound, plan.delta)

    low = high = plan.scale
    while excess(high) > 0:
        low, high = high, high * 2
        if not math.isfinite(high):  # pragma: no cover - the plan's σ is finite
            raise InvalidArgumentError("no finite Gaussian noise meets the row-weight bound.")
    return smallest_satisfying(excess, low, high, what="sigma")


def _finite_positive(name: str, value: Any) -> float:
    """``value`` as a float, positive and finite (the check of every real parameter here)."""
    return check_positive(name, value)  # "positive and finite": refuses ∞ too


def _check_setting(
    lipschitz: Any, curvature: Any, size: Any, regularization: Any, adjacency: Any
) -> tuple[float, float, float, float, str]:
    return (
        _finite_positive("lipschitz", lipschitz),
        _finite_positive("curvature", curvature),
        _finite_positive("size", size),
        _finite_positive("regularization", regularization),
        check_choice("adjacency", adjacency, ev.ADJACENCIES),
    )


def objective_perturbation_epsilon(
    *,
    noise: str,
    scale: float,
    lipschitz: float,
    curvature: float,
    size: float,
    regularization: float,
    adjacency: str,
    delta: float = 0.0,
    loss: str = "generic",
    l1_lipschitz: float | None = None,
) -> float:
    """The ε objective perturbation with this noise really gives (at ``delta`` if Gaussian).

    Args:
        noise: "laplace" (‖b‖ ~ Gamma(d, scale)), "l1_laplace" (i.i.d. Laplace(scale)
            coordinates) or "gaussian" (σ = scale).
        scale: The Gamma scale of ‖b‖, the Laplace scale per coordinate, or σ.
        lipschitz: L = a·R, the bound on one row's gradient (ℓ₂).
        curvature: c·R², the bound on one row's Hessian.
        size: The public N.
        regularization: λ + Δ (the objective's ridge is N·(λ + Δ)).
        adjacency: "add_remove" or "replace_one".
        delta: For Gaussian noise, the δ at which to state ε.
        loss: "generic" (ε′ + ε_J) or "logistic" (the joint bound of
            :func:`_logistic_joint`, for the pure-ε noises; needs c·R² = L²/4).
        l1_lipschitz: L₁ = a·R₁, the bound on one row's gradient in ℓ₁ norm (rows with
            ‖x‖₁ ≤ R₁); needed by, and only by, ``noise="l1_laplace"``.
    """
    check_choice("noise", noise, NOISES)
    loss = check_choice("loss", loss, LOSS_BOUNDS)
    lipschitz, curvature, size, regularization, adjacency = _check_setting(
        lipschitz, curvature, size, regularization, adjacency
    )
    noise_bound = _noise_bound(noise, lipschitz, l1_lipschitz)
    scale = check_positive("scale", scale, allow_inf=True)
    k = _k(adjacency)
    _check_sensitivity(k, lipschitz, "lipschitz")
    _check_sensitivity(k, noise_bound, "l1_lipschitz")
    jac = _jacobian(curvature, size, regularization)
    if math.isinf(scale):  # no noise term: the Jacobian term alone
        return jac
    if noise == "gaussian":
        delta = check_probability("delta", delta, low_open=True, high_open=True)
    if noise in PURE_NOISES:
        noise_eps = div_up(k * noise_bound, scale)
        if loss == "logistic":
            _check_logistic(lipschitz, curvature)
            return min(
                sum_up(noise_eps, jac), _joint(noise_eps, curvature, size, regularization, k)
            )
        return sum_up(noise_eps, jac)
    mu = lipschitz / scale

    def excess(epsilon_g: float) -> float:  # ≤ 0: the tail bound at ε_G is within δ
        return _log_excess(_gaussian_delta(epsilon_g, mu, adjacency), delta)

    high = 1.0
    while excess(high) > 0:
        high *= 2
        if high > 1e12:
            return math.inf
    return sum_up(smallest_satisfying(excess, 0.0, high, what="epsilon"), jac)


def _check_sensitivity(k: int, bound: float, name: str) -> None:
    """k·bound (the noise's sensitivity) must be a finite float."""
    if not math.isfinite(k * bound):
        raise InvalidArgumentError(
            f"`{name}` = {bound!r} times {k} (the sensitivity of b) overflows floating "
            "point: rescale the rows or the loss."
        )


def _noise_bound(noise: str, lipschitz: float, l1_lipschitz: Any) -> float:
    """The bound on one row's gradient in the noise's norm: L (ℓ₂) or L₁ (ℓ₁ noise)."""
    if noise != "l1_laplace":
        if l1_lipschitz is not None:
            raise InvalidArgumentError(
                f"`l1_lipschitz` is for noise='l1_laplace' only (noise={noise!r}). "
                f"Found {l1_lipschitz!r}."
            )
        return lipschitz
    if l1_lipschitz is None:
        raise InvalidArgumentError(
            "noise='l1_laplace' needs `l1_lipschitz`, the bound on one row's gradient in "
            "ℓ₁ norm (a·R₁ for rows with ‖x‖₁ ≤ R₁). Found None."
        )
    return _finite_positive("l1_lipschitz", l1_lipschitz)


def _check_logistic(lipschitz: float, curvature: float) -> None:
    """The joint bound is for φ = log(1 + e^{−yt}) itself: L = R and c·R² = R²/4."""
    if not abs(4 * curvature - lipschitz * lipschitz) <= 1e-9 * lipschitz * lipschitz:
        raise InvalidArgumentError(
            "loss='logistic' is the logistic loss itself (a = 1, c = 1/4): `curvature` must "
            f"be lipschitz²/4. Found lipschitz={lipschitz!r}, curvature={curvature!r}."
        )


def _check_ridge(ridge: float, share: float, epsilon: float) -> None:
    if not ridge < 1e300:
        raise InvalidArgumentError(
            f"`jacobian_share` = {share!r} of epsilon = {epsilon!r} needs an extra ridge "
            "beyond floating point: choose a larger share or epsilon."
        )


def _laplace_noise(gradient_bound: float, budget: float, epsilon: float) -> tuple[float, float]:
    """(scale, the ε′ it gives) for a pure-ε K-norm noise within ``budget``.

    The Gamma scale of ‖b‖ (ℓ₂) or the per-coordinate Laplace scale (ℓ₁): kL/ε′ in the
    noise's norm, rounded up and the ε′ it really gives is recomputed from it (also
    rounded up), so the ε′ charged is never below the noise's; ``gradient_bound`` is kL
    and ``epsilon`` the fit's ε, named in the error when no finite scale exists.
    """
    scale = div_up(gradient_bound, budget)
    if not math.isfinite(scale):
        raise InvalidArgumentError(
            f"no finite noise meets epsilon={epsilon!r}: the budget is below "
            "floating-point resolution."
        )
    return scale, div_up(gradient_bound, scale)


def _joint_plan(
    epsilon: float,
    lipschitz: float,
    cr2: float,
    n: float,
    lam: float,
    k: int,
    share: float,
    noise: str = "laplace",
) -> PerturbationPlan:
    """Calibrated pure-ε objective perturbation for the logistic loss (joint bound).

    ``lipschitz`` is the row gradient's bound in the noise's norm (L or L₁): only the
    noise's scale depends on it. The joint bound holds for either norm: a row with
    |φ′| = p moves b by p·‖x‖_K ≤ p·R_K, a fraction p of the noise's sensitivity.
    """

    def cost(noise_eps: float, ridge: float) -> float:
        return _joint(noise_eps, cr2, n, ridge, k)

    def most_noise_budget(ridge: float) -> float:  # the largest ε′ seen with cost ≤ ε
        if cost(epsilon, ridge) <= epsilon:
            return epsilon
        # where the Jacobian costs nothing (A ≤ e), cost(ε) exceeds ε only by its
        # rounding up: ε(1 − 10⁻¹²) then holds, found in one evaluation instead of the
        # search's ~50 (0.5 ms of a fit); at most 10⁻¹² less ε′ than the search's answer,
        # so more noise, never less (and the final cost is checked either way)
        if cost(epsilon * (1 - 1e-12), ridge) <= epsilon:
            return epsilon * (1 - 1e-12)
        # 0 if even ε′ = 0 costs more than ε (the Jacobian alone): the ridge is then
        # raised below, and the final cost is checked either way
        return largest_holding(lambda e: cost(e, ridge) <= epsilon, 0.0, epsilon, rtol=1e-15)

    extra = 0.0
    prime = most_noise_budget(lam)
    if epsilon - prime > share * epsilon:  # the Jacobian takes more than its share
        wanted = (1 - share) * epsilon
        low, high = lam, 2 * lam  # bracket the smallest ridge with cost(wanted, ridge) ≤ ε
        while cost(wanted, high) > epsilon:
            low, high = high, 2 * high
            _check_ridge(high, share, epsilon)
        # cost − ε: a float difference has exactly the sign of the comparison
        ridge = smallest_satisfying(lambda r: cost(wanted, r) - epsilon, low, high, what="ridge")
        extra = ridge - lam
        prime = most_noise_budget(ridge)
    prime *= 1 - 4 * _MARGIN
    if not prime > 0:  # pragma: no cover - at least (1 − share)·ε is left
        raise InvalidArgumentError(f"no budget left for the noise at epsilon={epsilon!r}.")
    scale, noise_eps = _laplace_noise(k * lipschitz, prime, epsilon)
    total = cost(noise_eps, lam + extra)
    if total > epsilon:  # pragma: no cover - the searches keep the feasible side
        raise InvalidArgumentError("internal error: the joint bound missed ε.")
    return PerturbationPlan(total, 0.0, noise_eps, total - noise_eps, extra, noise, scale)


def objective_perturbation_plan(
    *,
    epsilon: float,
    delta: float = 0.0,
    noise: str = "laplace",
    lipschitz: float,
    curvature: float,
    size: float,
    regularization: float,
    adjacency: str,
    variant: str = "calibrated",
    loss: str = "generic",
    jacobian_share: float = 0.5,
    l1_lipschitz: float | None = None,
) -> PerturbationPlan:
    """The noise and extra ridge of objective perturbation for a target (ε, δ).

    ``calibrated``: ε_J = log(1 + c·R²/(Nλ)); if it exceeds s·ε (s = ``jacobian_share``,
    CMS's 1/2 by default), the extra ridge Δ = c·R²/(N(e^{s·ε} − 1)) − λ brings it to s·ε.
    The rest, ε − ε_J, goes to the noise: ℓ₂-Laplace with Gamma scale kL/(ε − ε_J),
    ℓ₁-Laplace with per-coordinate scale kL₁/(ε − ε_J) (``l1_lipschitz`` = L₁), or
    the smallest σ whose tail bound meets δ. With ``loss="logistic"`` and a pure-ε
    noise the joint bound (:func:`_logistic_joint`) replaces ε′ + ε_J: the largest ε′
    whose joint cost is ε, and if the Jacobian's part ε − ε′ exceeds s·ε, the smallest
    extra ridge that leaves ε′ = (1 − s)·ε. ``published`` (ℓ₂-Laplace, replace-one
    constants): CMS 2011 Alg. 2 with c·R² —
    ε′ = ε − log(1 + 2cR²/(nλ) + (cR²/(nλ))²), the Δ branch at ε′ ≤ 0 with e^{ε/4},
    scale 2L/ε′ — charged at the ε it really gives (never more than the nominal ε).
    """
    check_choice("noise", noise, NOISES)
    check_choice("variant", variant, ("calibrated", "published"))
    loss = check_choice("loss", loss, LOSS_BOUNDS)
    epsilon = _finite_positive("epsilon", epsilon)
    share = check_probability("jacobian_share", jacobian_share, low_open=True, high_open=True)
    lipschitz, curvature, size, regularization, adjacency = _check_setting(
        lipschitz, curvature, size, regularization, adjacency
    )
    noise_bound = _noise_bound(noise, lipschitz, l1_lipschitz)
    if noise == "gaussian":
        delta = check_probability("delta", delta, low_open=True, high_open=True)
    else:
        delta = check_probability("delta", delta)
    k = _k(adjacency)
    _check_sensitivity(k, lipschitz, "lipschitz")
    _check_sensitivity(k, noise_bound, "l1_lipschitz")
    cr2, n, lam = curvature, size, regularization
    if variant == "published":
        if noise != "laplace":
            raise InvalidArgumentError(
                "objective perturbation has published constants for ℓ₂-Laplace noise only "
                f"(CMS 2011); use variant='calibrated' with noise={noise!r}."
            )
        ratio = cr2 / (n * lam)
        prime = epsilon - math.log1p(2 * ratio + ratio * ratio)
        extra = 0.0
        if prime <= 0:
            extra = cr2 / (n * math.expm1(epsilon / 4)) - lam
            prime = epsilon / 2
        scale = 2 * lipschitz / prime
        noise_eps = div_up(k * lipschitz, scale)
        total = objective_perturbation_epsilon(
            noise=noise,
            scale=scale,
            lipschitz=lipschitz,
            curvature=cr2,
            size=n,
            regularization=lam + extra,
            adjacency=adjacency,
            loss=loss,
        )
        return PerturbationPlan(total, 0.0, noise_eps, total - noise_eps, extra, noise, scale)
    if noise in PURE_NOISES and loss == "logistic":
        _check_logistic(lipschitz, cr2)
        return _joint_plan(epsilon, noise_bound, cr2, n, lam, k, share, noise)
    extra = 0.0
    jac = _jacobian(cr2, n, lam)
    if jac > share * epsilon:
        room = math.expm1(share * epsilon)
        extra = cr2 / (n * room) * (1 + _MARGIN) - lam if room > 0 else math.inf
        _check_ridge(lam + extra, share, epsilon)
        jac = _jacobian(cr2, n, lam + extra)
    budget = (epsilon - jac) * (1 - 4 * _MARGIN)
    if not budget > 0:  # pragma: no cover - jac <= ε/2 (rounded) leaves half of ε
        raise InvalidArgumentError(f"no budget left for the noise at epsilon={epsilon!r}.")
    if noise in PURE_NOISES:
        scale, noise_eps = _laplace_noise(k * noise_bound, budget, epsilon)
        return PerturbationPlan(sum_up(noise_eps, jac), 0.0, noise_eps, jac, extra, noise, scale)
    tail = delta / (4 if k == 2 else 2)
    z = float(stats.norm.isf(tail)) * (1 + _MARGIN) + _MARGIN
    root = 2 * budget / (z + math.sqrt(z * z + 2 * budget))  # −z + √(z² + 2ε_G), stably
    mu = (root / 2 if k == 2 else root) * (1 - _MARGIN)
    sigma = lipschitz / mu if mu > 0 else math.inf
    if not math.isfinite(sigma):
        raise InvalidArgumentError(
            f"no finite noise meets epsilon={epsilon!r}, delta={delta!r}: the budget is "
            "below floating-point resolution."
        )
    if _gaussian_delta(budget, lipschitz / sigma, adjacency) > delta:  # pragma: no cover
        raise InvalidArgumentError("internal error: the Gaussian tail bound missed δ.")
    return PerturbationPlan(sum_up(budget, jac), delta, budget, jac, extra, noise, sigma)


#: The clip of ℓ₁-Laplace b, in units of its scale: |bᵢ| ≤ (log d + 58)·scale.
_L1_TAIL = 58.0


def _l1_limit(scale: float, dimension: int) -> float:
    """T·scale, the clip of every coordinate of an ℓ₁-Laplace b: T = log d + 58.

    P(|bᵢ| > T·scale) = e^{−T} for a Laplace(scale) coordinate, so the clip changes an
    ideal (real-number) draw with probability at most d·e^{−T} = e^{−58} < 10⁻²⁵: the
    probability the unclipped bound 64·scale·d was allowed to fail with (the solver's
    floor assumed it, and beyond it certification was not proved). The clip makes the
    bound certain: ‖b‖₂ ≤ √d·T·scale for every draw (:func:`_perturbation_radius`).
    numpy's sampler never reaches it: ``Generator.laplace`` is the inverse CDF of a
    multiple of 2⁻⁵³ in (0, 1) (U = 0 is redrawn), so |bᵢ| ≤ scale·log 2⁵² ≈ 36.04·scale
    < 58·scale for every bit generator numpy ships — the clip is the identity on every
    draw it can produce, and the released noise is unchanged.
    """
    return round_up((math.log(max(dimension, 1)) + _L1_TAIL) * scale * (1 + 1e-12))


def _draw_l1(generator: Any, scale: float, dimension: int) -> np.ndarray:
    """i.i.d. Laplace(scale) coordinates, each clipped to ±:func:`_l1_limit`."""
    limit = _l1_limit(scale, dimension)
    draws = np.asarray(generator.laplace(0.0, scale, dimension), dtype=float)
    return np.asarray(np.clip(draws, -limit, limit))


def _perturbation_radius(plan: PerturbationPlan, dimension: int) -> float:
    """R_b ≥ ‖b‖₂: the bound on the perturbation the solver's floor and step count assume.

    ℓ₁-Laplace: √d·:func:`_l1_limit` — certain, since every coordinate is clipped there
    (so the solver certifies every draw). ℓ₂-Laplace (‖b‖ ~ Gamma(d, scale)) and Gaussian
    (‖b‖ ~ σχ_d): 64·scale·d and 64·σ·√d, exceeded with probability below 10⁻²⁵; beyond,
    certification is not proved and the fit may raise after its charge (docs/erm.md).

    The ℓ₁ radius replaced 64·scale·d (valid for ℓ₁ too: ‖b‖₂ ≤ ‖b‖₁ ~ Gamma(d, scale)),
    64√d/(58 + log d) times smaller — 10.6× at d = 108 — and the floor, and so the
    noise Z on the solver's error, shrink almost in proportion (issue 33: on Adult at
    ε = 4, λ = 3e-5, tol 1.7e-8 → 1.9e-9, ‖Z‖ ≈ 3 → 0.35 against ‖θ‖ ≈ 34).
    """
    if plan.noise == "l1_laplace":
        return round_up(math.sqrt(dimension) * _l1_limit(plan.scale, dimension) * (1 + 1e-12))
    root = math.sqrt(dimension) if plan.noise == "gaussian" else dimension
    return 64 * plan.scale * root


class _ObjectiveNoise(Mechanism):
    """Noise drawn by a plan: objective perturbation's b, or the Gaussian Z of its shift.

    For b the event is the exact minimiser's guarantee; for the Gaussian noise Z on the
    approximate minimiser, the analytic Gaussian's (ε₃, δ₃).

    ``release`` adds b to ``value`` (the zero vector): ℓ₂-Laplace (‖b‖ ~ Gamma(d, scale),
    uniform direction), ℓ₁-Laplace (i.i.d. Laplace(0, scale) coordinates: the K-norm
    mechanism of the ℓ₁ ball, each clipped at :func:`_l1_limit`, which no draw of numpy's
    sampler reaches) or Gaussian N(0, scale²·I).
    """

    def __init__(self, plan: PerturbationPlan, dimension: int) -> None:
        self.plan = plan
        self.dimension = dimension
        warn_floating_point("objective perturbation", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {"plan": self.plan, "dimension": self.dimension}

    @property
    def event(self) -> ev.Event:
        """ε-DP (ℓ₂- or ℓ₁-Laplace) or (ε, δ)-DP (Gaussian): see the module docstring."""
        if self.plan.noise in PURE_NOISES:
            return ev.PureDP(self.plan.epsilon)
        return ev.ApproxDP(self.plan.epsilon, self.plan.delta)

    @property
    def sigma(self) -> float:
        return self.plan.scale

    def validate(self, value: Any) -> None:
        as_vector(value, self.dimension)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        from dpledger._rng import resolve_rng

        generator = resolve_rng(rng)
        d = self.dimension
        if self.plan.noise == "gaussian":
            noise = generator.normal(0.0, self.plan.scale, d)
        elif self.plan.noise == "l1_laplace":  # clipped: ‖b‖₂ ≤ √d·T·scale, always
            noise = _draw_l1(generator, self.plan.scale, d)
        else:
            direction = generator.standard_normal(d)
            direction /= np.linalg.norm(direction)
            noise = generator.gamma(d, self.plan.scale) * direction
        return as_vector(value, d) + noise
