"""The Rényi-DP accountant: one curve per release type, composed by adding curves.

RDP curves add under adaptive composition (Mironov 2017, Prop. 1). The summary keeps the
releases and their curves, so that the composed curve can be evaluated at any order; its
(ε, δ) is the conversion at the best order (:mod:`._conversion`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dpledger._numerics import round_up
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.rdp._conversion import rdp_to_delta, rdp_to_epsilon
from dpledger.accountant.rdp._curves import (
    Curve,
    _bounded_range_curve,
    _gaussian_curve,
    _laplace_curve,
    _mcdp_curve,
    _no_curve,
    _pure_curve,
    _randomized_response_curve,
    _zcdp_curve,
)
from dpledger.accountant.rdp._poisson import _poisson_curve
from dpledger.accountant.rdp._without_replacement import _amplified_curve


def rdp_curve(event: ev.Event) -> Curve:
    """Return the RDP curve α ↦ R(α) of ``event`` (an upper bound, for α > 1).

    Raises:
        NotApplicableError: Some release in ``event`` has no RDP curve here (e.g. an
            (ε, δ) guarantee with δ > 0).
    """
    return RDPAccountant.summarize(event).curve


def _without_replacement_curve(atom: Any) -> Curve:
    # the inner release may be any release with a curve: its curve comes from this table
    return _amplified_curve(atom, RDPAccountant.summarize(atom.event).curve)


_CURVES: dict[type[ev.Event], Callable[[Any], Curve]] = {
    ev.Gaussian: _gaussian_curve,
    ev.DiscreteGaussian: _gaussian_curve,
    ev.Laplace: _laplace_curve,
    ev.PureDP: _pure_curve,
    ev.DiscreteLaplace: _pure_curve,
    ev.ApproxDP: _pure_curve,  # δ = 0 only
    ev.RandomizedResponse: _randomized_response_curve,
    ev.BoundedRange: _bounded_range_curve,
    ev.ZCDP: _zcdp_curve,
    ev.MCDP: _mcdp_curve,
    ev.PoissonSampled: _poisson_curve,
    ev.SampledWithoutReplacement: _without_replacement_curve,
}
"""The Rényi curve of one release, by its type (:attr:`RDPAccountant.handlers`)."""


@dataclass(frozen=True)
class RDPSummary(Summary):
    """An RDP curve, kept as a multiset of releases so that it can be evaluated at any α."""

    releases: tuple[tuple[ev.Event, int], ...] = ()
    _curves: tuple[tuple[Curve, int], ...] = field(default=(), compare=False, repr=False)

    @property
    def curve(self) -> Curve:
        """α ↦ R(α), the composed RDP curve."""
        curves = self._curves

        def total(alpha: float) -> float:
            # each curve is an upper bound; the sum is rounded up (never below the terms)
            return round_up(math.fsum(count * c(alpha) for c, count in curves))

        return total

    def __add__(self, other: RDPSummary) -> RDPSummary:
        merged: Counter[ev.Event] = Counter(dict(self.releases))
        curves = dict(zip((e for e, _ in self.releases), (c for c, _ in self._curves), strict=True))
        for (event, count), (curve, _) in zip(other.releases, other._curves, strict=True):
            merged[event] += count
            curves.setdefault(event, curve)
        items = tuple(merged.items())
        return RDPSummary(items, tuple((curves[e], k) for e, k in items))

    def scaled(self, count: int) -> RDPSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return RDPSummary(
            tuple((e, k * count) for e, k in self.releases),
            tuple((c, k * count) for c, k in self._curves),
        )

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        if not self.releases:
            return 0.0
        return rdp_to_epsilon(self.curve, delta)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        if not self.releases:
            return 0.0
        return rdp_to_delta(self.curve, epsilon)


class RDPAccountant(Accountant[RDPSummary]):
    """Rényi-DP accountant: curves of every supported release, optimal continuous order.

    Supports Gaussian, Laplace, pure DP, randomized response, zCDP, mCDP, Poisson-
    subsampled Gaussians (real orders) and sampling without replacement of any of these.
    (ε, δ) releases with δ > 0 have no Rényi curve and are refused.
    """

    method: ClassVar[str] = "rdp"
    #: event type → the Rényi curve of one such release (the summary keeps the curves)
    handlers: ClassVar[dict[type[ev.Event], Any]] = _CURVES

    @classmethod
    def zero(cls) -> RDPSummary:
        """The guarantee of releasing nothing."""
        return RDPSummary()

    @classmethod
    def summarize(cls, event: ev.Event) -> RDPSummary:
        """The RDP curve of ``event``, as a summary."""
        atoms = ev.flatten(event)
        curves = tuple((cls._curve(atom), count) for atom, count in atoms.items())
        return RDPSummary(tuple(atoms.items()), curves)

    @classmethod
    def _curve(cls, atom: ev.Event) -> Curve:
        """The Rényi curve of one release, from :attr:`handlers`."""
        handler = cls.handlers.get(type(atom))
        if handler is None:
            raise _no_curve(atom)
        curve: Curve = handler(atom)
        return curve
