"""Noisy gradient descent: the run calibrated exactly, every step charged, sampling by PLD."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dpledger as dpl
from dpledger import events as ev
from dpledger.algorithms import NoisyGD, NoisyGDClassifier
from tests import _reference as ref
from tests._data import noisy_linear, unit_rows

warnings.filterwarnings("ignore", message="Gaussian with safe=False")


def _data(n=3000, d=3, seed=0):
    X, rng = unit_rows(n, d, seed)
    theta = np.linspace(0.6, -0.3, d)
    return X, noisy_linear(X, theta, rng), theta, rng


@pytest.mark.parametrize("adjacency", ["add_remove", "replace_one"])
def test_full_batch_run_is_calibrated_exactly_by_gaussian_dp(adjacency):
    X, y, theta, _ = _data()
    model = NoisyGD(
        epsilon=1.0,
        delta=1e-5,
        x_bound=1,
        y_bound=1,
        adjacency=adjacency,
        steps=40,
        clip=0.5,
        data_size=3000,
        safe_noise=False,
        rng=0,
        fit_intercept=False,
    ).fit(X, y)
    assert len(model.releases_) == 40 and len(model.ledger_.receipts) == 41  # plan + steps
    sensitivity = 0.5 * (2 if adjacency == "replace_one" else 1)
    mu = math.sqrt(40) * sensitivity / model.sigma_  # T Gaussian steps: √T·Δ/σ (GDP)
    assert float(ref.gaussian_epsilon(1e-5, mu)) <= 1.0 * (1 + 1e-12)
    assert float(ref.gaussian_epsilon(1e-5, mu)) >= 1.0 * (1 - 1e-6)
    np.testing.assert_allclose(model.coef_, theta, atol=0.1)


def test_poisson_sampled_steps_are_charged_as_sampled_and_calibrated_by_pld():
    X, y, theta, _ = _data(n=20_000)
    model = NoisyGD(
        epsilon=1.0,
        delta=1e-5,
        x_bound=1,
        y_bound=1,
        adjacency="add_remove",
        steps=300,
        sampling_rate=0.02,
        data_size=20_000,
        learning_rate=2.0,
        safe_noise=False,
        rng=1,
        fit_intercept=False,
    ).fit(X, y)
    assert all(type(e).__name__ == "PoissonSampled" for e in model.releases_)
    sigma = dpl.calibrate.gaussian_sigma(1.0, 1e-5, count=300, sampling_rate=0.02)
    assert model.sigma_ == pytest.approx(sigma, rel=1e-3)
    run = dpl.events.PoissonSampled(dpl.events.Gaussian(model.sigma_), 0.02) * 300
    assert dpl.accountant.epsilon(run, 1e-5) <= 1.0
    np.testing.assert_allclose(model.coef_, theta, atol=0.15)


def test_bad_settings_are_refused_before_anything_is_spent():
    X, y, _, _ = _data(n=200)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1)
    ledger = dpl.Ledger(5.0, 1e-5)
    with pytest.raises(dpl.InvalidArgumentError, match="data_size"):
        NoisyGD(**kw, adjacency="add_remove", ledger=ledger).fit(X, y)
    with pytest.raises(dpl.InvalidArgumentError, match="add/remove"):
        NoisyGD(**kw, adjacency="replace_one", sampling_rate=0.1, safe_noise=False).fit(X, y)
    assert ledger.receipts == ()


def test_sampled_steps_with_safe_noise_cost_what_float_noise_costs():
    """Poisson-sampled discrete Gaussians are composed at the continuous price (issue 33:
    they were refused): the same calibrated σ as float noise, up to the grid's rounding."""
    X, y, _, _ = _data(n=400)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1, adjacency="add_remove")
    kw.update(steps=20, data_size=400, sampling_rate=0.1, rng=0)
    safe = NoisyGD(**kw).fit(X, y)
    plain = NoisyGD(**kw, safe_noise=False).fit(X, y)
    (first, *_) = safe.releases_
    assert type(first.event) is ev.DiscreteGaussian and first.rate == 0.1
    safe_ratio = first.event.sigma / first.event.sensitivity
    plain_ratio = plain.releases_[0].event.sigma / plain.releases_[0].event.sensitivity
    assert safe_ratio == pytest.approx(plain_ratio, rel=1e-5)
    assert safe.ledger_.spent[0] <= 1.0


def test_noisy_gd_classifier_matches_logistic_regression_at_large_epsilon():
    from sklearn.linear_model import LogisticRegression

    X, _, theta, rng = _data(n=20_000, seed=3)
    labels = (rng.random(len(X)) < 1 / (1 + np.exp(-4 * X @ theta))).astype(int)
    model = NoisyGDClassifier(
        epsilon=5.0,
        delta=1e-5,
        x_bound=1,
        adjacency="replace_one",
        steps=60,
        learning_rate=4.0,
        rng=2,
    ).fit(X, labels)
    assert model.score(X, labels) >= LogisticRegression().fit(X, labels).score(X, labels) - 0.02
    assert model.ledger_.spent[0] <= 5.0


def test_dask_input_is_refused_clearly():
    da = pytest.importorskip("dask.array")
    X, y, _, _ = _data(n=100)
    with pytest.raises(dpl.InvalidArgumentError, match="in-memory"):
        NoisyGD(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1, adjacency="replace_one").fit(
            da.from_array(X, chunks=50), y
        )


