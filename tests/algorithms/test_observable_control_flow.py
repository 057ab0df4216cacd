"""The estimator contract's first rule: nothing observable escapes the charge (issue 31).

Everything a caller can observe from a fit or a query — an exception, a refusal, a
warning, the number of receipts, the events charged — must be a function of declared
public quantities, or part of a charged release. So on neighbouring data sets (add/remove
and replace-one, the empty set against one row, a set at the declared ``data_size``
against one more row, and a row far outside the declared bounds) every estimator and every
descriptive function must show the same observable control flow. Outputs differ (they are
the noisy releases); nothing else may.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpledger as dpl
from dpledger.algorithms import (
    PrivateStandardScaler,
    count,
    histogram,
    mean,
    quantile,
    sum,
    variance,
)
from tests.algorithms.test_estimator_contract import CLASSIFIERS, ESTIMATORS

#: (ε, δ) of the shared ledger each run draws on: room for any one fit
ROOM = (50.0, 1e-3)


def _rows(n, classifier, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 2.5
    y = np.clip(X @ np.array([0.4, -0.3, 0.2, 0.1]) + 0.05 * rng.normal(size=n), -1, 1)
    return X, ((y > 0).astype(float) if classifier else y)


def _hostile(classifier):
    """A row far outside the declared bounds (clipped, never trusted)."""
    return np.array([[40.0, -40.0, 0.0, 3.0]]), np.array([1.0 if classifier else 25.0])


def _neighbours(classifier, data_size):
    """(label, D, D′, adjacency): the pairs every estimator is run on."""
    X, y = _rows(40, classifier)
    hx, hy = _hostile(classifier)
    replaced = (np.vstack([hx, X[1:]]), np.r_[hy, y[1:]])
    pairs = [
        ("remove a row", (X, y), (X[:-1], y[:-1]), "add_remove"),
        ("add a hostile row", (X, y), (np.vstack([X, hx]), np.r_[y, hy]), "add_remove"),
        ("empty vs one row", (X[:0], y[:0]), (X[:1], y[:1]), "add_remove"),
        ("replace by a hostile row", (X, y), replaced, "replace_one"),
    ]
    if data_size is not None:
        Xn, yn = _rows(data_size + 1, classifier, seed=4)
        pairs.append(("at data_size vs one more", (Xn[:-1], yn[:-1]), (Xn, yn), "add_remove"))
    if classifier:  # a label of no declared class: its row is dropped, never refused
        added = (np.vstack([X, X[:1]]), np.r_[y, 2.0])
        pairs.append(("add a row labelled 2", (X, y), added, "add_remove"))
        swapped = (X, np.r_[np.nan, y[1:]])
        pairs.append(("replace a label by NaN", (X, y), swapped, "replace_one"))
    return pairs


def _observe(run):
    """(exception class or None, events charged, warning categories) of one run."""
    ledger_box = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run(ledger_box)
            error = None
        except Exception as exc:
            error = type(exc).__name__
    ledger = ledger_box["ledger"]
    events = [r.event for r in ledger.receipts]
    return error, events, sorted({w.category.__name__ for w in caught})


def _fit(name, adjacency, X, y):
    def run(box):
        box["ledger"] = ledger = dpl.Ledger(*ROOM, adjacency=adjacency)
        model = ESTIMATORS[name](epsilon=1.0, delta=1e-6, rng=0, ledger=ledger)
        params = model.get_params()
        extra = {"adjacency": adjacency}
        if adjacency == "replace_one" and "data_size" in params:
            extra["data_size"] = None  # n is public under replace-one
        model.set_params(**extra).fit(X, y)

    return run


def _data_size(name):
    params = ESTIMATORS[name](epsilon=1.0, delta=1e-6).get_params()
    return params.get("data_size")


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimators_show_the_same_control_flow_on_neighbours(name):
    classifier = name in CLASSIFIERS
    for label, (X1, y1), (X2, y2), adjacency in _neighbours(classifier, _data_size(name)):
        first = _observe(_fit(name, adjacency, X1, y1))
        second = _observe(_fit(name, adjacency, X2, y2))
        assert first == second, f"{name}, {label} ({adjacency}): {first} != {second}"
        assert first[0] is None, f"{name}, {label}: {first[0]}"
        assert len(first[1]) >= 1


def _scaler(adjacency, X, y):
    def run(box):
        box["ledger"] = ledger = dpl.Ledger(*ROOM, adjacency=adjacency)
        PrivateStandardScaler(
            epsilon=1.0, delta=1e-6, bounds=(-1.0, 1.0), adjacency=adjacency, ledger=ledger,
            rng=0,
        ).fit(X)  # fmt: skip

    return run


def _query(function, adjacency, X, y):
    column = X[:, 0]

    def run(box):
        box["ledger"] = ledger = dpl.Ledger(*ROOM, adjacency=adjacency)
        kw = {"ledger": ledger, "epsilon": 0.5, "rng": 0}
        if function is not quantile:
            kw["delta"] = 1e-6
        if function is count:
            count(column, **kw)
        elif function is histogram:
            histogram(column, edges=[-1.0, -0.5, 0.0, 0.5, 1.0], **kw)
        elif function is quantile:
            quantile(column, 0.5, bounds=(-1.0, 1.0), **kw)
        else:
            function(column, bounds=(-1.0, 1.0), **kw)

    return run


@pytest.mark.parametrize(
    "function", [count, sum, mean, variance, histogram, quantile, PrivateStandardScaler]
)
def test_descriptive_queries_show_the_same_control_flow_on_neighbours(function):
    for label, (X1, y1), (X2, y2), adjacency in _neighbours(False, None):
        if function is PrivateStandardScaler:
            make = _scaler
        else:
            make = lambda a, X, y, f=function: _query(f, a, X, y)  # noqa: E731
        first = _observe(make(adjacency, X1, y1))
        second = _observe(make(adjacency, X2, y2))
        assert first == second, f"{function}, {label} ({adjacency}): {first} != {second}"
        assert first[0] is None, f"{function}, {label}: {first[0]}"
