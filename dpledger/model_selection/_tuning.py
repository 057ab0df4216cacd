"""Private hyperparameter tuning: a random number of private runs, only the best released.

:func:`private_random_search` is random search with a random number of runs, analysed by
Papernot & Steinke (2022), "Hyperparameter Tuning with Rényi Differential Privacy"
(ICLR 2022, arXiv 2110.03620), which extends Liu & Talwar (2019), "Private Selection
from Private Candidates" (STOC 2019, arXiv 1811.07971).

**The base run Q.** Before anything runs, each row is put in a *validation* part with
probability ``validation_fraction``, independently of everything else (the same split
for every run). One run of Q then

1. picks a candidate θ uniformly at random from the grid,
2. fits the estimator with θ on the *training* part, on a planned ledger of its own
   (ε_θ, δ_θ) (``ledger=None``: the fit is (ε_θ, δ_θ)-DP by the estimator's contract),
3. counts the validation rows the model classifies correctly and releases that count
   plus discrete Laplace noise of scale 1/ε_s (sensitivity 1 under either adjacency:
   adding, removing or replacing one row changes the count by at most one), and
4. outputs (θ, model, noisy count).

*Q is DP.* Fix the split's coins. Neighbouring data sets differ in one row, which lies
in exactly one part (coupling the coins of the common rows; under replace-one the
replaced row keeps its coin): either the training part differs — the model is
(ε_θ, δ_θ)-DP and the count is post-processing of it and of the unchanged validation
rows — or the validation part does — the model's distribution is unchanged and the count
is ε_s-DP. So Q is (max(ε_θ, ε_s), δ_θ)-DP, and at every order α its Rényi divergence is
at most max(R_θ(α), R_s(α)); picking θ at random keeps the largest of these over the grid
(a mixture with the same weights on both sides: Rényi divergence is jointly
quasi-convex, van Erven & Harremoës 2014, Thm 13; pure DP holds pointwise). Averaging
over the coins the same way keeps every bound below.

**The tuning A.** Draw K from the geometric distribution P[K = k] = γ(1 − γ)^{k−1},
k ≥ 1, mean E[K] = 1/γ (Papernot & Steinke's truncated negative binomial D_{η,γ} with
η = 1); run Q K times independently; release only the run with the highest noisy count
(the first such run on a tie — by exchangeability of the i.i.d. runs, the same
distribution as breaking ties by an independent uniform U attached to each run, a total
order on Q's outputs augmented by U, which is the setting of the theorems). K, the other
runs and their scores are never released.

**What is charged.**

* All candidates pure (δ_θ = 0): Papernot & Steinke 2022, **Corollary 3**: if Q is
  ε-DP and K ~ D_{η,γ}, A is ((2 + η)ε)-DP; with η = 1, A is **3ε-DP** — Liu & Talwar's
  bound for geometric random stopping. The ledger is charged ``PureDP(3ε)`` with
  ε = max(max_θ ε_θ, ε_s), independently of E[K]. (ε_s defaults to max_θ ε_θ: the
  score then costs nothing more.)
* Otherwise: Papernot & Steinke 2022, **Theorem 2**: if Q is (α, ε)-RDP and
  (α̂, ε̂)-RDP (α > 1, α̂ ≥ 1) and K ~ D_{η,γ}, then A is (α, ε′)-RDP with

      ε′ = ε + (1 + η)(1 − 1/α̂)ε̂ + (1 + η)·log(1/γ)/α̂ + log(E[K])/(α − 1).

  With η = 1 and E[K] = 1/γ: ε′(α) = R(α) + 2·min_α̂ [(1 − 1/α̂)R(α̂) + log E[K]/α̂]
  + log E[K]/(α − 1), R the base curve max(max_θ R_θ, R_s) of the fits' releases
  (:func:`dpledger.accountant.rdp.rdp_curve`) and of the score; the minimum is taken
  over a fixed grid of α̂ > 1 (each α̂ is a valid instance). ε′ is converted to (ε, δ)
  at the given ``delta`` (Balle et al. 2020, Thm 21, minimised over α:
  :func:`dpledger.accountant.rdp.rdp_to_epsilon`) and the ledger is charged
  ``ApproxDP(ε, delta)`` — which only a basic-composition ledger accepts.

The charge is computed and checked against the ledger before any fit; a tuning that
does not fit is refused having fitted and charged nothing. Then the ledger is charged
(before anything is released) and the runs are made.

**K stays secret.** The theorems bound the release of the best run alone: the number
of runs K, the index of the best and the other runs are not part of it (for a known
number of runs, only composition bounds the best of them: up to K times a run's ε). The
search releases none of them; but its running time grows with K, so whoever the
guarantee is meant to hold against must not time it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from dpledger._format import down, up
from dpledger._numerics import mul_up, round_up
from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._validation import check_positive, check_probability, check_real
from dpledger.accountant import events as ev
from dpledger.accountant.rdp import rdp_curve, rdp_to_epsilon
from dpledger.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotApplicableError,
)
from dpledger.ledger import Ledger, Receipt
from dpledger.ledger.receipts import as_event
from dpledger.mechanisms import DiscreteLaplace

__all__ = [
    "PrivateSearchResult",
    "best_of_random_runs",
    "private_random_search",
    "tuned_rdp_curve",
]

_T = TypeVar("_T")

PURE_THEOREM = (
    "Papernot & Steinke 2022, Cor. 3 (eta = 1, geometric K): Q eps-DP => best of K runs "
    "3*eps-DP (Liu & Talwar 2019)"
)
RDP_THEOREM = (
    "Papernot & Steinke 2022, Thm 2 (eta = 1, geometric K), converted at delta "
    "(Balle et al. 2020, Thm 21)"
)

#: the orders α̂ > 1 over which Theorem 2's constant term is minimised (any α̂ is valid)
_HAT_ORDERS = tuple(float(a) for a in np.geomspace(1.0 + 2.0**-10, 2.0**20, 400))


@dataclass(frozen=True)
class PrivateSearchResult:
    """What :func:`private_random_search` releases, and what it charged.

    Attributes:
        best_estimator: The best run's fitted estimator (fitted on the training part). Its
            ``ledger_`` is the ledger the search charged (the run's own per-fit ledger,
            whose receipts would date the run among the K, is not released).
        best_params: Its hyper-parameters (the grid entry).
        best_score: Its noisy count of correctly classified validation rows (a DP
            release; the validation part's size is not released).
        event: The event charged to the ledger (``PureDP(3ε)`` or ``ApproxDP(ε, δ)``).
        epsilon: The ε charged: 3ε for pure runs, else ε at ``delta``.
        delta: The δ charged (0 for pure runs).
        theorem: The theorem the charge rests on.
        receipt: The ledger's receipt of the charge.
    """

    best_estimator: Any
    best_params: dict[str, Any]
    best_score: int
    event: ev.Event
    epsilon: float
    delta: float
    theorem: str
    receipt: Receipt


def tuned_rdp_curve(
    base: Callable[[float], float], expected_runs: float
) -> Callable[[float], float]:
    """The Rényi curve of the best of K ~ Geometric(1/E[K]) runs of a base with ``base``.

    Papernot & Steinke 2022, Thm 2 with η = 1 (E[K] = 1/γ): α ↦ R(α) + 2c + log E[K]/(α − 1),
    c = min over α̂ > 1 (a fixed grid) of (1 − 1/α̂)R(α̂) + log E[K]/α̂; rounded up.

    Args:
        base: α ↦ an upper bound on the base run's Rényi divergence at order α > 1.
        expected_runs: E[K] ≥ 1.

    Returns:
        α ↦ an upper bound on the tuned algorithm's Rényi divergence at order α > 1.
    """
    log_mean = math.log(check_positive("expected_runs", expected_runs))
    terms = [round_up((1.0 - 1.0 / a) * base(a) + log_mean / a) for a in _HAT_ORDERS]
    constant = round_up(2.0 * min(terms))

    def tuned(alpha: float) -> float:
        if alpha <= 1.0:
            return math.inf
        return round_up(round_up(base(alpha) + constant) + round_up(log_mean / (alpha - 1.0)))

    return tuned


def best_of_random_runs(
    run: Callable[[], tuple[Any, _T]], expected_runs: float, rng: np.random.Generator
) -> tuple[Any, _T]:
    """The first of K runs with the highest score, K ~ Geometric(γ = 1/``expected_runs``).

    P[K = k] = γ(1 − γ)^{k−1} for k ≥ 1 (Papernot & Steinke's D_{1,γ}; numpy's
    ``Generator.geometric``). ``run()`` returns (score, output); only the first run with
    the highest score is returned — by exchangeability of i.i.d. runs, the distribution of
    breaking ties by an independent uniform attached to each run (module docstring). K and
    the other runs are not returned.

    Args:
        run: One run of the base algorithm: () ↦ (score, output).
        expected_runs: E[K] ≥ 1.
        rng: The generator K is drawn from.

    Returns:
        The best run's (score, output).
    """
    runs = int(rng.geometric(1.0 / expected_runs))
    best = run()
    for _ in range(runs - 1):
        score, output = run()
        if score > best[0]:  # strictly: the first best run is kept
            best = (score, output)
    return best


def _fresh(estimator: Any, candidate: dict[str, Any], rng: Any) -> Any:
    """A new estimator (its own one-fit budget, ``ledger=None``) with ``candidate``'s values."""
    params = dict(estimator.get_params(deep=False))
    params.update(candidate)
    params["ledger"] = None
    params["rng"] = rng
    return type(estimator)(**params)


def _candidates(estimator: Any, param_grid: Any) -> list[dict[str, Any]]:
    from sklearn.model_selection import ParameterGrid

    candidates = list(ParameterGrid(param_grid))
    if not candidates:
        raise InvalidArgumentError("`param_grid` must hold at least one candidate. Found none.")
    known = set(estimator.get_params(deep=False))
    for candidate in candidates:
        unknown = sorted(set(candidate) - known)
        if unknown:
            raise InvalidArgumentError(
                f"`param_grid` names {unknown}, which {type(estimator).__name__} does not take "
                f"(its parameters: {sorted(known)})."
            )
        fixed = sorted({"ledger", "rng"} & set(candidate))
        if fixed:
            raise InvalidArgumentError(
                f"`param_grid` may not set {fixed}: every run has its own planned ledger and "
                f"noise seed, drawn by the search. Found {candidate!r}."
            )
    return candidates


@dataclass(frozen=True)
class _Plan:
    """The search's charge, computed from public quantities before any fit."""

    candidates: list[dict[str, Any]]
    schedules: list[tuple[ev.Event, ...]]
    score: DiscreteLaplace
    event: ev.Event
    epsilon: float
    delta: float
    theorem: str


def _base_curve(
    schedules: Sequence[Sequence[ev.Event]], score: ev.Event
) -> Callable[[float], float]:
    """α ↦ max(max_θ R_θ(α), R_s(α)): the base run's Rényi curve (module docstring)."""
    curves = [rdp_curve(ev.Composed(tuple(s)) if len(s) > 1 else s[0]) for s in schedules]
    curves.append(rdp_curve(score))
    return lambda alpha: max(c(alpha) for c in curves)


def _score_mechanism(epsilon: float) -> DiscreteLaplace:
    return DiscreteLaplace(scale=1.0 / epsilon, sensitivity=1.0)


def _plan(
    estimator: Any,
    candidates: list[dict[str, Any]],
    X_train: Any,
    y_train: Any,
    *,
    ledger: Ledger,
    expected_runs: float,
    score_epsilon: float | None,
    delta: float | None,
) -> _Plan:
    """Preview every candidate on the training part and compute the theorem's charge."""
    budgets = []
    schedules = []
    for candidate in candidates:
        model = _fresh(estimator, candidate, None)
        adjacency = model.get_params(deep=False).get("adjacency")
        if adjacency != ledger.adjacency:
            raise InvalidArgumentError(
                f"private_random_search: the runs' `adjacency` {adjacency!r} differs from the "
                f"ledger's {ledger.adjacency!r}: the guarantee charged is stated under the "
                "ledger's neighbours."
            )
        preview = model.preview(X_train, y_train)
        budgets.append((float(preview.epsilon), float(preview.delta)))
        schedules.append(tuple(as_event(m, None, None) for m in preview.schedule))
    pure = all(d == 0 for _, d in budgets)
    if pure:
        target = max(e for e, _ in budgets) if score_epsilon is None else score_epsilon
        score = _score_mechanism(target)
        base = max(max(e for e, _ in budgets), float(score.event.epsilon))  # type: ignore[attr-defined]
        epsilon = mul_up(base, 3)
        event: ev.Event = ev.PureDP(epsilon)
        return _Plan(candidates, schedules, score, event, epsilon, 0.0, PURE_THEOREM)
    if delta is None:
        raise InvalidArgumentError(
            "private_random_search: a candidate has delta > 0, so the tuning's guarantee is a "
            "Rényi curve (Papernot & Steinke 2022, Thm 2), charged as (ε, δ) at a δ you choose: "
            "pass `delta=` (a share of the ledger's δ). Found delta=None."
        )
    fits = _base_curve(schedules, ev.PureDP(0.0))
    if score_epsilon is None:
        # the largest ε_s whose ε_s²/2-zCDP curve (Bun & Steinke 2016, Prop. 1.4) stays below
        # the fits' curve on a grid: any ε_s is valid (the curve charged is the maximum of
        # both); this one leaves the charge (almost) unchanged
        slope = min(fits(a) / a for a in _HAT_ORDERS if a >= 1.5)
        score_epsilon = math.sqrt(2.0 * slope)
    score = _score_mechanism(score_epsilon)
    tuned = tuned_rdp_curve(_base_curve(schedules, score.event), expected_runs)
    epsilon = rdp_to_epsilon(tuned, delta)
    if not math.isfinite(epsilon):
        raise NotApplicableError(
            f"private_random_search: the tuning has no finite ε at delta={delta!r}."
        )
    event = ev.ApproxDP(epsilon, delta)
    return _Plan(candidates, schedules, score, event, epsilon, delta, RDP_THEOREM)


def _refusal(plan: _Plan, ledger: Ledger, error: BudgetExceededError) -> BudgetExceededError:
    remaining = ledger.remaining
    at = float(ledger.delta)
    return BudgetExceededError(
        f"private_random_search: refused before any fit. The tuning costs ε = "
        f"{up(plan.epsilon, 4)}{'' if plan.delta == 0 else f' at δ = {plan.delta:g}'} "
        f"({plan.theorem}), and the ledger has ε ≈ {down(remaining.epsilon_at(at), 4)} left at "
        f"δ = {at:g} ({remaining} in its currency). The ledger: {error} Nothing was fitted or "
        "charged. Give the ledger more budget or the runs a smaller epsilon.",
        requested=(plan.epsilon, plan.delta),
        remaining=remaining.as_tuple(),
    )


def private_random_search(
    estimator: Any,
    param_grid: Any,
    X: Any,
    y: Any,
    *,
    ledger: Ledger | None = None,
    expected_runs: float = 10.0,
    validation_fraction: float = 0.2,
    score_epsilon: float | None = None,
    delta: float | None = None,
    rng: Any = None,
) -> PrivateSearchResult:
    """Tune a private classifier privately: a random number of runs, only the best released.

    Runs K ~ Geometric(1/``expected_runs``) fits, each of a candidate drawn uniformly
    from ``param_grid``, each at the estimator's own (ε, δ) on a random training part,
    each scored by a noisy count of correct predictions on the validation part; releases
    the best run only, and charges ``ledger`` the proved cost of the whole search (the
    module docstring: Papernot & Steinke 2022, Cor. 3 / Thm 2). The cost does not grow
    with the grid or with E[K] for pure-DP runs (3ε), and only logarithmically in E[K]
    otherwise; a naive grid search pays for every fit.

    Args:
        estimator: A dpledger classifier (with ``preview``); its ``epsilon``/``delta``
            (or the grid's) are each run's budget, its ``adjacency`` the ledger's.
        param_grid: A dict of lists, or a list of them (scikit-learn's ``ParameterGrid``);
            it may not set ``ledger`` or ``rng``.
        X: The features.
        y: The labels.
        ledger: The ledger charged (default: the estimator's).
        expected_runs: E[K] ≥ 1, the mean number of runs (γ = 1/E[K]).
        validation_fraction: Each row's probability of being a validation row, in (0, 1).
        score_epsilon: ε of each run's noisy count (default: free — the runs' largest ε
            for pure runs; below the fits' Rényi curve otherwise).
        delta: With a candidate of δ > 0: the δ at which the tuning's Rényi guarantee is
            converted to the (ε, δ) charged (required then; refused for pure runs).
        rng: A Generator or int seed for the split, K, the candidates and the runs' seeds
            (reproducible experiments), or None (seeded by the operating system).

    Returns:
        A :class:`~dpledger.model_selection.PrivateSearchResult`.

    Raises:
        BudgetExceededError: The charge does not fit the ledger; nothing was fitted.
        NotApplicableError: The ledger's filter cannot account for the charge (an
            (ε, δ) charge on a zCDP or Gaussian-DP ledger).
        InvalidArgumentError: An argument is invalid (named in the message).

    Example:
        >>> import numpy as np
        >>> from dpledger import Ledger
        >>> from dpledger.algorithms import ObjectivePerturbationClassifier
        >>> from dpledger.model_selection import private_random_search
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(600, 2))
        >>> y = (X[:, 0] > 0).astype(float)
        >>> model = ObjectivePerturbationClassifier(
        ...     epsilon=0.5, x_bound=1.0, adjacency="replace_one", fit_intercept=False)
        >>> ledger = Ledger(epsilon=2.0, adjacency="replace_one")
        >>> result = private_random_search(
        ...     model, {"l2_regularization": [1e-3, 1e-2, 1e-1]}, X, y, ledger=ledger, rng=1)
        >>> result.event, ledger.spent
        (PureDP(epsilon=1.5), (1.5, 0.0))
    """
    from sklearn.base import is_classifier

    what = "private_random_search"
    if not callable(getattr(estimator, "preview", None)) or not is_classifier(estimator):
        raise InvalidArgumentTypeError(
            f"{what}: `estimator` must be a dpledger classifier (its runs are scored by their "
            f"validation accuracy, and priced by `preview`). Found {type(estimator).__name__}."
        )
    if ledger is None:
        ledger = estimator.get_params(deep=False).get("ledger")
    if not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(
            f"{what}: pass the ledger the search is charged to, `ledger=Ledger(...)` (or set "
            f"the estimator's). Found {type(ledger).__name__}."
        )
    expected_runs = check_real("expected_runs", expected_runs)
    if not 1.0 <= expected_runs < math.inf:
        raise InvalidArgumentError(
            f"`expected_runs` (E[K], the mean number of runs) must be finite and at least 1. "
            f"Found {expected_runs!r}."
        )
    fraction = check_probability("validation_fraction", validation_fraction, low_open=True)
    if fraction == 1.0:
        raise InvalidArgumentError(
            "`validation_fraction` must be below 1 (the runs fit on the other rows). Found 1.0."
        )
    if score_epsilon is not None:
        score_epsilon = check_positive("score_epsilon", score_epsilon)
    if delta is not None:
        delta = check_probability("delta", delta, low_open=True, high_open=True)
    candidates = _candidates(estimator, param_grid)
    generator = resolve_rng(rng)

    from sklearn.utils import _safe_indexing
    from sklearn.utils.validation import _num_samples

    n = int(_num_samples(X))
    validation = generator.random(n) < fraction  # each row's coin, once for every run
    train_rows, validation_rows = np.flatnonzero(~validation), np.flatnonzero(validation)
    X_train, y_train = _safe_indexing(X, train_rows), _safe_indexing(y, train_rows)
    X_val, y_val = (
        _safe_indexing(X, validation_rows),
        np.asarray(_safe_indexing(y, validation_rows)),
    )
    plan = _plan(
        estimator,
        candidates,
        X_train,
        y_train,
        ledger=ledger,
        expected_runs=expected_runs,
        score_epsilon=score_epsilon,
        delta=delta,
    )
    if plan.delta == 0 and delta is not None:
        raise InvalidArgumentError(
            f"{what}: every candidate is pure (delta = 0), so the charge is PureDP(3ε) and "
            f"`delta` has no use. Found delta={delta!r}."
        )
    try:
        ledger.check([plan.event])
    except BudgetExceededError as error:
        raise _refusal(plan, ledger, error) from None
    except NotApplicableError as error:
        raise NotApplicableError(
            f"{what}: the ledger cannot account for the tuning's charge {plan.event!r}: "
            f"{error} Nothing was fitted or charged."
        ) from None
    receipt = ledger.spend(plan.event, label=f"{what}: {plan.theorem}")

    def run() -> tuple[int, tuple[int, Any]]:
        """One run of Q: a candidate drawn uniformly, fitted, scored with noise."""
        index = int(generator.integers(len(candidates)))
        model = _fresh(estimator, candidates[index], int(generator.integers(2**63 - 1)))
        model.fit(X_train, y_train)
        if tuple(model.releases_) != plan.schedules[index]:  # pragma: no cover - a contract bug
            raise InvalidArgumentError(
                f"{what}: a run released {model.releases_!r}, not the schedule priced "
                f"{plan.schedules[index]!r}; nothing is released."
            )
        # (no validation row: nothing to predict, whatever the estimator does with none)
        predicted = np.asarray(model.predict(X_val)) if len(validation_rows) else y_val
        correct = int(np.sum(predicted == y_val))
        return int(plan.score.release(correct, generator)), (index, model)

    score, (index, model) = best_of_random_runs(run, expected_runs, generator)
    # the released model's ledger is the one charged for it; its run's own per-fit ledger
    # is not released (its receipts' timestamps would date the run among the K)
    model.ledger_ = ledger
    return PrivateSearchResult(
        best_estimator=model,
        best_params=dict(candidates[index]),
        best_score=score,
        event=plan.event,
        epsilon=plan.epsilon,
        delta=plan.delta,
        theorem=plan.theorem,
        receipt=receipt,
    )


__dir__ = namespace(__all__)
