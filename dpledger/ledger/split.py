"""An even split of what remains in a ledger: k parts that together use all of it.

``parts = ledger.split(k)`` gives k :class:`Part` objects; a query given ``share=part``
takes 1/j of what remains when it is charged, j the number of the split's parts not yet
used. Used in any order, k queries take equal parts of the remainder as it stood (in
the ledger's currency, where costs add up), and the last takes everything that is left:
the whole remainder is used, exactly. A part is used once, and only when its query is
charged (a preview or a refused query leaves it unused).
"""

from __future__ import annotations

import threading
from typing import Any

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["MAX_PARTS", "Part", "Split", "split"]

MAX_PARTS = 1_000_000
"""The most parts a split may have."""


class Split:
    """k parts of what remains in ``ledger`` (see the module)."""

    def __init__(self, ledger: Any, k: Any) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_PARTS:
            raise InvalidArgumentError(
                f"`k` must be a positive integer of at most {MAX_PARTS:,} (each part is an "
                f"object). Found {k!r}."
            )
        self.ledger = ledger
        self.parts = tuple(Part(self, i) for i in range(k))
        self._lock = threading.Lock()

    @property
    def unused(self) -> int:
        """How many parts are not used yet."""
        return sum(not p.used for p in self.parts)

    def __iter__(self) -> Any:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def __getitem__(self, i: int) -> Part:
        return self.parts[i]

    def __repr__(self) -> str:
        return f"Split({len(self.parts)} parts, {self.unused} unused)"


class Part:
    """One part of a :class:`Split`: pass it as a query's ``share``."""

    def __init__(self, split: Split, index: int) -> None:
        self.split = split
        self.index = index
        self.used = False

    def check(self, ledger: Any) -> None:
        """Refuse a part of another ledger's split, or one already used."""
        if ledger is not self.split.ledger:
            raise InvalidArgumentError("this part belongs to a split of another ledger.")
        if self.used:
            raise InvalidArgumentError(
                f"part {self.index + 1} of {len(self.split)} was used already (each part "
                "is one query's)."
            )

    def share(self) -> float:
        """The share of what remains this part takes now: 1/(parts not yet used)."""
        return 1.0 / self.split.unused

    def spent(self) -> None:
        """Mark the part used (its query was charged)."""
        with self.split._lock:
            self.used = True

    def __repr__(self) -> str:
        state = "used" if self.used else f"takes 1/{self.split.unused} of what remains"
        return f"Part({self.index + 1} of {len(self.split)}, {state})"


def split(ledger: Any, k: Any) -> Split:
    """``ledger.split(k)``: k parts that together use all that remains."""
    from dpledger.ledger.core import Ledger

    if not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(f"`ledger` must be a dpledger.Ledger. Found {ledger!r}.")
    return Split(ledger, k)


__dir__ = namespace(__all__)
