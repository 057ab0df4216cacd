"""Private linear regression from sufficient statistics: SSP and ADASSP (Wang 2018).

Both release noisy sufficient statistics of the clipped, scaled data and solve the
normal equations on them (post-processing). Internally every row is clipped to the
declared bounds (‖x‖ ≤ ``x_bound``, |y| ≤ ``y_bound``; record-local, so privacy-neutral)
and scaled by those public constants to the unit ball; with ``fit_intercept`` a public
constant column is appended and the row rescaled by 1/√2, so ‖x̃‖ ≤ 1 and |ỹ| ≤ 1.

Releases and L2 sensitivities for one record (B = C = 1 after scaling):

=====================  ====================  ===============  ===============
release                statistic             add/remove       replace-one
=====================  ====================  ===============  ===============
``lambda_min``         λ_min(X̃ᵀX̃)            1 (Weyl)         1 (Weyl)
``XtX``                X̃ᵀX̃, Frobenius noise  ‖xxᵀ‖_F = 1      √2
``Xty``                X̃ᵀỹ                   1                2
=====================  ====================  ===============  ===============

"Frobenius noise" is Gaussian noise on w(M) = (Mᵢᵢ, √2·Mᵢⱼ) (see
:func:`~dpledger.algorithms.base.upper`): symmetric, variance σ² on the diagonal and σ²/2
off it — the (Z + Zᵀ)/2 of Wang's code, the Gaussian mechanism in the geometry where one
row's change xxᵀ has norm ‖x‖². (Wang's SSP adds a non-symmetric d×d matrix of iid noise:
the published SSP does so, with the same Frobenius sensitivity over d² entries.)

Variants:

* ``"published"`` — Wang's constants: ADASSP adds σ = √(log(6/δ))/(ε/3) to each of its
  three releases, SSP σ = √(log(4/δ))/ε to each of its two. They are charged at their
  *true* cost, composed exactly: at nominal (1, 1e-6), add/remove, ADASSP really spends
  ε ≈ 0.596 (continuous noise) and SSP ε ≈ 1.59 — over its budget, so a ledger holding
  the nominal (1, 1e-6) refuses it; under replace-one at nominal 5, ADASSP spends ≈ 5.54.
* ``"calibrated"`` (default) — one noise scale p for the whole schedule, σᵢ = p·Δᵢ/√wᵢ,
  solved so that the releases composed jointly with the tightest valid method meet
  exactly (ε, δ) (see :class:`~dpledger.algorithms.base.PrivateEstimator`).

The budget split w (ADASSP default: 0.1 to λ_min, 0.45 each to X̃ᵀX̃ and X̃ᵀỹ) shares
μ² = Σ(Δᵢ/σᵢ)² between the releases. It is public (data-independent). The two statistics
enter the estimate symmetrically — θ̂ − θ ≈ (X̃ᵀX̃ + λI)⁻¹(E_y − E_X θ), with ‖θ‖ ≈ 1 on
scaled data — so minimising E‖E_y − E_Xθ‖² = σ_y²·d + σ_X²·d‖θ‖² subject to a fixed μ²
gives μ_y² ∝ Δ_y·√d and μ_X² ∝ Δ_X·√d‖θ‖ (Lagrange): equal shares for equal
sensitivities. λ_min only sets the ridge, and a ridge error of a few noise standard
deviations barely moves the estimate, so it gets a small share (0.1). The split can be
changed with ``budget_split``. ``benchmarks/linear_regression.py --split`` measures it
(synthetic n = 10⁴, d = 10, 200 seeds): equal shares for the two statistics are clearly
best; a λ_min share of 0.02 is clearly worse, and any share from 0.1 to 1/3 is within
3 % of the best at ε = 0.1 and within noise at ε = 1.

Sensitivities are derived in SEED-NOTES 002 and docs/algorithms.md; Weyl's inequality
bounds λ_min's change: adding xxᵀ (PSD, spectral norm ‖x‖²) moves each eigenvalue by a
value in [0, ‖x‖²].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special
from sklearn.base import RegressorMixin

from dpledger._numerics import sum_up
from dpledger._public import namespace
from dpledger._validation import check_probability, check_reals
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms.base import (
    PrivateEstimator,
    store_parameters,
    symmetric_from_upper,
    upper,
)
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import ExactValue, Gaussian, default_granularity

__all__ = ["ADASSP", "FALLBACK_RIDGE", "SSP", "BinaryClassifierOutputs", "solve_ridge"]

#: The ridge used when the noisy Gram matrix has no positive eigenvalue and no other
#: ridge applies (public, in scaled units: Wang's code adds the identity throughout).
FALLBACK_RIDGE = 1.0


def _sensitivities(adjacency: str) -> tuple[float, float, float]:
    """(λ_min, X̃ᵀX̃ in Frobenius norm, X̃ᵀỹ) for unit bounds."""
    if adjacency == ev.REPLACE_ONE:
        return 1.0, math.sqrt(2.0), 2.0
    return 1.0, 1.0, 1.0


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


def _row_norms(X: np.ndarray) -> np.ndarray:
    """‖row‖₂ of every row, exact even where the squares under- or overflow."""
    squares = np.einsum("ij,ij->i", X, X)
    norms = np.sqrt(squares)
    risky = (squares < 1e-280) | ~np.isfinite(squares)
    if risky.any():  # rescale by the largest entry first (as a careful norm does)
        sub = X[risky]
        top = np.max(np.abs(sub), axis=1)
        unit = sub / np.where(top > 0, top, 1.0)[:, None]
        norms[risky] = top * np.sqrt(np.einsum("ij,ij->i", unit, unit))
    return np.asarray(norms)


def _norms(X: np.ndarray, norm: str) -> np.ndarray:
    """‖x‖_K of every row: "l2" (no under- or overflow), "l1" (∞ if it overflows), or ℓ∞."""
    if norm == "l2":
        return _row_norms(X)
    if norm == "l1":
        return np.asarray(np.abs(X).sum(axis=1))
    return np.asarray(np.abs(X).max(axis=1))


def _clip_rows(X: np.ndarray, bound: float, norm: str) -> np.ndarray:
    """Rows with ‖x‖_K > bound scaled onto the sphere of radius bound (record-local).

    A new array (the input is not modified); :func:`_shrink_rows` does it in place.
    """
    clipped = np.array(X, dtype=float, order="C", copy=True)  # one summation order
    _shrink_rows(clipped, bound, norm)
    return clipped


def _shrink_rows(X: np.ndarray, bound: float, norm: str) -> None:
    """Scale, in place, the rows with ‖x‖_K > bound onto the sphere of radius bound.

    The *exact* norm of every row is ≤ bound afterwards: rows are brought to a computed
    norm ≤ bound·(1 − 2(d + 2)u) (u = 2⁻⁵³), and a computed ℓ₁ or ℓ₂ norm of d entries is
    within a relative (d + 2)u of the exact one (entries ≥ 2⁻⁹⁰⁰·2⁻⁴⁰ are normal, the
    bound is ≥ 2⁻⁹⁰⁰: no subnormal rounding); ℓ∞ is exact. Only the rows that are over
    are touched (read once, written once): the others keep their values exactly.
    """
    if X.dtype != np.float64 or not X.flags.c_contiguous or not X.flags.writeable:
        raise InvalidArgumentError("internal error: rows to shrink must be C-contiguous floats.")
    d = X.shape[1] if X.ndim == 2 else 1
    target = bound * (1.0 - 2.0 * (d + 2) * 2.0**-53)
    norms = _norms(X, norm)
    huge = ~np.isfinite(norms)  # a finite row whose norm overflows: far above the bound
    if huge.any():  # in units of its largest entry first, then onto the sphere below
        X[huge] /= np.max(np.abs(X[huge]), axis=1)[:, None]
        norms[huge] = _norms(np.ascontiguousarray(X[huge]), norm)
    over = np.flatnonzero((norms > target) | huge)
    if over.size == 0:
        return
    part = X[over]
    part *= (target / np.where(norms[over] > 0, norms[over], 1.0))[:, None]
    # rounding may leave a scaled row a hair above the target: shrink it by a margin of
    # the norm's own error size, doubled each pass (one pass suffices in practice; the
    # row's direction is kept)
    margin = 2.0 * (d + 2) * 2.0**-53
    for _ in range(60):
        after = _norms(part, norm)
        still = after > target
        if not still.any():
            X[over] = part
            return
        part[still] *= (target / after[still] * (1.0 - margin))[:, None]
        margin = min(2.0 * margin, 0.5)
    raise InvalidArgumentError("internal error: a clipped row stayed outside `x_bound`.")


def _enforce_unit_norm(Xs: np.ndarray) -> None:
    """Shrink, in place, the rows whose *exact* norm could exceed 1 by rounding.

    :func:`_shrink_rows` with bound 1: every row's exact norm is ≤ 1 afterwards (before, a
    row's computed norm was brought to ≤ 1, and its exact norm could still exceed 1 by
    2e-16, beyond the sensitivities without slack under ``safe_noise=False``).
    """
    _shrink_rows(Xs, 1.0, "l2")


def _scale_rows(X: np.ndarray, x_bound: float, unit: bool) -> np.ndarray:
    """Rows clipped to ``x_bound`` and divided by it (or unit-normed): ‖row‖ ≤ 1, always.

    Record-local. The norms are computed without under- or overflow, and the result is
    re-checked, so no row leaves the unit ball — not even by rounding, and not a row of
    subnormal entries whose squares would vanish.
    """
    if unit:
        # each row to the sphere (a zero row stays zero), in units of its largest entry
        # first: 1/‖x‖ overflows for a subnormal row ([1e-310, 0] became NaN, and whether
        # a fit refused then depended on that one record)
        top = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(X.shape[0])
        X = X / np.where(top > 0, top, 1.0)[:, None]
    norms = _row_norms(X)
    positive = norms > 0
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=positive)
    # unit: onto the sphere; else clipped to x_bound, scaled
    factor = inverse if unit else np.where(positive, np.minimum(1.0 / x_bound, inverse), 0.0)
    Xs: np.ndarray = np.multiply(X, factor[:, None], order="C", dtype=float)  # C order
    _enforce_unit_norm(Xs)
    return Xs


def _data_units(
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


class _SufficientStatisticsRegression(RegressorMixin, PrivateEstimator):  # type: ignore[misc]
    """Shared parts of SSP and ADASSP: scaling, statistics, prediction."""

    fit_intercept: Any
    x_bound: Any
    y_bound: Any
    safe_noise: Any

    def _rows(self) -> Any:
        """Rows on the unit ball: clipped to ``x_bound`` and scaled by it (or unit-normed).

        With ``row_norm="unit"`` every row is scaled to norm 1 instead; then the
        intercept column is appended and the row rescaled by 1/√2.
        """
        x_bound = self._bound("x_bound", self.x_bound)
        intercept = bool(self.fit_intercept)
        row_norm = getattr(self, "row_norm", "clip")
        if row_norm not in ("clip", "unit"):
            raise InvalidArgumentError(
                f"`row_norm` must be 'clip' (rows beyond x_bound are clipped to it) or 'unit' "
                f"(every row scaled to norm x_bound, as in Wang's experiments). Found {row_norm!r}."
            )
        unit = row_norm == "unit"

        def rows(X: np.ndarray) -> np.ndarray:
            Xs = _scale_rows(X, x_bound, unit)
            if intercept:
                Xs = np.hstack([Xs, np.ones((Xs.shape[0], 1))]) / math.sqrt(2.0)
                _enforce_unit_norm(Xs)
            return Xs

        return rows

    def _transform(self) -> _data.Transform:
        rows = self._rows()
        y_bound = self._bound("y_bound", self.y_bound)

        def transform(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            ys = None if y is None else np.clip(y, -y_bound, y_bound) / y_bound
            return rows(X), ys

        return transform

    def _binary_labels(self, message: str) -> _data.Transform:
        """Rows as :meth:`_rows` scales them, and labels refused unless 0 or 1 (``message``).

        The labels are kept as they are (not scaled): for models of a binary outcome.
        """
        rows = self._rows()

        def transform(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            if y is not None and not np.all((y == 0) | (y == 1)):
                raise InvalidArgumentError(message)
            return rows(X), y

        return transform

    def _statistics(self, X: Any, y: Any) -> tuple[_data.Statistics, int]:
        """X̃ᵀX̃ and X̃ᵀỹ (float, and exact for the releases), and the number of features."""
        X = _data.as_design(X)
        rows = None if _data.is_dask(X) else X.shape[0]
        y = _data.as_target(y, rows)
        stats = _data.sufficient_statistics(X, y, self._transform())
        self.n_features_in_ = int(X.shape[1])
        return stats, int(X.shape[1])

    def _gaussian(self, sigma: float, sensitivity: float, dimension: int) -> Gaussian:
        return Gaussian(sigma, sensitivity, dimension=dimension, safe=bool(self.safe_noise))

    def _set_coefficients(
        self, theta: np.ndarray, features: int, y_scale: float | None = None
    ) -> None:
        """coef_ and intercept_ in data units (:func:`_data_units`) from θ on the scaled rows.

        The target was divided by ``y_scale``: ``y_bound`` by default, 1 where the labels
        were not scaled. One mapping for every estimator (and for :class:`.cape.CapeFM`).
        """
        scale = float(self.y_bound) if y_scale is None else y_scale
        self.coef_, self.intercept_ = _data_units(
            theta, features, float(self.x_bound), scale, bool(self.fit_intercept)
        )

    def predict(self, X: Any) -> np.ndarray:
        """Predictions x·coef_ + intercept_ (post-processing of the released statistics)."""
        X = self._fitted_input(X, "coef_")
        if _data.is_dask(X):  # lazily, partition by partition: never gathered
            return X @ self.coef_ + self.intercept_  # type: ignore[no-any-return]
        return np.asarray(X @ self.coef_ + self.intercept_)


class BinaryClassifierOutputs:
    """predict / predict_proba / decision_function of a logistic model (labels 0 and 1).

    Post-processing of the fitted coefficients only; ``classes_`` is [0, 1].
    """

    classes_ = np.array([0, 1])

    def decision_function(self, X: Any) -> np.ndarray:
        """The log-odds x·coef_ + intercept_."""
        return np.asarray(_SufficientStatisticsRegression.predict(self, X))  # type: ignore[arg-type]

    def predict_proba(self, X: Any) -> np.ndarray:
        """[P(y = 0), P(y = 1)] per row."""
        p = special.expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """The more probable label."""
        return (self.decision_function(X) > 0).astype(int)


class ADASSP(_SufficientStatisticsRegression):
    """ADASSP: adaptive sufficient-statistics perturbation (Wang 2018, Alg. 2).

    Releases a noisy λ_min(X̃ᵀX̃), shifted down so that it underestimates λ_min with
    probability ≥ 1 − ρ/2; chooses the ridge λ so that the noisy Gram matrix stays well
    conditioned with probability ≥ 1 − ρ/2; releases X̃ᵀX̃ (symmetric noise) and X̃ᵀỹ; returns
    θ̂ = (X̃ᵀX̃ + noise + λI)⁻¹(X̃ᵀỹ + noise). ρ affects utility only, never privacy.

    Calibrated shift and ridge (σ₁, σ₂ the noise of λ_min and of X̃ᵀX̃'s diagonal):
    λ̃_min = max(λ_min + σ₁Z − σ₁Φ⁻¹(1 − ρ/2), 0) and
    λ = max(0, σ₂·√(d·log(4d²/ρ)) − λ̃_min). Published (Wang's constants, his ρ):
    λ̃_min = max(λ_min + σ₀Z − log(6/δ)/(ε/3), 0), λ = max(0, σ₀√(d·log(2d²/ρ)) − λ̃_min).

    Args:
        epsilon: The ε this fit must meet.
        delta: The δ this fit must meet (> 0).
        x_bound: Declared bound on each row's L2 norm (rows beyond are clipped).
        y_bound: Declared bound on |y| (values beyond are clipped).
        adjacency: "add_remove" or "replace_one" (declared).
        fit_intercept: Fit an intercept (a public constant column).
        row_norm: "clip" (rows beyond ``x_bound`` clipped to it; the default) or "unit"
            (every row scaled to norm ``x_bound``: Wang's per-row normalisation).
        rho: Failure probability of the eigenvalue and conditioning bounds, in (0, 1).
        budget_split: Shares of μ² for (λ_min, X̃ᵀX̃, X̃ᵀỹ) in the calibrated variant.
        variant: "calibrated" or "published".
        ledger: A shared ledger to draw on, or None: a planned ledger for one fit, shared
            with every copy (a second fit, or a clone's, is refused).
        safe_noise: Exact discrete noise on a fine grid (default; charged as the
            discrete Gaussian it is) or floating-point Gaussian noise (charged exactly as
            a Gaussian; vulnerable to floating-point attacks — reproduction only).
        rng: numpy Generator or int seed (reproducible), or None (OS-seeded).

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import ADASSP
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(5000, 3)) / 3
        >>> y = np.clip(X @ [0.5, -0.2, 0.1] + 0.05 * rng.normal(size=5000), -1, 1)
        >>> model = ADASSP(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0,
        ...                adjacency="add_remove", rng=1).fit(X, y)
        >>> len(model.releases_), round(model.ledger_.spent[0], 6) <= 1.0
        (3, True)
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        y_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        row_norm: str = "clip",
        rho: float = 0.05,
        budget_split: Sequence[float] | None = None,
        variant: str = "calibrated",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def _split(self) -> tuple[float, float, float]:
        if self.budget_split is None:
            return 0.1, 0.45, 0.45
        shares = check_reals("budget_split", self.budget_split)
        if len(shares) != 3 or any(not (s > 0 and math.isfinite(s)) for s in shares):
            raise InvalidArgumentError(
                "`budget_split` must be three positive shares for (lambda_min, XtX, Xty). "
                f"Found {self.budget_split!r}."
            )
        total = math.fsum(shares)
        return shares[0] / total, shares[1] / total, shares[2] / total

    def fit(self, X: Any, y: Any) -> ADASSP:
        """Check the schedule fits the ledger, release the three statistics, solve."""
        epsilon, delta = self._budget()
        if delta == 0:
            raise InvalidArgumentError("ADASSP releases Gaussian noise: `delta` must be > 0.")
        adjacency = self._adjacency()
        variant = self._variant()
        ledger = self._fit_ledger()
        rho = check_probability("rho", self.rho, low_open=True, high_open=True)
        split = self._split()
        stats, features = self._statistics(X, y)
        exact = stats.exact
        d = stats.gram.shape[0]
        entries = d * (d + 1) // 2
        deltas = _sensitivities(adjacency)
        safe = bool(self.safe_noise)

        def lam_mechanism(sigma: float) -> Gaussian:
            # the certified grid index of λ_min is ⌊λ/γ⌋ or one below it
            # (:func:`._eigen.min_eigenvalue_steps`): one grid step more than Weyl's 1
            if not safe:
                return self._gaussian(sigma, deltas[0], 1)
            # Δ + γ rounded up (a float sum could round the extra step away: helper-36)
            return self._gaussian(sigma, sum_up(deltas[0], default_granularity(sigma)), 1)

        def schedule(sigmas: Sequence[float]) -> list[Gaussian]:
            return [
                lam_mechanism(sigmas[0]),
                self._gaussian(sigmas[1], deltas[1], entries),
                self._gaussian(sigmas[2], deltas[2], d),
            ]

        if variant == "published":
            sigma0 = math.sqrt(math.log(6.0 / delta)) / (epsilon / 3.0)
            reservation = self._reserve(schedule([sigma0] * 3), ledger)
            shift = math.log(6.0 / delta) / (epsilon / 3.0)
            ridge_scale = sigma0 * math.sqrt(d * math.log(2.0 * d * d / rho))
        else:

            def scaled(p: float) -> list[Gaussian]:
                return schedule(
                    [p * dl / math.sqrt(w) for dl, w in zip(deltas, split, strict=True)]
                )

            reservation = self._reserve(
                scaled, ledger, initial=math.sqrt(2 * math.log(1.25 / delta)) / epsilon
            )
            lam, matrix = reservation.mechanisms[:2]
            shift = lam.sigma * float(special.ndtri(1.0 - rho / 2.0))
            ridge_scale = matrix.sigma * math.sqrt(d * math.log(4.0 * d * d / rho))
        named = [
            ("lambda_min", _lambda_min(exact, reservation.mechanisms[0])),
            ("XtX", upper(exact.gram)),
            ("Xty", exact.vector),
        ]
        noisy_min, noisy_upper, noisy_xty = self._release(reservation, named)
        lam_tilde = max(float(np.asarray(noisy_min).ravel()[0]) - shift, 0.0)
        ridge = max(0.0, ridge_scale - lam_tilde)
        gram = symmetric_from_upper(np.asarray(noisy_upper, dtype=float), d)
        theta = solve_ridge(gram, np.asarray(noisy_xty, dtype=float), ridge)
        self.ridge_ = ridge
        self._set_coefficients(theta, features)
        return self


def _lambda_min(exact: _data.ExactSums, mechanism: Gaussian) -> Any:
    """λ_min(X̃ᵀX̃) as the mechanism should floor it.

    On the grid: the certified index k ∈ {⌊λ/γ⌋ − 1, ⌊λ/γ⌋} of the *exact* Gram sum
    (:func:`._eigen.min_eigenvalue_steps`), passed as the exact value k·γ; the mechanism
    charges the one extra grid step. Float noise: the float eigenvalue (Mironov's caveat).
    """
    if not mechanism.safe:
        gram = np.asarray(exact.gram)
        return float(np.linalg.eigvalsh((gram + gram.T) / 2.0)[0])
    from dpledger.algorithms._eigen import min_eigenvalue_steps

    integers, unit = exact.gram_integers()
    gamma = mechanism.granularity
    k = min_eigenvalue_steps(integers, unit, gamma, psd=True)  # an unweighted Gram sum: PSD
    return ExactValue.from_integers(np.array([k], dtype=object), gamma)


class SSP(_SufficientStatisticsRegression):
    """SSP: sufficient-statistics perturbation (Wang 2018; thesis Alg. 1).

    Releases X̃ᵀX̃ and X̃ᵀỹ with Gaussian noise and solves the normal equations on them
    (eigenvalues of the noisy Gram matrix projected onto [0, ∞); no ridge, so SSP is
    unstable where the noise is comparable to λ_min — ADASSP's reason to exist).
    ``"published"`` adds Wang's non-symmetric d×d noise matrix with
    σ = √(log(4/δ))/ε per release and solves with it as his code does (with the identity
    added to the noisy X̃ᵀX̃, a public ridge of 1); charged at its true
    cost (ε ≈ 1.59 at nominal (1, 1e-6), add/remove, continuous noise).

    Args:
        epsilon: The ε this fit must meet.
        delta: The δ this fit must meet (> 0).
        x_bound: Declared bound on each row's L2 norm (rows beyond are clipped).
        y_bound: Declared bound on |y| (values beyond are clipped).
        adjacency: "add_remove" or "replace_one" (declared).
        fit_intercept: Fit an intercept (a public constant column).
        row_norm: "clip" (rows beyond ``x_bound`` clipped to it; the default) or "unit"
            (every row scaled to norm ``x_bound``: Wang's per-row normalisation).
        variant: "calibrated" or "published".
        ledger: A shared ledger to draw on, or None: a planned ledger for one fit, shared
            with every copy (a second fit, or a clone's, is refused).
        safe_noise: Exact discrete noise (default) or floating-point Gaussian noise.
        rng: numpy Generator or int seed (reproducible), or None (OS-seeded).
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        y_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        row_norm: str = "clip",
        variant: str = "calibrated",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def fit(self, X: Any, y: Any) -> SSP:
        """Check the schedule fits the ledger, release X̃ᵀX̃ and X̃ᵀỹ, solve."""
        epsilon, delta = self._budget()
        if delta == 0:
            raise InvalidArgumentError("SSP releases Gaussian noise: `delta` must be > 0.")
        adjacency = self._adjacency()
        variant = self._variant()
        ledger = self._fit_ledger()
        stats, features = self._statistics(X, y)
        exact = stats.exact
        d = stats.gram.shape[0]
        _, delta_xx, delta_xy = _sensitivities(adjacency)
        if variant == "published":
            sigma = math.sqrt(math.log(4.0 / delta)) / epsilon
            mechanisms = [
                self._gaussian(sigma, delta_xx, d * d),
                self._gaussian(sigma, delta_xy, d),
            ]
            noisy_xtx, noisy_xty = self._release(
                self._reserve(mechanisms, ledger),
                [("XtX", exact.gram.ravel()), ("Xty", exact.vector)],
            )
            # Wang's code solves with XᵀX + noise + I (a public ridge of 1, post-processing)
            gram = np.asarray(noisy_xtx, dtype=float).reshape(d, d) + np.eye(d)
            theta, *_ = np.linalg.lstsq(gram, np.asarray(noisy_xty, dtype=float), rcond=None)
        else:
            entries = d * (d + 1) // 2

            def scaled(p: float) -> list[Gaussian]:
                return [
                    self._gaussian(p * delta_xx / math.sqrt(0.5), delta_xx, entries),
                    self._gaussian(p * delta_xy / math.sqrt(0.5), delta_xy, d),
                ]

            reservation = self._reserve(
                scaled, ledger, initial=math.sqrt(2 * math.log(1.25 / delta)) / epsilon
            )
            noisy_upper, noisy_xty = self._release(
                reservation, [("XtX", upper(exact.gram)), ("Xty", exact.vector)]
            )
            gram = symmetric_from_upper(np.asarray(noisy_upper, dtype=float), d)
            theta = solve_ridge(gram, np.asarray(noisy_xty, dtype=float), 0.0)
        self._set_coefficients(np.asarray(theta), features)
        return self


__dir__ = namespace(__all__)
