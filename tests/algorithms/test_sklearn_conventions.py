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


# -- any two class labels: declared, or named by y's dtype, never read from the data -------

from dpledger.algorithms import (  # noqa: E402
    FMLogisticRegression,
    NoisyGD,
    NoisyGDClassifier,
    ObjectivePerturbationClassifier,
    OutputPerturbationClassifier,
    PrivateIRLS,
)

CLASSIFIERS = {
    "FMLogisticRegression": lambda **kw: FMLogisticRegression(delta=1e-6, **kw),
    "NoisyGDClassifier": lambda **kw: NoisyGDClassifier(delta=1e-6, steps=5, data_size=300, **kw),
    "ObjectivePerturbationClassifier": lambda **kw: ObjectivePerturbationClassifier(
        data_size=300, **kw
    ),
    "OutputPerturbationClassifier": lambda **kw: OutputPerturbationClassifier(data_size=300, **kw),
}


def _binary(n=300, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 2
    return X, (X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _classify(name, X, y, **kw):
    """A fit on a fresh ledger: two such fits draw the same noise (same ledger position)."""
    ledger = dpl.Ledger(10.0, 1e-5)
    model = CLASSIFIERS[name](
        epsilon=2.0, x_bound=2.0, adjacency="add_remove", ledger=ledger, rng=11, **kw
    )
    return model.fit(X, y), ledger


LABELLINGS = {
    # name: (labels for 0 and 1, the classes= declaration or None)
    "strings": (np.array(["<=50K", ">50K"]), ("<=50K", ">50K")),
    "strings declared in reverse": (np.array(["no", "yes"]), ("yes", "no")),
    "minus one and one": (np.array([-1, 1]), (-1, 1)),
    "bools": (np.array([False, True]), None),
    "floats": (np.array([0.0, 1.0]), None),
}


@pytest.mark.parametrize("labelling", sorted(LABELLINGS))
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_any_two_labels_give_the_same_model_in_their_own_labels(name, labelling):
    X, y = _binary()
    reference, _ = _classify(name, X, y)
    labels, classes = LABELLINGS[labelling]
    model, ledger = _classify(name, X, labels[y], classes=classes)
    np.testing.assert_array_equal(model.coef_, reference.coef_)  # the same fit, same noise
    assert list(model.classes_) == sorted(labels.tolist())  # sorted, as scikit-learn's
    assert model.classes_.dtype == labels.dtype
    predicted = model.predict(X)
    np.testing.assert_array_equal(predicted, labels[reference.predict(X)])
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))
    assert model.score(X, labels[y]) == reference.score(X, y)
    assert len(ledger.receipts) >= 1


def test_a_pandas_categorical_names_its_classes():
    X, y = _binary()
    reference, _ = _classify("FMLogisticRegression", X, y)
    categories = pd.Series(pd.Categorical.from_codes(y, ["absent", "present"]))
    model, _ = _classify("FMLogisticRegression", pd.DataFrame(X, columns=list("abc")), categories)
    assert list(model.classes_) == ["absent", "present"]
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert set(model.predict(pd.DataFrame(X, columns=list("abc")))) <= {"absent", "present"}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_rows_of_undeclared_labels_are_dropped_never_refused(name):
    # the fit equals the fit without those rows (their row is the zero row): same noise
    X, y = _binary()
    labels = np.array(["no", "yes"], dtype=object)[y]
    odd = np.array(["maybe", None, np.nan, 2], dtype=object)
    X_more = np.vstack([X, X[: len(odd)]])
    model, ledger = _classify(name, X_more, np.r_[labels, odd], classes=("no", "yes"))
    reference, reference_ledger = _classify(name, X, labels, classes=("no", "yes"))
    np.testing.assert_array_equal(model.coef_, reference.coef_)  # bit for bit
    assert [r.event for r in ledger.receipts] == [r.event for r in reference_ledger.receipts]


