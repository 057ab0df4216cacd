"""Objective and output perturbation: the privacy arithmetic, checked independently."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpledger as dpl
from dpledger.accountant import events as ev
from dpledger.algorithms import (
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
)
from dpledger.algorithms._erm_losses import _Loss
from dpledger.algorithms.erm import (
    ConvergenceError,
    _minimise,
    _ObjectiveNoise,
    objective_perturbation_epsilon,
    objective_perturbation_plan,
)
from dpledger.errors import DPLedgerError, InvalidArgumentError

pytestmark = pytest.mark.filterwarnings("ignore::dpledger.mechanisms.base.FloatingPointWarning")


def _data(n=2000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 2
    y = (X @ np.linspace(1, -1, d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


# -- the Jacobian term: c·R², by determinants ------------------------------------------------


@pytest.mark.parametrize("radius", [0.5, 1.0, 3.0])
def test_the_jacobian_slack_is_c_R_squared_by_exact_determinants(radius):
    # neighbours' output densities differ by det(H_D + ΛI)/det(H_D' + ΛI) at the same θ;
    # compute it exactly for logistic rows (φ'' = 1/4 where θᵀx = 0) and compare
    c, lam_total, d = 0.25, 7.0, 3
    rng = np.random.default_rng(1)
    theta = np.array([0.0, 0.0, 1.0])  # orthogonal to the changed row: φ'' = c exactly
    worst = 0.0
    for _ in range(300):
        rows = rng.normal(size=(5, d))
        rows[:, :2] *= 1e-3  # the rest of the data has almost no curvature along e1
        rows *= radius / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), radius)
        t = rows @ theta
        weights = 1 / (4 * np.cosh(t / 2) ** 2)  # logistic φ''
        base = (rows.T * weights) @ rows + lam_total * np.eye(d)
        x = radius * np.array([1.0, 0.0, 0.0])  # the changed row, at norm R
        x_other = radius * np.array([0.0, 0.0, 1.0]) * 50  # far: φ'' ≈ 0 there
        w_other = 1 / (4 * np.cosh((x_other @ theta) / 2) ** 2)
        with_x = base + c * np.outer(x, x)
        with_other = base + w_other * np.outer(x_other, x_other)
        log_ratio = np.linalg.slogdet(with_x)[1] - np.linalg.slogdet(with_other)[1]
        worst = max(worst, log_ratio)
    bound = objective_perturbation_epsilon(
        noise="laplace",
        scale=math.inf,
        lipschitz=1.0,
        curvature=c * radius**2,
        size=1.0,
        regularization=lam_total,
        adjacency="replace_one",
    )
    assert worst <= bound
    assert worst >= bound * (1 - 1e-3)  # attained: the bound is tight
    if radius > 1:  # writing c·R instead of c·R² under-counts the loss
        assert worst > math.log1p(c * radius / lam_total)


def test_cms_squared_form_is_looser_than_the_determinant_bound():
    # CMS 2011 state 2·log(1 + c/(nλ)); the determinant lemma gives log(1 + c/(nλ))
    plan = objective_perturbation_plan(
        epsilon=1.0,
        lipschitz=1.0,
        curvature=0.25,
        size=1000,
        regularization=1e-3,
        adjacency="replace_one",
    )
    exact = mpmath.log1p(mpmath.mpf(0.25) / (1000 * mpmath.mpf("1e-3")))
    assert float(exact) <= plan.epsilon_jacobian <= float(exact) * (1 + 1e-12)


# -- the calibrated and published plans ------------------------------------------------------


@pytest.mark.parametrize("adjacency", ["replace_one", "add_remove"])
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("n", [100, 30_000])
def test_calibrated_laplace_plan_meets_epsilon_exactly(adjacency, epsilon, n):
    radius = math.sqrt(2.0)
    plan = objective_perturbation_plan(
        epsilon=epsilon,
        lipschitz=radius,
        curvature=0.25 * radius**2,
        size=n,
        regularization=1e-3,
        adjacency=adjacency,
    )
    k = 2 if adjacency == "replace_one" else 1
    mp = mpmath.mp
    mp.dps = 40
    jac = mpmath.log1p(
        mpmath.mpf(0.25) * 2 / (n * (mpmath.mpf("1e-3") + plan.extra_regularization))
    )
    noise = k * mpmath.mpf(radius) / mpmath.mpf(plan.scale)
    true = noise + jac
    assert true <= plan.epsilon <= epsilon
    assert plan.epsilon >= epsilon * (1 - 1e-9)
    # the Δ branch is taken exactly when ε_J would exceed ε/2 without it
    without = math.log1p(0.5 / (n * 1e-3))
    assert (plan.extra_regularization > 0) == (without > epsilon / 2)
    if plan.extra_regularization > 0:
        assert float(jac) == pytest.approx(epsilon / 2, rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_published_plan_is_cms_algorithm_2_charged_at_its_true_cost(epsilon):
    c, n, lam = 0.25, 500, 1e-3
    plan = objective_perturbation_plan(
        epsilon=epsilon,
        lipschitz=1.0,
        curvature=c,
        size=n,
        regularization=lam,
        adjacency="replace_one",
        variant="published",
    )
    ratio = mpmath.mpf(c) / (n * mpmath.mpf(lam))
    prime = epsilon - mpmath.log(1 + 2 * ratio + ratio**2)
    extra = mpmath.mpf(0)
    if prime <= 0:
        extra = c / (n * (mpmath.exp(mpmath.mpf(epsilon) / 4) - 1)) - lam
        prime = mpmath.mpf(epsilon) / 2
    assert float(plan.extra_regularization) == pytest.approx(float(extra), rel=1e-12, abs=1e-15)
    assert plan.scale == pytest.approx(float(2 / prime), rel=1e-12)
    true = 2 / mpmath.mpf(plan.scale) + mpmath.log1p(c / (n * (lam + mpmath.mpf(extra))))
    assert true <= plan.epsilon <= epsilon  # honest, and never more than nominal
    assert plan.epsilon < epsilon  # CMS's squared slack leaves some unspent


@pytest.mark.parametrize("adjacency", ["replace_one", "add_remove"])
@pytest.mark.parametrize(("epsilon", "delta"), [(0.3, 1e-6), (1.0, 1e-5), (4.0, 1e-9)])
def test_gaussian_plan_tail_bound_by_mpmath(adjacency, epsilon, delta):
    plan = objective_perturbation_plan(
        epsilon=epsilon,
        delta=delta,
        noise="gaussian",
        lipschitz=1.0,
        curvature=0.25,
        size=10_000,
        regularization=1e-3,
        adjacency=adjacency,
    )

    def tail(sigma):
        mu = mpmath.mpf(1.0) / sigma
        eg = mpmath.mpf(plan.epsilon_noise)
        if adjacency == "replace_one":
            return 4 * mpmath.ncdf(-(eg - 2 * mu**2) / (2 * mu))
        return 2 * mpmath.ncdf(-(eg - mu**2 / 2) / mu)

    assert tail(mpmath.mpf(plan.scale)) <= delta
    assert tail(mpmath.mpf(plan.scale) * (1 - 1e-6)) > delta  # and no more noise than needed
    assert plan.epsilon <= epsilon and plan.delta == delta


def test_one_dimensional_privacy_loss_is_within_the_charge():
    # d = 1, Laplace b: the output density is exact by change of variables,
    # p_D(θ) ∝ exp(−β|g_D(θ)|)·|g_D'(θ)|; its log ratio over a θ grid never exceeds ε
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 20)
    y = rng.choice([-1.0, 1.0], 20)
    n, lam = 20, 0.05
    plan = objective_perturbation_plan(
        epsilon=1.0,
        lipschitz=1.0,
        curvature=0.25,
        size=n,
        regularization=lam,
        adjacency="replace_one",
    )
    ridge = n * (lam + plan.extra_regularization)
    beta = 1.0 / plan.scale
    theta = np.linspace(-60, 60, 200_001)

    def log_density(xs, ys):
        m = np.outer(theta, xs) * ys
        g = -(ys * xs * (-1 / (1 + np.exp(m)))).sum(axis=1) - ridge * theta  # b = g_D(θ)
        jac = (xs**2 / (4 * np.cosh(m / 2) ** 2)).sum(axis=1) + ridge
        return -beta * np.abs(g) + np.log(jac)

    worst = 0.0
    for new_x, new_y in [(1.0, 1.0), (-1.0, 1.0), (0.0, -1.0), (1.0, -1.0)]:
        x2, y2 = x.copy(), y.copy()
        x2[0], y2[0] = new_x, new_y
        ratio = log_density(x, y) - log_density(x2, y2)
        worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst <= plan.epsilon
    # a real loss of the charged order: in one dimension two logistic gradients differ by at
    # most 1 (not the 2 of the general bound), so about β + ε_J is reachable
    assert worst >= 0.9 * beta


# -- the noise and the solver ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 3, 10])
def test_objective_noise_norm_is_gamma_and_direction_uniform(d):
    plan = objective_perturbation_plan(
        epsilon=0.7,
        lipschitz=1.0,
        curvature=0.25,
        size=1000,
        regularization=1e-3,
        adjacency="replace_one",
    )
    mechanism = _ObjectiveNoise(plan, d)
    rng = np.random.default_rng(11)
    draws = np.array([mechanism.release(np.zeros(d), rng) for _ in range(20_000)])
    norms = np.linalg.norm(draws, axis=1)
    assert stats.kstest(norms, stats.gamma(d, scale=plan.scale).cdf).pvalue > 1e-3
    if d > 1:  # u₁² of a uniform direction is Beta(1/2, (d − 1)/2)
        u1 = (draws[:, 0] / norms) ** 2
        assert stats.kstest(u1, stats.beta(0.5, (d - 1) / 2).cdf).pvalue > 1e-3


def test_the_solver_matches_scikit_learn_and_its_tolerance():
    from sklearn.linear_model import LogisticRegression

    X, y = _data(3000, 4)
    ys = 2.0 * y - 1
    lam = 1e-2
    theta, norm = _minimise(X, ys, _Loss("logistic", 1.0, 0.25), lam, np.zeros(4), 1e-12, 100)
    ref = LogisticRegression(C=1 / (lam * len(y)), fit_intercept=False, tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(theta, ref.fit(X, y).coef_[0], rtol=1e-6, atol=1e-8)
    assert norm <= 1e-12


def _exact_gradient(X, y, loss, ridge, linear, theta, size):
    """The perturbed objective's gradient in extended precision (mpmath, 40 digits)."""
    with mpmath.workdps(40):
        t = [
            mpmath.fsum(mpmath.mpf(a) * mpmath.mpf(b) for a, b in zip(row, theta, strict=True))
            for row in X
        ]
        if loss.name == "logistic":
            d1 = [-yi / (1 + mpmath.exp(yi * ti)) for yi, ti in zip(y, t, strict=True)]
        else:  # the Huber SVM of width h, in the margin m = y·t
            h = mpmath.mpf(loss.width)
            d1 = []
            for yi, ti in zip(y, t, strict=True):
                m = yi * ti
                dm = 0 if m > 1 + h else (-1 if m < 1 - h else -(1 + h - m) / (2 * h))
                d1.append(yi * dm)
        g = [
            mpmath.fsum(X[i, j] * d1[i] for i in range(len(y))) / size
            + ridge * mpmath.mpf(theta[j])
            + mpmath.mpf(linear[j])
            for j in range(X.shape[1])
        ]
        return float(mpmath.sqrt(mpmath.fsum(v * v for v in g)))


