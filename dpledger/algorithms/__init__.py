"""Private algorithms built from mechanisms and charged to a ledger.

Available now: the analyst's descriptive statistics (:mod:`.descriptive`): ``count``,
``sum``, ``mean``, ``variance`` and ``histogram`` with declared bounds.

Planned: private IRLS, ADASSP/SSP, the functional mechanism family (FM, relaxed FM,
Gaussian FM, capeFM), objective and output perturbation, KNG and noisy gradient descent
— each in an "as published" and a "calibrated" form, every release charged as the event
it really is (see ``shared/docs/SEED-NOTES.md``).
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.algorithms.descriptive import count, histogram, mean, sum, variance

__all__ = ["count", "histogram", "mean", "sum", "variance"]

__dir__ = namespace(__all__, "descriptive")
