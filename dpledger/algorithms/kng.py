"""KNG and the exponential mechanism for linear and quantile regression on a bounded Θ.

**KNG** (Reimherr & Awan 2019, "KNG: The K-Norm Gradient Mechanism") releases θ ∈ Θ with
density ∝ exp(−ε‖∇ℓₙ(θ; D)‖_K/(2Δ)), Δ the K-norm sensitivity of the gradient on Θ; **the
exponential mechanism** (McSherry & Talwar 2007) with utility −ℓₙ releases θ with density
∝ exp(−εℓₙ(θ; D)/(2Δ_ℓ)). Both are exponential mechanisms on the data-independent base
measure Lebesgue-on-Θ, hence ε-bounded-range (Durfee & Rogers 2019), ε-DP and
ε²/8-zCDP under either adjacency; each fit is charged one
:class:`~dpledger.events.BoundedRange` (ε). KNG adds O_p(1/n) noise to the minimiser, the
exponential mechanism O_p(1/√n).

Bounds are declared, never read from the data: rows x are clipped to ‖x‖ ≤ ``x_bound``
(counting an intercept column in the row bound, :func:`row_bound`), y to |y| ≤
``y_bound``, and Θ = {θ: ‖θ‖₂ ≤ ``theta_bound``}. This module holds the estimators and
the sensitivities of their losses (derived in each function's docstring, checked against
brute-force worst cases in tests/algorithms/test_kng.py). Linear regression is sampled
exactly by the mechanisms of :mod:`dpledger.mechanisms.regression` (a failure of their
Geometric proposal budget is part of the release: :func:`sampler_epsilon`); quantile
regression by random-walk Metropolis (:mod:`dpledger.algorithms._mcmc`), whose ε holds for
exact sampling only. The derivations and proofs are in docs/algorithms.md ("KNG and the
exponential mechanism").
"""

from __future__ import annotations

import math
import sys
from typing import Any, ClassVar

import numpy as np

from dpledger._public import namespace
from dpledger._validation import check_real, shown
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._linear_base import LinearModel, LinearRegressorMixin
from dpledger.algorithms._mcmc import (
    CHAINS,
    MAX_CHAINS,
    MAX_MCMC_STEPS,
    MAX_MCMC_WORK,
    MCMC_LABEL,
    STEPS,
    MCMCDiagnostics,
    MCMCDraw,
    MCMCWarning,
    check_steps,
    check_work,
    effective_sample_size,
    metropolis,
    split_rhat,
    warn_if_unconverged,
)
from dpledger.algorithms._params import (
    Boolean,
    Bound,
    Constraint,
    Delta,
    Integer,
    Options,
    OrNone,
    Parameters,
    Probability,
)
from dpledger.algorithms._quantile_mcmc import _QuantileRelease
from dpledger.algorithms._rows import clip_rows
from dpledger.algorithms.base import (
    PrivateEstimator,
    fill_docstring,
    fit_context,
    store_parameters,
)
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms.knorm import NORMS
from dpledger.mechanisms.regression import (
    MAX_PROPOSALS,
    LinearRelease,
    SamplingError,
    auto_ridge,
    exponential_linear_sample,
    kng_linear_sample,
    sampler_epsilon,
)

__all__ = [
    "MAX_CHAINS",
    "MAX_MCMC_STEPS",
    "MAX_MCMC_WORK",
    "MAX_PROPOSALS",
    "MCMC_LABEL",
    "ExponentialLinearRegression",
    "ExponentialQuantileRegression",
    "KNGLinearRegression",
    "KNGQuantileRegression",
    "MCMCDiagnostics",
    "MCMCDraw",
    "MCMCWarning",
    "SamplingError",
    "auto_ridge",
    "effective_sample_size",
    "exponential_linear_sample",
    "kng_linear_sample",
    "metropolis",
    "quantile_gradient_sensitivity",
    "quantile_loss_range",
    "row_bound",
    "sampler_epsilon",
    "split_rhat",
    "squared_gradient_sensitivity",
    "squared_loss_range",
]

_MIN_BOUND, _MAX_BOUND = 2.0**-900, 2.0**470


# -- sensitivities ------------------------------------------------------------------------


