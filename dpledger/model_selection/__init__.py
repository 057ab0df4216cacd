"""Model selection that spends a privacy budget knowingly: priced runs and private tuning.

* :func:`cross_validate`, :func:`cross_val_score` and :class:`GridSearchCV` are
  scikit-learn's, with the whole run — every fold's fit, every candidate's, the refit —
  priced before the first fit and refused up front, with its price in ε at the ledger's
  δ, if it does not fit the shared ledger; ``error_score`` must be ``"raise"``, so a
  budget refusal never becomes a ``nan`` score (:mod:`._cross_validation`,
  :mod:`._pricing`). Their *scores* are not private.
* :func:`private_random_search` tunes a classifier privately: a random number of runs,
  each a candidate drawn from the grid, each scored privately on a validation part; only
  the best is released, and the ledger is charged the proved cost of the whole search
  (Papernot & Steinke 2022; Liu & Talwar 2019) — 3ε for pure ε-DP runs, whatever the
  grid (:mod:`._tuning`).

docs/model_selection.md compares the two on UCI Adult.
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.model_selection._cross_validation import (
    GridSearchCV,
    cross_val_score,
    cross_validate,
    price_cross_validation,
)
from dpledger.model_selection._pricing import RunPrice
from dpledger.model_selection._tuning import (
    PrivateSearchResult,
    best_of_random_runs,
    private_random_search,
    tuned_rdp_curve,
)

__all__ = [
    "GridSearchCV",
    "PrivateSearchResult",
    "RunPrice",
    "best_of_random_runs",
    "cross_val_score",
    "cross_validate",
    "price_cross_validation",
    "private_random_search",
    "tuned_rdp_curve",
]

__dir__ = namespace(__all__)
