"""SQLite persistence for ledgers: one IMMEDIATE transaction per receipt, hash chain, sealed head.

Layout: ``meta(key, value)`` holds the ledger's configuration, the genesis hash (the hash
of the configuration) and the *head* — the number of receipts, the hash of the last one
and a seal over both. ``receipts(seq, body, hash)`` is append-only;
``hash = H(previous hash ‖ body)`` with SHA-256, or HMAC-SHA256 when a key is given, and
``seal = H("head" ‖ count ‖ hash)`` likewise. The file carries SQLite's
``application_id`` so that another application's database is never mistaken for (or
turned into) a ledger.

What verification on open detects (the threat model, also in docs/ledger.md):

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

Durability. The database runs in rollback-journal mode (``journal_mode=DELETE``,
``synchronous=FULL``): when a commit returns, every committed receipt is in the main
file itself, so a plain copy of the ``.ledger`` file (a backup, rsync) holds the whole
ledger — a write-ahead log would keep recent receipts in a ``-wal`` file that such a copy
misses, silently restoring spent budget. Rollback-journal mode also lets a ledger in a
read-only directory be read (``readonly=True``).

Concurrency. Each write is one ``BEGIN IMMEDIATE`` transaction that re-reads and
verifies what other processes appended before deciding; each read of the chain is one
read transaction (one snapshot of ``meta`` and ``receipts`` together). One connection
per process is shared by the threads of that process under a lock; a forked child
opens its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError, LedgerIntegrityError

__all__ = ["APPLICATION_ID", "FORMAT", "LedgerStore", "canonical"]

FORMAT = "dpledger-ledger-2"
"""The stored format (version 2: sealed head, application_id, rollback journal)."""

APPLICATION_ID = 0x44504C47
"""SQLite ``application_id`` of a ledger file ("DPLG")."""

Row = tuple[dict[str, Any], str]


def canonical(data: Any) -> str:
    """Canonical JSON (sorted keys, no spaces, no NaN) — the bytes that are hashed."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def chain_hash(previous: str, body: str, key: bytes | None) -> str:
    """SHA-256 (or HMAC-SHA256 with ``key``) of ``previous ‖ body``."""
    payload = (previous + "\n" + body).encode()
    if key is not None:
        return hmac.new(key, payload, hashlib.sha256).hexdigest()
    return hashlib.sha256(payload).hexdigest()


def seal(count: int, digest: str, key: bytes | None) -> str:
    """The head's seal: H("dpledger-head" ‖ count ‖ hash), an HMAC when keyed.

    Domain-separated from receipt hashes (a receipt hash can never serve as a seal).
    """
    return chain_hash("dpledger-head", f"{count}\n{digest}", key)


def make_head(count: int, digest: str, key: bytes | None) -> dict[str, Any]:
    """The head record {count, hash, seal}."""
    return {"count": count, "hash": digest, "seal": seal(count, digest, key)}


def check_head(head: Any, count: int, digest: str, key: bytes | None, where: str) -> None:
    """Raise unless ``head`` records exactly ``count`` receipts ending at ``digest``, sealed.

    Raises:
        LedgerIntegrityError: The head is missing, does not match the chain, or its seal
            does not verify (with a key: someone without the key moved it).
    """
    if not isinstance(head, dict):
        raise LedgerIntegrityError(f"{where}: the ledger's head record is missing or malformed.")
    if head.get("count") != count or head.get("hash") != digest:
        raise LedgerIntegrityError(
            f"{where}: the ledger has {count} receipts but its head records "
            f"{head.get('count')!r}: receipts were deleted, the file was truncated, or the "
            "head was moved."
        )
    stored_seal = head.get("seal")
    if not isinstance(stored_seal, str) or not hmac.compare_digest(
        stored_seal, seal(count, digest, key)
    ):
        raise LedgerIntegrityError(
            f"{where}: the ledger's head seal does not verify: the head was rewritten "
            "(receipts removed and the head reset) or the key is wrong."
        )