@pytest.mark.parametrize("ridge", [1e-5, 1e-3, 1e-1])
@pytest.mark.parametrize("loss", [_Loss("logistic", 1.0, 0.25), _Loss("huber_svm", 1.0, 2.0, 0.25)])
def test_the_solver_meets_its_tolerance_in_exact_arithmetic(ridge, loss):
    # the solver returns a certified bound on the exact gradient norm; the exact gradient
    # (40 digits) must be within it, and it within tol — ‖θ̃ − θ̂‖ ≤ tol/ridge rests on it
    X, y = _data(400, 4, seed=5)
    ys = 2.0 * y - 1
    rng = np.random.default_rng(6)
    for scale in (0.0, 1.0, 100.0):
        linear = scale * rng.normal(size=4)
        tol = 1e-12 * (1.0 + float(np.linalg.norm(linear)))
        theta, bound = _minimise(X, ys, loss, ridge, linear, tol, 1000)
        assert _exact_gradient(X, ys, loss, ridge, linear, theta, 400) <= bound <= tol


def test_the_blocked_sums_have_the_depth_of_one_fold_and_either_error_sum_bounds(monkeypatch):
    # ĝ's pairwise sums run in blocks of a power of two rows: the addition tree's depth
    # must be ⌈log₂ n⌉ (the public floor assumes ≤ 63), and the certificate's error sum,
    # taken in any order (BLAS, inflated by 1 + 4γ) or pairwise, must bound the same way
    import dpledger.algorithms._erm_solver as solver

    loss = _Loss("logistic", 1.0, 0.25)
    rng = np.random.default_rng(3)
    for d in (1, 3, 5000):
        block = solver._block_rows(d)
        assert block & (block - 1) == 0  # a power of two
        for rows in (1, 2, 3, block - 1, block, block + 1, 3 * block + 5):
            X = rng.normal(size=(rows, d)) / (2 * math.sqrt(d))
            y = rng.choice([-1.0, 1.0], rows)
            problem = solver._Problem(X, y, loss, 1e-2, np.zeros(d), float(rows))
            point = solver._gradient(problem, rng.normal(size=d))
            assert point.depth == max(rows - 1, 0).bit_length()  # ⌈log₂ rows⌉
            direct = ((X * point.d1[:, None]).sum(axis=0)) / rows
            np.testing.assert_allclose(point.data_part, direct, rtol=1e-12, atol=1e-15)
    X, y = _data(400, 4, seed=5)
    ys = 2.0 * y - 1
    linear = np.array([0.3, -0.1, 0.2, 0.05])
    theta, _ = _minimise(X, ys, loss, 1e-3, linear, 1e-12, 1000)
    problem = solver._Problem(X, ys, loss, 1e-3, linear, 400.0)
    any_order = solver._certified_gradient_norm(problem, theta)
    monkeypatch.setattr(solver, "_ANY_ORDER", 0.0)  # pairwise error sums
    pairwise = solver._certified_gradient_norm(problem, theta)
    assert any_order == pytest.approx(pairwise, rel=1e-9)
    exact = _exact_gradient(X, ys, loss, 1e-3, linear, theta, 400)
    assert exact <= min(any_order, pairwise)


