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
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpledger._numerics import sum_up
from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._linear_base import (  # FALLBACK_RIDGE, solve_ridge: re-exported
    FALLBACK_RIDGE,
    BinaryClassifierMixin,
    LinearRegressorMixin,
    SufficientStatisticsModel,
    person_rows,
    solve_ridge,
)
from dpledger.algorithms._params import Constraint, Delta, Integer, OrNone, Probability, Shares
from dpledger.algorithms.base import (
    fill_docstring,
    fit_context,
    store_parameters,
    symmetric_from_upper,
    upper,
)
from dpledger.mechanisms import ExactValue, Gaussian, default_granularity

__all__ = ["ADASSP", "FALLBACK_RIDGE", "SSP", "BinaryClassifierOutputs", "solve_ridge"]

#: The former name of :class:`~._linear_base.BinaryClassifierMixin` (kept importable).
BinaryClassifierOutputs = BinaryClassifierMixin


def _sensitivities(adjacency: str, rows: int = 1) -> tuple[float, float, float]:
    """(λ_min, X̃ᵀX̃ in Frobenius norm, X̃ᵀỹ) for unit bounds: one record, or one person.

    A person with at most k rows adds A = Σ x̃x̃ᵀ (PSD, ‖A‖_F ≤ trace ≤ k) and a = Σ x̃ỹ
    (‖a‖ ≤ k): add/remove moves λ_min by at most k (Weyl), X̃ᵀX̃ by k, X̃ᵀỹ by k.
    Replace-one swaps A for A′: ‖A′ − A‖_F² = ‖A′‖² + ‖A‖² − 2⟨A′, A⟩ ≤ 2k² (PSD
    matrices have ⟨A′, A⟩ ≥ 0), λ_min moves by at most k, X̃ᵀỹ by 2k. k = 1 is the
    table above.
    """
    k = float(rows)
    if adjacency == ev.REPLACE_ONE:
        return k, math.sqrt(2.0) * k, 2.0 * k
    return k, k, k


class ADASSP(LinearRegressorMixin, SufficientStatisticsModel):
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
        {data}
        rho: Failure probability of the eigenvalue and conditioning bounds, in (0, 1).
        budget_split: Shares of μ² for (λ_min, X̃ᵀX̃, X̃ᵀỹ) in the calibrated variant.
        {variant}
        {ledger}
        safe_noise: Exact discrete noise on a fine grid (default; charged as the
            discrete Gaussian it is) or floating-point Gaussian noise (charged exactly as
            a Gaussian; vulnerable to floating-point attacks — reproduction only).
        {rng}

    Attributes:
        coef_: The coefficients θ̂ in data units (post-processing of the releases).
        intercept_: The intercept in the units of y (0.0 without ``fit_intercept``).
        ridge_: The ridge λ the noisy normal equations were solved with (in scaled units).
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order (λ_min, X̃ᵀX̃, X̃ᵀỹ).

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

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **SufficientStatisticsModel._parameter_constraints,
        "max_rows_per_id": OrNone(Integer(1, 2**53, why="sensitivities stay exact floats")),
        "delta": Delta(gaussian=True),
        "rho": Probability(low_open=True, high_open=True),
        "budget_split": OrNone(Shares(3, of="(lambda_min, XtX, Xty)")),
    }

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
        max_rows_per_id: int | None = None,
    ) -> None:
        store_parameters(self, locals())

    def _split(self) -> tuple[float, float, float]:
        shares = self._params.budget_split
        if shares is None:
            return 0.1, 0.45, 0.45
        total = math.fsum(shares)
        return shares[0] / total, shares[1] / total, shares[2] / total

    @fit_context
    def fit(self, X: Any, y: Any, privacy_id: Any = None) -> ADASSP:
        """Check the schedule fits the ledger, release the three statistics, solve.

        ``privacy_id``: each row's person (with ``max_rows_per_id``): a person's rows are
        bounded and the sensitivities are one person's (:func:`_sensitivities`).
        """
        params = self._params
        epsilon, delta, rho, ledger = params.epsilon, params.delta, params.rho, params.ledger
        split = self._split()
        X, y, rows = person_rows(X, y, privacy_id, params.max_rows_per_id, params.rng)
        stats, features = self._statistics(X, y)
        exact = stats.exact
        d = stats.gram.shape[0]
        entries = d * (d + 1) // 2
        deltas = _sensitivities(params.adjacency, rows)
        safe = params.safe_noise

        def lam_mechanism(sigma: float) -> Gaussian:
            # the certified grid index of λ_min is ⌊λ/γ⌋ or one below it
            # (:func:`._eigen.min_eigenvalue_steps`): one grid step more than Weyl's 1
            if not safe:
                return self._gaussian(sigma, deltas[0], 1)
            # Δ + γ rounded up (a float sum could round the extra step away)
            return self._gaussian(sigma, sum_up(deltas[0], default_granularity(sigma)), 1)

        def schedule(sigmas: Sequence[float]) -> list[Gaussian]:
            return [
                lam_mechanism(sigmas[0]),
                self._gaussian(sigmas[1], deltas[1], entries),
                self._gaussian(sigmas[2], deltas[2], d),
            ]

        if params.variant == "published":
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


