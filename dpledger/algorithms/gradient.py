"""Noisy (stochastic) gradient descent for linear and logistic models: DP-SGD for convex models.

Every step releases the sum of the per-example gradients, each clipped to L2 norm
``clip`` (C), plus Gaussian noise N(0, σ²·I): one record moves the sum by at most C
(add/remove) or 2C (replace-one). With ``sampling_rate`` q each step uses a Poisson
sample of the rows (every row independently with probability q; add/remove adjacency,
the amplification theorem's). The T releases have noise fixed before the first one, so
the run is planned and composed with the tightest method: exactly by Gaussian DP
(Dong, Roth & Su 2019) without sampling, by PLD (Koskela et al. 2020) with it — σ is
calibrated for the whole run, and each step is charged before its noise is drawn.

Each step's sum is exact: the per-example gradient of these losses is rᵢ·xᵢ (rᵢ the
residual), so clipping it is weighting the row, and the rows are put on their grid once
for the whole run; a step grids only the n clipped weights, each kept so that its term's
*exact* norm is ≤ C (:class:`._data.ClippedRowSums` has the proof), and sums them in
integers — one pass over the rows, as fast as a floating-point loop.

The update is w ← w − η·(noisy sum)/n_public: ``data_size`` is a *public* row count
(under replace-one, the size of the data, which neighbours share; under add/remove it
must be declared — the true count would leak). Losses: squared error ½(xᵀw − y)² and
the logistic loss log(1 + e^{xᵀw}) − y·xᵀw (y ∈ {0, 1}, the two classes' codes; a row
of any other label is the zero row, whose gradient is 0), with optional ridge ``alpha``
(a data-independent term, added after the noise). ``n_iter_`` is the public step count.

For larger models, train with Opacus and account the run with dpledger (docs/training.md
shows how); this estimator is the convex-model baseline of the functional mechanism and
objective-perturbation families.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, TypeVar

import numpy as np
from scipy import special

from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._labels import CLASSES
from dpledger.algorithms._linear_base import (
    BinaryClassifierMixin,
    LinearRegressorMixin,
    SufficientStatisticsModel,
)
from dpledger.algorithms._params import (
    Bound,
    Constraint,
    Delta,
    Integer,
    NonNegative,
    OrNone,
    Parameters,
    Positive,
    Probability,
)
from dpledger.algorithms.base import Reservation, fill_docstring, fit_context, store_parameters
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import Gaussian

__all__ = ["MAX_STEPS", "NoisyGD", "NoisyGDClassifier"]

#: The most steps a run may take (each is a full or sampled pass over the rows).
MAX_STEPS = 10**7


class _Sampled:
    """A Gaussian release on a Poisson sample: charged as the sampled event it is."""

    def __init__(self, inner: Gaussian, rate: float) -> None:
        self.inner = inner
        self.rate = rate
        self.sigma = inner.sigma

    @property
    def event(self) -> ev.Event:
        return ev.PoissonSampled(self.inner.event, self.rate)

    def validate(self, value: Any) -> None:
        self.inner.validate(value)

    def release(self, value: Any, rng: Any = None) -> Any:
        return self.inner.release(value, rng)

    def __repr__(self) -> str:
        return f"PoissonSampled({self.inner!r}, rate={self.rate!r})"


_MAX_WEIGHT = 1e150
"""The public ball the iterate is projected onto after each step (never binds in practice)."""


_Self = TypeVar("_Self", bound="_NoisyGD")


class _NoisyGD(SufficientStatisticsModel):
    loss: ClassVar[str]

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **SufficientStatisticsModel._parameter_constraints,
        "delta": Delta(gaussian=True),
        "steps": Integer(1, MAX_STEPS, why="each is a pass over the rows"),
        "learning_rate": Positive(),
        # clipped gradients and their sums must stay normal floats
        "clip": Bound(limits=(2.0**-900, 2.0**470)),
        "sampling_rate": OrNone(Probability(low_open=True, high_open=False)),
        "data_size": OrNone(Positive()),
        "alpha": NonNegative(),
    }

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        if params.sampling_rate not in (None, 1.0) and params.adjacency != ev.ADD_REMOVE:
            raise InvalidArgumentError(
                "Poisson sampling is amplified under add/remove adjacency; declare "
                "adjacency='add_remove' (or sampling_rate=None for full batches)."
            )
        if not params.learning_rate * params.alpha < 2.0:
            raise InvalidArgumentError(
                f"`learning_rate` · `alpha` = {params.learning_rate!r} · {params.alpha!r} must "
                "be below 2: the ridge step w ← (1 − ηα)w diverges otherwise (and the fit would "
                "stop half-way after charging its steps)."
            )
        if params.data_size is None and params.adjacency == ev.ADD_REMOVE:
            raise InvalidArgumentError(
                "under add/remove the row count is private: declare `data_size`, a public "
                "(approximate) number of rows, to scale the steps. Found None."
            )

    def _rate(self) -> float | None:
        """The Poisson sampling rate, or None for full batches (every row every step)."""
        rate: float | None = self._params.sampling_rate
        return None if rate == 1.0 else rate  # rate 1: full batches, under either adjacency

    def _residuals(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """rᵢ: the gradient of row i's loss is rᵢ·xᵢ (σ(xᵢᵀw) − yᵢ, or xᵢᵀw − yᵢ)."""
        eta = X @ w
        residual = (special.expit(eta) - y) if self.loss == "logistic" else (eta - y)
        return np.asarray(residual, dtype=float)

    def _steps_plan(self, d: int, ledger: Any) -> Reservation:
        params = self._params
        epsilon, delta, adjacency, steps = (
            params.epsilon,
            params.delta,
            params.adjacency,
            params.steps,
        )
        rate = self._rate()
        sensitivity = params.clip * (2.0 if adjacency == ev.REPLACE_ONE else 1.0)
        safe = params.safe_noise

        def make(p: float) -> list[Any]:
            one = Gaussian(p * sensitivity, sensitivity, dimension=d, safe=safe)
            return [one if rate is None else _Sampled(one, rate)] * steps

        guess = math.sqrt(2 * steps * math.log(1.25 / delta)) / epsilon
        if rate is not None:
            guess *= max(rate, 1e-3)
        return self._reserve(make, ledger, initial=guess)

    @fit_context
    def fit(self: _Self, X: Any, y: Any) -> _Self:
        """Run the T noisy steps (all planned and checked before the first)."""
        params = self._params
        Xd = _data.as_design(X)
        if _data.is_dask(Xd):
            raise InvalidArgumentError(
                "noisy gradient descent takes in-memory data (numpy/pandas)."
            )
        logistic = self.loss == "logistic"
        if logistic:  # each label against the two public classes; others add nothing
            yd = BinaryClassifierMixin._label_codes(self, y, Xd.shape[0])
        else:
            yd = _data.as_target(y, Xd.shape[0])
        if params.data_size is None:  # replace-one: neighbours share the size, n is public
            size = float(Xd.shape[0])
            if size == 0:  # public under replace-one (every neighbour has no rows too)
                raise InvalidArgumentError(
                    "`X` has no rows: under replace-one the steps are scaled by the (public) "
                    "row count, and 0 rows leave no scale; declare `data_size`. Found 0 rows "
                    "and data_size=None."
                )
        else:
            size = float(params.data_size)
        transform = self._label_rows() if logistic else self._transform()
        Xs, ys = transform(Xd, yd)
        reservation = self._steps_plan(Xs.shape[1], params.ledger)
        w = self._descend(Xs, np.asarray(ys, dtype=float), size, reservation)
        self._keep(reservation)
        self.sigma_ = reservation.mechanisms[0].sigma
        self.n_iter_ = params.steps  # public: the schedule's step count, never the data's
        self.n_features_in_ = int(Xd.shape[1])
        self._set_coefficients(w, self.n_features_in_)
        return self

    def _descend(
        self, Xs: np.ndarray, labels: np.ndarray, size: float, reservation: Reservation
    ) -> np.ndarray:
        """The last iterate w: each step releases the clipped gradient sum, then moves w."""
        params = self._params
        rate_eta, alpha, clip = params.learning_rate, params.alpha, params.clip
        mechanisms = reservation.mechanisms
        generator = reservation.open().generator
        assert generator is not None
        rate = self._rate()
        d = Xs.shape[1]
        w = np.zeros(d)
        # the rows on their grid once; each step only the residuals change (the clipped
        # gradient of row i is bᵢ·xᵢ, summed exactly: see _data.ClippedRowSums)
        sums = _data.ClippedRowSums(Xs, clip)
        for t in range(len(mechanisms)):
            rows = None
            if rate is not None:
                rows = np.flatnonzero(generator.random(Xs.shape[0]) < rate)
            with np.errstate(over="ignore", invalid="ignore"):
                if rows is None:
                    residuals = self._residuals(Xs, labels, w)
                else:
                    residuals = self._residuals(Xs[rows], labels[rows], w)
            # a row whose residual is not finite contributes nothing (record-local); the
            # others are clipped to ‖bᵢxᵢ‖ ≤ clip exactly on the grid
            total = sums.sum(residuals, rows)
            label = f"{type(self).__name__}: step {t + 1}"
            noisy: np.ndarray = np.asarray(reservation.release(total, label=label))
            expected = size * (1.0 if rate is None else rate)
            w = w - rate_eta * (noisy / expected + alpha * w)
            norm_w = float(np.linalg.norm(w))
            if not norm_w <= _MAX_WEIGHT:  # post-processing: w stays finite whatever the noise
                w = np.zeros(d) if not math.isfinite(norm_w) else w * (_MAX_WEIGHT / norm_w)
        return w


