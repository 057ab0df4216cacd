"""The certified solver of private ERM: a minimiser whose gradient norm is *proved* small.

Objective and output perturbation (:mod:`dpledger.algorithms.erm`) need more than a
good minimiser: their guarantees rest on ‖∇J(θ̃)‖/N ≤ tol holding for the *exact*
gradient (strong convexity then puts θ̃ within tol/ridge of the exact minimiser,
Iyengar et al. 2019, Alg. 1). So the gradient is recomputed with pairwise sums and its
rounding error bounded term by term (Higham 2002: γₖ, and pairwise sums, §4.2), and the
solver returns only once that certificate is within ``tol``
(:func:`_certified_gradient_norm`). It runs Newton's method with a line search, which
only steers (BLAS gradients, single-precision Hessians on a row sample, a sampled
third-order correction: their accuracy decides the running time, never what is
certified), then, if Newton did not certify,
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

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import linalg

from dpledger._numerics import round_up
from dpledger.algorithms._erm_losses import _UNIT, _Loss
from dpledger.errors import ConvergenceError

__all__ = ["ConvergenceError"]


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
    work: np.ndarray | None = None,
    slopes: np.ndarray | None = None,
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
    ``into`` if given), while the block is in cache for the sums. ``work``: memory for
    the block's scratch (:func:`_scratch`), and ``slopes`` for φ′, where the caller has
    them; the same operations on the same values either way.
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
    scratch = _scratch(work, (min(size, rows), d))
    d1 = np.empty(rows) if slopes is None else slopes
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


def _scratch(
    memory: np.ndarray | None, shape: tuple[int, int], dtype: type = np.float64, start: int = 0
) -> np.ndarray:
    """A C-contiguous array of ``shape`` on the float64 ``memory`` from its entry ``start``.

    A new array where ``memory`` is None or too short. The phases of one solve that never
    run at the same time share one buffer (:func:`_work_size`): fresh memory costs a page
    fault per 4 KB on its first touch, more than the arithmetic on it (about 2 µs a
    fault in a virtual machine: 7 ms of a 21 ms solve on 10⁵ rows, d = 20, before).
    """
    size = shape[0] * shape[1] * np.dtype(dtype).itemsize
    if memory is None or 8 * start + size > 8 * memory.size:
        return np.empty(shape, dtype)
    raw = memory.view(np.uint8)[8 * start : 8 * start + size]
    return raw.view(dtype).reshape(shape)


def _work_size(rows: int, d: int, sample: int = 0) -> int:
    """Float64 entries of the scratch one solve's phases share (:func:`_scratch`).

    They never run at the same time: the certificate's block of B×d (:func:`_gradient`),
    the Hessian's two single-precision blocks, the second as long as the row sample
    (:class:`_Curvature`), and the line search's two per-row arrays (:meth:`_Loss.steer`).
    """
    block = min(_block_rows(d), rows)
    single = -(-block * d // 2) + -(-max(block, sample) * d // 2)
    return max(block * d, single, 2 * rows)


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
    """Newton's per-row arrays at one point: t = Xθ and φ (preallocated), φ′, and its ĝ.

    ``d1``: φ′, in an array the two points share (a point's φ′ is read only to form its
    ĝ, right after it is computed). ``bound``: the certificate at this point, where it
    was computed with the point.
    """

    def __init__(self, rows: int, d1: np.ndarray) -> None:
        self.t, self.value = np.empty(rows), np.empty(rows)
        self.d1 = d1
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
    points: the current one and the line search's candidate, swapped on acceptance; one
    scratch buffer its phases share, :func:`_work_size`).

    For the logistic loss two more steers (:class:`_Curvature`): the first step from 0
    is stretched to the sampled objective's minimum along it (Newton from 0 falls short
    there, where the curvature is largest), and each step with every row's Hessian gets
    Chebyshev's third-order correction, φ‴ from the row sample, which cuts Newton's
    residual ½T[p, p] to its sampling error. The line search judges every step against
    the Newton step's own decrease gᵀH⁻¹g (Armijo), corrected or not. On 10⁵ rows,
    d = 20, the first full step then usually certifies: a pass over the rows fewer, and
    no second full Hessian after a certificate that just missed.
    """
    X, y, loss, n = problem.X, problem.y, problem.loss, problem.n
    ridge, linear = problem.ridge, problem.linear
    rows, d = X.shape
    theta = np.zeros(d)
    every = _sample_every(rows, d)
    memory = np.empty(_work_size(rows, d, -(-rows // every) if every > 1 else 0))
    hessian = _Curvature(X, y, loss, every, memory)
    slopes = np.empty(rows)
    here, there = _Rows(rows, slopes), _Rows(rows, slopes)
    work = (_scratch(memory, (1, rows))[0], _scratch(memory, (1, rows), start=rows)[0])
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
            known = _gradient(problem, th, bound=True, into=point.t, work=memory, slopes=point.d1)
            point.gradient, point.bound = known.gradient, _bound(problem, known)
            if point.bound <= tol:  # certified: returned as it is (no line search)
                return point
        elif th.any():
            np.matmul(X, th, out=point.t)
        else:  # Xθ = 0 exactly (the start)
            point.t.fill(0.0)
        loss.steer(point.t, y, (point.value, point.d1), work)
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
        known = _gradient(problem, th, point.t, bound=True, work=memory, slopes=point.d1)
        return _bound(problem, known)  # _certified_gradient_norm, on the solve's scratch

    if every > 1:  # at 0: t = 0, and the first step's gradient from the sample
        # (the rows' φ′ are known there without a pass over X; the estimate only
        # steers the first step, as the sampled Hessian does, and is never certified)
        here.t.fill(0.0)
        loss.steer_at_zero(y, (here.value, here.d1), work)
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
        step = hessian.solve(here.t, n, ridge, g, full)
        s = 1.0
        if step is None:
            step = gradient_step(g)
            rate = float(g @ step)
        else:
            rate = float(g @ step)  # gᵀH⁻¹g: the Newton step's decrease, Armijo's reference
            if full:
                step = hessian.corrected(here.t, step, n, rate)
            elif not theta.any():
                s = hessian.stretch(step, n, ridge, linear)
        while s > 1e-10:
            candidate = theta - s * step
            parts(candidate, there, certify=full and s == 1.0)
            if there.bound is not None and there.bound <= tol:
                return candidate, there.bound  # a certified point needs no descent
            delta, magnitude = change(theta, candidate, here, there)
            if delta <= -1e-4 * s * rate:
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
#: The first step from 0 is stretched at most this far (:meth:`_Curvature.stretch`).
_STRETCH = 8.0


def _sample_every(rows: int, d: int) -> int:
    """The k of :class:`_Curvature`'s row sample, every k-th row (1: every row, no sample)."""
    size = max(_SAMPLE, 64 * d)
    return rows // size if rows >= 2 * size else 1


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
    which left less of the cache to X itself. The weights w = φ″/N are formed from
    t = Xθ for the rows used only (:meth:`_Loss.curvature`). ``memory``: the solve's
    shared scratch (:func:`_work_size`), for the single-precision blocks.

    The same sample (in double, a view of X: every row without a sample) steers two
    logistic steps further, never what is certified: :meth:`stretch` and
    :meth:`corrected`.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        loss: _Loss,
        every: int,
        memory: np.ndarray | None = None,
    ) -> None:
        self.X, self.y, self.loss, self.every = X, y, loss, every
        rows, d = X.shape
        self.rows = X[::every]  # the sample, in double (a view)
        self.sample = self.rows.astype(np.float32) if every > 1 else X[:0].astype(np.float32)
        self.block = _block_rows(d)
        block = min(self.block, rows)
        self.scratch = _scratch(memory, (block, d), np.float32)
        self.scaled = _scratch(
            memory, (max(block, len(self.sample)), d), np.float32, start=-(-block * d // 2)
        )
        self.H = np.zeros((d, d))  # the last H factorised

    def _gram(self, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Σᵢ wᵢxᵢxᵢᵀ of single-precision rows, in double."""
        scaled = np.multiply(
            rows, weights.astype(np.float32)[:, None], out=self.scaled[: len(rows)]
        )
        return np.asarray(scaled.T @ rows, dtype=float)

    def solve(
        self, t: np.ndarray, n: float, ridge: float, g: np.ndarray, full: bool = True
    ) -> np.ndarray | None:
        """H⁻¹g at the point whose Xθ is ``t`` (w = φ″/N); None if no Cholesky factor."""
        X, y, loss, d = self.X, self.y, self.loss, self.X.shape[1]
        if full or self.every == 1:
            H = np.zeros((d, d))
            for start in range(0, X.shape[0], self.block):
                part = slice(start, start + self.block)
                rows = self.scratch[: len(X[part])]
                np.copyto(rows, X[part], casting="same_kind")
                H += self._gram(rows, loss.curvature(t[part], y[part]) / n)
        else:
            every = self.every
            H = self._gram(self.sample, loss.curvature(t[::every], y[::every]) / n * every)
        H += ridge * np.eye(d)
        step = _cholesky_solve(H, g)
        if step is None:  # the double product (ridge ≲ 1e-7·‖H‖)
            H = (X.T * (loss.curvature(t, y) / n)) @ X + ridge * np.eye(d)
            step = _cholesky_solve(H, g)
        self.H = H
        return step

    def stretch(self, step: np.ndarray, n: float, ridge: float, linear: np.ndarray) -> float:
        """The s in [1, ``_STRETCH``] minimising the sampled objective along θ = −s·step, from 0.

        A few Newton steps on s for the logistic loss (1 for the others): the sample's
        J(s) = (k/N)Σφ(−s·uᵢ) + (ridge/2)s²‖step‖² − s·linearᵀstep, u = (sample)·step.
        Newton's first step from 0 falls short on the logistic loss, whose curvature is
        largest at 0 (φ″(0) = c); the line search judges the stretched step like any.
        """
        if self.loss.name != "logistic":
            return 1.0
        y, weight = self.y[:: self.every], self.every / n
        u = self.rows @ step
        uu = u * u
        squares, tilt = float(step @ step), float(linear @ step)
        s = 1.0
        for _ in range(4):
            t = -s * u
            first = -weight * float(self.loss.slope(t, y) @ u) + ridge * s * squares - tilt
            second = weight * float(self.loss.curvature(t, y) @ uu) + ridge * squares
            move = first / second if second > 0 else math.nan
            if not math.isfinite(move):
                break
            s = min(max(s - move, 1.0), _STRETCH)
        return s

    def corrected(self, t: np.ndarray, step: np.ndarray, n: float, rate: float) -> np.ndarray:
        """The Newton ``step`` (θ ← θ − step, from :meth:`solve`) with Chebyshev's correction.

        After Newton's step p = −H⁻¹g the gradient is ½T[p, p] + O(‖p‖³), T the third
        derivative: (1/N)Σφ‴(tᵢ)(xᵢᵀp)²xᵢ; p − H⁻¹·½T[p, p] leaves O(‖p‖³) plus the
        error of T, here estimated on the row sample (φ‴ of the logistic loss,
        :meth:`_Loss.third`). Kept only where small in H's norm, ‖H⁻¹r‖_H ≤ ½‖p‖_H
        (``rate`` = gᵀH⁻¹g = ‖p‖²_H): the corrected step is then still a descent direction,
        gᵀ(step + H⁻¹r) ≥ ½gᵀH⁻¹g.
        """
        if self.loss.name != "logistic":
            return step
        every = self.every
        u = self.rows @ step
        third = self.loss.third(t[::every], self.y[::every])
        residual = ((0.5 * every / n) * (third * u * u)) @ self.rows
        fix = _cholesky_solve(self.H, residual)
        if fix is None or not float(fix @ residual) <= rate / 4:
            return step
        return np.asarray(step + fix)


def _cholesky_solve(H: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """H⁻¹g by a Cholesky factor of H; None if H or g is not finite or H not positive definite.

    scipy's finiteness checks are done here, once, for the factor and the solve.
    """
    if not (np.isfinite(H).all() and np.isfinite(g).all()):
        return None
    try:
        factor = linalg.cho_factor(H, check_finite=False)
        return np.asarray(linalg.cho_solve(factor, g, check_finite=False))
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
    memory = np.empty(_work_size(*X.shape))  # one scratch for every step
    slopes = np.empty(X.shape[0])
    for _ in range(steps + 1):
        g = _gradient(problem, theta, work=memory, slopes=slopes).gradient
        if float(np.linalg.norm(g)) <= tol / 2:
            point = _gradient(problem, theta, bound=True, work=memory, slopes=slopes)
            bound = _bound(problem, point)  # _certified_gradient_norm, on the same scratch
            if bound <= tol:
                return theta, bound
        theta = theta - g / beta
    return None  # pragma: no cover - excluded by the proof for tol ≥ the floor