def row_bound(x_bound: float, fit_intercept: bool, norm: str = "l2") -> float:
    """The K-norm bound b of a model row z: ``x_bound``, or ‖(x_bound, 1)‖_K with an intercept.

    The intercept column is a public constant 1 appended to the clipped x, so
    ‖(x, 1)‖_K ≤ ‖(B, 1)‖_K for every norm here (ℓ₁: B + 1, ℓ₂: √(B² + 1), ℓ∞: max(B, 1)).
    """
    if not fit_intercept:
        return float(x_bound)
    if norm == "l1":
        return float(x_bound) + 1.0
    if norm == "linf":
        return max(float(x_bound), 1.0)
    return math.hypot(float(x_bound), 1.0)


def squared_gradient_sensitivity(
    b: float, y_bound: float, theta_bound: float, adjacency: str
) -> float:
    """Δ₂ of ∇ℓₙ for ℓₙ(θ) = Σ(yᵢ − zᵢᵀθ)² (+ a public ridge), sup over θ ∈ Θ.

    One row adds g(θ; z, y) = 2z(zᵀθ − y) to the gradient (the ridge's 2λθ is the same for
    neighbours and cancels). With ‖z‖₂ ≤ b, |y| ≤ C, ‖θ‖₂ ≤ r: ‖g‖₂ = 2‖z‖₂|zᵀθ − y| ≤
    2b(br + C), attained by z = bθ/r, y = −C at ‖θ‖ = r. Add/remove: the difference is one
    row's g, so Δ₂ = 2b(br + C) (tight). Replace-one: ‖g − g′‖₂ ≤ ‖g‖₂ + ‖g′‖₂ =
    4b(br + C) by the triangle inequality — a valid bound, but *not* the supremum: no
    second row's g′ reaches −g. The supremum found numerically is
    2bC·max_φ(k·sin 2φ + 2 sin φ), k = br/C (e.g. 0.65 × the bound at k = 1), but without
    a proof it is not used: the proven bound is charged.
    """
    one = 2.0 * b * (b * theta_bound + y_bound)
    return 2.0 * one if adjacency == ev.REPLACE_ONE else one


def quantile_gradient_sensitivity(tau: float, b: float, adjacency: str) -> float:
    """Δ_K of ∇ℓₙ for ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ): max(τ, 1 − τ)·b, doubled under replace-one.

    One row adds g = z(1{y < zᵀθ} − τ) ∈ {(1 − τ)z, −τz}, so ‖g‖_K ≤ max(τ, 1 − τ)·b
    (add/remove, tight). Replace-one: g − g′ with g′ = (−z) times the same weight — both
    rows on the same side of the fit, e.g. y, y′ ≥ 0 at θ = 0 ∈ Θ for the weight −τ — has
    norm 2·max(τ, 1 − τ)·b, which is also the triangle-inequality bound: tight. (Code
    using (1 − τ) alone is too small for τ > ½.) Neither depends on y or on θ.
    """
    one = max(tau, 1.0 - tau) * b
    return 2.0 * one if adjacency == ev.REPLACE_ONE else one


def squared_loss_range(b: float, y_bound: float, theta_bound: float) -> float:
    """Δ_ℓ = (C + br)² for the squared loss on Θ, under either adjacency.

    One row's loss (y − zᵀθ)² lies in [0, (C + br)²] (|zᵀθ| ≤ br). Add/remove changes
    ℓₙ by one such term; replace-one by the difference of two, which lies in
    [−(C + br)², (C + br)²] because both are ≥ 0. Tight for both (one row with residual
    C + br against one with residual 0). The ridge is the same for neighbours.
    """
    reach = y_bound + b * theta_bound
    return reach * reach  # inf beyond the float range (refused by the caller), never a raise


def quantile_loss_range(tau: float, b: float, y_bound: float, theta_bound: float) -> float:
    """Δ_ℓ = max(τ, 1 − τ)(C + br) for the check loss on Θ, under either adjacency.

    ρ_τ(u) = u(τ − 1{u < 0}) ∈ [0, max(τ, 1 − τ)|u|] and |y − zᵀθ| ≤ C + br; the
    difference of two non-negative terms is bounded by the larger (as for the squared
    loss). Tight.
    """
    return max(tau, 1.0 - tau) * (y_bound + b * theta_bound)


