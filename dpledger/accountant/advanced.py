"""Advanced composition (Dwork, Rothblum & Vadhan 2010), heterogeneous form.

For (εᵢ, δᵢ)-DP mechanisms composed adaptively and any δ′ > 0, the composition is
(ε′, Σδᵢ + δ′)-DP with

    ε′ = √(2 log(1/δ′) Σεᵢ²) + Σ εᵢ(e^{εᵢ} − 1)

(Dwork & Roth 2014, Thm 3.20 for equal εᵢ; the same proof — mean privacy loss at most
εᵢ(e^{εᵢ} − 1) by Lemma 3.18, Azuma–Hoeffding on losses in [−εᵢ, εᵢ] — gives the
heterogeneous form). ``epsilon(delta)`` spends δ′ = δ − Σδᵢ.

This bound holds for a composition whose parameters are fixed in advance; it is *not*
a valid privacy filter for adaptively chosen εᵢ (Rogers, Roth, Ullman & Vadhan 2016).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from dpledger._numerics import mul_up, round_up, square_up, sum_up
from dpledger._public import namespace
from dpledger._validation import check_int_at_least, check_nonnegative, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.basic import BasicAccountant, dp_guarantee

__all__ = ["AdvancedAccountant", "AdvancedSummary", "advanced_composition"]


def advanced_composition(epsilon: float, delta: float, count: int, delta_slack: float) -> float:
    """ε′ of ``count``-fold composition of (ε, δ)-DP: √(2k log(1/δ′))ε + kε(e^ε − 1).

    Dwork & Roth 2014, Thm 3.20; the result is (ε′, kδ + δ′)-DP.

    Example:
        >>> from dpledger.accountant.advanced import advanced_composition
        >>> round(advanced_composition(1.0, 0.0, 100, 1e-6), 4)
        224.3934
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    delta = check_probability("delta", delta)
    count = check_int_at_least("count", count, 1)
    delta_slack = check_probability("delta_slack", delta_slack, low_open=True)
    if math.isinf(epsilon):
        return math.inf
    grown = math.inf if epsilon > 709 else round_up(epsilon * math.expm1(epsilon))
    summary = AdvancedSummary(square_up(epsilon), grown, delta)
    return summary.scaled(count)._epsilon_for_slack(delta_slack)


@dataclass(frozen=True)
class AdvancedSummary(Summary):
    """Σεᵢ², Σεᵢ(e^{εᵢ} − 1) and Σδᵢ of the releases composed."""

    sum_squares: float = 0.0
    sum_mean_loss: float = 0.0
    sum_delta: float = 0.0

    def __add__(self, other: AdvancedSummary) -> AdvancedSummary:
        return AdvancedSummary(
            sum_up(self.sum_squares, other.sum_squares),
            sum_up(self.sum_mean_loss, other.sum_mean_loss),
            sum_up(self.sum_delta, other.sum_delta),
        )

    def scaled(self, count: int) -> AdvancedSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return AdvancedSummary(
            mul_up(self.sum_squares, count),
            mul_up(self.sum_mean_loss, count),
            mul_up(self.sum_delta, count),
        )

    def _epsilon_for_slack(self, delta_slack: float) -> float:
        if self.sum_squares == 0:
            return 0.0
        if delta_slack <= 0:
            return math.inf
        deviation = math.sqrt(2 * math.log(1 / delta_slack) * self.sum_squares)
        return round_up(deviation + self.sum_mean_loss)

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        if self.sum_squares == 0:
            return 0.0 if self.sum_delta <= delta else math.inf
        return self._epsilon_for_slack(delta - self.sum_delta)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        if self.sum_squares == 0:
            return min(1.0, self.sum_delta)
        gap = epsilon - self.sum_mean_loss
        if gap <= 0:
            return 1.0
        slack = math.exp(-gap * gap / (2 * self.sum_squares))
        return min(1.0, sum_up(self.sum_delta, round_up(slack)))


def _one(event: ev.Event) -> AdvancedSummary:
    epsilon, delta = dp_guarantee(event)
    # e^ε overflows beyond ε ≈ 709.78: the mean loss is then +∞ (a valid, vacuous bound)
    growth = math.expm1(epsilon) if epsilon < 709.0 else math.inf
    return AdvancedSummary(square_up(epsilon), round_up(epsilon * growth), delta)


class AdvancedAccountant(Accountant[AdvancedSummary]):
    """Advanced composition of Dwork, Rothblum & Vadhan 2010 (heterogeneous form)."""

    method: ClassVar[str] = "advanced"
    handlers: ClassVar[dict[type[ev.Event], Any]] = dict.fromkeys(BasicAccountant.handlers, _one)

    @classmethod
    def zero(cls) -> AdvancedSummary:
        """The guarantee of releasing nothing."""
        return AdvancedSummary()

    @classmethod
    def _hint(cls) -> str:
        return BasicAccountant._hint()


__dir__ = namespace(__all__)
