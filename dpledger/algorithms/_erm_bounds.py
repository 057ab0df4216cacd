"""Public bounds of private ERM: the row weights and the solver's floor and step count.

Two analyses that make every observable of an ERM fit a function of public quantities
(issue 31; the proofs in full are in docs/erm.md):

* **The row weights** (the row-count clip). Under add/remove the row count n is private,
  yet the solver's rounding grows with n/N. Each row weighs v(n) (:func:`_row_weight`):
  1 up to 2N rows, then less, so that the data term never weighs more than V·N rows
  (:func:`_weight_cap`), while one added row moves the weighted data gradient by at most
  F·L (:func:`_weight_factor`, the argument of Chaudhuri, Monteleoni & Sarwate 2011,
  Cor. 8) and the weights' ratio by at most ρ (:func:`_weight_ratio`).
* **The solver's floor and step count.** From the loss constants, R, d, the ridge, V and
  a bound on ‖b‖/N: the smallest tolerance the gradient-descent fallback provably
  certifies (:func:`_solver_floor`) and the number of steps it needs
  (:func:`_gradient_steps`: the descent lemma with ridge-strong convexity), so that
  settings the solver cannot be guaranteed to finish are refused before anything is
  charged.
"""

from __future__ import annotations

import math

from dpledger._numerics import round_up
from dpledger.algorithms._erm_losses import _UNIT, _Loss
from dpledger.algorithms._erm_solver import _gamma

#: The row-count clip: rows up to _ROW_SLACK·N weigh 1/N each; beyond, the weight per row
#: falls so that one row added or removed moves the data gradient by at most (1 + η)·L/N.
_ETA = 2.0**-6
_ROW_SLACK = 2.0
#: The most rows a numpy array can hold (its index type): a public bound on n.
_MAX_ROWS = 2.0**63
#: The most gradient-descent steps the public bound (:func:`_gradient_steps`) may ask for;
#: settings beyond are refused before anything is charged.
_STEP_CAP = 10**9


def _tolerance(tol: float, scale: float) -> float:
    """``tol``, or 1e-12 of the gradient's public scale if more.

    ``scale`` bounds the terms the gradient sums (a·R plus the expected ‖b‖/N), from
    public quantities only; the estimators also apply :func:`_solver_floor`.
    """
    return max(tol, 1e-12 * scale)


def _row_weight(rows: int, size: float) -> float:
    """v(n): the weight of each of n rows in Σ v·ℓ, from the public N and the count.

    v = 1 up to M = _ROW_SLACK·N rows; then the line 1 + η − η·n/M down to
    n₁ = M(1 + η)/(2η) (where it touches the hyperbola), then W/n with W = n₁(1 + η)/2.
    v is continuous and non-increasing, but not convex (its slope drops from 0 to −η/M at
    M). What the proofs use is ψ(x) := v(x) + x·|v′(x)| ≤ 1 + η for every real x ≥ 0
    (one-sided derivatives at the joints): ψ = 1 below M, 1 + η − ηx/M + ηx/M = 1 + η on
    the line, W/x + x·W/x² = 2W/x ≤ 2W/n₁ = 1 + η on the hyperbola. Since v is
    non-increasing, v(n + 1) ≤ v(x) on [n, n + 1], so

        v(n + 1) + n·(v(n) − v(n + 1)) = ∫ₙⁿ⁺¹ (v(n + 1) + n·|v′(x)|) dx
                                       ≤ ∫ₙⁿ⁺¹ ψ(x) dx ≤ 1 + η                  (W)

    (Chaudhuri, Monteleoni & Sarwate 2011, the proof of Cor. 8, with ‖Σ_D ∇ℓ‖ ≤ n·L).
    Also the total weight n·v(n) is at most W = M(1 + η)²/(4η) (:func:`_weight_cap`), and
    |d log v/dx| = |v′|/v ≤ 1/n₁ everywhere (η/M ÷ v ≥ (1 + η)/2 on the line, 1/x on the
    hyperbola), so log(v(n)/v(n + 1)) ≤ 1/n₁ = 2η/((1 + η)·M) for every n, whether or not
    N (and so n₁) is an integer (:func:`_weight_ratio`). The count n is private under
    add/remove; only these public consequences enter the privacy arguments, and the weight
    bounds every quantity the solver's certificate depends on.
    """
    m = _ROW_SLACK * size
    if rows <= m:
        return 1.0
    knee = m * (1 + _ETA) / (2 * _ETA)
    if rows <= knee:
        return 1 + _ETA - _ETA * rows / m
    return knee * (1 + _ETA) / 2 / rows


def _weight_cap() -> float:
    """V = W/N ≥ n·v(n)/N for every n and N: the public bound on the data term's weight."""
    return round_up(_ROW_SLACK * (1 + _ETA) ** 2 / (4 * _ETA) * (1 + 1e-12))