class NoisyGD(LinearRegressorMixin, _NoisyGD):
    """Noisy gradient descent for linear regression (squared error), every step charged.

    Args:
        {budget}
        {x_bound}
        {y_bound}
        {adjacency}
        {steps}

    Attributes:
        coef_: The last iterate's coefficients in data units.
        intercept_: The intercept in the units of y (0.0 without ``fit_intercept``).
        {fitted}
    """

    loss = "linear"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        y_bound: float | None = None,
        adjacency: str | None = None,
        steps: int = 100,
        learning_rate: float = 1.0,
        clip: float = 1.0,
        sampling_rate: float | None = None,
        data_size: float | None = None,
        alpha: float = 0.0,
        fit_intercept: bool = True,
        row_norm: str = "clip",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class NoisyGDClassifier(BinaryClassifierMixin, _NoisyGD):
    """Noisy gradient descent for logistic regression (two classes).

    Same parameters as :class:`NoisyGD`, without ``y_bound`` and with ``classes``.

    Args:
        {budget}
        x_bound: Declared bound on each row's L2 norm.
        {adjacency}
        {classes}
        {steps}

    Attributes:
        coef_: The last iterate's coefficients: the log-odds per unit of each feature.
        intercept_: The log-odds at x = 0 (0.0 without ``fit_intercept``).
        {classes_}
        {fitted}
    """

    loss = "logistic"
    _target_scaled = False
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **_NoisyGD._parameter_constraints,
        "classes": CLASSES,
    }

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        adjacency: str | None = None,
        classes: Any = None,
        steps: int = 100,
        learning_rate: float = 1.0,
        clip: float = 1.0,
        sampling_rate: float | None = None,
        data_size: float | None = None,
        alpha: float = 0.0,
        fit_intercept: bool = True,
        row_norm: str = "clip",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


_BUDGET_ARGS = """epsilon: The ε the whole run must meet.
        delta: The δ the whole run must meet (> 0)."""

_STEPS_ARGS = """steps: T, the number of noisy steps.
        learning_rate: η.
        clip: C, the per-example gradient norm bound.
        sampling_rate: Poisson sampling rate q per step, or None for full batches.
        data_size: A public row count (required under add/remove).
        alpha: Ridge penalty (data-independent).
        {fit_intercept}
        row_norm: "clip" (default) or "unit".
        {ledger}
        safe_noise: Exact discrete noise (default; full batches only) or floating-point.
        {rng}"""

_FITTED = """sigma_: σ, the noise of every step's gradient sum.
        n_iter_: T, the number of steps run: the ``steps`` parameter (public; never a
            count that depends on the data).
        {n_features_in_}
        {ledger_}
        releases_: The events charged, one per step."""

fill_docstring(NoisyGD, NoisyGDClassifier, budget=_BUDGET_ARGS, steps=_STEPS_ARGS, fitted=_FITTED)

__dir__ = namespace(__all__)
