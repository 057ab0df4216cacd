"""dpledger.model_selection: runs priced before the first fit, and private tuning.

* A cross-validation or grid search that does not fit the ledger is refused before any
  fit — no receipt, no completed fit — with its price in ε at the ledger's δ; a run that
  fits charges exactly the releases priced; a refusal is never a score (error_score).
* One-fit budgets and worker processes that cannot share the ledger are refused with a
  message that says what to do.
* private_random_search charges exactly the theorem's cost (Papernot & Steinke 2022,
  Cor. 3 / Thm 2), checked against independent computations, and refuses before any fit.
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import joblib
import numpy as np
import pytest
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

import dpledger as dpl
from dpledger import events as ev
from dpledger.accountant.rdp import rdp_to_epsilon
from dpledger.algorithms import ADASSP, NoisyGDClassifier, ObjectivePerturbationClassifier
from dpledger.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotApplicableError,
)
from dpledger.ledger.receipts import as_event
from dpledger.model_selection import (
    GridSearchCV,
    best_of_random_runs,
    cross_val_score,
    cross_validate,
    price_cross_validation,
    private_random_search,
    tuned_rdp_curve,
)

PRICE = re.compile(r"costs ε = [0-9.]+ at δ = [0-9.e-]+")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class CountingADASSP(ADASSP):
    """ADASSP that counts its *completed* fits (a preview never completes one)."""

    completed = 0

    def fit(self, X, y):
        out = super().fit(X, y)
        type(self).completed += 1
        return out


class CountingObjective(ObjectivePerturbationClassifier):
    completed = 0

    def fit(self, X, y):
        out = super().fit(X, y)
        type(self).completed += 1
        return out


@pytest.fixture
def data():
    rng = np.random.default_rng(31)
    X = rng.normal(size=(200, 3)) / 3
    y = np.clip(X @ np.array([0.5, -0.2, 0.1]) + 0.05 * rng.normal(size=200), -1, 1)
    return X, y


@pytest.fixture
def labelled():
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.55, 0.55, size=(600, 3))
    y = (X[:, 0] - 0.5 * X[:, 1] > 0).astype(float)
    return X, y


def _adassp(cls=ADASSP, **kw):
    return cls(epsilon=1, delta=1e-6, x_bound=1, y_bound=1, adjacency="add_remove", **kw)


def _objective(cls=ObjectivePerturbationClassifier, **kw):
    kw.setdefault("epsilon", 0.5)
    return cls(x_bound=1.0, adjacency="replace_one", fit_intercept=False, **kw)


# -- refused before any fit, with the price in ε --------------------------------------------


def test_a_5_fold_cv_that_does_not_fit_is_refused_before_any_fit(data):
    X, y = data
    CountingADASSP.completed = 0
    ledger = dpl.Ledger(2.0, 1e-5)
    with pytest.raises(BudgetExceededError, match="refused before any fit") as refused:
        cross_validate(_adassp(CountingADASSP), X, y, cv=5, ledger=ledger)
    message = str(refused.value)
    assert PRICE.search(message) and "remains" in message and "5 fits" in message
    assert ledger.receipts == ()
    assert CountingADASSP.completed == 0
    epsilon, delta = refused.value.requested
    assert epsilon > 2.0 and delta == 1e-5  # the run's price, in ε at the ledger's δ
    # the price states the same ε as price_cross_validation, which refuses nothing
    price = price_cross_validation(_adassp(), X, y, cv=5, ledger=ledger)
    assert not price.fits_budget and price.fits == 5 and price.releases == 15
    assert price.epsilon == epsilon and price.remaining_epsilon == 2.0
    assert f"costs ε = {dpl._format.up(price.epsilon, 4)}" in message


def test_a_3x5_grid_that_does_not_fit_is_refused_before_any_fit(data):
    X, y = data
    CountingADASSP.completed = 0
    ledger = dpl.Ledger(3.0, 1e-5)
    search = GridSearchCV(_adassp(CountingADASSP), {"rho": [0.05, 0.1, 0.2]}, cv=5, ledger=ledger)
    with pytest.raises(BudgetExceededError, match="refused before any fit") as refused:
        search.fit(X, y)
    assert PRICE.search(str(refused.value)) and "16 fits" in str(refused.value)  # 3×5 + refit
    assert ledger.receipts == ()
    assert CountingADASSP.completed == 0
    assert not hasattr(search, "cv_results_")
    # without the refit: 15 fits
    no_refit = GridSearchCV(_adassp(ledger=ledger), {"rho": [0.05, 0.1, 0.2]}, cv=5, refit=False)
    price = no_refit.price(X, y)
    assert price.fits == 15 and not price.fits_budget and ledger.receipts == ()


def test_a_price_changes_nothing(data):
    X, y = data
    ledger = dpl.Ledger(3.0, 1e-5)
    price_cross_validation(_adassp(), X, y, cv=5, ledger=ledger)
    GridSearchCV(_adassp(), {"rho": [0.1, 0.2]}, cv=3, ledger=ledger).price(X, y)
    assert ledger.receipts == () and ledger.accountant == "auto"  # not even decided


def test_a_cv_that_fits_charges_exactly_the_releases_priced(data):
    X, y = data
    ledger = dpl.Ledger(3.0, 1e-5)
    model = _adassp(rng=0)
    price = price_cross_validation(model, X, y, cv=5, ledger=ledger)
    assert price.fits_budget and ledger.receipts == ()
    scores = cross_val_score(model, X, y, cv=5, ledger=ledger)
    assert scores.shape == (5,) and np.all(np.isfinite(scores))
    charged = [r.event for r in ledger.receipts]
    priced = [as_event(m, None, None) for fit in price.schedules for m in fit]
    assert charged == priced
    # the ledger reports what was priced (a GDP ledger converts at δ less its 2⁻³⁰δ reserve
    # for discrete-Gaussian slack: the last digits may differ; the printed price rounds up)
    assert ledger.spent[0] == pytest.approx(price.epsilon, rel=1e-9)
    assert ledger.spent[0] <= float(dpl._format.up(price.epsilon, 4))
    assert model.get_params()["ledger"] is None  # the clones charged `ledger`, not the model


def test_a_grid_that_fits_runs_on_the_priced_folds_and_charges_them(data):
    X, y = data
    ledger = dpl.Ledger(6.0, 1e-4)
    search = GridSearchCV(_adassp(rng=1), {"rho": [0.05, 0.2]}, cv=3, ledger=ledger)
    search.fit(X, y)
    assert search.price_.fits == 7 and search.price_.fits_budget
    assert len(ledger.receipts) == 7 * 3
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.ledger_ is ledger
    assert search.estimator.get_params()["ledger"] is None and search.cv == 3  # restored


def test_cross_validate_returns_scikit_learns_result(data):
    X, y = data
    ledger = dpl.Ledger(3.0, 1e-5)
    result = cross_validate(
        _adassp(), X, y, cv=4, ledger=ledger, return_estimator=True, return_indices=True
    )
    assert set(result) >= {"test_score", "fit_time", "score_time", "estimator", "indices"}
    assert all(e.ledger_ is ledger for e in result["estimator"])


# -- a refusal is never a score ------------------------------------------------------------


@pytest.mark.parametrize("error_score", [np.nan, 0.0, -1])
def test_an_error_score_that_would_swallow_a_refusal_is_refused(data, error_score):
    X, y = data
    CountingADASSP.completed = 0
    ledger = dpl.Ledger(3.0, 1e-5)
    with pytest.raises(InvalidArgumentError, match="error_score"):
        cross_validate(_adassp(CountingADASSP), X, y, ledger=ledger, error_score=error_score)
    with pytest.raises(InvalidArgumentError, match="error_score"):
        GridSearchCV(
            _adassp(CountingADASSP), {"rho": [0.1]}, ledger=ledger, error_score=error_score
        ).fit(X, y)
    assert ledger.receipts == () and CountingADASSP.completed == 0


def test_no_nan_from_a_refusal(data):
    X, y = data
    ledger = dpl.Ledger(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        cross_val_score(_adassp(), X, y, cv=5, ledger=ledger)
    with pytest.raises(BudgetExceededError):  # the one-fit budget: refused, not 4 nan scores
        cross_val_score(_adassp(), X, y, cv=5)


# -- one-fit budgets, ledgers, pipelines ----------------------------------------------------


def test_a_one_fit_budget_is_refused_with_a_message_to_pass_a_ledger(data):
    X, y = data
    CountingADASSP.completed = 0
    model = _adassp(CountingADASSP)
    with pytest.raises(BudgetExceededError, match=r"ledger=Ledger\(") as refused:
        cross_validate(model, X, y, cv=5)
    assert "5 times" in str(refused.value) and "ε = 5" in str(refused.value)
    with pytest.raises(BudgetExceededError, match="16 times"):
        GridSearchCV(model, {"rho": [0.05, 0.1, 0.2]}, cv=5).fit(X, y)
    assert CountingADASSP.completed == 0
    model.fit(X, y)  # the one-fit budget was not touched
    assert CountingADASSP.completed == 1


def test_two_different_ledgers_and_non_estimators_are_refused(data):
    X, y = data
    with pytest.raises(InvalidArgumentError, match="another ledger"):
        cross_validate(_adassp(ledger=dpl.Ledger(9.0, 1e-5)), X, y, ledger=dpl.Ledger(9.0, 1e-5))
    pipe = Pipeline([("id", FunctionTransformer()), ("model", _adassp())])
    with pytest.raises(InvalidArgumentTypeError, match="Pipeline"):
        cross_validate(pipe, X, y, ledger=dpl.Ledger(9.0, 1e-5))
    with pytest.raises(InvalidArgumentError, match="may not set `ledger`"):
        GridSearchCV(_adassp(), {"ledger": [None]}, ledger=dpl.Ledger(9.0, 1e-5)).fit(X, y)


# -- n_jobs -------------------------------------------------------------------------------


def test_processes_with_an_in_memory_ledger_are_refused_saying_why(data):
    X, y = data
    CountingADASSP.completed = 0
    ledger = dpl.Ledger(9.0, 1e-5)
    with pytest.raises(InvalidArgumentError, match=r"in memory.*path=") as refused:
        cross_validate(_adassp(CountingADASSP), X, y, ledger=ledger, n_jobs=2)
    assert "threading" in str(refused.value)
    with pytest.raises(InvalidArgumentError, match="in memory"):
        GridSearchCV(_adassp(), {"rho": [0.1]}, ledger=ledger, n_jobs=2).fit(X, y)
    assert ledger.receipts == () and CountingADASSP.completed == 0


@pytest.mark.slow
def test_processes_with_a_seeded_file_ledger_draw_apart(data, tmp_path):
    """Seeded fits in worker processes on a file ledger: allowed since the store hands
    each opening its own number (two workers at one head with one seed draw different
    noise: tests/ledger/test_reservation.py); every fold is charged to the one file."""
    X, y = data
    path = tmp_path / "study.ledger"
    ledger = dpl.Ledger(9.0, 1e-5, path=path)
    scores = cross_val_score(_adassp(rng=0), X, y, cv=5, ledger=ledger, n_jobs=2)
    assert np.all(np.isfinite(scores))
    assert len(dpl.Ledger.open(path).receipts) == 15


def test_processes_chosen_by_joblibs_context_are_refused_too(data):
    X, y = data
    ledger = dpl.Ledger(9.0, 1e-5)
    with (
        joblib.parallel_config(backend="loky", n_jobs=2),
        pytest.raises(InvalidArgumentError, match="in memory"),
    ):
        cross_validate(_adassp(), X, y, ledger=ledger)  # n_jobs=None: the context decides
    assert ledger.receipts == ()


def test_threads_share_an_in_memory_ledger(data):
    X, y = data
    ledger = dpl.Ledger(3.0, 1e-5)
    with joblib.parallel_config(backend="threading"):
        scores = cross_val_score(_adassp(rng=3), X, y, cv=5, ledger=ledger, n_jobs=2)
    assert np.all(np.isfinite(scores)) and len(ledger.receipts) == 15


@pytest.mark.slow
def test_processes_share_a_file_ledger(data, tmp_path):
    X, y = data
    path = tmp_path / "study.ledger"
    ledger = dpl.Ledger(3.0, 1e-5, path=path)
    scores = cross_val_score(_adassp(), X, y, cv=5, ledger=ledger, n_jobs=2)
    assert np.all(np.isfinite(scores))
    assert len(dpl.Ledger.open(path).receipts) == 15


# -- private tuning ------------------------------------------------------------------------


def test_private_tuning_charges_exactly_pure_dp_3_epsilon(labelled):
    X, y = labelled
    ledger = dpl.Ledger(2.0, adjacency="replace_one")
    grid = {"l2_regularization": [1e-3, 1e-2, 1e-1], "epsilon": [0.25, 0.4]}
    result = private_random_search(_objective(), grid, X, y, ledger=ledger, rng=7)
    expected = float(Fraction(0.4) * 3)  # Cor. 3 with η = 1: 3·max ε, rounded up
    assert expected >= 1.2
    assert result.event == ev.PureDP(expected) and result.epsilon == expected
    assert result.delta == 0.0 and "Cor. 3" in result.theorem
    assert [r.event for r in ledger.receipts] == [ev.PureDP(expected)]
    assert ledger.spent == (expected, 0.0)
    assert result.best_params in [
        {"epsilon": e, "l2_regularization": lam} for e in (0.25, 0.4) for lam in (1e-3, 1e-2, 1e-1)
    ]
    assert result.best_estimator.score(X, y) > 0.6
    assert isinstance(result.best_score, int)
    # the released model's ledger is the one charged (its run's own ledger is not released)
    assert result.best_estimator.ledger_ is ledger


def test_private_tuning_without_validation_rows_still_runs(labelled):
    X, y = labelled
    ledger = dpl.Ledger(2.0, adjacency="replace_one")
    result = private_random_search(
        _objective(), {"l2_regularization": [1e-2]}, X[:50], y[:50], ledger=ledger,
        validation_fraction=1e-12, rng=4,
    )  # fmt: skip
    assert isinstance(result.best_score, int) and ledger.spent == (1.5, 0.0)


def test_private_tuning_charges_a_larger_score_epsilon(labelled):
    X, y = labelled
    ledger = dpl.Ledger(3.0, adjacency="replace_one")
    result = private_random_search(
        _objective(), {"l2_regularization": [1e-2]}, X, y, ledger=ledger, score_epsilon=0.8, rng=1
    )
    assert result.epsilon == pytest.approx(2.4) and result.epsilon >= 3 * 0.8


def test_private_tuning_that_does_not_fit_is_refused_before_any_fit(labelled):
    X, y = labelled
    CountingObjective.completed = 0
    ledger = dpl.Ledger(1.0, adjacency="replace_one")
    with pytest.raises(BudgetExceededError, match="refused before any fit") as refused:
        private_random_search(
            _objective(CountingObjective), {"l2_regularization": [1e-2, 1e-1]}, X, y,
            ledger=ledger, rng=0,
        )  # fmt: skip
    assert "costs ε = 1.5" in str(refused.value) and "Nothing was fitted" in str(refused.value)
    assert ledger.receipts == () and CountingObjective.completed == 0


def test_private_tuning_refuses_bad_arguments_before_any_fit(labelled):
    X, y = labelled
    ledger = dpl.Ledger(5.0, adjacency="replace_one")
    grid = {"l2_regularization": [1e-2]}
    with pytest.raises(InvalidArgumentError, match="expected_runs"):
        private_random_search(_objective(), grid, X, y, ledger=ledger, expected_runs=0.5)
    with pytest.raises(InvalidArgumentError, match="validation_fraction"):
        private_random_search(_objective(), grid, X, y, ledger=ledger, validation_fraction=1.0)
    with pytest.raises(InvalidArgumentError, match="may not set"):
        private_random_search(_objective(), {"rng": [1]}, X, y, ledger=ledger)
    with pytest.raises(InvalidArgumentError, match=r"\['C'\], which"):
        private_random_search(_objective(), {"C": [1.0]}, X, y, ledger=ledger)
    with pytest.raises(InvalidArgumentError, match="adjacency"):
        private_random_search(_objective(), grid, X, y, ledger=dpl.Ledger(5.0))
    with pytest.raises(InvalidArgumentError, match="has no use"):
        private_random_search(_objective(), grid, X, y, ledger=ledger, delta=1e-6)
    with pytest.raises(InvalidArgumentTypeError, match="classifier"):
        private_random_search(_adassp(), {"rho": [0.1]}, X, y, ledger=ledger)
    with pytest.raises(InvalidArgumentTypeError, match="ledger"):
        private_random_search(_objective(), grid, X, y)
    assert ledger.receipts == ()


def _noisy_gd(**kw):
    return NoisyGDClassifier(
        epsilon=1.0, delta=1e-6, x_bound=1.0, adjacency="add_remove", data_size=600,
        steps=20, **kw,
    )  # fmt: skip


def test_private_tuning_of_approximate_runs_charges_theorem_2(labelled):
    X, y = labelled
    ledger = dpl.Ledger(8.0, 1e-5, accountant="basic")
    grid = {"learning_rate": [0.5, 1.0]}
    result = private_random_search(
        _noisy_gd(), grid, X, y, ledger=ledger, expected_runs=5, delta=5e-6, rng=2
    )
    assert isinstance(result.event, ev.ApproxDP) and result.event.delta == 5e-6
    assert "Thm 2" in result.theorem
    assert ledger.spent == (result.epsilon, 5e-6)
    # independently: the fits' events (all candidates release the same schedule here), the
    # score's pure ε (its default: ε_s²/2 = the fits' ρ), Theorem 2 by hand
    fit_events = tuple(result.best_estimator.releases_)
    rho = sum(
        (e.sensitivity / e.sigma) ** 2 / 2 for e in fit_events if isinstance(e, ev.DiscreteGaussian)
    )
    assert rho > 0 and all(isinstance(e, ev.DiscreteGaussian) for e in fit_events)
    eps_s = math.sqrt(2 * rho)
    log_mean = math.log(5.0)

    def base(alpha):  # max(ρα, the ε_s-DP release's ε_s²α/2 = ρα, capped by ε_s)
        return rho * alpha

    hats = np.geomspace(1.0 + 2.0**-10, 2.0**20, 4000)
    c = 2 * min((1 - 1 / a) * base(a) + log_mean / a for a in hats)
    by_hand = rdp_to_epsilon(lambda a: base(a) + c + log_mean / (a - 1), 5e-6)
    # the charge is the theorem's (its α̂ grid is coarser than this one: never below it)
    assert by_hand * (1 - 1e-12) <= result.epsilon <= by_hand * (1 + 2e-3)
    assert eps_s > 0
    # far below composing E[K] = 5 runs, let alone the 2 × 5-fold grid's 11 fits
    five = dpl.accountant.epsilon(ev.Composed(fit_events) * 5, 5e-6)
    assert result.epsilon < five


def test_approximate_runs_need_a_delta_and_a_ledger_that_can_account_for_it(labelled):
    X, y = labelled
    with pytest.raises(InvalidArgumentError, match="pass `delta=`"):
        private_random_search(
            _noisy_gd(), {"steps": [20]}, X, y, ledger=dpl.Ledger(8.0, 1e-5), rng=0
        )
    zcdp = dpl.Ledger(8.0, 1e-5, accountant="zcdp")
    with pytest.raises(NotApplicableError, match="Nothing was fitted"):
        private_random_search(_noisy_gd(), {"steps": [20]}, X, y, ledger=zcdp, delta=5e-6)
    assert zcdp.receipts == ()


def test_the_tuned_curve_of_a_pure_base_tends_to_3_epsilon():
    # Theorem 2 with a constant curve R = ε (pure ε-DP): ε′(α) → 3ε as α → ∞ (Corollary 3)
    epsilon = 0.7
    tuned = tuned_rdp_curve(lambda alpha: epsilon, expected_runs=10.0)
    assert tuned(1e12) == pytest.approx(3 * epsilon, rel=1e-4)
    assert tuned(1e12) >= 3 * epsilon
    assert tuned(1.0) == math.inf and tuned(2.0) > tuned(1e3)


# -- the theorem on a toy base, exactly -----------------------------------------------------


def _best_of_geometric_cdf(cdf: np.ndarray, gamma: float) -> np.ndarray:
    """P[max of K i.i.d. ≤ y] = Σ_k γ(1−γ)^{k−1}F(y)^k = γF/(1 − (1−γ)F), K ~ Geom(γ)."""
    return gamma * cdf / (1 - (1 - gamma) * cdf)


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1, 0.01])
def test_corollary_3_holds_exactly_on_a_toy_base(gamma):
    # Q: an ε-DP count (truncated geometric noise on {0..4}) on neighbours 2 and 3; the
    # best of K ~ Geom(γ) runs has an exact distribution, whose ratios stay within e^{3ε}
    epsilon = 0.6
    support = np.arange(5)

    def q(value):  # a truncated Laplace of parameter ε/2 (weights ε/2, normaliser ε/2): ε-DP
        weights = np.exp(-(epsilon / 2) * np.abs(support - value))
        return weights / weights.sum()

    p, p_prime = q(2), q(3)
    assert np.max(np.abs(np.log(p / p_prime))) <= epsilon + 1e-12
    a = np.diff(_best_of_geometric_cdf(np.cumsum(p), gamma), prepend=0.0)
    b = np.diff(_best_of_geometric_cdf(np.cumsum(p_prime), gamma), prepend=0.0)
    assert np.isclose(a.sum(), 1.0) and np.isclose(b.sum(), 1.0)
    assert np.max(np.abs(np.log(a / b))) <= 3 * epsilon + 1e-12


# -- the selection the search implements ---------------------------------------------------


def _toy_run(rng, value, epsilon=0.6, size=2_000_000):
    """A toy ε-DP run: v ~ truncated Laplace(ε/2) around ``value`` on {0..4}; score = v.

    (Draws come from a buffer drawn at once: the selection's own K comes from ``rng``.)
    """
    support = np.arange(5)
    weights = np.exp(-(epsilon / 2) * np.abs(support - value))
    weights /= weights.sum()
    buffer = iter(rng.choice(support, p=weights, size=size).tolist())

    def run():
        v = next(buffer)
        return v, v

    return run, weights


@pytest.mark.parametrize("expected_runs", [1.0, 3.0])
def test_the_selection_has_the_best_of_k_distribution(expected_runs):
    # best_of_random_runs (K ~ Geom(1/E[K]), the first best run) against the exact law of
    # the best of K ~ D_{1,γ} runs that Corollary 3 bounds
    rng = np.random.default_rng(11)
    run, weights = _toy_run(rng, 2)
    draws = 20_000
    counts = np.bincount(
        [best_of_random_runs(run, expected_runs, rng)[1] for _ in range(draws)], minlength=5
    )
    exact = np.diff(_best_of_geometric_cdf(np.cumsum(weights), 1 / expected_runs), prepend=0.0)
    sd = np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(counts / draws - exact) <= 5 * sd + 1e-12)


def test_ties_go_to_a_uniformly_random_run():
    # outputs with equal scores: the first of them is released, which by exchangeability is
    # a uniformly random one (the tie-break the theorems' total order needs)
    rng = np.random.default_rng(3)

    def run():
        return 0, int(rng.integers(2))  # every score ties; the output is a fair coin

    draws = 20_000
    ones = sum(best_of_random_runs(run, 5.0, rng)[1] for _ in range(draws))
    assert abs(ones / draws - 0.5) < 5 * 0.5 / math.sqrt(draws)


@pytest.mark.slow
def test_the_selection_stays_within_3_epsilon_empirically():
    # neighbouring toy runs (value 2 vs 3): the empirical law of the selection, with
    # 4·10⁵ draws, stays within 3ε of its neighbour's (Corollary 3) and matches the exact law
    epsilon, draws, expected_runs = 0.6, 400_000, 4.0
    laws = []
    for value in (2, 3):
        rng = np.random.default_rng(100 + value)
        run, weights = _toy_run(rng, value, epsilon, size=8 * int(expected_runs) * draws)
        out = np.bincount(
            [best_of_random_runs(run, expected_runs, rng)[1] for _ in range(draws)], minlength=5
        )
        law = out / draws
        exact = np.diff(_best_of_geometric_cdf(np.cumsum(weights), 1 / expected_runs), prepend=0)
        assert np.all(np.abs(law - exact) <= 5 * np.sqrt(exact * (1 - exact) / draws) + 1e-12)
        laws.append(law)
    ratio = np.abs(np.log(laws[0] / laws[1]))
    sd = np.sqrt(2 / (np.minimum(laws[0], laws[1]) * draws))  # delta method on log p
    assert np.all(ratio <= 3 * epsilon + 5 * sd)