def test_labels_without_a_schema_must_be_declared_and_nothing_is_read_or_spent():
    X, y = _binary()
    ledger = dpl.Ledger(10.0, 1e-5)
    model = FMLogisticRegression(
        epsilon=2.0, delta=1e-6, x_bound=2.0, adjacency="add_remove", ledger=ledger
    )
    with pytest.raises(dpl.InvalidArgumentError, match=r"classes=\(negative, positive\)"):
        model.fit(X, np.array(["no", "yes"])[y])  # strings: the dtype names no classes
    three = pd.Series(pd.Categorical.from_codes(y, ["a", "b", "c"]))
    with pytest.raises(dpl.InvalidArgumentError, match="3 categories"):
        model.fit(X, three)
    with pytest.raises(dpl.DPLedgerError, match="cannot match labels of y's dtype"):
        model.set_params(classes=("no", "yes")).fit(X, y)  # strings for numeric labels
    for bad in (("a",), ("a", "a"), ("a", 1), "ab", (None, 1)):
        with pytest.raises(dpl.DPLedgerError, match="`classes`"):
            model.set_params(classes=bad).fit(X, y)
    assert ledger.receipts == ()


def test_a_list_of_labels_is_read_one_element_at_a_time():
    # a list has no dtype: numpy would turn [0, 1, "x"] into strings and no label would
    # match; each element is compared on its own instead (the "x" row alone is dropped)
    X, y = _binary()
    model, _ = _classify("FMLogisticRegression", X[:-1], y[:-1].tolist())
    mixed, _ = _classify("FMLogisticRegression", X, [*y[:-1].tolist(), "x"])
    np.testing.assert_array_equal(mixed.coef_, model.coef_)
    assert list(mixed.classes_) == [0, 1]


# -- n_iter_: where the count of iterations is public --------------------------------------


def test_n_iter_is_the_public_iteration_count_and_absent_where_it_is_private():
    X, y = _binary()
    gd = NoisyGD(
        epsilon=1.0, delta=1e-6, x_bound=2.0, y_bound=1.0, adjacency="add_remove",
        steps=7, data_size=300, rng=101,
    ).fit(X, y)  # fmt: skip
    assert gd.n_iter_ == 7
    irls = PrivateIRLS(
        epsilon=1.0, delta=1e-6, x_bound=2.0, y_bound=1.0, adjacency="add_remove",
        iterations=3, rng=102,
    ).fit(X, y)  # fmt: skip
    assert irls.n_iter_ == 3
    erm, _ = _classify("OutputPerturbationClassifier", X, y)
    assert not hasattr(erm, "n_iter_")  # the certified solver's step count is private


# -- sparse input: a clear error in fit and in predict --------------------------------------


def test_sparse_input_is_refused_clearly_in_fit_and_predict():
    sparse = pytest.importorskip("scipy.sparse")
    X, y = _binary()
    S = sparse.csr_array(X)
    model, _ = _classify("OutputPerturbationClassifier", X, y)
    for method in (model.predict, model.predict_proba, model.decision_function):
        with pytest.raises(dpl.InvalidArgumentTypeError, match=r"must be dense.*sparse"):
            method(S)
    with pytest.raises(dpl.InvalidArgumentTypeError, match=r"must be dense.*sparse"):
        _classify("FMLogisticRegression", S, y)
    scaler = PrivateStandardScaler(epsilon=1.0, delta=1e-6, bounds=(-4, 4), adjacency="add_remove")
    with pytest.raises(dpl.InvalidArgumentTypeError, match=r"must be dense.*sparse"):
        scaler.fit(X).transform(sparse.csr_matrix(X))


# -- CapeFM: a protocol over sites, not an estimator ----------------------------------------


def test_cape_is_a_protocol_imported_from_its_module_not_an_estimator():
    import dpledger.algorithms as algorithms
    from dpledger.algorithms.cape import CapeFM

    assert "CapeFM" not in algorithms.__all__ and not hasattr(algorithms, "CapeFM")
    X, y = _binary()
    sites = [(X[:150], y[:150]), (X[150:], y[150:])]
    cape = CapeFM(
        epsilon=2.0, delta=1e-5, x_bound=2.0, adjacency="add_remove", loss="logistic", rng=103
    )
    with pytest.warns(dpl.mechanisms.FloatingPointWarning):
        cape.fit(sites)
    with pytest.raises(dpl.InvalidArgumentError, match="3 features"):
        cape.predict(X[:, :2])
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(dpl.InvalidArgumentTypeError, match="sparse"):
        cape.predict(sparse.csr_array(X))
