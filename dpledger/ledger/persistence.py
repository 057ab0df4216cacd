"""A ledger's life outside the process: opening a store, attaching it, exports.

Each function takes the :class:`~dpledger.ledger.core.Ledger` (or its class) whose state
it builds or checks: a file or database is opened with the budget it was created with
and verified from its sealed checkpoint through the ledger's one transition; an export
is verified from its genesis to its sealed head.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.errors import (
    DPLedgerError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LedgerIntegrityError,
)
from dpledger.ledger import quotas
from dpledger.ledger.chain import Row, Snapshot, Store, Tip, canonical, check_head, verify_rows
from dpledger.ledger.filters import AutoFilter, Filter, Total
from dpledger.ledger.receipts import receipt_from_body
from dpledger.ledger.store import LedgerStore

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = [
    "URL_SCHEMES",
    "NotAtHeadError",
    "attach",
    "base",
    "catch_up",
    "check_expected_head",
    "copy_ledger",
    "from_config",
    "from_export",
    "hash_at",
    "is_url",
    "limits",
    "load_earlier",
    "open_file",
    "open_store",
    "origin",
    "replay",
    "restore",
    "state_at",
    "tip",
    "verify_all",
]

URL_SCHEMES = ("postgresql://", "postgres://")
"""A ``path`` starting with one of these is a PostgreSQL ledger (libpq's URL)."""


def is_url(path: Any) -> bool:
    """Whether ``path`` names a PostgreSQL ledger rather than a file."""
    return isinstance(path, str) and path.lower().startswith(URL_SCHEMES)


def open_store(path: Any, key: Any, *, readonly: bool, create: bool) -> Store:
    """The store ``path`` names: an SQLite file, or a ``postgresql://`` URL.

    ``create``: a ledger may be created there (``Ledger(...)``); otherwise it must exist
    (``Ledger.open``).
    """
    if not isinstance(path, (str, Path)):
        raise InvalidArgumentTypeError(
            f"`path` must be a str, a pathlib.Path or a postgresql:// URL. Found "
            f"{type(path).__name__}."
        )
    if key is not None and not isinstance(key, bytes):
        raise InvalidArgumentTypeError(f"`key` must be bytes. Found {type(key).__name__}.")
    if is_url(path):
        from dpledger.ledger.pgstore import PostgresStore  # psycopg is optional

        return PostgresStore(str(path), key, readonly=readonly, create=create)
    path = Path(path)
    if not create:
        try:
            exists = path.exists()
        except OSError as error:
            raise InvalidArgumentError(
                f"`path` is not usable: {error.strerror or error}. Found {str(path)[:80]!r}."
            ) from error
        if not exists:
            raise InvalidArgumentError(f"`path` does not exist: {str(path)[:200]!r}.")
    return LedgerStore(path, key, readonly=readonly)


def open_file(cls: type[Ledger], path: Any, key: Any, readonly: bool, expect_head: Any) -> Ledger:
    """The ledger kept at ``path``, a file or URL (the body of :meth:`Ledger.open`)."""
    store = open_store(path, key, readonly=bool(readonly), create=False)
    try:
        ledger = from_config(cls, store.read_config(), key, f"{store.where!r}: the stored")
        attach(ledger, store)
    except BaseException:
        store.close()
        raise
    if expect_head is not None:
        check_expected_head(ledger, expect_head)
    return ledger


def from_config(cls: type[Ledger], config: dict[str, Any], key: Any, where: str) -> Ledger:
    """A ledger with a stored or exported configuration (not yet attached to a file)."""
    ledger = cls.__new__(cls)
    try:
        ledger._setup(
            config.get("epsilon"),
            config.get("delta"),
            config.get("accountant"),
            config.get("adjacency"),
            config.get("order"),
            key,
        )
    except InvalidArgumentTypeError:
        if key is not None and not isinstance(key, bytes):
            raise  # the caller's key, not the configuration
        raise LedgerIntegrityError(f"{where} ledger configuration is invalid.") from None
    except DPLedgerError as error:
        raise LedgerIntegrityError(f"{where} ledger configuration is invalid: {error}") from error
    return ledger


def check_expected_head(ledger: Ledger, expect_head: Any) -> None:
    """Refuse a ledger that no longer holds a head recorded earlier (a rollback)."""
    try:
        count, digest = expect_head
        count = int(count)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"`expect_head` must be a (count, hash) pair from Ledger.head. Found {expect_head!r}."
        ) from error
    found = hash_at(ledger, count) if count >= 0 else None
    if found is None or found != digest:
        raise LedgerIntegrityError(
            f"the ledger does not contain the head {expect_head!r} recorded earlier: it was "
            f"rolled back to an older copy (it now has {ledger.head[0]} receipts)."
        )


