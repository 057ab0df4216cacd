"""Private estimators and queries: every release charged to a ledger before it is drawn.

The estimators are scikit-learn estimators following one contract (:mod:`.base`): each
parameter is declared with its constraint and checked before ``fit`` reads any data;
bounds and adjacency are declared, never estimated; the whole schedule is checked
against the ledger before the first release; fitted attributes end in ``_`` and are
listed in each estimator's ``Attributes``. The descriptive queries are functions charged
to the ledger they are given. Derivations and comparisons: docs/algorithms.md.

========================================  ===================================  =====================
estimator or query                        releases                             module
========================================  ===================================  =====================
:class:`ADASSP`                           λ_min, XᵀX and Xᵀy with noise;       :mod:`.linear`
                                          solved with a ridge
:class:`SSP`                              XᵀX and Xᵀy with noise; solved       :mod:`.linear`
:class:`PrivateIRLS`                      re-weighted first and second         :mod:`.irls`
                                          moments, a pair per iteration
:class:`FMLinearRegression`               the squared loss's coefficients      :mod:`.functional`
                                          with noise (FM, relaxed FM or
                                          Gaussian FM)
:class:`FMLogisticRegression`             the logistic loss's Taylor           :mod:`.functional`
                                          coefficients with noise
:class:`NoisyGD`                          a noisy sum of clipped gradients     :mod:`.gradient`
                                          per step
:class:`NoisyGDClassifier`                the same, for the logistic loss      :mod:`.gradient`
:class:`ObjectivePerturbationClassifier`  the minimiser of a noisy             :mod:`.erm`
                                          objective, plus noise
:class:`ObjectivePerturbationRegressor`   the same, for the Huber loss         :mod:`.erm`
:class:`OutputPerturbationClassifier`     the minimiser, plus noise            :mod:`.erm`
:class:`OutputPerturbationRegressor`      the same, for the Huber loss         :mod:`.erm`
:class:`KNGLinearRegression`              one θ ∈ Θ drawn by KNG, exactly      :mod:`.kng`
:class:`ExponentialLinearRegression`      one θ ∈ Θ drawn by the exponential   :mod:`.kng`
                                          mechanism, exactly
:class:`KNGQuantileRegression`            one θ ∈ Θ drawn by KNG (MCMC)        :mod:`.kng`
:class:`ExponentialQuantileRegression`    one θ ∈ Θ drawn by the exponential   :mod:`.kng`
                                          mechanism (MCMC)
:class:`PrivateStandardScaler`            per-feature sums and sums of         :mod:`.preprocessing`
                                          squares; the count (add/remove)
:func:`count`, :func:`sum`, :func:`mean`  noisy counts, and sums of values     :mod:`.descriptive`
                                          clipped to declared bounds
:func:`variance`, :func:`histogram`       the same                             :mod:`.descriptive`
:func:`quantile`                          a draw of KNG or the exponential     :mod:`.quantile`
                                          mechanism per quantile
:class:`PrivateEstimator`                 (the contract's base class)          :mod:`.base`
========================================  ===================================  =====================

Where a paper publishes constants, ``variant="published"`` reproduces them and charges
their true cost; the default, ``"calibrated"``, solves the noise to meet (ε, δ) exactly.
Gaussian FM for any loss of the margin, expanded by sympy, is
:class:`.polynomial.FMPolynomialRegression` (imported from its module, which loads sympy).
capeFM, :class:`.cape.CapeFM`, simulates a protocol among several sites (its ``fit``
takes one data set per site): not an estimator, it is imported from its module.

The classifiers take any two class labels, declared (``classes=``) or named by ``y``'s
dtype, never read from the data; every estimator's tags (``__sklearn_tags__``) say it is
non-deterministic (noise), dense-only and, for a classifier, binary.
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.algorithms.base import PrivateEstimator
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
    "cape",
    "descriptive",
    "erm",
    "functional",
    "gradient",
    "irls",
    "kng",
    "linear",
    "polynomial",
    "preprocessing",
    "quantile",
)