@pytest.mark.parametrize(("rows", "size"), [(1_000_000, 1_000_000.0), (300_000, 30_000.0)])
def test_the_certified_bound_holds_where_a_plain_sum_misses_tol(rows, size):
    # many identical rows (two groups): the exact gradient is a product, computed in
    # mpmath. A plain floating-point stop at tol/2 left the exact gradient at 1.005·tol
    # (a million rows) and 3·tol (ten times more rows than the public N); the certified
    # solver either certifies a true bound or refuses
    x = np.array([0.6, 0.1, 0.7])
    X = np.tile(x, (rows, 1))
    ys = np.ones(rows)
    ys[: rows // 3] = -1.0
    linear = np.array([0.0010039615758421696, -0.0006179070447076008, 0.0018220113633283233])
    loss = _Loss("logistic", 1.0, 0.25)
    tol = 1.42e-12
    try:
        theta, bound = _minimise(X, ys, loss, 1e-3, linear, tol, 1000, size)
    except ConvergenceError as error:
        assert "e-" not in str(error).replace(f"{tol:g}", "")  # no data-dependent number
        return
    with mpmath.workdps(50):
        t = mpmath.fsum(mpmath.mpf(a) * mpmath.mpf(b) for a, b in zip(x, theta, strict=True))
        grad = []
        for j in range(3):
            total = mpmath.mpf(0)
            for count, label in ((rows // 3, -1), (rows - rows // 3, 1)):
                total += count * mpmath.mpf(x[j]) * (-label / (1 + mpmath.exp(label * t)))
            grad.append(total / size + mpmath.mpf(1e-3) * mpmath.mpf(theta[j]) + linear[j])
        exact = float(mpmath.sqrt(mpmath.fsum(v * v for v in grad)))
    assert exact <= bound <= tol


def test_a_fit_releases_the_approximate_minimiser_plus_noise_for_its_shift():
    X, y = _data()
    model = ObjectivePerturbationClassifier(
        epsilon=1.0, x_bound=1.0, adjacency="replace_one", rng=0
    ).fit(X, y)
    perturbation, approximation = model.releases_
    # the perturbation gets (1 − share) of ε, Z the rest; together within ε
    assert perturbation == ev.PureDP(model.plan_.epsilon)
    assert model.plan_.epsilon <= 0.99
    assert approximation.epsilon >= 0.01 * (1 - 1e-6)
    assert model.ledger_.spent[0] <= 1.0
    assert model.ledger_.spent[0] == pytest.approx(1.0, rel=1e-8)
    # the shift is 2·tol/(λ + Δ), with tol floored at 1e-12 of a·R + E‖b‖/N
    ridge = 1e-3 + model.plan_.extra_regularization
    assert model.solver_tol_ >= 1e-12 * math.sqrt(2)  # R² = 1 + 1 (intercept column)
    assert model.shift_ >= 2 * model.solver_tol_ / ridge
    assert model.score(X, y) > 0.8


def test_the_gaussian_fit_charges_two_approximate_dp_releases_within_the_budget():
    X, y = _data()
    ledger = dpl.Ledger(3.0, 1e-5, adjacency="replace_one")
    model = ObjectivePerturbationClassifier(
        epsilon=1.0,
        delta=1e-5,
        noise="gaussian",
        x_bound=1.0,
        adjacency="replace_one",
        ledger=ledger,
        rng=0,
    ).fit(X, y)
    first, second = model.releases_
    assert isinstance(first, ev.ApproxDP) and isinstance(second, ev.ApproxDP)
    assert first.epsilon + second.epsilon <= 1.0 and first.delta + second.delta <= 1e-5
    # Z's σ is the analytic Gaussian's for the shift at (ε₃, δ₃): independently, by the
    # exact Gaussian δ(ε) (Balle & Wang 2018, Thm 8)
    sigma = model.shift_scale_
    mu = model.shift_ / sigma
    eps3 = second.epsilon
    exact = stats.norm.cdf(-eps3 / mu + mu / 2) - math.exp(eps3) * stats.norm.cdf(
        -eps3 / mu - mu / 2
    )
    assert exact <= second.delta * (1 + 1e-6)
    assert ledger.spent[0] <= 1.0 and ledger.spent[1] <= 1e-5


@pytest.mark.parametrize(
    ("parameter", "share"),
    [("solver_share", share) for share in (0.0, 1.0, -0.1, math.nan, "x")]
    + [("jacobian_share", share) for share in (0.0, 1.0, math.nan, 1e-300)],
)
def test_the_shares_are_checked_before_any_charge(parameter, share):
    X, y = _data(200)
    ledger = dpl.Ledger(5.0, 0.0, adjacency="replace_one")
    with pytest.raises(DPLedgerError, match=parameter):
        ObjectivePerturbationClassifier(
            epsilon=1.0, x_bound=1.0, adjacency="replace_one", ledger=ledger, **{parameter: share}
        ).fit(X, y)
    assert ledger.receipts == ()


def test_an_objective_solver_failure_says_the_perturbation_was_charged(monkeypatch):
    # max_iter=1 no longer makes the solver give up (issue 31: whether one iteration
    # sufficed depended on the data); the message of a failure is checked by forcing one
    from dpledger.algorithms import erm

    def failing(*args, **kwargs):
        raise ConvergenceError("the solver could not certify its gradient tolerance.")

    X, y = _data(500)
    ledger = dpl.Ledger(2.0, 0.0, adjacency="replace_one")
    monkeypatch.setattr(erm, "_minimise", failing)
    with pytest.raises(ConvergenceError, match="already charged"):
        ObjectivePerturbationClassifier(
            epsilon=1.0, x_bound=1.0, adjacency="replace_one", ledger=ledger
        ).fit(X, y)
    assert len(ledger.receipts) == 1  # b, and nothing more


def test_a_tiny_max_iter_no_longer_decides_whether_a_fit_releases():
    X, y = _data(500)
    ledger = dpl.Ledger(4.0, 0.0, adjacency="replace_one")
    for cls in (ObjectivePerturbationClassifier, OutputPerturbationClassifier):
        model = cls(epsilon=1.0, x_bound=1.0, adjacency="replace_one", max_iter=1, ledger=ledger)
        model.fit(X, y)
        assert np.all(np.isfinite(model.coef_))
    assert len(ledger.receipts) == 3


@pytest.mark.parametrize("adjacency", ["replace_one", "add_remove"])
def test_output_perturbation_sensitivity_holds_for_worst_neighbours(adjacency):
    X, y = _data(300, 2, seed=4)
    lam = 0.05
    model = OutputPerturbationClassifier(
        epsilon=1.0,
        x_bound=1.0,
        adjacency=adjacency,
        l2_regularization=lam,
        data_size=300,
        rng=0,
    )
    Xs, ys, size, _, _ = model._design(X, y)
    loss = _Loss("logistic", 1.0, 0.25)
    base, _ = _minimise(Xs, ys, loss, lam, np.zeros(3), 1e-12, 100)
    model.fit(X, y)
    worst = 0.0
    for row in range(0, 300, 10):
        for sign in (-1.0, 1.0):
            if adjacency == "replace_one":
                Xn, yn = Xs.copy(), ys.copy()
                direction = -np.sign(base[:2]) if sign > 0 else np.sign(base[:2])
                Xn[row, :2] = direction / np.linalg.norm(direction)
                yn[row] = sign
            else:  # remove the row; the objective keeps the public N
                Xn = np.delete(Xs, row, axis=0)
                yn = np.delete(ys, row)
            # the objective is normalised by the public N, not by the rows present
            other, _ = _minimise(Xn, yn, loss, lam, np.zeros(3), 1e-12, 100, size=size)
            worst = max(worst, float(np.linalg.norm(other - base)))
    assert 0 < worst <= model.sensitivity_


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "changes", "argument"),
    [
        (ObjectivePerturbationRegressor, {"loss": "squared"}, "loss"),
        (ObjectivePerturbationClassifier, {"noise": "gaussian", "delta": 0.0}, "delta"),
        (
            ObjectivePerturbationClassifier,
            {"noise": "gaussian", "delta": 1e-6, "variant": "published"},
            "published",
        ),
        (ObjectivePerturbationClassifier, {"adjacency": "add_remove"}, "data_size"),
        (ObjectivePerturbationClassifier, {"loss": "hinge"}, "loss"),
        (ObjectivePerturbationClassifier, {"loss": "huber", "huber_width": 0.0}, "huber_width"),
        (ObjectivePerturbationClassifier, {"l2_regularization": 0.0}, "l2_regularization"),
        (ObjectivePerturbationClassifier, {"tol": -1.0}, "tol"),
        (ObjectivePerturbationClassifier, {"intercept_scaling": math.inf}, "intercept_scaling"),
        (OutputPerturbationRegressor, {"huber_threshold": math.nan}, "huber_threshold"),
        (OutputPerturbationClassifier, {"noise": "cauchy"}, "noise"),
        (ObjectivePerturbationClassifier, {"noise": "l1_laplace"}, "x_l1_bound"),
        (ObjectivePerturbationClassifier, {"x_l1_bound": 2.0}, "x_l1_bound"),
        (
            ObjectivePerturbationClassifier,
            {"noise": "l1_laplace", "x_l1_bound": -1.0},
            "x_l1_bound",
        ),
        (
            ObjectivePerturbationClassifier,
            {"noise": "l1_laplace", "x_l1_bound": 2.0, "variant": "published"},
            "published",
        ),
        (OutputPerturbationClassifier, {"noise": "l1_laplace"}, "l1_laplace"),
        (OutputPerturbationClassifier, {"noise": np.array(["laplace", "gaussian"])}, "noise"),
        (
            ObjectivePerturbationClassifier,
            {"noise": "l1_laplace", "x_l1_bound": 1e-320},
            "x_l1_bound",
        ),
        (
            ObjectivePerturbationRegressor,
            {"noise": "l1_laplace", "x_l1_bound": 9e298, "huber_threshold": 1e9},
            "huber_threshold",
        ),
    ],
)
def test_conditions_are_enforced_with_named_errors(cls, changes, argument):
    X, y = _data(200)
    params = {"epsilon": 1.0, "x_bound": 1.0, "adjacency": "replace_one", "rng": 0, **changes}
    ledger = dpl.Ledger(5.0, 1e-5, adjacency=params["adjacency"])
    with pytest.raises(DPLedgerError, match=argument):
        cls(ledger=ledger, **params).fit(X, y)
    assert ledger.receipts == ()


def test_labels_are_any_two_declared_classes_and_dask_is_refused():
    # was: labels outside {0, 1} refused — a refusal that told whether some private row
    # held another label. Now ±1 labels are declared (classes=) and give the 0/1 fit;
    # undeclared labels are rows dropped (the zero row), never refused
    X, y = _data(200)

    def fit(labels, **kw):
        ledger = dpl.Ledger(2.0, 0.0, adjacency="replace_one")  # same position: same noise
        return ObjectivePerturbationClassifier(
            epsilon=1.0, x_bound=1.0, adjacency="replace_one", ledger=ledger, rng=3, **kw
        ).fit(X, labels)

    binary = fit(y)
    signed = fit(2 * y - 1, classes=(-1, 1))
    np.testing.assert_array_equal(signed.coef_, binary.coef_)
    assert list(signed.classes_) == [-1, 1]
    np.testing.assert_array_equal(signed.predict(X), 2 * binary.predict(X) - 1)
    undeclared = fit(2 * y - 1)  # −1 is no class of (0, 1): those rows are dropped
    positives = fit(np.where(y == 1, 1.0, np.nan))  # the same rows dropped, as NaN labels
    np.testing.assert_array_equal(undeclared.coef_, positives.coef_)
    model = ObjectivePerturbationClassifier(epsilon=1.0, x_bound=1.0, adjacency="replace_one")
    da = pytest.importorskip("dask.array")
    with pytest.raises(InvalidArgumentError, match="in-memory"):
        model.fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50))


