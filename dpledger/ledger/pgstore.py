"""PostgreSQL persistence: one privacy budget shared by a team, enforced by the database.

``Ledger(epsilon, delta, path="postgresql://user@host:5432/db?ledger=NAME")`` keeps the
ledger ``NAME`` in that database (created by a member of ``dpledger_owner``, opened by
anyone who may read it). The URL is libpq's; the ``ledger`` parameter names the ledger
(default ``default``). A password is never taken from the URL — it would end up in
scripts, shell histories and receipts' error messages — but from ``PGPASSWORD``,
``~/.pgpass`` or a service file (``?service=NAME``), as libpq does.

The same chain, seal and sealed state as a file (:mod:`.store`), in the tables of
:mod:`.pgschema`. A spend is one transaction that inserts the receipt with its exact
charge and running total — and the database's trigger locks the head row, adds the
charge to its own exact total and refuses the insert unless it is within the limit the
owner set (and within the quota's). A handle that spends alone builds the receipt on the
head it knows and inserts it in one statement, on the condition ``dpledger.head_is``
(:meth:`PostgresStore._append_following`); when others have spent, it locks the head
(``dpledger.lock_head``), builds on the head's sealed state, commits, and verifies and
replays the others' receipts after the commit (:meth:`PostgresStore._append`). Spenders
on every host serialise on that one row (PostgreSQL queues the waiters in order), held
for O(1) work; nothing else grows with history.

psycopg 3 is imported only here (``pip install "dpledger[postgres]"``). Every error of
the database or the network comes out as a dpledger error naming what failed; a server
that does not answer within the client timeout (30 s, ``DPLEDGER_PG_TIMEOUT``) gives an
error, never a hang.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from dpledger._public import namespace
from dpledger.errors import (
    BudgetExceededError,
    DPLedgerError,
    InvalidArgumentError,
    LedgerIntegrityError,
    NotApplicableError,
)
from dpledger.ledger.chain import (
    FORMAT,
    Build,
    Entry,
    Exact,
    Row,
    Snapshot,
    Tip,
    canonical,
    chain_hash,
    check_head,
    check_state,
    check_tip,
    decimal_int,
    decimal_text,
    make_head,
    next_checkpoint,
    parse_quotas,
    state_record,
    verify_rows,
)
from dpledger.ledger.persistence import NotAtHeadError
from dpledger.ledger.pgconnect import (
    client_timeout,
    exact_decimal,
    message,
    parse_url,
    psycopg_module,
    timed,
)

__all__ = ["PostgresStore"]


def _texts(values: Exact) -> tuple[list[str], list[str]]:
    nums = [decimal_text(v.numerator) for v in values]
    return nums, [decimal_text(v.denominator) for v in values]


def _exact(nums: Any, dens: Any) -> Exact:
    pairs = zip(nums, dens, strict=True)
    return tuple(Fraction(decimal_int(str(n)), decimal_int(str(d))) for n, d in pairs)


class PostgresStore:
    """A ledger in a PostgreSQL database (see the module doc). Thread- and fork-safe.

    Args:
        url: ``postgresql://user@host:port/db?ledger=NAME`` (libpq's URL, no password).
        key: Optional HMAC key for the chain and the seals.
        readonly: Read only (spending raises).
        create: A ledger may be created (``Ledger(...)``); else it must exist.
    """

    def __init__(
        self, url: str, key: bytes | None = None, *, readonly: bool = False, create: bool = True
    ) -> None:
        self._psycopg = psycopg_module()
        self._conninfo, self.name, self.url = parse_url(url)
        self._key = key
        self.readonly = readonly
        self.create = create
        self._lock = threading.RLock()
        self._conn: Any = None
        self._pid = -1
        self._user = ""
        self.timeout = client_timeout()
        # the head this handle last wrote or read: (count, hash, the checkpoint its sealed
        # state keeps, None for no state yet); a spend that follows it tries one round trip
        self._known_head: tuple[int, str, Tip | None] | None = None
        self._uncontended = True  # the last spend found no one else's receipts
        self._has_head_is = True  # False on a database whose schema predates head_is
        with self._lock:
            self._connection()

    @property
    def where(self) -> str:
        """The URL (it never holds a password)."""
        return self.url

    @property
    def path(self) -> str:
        """The URL, as :attr:`Ledger.path <dpledger.Ledger.path>` shows it."""
        return self.url

    def identity(self) -> dict[str, Any]:
        """The database user, recorded on receipts (the database checks it)."""
        with self._lock:
            self._connection()
            return {"db_user": self._user}

    # -- connection and errors ----------------------------------------------------------

    def _connection(self) -> Any:
        """This process's connection (reopened after a fork or a failure). Under the lock."""
        conn = self._conn
        if conn is not None and self._pid == os.getpid() and not conn.closed and not conn.broken:
            return conn
        psycopg = self._psycopg
        timeout = self.timeout
        try:
            params = psycopg.conninfo.conninfo_to_dict(self._conninfo)
        except psycopg.Error as error:
            raise InvalidArgumentError(
                f"the ledger URL {self.url!r} is not one libpq accepts: {message(error)}."
            ) from None
        extra: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            extra["connect_timeout"] = max(2, int(timeout))
        if "application_name" not in params:
            extra["application_name"] = "dpledger"
        with self._translated("connecting to"):
            conn = timed(psycopg).connect(self._conninfo, **extra)
            conn.op_timeout = timeout
            try:
                user, durable = conn.execute(
                    "SELECT session_user, current_setting('synchronous_commit')"
                ).fetchone()
                self._user = str(user)
                if durable in ("off", "local"):  # the barrier needs at least a local flush
                    conn.execute("SET synchronous_commit = on")
                # a wait for the head longer than this fails in the server (nothing is
                # written), before the client's own timeout gives up on the statement
                lock_ms = max(100, int(timeout * 800))
                conn.execute(f"SET lock_timeout = {lock_ms}")
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        """Turn psycopg's errors into dpledger errors that say what failed."""
        psycopg = self._psycopg
        errors = psycopg.errors
        try:
            yield
        except psycopg.Error as error:
            text = message(error)
            state = getattr(error, "sqlstate", None)
            where = f"the ledger {self.name!r} at {self.url!r}"
            if state == "DPL01":
                raise BudgetExceededError(f"{text}.") from None
            if isinstance(error, errors.LockNotAvailable):
                raise LedgerIntegrityError(
                    f"{where}: the ledger's head stayed locked by other spends for longer "
                    f"than {0.8 * self.timeout:g} s while {action}; nothing was recorded "
                    "(DPLEDGER_PG_TIMEOUT sets the client timeout)."
                ) from None
            if state in ("DPL02", "DPL03", "DPL04"):
                raise LedgerIntegrityError(f"{where}: {text}.") from None
            if isinstance(error, errors.InsufficientPrivilege):
                raise InvalidArgumentError(
                    f"{where}: the database user {self._user or 'connecting'!r} may not do "
                    f"this ({action}): {text}. Creating ledgers and quotas needs the role "
                    "dpledger_owner, spending dpledger_analyst, reading dpledger_auditor "
                    "(docs/ledger.md, 'A ledger for a team')."
                ) from None
            if isinstance(error, (errors.UndefinedTable, errors.InvalidSchemaName)):
                raise InvalidArgumentError(
                    f"{where}: the database has no dpledger schema ({text}); its owner installs "
                    "it with `dpledger ledger init-db URL`."
                ) from None
            if (
                isinstance(error, psycopg.OperationalError)
                or self._conn is None
                or (self._conn is not None and (self._conn.closed or self._conn.broken))
            ):
                self._drop()
                raise LedgerIntegrityError(
                    f"{where}: the database could not be reached or stopped answering while "
                    f"{action} ({text}). If a spend was being recorded it may or may not have "
                    "been committed — nothing was released; open the ledger again to see."
                ) from None
            raise LedgerIntegrityError(
                f"{where}: the database failed while {action}: {text}."
            ) from (None)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(Exception):  # already broken: nothing more to report
                conn.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._drop()

    @contextmanager
    def _transaction(self, action: str, *, snapshot: bool = False) -> Iterator[Any]:
        """One transaction (REPEATABLE READ READ ONLY for a consistent read)."""
        with self._lock, self._translated(action):
            conn = self._connection()
            idle = self._psycopg.pq.TransactionStatus.IDLE
            if conn.info.transaction_status != idle:
                # a read made while this handle holds the head (a quota's definition,
                # looked up while a spend is built): in that transaction — a COMMIT here
                # would release the head before the spend is written
                yield conn
                return
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "BEGIN")
            try:
                yield conn
            except BaseException:
                self._rollback(conn)
                raise
            conn.execute("COMMIT")

    # -- creating and reading -------------------------------------------------------------

    def _row(self, conn: Any) -> Any:
        row = conn.execute(
            "SELECT config, genesis, count, hash, seal, state, total_num::text[], "
            "total_den::text[] FROM dpledger.ledgers WHERE name = %s",
            (self.name,),
        ).fetchone()
        if row is None:
            raise InvalidArgumentError(
                f"there is no ledger {self.name!r} in the database {self.url!r}; "
                "create it with Ledger(epsilon, delta, path=URL) as a member of dpledger_owner."
            )
        return row

    def _checked(self, config: str, genesis: str) -> dict[str, Any]:
        """The stored configuration, verified against the genesis (and format)."""
        where = self.url
        if not hmac.compare_digest(chain_hash("", config, self._key), str(genesis)):
            raise LedgerIntegrityError(
                f"{where}: the ledger configuration was modified (or the key is wrong)."
            )
        try:
            parsed = json.loads(config)
        except ValueError as error:
            raise LedgerIntegrityError(f"{where}: the configuration is not valid JSON.") from error
        if not isinstance(parsed, dict) or parsed.get("format") != FORMAT:
            raise LedgerIntegrityError(f"{where}: not a ledger of format {FORMAT!r}.")
        return parsed

    def initialise(self, config: dict[str, Any], limits: list[Any] | None = None) -> dict[str, Any]:
        """Create the ledger (as its owner) with the exact limits of the filters it may use.

        Returns the stored configuration if the ledger exists (its genesis verified).
        """
        body = canonical({**config, "format": FORMAT, "keyed": self._key is not None})
        with self._transaction("reading the ledger") as conn:
            row = conn.execute(
                "SELECT config, genesis FROM dpledger.ledgers WHERE name = %s", (self.name,)
            ).fetchone()
        if row is not None:
            stored = json.loads(row[0]) if isinstance(row[0], str) else None
            if isinstance(stored, dict) and stored.get("keyed") != (self._key is not None):
                return stored  # the caller reports a key mismatch by name
            return self._checked(row[0], row[1])
        if self.readonly or not self.create:
            self._row_missing()
        genesis = chain_hash("", body, self._key)
        seal = make_head(0, genesis, self._key)["seal"]
        with self._transaction("creating the ledger") as conn:
            created = conn.execute(
                "INSERT INTO dpledger.ledgers (name, config, genesis, keyed, epsilon, delta, "
                "hash, seal) VALUES (%s, %s, %s, %s, %s::numeric, %s::numeric, %s, %s) "
                "ON CONFLICT (name) DO NOTHING RETURNING name",
                (
                    self.name,
                    body,
                    genesis,
                    self._key is not None,
                    exact_decimal(config["epsilon"]),
                    exact_decimal(config["delta"]),
                    genesis,
                    seal,
                ),
            ).fetchone()
            for filt, limit in (limits or []) if created is not None else []:
                nums, dens = _texts(limit)
                conn.execute(
                    "INSERT INTO dpledger.limits (ledger, scope, filter, limit_num, limit_den) "
                    "VALUES (%s, '', %s, %s::text[]::numeric[], %s::text[]::numeric[])",
                    (self.name, canonical(filt), nums, dens),
                )
        if created is None:  # created by another client at the same moment
            return self.read_config()
        result: dict[str, Any] = json.loads(body)
        return result

    def _row_missing(self) -> None:
        raise InvalidArgumentError(
            f"there is no ledger {self.name!r} in the database {self.url!r}; "
            "a member of dpledger_owner creates it with Ledger(epsilon, delta, path=URL)."
        )

    def read_config(self) -> dict[str, Any]:
        """The stored configuration, verified against its genesis."""
        with self._transaction("reading the ledger") as conn:
            row = self._row(conn)
        return self._checked(row[0], row[1])

    def _rows(self, conn: Any, start: int, stop: int | None = None) -> list[Any]:
        if stop is None:
            return list(
                conn.execute(
                    "SELECT seq, body, hash FROM dpledger.receipts WHERE ledger = %s "
                    "AND seq >= %s ORDER BY seq",
                    (self.name, start),
                ).fetchall()
            )
        return list(
            conn.execute(
                "SELECT seq, body, hash FROM dpledger.receipts WHERE ledger = %s "
                "AND seq >= %s AND seq < %s ORDER BY seq",
                (self.name, start, stop),
            ).fetchall()
        )

    def _head(self, row: Any) -> dict[str, Any]:
        return {"count": int(row[2]), "hash": row[3], "seal": row[4]}

    def _state(self, row: Any) -> tuple[Tip, Tip] | None:
        if row[5] is None:
            return None
        try:
            record = json.loads(row[5])
        except ValueError as error:
            raise LedgerIntegrityError(f"{self.url}: the ledger's state is not JSON.") from error
        tip, checkpoint = check_state(record, self._key, self.url)
        if row[6] is not None and tip.total != _exact(row[6], row[7]):
            raise LedgerIntegrityError(
                f"{self.url}: the sealed running total differs from the database's own."
            )
        return tip, checkpoint

    def snapshot(self) -> Snapshot:
        """The sealed state and the receipts after its checkpoint, verified, in one snapshot."""
        where = self.url
        with self._transaction("opening the ledger", snapshot=True) as conn:
            row = self._row(conn)
            _, genesis = self._checked(row[0], row[1]), row[1]
            head = self._head(row)
            state = self._state(row)
            if state is None:
                rows = verify_rows(self._rows(conn, 0), 0, genesis, self._key, where)
                check_head(head, len(rows), rows[-1][1] if rows else genesis, self._key, where)
                self._known_head = (head["count"], head["hash"], None)
                return Snapshot(None, None, rows, None)
            tip, checkpoint = state
            start = checkpoint.count
            rows = verify_rows(self._rows(conn, start), start, checkpoint.hash, self._key, where)
            last = rows[-1][1] if rows else checkpoint.hash
            check_head(head, start + len(rows), last, self._key, where)
            check_tip(tip, head, where)
            self._known_head = (head["count"], head["hash"], checkpoint)
            first = None
            if start > 0:
                first = verify_rows(self._rows(conn, 0, 1), 0, genesis, self._key, where)[0]
            return Snapshot(checkpoint, tip, rows, first)

    def since(self, start: int = 0, previous: str | None = None) -> list[Row]:
        """Verified receipts from ``start`` on, read with the head in one statement."""
        with self._lock, self._translated("reading the ledger"):
            conn = self._connection()
            found = conn.execute(
                "SELECT l.config, l.genesis, l.count, l.hash, l.seal, r.seq, r.body, r.hash "
                "FROM dpledger.ledgers l LEFT JOIN dpledger.receipts r "
                "ON r.ledger = l.name AND r.seq >= %s WHERE l.name = %s ORDER BY r.seq",
                (start, self.name),
            ).fetchall()
        if not found:
            self._row_missing()
        first = found[0]
        self._checked(first[0], first[1])
        prev = first[1] if previous is None else previous
        raw = [(r[5], r[6], r[7]) for r in found if r[5] is not None]
        rows = verify_rows(raw, start, prev, self._key, self.url)
        check_head(
            self._head(first), start + len(rows), rows[-1][1] if rows else prev, self._key, self.url
        )
        return rows

    def prefix(self, stop: int) -> list[Row]:
        """The verified receipts ``0 .. stop - 1``, chained from the genesis."""
        with self._transaction("reading the ledger", snapshot=True) as conn:
            row = self._row(conn)
            return verify_rows(self._rows(conn, 0, stop), 0, row[1], self._key, self.url)

    def full(self) -> tuple[list[Row], Tip | None]:
        """Every receipt verified from the genesis to the head, and the sealed state."""
        where = self.url
        with self._transaction("verifying the ledger", snapshot=True) as conn:
            row = self._row(conn)
            self._checked(row[0], row[1])
            genesis = row[1]
            rows = verify_rows(self._rows(conn, 0), 0, genesis, self._key, where)
            head = self._head(row)
            check_head(head, len(rows), rows[-1][1] if rows else genesis, self._key, where)
            state = self._state(row)
            if state is not None:
                check_tip(state[0], head, where)
            return rows, None if state is None else state[0]

    def hash_at(self, count: int) -> str | None:
        """The chain hash after ``count`` receipts (the genesis for 0; None past the end)."""
        with self._transaction("reading the ledger", snapshot=True) as conn:
            row = self._row(conn)
            if count == 0:
                return str(row[1])
            found = conn.execute(
                "SELECT hash FROM dpledger.receipts WHERE ledger = %s AND seq = %s",
                (self.name, count - 1),
            ).fetchone()
            return None if found is None else str(found[0])

    def append(
        self, known: int, known_hash: str | None, build: Build
    ) -> tuple[list[Row], dict[str, Any], str]:
        """Append one receipt in one transaction; the database checks the budget itself.

        Lock the head row, verify and read what others appended after the first
        ``known`` receipts, ``build`` the entry (which may raise: nothing is written),
        insert it — the trigger adds its exact charge to the database's total and refuses
        it over the limit — and commit.
        """
        if self.readonly:
            raise InvalidArgumentError(
                f"the ledger {self.url!r} was opened read-only; nothing can be spent."
            )
        where = self.url
        with self._lock, self._translated("recording a spend"):
            conn = self._connection()
            try:
                done = self._append_following(conn, known, known_hash, build)
                if done is not None:
                    return [], done[0], done[1]
                new, body, digest = self._append(conn, known, known_hash, build, where)
            except BaseException:
                self._known_head = None
                self._rollback(conn)
                raise
        return new, body, digest

    def _append_following(
        self, conn: Any, known: int, known_hash: str | None, build: Build
    ) -> tuple[dict[str, Any], str] | None:
        """One round trip for a spend that follows the head this handle last saw, or None.

        When no one else has spent since this handle's last spend (or open), the receipt
        is built on the head it knows and inserted in one statement whose condition,
        ``dpledger.head_is``, locks the head row and checks that it is still that head;
        the trigger then checks and debits as always, and the statement's transaction
        commits durably (the flush is waited for while the row is held — only this
        client wants it). If the head moved, nothing is written (zero rows) and the
        caller takes the locked path, which reads what the others appended. Used only
        while this handle's spends meet no one else's: under contention every spend
        takes the locked path (one wasted round trip per spend would slow everyone).
        """
        cached = self._known_head
        if not (self._uncontended and self._has_head_is and cached is not None):
            return None
        count, last, stored = cached
        if count != known or (known_hash is not None and known_hash != last):
            return None
        try:
            entry = build([], last)
        except DPLedgerError:
            # decided on what this handle knew; others may have spent since (and settled
            # an automatic ledger's currency): the locked path decides on the head
            return None
        text = canonical(entry.body)
        digest = chain_hash(last, text, self._key)
        checkpoint = entry.origin if stored is None else stored
        tip = Tip(count + 1, digest, entry.filter, entry.total, entry.spent, entry.quotas)
        moved = next_checkpoint(tip, checkpoint)
        record = state_record(tip, moved, self._key)
        try:
            cursor = self._insert(
                conn, entry, text, digest, last, tip, record, head=(self.name, count, last)
            )
        except self._psycopg.errors.UndefinedFunction:
            self._has_head_is = False  # a schema installed before head_is: the locked path
            return None
        if cursor.rowcount != 1:
            self._uncontended = False
            self._known_head = None
            return None
        self._known_head = (tip.count, digest, moved)
        return entry.body, digest

    def _rollback(self, conn: Any) -> None:
        """Roll back a failed transaction; drop a connection that cannot even do that."""
        if not conn.closed and not conn.broken:
            try:
                conn.execute("ROLLBACK")
            except self._psycopg.Error:
                self._drop()

    def _append(
        self, conn: Any, known: int, known_hash: str | None, build: Build, where: str
    ) -> tuple[list[Row], dict[str, Any], str]:
        """The body of :meth:`append` when others have spent: two round trips.

        Durability: the spend's transaction commits without waiting for the disk
        (``dpledger.lock_head`` sets that), so the head row is held only while the spend
        is checked and other clients' spends go on while this one is flushed (flushes are
        grouped). ``dpledger.sync()``, a synchronous transaction run right after the
        commit, flushes the write-ahead log past the spend's commit record (the log is
        flushed in order); only then does ``spend`` return. If the server fails before,
        the spend may be lost — but it was never reported, so nothing was released for
        it (the error says so).
        """
        # one round trip to lock the head (lock_head also makes this transaction's commit
        # not wait for the disk: the barrier below does, after the head is released) and
        # read what others appended since this handle last looked
        with conn.pipeline():
            conn.execute("BEGIN")
            cursor = conn.execute(
                "SELECT config, genesis, count, hash, seal, state FROM dpledger.lock_head(%s)",
                (self.name,),
            )
            appended = conn.execute(
                "SELECT seq, body, hash FROM dpledger.receipts WHERE ledger = %s AND seq >= %s "
                "ORDER BY seq",
                (self.name, known),
            )
        head_row = cursor.fetchone()
        if head_row is None:
            self._row_missing()
        raw = appended.fetchall()
        genesis = head_row[1]
        head = self._head(head_row)
        previous = genesis if known_hash is None else known_hash
        stored = None
        if head_row[5] is not None:
            stored = check_state(json.loads(head_row[5]), self._key, where)
        self._uncontended = head["count"] == known and head["hash"] == previous
        # the chain from what this handle knows to the head, verified (hashes only: cheap)
        # before anything is written — a rolled-back or edited database is refused here
        new = verify_rows(raw, known, previous, self._key, where)
        last = new[-1][1] if new else previous
        check_head(head, known + len(new), last, self._key, where)
        entry = None
        if new and stored is not None:
            # others spent: build on the head's sealed state, so that the head is held for
            # O(1) work; their receipts are replayed after the commit. A refusal, or a
            # state this handle cannot build on, is decided again after replaying them
            # (so its message and hints see the whole history)
            check_tip(stored[0], head, where)
            with contextlib.suppress(NotAtHeadError, BudgetExceededError, NotApplicableError):
                entry = build([], last, stored[0])
        deferred = entry is not None
        if entry is None:
            entry = build(new, last)
        body = entry.body
        text = canonical(body)
        digest = chain_hash(last, text, self._key)
        checkpoint = entry.origin if stored is None else stored[1]
        tip = Tip(body["seq"] + 1, digest, entry.filter, entry.total, entry.spent, entry.quotas)
        moved = next_checkpoint(tip, checkpoint)
        record = state_record(tip, moved, self._key)
        # one round trip: the insert (the database's check-and-debit), the commit, and the
        # durability barrier (skipped by the server if the insert fails)
        with conn.pipeline():
            self._insert(conn, entry, text, digest, last, tip, record)
            conn.execute("COMMIT")
            conn.execute("SELECT dpledger.sync()")
        self._known_head = (tip.count, digest, moved)
        if not deferred:
            new = []  # replayed by build
        return new, body, digest

    def _insert(
        self,
        conn: Any,
        entry: Entry,
        text: str,
        digest: str,
        previous: str,
        tip: Tip,
        record: dict[str, Any],
        head: tuple[str, int, str] | None = None,
    ) -> Any:
        """Insert the receipt (with ``head``: only if ``dpledger.head_is(*head)``)."""
        charge_num, charge_den = _texts(entry.charge)
        total_num, total_den = _texts(entry.total)
        quota_num = quota_den = None
        if entry.quota is not None and entry.quota_total is not None:
            quota_num, quota_den = _texts(entry.quota_total)
        values = (
            "%s, %s, %s, %s, %s, %s, %s::text[]::numeric[], %s::text[]::numeric[], "
            "%s::text[]::numeric[], %s::text[]::numeric[], %s, %s::text[]::numeric[], "
            "%s::text[]::numeric[], %s, %s, %s"
        )
        columns = (
            "INSERT INTO dpledger.receipts (ledger, seq, body, hash, prev, filter, charge_num, "
            "charge_den, total_num, total_den, quota, quota_total_num, quota_total_den, "
            "head_seal, state, imported) "
        )
        query = columns + (
            f"VALUES ({values})"
            if head is None
            else f"SELECT {values} WHERE dpledger.head_is(%s, %s, %s)"
        )
        return conn.execute(
            query,
            (
                self.name,
                entry.body["seq"],
                text,
                digest,
                previous,
                canonical(entry.filter),
                charge_num,
                charge_den,
                total_num,
                total_den,
                entry.quota,
                quota_num,
                quota_den,
                make_head(tip.count, digest, self._key)["seal"],
                canonical(record),
                entry.imported,
                *(head or ()),
            ),
        )

    def nonce(self) -> int:
        """A number no other call on this database has had (``dpledger.noise_nonces``).

        Mixed into a seeded noise stream, so that two analysts at one head never draw the
        same noise. A schema without the sequence: a random 63-bit number instead.
        """
        if self.readonly:
            return 0
        try:
            with self._lock, self._translated("drawing a noise nonce"):
                row = (
                    self._connection().execute("SELECT nextval('dpledger.noise_nonces')").fetchone()
                )
            return int(row[0])
        except (LedgerIntegrityError, InvalidArgumentError):
            import secrets

            return secrets.randbits(63)

    def quotas(self) -> dict[str, tuple[float, float]]:
        """The quotas defined on the ledger: name → (ε, δ)."""
        with self._transaction("reading the quotas") as conn:
            rows = conn.execute(
                "SELECT name, config FROM dpledger.quotas WHERE ledger = %s", (self.name,)
            ).fetchall()
        return parse_quotas(
            canonical({name: json.loads(config) for name, config in rows}), self.url
        )

    def add_quota(
        self, name: str, epsilon: float, delta: float, limits: list[Any]
    ) -> tuple[float, float]:
        """Define quota ``name`` with its exact limits (needs dpledger_owner)."""
        if self.readonly:
            raise InvalidArgumentError(
                f"the ledger {self.url!r} was opened read-only; no quota can be made."
            )
        config = canonical({"epsilon": epsilon, "delta": delta})
        found = self.quotas()
        if name in found:
            return found[name]
        with self._transaction("creating a quota") as conn:
            created = conn.execute(
                "INSERT INTO dpledger.quotas (ledger, name, config, epsilon, delta) VALUES "
                "(%s, %s, %s, %s::numeric, %s::numeric) ON CONFLICT (ledger, name) DO NOTHING "
                "RETURNING name",
                (self.name, name, config, exact_decimal(epsilon), exact_decimal(delta)),
            ).fetchone()
            if created is not None:
                for filt, limit in limits:
                    nums, dens = _texts(limit)
                    conn.execute(
                        "INSERT INTO dpledger.limits (ledger, scope, filter, limit_num, "
                        "limit_den) VALUES (%s, %s, %s, %s::text[]::numeric[], "
                        "%s::text[]::numeric[])",
                        (self.name, name, canonical(filt), nums, dens),
                    )
        return self.quotas()[name]


__dir__ = namespace(__all__)
