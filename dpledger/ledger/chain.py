"""The hash chain, the sealed head and state, and what a store of a ledger provides.

Shared by every store (an SQLite file, :mod:`.store`; PostgreSQL, :mod:`.pgstore`):
receipts ``(seq, body, hash)`` with ``hash = H(previous hash ‖ body)`` (SHA-256, or
HMAC-SHA256 with a key); the *head* — the number of receipts, the hash of the last one
and a seal over both; the *state* (:class:`Tip`) — the exact running total, the filter in
force, the (ε, δ) spent and the quotas' totals after the last receipt — with a
*checkpoint*, the same after an earlier receipt (at most :data:`CHECKPOINT_EVERY` back),
under one seal. Opening verifies from the checkpoint; ``Ledger.verify`` from the genesis.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from dpledger._public import namespace
from dpledger.errors import LedgerIntegrityError

__all__ = [
    "APPLICATION_ID",
    "CHECKPOINT_EVERY",
    "FORMAT",
    "Build",
    "Entry",
    "Exact",
    "Row",
    "Snapshot",
    "Store",
    "Tip",
    "canonical",
    "chain_hash",
    "check_head",
    "check_state",
    "check_tip",
    "decimal_int",
    "decimal_text",
    "exact_text",
    "make_head",
    "next_checkpoint",
    "parse_exact",
    "parse_quotas",
    "seal",
    "state_record",
    "verify_rows",
]

FORMAT = "dpledger-ledger-2"
"""The stored format (version 2: sealed head, application_id, rollback journal)."""

APPLICATION_ID = 0x44504C47
"""SQLite ``application_id`` of a ledger file ("DPLG")."""

CHECKPOINT_EVERY = 64
"""The state's checkpoint moves to the head every this many receipts (open verifies fewer)."""

Row = tuple[dict[str, Any], str]
Exact = tuple[Fraction, ...]


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


_CHUNK = 4000
"""Digits converted at a time: Python refuses int ↔ decimal text beyond 4,300 digits."""

_BASE = 10**_CHUNK


def decimal_text(value: int) -> str:
    """``str(value)`` for integers of any size (in chunks below Python's digit limit).

    Exact totals can grow long: the denominator of a sum of (Δ/σ)² over many different
    float σ is the least common multiple of their squared mantissas.
    """
    if -_BASE < value < _BASE:
        return str(value)
    sign, value = ("-" if value < 0 else ""), abs(value)
    parts = []
    while value:
        value, part = divmod(value, _BASE)
        parts.append(part)
    digits = str(parts[-1]) + "".join(str(p).zfill(_CHUNK) for p in reversed(parts[:-1]))
    return sign + digits