def test_a_solver_failure_before_the_release_charges_nothing(monkeypatch):
    # forced: max_iter=1 no longer fails (issue 31); a failure still charges nothing
    from dpledger.algorithms import erm

    def failing(*args, **kwargs):
        raise ConvergenceError("the solver could not certify its gradient tolerance tol.")

    X, y = _data(500)
    ledger = dpl.Ledger(2.0, 0.0, adjacency="replace_one")
    monkeypatch.setattr(erm, "_minimise", failing)
    with pytest.raises(ConvergenceError, match="tol"):
        OutputPerturbationClassifier(
            epsilon=1.0, x_bound=1.0, adjacency="replace_one", ledger=ledger
        ).fit(X, y)
    assert ledger.receipts == ()


def test_the_huber_regressor_is_least_squares_within_its_threshold():
    rng = np.random.default_rng(2)
    X = rng.uniform(-0.5, 0.5, size=(20_000, 2))
    y = X @ [1.0, -2.0] + 0.05 * rng.normal(size=20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ObjectivePerturbationRegressor(
            epsilon=2.0, x_bound=1.0, adjacency="replace_one", huber_threshold=1.0, rng=3
        ).fit(X, y)
    np.testing.assert_allclose(model.coef_, [1.0, -2.0], atol=0.1)


# -- the logistic joint bound -------------------------------------------------------------


def test_the_logistic_joint_bound_is_an_upper_bound_on_its_maximum_by_mpmath():
    from dpledger.algorithms.erm import _logistic_joint

    rng = np.random.default_rng(12)
    for _ in range(300):
        e, area, k = 10 ** rng.uniform(-6, 1.5), 10 ** rng.uniform(-6, 5), int(rng.choice([1, 2]))
        bound = _logistic_joint(e, area, k)
        ee = mpmath.mpf(e) / k

        def g(p, ee=ee, area=area):
            return ee * p + mpmath.log1p(p * (1 - p) * area)

        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(150):  # ternary search: g is concave
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            lo, hi = (m1, hi) if g(m1) < g(m2) else (lo, m2)
        exact = (k - 1) * ee + max(g(lo), g(0), g(1))
        assert bound >= exact
        assert bound <= exact * (1 + 1e-9) + 1e-15
        # never looser than the additive bound ε′ + log(1 + c·R²/Λ), c = 1/4
        assert bound <= (e + math.log1p(area / 4)) * (1 + 1e-9)


def _log_density_2d(T, rows, labels, ridge, beta, norm):
    """log p_D(θ) + const of objective perturbation's output, logistic loss, d = 2, over
    the grid T: exp(−β‖g_D(θ)‖)·det(H_D(θ) + Λ) by change of variables (‖·‖ = ``norm``)."""
    m = (T @ rows.T) * labels
    d1 = -labels / (1 + np.exp(m))  # φ′ per row
    g = -(d1[:, :, None] * rows[None]).sum(axis=1) - ridge * T
    w = 1 / (4 * np.cosh(m / 2) ** 2)  # φ″
    H = np.einsum("ti,ij,ik->tjk", w, rows, rows) + ridge * np.eye(2)
    return -beta * np.linalg.norm(g, ord=norm, axis=1) + np.log(np.linalg.det(H))


@pytest.mark.parametrize("adjacency", ["replace_one", "add_remove"])
def test_two_dimensional_privacy_loss_is_within_the_joint_charge(adjacency):
    # d = 2, ℓ₂-Laplace b: the output density is p_D(θ) ∝ exp(−β‖g_D(θ)‖)·det(H_D(θ) + Λ)
    # exactly (change of variables); its log ratio over a θ grid stays within the joint
    # charge, which is below the additive ε′ + ε_J
    rng = np.random.default_rng(8)
    n = 12
    X = rng.normal(size=(n, 2)) * 0.05
    y = rng.choice([-1.0, 1.0], n)
    lam = 0.4
    plan = objective_perturbation_plan(
        epsilon=1.0,
        lipschitz=1.0,
        curvature=0.25,
        size=n,
        regularization=lam,
        adjacency=adjacency,
        loss="logistic",
    )
    additive = objective_perturbation_epsilon(
        noise="laplace",
        scale=plan.scale,
        lipschitz=1.0,
        curvature=0.25,
        size=n,
        regularization=lam + plan.extra_regularization,
        adjacency=adjacency,
    )
    assert plan.epsilon < additive
    ridge = n * (lam + plan.extra_regularization)
    beta = 1.0 / plan.scale
    axis = np.linspace(-12, 12, 401)
    T = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)

    def log_density(rows, labels):
        return _log_density_2d(T, rows, labels, ridge, beta, 2)

    worst = 0.0
    base = log_density(X, y)
    for angle in np.linspace(0, 2 * np.pi, 8, endpoint=False):
        x_new = np.array([math.cos(angle), math.sin(angle)])
        for label in (-1.0, 1.0):
            if adjacency == "replace_one":
                X2, y2 = X.copy(), y.copy()
                X2[0], y2[0] = x_new, -label  # y·x enters the loss: flip the label
                X1, y1 = X.copy(), y.copy()
                X1[0], y1[0] = x_new, label
                ratio = log_density(X1, y1) - log_density(X2, y2)
            else:
                ratio = log_density(np.vstack([X, x_new]), np.append(y, label)) - base
            worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst <= plan.epsilon
    # of the charge's order: the supremum (two gradients of norm R nearly opposite, both
    # rows far on the wrong side) needs ‖θ‖ → ∞, beyond the grid
    assert worst >= 0.45 * plan.epsilon


