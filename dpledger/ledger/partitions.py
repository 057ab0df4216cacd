"""Partitions: disjoint parts of the data, each analysed with the whole budget, charged once.

``parts = ledger.partition(data, by="region", parts=["north", "south"])`` splits the
data by a declared column into declared, disjoint parts (a record is in the part its own
``region`` names: record-local; records of undeclared values are in no part) and gives
each part a **child ledger** holding the same budget B — by default all that remains in
the parent. The parent is charged **once**, B, whatever the parts spend: parallel
composition (McSherry 2009, Thm 4; Tumult Analytics' ``partition_and_create``).

**Why it is sound, adaptively.** Neighbouring tables differ in one record, hence in one
part. Every release on another part has the same distribution under both tables given
everything released before (its data is the same), so the privacy loss of the whole
interaction is that of the releases on the one part — however the analyst interleaves
and adapts the queries across parts. Those releases pass a child ledger, a privacy
filter valid under full adaptivity with budget B; so the whole interaction is within B,
and the parent, charged B, stays a valid filter.

**The currency.** The parent is charged an event that its filter prices at exactly the
child's budget: with a basic-composition (or undecided automatic) parent, each child is a
ledger of (ε_B, δ_B) — any accountant; its filter keeps it (ε_B, δ_B)-DP — and the parent
is charged ``ApproxDP(ε_B, δ_B)``; with a zCDP parent, each child is a zCDP ledger whose
ρ* is at most ρ_B and the parent is charged ``ZCDP(ρ*)``. A Gaussian-DP or Rényi parent is
refused (their filters cannot price "a ledger of budget B" exactly; use a basic or zCDP
ledger for a study that partitions).

**Crossing parts is refused.** Each part's data carries its part's tag (pandas
``attrs``); a query charged to a child ledger refuses data without that part's tag
(:func:`check_partition_data`): the check reads metadata, never a row.

**Persistence.** With a file (or PostgreSQL) parent, each child is its own ledger beside
it — ``<stem>.<by>=<value>.ledger`` (or ``ledger=<name>.<by>=<value>``) — and the parent's
receipt (label ``partition by <by>: ...``) records the parts. Calling ``partition`` again
with the same column and parts on a reopened parent reopens the children, charging
nothing more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from dpledger._public import namespace
from dpledger._validation import check_probability
from dpledger.accountant import events as ev
from dpledger.errors import BudgetExceededError, InvalidArgumentError, InvalidArgumentTypeError

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = ["Part", "Partitions", "check_partition_data", "partition"]

_TAG = "dpledger_partition"


@dataclass(frozen=True)
class Part:
    """One part: its value of the partition column, its data, and its child ledger."""

    value: Any
    data: Any
    ledger: Ledger


class Partitions:
    """The parts of one partition, by value (``parts["north"].ledger``, ``.data``)."""

    def __init__(self, by: str, parts: Sequence[Part], receipt: Any) -> None:
        self.by = by
        self._parts = {part.value: part for part in parts}
        self.receipt = receipt

    def __getitem__(self, value: Any) -> Part:
        try:
            return self._parts[value]
        except KeyError:
            raise InvalidArgumentError(
                f"no part {value!r}; the declared parts are {list(self._parts)!r}."
            ) from None

    def __iter__(self) -> Iterator[Part]:
        return iter(self._parts.values())

    def __len__(self) -> int:
        return len(self._parts)

    def __repr__(self) -> str:
        return f"Partitions(by={self.by!r}, parts={list(self._parts)!r})"


def _label(by: str, values: Sequence[Any]) -> str:
    return f"partition by {by}: " + ", ".join(repr(v) for v in values)


def _child_location(parent: Ledger, by: str, value: Any) -> Any:
    """Where a child of a persisted parent lives (None for an in-memory parent)."""
    location = parent.path
    if location is None:
        return None
    token = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{by}={value}")
    if isinstance(location, str) and location.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(location)
        query = dict(parse_qsl(parts.query))
        query["ledger"] = f"{query.get('ledger', 'default')}.{token}"
        return urlunsplit(parts._replace(query=urlencode(query)))
    path = Path(location)
    return path.with_name(f"{path.stem}.{token}{path.suffix or '.ledger'}")


def _child_budget(parent: Ledger, share: float) -> tuple[dict[str, Any], ev.Event]:
    """(the child ledger's arguments, the parent's charge) for ``share`` of what remains."""
    from dpledger.accountant.zcdp import zcdp_to_epsilon
    from dpledger.ledger.core import Ledger

    name = parent.accountant
    remaining = parent.remaining.as_tuple()
    if name in ("auto", "basic"):
        if name == "auto":  # nothing spent yet: shares of the whole (ε, δ)
            epsilon, delta = parent.epsilon * share, parent.delta * share
        else:  # what remains under basic composition, (ε, δ)
            epsilon, delta = remaining[0] * share, remaining[1] * share
        if not epsilon > 0:
            raise BudgetExceededError("nothing remains in the ledger to give the parts.")
        event: ev.Event = ev.PureDP(epsilon) if delta == 0 else ev.ApproxDP(epsilon, delta)
        return {"epsilon": epsilon, "delta": delta, "accountant": "auto"}, event
    if name == "zcdp":
        rho = remaining[0] * share
        if not rho > 0:
            raise BudgetExceededError("nothing remains in the ledger to give the parts.")
        epsilon = zcdp_to_epsilon(rho, parent.delta)
        for _ in range(60):  # the child's ρ* (solved from its (ε, δ)) must not exceed ρ
            child = Ledger(epsilon, parent.delta, accountant="zcdp")
            if child.budget.as_tuple()[0] <= rho:
                break
            epsilon = math.nextafter(epsilon * (1 - 1e-12), 0.0)
        else:  # pragma: no cover - the solve is monotone
            raise InvalidArgumentError("internal error: no zCDP child budget within ρ.")
        child_rho = child.budget.as_tuple()[0]
        return (
            {"epsilon": epsilon, "delta": parent.delta, "accountant": "zcdp"},
            ev.ZCDP(child_rho),
        )
    raise InvalidArgumentError(
        f"a partition needs a ledger whose accountant is 'basic' or 'zcdp' (or an automatic "
        f"ledger with nothing spent yet); this one's is {name!r}, whose filter cannot "
        "price a whole child ledger exactly. Create the study's ledger with "
        "accountant='basic' or 'zcdp' (each part's own ledger may use any accountant)."
    )


def _split(data: Any, by: str, values: Sequence[Any], tag: tuple[Any, ...]) -> list[Any]:
    """Each part's rows (record-local: a row's own ``by`` value), tagged with its part."""
    columns = getattr(data, "columns", None)
    if columns is None or by not in columns:
        raise InvalidArgumentError(
            f"`by` must name a column of `data` (a pandas or dask DataFrame). Found {by!r}"
            + ("" if columns is None else f" among {list(columns)!r}")
            + "."
        )
    out = []
    for value in values:
        rows = data[data[by] == value]
        if hasattr(rows, "attrs"):
            rows.attrs = {**rows.attrs, _TAG: (*tag, value)}
        out.append(rows)
    return out


def partition(
    ledger: Ledger,
    data: Any,
    *,
    by: str,
    parts: Sequence[Any],
    share: float = 1.0,
    label: str | None = None,
) -> Partitions:
    """``ledger.partition(...)``: see the module. Charges the parent once, before any part."""
    from dpledger.ledger.core import Ledger

    if not isinstance(by, str):
        raise InvalidArgumentTypeError(f"`by` must be a column name (a string). Found {by!r}.")
    if isinstance(parts, (str, bytes)) or not hasattr(parts, "__iter__"):
        raise InvalidArgumentError(
            f"`parts` must be a list of the declared values. Found {parts!r}."
        )
    values = list(parts)
    if len(values) < 1 or len(set(map(repr, values))) != len(values):
        raise InvalidArgumentError(f"`parts` must be distinct and non-empty. Found {parts!r}.")
    share = check_probability("share", share, low_open=True, high_open=False)
    if ledger.adjacency != ev.ADD_REMOVE:
        raise InvalidArgumentError(
            "a partition needs add/remove adjacency: under replace-one a record can move "
            "from one part to another and change two parts at once, which the parts' "
            "ledgers (each at the full budget) would not account for."
        )
    text = _label(by, values) if label is None else f"{label} ({_label(by, values)})"
    earlier = [r for r in ledger.receipts if r.label == text]
    tag = (str(id(ledger)) if ledger.path is None else str(ledger.path), by)
    pieces = _split(data, by, values, tag)
    if earlier:  # a reopened parent: reopen the children, charge nothing more
        children = []
        for value in values:
            where = _child_location(ledger, by, value)
            if where is None:  # pragma: no cover - an in-memory ledger is never reopened
                raise InvalidArgumentError("an in-memory ledger's partition cannot be reopened.")
            children.append(Ledger.open(where, key=ledger._key))
        receipt = earlier[-1]
    else:
        arguments, charge = _child_budget(ledger, share)
        ledger.check([charge])  # the parent can pay before any child exists
        children = []
        for value in values:
            where = _child_location(ledger, by, value)
            if where is not None and Path(str(where)).exists():
                raise InvalidArgumentError(
                    f"a ledger for part {value!r} already exists at {where}, but the parent "
                    "has no receipt for this partition: refusing to reuse or overwrite it."
                )
            children.append(
                Ledger(
                    arguments["epsilon"],
                    arguments["delta"],
                    accountant=arguments["accountant"],
                    adjacency=ledger.adjacency,
                    path=where,
                    key=ledger._key,
                )
            )
        receipt = ledger.spend(charge, label=text)
    for child, value in zip(children, values, strict=True):
        child.__dict__["_partition"] = (*tag, value)
    return Partitions(
        by,
        [Part(v, d, c) for v, d, c in zip(values, pieces, children, strict=True)],
        receipt,
    )


def check_partition_data(ledger: Any, data: Any) -> None:
    """Refuse a query charged to a part's ledger on data that is not that part's.

    Reads the data's tag (metadata), never a row. A ledger that is no part accepts any data.
    """
    tag = getattr(ledger, "__dict__", {}).get("_partition")
    if tag is None:
        return
    attrs = getattr(data, "attrs", None)
    found = None if not isinstance(attrs, dict) else attrs.get(_TAG)
    if found != tag:
        raise InvalidArgumentError(
            f"this ledger belongs to the part {tag[1]}={tag[-1]!r} of a partition: query that "
            f"part's data (parts[{tag[-1]!r}].data, or columns of it). A query on other data "
            "would cross parts, which the partition's single charge does not cover."
        )


__dir__ = namespace(__all__)
