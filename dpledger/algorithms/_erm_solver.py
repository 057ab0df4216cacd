"""The certified solver of private ERM: a minimiser whose gradient norm is *proved* small.

Objective and output perturbation (:mod:`dpledger.algorithms.erm`) need more than a
good minimiser: their guarantees rest on ‖∇J(θ̃)‖/N ≤ tol holding for the *exact*
gradient (strong convexity then puts θ̃ within tol/ridge of the exact minimiser,
Iyengar et al. 2019, Alg. 1). So the gradient is recomputed with pairwise sums and its
rounding error bounded term by term (Higham 2002: γₖ, and pairwise sums, §4.2), and the
solver returns only once that certificate is within ``tol``
(:func:`_certified_gradient_norm`). It runs Newton's method with a line search, which
only steers (BLAS gradients, single-precision Hessians on a row sample: their accuracy
decides the running time, never what is certified), then, if Newton did not certify,
gradient descent from 0 for a public number of steps that provably certifies
(:func:`_minimise`; the count and the floor on ``tol`` it needs are in
:mod:`dpledger.algorithms._erm_bounds`). The losses are the generalised linear ones of
Chaudhuri, Monteleoni & Sarwate 2011: φ(θᵀx; y) with |φ′| ≤ a and φ′ c-Lipschitz.

Nothing it does is charged: the privacy arguments use only the certified bound, and
whether it returns (rather than raising :class:`ConvergenceError`) must not depend on
the data — hence the public step count of its fallback (issue 31). The proofs are in
docs/erm.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

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
        """φ, φ′ and φ″ (with respect to t) for every row; φ′ is :meth:`slope`'s."""
        d1 = self.slope(t, y)
        if self.name == "logistic":  # y in {-1, +1}
            m = y * t
            # log(1 + e^{−m}) = max(−m, 0) + log1p(e^{−|m|}): what np.logaddexp computes
            value = np.maximum(-m, 0.0) + np.log1p(np.exp(-np.abs(m)))
            s = -y * d1  # σ(−m)
            return value, d1, s * (1.0 - s)
        if self.name == "huber_svm":
            h = self.width
            m = y * t
            value = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1 - m, (1 + h - m) ** 2 / (4 * h)))
            d2 = np.where(np.abs(1 - m) <= h, 1.0 / (2 * h), 0.0)
            return value, d1, d2
        kappa = self.width  # Huber regression on the residual
        r = t - y
        inside = np.abs(r) <= kappa
        near = np.where(inside, r, 0.0)  # squared only where used (a huge label's r²
        # overflowed: a warning that depended on the data)
        value = np.where(inside, near * near / 2, kappa * np.abs(r) - kappa * kappa / 2)
        return value, d1, inside.astype(float)

    def slope(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """φ′ (with respect to t) for every row: the certificate's.

        :meth:`derivative_error` bounds its rounding (the logistic one by ``expit``).
        """
        if self.name == "logistic":  # y in {-1, +1}
            return np.asarray(-y * special.expit(-(y * t)))
        if self.name == "huber_svm":
            h = self.width
            m = y * t
            return np.asarray(
                y * np.where(m > 1 + h, 0.0, np.where(m < 1 - h, -1.0, -(1 + h - m) / (2 * h)))
            )
        kappa = self.width  # Huber regression on the residual
        return np.asarray(np.clip(t - y, -kappa, kappa))

    def steer(
        self,
        t: np.ndarray,
        y: np.ndarray,
        out: tuple[np.ndarray, np.ndarray, np.ndarray],
        work: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        """φ, φ′ and φ″ into ``out``, for Newton's step and line search only.

        Never read by the certificate, which recomputes φ′ by :meth:`derivatives` (the
        φ′ that :meth:`derivative_error` bounds) at the point it judges: these only
        decide how fast Newton's phase gets there. For the logistic loss one exponential
        e = e^{−|m|} (m = y·t) gives all three, in the preallocated arrays ``out`` with
        ``work`` for the intermediates (a fresh array per operation cost more than the
        arithmetic at 10⁵ rows): φ = max(−m, 0) + log1p(e), σ(−m) = e^{−max(m, 0)}/(1 + e),
        φ′ = −y·σ(−m), φ″ = σ(m)σ(−m) = e/(1 + e)². The other losses: :meth:`derivatives`.
        """
        value, d1, d2 = out
        if self.name != "logistic":
            for target, source in zip(out, self.derivatives(t, y), strict=True):
                np.copyto(target, source)
            return
        r, a, e = work
        np.multiply(y, t, out=r)  # m
        np.abs(r, out=a)  # |m|
        np.negative(r, out=r)
        np.maximum(r, 0.0, out=r)  # max(−m, 0)
        np.negative(a, out=e)
        np.exp(e, out=e)  # e^{−|m|}
        np.log1p(e, out=value)
        value += r
        np.subtract(r, a, out=d1)  # −max(m, 0)
        np.exp(d1, out=d1)
        q = np.add(e, 1.0, out=a)
        np.reciprocal(q, out=q)  # 1/(1 + e)
        d1 *= q  # σ(−m)
        d1 *= y
        np.negative(d1, out=d1)
        np.multiply(e, q, out=d2)
        d2 *= q

    def change(
        self,
        t: np.ndarray,
        t_new: np.ndarray,
        y: np.ndarray,
        old: np.ndarray,
        new: np.ndarray,
        work: np.ndarray,
    ) -> tuple[float, float]:
        """Σ(φ(t_new; y) − φ(t; y)) summed per row, without the cancellation of two large values.

        ``old`` and ``new`` are the two values of φ; ``work`` a scratch array of the
        rows' length. Also returns the size of what was subtracted, Σ(|old| + |new|)
        (the scale of the change's rounding error).

        A Huber-regression row whose residual stays on one linear piece changes by
        κ·sign(r)·(t_new − t) exactly as the loss does; subtracting the two values of
        κ|r| − κ²/2 lost every digit when |r| was huge (one label of 1e20 gave φ ≈ 1e20,
        whose ulp swamps any decrease: the line search never passed and the fit raised
        after its charge, depending on that one label). Elsewhere the values are
        subtracted as they are (bounded margins for logistic and Huber SVM: |t| ≤ R‖θ‖).
        """
        if self.name in ("logistic", "huber_svm"):  # φ ≥ 0: Σ|φ| = Σφ
            total = float(np.subtract(new, old, out=work).sum())
            return total, float(old.sum()) + float(new.sum())
        out = np.asarray(new - old, dtype=float)
        size_rows = np.abs(old) + np.abs(new)
        kappa = self.width
        r, r_new = t - y, t_new - y
        above = (r > kappa) & (r_new > kappa)
        below = (r < -kappa) & (r_new < -kappa)
        step = t_new - t
        out = np.where(above, kappa * step, np.where(below, -kappa * step, out))
        size_rows = np.where(above | below, np.abs(kappa * step), size_rows)
        return float(out.sum()), float(size_rows.sum())

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
        if self.name == "logistic":  # φ″ = σ(s)σ(−s) = e/(1 + e)², e = e^{−s}, falls in |s|
            e = np.exp(-np.maximum(np.abs(t) - radius, 0.0))
            q = 1.0 / (1.0 + e)
            return np.asarray(e * q * q * (1 + 1e-12))  # a few u, inside the 1e-12
        if self.name == "huber_svm":  # φ″ = c on |1 − y·s| ≤ h, else 0
            gap = np.abs(1 - y * t) - self.width
        else:  # φ″ = 1 on |s − y| ≤ κ, else 0
            gap = np.abs(t - y) - self.width
        return np.where(gap <= radius, self.c, 0.0)


_UNIT = 2.0**-53  # unit roundoff of float64
#: Newton iterations tried (at least) before the provable gradient-descent phase.
_NEWTON_ITERATIONS = 100


def _gamma(count: float) -> float:
    """γₖ = k·u/(1 − k·u): the relative error bound of k rounded operations (Higham)."""
    return count * _UNIT / (1 - count * _UNIT)


def _tree_sum(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Column sums by pairwise folding, and the depth of the addition tree.

    Whatever the row count m, every sum is a binary tree of depth h = ⌈log₂ m⌉, so its
    rounding error is at most γ_h·Σ|terms| (Higham 2002, §4.2) — where a library's
    summation order (BLAS, numpy's blocked loops) only guarantees γ_{m−1}. Each level adds
    the top half of the remaining rows onto the bottom half (contiguous, in place: the
    ``values`` array, a temporary of the caller's, is overwritten); a row goes through at
    most one addition per level, so the depth is the number of levels, h ≤ 63 for any
    row count numpy can index.
    """
    rows = values.shape[0]
    if rows == 0:  # the empty data set: exact zero sums
        return np.zeros(values.shape[1]), 0
    if not (values.flags.c_contiguous and values.flags.writeable):
        values = np.array(values, dtype=float, order="C")
    depth = 0
    while rows > 1:
        half = (rows + 1) // 2  # rows [half, rows) are added onto rows [0, rows − half)
        values[: rows - half] += values[half:rows]
        rows = half
        depth += 1
    return values[0].copy(), depth


@dataclass(frozen=True)
class _Problem:
    """The objective J(θ) = (1/N)Σφ(xᵢᵀθ; yᵢ) + (ridge/2)‖θ‖² + linearᵀθ, N = ``n``."""

    X: np.ndarray
    y: np.ndarray
    loss: _Loss
    ridge: float
    linear: np.ndarray
    n: float


#: The certificate's error sum is taken in any order (BLAS) while γ_{n+c} is at most this.
_ANY_ORDER = 2.0**-20


def _block_rows(columns: int) -> int:
    """Rows per block of the certified sums: a power of two, about 2¹⁹ entries (4 MB)."""
    return max(64, 1 << max(0, (2**19 // max(columns, 1)).bit_length() - 1))


def _levels(count: int) -> int:
    """⌈log₂ count⌉ (0 for one row or none): the depth :func:`_tree_sum` folds ``count`` rows in."""
    return max(count - 1, 0).bit_length()


class _Point(NamedTuple):
    """What :func:`_gradient` computes at θ: t = Xθ, φ′, ĝ and its parts and depth.

    ``error``: with the certificate, the bound on the data part's rounding, summed
    (:func:`_certified_gradient_norm`); else zeros.
    """

    t: np.ndarray
    d1: np.ndarray
    gradient: np.ndarray
    data_part: np.ndarray
    ridge_part: np.ndarray
    depth: int
    error: np.ndarray


def _gradient(
    problem: _Problem,
    theta: np.ndarray,
    t: np.ndarray | None = None,
    bound: bool = False,
    into: np.ndarray | None = None,
) -> _Point:
    """ĝ = pairwise Σφ′ᵢxᵢ / N + ridge·θ + b/N at ``theta``: the certificate's arithmetic.

    The one place the certified gradient's floating-point operations are fixed, shared by
    the certificate (:func:`_certified_gradient_norm`, ``bound``) and the provable descent
    (:func:`_descent`), so the certificate's error bound is a bound on the ĝ that phase
    steps with (the same operations on the same values give the same bits).

    The sums are pairwise, in blocks of B rows (:func:`_block_rows`, a power of two): each
    block is folded by :func:`_tree_sum` in a cache-sized scratch array, then the blocks'
    sums are, so a term goes through at most log₂B + ⌈log₂⌈n/B⌉⌉ = ⌈log₂ n⌉ additions
    (n > B; ⌈log₂ n⌉ in a single block) — the depth of one fold of all n rows, ≤ 63 for
    any row count numpy can index, which the public floor assumes — and their rounding
    is at most γ_h·Σ|terms| (Higham 2002, §4.2), where a BLAS sum's grows with n. No
    n×d temporary (its allocation cost more than the sums).

    With ``bound`` the same pass sums, per block, the certificate's bound on the data
    part's rounding (:func:`_certified_gradient_norm`), from the block's |xᵢ| while it
    is in cache. That sum needs no pairwise order: its n terms |xᵢⱼ|·wᵢ are non-negative,
    so any order of products and additions (BLAS here) computes it within γ_{n+c}·S of
    its exact value S (Higham 2002, Eq. 3.5; c blocks add c − 1 additions), and
    S ≤ computed·(1 + 4γ_{n+c}) (1/(1 − γ) ≤ 1 + 2γ, and the product's rounding) — used
    while γ_{n+c} ≤ 2⁻²⁰, where 1 + 4γ is far inside the floor's 1.02
    (:func:`~._erm_bounds._gradient_error`); beyond (n ≳ 8·10⁹ rows), pairwise like ĝ.
    ``t``: X @ θ if already computed (the certificate bounds its error for any summation
    order, so any product X @ θ will do); else it is computed block by block (into
    ``into`` if given), while the block is in cache for the sums.
    """
    X, y, loss = problem.X, problem.y, problem.loss
    rows, d = X.shape
    compute = t is None
    if t is None:
        t = np.empty(rows) if into is None else into
    size = _block_rows(d)
    count = -(-rows // size)
    depth = _levels(min(size, rows)) + _levels(count)  # every block's, plus the top's
    spread = (_gamma(depth + 2) + _UNIT) * (1 + _gamma(depth + 2))
    error_factor = _gamma(d + 2) * (1 + 1e-12)
    size_theta = np.abs(theta)
    sums = np.empty((count, d))
    inflation = _gamma(rows + count)
    blas = inflation <= _ANY_ORDER  # the error sum in any order (else pairwise)
    errors = np.zeros((count if bound else 0, d))
    scratch = np.empty((min(size, rows), d))
    d1 = np.empty(rows)
    for index in range(count):
        part = slice(index * size, min((index + 1) * size, rows))
        block = scratch[: part.stop - part.start]
        if compute:
            np.matmul(X[part], theta, out=t[part])
        tb, yb = t[part], y[part]
        d1b = loss.slope(tb, yb)
        d1[part] = d1b
        np.multiply(X[part], d1b[:, None], out=block)
        sums[index], _ = _tree_sum(block)
        if bound:
            np.abs(X[part], out=block)
            t_error = error_factor * (block @ size_theta)
            weights = (
                loss.curvature_bound(tb, yb, t_error) * t_error
                + loss.derivative_error(tb, yb, d1b)
                + spread * np.abs(d1b)
            )
            if blas:
                errors[0] += weights @ block
            else:
                np.multiply(block, weights[:, None], out=block)
                errors[index], _ = _tree_sum(block)
    data_part = _tree_sum(sums)[0] / problem.n
    ridge_part = problem.ridge * theta
    error = _tree_sum(errors)[0] * (1 + 4 * inflation if blas else 1.0)
    gradient = data_part + ridge_part + problem.linear
    return _Point(t, d1, gradient, data_part, ridge_part, depth, error)


def _certified_gradient_norm(
    problem: _Problem, theta: np.ndarray, t: np.ndarray | None = None
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

    The data part's two sums — Σᵢ|xᵢ|·(φ′'s error)ᵢ and
    (γ_{h+2} + u)(1 + γ_{h+2})·Σᵢ|xᵢ||φ′ᵢ| — are taken as one pairwise sum of
    |xᵢ|·wᵢ, wᵢ = (φ′'s error)ᵢ + (γ_{h+2} + u)(1 + γ_{h+2})|φ′ᵢ| (h, the depth, is
    known from the row count before summing): non-negative terms, so forming wᵢ (two
    roundings), the products (one) and the sum (γ_h) are relative errors of order 10⁻¹⁴
    of the bound, within the 1 + 1e-6 as the two sums' own roundings were. ĝ and this
    sum come from one pass over the rows (:func:`_gradient` with ``bound``).

    ``t``: X @ θ if already computed.
    """
    return _bound(problem, _gradient(problem, theta, t, bound=True))


def _bound(problem: _Problem, point: _Point) -> float:
    """:func:`_certified_gradient_norm` from :func:`_gradient`'s point with ``bound``."""
    error = (
        point.error / problem.n
        + 3 * _UNIT * np.abs(point.data_part)
        + 4 * _UNIT * np.abs(point.ridge_part)
        + 3 * _UNIT * np.abs(problem.linear)
    )
    return (float(np.linalg.norm(point.gradient)) + float(np.linalg.norm(error))) * (1 + 1e-6)


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


class _Rows:
    """Newton's per-row arrays at one point: t = Xθ, φ, φ′, φ″ (preallocated), and its ĝ.

    ``bound``: the certificate at this point, where it was computed with the point.
    """

    def __init__(self, rows: int) -> None:
        self.t, self.value, self.d1, self.d2 = (np.empty(rows) for _ in range(4))
        self.gradient = np.zeros(0)
        self.bound: float | None = None


def _newton(problem: _Problem, tol: float, iterations: int) -> tuple[np.ndarray, float] | None:
    """Phase 1 of :func:`_minimise`: Newton with a line search; None if not certified.

    It only *steers*: its gradients are BLAS products φ′ᵀX with φ′ from
    :meth:`_Loss.steer` (several times faster than the pairwise ĝ; their rounding, up to
    γ_n·Σ|terms|, is never bounded), its Hessians single precision, mostly on a row
    sample (:class:`_Curvature`). Where the steering gradient is below tol/2, the point
    is judged by the certificate alone (:func:`_certified_gradient_norm`: the pairwise ĝ
    and its error bound, recomputed there from X @ θ): a poor steer costs iterations,
    never a guarantee, and whether this phase certifies decides nothing observable (the
    gradient phase certifies otherwise). Its arrays are allocated once per solve (two
    points: the current one and the line search's candidate, swapped on acceptance).
    """
    X, y, loss, n = problem.X, problem.y, problem.loss, problem.n
    ridge, linear = problem.ridge, problem.linear
    rows, d = X.shape
    theta = np.zeros(d)
    hessian = _Curvature(X)
    here, there = _Rows(rows), _Rows(rows)
    work = (np.empty(rows), np.empty(rows), np.empty(rows))
    smoothness: list[float] = []  # c·Σ‖xᵢ‖²/N + ridge, computed if a step needs it

    def gradient_step(g: np.ndarray) -> np.ndarray:
        if not smoothness:
            smoothness.append(loss.c * float(np.einsum("ij,ij->", X, X)) / n + ridge)
        return g / smoothness[0]

    def parts(th: np.ndarray, point: _Rows, certify: bool = False) -> _Rows:
        # certify: ĝ and the certificate from one pass (the certificate's arithmetic,
        # :func:`_gradient`) instead of the BLAS gradient — near the minimiser, where
        # the candidate is likely the last point, a pass over the rows fewer
        point.bound = None
        if certify:  # X @ θ block by block, with the sums (one pass over the rows)
            known = _gradient(problem, th, bound=True, into=point.t)
            point.gradient, point.bound = known.gradient, _bound(problem, known)
            if point.bound <= tol:  # certified: returned as it is (no line search)
                return point
        elif th.any():
            np.matmul(X, th, out=point.t)
        else:  # Xθ = 0 exactly (the start)
            point.t.fill(0.0)
        loss.steer(point.t, y, (point.value, point.d1, point.d2), work)
        if not certify:
            point.gradient = (point.d1 @ X) / n + ridge * th + linear
        return point

    def change(th: np.ndarray, th_new: np.ndarray, old: _Rows, new: _Rows) -> tuple[float, float]:
        # the objective's change, summed from per-row changes (the objective's own value
        # can be so large — one huge label — that its rounding hides every decrease), and
        # the magnitude of what was summed (the scale of its rounding error)
        total, size = loss.change(old.t, new.t, y, old.value, new.value, work[0])
        squares = float(th_new @ th_new) + float(th @ th)
        terms = (
            total / n,
            ridge / 2 * float(th_new @ th_new - th @ th),
            float(linear @ (th_new - th)),
        )
        magnitude = (
            size / n + ridge / 2 * squares + float(np.abs(linear) @ (np.abs(th_new) + np.abs(th)))
        )
        return sum(terms), magnitude

    def certified(th: np.ndarray, point: _Rows) -> float:  # point: parts(th)
        if point.bound is not None:
            return point.bound
        return _certified_gradient_norm(problem, th, point.t)

    if hessian.every > 1:  # at 0: t = 0, and the first step's gradient from the sample
        # (the rows' φ′ are known there without a pass over X; the estimate only
        # steers the first step, as the sampled Hessian does, and is never certified)
        every = hessian.every
        here.t.fill(0.0)
        loss.steer(here.t, y, (here.value, here.d1, here.d2), work)
        here.gradient = every * (here.d1[::every] @ X[::every]) / n + linear
        here.bound = None
    else:
        parts(theta, here)
    start = float(np.linalg.norm(here.gradient))
    target = tol / 2
    patience = -1  # iterations left after a certificate failed (none yet)
    for _ in range(iterations):
        g = here.gradient
        norm = float(np.linalg.norm(g))
        if norm <= target:
            bound = certified(theta, here)
            if bound <= tol:
                return theta, bound
            target = norm / 2  # rounding hid part of the gradient: go further,
            patience = 30 if patience < 0 else patience  # while the iteration still gains
        if patience == 0:
            return None
        patience -= 1 if patience > 0 else 0
        full = norm <= _FULL_HESSIAN * start
        step = hessian.solve(here.d2 / n, ridge, g, full)
        if step is None:
            step = gradient_step(g)
        s = 1.0
        while s > 1e-10:
            candidate = theta - s * step
            parts(candidate, there, certify=full and s == 1.0)
            if there.bound is not None and there.bound <= tol:
                return candidate, there.bound  # a certified point needs no descent
            delta, magnitude = change(theta, candidate, here, there)
            if delta <= -1e-4 * s * float(g @ step):
                break
            flat = abs(delta) <= 1e-13 * magnitude  # below its precision: judged by ‖g‖
            if flat and float(np.linalg.norm(there.gradient)) < norm:
                break
            s /= 2
        else:
            candidate = theta - gradient_step(g)
            parts(candidate, there)
            delta, magnitude = change(theta, candidate, here, there)
            flat = abs(delta) <= 1e-13 * magnitude
            if delta > 0 and not (flat and float(np.linalg.norm(there.gradient)) < norm):
                return None  # no descent, even judged by ‖g‖: the floating-point floor
        theta, here, there = candidate, there, here
    if float(np.linalg.norm(here.gradient)) <= tol / 2:
        bound = certified(theta, here)
        if bound <= tol:
            return theta, bound
    return None


#: Newton's Hessians use every row once the steering gradient is below this fraction of
#: its value at 0, a row sample before (:class:`_Curvature`).
_FULL_HESSIAN = 1e-3
#: Rows of the Hessian's sample: every k-th row, k = ⌊rows/m⌋ with m = max(_SAMPLE, 64·d)
#: (when k ≥ 2).
_SAMPLE = 8192


class _Curvature:
    """Newton's step H⁻¹g, H = Xᵀ·diag(w)·X + ridge·I, in single precision.

    The product is formed in single precision (half the time of double): H only steers
    the step, whose every candidate is judged by the line search in double and whose end
    is judged by the certificate alone, so an error of ~1e-7·‖H‖ costs at most a slightly
    slower (still superlinear in practice) convergence, never a guarantee. Where the
    single-precision factorisation fails (ridge ≲ 1e-7·‖H‖), the double one is tried.

    Far from the minimiser (``full`` false) the rows are sampled — every k-th row,
    weighted k, about max(``_SAMPLE``, 64·d) of them: an estimate of H within a few per
    cent, which steers about as well as the exact H while the step is still limited by
    the loss's non-linearity; near it every row is used, for Newton's quadratic
    convergence (on 10⁵ rows, d = 20, as many Newton steps as the exact H). The
    sample is fixed (every k-th row), so the path is a deterministic function of the data
    like the rest of the solver. Every row's H is formed block by block (rows cast to
    single precision in a small scratch array): no single-precision copy of X is kept,
    which left less of the cache to X itself.
    """

    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        rows, d = X.shape
        size = max(_SAMPLE, 64 * d)
        self.every = rows // size if rows >= 2 * size else 1
        self.sample = X[:: self.every].astype(np.float32)
        self.block = _block_rows(d)
        self.scratch = np.empty((min(self.block, rows), d), np.float32)
        self.scaled = np.empty((max(len(self.scratch), len(self.sample)), d), np.float32)

    def _gram(self, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Σᵢ wᵢxᵢxᵢᵀ of single-precision rows, in double."""
        scaled = np.multiply(
            rows, weights.astype(np.float32)[:, None], out=self.scaled[: len(rows)]
        )
        return np.asarray(scaled.T @ rows, dtype=float)

    def solve(
        self, weights: np.ndarray, ridge: float, g: np.ndarray, full: bool = True
    ) -> np.ndarray | None:
        """H⁻¹g for the row weights w (φ″/N); None if no Cholesky factor is found."""
        X, d = self.X, self.X.shape[1]
        if full or self.every == 1:
            H = np.zeros((d, d))
            for start in range(0, X.shape[0], self.block):
                part = slice(start, start + self.block)
                rows = self.scratch[: len(X[part])]
                np.copyto(rows, X[part], casting="same_kind")
                H += self._gram(rows, weights[part])
        else:
            H = self._gram(self.sample, weights[:: self.every] * self.every)
        H += ridge * np.eye(d)
        try:
            return np.asarray(linalg.cho_solve(linalg.cho_factor(H), g))
        except (linalg.LinAlgError, ValueError):
            pass
        H = (X.T * weights) @ X + ridge * np.eye(d)
        try:
            return np.asarray(linalg.cho_solve(linalg.cho_factor(H), g))
        except (linalg.LinAlgError, ValueError):
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
        g = _gradient(problem, theta).gradient
        if float(np.linalg.norm(g)) <= tol / 2:
            bound = _certified_gradient_norm(problem, theta)
            if bound <= tol:
                return theta, bound
        theta = theta - g / beta
    return None  # pragma: no cover - excluded by the proof for tol ≥ the floor
