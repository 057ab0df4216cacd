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

This module holds the estimators; their shared base (rows, loss, the solver's settings)
is in ``_erm_base``, the privacy arithmetic in ``_erm_privacy``, the certified solver in
``_erm_solver``, and the row weights (the private row count decides nothing observable,
issue 31) with the solver's public floor and step count in ``_erm_bounds``. The proofs
are in docs/erm.md. All noise here is floating point: the releases carry Mironov's 2012
caveat.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from dpledger._numerics import div_up, round_up, sum_up
from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.algorithms._erm_base import MarginClassifier, Noise, RegularizedERM
from dpledger.algorithms._erm_bounds import (
    _solver_floor,
    _tolerance,
    _weight_ratio,
    _weight_spread,
)
from dpledger.algorithms._erm_privacy import (
    _MARGIN,
    PURE_NOISES,
    PerturbationPlan,
    _k,
    _ObjectiveNoise,
    _perturbation_radius,
    _weighted_gaussian_sigma,
    objective_perturbation_epsilon,
    objective_perturbation_plan,
)
from dpledger.algorithms._erm_privacy import (
    _logistic_joint as _logistic_joint,  # re-exported: tests check the joint bound here
)
from dpledger.algorithms._erm_solver import ConvergenceError, _minimise
from dpledger.algorithms._linear_base import LinearRegressorMixin
from dpledger.algorithms._params import Bound, Constraint, OrNone, Parameters, Probability
from dpledger.algorithms.base import fill_docstring, fit_context, store_parameters
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


class _Objective(RegularizedERM):
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **RegularizedERM._parameter_constraints,
        "solver_share": Probability(low_open=True, high_open=True),
        "jacobian_share": Probability(low_open=True, high_open=True),
        "x_l1_bound": OrNone(Bound()),
    }
    #: b and Z are floating-point noise here (K-norm, Laplace or Gaussian)
    _fixed_parameters: ClassVar[dict[str, Any]] = {"safe_noise": False}

    def _check_parameters(self, params: Parameters) -> None:
        super()._check_parameters(params)
        # the declared ℓ₁ bound on the rows: required by, and only by, ℓ₁ noise
        value = params.x_l1_bound
        if params.noise != "l1_laplace":
            if value is not None:
                raise InvalidArgumentError(
                    f"`x_l1_bound` is used by noise='l1_laplace' only (noise={params.noise!r}): "
                    f"drop it or choose that noise. Found {value!r}."
                )
            return
        if value is None:
            Bound().check("x_l1_bound", value, type(self).__name__)  # names the declaration
        if not 1e-300 < value / params.x_bound < 1e300:
            raise InvalidArgumentError(
                f"`x_l1_bound` / `x_bound` = {value!r} / {params.x_bound!r} is beyond the "
                "arithmetic of the bounds: choose comparable scales."
            )

    @fit_context
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
        ‖b‖ ≤ :func:`_perturbation_radius`: 64·(its scale)·(d, or √d for Gaussian b),
        beyond which (probability below 1e-25) the certificate may fail, after the
        charge; for ℓ₁-Laplace b, whose coordinates are clipped at (log d + 58)·scale
        (a clip no draw of numpy's sampler reaches), √d·(log d + 58)·scale, which holds
        for every draw.
        """
        params = self._params
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        variant, noise, share = params.variant, params.noise, params.solver_share
        loss, lam, tol, max_iter = self._objective()
        Xs, ys, size, radius, radius_l1 = self._design(X, y, params.x_l1_bound)
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
            jacobian_share=params.jacobian_share,
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
        b_bound = _perturbation_radius(plan, d)  # ≥ ‖b‖: certain for ℓ₁ (clipped b)
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
            self._reserve([perturbation, approximation], params.ledger),
            [("perturbation b", np.zeros(d)), ("approximate minimiser", minimiser)],
        )
        self.plan_ = plan
        self.solver_tol_ = solver_tol
        self.shift_ = shift
        self.shift_scale_ = approximation.plan.scale if noise == "gaussian" else div_up(shift, rest)
        self._finish(np.asarray(released, dtype=float))
        return self


class _Output(RegularizedERM):
    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **RegularizedERM._parameter_constraints,
        # θ*'s sensitivity is an ℓ₂ bound: no ℓ₁ noise
        "noise": Noise(("laplace", "gaussian")),
    }

    @fit_context
    def fit(self, X: Any, y: Any) -> Any:
        """Solve to ``tol`` (checked, before any charge), then release θ̃ + noise.

        The rows weigh v(n) (the row-count clip): the sensitivity charged is
        F·k·a·R/(Nλ) + 2·tol/λ (F = 1 under replace-one), and ``tol`` is at least
        :func:`_solver_floor`, which every data set is certified to within the public
        step count of :func:`_gradient_steps` (refused before any charge above the cap).
        """
        params = self._params
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        variant, noise, ledger = params.variant, params.noise, params.ledger
        loss, lam, tol, max_iter = self._objective()
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
        elif variant == "published":  # the classical σ = Δ√(2 log(1.25/δ))/ε
            sigma = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
            reservation = self._reserve(
                [Gaussian(sigma, sensitivity, dimension=d, safe=params.safe_noise)], ledger
            )
        else:

            def make(p: float) -> list[Any]:
                return [Gaussian(p * sensitivity, sensitivity, dimension=d, safe=params.safe_noise)]

            guess = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
            reservation = self._reserve(make, ledger, initial=guess)
        (noisy,) = self._release(reservation, [("minimiser", theta)])
        self.sensitivity_ = sensitivity
        self.solver_tol_ = solver_tol
        self._finish(np.asarray(noisy, dtype=float))
        return self


_COMMON_ARGS = """epsilon: The ε this fit must meet.
        delta: The δ (0 with ``noise="laplace"``; > 0 with ``noise="gaussian"``).
        {x_bound}
        {adjacency}
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
        {rng}"""


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


class ObjectivePerturbationClassifier(MarginClassifier, _Objective):
    """Objective perturbation for logistic regression or the Huber SVM (two classes).

    Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2, with c·R² and an ℓ₂-Laplace or
    Gaussian b, releasing the solver's minimiser plus the noise Z of approximate minima
    perturbation (see docs/erm.md for the theorem and its conditions:
    ‖x‖ ≤ x_bound, intercept inside the bound, the solver's tolerance).

    Args:
        loss: "logistic" (c = 1/4) or "huber" (the Huber SVM, c = 1/(2h)).
        huber_width: h of the Huber SVM.
        {classes}
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

    Attributes:
        {classes_}
        {objective_attributes}
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "logistic",
        huber_width: float = 0.5,
        x_bound: float | None = None,
        adjacency: str | None = None,
        classes: Any = None,
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


class ObjectivePerturbationRegressor(LinearRegressorMixin, _Objective):
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

    Attributes:
        {objective_attributes}
    """

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


class OutputPerturbationClassifier(MarginClassifier, _Output):
    """Output perturbation for logistic regression or the Huber SVM (two classes).

    Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1: θ* plus ℓ₂-Laplace noise,
    ‖b‖ ~ Gamma(d, Δ/ε) with Δ = kL/(Nλ) + 2·tol/λ, or Gaussian noise of that L2
    sensitivity (calibrated; ``published``: the classical σ).

    Args:
        loss: "logistic" or "huber" (the Huber SVM).
        huber_width: h of the Huber SVM.
        {classes}
        safe_noise: With Gaussian noise, exact discrete noise on a grid (default False).
        {common}

    Attributes:
        {classes_}
        {output_attributes}
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float | None = 0.0,
        loss: str = "logistic",
        huber_width: float = 0.5,
        x_bound: float | None = None,
        adjacency: str | None = None,
        classes: Any = None,
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


class OutputPerturbationRegressor(LinearRegressorMixin, _Output):
    """Output perturbation for linear regression with the Huber loss of the residual.

    Args:
        loss: "huber" (the only loss of the residual meeting the conditions; "squared"
            is refused: its gradient is unbounded).
        huber_threshold: κ, in the units of y.
        safe_noise: With Gaussian noise, exact discrete noise on a grid (default False).
        {common}

    Attributes:
        {output_attributes}
    """

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


_FITTED = """coef_: The released coefficients in data units.
        intercept_: The released intercept (0.0 without ``fit_intercept``).
        (No ``n_iter_``: how many Newton or gradient steps the solver took depends on the
        data, and publishing it would be a release nobody paid for.)
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order."""

_OBJECTIVE_ATTRIBUTES = f"""plan_: The objective perturbation's plan (:class:`PerturbationPlan`:
            ε_J, ε′, the extra ridge Δ, the noise and its scale).
        solver_tol_: The tolerance the solver was run to (at least the public floor).
        shift_: 2r, the L2 sensitivity the noise Z on the approximate minimiser is sized for.
        shift_scale_: The scale of Z.
        {_FITTED}"""

_OUTPUT_ATTRIBUTES = f"""sensitivity_: The L2 sensitivity of the minimiser the noise was sized for.
        solver_tol_: The tolerance the solver was run to (at least the public floor).
        {_FITTED}"""

fill_docstring(
    ObjectivePerturbationClassifier,
    ObjectivePerturbationRegressor,
    OutputPerturbationClassifier,
    OutputPerturbationRegressor,
    objective=_OBJECTIVE_ARGS,
    common=_COMMON_ARGS,
    objective_attributes=_OBJECTIVE_ATTRIBUTES,
    output_attributes=_OUTPUT_ATTRIBUTES,
)

__dir__ = namespace(__all__)