# -- estimators ---------------------------------------------------------------------------


class _Ridge(Constraint):
    """``ridge``: "auto" or a positive finite number (A = XᵀX + ridge·I ⪰ ridge·I)."""

    def check(self, name: str, value: Any, owner: str) -> Any:
        if isinstance(value, str) and value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(
                f"`{name}` must be 'auto' or a positive number. Found {shown(value)}."
            )
        ridge = check_real(name, value)  # beyond the float range: ±∞, refused below
        if not (math.isfinite(ridge) and ridge > 0):
            raise InvalidArgumentError(
                f"`{name}` must be positive and finite: A = XᵀX + ridge·I ⪰ ridge·I keeps the "
                "sampler proper and bounds its failure event's cost whatever the data. Found "
                f"{shown(value)}."
            )
        return ridge


#: the statistics (XᵀX over up to 2⁵³ rows), the sensitivity and the clipped rows must
#: stay normal floats, or whether a fit fails would depend on the data
_BOUND = Bound(limits=(_MIN_BOUND, _MAX_BOUND))


class _BoundedThetaRegression(LinearRegressorMixin, LinearModel):
    """Shared parts: declared bounds, Θ, model rows (x, 1), coefficients, prediction."""

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **PrivateEstimator._parameter_constraints,
        "delta": Delta(),
        "x_bound": _BOUND,
        "y_bound": _BOUND,
        "theta_bound": _BOUND,
        "fit_intercept": Boolean(),
    }
    #: the exact samplers and the Metropolis chains draw no grid noise
    _fixed_parameters: ClassVar[dict[str, Any]] = {"safe_noise": False}

    @staticmethod
    def _check_sensitivity(sensitivity: float, epsilon: float) -> None:
        """Δ and Δ/ε must be positive normal floats, decided before anything is charged."""
        if not (sys.float_info.min <= sensitivity < math.inf):
            raise InvalidArgumentError(
                f"the declared bounds give a sensitivity of {sensitivity!r}, outside the normal "
                "float range: rescale the data (x_bound, y_bound, theta_bound)."
            )
        if not sensitivity / epsilon < math.inf:
            raise InvalidArgumentError(
                f"`epsilon` = {epsilon!r} is too small for the sensitivity {sensitivity!r}: "
                "Δ/ε overflows a float."
            )
        if not sensitivity / epsilon >= sys.float_info.min:
            raise InvalidArgumentError(
                f"`epsilon` = {epsilon!r} is too large for the sensitivity {sensitivity!r}: "
                "Δ/ε is below the normal float range (the noise would vanish)."
            )

    def _model_rows(self, norm: str) -> _data.Transform:
        """The record-local map onto model rows: x clipped in ``norm`` (then 1), y clipped."""
        params = self._params
        x_bound, y_bound, intercept = params.x_bound, params.y_bound, params.fit_intercept

        def rows(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            Z = clip_rows(X, x_bound, norm)
            if intercept:
                Z = np.hstack([Z, np.ones((Z.shape[0], 1))])
            return Z, (None if y is None else np.clip(y, -y_bound, y_bound))

        return rows

    def _dimension(self, features: int) -> int:
        return features + (1 if self._params.fit_intercept else 0)

    def _set_theta(self, theta: np.ndarray, features: int) -> None:
        self.theta_ = np.asarray(theta, dtype=float)
        self.coef_ = self.theta_[:features].copy()
        self.intercept_ = float(self.theta_[features]) if self._params.fit_intercept else 0.0


class _LinearRegression(_BoundedThetaRegression):
    """Squared loss Σ(yᵢ − zᵢᵀθ)² + ridge·‖θ‖², sampled exactly from (XᵀX, Xᵀy)."""

    _kind = "kng"
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **_BoundedThetaRegression._parameter_constraints,
        "ridge": _Ridge(),
        "norm": Options(
            ("l2",),
            why="the exact sampler of KNG linear regression; ℓ₁ and ℓ∞ gradients are not "
            "implemented",
        ),
        "max_proposals": Integer(1, MAX_PROPOSALS, why="no hang"),
    }

    def _sensitivity(self, b: float, y_bound: float, theta_bound: float, adjacency: str) -> float:
        """Δ on Θ: the gradient's L2 sensitivity (KNG) or the loss's range (exponential)."""
        if self._kind == "kng":
            return squared_gradient_sensitivity(b, y_bound, theta_bound, adjacency)
        return squared_loss_range(b, y_bound, theta_bound)

    @fit_context
    def fit(self, X: Any, y: Any) -> Any:
        """Validate, compute (XᵀX, Xᵀy) of the clipped rows, charge ε, draw θ ∈ Θ."""
        params = self._params
        epsilon, adjacency, max_proposals = params.epsilon, params.adjacency, params.max_proposals
        x_bound, y_bound, theta_bound = params.x_bound, params.y_bound, params.theta_bound
        b = row_bound(x_bound, params.fit_intercept)
        ridge = auto_ridge(self._kind, epsilon, b) if params.ridge == "auto" else params.ridge
        sensitivity = self._sensitivity(b, y_bound, theta_bound, adjacency)
        self._check_sensitivity(sensitivity, epsilon)
        X = _data.as_design(X)
        rows = None if _data.is_dask(X) else X.shape[0]
        y = _data.as_target(y, rows)
        stats = _data.sufficient_statistics(
            X,
            y,
            self._model_rows("l2"),
            _data.Moments(lambda Z, yc: (None, yc, None), row_norm=b, b=(-y_bound, y_bound)),
        )
        gram, moment = stats.gram, stats.vector
        features = int(X.shape[1])
        self.n_features_in_ = features
        mechanism = LinearRelease(
            self._kind,
            epsilon,
            sensitivity,
            theta_bound=theta_bound,
            ridge=ridge,
            dimension=self._dimension(features),
            max_proposals=max_proposals,
            row_bound=b,
            adjacency=adjacency,
            y_bound=y_bound,
        )
        label = (
            f"theta ({'KNG' if self._kind == 'kng' else 'exponential mechanism'}, exact "
            f"sampler, Δ={sensitivity:.6g}, ‖θ‖₂≤{theta_bound:g})"
        )
        reservation = self._reserve([mechanism], params.ledger)
        (theta,) = self._release(reservation, [(label, (gram, moment))])
        self.sensitivity_ = sensitivity
        self.ridge_ = ridge
        self.sampler_epsilon_ = mechanism.sampler_epsilon
        self._set_theta(theta, features)
        return self