def attach(ledger: Ledger, store: Store) -> None:
    """Keep ``ledger`` in ``store``: a new ledger, or one verified to hold the same budget."""
    path = store.where
    stored = store.initialise(ledger._config(), limits(ledger))
    mine = ledger._config()
    differing = {k: (stored.get(k), v) for k, v in mine.items() if stored.get(k) != v}
    if differing:
        store.close()
        details = ", ".join(
            f"{k}: file {a!r} vs requested {b!r}" for k, (a, b) in differing.items()
        )
        raise InvalidArgumentError(
            f"{str(path)!r} holds a ledger with a different budget ({details}); a ledger's "
            "budget is fixed when it is created. Use Ledger.open(path) to continue it."
        )
    if stored.get("keyed") != (ledger._key is not None):
        store.close()
        raise LedgerIntegrityError(
            f"{str(path)!r} was created {'with' if stored.get('keyed') else 'without'} a key; "
            "open it the same way."
        )
    try:
        restore(ledger, store.snapshot())
    except BaseException:
        store.close()
        raise
    ledger._store = store


def from_export(cls: type[Ledger], data: Any, key: Any) -> Ledger:
    """The in-memory ledger an export holds (the body of :meth:`Ledger.from_dict`)."""
    if not isinstance(data, dict) or not {"config", "receipts", "head"} <= data.keys():
        raise InvalidArgumentError(
            "`data` must be the output of Ledger.to_dict() (config, receipts and head)."
        )
    config, receipts = data["config"], data["receipts"]
    if not isinstance(config, dict) or not isinstance(receipts, list):
        raise LedgerIntegrityError("the ledger export is malformed.")
    ledger = from_config(cls, config, key, "the exported")
    if canonical(config) != canonical(ledger._stored_config()):
        raise LedgerIntegrityError("the ledger configuration in `data` does not verify.")
    try:
        raw = [
            (
                r.get("seq"),
                canonical({k: v for k, v in r.items() if k != "hash"}),
                r.get("hash"),
            )
            for r in receipts
        ]
    except (AttributeError, TypeError, ValueError) as error:
        raise LedgerIntegrityError(f"the exported receipts are malformed: {error}") from error
    rows = verify_rows(raw, 0, ledger._genesis, key, "export")
    last = rows[-1][1] if rows else ledger._genesis
    check_head(data["head"], len(rows), last, key, "export")
    ledger._absorb(rows)
    return ledger


__dir__ = namespace(__all__)


