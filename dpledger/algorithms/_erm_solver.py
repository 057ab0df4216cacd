"""The certified solver of private ERM: a minimiser whose gradient norm is *proved* small.

Objective and output perturbation (:mod:`dpledger.algorithms.erm`) need more than a
good minimiser: their guarantees rest on ‖∇J(θ̃)‖/N ≤ tol holding for the *exact*
gradient (strong convexity then puts θ̃ within tol/ridge of the exact minimiser,
Iyengar et al. 2019, Alg. 1). So the gradient is recomputed with pairwise sums and its
rounding error bounded term by term (Higham 2002: γₖ, and pairwise sums, §4.2), and the
solver returns only once that certificate is within ``tol``
(:func:`_certified_gradient_norm`). It runs Newton's method with a line search, then,
if Newton did not certify, gradient descent from 0 for a public number of steps that
provably certifies (:func:`_minimise`; the count and the floor on ``tol`` it needs are
in :mod:`dpledger.algorithms._erm_bounds`). The losses are the generalised linear ones
of Chaudhuri, Monteleoni & Sarwate 2011: φ(θᵀx; y) with |φ′| ≤ a and φ′ c-Lipschitz.

Nothing it does is charged: the privacy arguments use only the certified bound, and
whether it returns (rather than raising :class:`ConvergenceError`) must not depend on
the data — hence the public step count of its fallback (issue 31). The proofs are in
docs/erm.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, special

from dpledger._numerics import round_up
from dpledger.errors import ConvergenceError

__all__ = ["ConvergenceError"]


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
#: Newton iterations tried (at least) before the provable gradient-descent phase.
_NEWTON_ITERATIONS = 100


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
        total, levels = _halving_sum(values[start : start + _BLOCK])
        depth = max(depth, levels)
        partial.append(total)
    total, top = _halving_sum(np.array(partial))
    return total, depth + top


def _halving_sum(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The column sums of ``rows`` (at least one) by adding pairs, and the levels it took."""
    levels = 0
    while rows.shape[0] > 1:
        if rows.shape[0] % 2:
            rows = np.vstack([rows, np.zeros((1, rows.shape[1]))])
        rows = rows[0::2] + rows[1::2]
        levels += 1
    return rows[0], levels


@dataclass(frozen=True)
class _Problem:
    """The objective J(θ) = (1/N)Σφ(xᵢᵀθ; yᵢ) + (ridge/2)‖θ‖² + linearᵀθ, N = ``n``."""

    X: np.ndarray
    y: np.ndarray
    loss: _Loss
    ridge: float
    linear: np.ndarray
    n: float


def _certified_gradient_norm(problem: _Problem, theta: np.ndarray) -> float:
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
    X, y, loss, linear = problem.X, problem.y, problem.loss, problem.linear
    d = X.shape[1]
    t = X @ theta
    _, d1, _ = loss.derivatives(t, y)
    absX = np.abs(X)
    t_error = _gamma(d + 2) * (absX @ np.abs(theta)) * (1 + 1e-12)
    d1_error = loss.curvature_bound(t, y, t_error) * t_error + loss.derivative_error(t, y, d1)
    gradient, data_part, ridge_part, depth = _assemble(problem, d1, theta)
    magnitude, _ = _tree_sum(absX * np.abs(d1)[:, None])
    value_error, _ = _tree_sum(absX * d1_error[:, None])
    sum_error = value_error + (_gamma(depth + 2) + _UNIT) * magnitude * (1 + _gamma(depth + 2))
    error = (
        sum_error / problem.n
        + 3 * _UNIT * np.abs(data_part)
        + 4 * _UNIT * np.abs(ridge_part)
        + 3 * _UNIT * np.abs(linear)
    )
    return (float(np.linalg.norm(gradient)) + float(np.linalg.norm(error))) * (1 + 1e-6)