def decimal_int(text: str) -> int:
    """``int(text)`` for decimal text of any length (the inverse of :func:`decimal_text`)."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("-")
    if len(digits) <= _CHUNK:
        return sign * int(digits)
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start : start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def exact_text(value: Fraction) -> str:
    """An exact rational as text, ``"numerator/denominator"`` (what is sealed and stored)."""
    return f"{decimal_text(value.numerator)}/{decimal_text(value.denominator)}"


def parse_exact(text: Any, where: str) -> Fraction:
    """The rational written by :func:`exact_text` (refusing anything else)."""
    if isinstance(text, str) and text.count("/") == 1:
        top, bottom = text.split("/")
        if top.lstrip("-").isdigit() and bottom.isdigit():
            denominator = decimal_int(bottom)
            if denominator > 0:
                return Fraction(decimal_int(top), denominator)
    raise LedgerIntegrityError(f"{where}: the ledger's running total is malformed.")


@dataclass(frozen=True)
class Tip:
    """A ledger's state after ``count`` receipts: what the head's seal covers.

    Attributes:
        count: Receipts so far.
        hash: The hash of the last one (the genesis hash for none).
        filter: The configuration of the filter in force (``{"accountant": "auto"}`` while
            an automatic ledger is undecided).
        total: The exact running total in that filter's currency.
        spent: The filter-tracked (ε, δ) after the last spend.
        quotas: The exact totals charged to each quota so far (name, total), sorted.
    """

    count: int
    hash: str
    filter: dict[str, Any]
    total: Exact
    spent: tuple[float, float]
    quotas: tuple[tuple[str, Exact], ...] = ()

    def record(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {
            "count": self.count,
            "hash": self.hash,
            "filter": self.filter,
            "total": [exact_text(t) for t in self.total],
            "spent": list(self.spent),
        }
        if self.quotas:
            out["quotas"] = {name: [exact_text(t) for t in total] for name, total in self.quotas}
        return out

    @classmethod
    def from_record(cls, data: Any, where: str) -> Tip:
        """Parse :meth:`record` (raises LedgerIntegrityError when malformed)."""
        try:
            count, digest, filt = data["count"], data["hash"], data["filter"]
            total = tuple(parse_exact(t, where) for t in data["total"])
            eps, delta = (float(x) for x in data["spent"])
            quotas = tuple(
                (str(name), tuple(parse_exact(t, where) for t in values))
                for name, values in sorted(data.get("quotas", {}).items())
            )
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise LedgerIntegrityError(f"{where}: the ledger's state is malformed.") from error
        if not isinstance(count, int) or not isinstance(digest, str) or not isinstance(filt, dict):
            raise LedgerIntegrityError(f"{where}: the ledger's state is malformed.")
        return cls(count, digest, filt, total, (eps, delta), quotas)


def state_record(tip: Tip, checkpoint: Tip, key: bytes | None) -> dict[str, Any]:
    """The sealed state: ``tip`` and its ``checkpoint`` under one seal (an HMAC when keyed)."""
    body = {**tip.record(), "checkpoint": checkpoint.record()}
    return {**body, "seal": chain_hash("dpledger-state", canonical(body), key)}


def check_state(record: Any, key: bytes | None, where: str) -> tuple[Tip, Tip]:
    """(tip, checkpoint) of a sealed state record, or LedgerIntegrityError."""
    if not isinstance(record, dict) or not isinstance(record.get("seal"), str):
        raise LedgerIntegrityError(f"{where}: the ledger's state record is malformed.")
    body = {k: v for k, v in record.items() if k != "seal"}
    if not hmac.compare_digest(record["seal"], chain_hash("dpledger-state", canonical(body), key)):
        raise LedgerIntegrityError(
            f"{where}: the seal of the ledger's state (its running total and checkpoint) "
            "does not verify: it was edited, or the key is wrong."
        )
    tip = Tip.from_record(body, where)
    checkpoint = Tip.from_record(body.get("checkpoint"), where)
    if not 0 <= checkpoint.count <= tip.count:
        raise LedgerIntegrityError(f"{where}: the ledger's checkpoint is out of range.")
    return tip, checkpoint


def next_checkpoint(tip: Tip, checkpoint: Tip) -> Tip:
    """The checkpoint kept with ``tip``: moved to it every :data:`CHECKPOINT_EVERY` receipts."""
    return tip if tip.count - checkpoint.count >= CHECKPOINT_EVERY else checkpoint


@dataclass(frozen=True)
class Entry:
    """What a writer appends: one receipt's body and the exact state after it.

    ``charge``, ``total`` and ``limit`` are exact, in the currency of ``filter`` (the
    filter in force after the receipt); a database store checks ``total = previous total
    + charge ≤ limit`` itself. ``quota``: the quota the receipt is also charged to, with
    its exact total after it and its limit; ``quotas``: every quota's total after it.
    ``imported``: a receipt copied verbatim from another store (``dpledger ledger copy``).
    """

    body: dict[str, Any]
    charge: Exact
    filter: dict[str, Any]
    total: Exact
    spent: tuple[float, float]
    limit: Exact
    origin: Tip
    quota: str | None = None
    quota_total: Exact | None = None
    quota_limit: Exact | None = None
    quotas: tuple[tuple[str, Exact], ...] = ()
    imported: bool = False


@dataclass(frozen=True)
class Snapshot:
    """What opening a ledger reads, in one consistent read.

    Attributes:
        checkpoint: The sealed checkpoint (None for a store without a state: then
            ``rows`` start at the genesis).
        tip: The sealed state at the head (None likewise).
        rows: The verified receipts after the checkpoint (or all of them).
        first: Receipt 0 (verified against the genesis) when it precedes the checkpoint:
            a planned ledger's plan.
    """

    checkpoint: Tip | None
    tip: Tip | None
    rows: list[Row]
    first: Row | None


Build = Callable[..., Entry]
"""``build(new_rows, previous_hash, head=None)``: the entry to append after ``new_rows``
(verified receipts others appended, replayed first), or — a database store under
contention — built on the sealed ``head`` state with the rows replayed after the commit
(the builder raises ``persistence.NotAtHeadError`` if it cannot, and gets the rows)."""


class Store(Protocol):
    """What a :class:`~dpledger.ledger.core.Ledger` needs of a store (file or database)."""

    readonly: bool

    @property
    def where(self) -> str:
        """How the store is shown (a path, or a URL without its password)."""

    @property
    def path(self) -> Any:
        """The file's path, or the URL."""

    def initialise(self, config: dict[str, Any], limits: list[Any]) -> dict[str, Any]:
        """Create the ledger, or return the stored configuration."""

    def snapshot(self) -> Snapshot:
        """The checkpoint, the state and the receipts after the checkpoint, verified."""

    def read_config(self) -> dict[str, Any]:
        """The stored configuration (verified against the genesis)."""

    def since(self, start: int, previous: str | None) -> list[Row]:
        """Verified receipts from ``start`` on (they follow ``previous``)."""

    def prefix(self, stop: int) -> list[Row]:
        """Verified receipts ``0 .. stop - 1`` (from the genesis)."""

    def full(self) -> tuple[list[Row], Tip | None]:
        """Every receipt, verified from the genesis, and the sealed state (if any)."""

    def hash_at(self, count: int) -> str | None:
        """The chain hash after ``count`` receipts (None past the end)."""

    def append(
        self, known: int, known_hash: str | None, build: Build
    ) -> tuple[list[Row], dict[str, Any], str]:
        """Append one receipt atomically (see :meth:`LedgerStore.append`)."""

    def identity(self) -> dict[str, Any]:
        """What the store adds to a receipt's principal (the database user)."""

    def nonce(self) -> int:
        """A number handed out once (mixed into seeded noise streams)."""

    def quotas(self) -> dict[str, tuple[float, float]]:
        """The quotas defined on the ledger: name → (ε, δ)."""

    def add_quota(
        self, name: str, epsilon: float, delta: float, limits: list[Any]
    ) -> tuple[float, float]:
        """Define a quota (or return the (ε, δ) it already has)."""

    def close(self) -> None:
        """Release the connection."""


def parse_quotas(text: Any, where: str) -> dict[str, tuple[float, float]]:
    """Quota definitions stored as JSON ``{name: {"epsilon": ε, "delta": δ}}``."""
    if text is None:
        return {}
    try:
        data = json.loads(text)
        return {str(k): (float(v["epsilon"]), float(v["delta"])) for k, v in data.items()}
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise LedgerIntegrityError(f"{where}: the ledger's quotas are malformed.") from error


def check_tip(tip: Tip, head: Any, where: str) -> None:
    """The sealed state must describe the head (same count and hash)."""
    if not isinstance(head, dict) or (tip.count, tip.hash) != (head.get("count"), head.get("hash")):
        raise LedgerIntegrityError(
            f"{where}: the ledger's state (running total) does not match its head: the head "
            "or the state was rewritten."
        )


__dir__ = namespace(__all__)
