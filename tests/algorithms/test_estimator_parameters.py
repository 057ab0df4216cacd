"""Estimators like scikit-learn's: parameters declared once, fitted attributes documented.

* Every estimator declares a constraint for each ``__init__`` parameter in one class-level
  table (``_parameter_constraints``), and ``fit`` checks them all — and refuses a spent
  one-fit budget — before it reads any data: every refusal that depends on the
  parameters alone comes first (the order matters for privacy).
* Every fitted attribute (a public name ending in ``_``) is documented in the estimator's
  ``Attributes`` section, and every attribute documented there exists after a fit.
* A classifier is a classifier and never a regressor (``sklearn.base.is_classifier``).
* The package's docstring tables the estimators it exports, and exports what it tables.
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

import numpy as np
import pytest
from sklearn.base import ClassifierMixin, RegressorMixin, is_classifier, is_regressor

import dpledger as dpl
import dpledger.algorithms as algorithms
from dpledger.algorithms import (
    ExponentialQuantileRegression,
    FMLinearRegression,
    KNGQuantileRegression,
    PrivateEstimator,
    PrivateStandardScaler,
)
from dpledger.algorithms._params import (
    Bound,
    Integer,
    Options,
    Parameters,
    parameter_names,
    validate_parameters,
)
from dpledger.algorithms.cape import CapeFM
from dpledger.algorithms.polynomial import FMPolynomialRegression
from dpledger.errors import BudgetExceededError, DPLedgerError, InvalidArgumentError
from tests._data import contract_data
from tests.algorithms.test_estimator_contract import CLASSIFIERS, ESTIMATORS, make

#: every estimator class dpledger.algorithms offers (the exported ones and the sympy FM),
#: and the multi-site protocol CapeFM (documented like them, imported from its module)
CLASSES = sorted(
    {
        obj
        for name in algorithms.__all__
        if isinstance(obj := getattr(algorithms, name), type) and obj is not PrivateEstimator
    }
    | {FMPolynomialRegression, CapeFM},
    key=lambda cls: cls.__name__,
)
ESTIMATOR_CLASSES = [cls for cls in CLASSES if issubclass(cls, PrivateEstimator)]
CLASSIFIER_CLASSES = {
    "FMLogisticRegression",
    "NoisyGDClassifier",
    "ObjectivePerturbationClassifier",
    "OutputPerturbationClassifier",
}
NEITHER = {"PrivateStandardScaler", "CapeFM"}  # a transformer; a multi-site protocol


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _data(name, n=200):
    return contract_data(name in CLASSIFIERS, n)


class Untouchable:
    """Data that fails the test if anything reads it (any attribute, conversion or size)."""

    def __getattr__(self, name):
        raise AssertionError(f"the data was read ({name}) before a parameter refusal")

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data was read (__array__) before a parameter refusal")

    def __len__(self):
        raise AssertionError("the data was read (__len__) before a parameter refusal")

    def __iter__(self):
        raise AssertionError("the data was read (__iter__) before a parameter refusal")


# -- one table of constraints per estimator ------------------------------------------------


@pytest.mark.parametrize("cls", [*ESTIMATOR_CLASSES, CapeFM], ids=lambda c: c.__name__)
def test_every_parameter_has_one_declared_constraint(cls):
    names = parameter_names(cls)
    assert names, cls
    table = cls._parameter_constraints
    assert [n for n in names if n not in table] == []
    fixed = getattr(cls, "_fixed_parameters", {})
    assert not set(fixed) & set(names)  # a fixed value is never also a parameter


def test_a_parameter_without_a_constraint_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="no constraint"):

        class Careless(PrivateEstimator):
            def __init__(self, *, epsilon=None, undeclared=1):
                self.epsilon, self.undeclared = epsilon, undeclared


def _every_parameter():
    """(contract name, parameter) for each estimator configuration and each parameter."""
    for name in sorted(ESTIMATORS):
        for parameter in parameter_names(type(ESTIMATORS[name](epsilon=1.0, delta=1e-6))):
            yield pytest.param(name, parameter, id=f"{name}-{parameter}")


@pytest.mark.parametrize(("name", "parameter"), list(_every_parameter()))
def test_a_bad_parameter_is_refused_by_name_before_the_data_is_read(name, parameter):
    # an arbitrary object is no valid value of any parameter: fit must name it without
    # touching the data, and charge nothing
    ledger = dpl.Ledger(50.0, 1e-3)
    model = ESTIMATORS[name](epsilon=1.0, delta=1e-6, rng=0, ledger=ledger)
    model.set_params(**{parameter: object()})
    with pytest.raises(DPLedgerError, match=f"`{parameter}`"):
        model.fit(Untouchable(), Untouchable())
    assert ledger.receipts == ()


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def test_every_fit_checks_its_parameters_before_the_data(cls):
    # the defaults declare no budget (and no bounds): refused by name, the data untouched
    with pytest.raises(DPLedgerError, match=r"`epsilon`|`loss`"):
        cls().fit(Untouchable(), Untouchable())


@pytest.mark.parametrize(
    ("cls", "settings", "named"),
    [
        ("ADASSP", {"delta": 0.0}, "delta"),
        ("PrivateIRLS", {"second_moment": "wishart"}, "wishart"),
        ("PrivateIRLS", {"y_bound": None}, "y_bound"),
        ("GaussianFM", {"delta": 0.0}, "delta"),
        ("NoisyGD", {"data_size": None}, "data_size"),
        ("NoisyGD", {"sampling_rate": 0.1, "adjacency": "replace_one"}, "add_remove"),
        ("NoisyGD", {"learning_rate": 10.0, "alpha": 1.0}, "alpha"),
        ("ObjectivePerturbation", {"x_l1_bound": 2.0}, "x_l1_bound"),
        ("ObjectivePerturbation", {"data_size": None}, "data_size"),
        ("ObjectivePerturbation", {"noise": "gaussian", "delta": 0.0}, "delta"),
        ("OutputPerturbation", {"noise": "l1_laplace"}, "l1_laplace"),
        ("KNGQuantile", {"burn_in": 999_999, "samples": 2}, "burn_in"),
    ],
)
def test_parameters_that_conflict_are_refused_before_the_data_is_read(cls, settings, named):
    model = ESTIMATORS[cls](epsilon=1.0, delta=1e-6, rng=0).set_params(**settings)
    with pytest.raises(DPLedgerError, match=named):
        model.fit(Untouchable(), Untouchable())


@pytest.mark.parametrize("name", ["ADASSP", "FMLogistic", "ObjectivePerturbation", "KNGLinear"])
def test_a_spent_one_fit_budget_is_refused_before_the_data_is_read(name):
    X, y = _data(name)
    model = _quiet(make(name, epsilon=1.0, delta=1e-6, rng=0).fit, X, y)
    with pytest.raises(BudgetExceededError, match="one fit"):
        model.fit(Untouchable(), Untouchable())


def test_cape_checks_its_parameters_before_any_site_is_read():
    model = CapeFM(epsilon=1.0, delta=0.0, x_bound=1.0, y_bound=1.0, adjacency="add_remove")
    with pytest.raises(InvalidArgumentError, match="delta"):
        model.fit(Untouchable())
    model = CapeFM(epsilon=1.0, delta=1e-5, x_bound=1.0, adjacency="add_remove")
    with pytest.raises(InvalidArgumentError, match="y_bound"):  # the linear loss needs it
        model.fit(Untouchable())


def test_parameters_are_checked_and_converted_once():
    checked = validate_parameters(
        {"steps": Integer(1, 10), "x_bound": Bound(), "kind": Options(("a", "b"))},
        {"steps": np.int64(3), "x_bound": 2, "kind": "a"},
        "Owner",
    )
    assert checked.steps == 3 and type(checked.steps) is int
    assert checked.x_bound == 2.0 and type(checked.x_bound) is float
    assert dict(checked) == {"steps": 3, "x_bound": 2.0, "kind": "a"}
    with pytest.raises(AttributeError):
        checked.steps = 4  # read-only
    with pytest.raises(InvalidArgumentError, match=r"`steps` must be at most 10.*Found 11"):
        validate_parameters({"steps": Integer(1, 10)}, {"steps": 11}, "Owner")
    with pytest.raises(InvalidArgumentError, match="`x_bound` must be declared"):
        validate_parameters({"x_bound": Bound()}, {"x_bound": None}, "Owner")
    with pytest.raises(TypeError, match="no constraint"):
        validate_parameters({}, {"x_bound": 1.0}, "Owner")
    assert isinstance(checked, Parameters)


def test_fit_does_not_store_the_checked_values():
    # __init__ stores, fit checks: the parameters keep the values given (sklearn's clone
    # compares them), and no checked copy is left behind on the estimator
    X, y = _data("ADASSP")
    model = make("ADASSP", epsilon=1, delta=1e-6, rng=np.int64(0)).set_params(x_bound=1)
    _quiet(model.fit, X, y)
    assert model.epsilon == 1 and type(model.epsilon) is int
    assert type(model.x_bound) is int and type(model.rng) is np.int64
    assert not [k for k in vars(model) if "param" in k]


# -- classifiers and regressors --------------------------------------------------------------


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)
def test_classifiers_and_regressors_are_what_they_say(cls):
    estimator = cls()  # every parameter has a default (checked at fit)
    if cls.__name__ in NEITHER:
        assert not is_classifier(estimator) and not is_regressor(estimator)
        return
    classifier = cls.__name__ in CLASSIFIER_CLASSES
    assert is_classifier(estimator) is classifier
    assert is_regressor(estimator) is not classifier
    # the mixin itself, not only the tag: a classifier never inherits RegressorMixin
    assert issubclass(cls, ClassifierMixin) is classifier
    assert issubclass(cls, RegressorMixin) is not classifier


def test_cape_is_neither_a_classifier_nor_a_regressor():
    assert not issubclass(CapeFM, (ClassifierMixin, RegressorMixin))


# -- fitted attributes, documented -----------------------------------------------------------


def documented_attributes(cls: type) -> set[str]:
    """The names listed in ``cls``'s Google-style ``Attributes:`` section."""
    lines = (inspect.getdoc(cls) or "").splitlines()
    assert "Attributes:" in lines, f"{cls.__name__} has no Attributes section"
    names = set()
    for line in lines[lines.index("Attributes:") + 1 :]:
        if line.strip() and not line.startswith(" "):
            break  # the next section
        entry = re.match(r"^    (\w+): \S", line)
        if entry:
            names.add(entry.group(1))
    return names


