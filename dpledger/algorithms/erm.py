"""Private empirical risk minimisation: objective and output perturbation.

Both fit L2-regularised ERM for a generalised linear loss ℓ_z(θ) = φ(θᵀx; y) with
``|φ′| ≤ a`` and ``0 ≤ φ″ ≤ c`` (a.e.), over rows with ‖x‖₂ ≤ R:

====================  =====================================  ======  ========
loss                  φ                                      a       c
====================  =====================================  ======  ========
``"logistic"``        log(1 + e^{−y·t}), y ∈ {−1, +1}        1       1/4
``"huber"`` (SVM)     Huber hinge of y·t, width h (CMS §3.4) 1       1/(2h)
``"huber"`` (regr.)   Huber loss of the residual t − y, κ    κ       1
====================  =====================================  ======  ========

**Objective perturbation** (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2 and Thm 9, with
c·R²; K-norm noise, Hardt & Talwar 2010, or Gaussian noise after Kifer, Smith & Thakurta
2012) releases the solver's minimiser plus the noise of approximate minima perturbation
(Iyengar et al. 2019, Alg. 1). **Output perturbation** (CMS 2011, Alg. 1 and Cor. 8)
releases the minimiser plus noise for the sensitivity k·a·R/(Nλ) + 2·tol/λ.

This module holds the estimators; the privacy arithmetic is in ``_erm_privacy``, the
certified solver in ``_erm_solver``, and the row weights (the private row count decides
nothing observable, issue 31) with the solver's public floor and step count in
``_erm_bounds``. The proofs are in docs/erm.md. All noise here is floating point: the
releases carry Mironov's 2012 caveat.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from dpledger._numerics import div_up, round_up, sum_up
from dpledger._public import namespace
from dpledger._validation import check_choice, check_int_at_least, check_probability
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._erm_bounds import (
    _STEP_CAP,
    _gradient_steps,
    _row_weight,
    _smoothness,
    _solver_floor,
    _tolerance,
    _weight_cap,
    _weight_factor,
    _weight_ratio,
    _weight_spread,
)
from dpledger.algorithms._erm_privacy import (
    _MARGIN,
    NOISES,
    PURE_NOISES,
    PerturbationPlan,
    _finite_positive,
    _k,
    _ObjectiveNoise,
    _weighted_gaussian_sigma,
    objective_perturbation_epsilon,
    objective_perturbation_plan,
)
from dpledger.algorithms._erm_privacy import (
    _logistic_joint as _logistic_joint,  # re-exported: tests check the joint bound here
)
from dpledger.algorithms._erm_solver import ConvergenceError, _Loss, _minimise
from dpledger.algorithms.base import PrivateEstimator, store_parameters
from dpledger.algorithms.linear import BinaryClassifierOutputs, _scale_rows, _shrink_rows
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms import Gaussian, KNorm

__all__ = [
    "ConvergenceError",
    "ObjectivePerturbationClassifier",
    "ObjectivePerturbationRegressor",
    "OutputPerturbationClassifier",
    "OutputPerturbationRegressor",
    "PerturbationPlan",
    "objective_perturbation_epsilon",
    "objective_perturbation_plan",
]


def _clip_l1(Xs: np.ndarray, limit: float) -> None:
    """Scale down, in place, the rows whose ℓ₁ norm may exceed ``limit``.

    The shared clip (:func:`~.linear._shrink_rows`): every row's *exact* ℓ₁ norm is ≤
    ``limit`` afterwards, whatever the number of columns.
    """
    _shrink_rows(Xs, limit, "l1")


def _rows(X: Any) -> Any:
    """``X`` as :func:`_data.as_design` checks it, except that zero rows are accepted.

    Under add/remove the empty data set is a neighbour of every one-row data set, so it
    must give the same control flow: it is fitted from zero statistics (the minimiser of
    the regulariser and the noise alone). Its columns must still be declared, (0, d).
    """
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2 or shape[0] != 0 or _data.is_dask(X):
        return _data.as_design(X)
    try:
        raw = np.asarray(X)
        array = None if np.iscomplexobj(raw) else raw.astype(float)
    except (TypeError, ValueError):
        array = None
    if array is None or shape[1] == 0:
        return _data.as_design(X)  # its own message: not numeric, or no columns
    return array


class _ERM(PrivateEstimator):
    """Rows, loss and solver shared by objective and output perturbation."""

    loss: Any
    huber_width: Any
    huber_threshold: Any
    l2_regularization: Any
    x_bound: Any
    fit_intercept: Any
    intercept_scaling: Any
    noise: Any
    data_size: Any
    tol: Any
    max_iter: Any
    classifier = False
    #: The noises this release accepts.
    noises: tuple[str, ...] = NOISES

    def _loss(self) -> _Loss:
        if self.classifier:
            name = check_choice("loss", self.loss, ("logistic", "huber"))
            if name == "logistic":
                return _Loss("logistic", 1.0, 0.25)
            h = _finite_positive("huber_width", self.huber_width)
            return _Loss("huber_svm", 1.0, 1.0 / (2.0 * h), h)
        if self.loss in ("squared", "squared_error", "linear"):
            raise InvalidArgumentError(
                f"`loss` {self.loss!r} violates objective perturbation's conditions: squared "
                "error has an unbounded gradient (|φ′| must be bounded). Use loss='huber' with "
                "`huber_threshold` κ ≥ the residuals you expect (least squares within κ)."
            )
        check_choice("loss", self.loss, ("huber",))
        kappa = _finite_positive("huber_threshold", self.huber_threshold)
        return _Loss("huber", kappa, 1.0, kappa)

    def _geometry(self) -> tuple[float, float]:
        """(x_bound B, intercept column value s): R² = B² + s²."""
        bound = self._bound("x_bound", self.x_bound)
        s = 0.0
        if self.fit_intercept:
            s = _finite_positive("intercept_scaling", self.intercept_scaling)
        return bound, s

    def _l1_bound(self, noise: str) -> float | None:
        """The declared ℓ₁ bound on the rows: required by, and only by, ℓ₁ noise."""
        value = getattr(self, "x_l1_bound", None)
        if noise != "l1_laplace":
            if value is not None:
                raise InvalidArgumentError(
                    f"`x_l1_bound` is used by noise='l1_laplace' only (noise={noise!r}): "
                    f"drop it or choose that noise. Found {value!r}."
                )
            return None
        return self._bound("x_l1_bound", value)

    def _design(
        self, X: Any, y: Any, l1_bound: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, float, float | None]:
        """Scaled rows (‖x̃‖ ≤ R̃ = R/B), targets, the public N, R̃ and R̃₁ (ℓ₁, if declared).

        With an ℓ₁ bound B₁ each row is also clipped (scaled down) to ‖x‖₁ ≤ B₁ — a
        record-local map, like the ℓ₂ clip — and R̃₁ = B₁/B + s/B, raised by the
        rounding error of the computed ℓ₁ norms.
        """
        bound, s = self._geometry()
        Xd = _rows(X)
        if _data.is_dask(Xd):
            raise InvalidArgumentError(
                f"{type(self).__name__} takes in-memory data (numpy/pandas): the solver "
                "passes over the rows many times."
            )
        yd = np.asarray(_data.as_target(y, Xd.shape[0]), dtype=float)
        if self.classifier:
            # the declared domain of a row, checked like X's finiteness: a y outside {0, 1}
            # is not a data set this estimator is defined on (its guarantee is over
            # neighbours within the domain), and the refusal comes before any charge
            if not np.all((yd == 0) | (yd == 1)):
                raise InvalidArgumentError("`y` must hold the labels 0 and 1.")
            yd = 2.0 * yd - 1.0
        # C order whatever the input's layout, so pandas and numpy input give equal bits
        Xs = _scale_rows(np.ascontiguousarray(Xd, dtype=float), bound, unit=False)
        radius_l1 = None
        if l1_bound is not None:
            limit = l1_bound / bound
            if not 1e-300 < limit < 1e300:
                raise InvalidArgumentError(
                    f"`x_l1_bound` / `x_bound` = {l1_bound!r} / {bound!r} is beyond the "
                    "arithmetic of the bounds: choose comparable scales."
                )
            _clip_l1(Xs, limit)
            # Σ|x̃ᵢ| computed ≤ limit; the exact sum is within γ_d of it
            slack = 1.0 + 2.0 * (Xs.shape[1] + 2) * 2.0**-53
            radius_l1 = (limit + (s / bound if self.fit_intercept else 0.0)) * slack
            radius_l1 = float(np.nextafter(radius_l1, math.inf))
        if self.fit_intercept:
            Xs = np.hstack([Xs, np.full((Xs.shape[0], 1), s / bound)])
        self.n_features_in_ = int(Xd.shape[1])
        ratio = s / bound
        if not ratio < 1e100:
            raise InvalidArgumentError(
                f"`intercept_scaling` / `x_bound` = {s!r} / {bound!r} is beyond the "
                "arithmetic of the bounds: choose comparable scales."
            )
        radius = math.sqrt(1.0 + ratio * ratio) * (1 + 1e-15)
        return Xs, yd, self._size(Xs.shape[0]), radius, radius_l1

    def _size(self, rows: int) -> float:
        if self.data_size is None:
            if self._adjacency() == ev.ADD_REMOVE:
                raise InvalidArgumentError(
                    "under add/remove the row count is private: declare `data_size`, a public "
                    "number of rows that normalises the objective. Found None."
                )
            if rows == 0:  # n is public under replace-one (neighbours share it)
                raise InvalidArgumentError(
                    "`X` has no rows, and without `data_size` the objective is normalised "
                    "by the row count: declare `data_size`. Found 0 rows."
                )
            return float(rows)  # replace-one: neighbours share the size
        return _finite_positive("data_size", self.data_size)

    def _weighted_size(self, rows: int, size: float) -> float:
        """N/v(n): the data term's normaliser, so that it weighs each row v(n)/N."""
        return size / _row_weight(rows, size)

    def _row_factor(self, adjacency: str, size: float) -> float:
        """F of :func:`_weight_factor` under add/remove; 1 under replace-one (n shared)."""
        return _weight_factor(size) if adjacency == ev.ADD_REMOVE else 1.0

    def _solver(self) -> tuple[float, int]:
        tol = _finite_positive("tol", self.tol)
        return tol, check_int_at_least("max_iter", self.max_iter, 1)

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

    def _regularization(self) -> float:
        return _finite_positive("l2_regularization", self.l2_regularization)

    def _noise(self) -> str:
        check_choice("noise", self.noise, NOISES)  # a known noise (and a string) first
        if self.noise == "l1_laplace" and "l1_laplace" not in self.noises:
            raise InvalidArgumentError(
                f"{type(self).__name__} takes noise='laplace' or 'gaussian': the minimiser's "
                "sensitivity is an ℓ₂ bound, so ℓ₁ noise has no sensitivity to be sized for "
                "(noise='l1_laplace' is objective perturbation's). Found 'l1_laplace'."
            )
        noise = check_choice("noise", self.noise, self.noises)
        if noise == "gaussian" and self._budget()[1] == 0:
            raise InvalidArgumentError(
                "Gaussian noise gives (ε, δ)-DP: declare `delta` > 0, or use noise='laplace'."
            )
        return noise

    def _finish(self, theta: np.ndarray) -> None:
        bound, s = self._geometry()
        p = self.n_features_in_
        self.coef_ = theta[:p] / bound
        self.intercept_ = float(theta[p] * s / bound) if self.fit_intercept else 0.0

    def predict(self, X: Any) -> np.ndarray:
        """x·coef_ + intercept_ (post-processing)."""
        X = self._fitted_input(X, "coef_")
        return np.asarray(X @ self.coef_ + self.intercept_)


