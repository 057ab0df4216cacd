"""The ledger layer: budgets and filters, the store, and the :class:`Ledger`.

* :mod:`dpledger.ledger.filters` — typed budgets and the privacy filters a ledger can
  keep (each valid under adaptivity), and the planned filter of a fixed schedule;
* :mod:`dpledger.ledger.store` — SQLite persistence: hash chain, sealed head, one
  transaction per receipt;
* :mod:`dpledger.ledger.core` — :class:`Ledger` and :class:`Receipt`.
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.ledger.core import Ledger, Receipt
from dpledger.ledger.filters import (
    ApproxDPBudget,
    Budget,
    GDPBudget,
    RDPBudget,
    ScheduleBudget,
    ZCDPBudget,
)

__all__ = [
    "ApproxDPBudget",
    "Budget",
    "GDPBudget",
    "Ledger",
    "RDPBudget",
    "Receipt",
    "ScheduleBudget",
    "ZCDPBudget",
]

__dir__ = namespace(__all__, "core", "filters", "store")