def _weight_factor(size: float) -> float:
    """F ≥ v(n + 1) + n·|v(n) − v(n + 1)| for the weights actually used (floats).

    (W) gives 1 + η for the exact v; the weights used, N/fl(N/fl(v)), are within 5u of v
    each, and n·5u·(v(n) + v(n + 1)) ≤ 10u·(W + 1): F = 1 + η + 10u·(W + 1), rounded up.
    """
    return round_up(1 + _ETA + 10 * _UNIT * (_weight_cap() * size + 1))


def _weight_spread(size: float) -> float:
    """The spread s ≥ n·(v(n) − v(n + 1)) for every n (the weights used), rounded up.

    n·(v(n) − v(n + 1)) ≤ ∫ₙⁿ⁺¹ x·|v′(x)| dx ≤ sup x·|v′(x)| = (1 + η)/2 (ηx/M ≤ ηn₁/M on
    the line, W/x ≤ W/n₁ on the hyperbola), plus the floats' share of F − (1 + η).
    """
    return round_up((1 + _ETA) / 2 + (_weight_factor(size) - 1 - _ETA))


def _weight_ratio(size: float) -> float:
    """A bound log ρ ≥ log(v(n)/v(n + 1)) for every n, rounded up.

    log v is (1/n₁)-Lipschitz (:func:`_row_weight`), so the bound is 1/n₁ =
    2η/((1 + η)·M), plus 16u for the floats' weights (each within 5u of v). The bound
    used before, log(1 + 1/n₁), is the ratio at an integer n₁ only: between integers the
    ratio across the joint reaches 1 + 1/n₁ + 1/(4n₁²) (at N = 10.5, n = 682: 1.4646650e-3
    against 1.4641291e-3; issue 31, F3).
    """
    knee = _ROW_SLACK * size * (1 + _ETA) / (2 * _ETA)
    return round_up(1 / knee * (1 + 1e-12) + 16 * _UNIT)


def _phi0(loss: _Loss) -> float | None:
    """φ₀ ≥ φ(0; y) for every label, with φ ≥ 0 (the classification losses); else None."""
    if loss.name == "logistic":
        return math.log(2.0)
    if loss.name == "huber_svm":
        return max(1.0, (1 + loss.width) ** 2 / (4 * loss.width))
    return None  # Huber regression: φ(0; y) grows with the label


def _iterate_bound(loss: _Loss, radius: float, ridge: float, linear_norm: float) -> float:
    """Θ ≥ ‖θ‖ for every θ with J(θ) ≤ J(0): the minimiser and every descent iterate.

    J is the normalised objective, ridge-strongly convex, with ‖∇J(0)‖ ≤ g₀ := V·a·R +
    ‖b‖/N (V: :func:`_weight_cap`). On that sublevel set (ridge/2)‖θ − θ*‖² ≤ J(0) − J* ≤
    g₀²/(2·ridge), and ‖θ*‖ ≤ g₀/ridge, so ‖θ‖ ≤ 2g₀/ridge. For the classification losses
    (0 ≤ φ, φ(0; y) ≤ φ₀) also (ridge/2)‖θ‖² − ‖b‖/N·‖θ‖ ≤ J(θ) ≤ J(0) ≤ V·φ₀, the
    smaller bound when ridge is small.
    """
    v = _weight_cap()
    theta = 2 * (v * loss.a * radius + linear_norm) / ridge
    phi0 = _phi0(loss)
    if phi0 is not None:
        root = math.sqrt(linear_norm**2 + 2 * ridge * v * phi0)
        theta = min(theta, (linear_norm + root) / ridge)
    return theta * (1 + 1e-6)


def _gradient_error(
    loss: _Loss, radius: float, dimension: int, ridge: float, linear_norm: float, theta: float
) -> float:
    """E ≥ the certificate's rounding bound (so ≥ ‖ĝ − ∇J‖) at every ‖θ‖ ≤ ``theta``.

    Each term of :func:`~._erm_solver._certified_gradient_norm`'s bound at its public
    worst case (rows ‖x‖ ≤ R, |φ′| ≤ a, φ″ ≤ c, total weight ≤ V·N, pairwise sums of
    depth ≤ 64 because n < 2⁶³):

        E = u·[(γ₆₆/u + 4)·V·a·R + V·R·(c·(d + 2)·R·Θ + 8a + 2c(1 + h + R·Θ))
               + 4·ridge·Θ + 3‖b‖/N]·1.02
    """
    v = _weight_cap()
    a, c, r = loss.a, loss.c, radius
    width = loss.width if loss.name == "huber_svm" else 0.0
    terms = (
        (_gamma(66) / _UNIT + 4) * v * a * r
        + v * r * (c * (dimension + 2) * r * theta + 8 * a + 2 * c * (1 + width + r * theta))
        + 4 * ridge * theta
        + 3 * linear_norm
    )
    return _UNIT * terms * 1.02


def _smoothness(loss: _Loss, radius: float, ridge: float) -> float:
    """β̄ = V·c·R² + ridge, rounded up: a public bound on ∇J's Lipschitz constant."""
    return round_up((_weight_cap() * loss.c * radius * radius + ridge) * (1 + 1e-12))


