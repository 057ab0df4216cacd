"""The dominating (upper) and attained (lower) pairs of each release, by event type.

One small function per event type, in :data:`_PAIRS` (the PLD accountant's handler
table); :func:`_pairs` dispatches on the exact type of the release, as
:class:`~dpledger.accountant._base.Accountant` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dpledger._numerics import div_down
from dpledger.accountant import events as ev
from dpledger.accountant._pairs import (
    GaussianPair,
    LaplacePair,
    Pair,
    RRPair,
    SubsampledPair,
    discrete_gaussian_pair,
    discrete_laplace_pair,
)
from dpledger.accountant.costs import fixed_guarantee, gaussian_mu
from dpledger.accountant.pld._discretise import MAX_LOSS
from dpledger.errors import NotApplicableError


def _pairs(atom: ev.Event, kind: str = "upper") -> list[Pair]:
    """The dominating pair(s) of one release; two for subsampling (remove, add).

    For ``kind="lower"`` the pair must be *attained* by the release (a lower bound on its
    ε). The pairs differ for the discrete Laplace, whose upper bound is the ε-DP worst case
    (randomized response) and whose lower bound is a one-dimensional integer shift; the
    discrete Gaussian and sampling without replacement have lower-bound pairs only (no
    dominating pair is available for them here).
    """
    guarantee = fixed_guarantee(atom)  # PureDP, ApproxDP, Laplace, RR, DiscreteLaplace, BR
    pure = None if guarantee is None else guarantee[0]
    if isinstance(pure, float) and not pure <= MAX_LOSS:
        raise NotApplicableError(
            f"method 'pld' cannot hold the privacy loss {pure!r} of {atom!r} (beyond "
            f"MAX_LOSS = {MAX_LOSS}, e^L overflows); use method='auto'."
        )
    handler = _PAIRS.get(type(atom))
    if handler is None:
        raise _unsupported(atom)
    return handler(atom, kind)


def _unsupported(atom: ev.Event) -> NotApplicableError:
    return NotApplicableError(
        f"method 'pld' cannot account for {type(atom).__name__} events (found {atom!r}); "
        "use method='rdp' or method='auto'."
    )


def _gaussian(atom: Any, kind: str) -> list[Pair]:
    return [GaussianPair(atom.mu)]


def _laplace(atom: Any, kind: str) -> list[Pair]:
    # ε₀ = Δ/b rounded up dominates; rounded down, the pair is attained (a shift of Δ at
    # most, and the Laplace pairs are ordered by ε₀ — monotone likelihood ratios)
    if kind == "lower":
        return [LaplacePair(div_down(atom.sensitivity, atom.scale))]
    return [LaplacePair(atom.epsilon)]


# Discrete noise on an integer statistic: the largest integer shift ⌊Δ⌋ is attained
# (a lower bound in any dimension). In one dimension it also DOMINATES every smaller
# shift: both families have monotone likelihood ratios (p(x − s)/p(x) is non-decreasing
# in x), so the Neyman–Pearson tests of P₀ against every Pₛ are the same threshold
# tests, whose power grows with s (Pₛ is a shift); the trade-off curve of (P₀, P_⌊Δ⌋)
# is therefore below that of every (P₀, Pₛ), i.e. its hockey-stick curve is above.
# Negative shifts and the reversed pair follow by symmetry.


def _discrete_laplace(atom: Any, kind: str) -> list[Pair]:
    if kind == "lower" or atom.dimension == 1:
        dl_pair = discrete_laplace_pair(atom.scale, math.floor(atom.sensitivity))
        if dl_pair is not None:
            return [dl_pair]
    return [RRPair(atom.epsilon)]  # ε-DP: dominated by randomized response


def _discrete_gaussian(atom: Any, kind: str) -> list[Pair]:
    if kind == "lower" or atom.dimension == 1:
        pair = discrete_gaussian_pair(
            atom.sigma, math.floor(atom.sensitivity), dominating=kind != "lower"
        )
        if pair is not None:
            return [pair]
    raise _unsupported(atom)


def _without_replacement(atom: Any, kind: str) -> list[Pair]:
    if kind != "lower":
        raise _unsupported(atom)
    # Attained pairs: the replaced record z shifts the statistic, every other record
    # is neutral, so the batch without z releases exactly what the batch with z′ does:
    # (γA + (1−γ)B, B) and its reverse — the Poisson pairs at rate γ = b/n.
    rate = atom.sample_size / atom.population
    return _pairs(ev.PoissonSampled(atom.event, rate=rate), kind)


def _bounded_range(atom: Any, kind: str) -> list[Pair]:
    if kind == "lower":
        raise NotApplicableError(
            "no attained pair is known for an ε-bounded-range release (its worst case "
            "is not randomized response: Dong, Durfee & Rogers 2020)."
        )
    return [RRPair(atom.epsilon)]  # ε-BR ⇒ ε-DP: dominated by randomized response


def _pure_dp(atom: Any, kind: str) -> list[Pair]:
    return [RRPair(atom.epsilon)]


def _randomized_response(atom: Any, kind: str) -> list[Pair]:
    return [RRPair(atom.epsilon, atom.categories)]


def _approx_dp(atom: Any, kind: str) -> list[Pair]:
    return [RRPair(atom.epsilon, 2, atom.delta)]


def _poisson(atom: Any, kind: str) -> list[Pair]:
    inner = ev.flatten(atom.event)
    if len(inner) == 1 and next(iter(inner.values())) == 1:
        base = _pairs(next(iter(inner)), kind)  # a single release
    else:
        # a composition of Gaussians is one Gaussian (μ² = Σμᵢ², exactly, then √ rounded
        # to the side of the bound)
        mu = gaussian_mu(inner, kind)
        if mu is None:
            if len(inner) != 1:
                raise NotApplicableError(
                    "method 'pld' subsamples a single release, or a composition of "
                    f"Gaussians; found {atom.event!r}."
                )
            repeated = type(next(iter(inner))).__name__
            raise NotApplicableError(f"method 'pld' cannot subsample a repeated {repeated}.")
        base = [GaussianPair(mu)]
    # an enumerated base may carry its far tail at +∞ (the dominating 1-D discrete
    # Gaussian): SubsampledPair handles that; any other δ atom (ApproxDP, nested sampling)
    # is refused
    if len(base) != 1 or (base[0].infinite_mass and not base[0].tail_at_infinity):
        raise NotApplicableError(
            f"method 'pld' cannot subsample {atom.event!r} (nested sampling or δ > 0)."
        )
    if atom.rate == 1.0:
        return base
    return [
        SubsampledPair(base[0], atom.rate, "remove"),
        SubsampledPair(base[0], atom.rate, "add"),
    ]


_PAIRS: dict[type[ev.Event], Callable[[Any, str], list[Pair]]] = {
    ev.Gaussian: _gaussian,
    ev.Laplace: _laplace,
    ev.DiscreteLaplace: _discrete_laplace,
    ev.DiscreteGaussian: _discrete_gaussian,
    ev.SampledWithoutReplacement: _without_replacement,
    ev.BoundedRange: _bounded_range,
    ev.PureDP: _pure_dp,
    ev.RandomizedResponse: _randomized_response,
    ev.ApproxDP: _approx_dp,
    ev.PoissonSampled: _poisson,
}
"""The pair(s) of one release, by its type: ``handler(atom, kind)`` (see :func:`_pairs`)."""