class _Objective(_ERM):
    solver_share: Any
    jacobian_share: Any
    x_l1_bound: Any

    def _share(self) -> float:
        share = check_probability("solver_share", self.solver_share, low_open=True, high_open=True)
        return share

    def _jacobian_share(self) -> float:
        return check_probability(
            "jacobian_share", self.jacobian_share, low_open=True, high_open=True
        )

    def fit(self, X: Any, y: Any) -> Any:
        """Draw b (charged first), minimise the perturbed objective, release θ̃ + Z.

        The minimiser θ̃ is within r = tol/(λ + Δ) of the exact private minimiser θ̂
        whatever the data and b; Z is noise for an L2 shift of 2r, charged with the
        objective perturbation (the approximate-minima perturbation of Iyengar et al.
        2019; the proof is in docs/erm.md).

        Under add/remove the rows weigh v(n) (the row-count clip, docs/erm.md):
        the plan is calibrated for (ε(1 − share) − d·log ρ)/F with the pure noises (and
        charged ε_plan + (F − 1)·ε′ + d·log ρ ≤ ε(1 − share)), or for
        ε(1 − share) − d·log ρ with a Gaussian b sized for the row gradient F·a·R (and
        charged ε_plan + d·log ρ), its σ then raised to meet
        :func:`_weighted_gaussian_delta`. The solver's tolerance is at least
        :func:`_solver_floor`, and its gradient phase's step count
        (:func:`_gradient_steps`, refused before the charge above the cap), for
        ‖b‖ ≤ 64·(its scale)·(d, or √d for Gaussian b); beyond (probability below
        1e-25) the certificate may fail, after the charge.
        """
        self._budget()
        variant = self._variant()
        adjacency = self._adjacency()
        ledger = self._shared_ledger()
        loss, lam, noise = self._loss(), self._regularization(), self._noise()
        tol, max_iter = self._solver()
        share = self._share()
        epsilon, delta = self._budget()
        Xs, ys, size, radius, radius_l1 = self._design(X, y, self._l1_bound(noise))
        for value in (radius, radius_l1 or 0.0):
            if not math.isfinite(2 * loss.a * value):
                raise InvalidArgumentError(
                    f"one row's gradient bound a·R = {loss.a!r} × {value!r} (a from the loss, "
                    "e.g. `huber_threshold`; R from `x_bound`, `x_l1_bound` and "
                    "`intercept_scaling`) overflows floating point: rescale."
                )
        d = Xs.shape[1]
        rows = Xs.shape[0]  # private under add/remove: enters only through v(n)
        factor = self._row_factor(adjacency, size)  # F: (W) of _row_weight
        reverse = round_up(d * _weight_ratio(size)) if adjacency == ev.ADD_REMOVE else 0.0
        budget = epsilon * (1 - share) - reverse
        pure = noise in PURE_NOISES
        if not budget > 0:
            raise InvalidArgumentError(
                f"epsilon={epsilon!r} leaves nothing for the noise after the row-count clip's "
                f"Jacobian term d·log ρ = {reverse!r}: raise epsilon or `data_size`."
            )
        plan = objective_perturbation_plan(
            epsilon=budget / factor if pure else budget,
            delta=delta * (1 - share),
            noise=noise,
            lipschitz=loss.a * radius * (1.0 if pure else factor),
            curvature=loss.c * radius * radius,
            size=size,
            regularization=lam,
            adjacency=adjacency,
            variant=variant,
            loss="logistic" if loss.name == "logistic" else "generic",
            jacobian_share=self._jacobian_share(),
            l1_lipschitz=None if radius_l1 is None else loss.a * radius_l1,
        )
        # the row-count clip's cost (the proof is _Objective.fit's): (F − 1)·ε′ on the
        # noise term (pure noises; a Gaussian b was sized for F·L) and d·log ρ
        extra = (factor - 1) * plan.epsilon_noise if pure else 0.0
        charged = sum_up(plan.epsilon, round_up(extra), reverse)
        plan = replace(plan, epsilon=charged, epsilon_jacobian=charged - plan.epsilon_noise)
        if noise == "gaussian" and adjacency == ev.ADD_REMOVE:
            # b's change has a part whose direction moves with the output (the rows'
            # weights): more noise for the same (ε, δ) (issue 31, F5)
            sigma = _weighted_gaussian_sigma(plan, loss.a * radius, factor, _weight_spread(size), d)
            plan = replace(plan, scale=sigma)
        ridge = lam + plan.extra_regularization
        spread = {"laplace": d, "l1_laplace": math.sqrt(2 * d), "gaussian": math.sqrt(d)}
        mean_b = plan.scale * spread[plan.noise]  # about E‖b‖
        b_bound = 64 * plan.scale * (math.sqrt(d) if plan.noise == "gaussian" else d)
        solver_tol = max(
            _tolerance(tol, loss.a * radius + mean_b / size),
            _solver_floor(loss, radius, d, ridge, b_bound / size),
        )
        fallback = self._fallback(loss, radius, d, ridge, b_bound / size, solver_tol)
        shift = div_up(2 * solver_tol, ridge)  # ‖θ̃(D) − θ̂(D)‖ + ‖θ̃(D′) − θ̂(D′)‖
        weighted = self._weighted_size(rows, size)
        perturbation = _ObjectiveNoise(plan, d)
        approximation: Any
        rest = (epsilon - plan.epsilon) * (1 - 1e-9)  # plan.epsilon ≤ (1 − share)·ε
        if noise in PURE_NOISES:
            approximation = KNorm(rest, shift, norm="l2", dimension=d)
        else:  # charged as (ε₃, δ₃): composes with the (ε, δ) of the perturbation anywhere
            from dpledger.calibrate import gaussian_sigma

            rest_delta = (delta - plan.delta) * (1 - 1e-9)
            sigma = gaussian_sigma(rest, rest_delta, sensitivity=shift) * (1 + _MARGIN)
            approximation = _ObjectiveNoise(
                PerturbationPlan(rest, rest_delta, rest, 0.0, 0.0, "gaussian", sigma), d
            )

        def minimiser(outputs: list[Any]) -> np.ndarray:
            b = np.asarray(outputs[0], dtype=float)
            try:
                theta, _ = _minimise(
                    Xs, ys, loss, ridge, b / size, solver_tol, max_iter, weighted, fallback
                )
            except ConvergenceError as error:
                raise ConvergenceError(
                    f"{error} The perturbation b was already charged and drawn "
                    f"({plan.epsilon!r} of ε); nothing more was released."
                ) from None
            return theta

        _, released = self._release(
            self._reserve([perturbation, approximation], ledger),
            [("perturbation b", np.zeros(d)), ("approximate minimiser", minimiser)],
        )
        self.plan_ = plan
        self.solver_tol_ = solver_tol
        self.shift_ = shift
        self.shift_scale_ = approximation.plan.scale if noise == "gaussian" else div_up(shift, rest)
        self._finish(np.asarray(released, dtype=float))
        return self