def test_the_logistic_classifier_charges_by_the_joint_bound_and_the_huber_svm_does_not():
    X, y = _data(20_000, 3)
    kwargs = {"epsilon": 1.0, "x_bound": 1.0, "adjacency": "replace_one", "rng": 0}
    logistic = ObjectivePerturbationClassifier(l2_regularization=1e-3, **kwargs).fit(X, y)
    # A = R²/(Nλ) = 2/20 ≤ e = ε′/2: the Jacobian is free, all of (1 − share)·ε is noise
    assert logistic.plan_.epsilon_noise == pytest.approx(0.99, rel=1e-9)
    assert logistic.plan_.epsilon_noise <= logistic.plan_.epsilon <= 0.99
    huber = ObjectivePerturbationClassifier(loss="huber", **kwargs).fit(X, y)
    # the Huber SVM's |φ′| = 1 and φ″ = 1/(2h) meet at m = 1 − h: the terms add
    c_r2 = 2 / (2 * 0.5)
    jac = math.log1p(c_r2 / (20_000 * 1e-3))
    assert huber.plan_.epsilon_jacobian == pytest.approx(jac, rel=1e-9)


@pytest.mark.parametrize("loss", ["generic", "logistic"])
def test_a_smaller_jacobian_share_buys_noise_budget_with_ridge(loss):
    setting = {
        "epsilon": 0.1,
        "lipschitz": 1.0,
        "curvature": 0.25,
        "size": 10_000,
        "regularization": 1e-5,
        "adjacency": "replace_one",
        "loss": loss,
    }
    half = objective_perturbation_plan(**setting)
    tenth = objective_perturbation_plan(**setting, jacobian_share=0.1)
    assert half.extra_regularization < tenth.extra_regularization
    assert half.epsilon_noise == pytest.approx(0.05, rel=1e-9)
    assert tenth.epsilon_noise == pytest.approx(0.09, rel=1e-9)
    assert max(half.epsilon, tenth.epsilon) <= 0.1


