"""What a single release costs: the one per-release table the accountants and filters share.

The accountants see a composition as a multiset of releases (:func:`events.flatten`).
Two questions about those releases recur across the notions, and are answered here
once:

* **the fixed (ε, δ) of a release** — the guarantee it states (:class:`~events.PureDP`,
  :class:`~events.ApproxDP`) or has by its parameters alone (Laplace: Δ₁/b, Dwork & Roth
  2014, Thm 3.6; discrete Laplace: Δ₁/t; randomized response; an ε-bounded-range release
  is ε-DP): :func:`fixed_guarantee`, and :func:`pure_epsilon` where that δ is 0;
* **a composition of Gaussians as one Gaussian**: releases N(0, σᵢ²) with sensitivities
  Δᵢ compose to the Gaussian of μ² = Σ kᵢ(Δᵢ/σᵢ)² (Dong, Roth & Su 2019, Cor. 3.3), summed
  exactly (:func:`gaussian_mu_squared`) and square-rooted with the rounding directed to
  the side the caller needs (:func:`gaussian_mu`, :func:`sqrt_directed`).

and the same costs **exactly**, as rationals of the event's floats, for the ledger's
filters (so ten releases of ε = 1/10 fit a budget of 1): (Σε, Σδ) (:func:`exact_basic`),
Σρ (:func:`exact_rho`) and Σμ² (:func:`exact_mu_squared`).

Dispatch is on the exact type of a release, as in :class:`~._base.Accountant`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from dpledger._numerics import float_down, float_up, sqrt_down, sqrt_up
from dpledger._public import namespace
from dpledger.accountant import events as ev

__all__ = [
    "exact_basic",
    "exact_mu_squared",
    "exact_pure",
    "exact_rho",
    "fixed_guarantee",
    "gaussian_mu",
    "gaussian_mu_squared",
    "pure_epsilon",
    "sqrt_directed",
]


def _pure(event: Any) -> tuple[float, float]:
    return event.epsilon, 0.0  # an ε-bounded-range release is ε-DP


def _approx(event: Any) -> tuple[float, float]:
    return event.epsilon, event.delta


_FIXED: dict[type[ev.Event], Callable[[Any], tuple[float, float]]] = {
    ev.PureDP: _pure,
    ev.BoundedRange: _pure,
    ev.RandomizedResponse: _pure,
    ev.Laplace: _pure,
    ev.DiscreteLaplace: _pure,
    ev.ApproxDP: _approx,
}


def fixed_guarantee(atom: ev.Event) -> tuple[float, float] | None:
    """The (ε, δ) that one release states or has by its parameters alone, or None.

    (ε, 0) for PureDP, BoundedRange, RandomizedResponse, Laplace and DiscreteLaplace,
    (ε, δ) for :class:`~events.ApproxDP`; None for
    releases with a whole curve of guarantees (Gaussian, zCDP, ...) and for sampled ones
    (their amplified guarantee is the accountants' business).
    """
    handler = _FIXED.get(type(atom))
    return None if handler is None else handler(atom)


def pure_epsilon(atom: ev.Event) -> float | None:
    """The ε of a release known to be ε-DP (δ = 0), or None.

    PureDP, BoundedRange, RandomizedResponse, Laplace, DiscreteLaplace, and ApproxDP
    with δ = 0.
    """
    guarantee = fixed_guarantee(atom)
    if guarantee is None or guarantee[1] != 0:
        return None
    return guarantee[0]


def gaussian_mu_squared(releases: Mapping[ev.Event, int]) -> Fraction | None:
    """Σ kᵢ(Δᵢ/σᵢ)², exactly, if every release is a Gaussian; otherwise None.

    ``releases``: a multiset of releases with their counts (:func:`events.flatten`).
    """
    mu2 = Fraction(0)
    for atom, count in releases.items():
        if type(atom) is not ev.Gaussian:
            return None
        mu2 += count * (Fraction(atom.sensitivity) / Fraction(atom.sigma)) ** 2
    return mu2


def sqrt_directed(value: Fraction, kind: str) -> float:
    """√value of an exact rational, rounded up for upper bounds, down for lower bounds.

    Exact directed rounding twice (:func:`~dpledger._numerics.float_up` then
    :func:`~dpledger._numerics.sqrt_up`, or the ``_down`` pair): the result is the tightest
    float on the requested side up to the one rounding of the float conversion; a value
    beyond the float range gives ``inf`` (upper) or √max (lower), never an OverflowError.
    """
    if kind == "upper":
        return sqrt_up(float_up(value))
    return sqrt_down(max(float_down(value), 0.0))


def gaussian_mu(releases: Mapping[ev.Event, int], kind: str) -> float | None:
    """μ of the one Gaussian equivalent to ``releases``, or None if not all are Gaussian.

    Rounded up for ``kind="upper"`` (the safe side of an upper bound on the privacy
    loss), down otherwise (:func:`sqrt_directed`).
    """
    mu2 = gaussian_mu_squared(releases)
    return None if mu2 is None else sqrt_directed(mu2, kind)


# -- exact costs (rationals of the event's floats) -------------------------------------


def _exact_sum(event: ev.Event, per_atom: Callable[[Any], Fraction | None]) -> Fraction | None:
    """Σ count·per_atom(atom) over the releases in ``event``, or None if any is not rational."""
    total = Fraction(0)
    for atom, count in ev.flatten(event).items():
        value = per_atom(atom)
        if value is None:
            return None
        total += count * value
    return total


def _laplace_ratio(atom: Any) -> Fraction:
    return Fraction(atom.sensitivity) / Fraction(atom.scale)


def _stated_pure(atom: Any) -> Fraction | None:
    return Fraction(atom.epsilon) if getattr(atom, "delta", 0.0) == 0 else None


_EXACT_PURE: dict[type[ev.Event], Callable[[Any], Fraction | None]] = {
    ev.PureDP: _stated_pure,
    ev.ApproxDP: _stated_pure,
    ev.Laplace: _laplace_ratio,  # Δ₁/b (Dwork & Roth 2014, Thm 3.6)
    ev.DiscreteLaplace: _laplace_ratio,
}


def exact_pure(atom: ev.Event) -> Fraction | None:
    """ε of a pure-DP release when it is a rational of the event's floats, else None.

    PureDP, ApproxDP with δ = 0, Laplace and discrete Laplace (Δ/b exactly). Releases
    whose ε is itself a rounded float (bounded range, randomized response) are left to
    the float path, which rounds up.
    """
    handler = _EXACT_PURE.get(type(atom))
    return None if handler is None else handler(atom)


def _exact_epsilon(atom: Any) -> Fraction | None:
    return Fraction(atom.epsilon) if type(atom) is ev.ApproxDP else exact_pure(atom)


def _exact_delta(atom: Any) -> Fraction | None:
    if type(atom) is ev.ApproxDP:
        return Fraction(atom.delta)
    return Fraction(0) if exact_pure(atom) is not None else None


def exact_basic(event: ev.Event) -> tuple[Fraction, Fraction] | None:
    """(Σε, Σδ) exactly, for releases whose ε and δ are rational (pure, approx, Laplace)."""
    eps, delta = _exact_sum(event, _exact_epsilon), _exact_sum(event, _exact_delta)
    return None if eps is None or delta is None else (eps, delta)


def _gaussian_rho(atom: Any) -> Fraction:
    return (Fraction(atom.sensitivity) / Fraction(atom.sigma)) ** 2 / 2


def _zcdp_rho(atom: Any) -> Fraction | None:
    return Fraction(atom.rho) if atom.xi == 0 else None


_EXACT_RHO: dict[type[ev.Event], Callable[[Any], Fraction | None]] = {
    ev.Gaussian: _gaussian_rho,  # Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6)
    ev.DiscreteGaussian: _gaussian_rho,  # Canonne, Kamath & Steinke 2020, Thm 4
    ev.ZCDP: _zcdp_rho,
}


def _atom_rho(atom: Any) -> Fraction | None:
    handler = _EXACT_RHO.get(type(atom))
    if handler is not None:
        return handler(atom)
    pure = exact_pure(atom)
    return None if pure is None else pure * pure / 2  # ε-DP ⇒ ε²/2-zCDP (Prop. 1.4)


def exact_rho(event: ev.Event) -> Fraction | None:
    """Σρ exactly: Δ²/(2σ²) for (discrete) Gaussians, ε²/2 for pure DP (Bun & Steinke 2016)."""
    return _exact_sum(event, _atom_rho)


def exact_mu_squared(event: ev.Event) -> Fraction | None:
    """Σμ² = Σ(Δ/σ)² exactly, for Gaussian releases (Dong, Roth & Su 2019, Cor. 3.3)."""
    return gaussian_mu_squared(ev.flatten(event))


__dir__ = namespace(__all__)
