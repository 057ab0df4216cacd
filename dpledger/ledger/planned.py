"""The planned filter: a schedule of releases fixed in advance, certified once as a whole."""

from __future__ import annotations

import bisect
from fractions import Fraction
from typing import Any, ClassVar

from dpledger._public import namespace
from dpledger.accountant import delta as accountant_delta
from dpledger.accountant import epsilon as accountant_epsilon
from dpledger.accountant import events as ev
from dpledger.errors import BudgetExceededError, InvalidArgumentError, NotApplicableError
from dpledger.ledger.budgets import Budget, Charge, ScheduleBudget
from dpledger.ledger.filters import Cost, Filter, Total

__all__ = ["PlannedFilter", "Run", "planned_filter", "schedule_runs"]

Run = tuple[ev.Event, int]


def schedule_runs(events: list[ev.Event]) -> tuple[Run, ...]:
    """Run-length form of a schedule: consecutive equal releases as (event, count)."""
    runs: list[list[Any]] = []
    for event in events:
        if runs and runs[-1][0] == event:
            runs[-1][1] += 1
        else:
            runs.append([event, 1])
    return tuple((e, int(c)) for e, c in runs)


class PlannedFilter(Filter):
    """A schedule of releases fixed in advance, certified once as a whole.

    Exact optimal composition (Kairouz, Oh & Viswanath 2015) and numerical privacy-loss
    distributions (dominating pairs compose: Zhu, Dong & Wang 2022, Thm 10) are valid for
    *adaptive composition* — each release's input may depend on earlier outputs — but
    only when which mechanism comes at each position is fixed in advance. Choosing the
    next mechanism (or its noise) after seeing outputs is what a filter is for, and these
    methods are not valid filters (Rogers, Roth, Ullman & Vadhan 2016 show that
    composition bounds can fail when parameters are chosen adaptively). So a planned
    ledger accepts exactly the declared sequence, **in the declared order** (a schedule of
    identical steps, such as DP-SGD, has no order to keep). Stopping early is always
    allowed: the releases not made are a post-processing of the certified whole.

    The charge of a release is one position of the schedule; the budget is its length.
    The reported guarantee after any number of releases is the certified (ε, δ) of the
    whole schedule — an upper bound for every prefix of it.
    """

    name: ClassVar[str] = "plan"
    budget_type: ClassVar[type[Budget]] = ScheduleBudget

    def __init__(
        self,
        epsilon: float,
        delta: float,
        runs: tuple[Run, ...],
        method: str,
    ) -> None:
        super().__init__(epsilon, delta)
        if not runs:
            raise InvalidArgumentError("`events` must contain at least one release. Found none.")
        self.runs = runs
        self.method = method
        self._starts: list[int] = []
        position = 0
        for _, count in runs:
            self._starts.append(position)
            position += count
        self.length = position
        self.members = frozenset(event for event, _ in runs)
        self.composed: ev.Event = ev.Composed(
            tuple(event if count == 1 else ev.Repeated(event, count) for event, count in runs)
        )
        # certified if ε(δ) ≤ ε or δ(ε) ≤ δ: either is a proof of (ε, δ)-DP, and
        # calibration solves on δ(ε) — so what was calibrated is always accepted
        plan_epsilon = accountant_epsilon(self.composed, delta, method=method)
        if (
            plan_epsilon > epsilon
            and delta > 0
            and accountant_delta(self.composed, epsilon, method=method) <= delta
        ):
            plan_epsilon = epsilon
        self.plan_epsilon = plan_epsilon

    def event_at(self, position: int) -> ev.Event:
        """The release planned at ``position`` (0-based)."""
        index = bisect.bisect_right(self._starts, position) - 1
        return self.runs[index][0]

    def charge(self, event: ev.Event) -> Charge:
        """One position of the schedule, for a release that is in it."""
        if event not in self.members:
            raise NotApplicableError(
                f"{event!r} is not in this ledger's planned schedule; a planned ledger accepts "
                "exactly the declared releases."
            )
        return (1.0,)

    def exact_charge(self, event: ev.Event) -> Cost | None:
        """One position."""
        return (Fraction(1),) if event in self.members else None

    def admit(self, total: Total, event: ev.Event) -> None:
        """The release must be the next one of the schedule."""
        position = int(total[0])
        if position >= self.length:
            return  # the cost check refuses it (the schedule is used up)
        expected = self.event_at(position)
        if expected != event:
            raise NotApplicableError(
                f"the planned schedule's next release (number {position + 1} of "
                f"{self.length}) is {expected!r}, not {event!r}; a planned ledger accepts its "
                "releases in the declared order."
            )

    def fits(self, total: Total, event: ev.Event) -> int:
        """How many of the next planned releases are ``event`` (consecutively)."""
        position = int(total[0])
        if position >= self.length or self.event_at(position) != event:
            return 0
        index = bisect.bisect_right(self._starts, position) - 1
        count = self.runs[index][1] - (position - self._starts[index])
        for following, more in self.runs[index + 1 :]:
            if following != event:
                break
            count += more
        return count

    def remaining_events(self, total: Total) -> list[ev.Event]:
        """The planned releases not yet made, in order."""
        position = int(total[0])
        index = bisect.bisect_right(self._starts, position) - 1 if position < self.length else 0
        if position >= self.length:
            return []
        out = [self.runs[index][0]] * (self.runs[index][1] - (position - self._starts[index]))
        for event, count in self.runs[index + 1 :]:
            out.extend([event] * count)
        return out

    def refusal(self, requested: Budget, remaining: Budget) -> str:
        """The schedule is used up."""
        return (
            f"all {self.length} planned releases were made; a planned ledger accepts exactly "
            "the declared schedule. Nothing was charged."
        )

    def limit(self) -> Charge:
        """(length of the schedule,)."""
        return (float(self.length),)

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """The certified (ε, δ) of the whole schedule (an upper bound for every prefix)."""
        if total[0] == 0:
            return (0.0, 0.0)
        return (self.plan_epsilon, self.delta)

    def config(self) -> dict[str, Any]:
        """The method and the schedule."""
        return {"accountant": self.name, "method": self.method}


def planned_filter(epsilon: float, delta: float, body: dict[str, Any]) -> PlannedFilter:
    """The planned filter a plan receipt declares, refused if it is over (ε, δ)."""
    runs = tuple((ev.from_dict(e), int(c)) for e, c in body["schedule"])
    planned = PlannedFilter(epsilon, delta, runs, body["method"])
    if planned.plan_epsilon > epsilon:
        raise BudgetExceededError(
            f"the planned schedule costs ε = {planned.plan_epsilon!r} at δ = {delta!r} "
            f"by method {body['method']!r}, over the budget ε = {epsilon!r}; nothing "
            "was recorded.",
            requested=(planned.plan_epsilon, delta),
            remaining=(epsilon, delta),
        )
    return planned


__dir__ = namespace(__all__)
