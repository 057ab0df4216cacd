"""A ledger's life outside the process: opening a file, attaching a store, exports.

Each function takes the :class:`~dpledger.ledger.core.Ledger` (or its class) whose state
it builds or checks: a file is opened with the budget it was created with and verified
receipt by receipt through the ledger's one transition; an export is verified from its
genesis to its sealed head.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpledger._public import namespace
from dpledger.errors import (
    DPLedgerError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LedgerIntegrityError,
)
from dpledger.ledger.store import LedgerStore, canonical, check_head, verify_rows

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = ["attach", "check_expected_head", "from_config", "from_export", "open_file"]


def open_file(cls: type[Ledger], path: Any, key: Any, readonly: bool, expect_head: Any) -> Ledger:
    """The ledger kept in the file ``path`` (the body of :meth:`Ledger.open`)."""
    if not isinstance(path, (str, Path)):
        raise InvalidArgumentTypeError(
            f"`path` must be a str or pathlib.Path. Found {type(path).__name__}."
        )
    path = Path(path)
    try:
        exists = path.exists()
    except OSError as error:
        raise InvalidArgumentError(
            f"`path` is not usable: {error.strerror or error}. Found {str(path)[:80]!r}."
        ) from error
    if not exists:
        raise InvalidArgumentError(f"`path` does not exist: {str(path)[:200]!r}.")
    if key is not None and not isinstance(key, bytes):
        raise InvalidArgumentTypeError(f"`key` must be bytes. Found {type(key).__name__}.")
    store = LedgerStore(path, key, readonly=bool(readonly))
    try:
        ledger = from_config(cls, store.read_config(), key, f"{str(path)!r}: the stored")
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
    receipts = ledger.receipts
    hashes = [ledger._genesis] + [r.hash for r in receipts]
    if not 0 <= count < len(hashes) or hashes[count] != digest:
        raise LedgerIntegrityError(
            f"the ledger does not contain the head {expect_head!r} recorded earlier: it was "
            f"rolled back to an older copy (it now has {len(receipts)} receipts)."
        )


def attach(ledger: Ledger, store: LedgerStore) -> None:
    """Keep ``ledger`` in ``store``: a new file, or one verified to hold the same budget."""
    path = store.path
    stored = store.initialise(ledger._config())
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
        ledger._absorb(store.verify())
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
