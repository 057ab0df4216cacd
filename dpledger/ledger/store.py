"""Ledger persistence: the hash chain, the sealed head and state, and the SQLite file store.

What every store keeps (SQLite here, PostgreSQL in :mod:`.pgstore`): the configuration,
the genesis hash (the hash of the configuration), append-only receipts
``(seq, body, hash)`` with ``hash = H(previous hash ‖ body)`` (SHA-256, or HMAC-SHA256
when a key is given), the *head* — the number of receipts, the hash of the last one and a
seal ``H("head" ‖ count ‖ hash)`` — and the *state*: the exact running total in the
ledger's currency after the last receipt, the filter in force, the (ε, δ) spent, and a
*checkpoint* (the same after an earlier receipt, at most :data:`CHECKPOINT_EVERY` back),
all under one seal. Opening a ledger verifies the chain from the checkpoint to the head
and replays those receipts from the checkpoint's total, so it costs the same at 10² and
10⁵ receipts; :meth:`Ledger.verify <dpledger.Ledger.verify>` (``dpledger ledger verify``)
re-verifies everything from the genesis. A file written before the state existed is
verified whole on open, and gains a state at its next receipt.

The SQLite file: ``meta(key, value)`` holds the configuration, genesis, head and state;
``receipts(seq, body, hash)``. The file carries SQLite's ``application_id`` so that
another application's database is never mistaken for (or turned into) a ledger.

What verification detects (the threat model, also in docs/ledger.md):

* **Without a key** — accidents and careless edits: an edited receipt or configuration,
  a deleted or truncated tail whose head was left alone, a torn or corrupt file. Anyone
  who can write the file can also recompute every SHA-256, so deliberate rewriting
  (including deleting receipts *and* rewriting the head) is not detected.
* **With a key** — everything above, and any forgery by someone without the key: an
  edited receipt, a receipt chain cut back to an earlier receipt or to the genesis (the
  head's seal is an HMAC over count and hash, which they cannot recompute), a head moved
  to an earlier receipt. What no key can detect on its own is the *replay of a whole
  earlier copy* of the file (a backup restored over it): that copy is authentic. Keep
  :attr:`Ledger.head` somewhere else (an experiment log) and pass it back as
  ``Ledger.open(..., expect_head=...)`` to detect a rollback of that kind too.

Opening verifies the receipts after the checkpoint; an edit of an older receipt is found
by the full verification, not on open.

Durability. The database runs in rollback-journal mode (``journal_mode=DELETE``,
``synchronous=FULL``): when a commit returns, every committed receipt is in the main
file itself, so a plain copy of the ``.ledger`` file (a backup, rsync) holds the whole
ledger — a write-ahead log would keep recent receipts in a ``-wal`` file that such a copy
misses, silently restoring spent budget. Rollback-journal mode also lets a ledger in a
read-only directory be read (``readonly=True``).

Concurrency. Each write is one ``BEGIN IMMEDIATE`` transaction that re-reads and
verifies what other processes appended before deciding; writers take turns first come,
first served (:mod:`.fairlock`), not by SQLite's busy wait, which starves the slower
process. Each read is one read transaction (one snapshot of ``meta`` and ``receipts``
together). One connection per process is shared by the threads of that process under a
lock; a forked child opens its own.
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError, LedgerIntegrityError
from dpledger.ledger.chain import (
    APPLICATION_ID,
    FORMAT,
    Build,
    Row,
    Snapshot,
    Tip,
    canonical,
    chain_hash,
    check_head,
    check_state,
    check_tip,
    make_head,
    next_checkpoint,
    parse_quotas,
    seal,
    state_record,
    verify_rows,
)
from dpledger.ledger.fairlock import TicketLock

__all__ = ["APPLICATION_ID", "FORMAT", "LedgerStore", "canonical", "seal"]


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    """Turn SQLite's and the OS's errors about the file into dpledger errors."""
    try:
        yield
    except sqlite3.DatabaseError as error:  # includes OperationalError
        text = str(error).lower()
        if "readonly" in text or "read-only" in text:
            raise InvalidArgumentError(
                f"the ledger file {str(path)!r} (or its directory) is read-only, so nothing can "
                "be spent from it; open it with Ledger.open(path, readonly=True) to read it."
            ) from error
        if "unable to open" in text:
            raise InvalidArgumentError(
                f"cannot open the ledger file {str(path)!r}: {error} (check that its directory "
                "exists and is writable)."
            ) from error
        if "locked" in text or "busy" in text:
            raise LedgerIntegrityError(
                f"the ledger file {str(path)!r} stayed locked by another process: {error}."
            ) from error
        raise LedgerIntegrityError(
            f"{str(path)!r} is not a readable dpledger ledger (corrupt, truncated or not an "
            f"SQLite database): {error}."
        ) from error


class LedgerStore:
    """One ledger file. Safe to share between the threads of a process and between processes.

    Args:
        path: The SQLite file.
        key: Optional HMAC key for the chain and the head's seal.
        readonly: Open for reading only (no file or journal is written; works in a
            read-only directory).
    """

    def __init__(self, path: str | Path, key: bytes | None = None, *, readonly: bool = False):
        self.path = Path(path)
        self._key = key
        self.readonly = readonly
        try:
            is_dir, is_file = self.path.is_dir(), self.path.is_file()
            parent_ok = self.path.parent.is_dir()
        except OSError as error:
            raise InvalidArgumentError(
                f"`path` is not usable: {error.strerror or error}. Found {str(self.path)[:80]!r}."
            ) from error
        if is_dir:
            raise InvalidArgumentError(
                f"`path` must be a ledger file, not a directory. Found {str(self.path)!r}."
            )
        if readonly and not is_file:
            raise InvalidArgumentError(f"`path` does not exist: {str(self.path)!r}.")
        if not readonly and not parent_ok:
            raise InvalidArgumentError(
                f"the directory of `path` does not exist: {str(self.path.parent)!r}."
            )
        self._lock = threading.RLock()
        self._turns = TicketLock(self.path.with_name(self.path.name + ".lock"))
        self._pid = -1
        self._conn: sqlite3.Connection | None = None
        with self._lock:
            self._connection()

    @property
    def where(self) -> str:
        """The file, as shown in messages."""
        return str(self.path)

    def identity(self) -> dict[str, Any]:
        """What the store adds to a receipt's principal (nothing: the OS user is recorded)."""
        return {}

    # -- connection ---------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (a forked child opens its own). Call under the lock."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        with _translated(self.path):
            if self.readonly:
                uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
                conn = sqlite3.connect(
                    uri, uri=True, timeout=120.0, isolation_level=None, check_same_thread=False
                )
            else:
                conn = sqlite3.connect(
                    str(self.path), timeout=120.0, isolation_level=None, check_same_thread=False
                )
            try:
                conn.execute("PRAGMA busy_timeout=120000")
                if not self.readonly:
                    mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()
                    if mode is None or str(mode[0]).lower() != "delete":
                        raise LedgerIntegrityError(
                            f"{str(self.path)!r}: could not switch the ledger to rollback-journal "
                            f"mode (got {mode!r}); is another program holding it open?"
                        )
                    conn.execute("PRAGMA synchronous=FULL")
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            self._turns.close()

    def hash(self, previous: str, body: str) -> str:
        """The chain hash of ``body`` after ``previous``."""
        return chain_hash(previous, body, self._key)

    @contextmanager
    def _transaction(self, immediate: bool) -> Iterator[sqlite3.Connection]:
        """One transaction (IMMEDIATE for writes, in turn; deferred for a consistent read)."""
        with (
            self._lock,
            self._turns.hold() if immediate else _nothing(),
            _translated(self.path),
        ):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- creating and reading -------------------------------------------------------------

    def initialise(self, config: dict[str, Any], limits: list[Any] | None = None) -> dict[str, Any]:
        """Create the ledger with ``config``, or return the stored config if it exists.

        ``limits`` (what a database store enforces) is not needed here: a file's writer is
        trusted to run this library's checks.

        Raises:
            LedgerIntegrityError: The file is another application's SQLite database, or a
                ledger of an older format.
        """
        if self.readonly:
            return self.read_config()
        with self._transaction(immediate=True) as conn:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            if app != APPLICATION_ID and tables:
                raise LedgerIntegrityError(
                    f"{str(self.path)!r} is an SQLite database of another application (tables: "
                    f"{', '.join(sorted(tables))}); dpledger will not add a ledger to it. "
                    "Choose a new file."
                )
            if app == APPLICATION_ID and tables:
                return self._config(conn)
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE receipts "
                "(seq INTEGER PRIMARY KEY, body TEXT NOT NULL, hash TEXT NOT NULL)"
            )
            body = canonical({**config, "format": FORMAT, "keyed": self._key is not None})
            genesis = self.hash("", body)
            conn.execute("INSERT INTO meta VALUES ('config', ?)", (body,))
            conn.execute("INSERT INTO meta VALUES ('genesis', ?)", (genesis,))
            conn.execute(
                "INSERT INTO meta VALUES ('head', ?)",
                (canonical(make_head(0, genesis, self._key)),),
            )
            result: dict[str, Any] = json.loads(body)
            return result

    def _config(self, conn: sqlite3.Connection) -> dict[str, Any]:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            raise LedgerIntegrityError(
                f"{str(self.path)!r} is not a dpledger ledger (SQLite application_id {app:#x})."
            )
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='config'").fetchone()
        except sqlite3.OperationalError as error:
            raise LedgerIntegrityError(
                f"{str(self.path)!r} is not a dpledger ledger: {error}."
            ) from error
        if row is None:
            raise LedgerIntegrityError(
                f"{str(self.path)!r} is not a dpledger ledger (no configuration)."
            )
        try:
            config = json.loads(row[0])
        except ValueError as error:
            raise LedgerIntegrityError(
                f"{str(self.path)!r}: the ledger configuration is not valid JSON."
            ) from error
        if not isinstance(config, dict) or config.get("format") != FORMAT:
            found = config.get("format") if isinstance(config, dict) else None
            raise LedgerIntegrityError(
                f"{str(self.path)!r} is a ledger of format {found!r}; this version reads "
                f"{FORMAT!r} only."
            )
        return config

    def read_config(self) -> dict[str, Any]:
        """The stored configuration (raises if the file is not a ledger)."""
        with self._transaction(immediate=False) as conn:
            return self._config(conn)

    def _meta(self, conn: sqlite3.Connection) -> tuple[dict[str, str], str]:
        """The metadata, checked: (meta, genesis)."""
        where = str(self.path)
        self._config(conn)
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        for needed in ("config", "genesis", "head"):
            if needed not in meta:
                raise LedgerIntegrityError(f"{where}: ledger metadata {needed!r} is missing.")
        genesis = self.hash("", meta["config"])
        if not hmac.compare_digest(genesis, str(meta["genesis"])):
            raise LedgerIntegrityError(
                f"{where}: the ledger configuration was modified (or the key is wrong)."
            )
        return meta, genesis

    def _json(self, text: str, what: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as error:
            raise LedgerIntegrityError(
                f"{self.path!s}: the ledger's {what} is not valid JSON."
            ) from error

    def _rows(self, conn: sqlite3.Connection, start: int, stop: int | None = None) -> list[Any]:
        if stop is None:
            query, args = (
                "SELECT seq, body, hash FROM receipts WHERE seq >= ? ORDER BY seq",
                (start,),
            )
        else:
            query = "SELECT seq, body, hash FROM receipts WHERE seq >= ? AND seq < ? ORDER BY seq"
            args = (start, stop)  # type: ignore[assignment]
        return conn.execute(query, args).fetchall()

    def _state(self, meta: dict[str, str]) -> tuple[Tip, Tip] | None:
        if "state" not in meta:
            return None
        return check_state(self._json(meta["state"], "state"), self._key, str(self.path))

    def snapshot(self) -> Snapshot:
        """The sealed state and the receipts after its checkpoint, verified, in one read.

        Raises:
            LedgerIntegrityError: The configuration, a receipt, the head or the state does
                not verify.
        """
        where = str(self.path)
        with self._transaction(immediate=False) as conn:
            meta, genesis = self._meta(conn)
            head = self._json(meta["head"], "head")
            state = self._state(meta)
            if state is not None and isinstance(head, dict) and state[0].count != head.get("count"):
                state = None  # written by an older version (no state): verify from the genesis
            if state is None:
                rows = verify_rows(self._rows(conn, 0), 0, genesis, self._key, where)
                check_head(head, len(rows), rows[-1][1] if rows else genesis, self._key, where)
                return Snapshot(None, None, rows, None)
            tip, checkpoint = state
            start = checkpoint.count
            rows = verify_rows(self._rows(conn, start), start, checkpoint.hash, self._key, where)
            check_head(
                head, start + len(rows), rows[-1][1] if rows else checkpoint.hash, self._key, where
            )
            check_tip(tip, head, where)
            first = None
            if start > 0:
                first = verify_rows(self._rows(conn, 0, 1), 0, genesis, self._key, where)[0]
            return Snapshot(checkpoint, tip, rows, first)

    def since(self, start: int = 0, previous: str | None = None) -> list[Row]:
        """Verify the chain (from receipt ``start`` after hash ``previous``) in one snapshot.

        Returns:
            (body, hash) of each receipt from ``start`` on.

        Raises:
            LedgerIntegrityError: The configuration, a receipt or the head does not verify.
        """
        with self._transaction(immediate=False) as conn:
            return self._since(conn, start, previous)

    def _since(self, conn: sqlite3.Connection, start: int, previous: str | None) -> list[Row]:
        where = str(self.path)
        meta, genesis = self._meta(conn)
        if start > 0 and previous is None:
            raise LedgerIntegrityError(f"{where}: internal error: no hash to continue from.")
        prev = genesis if previous is None else previous
        rows = verify_rows(self._rows(conn, start), start, prev, self._key, where)
        last = rows[-1][1] if rows else prev
        check_head(self._json(meta["head"], "head"), start + len(rows), last, self._key, where)
        return rows

    def prefix(self, stop: int) -> list[Row]:
        """The verified receipts ``0 .. stop - 1``, chained from the genesis."""
        with self._transaction(immediate=False) as conn:
            _, genesis = self._meta(conn)
            return verify_rows(self._rows(conn, 0, stop), 0, genesis, self._key, str(self.path))

    def full(self) -> tuple[list[Row], Tip | None]:
        """Every receipt verified from the genesis to the head, and the sealed state."""
        with self._transaction(immediate=False) as conn:
            meta, genesis = self._meta(conn)
            where = str(self.path)
            rows = verify_rows(self._rows(conn, 0), 0, genesis, self._key, where)
            head = self._json(meta["head"], "head")
            check_head(head, len(rows), rows[-1][1] if rows else genesis, self._key, where)
            state = self._state(meta)
            if state is not None:
                check_tip(state[0], head, where)
            return rows, None if state is None else state[0]

    def hash_at(self, count: int) -> str | None:
        """The chain hash after ``count`` receipts (the genesis for 0; None past the end)."""
        with self._transaction(immediate=False) as conn:
            _, genesis = self._meta(conn)
            if count == 0:
                return genesis
            row = conn.execute("SELECT hash FROM receipts WHERE seq = ?", (count - 1,)).fetchone()
            return None if row is None else str(row[0])

    def append(
        self,
        known: int,
        known_hash: str | None,
        build: Build,
    ) -> tuple[list[Row], dict[str, Any], str]:
        """Atomically append one receipt.

        Inside one IMMEDIATE transaction (taken in turn, first come first served): verify
        and read the receipts other processes added after the first ``known``; call
        ``build(new_receipts, previous_hash)``, which returns the :class:`Entry` to append
        or raises (nothing is written then); write the receipt, move and re-seal the head
        and the state; commit (durable in the main file: rollback journal with
        ``synchronous=FULL``).

        Returns:
            (receipts other processes added, the body written, its hash).
        """
        if self.readonly:
            raise InvalidArgumentError(
                f"the ledger {str(self.path)!r} was opened read-only; nothing can be spent."
            )
        with self._transaction(immediate=True) as conn:
            new = self._since(conn, known, known_hash)
            meta, genesis = self._meta(conn)
            previous = new[-1][1] if new else (known_hash or genesis)
            entry = build(new, previous)
            body = entry.body
            text = canonical(body)
            digest = self.hash(previous, text)
            stored = self._state(meta)
            checkpoint = entry.origin if stored is None else stored[1]
            tip = Tip(body["seq"] + 1, digest, entry.filter, entry.total, entry.spent, entry.quotas)
            conn.execute(
                "INSERT INTO receipts (seq, body, hash) VALUES (?, ?, ?)",
                (body["seq"], text, digest),
            )
            conn.execute(
                "UPDATE meta SET value=? WHERE key='head'",
                (canonical(make_head(tip.count, digest, self._key)),),
            )
            record = state_record(tip, next_checkpoint(tip, checkpoint), self._key)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('state', ?)", (canonical(record),)
            )
        return new, body, digest

    def quotas(self) -> dict[str, tuple[float, float]]:
        """The quotas defined in the file: name → (ε, δ)."""
        with self._transaction(immediate=False) as conn:
            meta, _ = self._meta(conn)
        return parse_quotas(meta.get("quotas"), str(self.path))

    def nonce(self) -> int:
        """A number no other call on this file has had (0, 1, 2, ... in turn).

        Mixed into a seeded noise stream, so that two processes at one head never draw the
        same noise. Deterministic for a fresh file (a seeded script gives the same noise
        when rerun on a fresh ledger); 0 on a read-only handle, which cannot spend.
        """
        if self.readonly:
            return 0
        with self._transaction(immediate=True) as conn:
            found = conn.execute("SELECT value FROM meta WHERE key='nonce'").fetchone()
            text = "0" if found is None else str(found[0])
            if not (text.isascii() and text.isdigit() and len(text) <= 30):
                # handing out numbers again could repeat a noise stream: never reset
                raise LedgerIntegrityError(
                    f"{self.path}: the ledger's noise counter was modified (found {text[:40]!r})."
                )
            value = int(text)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('nonce', ?)", (str(value + 1),)
            )
        return value

    def add_quota(
        self, name: str, epsilon: float, delta: float, limits: list[Any]
    ) -> tuple[float, float]:
        """Define quota ``name`` (or return the (ε, δ) it already has); one transaction."""
        if self.readonly:
            raise InvalidArgumentError(
                f"the ledger {str(self.path)!r} was opened read-only; no quota can be made."
            )
        with self._transaction(immediate=True) as conn:
            meta, _ = self._meta(conn)
            found = parse_quotas(meta.get("quotas"), str(self.path))
            if name in found:
                return found[name]
            found[name] = (epsilon, delta)
            text = canonical({k: {"epsilon": e, "delta": d} for k, (e, d) in found.items()})
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('quotas', ?)", (text,))
        return (epsilon, delta)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


__dir__ = namespace(__all__)
