"""dpledger with the tools around it: dp_accounting's events, Opacus' privacy engine.

* :func:`from_dp_accounting` / :func:`to_dp_accounting` — Google dp_accounting's
  ``DpEvent`` trees to dpledger events and back, exactly, or a clear refusal naming the
  type (:mod:`dpledger.interop.dp_accounting`). Reading dp_accounting's text or dict form
  needs no dp_accounting; building its objects does (``pip install "dpledger[compare]"``).
* :class:`LedgerAccountant` — an Opacus accountant that charges a dpledger ledger for
  every DP-SGD step before its noise is drawn, and answers ``get_epsilon`` by PLD
  (:mod:`dpledger.interop.opacus`; needs ``pip install "dpledger[opacus]"``). Opacus and
  PyTorch are imported only when it is first used.
"""

from __future__ import annotations

import importlib
from typing import Any

from dpledger._public import namespace
from dpledger.interop.dp_accounting import from_dp_accounting, to_dp_accounting

# LedgerAccountant is importable from here too (``from dpledger.interop import
# LedgerAccountant``), loaded on first use so that this package never imports PyTorch
__all__ = ["from_dp_accounting", "to_dp_accounting"]

_FROM_OPACUS_MODULE = frozenset({"LedgerAccountant"})


def __getattr__(name: str) -> Any:
    """:class:`LedgerAccountant`, imported (with Opacus and PyTorch) on first use (PEP 562)."""
    if name in _FROM_OPACUS_MODULE:
        module = importlib.import_module("dpledger.interop.opacus")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__dir__ = namespace(__all__, "dp_accounting", "opacus")
