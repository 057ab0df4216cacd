"""Preprocessing that keeps privacy honest: statistics of the data are released and paid for.

Centring and scaling with the data's own means and standard deviations is a release of
those statistics; done silently before a private fit, it leaks (thesis ch. 3; SEED-NOTES
002). :class:`PrivateStandardScaler` releases them privately, charged to the ledger like
any estimator's releases (it follows the estimator contract of :mod:`.base`), and then
transforms with the released values only. Use it in a ``Pipeline`` before a private
regression, on the same ledger, or pass public constants to a ``FunctionTransformer``.

Each value is clipped to its feature's declared ``bounds`` [lo, hi] and mapped onto
u = (x − lo)/(hi − lo) ∈ [0, 1] (record-local), so every feature gets noise in
proportion to its own range. Releases, for one record:

* the per-feature sums Σu — L2 sensitivity √d (either adjacency: each moves by ≤ 1);
* the per-feature sums of squares Σu² — √d;
* the count n — 1 under add/remove; under replace-one n is public (neighbours have the
  same size) and is not released.

Means are lo + (hi − lo)·Σu/n, variances (hi − lo)²·(Σu²/n − (Σu/n)²), floored at the
larger of a thousandth of the range and three noise standard deviations of Σu²/n
(post-processing of released values), so the scaler costs its releases only.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from sklearn.base import OneToOneFeatureMixin, TransformerMixin

from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._params import Constraint, Delta
from dpledger.algorithms.base import PrivateEstimator, fit_context, store_parameters
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import Gaussian

__all__ = ["PrivateStandardScaler"]


def _unit_sums(X: Any, unit: _data.Transform, features: int) -> tuple[float, _data.ExactSums]:
    """(n, the exact sums: [Σu, Σu²] per feature, n), u ∈ [0, 1] on the grid of :mod:`._data`."""

    def rows(block: np.ndarray, _: Any) -> tuple[np.ndarray, None]:
        u, _ = unit(block, None)
        return np.hstack([u, u * u]), None

    def ones(Z: np.ndarray, _: Any) -> tuple[None, np.ndarray, np.ndarray]:
        return None, np.ones(Z.shape[0]), np.ones(Z.shape[0])

    spec = _data.Moments(
        ones, row_norm=math.sqrt(2 * features), b=(1.0, 1.0), c=(1.0, 1.0), gram=False
    )
    stats = _data.sufficient_statistics(X, None, rows, spec)
    return stats.scalar, stats.exact


class _FeatureBounds(Constraint):
    """Declared (lo, hi) bounds: one finite pair, or one per feature, lo < hi, finite width.

    Checked as an array of pairs (n, 2) or one pair (2,); whether there is one pair per
    feature needs the data's schema (its number of columns), so :func:`_per_feature`
    checks that in ``fit``.
    """

    def check(self, name: str, value: Any, owner: str) -> np.ndarray:
        if value is None:
            raise InvalidArgumentError(
                f"`{name}` must be declared, (lo, hi) for all features or one pair per "
                "feature: bounds are never estimated from the data. Found None."
            )
        try:
            pairs = np.asarray(value, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise InvalidArgumentError(
                f"`{name}` must be (lo, hi) pairs of finite numbers. Found {value!r}."
            ) from None
        if pairs.shape != (2,) and (pairs.ndim != 2 or pairs.shape[1] != 2):
            raise InvalidArgumentError(
                f"`{name}` must be one (lo, hi) pair, or one per feature. Found {value!r}."
            )
        if not np.all(np.isfinite(pairs)):
            raise InvalidArgumentError(
                f"`{name}` must be (lo, hi) pairs of finite numbers. Found {value!r}."
            )
        lo, hi = pairs[..., 0], pairs[..., 1]
        if not np.all(np.isfinite(hi - lo)):
            raise InvalidArgumentError(
                f"`{name}` must have a finite width hi − lo (rescale the data). Found {value!r}."
            )
        if np.any(lo >= hi):
            raise InvalidArgumentError(f"`{name}` must have lo < hi. Found {value!r}.")
        return pairs


def _per_feature(pairs: np.ndarray, features: int, given: Any) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per feature from checked ``bounds`` (one pair for all, or one per feature)."""
    if pairs.shape == (2,):
        pairs = np.tile(pairs, (features, 1))
    if pairs.shape != (features, 2):
        raise InvalidArgumentError(
            f"`bounds` must be one finite (lo, hi) pair, or {features} of them (one per "
            f"feature). Found {given!r}."
        )
    return pairs[:, 0], pairs[:, 1]


