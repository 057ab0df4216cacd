"""The Ledger: a privacy filter that charges every release before it happens.

``spend`` charges a release *before* it happens and refuses one that would overrun the
budget, recording nothing; ``release`` validates, charges, then draws the noise. Every
currency is a valid filter under adaptivity (:mod:`.filters`), so the whole interaction
is (ε, δ)-DP however the next release is chosen; ``plan`` certifies a fixed schedule
once with a method valid only for it (:mod:`.planned`); ``reserve`` is the one planning
path (:mod:`.planning`).

One code path: every receipt — written now, or read back from a file or an export —
goes through the same transition (:meth:`Ledger._transition`), so a file can never hold
a spend its budget refuses. With ``path=`` the ledger lives in an SQLite file
(:mod:`.store`, :mod:`.persistence`) or, with a ``postgresql://`` URL, in a PostgreSQL
database shared by a team (:mod:`.pgstore`, where the database itself refuses an
overspend): hash-chained receipts, a sealed head and running total, one transaction per
receipt, verified on open from a checkpoint (docs/ledger.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from dpledger._format import up as fmt_up
from dpledger._public import namespace
from dpledger._validation import check_choice, check_positive, check_probability
from dpledger.accountant import events as ev
from dpledger.calibrate.solver import check_count
from dpledger.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LedgerIntegrityError,
    NotApplicableError,
)
from dpledger.ledger import persistence, planning, quotas
from dpledger.ledger.budgets import Budget
from dpledger.ledger.chain import (
    FORMAT,
    Entry,
    Row,
    Store,
    Tip,
    canonical,
    chain_hash,
    make_head,
)
from dpledger.ledger.filters import (
    ACCOUNTANT_CHOICES,
    FILTERS,
    AutoFilter,
    Filter,
    Total,
    make_filter,
)
from dpledger.ledger.hints import alternatives
from dpledger.ledger.planned import PlannedFilter, planned_filter
from dpledger.ledger.receipts import (
    Receipt,
    as_event,
    check_adjacency,
    check_label,
    new_body,
    principal,
    receipt_from_body,
    shown_down,
)

__all__ = ["Ledger", "Receipt"]


@dataclass(frozen=True)
class _State:
    """The ledger's state after a receipt: the filter in force and the exact total."""

    filter: Filter
    total: Total


def _corrupt(seq: Any, error: Exception) -> NoReturn:
    raise LedgerIntegrityError(f"receipt {seq!r} does not verify: {error}") from error