def verify_rows(
    rows: list[tuple[int, str, str]], start: int, previous: str, key: bytes | None, where: str
) -> list[Row]:
    """Verify chained receipt rows ``(seq, body, hash)`` that follow ``previous``.

    Returns:
        (parsed body, hash) of each row.
    """
    out: list[Row] = []
    prev = previous
    for offset, (seq, body, stored) in enumerate(rows):
        if seq != start + offset:
            raise LedgerIntegrityError(f"{where}: receipt {start + offset} is missing.")
        expected = chain_hash(prev, body, key)
        if not isinstance(stored, str) or not hmac.compare_digest(expected, stored):
            raise LedgerIntegrityError(
                f"{where}: receipt {seq} was modified (its hash does not match)."
            )
        try:
            parsed = json.loads(body)
        except ValueError as error:
            raise LedgerIntegrityError(f"{where}: receipt {seq} is not valid JSON.") from error
        if not isinstance(parsed, dict) or parsed.get("prev") != prev or parsed.get("seq") != seq:
            raise LedgerIntegrityError(f"{where}: receipt {seq} is out of order.")
        out.append((parsed, expected))
        prev = expected
    return out


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
        self._pid = -1
        self._conn: sqlite3.Connection | None = None
        with self._lock:
            self._connection()

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

    def hash(self, previous: str, body: str) -> str:
        """The chain hash of ``body`` after ``previous``."""
        return chain_hash(previous, body, self._key)

    @contextmanager
    def _transaction(self, immediate: bool) -> Iterator[sqlite3.Connection]:
        """One transaction (IMMEDIATE for writes, deferred for a consistent read)."""
        with self._lock, _translated(self.path):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- creating and reading -------------------------------------------------------------

    def initialise(self, config: dict[str, Any]) -> dict[str, Any]:
        """Create the ledger with ``config``, or return the stored config if it exists.

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

    def verify(self, start: int = 0, previous: str | None = None) -> list[Row]:
        """Verify the chain (from receipt ``start`` after hash ``previous``) in one snapshot.

        Returns:
            (body, hash) of each receipt from ``start`` on.

        Raises:
            LedgerIntegrityError: The configuration, a receipt or the head does not verify.
        """
        with self._transaction(immediate=False) as conn:
            return self._verify(conn, start, previous)

    def _verify(self, conn: sqlite3.Connection, start: int, previous: str | None) -> list[Row]:
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
        rows = conn.execute(
            "SELECT seq, body, hash FROM receipts WHERE seq >= ? ORDER BY seq", (start,)
        ).fetchall()
        verified = verify_rows(
            rows, start, genesis if previous is None else previous, self._key, where
        )
        last = verified[-1][1] if verified else (genesis if previous is None else previous)
        try:
            head = json.loads(meta["head"])
        except ValueError as error:
            raise LedgerIntegrityError(f"{where}: the ledger's head is not valid JSON.") from error
        check_head(head, start + len(rows), last, self._key, where)
        return verified

    def append(
        self,
        known: int,
        known_hash: str | None,
        build: Callable[[list[Row], str], dict[str, Any]],
    ) -> tuple[list[Row], dict[str, Any], str]:
        """Atomically append one receipt.

        Inside one IMMEDIATE transaction: verify and read the receipts other processes
        added after the first ``known``; call ``build(new_receipts, previous_hash)``, which
        returns the body to append or raises (nothing is written then); write the body,
        move and re-seal the head; commit (durable in the main file: rollback journal with
        ``synchronous=FULL``).

        Returns:
            (receipts other processes added, the body written, its hash).
        """
        if self.readonly:
            raise InvalidArgumentError(
                f"the ledger {str(self.path)!r} was opened read-only; nothing can be spent."
            )
        with self._transaction(immediate=True) as conn:
            new = self._verify(conn, known, known_hash)
            previous = new[-1][1] if new else (known_hash or self._genesis(conn))
            body = build(new, previous)
            text = canonical(body)
            digest = self.hash(previous, text)
            conn.execute(
                "INSERT INTO receipts (seq, body, hash) VALUES (?, ?, ?)",
                (body["seq"], text, digest),
            )
            conn.execute(
                "UPDATE meta SET value=? WHERE key='head'",
                (canonical(make_head(body["seq"] + 1, digest, self._key)),),
            )
        return new, body, digest

    def _genesis(self, conn: sqlite3.Connection) -> str:
        row = conn.execute("SELECT value FROM meta WHERE key='genesis'").fetchone()
        return str(row[0])


__dir__ = namespace(__all__)
