"""Basic composition of pure and approximate differential privacy.

(εᵢ, δᵢ)-DP mechanisms compose adaptively to (Σεᵢ, Σδᵢ)-DP (Dwork & Roth 2014,
Thm 3.16; Dwork, Kenthapadi, McSherry, Mironov & Naor 2006).

Also home of :func:`dp_guarantee`, the fixed (ε, δ) guarantee of one release, shared
with the advanced and optimal composition accountants:

* Laplace with L1 sensitivity Δ and scale b is (Δ/b)-DP (Dwork & Roth 2014, Thm 3.6);
  randomized response with parameter ε is ε-DP.
* Amplification by subsampling (Balle, Barthe & Gaboardi 2018, "Privacy Amplification by
  Subsampling: Tight Analyses via Couplings and Divergences", Thm 8 for Poisson
  subsampling under add/remove adjacency, Thm 9 for sampling without replacement under
  replace-one adjacency): an (ε, δ)-DP mechanism run on a subsample with rate γ is
  (log(1 + γ(e^ε − 1)), γδ)-DP.

Gaussian, zCDP and mCDP releases have no single (ε, δ) guarantee (they have a whole
curve), so these accountants refuse them; use GDP, zCDP or RDP.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from dpledger._numerics import float_up, mul_up, round_up, sum_up
from dpledger._public import namespace
from dpledger._validation import check_nonnegative, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.costs import fixed_guarantee
from dpledger.errors import NotApplicableError

__all__ = ["BasicAccountant", "BasicSummary", "amplify_by_subsampling", "dp_guarantee"]


def amplify_by_subsampling(epsilon: float, delta: float, rate: float) -> tuple[float, float]:
    """(ε′, δ′) = (log(1 + γ(e^ε − 1)), γδ) (Balle, Barthe & Gaboardi 2018, Thms 8–9).

    Args:
        epsilon: ε of the mechanism run on the subsample.
        delta: δ of that mechanism.
        rate: The sampling rate γ (Poisson rate, or m/n without replacement).

    Example:
        >>> from dpledger.accountant.basic import amplify_by_subsampling
        >>> eps, delta = amplify_by_subsampling(1.0, 1e-6, 0.01)
        >>> round(eps, 6), delta
        (0.017037, 1e-08)
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    delta = check_probability("delta", delta, high_open=False)
    rate = check_probability("rate", rate, low_open=True, high_open=False)
    if rate == 1.0:
        return epsilon, delta
    if math.isinf(epsilon):
        return math.inf, rate * delta
    if epsilon > 700:
        # log(1 + γ(e^ε − 1)) = ε + log(γ + (1 − γ)e^{−ε}): no overflow
        amplified = epsilon + math.log(rate + (1 - rate) * math.exp(-epsilon))
        return round_up(amplified), float_up(Fraction(rate) * Fraction(delta))
    return round_up(math.log1p(rate * math.expm1(epsilon))), float_up(
        Fraction(rate) * Fraction(delta)
    )


def dp_guarantee(event: ev.Event) -> tuple[float, float]:
    """The (ε, δ)-DP guarantee of one non-structural release.

    Raises:
        NotApplicableError: The release has no single (ε, δ) guarantee (e.g. Gaussian).
    """
    guarantee = fixed_guarantee(event)  # pure and (ε, δ) releases
    if guarantee is not None:
        return guarantee
    amplified = _SAMPLED.get(type(event))
    if amplified is None:
        raise NotApplicableError(
            f"{type(event).__name__} releases have no single (ε, δ) guarantee (found "
            f"{event!r}), so basic, advanced and optimal composition cannot account for them. "
            "Use method='gdp', 'zcdp', 'rdp' or 'auto'."
        )
    return amplified(event)


def _amplified(event: Any) -> tuple[float, float]:
    """A sampled release: its inside composed, then amplified by the sampling rate."""
    epsilon, delta = _composed_guarantee(event.event)
    return amplify_by_subsampling(epsilon, delta, event.rate)


_SAMPLED: dict[type[ev.Event], Callable[[Any], tuple[float, float]]] = {
    ev.PoissonSampled: _amplified,
    ev.SampledWithoutReplacement: _amplified,
}


def _composed_guarantee(event: ev.Event) -> tuple[float, float]:
    """Basic composition of everything in ``event`` (used for the inside of a sample)."""
    total = BasicSummary()
    for atom, count in ev.flatten(event).items():
        total = total + BasicSummary(*dp_guarantee(atom)).scaled(count)
    return total.total_epsilon, total.total_delta


@dataclass(frozen=True)
class BasicSummary(Summary):
    """An (ε, δ)-DP guarantee under basic composition."""

    total_epsilon: float = 0.0
    total_delta: float = 0.0

    def __add__(self, other: BasicSummary) -> BasicSummary:
        return BasicSummary(
            sum_up(self.total_epsilon, other.total_epsilon),
            sum_up(self.total_delta, other.total_delta),
        )

    def scaled(self, count: int) -> BasicSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return BasicSummary(mul_up(self.total_epsilon, count), mul_up(self.total_delta, count))

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        return self.total_epsilon if self.total_delta <= delta else math.inf

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        return min(1.0, self.total_delta) if self.total_epsilon <= epsilon else 1.0


def _one(event: ev.Event) -> BasicSummary:
    epsilon, delta = dp_guarantee(event)
    return BasicSummary(epsilon, delta)


class BasicAccountant(Accountant[BasicSummary]):
    """Basic composition: ε and δ add (Dwork & Roth 2014, Thm 3.16)."""

    method: ClassVar[str] = "basic"
    handlers: ClassVar[dict[type[ev.Event], Any]] = {
        t: _one
        for t in (
            ev.PureDP,
            ev.BoundedRange,
            ev.ApproxDP,
            ev.Laplace,
            ev.DiscreteLaplace,
            ev.RandomizedResponse,
            ev.PoissonSampled,
            ev.SampledWithoutReplacement,
        )
    }

    @classmethod
    def zero(cls) -> BasicSummary:
        """The guarantee of releasing nothing."""
        return BasicSummary()

    @classmethod
    def _hint(cls) -> str:
        return "Basic composition needs a fixed (ε, δ) per release; use method='auto'."


__dir__ = namespace(__all__)