class _Output(_ERM):
    noises = ("laplace", "gaussian")  # θ*'s sensitivity is an ℓ₂ bound: no ℓ₁ noise

    def fit(self, X: Any, y: Any) -> Any:
        """Solve to ``tol`` (checked, before any charge), then release θ̃ + noise.

        The rows weigh v(n) (the row-count clip): the sensitivity charged is
        F·k·a·R/(Nλ) + 2·tol/λ (F = 1 under replace-one), and ``tol`` is at least
        :func:`_solver_floor`, which every data set is certified to within the public
        step count of :func:`_gradient_steps` (refused before any charge above the cap).
        """
        self._budget()
        variant = self._variant()
        adjacency = self._adjacency()
        ledger = self._shared_ledger()
        loss, lam, noise = self._loss(), self._regularization(), self._noise()
        tol, max_iter = self._solver()
        epsilon, delta = self._budget()
        Xs, ys, size, radius, _ = self._design(X, y)
        d = Xs.shape[1]
        solver_tol = max(_tolerance(tol, loss.a * radius), _solver_floor(loss, radius, d, lam, 0.0))
        factor = self._row_factor(adjacency, size)  # F: (W) of _row_weight
        main = div_up(round_up(factor * _k(adjacency) * loss.a * radius), size * lam)
        sensitivity = sum_up(main, div_up(2 * solver_tol, lam))
        weighted = self._weighted_size(Xs.shape[0], size)
        fallback = self._fallback(loss, radius, d, lam, 0.0, solver_tol)
        theta, _ = _minimise(
            Xs, ys, loss, lam, np.zeros(d), solver_tol, max_iter, weighted, fallback
        )
        if noise == "laplace":
            knorm = KNorm(epsilon, sensitivity, norm="l2", dimension=d)
            reservation = self._reserve([knorm], ledger)
        else:
            safe = bool(getattr(self, "safe_noise", False))
            if variant == "published":  # the classical σ = Δ√(2 log(1.25/δ))/ε
                sigma = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
                reservation = self._reserve(
                    [Gaussian(sigma, sensitivity, dimension=d, safe=safe)], ledger
                )
            else:

                def make(p: float) -> list[Any]:
                    return [Gaussian(p * sensitivity, sensitivity, dimension=d, safe=safe)]

                guess = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
                reservation = self._reserve(make, ledger, initial=guess)
        (noisy,) = self._release(reservation, [("minimiser", theta)])
        self.sensitivity_ = sensitivity
        self.solver_tol_ = solver_tol
        self._finish(np.asarray(noisy, dtype=float))
        return self


