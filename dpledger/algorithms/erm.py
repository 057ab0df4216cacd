"""Private empirical risk minimisation: objective and output perturbation.

Both solve L2-regularised ERM for a generalised linear loss ℓ_z(θ) = φ(θᵀx; y) with
``|φ′| ≤ a`` and ``0 ≤ φ″ ≤ c`` (a.e.), over rows with ‖x‖₂ ≤ R:

====================  =====================================  ======  ========
loss                  φ                                      a       c
====================  =====================================  ======  ========
``"logistic"``        log(1 + e^{−y·t}), y ∈ {−1, +1}        1       1/4
``"huber"`` (SVM)     Huber hinge of y·t, width h (CMS §3.4) 1       1/(2h)
``"huber"`` (regr.)   Huber loss of the residual t − y, κ    κ       1
====================  =====================================  ======  ========

Rows are clipped to ``x_bound``; with ``fit_intercept`` a public constant column of value
``intercept_scaling`` is appended, so R² = x_bound² + intercept_scaling² — the intercept
lives inside the norm bound (and is regularised like every coefficient). The objective is
Σ ℓ_z(θ) + (Λ/2)‖θ‖² with Λ = N·λ, λ = ``l2_regularization`` and N a *public* row count:
the data's size under replace-one (neighbours share it), a declared ``data_size`` under
add/remove. L := a·R bounds one row's gradient, k = 2 (replace-one) or 1 (add/remove).

**Objective perturbation** (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2) releases
θ̂ = argmin Σℓ_z(θ) + (N(λ + Δ)/2)‖θ‖² + bᵀθ. Its privacy loss has two parts (the proof,
in docs/algorithms.md, follows CMS Thm 9):

* the *Jacobian* term: the output density is ν(b)·det(H(θ) + ΛI), and for neighbours the
  determinants differ by one rank-one term u uᵀ with ‖u‖² ≤ c·R² — by the matrix
  determinant lemma their ratio is at most 1 + c·R²/Λ, so ε_J = log(1 + c·R²/(N(λ + Δ))).
  (The curvature enters as c·**R²**: the Hessian of φ(θᵀx) is φ″·xxᵀ. Writing c·R, as a
  widely used implementation does, under-counts it for R > 1. CMS state the looser
  2·log(1 + c/(nλ)) for R = 1; the ``published`` variant uses theirs.)
* the *noise* term: b = −∇(Σℓ + Λ/2‖θ‖²)(θ̂), and a neighbour moves it by at most k·L.
  With density ∝ exp(−ε′‖b‖/(kL)) — ‖b‖ ~ Gamma(d, kL/ε′), uniform direction — that costs
  ε′ (pure ε-DP: ε = ε′ + ε_J). The argument needs only that b's density is
  ∝ exp(−ε′‖b‖_K/(k·L_K)) for a norm in which a row's gradient is at most L_K (the
  K-norm mechanism, Hardt & Talwar 2010; the triangle inequality bounds the density
  ratio). With ``noise="l1_laplace"`` and a declared ℓ₁ bound R₁ on the rows,
  L₁ = a·R₁ and b has i.i.d. Laplace(kL₁/ε′) coordinates: E‖b‖² = 2d(kL₁/ε′)² against
  d(d + 1)(kL/ε′)² for ℓ₂, so on sparse rows (one-hot data, R₁ ≪ √d·R) far less noise
  for the same ε′. The Jacobian term (ℓ₂, c·R²) is unchanged. With Gaussian
  b ~ N(0, σ²I) (after Kifer, Smith & Thakurta 2012), b's change is a combination of
  the fixed rows x, x′, so the loss is at most μ²/2 + μ|Z| (add/remove) or
  2μ² + μ(|Z₁| + |Z₂|) (replace-one), μ = L/σ and Zᵢ standard normal (b is exactly
  N(0, σ²I) under the first dataset): a tail bound gives (ε_G + ε_J, δ)-DP with
  δ = 2Φ̄((ε_G − μ²/2)/μ) (add/remove) or 4Φ̄((ε_G − 2μ²)/(2μ)) (replace-one).

When ε_J would exceed ε/2 the extra ridge Δ is raised until ε_J = ε/2 (CMS's Δ branch,
taken whenever it leaves more of ε for the noise; ``jacobian_share`` moves the 1/2).

**The logistic loss: a joint bound.** The two terms are maximised at different points:
the noise term by a row with |φ′| = p → 1, the Jacobian term by one with φ″ = c, and for
the logistic loss φ″ = p(1 − p) at the same point. Bounding the row's contributions
together (both at the same θ̂) gives a privacy loss of at most
(k − 1)·e + max_p [e·p + log(1 + p(1 − p)·R²/(N(λ + Δ)))], e = ε′/k
(:func:`_logistic_joint`; the changed row z′ adds at most e through its gradient and
nothing through the Jacobian). When A = R²/(N(λ + Δ)) ≤ e the maximand still rises at
p = 1, so the maximum *is* at p = 1 and the Jacobian costs nothing: on Adult
(N = 32,561, R = 1, λ = 1e-4, A = 0.31) all of the perturbation's ε goes to the noise,
against 0.926 of it with ε′ + ε_J at ε = 1. The pure-ε noises only (ℓ₂ or ℓ₁: a row
with |φ′| = p moves b by p·‖x‖_K ≤ p·R_K in either); the Gaussian form keeps ε_G + ε_J.

**The theorem is for the exact minimiser θ̂; the fit releases the solver's θ̃ plus
noise** (approximate minima perturbation, Iyengar et al. 2019, Alg. 1). The solver stops
at ‖∇J(θ̃)‖/N ≤ tol (tol floored by public quantities, :func:`_solver_floor`); (λ +
Δ)-strong convexity of J/N then gives ‖θ̃ − θ̂‖ ≤ r := tol/(λ + Δ) *for every dataset
and every b*. Proof of the charge: b = g_D(θ̂) is a function of (D, θ̂), so θ̃ = θ̂ +
h(D, θ̂) with ‖h‖ ≤ r everywhere. Release θ̂ (the objective perturbation, (1 −
``solver_share``) of the budget), then, given θ̂, the vector θ̂ + h(D, θ̂) + Z — a
noise-adding mechanism on a statistic whose neighbours differ by at most 2r — and drop
θ̂ (post-processing). Adaptive composition: the fit is charged the perturbation's event
plus Z's: ℓ₂ K-norm noise of sensitivity 2r at the ε left (pure ε-DP), or the analytic
Gaussian of sensitivity 2r at the (ε, δ) left. Z is tiny: with ℓ₂ K-norm noise ‖Z‖
averages about d·2r/ε₃ (ε₃ = solver_share·ε): for the defaults (share 0.01; tol raised
to the public floor, about 8e-10 here) about 2e-3 at d = 10, N = 1000, λ = 1e-3, ε = 1,
R = √2 — against ‖b‖/(Nλ) ≈ 40 for b itself.

The losses' conditions are on φ′: bounded by a, and **c-Lipschitz** (so φ″ ≤ c wherever
it exists, and the Hessian bound holds in the generalised sense the area formula needs).
The solver returns only once a *certified* bound on the exact gradient norm — the
computed gradient plus a term-by-term bound on its rounding error, with pairwise sums
(:func:`_certified_gradient_norm`) — is at most tol.

**Nothing observable escapes the charge (issue 31): the row count is clipped.** Under
add/remove n is private, but the certificate's rounding grows with n/N (each of the n
rows adds its rounding to a sum divided by N): with N = 100 declared, output
perturbation released at n = 65,536 and raised :class:`ConvergenceError` at 65,537
(rows at the bound, alternating labels), objective perturbation after its charge at
28,461 but not 28,460; and ``max_iter = 1`` sufficed for some data sets, not for their
neighbours. So every row weighs v(n) in Σ v(n)·ℓ (:func:`_row_weight`): v = 1 up to 2N
rows (the objective above), then slowly less, so that the data term's total weight
n·v(n)/N never exceeds a public V ≈ 33 whatever n. Three public facts about v carry the
privacy arguments, for neighbours with n and n + 1 rows:
(W) v(n + 1) + n·|v(n) − v(n + 1)| ≤ F = 1 + 2⁻⁶ (+ rounding); n·v(n) ≤ V·N; and
log(v(n)/v(n + 1)) ≤ log ρ = 1/(65N) (+ rounding), for every real N > 0
(:func:`_weight_factor`, :func:`_weight_cap`, :func:`_weight_ratio`; v is not convex —
the proof of (W) is :func:`_row_weight`'s). Since ‖Σ_D ∇ℓᵢ‖ ≤ n·L, (W) bounds how far
one added row moves the data gradient — its own term plus every other row's change of
weight — by F·L: the sensitivities above are multiplied by F under add/remove (1.6 %
more noise; nothing under replace-one, where neighbours share n and so v). With the
total weight bounded, the certificate's rounding, the minimiser's norm and the curvature
are all bounded by public quantities, and the solver's tolerance is raised to
:func:`_solver_floor`. Newton's method is fast but not proved to reach a certified point
(at a Huber kink with a small width and ridge it crawled: one data set raised
:class:`ConvergenceError` after 100,000 iterations, its neighbour released after
81,662), so when it does not certify, the solver falls back to gradient descent from 0,
which provably certifies within K steps, K a public function of the parameters
(:func:`_gradient_steps`: about κ̄·log(κ̄·g₀²/G²) for the public condition number
κ̄ = 1 + V·c·R²/ridge). Settings with K above 10⁹ are refused before anything is charged, for
every data set alike (the reproducer: h = 10⁻⁴, λ = 10⁻¹², κ̄ = 3.3·10¹⁷); within the
cap every data set releases (:func:`_minimise`). An empty data set is fitted (zero sums:
the regulariser's minimiser plus the noise), with a one-row data set's control flow.
Labels outside {0, 1} and non-finite values are refused before any charge: they are
outside the declared domain of a row, over which the guarantee is stated.

Objective perturbation with the weights (k = 1; the proof of CMS Thm 9 with Σ vℓ): b's
change is (v(n + 1) − v(n))·Σ_D ∇ℓᵢ(θ̂) + v(n + 1)·∇ℓ_z(θ̂), at most F·L in the noise's
norm by (W), which is all the pure noises need (the triangle inequality). The Gaussian
argument of Kifer, Smith & Thakurta needs a change of *fixed direction*, and only the
second part has one (x_z): the first part's direction moves with θ̂, so with b. Its
n·(v(n) − v(n + 1)) ≤ s ≈ (1 + η)/2 share is bounded by ‖b‖ instead of one coordinate of
b, and a Gaussian b under add/remove is sized for the loss bound μ((F − s)|Z| + s·χ_d) +
(Fμ)²/2, μ = L/σ (:func:`_weighted_gaussian_delta`): 4 % more σ at d = 4, 12 % at d =
11, 70 % at d = 101 (replace-one is unchanged: neighbours share n). The Jacobians are
v·A + ΛI (D) and v′(A + φ″xxᵀ) + ΛI (D′, v′ = v(n + 1) ≤ v): the determinant ratio D′/D
is at most 1 + c·R²/Λ as before, and D/D′ at most (v/v′)^d ≤ ρ^d (a new direction, from
the weights), so d·log ρ is added to ε_J. The pure noises' term costs F·ε′ (for the
logistic joint bound: (F − 1)·ε′ plus the joint maximum, since
e(1 − v′(1 − p)) + log(1 + v′p(1 − p)A) is the maximand at p′ = 1 − v′(1 − p) ≥ p or
less). The one failure that remains — b beyond 64 times its scale, which the floor and K
assume (probability below 10⁻²⁵ under every data set; beyond it certification is not
proved) — raises :class:`ConvergenceError` after b was charged and drawn, with no
data-dependent number in its message.

**Output perturbation** (CMS 2011, Alg. 1) releases θ* + b with θ* = argmin Σvℓ + (Nλ/2)‖θ‖².
N·λ-strong convexity bounds θ*'s sensitivity by F·kL/(Nλ) (CMS Cor. 8: 2/(nλ) for L = 1,
with (W) for the weights); the solver is stopped at a certified ‖∇J‖/N ≤ tol, so θ̃ is
within tol/λ of θ* and the sensitivity charged is F·kL/(Nλ) + 2·tol/λ.
Noise: the ℓ₂ K-norm mechanism, ‖b‖ ~ Gamma(d, Δ/ε) — the ε is in the scale (Hardt &
Talwar 2010; a common summary drops it) — or Gaussian noise of L2 sensitivity Δ,
calibrated with the tightest accountant.

All noise here is floating point (there is no exact sampler of these continuous
distributions): the releases carry Mironov's 2012 caveat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import linalg, special, stats
from sklearn.base import ClassifierMixin, RegressorMixin

from dpledger._numerics import div_up, round_up, sum_up
from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_positive,
    check_probability,
)
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms.base import PrivateEstimator, Release, store_parameters
from dpledger.algorithms.linear import BinaryClassifierOutputs, _scale_rows, _shrink_rows
from dpledger.errors import DPLedgerError, InvalidArgumentError
from dpledger.mechanisms import Gaussian, KNorm
from dpledger.mechanisms.base import Mechanism, as_vector, warn_floating_point

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

NOISES = ("laplace", "l1_laplace", "gaussian")
#: The noises of a pure ε-DP b (K-norm mechanisms: ℓ₂ and ℓ₁ balls).
PURE_NOISES = ("laplace", "l1_laplace")
LOSS_BOUNDS = ("generic", "logistic")

#: Safety factor on every solved noise parameter (more noise, never less).
_MARGIN = 1e-12


class ConvergenceError(DPLedgerError, RuntimeError):
    """The solver did not reach its gradient tolerance."""


# -- the losses -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Loss:
    """φ(t; y) of a generalised linear loss, with |φ′| ≤ a and 0 ≤ φ″ ≤ c."""

    name: str
    a: float
    c: float
    width: float = 0.0  # h of the Huber SVM, κ of the Huber regression

    def derivatives(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """φ, φ′ and φ″ (with respect to t) for every row."""
        if self.name == "logistic":  # y in {-1, +1}
            m = y * t
            value = np.logaddexp(0.0, -m)
            d1 = -y * special.expit(-m)
            d2 = special.expit(m) * special.expit(-m)
            return value, d1, d2
        if self.name == "huber_svm":
            h = self.width
            m = y * t
            value = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1 - m, (1 + h - m) ** 2 / (4 * h)))
            dm = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, -1.0, -(1 + h - m) / (2 * h)))
            d2 = np.where(np.abs(1 - m) <= h, 1.0 / (2 * h), 0.0)
            return value, y * dm, d2
        kappa = self.width  # Huber regression on the residual
        r = t - y
        inside = np.abs(r) <= kappa
        near = np.where(inside, r, 0.0)  # squared only where used (a huge label's r²
        # overflowed: a warning that depended on the data)
        value = np.where(inside, near * near / 2, kappa * np.abs(r) - kappa * kappa / 2)
        return value, np.clip(r, -kappa, kappa), inside.astype(float)

    def change(
        self, t: np.ndarray, t_new: np.ndarray, y: np.ndarray, old: np.ndarray, new: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """φ(t_new; y) − φ(t; y) per row, without the cancellation of two large values.

        ``old`` and ``new`` are the two values of φ. Also returns, per row, the size of
        what was subtracted (the scale of the change's rounding error).

        A Huber-regression row whose residual stays on one linear piece changes by
        κ·sign(r)·(t_new − t) exactly as the loss does; subtracting the two values of
        κ|r| − κ²/2 lost every digit when |r| was huge (one label of 1e20 gave φ ≈ 1e20,
        whose ulp swamps any decrease: the line search never passed and the fit raised
        after its charge, depending on that one label). Elsewhere the values are
        subtracted as they are (bounded margins for logistic and Huber SVM: |t| ≤ R‖θ‖).
        """
        out = np.asarray(new - old, dtype=float)
        size = np.abs(old) + np.abs(new)
        if self.name not in ("logistic", "huber_svm"):
            kappa = self.width
            r, r_new = t - y, t_new - y
            above = (r > kappa) & (r_new > kappa)
            below = (r < -kappa) & (r_new < -kappa)
            step = t_new - t
            out = np.where(above, kappa * step, np.where(below, -kappa * step, out))
            size = np.where(above | below, np.abs(kappa * step), size)
        return out, size

    def derivative_error(self, t: np.ndarray, y: np.ndarray, d1: np.ndarray) -> np.ndarray:
        """A bound on the rounding error of φ′ as :meth:`derivatives` computes it at t.

        expit, clip and products: a few units in the last place of φ′ (8u|φ′|). The Huber
        SVM's −(1 + h − m)/(2h), where evaluated, also carries the absolute error of
        1 + h − m, 2u(1 + h + |m|), not small relative to φ′ near the region's edge
        (elsewhere φ′ is an exact constant; a t on the other side of a kink is covered by
        :meth:`curvature_bound`).
        """
        bound = 8 * _UNIT * np.abs(d1) + 1e-300
        if self.name == "huber_svm":  # only where the quadratic piece was evaluated
            m = np.abs(t)  # |y·t| with y = ±1
            inside = np.abs(1 - y * t) <= self.width
            edge = 2.02 * _UNIT * (1 + self.width + m) / (2 * self.width)
            bound = bound + np.where(inside, edge, 0.0)
        return np.asarray(bound)

    def curvature_bound(self, t: np.ndarray, y: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """The supremum of φ″ over [t − radius, t + radius], per row.

        How far φ′ can move with t there (a local Lipschitz constant of φ′, for the
        rounding bound of the gradient).
        """
        if self.name == "logistic":  # φ″ = σ(s)σ(−s) decreases in |s|
            s = np.maximum(np.abs(t) - radius, 0.0)
            return np.asarray(special.expit(s) * special.expit(-s) * (1 + 1e-12))
        if self.name == "huber_svm":  # φ″ = c on |1 − y·s| ≤ h, else 0
            gap = np.abs(1 - y * t) - self.width
        else:  # φ″ = 1 on |s − y| ≤ κ, else 0
            gap = np.abs(t - y) - self.width
        return np.where(gap <= radius, self.c, 0.0)


_UNIT = 2.0**-53  # unit roundoff of float64
_BLOCK = 1 << 15  # rows per block of the certified (pairwise) sum


def _gamma(count: float) -> float:
    """γₖ = k·u/(1 − k·u): the relative error bound of k rounded operations (Higham)."""
    return count * _UNIT / (1 - count * _UNIT)


def _tree_sum(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Column sums by pairwise halving, and the depth of the addition tree.

    Whatever the row count, every sum is a binary tree of depth h, so its rounding error
    is at most γ_h·Σ|terms| (Higham 2002, §4.2) — h ≈ log₂(n), where a library's
    summation order (BLAS, numpy's blocked loops) only guarantees γ_{n−1}.
    """
    if values.shape[0] == 0:  # the empty data set: exact zero sums
        return np.zeros(values.shape[1]), 0
    depth = 0
    partial = []
    for start in range(0, values.shape[0], _BLOCK):
        block = values[start : start + _BLOCK]
        levels = 0
        while block.shape[0] > 1:
            if block.shape[0] % 2:
                block = np.vstack([block, np.zeros((1, block.shape[1]))])
            block = block[0::2] + block[1::2]
            levels += 1
        depth = max(depth, levels)
        partial.append(block[0])
    stacked = np.array(partial)
    top = 0
    while stacked.shape[0] > 1:
        if stacked.shape[0] % 2:
            stacked = np.vstack([stacked, np.zeros((1, stacked.shape[1]))])
        stacked = stacked[0::2] + stacked[1::2]
        top += 1
    return stacked[0], depth + top


def _certified_gradient_norm(
    X: np.ndarray,
    y: np.ndarray,
    loss: _Loss,
    ridge: float,
    linear: np.ndarray,
    theta: np.ndarray,
    n: float,
) -> float:
    """An upper bound on the EXACT gradient norm of the objective at ``theta``.

    The gradient (1/N)Σφ′(xᵢᵀθ)xᵢ + ridge·θ + b/N is recomputed with pairwise sums and
    its floating-point error bounded term by term (u = 2⁻⁵³, γₖ as in Higham 2002):
    tᵢ = xᵢᵀθ is within eᵢ = γ_d·Σⱼ|xᵢⱼθⱼ| (any summation order), so φ′ — evaluated
    to within :meth:`_Loss.derivative_error` — is within (sup of φ″ over tᵢ ± eᵢ)·eᵢ
    plus that; the products, the
    pairwise sum (γ_h·Σ|terms|), the division by N, the ridge term, the rounding of b/N
    (``linear``) and the two additions add their relative errors. The result is
    ‖ĝ‖ + ‖error bound‖, times 1 + 1e-6 for the second-order terms.
    """
    d = X.shape[1]
    t = X @ theta
    _, d1, _ = loss.derivatives(t, y)
    absX = np.abs(X)
    t_error = _gamma(d + 2) * (absX @ np.abs(theta)) * (1 + 1e-12)
    d1_error = loss.curvature_bound(t, y, t_error) * t_error + loss.derivative_error(t, y, d1)
    gradient, data_part, ridge_part, depth = _assemble(X, d1, ridge, linear, theta, n)
    magnitude, _ = _tree_sum(absX * np.abs(d1)[:, None])
    value_error, _ = _tree_sum(absX * d1_error[:, None])
    sum_error = value_error + (_gamma(depth + 2) + _UNIT) * magnitude * (1 + _gamma(depth + 2))
    error = (
        sum_error / n
        + 3 * _UNIT * np.abs(data_part)
        + 4 * _UNIT * np.abs(ridge_part)
        + 3 * _UNIT * np.abs(linear)
    )
    return (float(np.linalg.norm(gradient)) + float(np.linalg.norm(error))) * (1 + 1e-6)


def _gradient(
    X: np.ndarray,
    y: np.ndarray,
    loss: _Loss,
    ridge: float,
    linear: np.ndarray,
    theta: np.ndarray,
    n: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(t, φ, the computed gradient ĝ, φ″) at ``theta``: the certificate's own arithmetic.

    Pairwise sums (depth ≤ 64): their rounding, like the certificate's, is bounded by the
    public weight cap whatever the row count (a BLAS sum's grows with n). ĝ is computed
    exactly as :func:`_certified_gradient_norm` computes it, so that function's error bound
    is a bound on ‖ĝ − ∇J‖.
    """
    t = X @ theta
    value, d1, d2 = loss.derivatives(t, y)
    return t, value, _assemble(X, d1, ridge, linear, theta, n)[0], d2


def _assemble(
    X: np.ndarray,
    d1: np.ndarray,
    ridge: float,
    linear: np.ndarray,
    theta: np.ndarray,
    n: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(ĝ, data part, ridge part, sum depth): ĝ = pairwise Σφ′ᵢxᵢ / N + ridge·θ + b/N.

    The one place the gradient's floating-point operations are fixed, shared by the solver
    (:func:`_gradient`) and the certificate (:func:`_certified_gradient_norm`), so the
    certificate's error bound is a bound on the ĝ the solver steps with.
    """
    sums, depth = _tree_sum(X * d1[:, None])
    data_part = sums / n
    ridge_part = ridge * theta
    return data_part + ridge_part + linear, data_part, ridge_part, depth


def _minimise(
    X: np.ndarray,
    y: np.ndarray,
    loss: _Loss,
    ridge: float,
    linear: np.ndarray,
    tol: float,
    max_iter: int,
    size: float | None = None,
    fallback: tuple[int, float] | None = None,
) -> tuple[np.ndarray, float]:
    """The argmin of (1/N)Σφ(xᵢᵀθ; yᵢ) + (ridge/2)‖θ‖² + linearᵀθ, to ‖gradient‖ ≤ tol.

    N is ``size``, the *public* row count (default: the rows given) — never the private
    count under add/remove, which would move the ridge and the noise with the data. The
    solver returns only when :func:`_certified_gradient_norm` — the *exact* gradient norm,
    floating-point error included — is ≤ tol (the privacy arguments rest on it), and
    returns that bound. Two phases:

    1. **Newton** with Armijo backtracking (a gradient step of length 1/(smoothness)
       where the line search fails, at a kink of a Huber loss), for at most
       max(``max_iter``, 100) iterations, or until it stalls in floating point. On
       ordinary data it certifies in tens of iterations. It is fast, not proved: at a
       Huber kink with a small width and ridge it crawled (81,662 iterations on one
       data set, over 100,000 on its neighbour — issue 31, F1).
    2. **Gradient descent from θ = 0**, if Newton did not certify: θ ← θ − ĝ/β with β ≥
       the gradient's Lipschitz constant, for at most ``fallback = (steps, β̄)`` steps
       (β = the smaller of β̄ and the rows' own bound c·Σ‖xᵢ‖²/N + ridge). The
       estimators compute ``steps`` from public quantities (:func:`_gradient_steps`)
       so that this phase provably certifies whatever the data (the proof is there) and
       refuse, before any charge, settings whose public bound exceeds the cap. So the
       outcome — a certified release — never depends on the data; only the running time
       does. Without ``fallback`` (direct calls) there is no second phase.

    A :class:`ConvergenceError` (no data-dependent number in its message) remains for a
    ``tol`` below :func:`_solver_floor`, or for objective perturbation's b beyond the
    bound the floor assumed (probability below 10⁻²⁵). Numpy's floating-point warnings
    are off here: a Huber regression label near the float range overflows the loss
    *value* (only Phase 1's line search reads values, and Phase 2's proof none), and a
    warning would be an observable that depends on the data (issue 31, F2).
    """
    n = float(X.shape[0]) if size is None else size
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        found = _newton(X, y, loss, ridge, linear, tol, max(max_iter, _NEWTON_ITERATIONS), n)
        if found is None and fallback is not None:
            steps, smoothness = fallback
            found = _descent(X, y, loss, ridge, linear, tol, n, steps, smoothness)
    if found is None:
        raise ConvergenceError(
            f"the solver could not certify its gradient tolerance tol = {tol:g}; raise `tol` "
            "or `l2_regularization`."
        )
    return found


def _newton(
    X: np.ndarray,
    y: np.ndarray,
    loss: _Loss,
    ridge: float,
    linear: np.ndarray,
    tol: float,
    iterations: int,
    n: float,
) -> tuple[np.ndarray, float] | None:
    """Phase 1 of :func:`_minimise`: Newton with a line search; None if not certified."""
    d = X.shape[1]
    theta = np.zeros(d)
    smooth = loss.c * float(np.einsum("ij,ij->", X, X)) / n + ridge

    def parts(th: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _gradient(X, y, loss, ridge, linear, th, n)

    def change(
        th: np.ndarray,
        t: np.ndarray,
        value: np.ndarray,
        th_new: np.ndarray,
        t_new: np.ndarray,
        value_new: np.ndarray,
    ) -> tuple[float, float]:
        # the objective's change, summed from per-row changes (the objective's own value
        # can be so large — one huge label — that its rounding hides every decrease), and
        # the magnitude of what was summed (the scale of its rounding error)
        rows, size = loss.change(t, t_new, y, value, value_new)
        squares = float(th_new @ th_new) + float(th @ th)
        terms = (
            float(rows.sum()) / n,
            ridge / 2 * float(th_new @ th_new - th @ th),
            float(linear @ (th_new - th)),
        )
        magnitude = (
            float(size.sum()) / n
            + ridge / 2 * squares
            + float(np.abs(linear) @ (np.abs(th_new) + np.abs(th)))
        )
        return sum(terms), magnitude

    def certified(th: np.ndarray) -> float:
        return _certified_gradient_norm(X, y, loss, ridge, linear, th, n)

    t, value, g, d2 = parts(theta)
    target = tol / 2
    patience = -1  # iterations left after a certificate failed (none yet)
    for _ in range(iterations):
        norm = float(np.linalg.norm(g))
        if norm <= target:
            bound = certified(theta)
            if bound <= tol:
                return theta, bound
            target = norm / 2  # rounding hid part of the gradient: go further,
            patience = 30 if patience < 0 else patience  # while the iteration still gains
        if patience == 0:
            return None
        patience -= 1 if patience > 0 else 0
        H = (X.T * (d2 / n)) @ X + ridge * np.eye(d)
        try:
            step = linalg.cho_solve(linalg.cho_factor(H), g)
        except linalg.LinAlgError:
            step = g / smooth
        s = 1.0
        while s > 1e-10:
            candidate = theta - s * step
            tc, vc, gc, d2c = parts(candidate)
            delta, magnitude = change(theta, t, value, candidate, tc, vc)
            if delta <= -1e-4 * s * float(g @ step):
                break
            flat = abs(delta) <= 1e-13 * magnitude  # below its precision: judged by ‖g‖
            if flat and float(np.linalg.norm(gc)) < norm:
                break
            s /= 2
        else:
            candidate = theta - g / smooth
            tc, vc, gc, d2c = parts(candidate)
            delta, magnitude = change(theta, t, value, candidate, tc, vc)
            flat = abs(delta) <= 1e-13 * magnitude
            if delta > 0 and not (flat and float(np.linalg.norm(gc)) < norm):
                return None  # no descent, even judged by ‖g‖: the floating-point floor
        theta, t, value, g, d2 = candidate, tc, vc, gc, d2c
    if float(np.linalg.norm(g)) <= tol / 2:
        bound = certified(theta)
        if bound <= tol:
            return theta, bound
    return None


def _descent(
    X: np.ndarray,
    y: np.ndarray,
    loss: _Loss,
    ridge: float,
    linear: np.ndarray,
    tol: float,
    n: float,
    steps: int,
    smoothness: float,
) -> tuple[np.ndarray, float] | None:
    """Phase 2 of :func:`_minimise`: gradient descent from 0, certified within ``steps``.

    The step is 1/β with β = min(β̄, c·S/N + ridge), S an upper bound on the exact
    Σ‖xᵢ‖² (the float sum of n·d non-negative terms is within γ_{nd} of it): both bound
    the gradient's Lipschitz constant, the first publicly (the proof's count uses β̄), the
    second from the rows (fewer steps in practice). No line search, no loss values: the
    proof (:func:`_gradient_steps`) needs only ĝ's public error bound.
    """
    theta = np.zeros(X.shape[1])
    terms = X.shape[0] * X.shape[1] + 2
    beta = smoothness
    if _gamma(terms) < 0.25:
        squares = float(np.einsum("ij,ij->", X, X)) / (1 - 2 * _gamma(terms))
        beta = min(beta, round_up((loss.c * squares / n + ridge) * (1 + 1e-12)))
    for _ in range(steps + 1):
        _, _, g, _ = _gradient(X, y, loss, ridge, linear, theta, n)
        if float(np.linalg.norm(g)) <= tol / 2:
            bound = _certified_gradient_norm(X, y, loss, ridge, linear, theta, n)
            if bound <= tol:
                return theta, bound
        theta = theta - g / beta
    return None  # pragma: no cover - excluded by the proof for tol ≥ the floor


def _tolerance(tol: float, scale: float) -> float:
    """``tol``, or 1e-12 of the gradient's public scale if more.

    ``scale`` bounds the terms the gradient sums (a·R plus the expected ‖b‖/N), from
    public quantities only; the estimators also apply :func:`_solver_floor`.
    """
    return max(tol, 1e-12 * scale)


#: The row-count clip: rows up to _ROW_SLACK·N weigh 1/N each; beyond, the weight per row
#: falls so that one row added or removed moves the data gradient by at most (1 + η)·L/N.
_ETA = 2.0**-6
_ROW_SLACK = 2.0
#: The most rows a numpy array can hold (its index type): a public bound on n.
_MAX_ROWS = 2.0**63
#: Newton iterations tried (at least) before the provable gradient-descent phase.
_NEWTON_ITERATIONS = 100
#: The most gradient-descent steps the public bound (:func:`_gradient_steps`) may ask for;
#: settings beyond are refused before anything is charged.
_STEP_CAP = 10**9


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

    Each term of :func:`_certified_gradient_norm`'s bound at its public worst case (rows
    ‖x‖ ≤ R, |φ′| ≤ a, φ″ ≤ c, total weight ≤ V·N, pairwise sums of depth ≤ 64 because
    n < 2⁶³):

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


# -- the privacy arithmetic ---------------------------------------------------------------


@dataclass(frozen=True)
class PerturbationPlan:
    """The noise of one objective-perturbation fit and what it costs.

    Attributes:
        epsilon: The ε charged: ε_noise + ε_jacobian (rounded up).
        delta: The δ charged (0 for the pure-ε noises).
        epsilon_noise: ε′ of the noise term (ε_G for Gaussian noise).
        epsilon_jacobian: ε_J = log(1 + c·R²/(N(λ + Δ))).
        extra_regularization: Δ, added to λ.
        noise: "laplace" (‖b‖ ~ Gamma(d, scale), uniform direction), "l1_laplace" (i.i.d.
            Laplace(scale) coordinates) or "gaussian" (b ~ N(0, scale²·I)).
        scale: The Gamma scale of ‖b‖, the Laplace scale per coordinate, or σ.
    """

    epsilon: float
    delta: float
    epsilon_noise: float
    epsilon_jacobian: float
    extra_regularization: float
    noise: str
    scale: float


def _k(adjacency: str) -> int:
    return 2 if adjacency == ev.REPLACE_ONE else 1


def _jacobian(curvature: float, size: float, ridge: float) -> float:
    """ε_J = log(1 + c·R²/(N·ridge)), rounded up."""
    return round_up(math.log1p(div_up(curvature, size * ridge)))


def _logistic_joint(noise_epsilon: float, area: float, k: int) -> float:
    """The pure ε of objective perturbation for the logistic loss, by the joint bound.

    For the logistic loss φ″ = p(1 − p) where p = |φ′| ∈ [0, 1] at the same point, so the
    row z's gradient (noise term, ≤ p·R) and its curvature (Jacobian term) cannot both be
    at their maximum. With e = ε′/k and A = R²/(N(λ + Δ)), the privacy loss at any output
    is at most (k − 1)·e + max_p [e·p + log(1 + p(1 − p)·A)] — the changed row z′
    contributes its gradient (≤ R) to the noise term and a factor ≤ 1 to the Jacobian term
    (replace-one); under add/remove the added row alone, k = 1. The maximand is concave in
    p; at the computed stationary point p₀ (clamped to [0, 1]) concavity bounds its maximum
    by g(p₀) + g′(p₀)·(1 − p₀) if g′(p₀) > 0, else g(p₀) + |g′(p₀)|·p₀; then rounded up.
    """
    e, a = noise_epsilon / k, area

    def g(p: float) -> float:
        return e * p + math.log1p(p * (1 - p) * a)

    def slope(p: float) -> float:
        return e + a * (1 - 2 * p) / (1 + p * (1 - p) * a)

    # e·A·p² + (2A − e·A)·p − (e + A) = 0 (the stationary point), stably
    qa, qb, qc = e * a, 2 * a - e * a, -(e + a)
    if qa > 0:
        disc = math.sqrt(qb * qb - 4 * qa * qc)
        root = (-qb + disc) / (2 * qa) if qb <= 0 else (-2 * qc) / (qb + disc)
    else:
        root = 1.0
    p0 = min(1.0, max(0.0, root))
    rise = slope(p0)  # concavity: g ≤ g(p₀) + g′(p₀)(p − p₀) on the side g′ points to
    top = g(p0) + (rise * (1 - p0) if rise > 0 else -rise * p0)
    return round_up(sum_up(round_up((k - 1) * e), round_up(top * (1 + 1e-12))))


def _joint(noise_epsilon: float, curvature: float, size: float, ridge: float, k: int) -> float:
    """:func:`_logistic_joint` with A = R²/(N·ridge) = 4·c·R²/(N·ridge), rounded up."""
    return _logistic_joint(noise_epsilon, div_up(4 * curvature, size * ridge), k)


def _gaussian_delta(epsilon_g: float, mu: float, adjacency: str) -> float:
    """The tail bound on δ of the Gaussian noise term (module docstring), rounded up."""
    if adjacency == ev.REPLACE_ONE:
        t = (epsilon_g - 2 * mu * mu) / (2 * mu)
        return min(1.0, round_up(4 * float(stats.norm.sf(t * (1 - _MARGIN)))))
    t = (epsilon_g - mu * mu / 2) / mu
    return min(1.0, round_up(2 * float(stats.norm.sf(t * (1 - _MARGIN)))))


def _weighted_gaussian_delta(
    epsilon_g: float, mu: float, factor: float, spread: float, dimension: int
) -> float:
    """δ of a Gaussian b under add/remove with the row weights (issue 31, F5), rounded up.

    μ = L/σ (L = a·R, one row's gradient), F = ``factor``, s = ``spread`` ≥ n·(v(n) −
    v(n + 1)) for every n. Under D (n rows, weight v; D′ adds z, weight v′ = v(n + 1))
    the noise term of the privacy loss at the output θ̂ is (2bᵀΔ + ‖Δ‖²)/(2σ²), with b =
    the noise drawn (exactly N(0, σ²I)) and Δ = (v − v′)·Σ_D φ′ᵢ(θ̂)xᵢ − v′φ′_z(θ̂)x_z.
    The second part has the fixed direction x_z: |bᵀ(v′φ′_z x_z)| ≤ v′·L·σ|Z|, Z =
    bᵀx_z/(‖x_z‖σ) standard normal. The first part's direction moves with θ̂, hence
    with b (the argument for a fixed row does not apply to it; there is no dimension-free
    bound for a shift that adapts to b), so only |bᵀΔ₁| ≤ ‖b‖·(v − v′)·n·L = s·L·σχ
    with χ = ‖b‖/σ ~ χ_d. With v′ + n(v − v′) ≤ F, n(v − v′) ≤ s and |Z| ≤ χ, the loss
    is at most μ((F − s)|Z| + sχ) + (Fμ)²/2 (the worst split), in either direction (the
    reverse is the same argument at D′'s output). So δ ≤ P(A|Z| + B·√(Z² + Q) > t),
    A = (F − s)μ, B = sμ, t = ε_G − (Fμ)²/2, Q ~ χ²_{d−1} independent of Z. The event
    grows with |Z|, so an upper Riemann sum over bins [z_k, z_{k+1}) of |Z| bounds it:

        δ ≤ Σ_k P(|Z| ∈ [z_k, z_{k+1}))·P(Q > ((t − A·z_{k+1})/B)² − z_{k+1}²) + P(|Z| ≥ z_K),

    with 2048 bins up to min(t/A, 40), rounded up. Under replace-one neighbours share n,
    Δ's first part is 0, and :func:`_gaussian_delta` applies.
    """
    t = (epsilon_g - (factor * mu) ** 2 / 2) * (1 - _MARGIN)
    if not t > 0:
        return 1.0
    fixed, moving = (factor - spread) * mu, spread * mu
    top = min(t / fixed, 40.0)
    edges = np.linspace(0.0, top, 2049)
    mass = 2 * (stats.norm.sf(edges[:-1]) - stats.norm.sf(edges[1:]))  # P(|Z| in a bin)
    upper = edges[1:]
    room = np.maximum(t - fixed * upper, 0.0)  # t − A·z_{k+1} ≥ 0 up to rounding
    threshold = (room / moving) ** 2 - upper * upper
    if dimension > 1:
        rest = stats.chi2.sf(np.maximum(threshold, 0.0), dimension - 1)
    else:  # Q = 0: χ = |Z|
        rest = np.zeros_like(threshold)
    rest = np.where((threshold > 0) & (room > 0), rest, 1.0)
    total = float(np.sum(np.maximum(mass, 0.0) * rest)) + 2 * float(stats.norm.sf(top))
    return min(1.0, round_up(total * (1 + 1e-9) + 1e-300))


def _weighted_gaussian_sigma(
    plan: PerturbationPlan, lipschitz: float, factor: float, spread: float, dimension: int
) -> float:
    """The smallest σ ≥ the plan's whose :func:`_weighted_gaussian_delta` is ≤ its δ.

    Bisection in log σ (δ falls as σ grows), returning the feasible end.
    """
    delta = plan.delta

    def feasible(sigma: float) -> bool:
        mu = lipschitz / sigma
        return _weighted_gaussian_delta(plan.epsilon_noise, mu, factor, spread, dimension) <= delta

    lo = hi = plan.scale
    while not feasible(hi):
        lo, hi = hi, hi * 2
        if not math.isfinite(hi):  # pragma: no cover - the plan's σ is finite
            raise InvalidArgumentError("no finite Gaussian noise meets the row-weight bound.")
    if lo == hi:
        return hi
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def _finite_positive(name: str, value: Any) -> float:
    """``value`` as a float, positive and finite (the check of every real parameter here)."""
    return check_positive(name, value)  # "positive and finite": refuses ∞ too


def _check_setting(
    lipschitz: Any, curvature: Any, size: Any, regularization: Any, adjacency: Any
) -> tuple[float, float, float, float, str]:
    return (
        _finite_positive("lipschitz", lipschitz),
        _finite_positive("curvature", curvature),
        _finite_positive("size", size),
        _finite_positive("regularization", regularization),
        check_choice("adjacency", adjacency, ev.ADJACENCIES),
    )


def objective_perturbation_epsilon(
    *,
    noise: str,
    scale: float,
    lipschitz: float,
    curvature: float,
    size: float,
    regularization: float,
    adjacency: str,
    delta: float = 0.0,
    loss: str = "generic",
    l1_lipschitz: float | None = None,
) -> float:
    """The ε objective perturbation with this noise really gives (at ``delta`` if Gaussian).

    Args:
        noise: "laplace" (‖b‖ ~ Gamma(d, scale)), "l1_laplace" (i.i.d. Laplace(scale)
            coordinates) or "gaussian" (σ = scale).
        scale: The Gamma scale of ‖b‖, the Laplace scale per coordinate, or σ.
        lipschitz: L = a·R, the bound on one row's gradient (ℓ₂).
        curvature: c·R², the bound on one row's Hessian.
        size: The public N.
        regularization: λ + Δ (the objective's ridge is N·(λ + Δ)).
        adjacency: "add_remove" or "replace_one".
        delta: For Gaussian noise, the δ at which to state ε.
        loss: "generic" (ε′ + ε_J) or "logistic" (the joint bound of
            :func:`_logistic_joint`, for the pure-ε noises; needs c·R² = L²/4).
        l1_lipschitz: L₁ = a·R₁, the bound on one row's gradient in ℓ₁ norm (rows with
            ‖x‖₁ ≤ R₁); needed by, and only by, ``noise="l1_laplace"``.
    """
    check_choice("noise", noise, NOISES)
    loss = check_choice("loss", loss, LOSS_BOUNDS)
    lipschitz, curvature, size, regularization, adjacency = _check_setting(
        lipschitz, curvature, size, regularization, adjacency
    )
    noise_bound = _noise_bound(noise, lipschitz, l1_lipschitz)
    scale = check_positive("scale", scale, allow_inf=True)
    k = _k(adjacency)
    _check_sensitivity(k, lipschitz, "lipschitz")
    _check_sensitivity(k, noise_bound, "l1_lipschitz")
    jac = _jacobian(curvature, size, regularization)
    if math.isinf(scale):  # no noise term: the Jacobian term alone
        return jac
    if noise == "gaussian":
        delta = check_probability("delta", delta, low_open=True, high_open=True)
    if noise in PURE_NOISES:
        noise_eps = div_up(k * noise_bound, scale)
        if loss == "logistic":
            _check_logistic(lipschitz, curvature)
            return min(
                sum_up(noise_eps, jac), _joint(noise_eps, curvature, size, regularization, k)
            )
        return sum_up(noise_eps, jac)
    mu = lipschitz / scale
    lo, hi = 0.0, 1.0
    while _gaussian_delta(hi, mu, adjacency) > delta:
        hi *= 2
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _gaussian_delta(mid, mu, adjacency) <= delta else (mid, hi)
    return sum_up(hi, jac)


def _check_sensitivity(k: int, bound: float, name: str) -> None:
    """k·bound (the noise's sensitivity) must be a finite float."""
    if not math.isfinite(k * bound):
        raise InvalidArgumentError(
            f"`{name}` = {bound!r} times {k} (the sensitivity of b) overflows floating "
            "point: rescale the rows or the loss."
        )


def _noise_bound(noise: str, lipschitz: float, l1_lipschitz: Any) -> float:
    """The bound on one row's gradient in the noise's norm: L (ℓ₂) or L₁ (ℓ₁ noise)."""
    if noise != "l1_laplace":
        if l1_lipschitz is not None:
            raise InvalidArgumentError(
                f"`l1_lipschitz` is for noise='l1_laplace' only (noise={noise!r}). "
                f"Found {l1_lipschitz!r}."
            )
        return lipschitz
    if l1_lipschitz is None:
        raise InvalidArgumentError(
            "noise='l1_laplace' needs `l1_lipschitz`, the bound on one row's gradient in "
            "ℓ₁ norm (a·R₁ for rows with ‖x‖₁ ≤ R₁). Found None."
        )
    return _finite_positive("l1_lipschitz", l1_lipschitz)


def _check_logistic(lipschitz: float, curvature: float) -> None:
    """The joint bound is for φ = log(1 + e^{−yt}) itself: L = R and c·R² = R²/4."""
    if not abs(4 * curvature - lipschitz * lipschitz) <= 1e-9 * lipschitz * lipschitz:
        raise InvalidArgumentError(
            "loss='logistic' is the logistic loss itself (a = 1, c = 1/4): `curvature` must "
            f"be lipschitz²/4. Found lipschitz={lipschitz!r}, curvature={curvature!r}."
        )


def _check_ridge(ridge: float, share: float, epsilon: float) -> None:
    if not ridge < 1e300:
        raise InvalidArgumentError(
            f"`jacobian_share` = {share!r} of epsilon = {epsilon!r} needs an extra ridge "
            "beyond floating point: choose a larger share or epsilon."
        )


def _laplace_noise(gradient_bound: float, budget: float, epsilon: float) -> tuple[float, float]:
    """(scale, the ε′ it gives) for a pure-ε K-norm noise within ``budget``.

    The Gamma scale of ‖b‖ (ℓ₂) or the per-coordinate Laplace scale (ℓ₁): kL/ε′ in the
    noise's norm, rounded up and the ε′ it really gives is recomputed from it (also
    rounded up), so the ε′ charged is never below the noise's; ``gradient_bound`` is kL
    and ``epsilon`` the fit's ε, named in the error when no finite scale exists.
    """
    scale = div_up(gradient_bound, budget)
    if not math.isfinite(scale):
        raise InvalidArgumentError(
            f"no finite noise meets epsilon={epsilon!r}: the budget is below "
            "floating-point resolution."
        )
    return scale, div_up(gradient_bound, scale)


def _joint_plan(
    epsilon: float,
    lipschitz: float,
    cr2: float,
    n: float,
    lam: float,
    k: int,
    share: float,
    noise: str = "laplace",
) -> PerturbationPlan:
    """Calibrated pure-ε objective perturbation for the logistic loss (joint bound).

    ``lipschitz`` is the row gradient's bound in the noise's norm (L or L₁): only the
    noise's scale depends on it. The joint bound holds for either norm: a row with
    |φ′| = p moves b by p·‖x‖_K ≤ p·R_K, a fraction p of the noise's sensitivity.
    """

    def cost(noise_eps: float, ridge: float) -> float:
        return _joint(noise_eps, cr2, n, ridge, k)

    def most_noise_budget(ridge: float) -> float:  # the largest ε′ with cost ≤ ε
        lo, hi = 0.0, epsilon
        if cost(hi, ridge) <= epsilon:
            return hi
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if cost(mid, ridge) <= epsilon else (lo, mid)
            if hi - lo <= 1e-15 * hi:
                break
        return lo

    extra = 0.0
    prime = most_noise_budget(lam)
    if epsilon - prime > share * epsilon:  # the Jacobian takes more than its share
        wanted = (1 - share) * epsilon
        lo, hi = lam, 2 * lam  # the smallest ridge with cost(wanted, ridge) ≤ ε
        while cost(wanted, hi) > epsilon:
            lo, hi = hi, 2 * hi
            _check_ridge(hi, share, epsilon)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if cost(wanted, mid) <= epsilon else (mid, hi)
            if hi - lo <= 1e-12 * hi:
                break
        extra = hi - lam
        prime = most_noise_budget(hi)
    prime *= 1 - 4 * _MARGIN
    if not prime > 0:  # pragma: no cover - at least (1 − share)·ε is left
        raise InvalidArgumentError(f"no budget left for the noise at epsilon={epsilon!r}.")
    scale, noise_eps = _laplace_noise(k * lipschitz, prime, epsilon)
    total = cost(noise_eps, lam + extra)
    if total > epsilon:  # pragma: no cover - the bisections keep the feasible side
        raise InvalidArgumentError("internal error: the joint bound missed ε.")
    return PerturbationPlan(total, 0.0, noise_eps, total - noise_eps, extra, noise, scale)


def objective_perturbation_plan(
    *,
    epsilon: float,
    delta: float = 0.0,
    noise: str = "laplace",
    lipschitz: float,
    curvature: float,
    size: float,
    regularization: float,
    adjacency: str,
    variant: str = "calibrated",
    loss: str = "generic",
    jacobian_share: float = 0.5,
    l1_lipschitz: float | None = None,
) -> PerturbationPlan:
    """The noise and extra ridge of objective perturbation for a target (ε, δ).

    ``calibrated``: ε_J = log(1 + c·R²/(Nλ)); if it exceeds s·ε (s = ``jacobian_share``,
    CMS's 1/2 by default), the extra ridge Δ = c·R²/(N(e^{s·ε} − 1)) − λ brings it to s·ε.
    The rest, ε − ε_J, goes to the noise: ℓ₂-Laplace with Gamma scale kL/(ε − ε_J),
    ℓ₁-Laplace with per-coordinate scale kL₁/(ε − ε_J) (``l1_lipschitz`` = L₁), or
    the smallest σ whose tail bound meets δ. With ``loss="logistic"`` and a pure-ε
    noise the joint bound (:func:`_logistic_joint`) replaces ε′ + ε_J: the largest ε′
    whose joint cost is ε, and if the Jacobian's part ε − ε′ exceeds s·ε, the smallest
    extra ridge that leaves ε′ = (1 − s)·ε. ``published`` (ℓ₂-Laplace, replace-one
    constants): CMS 2011 Alg. 2 with c·R² —
    ε′ = ε − log(1 + 2cR²/(nλ) + (cR²/(nλ))²), the Δ branch at ε′ ≤ 0 with e^{ε/4},
    scale 2L/ε′ — charged at the ε it really gives (never more than the nominal ε).
    """
    check_choice("noise", noise, NOISES)
    check_choice("variant", variant, ("calibrated", "published"))
    loss = check_choice("loss", loss, LOSS_BOUNDS)
    epsilon = _finite_positive("epsilon", epsilon)
    share = check_probability("jacobian_share", jacobian_share, low_open=True, high_open=True)
    lipschitz, curvature, size, regularization, adjacency = _check_setting(
        lipschitz, curvature, size, regularization, adjacency
    )
    noise_bound = _noise_bound(noise, lipschitz, l1_lipschitz)
    if noise == "gaussian":
        delta = check_probability("delta", delta, low_open=True, high_open=True)
    else:
        delta = check_probability("delta", delta)
    k = _k(adjacency)
    _check_sensitivity(k, lipschitz, "lipschitz")
    _check_sensitivity(k, noise_bound, "l1_lipschitz")
    cr2, n, lam = curvature, size, regularization
    if variant == "published":
        if noise != "laplace":
            raise InvalidArgumentError(
                "objective perturbation has published constants for ℓ₂-Laplace noise only "
                f"(CMS 2011); use variant='calibrated' with noise={noise!r}."
            )
        ratio = cr2 / (n * lam)
        prime = epsilon - math.log1p(2 * ratio + ratio * ratio)
        extra = 0.0
        if prime <= 0:
            extra = cr2 / (n * math.expm1(epsilon / 4)) - lam
            prime = epsilon / 2
        scale = 2 * lipschitz / prime
        noise_eps = div_up(k * lipschitz, scale)
        total = objective_perturbation_epsilon(
            noise=noise,
            scale=scale,
            lipschitz=lipschitz,
            curvature=cr2,
            size=n,
            regularization=lam + extra,
            adjacency=adjacency,
            loss=loss,
        )
        return PerturbationPlan(total, 0.0, noise_eps, total - noise_eps, extra, noise, scale)
    if noise in PURE_NOISES and loss == "logistic":
        _check_logistic(lipschitz, cr2)
        return _joint_plan(epsilon, noise_bound, cr2, n, lam, k, share, noise)
    extra = 0.0
    jac = _jacobian(cr2, n, lam)
    if jac > share * epsilon:
        room = math.expm1(share * epsilon)
        extra = cr2 / (n * room) * (1 + _MARGIN) - lam if room > 0 else math.inf
        _check_ridge(lam + extra, share, epsilon)
        jac = _jacobian(cr2, n, lam + extra)
    budget = (epsilon - jac) * (1 - 4 * _MARGIN)
    if not budget > 0:  # pragma: no cover - jac <= ε/2 (rounded) leaves half of ε
        raise InvalidArgumentError(f"no budget left for the noise at epsilon={epsilon!r}.")
    if noise in PURE_NOISES:
        scale, noise_eps = _laplace_noise(k * noise_bound, budget, epsilon)
        return PerturbationPlan(sum_up(noise_eps, jac), 0.0, noise_eps, jac, extra, noise, scale)
    tail = delta / (4 if k == 2 else 2)
    z = float(stats.norm.isf(tail)) * (1 + _MARGIN) + _MARGIN
    root = 2 * budget / (z + math.sqrt(z * z + 2 * budget))  # −z + √(z² + 2ε_G), stably
    mu = (root / 2 if k == 2 else root) * (1 - _MARGIN)
    sigma = lipschitz / mu if mu > 0 else math.inf
    if not math.isfinite(sigma):
        raise InvalidArgumentError(
            f"no finite noise meets epsilon={epsilon!r}, delta={delta!r}: the budget is "
            "below floating-point resolution."
        )
    if _gaussian_delta(budget, lipschitz / sigma, adjacency) > delta:  # pragma: no cover
        raise InvalidArgumentError("internal error: the Gaussian tail bound missed δ.")
    return PerturbationPlan(sum_up(budget, jac), delta, budget, jac, extra, noise, sigma)


class _ObjectiveNoise(Mechanism):
    """Noise drawn by a plan: objective perturbation's b, or the Gaussian Z of its shift.

    For b the event is the exact minimiser's guarantee; for the Gaussian noise Z on the
    approximate minimiser, the analytic Gaussian's (ε₃, δ₃).

    ``release`` adds b to ``value`` (the zero vector): ℓ₂-Laplace (‖b‖ ~ Gamma(d, scale),
    uniform direction), ℓ₁-Laplace (i.i.d. Laplace(0, scale) coordinates: the K-norm
    mechanism of the ℓ₁ ball) or Gaussian N(0, scale²·I).
    """

    def __init__(self, plan: PerturbationPlan, dimension: int) -> None:
        self.plan = plan
        self.dimension = dimension
        warn_floating_point("objective perturbation", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {"plan": self.plan, "dimension": self.dimension}

    @property
    def event(self) -> ev.Event:
        """ε-DP (ℓ₂- or ℓ₁-Laplace) or (ε, δ)-DP (Gaussian): see the module docstring."""
        if self.plan.noise in PURE_NOISES:
            return ev.PureDP(self.plan.epsilon)
        return ev.ApproxDP(self.plan.epsilon, self.plan.delta)

    @property
    def sigma(self) -> float:
        return self.plan.scale

    def validate(self, value: Any) -> None:
        as_vector(value, self.dimension)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        from dpledger.mechanisms._rng import resolve_rng

        generator = resolve_rng(rng)
        d = self.dimension
        if self.plan.noise == "gaussian":
            noise = generator.normal(0.0, self.plan.scale, d)
        elif self.plan.noise == "l1_laplace":
            noise = generator.laplace(0.0, self.plan.scale, d)
        else:
            direction = generator.standard_normal(d)
            direction /= np.linalg.norm(direction)
            noise = generator.gamma(d, self.plan.scale) * direction
        return as_vector(value, d) + noise


# -- the estimators -------------------------------------------------------------------------


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
        2019; proof in the module docstring).

        Under add/remove the rows weigh v(n) (the row-count clip, module docstring):
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

        _, released = self._release_all(
            [
                Release("perturbation b", perturbation, np.zeros(d)),
                Release("approximate minimiser", approximation, minimiser),
            ],
            ledger,
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
            mechanism: Any = KNorm(epsilon, sensitivity, norm="l2", dimension=d)
        else:
            safe = bool(getattr(self, "safe_noise", False))
            if variant == "published":  # the classical σ = Δ√(2 log(1.25/δ))/ε
                sigma = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
                mechanism = Gaussian(sigma, sensitivity, dimension=d, safe=safe)
            else:

                def make(p: float) -> list[Any]:
                    return [Gaussian(p * sensitivity, sensitivity, dimension=d, safe=safe)]

                guess = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
                mechanism = make(self._calibrate(make, ledger, initial=guess))[0]
        (noisy,) = self._release_all([Release("minimiser", mechanism, theta)], ledger)
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


class ObjectivePerturbationClassifier(BinaryClassifierOutputs, ClassifierMixin, _Objective):  # type: ignore[misc]
    """Objective perturbation for logistic regression or the Huber SVM (labels 0 and 1).

    Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2, with c·R² and an ℓ₂-Laplace or
    Gaussian b, releasing the solver's minimiser plus the noise Z of approximate minima
    perturbation (see the module docstring for the theorem and its conditions:
    ‖x‖ ≤ x_bound, intercept inside the bound, the solver's tolerance).

    Args:
        loss: "logistic" (c = 1/4) or "huber" (the Huber SVM, c = 1/(2h)).
        huber_width: h of the Huber SVM.
        solver_share: The share of ε (and δ) for the noise Z on the approximate
            minimiser (default 0.01); the rest is the objective perturbation's.
        jacobian_share: The most of the perturbation's ε the Jacobian term may take
            before the extra ridge Δ is raised (CMS's 1/2 by default). A smaller share
            buys more noise budget with more ridge: a hyper-parameter, to be chosen on
            public data like λ.
        x_l1_bound: With ``noise="l1_laplace"``: the declared bound on each row's ℓ₁
            norm (rows beyond are clipped to it, as to ``x_bound``). b then has i.i.d.
            Laplace coordinates sized for the gradient's ℓ₁ sensitivity k·a·R₁ — far less
            noise than ℓ₂-Laplace on sparse rows, e.g. one-hot data: E‖b‖² is
            2d·(kaR₁/ε′)² against d(d + 1)·(kaR/ε′)², a ratio 2R₁²/((d + 1)R²).
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
        solver_share: The share of ε (and δ) for the noise Z on the approximate
            minimiser (default 0.01); the rest is the objective perturbation's.
        jacobian_share: The most of the perturbation's ε the Jacobian term may take
            before the extra ridge Δ is raised (CMS's 1/2 by default). A smaller share
            buys more noise budget with more ridge: a hyper-parameter, to be chosen on
            public data like λ.
        x_l1_bound: With ``noise="l1_laplace"``: the declared bound on each row's ℓ₁
            norm (rows beyond are clipped to it, as to ``x_bound``). b then has i.i.d.
            Laplace coordinates sized for the gradient's ℓ₁ sensitivity k·a·R₁ — far less
            noise than ℓ₂-Laplace on sparse rows, e.g. one-hot data: E‖b‖² is
            2d·(kaR₁/ε′)² against d(d + 1)·(kaR/ε′)², a ratio 2R₁²/((d + 1)R²).
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
    _cls.__doc__ = (_cls.__doc__ or "").replace("{common}", _COMMON_ARGS)

__dir__ = namespace(__all__)