def test_the_joint_bound_is_refused_for_a_loss_that_is_not_the_logistic_loss():
    with pytest.raises(InvalidArgumentError, match="curvature"):
        objective_perturbation_plan(
            epsilon=1.0,
            lipschitz=2.0,  # a scaled logistic loss 2·log(1 + e^{−yt}): c·R² = 0.5 ≠ 4/4
            curvature=0.5,
            size=100,
            regularization=1e-2,
            adjacency="replace_one",
            loss="logistic",
        )


# -- ℓ₁-Laplace b: the K-norm mechanism of the ℓ₁ ball --------------------------------------


def test_l1_noise_plan_is_the_l2_plan_with_the_l1_gradient_bound():
    # the same ε′ and ridge (the Jacobian term is ℓ₂ either way); the scale is k·L₁/ε′
    setting = {
        "epsilon": 0.3,
        "lipschitz": 1.0,
        "curvature": 0.25,
        "size": 5000,
        "regularization": 1e-4,
        "adjacency": "replace_one",
    }
    for loss in ("generic", "logistic"):
        l2 = objective_perturbation_plan(**setting, loss=loss)
        l1 = objective_perturbation_plan(**setting, loss=loss, noise="l1_laplace", l1_lipschitz=3.5)
        assert l1.noise == "l1_laplace" and l1.delta == 0.0
        assert l1.epsilon_noise == l2.epsilon_noise
        assert l1.extra_regularization == l2.extra_regularization
        assert l1.scale == pytest.approx(2 * 3.5 / l1.epsilon_noise, rel=1e-12)
        assert l1.scale >= 2 * 3.5 / l1.epsilon_noise  # rounded towards more noise
        again = objective_perturbation_epsilon(
            noise="l1_laplace",
            scale=l1.scale,
            lipschitz=1.0,
            l1_lipschitz=3.5,
            curvature=0.25,
            size=5000,
            regularization=1e-4 + l1.extra_regularization,
            adjacency="replace_one",
            loss=loss,
        )
        assert again <= 0.3
        assert again == pytest.approx(0.3, rel=1e-6)