class PrivateStandardScaler(OneToOneFeatureMixin, TransformerMixin, PrivateEstimator):  # type: ignore[misc]
    """Standardise features with privately released means and standard deviations.

    Args:
        epsilon: The ε this fit must meet.
        delta: The δ this fit must meet (> 0: Gaussian releases).
        bounds: Declared (lo, hi) per feature — a pair for all features, or a sequence of
            pairs; values outside are clipped. Never estimated from the data.
        {adjacency}
        {ledger_safe_noise_rng}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import PrivateStandardScaler
        >>> X = np.random.default_rng(0).normal(50, 10, size=(20_000, 2))
        >>> scaler = PrivateStandardScaler(epsilon=1.0, delta=1e-6, bounds=(0, 100),
        ...                                adjacency="add_remove", rng=0).fit(X)
        >>> np.round(scaler.mean_), np.round(scaler.scale_)
        (array([50., 50.]), array([10., 10.]))

    Attributes:
        mean_: The released mean of each feature (of the values clipped to its bounds).
        var_: The released variance of each feature, floored (see the module docstring).
        scale_: √var_, what ``transform`` divides by.
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order (sums, sums of squares, and under
            add/remove the count).
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **PrivateEstimator._parameter_constraints,
        "delta": Delta(gaussian=True),
        "bounds": _FeatureBounds(),
    }

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        bounds: Any = None,
        adjacency: str | None = None,
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    @fit_context
    def fit(self, X: Any, y: Any = None) -> PrivateStandardScaler:
        """Release the clipped sums, sums of squares and (add/remove) the count."""
        params = self._params
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        Xd = _data.as_design(X)
        features = int(Xd.shape[1])
        lo, hi = _per_feature(params.bounds, features, self.bounds)
        width = hi - lo

        def unit(block: np.ndarray, _: Any) -> tuple[np.ndarray, None]:
            # record-local: clip to the declared range, map it onto [0, 1]
            return (np.clip(block, lo, hi) - lo) / width, None

        n, exact = _unit_sums(Xd, unit, features)
        sums, squares = exact.vector[:features], exact.vector[features:]
        # u ∈ [0, 1]: one record moves Σu and Σu² by at most 1 per feature, either way
        root_d = math.sqrt(features)
        deltas = [root_d, root_d] if adjacency == ev.REPLACE_ONE else [root_d, root_d, 1.0]
        safe = params.safe_noise

        def scaled(p: float) -> list[Gaussian]:
            dims = [features, features, 1]
            return [
                Gaussian(p * dl * math.sqrt(len(deltas)), dl, dimension=dim, safe=safe)
                for dl, dim in zip(deltas, dims, strict=False)
            ]

        reservation = self._reserve(
            scaled, params.ledger, initial=math.sqrt(2 * math.log(1.25 / delta)) / epsilon
        )
        mechanisms = reservation.mechanisms
        named = [("sums", sums), ("squares", squares)]
        if adjacency != ev.REPLACE_ONE:
            named.append(("count", exact.scalar))
        outputs = self._release(reservation, named)
        count = n if adjacency == ev.REPLACE_ONE else float(np.asarray(outputs[2]).ravel()[0])
        count = max(count, 1.0)
        mean_u = np.clip(np.asarray(outputs[0], dtype=float) / count, 0.0, 1.0)
        var_u = np.asarray(outputs[1], dtype=float) / count - mean_u**2
        # public floor: a thousandth of the range, or the noise of Σu²/n (3 standard
        # deviations), whichever is larger — a variance the noise cannot resolve is not
        # trusted to shrink the scale (post-processing of released values)
        floor = max(1e-6, 3.0 * mechanisms[1].sigma / count)
        self.mean_ = lo + width * mean_u
        self.var_ = width**2 * np.maximum(var_u, floor)
        self.scale_ = np.sqrt(self.var_)
        self.n_features_in_ = features
        self._bounds_ = (lo, hi)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """(clip(X) − mean_) / scale_ — post-processing of the released statistics."""
        Xd = self._fitted_input(X, "mean_")
        lo, hi = self._bounds_
        scaled = (Xd.clip(lo, hi) - self.mean_) / self.scale_
        return scaled if _data.is_dask(Xd) else np.asarray(scaled)  # dask: stays lazy


__dir__ = namespace(__all__)
