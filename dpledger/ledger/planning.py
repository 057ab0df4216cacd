"""The one planning path: calibrate a schedule, reserve it on a ledger, release it in order.

Every noisy release dpledger makes — an estimator's fit, IRLS and noisy gradient descent,
a quantile, a descriptive statistic, and :meth:`Ledger.calibrate
<dpledger.Ledger.calibrate>` itself — is planned by :meth:`Ledger.reserve
<dpledger.Ledger.reserve>` (this module's :func:`reserve`), in four steps:

1. **Calibrate.** The smallest noise p at which the schedule ``make(p)`` meets its
   target: (ε, δ) jointly with the tightest non-adaptive method
   (:func:`dpledger.calibrate.solve`); or, for a ``share`` of what remains, in the
   ledger's own currency.
2. **In the ledger's currency.** On a shared ledger the schedule must also fit a
   ledger of the same kind holding (ε, δ) — the releases are charged one by one, each
   at its exact cost — so the shared ledger accepts what was calibrated; the noise is
   never below step 1's.
3. **Check.** When the reservation opens (after the caller has validated its
   statistics), the whole schedule is checked against the ledger and an undecided
   automatic filter is settled for it; a per-fit ledger *plans* it instead (the
   tightest method is then valid: :class:`~dpledger.ledger.filters.PlannedFilter`). A
   refused schedule records nothing and draws nothing.
4. **Noise.** The generator is derived from ``rng`` and, on a shared ledger, the
   ledger's position (:func:`noise_generator`), so two fits never draw the same noise.

Then :meth:`Reservation.release` charges each release before its noise is drawn. The
noise solve is exact where the ledger is: a release's cost is the filter's exact
rational cost (:meth:`Filter.cost <dpledger.ledger.filters.Filter.cost>`), summed
exactly, so "calibrated" and "accepted" can never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import check_rng
from dpledger._solve import NoSafeValueError, smallest_satisfying
from dpledger._validation import check_choice, check_positive, check_probability
from dpledger.accountant import METHODS
from dpledger.accountant import events as ev
from dpledger.calibrate.solver import solve
from dpledger.errors import (
    BudgetExceededError,
    CalibrationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotApplicableError,
    UnboundedLossError,
)
from dpledger.ledger.filters import (
    INFINITE,
    AutoFilter,
    Filter,
    RDPFilter,
    Total,
    make_filter,
    shown_value,
)
from dpledger.ledger.planned import PlannedFilter, schedule_runs
from dpledger.ledger.receipts import Receipt, as_event, check_adjacency, check_label
from dpledger.ledger.seeding import noise_generator

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = [
    "Repeat",
    "Reservation",
    "check_schedule",
    "noise_generator",  # from .seeding, where it lives
    "plan_schedule",
    "price_schedule",
    "reserve",
]

Schedule = Sequence[Any]
Make = Callable[[float], Schedule]


class Repeat(Sequence[Any]):
    """``item`` ``count`` times, without building the list: a schedule of identical releases.

    ``Ledger.calibrate(factory, count=2**40)`` calibrates 2⁴⁰ releases in the time of one
    (the planning path works on runs of identical releases).
    """

    def __init__(self, item: Any, times: int) -> None:
        self.item = item
        self.times = times

    def __len__(self) -> int:
        return self.times

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Repeat(self.item, len(range(*index.indices(self.times))))
        if not -self.times <= index < self.times:
            raise IndexError(index)
        return self.item


def _runs(events: Sequence[ev.Event]) -> tuple[tuple[ev.Event, int], ...]:
    """A schedule as runs of identical releases (event, count)."""
    if isinstance(events, Repeat):
        return ((events.item, events.times),)
    return schedule_runs(list(events))


class Reservation:
    """A calibrated schedule of releases on one ledger, released in order.

    Made by :meth:`Ledger.reserve <dpledger.Ledger.reserve>`; nothing is recorded until
    it opens. :meth:`open` checks the whole schedule against the ledger (or plans it, on
    a per-fit ledger) and derives the noise generator; :meth:`release` charges the next
    release of the schedule, then draws its noise.

    Attributes:
        ledger: The ledger the releases are charged to.
        mechanisms: The schedule: the mechanisms (or events) at the calibrated noise.
        noise: The calibrated noise parameter p (None for a schedule given as is).
        events: The privacy events of the schedule, in order.
        releases_: The events charged so far, in order.
        generator: The noise generator (None until the reservation opens).
    """

    def __init__(
        self,
        ledger: Ledger,
        mechanisms: Sequence[Any],
        noise: float | None,
        *,
        plan: bool,
        method: str,
        rng: Any,
        label: str | None,
    ) -> None:
        self.ledger = ledger
        self.mechanisms: Sequence[Any]
        self.events: Sequence[ev.Event]
        if isinstance(mechanisms, Repeat):
            self.mechanisms = mechanisms
            self.events = Repeat(as_event(mechanisms.item, None, None), mechanisms.times)
        else:
            self.mechanisms = tuple(mechanisms)
            self.events = tuple(as_event(m, None, None) for m in self.mechanisms)
        self.noise = noise
        self.releases_: list[ev.Event] = []
        self.generator: np.random.Generator | None = None
        self._plan = plan
        self._method = method
        self._rng = rng
        self._label = label
        self._opened = False
        self._guard: Callable[[Callable[[], None]], Any] | None = None
        self._decided: Filter | None = None  # an undecided auto ledger's choice, at open

    @property
    def opened(self) -> bool:
        """Has the schedule been checked (or planned) against the ledger?"""
        return self._opened

    @property
    def planned(self) -> bool:
        """Is the schedule planned on its ledger (a per-fit ledger) rather than checked?"""
        return self._plan

    def guard(self, wrapper: Callable[[Callable[[], None]], Any]) -> None:
        """Open through ``wrapper(open_now)`` (e.g. an estimator's one-fit budget claim)."""
        self._guard = wrapper

    def open(self) -> Reservation:
        """Check the whole schedule against the ledger (plan it on a per-fit ledger).

        Records nothing unless planning; settles an undecided automatic filter for the
        whole schedule. Idempotent.

        Raises:
            BudgetExceededError: The schedule does not fit; nothing is recorded.
            NotApplicableError: The ledger cannot account for one of its releases.
        """
        if not self._opened:
            if self._guard is None:
                self._open_now()
            else:
                self._guard(self._open_now)
        return self

    def _open_now(self) -> None:
        if self._opened:
            return
        if self._plan:
            self.ledger.plan(self.mechanisms, method=self._method, label=self._label)
            self.generator = noise_generator(self._rng, None)
        else:
            with self.ledger._lock:
                undecided = self._decided is not None and self.ledger._pending is None
                if undecided and isinstance(self.ledger._state.filter, AutoFilter):
                    self.ledger._pending = self._decided  # the currency it was calibrated in
                try:
                    self.ledger.check(self.mechanisms, decide=True)
                except BaseException:
                    if undecided:
                        self.ledger._pending = None  # a refused open decides nothing
                    raise
                # reservations of one ledger object opened at the same position (threads)
                # get different streams; sequential ones differ by the position itself
                opened: dict[tuple[int, str], int] = self.ledger.__dict__.setdefault(
                    "_opened_at", {}
                )
                head = self.ledger.head
                salt = opened.get(head, 0)
                opened[head] = salt + 1
                self.generator = noise_generator(self._rng, self.ledger, salt)
        self._opened = True

    def next_mechanism(self) -> Any:
        """The mechanism (or event) of the next release of the schedule."""
        position = len(self.releases_)
        if position >= len(self.mechanisms):
            raise InvalidArgumentError(
                f"all {len(self.mechanisms)} releases of this reservation were made."
            )
        return self.mechanisms[position]

    def release(self, value: Any, *, label: str | None = None) -> Any:
        """Charge the next release of the schedule, then draw its noise on ``value``.

        Validates ``value`` first (a malformed statistic costs nothing) and opens the
        reservation if it is not open yet. For a schedule entry that is an event (no
        mechanism draws it), only the charge is made and ``value`` is returned as is:
        the caller draws the release itself, after this returns.
        """
        label = check_label(label)
        _validate(self.next_mechanism(), value)
        self.open()
        return self._charge_and_draw(value, label)

    def charge(self, *, label: str | None = None) -> None:
        """Charge the next release of the schedule, whose noise the caller then draws.

        For releases no single mechanism draws (noise correlated across sites, a
        sampler's output); opens the reservation if it is not open yet.
        """
        label = check_label(label)
        self.next_mechanism()
        self.open()
        self._charge_and_draw(None, label)

    def release_all(self, named: Sequence[tuple[str, Any]], *, prefix: str = "") -> list[Any]:
        """Release the rest of the schedule: ``named`` gives each release's (label, value).

        A value may be a callable of the outputs so far (a statistic that depends on an
        earlier release). Every other value is validated before the reservation opens, so
        a fit never stops half-way and a refused one records nothing.
        """
        left = self.mechanisms[len(self.releases_) :]
        if len(named) != len(left):
            raise InvalidArgumentError(
                f"the schedule has {len(left)} releases left; {len(named)} values were given."
            )
        for mechanism, (name, value) in zip(left, named, strict=True):
            check_label(f"{prefix}{name}")
            if not callable(value):
                _validate(mechanism, value)
        self.open()
        outputs: list[Any] = []
        for name, value in named:
            if callable(value):
                value = value(list(outputs))
                _validate(self.next_mechanism(), value)
            outputs.append(self._charge_and_draw(value, f"{prefix}{name}"))
        return outputs

    def _charge_and_draw(self, value: Any, label: str | None) -> Any:
        """Charge the next release (its value validated, the reservation open), then draw."""
        mechanism = self.next_mechanism()
        self.ledger.spend(mechanism, label=label)
        self.releases_.append(self.events[len(self.releases_)])
        if isinstance(mechanism, ev.Event) or value is None:
            return value
        return mechanism.release(value, self.generator)

    def __repr__(self) -> str:
        return (
            f"Reservation({len(self.mechanisms)} releases, noise={self.noise!r}, "
            f"made={len(self.releases_)}, opened={self._opened})"
        )


def _validate(mechanism: Any, value: Any) -> None:
    validate = getattr(mechanism, "validate", None)
    if callable(validate):
        validate(value)


# -- the noise solve -------------------------------------------------------------------


def _first_event(
    events_of: Callable[[float], Sequence[ev.Event]], initial: float
) -> Sequence[ev.Event]:
    """The schedule's events at ``initial`` noise, or at the least 2ᵏ multiple that has some.

    Which filter handles a schedule depends on its kinds, not its noise, so a probe at too
    little noise (an overflowing Δ/σ) must not end a calibration.
    """
    p = initial
    while True:
        try:
            return events_of(p)
        except UnboundedLossError:
            if p > 2.0**1000:
                raise CalibrationError(
                    "no noise the mechanisms take (up to 2**1000 ≈ 1.1e301) gives this "
                    "release a finite guarantee; rescale the statistic.",
                    bracket=(initial, p),
                ) from None
            p *= 2.0


def _smallest_noise(accepted: Callable[[float], tuple[bool, float]], initial: float) -> float:
    """The smallest noise p with ``accepted(p)[0]`` (``accepted(p)[1]``: a continuous gap)."""
    start = check_positive("initial", initial)

    def excess(p: float) -> float:
        try:
            ok, gap = accepted(p)
        except (OverflowError, ZeroDivisionError, UnboundedLossError):
            return math.inf
        # the exact test decides the sign; the gap only guides the root finder
        return min(gap, 0.0) if ok else max(gap, 5e-324)

    hi = start
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 2.0**1000:  # the mechanisms' largest noise scale
            raise CalibrationError(
                "no noise parameter up to 2**1000 ≈ 1.1e301 fits this ledger's budget.",
                bracket=(start, hi),
            )
    lo = hi / 2.0
    while lo > 1e-300 and excess(lo) <= 0:
        hi, lo = lo, lo / 2.0
    try:
        return smallest_satisfying(excess, lo, hi, rtol=1e-12, what="noise parameter")
    except NoSafeValueError as error:
        raise CalibrationError(str(error), bracket=error.bracket) from None


def _fits_within(
    filt: Filter, total: Total, room: Sequence[Fraction], events: Sequence[ev.Event]
) -> tuple[bool, float]:
    """Do ``events``, charged one by one at their exact costs, fit ``room`` after ``total``?

    Returns (fits, gap): the gap is the largest relative overrun (negative when it
    fits), a continuous guide for the root finder; the exact test decides.
    """
    need = [Fraction(0)] * len(room)
    first = True
    for event, count in _runs(events):
        if first:
            filt.admit(total, event)
            first = False
        for k, cost in enumerate(filt.cost(event)):
            if cost >= INFINITE:
                return False, math.inf
            need[k] += count * cost
    worst, ok = -1.0, True
    for amount, cap in zip(need, room, strict=True):
        if amount == 0:
            continue
        if cap <= 0:
            return False, math.inf
        ok = ok and amount <= cap
        worst = max(worst, float((amount - cap) / cap))
    return ok, worst


def _room(filt: Filter, total: Total, share: float) -> list[Fraction]:
    """``share`` of what remains, exactly.

    A float share times a Fraction is a float, rounded (up, at times), and then the
    spend's exact check refused what this one accepted.
    """
    return [
        Fraction(share) * (Fraction(limit) - used)
        for used, limit in zip(total, filt.limit(), strict=True)
    ]


def _solve_share(
    filt: Filter,
    total: Total,
    share: float,
    events_of: Callable[[float], Sequence[ev.Event]],
    initial: float,
) -> float:
    room = _room(filt, total, share)
    return _smallest_noise(lambda p: _fits_within(filt, total, room, events_of(p)), initial)


def _choose_filter(
    auto: AutoFilter,
    events_of: Callable[[float], Sequence[ev.Event]],
    share: float,
    initial: float,
) -> tuple[float, Filter]:
    """Decide an undecided auto ledger for a share of it: the filter with least noise."""
    epsilon, delta = auto.epsilon, auto.delta
    found: list[tuple[float, int, Filter]] = []
    for rank, candidate in enumerate(auto.candidates()):
        try:
            p = _solve_share(candidate, candidate.zero(), share, events_of, initial)
        except (NotApplicableError, CalibrationError):
            continue
        found.append((p, rank, candidate))
    if not found and delta > 0:
        # only Rényi DP accounts for it: the order where the workload fits best,
        # re-chosen once at the calibrated noise (each solve is at a fixed order)
        p = initial
        for rank in range(2):
            at = _first_event(events_of, initial) if rank == 0 else events_of(p)
            order = RDPFilter.order_for(epsilon, delta, _composed(at))
            renyi = RDPFilter(epsilon, delta, order)
            p = _solve_share(renyi, renyi.zero(), share, events_of, initial)
            found.append((p, rank, renyi))
    if not found:
        raise NotApplicableError(
            f"no filter of this ledger can account for "
            f"{ev.Composed(tuple(_first_event(events_of, initial)))!r}."
        )
    p, _, chosen = min(found, key=lambda item: (item[0], item[1]))
    return p, chosen


def _composed(events: Sequence[ev.Event]) -> ev.Event:
    """The schedule as one event: a run of T identical releases is one repeated event."""
    parts = [e * c if c > 1 else e for e, c in _runs(events)]
    return parts[0] if len(parts) == 1 else ev.Composed(tuple(parts))


def _tightest(
    events_of: Callable[[float], Sequence[ev.Event]],
    epsilon: float,
    delta: float,
    method: str,
    initial: float,
    safe: bool,
) -> float:
    """The least noise at which the whole schedule meets (ε, δ) by ``method``."""
    try:
        return solve(
            lambda p: _composed(events_of(p)),
            epsilon=epsilon,
            delta=delta,
            method=method,
            initial=initial,
        )
    except CalibrationError as error:
        if safe:
            raise CalibrationError(
                f"{error} The safe (discrete) noise's grid adds a rounding term to every "
                "release's sensitivity, which no amount of noise removes; at so small a "
                "budget use safe_noise=False (textbook noise) or a larger epsilon.",
                bracket=error.bracket,
            ) from None
        raise


def _in_currency(
    ledger: Ledger,
    events_of: Callable[[float], Sequence[ev.Event]],
    epsilon: float,
    delta: float,
    initial: float,
    tightest: float,
) -> tuple[float, Filter | None]:
    """The least noise ≥ ``tightest`` that a like ledger holding (ε, δ) accepts.

    A ledger of the same currency holding only (ε, δ) must accept the schedule charged
    release by release.
    The shared ledger then charges that schedule in its currency. A currency that cannot
    express (ε, δ) on its own (a Rényi ledger whose order suits its whole budget, not
    this share) leaves the tightest noise: the shared ledger charges it at its order.

    An undecided automatic ledger is decided for the currency with the least noise (the
    filter returned, recorded when the reservation opens); otherwise None.
    """
    state = ledger._state
    if isinstance(state.filter, AutoFilter) and ledger._pending is None:
        found: list[tuple[float, int, Filter]] = []
        for rank, candidate in enumerate(state.filter.candidates()):
            try:
                like = make_filter(candidate.name, epsilon, delta)
                p = max(tightest, _solve_share(like, like.zero(), 1.0, events_of, initial))
            except (NotApplicableError, CalibrationError, InvalidArgumentError):
                continue
            found.append((p, rank, candidate))
        if found:
            p, _, chosen = min(found, key=lambda item: (item[0], item[1]))
            return p, chosen
    # the filter that would handle the schedule at the tightest noise (what the check at
    # open settles by; at the starting guess it could be another currency)
    config = ledger._currency(_composed(events_of(tightest)))
    if config.get("accountant") == "plan":
        raise InvalidArgumentError(
            "this ledger is planned: it accepts only the releases of its plan. Fit with "
            "ledger=None (a per-fit planned ledger), or share an unplanned ledger."
        )
    try:
        like = make_filter(config["accountant"], epsilon, delta, config.get("order"))
    except InvalidArgumentError:
        return tightest, None
    return max(tightest, _solve_share(like, like.zero(), 1.0, events_of, initial)), None


def check_schedule(ledger: Ledger, items: Any, decide: bool) -> None:
    """The body of :meth:`Ledger.check <dpledger.Ledger.check>` (see there)."""
    if isinstance(items, (ev.Event, str, bytes)) or not hasattr(items, "__iter__"):
        raise InvalidArgumentTypeError(
            f"`items` must be a sequence of releases (events or mechanisms). Found {items!r}."
        )
    events = [as_event(item, None, None) for item in items]
    for event in events:
        check_adjacency(event, ledger.adjacency)
    with ledger._lock:
        ledger.refresh()
        state, seq = ledger._state, len(ledger.receipts)
        chosen = None
        if isinstance(state.filter, AutoFilter) and ledger._pending is None and events:
            chosen = state.filter.settle(ev.Composed(tuple(events)))
            state = type(state)(chosen, chosen.zero())
        for k, event in enumerate(events):
            draft = {"seq": seq + k, "kind": "spend"}
            try:
                state = ledger._transition(state, draft, event)
            except BudgetExceededError as refused:
                raise BudgetExceededError(
                    f"release {k + 1} of {len(events)} would not fit: {refused}",
                    requested=refused.requested,
                    remaining=refused.remaining,
                ) from None
        if decide and chosen is not None:
            ledger._pending = chosen  # the first spend records this choice


def price_schedule(ledger: Ledger, items: Any) -> tuple[str, tuple[float, ...]]:
    """(currency, cost) of these releases in the ledger's filter, spending nothing.

    The filter is the one :func:`check_schedule` would check them under (an undecided
    automatic ledger's choice for the whole sequence); the cost is the exact sum of the
    releases' costs, shown rounded up. For previews: the budget a query would take.
    """
    events = [as_event(item, None, None) for item in items]
    with ledger._lock:
        ledger.refresh()
        state = ledger._state
        if isinstance(state.filter, AutoFilter) and ledger._pending is None and events:
            filt = state.filter.settle(ev.Composed(tuple(events)))
        else:
            filt, _ = ledger._handler(state, events[0])
        total = filt.zero()
        for event in events:
            total = filt.add(total, filt.cost(event))
        return filt.budget_type.currency, tuple(shown_value(c) for c in total)


def plan_schedule(ledger: Ledger, events: Any, method: Any, label: Any) -> Receipt:
    """The body of :meth:`Ledger.plan <dpledger.Ledger.plan>` (see there)."""
    if isinstance(events, (ev.Event, str, bytes)) or not hasattr(events, "__iter__"):
        raise InvalidArgumentTypeError(
            f"`events` must be a sequence of releases (events or mechanisms). Found {events!r}."
        )
    schedule = [as_event(e, None, None) for e in events]
    if not schedule:
        raise InvalidArgumentError("`events` must contain at least one release. Found none.")
    method = check_choice("method", method, METHODS)
    label = check_label(label)
    for e in schedule:
        check_adjacency(e, ledger.adjacency)
    runs = schedule_runs(schedule)
    extra = {"method": method, "schedule": [[ev.to_dict(e), c] for e, c in runs]}
    with ledger._lock:
        # certify once before the transaction (it may take a while), and fail fast
        ledger._planned(extra)
        first = PlannedFilter(ledger.epsilon, ledger.delta, runs, method).composed
        return ledger._commit("plan", first, label, extra)


# -- the one entry point -----------------------------------------------------------------


def reserve(
    ledger: Ledger,
    schedule: Make | Schedule,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    share: float | None = None,
    plan: bool = False,
    method: str = "auto",
    initial: float = 1.0,
    rng: Any = None,
    label: str | None = None,
    safe: bool = False,
) -> Reservation:
    """Plan a schedule of releases on ``ledger``: the one planning path (``Ledger.reserve``).

    Calibrates the schedule's noise, checks it, and returns a
    :class:`~dpledger.ledger.planning.Reservation` whose ``release`` charges and
    draws each release in order (see :mod:`dpledger.ledger.planning`). Nothing is
    recorded until the reservation opens (its first release, or ``open()``).

    Args:
        ledger: The ledger (``self`` of ``Ledger.reserve``).
        schedule: p ↦ the releases (mechanisms or events) at noise p, in order; or
            the releases themselves (nothing to calibrate).
        epsilon: With ``delta``: the guarantee the schedule must meet on its own (an
            estimator's fit). The noise is the tightest for (ε, δ) jointly, raised if
            needed so that a ledger of this kind holding (ε, δ) accepts it release
            by release — then this ledger charges it in its currency.
        delta: See ``epsilon``.
        share: Instead: the fraction of what remains that the schedule may use, in
            this ledger's currency (default 1 when no target is given).
        plan: On a ledger with nothing recorded: calibrate for its whole (ε, δ) with
            ``method`` and *plan* the schedule when the reservation opens.
        method: With ``plan``: the accounting method (default: tightest).
        initial: A starting guess for the noise.
        rng: The seed or Generator the noise is derived from (with this ledger's
            position unless planned; see :func:`~dpledger.ledger.planning.noise_generator`).
        label: With ``plan``: the plan receipt's label.
        safe: The mechanisms are safe (discrete) noise: a calibration that fails says
            so.

    Raises:
        CalibrationError: No noise in the searched range fits.
        NotApplicableError: The ledger's filter cannot account for a release.
        InvalidArgumentError: A planned ledger, or ``plan`` on one with receipts.

    Example:
        >>> from dpledger import Ledger, mechanisms
        >>> ledger = Ledger(1.0, 1e-5)
        >>> two = lambda s: [mechanisms.Gaussian(s)] * 2
        >>> plan = ledger.reserve(two, epsilon=0.5, delta=5e-6)
        >>> noisy = plan.release_all([("a", 10.0), ("b", 20.0)])
        >>> len(ledger.receipts), len(plan.releases_)
        (2, 2)
    """
    method = check_choice("method", method, METHODS)
    check_rng(rng)  # refused before anything is decided (an auto ledger's filter)
    label = check_label(label)
    if callable(schedule):
        make: Make = schedule
        fixed = None
    elif isinstance(schedule, (ev.Event, str, bytes)) or not hasattr(schedule, "__iter__"):
        raise InvalidArgumentTypeError(
            "`schedule` must be a callable noise -> releases, or a sequence of releases "
            f"(events or mechanisms). Found {schedule!r}."
        )
    else:
        fixed = list(schedule)
        if not fixed:
            raise InvalidArgumentError("`schedule` must contain at least one release. Found none.")
    if (epsilon is None) != (delta is None):
        raise InvalidArgumentError("`epsilon` and `delta` go together (the schedule's target).")
    if share is not None and epsilon is not None:
        raise InvalidArgumentError("give a target as `epsilon`/`delta` or as `share`, not both.")
    if plan and (share is not None or epsilon is not None):
        raise InvalidArgumentError(
            "a planned reservation uses the ledger's whole budget: no `share` or "
            "`epsilon`/`delta` with plan=True."
        )
    if share is not None:
        share = check_probability("share", share, low_open=True, high_open=False)
    if epsilon is not None:
        epsilon = check_positive("epsilon", epsilon)
        delta = check_probability("delta", delta)

    def events_of(p: float) -> Sequence[ev.Event]:
        made = make(p)
        if isinstance(made, Repeat):
            event = as_event(made.item, None, None)
            check_adjacency(event, ledger.adjacency)
            return Repeat(event, made.times)
        if isinstance(made, (ev.Event, str, bytes)) or not hasattr(made, "__iter__"):
            raise InvalidArgumentTypeError(
                "`schedule` must return a sequence of releases (events or mechanisms) for "
                f"the noise {p!r}. Found {made!r}."
            )
        out = []
        for item in made:
            event = as_event(item, None, None)
            check_adjacency(event, ledger.adjacency)
            out.append(event)
        if not out:
            raise InvalidArgumentError("`schedule` must contain at least one release. Found none.")
        return out

    with ledger._lock:
        if plan and ledger.receipts:
            raise InvalidArgumentError(
                "a plan needs a ledger with nothing recorded; this one has "
                f"{len(ledger.receipts)} receipts. Calibrate in its currency (plan=False)."
            )
        if fixed is not None:
            return Reservation(ledger, fixed, None, plan=plan, method=method, rng=rng, label=label)
        initial = check_positive("initial", initial)
        if plan:
            p = _tightest(events_of, ledger.epsilon, ledger.delta, method, initial, safe)
        elif epsilon is not None:
            assert delta is not None
            tightest = _tightest(events_of, epsilon, delta, "auto", initial, safe)
            p, decided = _in_currency(ledger, events_of, epsilon, delta, initial, tightest)
            reservation = Reservation(
                ledger, make(p), p, plan=plan, method=method, rng=rng, label=label
            )
            reservation._decided = decided
            return reservation
        else:
            p = _share_of_remaining(ledger, events_of, 1.0 if share is None else share, initial)
        return Reservation(ledger, make(p), p, plan=plan, method=method, rng=rng, label=label)


def _share_of_remaining(
    ledger: Ledger, events_of: Callable[[float], Sequence[ev.Event]], share: float, initial: float
) -> float:
    """The least noise whose schedule fits ``share`` of what remains, in the ledger's currency.

    An undecided auto ledger is decided here, for the filter with least noise; its first
    spend records that choice.
    """
    ledger.refresh()
    state = ledger._state
    if isinstance(state.filter, AutoFilter) and ledger._pending is None:
        p, chosen = _choose_filter(state.filter, events_of, share, initial)
        ledger._pending = chosen  # the first spend records this choice
        return p
    filt, total = ledger._handler(state, _composed(_first_event(events_of, initial)))
    return _solve_share(filt, total, share, events_of, initial)


__dir__ = namespace(__all__)
