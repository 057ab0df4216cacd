"""Refusal hints: which other accountant would have accepted a refused release."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.errors import DPLedgerError
from dpledger.ledger.filters import FILTERS, make_filter

__all__ = ["alternatives"]


def alternatives(
    current: str,
    epsilon: float,
    delta: float,
    spends: Sequence[ev.Event],
    cache: dict[str, list[Any]],
    event: ev.Event,
) -> str:
    """Which other accountant would have accepted ``event`` after the same ``spends``.

    Replays the spends under each other filter incrementally (``cache``, kept per ledger:
    a refusal costs one charge per new receipt, not a replay of the whole ledger).
    Returns the hint for the refusal's message, or "" if no other accountant would.
    """
    offers = []
    for name in FILTERS:
        if name == current:
            continue
        entry = cache.get(name)
        if entry is None:
            try:
                alt = make_filter(name, epsilon, delta)
            except DPLedgerError:
                continue
            entry = cache[name] = [alt, 0, alt.zero(), True]
        alt, done, total, alive = entry
        try:
            for past in spends[done:]:
                if alive:
                    total = alt.add(total, alt.cost(past))
                    alive = alt.within(total)
            entry[1:] = [len(spends), total, alive]
            more = alt.fits(total, event) if alive else 0
        except (DPLedgerError, ArithmeticError):
            entry[1:] = [len(spends), total, False]
            continue
        if more >= 1:
            offers.append(
                f"accountant={name!r} would have accepted it, with room for {more} such "
                "release" + ("s" if more > 1 else "")
            )
    if not offers:
        return ""
    return (
        f"(This ledger's accountant is {current!r}; with the same budget and the same "
        "releases so far, " + "; ".join(offers) + ". The accountant is fixed when a "
        "ledger is created, or at its first release for the default 'auto'.)"
    )


__dir__ = namespace(__all__)
