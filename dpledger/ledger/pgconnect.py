"""Connecting to PostgreSQL for team ledgers: URLs, the client timeout, the schema.

``parse_url`` turns a ledger URL into libpq's connection string and the ledger's name
(never a password: libpq reads it from ``PGPASSWORD``, ``~/.pgpass`` or a service file);
``timed`` is psycopg's connection with every wait for the server bounded (and a
statement given up on cancelled in the server); ``init_db`` installs the schema of
:mod:`.pgschema`. The store itself is :mod:`.pgstore`. psycopg 3 is imported only here
and there (``pip install "dpledger[postgres]"``).
"""

from __future__ import annotations

import contextlib
import decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError
from dpledger.ledger.pgschema import SCHEMA_SQL

__all__ = [
    "DEFAULT_LEDGER",
    "TIMEOUT",
    "client_timeout",
    "exact_decimal",
    "init_db",
    "message",
    "parse_url",
    "psycopg_module",
    "timed",
]

DEFAULT_LEDGER = "default"
"""The ledger a URL without ``?ledger=`` names."""

TIMEOUT = 30.0
"""Seconds a client waits for the server (``DPLEDGER_PG_TIMEOUT``)."""


def client_timeout() -> float:
    """The client timeout: ``DPLEDGER_PG_TIMEOUT`` (seconds, 0.5 to 86,400) or 30 s."""
    import math
    import os

    text = os.environ.get("DPLEDGER_PG_TIMEOUT")
    if text is None:
        return TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.5 <= value <= 86_400:
        raise InvalidArgumentError(
            f"DPLEDGER_PG_TIMEOUT must be a number of seconds from 0.5 to 86400. Found {text!r}."
        )
    return value


def psycopg_module() -> Any:
    """Psycopg 3, or an error naming the extra to install."""
    try:
        import psycopg
    except ImportError as error:
        raise InvalidArgumentError(
            "a postgresql:// ledger needs psycopg 3: pip install 'dpledger[postgres]' "
            "(or pip install 'psycopg[binary]')."
        ) from error
    return psycopg


def parse_url(url: str) -> tuple[str, str, str]:
    """(libpq conninfo, ledger name, URL as shown) of a ``postgresql://`` ledger URL.

    Raises:
        InvalidArgumentError: The URL holds a password, or names no valid ledger.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError as error:
        raise InvalidArgumentError(f"the ledger URL is malformed: {error}.") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    if password is not None or any(k == "password" for k, _ in query):
        raise InvalidArgumentError(
            "the ledger URL must not contain a password (it would be stored in scripts and "
            "shown in messages): give it in PGPASSWORD, ~/.pgpass or a service file."
        )
    names = [v for k, v in query if k == "ledger"]
    if len(names) > 1:
        raise InvalidArgumentError("the ledger URL names more than one `ledger`.")
    name = names[0] if names else DEFAULT_LEDGER
    if not 1 <= len(name) <= 200 or not name.isprintable():
        raise InvalidArgumentError(
            f"`ledger` in the URL must be 1 to 200 printable characters. Found {name!r}."
        )
    rest = [(k, v) for k, v in query if k != "ledger"]
    conninfo = urlunsplit(parts._replace(query=urlencode(rest, safe="/")))
    shown = urlunsplit(parts._replace(query=urlencode([*rest, ("ledger", name)], safe="/")))
    return conninfo, name, shown


def exact_decimal(value: float) -> str:
    """The exact decimal expansion of a float (what ``numeric`` stores)."""
    return format(decimal.Decimal(value), "f")


def message(error: Any) -> str:
    """The server's message of a psycopg error, in one line."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    if primary:
        return str(primary)
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_CLASSES: dict[int, Any] = {}


def timed(psycopg: Any) -> Any:
    """Psycopg's Connection whose every wait for the server is bounded by ``op_timeout``."""
    found = _CLASSES.get(id(psycopg))
    if found is None:

        class TimedConnection(psycopg.Connection):  # type: ignore[misc]
            """A stopped server gives an error after ``op_timeout`` seconds, not a hang."""

            op_timeout: float = TIMEOUT

            def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
                bound = self.op_timeout if timeout is None else timeout
                try:
                    return super().wait(gen, interval=interval, timeout=bound)
                except psycopg.OperationalError:
                    # a statement given up on may still be running in the server (waiting
                    # for the head, say) and commit later: ask the server to cancel it
                    # before the caller drops the connection
                    if self.pgconn.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
                        cancel = getattr(self, "cancel_safe", None)
                        with contextlib.suppress(Exception):
                            if cancel is not None:
                                cancel(timeout=min(5.0, bound))
                            else:
                                self.cancel()
                    raise

        found = _CLASSES[id(psycopg)] = TimedConnection
    return found


def init_db(url: str, *, grant: dict[str, list[str]] | None = None) -> list[str]:
    """Install (or update) the dpledger schema, roles and grants in a database; idempotent.

    Args:
        url: A ``postgresql://`` URL of a database user allowed to create roles and
            schemas (a superuser, or the database's owner with CREATEROLE).
        grant: Optional ``{"owner": [...], "analyst": [...], "auditor": [...]}``: existing
            database users to make members of ``dpledger_owner``, ``dpledger_analyst`` and
            ``dpledger_auditor``.

    Returns:
        What was done, one line each.
    """
    psycopg = psycopg_module()
    conninfo, _, shown = parse_url(url)
    done = []
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('dpledger init-db'))")
                conn.execute(SCHEMA_SQL)
            done.append(f"schema dpledger installed in {shown}")
            for role, users in (grant or {}).items():
                for user in users:
                    conn.execute(
                        psycopg.sql.SQL("GRANT {} TO {}").format(
                            psycopg.sql.Identifier(f"dpledger_{role}"),
                            psycopg.sql.Identifier(user),
                        )
                    )
                    done.append(f"{user} is a member of dpledger_{role}")
    except psycopg.Error as error:
        raise InvalidArgumentError(
            f"installing the dpledger schema in {shown} failed: {message(error)} (run it as "
            "a database superuser, or the database owner with CREATEROLE)."
        ) from None
    return done


__dir__ = namespace(__all__)