@pytest.mark.parametrize(
    ("changes", "argument"),
    [
        ({"noise": "l1_laplace"}, "l1_lipschitz"),
        ({"noise": "l1_laplace", "l1_lipschitz": 0.0}, "l1_lipschitz"),
        ({"noise": "laplace", "l1_lipschitz": 2.0}, "l1_lipschitz"),
        ({"noise": "l1_laplace", "l1_lipschitz": 2.0, "variant": "published"}, "published"),
        ({"noise": "l1_laplace", "l1_lipschitz": 1e308}, "l1_lipschitz"),
        ({"lipschitz": 1e308, "curvature": 1.0}, "lipschitz"),
    ],
)
def test_l1_noise_plan_arguments_are_checked(changes, argument):
    setting = {
        "epsilon": 1.0,
        "lipschitz": 1.0,
        "curvature": 0.25,
        "size": 100,
        "regularization": 1e-2,
        "adjacency": "replace_one",
    }
    with pytest.raises(InvalidArgumentError, match=argument):
        objective_perturbation_plan(**{**setting, **changes})


def test_l1_noise_coordinates_are_iid_laplace():
    plan = objective_perturbation_plan(
        epsilon=0.7,
        lipschitz=1.0,
        curvature=0.25,
        size=1000,
        regularization=1e-3,
        adjacency="replace_one",
        noise="l1_laplace",
        l1_lipschitz=2.0,
    )
    mechanism = _ObjectiveNoise(plan, 4)
    assert mechanism.event == ev.PureDP(plan.epsilon)
    draws = np.array([mechanism.release(np.zeros(4), 3 + i) for i in range(5000)])
    for j in range(4):
        assert stats.kstest(draws[:, j], stats.laplace(scale=plan.scale).cdf).pvalue > 1e-3
    # independent coordinates: no correlation between them
    assert np.max(np.abs(np.corrcoef(draws.T) - np.eye(4))) < 0.06


def test_l1_noise_is_clipped_where_no_numpy_draw_reaches_and_its_radius_holds():
    from dpledger.algorithms._erm_privacy import _draw_l1, _l1_limit, _perturbation_radius

    class Extreme:  # a sampler whose draws are far in the tails (numpy's never are)
        def laplace(self, loc, scale, size):
            return np.array([1e6, -1e6, 3.0, -1e300])[:size] * scale

    scale, d = 0.7, 4
    limit = _l1_limit(scale, d)
    assert limit >= (math.log(d) + 58) * scale
    b = _draw_l1(Extreme(), scale, d)
    assert np.all(np.abs(b) <= limit) and b[2] == 3.0 * scale  # inside: unchanged
    # the most extreme value numpy's inverse-CDF sampler can return (U = 2⁻⁵³) is inside
    assert scale * -math.log(2 * 2.0**-53) < limit
    # the clip's probability under real Laplace noise: d·e^{−T} ≤ e^{−58} < 1e-25
    assert d * math.exp(-limit / scale) <= 1e-25
    plan = objective_perturbation_plan(
        epsilon=1.0,
        lipschitz=1.0,
        curvature=0.25,
        size=100,
        regularization=1e-2,
        adjacency="replace_one",
        noise="l1_laplace",
        l1_lipschitz=2.0,
    )
    radius = _perturbation_radius(plan, d)
    assert np.linalg.norm(np.full(d, _l1_limit(plan.scale, d))) <= radius
    assert radius < 64 * plan.scale * d / 2  # the bound the floor used before (2.15×)


def test_l1_fits_are_floored_at_the_clipped_radius_and_certify_at_the_clip(monkeypatch):
    # the solver's floor assumes ‖b‖ ≤ √d·T·scale, which the clip makes certain: even a b
    # at the clip in every coordinate certifies (it raised ConvergenceError beyond
    # 64·scale·d before, with probability below 1e-25, after the charge)
    import dpledger.algorithms._erm_privacy as privacy
    from dpledger.algorithms._erm_bounds import _solver_floor

    X, y = _data(400, 3, seed=2)
    settings = dict(
        epsilon=1.0,
        x_bound=1.0,
        adjacency="replace_one",
        noise="l1_laplace",
        x_l1_bound=1.5,
        l2_regularization=1e-3,
        rng=0,
    )
    model = ObjectivePerturbationClassifier(**settings).fit(X, y)
    d, scale, ridge = 4, model.plan_.scale, 1e-3 + model.plan_.extra_regularization
    radius = math.sqrt(2.0) * (1 + 1e-15)
    loss = _Loss("logistic", 1.0, 0.25)
    clipped = privacy._perturbation_radius(model.plan_, d) / 400
    assert model.solver_tol_ == _solver_floor(loss, radius, d, ridge, clipped)
    assert model.solver_tol_ < _solver_floor(loss, radius, d, ridge, 64 * scale * d / 400) / 2

    def at_the_clip(generator, scale, dimension):
        return np.full(dimension, privacy._l1_limit(scale, dimension)) * [1, -1, 1, -1]

    monkeypatch.setattr(privacy, "_draw_l1", at_the_clip)
    extreme = ObjectivePerturbationClassifier(**settings).fit(X, y)
    assert np.all(np.isfinite(extreme.coef_)) and extreme.solver_tol_ == model.solver_tol_


