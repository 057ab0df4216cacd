"""The smallest eigenvalue of an exactly known Gram matrix, in grid steps, with a proof.

ADASSP (Wang 2018) releases λ = λ_min(S) of S = XᵀX with Gaussian noise. dpledger knows S
*exactly* — S = G·u with G a symmetric matrix of integers and u a power of two (see
:mod:`._data`) — and its Gaussian mechanism releases on a grid of step γ (a power of two):
it needs the integer k = ⌊λ/γ⌋. A floating-point eigensolver errs by about d·2⁻⁵³·‖S‖; with
n = 10⁹ rows (‖S‖ ≈ 10⁹) that is far more than a useful γ, and a k moved across a grid
edge by rounding lets two neighbouring data sets differ by more than the sensitivity the
mechanism charges. The mechanism therefore charges one extra grid step, which is sound as
long as the k it is given satisfies, for every input,

    (*)   k ∈ {⌊λ/γ⌋ − 1, ⌊λ/γ⌋}.

:func:`min_eigenvalue_steps` returns such a k, and returns ⌊λ/γ⌋ itself whenever it has
certified an interval [lo, hi] ∋ λ inside one grid cell (the usual case).

Why (*) follows from an enclosure. Every step below produces rigorous bounds lo ≤ λ ≤ hi
(exact rationals). If ⌊lo/γ⌋ = ⌊hi/γ⌋ that is ⌊λ/γ⌋. Otherwise, once hi − lo < γ, the
result is k = ⌊lo/γ⌋: k ≤ ⌊λ/γ⌋ as lo ≤ λ; and lo > hi − γ ≥ λ − γ, so
k ≥ ⌊λ/γ − 1⌋ = ⌊λ/γ⌋ − 1. Every branch ends in one of these two situations (the
refinement of step 5 terminates, see :func:`_Search.settle`).

Method (all in units of G: μ = λ_min(G), λ = μ·u, γ_G = γ/u; k = ⌊μ/γ_G⌋).

1. *Exact trivial cases.* d = 1 or G diagonal: μ = min Gᵢᵢ.
2. *Float estimate.* Ã = G·2⁻ᵖ rounded to nearest (|Ã| ≤ 1, so nothing overflows;
   |G·2⁻ᵖ − Ã| ≤ 2⁻⁵³|Ã| + 2⁻⁹⁹⁹ entrywise) and LAPACK's ``?syevr`` for the few smallest
   eigenpairs. Nothing computed here is trusted; it only proposes vectors and shifts.
3. *Upper bound, exact.* hi = xᵀGx / xᵀx for x = the float eigenvector rounded to 62-bit
   integers (Rayleigh: λ_min ≤ any Rayleigh quotient), in Python integers — O(d²).
4. *Lower bounds.*

   a. *Shifted Cholesky, verified a posteriori* (:func:`_cholesky_lower`): R̂ = chol(fl(Ã − cI))
      by LAPACK for a shift c just below the estimate; then, for the exact matrix A,
      A − cI = R̂ᵀR̂ + F, R̂ᵀR̂ ⪰ 0, so λ_min(A) ≥ c − ‖F‖₂ (Weyl's inequality). ‖F‖₂ is
      bounded by the row sums of |fl(Ã − cI) − fl(R̂ᵀR̂)| plus the rounding error of that
      product, γ_d·|R̂ᵀ||R̂| (Higham 2002, §3.5: |fl(AB) − AB| ≤ γ_n|A||B| for conventional
      multiplication in any order of summation, with or without FMA, γ_n = nu/(1 − nu)),
      plus the roundings of Ã and of the shift. R̂ is *not* trusted: a wrong R̂ only gives
      a weaker bound. (We do not use the a-priori bound of Higham's Theorem 10.3 for
      LAPACK's ``dpotrf``: it assumes each rᵢⱼ is obtained by a division, whereas
      OpenBLAS's triangular-solve kernels multiply by a precomputed reciprocal
      (``INV(a) = ONE / a`` in ``kernel/generic/trsm_*copy*.c``), one more rounding; an
      a-posteriori check needs no assumption on how R̂ was computed.) Width measured
      2.5–3.6·d·2⁻⁵³·‖S‖₂.
   b. *Lehmann's bound on the cluster of the m smallest eigenvalues* (:meth:`_Search.lehmann`;
      for m = 1 it is Temple's inequality). With X (d×m) the float eigenvectors as
      integers, a rigorous β ≤ λ_{m+1}(G) from 4a applied to A + σVVᵀ (V = X·2⁻⁶², a
      rank-m PSD update: λ₁(A + σVVᵀ) ≤ λ_{m+1}(A) by Courant–Fischer), a shift ρ < β and
      the exact m×m matrices P = Xᵀ(G − ρ)X, Q = Xᵀ(G − ρ)²X: if −P ≻ 0 and
      μ̄Q − P ⪰ 0 with μ̄ < 0 (both checked in exact integer arithmetic), then
      μ ≥ ρ + 1/μ̄. Its width is quadratic in the residual, ≈ (d·2⁻⁵³‖A‖)²/gap, so it
      certifies when ‖S‖·d·2⁻⁵³ ≫ γ as long as the m ≤ 24 lowest eigenvalues are separated
      from the rest by more than ≈ 16·d·2⁻⁵³·‖A‖.

5. *Fallback* (only if 4 leaves hi − lo ≥ γ_G, i.e. large ‖S‖/γ *and* no such gap; or, for
   d ≤ 48, to settle a straddled grid edge exactly): first Gershgorin's bound (exact,
   O(d²); tight for near-scalar matrices), then a binary search over the grid edges in
   [lo, hi] with a rigorous test "μ ≥ e?": for d ≤ 12 exactly (fraction-free Bareiss
   elimination, :func:`~._exact_linalg.exact_psd`); otherwise a fixed-point symmetric
   elimination of (G − τI)/δ in Python integers whose computed pivots are the *exact*
   pivots of a matrix within ‖·‖₂ ≤ δ·d²/2 of it (:func:`~._exact_linalg.probe`), with
   δ = γ_G·2⁻²⁰/d²: each test answers "μ > τ − η" or "μ ≤ τ + η", η ≤ γ_G·2⁻²⁰. O(d³)
   integer operations per test.

Cost. Common case (4a certifies): one ``?syevr`` for 4 eigenpairs, one Cholesky and one
matrix product in float64, O(d²) Python-integer operations (symmetry check, conversion, one
exact product Gx). Lehmann adds one Cholesky, one product and O(d²·m) integer operations.
The fallback costs ≈ d³/6 Python-integer multiply-floor-divide-subtract triples per test,
measured ≈ 27 ns·d³ (0.2 s at d = 200, 1.7 s at d = 400, ≈ 27 s at d = 1000, ≈ 30 min at
d = 4096), with 1–2 tests when the Rayleigh bound is tight and ≤ 2⌈log₂((hi − lo)/γ_G)⌉ + 2
in the worst case.

Assumptions about the platform: IEEE binary64 arithmetic rounding to nearest, and numpy
matrix products that are conventional (each entry a sum of its n products in some order,
possibly with FMA; true of OpenBLAS, MKL, BLIS and Accelerate, not of Strassen-type
algorithms) — the same assumption as the exact BLAS blocks of :mod:`._data`. Underflow is
covered by an absolute 2⁻¹⁰⁰⁰ per operation (gradual underflow errs by ≤ 2⁻¹⁰⁷⁵,
flush-to-zero by ≤ 2⁻¹⁰²²). Steps 1, 3, 4b's certificate and 5 use only exact integer
arithmetic.

References: N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM
2002 (§2.2 standard model, Lemma 3.1 γ_n, §3.1 inner and §3.5 matrix products);
R. A. Horn & C. R. Johnson, *Matrix Analysis*, 2nd ed., 2013 (§4.2–4.3 Courant–Fischer,
Weyl, interlacing; §7.2 Sylvester's criterion); G. Temple, Proc. R. Soc. A
119 (1928); T. Kato, J. Phys. Soc. Japan 4 (1949); N. J. Lehmann, ZAMM 29 (1949) and
Numer. Math. 5 (1963); B. N. Parlett, *The Symmetric Eigenvalue Problem*, SIAM 1998,
ch. 10; E. H. Bareiss, Math. Comp. 22 (1968); S. M. Rump, BIT 46 (2006) (a-priori
variant of 4a).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import linalg

from dpledger.algorithms._exact_linalg import (
    VECTOR_BITS,
    exact_definite,
    exact_psd,
    gershgorin,
    integer_vectors,
    pencil_top,
    probe,
    rayleigh,
    ritz_upper,
    shifted,
)
from dpledger.errors import InvalidArgumentError

__all__ = ["min_eigenvalue_steps"]

_U = Fraction(1, 2**53)  # unit roundoff of binary64, rounding to nearest
_SLACK = Fraction(1, 2**1000)  # absolute error allowed per float operation (underflow)
_FLOAT_BITS = 1000  # Ã = G·2⁻ᵖ; beyond 2¹⁰⁰⁰ the integers are shifted first
_EXACT_DIM = 12  # exact (Bareiss) tests at grid edges up to this d
_CHEAP_PROBE_DIM = 48  # settle a straddled edge by probes while a probe costs ≲ 5 ms
_PROBE_BITS = 20  # fuzz of a fixed-point probe: η ≤ γ·2⁻²⁰
_CLUSTER_MAX = 24  # largest cluster Lehmann's bound is tried on
_GAP = 16.0  # a cluster ends at a gap of this many error scales


def min_eigenvalue_steps(
    gram: np.ndarray, unit: float | Fraction, granularity: float, *, psd: bool = False
) -> int:
    """The grid index k ∈ {⌊λ/γ⌋ − 1, ⌊λ/γ⌋} of λ = λ_min(gram·unit), γ = granularity; certified.

    Guarantee: for every symmetric integer matrix ``gram`` (any size, any magnitude — the
    computation is in exact integers wherever floating point could not be bounded) and
    powers of two ``unit`` and ``granularity``, the result satisfies (*) above; it equals
    ⌊λ/γ⌋ whenever the certified enclosure of λ lies within one grid cell — always for
    d = 1 or a diagonal matrix, for d ≤ 12 always (exact tests settle a straddled edge),
    for d ≤ 48 unless λ is within γ·2⁻¹⁸ of a grid edge, and otherwise unless λ is within
    the enclosure's width (≈ 3·d·2⁻⁵³·‖S‖ in the common case, far less with Lehmann's
    bound) of a grid edge. Only in these near-edge cases can the result differ between
    platforms (float estimates steer the search); both possible values satisfy (*). See
    the module docstring for the method, the theorems and the cost.

    Args:
        gram: Symmetric d×d matrix of integers (a numpy integer array or an object array of
            Python ints, entries of any size), d ≥ 1.
        unit: The value of one unit of ``gram`` (a positive power of two: a float, or a
            Fraction, which may lie below the float range).
        granularity: The grid step γ (a positive power of two).
        psd: The caller guarantees ``gram`` is positive semidefinite (true of an exact
            Gram sum Σ mᵢmᵢᵀ); then λ ≥ 0 is used, which makes a singular ``gram``'s answer
            exactly 0. A vector with xᵀGx < 0 found on the way raises an error; a non-PSD
            matrix not caught that way voids the guarantee.

    Returns:
        The integer k (a Python int; it may exceed the float range).

    Raises:
        InvalidArgumentError: ``gram`` is not a square symmetric matrix of integers, or
            ``unit`` or ``granularity`` is not a positive power of two.

    Examples:
        >>> import numpy as np
        >>> min_eigenvalue_steps(np.array([[2, 1], [1, 2]]), 1.0, 0.25)  # λ = 1 exactly
        4
        >>> min_eigenvalue_steps(np.array([[5]]), 2.0**-3, 1.0)  # 0.625
        0
    """
    G = _integer_matrix(gram)
    shift = _exponent("unit", unit) - _exponent("granularity", granularity)
    if not isinstance(psd, (bool, np.bool_)):
        raise InvalidArgumentError(f"`psd` must be True or False. Found {psd!r}.")
    return _Search(G, shift, bool(psd)).run()


# -- validation ---------------------------------------------------------------------------


def _integer_matrix(gram: Any) -> np.ndarray:
    """``gram`` as a symmetric object array of Python ints, or a clear error."""
    try:
        array = np.asarray(gram)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(f"`gram` must be a square matrix of integers. {error}") from None
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise InvalidArgumentError(
            f"`gram` must be a non-empty square matrix (d×d). Found shape {array.shape}."
        )
    kind = array.dtype.kind
    if kind in "iu":
        G = array.astype(object)  # numpy integers become Python ints
    elif kind == "O":
        flat = array.ravel().tolist()
        if set(map(type, flat)) <= {int}:
            G = array  # Python ints already (never written to)
        else:
            for index, value in enumerate(flat):
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                    i, j = divmod(index, array.shape[1])
                    raise InvalidArgumentError(
                        f"`gram` must hold integers (exact Gram sums in grid units); entry "
                        f"({i}, {j}) is {value!r} of type {type(value).__name__}."
                    )
            G = np.array([int(v) for v in flat], dtype=object).reshape(array.shape)
    else:
        raise InvalidArgumentError(
            f"`gram` must hold integers (exact Gram sums in grid units, as an integer or "
            f"object array of Python ints). Found dtype {array.dtype}."
        )
    asymmetric = np.not_equal(G, G.T)
    if asymmetric.any():
        i, j = (int(t) for t in np.argwhere(asymmetric)[0])
        raise InvalidArgumentError(
            f"`gram` must be symmetric; entry ({i}, {j}) = {G[i, j]} but ({j}, {i}) = {G[j, i]}."
        )
    return G


def _exponent(name: str, value: Any) -> int:
    """The exponent e with ``value`` = 2**e exactly, or an error naming the argument."""
    if isinstance(value, Fraction):  # exact: a unit below the float range is fine
        p, q = value.numerator, value.denominator
        if p > 0 and (p == 1 or q == 1) and (p * q) & (p * q - 1) == 0:
            return p.bit_length() - q.bit_length()
        raise InvalidArgumentError(f"`{name}` must be a positive power of two. Found {value!r}.")
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InvalidArgumentError(
            f"`{name}` must be a positive power of two (a float). Found {value!r}."
        )
    try:
        number = float(value)
    except OverflowError:
        raise InvalidArgumentError(
            f"`{name}` must be a positive power of two within the float range. Found {value!r}."
        ) from None
    if not (math.isfinite(number) and number > 0):
        raise InvalidArgumentError(f"`{name}` must be a positive power of two. Found {value!r}.")
    mantissa, exponent = math.frexp(number)
    if mantissa != 0.5 or (isinstance(value, (int, np.integer)) and int(value) != number):
        raise InvalidArgumentError(
            f"`{name}` must be a power of two (e.g. 2.0**-40), so that the grid is exact. "
            f"Found {value!r}."
        )
    return exponent - 1


# -- the search ---------------------------------------------------------------------------


class _Search:
    """Bounds lo ≤ μ ≤ hi on μ = λ_min(G), tightened until k is certified.

    Invariant: ``lo`` and ``hi`` are exact rationals with lo ≤ μ ≤ hi (None: unknown yet),
    and ⌊μ/γ_G⌋ ≤ ``cap`` when ``cap`` is set.
    """

    def __init__(self, G: np.ndarray, shift: int, psd: bool) -> None:
        self.G = G
        self.d = int(G.shape[0])
        self.shift = shift  # k = ⌊μ·2^shift⌋
        self.step = Fraction(2) ** -shift  # γ_G
        self.psd = psd
        self.lo: Fraction | None = Fraction(0) if psd else None
        self.hi: Fraction | None = None
        self.cap: int | None = None
        self.first: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0),) * 3

    # bookkeeping

    def cell(self, value: Fraction) -> int:
        """⌊value/γ_G⌋."""
        return math.floor(value / self.step)

    def lower(self, value: Fraction | None) -> None:
        if value is not None and (self.lo is None or value > self.lo):
            self.lo = value

    def upper(self, value: Fraction | None) -> None:
        if value is None:
            return
        if self.psd and value < 0:
            raise InvalidArgumentError(
                "`gram` is not positive semidefinite (a vector x has xᵀGx < 0) although "
                "psd=True was given."
            )
        if self.hi is None or value < self.hi:
            self.hi = value

    def cells(self) -> tuple[int, int] | None:
        if self.lo is None or self.hi is None:
            return None
        top = self.cell(self.hi)
        if self.cap is not None:
            top = min(top, self.cap)
        return self.cell(self.lo), top

    def decided(self) -> bool:
        cells = self.cells()
        return cells is not None and cells[0] == cells[1]

    # stages

    def run(self) -> int:
        G, d = self.G, self.d
        diagonal = [G[i, i] for i in range(d)]
        self.upper(Fraction(min(diagonal)))  # eᵢᵀGeᵢ
        off = G.copy()
        np.fill_diagonal(off, 0)
        if not np.count_nonzero(off):
            self.lo = self.hi  # diagonal: μ = min Gᵢᵢ exactly
            return self.settle()
        self.floating()
        return self.settle()

    def floating(self) -> None:
        """Steps 2–4: float estimates, the exact Rayleigh bound, Cholesky and Lehmann."""
        G, d = self.G, self.d
        A, power, error = _float_matrix(G)
        scale = Fraction(2) ** power  # μ = λ_min(A_exact)·2^power
        rows = float(np.abs(A).sum(axis=1).max())
        spread = (d + 2) * 2.0**-53 * rows  # the scale of float errors, in A's units
        count = min(d, 4)
        estimate = _smallest_pairs(A, count)
        if estimate is None:
            return
        values, vectors = estimate
        X = integer_vectors(vectors[:, :1])
        W = G.dot(X)
        self.first = (vectors[:, 0].copy(), X, W)
        self.upper(rayleigh(X[:, 0], W[:, 0]))
        if self.decided():
            return
        bound = _cholesky_lower(A, error, float(values[0]), spread)
        if bound is not None:
            self.lower(bound * scale)
        if self.decided() or d == 1:
            return
        # Lehmann on the cluster below the first clear gap (m = 1: Temple)
        while True:
            gaps = np.diff(values)
            clear = np.flatnonzero(gaps > _GAP * spread)
            if clear.size or count >= min(d, _CLUSTER_MAX + 1):
                break
            count = min(d, _CLUSTER_MAX + 1, 4 * count)
            estimate = _smallest_pairs(A, count)
            if estimate is None:
                return
            values, vectors = estimate
        if not clear.size:
            return
        m = int(clear[0]) + 1
        if m >= d:
            return
        self.lehmann(A, error, scale, values, vectors, m, rows)

    def lehmann(
        self,
        A: np.ndarray,
        error: Fraction,
        scale: Fraction,
        values: np.ndarray,
        vectors: np.ndarray,
        m: int,
        rows: float,
    ) -> None:
        """Lehmann's lower bound for μ from the m smallest eigenvectors (Temple for m = 1).

        Theorem (Lehmann 1949/1963; Temple 1928 for m = 1). Let X be d×m, ρ real with
        ρ < λ_{m+1}(G), P = Xᵀ(G − ρI)X and Q = Xᵀ(G − ρI)²X. If −P ≻ 0 and
        μ̄Q − P ⪰ 0 for some μ̄ < 0, then λ₁(G) ≥ ρ + 1/μ̄.

        Proof. −P ≻ 0: B = G − ρI is negative definite on the m-dimensional range of X, so
        (Courant–Fischer) B has ≥ m negative eigenvalues; with λ_{m+1} > ρ it has exactly
        m, λ₁ … λ_m < ρ, and B is nonsingular, so BX has rank m and Q ≻ 0. The eigenvalues
        of the pencil (P, Q) are the Ritz values of C = B⁻¹ on the subspace BX (for z = BXy,
        zᵀCz/zᵀz = yᵀPy/yᵀQy); by Cauchy–Poincaré interlacing the largest, μ_m, is at least
        the m-th smallest eigenvalue of C. C's negative eigenvalues are 1/(λᵢ − ρ), i ≤ m,
        the m-th smallest of all being 1/(λ₁ − ρ). μ̄Q − P ⪰ 0 gives μ_m ≤ μ̄ < 0, so
        1/(λ₁ − ρ) ≤ μ̄ < 0 and λ₁ − ρ ≥ 1/μ̄. ∎ For m = 1, x = X: ρ + 1/μ with
        μ = P/Q is Temple's ρₓ − ε²/(ρ − ρₓ) (ρₓ the Rayleigh quotient, ε the residual).

        ρ < λ_{m+1} comes from β ≤ λ₁(A + σVVᵀ) ≤ λ_{m+1}(A) (Courant–Fischer: the minimum
        over x ⊥ range(V) of xᵀAx/xᵀx is ≤ λ_{m+1}(A), and there the PSD term vanishes).
        """
        G, d = self.G, self.d
        if m == 1 and np.array_equal(self.first[0], vectors[:, 0]):
            X, W = self.first[1], self.first[2]
        else:
            X = integer_vectors(vectors[:, :m])
            W = G.dot(X)  # exact
        P0 = X.T.dot(X)
        P1 = X.T.dot(W)
        P2 = W.T.dot(W)
        if m == 1:
            self.upper(rayleigh(X[:, 0], W[:, 0]))
        else:
            self.upper(ritz_upper(P1, P0, self.digits()))
        # β ≤ λ_{m+1}(A): Cholesky bound on A + σVVᵀ, V = X·2⁻⁶² (exact floats)
        V = np.ldexp(X.astype(float), -VECTOR_BITS)
        sigma = 2.0 ** math.ceil(math.log2(2.0 * rows + 1.0))
        outer = V @ V.T
        B = A + sigma * outer
        if not np.all(np.isfinite(B)):
            return
        absV = np.abs(V)
        outer_rows = float((absV @ absV.sum(axis=0)).max())
        gamma_m = _gamma(m)
        B_rows = float(np.abs(B).sum(axis=1).max())
        error_B = (
            error
            + Fraction(sigma) * (_up(outer_rows, d + m + 2) * Fraction(gamma_m) + d * _SLACK)
            + _up(B_rows, d + 1) * _U
            + d * _SLACK
        )
        spread = (d + 2) * 2.0**-53 * B_rows
        beta = _cholesky_lower(B, error_B, float(values[m]), spread)
        if beta is None or self.hi is None:
            return
        beta_G = beta * scale
        if beta_G <= self.hi:
            return
        # a dyadic ρ strictly below β (coarse, to keep the integers short)
        room = beta_G - self.hi
        exponent = math.floor(math.log2(room.numerator) - math.log2(room.denominator)) - 40
        rho = Fraction(math.ceil(beta_G / Fraction(2) ** exponent) - 1) * Fraction(2) ** exponent
        a, den = rho.numerator, rho.denominator
        P = P1 * den - P0 * a  # = P·den
        Q = P2 * den * den - P1 * (2 * a * den) + P0 * (a * a)  # = Q·den²
        if not exact_definite(-P):
            return
        if m == 1:
            self.lower(rho + Fraction(int(Q[0, 0]), int(P[0, 0]) * den))
            return
        # the pencil (P·den, Q·den²) has eigenvalues μ/den; test μ̄′ = μ̄/den on it:
        # μ̄Q − P ⪰ 0 ⟺ μ̄′·(Q·den²) − P·den ⪰ 0 ⟺ num·(Q·den²) − mden·(P·den) ⪰ 0
        for mu in pencil_top(P, Q, self.digits()):
            if mu >= 0:
                return
            if exact_psd(Q * mu.numerator - P * mu.denominator):
                self.lower(rho + 1 / (mu * den))
                return

    def digits(self) -> int:
        """Decimal digits that resolve the grid against the matrix's size."""
        flat = self.G.ravel().tolist()
        ratio = Fraction(max(max(flat), -min(flat)) * self.d + 1) / self.step
        return 30 + max(0, int(math.log10(ratio.numerator) - math.log10(ratio.denominator)))

    # step 5

    def settle(self) -> int:
        """Binary search over the grid edges in [lo, hi] until (*) or exactness is certified.

        Each test at an edge e = m·γ_G either raises lo to e, or lowers hi to ≤ e + 2η
        (η < γ_G/2) — removing every edge above e — or, at the second test of the same e,
        lowers hi below e or ends with lo > e − 3η, hi ≤ e + 2η (width 5η < γ_G). Edges are
        picked in the middle of (⌊lo/γ_G⌋, ⌊hi/γ_G⌋], the first at the top (usually λ is
        just below hi, the Rayleigh bound): at most 2⌈log₂(#edges)⌉ + 2 tests.
        """
        d = self.d
        if self.hi is None:  # pragma: no cover - the diagonal bound always exists
            raise AssertionError("internal error: no upper bound")
        if self.lo is None or (not self.decided() and self.hi - self.lo >= self.step):
            self.lower(gershgorin(self.G))  # O(d²), tight for near-scalar matrices
        exact = d <= _EXACT_DIM
        optional = exact or d <= _CHEAP_PROBE_DIM
        q = -self.shift - _PROBE_BITS - 2 * d.bit_length()  # δ = 2^q ≤ γ_G·2⁻²⁰/d²
        eta = Fraction(2) ** q * ((d * d + 1) // 2)
        probed_above: set[int] = set()
        first = True
        while True:
            cells = self.cells()
            assert cells is not None and self.lo is not None and self.hi is not None
            low, high = cells
            if low >= high:
                if low > high:  # pragma: no cover - would contradict lo ≤ μ ≤ hi
                    raise AssertionError("internal error: empty enclosure")
                return low
            if self.hi - self.lo < self.step and not optional:
                return low
            m = high if first else (low + 1 + high) // 2
            first = False
            edge = m * self.step
            if exact:
                if exact_psd(shifted(self.G, edge)):
                    self.lower(edge)
                else:
                    self.cap = m - 1
                    self.upper(edge)
            elif m not in probed_above:
                probed_above.add(m)
                if probe(self.G, edge + eta, q):
                    self.lower(edge)
                else:
                    self.upper(edge + 2 * eta)
            elif probe(self.G, edge - 2 * eta, q):
                self.lower(edge - 3 * eta)
                return m - 1  # lo > e − 3η, hi ≤ e + 2η: width < γ_G, ⌊lo/γ_G⌋ = m − 1
            else:
                self.upper(edge - eta)


# -- floating point, with rigorous error bounds -------------------------------------------


def _up(value: float, operations: int) -> Fraction:
    """An upper bound on a non-negative quantity that floating point computed as ``value``.

    The computation is a chain of ≤ ``operations`` roundings (sums and products of
    non-negative floats, in any order). Each rounding multiplies by 1 + δ, δ ≥ −u, so the
    exact value is ≤ value·(1 − u)^−k ≤ value·(1 + 2ku) for ku ≤ 1/2 (underflow: the
    callers add their absolute slack).
    """
    if not math.isfinite(value) or operations * _U > Fraction(1, 2):
        raise OverflowError("internal error: an error bound is not finite")
    return Fraction(value) * (1 + 2 * operations * _U)


def _gamma(n: int) -> float:
    """A float ≥ γ_n = nu/(1 − nu) (Higham 2002, Lemma 3.1)."""
    exact = n * _U / (1 - n * _U)
    value = float(exact)
    return value if Fraction(value) >= exact else math.nextafter(value, math.inf)


def _float_matrix(G: np.ndarray) -> tuple[np.ndarray, int, Fraction]:
    """(Ã, p, e): Ã = G·2⁻ᵖ rounded to nearest, |Ã| ≤ 1, and ‖G·2⁻ᵖ − Ã‖₂ ≤ e.

    Entrywise |G·2⁻ᵖ − Ã| ≤ u|Ã| + 2⁻⁹⁹⁹: float(int) rounds to nearest (|x − fl(x)| ≤
    u|fl(x)|) and the scaling by 2⁻ᵖ is exact in the normal range; beyond 2¹⁰⁰⁰ the integers
    are first shifted right (floor), an error < 2⁻¹⁰⁰⁰ in Ã's units, and the scaled value may
    underflow (≤ 2⁻¹⁰²²). The 2-norm is at most the largest absolute row sum of the error.
    """
    d = G.shape[0]
    flat = G.ravel().tolist()
    power = max(int(max(flat)).bit_length(), int(min(flat)).bit_length())  # |G| < 2^power
    if power <= _FLOAT_BITS:
        A = np.ldexp(G.astype(float), -power)
    else:
        A = np.ldexp((G >> (power - _FLOAT_BITS)).astype(float), -_FLOAT_BITS)
    A = np.asarray(A, dtype=float)
    rows = float(np.abs(A).sum(axis=1).max())
    error = _up(rows, d) * _U + d * 2 * Fraction(1, 2**999)
    return A, power, error


def _smallest_pairs(A: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``count`` smallest eigenpairs of the float matrix (estimates only), or None."""
    try:
        values, vectors = linalg.eigh(
            A, subset_by_index=[0, count - 1], driver="evr", check_finite=False
        )
    except (linalg.LinAlgError, ValueError):
        return None
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(vectors))):
        return None
    return np.asarray(values), np.asarray(vectors)


def _cholesky_lower(
    M: np.ndarray, error: Fraction, center: float, spread: float
) -> Fraction | None:
    """A rigorous lower bound on λ_min(M′) for every symmetric M′ with ‖M′ − M‖₂ ≤ ``error``.

    For a float shift c: M_c = fl(M − cI), R̂ = chol(M_c) (LAPACK, not trusted),
    P̂ = fl(R̂ᵀR̂), F̂ = fl(M_c − P̂). Then M′ − cI − R̂ᵀR̂ = (M′ − M) + D + (M_c − P̂) + (P̂ − R̂ᵀR̂)
    with D = (M − cI) − M_c diagonal, |D| ≤ u|diag M_c| (nearest rounding), |M_c − P̂| ≤
    (1 + u)|F̂| and |P̂ − R̂ᵀR̂| ≤ γ_d|R̂ᵀ||R̂| (Higham 2002, §3.5) plus underflow. Since
    R̂ᵀR̂ ⪰ 0, Weyl's inequality gives λ_min(M′) ≥ c − ‖M′ − cI − R̂ᵀR̂‖₂, and the 2-norm of a
    symmetric matrix is at most the largest row sum of any entrywise bound on it. Shifts
    c = center − f·spread are tried for f = 1/4, 1, 4, … until the factorization succeeds —
    at the latest once c < −2·max row sum − 1, where M − cI is strictly diagonally dominant
    by a wide margin and the factorization cannot fail (≤ 30 tries).
    """
    gamma = _gamma(M.shape[0])
    floor = -2.0 * float(np.abs(M).sum(axis=1).max()) - 1.0
    factor = 0.25
    for _ in range(64):
        c = center - factor * spread
        factor *= 4.0
        if not math.isfinite(c):
            return None
        bound = _verified_shift(M, c, gamma)
        if bound is not None:
            return Fraction(c) - bound - error
        if c < floor:
            return None
    return None


def _verified_shift(M: np.ndarray, c: float, gamma: float) -> Fraction | None:
    """A bound on ‖M − cI − R̂ᵀR̂‖₂ for R̂ = chol(fl(M − cI)), or None if that fails."""
    d = M.shape[0]
    shifted = M.copy()
    shifted[np.diag_indices(d)] -= c
    try:
        R = linalg.cholesky(shifted, lower=False, check_finite=False)
    except (linalg.LinAlgError, ValueError):
        return None
    R = np.triu(R)
    if not np.all(np.isfinite(R)):
        return None
    residual = shifted - R.T @ R
    absR = np.abs(R)
    rows = (
        (1.0 + 2.0**-52) * np.abs(residual).sum(axis=1)
        + gamma * (absR.T @ absR.sum(axis=1))
        + 2.0**-53 * np.abs(np.diagonal(shifted))
    )
    top = float(rows.max())
    if not math.isfinite(top):
        return None
    operations = 2 * d + 8
    bound: Fraction = _up(top, operations) + operations * d * _SLACK
    return bound
