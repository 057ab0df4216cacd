"""Certified lower bounds on the privacy loss: values the releases provably *attain*.

An upper bound says a mechanism is at least this private; a lower bound here is a value
of ε (or ρ, μ, ...) that some pair of neighbouring inputs provably attains, so that a
claim below it is false. Every value is computed exactly (rationals) or in high-precision
mpmath and rounded *down*. No accounting method's upper bound is ever used as a lower
bound — not even an "exact" method's: its value carries upward margins (optimal
composition's grows with the count, and ε = ∞ where 1 − Π(1 − δᵢ) rounds up to δ), and
1e-9 relative below them was above the true ε.

The sources, each a proof:

* **Attained stand-ins** (:func:`attained_stand_in`). A release given by a guarantee is
  replaced by a mechanism with that guarantee which attains its worst case (a ρ-zCDP
  release by the Gaussian with μ = √(2ρ)); releases with no known attained worst case
  (ε-bounded range: Dong, Durfee & Rogers 2020) certify nothing.
* **Compositions of Gaussians.** Releases N(0, σᵢ²) of sensitivities Δᵢ compose to the
  Gaussian of μ² = Σ kᵢ(Δᵢ/σᵢ)² (Dong, Roth & Su 2019, Cor. 3.3), summed exactly; its
  ε(δ) is the closed form of Balle & Wang 2018, Thm 8 (:func:`gaussian_epsilon_lower`),
  and its ρ, μ, RDP curve and (μ, τ) are exact functions of μ² (:func:`zcdp_rho_lower`,
  :func:`gdp_mu_lower`, :func:`rdp_epsilon_lower`, :func:`mcdp_lower`).
* **ε at δ = 0 of pure releases** (:func:`pure_epsilon_lower`): each release's attained
  ε, rounded down, summed exactly.
* **The PLD lower bound of attained pairs** otherwise
  (:func:`dpledger.accountant.pld.epsilon_lower_bound`).
* **The Wishart mechanism** (Imtiaz & Sarwate 2016): its output's support depends on the
  data, so its δ is 1 − e^{−ε} at every ε′ (:func:`wishart_delta`), and unsampled
  releases of Σε = t make ε(δ) = ∞ for δ < 1 − e^{−t} (:func:`wishart_epsilon_lower`).

Dispatch is on the exact type of a release, as in :class:`~._base.Accountant`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpledger import _mpcontext
from dpledger._numerics import div_down, float_down, sqrt_down
from dpledger._public import namespace
from dpledger._validation import check_nonnegative, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant.costs import exact_mu_squared, sqrt_directed
from dpledger.accountant.pld import epsilon_lower_bound
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = [
    "attained_gaussian_mu_squared",
    "attained_pure_epsilon",
    "attained_stand_in",
    "epsilon_lower",
    "gaussian_epsilon_lower",
    "gdp_mu_lower",
    "mcdp_lower",
    "pure_epsilon_lower",
    "rdp_epsilon_lower",
    "wishart_delta",
    "wishart_epsilon_lower",
    "zcdp_rho_lower",
]


# ------------------------------------------------------------------ attained stand-ins
def _composed(event: Any) -> ev.Event | None:
    parts = [attained_stand_in(e) for e in event.events]
    if any(p is None for p in parts):
        return None
    return ev.Composed(tuple(p for p in parts if p is not None))


def _repeated(event: Any) -> ev.Event | None:
    inner = attained_stand_in(event.event)
    return None if inner is None else ev.Repeated(inner, event.count)


# the Gaussian stand-ins' μ = Δ/σ is rounded down, so that they satisfy the declaration
# (σ = 1/√(2ρ) rounded to nearest could make μ²/2 exceed ρ by an ulp)
def _zcdp(event: Any) -> ev.Event | None:
    if event.xi:
        return None
    # (2ρ capped at 1e300: a smaller μ is also ρ-zCDP, and 2ρ may overflow)
    return ev.Gaussian(sigma=1.0, sensitivity=_root_of_double(event.rho))


def _mcdp(event: Any) -> ev.Event:
    # N(0, 1/m²) with m = min(τ, √(2μ)) is (m²/2, m)-mCDP ⊆ the declared (μ, τ)
    mu = min(event.tau, _root_of_double(event.mu))
    return ev.Gaussian(sigma=1.0, sensitivity=mu)


def _root_of_double(value: float) -> float:
    """√(2·value) rounded down, 2·value capped at 1e300 (a smaller μ is also valid)."""
    return sqrt_down(min(2 * value, 1e300))


def _poisson(event: Any) -> ev.Event | None:
    inner = attained_stand_in(event.event)
    return None if inner is None else ev.PoissonSampled(inner, rate=event.rate)


def _without_replacement(event: Any) -> ev.Event | None:
    inner = attained_stand_in(event.event)
    if inner is None:
        return None
    return ev.SampledWithoutReplacement(inner, event.sample_size, event.population)


def _unattained(event: Any) -> None:
    return None  # no attained worst case known (Dong, Durfee & Rogers 2020)


def _itself(event: ev.Event) -> ev.Event:
    return event  # a neighbouring pair at the declared parameters attains its loss


# every release type is listed: one missing from here certifies nothing (never "itself"
# by default — a new event type is not assumed to attain its accounted worst case)
_STAND_INS: dict[type[ev.Event], Callable[[Any], ev.Event | None]] = {
    ev.Gaussian: _itself,
    ev.Laplace: _itself,
    ev.DiscreteGaussian: _itself,
    ev.DiscreteLaplace: _itself,
    ev.RandomizedResponse: _itself,
    # a stated guarantee: the canonical pair of (ε, δ)-DP attains it (randomized response
    # for δ = 0)
    ev.PureDP: _itself,
    ev.ApproxDP: _itself,
    ev.Composed: _composed,
    ev.Repeated: _repeated,
    ev.ZCDP: _zcdp,
    ev.MCDP: _mcdp,
    ev.PoissonSampled: _poisson,
    ev.SampledWithoutReplacement: _without_replacement,
    ev.BoundedRange: _unattained,
}


def attained_stand_in(event: ev.Event) -> ev.Event | None:
    """An event attained by some mechanism with ``event``'s guarantees, or None.

    Noise releases (Gaussian, Laplace, randomized response, ...) are their own stand-ins:
    a neighbouring pair at the declared sensitivity attains their privacy loss. A ρ-zCDP
    release is replaced by the Gaussian with μ = √(2ρ), which is exactly ρ-zCDP (Bun &
    Steinke 2016, Prop. 1.6); a (μ, τ)-mCDP one by the Gaussian with μ′ = min(τ, √(2μ)),
    exactly (μ′²/2, μ′)-mCDP (Dwork & Rothblum 2016); both μ rounded down. None where a
    release has no known attained worst case (ε-bounded range; (ξ, ρ)-zCDP with ξ > 0;
    an event type this module does not know), and for any composition or sampling of
    such a release.

    Example:
        >>> from dpledger import events as ev
        >>> attained_stand_in(ev.ZCDP(rho=0.5))
        Gaussian(sigma=1.0, sensitivity=1.0)
    """
    handler = _STAND_INS.get(type(event))
    return None if handler is None else handler(event)


def attained_gaussian_mu_squared(event: ev.Event) -> Fraction | None:
    """μ² = Σ kᵢ(Δᵢ/σᵢ)², exactly, if the attained stand-in composes only Gaussians.

    The composition of Gaussians is the one Gaussian of that μ² (Dong, Roth & Su 2019,
    Cor. 3.3), so every quantity of it is an exact function of μ². None otherwise.
    """
    stand_in = attained_stand_in(event)
    return None if stand_in is None else exact_mu_squared(stand_in)


# ------------------------------------------------------------------ pure ε at δ = 0
def pure_epsilon_lower(event: ev.Event) -> float | None:
    """Exact ε at δ = 0 attained by the releases, rounded down (None if unknown).

    Pure ε adds up exactly under composition (every release at its attaining pair of
    outputs at once), so the sum of the releases' attained ε, each rounded down and added
    exactly, rounded down, is attained: a lower bound.

    Example:
        >>> from dpledger import events as ev
        >>> pure_epsilon_lower(ev.Laplace(scale=2.0) * 3 + ev.PureDP(0.25))
        1.75
    """
    total = Fraction(0)
    for atom, count in ev.flatten(event).items():
        value = attained_pure_epsilon(atom)
        if value is None:
            return None
        if math.isinf(value):
            return math.inf
        total += count * Fraction(value)
    return float_down(total)


def attained_pure_epsilon(atom: ev.Event) -> float | None:
    """The attained pure ε of one release, rounded down; ∞ for releases with none.

    None where no attained value is known (ε-bounded range, sampling without
    replacement, structural events).
    """
    handler = _ATTAINED_PURE.get(type(atom))
    return None if handler is None else handler(atom)


def _sampled_pure(atom: Any) -> float | None:
    """log(1 + q(e^ε − 1)) of the inner release's attained ε, rounded down.

    Attained under add/remove by the inner release's own attaining outputs (Li, Qardaji &
    Su 2012, Thm 1, tight for randomized response). Evaluated in 40-digit mpmath, lowered
    by 1e-30 relative and rounded down, so the float is below the exact value.
    """
    inner = pure_epsilon_lower(atom.event)
    if inner is None or math.isinf(inner):
        return inner
    with _mpcontext.context(40) as ctx:  # this thread's: mpmath.mp is shared by threads
        value = ctx.log1p(ctx.mpf(atom.rate) * ctx.expm1(ctx.mpf(inner)))
        result = float(value * (1 - ctx.mpf(10) ** -30))
    return max(0.0, math.nextafter(result, -math.inf))


_ATTAINED_PURE: dict[type[ev.Event], Callable[[Any], float | None]] = {
    # the declared ε itself (a stand-in attains it: randomized response)
    ev.PureDP: lambda atom: atom.epsilon,
    ev.RandomizedResponse: lambda atom: atom.epsilon,
    ev.ApproxDP: lambda atom: atom.epsilon if atom.delta == 0 else math.inf,
    # Δ/b at two outputs beyond both means (rounded down: Laplace.epsilon rounds up)
    ev.Laplace: lambda atom: div_down(atom.sensitivity, atom.scale),
    # an integer shift of L1 norm ⌊Δ⌋, the largest an integer statistic can move
    ev.DiscreteLaplace: lambda atom: (
        div_down(math.floor(atom.sensitivity), atom.scale) if atom.sensitivity >= 1 else 0.0
    ),
    ev.Gaussian: lambda atom: math.inf,
    ev.DiscreteGaussian: lambda atom: math.inf,
    ev.ZCDP: lambda atom: math.inf,
    ev.MCDP: lambda atom: math.inf,
    ev.PoissonSampled: _sampled_pure,
}


# ------------------------------------------------------------------ ε(δ)
def gaussian_epsilon_lower(mu_squared: Fraction, delta: float) -> float:
    """The exact ε(δ) of μ-GDP (Balle & Wang 2018, Thm 8), rounded down: a lower bound.

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) decreases in ε; bisection in 60-digit mpmath
    keeps an ε with δ(ε) > ``delta`` (so the true ε(δ) lies above it), lowered by 1e-25
    relative and rounded down.

    Args:
        mu_squared: μ², exactly (a rational: :func:`attained_gaussian_mu_squared`).
        delta: δ in [0, 1).

    Example:
        >>> from fractions import Fraction
        >>> from dpledger.accountant import gaussian_epsilon
        >>> low = gaussian_epsilon_lower(Fraction(1, 9), 1e-5)  # σ = 3, Δ = 1
        >>> round(low, 6), low <= gaussian_epsilon(1e-5, sigma=3.0)
        (1.271088, True)
    """
    mu_squared = Fraction(mu_squared)
    if mu_squared < 0:
        raise InvalidArgumentError(f"`mu_squared` must be nonnegative. Found {mu_squared}.")
    delta = check_probability("delta", delta)
    # δ(ε) grows with μ at every ε (a larger μ is a less private Gaussian), so capping μ
    # at 10⁶ (ε in the 10¹¹s) keeps a lower bound and keeps mpmath's Φ in range
    mu_squared = min(mu_squared, Fraction(10**12))
    if mu_squared == 0:
        return 0.0  # no loss at all: (0, 0)-DP
    with _mpcontext.context(60) as ctx:  # this thread's: mpmath.mp is shared by threads
        mu = ctx.sqrt(ctx.mpf(mu_squared.numerator) / mu_squared.denominator)
        target = ctx.mpf(delta)

        def curve(eps: Any) -> Any:
            return ctx.ncdf(mu / 2 - eps / mu) - ctx.exp(eps) * ctx.ncdf(-mu / 2 - eps / mu)

        if curve(ctx.mpf(0)) <= target:
            return 0.0
        low, high = ctx.mpf(0), ctx.mpf(1)
        while curve(high) > target:
            low, high = high, 2 * high
        for _ in range(400):
            if high - low <= ctx.mpf(10) ** -40 * high:
                break
            middle = (low + high) / 2
            if curve(middle) > target:
                low = middle
            else:
                high = middle
        result = float(low * (1 - ctx.mpf(10) ** -25))
    return max(0.0, math.nextafter(result, -math.inf))


def epsilon_lower(event: ev.Event, delta: float) -> float | None:
    """A certified lower bound on the true ε at ``delta``, attained; None if there is none.

    Only three sources, each a proof: the closed form of a composition of Gaussians
    (:func:`gaussian_epsilon_lower`); ε at δ = 0 of pure releases attained by randomized
    response (:func:`pure_epsilon_lower`); and PLD lower bounds computed from attained
    pairs (:func:`dpledger.accountant.pld.epsilon_lower_bound`) — never an accounting
    method's upper bound, not even an exact one's. Releases whose worst case is not
    attained by a known pair (bounded-range, (ξ, ρ)-zCDP) make it None; leave out
    releases that are accounted as a worst case they do not attain (report-noisy-max,
    permute-and-flip: ε-DP) — releasing more never lowers ε, so a lower bound for the
    others alone is one for the whole.

    Example:
        >>> from dpledger import events as ev
        >>> round(epsilon_lower(ev.ZCDP(rho=0.5) * 2, 1e-5), 6)  # the Gaussian of μ = √2
        6.57297
    """
    delta = check_probability("delta", delta)
    stand_in = attained_stand_in(event)
    if stand_in is None:
        return None
    if delta == 0:
        return pure_epsilon_lower(stand_in)
    mu_squared = exact_mu_squared(stand_in)
    if mu_squared is not None:
        return gaussian_epsilon_lower(mu_squared, delta)
    # (not the exact methods' values: they are upper bounds with upward margins — optimal
    # composition's grows with the count, and ε = ∞ where 1 − Π(1 − δᵢ) rounds up to δ —
    # and 1e-9 relative below them was above the true ε: false "violated" verdicts)
    try:
        # attained pairs only (also the discrete Gaussian and sampling without replacement);
        # None where the lower construction certifies nothing
        lower = epsilon_lower_bound(stand_in, delta)
    except NotApplicableError:
        return None
    return lower if lower is not None and lower > 0 else None


# ------------------------------------------------------------------ other notions
# A lower bound here exists where the attained stand-in is a composition of Gaussians:
# its μ² = Σ k(Δ/σ)² is exact (a rational), and every quantity below is a function of it,
# rounded down (the accountants' values are rounded up: used as lower bounds they called
# claims at the exact value "violated", down to subnormal μ).
def zcdp_rho_lower(event: ev.Event) -> float | None:
    """ρ = μ²/2 of the attained Gaussian composition, rounded down; None if none.

    The Gaussian of μ is exactly μ²/2-zCDP (Bun & Steinke 2016, Prop. 1.6).
    """
    mu_squared = attained_gaussian_mu_squared(event)
    return None if mu_squared is None else float_down(mu_squared / 2)


def gdp_mu_lower(event: ev.Event) -> float | None:
    """μ of the attained Gaussian composition, rounded down; None if none.

    The Gaussian of Δ/σ = μ is exactly μ-GDP (Dong, Roth & Su 2019, Def. 2.6).
    """
    mu_squared = attained_gaussian_mu_squared(event)
    return None if mu_squared is None else sqrt_directed(mu_squared, "lower")


def rdp_epsilon_lower(event: ev.Event, alpha: float) -> float | None:
    """The Rényi ε at order ``alpha`` of the attained Gaussian composition, rounded down.

    A Gaussian's RDP curve is exactly αμ²/2 (Mironov 2017, Prop. 7). None if the attained
    stand-in is not a composition of Gaussians.
    """
    alpha = check_nonnegative("alpha", alpha)
    mu_squared = attained_gaussian_mu_squared(event)
    return None if mu_squared is None else float_down(Fraction(alpha) * mu_squared / 2)


def mcdp_lower(event: ev.Event) -> tuple[float, float] | None:
    """(μ, τ) attained by the Gaussian composition, each rounded down; None if none.

    The Gaussian of μ′ is exactly (μ′²/2, μ′)-mCDP and attains both (Dwork & Rothblum
    2016): a claim (μ, τ) with μ below the first or τ below the second is false.
    """
    mu_squared = attained_gaussian_mu_squared(event)
    if mu_squared is None:
        return None
    return float_down(mu_squared / 2), sqrt_directed(mu_squared, "lower")


# ------------------------------------------------------------------ Wishart
def wishart_delta(epsilon: float) -> float:
    """1 − e^{−ε}, rounded up: the δ of the Wishart mechanism at its ε, at every ε′ ≥ 0.

    B + W with W ~ Wishart(c·I, d + 1), c = Δ_tr/(2ε) (Imtiaz & Sarwate 2016) lies in
    {M ⪰ B}, which differs between neighbours: for the rank-one change B′ = B + uuᵀ with
    ‖u‖² = Δ_tr, B's output falls outside B′'s support — infinite privacy loss — with
    probability 1 − P[W ⪰ uuᵀ] = 1 − e^{−ε}, and the loss on the common support is a
    constant. So the release is (0, 1 − e^{−ε})-DP and no better at any ε′
    (:mod:`dpledger.mechanisms.matrix` has the whole argument). Rounded up: this is the δ
    the mechanism's event charges.

    Example:
        >>> round(wishart_delta(1.0), 6)
        0.632121
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    return min(1.0, math.nextafter(-math.expm1(-epsilon), math.inf))


