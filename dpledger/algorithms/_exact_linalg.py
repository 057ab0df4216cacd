"""Exact integer (and multiprecision) linear algebra for the smallest-eigenvalue certificate.

The steps of :func:`._eigen.min_eigenvalue_steps` that use no floating point: Rayleigh
quotients and Ritz values of integer vectors (upper bounds on λ_min), Gershgorin's
bound, exact definiteness tests by fraction-free elimination (Bareiss 1968) and the
fixed-point probe whose pivots are the exact pivots of a nearby matrix. Every function
takes symmetric matrices of Python integers (numpy object arrays).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpledger import _mpcontext

__all__ = [
    "VECTOR_BITS",
    "exact_definite",
    "exact_psd",
    "gershgorin",
    "integer_vectors",
    "pencil_top",
    "probe",
    "rayleigh",
    "ritz_upper",
    "shifted",
]

VECTOR_BITS = 62  # float eigenvectors rounded to integers of this many bits


def integer_vectors(vectors: np.ndarray) -> np.ndarray:
    """Float vectors (|entries| ≤ 1) rounded to integers of ≤ 62 bits, as Python ints."""
    rounded = np.rint(np.ldexp(vectors, VECTOR_BITS))
    return np.array([[int(v) for v in row] for row in rounded], dtype=object).reshape(vectors.shape)


def rayleigh(x: np.ndarray, w: np.ndarray) -> Fraction | None:
    """xᵀGx / xᵀx exactly, given w = Gx (an upper bound on μ for any x ≠ 0)."""
    norm = int(x.dot(x))
    return None if norm == 0 else Fraction(int(x.dot(w)), norm)


def ritz_upper(P1: np.ndarray, P0: np.ndarray, digits: int) -> Fraction | None:
    """The exact yᵀP1y / yᵀP0y for an integer y near the pencil's lowest eigenvector.

    With P1 = XᵀGX and P0 = XᵀX this is the Rayleigh quotient of Xy: an upper bound on μ.
    """
    m = P0.shape[0]
    with _mpcontext.context(digits) as ctx:  # this thread's: mpmath.mp is shared by threads
        reduced = _reduced(ctx, P1, P0)
        if reduced is None:
            return None
        Linv, C = reduced
        try:
            values, vectors = ctx.eigsy(C)
        except (ZeroDivisionError, ValueError):
            return None
        lowest = min(range(m), key=lambda i: values[i])
        y = Linv.T * vectors[:, lowest]
        top = max(abs(y[i]) for i in range(m))
        if top == 0:
            return None
        ints = [int(ctx.nint(y[i] / top * 2**VECTOR_BITS)) for i in range(m)]
    vector = np.array(ints, dtype=object)
    denominator = int(vector.dot(P0.dot(vector)))
    if denominator <= 0:
        return None
    return Fraction(int(vector.dot(P1.dot(vector))), denominator)


def pencil_top(P: np.ndarray, Q: np.ndarray, digits: int) -> list[Fraction]:
    """Candidates μ̄ just above the largest eigenvalue of the pencil (P, Q), Q ≻ 0."""
    m = P.shape[0]
    with _mpcontext.context(digits) as ctx:  # this thread's: mpmath.mp is shared by threads
        reduced = _reduced(ctx, P, Q)
        if reduced is None:
            return []
        try:
            values = ctx.eigsy(reduced[1], eigvals_only=True)
        except (ZeroDivisionError, ValueError):
            return []
        top = max(values[i] for i in range(m))
        candidates = []
        for slack in (digits - 10, digits - 16, digits - 24, 8):
            relax = ctx.mpf(10) ** -max(slack, 4)
            candidates.append(_fraction(ctx, top + abs(top) * relax))  # above, toward 0
    return candidates


def _reduced(ctx: Any, A: np.ndarray, B: np.ndarray) -> tuple[Any, Any] | None:
    """(L⁻¹, L⁻¹AL⁻ᵀ) with B = LLᵀ, at the precision of ``ctx``; None if B is not PD."""
    try:
        Linv = ctx.inverse(ctx.cholesky(_mp_matrix(ctx, B)))
    except (ZeroDivisionError, ValueError):
        return None
    return Linv, Linv * _mp_matrix(ctx, A) * Linv.T


def _mp_matrix(ctx: Any, M: np.ndarray) -> Any:
    return ctx.matrix([[ctx.mpf(int(v)) for v in row] for row in M])


def _fraction(ctx: Any, value: Any) -> Fraction:
    """A finite mpmath number as an exact Fraction (``man_exp`` drops the sign)."""
    sign, mantissa, exponent, _ = ctx.mpf(value)._mpf_
    magnitude = Fraction(int(mantissa)) * Fraction(2) ** int(exponent)
    return -magnitude if sign else magnitude


def shifted(G: np.ndarray, tau: Fraction) -> np.ndarray:
    """(G − τI)·den(τ), an integer matrix with the same inertia as G − τI."""
    den = tau.denominator
    M = G * den
    for i in range(G.shape[0]):
        M[i, i] -= tau.numerator
    return M


def gershgorin(G: np.ndarray) -> Fraction:
    """min_i (Gᵢᵢ − Σ_{j≠i} |Gᵢⱼ|) ≤ μ (Gershgorin's disc theorem), exactly."""
    d = G.shape[0]
    return Fraction(min(G[i, i] - sum(abs(G[i, j]) for j in range(d) if j != i) for i in range(d)))


def exact_definite(M: np.ndarray) -> bool:
    """M ≻ 0, exactly: every leading principal minor positive (Sylvester's criterion).

    Fraction-free elimination (Bareiss 1968): the k-th pivot is the k-th leading minor, and
    every division is exact (Sylvester's determinant identity).
    """
    M = M.copy()
    n = M.shape[0]
    previous = 1
    for k in range(n):
        pivot = M[k, k]
        if pivot <= 0:
            return False
        if k + 1 < n:
            column = M[k + 1 :, k]
            M[k + 1 :, k + 1 :] = (
                M[k + 1 :, k + 1 :] * pivot - np.multiply.outer(column, column)
            ) // previous
        previous = pivot
    return True


def exact_psd(M: np.ndarray) -> bool:
    """M ⪰ 0, exactly, for a symmetric integer matrix.

    Symmetric fraction-free elimination with diagonal pivoting: a negative diagonal entry
    refutes; a positive pivot p keeps PSD-ness both ways (M ⪰ 0 ⟺ its Schur complement
    w.r.t. p is ⪰ 0); a matrix with zero diagonal is PSD only if it is zero. Entries are
    the Bareiss minors det M[S∪{a}, S∪{b}] = det M[S,S]·(Schur complement), with
    det M[S,S] > 0, so signs are preserved and each division is exact (Bareiss 1968).
    """
    M = M.copy()
    previous = 1
    while M.shape[0]:
        n = M.shape[0]
        diagonal = [M[i, i] for i in range(n)]
        if min(diagonal) < 0:
            return False
        i = max(range(n), key=diagonal.__getitem__)
        pivot = diagonal[i]
        if pivot == 0:
            return all(v == 0 for v in M.flat)
        keep = [j for j in range(n) if j != i]
        column = M[keep, i]
        M = (M[np.ix_(keep, keep)] * pivot - np.multiply.outer(column, column)) // previous
        previous = pivot
    return True


def probe(G: np.ndarray, tau: Fraction, q: int) -> bool:
    """A fuzzy exact test: True ⇒ μ > τ − η; False ⇒ μ ≤ τ + η; η = 2^q·⌈d²/2⌉.

    ``tau`` must be a multiple of δ = 2^q. N = round(G/δ) − (τ/δ)I (integers; rounding to
    nearest errs by ≤ ½ per entry when q > 0, by 0 otherwise), then symmetric Gaussian
    elimination in integers, each Schur-complement update Nᵢⱼ −= ⌊NᵢₖNₖⱼ/Nₖₖ⌋ computed once
    for i ≤ j. The rounding leaves an error Eᵏ ∈ [0, 1)ᵐˣᵐ, symmetric, in the trailing
    block; adding a matrix to the trailing block adds it to the Schur complement, so by
    induction (and the quotient property of Schur complements) the computed pivots are the
    exact pivots of N + ΔN with ‖ΔN‖₂ ≤ d/2 + Σₖ(d − k − 1) ≤ d²/2 (‖Eᵏ‖₂ ≤ m for m×m).
    All pivots > 0 ⟺ N + ΔN ≻ 0 (Sylvester), so λ_min(N) > −d²/2; a pivot ≤ 0 (or a
    non-positive diagonal entry of a Schur complement) means N + ΔN is not positive
    definite, so λ_min(N) ≤ d²/2. Multiply by δ.
    """
    d = G.shape[0]
    scaled = tau / Fraction(2) ** q
    if scaled.denominator != 1:  # pragma: no cover - callers pass multiples of δ
        raise AssertionError("internal error: probe shift off the grid")
    t = scaled.numerator
    N = G * (1 << -q) if q <= 0 else (G + (1 << (q - 1))) >> q
    rows = [N[i, i:].copy() for i in range(d)]
    for row in rows:
        row[0] -= t
    for k in range(d):
        head = rows[k]
        pivot = head[0]
        if pivot <= 0:
            return False
        tail = head[1:]
        for i in range(1, d - k):
            r = tail[i - 1]
            if r:
                rows[k + i] -= (tail[i - 1 :] * r) // pivot
        if k + 1 < d and min(rows[j][0] for j in range(k + 1, d)) <= 0:
            return False
    return True
