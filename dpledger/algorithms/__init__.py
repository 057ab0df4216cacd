"""Private algorithms built from mechanisms and charged to a ledger.

Available now: the analyst's descriptive statistics (:mod:`.descriptive`): ``count``,
``sum``, ``mean``, ``variance`` and ``histogram`` with declared bounds; private linear
regression from sufficient statistics (:mod:`.linear`): :class:`ADASSP` and :class:`SSP`,
scikit-learn estimators following the estimator contract of :mod:`.base`.

and private IRLS (:mod:`.irls`: :class:`PrivateIRLS`, robust, logistic and Poisson
regression); :class:`PrivateStandardScaler` (:mod:`.preprocessing`), which releases the
statistics it scales with and charges them; the functional mechanism family
(:mod:`.functional`: FM, relaxed FM and Gaussian FM for linear and logistic loss).

Also: capeFM (:mod:`.cape`), noisy gradient descent (:mod:`.gradient`), objective and
output perturbation (:mod:`.erm`) and private quantiles (:mod:`.quantile`) — each in an
"as published" and a "calibrated" form where a paper publishes constants, every release
charged as the event it really is (see ``shared/docs/SEED-NOTES.md``).
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.algorithms.base import PrivateEstimator
from dpledger.algorithms.cape import CapeFM
from dpledger.algorithms.descriptive import count, histogram, mean, sum, variance
from dpledger.algorithms.erm import (
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
)
from dpledger.algorithms.functional import FMLinearRegression, FMLogisticRegression
from dpledger.algorithms.gradient import NoisyGD, NoisyGDClassifier
from dpledger.algorithms.irls import PrivateIRLS
from dpledger.algorithms.kng import (
    ExponentialLinearRegression,
    ExponentialQuantileRegression,
    KNGLinearRegression,
    KNGQuantileRegression,
)
from dpledger.algorithms.linear import ADASSP, SSP
from dpledger.algorithms.preprocessing import PrivateStandardScaler
from dpledger.algorithms.quantile import quantile

__all__ = [
    "ADASSP",
    "SSP",
    "CapeFM",
    "ExponentialLinearRegression",
    "ExponentialQuantileRegression",
    "FMLinearRegression",
    "FMLogisticRegression",
    "KNGLinearRegression",
    "KNGQuantileRegression",
    "NoisyGD",
    "NoisyGDClassifier",
    "ObjectivePerturbationClassifier",
    "ObjectivePerturbationRegressor",
    "OutputPerturbationClassifier",
    "OutputPerturbationRegressor",
    "PrivateEstimator",
    "PrivateIRLS",
    "PrivateStandardScaler",
    "count",
    "histogram",
    "mean",
    "quantile",
    "sum",
    "variance",
]

__dir__ = namespace(
    __all__,
    "base",
    "descriptive",
    "erm",
    "functional",
    "gradient",
    "irls",
    "kng",
    "linear",
    "preprocessing",
    "quantile",
)