class KNGLinearRegression(_LinearRegression):
    """Linear regression by the K-norm gradient mechanism (ℓ₂), sampled exactly on Θ.

    Releases one θ = (coef, intercept) ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−ε‖∇ℓₙ(θ)‖₂/(2Δ₂)), ℓₙ(θ) = Σ(yᵢ − zᵢᵀθ)² + ridge·‖θ‖², zᵢ = (xᵢ, 1) with an
    intercept (Reimherr & Awan 2019). Δ₂ = 2b(br + C) under add/remove and the proven
    bound 4b(br + C) under replace-one (b the row bound, see :func:`row_bound` and
    :func:`squared_gradient_sensitivity`). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε): ε-DP and ε²/8-zCDP. Noise O_p(1/n).

    The ridge (public, > 0) keeps A = XᵀX + ridge·I positive definite whatever the data,
    so the untruncated density is proper and the exact sampler (radius Gamma(d, Δ/ε),
    uniform direction, θ = A⁻¹(Xᵀy + z), rejected outside Θ) applies; it does not change
    the gradient's sensitivity. The number of proposals is Geometric with the public mean
    ``max_proposals``; if none lands in Θ the fit raises :class:`SamplingError` after the
    charge — an outcome whose probability is covered by ε (:func:`sampler_epsilon`).

    Args:
        epsilon: The ε of the release.
        delta: Ignored by the mechanism (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        {y_bound}
        theta_bound: Radius r of Θ (ℓ₂ ball of (coef, intercept)); finite, > 0.
        {adjacency}
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        ridge: λ > 0 in ℓₙ (public), or "auto" (default): b²/(e^{ε/2} − 1), the
            smallest λ at which the sampler's failure event costs nothing extra
            (:func:`auto_ridge`, :func:`sampler_epsilon`); kept as ``ridge_``.
        norm: The K-norm; "l2" only (the exact sampler).
        max_proposals: Public mean of the Geometric proposal budget (≤ 10⁸).
        ledger: A shared ledger to draw on, or None for a per-fit ledger.
        {rng}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import KNGLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(20_000, 2))
        >>> y = np.clip(X @ [0.8, -0.4] + 0.1 + 0.1 * rng.normal(size=20_000), -1, 1)
        >>> model = KNGLinearRegression(epsilon=1.0, x_bound=1.0, y_bound=1.0,
        ...                             theta_bound=2.0, adjacency="add_remove", rng=1)
        >>> bool(np.abs(model.fit(X, y).coef_ - [0.8, -0.4]).max() < 0.05)
        True
        >>> model.releases_
        [BoundedRange(epsilon=1.0)]

    Attributes:
        sensitivity_: Δ₂, the L2 sensitivity of the gradient on Θ the density was sized for.
        {sampler}
        {fitted}
    """

    _kind = "kng"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        ridge: float | str = "auto",
        norm: str = "l2",
        max_proposals: int = 10**6,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class ExponentialLinearRegression(_LinearRegression):
    """Linear regression by the exponential mechanism on Θ, sampled exactly.

    Releases one θ ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−εℓₙ(θ)/(2Δ_ℓ)), ℓₙ as in :class:`KNGLinearRegression` and
    Δ_ℓ = (C + br)² under either adjacency (:func:`squared_loss_range`): the Gaussian
    N(A⁻¹Xᵀy, (Δ_ℓ/ε)A⁻¹) truncated to Θ, sampled by rejection from a tilted Gaussian
    centred on Θ's constrained minimiser (:func:`exponential_linear_sample`; McSherry &
    Talwar 2007; the baseline of Reimherr & Awan). A failure of the Geometric proposal
    budget raises :class:`SamplingError`, covered by ε (:func:`sampler_epsilon`; under
    replace-one the density uses ε − ½log(1 + b²/ridge)). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε). Noise O_p(1/√n).

    Args:
        epsilon: The ε of the release.
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        {y_bound}
        theta_bound: Radius r of Θ; finite, > 0.
        {adjacency}
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        ridge: λ > 0 in ℓₙ (public), or "auto" (default): b²/(e^{ε/10} − 1)
            (:func:`auto_ridge`); kept as ``ridge_``.
        max_proposals: Public mean of the Geometric proposal budget (≤ 10⁸).
        ledger: A shared ledger, or None for a per-fit ledger.
        rng: numpy Generator or int seed, or None.

    Attributes:
        sensitivity_: Δ_ℓ, the range of the loss on Θ the density was sized for.
        {sampler}
        {fitted}
    """

    _kind = "exponential"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        ridge: float | str = "auto",
        max_proposals: int = 10**6,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class _QuantileRegression(_BoundedThetaRegression):
    """Check loss Σρ_τ(yᵢ − zᵢᵀθ), sampled by Metropolis (in-memory rows)."""

    _kind = "kng"
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **_BoundedThetaRegression._parameter_constraints,
        "tau": Probability(low_open=True, high_open=True),
        "norm": Options(NORMS),
        "chains": CHAINS,
        "burn_in": STEPS,
        "samples": STEPS,
        "data_size": OrNone(Integer(1, _data.MAX_ROWS, why="a public count of rows")),
        "diagnostics": Boolean(),
    }

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        check_steps(params.burn_in, params.samples)

    @fit_context
    def fit(self, X: Any, y: Any) -> Any:
        """Validate, clip the rows, charge ε, run the chains, release one θ ∈ Θ."""
        params = self._params
        epsilon, adjacency, tau, norm = params.epsilon, params.adjacency, params.tau, params.norm
        x_bound, y_bound, theta_bound = params.x_bound, params.y_bound, params.theta_bound
        chains, burn_in, samples = params.chains, params.burn_in, params.samples
        Xd = _data.as_design(X)
        if _data.is_dask(Xd):
            raise InvalidArgumentError(
                f"{type(self).__name__} evaluates the loss at every MCMC step: it takes "
                "in-memory data (numpy/pandas), not dask."
            )
        yd = _data.as_target(y, Xd.shape[0])
        Z, yc = self._model_rows(norm)(Xd, yd)
        rows = self._public_rows(adjacency, int(Z.shape[0]))
        counted = "`data_size`" if params.data_size is not None else "rows"
        check_work(chains, burn_in, samples, rows, int(Z.shape[1]), counted)
        features = int(Xd.shape[1])
        self.n_features_in_ = features
        if self._kind == "kng":
            b = row_bound(x_bound, params.fit_intercept, norm)
            sensitivity = quantile_gradient_sensitivity(tau, b, adjacency)
        else:
            b = row_bound(x_bound, params.fit_intercept)
            sensitivity = quantile_loss_range(tau, b, y_bound, theta_bound)
        self._check_sensitivity(sensitivity, epsilon)
        mechanism = _QuantileRelease(
            self._kind,
            epsilon,
            sensitivity,
            tau=tau,
            norm=norm,
            theta_bound=theta_bound,
            dimension=Z.shape[1],
            chains=chains,
            burn_in=burn_in,
            samples=samples,
        )
        name = "KNG" if self._kind == "kng" else "exponential mechanism"
        label = f"theta ({name}, τ={tau:g}, Δ={sensitivity:.6g}; {MCMC_LABEL})"
        (draw,) = self._release(self._reserve([mechanism], params.ledger), [(label, (Z, yc))])
        self.sensitivity_ = sensitivity
        if params.diagnostics:
            self.mcmc_diagnostics_ = draw.diagnostics
            warn_if_unconverged(draw.diagnostics, type(self).__name__)
        self._set_theta(draw.theta, features)
        return self

    def _public_rows(self, adjacency: str, rows: int) -> int | None:
        """The row count the work cap may read: ``data_size``, or n where it is public.

        Under add/remove n is private: a cap on it would refuse n + 1 rows and release n
        (a release of ε = ∞). So the cap counts the declared ``data_size``, n under
        replace-one (neighbours share it), and no rows at all otherwise.
        """
        data_size: int | None = self._params.data_size
        if data_size is not None:
            return data_size
        return rows if adjacency == ev.REPLACE_ONE else None