def _gradient(
    problem: _Problem, theta: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(t, φ, the computed gradient ĝ, φ″) at ``theta``: the certificate's own arithmetic.

    Pairwise sums (depth ≤ 64): their rounding, like the certificate's, is bounded by the
    public weight cap whatever the row count (a BLAS sum's grows with n). ĝ is computed
    exactly as :func:`_certified_gradient_norm` computes it, so that function's error bound
    is a bound on ‖ĝ − ∇J‖.
    """
    t = problem.X @ theta
    value, d1, d2 = problem.loss.derivatives(t, problem.y)
    return t, value, _assemble(problem, d1, theta)[0], d2


def _assemble(
    problem: _Problem, d1: np.ndarray, theta: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(ĝ, data part, ridge part, sum depth): ĝ = pairwise Σφ′ᵢxᵢ / N + ridge·θ + b/N.

    The one place the gradient's floating-point operations are fixed, shared by the solver
    (:func:`_gradient`) and the certificate (:func:`_certified_gradient_norm`), so the
    certificate's error bound is a bound on the ĝ the solver steps with.
    """
    sums, depth = _tree_sum(problem.X * d1[:, None])
    data_part = sums / problem.n
    ridge_part = problem.ridge * theta
    return data_part + ridge_part + problem.linear, data_part, ridge_part, depth


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
       estimators compute ``steps`` from public quantities
       (:func:`~._erm_bounds._gradient_steps`) so that this phase provably certifies
       whatever the data (the proof is there) and refuse, before any charge, settings
       whose public bound exceeds the cap. So the outcome — a certified release — never
       depends on the data; only the running time does. Without ``fallback`` (direct
       calls) there is no second phase.

    A :class:`ConvergenceError` (no data-dependent number in its message) remains for a
    ``tol`` below :func:`~._erm_bounds._solver_floor`, or for objective perturbation's b
    beyond the bound the floor assumed (probability below 10⁻²⁵). Numpy's floating-point
    warnings are off here: a Huber regression label near the float range overflows the
    loss *value* (only Phase 1's line search reads values, and Phase 2's proof none), and
    a warning would be an observable that depends on the data (issue 31, F2).
    """
    n = float(X.shape[0]) if size is None else size
    problem = _Problem(X, y, loss, ridge, linear, n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        found = _newton(problem, tol, max(max_iter, _NEWTON_ITERATIONS))
        if found is None and fallback is not None:
            steps, smoothness = fallback
            found = _descent(X, y, loss, ridge, linear, tol, n, steps, smoothness)
    if found is None:
        raise ConvergenceError(
            f"the solver could not certify its gradient tolerance tol = {tol:g}; raise `tol` "
            "or `l2_regularization`."
        )
    return found


def _newton(problem: _Problem, tol: float, iterations: int) -> tuple[np.ndarray, float] | None:
    """Phase 1 of :func:`_minimise`: Newton with a line search; None if not certified."""
    X, y, loss, n = problem.X, problem.y, problem.loss, problem.n
    ridge, linear = problem.ridge, problem.linear
    d = X.shape[1]
    theta = np.zeros(d)
    smooth = loss.c * float(np.einsum("ij,ij->", X, X)) / n + ridge

    def parts(th: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _gradient(problem, th)

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
        return _certified_gradient_norm(problem, th)

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
    proof (:func:`~._erm_bounds._gradient_steps`) needs only ĝ's public error bound.
    """
    problem = _Problem(X, y, loss, ridge, linear, n)
    theta = np.zeros(X.shape[1])
    terms = X.shape[0] * X.shape[1] + 2
    beta = smoothness
    if _gamma(terms) < 0.25:
        squares = float(np.einsum("ij,ij->", X, X)) / (1 - 2 * _gamma(terms))
        beta = min(beta, round_up((loss.c * squares / n + ridge) * (1 + 1e-12)))
    for _ in range(steps + 1):
        _, _, g, _ = _gradient(problem, theta)
        if float(np.linalg.norm(g)) <= tol / 2:
            bound = _certified_gradient_norm(problem, theta)
            if bound <= tol:
                return theta, bound
        theta = theta - g / beta
    return None  # pragma: no cover - excluded by the proof for tol ≥ the floor
