"""Issue 31, ERM: nothing observable escapes the charge.

Whether a fit releases, raises or warns must not depend on the private row count n
(add/remove, declared ``data_size`` N) nor on a row's values within the declared domain.
Each test compares neighbours (one row added) and asserts the same control flow: the
same exception class or none, the same number of receipts, the same events charged.
"""

import math
import warnings

import numpy as np
import pytest

import dpledger as dpl
from dpledger.algorithms import (
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
)
from dpledger.algorithms.erm import (
    ConvergenceError,
    _Loss,
    _minimise,
    _row_weight,
    _weight_cap,
    _weight_factor,
    _weight_ratio,
)

ESTIMATORS = [
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
]


def _at_the_bound(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows at the norm bound with alternating labels (the issue's reproducer family)."""
    return np.ones((rows, 1)), np.arange(rows) % 2


def _outcome(cls, X, y, **kw):
    """(exception class or None, receipts, events) of one fit on a fresh shared ledger."""
    ledger = dpl.Ledger(2.0, 0.0, adjacency="add_remove")
    model = cls(
        epsilon=1.0, x_bound=1.0, adjacency="add_remove", data_size=100, ledger=ledger, **kw
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            model.fit(X, y)
            error = None
        except Exception as caught:  # the class is what neighbours must share
            error = type(caught)
    return error, len(ledger.receipts), [r.event for r in ledger.receipts]


def _same_control_flow(first, second):
    assert first[0] is None and second[0] is None  # both release
    assert first[1:] == second[1:]


@pytest.mark.parametrize(
    ("cls", "rows", "seed"),
    [
        # N = 100: released at n = 65,536 and raised ConvergenceError (0 receipts) at
        # 65,537 — the pairwise sum's rounding grew with n/N past the tolerance
        (OutputPerturbationClassifier, 65_536, 0),
        # released at n = 28,460 and raised after b was charged (1 receipt) at 28,461
        (ObjectivePerturbationClassifier, 28_460, 2),
    ],
)
def test_the_row_count_never_decides_whether_a_fit_releases(cls, rows, seed):
    first = _outcome(cls, *_at_the_bound(rows), rng=seed)
    second = _outcome(cls, *_at_the_bound(rows + 1), rng=seed)
    _same_control_flow(first, second)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_the_empty_data_set_has_a_one_row_neighbours_control_flow(cls):
    empty = _outcome(cls, np.zeros((0, 2)), np.zeros(0), rng=1)
    one = _outcome(cls, np.array([[0.5, -0.5]]), np.array([1.0]), rng=1)
    _same_control_flow(empty, one)


def test_the_empty_data_set_releases_the_regulariser_only_minimiser_plus_noise():
    # no rows: θ* = 0, so output perturbation releases its noise alone
    ledger = dpl.Ledger(1.0, 0.0, adjacency="add_remove")
    model = OutputPerturbationClassifier(
        epsilon=1.0, x_bound=1.0, adjacency="add_remove", data_size=100, ledger=ledger, rng=3
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(np.zeros((0, 3)), np.zeros(0, dtype=int))
    assert model.coef_.shape == (3,)
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("cls", [OutputPerturbationClassifier, ObjectivePerturbationClassifier])
def test_a_tiny_max_iter_never_decides_whether_a_fit_releases(cls):
    # balanced rows: θ = 0 is already the (unperturbed) minimiser, so one iteration sufficed
    # there and not after one more row — output perturbation released on one neighbour and
    # raised on the other
    X, y = np.ones((2, 1)), np.array([0, 1])
    first = _outcome(cls, X, y, max_iter=1, rng=0)
    second = _outcome(cls, np.vstack([X, [[1.0]]]), np.append(y, 1), max_iter=1, rng=0)
    _same_control_flow(first, second)


@pytest.mark.parametrize("cls", [ObjectivePerturbationRegressor, OutputPerturbationRegressor])
def test_a_huge_label_raises_no_warning(cls):
    X = np.array([[0.5, 0.1], [0.2, -0.3], [0.1, 0.1]])
    y = np.array([0.3, -1e300, 0.2])
    model = cls(epsilon=1.0, x_bound=1.0, adjacency="add_remove", data_size=100, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)  # an overflow warning was data's
        model.fit(X, y)
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("size", [1.0, 3.0, 100.0, 12_345.0])
def test_the_row_weight_meets_the_bounds_the_charge_uses(size):
    """(W): v(n+1) + n·|v(n) − v(n+1)| ≤ F, n·v(n) ≤ V·N and v(n)/v(n+1) ≤ ρ, on the
    weights actually used (N / fl(N / v)), across every piece and both joints."""
    factor, cap, log_ratio = _weight_factor(size), _weight_cap(), _weight_ratio(size)
    m = 2 * size
    knee = m * (1 + 2.0**-6) / (2 * 2.0**-6)
    points = set(range(0, 50))
    for centre in (m, knee, 10 * knee, 1e6 * knee):
        points.update(range(max(0, int(centre) - 20), int(centre) + 20))
    for n in sorted(points):
        v0 = size / (size / _row_weight(n, size))
        v1 = size / (size / _row_weight(n + 1, size))
        assert v1 <= v0 <= 1.0
        assert v1 + n * (v0 - v1) <= factor
        assert n * v0 <= cap * size
        assert math.log(v0 / v1) <= log_ratio


def test_output_perturbation_covers_removing_a_row_beyond_the_clip():
    """n = 5N: removing any row moves the solver's minimiser by at most the sensitivity
    charged (the weights of all rows change with n)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] + 0.3 * rng.normal(size=500) > 0).astype(int)
    model = OutputPerturbationClassifier(
        epsilon=1.0,
        x_bound=1.0,
        adjacency="add_remove",
        l2_regularization=0.05,
        data_size=100,
        rng=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    Xs, ys, size, _, _ = model._design(X, y)
    loss = _Loss("logistic", 1.0, 0.25)

    def solve(Xn, yn):
        weighted = model._weighted_size(Xn.shape[0], size)
        return _minimise(Xn, yn, loss, 0.05, np.zeros(3), 1e-13, 100, weighted)[0]

    base = solve(Xs, ys)
    worst = max(
        float(np.linalg.norm(solve(np.delete(Xs, row, 0), np.delete(ys, row)) - base))
        for row in range(0, 500, 25)
    )
    assert 0 < worst <= model.sensitivity_


def test_the_solver_certifies_far_more_rows_than_the_public_size():
    # without the clip the certificate's rounding grew with n/N: 200,000 rows at N = 100
    X, y = _at_the_bound(200_000)
    ys = 2.0 * y - 1.0
    Xs = np.hstack([X, np.ones((200_000, 1))])
    size = 100.0 / _row_weight(200_000, 100.0)
    _, bound = _minimise(Xs, ys, _Loss("logistic", 1.0, 0.25), 1e-3, np.zeros(2), 3e-9, 5, size)
    assert bound <= 3e-9
    with pytest.raises(ConvergenceError):  # an impossible tolerance still refuses
        _minimise(Xs, ys, _Loss("logistic", 1.0, 0.25), 1e-3, np.zeros(2), 1e-30, 5, size)