_COMMON_ARGS = """epsilon: The ε this fit must meet.
        delta: The δ (0 with ``noise="laplace"``; > 0 with ``noise="gaussian"``).
        x_bound: Declared bound on each row's L2 norm (rows beyond are clipped).
        adjacency: "add_remove" or "replace_one" (declared).
        l2_regularization: λ: the objective is (1/N)Σℓ + (λ/2)‖θ‖².
        fit_intercept: Append a public constant column (inside the norm bound).
        intercept_scaling: That column's value s (R² = x_bound² + s²).
        noise: "laplace" (ℓ₂-Laplace: pure ε-DP) or "gaussian" ((ε, δ)-DP); objective
            perturbation also takes "l1_laplace" (pure ε-DP, with ``x_l1_bound``).
        data_size: The public N (required under add/remove; the data's size otherwise).
            Rows beyond 2N weigh less, so that the data term never weighs more than
            about 33N rows (the row-count clip: a private n never decides the outcome).
        tol: Gradient-norm tolerance of the solver, ‖∇J‖/N ≤ tol (floored by public
            quantities so that every data set can be certified to it; the value used is
            ``solver_tol_``).
        max_iter: Newton iterations tried (at least 100) before the solver falls back
            to gradient descent, which certifies within a public number of steps
            (settings whose bound exceeds 10⁹ steps are refused before any charge): the
            count never decides whether a fit releases, only how long it takes.
        variant: "calibrated" (default) or "published" (the paper's constants, charged
            at their true cost).
        ledger: A shared ledger to draw on, or None for a per-fit planned ledger.
        rng: numpy Generator or int seed (reproducible), or None (OS-seeded)."""