class SSP(LinearRegressorMixin, SufficientStatisticsModel):
    """SSP: sufficient-statistics perturbation (Wang 2018; thesis Alg. 1).

    Releases X̃ᵀX̃ and X̃ᵀỹ with Gaussian noise and solves the normal equations on them
    (eigenvalues of the noisy Gram matrix projected onto [0, ∞); no ridge, so SSP is
    unstable where the noise is comparable to λ_min — ADASSP's reason to exist).
    ``"published"`` adds Wang's non-symmetric d×d noise matrix with
    σ = √(log(4/δ))/ε per release and solves with it as his code does (with the identity
    added to the noisy X̃ᵀX̃, a public ridge of 1); charged at its true
    cost (ε ≈ 1.59 at nominal (1, 1e-6), add/remove, continuous noise).

    Args:
        {data}
        {variant}
        {ledger}
        safe_noise: Exact discrete noise (default) or floating-point Gaussian noise.
        {rng}

    Attributes:
        coef_: The coefficients in data units (post-processing of the releases).
        intercept_: The intercept in the units of y (0.0 without ``fit_intercept``).
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order (X̃ᵀX̃, X̃ᵀỹ).
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **SufficientStatisticsModel._parameter_constraints,
        "max_rows_per_id": OrNone(Integer(1, 2**53, why="sensitivities stay exact floats")),
        "delta": Delta(gaussian=True),
    }

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
        max_rows_per_id: int | None = None,
    ) -> None:
        store_parameters(self, locals())

    @fit_context
    def fit(self, X: Any, y: Any, privacy_id: Any = None) -> SSP:
        """Check the schedule fits the ledger, release X̃ᵀX̃ and X̃ᵀỹ, solve.

        ``privacy_id``: each row's person (with ``max_rows_per_id``), as in ADASSP.
        """
        params = self._params
        epsilon, delta, ledger = params.epsilon, params.delta, params.ledger
        X, y, rows = person_rows(X, y, privacy_id, params.max_rows_per_id, params.rng)
        stats, features = self._statistics(X, y)
        exact = stats.exact
        d = stats.gram.shape[0]
        _, delta_xx, delta_xy = _sensitivities(params.adjacency, rows)
        if params.variant == "published":
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


_DATA_ARGS = """epsilon: The ε this fit must meet.
        delta: The δ this fit must meet (> 0).
        {x_bound}
        {y_bound}
        {adjacency}
        {fit_intercept}
        row_norm: "clip" (rows beyond ``x_bound`` clipped to it; the default) or "unit"
            (every row scaled to norm ``x_bound``: Wang's per-row normalisation)."""

fill_docstring(ADASSP, SSP, data=_DATA_ARGS)

__dir__ = namespace(__all__)