def _copy_in(ledger: Ledger, body: dict[str, Any], digest: str) -> None:
    """Append a receipt of another store verbatim (same body, so the same hash)."""
    from dpledger.ledger.chain import Entry

    store = ledger._store
    assert store is not None
    pending: list[Any] = []

    def build(new: list[Any], previous: str, head: Tip | None = None) -> Entry:
        if new or head is not None or body.get("prev") != previous:
            raise LedgerIntegrityError(
                "the destination ledger changed while it was being copied into; copy into a "
                "ledger nobody else uses."
            )
        event, state, charge = replay(ledger, body)
        quota = body.get("quota")
        quota_total = None
        if quota is not None:
            quota_total, _ = quotas.debit(ledger, quota, state.filter, charge)
        pending.append((event, state, charge))
        spend = body["kind"] == "spend"
        return Entry(
            body=body,
            charge=charge,
            filter=state.filter.config(),
            total=state.total,
            spent=(body["epsilon"], body["delta"]) if spend else ledger._spent,
            limit=tuple(Fraction(x) for x in state.filter.limit()),
            origin=origin(ledger),
            quota=quota,
            quota_total=quota_total,
            quotas=quotas.totals_after(ledger, quota, quota_total),
            imported=True,
        )

    with ledger._lock:
        _, _, written = store.append(ledger._count(), ledger._tip_hash(), build)
        if written != digest:
            raise LedgerIntegrityError(
                f"receipt {body.get('seq')} hashes differently in the copy (another key?)."
            )
        event, state, charge = pending[-1]
        if body.get("quota") is not None:
            quotas.add(ledger, body["quota"], state.filter, charge)
        ledger._install(body, written, event, state)