@pytest.mark.parametrize("adjacency", ["replace_one", "add_remove"])
@pytest.mark.slow
def test_two_dimensional_privacy_loss_with_l1_noise_is_within_the_charge(adjacency):
    # d = 2, ℓ₁-Laplace b: p_D(θ) ∝ exp(−β‖g_D(θ)‖₁)·det(H_D(θ) + Λ) exactly (change of
    # variables). Rows in {‖x‖₂ ≤ 1, ‖x‖₁ ≤ R₁}; the noise is sized for k·R₁ in ℓ₁, so
    # the log ratio over a θ grid stays within the joint charge
    rng = np.random.default_rng(9)
    n, r1 = 12, 1.2
    X = rng.normal(size=(n, 2)) * 0.05
    y = rng.choice([-1.0, 1.0], n)
    lam = 0.4
    plan = objective_perturbation_plan(
        epsilon=1.0,
        lipschitz=1.0,
        curvature=0.25,
        size=n,
        regularization=lam,
        adjacency=adjacency,
        loss="logistic",
        noise="l1_laplace",
        l1_lipschitz=r1,
    )
    ridge = n * (lam + plan.extra_regularization)
    beta = 1.0 / plan.scale
    axis = np.linspace(-12, 12, 301)
    T = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)

    def log_density(rows, labels):
        return _log_density_2d(T, rows, labels, ridge, beta, 1)

    def on_boundary(angle):  # the largest multiple of the direction inside both balls
        u = np.array([math.cos(angle), math.sin(angle)])
        return u * min(1.0, r1 / np.abs(u).sum())

    worst = 0.0
    base = log_density(X, y)
    for angle in np.linspace(0, 2 * np.pi, 16, endpoint=False):
        x_new = on_boundary(angle)
        assert np.abs(x_new).sum() <= r1 + 1e-12 and np.linalg.norm(x_new) <= 1 + 1e-12
        for label in (-1.0, 1.0):
            if adjacency == "replace_one":
                X1, y1 = X.copy(), y.copy()
                X1[0], y1[0] = x_new, label
                first = log_density(X1, y1)
                # the other row: the same x with the label flipped, or a different x (the
                # gradients can then both be near their bound, nearly opposite)
                for other, other_label in (
                    (x_new, -label),
                    (on_boundary(angle + 0.8 * np.pi), label),
                    (on_boundary(angle + 0.6 * np.pi), label),
                ):
                    X2, y2 = X.copy(), y.copy()
                    X2[0], y2[0] = other, other_label
                    ratio = first - log_density(X2, y2)
                    worst = max(worst, float(np.max(np.abs(ratio))))
            else:
                ratio = log_density(np.vstack([X, x_new]), np.append(y, label)) - base
                worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst <= plan.epsilon
    assert worst >= (0.8 if adjacency == "replace_one" else 0.45) * plan.epsilon
    if adjacency == "add_remove":
        # sizing the ℓ₁ noise for the ℓ₂ bound (R = 1 < R₁) would be unsafe: one added row
        # on the diagonal, misclassified, moves b by R₁ = 1.2 in ℓ₁ (within the grid)
        beta = 1.0 / (plan.scale / r1)
        base = log_density(X, y)  # under the smaller noise
        unsafe = 0.0
        for angle in (math.pi / 4, 3 * math.pi / 4, 5 * math.pi / 4, 7 * math.pi / 4):
            rows = np.vstack([X, on_boundary(angle)])
            for label in (-1.0, 1.0):
                ratio = log_density(rows, np.append(y, label)) - base
                unsafe = max(unsafe, float(np.max(np.abs(ratio))))
        assert unsafe > plan.epsilon


def test_rows_are_clipped_to_the_l1_bound_and_the_intercept_counts_in_it():
    rng = np.random.default_rng(5)
    X = (rng.random((3000, 6)) < 0.5).astype(float)  # ‖x‖₁ up to 6, ‖x‖₂ up to √6
    y = (X[:, 0] + X[:, 1] > X[:, 2] + 0.5).astype(int)
    kwargs = {
        "epsilon": 2.0,
        "x_bound": 2.5,
        "adjacency": "replace_one",
        "noise": "l1_laplace",
        "x_l1_bound": 3.0,
        "intercept_scaling": 0.5,
    }
    model = ObjectivePerturbationClassifier(rng=4, **kwargs).fit(X, y)
    # R₁ = (3 + 0.5)/2.5 in the scaled units, a = 1, replace-one: scale = 2R₁/ε′
    expected = 2 * (3.0 + 0.5) / 2.5 / model.plan_.epsilon_noise
    assert model.plan_.scale == pytest.approx(expected, rel=1e-12)
    assert model.plan_.scale >= expected
    # a fit on rows clipped by hand to the ℓ₁ bound is the same fit (same noise draw)
    l1 = np.abs(X).sum(axis=1)
    clipped = X * np.minimum(1.0, 3.0 / np.maximum(l1, 1e-300))[:, None]
    again = ObjectivePerturbationClassifier(rng=4, **kwargs).fit(clipped, y)
    np.testing.assert_allclose(again.coef_, model.coef_, rtol=1e-9, atol=1e-12)
    assert model.score(X, y) > 0.8


def test_l1_noise_is_far_smaller_than_l2_noise_on_one_hot_rows():
    # one-hot rows (8 blocks): R₁ = √8·R, d = 40 — E‖b‖² ratio 2R₁²/((d + 1)R²) = 16/41
    setting = {
        "epsilon": 1.0,
        "lipschitz": 1.0,
        "curvature": 0.25,
        "size": 10_000,
        "regularization": 1e-3,
        "adjacency": "replace_one",
        "loss": "logistic",
    }
    d = 40
    l2 = objective_perturbation_plan(**setting)
    l1 = objective_perturbation_plan(**setting, noise="l1_laplace", l1_lipschitz=math.sqrt(8))
    rng = np.random.default_rng(0)
    b2 = np.array([_ObjectiveNoise(l2, d).release(np.zeros(d), rng) for _ in range(4000)])
    b1 = np.array([_ObjectiveNoise(l1, d).release(np.zeros(d), rng) for _ in range(4000)])
    ratio = float(np.mean(np.sum(b1**2, axis=1)) / np.mean(np.sum(b2**2, axis=1)))
    assert ratio == pytest.approx(16 / 41, rel=0.08)


# ---------------------------------------------------------------- review mends (helper-32)


@pytest.mark.parametrize("cls", [ObjectivePerturbationRegressor, OutputPerturbationRegressor])
def test_one_huge_label_never_decides_whether_a_fit_releases(cls):
    """The regressors declare no bound on y. One label of 1e20 made the Huber objective
    ≈ 1e18, whose rounding hid every decrease: the line search never passed, and the
    objective-perturbation fit raised ConvergenceError *after* its charge in 7 of 10
    seeds (output perturbation refused), while with 1e17 every fit released. Decreases
    are now summed from per-row changes, which a row on a linear piece of the loss gives
    exactly."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(100, 2))
    base = X @ np.array([1.0, -1.0]) + 0.1 * rng.normal(size=100)
    for label in (1e17, 1e20, -1e300):
        y = base.copy()
        y[0] = label
        for seed in range(6):
            ledger = dpl.Ledger(10.0, 0.0, adjacency="replace_one")
            model = cls(epsilon=1.0, x_bound=1.0, adjacency="replace_one", ledger=ledger, rng=seed)
            model.fit(X, y)
            assert np.all(np.isfinite(model.coef_))
            assert ledger.spent[0] == pytest.approx(1.0)
