"""scikit-learn conventions: feature names, clear errors for missing y, the scaler's output API."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger.algorithms import ADASSP, PrivateStandardScaler


def _frame(rng, n=400):
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    return X, 2.0 * X["a"] - X["c"]


def test_reordered_or_renamed_columns_are_refused_at_predict():
    X, y = _frame(np.random.default_rng(0))
    model = ADASSP(epsilon=5.0, delta=1e-6, x_bound=4.0, y_bound=8.0, adjacency="add_remove")
    model.fit(X, y)
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    baseline = model.predict(X)
    with pytest.raises(dpl.InvalidArgumentError, match="same order"):
        model.predict(X[["b", "a", "c"]])
    with pytest.raises(dpl.InvalidArgumentError, match="same order"):
        model.predict(X.rename(columns={"a": "z"}))
    with pytest.warns(UserWarning, match="no feature names"):
        positional = model.predict(X.to_numpy())
    np.testing.assert_array_equal(positional, baseline)


def test_a_fit_on_arrays_has_no_feature_names():
    X, y = _frame(np.random.default_rng(1))
    model = ADASSP(epsilon=5.0, delta=1e-6, x_bound=4.0, y_bound=8.0, adjacency="add_remove")
    model.fit(X.to_numpy(), y.to_numpy())
    assert not hasattr(model, "feature_names_in_")
    model.predict(X)  # a frame after an array fit: positional, as in scikit-learn


def test_missing_y_is_refused_by_name():
    X, _ = _frame(np.random.default_rng(2))
    model = ADASSP(epsilon=1.0, delta=1e-6, x_bound=4.0, y_bound=8.0, adjacency="add_remove")
    with pytest.raises(dpl.InvalidArgumentError, match="`y` is required"):
        model.fit(X, None)


def test_the_scaler_names_its_outputs_and_sets_its_output_container():
    X, _ = _frame(np.random.default_rng(3))
    scaler = PrivateStandardScaler(epsilon=1.0, delta=1e-6, bounds=(-4, 4), adjacency="add_remove")
    out = scaler.set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["a", "b", "c"]
    assert list(scaler.get_feature_names_out()) == ["a", "b", "c"]
