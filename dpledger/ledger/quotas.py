"""Quotas: a sub-budget for an analyst or a project that draws from a ledger.

``ledger.quota("alice", epsilon=0.3, delta=1e-7)`` makes (or opens) the quota ``alice``;
a spend through it is charged to the ledger *and* to the quota, and must fit both — in
the same transaction (on PostgreSQL the database's trigger checks both, whatever the
client). The quota's (ε, δ) is turned into the ledger's currency by the rule that turns
the ledger's own budget into it (for an automatic ledger: for each filter it may settle
on), so both are compared exactly, in one currency. The ledger's budget remains the
privacy guarantee; a quota divides it between people or projects.

The quota's exact total is part of the ledger's sealed state (so opening costs the same
at any length of history) and is replayed from the receipts, which name their quota.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpledger._public import namespace
from dpledger._validation import check_positive, check_probability
from dpledger.errors import (
    BudgetExceededError,
    DPLedgerError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotApplicableError,
)
from dpledger.ledger.budgets import Budget
from dpledger.ledger.filters import AutoFilter, Filter, Total, make_filter
from dpledger.ledger.planned import PlannedFilter
from dpledger.ledger.receipts import Receipt, as_event, check_adjacency, shown_down

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = ["Quota", "add", "check_stored", "debit", "open_quota", "quota_filter", "totals_after"]


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"a quota's `name` must be a string. Found {name!r}.")
    if not 1 <= len(name) <= 200 or not name.isprintable():
        raise InvalidArgumentError(
            f"a quota's `name` must be 1 to 200 printable characters. Found {name!r}."
        )
    return name


def quota_filter(ledger: Ledger, name: str, currency: Filter) -> Filter:
    """The filter of quota ``name`` in the currency of ``currency`` (its limit is the quota's)."""
    defs = ledger._quota_defs
    if name not in defs and ledger._store is not None:
        defs.update(ledger._store.quotas())
    if name not in defs:
        raise InvalidArgumentError(
            f"the ledger has no quota {name!r}; make it with ledger.quota({name!r}, epsilon=...)."
        )
    if isinstance(currency, (PlannedFilter, AutoFilter)):
        raise NotApplicableError(
            "a quota draws in the ledger's currency, and a planned schedule has none to "
            "share: quotas apply to ledgers that are filters (not planned)."
        )
    cache: dict[tuple[str, str], Filter] = ledger.__dict__.setdefault("_quota_filters", {})
    key = (name, repr(sorted(currency.config().items())))
    found = cache.get(key)
    if found is None:
        epsilon, delta = defs[name]
        found = make_filter(currency.name, epsilon, delta, getattr(currency, "order", None))
        cache[key] = found
    return found


def _limits(ledger: Ledger, epsilon: float, delta: float) -> list[Any]:
    """The quota's exact limit in each currency the ledger keeps or may settle on."""
    from fractions import Fraction

    state = ledger._state.filter
    if isinstance(state, PlannedFilter):
        raise NotApplicableError("a planned ledger has no currency to share: no quotas.")
    candidates = state.candidates() if isinstance(state, AutoFilter) else [state]
    out = []
    for candidate in candidates:
        try:
            filt = make_filter(candidate.name, epsilon, delta, getattr(candidate, "order", None))
        except DPLedgerError:
            continue  # e.g. δ = 0 has no zCDP or GDP budget: refused if the ledger settles there
        out.append((candidate.config(), tuple(Fraction(x) for x in filt.limit())))
    if not out:
        raise InvalidArgumentError(
            f"a quota of ({epsilon!r}, {delta!r}) has no budget in this ledger's currency "
            f"{state.name!r}; give it a δ > 0."
        )
    return out


def open_quota(ledger: Ledger, name: str, *, epsilon: float, delta: float = 0.0) -> Quota:
    """A sub-budget ``name`` of (ε, δ) that draws from this ledger (created or opened).

    ``Ledger.quota``. A spend through the quota must fit both the quota and the ledger,
    checked in the same transaction (in PostgreSQL by the database, for both); the
    quota's (ε, δ) is converted to the ledger's currency with the rule its budget uses.
    Creating a quota on a team ledger needs the role dpledger_owner; a quota's budget is
    fixed once made (asking again with another budget is an error).

    Example:
        >>> from dpledger import Ledger, events as ev
        >>> team = Ledger(1.0, 1e-6, accountant="gdp")
        >>> alice = team.quota("alice", epsilon=0.3, delta=1e-7)
        >>> receipt = alice.spend(ev.Gaussian(sigma=30.0))
        >>> receipt.quota, alice.fits(ev.Gaussian(sigma=30.0)) < team.fits(ev.Gaussian(30.0))
        ('alice', True)
    """
    name = _check_name(name)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    if epsilon > ledger.epsilon or delta > ledger.delta:
        raise InvalidArgumentError(
            f"a quota must fit within its ledger's budget ({ledger.epsilon!r}, "
            f"{ledger.delta!r}). Found ({epsilon!r}, {delta!r})."
        )
    with ledger._lock:
        ledger.refresh()
        limits = _limits(ledger, epsilon, delta)
        if ledger._store is not None:
            stored = ledger._store.add_quota(name, epsilon, delta, limits)
        else:
            stored = ledger._quota_defs.setdefault(name, (epsilon, delta))
        if stored != (epsilon, delta):
            raise InvalidArgumentError(
                f"the quota {name!r} exists with budget {stored!r}; a quota's budget is fixed "
                "when it is made."
            )
        ledger._quota_defs[name] = stored
    return Quota(ledger, name, epsilon, delta)


def debit(
    ledger: Ledger,
    name: str,
    currency: Filter,
    charge: Total,
    totals: dict[str, Total] | None = None,
) -> tuple[Total, Total]:
    """(quota total after ``charge``, quota limit), or BudgetExceededError (nothing recorded).

    ``totals``: the quotas' totals to start from (default: the handle's own).
    """
    filt = quota_filter(ledger, name, currency)
    before = (ledger._quota_totals if totals is None else totals).get(name) or filt.zero()
    after = filt.add(before, charge)
    if not filt.within(after):
        remaining = filt.stated(filt.remaining(before), remains=True)
        requested = filt.stated(filt.shown(charge))
        raise BudgetExceededError(
            f"quota {name!r}: {filt.refusal(requested, remaining)}",
            requested=requested,
            remaining=remaining,
        )
    from fractions import Fraction

    return after, tuple(Fraction(x) for x in filt.limit())


def check_stored(ledger: Ledger, name: Any, currency: Filter, charge: Total) -> None:
    """A stored receipt charged to a quota must have fitted it (when its budget is known)."""
    _check_name(name)
    if ledger._store is not None or name in ledger._quota_defs:
        debit(ledger, name, currency, charge)


def add(ledger: Ledger, name: str, currency: Filter, charge: Total) -> None:
    """Add ``charge`` to quota ``name``'s exact total."""
    before = ledger._quota_totals.get(name) or currency.zero()
    ledger._quota_totals[name] = currency.add(before, charge)


def totals_after(
    ledger: Ledger,
    name: str | None,
    total: Total | None,
    before: dict[str, Total] | None = None,
) -> tuple[tuple[str, Total], ...]:
    """Every quota's total once the receipt being written (charged to ``name``) is in."""
    totals = dict(ledger._quota_totals if before is None else before)
    if name is not None and total is not None:
        totals[name] = total
    return tuple(sorted(totals.items()))


class Quota:
    """A sub-budget of a ledger (see :meth:`Ledger.quota <dpledger.Ledger.quota>`).

    Attributes:
        ledger: The ledger it draws from.
        name: Its name (recorded on each receipt charged to it).
        epsilon: Its ε.
        delta: Its δ.
    """

    def __init__(self, ledger: Ledger, name: str, epsilon: float, delta: float) -> None:
        self.ledger = ledger
        self.name = name
        self.epsilon = epsilon
        self.delta = delta

    def spend(
        self,
        item: Any = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        label: str | None = None,
    ) -> Receipt:
        """Charge one release to the quota and the ledger (both must fit; see ``Ledger.spend``)."""
        return self.ledger._spend(item, epsilon, delta, label, self.name)

    def release(
        self, mechanism: Any, value: Any, rng: Any = None, *, label: str | None = None
    ) -> Any:
        """Validate, charge to the quota and the ledger, then draw the noise."""
        validate = getattr(mechanism, "validate", None)
        if callable(validate):
            validate(value)
        self.spend(mechanism, label=label)
        return mechanism.release(value, rng)

    def _filter(self) -> tuple[Filter, Filter, Total]:
        ledger = self.ledger
        ledger.refresh()
        currency = ledger._state.filter
        filt = quota_filter(ledger, self.name, currency)
        return currency, filt, ledger._quota_totals.get(self.name) or filt.zero()

    def fits(self, item: Any) -> int:
        """How many more such releases fit both the quota and the ledger."""
        event = as_event(item, None, None)
        check_adjacency(event, self.ledger.adjacency)
        with self.ledger._lock:
            room = self.ledger.fits(event)
            currency = self.ledger._state.filter
            if isinstance(currency, AutoFilter):
                currency, _ = self.ledger._handler(self.ledger._state, event)
            filt = quota_filter(self.ledger, self.name, currency)
            total = self.ledger._quota_totals.get(self.name) or filt.zero()
            return min(room, filt.fits_count(total, currency.cost(event)))

    @property
    def spent(self) -> tuple[float, float]:
        """The (ε, δ) charged to this quota so far (at the quota's δ)."""
        with self.ledger._lock:
            if isinstance(self.ledger._state.filter, AutoFilter):
                return (0.0, 0.0)
            _, filt, total = self._filter()
            if not any(total):
                return (0.0, 0.0)
            return filt.guarantee(filt.shown(total))

    @property
    def remaining(self) -> Budget:
        """What the quota still allows, in the ledger's currency (the ledger may allow less)."""
        with self.ledger._lock:
            if isinstance(self.ledger._state.filter, AutoFilter):
                raise NotApplicableError(
                    "the ledger's currency is decided at its first release; the quota's "
                    "remaining budget is in that currency."
                )
            _, filt, total = self._filter()
            return shown_down(filt.budget(filt.remaining(total)))

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """The receipts charged to this quota, oldest first."""
        return tuple(r for r in self.ledger.receipts if r.quota == self.name)

    def __repr__(self) -> str:
        return (
            f"Quota({self.name!r}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"of {self.ledger!r})"
        )


__dir__ = namespace(__all__)
