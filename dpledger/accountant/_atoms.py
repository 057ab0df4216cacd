"""What a single release is known to be, shared by the accountants.

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

Dispatch is on the exact type of a release, as in :class:`~._base.Accountant`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from dpledger._numerics import float_down, float_up, sqrt_down, sqrt_up
from dpledger.accountant import events as ev

__all__ = [
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
