"""The discrete Gaussian at the continuous Gaussian's price, plus a certified slack.

Theorem. Let σ ≥ τ > 0, σ₀ = √(σ² − τ²), and let D_a be the discrete Gaussian
N_Z(a, σ²)^d on Z^d (each coordinate P[k] ∝ exp(−(k − aᵢ)²/(2σ²)), a ∈ Z^d). For
integer centres a, a′ with ‖a − a′‖₂ ≤ Δ and every ε ≥ 0,

    H_{e^ε}(D_a ‖ D_a′) ≤ s + (1 − s) · δ_G(ε; Δ/σ₀),        s = 1 − e^{−dλ},

where δ_G(ε; μ) is the hockey-stick curve of μ-GDP (the analytic Gaussian, Balle & Wang
2018, Thm 8), λ = log((1 + η_τ)/(1 − η_τ)) and η_t = 2 Σ_{m≥1} e^{−2π²t²m²}. Under
adaptive composition (and Poisson or without-replacement subsampling) of such releases
with any others, the same holds with the continuous Gaussians composed as the accountant
composes them and s = 1 − e^{−Σᵢ dᵢλᵢ} over every discrete-Gaussian release made.

Proof. (1) Poisson summation: θ(x; t) := Σ_{j∈Z} e^{−(x−j)²/(2t²)}
= √(2π) t (1 + 2 Σ_{m≥1} e^{−2π²t²m²} cos 2πmx), so θ(x; t) ∈ √(2π) t [1 − η_t, 1 + η_t],
and θ(0; σ) = √(2π) σ (1 + η_σ) exactly.
(2) The kernel K(x, k) = e^{−(x−k)²/(2τ²)} / θ(x; τ) (x ∈ R, k ∈ Z) is a Markov kernel
(Σ_k K(x, k) = 1) that does not depend on the data. Applied coordinate-wise to
X ~ N(a, σ₀² I) it gives P_a(k) = Πᵢ ∫ φ_{σ₀}(x − aᵢ) K(x, kᵢ) dx, and by (1) and the
convolution of Gaussians (σ₀² + τ² = σ²) each factor is at most φ_σ(kᵢ − aᵢ)/(1 − η_τ);
while D_a's factor is exactly φ_σ(kᵢ − aᵢ)/(1 + η_σ). Since η is decreasing and σ ≥ τ,
D_a(k) ≥ e^{−dλ} P_a(k) for every k, and the same for a′.
(3) So D_a = e^{−dλ} P_a + (1 − e^{−dλ}) R_a for a distribution R_a, and for every event S,
D_a(S) − e^ε D_a′(S) ≤ s + (1 − s)(P_a(S) − e^ε P_a′(S)) with s = 1 − e^{−dλ}. P is a
post-processing (by K) of the Gaussian mechanism with noise σ₀ and L2 shift ≤ Δ, whose
hockey-stick divergence is at most δ_G(ε; Δ/σ₀).
(4) Composition: the density of a whole transcript is the product of its steps'
conditional densities; replacing each discrete-Gaussian step by its K-post-processed
continuous counterpart changes that product by a factor ≥ e^{−Σ dᵢλᵢ} (step 2, conditional
on the past), for both neighbours. Step (3) then applies to the transcript, and the
continuous counterpart is an adaptive composition of post-processed Gaussians (and the
other releases), which the accountant's composition theorem bounds. Subsampling draws the
sample independently of the noise, so the bound of (2) holds for every sample, hence for
the mixture. ∎

Each release's τ is chosen from its dimension so that its slack is at most 2⁻¹⁰⁰
(τ ≈ 1.9 grid units at d = 1, 2.2 at d = 10⁹); then σ₀/σ = √(1 − τ²/σ²), negligible for
σ ≫ 1 grid unit — the safe Gaussians of :mod:`dpledger.mechanisms` use σ ≈ 2²⁰ grid units
(σ₀/σ = 1 − 4·10⁻¹²), and a count histogram at σ = 9 loses 2.4 % (zCDP loses ~8 %).
Compare Canonne, Kamath & Steinke 2020 (Thm 7, the exact one-dimensional privacy loss;
Prop. 14–15, the multivariate bounds, whose τ is the same theta-function error), of which
this is a simpler route to the continuous price in any dimension. A release whose
``dimension`` is unknown (``None``) has no bounded slack and is left to zCDP/RDP (its exact
(Δ²/(2σ²))-zCDP guarantee).
"""

from __future__ import annotations

import dataclasses
import math

from dpledger._numerics import mul_up, sum_up
from dpledger._public import namespace
from dpledger._validation import check_int_at_least
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentTypeError

__all__ = ["SLACK", "as_continuous", "continuous_price", "smoothing_width"]

SLACK = 2.0**-100
"""The slack each priced release may carry: its smoothing width τ is chosen for it."""


def smoothing_width(dimension: int) -> float:
    """τ with d·λ(τ) ≤ :data:`SLACK`: 2π²τ² = log(4d) + 100·log 2 (rounded up).

    Then e^{−2π²τ²} = 2⁻¹⁰⁰/(4d), η_τ ≤ 2.0001·e^{−2π²τ²} and d·λ ≤ 2⁻¹⁰⁰ (1 + 10⁻⁴).
    """
    dimension = check_int_at_least("dimension", dimension, 1)
    a = math.log(4) + math.log(dimension) + 100.0 * math.log(2.0)  # exact for huge ints
    return math.sqrt(a / (2.0 * math.pi * math.pi)) * (1.0 + 1e-12)