def fitted_attributes(model) -> set[str]:
    """The public attributes ending in ``_`` that fit set on ``model``."""
    return {k for k in vars(model) if k.endswith("_") and not k.startswith("_")}


def _fits():
    """(class, fitted model) for every contract configuration and a few more options."""
    for name in sorted(ESTIMATORS):
        X, y = _data(name)
        yield _quiet(make(name, epsilon=1.0, delta=1e-6, rng=0).fit, X, y)
    X, y = _data("KNGQuantile")
    for cls in (KNGQuantileRegression, ExponentialQuantileRegression):
        model = cls(
            epsilon=1.0,
            x_bound=1.0,
            y_bound=1.0,
            theta_bound=3.0,
            adjacency="add_remove",
            chains=2,
            burn_in=40,
            samples=10,
            diagnostics=True,
            rng=0,
        )
        yield _quiet(model.fit, X, y)
    yield _quiet(
        PrivateStandardScaler(
            epsilon=1.0, delta=1e-6, bounds=(-1, 1), adjacency="add_remove", rng=0
        ).fit,
        X,
    )
    yield _quiet(
        FMLinearRegression(
            epsilon=1.0, delta=1e-6, x_bound=1, y_bound=1, adjacency="add_remove", rng=0
        ).fit,
        X,
        y,
    )
    cape = CapeFM(epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, adjacency="add_remove")
    yield _quiet(cape.fit, [(X[:100], y[:100]), (X[100:], y[100:])])


