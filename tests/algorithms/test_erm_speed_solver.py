"""The certified solver's speed work: the same bits where promised, and steers that stay steers.

The solver's scratch is shared between its phases, φ″ is formed only where a Hessian
uses it, the scaled rows are written next to the intercept column, and two logistic
steers were added (the first step stretched along its ray, Chebyshev's third-order
correction on full-Hessian steps). The first group must not change a single bit of
what it replaced; the second may move the released point only within the certified
tolerance, which these tests check in extended precision.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import special

import dpledger.algorithms._erm_solver as solver
from dpledger.algorithms import ObjectivePerturbationClassifier
from dpledger.algorithms._erm_losses import _Loss
from dpledger.algorithms._rows import scale_rows

pytestmark = pytest.mark.filterwarnings("ignore::dpledger.mechanisms.base.FloatingPointWarning")

LOGISTIC = _Loss("logistic", 1.0, 0.25)
LOSSES = [LOGISTIC, _Loss("huber_svm", 1.0, 2.0, 0.25), _Loss("huber", 1.5, 1.0, 1.5)]


def _old_steer(t, y):
    """The three-output steer this replaced, operation for operation (its φ, φ′, φ″)."""
    r = np.multiply(y, t)
    a = np.abs(r)
    r = np.maximum(np.negative(r), 0.0)
    e = np.exp(np.negative(a))
    value = np.log1p(e)
    value += r
    d1 = np.exp(np.subtract(r, a))
    q = np.reciprocal(np.add(e, 1.0))
    d1 *= q
    d1 *= y
    d1 = np.negative(d1)
    d2 = np.multiply(e, q)
    d2 *= q
    return value, d1, d2


def _margins(rows, seed=0):
    rng = np.random.default_rng(seed)
    t = np.concatenate(
        [rng.normal(scale=3.0, size=rows), [0.0, -0.0, 1e-300, -1e-300, 40.0, -40.0, 800.0]]
    )
    y = rng.choice([-1.0, 1.0], t.size)
    return t, y


def test_the_steer_keeps_the_bits_of_the_form_it_replaced():
    t, y = _margins(5000)
    value, d1 = np.empty_like(t), np.empty_like(t)
    work = (np.empty_like(t), np.empty_like(t))
    with np.errstate(over="ignore", under="ignore"):
        LOGISTIC.steer(t, y, (value, d1), work)
        old = _old_steer(t, y)
        curvature = LOGISTIC.curvature(t, y)
    np.testing.assert_array_equal(value, old[0])
    np.testing.assert_array_equal(d1, old[1])
    np.testing.assert_array_equal(curvature, old[2])  # φ″, now formed apart


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_the_steer_at_zero_has_the_bits_of_the_steer_on_zeros(loss):
    rng = np.random.default_rng(1)
    huber = loss.name == "huber"  # labels of a regression, else ±1
    y = rng.normal(scale=3.0, size=4000) if huber else rng.choice([-1.0, 1.0], 4000)
    zeros = np.zeros_like(y)
    expected = (np.empty_like(y), np.empty_like(y))
    found = (np.empty_like(y), np.empty_like(y))
    loss.steer(zeros, y, expected, (np.empty_like(y), np.empty_like(y)))
    loss.steer_at_zero(y, found, (np.empty_like(y), np.empty_like(y)))
    for a, b in zip(found, expected, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_curvature_and_third_are_the_derivatives_of_the_slope(loss):
    t, y = _margins(300, seed=2)
    t = t[np.abs(t) < 30]  # away from the overflow of the finite differences
    y = y[: t.size]
    h = 1e-6
    with np.errstate(over="ignore", under="ignore"):
        curvature = loss.curvature(t, y)
        third = loss.third(t, y)
        if loss.name == "logistic":
            slope_fd = (loss.slope(t + h, y) - loss.slope(t - h, y)) / (2 * h)
            np.testing.assert_allclose(curvature, slope_fd, atol=1e-8)
            curvature_fd = (loss.curvature(t + h, y) - loss.curvature(t - h, y)) / (2 * h)
            np.testing.assert_allclose(third, curvature_fd, atol=1e-8)
        else:  # piecewise quadratic: no third derivative to correct with
            np.testing.assert_array_equal(third, 0.0)
            np.testing.assert_array_equal(curvature, loss.derivatives(t, y)[2])


def _rows_for_scaling(seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, 6)) / 4  # mostly inside the bound 1
    X[::7] *= 6.0  # over it
    X[::11] /= np.linalg.norm(X[::11], axis=1)[:, None]  # on it (near: re-checked)
    X[5] = [1e-310, 0, 0, 0, 0, 0]  # subnormal
    X[6] = 0.0
    sphere = rng.normal(size=(500, 6))
    sphere /= np.linalg.norm(sphere, axis=1)[:, None]  # every row near: the in-place path
    return X, sphere


@pytest.mark.parametrize("unit", [False, True])
def test_scaled_rows_written_beside_the_intercept_have_the_bits_of_scale_then_append(unit):
    for X in _rows_for_scaling():
        X = np.ascontiguousarray(X)
        expected = np.hstack([scale_rows(X, 1.0, unit), np.full((len(X), 1), 0.5)])
        wide = np.empty((len(X), X.shape[1] + 1))
        returned = scale_rows(X, 1.0, unit, out=wide[:, :-1])
        wide[:, -1] = 0.5
        np.testing.assert_array_equal(wide, expected)
        assert np.shares_memory(returned, wide)


def test_the_design_with_an_intercept_is_one_copy_with_the_old_bits(monkeypatch):
    """The rows the solver gets: the same bits as scaling, then appending the column."""
    import dpledger.algorithms.erm as erm

    seen = []
    real = erm._minimise

    def spy(X, *args, **kwargs):
        seen.append(X)
        return real(X, *args, **kwargs)

    monkeypatch.setattr(erm, "_minimise", spy)
    X, _ = _rows_for_scaling(seed=4)
    X = X * 1.7  # x_bound 2: some rows over it
    y = (X[:, 0] > 0).astype(int)
    ObjectivePerturbationClassifier(
        epsilon=1.0, x_bound=2.0, adjacency="replace_one", intercept_scaling=0.5, rng=9041
    ).fit(X, y)
    expected = np.hstack(
        [scale_rows(np.ascontiguousarray(X), 2.0, False), np.full((len(X), 1), 0.25)]
    )
    (design,) = seen
    np.testing.assert_array_equal(design, expected)
    assert design.flags.c_contiguous and design.base is None  # one array, not a view of two


@pytest.mark.parametrize("rows", [0, 1, 63, 64, 1000, 16385, 100_000])
@pytest.mark.parametrize("d", [1, 3, 20, 5000])
def test_the_shared_scratch_holds_every_view_asked_of_it(rows, d):
    every = solver._sample_every(rows, d)
    sample = -(-rows // every) if every > 1 else 0
    size = solver._work_size(rows, d, sample)
    memory = np.empty(size)
    block = min(solver._block_rows(d), rows)
    views = [
        solver._scratch(memory, (block, d)),  # the certificate's block
        solver._scratch(memory, (block, d), np.float32),  # the Hessian's two
        solver._scratch(memory, (max(block, sample), d), np.float32, start=-(-block * d // 2)),
        solver._scratch(memory, (1, rows))[0],  # the line search's two
        solver._scratch(memory, (1, rows), start=rows)[0],
    ]
    for view in views:
        assert view.flags.c_contiguous and view.flags.writeable
        assert view.size == 0 or np.shares_memory(view, memory)  # none fell back to a copy
    # the Hessian's two blocks never overlap each other, nor the line search's two
    assert not np.shares_memory(views[1], views[2])
    assert not np.shares_memory(views[3], views[4])
    # a buffer too short gives a fresh array, never an error
    short = solver._scratch(np.empty(1), (3, 2))
    assert short.shape == (3, 2) and not np.shares_memory(short, memory)


def _extended_gradient_norm(X, y, ridge, linear, theta, n):
    """The exact objective's gradient norm to about 1e-18 (long double; X, θ are exact)."""
    Xl = X.astype(np.longdouble)
    t = Xl @ theta.astype(np.longdouble)
    d1 = -y / (1 + np.exp(np.longdouble(1) * y * t))
    g = (d1 @ Xl) / np.longdouble(n) + np.longdouble(ridge) * theta + linear
    return float(np.sqrt(np.sum(g * g)))


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18, reason="needs an 80-bit long double")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sampled_steers_end_at_a_point_the_certificate_proves(seed, monkeypatch):
    """With the row sample (so the stretch and the third-order correction run), the
    released point's exact gradient is within the certified bound, and it within tol."""
    calls = {"stretch": 0, "corrected": 0}
    for name in calls:
        real = getattr(solver._Curvature, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(solver._Curvature, name, counted)
    rng = np.random.default_rng(seed)
    n, d = 40_000, 6
    X = rng.normal(size=(n, d)) / math.sqrt(2 * d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    beta = rng.normal(size=d) * 4
    y = np.where(rng.random(n) < special.expit(X @ beta), 1.0, -1.0)
    linear = rng.laplace(size=d) * 1e-3
    ridge, tol = 1e-4, 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no floating-point warning escapes the solver
        theta, bound = solver._minimise(X, y, LOGISTIC, ridge, linear, tol, 1000)
    assert calls["stretch"] == 1 and calls["corrected"] >= 1
    exact = _extended_gradient_norm(X, y, ridge, linear, theta, n)
    assert exact <= bound <= tol


def _near_optimum(seed=5, n=30_000, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(2 * d)
    beta = rng.normal(size=d) * 3
    y = np.where(rng.random(n) < special.expit(X @ beta), 1.0, -1.0)
    ridge, linear = 1e-4, np.zeros(d)
    theta, _ = solver._minimise(X, y, LOGISTIC, ridge, linear, 1e-12, 1000)
    return X, y, ridge, linear, theta


def _gradient(X, y, ridge, linear, theta):
    return LOGISTIC.slope(X @ theta, y) @ X / len(X) + ridge * theta + linear


def test_the_third_order_correction_cuts_newtons_residual():
    X, y, ridge, linear, optimum = _near_optimum()
    n = float(len(X))
    every = solver._sample_every(len(X), X.shape[1])
    assert every > 1  # the sample estimates φ‴
    curvature = solver._Curvature(X, y, LOGISTIC, every)
    rng = np.random.default_rng(6)
    for scale in (1e-2, 3e-2):
        theta = optimum + scale * rng.normal(size=X.shape[1])
        g = _gradient(X, y, ridge, linear, theta)
        t = X @ theta
        step = curvature.solve(t, n, ridge, g, full=True)
        fixed = curvature.corrected(t, step, n, float(g @ step))
        newton = np.linalg.norm(_gradient(X, y, ridge, linear, theta - step))
        chebyshev = np.linalg.norm(_gradient(X, y, ridge, linear, theta - fixed))
        assert chebyshev < newton / 4


def test_a_correction_too_large_to_trust_is_dropped(monkeypatch):
    X, y, ridge, linear, optimum = _near_optimum()
    n = float(len(X))
    curvature = solver._Curvature(X, y, LOGISTIC, solver._sample_every(len(X), X.shape[1]))
    theta = optimum + 0.05
    g = _gradient(X, y, ridge, linear, theta)
    t = X @ theta
    step = curvature.solve(t, n, ridge, g, full=True)
    monkeypatch.setattr(_Loss, "third", lambda self, t, y: np.full(np.shape(t), 1e9))
    assert curvature.corrected(t, step, n, float(g @ step)) is step
    monkeypatch.setattr(_Loss, "third", lambda self, t, y: np.full(np.shape(t), np.nan))
    assert curvature.corrected(t, step, n, float(g @ step)) is step


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
@pytest.mark.parametrize("tilt", [0.0, 1.0, 1e12])
def test_the_stretch_stays_in_its_bracket(loss, tilt):
    rng = np.random.default_rng(7)
    n, d = 40_000, 4
    X = rng.normal(size=(n, d)) / 3
    y = np.where(X[:, 0] + 0.1 * rng.normal(size=n) > 0, 1.0, -1.0)
    if loss.name == "huber":
        y = X @ np.ones(d)
    linear = tilt * rng.normal(size=d)
    every = solver._sample_every(n, d)
    curvature = solver._Curvature(X, y, loss, every)
    g = every * (loss.slope(np.zeros(n), y)[::every] @ X[::every]) / n + linear
    with np.errstate(all="ignore"):
        step = curvature.solve(np.zeros(n), float(n), 1e-4, g, full=False)
        s = curvature.stretch(step, float(n), 1e-4, linear)
    assert 1.0 <= s <= solver._STRETCH
    if loss.name != "logistic":
        assert s == 1.0
    elif tilt == 0.0:
        assert s > 1.0  # Newton from 0 falls short on separable-ish logistic data


def test_a_subnormal_row_raises_no_warning():
    """1/‖x‖ of a row of norm 1e-310 overflows to +inf (then clipped to 1/x_bound, the
    same rows as before); numpy's overflow warning was an observable of that one row."""
    X, sphere = _rows_for_scaling()
    for rows in (X, sphere):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for unit in (False, True):
                scale_rows(np.ascontiguousarray(rows), 1.0, unit)
    X = np.random.default_rng(8).normal(size=(50, 3)) / 3
    X[0] = [1e-310, 0, 0]
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ObjectivePerturbationClassifier(
            epsilon=1.0, x_bound=1.0, adjacency="replace_one", rng=9042
        ).fit(X, y)