def _eta_bound(tau: float) -> float:
    """An upper bound on η_τ = 2 Σ_{m≥1} e^{−2π²τ²m²} (m² ≥ m: a geometric series)."""
    a = 2.0 * math.pi * math.pi * tau * tau * (1.0 - 1e-12)  # rounded down
    q = math.exp(-a) * (1.0 + 1e-12)  # rounded up
    if not q < 0.5:
        return math.inf  # τ ≲ 0.19: no useful bound (and 1 − q may round to ≤ 0)
    return 2.0 * q / (1.0 - q) * (1.0 + 1e-12)


def continuous_price(atom: ev.DiscreteGaussian) -> tuple[ev.Gaussian, float] | None:
    """(the continuous Gaussian at σ₀, the slack s) that dominate ``atom``; None if none.

    ``atom`` is dominated by that Gaussian composed with an (0, s)-DP release (module
    docstring), with τ = :func:`smoothing_width` of its dimension (1.9 to 2.2 grid units
    for d from 1 to 10⁹) and then s ≤ 2⁻¹⁰⁰; where σ < 2τ, τ = σ/2 instead (σ₀ = 0.866σ)
    and the slack is what it is (large for σ of a grid unit or less). None where
    ``dimension`` is unknown or the slack reaches 1.
    """
    if type(atom) is not ev.DiscreteGaussian:
        raise InvalidArgumentTypeError(
            f"`atom` must be a DiscreteGaussian event. Found {atom!r} of type "
            f"{type(atom).__name__}."
        )
    if atom.dimension is None:
        return None
    tau = min(smoothing_width(atom.dimension), atom.sigma / 2.0)
    a = 2.0 * math.pi * math.pi * tau * tau * (1.0 - 1e-12)  # 2π²τ², rounded down
    if a >= 20.0:
        # q = e^{−a} ≤ 2.1e-9: η ≤ 2q/(1 − q) and λ ≤ 2η/(1 − η) ≤ 4.0001·q, so d·λ ≤
        # exp(log 4.0001 − a + log d), formed in logs: q itself underflows for a > 745 (d
        # beyond ~10³²⁰), where a product q·d would give 0 and lose the slack
        slack = math.exp(math.log(4.0001) - a + math.log(atom.dimension)) * (1.0 + 1e-12)
    else:
        eta = _eta_bound(tau)
        if not eta < 0.5:
            return None
        per_coordinate = 2.0 * eta / (1.0 - eta) * (1.0 + 1e-12)  # ≥ log((1+η)/(1−η))
        slack = mul_up(per_coordinate, atom.dimension)  # ≥ 1 − e^{−dλ}
    if not slack < 1.0:
        return None
    # σ₀ = σ√(1 − (τ/σ)²), rounded down (a smaller σ₀ is a larger μ: the safe side); the
    # ratio form does not overflow for σ up to the float maximum
    ratio = tau / atom.sigma * (1.0 + 2.0**-50)
    sigma0 = atom.sigma * math.sqrt(1.0 - ratio * ratio) * (1.0 - 2.0**-49)
    return ev.Gaussian(sigma0, atom.sensitivity), slack


def as_continuous(event: ev.Event, exact_one_dimensional: float = 0.0) -> tuple[ev.Event, float]:
    """``event`` with its discrete Gaussians at the continuous price, and the total slack.

    Every :class:`~dpledger.events.DiscreteGaussian` release with a price
    (:func:`continuous_price`) is replaced by its Gaussian at σ₀, inside sampling wrappers
    too; the slacks of all of them (times their counts) add up (an upper bound on
    1 − e^{−Σ dᵢλᵢ}). The caller composes the result with an (0, slack)-DP release.
    One-dimensional releases with σ ≤ ``exact_one_dimensional`` are kept (an accountant
    with their exact pair prefers it). Returns ``(event, 0.0)`` unchanged if nothing is
    replaced.
    """
    if not any(type(node) is ev.DiscreteGaussian for node, _ in ev.walk(event)):
        return event, 0.0
    parts: list[ev.Event] = []
    slack = 0.0
    changed = False
    for atom, count in ev.flatten(event).items():
        new: ev.Event = atom
        one = 0.0
        if type(atom) is ev.DiscreteGaussian and not (
            atom.dimension == 1 and atom.sigma <= exact_one_dimensional
        ):
            price = continuous_price(atom)
            if price is not None:
                new, one = price
        elif isinstance(atom, ev.SAMPLINGS):
            inner, one = as_continuous(atom.event, exact_one_dimensional=exact_one_dimensional)
            if inner is not atom.event:
                new = dataclasses.replace(atom, event=inner)
        changed = changed or new is not atom
        parts.append(new if count == 1 else ev.Repeated(new, count))
        slack = sum_up(slack, mul_up(one, count))
    if not changed:
        return event, 0.0
    if not slack < 1.0:
        return event, 0.0  # no bound from the price: leave the releases to other methods
    rebuilt = parts[0] if len(parts) == 1 else ev.Composed(tuple(parts))
    return rebuilt, slack


__dir__ = namespace(__all__)
