"""Cross-validation and grid search that price the whole run before the first fit.

Thin wrappers over scikit-learn's ``cross_validate``, ``cross_val_score`` and
``GridSearchCV`` (same arguments, same results), with three differences:

* **The whole run is priced first** (:mod:`._pricing`): every fold's fit — for a grid
  search every candidate's, and the refit's — is previewed on its own training rows and
  the concatenation checked against the ledger; a run that does not fit is refused before
  any fit, with its price in ε at the ledger's δ and what remains. The splits are drawn
  once, so the folds priced are the folds fitted.
* **A refusal is never a score**: ``error_score`` must be ``"raise"`` (scikit-learn's
  default, ``nan``, turns a :class:`~dpledger.errors.BudgetExceededError` into ``nan``).
* **One shared ledger pays**: the estimator's ``ledger``, or this call's ``ledger=``
  (set on the clones). An estimator with ``ledger=None`` has a budget for one fit and
  is refused with a message saying to pass a ledger; worker processes (``n_jobs``) are
  refused when they cannot share the ledger safely (:func:`._pricing.check_parallel`).

**What the ledger covers.** The ledger pays for the *fits* (each model's releases). The
*scores* are computed by scikit-learn on the held-out rows without noise: they are not
differentially private, and neither are ``cv_results_``, ``best_params_`` or the choice
of the refit, which depend on them. Read them as the data's custodian would, or score on
public data; to release a tuned model privately, use
:func:`~dpledger.model_selection.private_random_search`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.model_selection import GridSearchCV as _SkGridSearchCV

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError
from dpledger.ledger import Ledger
from dpledger.ledger.receipts import as_event
from dpledger.model_selection._pricing import (
    RunPrice,
    check_error_score,
    check_parallel,
    fit_schedules,
    one_fit_refusal,
    price_sequences,
    resolve_ledger,
)

__all__ = ["GridSearchCV", "cross_val_score", "cross_validate", "price_cross_validation"]


def _splits(estimator: Any, X: Any, y: Any, groups: Any, cv: Any) -> list[tuple[Any, Any]]:
    """The folds, drawn once (a shuffling splitter would draw others on a second call)."""
    from sklearn.base import is_classifier
    from sklearn.model_selection import check_cv

    splitter = check_cv(cv, y, classifier=is_classifier(estimator))
    return [(np.asarray(train), np.asarray(test)) for train, test in splitter.split(X, y, groups)]


def _prepare(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    groups: Any,
    cv: Any,
    params: dict[str, Any] | None,
    ledger: Ledger | None,
    n_jobs: Any,
    what: str,
    refuse: bool,
) -> tuple[Any, list[tuple[Any, Any]], RunPrice]:
    """(estimator charging the shared ledger, the folds, the run's price) — or a refusal."""
    estimator, shared = resolve_ledger(estimator, ledger, what)
    splits = _splits(estimator, X, y, groups, cv)
    if shared is None:
        raise one_fit_refusal(estimator, len(splits), what)
    check_parallel(n_jobs, shared, what)
    schedules = fit_schedules(estimator, X, y, [train for train, _ in splits], params)
    price = price_sequences(shared, [schedules], what, refuse=refuse)
    return estimator, splits, price


def price_cross_validation(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    groups: Any = None,
    cv: Any = 5,
    params: dict[str, Any] | None = None,
    ledger: Ledger | None = None,
) -> RunPrice:
    """What :func:`cross_validate` would charge, without fitting or charging anything.

    Args:
        estimator: A dpledger estimator with a shared ``ledger`` (or pass ``ledger``).
        X: The features.
        y: The target.
        groups: Group labels for a group splitter.
        cv: As scikit-learn's (an int is a (stratified) k-fold).
        params: Fit parameters (per-row arrays are indexed for each fold).
        ledger: The shared ledger, if the estimator has none.

    Returns:
        A :class:`~dpledger.model_selection.RunPrice`: the run's ε at the ledger's δ, its
        cost in the ledger's currency, what remains, and whether it fits.

    Raises:
        BudgetExceededError: The estimator has ``ledger=None`` (a budget for one fit).
    """
    what = "cross_validate"
    _, _, price = _prepare(
        estimator,
        X,
        y,
        groups=groups,
        cv=cv,
        params=params,
        ledger=ledger,
        n_jobs=None,
        what=what,
        refuse=False,
    )
    return price


def cross_validate(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    groups: Any = None,
    scoring: Any = None,
    cv: Any = 5,
    n_jobs: int | None = None,
    verbose: int = 0,
    params: dict[str, Any] | None = None,
    pre_dispatch: Any = "2*n_jobs",
    return_train_score: bool = False,
    return_estimator: bool = False,
    return_indices: bool = False,
    error_score: Any = "raise",
    ledger: Ledger | None = None,
) -> dict[str, Any]:
    """scikit-learn's ``cross_validate``, priced before the first fit and never silent.

    Every fold's fit is previewed and the whole run checked against the shared ledger
    first; a run that does not fit raises
    :class:`~dpledger.errors.BudgetExceededError` stating its price in ε at the ledger's
    δ and what remains, having fitted and charged nothing. The scores are not private
    (module docstring). Arguments and result are scikit-learn's, except:

    Args:
        estimator: A dpledger estimator.
        X: The features.
        y: The target.
        groups: Group labels for a group splitter.
        scoring: As scikit-learn's.
        cv: As scikit-learn's (default: 5 folds, stratified for a classifier).
        n_jobs: Worker processes need a ledger in a file or a database; threads
            (``joblib.parallel_config(backend="threading")``) share any ledger.
        verbose: As scikit-learn's.
        params: Fit parameters (per-row arrays are indexed for each fold).
        pre_dispatch: As scikit-learn's.
        return_train_score: As scikit-learn's.
        return_estimator: As scikit-learn's.
        return_indices: As scikit-learn's.
        error_score: Must be ``"raise"``: a number would turn a refusal into a score.
        ledger: The ledger every fold charges, if the estimator has none of its own
            (set on its clones).

    Returns:
        scikit-learn's dict of arrays (``test_score``, ``fit_time``, ...).

    Raises:
        BudgetExceededError: The run does not fit the ledger, or the estimator has a
            one-fit budget (``ledger=None``); nothing was fitted or charged.
        InvalidArgumentError: ``error_score`` is not ``"raise"``, or ``n_jobs`` asks for
            processes that cannot share the ledger safely.

    Example:
        >>> import numpy as np
        >>> from dpledger import Ledger
        >>> from dpledger.algorithms import ADASSP
        >>> from dpledger.model_selection import cross_validate
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(200, 2))
        >>> y = np.clip(X @ [0.5, -0.3], -1, 1)
        >>> model = ADASSP(epsilon=0.5, delta=1e-6, x_bound=1, y_bound=1,
        ...                adjacency="add_remove", rng=0)
        >>> ledger = Ledger(epsilon=3.0, delta=1e-5)
        >>> result = cross_validate(model, X, y, cv=5, ledger=ledger)
        >>> len(result["test_score"]), len(ledger.receipts)
        (5, 15)
    """
    what = "cross_validate"
    check_error_score(error_score, what)
    fitted, splits, _ = _prepare(
        estimator,
        X,
        y,
        groups=groups,
        cv=cv,
        params=params,
        ledger=ledger,
        n_jobs=n_jobs,
        what=what,
        refuse=True,
    )
    from sklearn.model_selection import cross_validate as sk_cross_validate

    result: dict[str, Any] = sk_cross_validate(
        fitted,
        X,
        y,
        groups=groups,
        scoring=scoring,
        cv=splits,
        n_jobs=n_jobs,
        verbose=verbose,
        params=params,
        pre_dispatch=pre_dispatch,
        return_train_score=return_train_score,
        return_estimator=return_estimator,
        return_indices=return_indices,
        error_score="raise",
    )
    return result


def cross_val_score(
    estimator: Any,
    X: Any,
    y: Any = None,
    *,
    groups: Any = None,
    scoring: Any = None,
    cv: Any = 5,
    n_jobs: int | None = None,
    verbose: int = 0,
    params: dict[str, Any] | None = None,
    pre_dispatch: Any = "2*n_jobs",
    error_score: Any = "raise",
    ledger: Ledger | None = None,
) -> Any:
    """scikit-learn's ``cross_val_score`` (one score per fold), priced as :func:`cross_validate`.

    Args:
        estimator: A dpledger estimator.
        X: The features.
        y: The target.
        groups: Group labels for a group splitter.
        scoring: One scorer (a name or a callable), as scikit-learn's.
        cv: As scikit-learn's (default: 5 folds).
        n_jobs: See :func:`cross_validate`.
        verbose: As scikit-learn's.
        params: Fit parameters.
        pre_dispatch: As scikit-learn's.
        error_score: Must be ``"raise"``.
        ledger: The ledger every fold charges, if the estimator has none.

    Returns:
        The array of test scores, one per fold (not private: see the module docstring).

    Raises:
        BudgetExceededError: See :func:`cross_validate`.
        InvalidArgumentError: See :func:`cross_validate`.
    """
    from sklearn.metrics import check_scoring

    scorer = check_scoring(estimator, scoring=scoring)
    result = cross_validate(
        estimator,
        X,
        y,
        groups=groups,
        scoring={"score": scorer},
        cv=cv,
        n_jobs=n_jobs,
        verbose=verbose,
        params=params,
        pre_dispatch=pre_dispatch,
        error_score=error_score,
        ledger=ledger,
    )
    return result["test_score"]


class GridSearchCV(_SkGridSearchCV):  # type: ignore[misc]
    """scikit-learn's ``GridSearchCV``, with the whole search priced before the first fit.

    ``fit`` previews every candidate's fit on every fold, and the refit (with each
    candidate, as the winner is not known yet: the dearest one is priced), checks the
    run against the shared ledger, and refuses it up front — with its price in ε at the
    ledger's δ and what remains — if it does not fit; then runs scikit-learn's search on
    the same folds, charging every fit to that ledger. ``error_score`` must be
    ``"raise"``. The scores, ``cv_results_``, ``best_params_`` and so the refit's
    hyper-parameters are computed without noise from the validation folds: they are not
    private (module docstring); :func:`~dpledger.model_selection.private_random_search`
    releases a tuned model privately.

    Args:
        estimator: A dpledger estimator.
        param_grid: As scikit-learn's (the grid may not set ``ledger``).
        scoring: As scikit-learn's.
        n_jobs: See :func:`cross_validate`.
        refit: As scikit-learn's (the refit on all rows is priced and charged too).
        cv: As scikit-learn's (default: 5 folds).
        verbose: As scikit-learn's.
        pre_dispatch: As scikit-learn's.
        error_score: Must be ``"raise"``.
        return_train_score: As scikit-learn's.
        ledger: The ledger every fit charges, if the estimator has none.

    Attributes:
        price_: The :class:`~dpledger.model_selection.RunPrice` checked before the search.
        (and scikit-learn's: ``cv_results_``, ``best_estimator_``, ``best_params_``, ...)
    """

    estimator: Any
    cv: Any
    ledger: Ledger | None

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **_SkGridSearchCV._parameter_constraints,
        "ledger": [None, Ledger],
    }

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: Any = True,
        cv: Any = 5,
        verbose: int = 0,
        pre_dispatch: Any = "2*n_jobs",
        error_score: Any = "raise",
        return_train_score: bool = False,
        ledger: Ledger | None = None,
    ) -> None:
        super().__init__(
            estimator,
            param_grid,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.ledger = ledger

    def price(self, X: Any, y: Any = None, **params: Any) -> RunPrice:
        """What :meth:`fit` would charge, without fitting or charging anything."""
        _, _, price = self._prepare(X, y, params, refuse=False)
        return price

    def _prepare(
        self, X: Any, y: Any, params: dict[str, Any], *, refuse: bool
    ) -> tuple[Any, list[tuple[Any, Any]], RunPrice]:
        from sklearn.base import clone
        from sklearn.model_selection import ParameterGrid

        what = "GridSearchCV.fit"
        estimator, shared = resolve_ledger(self.estimator, self.ledger, what)
        candidates = list(ParameterGrid(self.param_grid))
        for candidate in candidates:
            if "ledger" in candidate:
                raise InvalidArgumentError(
                    f"{what}: `param_grid` may not set `ledger` (every fit draws on one "
                    f"ledger). Found {candidate!r}."
                )
        fit_params = {k: v for k, v in params.items() if k != "groups"}
        splits = _splits(estimator, X, y, params.get("groups"), self.cv)
        fits = len(candidates) * len(splits) + (1 if self.refit else 0)
        if shared is None:
            raise one_fit_refusal(estimator, fits, what)
        if refuse:
            check_parallel(self.n_jobs, shared, what)
        trainings = [train for train, _ in splits]
        folds: list[tuple[Any, ...]] = []
        refits: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # by events: one per distinct refit
        for candidate in candidates:  # scikit-learn fits candidate by candidate, fold by fold
            model = clone(estimator).set_params(**candidate)
            folds += fit_schedules(model, X, y, trainings, fit_params)
            if self.refit:
                refit = fit_schedules(model, X, y, [None], fit_params)[0]
                refits.setdefault(tuple(as_event(m, None, None) for m in refit), refit)
        sequences = [[*folds, refit] for refit in refits.values()] or [folds]
        return estimator, splits, price_sequences(shared, sequences, what, refuse=refuse)

    def fit(self, X: Any, y: Any = None, **params: Any) -> GridSearchCV:
        """Price the whole search, refuse it if it does not fit, else run it.

        Args:
            X: The features.
            y: The target.
            **params: Fit parameters, and ``groups`` for a group splitter.

        Returns:
            self.

        Raises:
            BudgetExceededError: The search does not fit the ledger, or the estimator has a
                one-fit budget; nothing was fitted or charged.
            InvalidArgumentError: ``error_score`` is not ``"raise"``, or ``n_jobs`` asks for
                processes that cannot share the ledger safely.
        """
        check_error_score(self.error_score, "GridSearchCV.fit")
        estimator, splits, price = self._prepare(X, y, params, refuse=True)
        # scikit-learn's search reads `estimator` and `cv` from self: for the run only, the
        # estimator that charges the shared ledger and the folds that were priced
        given: tuple[Any, Any] = (self.estimator, self.cv)
        self.estimator, self.cv = estimator, splits
        try:
            super().fit(X, y, **params)
        finally:
            self.estimator, self.cv = given
        self.price_ = price
        return self


__dir__ = namespace(__all__)
