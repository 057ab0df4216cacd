"""PrivateStandardScaler: statistics released and charged, never read silently."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

import dpledger as dpl
from dpledger.algorithms import ADASSP, PrivateStandardScaler
from dpledger.errors import BudgetExceededError, DPLedgerError


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(1)
    return np.c_[rng.normal(40, 12, 30_000), rng.uniform(0, 5, 30_000)]


def _scaler(**kw):
    kw.setdefault("bounds", [(0, 100), (0, 5)])
    kw.setdefault("adjacency", "add_remove")
    return PrivateStandardScaler(epsilon=1.0, delta=1e-6, rng=0, **kw)


def test_released_statistics_are_accurate_and_charged_exactly(X):
    scaler = _scaler().fit(X)
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=0.02)
    np.testing.assert_allclose(scaler.scale_, X.std(axis=0), rtol=0.05)
    assert len(scaler.releases_) == 3  # sums, squares, count
    assert 1.0 * (1 - 1e-6) <= scaler.ledger_.spent[0] <= 1.0
    # the three releases share μ² equally: Δ/σ is the same for each
    ratios = [e.sensitivity / e.sigma for e in scaler.releases_]
    assert max(ratios) == pytest.approx(min(ratios), rel=1e-4)
    # and their joint guarantee is the fit's (1, 1e-6), by the accountant on its own
    assert dpl.accountant.epsilon(dpl.events.Composed(tuple(scaler.releases_)), 1e-6) <= 1.0
    out = scaler.transform(X)
    assert abs(out.mean()) < 0.05


def test_replace_one_keeps_the_count_public(X):
    scaler = _scaler(adjacency="replace_one").fit(X)
    assert len(scaler.releases_) == 2
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=0.05)


def test_bounds_are_declared_never_estimated(X):
    with pytest.raises(DPLedgerError, match="bounds"):
        _scaler(bounds=None).fit(X)
    with pytest.raises(DPLedgerError, match="lo < hi"):
        _scaler(bounds=(5, 1)).fit(X)
    with pytest.raises(DPLedgerError, match="one per"):
        _scaler(bounds=[(0, 1)] * 3).fit(X)


def test_a_scaler_in_a_pipeline_shares_the_regressions_ledger(X):
    rng = np.random.default_rng(2)
    y = np.clip((X[:, 0] - 40) / 40 + 0.1 * rng.normal(size=len(X)), -1, 1)
    study = dpl.Ledger(2.0, 1e-6)
    pipe = Pipeline(
        [
            ("scale", _scaler(ledger=study)),
            (
                "model",
                ADASSP(
                    epsilon=1.0,
                    delta=1e-6,
                    x_bound=4.0,
                    y_bound=1.0,
                    adjacency="add_remove",
                    ledger=study,
                    rng=0,
                ),
            ),
        ]
    )
    pipe.fit(X, y)
    assert len(study.receipts) == 6  # three statistics, then ADASSP's three releases
    assert study.spent[0] <= 2.0
    twin = clone(pipe)
    assert twin.named_steps["scale"].ledger is study
    with pytest.raises(BudgetExceededError):  # one budget for every copy, until it runs out
        for _ in range(10):
            clone(pipe).fit(X, y)
    assert len(study.receipts) % 3 == 0  # a refused step records nothing of its own
    assert study.spent[0] <= 2.0


def test_a_variance_the_noise_cannot_resolve_does_not_shrink_the_scale():
    # few rows: the noisy Σu²/n − mean² is often ≤ 0; the floor must follow the noise
    X = np.random.default_rng(4).uniform(0, 1, size=(267, 1))
    smallest = min(
        PrivateStandardScaler(
            epsilon=1.0, delta=1e-6, bounds=(0, 1), adjacency="add_remove", rng=seed
        )
        .fit(X)
        .scale_[0]
        for seed in range(20)
    )
    assert smallest > 0.01  # a thousandth of the range was the old floor
