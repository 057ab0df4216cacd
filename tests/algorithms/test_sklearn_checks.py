"""scikit-learn's own estimator checks (``parametrize_with_checks``) over every estimator.

Every estimator runs scikit-learn's whole suite. The checks a private estimator cannot
pass are listed in :data:`EXPECTED_FAILURES`, each with its differential-privacy reason in
one line; everything else must pass. Each estimator draws on its own file ledger, sized
for all its checks' fits (the budget every clone shares, and which a pickle keeps by
path, as a cross-validation's copies do).

The default run checks a cheap estimator of each kind (a regressor, a classifier, the
transformer); the rest are marked slow (``pytest -m slow``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from typing import Any

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpledger as dpl
from dpledger.algorithms import (
    ADASSP,
    SSP,
    ExponentialLinearRegression,
    ExponentialQuantileRegression,
    FMLinearRegression,
    FMLogisticRegression,
    KNGLinearRegression,
    KNGQuantileRegression,
    NoisyGD,
    NoisyGDClassifier,
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
    PrivateEstimator,
    PrivateIRLS,
    PrivateStandardScaler,
)
from dpledger.algorithms.polynomial import FMPolynomialRegression, huber_loss

_DIRECTORY = tempfile.mkdtemp(prefix="dpledger-sklearn-checks-")
atexit.register(shutil.rmtree, _DIRECTORY, ignore_errors=True)
_NUMBERS = itertools.count()


def _ledger() -> dpl.Ledger:
    """A file ledger with room for every fit of one estimator's checks (≈ 100 fits)."""
    path = os.path.join(_DIRECTORY, f"ledger-{next(_NUMBERS)}.json")
    return dpl.Ledger(1e6, 1e-2, path=path)


#: what every estimator is fitted with: a budget, declared bounds wide enough for the
#: checks' data (standardised features, a few hundred rows), a seed
_COMMON: dict[str, Any] = {"epsilon": 5.0, "adjacency": "add_remove", "rng": 0}
_BOUNDS = {"x_bound": 5.0}


def _estimators() -> dict[str, Any]:
    """name → a factory of the estimator configured for the checks."""
    common = {**_COMMON, "delta": 1e-6}
    pure = {**_COMMON, "delta": 0.0}
    bounded = {**common, **_BOUNDS, "y_bound": 5.0}
    kng = {**_COMMON, **_BOUNDS, "y_bound": 5.0, "theta_bound": 10.0}
    mcmc = {"chains": 2, "burn_in": 20, "samples": 10}
    return {
        "ADASSP": lambda: ADASSP(**bounded),
        "SSP": lambda: SSP(**bounded),
        "FMLinearRegression": lambda: FMLinearRegression(**bounded),
        "FMLogisticRegression": lambda: FMLogisticRegression(**common, **_BOUNDS),
        "FMPolynomialRegression": lambda: FMPolynomialRegression(
            loss=huber_loss(), **common, **_BOUNDS
        ),
        "PrivateIRLS": lambda: PrivateIRLS(**bounded, iterations=2),
        "NoisyGD": lambda: NoisyGD(**bounded, steps=5, data_size=100),
        "NoisyGDClassifier": lambda: NoisyGDClassifier(**common, **_BOUNDS, steps=5, data_size=100),
        "ObjectivePerturbationClassifier": lambda: ObjectivePerturbationClassifier(
            **pure, **_BOUNDS, data_size=100
        ),
        "ObjectivePerturbationRegressor": lambda: ObjectivePerturbationRegressor(
            **pure, **_BOUNDS, data_size=100
        ),
        "OutputPerturbationClassifier": lambda: OutputPerturbationClassifier(
            **pure, **_BOUNDS, data_size=100
        ),
        "OutputPerturbationRegressor": lambda: OutputPerturbationRegressor(
            **pure, **_BOUNDS, data_size=100
        ),
        "KNGLinearRegression": lambda: KNGLinearRegression(**kng),
        "ExponentialLinearRegression": lambda: ExponentialLinearRegression(**kng),
        "KNGQuantileRegression": lambda: KNGQuantileRegression(**kng, **mcmc),
        "ExponentialQuantileRegression": lambda: ExponentialQuantileRegression(**kng, **mcmc),
        "PrivateStandardScaler": lambda: PrivateStandardScaler(**common, bounds=(-5.0, 5.0)),
    }


#: checked in the default run: one cheap estimator of each kind
DEFAULT = {"ADASSP", "FMLogisticRegression", "PrivateStandardScaler"}

# -- the checks a private estimator cannot pass, and why ----------------------------------

_NOISE = "noise: two fits differ (a shared ledger's position enters even a fixed seed)"

