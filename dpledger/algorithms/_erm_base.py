"""What objective and output perturbation share: the rows, the loss, the solver's settings.

:class:`RegularizedERM` is the base of :mod:`.erm`'s estimators: L2-regularised ERM for a
generalised linear loss over rows scaled to the declared ``x_bound`` (a public constant
column for the intercept), with the public row count N (``data_size``, or n under
replace-one), the row weights of the row-count clip (:mod:`._erm_bounds`) and the solver's
public step bound. Its parameters' constraints, and those of the losses and noises, are
here; the privacy arithmetic is in :mod:`._erm_privacy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpledger._public import namespace
from dpledger._validation import check_choice
from dpledger.accountant import events as ev
from dpledger.algorithms import _data, _labels
from dpledger.algorithms._erm_bounds import (
    _STEP_CAP,
    _gradient_steps,
    _row_weight,
    _smoothness,
    _weight_cap,
    _weight_factor,
)
from dpledger.algorithms._erm_losses import _Loss
from dpledger.algorithms._erm_privacy import NOISES
from dpledger.algorithms._labels import CLASSES
from dpledger.algorithms._linear_base import BinaryClassifierMixin, LinearModel
from dpledger.algorithms._params import (
    Boolean,
    Bound,
    Constraint,
    Integer,
    Options,
    OrNone,
    Parameters,
    Positive,
)
from dpledger.algorithms._rows import scale_rows, shrink_rows
from dpledger.algorithms.base import PrivateEstimator
from dpledger.errors import InvalidArgumentError

__all__ = ["MARGIN_LOSS", "MarginClassifier", "Noise", "RegularizedERM", "ResidualLoss"]


class ResidualLoss(Constraint):
    """A regressor's loss: "huber" (squared error is refused, naming the condition it breaks)."""

    def check(self, name: str, value: Any, owner: str) -> str:
        if isinstance(value, str) and value in ("squared", "squared_error", "linear"):
            raise InvalidArgumentError(
                f"`{name}` {value!r} violates objective perturbation's conditions: squared "
                "error has an unbounded gradient (|φ′| must be bounded). Use loss='huber' with "
                "`huber_threshold` κ ≥ the residuals you expect (least squares within κ)."
            )
        return check_choice(name, value, ("huber",))


@dataclass(frozen=True)
class Noise(Constraint):
    """One of :data:`NOISES` that this release accepts (``accepted``)."""

    accepted: tuple[str, ...]

    def check(self, name: str, value: Any, owner: str) -> str:
        noise = check_choice(name, value, NOISES)  # a known noise (and a string) first
        if noise not in self.accepted:
            raise InvalidArgumentError(
                f"{owner} takes noise='laplace' or 'gaussian': the minimiser's sensitivity is "
                "an ℓ₂ bound, so ℓ₁ noise has no sensitivity to be sized for "
                "(noise='l1_laplace' is objective perturbation's). Found 'l1_laplace'."
            )
        return noise


#: a classifier's losses (of the margin y·t, the classes' codes 0 and 1 mapped to −1 and +1)
MARGIN_LOSS = Options(("logistic", "huber"))


class MarginClassifier(BinaryClassifierMixin):
    """A :class:`RegularizedERM` fitted on two classes with a loss of the margin y·t.

    Put before the estimator's base: its ``loss`` is then one of :data:`MARGIN_LOSS`.
    """

    classifier = True


