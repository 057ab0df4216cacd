"""dpledger: differential-privacy budget accounting and noise calibration.

Every ε the toolkit reports is an upper bound on the true privacy loss, computed from
what was actually released (noise, sensitivity, count, sampling) — never from a claim.

Example:
    >>> import dpledger as dpl
    >>> from dpledger import events as ev
    >>> training = ev.PoissonSampled(ev.Gaussian(sigma=1.1), rate=0.01) * 1000
    >>> round(dpl.accountant.epsilon(training, delta=1e-5), 2)
    1.52
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dpledger import accountant
from dpledger._public import namespace
from dpledger.accountant import events
from dpledger.errors import (
    BudgetExceededError,
    CalibrationError,
    DPLedgerError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LedgerIntegrityError,
    NotApplicableError,
)
from dpledger.ledger import Ledger, Receipt

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExceededError",
    "CalibrationError",
    "DPLedgerError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "Ledger",
    "LedgerIntegrityError",
    "NotApplicableError",
    "Receipt",
    "__version__",
    "accountant",
    "algorithms",
    "audit",
    "calibrate",
    "events",
    "interop",
    "mechanisms",
    "model_selection",
]

if TYPE_CHECKING:
    from dpledger import algorithms, audit, calibrate, interop, mechanisms, model_selection

# Subpackages imported on first use (PEP 562), so that ``import dpledger`` stays light
# (issue #32): ``algorithms`` brings in scikit-learn, which the accountant, calibration,
# ledger and audit never need; ``audit`` (its black-box estimator) and ``mechanisms``
# (the Wishart mechanism), and so ``calibrate``, which uses the mechanisms, bring in
# scipy.stats, which accounting never needs.
_LAZY_SUBPACKAGES = frozenset(
    {"algorithms", "audit", "calibrate", "interop", "mechanisms", "model_selection"}
)


def __getattr__(name: str) -> Any:
    """A subpackage of ``_LAZY_SUBPACKAGES``, imported on first use (PEP 562)."""
    if name in _LAZY_SUBPACKAGES:
        module = importlib.import_module(f"dpledger.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'dpledger' has no attribute {name!r}")


__dir__ = namespace(
    __all__,
    "accountant",
    "algorithms",
    "audit",
    "calibrate",
    "errors",
    "interop",
    "ledger",
    "mechanisms",
    "model_selection",
)
