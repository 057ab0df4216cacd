"""Private IRLS (Park & Welling 2016): re-weighted moments released J times.

Iteratively re-weighted least squares re-fits a weighted regression J times; each
iteration t releases the weighted first and second moments of the (clipped, scaled)
data, computed with the weights of the previous *private* estimate θ⁽ᵗ⁻¹⁾ (θ⁽⁰⁾ = 0),
and updates θ from the noisy moments alone (post-processing). 2J releases in all; their
noise is fixed before the first one, so a fit's schedule is planned and composed with
the tightest method (adaptive composition: each release's privacy is fixed in advance,
only the statistic depends on earlier outputs — Dong, Roth & Su 2019, Thm 3.2).

Losses (all moments are sums over rows, computed in one pass per iteration, chunked or
by dask, like SSP's):

* ``"lad"`` — the paper's p = 1 case (least absolute deviations, robust regression):
  sᵢ = 1/max(1/c, |ỹᵢ − x̃ᵢᵀθ|) ≤ c (``weight_cap`` c: the paper calls it δ; it is not
  DP's δ), A = Σ sᵢx̃ᵢỹᵢ, B = Σ sᵢx̃ᵢx̃ᵢᵀ, θ ← B̃⁻¹Ã.
* ``"logistic"`` — Fisher scoring (not in the paper's text, which treats p = 1 only; the
  released moments are bounded as derived here): μᵢ = σ(x̃ᵢᵀθ), g = Σ x̃ᵢ(yᵢ − μᵢ),
  B = Σ μᵢ(1 − μᵢ)x̃ᵢx̃ᵢᵀ (weights ≤ 1/4), θ ← θ + B̃⁻¹g̃. y ∈ [0, 1]: outcomes 0 and 1,
  or proportions; values beyond are clipped (record-local, never refused). A regressor
  of the mean, ``predict`` gives P(y = 1 | x); for class labels use a classifier.
* ``"poisson"`` — Fisher scoring with μᵢ = min(exp(x̃ᵢᵀθ), c): g = Σ x̃ᵢ(yᵢ − μᵢ),
  B = Σ μᵢx̃ᵢx̃ᵢᵀ; y clipped to [0, ``y_bound``].

Sensitivities (unit row bound after scaling; w the weight bound, r the residual bound:
LAD w = c, r = c·1; logistic w = 1/4, r = 1; Poisson w = c, r = max(y_bound, c)):
first moment L2 r (add/remove) or 2r (replace-one), L1 √d times that (‖x‖₁ ≤ √d‖x‖₂);
second moment in Frobenius norm w (add/remove) or √2·w (replace-one).

Variants:

* ``"calibrated"`` (default): Gaussian first and second moments (``second_moment =
  "gaussian"``: symmetric noise in Frobenius geometry, the sound default) or a Laplace
  first moment, one noise scale for all 2J releases, solved so that they meet (ε, δ)
  jointly with the tightest method.
* ``"published"``: the paper's per-release ε′ = √(ε/J), from its mean-concentrated-DP
  argument (Dwork & Rothblum 2016, Thms 3.4–3.5): Laplace b = Δ₁/ε′ or Gaussian
  σ = √(2 log(1.25/δ))·Δ₂/ε′ for the first moment; the Wishart mechanism at ε′ for the
  second (``second_moment="wishart"``). Charged at the true cost of what is released —
  the Wishart release is (0, 1 − e^{−ε′})-DP and never ε-DP for any ε: its output's
  support depends on the data (SEED-NOTES 000; :mod:`dpledger.mechanisms.matrix`), so J
  of them cost δ = 1 − e^{−Jε′}. The paper's
  own accounting is reported next to it in ``paper_accounting_`` — a comparison, not a
  guarantee.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpledger._public import namespace
from dpledger._validation import check_int_at_least
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._linear_base import (
    LinearRegressorMixin,
    SufficientStatisticsModel,
    solve_ridge,
)
from dpledger.algorithms._params import (
    Bound,
    Constraint,
    Integer,
    Options,
    OrNone,
    Parameters,
    Positive,
)
from dpledger.algorithms.base import (
    Reservation,
    fit_context,
    store_parameters,
    symmetric_from_upper,
    upper,
)
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import Gaussian, Laplace
from dpledger.mechanisms.matrix import Wishart

__all__ = ["LOSSES", "MAX_ROWS", "PrivateIRLS"]

LOSSES = ("lad", "logistic", "poisson")

#: A public bound on the number of rows (int64 indexing), for range checks that must not
#: read the private count.
MAX_ROWS = float(_data.MAX_ROWS)

#: The most iterations a fit may run (each is a pass over the rows and two releases).
MAX_ITERATIONS = 10_000


class PrivateIRLS(LinearRegressorMixin, SufficientStatisticsModel):
    """Private IRLS for robust (LAD), logistic and Poisson regression (Park & Welling).

    Args:
        epsilon: The ε this fit must meet.
        delta: The δ this fit must meet.
        {x_bound}
        y_bound: Declared bound on |y| (LAD) or on y ≥ 0 (Poisson); logistic: 1.
        {adjacency}
        loss: "lad", "logistic" or "poisson".
        iterations: J, the number of re-weighting iterations (2J releases).
        weight_cap: c, the cap on the IRLS weights (LAD: sᵢ ≤ c; Poisson: μ ≤ c).
        first_moment: "gaussian" or "laplace".
        second_moment: "gaussian" (symmetric noise; sound) or "wishart" (published only).
        {fit_intercept}
        row_norm: "clip" (default) or "unit" (every row scaled to norm ``x_bound``).
        {variant}
        {ledger_safe_noise_rng}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import PrivateIRLS
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(4000, 2)) / 2
        >>> y = np.clip(X @ [0.6, -0.3] + 0.05 * rng.standard_t(2, size=4000), -1, 1)
        >>> model = PrivateIRLS(epsilon=2.0, delta=1e-6, x_bound=1.0, y_bound=1.0,
        ...                     adjacency="add_remove", iterations=3, rng=0).fit(X, y)
        >>> len(model.releases_)
        6

    Attributes:
        coef_: The coefficients of the linear predictor in data units (the last θ).
        intercept_: The intercept of the linear predictor (0.0 without ``fit_intercept``).
        theta_: The last iterate θ on the scaled rows (intercept column last).
        ridge_: The ridge the noisy moments were solved with (σ√(2d); 0 with Wishart).
        n_iter_: J, the number of re-weighting iterations run: the ``iterations``
            parameter (public; the schedule never depends on the data).
        paper_accounting_: The paper's own accounting (per-release ε′, its claim, the true
            mean loss): a comparison, not a guarantee. Only with ``variant="published"``.
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order (first and second moment per iteration).
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **SufficientStatisticsModel._parameter_constraints,
        "y_bound": OrNone(Bound()),  # not used by the logistic loss (y in [0, 1])
        "loss": Options(LOSSES),
        "iterations": Integer(
            1, MAX_ITERATIONS, why="each is a pass over the rows and two releases"
        ),
        "weight_cap": Positive(),
        "first_moment": Options(("gaussian", "laplace")),
        "second_moment": Options(("gaussian", "wishart")),
    }

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        y_bound: float | None = None,
        adjacency: str | None = None,
        loss: str = "lad",
        iterations: int = 5,
        weight_cap: float = 1.0,
        first_moment: str = "gaussian",
        second_moment: str = "gaussian",
        fit_intercept: bool = True,
        row_norm: str = "clip",
        variant: str = "calibrated",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    # -- the model ------------------------------------------------------------------------

    def _scale_y(self) -> bool:
        return bool(self._params.loss == "lad")

    def _y_bound(self) -> float:
        if self._params.loss == "logistic":
            return 1.0  # y ∈ [0, 1]: the bound is the model's, nothing read from the data
        return float(self._params.y_bound)

    def _transform(self) -> _data.Transform:
        if self._scale_y():
            return super()._transform()
        rows = self._rows()
        # Poisson: y clipped to [0, y_bound]; logistic: to [0, 1] (an outcome or a
        # proportion; a value beyond is clipped like any bounded target, never refused)
        y_bound = self._y_bound()

        def transform(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, Any]:
            return rows(X), None if y is None else np.clip(y, 0.0, y_bound)

        return transform

    def _bounds(self) -> tuple[float, float, float]:
        """(weight bound w, residual bound r, trace bound) of one row, unit row norm."""
        cap, loss = self._params.weight_cap, self._params.loss
        if loss == "lad":
            return cap, cap, cap
        if loss == "logistic":
            return 0.25, 1.0, 0.25
        return cap, max(self._y_bound(), cap), cap

    def _moments(self, theta: np.ndarray) -> _data.Moments:
        """Weights (aᵢ, bᵢ) of Σ aᵢx̃ᵢx̃ᵢᵀ and Σ bᵢx̃ᵢ at θ, within the bounds of :meth:`_bounds`."""
        cap, loss = self._params.weight_cap, self._params.loss

        def weights(X: np.ndarray, y: np.ndarray | None) -> tuple[Any, Any, Any]:
            assert y is not None
            eta = X @ theta
            if loss == "lad":
                w = 1.0 / np.maximum(1.0 / cap, np.abs(y - eta))
                return w, w * y, None
            if loss == "logistic":
                mu = special.expit(eta)
                return mu * (1.0 - mu), y - mu, None
            mu = np.minimum(np.exp(np.minimum(eta, 700.0)), cap)
            return mu, y - mu, None

        if loss == "lad":
            a, b = (0.0, cap), (-cap, cap)
        elif loss == "logistic":
            a, b = (0.0, 0.25), (-1.0, 1.0)
        else:
            a, b = (0.0, cap), (-cap, self._y_bound())
        return _data.Moments(weights, a=a, b=b)

    # -- the schedule -----------------------------------------------------------------------

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        if params.loss != "logistic" and params.y_bound is None:
            Bound().check("y_bound", None, type(self).__name__)  # the loss needs it declared
        first, second = params.first_moment, params.second_moment
        if second == "wishart" and params.variant != "published":
            raise InvalidArgumentError(
                "second_moment='wishart' is the published variant's (it is (ε′, 1 − e^{−ε′})-"
                "DP, never ε′-DP: it cannot be calibrated to a small δ). Use variant="
                "'published', or the sound default second_moment='gaussian'."
            )
        if params.delta == 0 and (first == "gaussian" or second == "gaussian"):
            raise InvalidArgumentError(
                "Gaussian noise needs `delta` > 0; with delta = 0 there is no sound IRLS "
                "release of the second moment here."
            )

    def schedule(self, n_features: int) -> list[ev.Event]:
        """The events a fit on ``n_features`` columns would charge, in order.

        Fixed before any data is seen (it depends on the parameters and the dimension
        only; a calibrated fit on a shared ledger also on that ledger's currency), so a
        reproduction can size or plan a ledger for it first — and an auditor can check
        it like a declared pipeline.
        """
        features = check_int_at_least("n_features", n_features, 1)
        with self._checked_parameters() as params:
            return list(self._reservation(features, params.ledger).events)

    def _reservation(self, features: int, ledger: Any) -> Reservation:
        params = self._params
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        first, second, iterations = params.first_moment, params.second_moment, params.iterations
        d = features + (1 if params.fit_intercept else 0)
        entries = d * (d + 1) // 2
        w, r, trace = self._bounds()
        factor = 2.0 if adjacency == ev.REPLACE_ONE else 1.0
        vector_l2 = r * factor
        vector_l1 = vector_l2 * math.sqrt(d)
        matrix_l2 = w * (math.sqrt(2.0) if adjacency == ev.REPLACE_ONE else 1.0)
        safe = params.safe_noise

        def first_mech(noise: float) -> Any:
            if first == "laplace":
                return Laplace(noise, vector_l1, dimension=d, safe=safe)
            return Gaussian(noise, vector_l2, dimension=d, safe=safe)

        if params.variant == "published":
            eps_step = math.sqrt(epsilon / iterations)
            c = math.sqrt(2.0 * math.log(1.25 / delta)) if delta > 0 else math.inf
            one = [
                first_mech(
                    vector_l1 / eps_step if first == "laplace" else c * vector_l2 / eps_step
                ),
                Wishart(eps_step, trace, dimension=d)
                if second == "wishart"
                else Gaussian(c * matrix_l2 / eps_step, matrix_l2, dimension=entries, safe=safe),
            ]
            return self._reserve(one * iterations, ledger)

        def scaled(p: float) -> list[Any]:
            noise_first = p * (vector_l1 if first == "laplace" else vector_l2) / math.sqrt(0.5)
            return [
                first_mech(noise_first),
                Gaussian(p * matrix_l2 / math.sqrt(0.5), matrix_l2, dimension=entries, safe=safe),
            ] * iterations

        guess = math.sqrt(2 * iterations * math.log(1.25 / max(delta, 1e-300))) / epsilon
        return self._reserve(scaled, ledger, initial=guess)

    @fit_context
    def fit(self, X: Any, y: Any) -> PrivateIRLS:
        """Check the 2J releases fit the ledger; then J rounds of release and re-weight."""
        params = self._params
        epsilon, iterations = params.epsilon, params.iterations
        Xd = _data.as_design(X)
        yd = _data.as_target(y, None if _data.is_dask(Xd) else Xd.shape[0])
        transform = self._transform()
        features = int(Xd.shape[1])
        d = features + (1 if params.fit_intercept else 0)
        reservation = self._reservation(features, params.ledger)
        mechanisms = reservation.mechanisms
        if params.variant == "published":
            eps_step = math.sqrt(epsilon / iterations)
            self.paper_accounting_ = {
                "per_release_epsilon": eps_step,
                "claimed": f"({epsilon:g}, {math.sqrt(2 * epsilon):g})-mean-concentrated DP",
                "true_mean_loss": iterations * eps_step * math.expm1(eps_step),
                "subgaussian_tau": math.sqrt(2 * iterations) * eps_step,
            }
        # the first pass before any check or charge: malformed data (NaN in a dask
        # partition) fails here, having decided nothing and spent nothing
        theta = np.zeros(d)
        stats = _data.sufficient_statistics(Xd, yd, transform, self._moments(theta))
        # every iteration's statistics are bounded by n·(row bounds) whatever θ is: check
        # that the noise grid can hold such values before the first release — for the
        # public bound MAX_ROWS on n, not n itself (under add/remove n is private, and a
        # refusal that depended on it would publish it unpaid)
        w, r, _ = self._bounds()
        for m, bound in zip(
            mechanisms[:2], (r * MAX_ROWS, math.sqrt(2) * w * MAX_ROWS), strict=True
        ):
            if not isinstance(m, Wishart):
                m.validate(np.full(m.dimension, bound))
        # check the whole schedule before the first release (nothing drawn if refused)
        reservation.open()
        for t in range(iterations):
            if t > 0:
                stats = _data.sufficient_statistics(Xd, yd, transform, self._moments(theta))
            # the exact sums go to the grid mechanisms (floored exactly); Wishart's float
            # noise takes the float Gram matrix
            matrix, exact = stats.gram, stats.exact
            m_second = mechanisms[2 * t + 1]
            noisy_vector = np.asarray(
                reservation.release(exact.vector, label=f"PrivateIRLS: first moment {t + 1}"),
                dtype=float,
            )
            label = f"PrivateIRLS: second moment {t + 1}"
            if isinstance(m_second, Wishart):
                noisy_matrix = np.asarray(
                    reservation.release((matrix + matrix.T) / 2, label=label), dtype=float
                )
            else:
                noisy_upper = reservation.release(upper(exact.gram), label=label)
                noisy_matrix = symmetric_from_upper(np.asarray(noisy_upper, dtype=float), d)
            # a ridge at the noise's typical spectral norm (σ√(2d) for symmetric noise of
            # variance σ² on the diagonal, σ²/2 off it): post-processing of public σ
            ridge = 0.0 if isinstance(m_second, Wishart) else m_second.sigma * math.sqrt(2 * d)
            step = solve_ridge(noisy_matrix, noisy_vector, ridge)
            theta = step if params.loss == "lad" else theta + step
        self._keep(reservation)
        self.ridge_ = (
            0.0 if isinstance(mechanisms[1], Wishart) else mechanisms[1].sigma * math.sqrt(2 * d)
        )
        self.n_features_in_ = features
        self.n_iter_ = iterations  # public: the parameter, never a data-dependent count
        self.theta_ = theta
        self._set_coefficients(theta, features, y_scale=None if self._scale_y() else 1.0)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """E[y | x]: the linear predictor (LAD), σ(·) (logistic) or exp(·) (Poisson)."""
        eta = self._margin(X)
        if self.loss == "logistic":
            return np.asarray(special.expit(eta))
        if self.loss == "poisson":
            return np.asarray(np.exp(np.minimum(eta, 700.0)))
        return eta  # type: ignore[no-any-return]


__dir__ = namespace(__all__)
