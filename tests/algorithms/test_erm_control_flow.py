"""ERM's control flow: nothing observable escapes the charge.

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
from dpledger.algorithms._erm_bounds import _row_weight, _weight_cap, _weight_factor
from dpledger.algorithms._erm_losses import _Loss
from dpledger.algorithms.erm import (
    ConvergenceError,
    _minimise,
    _weight_ratio,
    objective_perturbation_plan,
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


# -- F1: the outcome (release or error) never depends on the data ----------------------


def _kink_rows(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The review's F1 reproducer: Huber-SVM rows at a kink, a solver that crawled."""
    rng = np.random.default_rng(seed)
    X = np.zeros((50, 2))
    X[:, 0] = 1.0
    X[:, 1] = 1e-6 * rng.normal(size=50)
    return X, (X[:, 1] > 0).astype(int)


@pytest.mark.parametrize(
    ("cls", "settings"),
    [
        # output perturbation raised ConvergenceError after 100,000 iterations (129 s, no
        # receipt) on these 50 rows and released after 81,662 on the 49 without row 0
        (
            OutputPerturbationClassifier,
            {"loss": "huber", "huber_width": 1e-4, "l2_regularization": 1e-12, "data_size": 1.0},
        ),
        # objective perturbation's extra ridge Δ conditions small N; a large N does not
        (ObjectivePerturbationClassifier, {"l2_regularization": 1e-12, "data_size": 1e8}),
    ],
)
def test_an_unprovable_solver_setting_is_refused_before_solving_on_both_neighbours(
    cls, settings, monkeypatch
):
    import dpledger.algorithms.erm as erm

    def never(*args, **kwargs):
        raise AssertionError("the refusal must come before the solver runs")

    monkeypatch.setattr(erm, "_minimise", never)
    X, y = _kink_rows()
    messages = []
    for rows in (slice(None), slice(1, None)):
        ledger = dpl.Ledger(2.0, 0.0, adjacency="add_remove")
        model = cls(
            epsilon=1.0, x_bound=1.0, adjacency="add_remove", ledger=ledger, rng=3, **settings
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with pytest.raises(dpl.InvalidArgumentError, match="l2_regularization") as caught:
                model.fit(X[rows], y[rows])
        assert len(ledger.receipts) == 0  # nothing charged
        messages.append(str(caught.value))
    assert messages[0] == messages[1]  # the parameters' message, no data in it
    if settings.get("loss") == "huber":
        assert "huber_width" in messages[0]


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("rows", [0, 1, 40])
def test_the_gradient_phase_certifies_within_its_public_bound(cls, rows, monkeypatch):
    """Newton made to fail: gradient descent from 0 still certifies, within the step count
    the refusal was computed from (the proof of :func:`_gradient_steps`)."""
    import dpledger.algorithms._erm_solver as solver  # the solver calls its own phases

    monkeypatch.setattr(solver, "_newton", lambda *args, **kwargs: None)
    seen = {}
    descent = solver._descent

    def counted(X, y, loss, ridge, linear, tol, n, steps, smoothness):
        seen["bound"] = steps
        seen["used"] = 0
        gradient = solver._gradient

        def one(*args, **kwargs):
            seen["used"] += 1
            return gradient(*args, **kwargs)

        monkeypatch.setattr(solver, "_gradient", one)
        try:
            return descent(X, y, loss, ridge, linear, tol, n, steps, smoothness)
        finally:
            monkeypatch.setattr(solver, "_gradient", gradient)

    monkeypatch.setattr(solver, "_descent", counted)
    rng = np.random.default_rng(rows)
    X = rng.normal(size=(rows, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    classifier = cls in (ObjectivePerturbationClassifier, OutputPerturbationClassifier)
    y = (X[:, 0] > 0).astype(int) if classifier else X @ [1.0, -2.0] + 0.1 * rng.normal(size=rows)
    model = cls(
        epsilon=1.0, x_bound=1.0, adjacency="add_remove", data_size=20, l2_regularization=0.1, rng=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    assert 1 <= seen["used"] <= seen["bound"] + 1


def test_the_public_step_bound_accepts_the_defaults_and_refuses_the_reproducer():
    from dpledger.algorithms._erm_bounds import _STEP_CAP, _gradient_steps
    from dpledger.algorithms.erm import _solver_floor

    radius = math.sqrt(2.0) * (1 + 1e-15)  # x_bound = intercept_scaling = 1
    for loss in (
        _Loss("logistic", 1.0, 0.25),
        _Loss("huber_svm", 1.0, 1.0, 0.5),
        _Loss("huber", 1.0, 1.0, 1.0),
    ):
        tol = _solver_floor(loss, radius, 3, 1e-3, 0.0)
        assert _gradient_steps(loss, radius, 3, 1e-3, 0.0, tol) <= _STEP_CAP / 100
        assert _gradient_steps(loss, radius, 3, 1e-3, 0.0, tol / 2) == math.inf  # below the floor
    kink = _Loss("huber_svm", 1.0, 1.0 / 2e-4, 1e-4)
    tol = _solver_floor(kink, radius, 2, 1e-12, 0.0)
    assert _gradient_steps(kink, radius, 2, 1e-12, 0.0, tol) > 1e18


# -- F2: no floating-point warning that depends on a label -------------------------------


@pytest.mark.parametrize("cls", [ObjectivePerturbationRegressor, OutputPerturbationRegressor])
@pytest.mark.parametrize(
    ("kappa", "labels"),
    [
        (1.0, [1.7e308, -1.7e308, 0.0, 0.0]),  # |old| + |new| overflowed in change()
        (1e10, [1e300, 0.0, 0.5, -0.5]),  # κ|r| overflowed, then inf − inf
    ],
)
def test_labels_near_the_float_range_raise_no_runtime_warning(cls, kappa, labels):
    X = np.array([[0.5, 0.1], [0.2, -0.3], [0.1, 0.1], [-0.4, 0.2]])
    model = cls(
        epsilon=1.0,
        x_bound=1.0,
        adjacency="add_remove",
        data_size=10,
        huber_threshold=kappa,
        rng=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=UserWarning)  # the documented caveats
        model.fit(X, np.array(labels))
    assert np.all(np.isfinite(model.coef_))


# -- F3: the weights' ratio bound holds for a non-integer N ----------------------------


@pytest.mark.parametrize("size", [0.3, 2.25, 7.3, 10.5, 100.5, 1000.25])
def test_the_weight_ratio_bound_holds_exactly_for_a_non_integer_size(size):
    """v(n)/v(n + 1) ≤ ρ on the weights used, N/fl(N/v), in exact rationals: the joint
    at n₁ = 65N falls between integers (N = 10.5, n = 682: log ratio 1.4646650e-3 against
    the 1.4641291e-3 charged before)."""
    from fractions import Fraction

    bound = Fraction(_weight_ratio(size))
    ceiling = 1 + bound + bound * bound / 2  # ≤ e^bound: a sufficient exact test
    m = 2 * size
    knee = m * (1 + 2.0**-6) / (2 * 2.0**-6)
    points = set(range(0, 40))
    for centre in (m, knee, 3 * knee):
        points.update(range(max(0, int(centre) - 25), int(centre) + 25))

    def used(n):
        return Fraction(size) / Fraction(size / _row_weight(n, size))

    for n in sorted(points):
        assert used(n) / used(n + 1) <= ceiling, n


# -- F5: Gaussian objective perturbation under add/remove with the weights ---------------


def _exact_tail(fixed, moving, t, dimension):
    """P(fixed·|Z| + moving·χ > t), χ² = Z² + Q, Q ~ χ²_{d−1} independent, by quadrature
    (an independent check of the union bound the charge uses)."""
    from scipy import integrate, stats

    cut = t / fixed

    def density(z):
        q = ((t - fixed * z) / moving) ** 2 - z * z
        return stats.norm.pdf(z) * (1.0 if q <= 0 else stats.chi2.sf(q, dimension - 1))

    inner, _ = integrate.quad(density, 0.0, cut, epsabs=0.0, epsrel=1e-10, limit=200)
    return 2 * (inner + stats.norm.sf(cut))


@pytest.mark.parametrize("columns", [3, 10])
def test_gaussian_objective_perturbation_covers_a_shift_whose_direction_moves(columns):
    """Under add/remove b's change is (v − v′)·Σφ′ᵢ(θ̂)xᵢ + v′φ′_z(θ̂)x_z: only the second
    part has a fixed direction. The loss is at most μ((F − s)|Z| + sχ_d) + (Fμ)²/2; the
    exact tail of that bound at the charged ε_G must be within the δ charged."""
    from dpledger.algorithms.erm import _weight_spread

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, columns)) / 2
    y = (X[:, 0] > 0).astype(int)
    model = ObjectivePerturbationClassifier(
        epsilon=1.0,
        delta=1e-6,
        noise="gaussian",
        x_bound=2.0,
        adjacency="add_remove",
        data_size=500,
        rng=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    plan = model.plan_
    _, _, size, radius, _ = model._design(X, y)
    mu = 1.0 * radius / plan.scale
    factor, spread = _weight_factor(size), _weight_spread(size)
    t = plan.epsilon_noise - (factor * mu) ** 2 / 2
    tail = _exact_tail((factor - spread) * mu, spread * mu, t, columns + 1)
    assert tail <= plan.delta
    assert tail >= plan.delta / 2  # and close to it (its own bound is a Riemann sum)


def test_gaussian_objective_perturbation_under_replace_one_keeps_the_fixed_row_bound():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    model = ObjectivePerturbationClassifier(
        epsilon=1.0, delta=1e-6, noise="gaussian", x_bound=2.0, adjacency="replace_one", rng=1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X, y)
    _, _, size, radius, _ = model._design(X, y)
    plan = objective_perturbation_plan(
        epsilon=0.99,
        delta=0.99e-6,
        noise="gaussian",
        lipschitz=radius,
        curvature=radius * radius / 4,
        size=size,
        regularization=1e-3,
        adjacency="replace_one",
    )
    assert model.plan_.scale == plan.scale