_OBJECTIVE_ARGS = """solver_share: The share of ε (and δ) for the noise Z on the approximate
            minimiser (default 0.01); the rest is the objective perturbation's.
        jacobian_share: The most of the perturbation's ε the Jacobian term may take
            before the extra ridge Δ is raised (CMS's 1/2 by default). A smaller share
            buys more noise budget with more ridge: a hyper-parameter, to be chosen on
            public data like λ.
        x_l1_bound: With ``noise="l1_laplace"``: the declared bound on each row's ℓ₁
            norm (rows beyond are clipped to it, as to ``x_bound``). b then has i.i.d.
            Laplace coordinates sized for the gradient's ℓ₁ sensitivity k·a·R₁ — far less
            noise than ℓ₂-Laplace on sparse rows, e.g. one-hot data: E‖b‖² is
            2d·(kaR₁/ε′)² against d(d + 1)·(kaR/ε′)², a ratio 2R₁²/((d + 1)R²)."""


class ObjectivePerturbationClassifier(BinaryClassifierOutputs, ClassifierMixin, _Objective):  # type: ignore[misc]
    """Objective perturbation for logistic regression or the Huber SVM (labels 0 and 1).

    Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2, with c·R² and an ℓ₂-Laplace or
    Gaussian b, releasing the solver's minimiser plus the noise Z of approximate minima
    perturbation (see docs/erm.md for the theorem and its conditions:
    ‖x‖ ≤ x_bound, intercept inside the bound, the solver's tolerance).

    Args:
        loss: "logistic" (c = 1/4) or "huber" (the Huber SVM, c = 1/(2h)).
        huber_width: h of the Huber SVM.
        {objective}
        {common}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms import ObjectivePerturbationClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(5000, 3)) / 2
        >>> y = (X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=5000) > 0).astype(int)
        >>> model = ObjectivePerturbationClassifier(
        ...     epsilon=1.0, delta=0.0, x_bound=2.0, adjacency="replace_one", rng=1
        ... ).fit(X, y)
        >>> model.score(X, y) > 0.85
        True
    """

    classifier = True
    huber_threshold = None

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "logistic",
        huber_width: float = 0.5,
        x_bound: float | None = None,
        adjacency: str | None = None,
        l2_regularization: float = 1e-3,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        noise: str = "laplace",
        data_size: float | None = None,
        tol: float = 1e-12,
        max_iter: int = 1000,
        variant: str = "calibrated",
        solver_share: float = 0.01,
        jacobian_share: float = 0.5,
        x_l1_bound: float | None = None,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class ObjectivePerturbationRegressor(RegressorMixin, _Objective):  # type: ignore[misc]
    """Objective perturbation for linear regression with the Huber loss of the residual.

    φ(t; y) = (t − y)²/2 for |t − y| ≤ κ, κ|t − y| − κ²/2 beyond: least squares wherever
    the residuals stay within κ, and Lipschitz (|φ′| ≤ κ, φ″ ≤ 1) as objective
    perturbation requires — plain squared error has an unbounded gradient. y needs no
    bound. The approximate-DP form (``noise="gaussian"``) is the Kifer–Smith–Thakurta
    route for linear regression.

    Args:
        loss: "huber" (the only loss of the residual meeting the conditions; "squared"
            is refused: its gradient is unbounded).
        huber_threshold: κ, in the units of y.
        {objective}
        {common}
    """

    huber_width = None

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "huber",
        huber_threshold: float = 1.0,
        x_bound: float | None = None,
        adjacency: str | None = None,
        l2_regularization: float = 1e-3,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        noise: str = "laplace",
        data_size: float | None = None,
        tol: float = 1e-12,
        max_iter: int = 1000,
        variant: str = "calibrated",
        solver_share: float = 0.01,
        jacobian_share: float = 0.5,
        x_l1_bound: float | None = None,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class OutputPerturbationClassifier(BinaryClassifierOutputs, ClassifierMixin, _Output):  # type: ignore[misc]
    """Output perturbation for logistic regression or the Huber SVM (labels 0 and 1).

    Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1: θ* plus ℓ₂-Laplace noise,
    ‖b‖ ~ Gamma(d, Δ/ε) with Δ = kL/(Nλ) + 2·tol/λ, or Gaussian noise of that L2
    sensitivity (calibrated; ``published``: the classical σ).

    Args:
        loss: "logistic" or "huber" (the Huber SVM).
        huber_width: h of the Huber SVM.
        safe_noise: With Gaussian noise, exact discrete noise on a grid (default False).
        {common}
    """

    classifier = True
    huber_threshold = None

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "logistic",
        huber_width: float = 0.5,
        x_bound: float | None = None,
        adjacency: str | None = None,
        l2_regularization: float = 1e-3,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        noise: str = "laplace",
        data_size: float | None = None,
        tol: float = 1e-12,
        max_iter: int = 1000,
        variant: str = "calibrated",
        safe_noise: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


class OutputPerturbationRegressor(RegressorMixin, _Output):  # type: ignore[misc]
    """Output perturbation for linear regression with the Huber loss of the residual.

    Args:
        loss: "huber" (the only loss of the residual meeting the conditions; "squared"
            is refused: its gradient is unbounded).
        huber_threshold: κ, in the units of y.
        safe_noise: With Gaussian noise, exact discrete noise on a grid (default False).
        {common}
    """

    huber_width = None

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "huber",
        huber_threshold: float = 1.0,
        x_bound: float | None = None,
        adjacency: str | None = None,
        l2_regularization: float = 1e-3,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        noise: str = "laplace",
        data_size: float | None = None,
        tol: float = 1e-12,
        max_iter: int = 1000,
        variant: str = "calibrated",
        safe_noise: bool = False,
        ledger: Any = None,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())


for _cls in (
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
):
    _cls.__doc__ = (
        (_cls.__doc__ or "")
        .replace("{objective}", _OBJECTIVE_ARGS)
        .replace("{common}", _COMMON_ARGS)
    )

__dir__ = namespace(__all__)