class Ledger:
    """A privacy budget that every release is charged to before it happens.

    Args:
        epsilon: The total ε of the budget (> 0).
        delta: The total δ of the budget, in [0, 1).
        accountant: The filter: "basic", "zcdp", "gdp", "rdp", or "auto" (basic when δ = 0,
            zCDP otherwise — the widest valid filter; pick "gdp" for Gaussian-only work and
            "rdp" for subsampled training).
        adjacency: "add_remove" or "replace_one": the neighbouring relation all
            sensitivities charged to this ledger are stated under.
        path: Where to keep the ledger (created if absent, verified if not): an SQLite
            file, or a team's ledger in PostgreSQL,
            ``"postgresql://user@host:5432/db?ledger=NAME"`` (libpq's URL; the password
            comes from ``PGPASSWORD``, ``~/.pgpass`` or a service file, never the URL;
            ``ledger`` names the ledger in that database, default "default").
        order: The Rényi order of an "rdp" ledger (default: best for Gaussian-like work).
        workload: For an "rdp" ledger without ``order``: a release (or a whole schedule)
            like those to come; the order is the one at which the most of them fit.
        key: Optional secret bytes; the receipt chain and the head's seal become HMACs
            (tamper-evident even against someone who can rewrite the file; see
            docs/ledger.md for what is and is not detected).

    A ``Ledger`` is safe to share between threads. It is never copied: ``copy.copy`` and
    ``copy.deepcopy`` return the ledger itself (a copy would duplicate the budget), and
    only a persisted ledger without a key can be pickled (the unpickled object reopens
    the same file).

    Example:
        >>> from dpledger import Ledger, events as ev
        >>> ledger = Ledger(epsilon=1.0, delta=1e-6)
        >>> receipt = ledger.spend(ev.Gaussian(sigma=20.0), label="mean age")
        >>> ledger.fits(ev.Gaussian(sigma=20.0))
        21
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        accountant: str = "auto",
        adjacency: str = ev.ADD_REMOVE,
        path: str | Path | None = None,
        order: float | None = None,
        workload: Any = None,
        key: bytes | None = None,
    ) -> None:
        self._setup(epsilon, delta, accountant, adjacency, order, key, workload)
        if path is not None:
            self._attach(persistence.open_store(path, key, readonly=False, create=True))

    def _setup(
        self,
        epsilon: Any,
        delta: Any,
        accountant: Any,
        adjacency: Any,
        order: Any,
        key: Any,
        workload: Any = None,
    ) -> None:
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_probability("delta", delta)
        accountant = check_choice("accountant", accountant, ACCOUNTANT_CHOICES)
        self.adjacency = check_choice("adjacency", adjacency, ev.ADJACENCIES)
        if key is not None and not isinstance(key, bytes):
            raise InvalidArgumentTypeError(f"`key` must be bytes. Found {type(key).__name__}.")
        if key is not None and not key:
            raise InvalidArgumentError("`key` must not be empty. Found b''.")
        self._key: bytes | None = key
        if workload is not None:
            workload = as_event(workload, None, None)
        self._base: Filter = make_filter(accountant, self.epsilon, self.delta, order, workload)
        self._state = _State(self._base, self._base.zero())
        self._pending: Filter | None = None  # an auto ledger's choice made by calibrate()
        self._lock = threading.RLock()
        self._receipts: list[Receipt] = []  # from receipt number self._first on
        self._rows: list[Row] = []
        self._first = 0  # receipts before it are read from the store when asked for
        self._spent = (0.0, 0.0)
        self._quota_totals: dict[str, Total] = {}  # exact totals of quotas, in the currency
        self._quota_defs: dict[str, tuple[float, float]] = {}
        self._store: Store | None = None
        self._genesis = chain_hash("", canonical(self._stored_config()), key)
        self._base_hash = self._genesis  # the hash after receipt self._first - 1

    # -- construction from files and dicts ---------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        key: bytes | None = None,
        readonly: bool = False,
        expect_head: tuple[int, str] | None = None,
    ) -> Ledger:
        """Open an existing ledger (file or ``postgresql://`` URL) with its stored budget.

        Opening verifies the receipts after the last checkpoint (at most 64) against the
        sealed head and running total, so it costs the same at any length of history;
        :meth:`verify` re-verifies everything.

        Args:
            path: The ledger file, or a ``postgresql://...?ledger=NAME`` URL.
            key: The key it was created with, if any.
            readonly: Read only (works in a read-only directory); spending raises.
            expect_head: A :attr:`head` recorded earlier (count, hash); the file must still
                contain that receipt, which detects a rollback to an older copy of the file.

        Raises:
            LedgerIntegrityError: The file is not a ledger, or does not verify.
        """
        return persistence.open_file(cls, path, key, readonly, expect_head)

    def _config(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "adjacency": self.adjacency,
            **self._base.config(),
        }

    def _stored_config(self) -> dict[str, Any]:
        return {**self._config(), "format": FORMAT, "keyed": self._key is not None}

    def _attach(self, store: Store) -> None:
        persistence.attach(self, store)

    def _count(self) -> int:
        """The number of receipts this handle knows of."""
        return self._first + len(self._receipts)

    def _tip_hash(self) -> str:
        """The chain hash after the last receipt this handle knows of."""
        return self._receipts[-1].hash if self._receipts else self._base_hash

    def _load_earlier(self) -> None:
        persistence.load_earlier(self)

    # -- the one transition ----------------------------------------------------------------

    def _transition(self, state: _State, body: dict[str, Any], event: ev.Event) -> _State:
        """The state after receipt ``body`` (for ``event``), or an error if it is not allowed.

        The single rule for every receipt, new or stored. Raises BudgetExceededError or
        NotApplicableError for a release the budget does not admit.
        """
        kind = body.get("kind")
        if kind == "plan":
            if body.get("seq") != 0:
                raise InvalidArgumentError(
                    "plan() needs a ledger with nothing recorded; this one has "
                    f"{body.get('seq')} receipts (possibly spent through another handle on the "
                    "same file). A plan must account for every release, so it comes first."
                )
            planned = self._planned(body)
            return _State(planned, planned.zero())
        if kind != "spend":
            raise InvalidArgumentError(f"unknown receipt kind {kind!r}.")
        filt, before = self._handler(state, event, body.get("filter"))
        filt.admit(before, event)
        charge = filt.cost(event)
        total = filt.add(before, charge)
        if not filt.within(total):
            remaining = filt.stated(filt.remaining(before), remains=True)
            requested = filt.stated(filt.shown(charge))
            raise BudgetExceededError(
                filt.refusal(requested, remaining),
                requested=requested,
                remaining=remaining,
            )
        return _State(filt, total)

    def _alternatives(self, event: ev.Event) -> str:
        """Which other accountant would have accepted ``event`` after the same releases.

        Replays the spends under each other filter incrementally (cached per ledger, so a
        refusal costs one charge per new receipt, not a replay of the whole ledger).
        """
        if isinstance(self._state.filter, PlannedFilter):
            return ""
        self._load_earlier()
        spends = [r.event for r in self._receipts if r.kind == "spend"]
        cache: dict[str, list[Any]] = self.__dict__.setdefault("_replays", {})
        return alternatives(self._state.filter.name, self.epsilon, self.delta, spends, cache, event)

    def _handler(
        self, state: _State, event: ev.Event, declared: Any = None
    ) -> tuple[Filter, Total]:
        """The filter that handles ``event`` and the total it starts from.

        An undecided auto ledger decides here, once: by the filter a stored first receipt
        declares, by a choice :meth:`calibrate` made, or by :meth:`AutoFilter.settle`.
        """
        if not isinstance(state.filter, AutoFilter):
            return state.filter, state.total
        if declared is not None:
            filt = self._declared_filter(declared)
        elif self._pending is not None:
            filt = self._pending
        else:
            filt = state.filter.settle(event)
        return filt, filt.zero()

    def _currency(self, item: Any) -> dict[str, Any]:
        """The configuration of the filter that would handle ``item`` now.

        For estimators that calibrate a fit's share in this ledger's currency.
        """
        event = as_event(item, None, None)
        with self._lock:
            self.refresh()
            filt, _ = self._handler(self._state, event)
            return filt.config()

    def _declared_filter(self, declared: Any) -> Filter:
        if not isinstance(declared, dict) or declared.get("accountant") not in FILTERS:
            raise InvalidArgumentError(f"the receipt declares an unknown filter {declared!r}.")
        return make_filter(declared["accountant"], self.epsilon, self.delta, declared.get("order"))

    def _planned(self, body: dict[str, Any]) -> PlannedFilter:
        return planned_filter(self.epsilon, self.delta, body)

    def _install(self, body: dict[str, Any], digest: str, event: ev.Event, state: _State) -> None:
        self._state = state
        if not isinstance(state.filter, AutoFilter):
            self._pending = None
        self._rows.append((body, digest))
        self._receipts.append(receipt_from_body(body, digest, event, state.filter))
        if body["kind"] == "spend":
            self._spent = (body["epsilon"], body["delta"])

    def _absorb(self, rows: Sequence[Row]) -> None:
        """Add verified stored receipts, re-checking each with :meth:`_transition`."""
        for body, digest in rows:
            event, state, charge = persistence.replay(self, body)
            if body.get("quota") is not None:
                quotas.add(self, body["quota"], state.filter, charge)
            self._install(body, digest, event, state)

    # -- spending ------------------------------------------------------------------------

    def spend(
        self,
        item: Any = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        label: str | None = None,
    ) -> Receipt:
        """Charge one release to the budget, before it happens.

        Args:
            item: A privacy event, or a mechanism (anything with ``.event``).
            epsilon: Instead of ``item``: charge an (ε, δ)-DP release.
            delta: With ``epsilon``: its δ (default 0).
            label: Free text kept on the receipt.

        Returns:
            The receipt of the charge (durable in the file before this returns).

        Raises:
            BudgetExceededError: The charge would overrun the budget; nothing is recorded.
            NotApplicableError: This ledger's filter cannot account for the release.
        """
        return self._spend(item, epsilon, delta, label, None)

    def _spend(self, item: Any, epsilon: Any, delta: Any, label: Any, quota: str | None) -> Receipt:
        """The body of :meth:`spend` (and of a quota's spend, charged to both)."""
        event = as_event(item, epsilon, delta)
        label = check_label(label)
        check_adjacency(event, self.adjacency)
        extra = None
        if item is not None and not isinstance(item, ev.Event):
            extra = {"mechanism": repr(item)}
        try:
            return self._commit("spend", event, label, extra, quota)
        except (BudgetExceededError, NotApplicableError) as refused:
            if str(refused).startswith(("quota ", "the database refused")):
                raise  # not this ledger's filter: another accountant would not help
            hint = self._alternatives(event)
            if not hint:
                raise
            if isinstance(refused, BudgetExceededError):
                raise BudgetExceededError(
                    f"{refused} {hint}", requested=refused.requested, remaining=refused.remaining
                ) from None
            raise NotApplicableError(f"{refused} {hint}") from None

    def release(
        self, mechanism: Any, value: Any, rng: Any = None, *, label: str | None = None
    ) -> Any:
        """Validate ``value``, charge ``mechanism.event``, then draw the noise.

        The input is validated first (every dpledger mechanism has ``validate``), so a
        malformed value costs nothing; the charge is committed (to the file, if any)
        before the noise is drawn; the noise is never drawn if the charge fails.
        """
        validate = getattr(mechanism, "validate", None)
        if callable(validate):
            validate(value)
        self.spend(mechanism, label=label)
        return mechanism.release(value, rng)

    def _commit(
        self,
        kind: str,
        event: ev.Event,
        label: str | None,
        extra: dict[str, Any] | None = None,
        quota: str | None = None,
    ) -> Receipt:
        pending: list[_State] = []
        built_on: list[Tip] = []

        def build(new: list[Row], previous: str, head: Tip | None = None) -> Entry:
            # after what others committed first: replayed now, or (a database store under
            # contention) the head's sealed state, their receipts replayed after the commit
            before, seq, spent, quota_totals = persistence.base(self, new, head)
            draft = {"seq": seq, "kind": kind, **(extra or {})}
            state = self._transition(before, draft, event)
            if kind == "spend" and isinstance(before.filter, AutoFilter):
                extra_filter = {"filter": state.filter.config()}
            else:
                extra_filter = {}
            shown_event = state.filter.composed if kind == "plan" else event  # type: ignore[attr-defined]
            body = {
                **new_body(kind, shown_event, label, state.filter, state.total, seq),
                "principal": {**principal(), **(self._store.identity() if self._store else {})},
                **(extra or {}),
                **extra_filter,
            }
            filt = state.filter
            charge = filt.cost(event) if kind == "spend" else filt.zero()
            quota_total = quota_limit = None
            if quota is not None:
                body["quota"] = quota
                quota_total, quota_limit = quotas.debit(self, quota, filt, charge, quota_totals)
            body["prev"] = previous
            canonical(body)  # fail before writing if anything is not serialisable
            pending.append(state)
            built_on[:] = [] if head is None else [head]
            return Entry(
                body=body,
                charge=charge,
                filter=filt.config(),
                total=state.total,
                spent=(body["epsilon"], body["delta"]) if kind == "spend" else spent,
                limit=tuple(Fraction(x) for x in filt.limit()),
                origin=persistence.origin(self),
                quota=quota,
                quota_total=quota_total,
                quota_limit=quota_limit,
                quotas=quotas.totals_after(self, quota, quota_total, quota_totals),
            )

        with self._lock:
            if self._store is not None:
                new, body, digest = self._store.append(self._count(), self._tip_hash(), build)
                if built_on:
                    persistence.catch_up(self, new, built_on[-1], body["seq"])
            else:
                previous = self._tip_hash()
                body = build([], previous).body
                digest = chain_hash(previous, canonical(body), self._key)
            state = pending[-1]
            if quota is not None:
                quotas.add(self, quota, state.filter, state.filter.cost(event))
            self._install(
                body, digest, ev.from_dict(body["event"]) if kind == "plan" else event, state
            )
            return self._receipts[-1]

    # -- calibration in the ledger's own currency -----------------------------------------

    def calibrate(
        self,
        factory: Callable[[float], Any],
        *,
        count: int = 1,
        share: float = 1.0,
        plan: bool = False,
        method: str = "auto",
        initial: float = 1.0,
    ) -> Any:
        """The mechanism ``factory(p)`` with the least noise p that this ledger accepts.

        Without ``plan``: the smallest p such that ``count`` releases of
        ``factory(p).event`` fit within ``share`` of what remains, solved in the ledger's
        own currency with the same exact arithmetic ``spend`` uses — so every release it
        was calibrated for is accepted (unless another handle spends in between), and
        ``share=1`` uses the remaining budget up to the solver's tolerance.

        With ``plan=True`` (a ledger with nothing recorded): the schedule of ``count``
        releases is calibrated with the tightest non-adaptive method for the ledger's
        whole (ε, δ) and planned (:meth:`plan`), so the ledger accepts exactly those
        releases — the path for a training run or any fixed schedule.

        A thin wrapper over :meth:`reserve` (the one planning path).

        Args:
            factory: p ↦ a mechanism (or event) whose privacy improves as p grows.
            count: Releases to calibrate for.
            share: Fraction of the remaining budget, in (0, 1] (not with ``plan``).
            plan: Calibrate the whole schedule and plan it.
            method: With ``plan``: the accounting method (default: tightest).
            initial: A starting guess for p.

        Returns:
            ``factory(p)``.

        Raises:
            CalibrationError: No p in the searched range fits.
            NotApplicableError: The ledger's filter cannot account for the release.

        Example:
            >>> from dpledger import Ledger, mechanisms
            >>> ledger = Ledger(1.0, 1e-5)
            >>> mech = ledger.calibrate(lambda s: mechanisms.Gaussian(s), count=1000)
            >>> ledger.fits(mech)
            1000
        """
        if not callable(factory):
            raise InvalidArgumentTypeError(
                f"`factory` must be a callable noise -> mechanism. Found {factory!r}."
            )
        count = check_count(count)
        share = check_probability("share", share, low_open=True, high_open=False)
        if plan and share != 1.0:
            raise InvalidArgumentError(
                f"`share` applies without `plan` only (a plan covers the whole budget). Found "
                f"share={share!r}."
            )
        with self._lock:
            if plan:
                self.refresh()
            reservation = self.reserve(
                lambda p: planning.Repeat(factory(p), count),
                share=None if plan else share,
                plan=plan,
                method=method,
                initial=initial,
            )
            if plan:
                reservation.open()  # the plan is recorded now
            return reservation.mechanisms[0]

    reserve = planning.reserve  # the one planning path (documented there)

    # -- quotas --------------------------------------------------------------------------

    quota = quotas.open_quota  # a sub-budget that draws from this ledger (documented there)

    # -- planned schedules ---------------------------------------------------------------

    def plan(
        self, events: Iterable[Any], *, method: str = "auto", label: str | None = None
    ) -> Receipt:
        """Declare the whole schedule of releases in advance, and certify it once.

        For methods that are valid only for a schedule fixed in advance (exact optimal
        composition, PLD): the composition of ``events`` must meet the ledger's (ε, δ) by
        ``method``; from then on the ledger accepts exactly these releases, in this order,
        and nothing else (see :class:`~dpledger.ledger.filters.PlannedFilter` for why the
        order is kept). A plan must come first: it is refused on a ledger with anything
        recorded — checked inside the same transaction that writes it, so a stale handle
        on a shared file cannot plan over another handle's spends — and a plan can never
        be replaced.

        Raises:
            BudgetExceededError: The schedule does not fit the budget; nothing is recorded.
            InvalidArgumentError: The ledger already has receipts.
        """
        return planning.plan_schedule(self, events, method, label)

    @property
    def path(self) -> Path | str | None:
        """The file the ledger is kept in, or its ``postgresql://`` URL (None in memory)."""
        return None if self._store is None else self._store.path

    @property
    def planned_remaining(self) -> list[ev.Event] | None:
        """The planned releases not yet made, in order (None if the ledger has no plan)."""
        with self._lock:
            state = self._state
            if not isinstance(state.filter, PlannedFilter):
                return None
            return state.filter.remaining_events(state.total)

    # -- reading -------------------------------------------------------------------------

    @property
    def accountant(self) -> str:
        """The filter in use ("basic", "zcdp", "gdp", "rdp", or "plan" once planned)."""
        return self._state.filter.name

    @property
    def budget(self) -> Budget:
        """The whole budget in the ledger's currency."""
        filt = self._state.filter
        return shown_down(filt.budget(filt.limit()))

    @property
    def spent(self) -> tuple[float, float]:
        """The filter-tracked (ε, δ) spent so far (never above the budget).

        Read from the store first: other processes' spends are included.
        """
        with self._lock:
            self.refresh()
            return self._spent

    @property
    def remaining(self) -> Budget:
        """What the budget still allows, in the ledger's currency (read fresh, as ``spent``)."""
        with self._lock:
            self.refresh()
            filt, total = self._state.filter, self._state.total
            # printed rounded down: what remains must not look larger than it is
            return filt.stated(filt.remaining(total), remains=True)

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Every receipt, oldest first (read from the store first, as ``spent``)."""
        with self._lock:
            self.refresh()
            self._load_earlier()
            return tuple(self._receipts)

    @property
    def head(self) -> tuple[int, str]:
        """(number of receipts, hash of the last one): record it to detect rollbacks later."""
        with self._lock:
            self.refresh()
            return (self._count(), self._tip_hash())

    def refresh(self) -> None:
        """Read receipts other processes added to the store (no-op in memory).

        Only the receipts added since this handle last looked are read, verified and
        replayed: the cost does not grow with the ledger's history.
        """
        with self._lock:
            if self._store is not None:
                self._absorb(self._store.since(self._count(), self._tip_hash()))

    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-verify the whole ledger from its genesis; return the number of receipts.

        Every receipt's hash and chain link, every charge recomputed from its event, every
        running total replayed through the same rule as a spend, and the head and sealed
        running total checked against the result. (Opening verifies only the receipts
        after the last checkpoint; this is the full check — ``dpledger ledger verify``.)

        Args:
            progress: Called as ``progress(done, total)`` while the receipts are replayed.

        Raises:
            LedgerIntegrityError: Anything does not verify.
        """
        return persistence.verify_all(self, progress)

    def check(self, items: Iterable[Any], *, decide: bool = False) -> None:
        """Raise unless these releases, spent now in this order, would all be accepted.

        Records nothing: it replays the releases on a copy of the current state with the
        same rule ``spend`` applies (:meth:`_transition`). An estimator calls it before its
        first release so that a fit never stops half-way for lack of budget. (Another
        handle on the same file may still spend in between; each ``spend`` re-checks.)

        An undecided "auto" ledger is checked under the filter it would choose for the
        whole sequence (not for its first release alone: a Laplace release followed by
        Gaussian ones needs zCDP, not basic composition). With ``decide=True`` and a
        sequence that fits, it keeps that choice for its next spend (the first release
        of the sequence records it).

        Raises:
            BudgetExceededError: Release ``k`` of the sequence would overrun the budget.
            NotApplicableError: This ledger cannot account for one of them.
        """
        planning.check_schedule(self, items, decide)

    def partition(
        self,
        data: Any,
        *,
        by: str,
        parts: Sequence[Any],
        share: float = 1.0,
        label: str | None = None,
    ) -> Any:
        """Disjoint parts of ``data``, each with a child ledger of the same budget; charged once.

        Returns :class:`~dpledger.ledger.partitions.Partitions` (``parts["north"].data``,
        ``.ledger``); the proof, the currencies and persistence are in
        :mod:`dpledger.ledger.partitions`; an example is in docs/analysis.md.
        """
        from dpledger.ledger.partitions import partition

        return partition(self, data, by=by, parts=parts, share=share, label=label)

    def split(self, k: int) -> Any:
        """K parts of what remains: pass one as a query's ``share`` (:mod:`~dpledger.ledger.split`).

        Each takes an even part of what remains when its query is charged; together they
        use the whole remainder, exactly (the last takes all that is left).
        """
        from dpledger.ledger.split import split

        return split(self, k)

    def fits(self, item: Any) -> int:
        """How many more releases of this event (or mechanism) the budget allows now.

        Exactly the number of consecutive ``spend`` calls that would succeed (totals are
        exact sums); re-reads the file first, so other handles' spends are counted.
        """
        event = as_event(item, None, None)
        check_adjacency(event, self.adjacency)
        with self._lock:
            self.refresh()
            filt, total = self._handler(self._state, event)
            try:
                filt.admit(total, event)
            except NotApplicableError:
                return 0
            return filt.fits(total, event)

    # -- serialisation -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Configuration, receipts and the sealed head, JSON-ready (exports, in-memory)."""
        with self._lock:
            count, digest = self.head
            self._load_earlier()
            return {
                "config": self._stored_config(),
                "receipts": [{**body, "hash": digest} for body, digest in self._rows],
                "head": make_head(count, digest, self._key),
            }

    @classmethod
    def from_dict(cls, data: Any, *, key: bytes | None = None) -> Ledger:
        """Rebuild an in-memory ledger from :meth:`to_dict`, verifying all of it.

        The chain must verify from the configuration's genesis and end exactly at the
        exported head, whose seal must verify (an HMAC when keyed): a truncated, edited or
        reordered export is refused.

        Raises:
            LedgerIntegrityError: A receipt, the chain, the head or the configuration does
                not verify.
        """
        return persistence.from_export(cls, data, key)

    def close(self) -> None:
        """Close the ledger file or database connection (if any)."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # a budget is never duplicated
    def __copy__(self) -> Ledger:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Ledger:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        if self._store is None or self._key is not None:
            raise InvalidArgumentTypeError(
                "this Ledger cannot be pickled: a copy of an in-memory ledger would duplicate "
                "its budget, and a keyed ledger's key must not travel in a pickle. Share the "
                "object, or keep the ledger in a file (path=...) and Ledger.open it where needed."
            )
        return (_reopen, (str(self._store.path),))

    def __repr__(self) -> str:
        eps, delta = self.spent
        where = f", path={self._store.where!r}" if self._store is not None else ""
        return (
            f"Ledger(epsilon={self.epsilon!r}, delta={self.delta!r}, accountant="
            f"{self.accountant!r}{where}; spent ({fmt_up(eps)}, {delta:g}), "
            f"{self._count()} receipts)"
        )


def _reopen(path: str) -> Ledger:
    """Unpickle a persisted ledger: open the same file."""
    return Ledger.open(path)


__dir__ = namespace(__all__)