def copy_ledger(
    source: Any,
    destination: Any,
    *,
    key: bytes | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Copy a ledger between stores (file ↔ PostgreSQL) with its chain and seals unchanged.

    The source is verified in full first; each receipt is appended to the destination
    verbatim (the same bytes, so the same hashes and head) through the same checks as a
    spend — the database's included — and the copy is verified in full at the end. The
    destination must be new or empty. Quotas are copied with their budgets.

    Returns:
        The number of receipts copied.

    Raises:
        InvalidArgumentError: The destination already holds receipts.
        LedgerIntegrityError: The source or the copy does not verify.
    """
    from dpledger.ledger.core import Ledger

    source_ledger = Ledger.open(source, key=key, readonly=True)
    try:
        count = source_ledger.verify()
        receipts = source_ledger.receipts
        rows = list(source_ledger._rows)
        head = source_ledger.head
        defined = source_ledger._store.quotas() if source_ledger._store is not None else {}
        store = open_store(destination, key, readonly=False, create=True)
        copy = from_config(Ledger, source_ledger._config(), key, "the source's")
        attach(copy, store)
        try:
            if copy._count() != 0:
                raise InvalidArgumentError(
                    f"the destination {store.where!r} already holds a ledger with "
                    f"{copy._count()} receipts; copy into a new file or ledger name."
                )
            for name, (epsilon, delta) in sorted(defined.items()):
                copy.quota(name, epsilon=epsilon, delta=delta)
            for done, (body, digest) in enumerate(rows, start=1):
                _copy_in(copy, body, digest)
                if progress is not None and (done % 1000 == 0 or done == len(rows)):
                    progress(done, len(rows))
            if copy.verify() != count or copy.head != head or len(receipts) != count:
                raise LedgerIntegrityError("the copy does not end at the source's head.")
        finally:
            copy.close()
    finally:
        source_ledger.close()
    return count


# -- the ledger's state from a store: restore, replay, earlier receipts, full check --------


def origin(ledger: Ledger) -> Tip:
    """The state of a ledger with nothing recorded."""
    base = ledger._base
    return Tip(0, ledger._genesis, base.config(), base.zero(), (0.0, 0.0))


def tip(ledger: Ledger) -> Tip:
    """The ledger handle's current state, as a store seals it."""
    return Tip(
        ledger._count(),
        ledger._tip_hash(),
        ledger._state.filter.config(),
        ledger._state.total,
        ledger._spent,
        tuple(sorted(ledger._quota_totals.items())),
    )


def limits(ledger: Ledger) -> list[tuple[dict[str, Any], tuple[Fraction, ...]]]:
    """Each filter the ledger may keep, with its exact limit (what a database enforces).

    One for a fixed accountant; an automatic one's candidates (a Rényi order chosen at the
    first release gets the budget the database computes with the same conversion).
    """
    base = ledger._base
    filters = base.candidates() if isinstance(base, AutoFilter) else [base]
    return [(f.config(), tuple(Fraction(x) for x in f.limit())) for f in filters]


def _filter_of(ledger: Ledger, config: dict[str, Any], first: Row | None) -> Filter:
    """The filter a stored state names (a plan's is rebuilt from receipt 0)."""
    if config == ledger._base.config():
        return ledger._base
    if config.get("accountant") == "plan":
        if first is None:
            raise LedgerIntegrityError("a planned ledger's plan (receipt 0) is missing.")
        return ledger._planned(first[0])
    return ledger._declared_filter(config)


def restore(ledger: Ledger, snapshot: Snapshot) -> None:
    """Take a store's state: from its sealed checkpoint, then the receipts after it.

    The receipts after the checkpoint go through the ledger's one transition; the state
    they lead to must be the sealed running total at the head.
    """
    checkpoint, sealed = snapshot.checkpoint, snapshot.tip
    if checkpoint is not None and checkpoint.count > 0:
        try:
            filt = _filter_of(ledger, checkpoint.filter, snapshot.first)
        except DPLedgerError as error:
            raise LedgerIntegrityError(
                f"the ledger's checkpoint does not verify: {error}"
            ) from error
        if len(checkpoint.total) != len(filt.limit()) or not filt.within(checkpoint.total):
            raise LedgerIntegrityError("the ledger's checkpoint total is not within budget.")
        ledger._state = type(ledger._state)(filt, checkpoint.total)
        ledger._pending = None
        ledger._first, ledger._base_hash = checkpoint.count, checkpoint.hash
        ledger._spent = checkpoint.spent
        ledger._quota_totals = dict(checkpoint.quotas)
    ledger._absorb(snapshot.rows)
    if sealed is not None and sealed != tip(ledger):
        raise LedgerIntegrityError(
            "the ledger's sealed running total does not match its receipts: the state "
            "record was rewritten."
        )


class NotAtHeadError(Exception):
    """The head's sealed state is not one this handle can build on (the store replays)."""


def state_at(ledger: Ledger, head: Tip) -> Any:
    """The ledger's state at the sealed ``head``, to build a spend on before replaying.

    The store has verified the head's seal and that it describes the head row; the
    receipts others appended wait until after the commit.

    Only when the head keeps this handle's own filter (the steady state of a shared
    ledger); an automatic ledger another handle settled, a plan, or a total that does not
    fit the filter raise :class:`NotAtHeadError`, and the store verifies and replays the
    receipts first, as before. What is decided is exactly what replaying them would
    decide — the head's state is what they lead to, which :func:`catch_up` checks right
    after the commit — and the database checks the new total against its own.
    """
    filt = ledger._state.filter
    if head.filter != filt.config() or isinstance(filt, AutoFilter):
        raise NotAtHeadError
    if len(head.total) != len(filt.limit()) or not filt.within(head.total):
        raise NotAtHeadError
    return type(ledger._state)(filt, head.total)


def base(
    ledger: Ledger, new: list[Row], head: Tip | None
) -> tuple[Any, int, tuple[float, float], dict[str, Total]]:
    """(state, receipt number, spent, quota totals) a new receipt is built on.

    After replaying ``new`` (what other handles committed first); or, given the sealed
    ``head``, its state (:func:`state_at`) — the rows are replayed by :func:`catch_up`
    after the commit.
    """
    if head is None:
        ledger._absorb(new)
        return ledger._state, ledger._count(), ledger._spent, ledger._quota_totals
    return state_at(ledger, head), head.count, head.spent, dict(head.quotas)


def catch_up(ledger: Ledger, rows: list[Row], head: Tip, seq: int) -> None:
    """Replay the receipts a spend was built past (verified by the store after its commit).

    They must lead to the sealed head the spend was built on; otherwise the ledger's
    receipts and its sealed state disagree (someone rewrote one of them).
    """
    try:
        ledger._absorb(rows)
        if tip(ledger) != head:
            raise LedgerIntegrityError(
                "the receipts appended since this handle last looked do not lead to the "
                "ledger's sealed state: the state or the receipts were rewritten."
            )
    except LedgerIntegrityError as error:
        raise LedgerIntegrityError(
            f"{error} This spend was recorded (receipt {seq}) but nothing was released; "
            "open the ledger again and run `dpledger ledger verify`."
        ) from None


def load_earlier(ledger: Ledger) -> None:
    """Read the receipts before the checkpoint the ledger was opened at (once)."""
    if ledger._first == 0 or ledger._store is None:
        return
    rows = ledger._store.prefix(ledger._first)
    if len(rows) != ledger._first or rows[-1][1] != ledger._base_hash:
        raise LedgerIntegrityError(
            f"the ledger's first {ledger._first} receipts do not lead to its checkpoint: "
            "receipts were edited or removed."
        )
    filt = ledger._state.filter  # decided at receipt 0: the same for every receipt
    earlier = []
    for body, digest in rows:
        try:
            earlier.append(receipt_from_body(body, digest, ev.from_dict(body["event"]), filt))
        except (DPLedgerError, KeyError, TypeError, ValueError) as error:
            raise LedgerIntegrityError(
                f"receipt {body.get('seq')!r} does not verify: {error}"
            ) from error
    ledger._receipts[:0] = earlier
    ledger._rows[:0] = rows
    ledger._first, ledger._base_hash = 0, ledger._genesis


def hash_at(ledger: Ledger, count: int) -> str | None:
    """The chain hash after ``count`` receipts (None if the ledger is shorter)."""
    if count >= ledger._first:
        index = count - ledger._first
        if index > len(ledger._receipts):
            return None
        return ledger._base_hash if index == 0 else ledger._receipts[index - 1].hash
    return None if ledger._store is None else ledger._store.hash_at(count)


def replay(ledger: Ledger, body: dict[str, Any]) -> tuple[ev.Event, Any, Total]:
    """Re-check a stored receipt with the ledger's transition: (event, state after, charge)."""
    seq = body.get("seq")
    if seq != ledger._count():
        raise LedgerIntegrityError(f"receipt {seq!r} is out of sequence.")
    try:
        event = ev.from_dict(body["event"])
        state = ledger._transition(ledger._state, body, event)
        spend = body["kind"] == "spend"
        if body["kind"] == "plan":
            event = state.filter.composed  # type: ignore[attr-defined]
        expected_charge = list(state.filter.shown_cost(event)) if spend else []
        charge = state.filter.cost(event) if spend else state.filter.zero()
        stored_charge = [float(x) for x in body["charge"]]
        stored_total = [float(x) for x in body["total"]]
        if body.get("quota") is not None:
            quotas.check_stored(ledger, body["quota"], state.filter, charge)
    except (DPLedgerError, KeyError, TypeError, ValueError) as error:
        raise LedgerIntegrityError(f"receipt {seq!r} does not verify: {error}") from error
    if stored_charge != expected_charge:
        raise LedgerIntegrityError(f"receipt {seq}: the charge recorded does not match its event.")
    if stored_total != list(state.filter.shown(state.total)):
        raise LedgerIntegrityError(f"receipt {seq}: the running total does not add up.")
    return event, state, charge


def verify_all(ledger: Ledger, progress: Callable[[int, int], None] | None) -> int:
    """The body of :meth:`Ledger.verify` (see there)."""
    with ledger._lock:
        if ledger._store is None:
            load_earlier(ledger)
            rows, sealed = list(ledger._rows), None
        else:
            rows, sealed = ledger._store.full()
        fresh = from_config(type(ledger), ledger._config(), ledger._key, "the stored")
        for key, (epsilon, delta) in ledger._quota_defs.items():
            fresh._quota_defs[key] = (epsilon, delta)
        step = 1000
        for start in range(0, len(rows), step):
            fresh._absorb(rows[start : start + step])
            if progress is not None:
                progress(min(start + step, len(rows)), len(rows))
        if sealed is not None and sealed != tip(fresh):
            raise LedgerIntegrityError(
                "the ledger's sealed running total does not match its receipts replayed "
                "from the genesis."
            )
        return len(rows)
