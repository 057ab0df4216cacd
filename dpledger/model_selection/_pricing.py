"""Price a whole run of fits — every fold, every candidate, the refit — before the first fit.

A cross-validation or grid search is a fixed schedule of fits, and each fit's schedule of
releases depends only on public quantities: the estimator's parameters, the declared
bounds, the number of features (and, under replace-one adjacency, the number of rows).
:meth:`PrivateEstimator.preview <dpledger.algorithms.PrivateEstimator.preview>` returns
that schedule without charging, drawing or claiming anything. This module previews
every fit of a run in the order it will be fitted, checks the concatenation against the
ledger with :meth:`Ledger.check <dpledger.Ledger.check>` (the rule ``spend`` applies,
replayed without recording), and refuses the run up front — stating its price in ε at
the ledger's δ and what remains — if it does not fit. A refused run fits nothing and
charges nothing.

It also holds the refusals that depend on public facts alone and come first: a budget
refusal must never become a score (``error_score``), a one-fit budget cannot pay for
several fits, and worker processes cannot share an in-memory ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpledger import accountant
from dpledger._format import down, up
from dpledger.accountant import events as ev
from dpledger.errors import BudgetExceededError, InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger import Ledger
from dpledger.ledger.budgets import ApproxDPBudget, Budget, GDPBudget, ZCDPBudget
from dpledger.ledger.planning import price_schedule
from dpledger.ledger.receipts import as_event

__all__ = [
    "RunPrice",
    "check_error_score",
    "check_parallel",
    "fit_params_for",
    "fit_schedules",
    "one_fit_refusal",
    "price_sequences",
    "resolve_ledger",
]

_NOTHING_DONE = "Nothing was fitted or charged."


@dataclass(frozen=True)
class RunPrice:
    """What a run of fits would charge, computed before its first fit.

    Attributes:
        what: The run (``"cross_validate"``, ``"GridSearchCV.fit"``, ...).
        fits: The number of fits priced (for a grid search with a refit: the folds of
            every candidate, and one refit).
        releases: The number of releases of all those fits.
        epsilon: The run's ε at ``delta`` as the ledger accounts it: its cost in the
            ledger's currency converted at δ, rounded up (comparable with
            ``remaining_epsilon``: the run fits only if this is at most that; the ledger's
            own report after the run may differ in the last digits, e.g. a Gaussian-DP
            ledger converts at δ less a 2⁻³⁰δ reserve). For a
            currency without a one-number conversion (Rényi DP at the ledger's order),
            ``tightest_epsilon``. With a refit whose candidate is not known in advance:
            the dearest candidate's.
        tightest_epsilon: The run's ε at ``delta`` with its releases composed by the
            tightest valid method (:func:`dpledger.accountant.epsilon`), for reference:
            what an accountant of this run alone could certify.
        delta: The ledger's δ.
        cost: The run's cost in the ledger's currency, as the ledger prints it.
        remaining_epsilon: What the ledger has left, as ε at ``delta`` (rounded down).
        remaining: What the ledger has left, in its currency.
        fits_budget: Whether the ledger accepts the whole run now.
        schedules: Each fit's releases (mechanisms or events), in the order of the fits
            (a refit last; with several possible refits, the dearest one).
    """

    what: str
    fits: int
    releases: int
    epsilon: float
    tightest_epsilon: float
    delta: float
    cost: str
    remaining_epsilon: float
    remaining: str
    fits_budget: bool
    schedules: tuple[tuple[Any, ...], ...]

    def __str__(self) -> str:
        verdict = "fits the ledger" if self.fits_budget else "does NOT fit the ledger"
        return (
            f"{self.what}: {self.fits} fits, {self.releases} releases; costs ε = "
            f"{up(self.epsilon, 4)} at δ = {self.delta:g} ({self.cost}), ε ≈ "
            f"{down(self.remaining_epsilon, 4)} remains ({self.remaining}) — {verdict}"
        )


#: currency → the ledger's budget type built from a cost tuple (Rényi DP needs its order)
_BUDGETS: dict[str, Callable[..., Budget]] = {
    ApproxDPBudget.currency: ApproxDPBudget,
    ZCDPBudget.currency: ZCDPBudget,
    GDPBudget.currency: GDPBudget,
}


def check_error_score(error_score: Any, what: str) -> None:
    """Refuse an ``error_score`` that would turn a refused fit into a score.

    scikit-learn's default, ``nan``, catches every exception a fit raises — a
    :class:`~dpledger.errors.BudgetExceededError` included — and records a score instead:
    the refusal disappears into a warning and the folds already charged stay charged.
    """
    if isinstance(error_score, str) and error_score == "raise":
        return
    raise InvalidArgumentError(
        f"{what}: `error_score` must be 'raise'. Found {error_score!r}: a number would turn a "
        "refused fit (BudgetExceededError) or any other failure into that score, hiding it. "
        "The whole run is priced before the first fit, so a refusal can only come from "
        "another process spending the same ledger meanwhile, and it must stop the run."
    )


def resolve_ledger(estimator: Any, ledger: Ledger | None, what: str) -> tuple[Any, Ledger | None]:
    """The estimator the run fits (its clones charge the shared ledger), and that ledger.

    ``ledger`` (the run's argument) is set on a clone of ``estimator`` when the estimator
    has none; an estimator that already has a ledger must have the same one. Returns
    (estimator, None) when neither has a ledger: the caller refuses, knowing how many fits
    the run has (:func:`one_fit_refusal`).
    """
    from sklearn.base import clone

    if not callable(getattr(estimator, "preview", None)) or not hasattr(estimator, "get_params"):
        raise InvalidArgumentTypeError(
            f"{what}: `estimator` must be a dpledger estimator (with `preview`, which prices "
            f"each fit before the first one). Found {type(estimator).__name__}. A Pipeline is "
            "not priced yet: fit its private steps with a shared ledger through scikit-learn "
            "directly (error_score='raise'), or preprocess with public constants."
        )
    if ledger is not None and not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(
            f"{what}: `ledger` must be a dpledger.Ledger or None. Found {type(ledger).__name__}."
        )
    own = estimator.get_params(deep=False).get("ledger")
    if ledger is None:
        return estimator, own
    if own is not None and own is not ledger:
        raise InvalidArgumentError(
            f"{what}: the estimator draws on another ledger than `ledger` ({own!r} and "
            f"{ledger!r}); pass one of them."
        )
    if own is ledger:
        return estimator, ledger
    return clone(estimator).set_params(ledger=ledger), ledger


def one_fit_refusal(estimator: Any, fits: int, what: str) -> BudgetExceededError:
    """The refusal of a run of ``fits`` fits by an estimator with ``ledger=None``."""
    params = estimator.get_params(deep=False)
    epsilon, delta = params.get("epsilon"), params.get("delta")
    name = type(estimator).__name__
    total = ""
    if isinstance(epsilon, (int, float)) and isinstance(delta, (int, float)):
        total = (
            f": {fits} fits at (ε={epsilon:g}, δ={delta:g}) each cost at most "
            f"ε = {up(fits * epsilon, 4)}, δ = {up(fits * delta, 4)} by basic composition "
            "(less under zCDP or Gaussian-DP accounting, which the ledger applies)"
        )
        requested: Any = (fits * epsilon, fits * delta)
    else:
        requested = None
    return BudgetExceededError(
        f"{what} fits {name} {fits} times, and with ledger=None it has a budget for one fit "
        f"(epsilon={epsilon!r}, delta={delta!r}), which cannot pay for {fits}. Pass one shared "
        f"ledger sized for the whole run, e.g. {what}(..., ledger=Ledger(epsilon=..., "
        f"delta=...)){total}. {_NOTHING_DONE}",
        requested=requested,
        remaining=(epsilon, delta),
    )


def check_parallel(n_jobs: Any, ledger: Ledger, what: str) -> None:
    """Refuse worker processes that cannot share ``ledger`` safely.

    Threads share the ledger object (it is thread-safe, and reservations opened at the
    same position get different noise streams). Processes get a pickled copy of each
    estimator: an in-memory ledger refuses to be pickled (a copy would duplicate the
    budget; scikit-learn shows a bare PicklingError), and a keyed ledger's key never
    travels. A file (or PostgreSQL) ledger is reopened by its path in each worker and
    its transactions keep one budget. A seeded ``rng`` is safe there too: two workers
    that open their fits at the same ledger position get different numbers from the
    store, mixed into their noise streams (:func:`dpledger.ledger.planning.
    noise_generator`) — though the order in which workers open, and so the noise, then
    varies from run to run.
    """
    from joblib import effective_n_jobs  # type: ignore[import-untyped]
    from joblib.parallel import get_active_backend  # type: ignore[import-untyped]

    if effective_n_jobs(n_jobs) == 1:  # None: joblib's context decides (default 1)
        return
    backend, _ = get_active_backend()
    if getattr(backend, "uses_threads", False):
        return
    if ledger.path is None:
        raise InvalidArgumentError(
            f"{what}: n_jobs={n_jobs!r} fits in worker processes, and this Ledger lives in "
            "memory: another process cannot share it, and dpledger never copies a budget (each "
            "worker would get one of its own). Keep the ledger in a file — Ledger(epsilon, "
            "delta, path='study.ledger'): every worker reopens the same file, whose "
            "transactions keep one budget — or fit in threads (inside `with "
            "joblib.parallel_config(backend='threading'):`), or use n_jobs=1. " + _NOTHING_DONE
        )
    try:
        import pickle

        pickle.dumps(ledger)
    except (TypeError, InvalidArgumentTypeError) as refused:
        raise InvalidArgumentError(
            f"{what}: n_jobs={n_jobs!r} fits in worker processes, which must reopen the ledger, "
            f"and this one cannot travel to them: {refused} Fit in threads (inside `with "
            "joblib.parallel_config(backend='threading'):`) or use n_jobs=1. " + _NOTHING_DONE
        ) from None


def _rows(X: Any) -> int:
    from sklearn.utils.validation import _num_samples

    return int(_num_samples(X))


def _take(values: Any, indices: np.ndarray) -> Any:
    from sklearn.utils import _safe_indexing

    return _safe_indexing(values, indices)


def fit_params_for(params: dict[str, Any] | None, n: int, indices: np.ndarray) -> dict[str, Any]:
    """The fit parameters of the rows ``indices``: per-row arrays indexed, others as given.

    As scikit-learn's cross-validation indexes them for each fold.
    """
    out: dict[str, Any] = {}
    for name, value in (params or {}).items():
        per_row = hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict))
        out[name] = _take(value, indices) if per_row and len(value) == n else value
    return out


def fit_schedules(
    estimator: Any,
    X: Any,
    y: Any,
    trainings: Sequence[np.ndarray | None],
    params: dict[str, Any] | None,
) -> list[tuple[Any, ...]]:
    """Each fit's releases, previewed on its training rows (None: all of them), in order.

    A clone of ``estimator`` is previewed for each fit: nothing is charged, drawn or
    claimed, and ``estimator`` is left as it was.
    """
    from sklearn.base import clone

    n = _rows(X)
    schedules = []
    for train in trainings:
        if train is None:
            Xt, yt, fit_params = X, y, dict(params or {})
        else:
            Xt = _take(X, train)
            yt = None if y is None else _take(y, train)
            fit_params = fit_params_for(params, n, train)
        preview = clone(estimator).preview(Xt, yt, **fit_params)
        schedules.append(tuple(preview.schedule))
    return schedules


def _bare(amount: str) -> str:
    """A printed budget without its outer parentheses (it is printed inside others)."""
    return amount[1:-1] if amount.startswith("(") and amount.endswith(")") else amount


def _events(schedules: Sequence[Sequence[Any]]) -> list[ev.Event]:
    return [as_event(item, None, None) for schedule in schedules for item in schedule]


def _price_one(ledger: Ledger, schedules: Sequence[Sequence[Any]], what: str) -> RunPrice:
    """The :class:`RunPrice` of one sequence of fits (checked, not raised)."""
    events = _events(schedules)
    delta = float(ledger.delta)
    composed = events[0] if len(events) == 1 else ev.Composed(tuple(events))
    tightest = float(accountant.epsilon(composed, delta))
    currency, amount = price_schedule(ledger, events)
    make = _BUDGETS.get(currency)
    if make is None:
        cost, epsilon = f"{currency} " + ", ".join(up(a, 4) for a in amount), tightest
    else:
        budget = make(*amount)
        cost, epsilon = _bare(str(budget)), float(budget.epsilon_at(delta))
    remaining = ledger.remaining
    try:
        ledger.check(events)
        fits_budget = True
    except BudgetExceededError:
        fits_budget = False
    return RunPrice(
        what=what,
        fits=len(schedules),
        releases=len(events),
        epsilon=epsilon,
        tightest_epsilon=tightest,
        delta=delta,
        cost=cost,
        remaining_epsilon=float(remaining.epsilon_at(delta)),
        remaining=_bare(remaining.native()),
        fits_budget=fits_budget,
        schedules=tuple(tuple(s) for s in schedules),
    )


def price_sequences(
    ledger: Ledger, sequences: Sequence[Sequence[Sequence[Any]]], what: str, *, refuse: bool
) -> RunPrice:
    """Price each possible sequence of fits; the run fits only if every one does.

    A grid search's refit is one of several candidates, unknown until the folds are
    scored: each candidate's refit appended to the folds is one sequence. With
    ``refuse`` (the run is about to start), an over-budget run raises
    :class:`~dpledger.errors.BudgetExceededError` stating the dearest sequence's price,
    and a run that fits keeps the filter an undecided automatic ledger settles on for the
    whole run (:meth:`Ledger.check <dpledger.Ledger.check>` with ``decide=True``).
    Without it nothing about the ledger changes (a price only).
    """
    prices = [_price_one(ledger, sequence, what) for sequence in sequences]
    refused = [p for p in prices if not p.fits_budget]
    worst = max(refused or prices, key=lambda p: (p.epsilon, p.releases))
    if refused and refuse:
        detail = ""
        try:
            ledger.check(_events(worst.schedules))
        except BudgetExceededError as error:
            detail = f" The ledger: {error}"
        remaining = ledger.remaining
        raise BudgetExceededError(
            f"{what}: refused before any fit. The whole run ({worst.fits} fits, "
            f"{worst.releases} releases) costs ε = {up(worst.epsilon, 4)} at δ = "
            f"{worst.delta:g} as the ledger accounts it ({worst.cost}), and ε ≈ "
            f"{down(worst.remaining_epsilon, 4)} remains ({worst.remaining}). (Composed "
            f"with the tightest method on their own, its releases cost ε = "
            f"{up(worst.tightest_epsilon, 4)}.){detail} {_NOTHING_DONE} Give the ledger more "
            "budget, or use fewer folds or candidates, or a smaller epsilon per fit (each "
            "fit's share).",
            requested=(worst.epsilon, worst.delta),
            remaining=remaining.as_tuple(),
        )
    if refuse and not refused:
        # the run goes ahead: keep the filter an undecided automatic ledger settles on for
        # the whole run (its first fit would otherwise settle it for its own releases)
        ledger.check(_events(worst.schedules), decide=True)
    return worst
