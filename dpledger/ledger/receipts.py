"""Receipts, and what a ledger records: events, their depth, adjacency, labels and who spent."""

from __future__ import annotations

import dataclasses
import datetime
import getpass
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, cast

from dpledger._public import namespace
from dpledger._validation import check_nonnegative, check_probability
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger.budgets import Budget

__all__ = [
    "MAX_RECORDED_DEPTH",
    "Receipt",
    "as_event",
    "check_adjacency",
    "check_label",
    "new_body",
    "principal",
    "receipt_from_body",
    "recordable",
    "shown_down",
]


@dataclass(frozen=True)
class Receipt:
    """The record of one charge.

    Attributes:
        seq: Position in the ledger (0, 1, ...).
        kind: "spend", or "plan" for the declaration of a planned schedule.
        event: What was released (an event), or the planned schedule.
        label: The caller's label, if any.
        currency: The ledger's currency ("approx_dp", "zcdp", "gdp", "rdp", "plan").
        charge: What this release cost, a typed budget in that currency
            (``charge.epsilon_at(delta)``: the same in ε at the ledger's δ).
        total: The cumulative spend after it (rounded up), a typed budget.
        epsilon: The filter-tracked ε after it (at the ledger's δ).
        delta: The δ it is reported at.
        timestamp: UTC time of the charge (ISO 8601).
        hash: The receipt's chain hash (hex).
        mechanism: The mechanism charged, in data units (its repr), when a mechanism was
            spent; ``event`` is what it releases (for the safe Laplace and Gaussian, the
            discrete event in grid units).
        principal: Who spent: the operating-system ``user``, ``host``, process id
            ``pid`` and ``program``, and for a PostgreSQL ledger the database user
            ``db_user`` (checked by the database); None on receipts written before
            principals were recorded.
        quota: The quota the release was also charged to (None: the ledger only).
    """

    seq: int
    kind: str
    event: ev.Event
    label: str | None
    currency: str
    charge: Budget
    total: Budget
    epsilon: float
    delta: float
    timestamp: str
    hash: str
    mechanism: str | None = None
    principal: dict[str, Any] | None = None
    quota: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "seq": self.seq,
            "kind": self.kind,
            "event": ev.to_dict(self.event),
            "label": self.label,
            "currency": self.currency,
            "charge": list(self.charge.as_tuple()),
            "total": list(self.total.as_tuple()),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "timestamp": self.timestamp,
            "hash": self.hash,
            "mechanism": self.mechanism,
            "principal": self.principal,
            "quota": self.quota,
        }


def receipt_from_body(body: dict[str, Any], digest: str, event: ev.Event, filt: Any) -> Receipt:
    """The :class:`Receipt` of a stored body (its budgets typed by the filter ``filt``)."""
    return Receipt(
        seq=body["seq"],
        kind=body["kind"],
        event=event,
        label=body.get("label"),
        currency=body["currency"],
        charge=filt.budget(tuple(body["charge"]) or filt.zero_shown()),
        total=filt.budget(tuple(body["total"])),
        epsilon=body["epsilon"],
        delta=body["delta"],
        timestamp=body["timestamp"],
        hash=digest,
        mechanism=body.get("mechanism"),
        principal=body.get("principal"),
        quota=body.get("quota"),
    )


_WHO: dict[str, Any] = {}


def new_body(
    kind: str, event: ev.Event, label: str | None, filt: Any, total: Any, seq: int
) -> dict[str, Any]:
    """A new receipt's body, without its principal, ``prev`` and extras.

    Receipt ``seq`` of ``kind`` for ``event``, leaving the running total ``total`` in
    ``filt``'s currency, with the guarantee that total gives (rounded up) and the time.
    """
    charge = list(filt.shown_cost(event)) if kind == "spend" else []
    shown = filt.shown(total)
    eps, delta = (0.0, 0.0) if not any(total) else filt.guarantee(shown)
    return {
        "seq": seq,
        "kind": kind,
        "event": ev.to_dict(event),
        "label": label,
        "currency": filt.budget_type.currency,
        "charge": charge,
        "total": list(shown),
        "epsilon": eps,
        "delta": delta,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


def principal() -> dict[str, Any]:
    """Who is spending: operating-system user, host, process id and program name.

    Recorded on every receipt (and hashed with it). A user name that cannot be found
    (no passwd entry, as in some containers) is recorded as the numeric uid.
    """
    pid = os.getpid()
    if _WHO.get("pid") != pid:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
        program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        _WHO.clear()
        _WHO.update(user=user, host=socket.gethostname(), pid=pid, program=program)
    return dict(_WHO)


def as_event(item: Any, epsilon: Any, delta: Any) -> ev.Event:
    """The event a ledger records for ``item`` (event, mechanism) or ``epsilon``/``delta``."""
    if item is None:
        if epsilon is None:
            raise InvalidArgumentError(
                "spend() needs an event, a mechanism, or `epsilon=` (and optionally `delta=`)."
            )
        eps = check_nonnegative("epsilon", epsilon)
        d = check_probability("delta", 0.0 if delta is None else delta)
        return ev.ApproxDP(eps, d) if d > 0 else ev.PureDP(eps)
    if epsilon is not None or delta is not None:
        raise InvalidArgumentError(
            "pass either an event/mechanism or `epsilon=`/`delta=`, not both."
        )
    if isinstance(item, ev.Event):
        return recordable(item)
    event = getattr(item, "event", None)
    if isinstance(event, ev.Event):
        return recordable(event)
    raise InvalidArgumentTypeError(
        "spend() takes a privacy event, a mechanism (anything with an `.event`), or "
        f"epsilon=/delta=. Found {item!r} of type {type(item).__name__}."
    )


MAX_RECORDED_DEPTH = 100
"""The deepest event tree a ledger records (receipts store events as nested JSON)."""


def recordable(event: ev.Event) -> ev.Event:
    """``event`` if its tree is at most :data:`MAX_RECORDED_DEPTH` deep (checked iteratively)."""
    for _, depth in ev.walk(event):
        if depth > MAX_RECORDED_DEPTH:
            raise InvalidArgumentError(
                f"the event is nested more than {MAX_RECORDED_DEPTH} levels deep; a ledger "
                "records events as receipts and cannot store it. Compose it flat: "
                "event * count, or Composed((...))."
            )
    return event


def check_adjacency(event: ev.Event, adjacency: str) -> None:
    """Refuse a sampled release analysed under another adjacency than the ledger's."""
    for current, _ in ev.walk(event):
        stated = getattr(current, "adjacency", adjacency)  # the sampling wrappers state one
        if stated != adjacency:
            raise InvalidArgumentError(
                f"{type(current).__name__} is analysed under {stated!r} "
                f"adjacency but this ledger uses {adjacency!r}; the guarantees would not "
                "compose. Open the ledger with the matching `adjacency`."
            )


def shown_down(budget: Budget) -> Budget:
    """The same budget, printed rounded down (what remains must not look larger)."""
    shown: Budget = dataclasses.replace(cast(Any, budget), rounding="down")
    return shown


def check_label(label: Any) -> str | None:
    """A receipt's label: a string or None."""
    if label is not None and not isinstance(label, str):
        raise InvalidArgumentTypeError(f"`label` must be a string. Found {label!r}.")
    return label


__dir__ = namespace(__all__)
