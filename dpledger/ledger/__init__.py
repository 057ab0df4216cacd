"""The ledger layer: budgets and filters, the store, the planning path and the :class:`Ledger`.

* :mod:`dpledger.ledger.budgets` — typed budgets, one per currency;
* :mod:`dpledger.ledger.filters` — the privacy filters a ledger can keep (each valid
  under adaptivity); :mod:`dpledger.ledger.planned` — the filter of a fixed schedule;
* :mod:`dpledger.ledger.receipts` — receipts and what a ledger records;
* :mod:`dpledger.ledger.store` — SQLite persistence: hash chain, sealed head, one
  transaction per receipt;
* :mod:`dpledger.ledger.planning` — the one planning path: calibrate a schedule,
  reserve it, release it in order (:class:`Reservation`);
* :mod:`dpledger.ledger.core` — :class:`Ledger`.
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.ledger.budgets import (
    ApproxDPBudget,
    Budget,
    GDPBudget,
    RDPBudget,
    ScheduleBudget,
    ZCDPBudget,
)
from dpledger.ledger.core import Ledger
from dpledger.ledger.planning import Reservation
from dpledger.ledger.receipts import Receipt

__all__ = [
    "ApproxDPBudget",
    "Budget",
    "GDPBudget",
    "Ledger",
    "RDPBudget",
    "Receipt",
    "Reservation",
    "ScheduleBudget",
    "ZCDPBudget",
]

__dir__ = namespace(
    __all__, "budgets", "core", "filters", "planned", "planning", "receipts", "store"
)