class KNGQuantileRegression(_QuantileRegression):
    """Quantile regression by the K-norm gradient mechanism, sampled by MCMC on Θ.

    Releases one θ = (coef, intercept) ∈ Θ = {‖θ‖₂ ≤ ``theta_bound``} with density
    ∝ exp(−ε‖∇ℓₙ(θ)‖_K/(2Δ_K)), ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ), ∇ℓₙ = Σzᵢ(1{yᵢ < zᵢᵀθ} − τ)
    (Reimherr & Awan 2019; the first private quantile regression of its kind).
    Δ_K = max(τ, 1 − τ)·b_K under add/remove, 2·max(τ, 1 − τ)·b_K under replace-one, b_K
    the K-norm row bound (x clipped in the K-norm; :func:`quantile_gradient_sensitivity`:
    the (1 − τ) of the only public code is too small for τ > ½). Charged as one
    :class:`~dpledger.events.BoundedRange` (ε) — **a guarantee of exact sampling only**:
    θ is the last state of chain 0 of random-walk Metropolis (:func:`metropolis`), an
    approximate draw; the ledger label says "MCMC: approximate sampler; ε holds for exact
    sampling only". With ``diagnostics=True``, ``mcmc_diagnostics_`` and the
    :class:`MCMCWarning` are functions of the data outside the guarantee (do not publish
    them); by default neither exists. ``y_bound`` does not enter Δ_K
    (the gradient ignores y's size); y is clipped to it as declared.

    Args:
        epsilon: The ε of the release (for exact sampling).
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖_K (rows beyond are clipped in that norm).
        {y_bound}
        theta_bound: Radius r of Θ (ℓ₂); finite, > 0.
        {adjacency}
        tau: The quantile level τ ∈ (0, 1).
        norm: The K-norm of the gradient: "l1", "l2" or "linf".
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        {mcmc}

    Attributes:
        sensitivity_: Δ_K, the K-norm sensitivity of the gradient the density was sized for.
        mcmc_diagnostics_: {diagnostics}
        {fitted}
    """

    _kind = "kng"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        tau: float = 0.5,
        norm: str = "l2",
        fit_intercept: bool = True,
        chains: int = 4,
        burn_in: int = 2000,
        samples: int = 1000,
        data_size: int | None = None,
        diagnostics: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class ExponentialQuantileRegression(_QuantileRegression):
    """Quantile regression by the exponential mechanism on Θ, sampled by MCMC.

    Releases one θ ∈ Θ with density ∝ exp(−εℓₙ(θ)/(2Δ_ℓ)), ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ),
    Δ_ℓ = max(τ, 1 − τ)(C + b₂r) under either adjacency (:func:`quantile_loss_range`).
    Charged as :class:`~dpledger.events.BoundedRange` (ε) for exact sampling; sampled
    approximately by :func:`metropolis` (see :class:`KNGQuantileRegression` for what that
    means). Rows are clipped in ℓ₂.

    Args:
        epsilon: The ε of the release (for exact sampling).
        delta: Ignored (pure ε); 0 by default, must not be None.
        x_bound: Declared bound on ‖x‖₂ (rows beyond are clipped).
        {y_bound}
        theta_bound: Radius r of Θ (ℓ₂); finite, > 0.
        {adjacency}
        tau: The quantile level τ ∈ (0, 1).
        fit_intercept: Append the public constant column 1 (counted in the row bound).
        {mcmc}

    Attributes:
        sensitivity_: Δ_ℓ, the range of the check loss on Θ the density was sized for.
        mcmc_diagnostics_: {diagnostics}
        {fitted}
    """

    _kind = "exponential"
    #: the gradient's K-norm does not enter the exponential mechanism: rows are clipped in ℓ₂
    _fixed_parameters: ClassVar[dict[str, Any]] = {
        **_QuantileRegression._fixed_parameters,
        "norm": "l2",
    }

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        x_bound: float | None = None,
        y_bound: float | None = None,
        theta_bound: float | None = None,
        adjacency: str | None = None,
        tau: float = 0.5,
        fit_intercept: bool = True,
        chains: int = 4,
        burn_in: int = 2000,
        samples: int = 1000,
        data_size: int | None = None,
        diagnostics: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