#: every estimator
_ALL = {
    "check_estimators_empty_data_messages": (
        "no rows is a data set like any other: under add/remove the empty set is a "
        "neighbour, and refusing it would publish the private row count"
    ),
    "check_fit_idempotent": _NOISE,
}
#: every regressor: scikit-learn compares two fits' predictions
_REGRESSORS = {
    "check_regressor_data_not_an_array": _NOISE,
    "check_regressors_int": _NOISE,
    "check_supervised_y_2d": _NOISE,
}
#: every classifier
_CLASSIFIERS = {
    "check_classifier_data_not_an_array": _NOISE,
    "check_supervised_y_2d": _NOISE,
    "check_classifiers_one_label": (
        "which classes occur is private: one class present is fitted like any other data "
        "set (classes_ stays the declared two), and the noise may predict the other"
    ),
    "check_classifiers_classes": (
        "labels must be declared (classes=), never read from the data: string labels "
        "without a declaration are refused by their dtype"
    ),
    "check_classifier_not_supporting_multiclass": (
        "which labels occur is private: rows of a third class are dropped, never refused"
    ),
    "check_classifiers_regression_target": (
        "labels are compared with the two classes row by row: rows of other (continuous) "
        "values are dropped; refusing them would read the private labels"
    ),
    "check_supervised_y_no_nan": (
        "a NaN or infinite label is a label of no declared class: its row is dropped; "
        "refusing it would read the private labels"
    ),
}
#: the certified ERM solver
_ERM = {
    "check_non_transformer_estimators_n_iter": (
        "no n_iter_: the solver's step count depends on the data, and publishing it "
        "would be a release nobody paid for"
    ),
}
#: the sampler of KNG and the exponential mechanism for linear regression
_SAMPLER = {
    "check_dtype_object": (
        "the exact sampler's failure (SamplingError, charged) is part of the release: "
        "likely on 10 features in a wide Θ at a small n"
    ),
    "check_fit2d_1sample": (
        "the exact sampler's failure (SamplingError, charged) is part of the release: "
        "likely at one row"
    ),
}

#: estimator name → {check name: the DP reason it fails}
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "ADASSP": {**_ALL, **_REGRESSORS},
    "SSP": {**_ALL, **_REGRESSORS},
    "FMLinearRegression": {**_ALL, **_REGRESSORS},
    "FMPolynomialRegression": {**_ALL, **_REGRESSORS},
    "PrivateIRLS": {**_ALL, **_REGRESSORS},
    "NoisyGD": {**_ALL, **_REGRESSORS},
    "KNGLinearRegression": {**_ALL, **_REGRESSORS, **_SAMPLER},
    "ExponentialLinearRegression": {**_ALL, **_REGRESSORS, **_SAMPLER},
    "KNGQuantileRegression": {**_ALL, **_REGRESSORS},
    "ExponentialQuantileRegression": {**_ALL, **_REGRESSORS},
    "ObjectivePerturbationRegressor": {**_ALL, **_REGRESSORS, **_ERM},
    "OutputPerturbationRegressor": {**_ALL, **_REGRESSORS, **_ERM},
    "FMLogisticRegression": {**_ALL, **_CLASSIFIERS},
    "NoisyGDClassifier": {**_ALL, **_CLASSIFIERS},
    "ObjectivePerturbationClassifier": {**_ALL, **_CLASSIFIERS, **_ERM},
    "OutputPerturbationClassifier": {**_ALL, **_CLASSIFIERS, **_ERM},
    "PrivateStandardScaler": dict(_ALL),
}


def _expected_failures(estimator: Any) -> dict[str, str]:
    return EXPECTED_FAILURES[type(estimator).__name__]


def _check_id(value: Any) -> str:
    """Short ids: the class's name, and the check's (scikit-learn's ids print every parameter)."""
    if isinstance(value, PrivateEstimator):
        return type(value).__name__
    keywords: dict[str, Any] = {}
    while hasattr(value, "func"):  # functools.partial: the check and its keywords
        keywords.update(value.keywords)
        value = value.func
    name = str(getattr(value, "__name__", value))
    shown = ",".join(f"{k}={v}" for k, v in sorted(keywords.items()))
    return f"{name}({shown})" if shown else name


def _checks(names: set[str]) -> Any:
    """scikit-learn's checks of the named estimators, each on its own ledger, short ids."""
    factories = _estimators()
    estimators = [factories[name]().set_params(ledger=_ledger()) for name in sorted(names)]
    mark = parametrize_with_checks(estimators, expected_failed_checks=_expected_failures)
    return pytest.mark.parametrize(*mark.args, ids=_check_id)


@_checks(DEFAULT)
def test_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@_checks(set(_estimators()) - DEFAULT)
def test_sklearn_checks_slow(estimator, check):
    check(estimator)


# -- the map itself ----------------------------------------------------------------------


def _every_estimator_class() -> set[str]:
    classes = set()
    stack = list(PrivateEstimator.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        module = cls.__module__
        public = module.startswith("dpledger.") and not module.rsplit(".", 1)[1].startswith("_")
        if public and not cls.__name__.startswith("_"):
            classes.add(cls.__name__)
    return classes


def test_every_estimator_is_checked_and_every_failure_has_a_reason():
    assert set(_estimators()) == _every_estimator_class()
    assert set(EXPECTED_FAILURES) == set(_estimators())
    for name, failures in EXPECTED_FAILURES.items():
        for check, reason in failures.items():
            assert check.startswith("check_"), (name, check)
            assert reason and "\n" not in reason, (name, check)


def test_the_tags_say_noisy_dense_and_binary():
    from sklearn.utils import get_tags

    for name, make in _estimators().items():
        tags = get_tags(make())
        assert tags.non_deterministic, name
        assert not tags.input_tags.sparse and not tags.input_tags.allow_nan, name
        if tags.classifier_tags is not None:
            assert not tags.classifier_tags.multi_class and tags.classifier_tags.poor_score
            assert tags.target_tags.required, name
        elif tags.regressor_tags is not None:
            assert tags.regressor_tags.poor_score and tags.target_tags.required, name
        else:
            assert name == "PrivateStandardScaler" and not tags.target_tags.required