class RegularizedERM(LinearModel):
    """Rows, loss and solver shared by objective and output perturbation."""

    #: fitted on two classes (coded −1, +1), with a loss of the margin y·t
    #: (:class:`MarginClassifier`)
    classifier: ClassVar[bool] = False

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **PrivateEstimator._parameter_constraints,
        "loss": ResidualLoss(),
        "huber_width": Positive(),
        "huber_threshold": Positive(),
        "x_bound": Bound(),
        "l2_regularization": Positive(),
        "fit_intercept": Boolean(),
        "intercept_scaling": Positive(),
        "noise": Noise(NOISES),
        "data_size": OrNone(Positive()),
        "tol": Positive(),
        "max_iter": Integer(1),
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.classifier:  # a loss of the margin: refuse a regressor's loss by name
            cls._parameter_constraints = {
                **cls._parameter_constraints,
                "loss": MARGIN_LOSS,
                "classes": CLASSES,
            }
        super().__init_subclass__(**kwargs)

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        if params.noise == "gaussian" and params.delta == 0:
            raise InvalidArgumentError(
                "Gaussian noise gives (ε, δ)-DP: declare `delta` > 0, or use noise='laplace'."
            )
        if params.data_size is None and params.adjacency == ev.ADD_REMOVE:
            raise InvalidArgumentError(
                "under add/remove the row count is private: declare `data_size`, a public "
                "number of rows that normalises the objective. Found None."
            )
        bound, s = self._geometry(params)
        if not s / bound < 1e100:
            raise InvalidArgumentError(
                f"`intercept_scaling` / `x_bound` = {s!r} / {bound!r} is beyond the "
                "arithmetic of the bounds: choose comparable scales."
            )

    def _objective(self) -> tuple[_Loss, float, float, int]:
        """(loss, λ, tol, max_iter): the regularised objective and the solver's settings."""
        params = self._params
        return self._loss(), params.l2_regularization, params.tol, params.max_iter

    def _loss(self) -> _Loss:
        params = self._params
        if params.loss == "logistic":
            return _Loss("logistic", 1.0, 0.25)
        if self.classifier:
            h = params.huber_width
            return _Loss("huber_svm", 1.0, 1.0 / (2.0 * h), h)
        kappa = params.huber_threshold
        return _Loss("huber", kappa, 1.0, kappa)

    @staticmethod
    def _geometry(params: Parameters) -> tuple[float, float]:
        """(x_bound B, intercept column value s): R² = B² + s²."""
        return params.x_bound, (params.intercept_scaling if params.fit_intercept else 0.0)

    def _design(
        self, X: Any, y: Any, l1_bound: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, float, float | None]:
        """Scaled rows (‖x̃‖ ≤ R̃ = R/B), targets, the public N, R̃ and R̃₁ (ℓ₁, if declared).

        With an ℓ₁ bound B₁ each row is also clipped (scaled down) to ‖x‖₁ ≤ B₁ — a
        record-local map, like the ℓ₂ clip (:func:`~._rows.shrink_rows`: every row's
        *exact* ℓ₁ norm is ≤ B₁ afterwards) — and R̃₁ = B₁/B + s/B, raised by the rounding
        error of the computed ℓ₁ norms.

        Any number of rows: under add/remove the empty data set is a neighbour of every
        one-row data set, so it is fitted from zero statistics (the minimiser of the
        regulariser and the noise alone) like any other.
        """
        params = self._params
        bound, s = self._geometry(params)
        Xd = _data.as_design(X)
        if _data.is_dask(Xd):
            raise InvalidArgumentError(
                f"{type(self).__name__} takes in-memory data (numpy/pandas): the solver "
                "passes over the rows many times."
            )
        codes = None
        if self.classifier:
            # each label against the two public classes (never refused: whether a row
            # holds another label is private)
            codes = BinaryClassifierMixin._label_codes(self, y, Xd.shape[0])
        else:
            yd = np.asarray(_data.as_target(y, Xd.shape[0]), dtype=float)
        # C order whatever the input's layout, so pandas and numpy input give equal bits
        Xc = np.ascontiguousarray(Xd, dtype=float)
        radius_l1 = None
        if params.fit_intercept and l1_bound is None:
            # the scaled rows written straight next to the intercept column: one copy
            # of X, not two (the same bits as scaling, then appending the column)
            rows, p = Xc.shape
            Xs = np.empty((rows, p + 1))
            scale_rows(Xc, bound, unit=False, out=Xs[:, :p])
            Xs[:, p] = s / bound
        else:
            Xs = scale_rows(Xc, bound, unit=False)
            if l1_bound is not None:
                limit = l1_bound / bound
                shrink_rows(Xs, limit, "l1")
                # Σ|x̃ᵢ| computed ≤ limit; the exact sum is within γ_d of it
                slack = 1.0 + 2.0 * (Xs.shape[1] + 2) * 2.0**-53
                radius_l1 = (limit + s / bound) * slack
                radius_l1 = float(np.nextafter(radius_l1, math.inf))
            if params.fit_intercept:
                Xs = np.hstack([Xs, np.full((Xs.shape[0], 1), s / bound)])
        if codes is not None:
            # a row of an undeclared label becomes the zero row (its intercept column too):
            # φ(0; y) is constant, so it adds nothing to the objective, its gradient or
            # its Hessian — a record of the domain (‖0‖ ≤ R), counted like any other row.
            # Codes 0 and 1 become the margins' labels −1 and +1 (+1 on a zero row).
            labels = _labels.zero_undeclared(Xs, codes)
            yd = np.where(labels == 0.0, -1.0, 1.0)
        self.n_features_in_ = int(Xd.shape[1])
        ratio = s / bound
        radius = math.sqrt(1.0 + ratio * ratio) * (1 + 1e-15)
        return Xs, yd, self._size(Xs.shape[0]), radius, radius_l1

    def _size(self, rows: int) -> float:
        """The public N: ``data_size``, or under replace-one the row count (neighbours share it)."""
        if self._params.data_size is not None:
            return float(self._params.data_size)
        if rows == 0:  # n is public under replace-one (neighbours share it)
            raise InvalidArgumentError(
                "`X` has no rows, and without `data_size` the objective is normalised "
                "by the row count: declare `data_size`. Found 0 rows."
            )
        return float(rows)

    def _weighted_size(self, rows: int, size: float) -> float:
        """N/v(n): the data term's normaliser, so that it weighs each row v(n)/N."""
        return size / _row_weight(rows, size)

    def _row_factor(self, adjacency: str, size: float) -> float:
        """F of :func:`_weight_factor` under add/remove; 1 under replace-one (n shared)."""
        return _weight_factor(size) if adjacency == ev.ADD_REMOVE else 1.0

    def _fallback(
        self, loss: _Loss, radius: float, d: int, ridge: float, linear_norm: float, tol: float
    ) -> tuple[int, float]:
        """The provable gradient-descent phase's (steps, β̄); refuses beyond the cap.

        From public quantities only, before anything is charged: a fit whose public step
        bound (:func:`_gradient_steps`) exceeds the cap is refused for every data set
        alike, and a fit within it certifies for every data set (issue 31, F1).
        """
        steps = _gradient_steps(loss, radius, d, ridge, linear_norm, tol)
        if not steps <= _STEP_CAP:
            beta = _smoothness(loss, radius, ridge)
            width = ", or `huber_width` (c = 1/(2h))" if loss.name == "huber_svm" else ""
            raise InvalidArgumentError(
                f"the solver cannot be guaranteed to converge: its public bound is {steps:.3g} "
                f"gradient steps, above the {_STEP_CAP:.0e} allowed, because the objective's "
                f"public condition number 1 + V·c·R²/ridge = {beta / ridge:.3g} is too large "
                f"(ridge = {ridge!r}, c = {loss.c!r}, R² = {radius * radius:.6g}, "
                f"V = {_weight_cap():.4g} the most weight the rows can carry). Raise "
                f"`l2_regularization`{width}; lowering `intercept_scaling` relative to "
                "`x_bound`, or raising `tol`, helps less. This refusal depends on the "
                "parameters only, never on the data."
            )
        return int(steps), _smoothness(loss, radius, ridge)

    def _finish(self, theta: np.ndarray) -> None:
        params = self._params
        bound, s = self._geometry(params)
        p = self.n_features_in_
        self.coef_ = theta[:p] / bound
        self.intercept_ = float(theta[p] * s / bound) if params.fit_intercept else 0.0


__dir__ = namespace(__all__)