def wishart_epsilon_lower(total_epsilon: Fraction, delta: float) -> float | None:
    """∞ if unsampled Wishart releases of Σ count·ε = ``total_epsilon`` make ε(δ) = ∞.

    For the worst-case rank-one neighbour each release falls outside the neighbour's
    support, with infinite privacy loss, with probability 1 − e^{−εᵢ} independently
    (:func:`wishart_delta`): with probability 1 − e^{−total} some release does, so
    δ(ε′) ≥ 1 − e^{−total} at every ε′, and releasing more never lowers it. Decided in
    40-digit mpmath, the threshold lowered by 1e-30 relative: a certified lower bound of ∞
    wherever ``delta`` is below it; None (no bound certified) otherwise.

    Example:
        >>> from fractions import Fraction
        >>> wishart_epsilon_lower(Fraction(1), 1e-5), wishart_epsilon_lower(Fraction(1), 0.7)
        (inf, None)
    """
    total = Fraction(total_epsilon)
    delta = check_probability("delta", delta)
    if total <= 0:
        return None
    with _mpcontext.context(40) as ctx:  # this thread's: mpmath.mp is shared by threads
        floor = -ctx.expm1(-ctx.mpf(total.numerator) / total.denominator)
        unbounded = bool(ctx.mpf(delta) < floor * (1 - ctx.mpf(10) ** -30))
    return math.inf if unbounded else None


__dir__ = namespace(__all__)
