"""The estimator contract every private estimator in :mod:`dpledger.algorithms` follows.

* **scikit-learn conventions**: ``__init__`` stores keyword-only parameters; ``fit``
  validates, charges, releases and returns ``self``; fitted attributes end in ``_`` and
  are listed in the estimator's ``Attributes``; ``clone``, ``Pipeline`` and
  ``cross_val_score`` work.
* **Parameters declared once, checked once**: each estimator declares what every
  ``__init__`` parameter may be in one class-level table, ``_parameter_constraints``
  (:mod:`._params`; the shared ones here). :func:`fit_context` checks them all, and
  refuses a spent one-fit budget, before ``fit`` reads any data — every refusal that
  depends on public facts alone comes first — and ``fit`` reads the checked values.
* **Budget**: ``epsilon``/``delta`` are the guarantee *this fit* must meet. With
  ``ledger=None`` the estimator has a budget for *one* fit: its first fit gets a
  ``Ledger(epsilon, delta)`` (kept as ``ledger_``) that *plans* the fit's whole schedule,
  so the tightest non-adaptive method applies. That budget is shared by every copy
  (``sklearn.clone``, ``copy.deepcopy``: the folds and candidates of a cross-validation or
  grid search), so a second fit — of the estimator or of any copy — is refused
  (:class:`~dpledger.errors.BudgetExceededError`), never given a fresh budget; a pickled
  copy has no budget of its own at all. Whether a fit is refused depends only on
  whether the budget was used, never on the data.
  With a shared ``ledger``, the noise is calibrated in that ledger's own currency (a
  ledger of the same kind holding (ε, δ) would accept the schedule exactly), so the
  shared ledger accepts what was calibrated. Either way the whole schedule is checked
  against the ledger before the first release (a fit never stops half-way for lack of
  budget, and a refused fit records nothing and draws nothing); then each release is
  charged before its noise is drawn (:class:`~dpledger.ledger.Reservation`).
* **A budget is never duplicated**: ``copy``/``deepcopy`` of a :class:`~dpledger.Ledger`
  return the same ledger (so ``sklearn.clone`` shares it: every fold of a
  cross-validation draws on one budget), and pickling an in-memory ledger is refused.
  A fitted estimator pickles its own per-fit ``ledger_`` as a read-only record; the
  one-fit budget of ``ledger=None`` is never pickled (the copy cannot fit with it).
* **Variants**: ``"calibrated"`` (default) solves the noise so that all releases,
  composed jointly with the tightest valid method, meet (ε, δ); ``"published"`` uses
  the paper's constants — charged at their *true* cost, refused if that is over budget.
* **Data bounds are declared, never estimated**; rows outside are clipped to them.
  **Adjacency** is explicit and every sensitivity follows it. ``rng`` (a Generator or an
  int seed) makes a fit reproducible. ``releases_`` lists the events charged, in order.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar, overload

import numpy as np
from sklearn.base import BaseEstimator

from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.algorithms._params import (
    Boolean,
    Constraint,
    Delta,
    Epsilon,
    IsLedger,
    Options,
    Parameters,
    ParametersAsRead,
    RandomState,
    parameter_names,
    validate_parameters,
)
from dpledger.errors import BudgetExceededError, InvalidArgumentError, RepeatedNoiseWarning
from dpledger.ledger import Ledger, Reservation
from dpledger.ledger.planning import noise_generator
from dpledger.mechanisms.exact_value import ExactValue

__all__ = [
    "ADJACENCIES",
    "SHARED_DOCS",
    "VARIANTS",
    "PrivateEstimator",
    "RepeatedNoiseWarning",
    "Reservation",
    "fill_docstring",
    "fit_context",
    "noise_generator",
    "one_fit_budget",
    "store_parameters",
    "symmetric_from_upper",
    "upper",
]

#: set while :meth:`PrivateEstimator.preview` runs a fit up to its schedule
_PREVIEWING: contextvars.ContextVar[bool] = contextvars.ContextVar("_PREVIEWING", default=False)


class _Previewed(Exception):  # noqa: N818 - a signal, not an error
    """Raised by ``_reserve`` in a preview: the schedule, before anything is checked."""

    def __init__(self, reservation: Reservation) -> None:
        super().__init__("preview")
        self.reservation = reservation


ADJACENCIES = (ev.ADD_REMOVE, ev.REPLACE_ONE)
_T = TypeVar("_T")
VARIANTS = ("calibrated", "published")


def store_parameters(estimator: Any, parameters: dict[str, Any]) -> None:
    """Store an ``__init__``'s parameters on ``estimator``, as given (nothing validated).

    Call it as the whole body of ``__init__``: ``store_parameters(self, locals())``. Each
    parameter becomes the attribute of its name, which is all scikit-learn's contract asks
    of ``__init__`` (``get_params``, ``set_params`` and ``clone`` read the signature and
    these attributes); ``fit`` checks them. ``self`` and ``__class__`` are skipped, so no
    other local may exist when it is called.
    """
    for name, value in parameters.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class _Lineage:
    """The one-fit budget of an estimator with ``ledger=None``, shared by all its copies.

    ``copy.copy``, ``copy.deepcopy`` and ``sklearn.clone`` (through
    :meth:`PrivateEstimator.__sklearn_clone__`) return the estimator's copy with *this*
    object, so an estimator and its copies draw on one budget: the first fit among them
    claims it (:meth:`claim`), every later fit is refused. Pickling cannot share an
    object across processes, so a pickled copy is restored without a budget (it refuses
    every fit with ``ledger=None``); otherwise n_jobs > 1 cross-validation would give each
    worker's copy a budget of its own. Every refusal depends on public facts only (this
    budget was used, or is a copy's), never on the data.
    """

    def __init__(self, *, copy: bool = False) -> None:
        self._lock = threading.Lock()
        self.used = False
        self.copy = copy

    def __copy__(self) -> _Lineage:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Lineage:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restored_lineage, ())

    def refuse(self, owner: str, budget: tuple[float, float], *, has_ledger: bool = True) -> None:
        """Raise :class:`BudgetExceededError` if this budget is spent or a pickled copy's.

        ``has_ledger``: the owner takes a ``ledger`` parameter (the message says how to
        pass one); else the only way to a new budget is a new object.
        """
        if not (self.used or self.copy):
            return
        epsilon, delta = budget
        if self.copy:
            what = (
                "it was copied by pickling (as joblib does for n_jobs > 1), and a copy never "
                "gets a budget of its own"
            )
        else:
            what = (
                "an earlier fit of this estimator, or of a copy of it (sklearn.clone, "
                "copy.deepcopy: every fold and candidate of a cross-validation or grid "
                "search is one), has spent it"
            )
        owned = f"a budget (epsilon={epsilon:g}, delta={delta:g}) for one fit, and {what}."
        if not has_ledger:
            message = f"{owner} has {owned} Construct a new {owner} for a new budget."
        else:
            message = (
                f"{owner} has ledger=None: {owned} To fit several times (cross-validation, "
                "grid search, a refit), pass one shared Ledger sized for all the fits, e.g. "
                "ledger=Ledger(epsilon=k*epsilon, delta=k*delta) for k fits (a file Ledger, "
                "Ledger(..., path=...), is shared by its path across processes). To start a "
                f"new budget on purpose, construct a new estimator ({owner}(**est.get_params()))"
                " or set_params(ledger=Ledger(...)). (cross_val_score turns this error into "
                "nan scores and a FitFailedWarning; error_score='raise' raises it.)"
            )
        raise BudgetExceededError(message, requested=(epsilon, delta), remaining=(0.0, 0.0))

    def claim(
        self,
        owner: str,
        budget: tuple[float, float],
        open_ledgers: Callable[[], _T],
        *,
        has_ledger: bool = True,
    ) -> _T:
        """What ``open_ledgers()`` returns (the fit's ledgers), as this budget's one fit.

        Refused if the budget is used. Atomic: of two copies fitting at once (threads),
        one gets the budget. Ledgers that refuse to open (a schedule over budget) leave
        the budget unused.
        """
        with self._lock:
            self.refuse(owner, budget, has_ledger=has_ledger)
            opened = open_ledgers()
            self.used = True
            return opened


_LINEAGE_LOCK = threading.Lock()


def _restored_lineage() -> _Lineage:
    return _Lineage(copy=True)


def one_fit_budget(holder: Any) -> _Lineage:
    """The one-fit budget ``holder`` and its copies share (created on first use).

    Kept in ``holder.__dict__`` (not a parameter: ``get_params`` and ``set_params`` never
    see it), so it must exist *before* a copy is taken; every copy path calls this.
    """
    with _LINEAGE_LOCK:  # one object fitted from two threads at once still gets one budget
        lineage = holder.__dict__.get("_one_fit_budget")
        if not isinstance(lineage, _Lineage):
            lineage = _Lineage()
            holder.__dict__["_one_fit_budget"] = lineage
        return lineage


_FITTING = threading.local()  # the parameters of the fits running in this thread


def _fits_running() -> dict[int, Parameters]:
    """id(estimator) → its checked parameters, for the fits running in this thread."""
    running: dict[int, Parameters] | None = _FITTING.__dict__.get("running")
    if running is None:
        running = _FITTING.__dict__["running"] = {}
    return running


_E = TypeVar("_E", bound="PrivateEstimator")
_P = ParamSpec("_P")


def fit_context(fit: Callable[Concatenate[_E, _P], _T]) -> Callable[Concatenate[_E, _P], _T]:
    """Decorate an estimator's ``fit``: check the parameters, and the budget, before it runs.

    scikit-learn's ``_fit_context`` for dpledger. Before the decorated ``fit`` reads any
    data, every parameter is checked against the estimator's ``_parameter_constraints``
    and its ``_check_parameters`` (:meth:`PrivateEstimator._validate_params`), and with
    ``ledger=None`` a spent one-fit budget is refused (:func:`one_fit_budget`): every
    refusal that depends on public facts alone comes first, so a refused fit — a fold of
    a cross-validation — reads no data. ``fit`` then reads the checked values as
    ``self._params`` (for this fit, in this thread).
    """

    @functools.wraps(fit)
    def checked_fit(self: _E, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with self._checked_parameters() as params:
            if params.ledger is None:
                budget = (params.epsilon, params.delta)
                one_fit_budget(self).refuse(type(self).__name__, budget)
            names = feature_names(args[0] if args else kwargs.get("X"))
            result = fit(self, *args, **kwargs)
            if names is None:
                self.__dict__.pop("feature_names_in_", None)
            else:
                self.feature_names_in_ = names
            return result

    return checked_fit


def feature_names(X: Any) -> np.ndarray | None:
    """A DataFrame's column names when all are strings (scikit-learn's rule), else None.

    The column names are the schema (public); ``predict`` and ``transform`` then refuse a
    frame whose columns are renamed or reordered, which would silently misread them.
    """
    columns = getattr(X, "columns", None)
    if columns is None or getattr(X, "ndim", 2) != 2:
        return None
    names = list(columns)
    if not names or not all(isinstance(name, str) for name in names):
        return None
    return np.asarray(names, dtype=object)


class PrivateEstimator(BaseEstimator):  # type: ignore[misc]
    """Base class: parameter checks, budget, ledger and receipts shared by the estimators.

    Subclasses define their parameters in ``__init__`` (keyword-only, stored as given by
    :func:`store_parameters`) and declare what each may be in ``_parameter_constraints``
    (the shared ones here, extended by each class); ``fit`` is decorated with
    :func:`fit_context`, reads the checked values as ``self._params``, plans its schedule
    with :meth:`_reserve` (the one planning path, :meth:`Ledger.reserve
    <dpledger.Ledger.reserve>`) and releases it with :meth:`_release` (or the
    reservation's ``release``, step by step).
    """

    #: parameter → :class:`~._params.Constraint`, checked at the start of every fit
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        "epsilon": Epsilon(),
        "delta": Delta(),
        "adjacency": Options(ADJACENCIES, why="declared, never assumed"),
        "variant": Options(VARIANTS),
        "ledger": IsLedger(),
        "safe_noise": Boolean(),
        "rng": RandomState(),
    }

    #: the values of shared parameters an estimator does not expose (it supports only
    #: these), read from ``self._params`` like the checked ones
    _fixed_parameters: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fill_docstring(cls)  # the descriptions every estimator shares (:data:`SHARED_DOCS`)
        if "__init__" in vars(cls):  # a parameter without a constraint is a programming error
            names = parameter_names(cls)
            missing = [n for n in names if n not in cls._parameter_constraints]
            exposed = [n for n in names if n in cls._fixed_parameters]
            if missing or exposed:
                raise TypeError(
                    f"{cls.__name__}: no constraint for {missing}; fixed yet exposed: {exposed}."
                )

    # -- parameter checks (at fit time: __init__ only stores) --------------------------

    def _validate_params(self) -> Parameters:
        """Every parameter checked, in the order of ``__init__``'s signature; nothing else read.

        Each against its entry of ``_parameter_constraints``, then together by
        :meth:`_check_parameters`. Returns the checked (converted) values, with the
        ``_fixed_parameters``.
        """
        owner = type(self).__name__
        values = {name: getattr(self, name) for name in parameter_names(type(self))}
        checked = validate_parameters(self._parameter_constraints, values, owner)
        params = Parameters({**self._fixed_parameters, **checked})
        self._check_parameters(params)
        return params

    def _check_parameters(self, params: Parameters) -> None:
        """Checks relating several parameters (each alone is checked by its constraint)."""
        ledger = params.ledger
        if ledger is not None and ledger.adjacency != params.adjacency:
            raise InvalidArgumentError(
                f"`adjacency` {params.adjacency!r} differs from the ledger's "
                f"{ledger.adjacency!r}: the sensitivities must match the ledger's neighbours."
            )

    @contextlib.contextmanager
    def _checked_parameters(self) -> Iterator[Parameters]:
        """The checked parameters, readable as ``self._params`` within the ``with`` block."""
        params = self._validate_params()
        running = _fits_running()
        outer = running.get(id(self))
        running[id(self)] = params
        try:
            yield params
        finally:
            if outer is None:
                del running[id(self)]
            else:
                running[id(self)] = outer

    @property
    def _params(self) -> Parameters:
        """The checked parameters: those of the fit running on this estimator (in this thread).

        Outside a fit (a private helper called on its own), each parameter is checked by
        its constraint as it is read (:class:`~._params.ParametersAsRead`).
        """
        params = _fits_running().get(id(self))
        if params is None:
            return ParametersAsRead(self, self._parameter_constraints, self._fixed_parameters)
        return params

    def _fitted_input(self, X: Any, attribute: str) -> Any:
        """``X`` for predict/transform: fitted first, validated, with fit's feature count.

        A dask DataFrame comes back as a dask array (lazy: never gathered).
        """
        from sklearn.utils.validation import check_is_fitted

        from dpledger.algorithms import _data

        check_is_fitted(self, attribute)
        fitted = getattr(self, "feature_names_in_", None)
        names = feature_names(X)
        if fitted is not None and names is not None and list(names) != list(fitted):
            raise InvalidArgumentError(
                f"`X` must have the columns the estimator was fitted on, in the same order: "
                f"{list(fitted)!r}. Found {list(names)!r} (reordered or renamed columns "
                "would be read as the wrong features)."
            )
        if fitted is not None and names is None and hasattr(X, "shape"):
            warnings.warn(
                f"X has no feature names, but {type(self).__name__} was fitted with them; "
                "its columns are taken in the fitted order.",
                UserWarning,
                stacklevel=3,
            )
        X = _data.as_design(X)
        if X.shape[1] != self.n_features_in_:
            raise InvalidArgumentError(
                f"`X` must have the {self.n_features_in_} features of fit: X has {X.shape[1]} "
                f"features, but {type(self).__name__} is expecting {self.n_features_in_} "
                "features as input."
            )
        if _data.is_dask(X) and hasattr(X, "to_dask_array"):
            X = X.to_dask_array().astype(float)
        return X

    # -- the schedule: the one planning path (Ledger.reserve) ---------------------------

    def _reserve(
        self,
        schedule: Callable[[float], Sequence[Any]] | Sequence[Any],
        ledger: Ledger | None,
        *,
        initial: float = 1.0,
    ) -> Reservation:
        """This fit's schedule, planned by :meth:`Ledger.reserve <dpledger.Ledger.reserve>`.

        ``schedule``: p ↦ the fit's mechanisms at noise p (calibrated), or the mechanisms
        themselves (a published variant's fixed noise). Without a shared ``ledger``: the
        estimator's one-fit ledger of (ε, δ), which *plans* the schedule when it opens
        (claiming the one-fit budget, atomically: a second fit of this estimator or a copy
        is refused). With one: calibrated for (ε, δ) in that ledger's currency and checked
        against it when it opens. Nothing is recorded until :meth:`_release`.
        """
        params = self._params
        epsilon, delta, safe = params.epsilon, params.delta, params.safe_noise
        name = type(self).__name__
        if ledger is not None:
            reservation = ledger.reserve(
                schedule, epsilon=epsilon, delta=delta, initial=initial, rng=params.rng, safe=safe
            )
            if _PREVIEWING.get():
                raise _Previewed(reservation)
            return reservation
        own = Ledger(epsilon, delta, adjacency=params.adjacency)
        reservation = own.reserve(
            schedule, plan=True, initial=initial, rng=params.rng, label=f"{name}.fit", safe=safe
        )
        if _PREVIEWING.get():
            raise _Previewed(reservation)

        def claim(open_now: Callable[[], None]) -> None:
            # this estimator's one-fit budget, shared with its copies: a second fit (of
            # it, a clone or a deepcopy) is refused, never given a fresh budget
            one_fit_budget(self).claim(name, (epsilon, delta), open_now)

        reservation.guard(claim)
        return reservation

    def preview(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """What :meth:`fit` would release and spend, without releasing or spending anything.

        Runs the fit up to its schedule — the mechanisms at their calibrated noise, which
        depend only on public quantities (the parameters, the bounds, the number of
        features) — and stops before the first charge: nothing is recorded, no noise is
        drawn, the one-fit budget is not claimed, and the estimator is left as it was.
        Returns a :class:`~dpledger.algorithms.Preview` (mechanisms, noise scales, the
        cost in ε and in the ledger's currency, whether it fits). The statistics are
        computed on the way (the schedule's dimensions come from ``X``'s shape) but
        never shown.
        """
        from dpledger.algorithms import _preview

        kept = dict(self.__dict__)
        own = (float(self._validate_params().epsilon), float(self._validate_params().delta))
        token = _PREVIEWING.set(True)
        try:
            self.fit(X, y, **fit_params)
        except _Previewed as stopped:
            reservation = stopped.reservation
        else:  # pragma: no cover - every estimator plans through _reserve
            raise InvalidArgumentError(f"{type(self).__name__}.fit has no schedule to preview.")
        finally:
            _PREVIEWING.reset(token)
            self.__dict__.clear()
            self.__dict__.update(kept)
        return _preview.schedule_preview(type(self).__name__, reservation, own)

    def _release(self, reservation: Reservation, named: Sequence[tuple[str, Any]]) -> list[Any]:
        """Release the whole schedule: ``named`` is each release's (name, statistic).

        Every statistic is validated before the first charge (a callable statistic, of the
        outputs so far, when it is computed); sets ``ledger_`` and ``releases_``.
        """
        outputs = reservation.release_all(named, prefix=f"{type(self).__name__}: ")
        self._keep(reservation)
        return outputs

    def _keep(self, reservation: Reservation) -> None:
        """Set ``ledger_`` and ``releases_`` (the events charged, in order) after a fit."""
        self.ledger_ = reservation.ledger
        self._own_ledger = reservation.planned
        self.releases_ = list(reservation.events)

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: noisy (never deterministic), dense input, no NaN."""
        tags = super().__sklearn_tags__()
        # fresh noise every fit: a shared ledger's position enters even a fixed seed
        # (:func:`~dpledger.ledger.planning.noise_generator`), so two fits differ
        tags.non_deterministic = True
        tags.input_tags.sparse = False  # refused by name (`X` must be dense)
        tags.input_tags.allow_nan = False  # a record is finite numbers (docs/algorithms.md)
        return tags

    # -- a budget is never duplicated --------------------------------------------------

    def __sklearn_clone__(self) -> Any:
        """``sklearn.clone``: a new unfitted estimator with the same parameters and budget.

        The copy shares the ledger (a parameter) and, with ``ledger=None``, the one-fit
        budget (:func:`one_fit_budget`): the folds of a cross-validation never get a fresh
        budget each.
        """
        lineage = one_fit_budget(self)
        twin = super().__sklearn_clone__()
        twin.__dict__["_one_fit_budget"] = lineage
        return twin

    def __getstate__(self) -> dict[str, Any]:
        # the one-fit budget exists before any copy (deepcopy shares it; pickling restores
        # a copy without a budget: see _Lineage)
        one_fit_budget(self)
        state = dict(super().__getstate__())
        fitted = state.get("ledger_")
        if fitted is not None and state.get("_own_ledger") and fitted.path is None:
            planned = fitted.planned_remaining
            if planned is not None and not planned:
                # this fit's own ledger: its plan, all of it spent — kept as a record
                state["ledger_"] = _LedgerRecord(fitted.to_dict())
        # any other in-memory ledger (a shared one) refuses to be pickled: never duplicated
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        record = state.get("ledger_")
        if isinstance(record, _LedgerRecord):
            state = {**state, "ledger_": record.restore()}
        super().__setstate__(state)


#: The ``Args`` and ``Attributes`` entries that many estimators share, each written once:
#: a docstring names one by its placeholder (``{ledger}``) and :func:`fill_docstring` puts
#: it in (for every estimator, when its class is defined). Continuation lines carry the
#: indentation of an estimator's docstring.
SHARED_DOCS: dict[str, str] = {
    "x_bound": "x_bound: Declared bound on each row's L2 norm (rows beyond are clipped).",
    "y_bound": "y_bound: Declared bound on |y| (values beyond are clipped).",
    "adjacency": 'adjacency: "add_remove" or "replace_one" (declared).',
    "fit_intercept": "fit_intercept: Fit an intercept (a public constant column).",
    "variant": 'variant: "calibrated" or "published".',
    "ledger": (
        "ledger: A shared ledger to draw on, or None: a planned ledger for one fit, shared\n"
        "            with every copy (a second fit, or a clone's, is refused)."
    ),
    "safe_noise": "safe_noise: Exact discrete noise (default) or floating-point noise.",
    "rng": "rng: numpy Generator or int seed (reproducible), or None (OS-seeded).",
    "classes": (
        "classes: The two class labels, e.g. ``('<=50K', '>50K')`` or ``(-1, 1)``, or None:\n"
        "            from ``y``'s dtype (bool: (False, True); numbers: (0, 1); a two-category\n"
        "            pandas Categorical: its categories; strings must be declared). Rows of\n"
        "            any other label are dropped (never refused); which labels occur is\n"
        "            never read."
    ),
    "classes_": (
        "classes_: The two classes, sorted (declared or from ``y``'s dtype, never read from\n"
        "            the labels); ``classes_[1]`` is the positive class of ``predict_proba``."
    ),
    "n_features_in_": "n_features_in_: The number of features (columns) of ``X`` in fit.",
    "ledger_": (
        "ledger_: The ledger charged: the shared ``ledger``, or this fit's own planned one."
    ),
}
#: the three entries that end most estimators' ``Args``, one after the other
SHARED_DOCS["ledger_safe_noise_rng"] = "\n        ".join(
    SHARED_DOCS[name] for name in ("ledger", "safe_noise", "rng")
)


def fill_docstring(*owners: Any, **parts: str) -> None:
    """Put ``parts``, then :data:`SHARED_DOCS`, into each owner's docstring at ``{name}``.

    For estimators that share many parameters or fitted attributes: each shared
    description is written once (with the indentation of the lines it continues). A part
    may itself name a shared description.
    """
    for owner in owners:
        doc = owner.__doc__
        if doc is not None:  # (without one, a class keeps inheriting its base's)
            for name, text in {**parts, **SHARED_DOCS}.items():
                doc = doc.replace("{" + name + "}", text)
            owner.__doc__ = doc


@dataclass(frozen=True)
class _LedgerRecord:
    """A fitted estimator's own per-fit ledger, pickled as its receipts.

    The per-fit ledger planned this fit's releases and all of them were made, so it
    accepts nothing more: restoring it duplicates no budget, only the record.
    """

    data: dict[str, Any]

    def restore(self) -> Ledger:
        return Ledger.from_dict(self.data)


def symmetric_from_upper(values: np.ndarray, dimension: int) -> np.ndarray:
    """The symmetric matrix whose scaled upper triangle is ``values`` (see :func:`upper`)."""
    rows, cols = np.triu_indices(dimension)
    out = np.zeros((dimension, dimension))
    scale = np.where(rows == cols, 1.0, 1.0 / math.sqrt(2.0))
    out[rows, cols] = values * scale
    out[cols, rows] = values * scale
    return out


@overload
def upper(matrix: ExactValue) -> ExactValue: ...
@overload
def upper(matrix: np.ndarray) -> np.ndarray: ...
def upper(matrix: Any) -> Any:
    """w(M) = (Mᵢᵢ, √2·Mᵢⱼ for i < j): ‖w(M)‖₂ = ‖M‖_F for symmetric M.

    An :class:`~dpledger.mechanisms.ExactValue` stays exact (√2 carried symbolically, so
    the mechanism floors the exact w(M) to its grid).

    Gaussian noise N(0, σ²I) on w(M), mapped back, is symmetric noise with variance σ²
    on the diagonal and σ²/2 off it (the distribution of (Z + Zᵀ)/2 used by Wang 2018):
    the Gaussian mechanism in Frobenius geometry, whose L2 sensitivity is the Frobenius
    norm of the change (‖xxᵀ‖_F = ‖x‖² for one row).
    """
    dimension = matrix.shape[0]
    rows, cols = np.triu_indices(dimension)
    if isinstance(matrix, ExactValue):
        return matrix[rows, cols].scaled_root2(rows != cols)
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    return np.asarray(matrix[rows, cols] * scale, dtype=float)


__dir__ = namespace(__all__)
