"""What the linear estimators share: the fitted predictor, the mixins, the unit-ball statistics.

* :class:`LinearModel` — every estimator whose release is a linear predictor
  x·``coef_`` + ``intercept_``: the sufficient-statistics family, objective and output
  perturbation, KNG and the exponential mechanism.
* :class:`LinearRegressorMixin`, :class:`BinaryClassifierMixin` — what a regressor and a
  classifier of two public classes (:mod:`._labels`) expose on top of it, with their
  scikit-learn tags (scikit-learn's ``RegressorMixin`` or ``ClassifierMixin``: a
  classifier is never a regressor).
* :class:`SufficientStatisticsModel` — the estimators that release noisy sums over rows
  scaled onto the unit ball (SSP, ADASSP, IRLS, the functional mechanism, noisy gradient
  descent): the row map, the statistics and the mapping back to data units.
* :func:`solve_ridge` — the noisy normal equations, robust to indefinite noise.

Everything after a release here is post-processing of released values.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol

import numpy as np
from scipy import special
from sklearn.base import ClassifierMixin, RegressorMixin

from dpledger._public import namespace
from dpledger.algorithms import _data, _labels
from dpledger.algorithms._params import Boolean, Bound, Constraint, Options
from dpledger.algorithms._rows import enforce_unit_norm, scale_rows
from dpledger.algorithms.base import PrivateEstimator
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms import Gaussian

__all__ = [
    "FALLBACK_RIDGE",
    "BinaryClassifierMixin",
    "LinearModel",
    "LinearRegressorMixin",
    "SufficientStatisticsModel",
    "data_units",
    "solve_ridge",
]

#: The ridge used when the noisy Gram matrix has no positive eigenvalue and no other
#: ridge applies (public, in scaled units: Wang's code adds the identity throughout).
FALLBACK_RIDGE = 1.0


def person_rows(
    X: Any, y: Any, privacy_id: Any, max_rows: int | None, rng: Any
) -> tuple[Any, Any, int]:
    """(X, y, k): each person's rows bounded to ``max_rows`` (k), or all rows (k = 1).

    With ``privacy_id`` (one id per row) the neighbouring data sets differ in one person;
    each person keeps at most ``max_rows`` rows, chosen at random within the person
    (:func:`dpledger.algorithms._tables.bound_contributions`: a function of that person's
    rows alone), and the caller scales its sensitivities by k. Rows without an id are
    dropped (record-local).
    """
    from dpledger.algorithms import _tables

    if privacy_id is None:
        if max_rows is not None:
            raise InvalidArgumentError(
                "`max_rows_per_id` bounds a person's rows: pass `privacy_id` to fit (each "
                "row's person). Without it every row is its own person."
            )
        return X, y, 1
    if max_rows is None:
        raise InvalidArgumentError(
            "`privacy_id` needs `max_rows_per_id`: the most rows one person may add (rows "
            "beyond it are dropped at random within the person; the noise grows with it)."
        )
    if _data.is_dask(X) or _data.is_dask(y) or _data.is_dask(privacy_id):
        raise InvalidArgumentTypeError(
            "`privacy_id` with dask input is not supported by the estimators yet (the "
            "descriptive queries support it): fit on in-memory data (numpy or pandas)."
        )
    ids = np.asarray(privacy_id.to_numpy() if hasattr(privacy_id, "to_numpy") else privacy_id)
    rows = len(X)
    if ids.ndim != 1 or ids.shape[0] != rows:
        raise InvalidArgumentError(
            f"`privacy_id` must hold one id per row of X ({rows}). Found shape {ids.shape}."
        )
    codes = _tables.person_codes(ids)
    inside = np.flatnonzero(codes >= 0)
    generator = np.random.default_rng(_tables.truncation_seed(rng))
    keep = np.zeros(rows, dtype=bool)
    keep[inside] = _tables.bound_contributions(
        codes[inside], None, _tables.Contribution(max_rows), 1, generator
    )
    chosen = np.flatnonzero(keep)
    X = X.iloc[chosen] if hasattr(X, "iloc") else np.asarray(X)[chosen]
    y = y.iloc[chosen] if hasattr(y, "iloc") else np.asarray(y)[chosen]
    return X, y, max_rows


def solve_ridge(gram: np.ndarray, moment: np.ndarray, ridge: float) -> np.ndarray:
    """θ = (M₊ + ridge·I)⁺ b for the noisy symmetric M, robust to indefinite noise.

    Post-processing of released values only: M is symmetrised and its eigenvalues
    projected onto [0, ∞). Directions left with no positive curvature (the projected ones,
    when ``ridge`` is 0) get no coefficient — a pseudo-inverse, never a division by a
    tiny number that would amplify the noise; if no direction is left at all (every
    eigenvalue of M non-positive and no ridge), :data:`FALLBACK_RIDGE` is used instead.
    """
    symmetric = (gram + gram.T) / 2.0
    values, vectors = np.linalg.eigh(symmetric)
    shifted = np.maximum(values, 0.0) + max(ridge, 0.0)
    keep = shifted > max(float(shifted.max()) * 1e-12, 1e-300)
    if not keep.any():
        shifted, keep = np.full_like(shifted, FALLBACK_RIDGE), np.ones_like(keep)
    projected = vectors.T @ moment
    coefficients = np.where(keep, projected / np.where(keep, shifted, 1.0), 0.0)
    return np.asarray(vectors @ coefficients)


def data_units(
    theta: np.ndarray, features: int, x_bound: float, y_scale: float, fit_intercept: bool
) -> tuple[np.ndarray, float]:
    """(coef, intercept) in data units from θ fitted on the scaled rows.

    The rows were divided by ``x_bound`` and, with an intercept, augmented by the constant
    column and divided by √2; the target was divided by ``y_scale`` (1 where the labels
    were not scaled). Post-processing of the released θ.
    """
    shrink = math.sqrt(2.0) if fit_intercept else 1.0
    coef = y_scale * theta[:features] / (x_bound * shrink)
    intercept = float(y_scale * theta[features] / shrink) if fit_intercept else 0.0
    return coef, intercept


class LinearModel(PrivateEstimator):
    """A private estimator whose release is the linear predictor x·``coef_`` + ``intercept_``."""

    coef_: np.ndarray
    intercept_: float

    def _margin(self, X: Any) -> Any:
        """x·coef_ + intercept_ for fitted input (dask: lazily, never gathered)."""
        X = self._fitted_input(X, "coef_")
        if _data.is_dask(X):
            return X @ self.coef_ + self.intercept_
        return np.asarray(X @ self.coef_ + self.intercept_)


class _HasMargin(Protocol):
    def _margin(self, X: Any) -> Any: ...  # pragma: no cover - a type only


class LinearRegressorMixin(RegressorMixin):  # type: ignore[misc]
    """A regressor's ``predict`` (and scikit-learn's R² ``score``) for a :class:`LinearModel`."""

    def predict(self: _HasMargin, X: Any) -> np.ndarray:
        """Predictions x·coef_ + intercept_ (post-processing of the released values)."""
        return self._margin(X)  # type: ignore[no-any-return]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # noise: small data at a small ε
        return tags


class BinaryClassifierMixin(ClassifierMixin):  # type: ignore[misc]
    """predict / predict_proba / decision_function of a logistic model of two classes.

    The two classes are public (:mod:`._labels`): the ``classes`` parameter, or ``y``'s
    schema (its dtype) — never the labels that occur, which are private. ``fit`` sets
    ``classes_`` (sorted, as scikit-learn's: the second is the positive class) and reads
    each row's label against them on its own; a row of any other label contributes
    nothing (it is never refused). Everything here is post-processing of the fitted
    coefficients.
    """

    classes_: np.ndarray

    def _label_codes(self, y: Any, rows: int | None) -> Any:
        """Each row's code (0, 1, or :data:`._labels.UNDECLARED`); sets ``classes_``.

        ``rows``: X's row count (None for dask input).
        """
        params: Any = self._params
        classes = _labels.declared_classes(params.classes, y, type(self).__name__)
        codes = _labels.label_codes(y, classes, rows)
        self.classes_ = classes
        return codes

    def decision_function(self: _HasMargin, X: Any) -> np.ndarray:
        """The log-odds of ``classes_[1]``: x·coef_ + intercept_."""
        return np.asarray(self._margin(X))

    def predict_proba(self, X: Any) -> np.ndarray:
        """[P(classes_[0]), P(classes_[1])] per row."""
        p = special.expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> Any:
        """The more probable class, in the labels of ``classes_`` (dask: lazily)."""
        margin = self._margin(X)
        classes = self.classes_
        if _data.is_dask(margin):
            return margin.map_blocks(
                lambda block: classes[(block > 0).astype(int)], dtype=classes.dtype
            )
        return classes[(np.asarray(margin) > 0).astype(int)]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # two classes, declared (classes=)
        tags.classifier_tags.poor_score = True  # noise: small data at a small ε
        return tags


_ROW_NORMS = ("clip", "unit")


class SufficientStatisticsModel(LinearModel):
    """Rows clipped to ``x_bound`` and scaled onto the unit ball; statistics; coefficients.

    Every row is clipped to the declared ``x_bound`` and divided by it (``row_norm=
    "clip"``) or scaled to norm 1 (``"unit"``, Wang's per-row normalisation); with
    ``fit_intercept`` a public constant column is appended and the row divided by √2, so
    ‖x̃‖ ≤ 1. The target is clipped to ``y_bound`` and divided by it, so |ỹ| ≤ 1.
    """

    #: the target is clipped to ``y_bound`` and divided by it (not labels of a classifier)
    _target_scaled: ClassVar[bool] = True

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **PrivateEstimator._parameter_constraints,
        "x_bound": Bound(),
        "y_bound": Bound(),
        "fit_intercept": Boolean(),
        "row_norm": Options(
            _ROW_NORMS,
            why="'clip': rows beyond x_bound are clipped to it; 'unit': every row scaled to "
            "norm x_bound, as in Wang's experiments",
        ),
    }

    def _rows(self) -> Any:
        """The map of a block of rows onto the unit ball (record-local)."""
        params = self._params
        x_bound, intercept = params.x_bound, params.fit_intercept
        unit = params.row_norm == "unit"

        def rows(X: np.ndarray) -> np.ndarray:
            Xs = scale_rows(X, x_bound, unit)
            if intercept:
                Xs = np.hstack([Xs, np.ones((Xs.shape[0], 1))]) / math.sqrt(2.0)
                enforce_unit_norm(Xs)
            return Xs

        return rows

    def _transform(self) -> _data.Transform:
        """Rows as :meth:`_rows` maps them, and the target clipped to ``y_bound``, scaled."""
        rows = self._rows()
        y_bound = self._params.y_bound

        def transform(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            ys = None if y is None else np.clip(y, -y_bound, y_bound) / y_bound
            return rows(X), ys

        return transform

    def _label_rows(self) -> _data.Transform:
        """Rows as :meth:`_rows` maps them, and the labels' codes as 0 and 1.

        A row of an undeclared label (code :data:`._labels.UNDECLARED`) becomes the zero
        row, which adds nothing to any sum (:func:`._labels.zero_undeclared`): record-local,
        never a refusal. For models of a binary outcome (the labels are not scaled).
        """
        rows = self._rows()

        def transform(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            Xs = rows(X)
            if y is None:
                return Xs, None
            return Xs, _labels.zero_undeclared(Xs, np.asarray(y, dtype=float))

        return transform

    def _statistics(self, X: Any, y: Any) -> tuple[_data.Statistics, int]:
        """X̃ᵀX̃ and X̃ᵀỹ (float, and exact for the releases), and the number of features."""
        X = _data.as_design(X)
        y = _data.as_target(y, None if _data.is_dask(X) else X.shape[0])
        stats = _data.sufficient_statistics(X, y, self._transform())
        self.n_features_in_ = int(X.shape[1])
        return stats, int(X.shape[1])

    def _gaussian(self, sigma: float, sensitivity: float, dimension: int) -> Gaussian:
        return Gaussian(sigma, sensitivity, dimension=dimension, safe=self._params.safe_noise)

    def _set_coefficients(
        self, theta: np.ndarray, features: int, y_scale: float | None = None
    ) -> None:
        """coef_ and intercept_ in data units (:func:`data_units`) from θ on the scaled rows.

        The target was divided by ``y_scale``: by default ``y_bound`` if the estimator
        scales its target (``_target_scaled``), else 1 (labels, or a loss's own domain).
        One mapping for every estimator (and for :class:`.cape.CapeFM`).
        """
        params = self._params
        if y_scale is None:
            y_scale = params.y_bound if self._target_scaled else 1.0
        scale = y_scale
        self.coef_, self.intercept_ = data_units(
            theta, features, params.x_bound, scale, params.fit_intercept
        )


__dir__ = namespace(__all__)