# ---------------------------------------------------------------- review mends (helper-29)


def test_per_example_clipping_holds_when_the_squares_underflow():
    """Gradients with entries 1e-170: their squares underflowed, the norm read 0 and the
    rows were not clipped (1.4e120 × the clip). Now a clip below 2⁻⁹⁰⁰ is refused, and
    the clipping itself uses exact norms: checked on the shared helper in rationals."""
    from fractions import Fraction

    from dpledger.algorithms._rows import clip_rows as _clip_rows

    grads = np.full((50, 2), 1e-170)
    grads[::2] *= 3.0
    for clip in (1e-171, 2.0**-890):
        for row in _clip_rows(grads, clip, "l2"):
            assert sum(Fraction(float(v)) ** 2 for v in row) <= Fraction(clip) ** 2
    with pytest.raises(dpl.InvalidArgumentError, match="clip"):
        NoisyGD(epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, adjacency="replace_one",
                steps=1, clip=1e-290, safe_noise=False).fit(grads, np.ones(50))  # fmt: skip


def test_a_diverging_ridge_step_is_refused_before_any_charge():
    """learning_rate·alpha ≥ 2 doubled w each step until it overflowed: the fit raised
    after 1,022 charged steps. Refused up front; a huge learning rate without a ridge runs
    to the end (the iterate is projected onto a public ball, gradients that overflow are
    dropped per row), every step charged."""
    X = np.random.default_rng(0).normal(size=(50, 2)) / 3
    y = np.clip(X[:, 0], -1, 1)
    ledger = dpl.Ledger(10.0, 1e-5, adjacency="replace_one")
    with pytest.raises(dpl.InvalidArgumentError, match="alpha"):
        NoisyGD(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1, adjacency="replace_one",
                steps=50, alpha=3.0, learning_rate=1.0, ledger=ledger).fit(X, y)  # fmt: skip
    assert ledger.receipts == ()
    model = NoisyGD(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1, adjacency="replace_one",
                    steps=5, learning_rate=1e300, ledger=ledger, rng=0).fit(X, y)  # fmt: skip
    assert len(ledger.receipts) == 5 and np.all(np.isfinite(model.coef_))


def test_a_sampling_rate_of_one_is_full_batches_under_either_adjacency():
    """rate 1 samples every row every step: the full-batch run (it was refused under
    replace-one and with safe noise, with messages about Poisson sampling)."""
    X = np.random.default_rng(1).normal(size=(40, 2)) / 3
    y = np.clip(X[:, 0], -1, 1)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1, y_bound=1, adjacency="replace_one", steps=5)
    full = NoisyGD(**kw, rng=3).fit(X, y)
    one = NoisyGD(**kw, sampling_rate=1.0, rng=3).fit(X, y)
    np.testing.assert_array_equal(full.coef_, one.coef_)
    assert full.sigma_ == one.sigma_


@pytest.mark.parametrize("clip", [0.1, 1.0, 3.0 * 2.0**-900])
def test_every_clipped_gradient_summed_has_exact_norm_at_most_clip(clip):
    # the step's sum Σ bᵢx̂ᵢ (_data.ClippedRowSums): each term's EXACT norm, in rational
    # arithmetic, is ≤ clip whatever the row scale (zero, subnormal, huge) and residual
    from fractions import Fraction

    from dpledger.algorithms._data import ClippedRowSums

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5)) * rng.choice([1e-310, 1e-5, 1.0, 1e5], size=(400, 1))
    X[0] = 0.0
    X[1] = np.array([1.0, 1.0, 1.0, 1.0, 1.0]) / math.sqrt(5)  # on the unit sphere
    r = rng.normal(size=400) * rng.choice([1e-3, 1.0, 1e8], size=400)
    r[2], r[3] = np.nan, np.inf
    sums = ClippedRowSums(X, clip)
    B = sums.weights(r)
    M = sums._grid.reshape(-1, 5)[:400]
    limit = Fraction(clip) ** 2
    for i in range(400):
        norm2 = Fraction(int(B[i])) ** 2 * sum(Fraction(int(m)) ** 2 for m in M[i])
        assert norm2 * sums.unit**2 <= limit, i
    assert B[0] == B[2] == B[3] == 0.0  # no row, a NaN and an infinite residual: nothing
    # the sum is the exact sum of those terms, and close to the float clipped sum
    exact = (
        sum(
            (
                Fraction(int(b)) * np.array([Fraction(int(m)) for m in row])
                for b, row in zip(B, M, strict=True)
            ),
            np.zeros(5, dtype=object),
        )
        * sums.unit
    )
    assert list(sums.sum(r).fractions()) == list(exact)
    G = X * np.where(np.isfinite(r), r, 0.0)[:, None]
    with np.errstate(all="ignore"):
        G *= np.minimum(1.0, clip / np.linalg.norm(G, axis=1))[:, None]
    G[~np.isfinite(G).all(axis=1)] = 0.0
    np.testing.assert_allclose(np.asarray(sums.sum(r), float), G.sum(0), atol=400 * 2e-6 * clip)
    # a subset of the rows (Poisson sampling) sums those rows' terms only
    rows = np.arange(0, 400, 3)
    subset = ClippedRowSums(X[rows], clip).sum(r[rows])
    assert list(sums.sum(r[rows], rows).fractions()) == list(subset.fractions())