def _solver_floor(
    loss: _Loss, radius: float, dimension: int, ridge: float, linear_norm: float
) -> float:
    """The smallest solver tolerance the gradient-descent phase provably certifies.

    From public quantities only: a, c (the loss), R, d, the ridge (λ + Δ), the data
    term's weight cap V (:func:`_weight_cap`, which clips n/N) and a bound on ‖b‖/N.
    With Θ (:func:`_iterate_bound`), E = :func:`_gradient_error` at Θ and β̄
    (:func:`_smoothness`): tol ≥ 2.0002·(G + E) with G = 2.0001·(E + β̄·u·Θ) — the
    condition of :func:`_gradient_steps`' proof. (It implies the earlier floor's claim:
    some float vector near the minimiser passes the certificate.)
    """
    theta = _iterate_bound(loss, radius, ridge, linear_norm)
    error = _gradient_error(loss, radius, dimension, ridge, linear_norm, theta)
    reach = 2.0001 * (error + _smoothness(loss, radius, ridge) * _UNIT * theta)
    return round_up(2.0002 * (reach + error))


def _gradient_steps(
    loss: _Loss, radius: float, dimension: int, ridge: float, linear_norm: float, tol: float
) -> float:
    """K: gradient-descent steps from 0 that provably reach a certified point (or ∞).

    Public: the loss constants, R, d, the ridge α, the bound on ‖b‖/N, tol ≥
    :func:`_solver_floor`. Notation: J the normalised objective (α-strongly convex, ∇J
    β-Lipschitz with β ≤ β̄ = :func:`_smoothness`; C¹ suffices, so the Huber kinks are
    covered), D_k = J(θ_k) − J*, g_k = ∇J(θ_k) exact, ĝ_k computed, Θ, E as in
    :func:`_solver_floor`, G = tol/2.0002 − E.

    *Certified once ‖g‖ ≤ G.* Then ‖ĝ‖ ≤ G + E = tol/2.0002, so the solver runs the
    certificate, which is (‖ĝ‖ + its bound ≤ E)(1 + 10⁻⁶) ≤ tol (E ≤ tol/6 at the floor).

    *One step while ‖g_k‖ > G.* The step taken, θ_{k+1} − θ_k = −ĝ_k/β + r_k (r_k the
    rounding of the division and subtraction: ‖r_k‖ ≤ u‖θ_k‖ + 2.01u‖ĝ_k‖/β), is
    −(g_k + e_k)/β with ‖e_k‖ ≤ ‖ĝ_k − g_k‖ + β‖r_k‖ ≤ (1 + 2.01u)E + β̄uΘ + 2.01u‖g_k‖
    ≤ ‖g_k‖/2, because G ≥ 2.0001(E + β̄uΘ) (the floor). The descent lemma for a
    β-smooth J gives J(θ_{k+1}) ≤ J(θ_k) − (‖g_k‖² − ‖e_k‖²)/(2β) ≤ J(θ_k) −
    (3/8)‖g_k‖²/β, and strong convexity ‖g_k‖² ≥ 2αD_k, so D_{k+1} ≤ (1 − 3α/(4β̄))·D_k.
    J decreases, so every iterate stays in {J ≤ J(0)}, where ‖θ‖ ≤ Θ and E applies
    (induction from θ₀ = 0).

    *The count.* If ‖g_k‖ > G for k = 0, …, K then G² < ‖g_K‖² ≤ 2β̄D_K ≤
    2β̄D₀·exp(−3αK/(4β̄)), impossible once K ≥ (4β̄/(3α))·log(2β̄D₀/G²). D₀ ≤ g₀²/(2α)
    (strong convexity, g₀ = V·a·R + ‖b‖/N), and for the classification losses also
    D₀ ≤ V·φ₀ + ‖b/N‖²/(2α) (J(0) ≤ V·φ₀, J* ≥ −‖b/N‖²/(2α)). So K grows like
    κ̄·log(κ̄·g₀²/G²) with the public condition number κ̄ = β̄/α = 1 + V·c·R²/ridge.
    """
    theta = _iterate_bound(loss, radius, ridge, linear_norm)
    error = _gradient_error(loss, radius, dimension, ridge, linear_norm, theta)
    beta = _smoothness(loss, radius, ridge)
    reach = tol / 2.0002 - error
    if not reach >= 2.0001 * (error + beta * _UNIT * theta):  # below the floor
        return math.inf
    v = _weight_cap()
    log_gap = 2 * math.log(v * loss.a * radius + linear_norm) - math.log(2 * ridge)
    phi0 = _phi0(loss)
    if phi0 is not None:
        log_gap = min(log_gap, math.log(v * phi0 + linear_norm**2 / (2 * ridge)))
    log_ratio = math.log(2 * beta) + log_gap - 2 * math.log(reach)
    steps = 4 * beta / (3 * ridge) * max(log_ratio, 0.0) * (1 + 1e-9)
    return float(math.ceil(steps)) + 1.0 if math.isfinite(steps) else math.inf