@pytest.fixture(scope="module")
def fitted():
    by_class: dict[type, list] = {}
    for model in _fits():
        by_class.setdefault(type(model), []).append(model)
    return by_class


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_fitted_attribute_is_documented_and_vice_versa(cls, fitted):
    models = fitted[cls]
    documented = documented_attributes(cls)
    seen = set()
    for model in models:
        undocumented = fitted_attributes(model) - documented
        assert not undocumented, f"{cls.__name__} sets {undocumented}, not in its Attributes"
        seen |= {name for name in documented if hasattr(model, name)}
    assert documented - seen == set(), f"{cls.__name__} documents what no fit sets"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_common_fitted_attributes_are_on_every_estimator(cls, fitted):
    common = {"releases_", "n_features_in_"}
    if cls is not CapeFM:  # several sites: each has its own ledger (site_ledgers_)
        common.add("ledger_")
    if cls is not PrivateStandardScaler:  # every other estimator releases a linear model
        common |= {"coef_", "intercept_"}
    if cls.__name__ in CLASSIFIER_CLASSES:
        common.add("classes_")
    assert common <= documented_attributes(cls)
    for model in fitted[cls]:
        assert all(hasattr(model, name) for name in common)


# -- the package's table --------------------------------------------------------------------


def test_the_package_docstring_tables_what_it_exports():
    lines = (algorithms.__doc__ or "").splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("====")]
    assert len(rules) == 3  # a table: a header and one body
    width = len(lines[rules[0]].split()[0])  # the first column: what is tabled
    tabled = {}
    for line in lines[rules[1] + 1 : rules[2]]:
        module = re.search(r":mod:`\.(\w+)`", line[width:])
        for name in re.findall(r":(?:class|func):`(\w+)`", line[:width]):
            tabled[name] = module.group(1)
    assert set(tabled) == set(algorithms.__all__)
    for name, module in tabled.items():  # each in the module it is tabled with
        assert getattr(importlib.import_module(f"dpledger.algorithms.{module}"), name) is (
            getattr(algorithms, name)
        )