_MCMC_ARGS = """chains: Number of Metropolis chains (2 to 64; default 4).
        burn_in: Adaptive burn-in steps per chain (discarded).
        samples: Kept steps per chain (for the diagnostics).
        data_size: Public row count for the work cap ``MAX_MCMC_WORK`` (optional; under
            add/remove without it the cap counts no rows, since n is private).
        diagnostics: Set ``mcmc_diagnostics_`` and warn (:class:`MCMCWarning`) when the
            chains look unconverged. Off by default: both are functions of the data
            outside the guarantee, for the data holder only.
        ledger: A shared ledger, or None for a per-fit ledger.
        rng: numpy Generator or int seed, or None."""

_SAMPLER = """ridge_: The ridge λ used (``ridge``, or the "auto" value).
        sampler_epsilon_: The ε of the density the sampler draws from (what is left of ε
            after the cost of the sampler's failure event)."""

_DIAGNOSTICS = """The chains' acceptance rates, effective sample sizes and split R̂
            (:class:`MCMCDiagnostics`): functions of the data outside the guarantee, for
            the data holder only. Only with ``diagnostics=True``."""

_FITTED = """coef_: The released θ's coefficients (its first ``n_features_in_`` entries).
        intercept_: The released θ's last entry (0.0 without ``fit_intercept``).
        theta_: The released θ = (coef, intercept) ∈ Θ.
        {n_features_in_}
        {ledger_}
        releases_: The events charged: one :class:`~dpledger.events.BoundedRange` (ε)."""

fill_docstring(KNGLinearRegression, ExponentialLinearRegression, sampler=_SAMPLER, fitted=_FITTED)
fill_docstring(
    KNGQuantileRegression,
    ExponentialQuantileRegression,
    mcmc=_MCMC_ARGS,
    diagnostics=_DIAGNOSTICS,
    fitted=_FITTED,
)

__dir__ = namespace(__all__)