# -- data through scikit-learn's check_array, refused by name --------------------------------


@pytest.mark.parametrize(
    ("X", "y", "named"),
    [
        (np.ones((5, 2)), np.ones((5, 2)), "`y` must be 1-D"),
        (np.ones((5, 2)), np.ones((5, 1, 1)), "`y`"),
        (np.ones((5, 2)), np.array([1, 2, 3, 4, 5]) + 1j, "`y` must be real"),
        (np.ones((5, 2)), np.array(["a"] * 5, dtype=object), "`y` must be numeric"),
        (np.ones((5, 2)), np.r_[np.ones(4), np.inf], "`y` must be finite"),
        (np.array([["a", "b"]] * 5, dtype=object), np.ones(5), "`X` must be numeric"),
        (np.ones((5, 2, 1)), np.ones(5), "`X` must be 2-D"),
        (np.ones(5), np.ones(5), "X.reshape"),
        (np.ones((5, 0)), np.ones(5), "`X` must have at least one column"),
    ],
)
def test_bad_input_is_named_and_what_is_wrong_is_said(X, y, named):
    ledger = dpl.Ledger(5.0, 1e-5)
    model = make("ADASSP", epsilon=1.0, delta=1e-6, ledger=ledger, rng=0)
    with pytest.raises(DPLedgerError, match=re.escape(named)):
        model.fit(X, y)
    assert ledger.receipts == ()


def test_a_refusal_never_echoes_the_data():
    secret = np.full(5, 123456.789)  # scikit-learn's own message would print the array
    model = make("ADASSP", epsilon=1.0, delta=1e-6, rng=0)
    with pytest.raises(DPLedgerError) as caught:
        model.fit(secret, secret)
    assert "123456" not in str(caught.value)


def test_sparse_input_is_refused_by_name():
    sparse = pytest.importorskip("scipy.sparse")
    model = make("ADASSP", epsilon=1.0, delta=1e-6, rng=0)
    with pytest.raises(DPLedgerError, match="`X`"):
        model.fit(sparse.random(20, 3, density=0.5, format="csr"), np.zeros(20))
