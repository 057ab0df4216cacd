"""Tight numerical accounting with privacy loss distributions (PLD).

A release is represented by a dominating pair (P, Q); its privacy loss L = log(P/Q)
under P determines δ(ε) = E[(1 − e^{ε−L})₊] + P(L = ∞), and the losses of a composition
add (Sommer, Meiser & Mohammadi 2019; Koskela, Jälkö & Honkela 2020; Gopi, Lee & Wutschitz
2021). This module computes, for any composition of supported releases,

* an **upper bound** δ̄(ε): every release is replaced by its *connect-the-dots* PLD on a
  uniform grid of step h (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022): masses on
  grid points whose hockey-stick curve passes through the exact δ at every grid point and
  is linear in e^ε between them. δ(ε) is convex in e^ε, so this curve lies above the true
  one; the discrete PLD is the loss distribution of a genuine pair that dominates the
  release, and domination survives composition;
* a **lower bound** δ̲(ε): every release is replaced by a grid PLD of a pair *dominated*
  by a pair of neighbouring inputs it attains — its outputs merged cell by cell, then
  onto grid points so that each merged loss is exactly a grid point's
  (:func:`dominated`). Merging is a post-processing, so the composition's δ can only
  decrease; unlike rounding every loss down (a bias of up to h per release), merging
  perturbs each loss distribution by O(h²), and the bracket closes like h².

The grid step adapts to the scale of the per-release losses (:meth:`PLDSummary._grid_for`);
:func:`epsilon_bounds` refines it until the bracket is as narrow as asked (``rtol``).

Both are composed in one shot: the grid distributions are zero-padded to a window of N
points, transformed once (real FFT), raised to each release's count, multiplied, and
transformed back. The window is chosen from Chernoff bounds computed with the exact
moment generating function of the discrete PLDs: the mass beyond its top is bounded and
*added* to δ̄ (and its aliasing into the window only adds mass — the safe side); the mass
below its bottom is bounded and subtracted from δ̲. Mass at +∞ (δ of (ε, δ) releases,
truncated tails of single releases) composes as 1 − Π(1 − mᵢ)^{kᵢ}.

Poisson subsampling is accounted in **both** directions (remove: ((1−γ)B + γA ‖ B); add:
(B ‖ (1−γ)B + γA)); each direction is composed separately and the larger δ is reported —
taking only one under-reports ε. Events not supported here (sampling without replacement,
discrete Gaussian, zCDP/mCDP) raise :class:`~dpledger.errors.NotApplicableError`.

Floating point: the grid masses of Gaussian and subsampled-Gaussian releases are
quadrature sums of non-negative terms (small relative error even in the far tails); a
relative margin of 1e-7 of δ covers them. The FFT composition's rounding error is
*bounded* (:func:`_transform_error`: componentwise and normwise FFT error bounds,
propagated through the powers, the product and the inverse transform), and the bound,
summed over the grid points above ε (:meth:`_Composition.rounding_guard`), is added to
δ̄ and subtracted from δ̲. Where it matters (δ below 1e-7, or a guard above 1e-5 of δ)
the composition is repeated on exponentially tilted masses, whose error is small
relative to the δ of interest.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from scipy import fft as sp_fft

from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger._solve import NoSafeValueError, smallest_satisfying
from dpledger._validation import check_int_at_least, check_positive, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant._pairs import (
    AtomsPair,
    GaussianPair,
    LaplacePair,
    MonotoneLoss,
    Pair,
    RRPair,
    SubsampledPair,
    discrete_gaussian_pair,
    discrete_laplace_pair,
)
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_RTOL",
    "MAX_GRID_POINTS",
    "MAX_LOSS",
    "MAX_REFINE",
    "PLDAccountant",
    "PLDSummary",
    "epsilon_bounds",
    "epsilon_lower_bound",
    "set_threads",
]

DEFAULT_GRID = 1e-4
MAX_GRID = 0.05
"""The coarsest grid step accepted: coarser steps make the Chernoff window meaningless."""


def check_grid(grid: Any) -> float:
    """A grid step in (0, MAX_GRID]."""
    value = check_positive("grid", grid)
    if value > MAX_GRID:
        raise InvalidArgumentError(
            f"`grid` must be at most {MAX_GRID} (a loss discretisation step; the default is "
            f"{DEFAULT_GRID}). Found {grid!r}."
        )
    return value


def _sqrt_directed(value: Fraction, kind: str) -> float:
    """√value rounded up for upper bounds, down for lower bounds (a few ulps either way)."""
    root = math.sqrt(float(value))
    step = math.inf if kind == "upper" else -math.inf
    return math.nextafter(math.nextafter(root, step), step)


"""Default loss-grid step h."""

MAX_GRID_POINTS = 1 << 24
"""Largest number of grid points one PLD may allocate (a single release or a window).

16,777,216 points of float64 are 128 MiB per array; a composition holds a few such arrays
per direction, so the method stays well within 2 GB. A composition whose losses span more
(long runs: the window grows with the count; large per-release ε) raises
:class:`~dpledger.errors.NotApplicableError` *before* allocating, and ``method="auto"``
answers with the methods that need no grid (RDP, GDP, …)."""

MAX_LOSS = 700.0
"""Largest privacy loss a grid may hold: e^L must stay finite in float64 (e^709.78 overflows).

A release whose grid reaches beyond it is refused (:class:`NotApplicableError`); its ε is
then far beyond any meaningful guarantee and the closed-form methods answer."""

_TAIL = 1e-18
"""Largest P-mass left above a single release's grid range (moved to +∞ by connect-the-dots).

For queries at small δ the tail is made finer (:func:`_release_tail`), so that the mass at
+∞ it creates — about the number of releases times the tail — stays far below δ: a fixed
1e-18 put a floor of 2e-18 under δ̄ for 100 Gaussians, and ε(1e-18) came out infinite.
Below the grid, P-mass is moved to the first grid point (valid, no floor), and there a
float tail cannot be resolved much below 1e-17 anyway."""


@dataclass(frozen=True)
class _Discrete:
    """A finite-support grid PLD: masses at losses (start + i)·h, and mass at +∞."""

    start: int
    masses: np.ndarray
    infinite: float


def _check_grid(points: float, top_loss: float, what: str) -> None:
    """Refuse, before allocating, a grid beyond :data:`MAX_GRID_POINTS` or :data:`MAX_LOSS`."""
    if not points <= MAX_GRID_POINTS:
        raise NotApplicableError(
            f"method 'pld' would need {points:.3g} grid points for {what}, more than "
            f"MAX_GRID_POINTS = {MAX_GRID_POINTS}; use a coarser grid, or method='auto' "
            "(which then uses the closed-form methods)."
        )
    if not abs(top_loss) <= MAX_LOSS:
        raise NotApplicableError(
            f"method 'pld' cannot hold privacy losses up to {top_loss:.4g} for {what} "
            f"(beyond MAX_LOSS = {MAX_LOSS}, e^L overflows); use method='auto'."
        )


def _grid_range(pair: Pair, h: float, tail: float = _TAIL) -> tuple[int, int]:
    """Grid indices covering the losses of ``pair``.

    Up to a P-mass of ``tail`` above the grid and :data:`_TAIL` below it.

    Raises:
        NotApplicableError: The range exceeds :data:`MAX_GRID_POINTS` or :data:`MAX_LOSS`.
    """
    lo, hi = pair.support
    if math.isinf(hi):
        # smallest t with P(L ≥ t) ≤ tail (bisection on a doubling bracket)
        t = 1.0
        while float(pair.p_at_least(np.array([t]))[0]) > tail:
            t *= 2
        a, b = -t if t <= 1 else t / 2, t
        for _ in range(80):
            m = (a + b) / 2
            if float(pair.p_at_least(np.array([m]))[0]) > tail:
                a = m
            else:
                b = m
        hi = b
    if math.isinf(lo):
        t = -1.0
        while 1.0 - float(pair.p_at_least(np.array([t]))[0]) > _TAIL:
            t *= 2
        a, b = t, t / 2 if t < -1 else 1.0
        for _ in range(80):
            m = (a + b) / 2
            if 1.0 - float(pair.p_at_least(np.array([m]))[0]) > _TAIL:
                b = m
            else:
                a = m
        lo = a
    _check_grid((hi - lo) / h + 3, max(abs(lo), abs(hi)), f"one release ({type(pair).__name__})")
    return math.floor(lo / h) - 1, math.ceil(hi / h) + 1


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(4)
_X_STEP = 0.05  # largest quadrature sub-interval in the output coordinate x


@dataclass(frozen=True)
class _Nodes:
    """Quadrature nodes of a monotone pair over the grid cells (see below)."""

    cell: np.ndarray  # per sub-interval: −1 below ε₀, k for (εₖ, εₖ₊₁], n − 1 above
    w: np.ndarray  # Q-mass of each node (sub-interval × node)
    loss: np.ndarray  # L at each node
    eps: np.ndarray  # the grid losses ε₀ … ε_{n−1}


def _monotone_nodes(shape: MonotoneLoss, j0: int, j1: int, h: float) -> _Nodes:
    """4-point Gauss–Legendre nodes over the grid cells of a monotone pair.

    The nodes lie on sub-intervals of the output x, each inside one loss cell and at
    most 0.05 wide (where the integrands below are smooth).
    """
    n = j1 - j0 + 1
    eps = np.arange(j0, j1 + 1) * h
    x_lo, x_hi = shape.x_range
    edges = np.clip(shape.inverse(eps), x_lo, x_hi)
    if not shape.increasing:
        edges = edges[::-1]
    uniform = np.linspace(x_lo, x_hi, math.ceil((x_hi - x_lo) / _X_STEP) + 1)
    points = np.insert(edges, np.searchsorted(edges, uniform), uniform)  # both sorted
    left, right = points[:-1], points[1:]
    keep = right > left
    left, right = left[keep], right[keep]
    half = (right - left) / 2
    mid = (left + right) / 2
    x = mid[:, None] + half[:, None] * _GL_NODES
    w = shape.q_density(x) * (half[:, None] * _GL_WEIGHTS)
    if shape.increasing:
        cell = np.searchsorted(edges, mid, side="right") - 1
    else:  # edges reversed: position p in the reversed array is cell n − 1 − p
        cell = n - 1 - np.searchsorted(edges, mid, side="right")
    return _Nodes(np.clip(cell, -1, n - 1), w, shape.loss(x), eps)


def _connect_the_dots_monotone(shape: MonotoneLoss, j0: int, j1: int, h: float) -> _Discrete:
    """Connect-the-dots masses as integrals of non-negative functions (no cancellation).

    In e^L-space the connect-the-dots PLD moves each Q-mass at loss ℓ ∈ (εₖ, εₖ₊₁] to the
    two grid points, linearly in e^ℓ (a mean-preserving spread, so every hockey-stick value
    can only grow): the fraction t = (e^{ℓ−εₖ} − 1)/(e^h − 1) goes up and 1 − t down;
    P-mass at a grid point is e^{εₖ} times its Q-mass. Below the grid, P-mass goes to the
    first point; above it, Q-mass goes to the last point and the P-excess
    E_Q[(e^L − e^{ε_last})₊] to +∞. The Q-integrals are quadrature sums
    (:func:`_monotone_nodes`) of non-negative terms, so the masses have small *relative*
    error even far in the tails. (Second differences of δ(ε), used for other pairs, lose
    ~1e-12 absolute per point — more than the tail masses themselves, enough to put a
    composed δ of 1e-9 below the truth.)
    """
    nodes = _monotone_nodes(shape, j0, j1, h)
    cell, w, loss, eps = nodes.cell, nodes.w, nodes.loss, nodes.eps
    n = len(eps)
    below, above = cell == -1, cell == n - 1
    k = np.clip(cell, 0, n - 2)
    em1h = math.expm1(h)
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.expm1(loss - eps[k][:, None])  # ℓ − εₖ ∈ [0, h] up to rounding
        np.clip(t / em1h, 0.0, 1.0, out=t)
        up = np.einsum("ij,ij->i", w, t)
        # 1 − t loses ~1e-16 absolute where t ≈ 1: ~1e-16 of the cell's mass, harmless
        down = w.sum(axis=1) - up
        edge_rows = below | above
        up[edge_rows] = 0.0
        down[edge_rows] = 0.0
        masses = (np.bincount(k, down, n) + np.bincount(k + 1, up, n)) * np.exp(eps)
        masses[0] += float(np.sum(w[below] * np.exp(loss[below])))
        top = math.exp(eps[-1])
        masses[-1] += top * float(np.sum(w[above]))
        excess = w[above] * top * np.expm1(loss[above] - eps[-1])
        infinite = float(np.sum(np.clip(np.nan_to_num(excess, posinf=1.0), 0.0, None)))
    return _Discrete(j0, masses, min(1.0, infinite))


def _connect_the_dots_atoms(pair: AtomsPair, j0: int, j1: int, h: float) -> _Discrete:
    """Connect-the-dots masses of a pair with finitely many losses, atom by atom.

    An atom with P-mass p at loss ℓ ∈ [εₖ, εₖ₊₁] is spread, linearly in e^ℓ, to the two
    grid points (as in :func:`_connect_the_dots_monotone`): P-mass
    p·(e^{h−d} − 1)/(e^h − 1) to εₖ and p·e^{h−d}(e^d − 1)/(e^h − 1) to εₖ₊₁, d = ℓ − εₖ.
    Every term is non-negative, so no mass is lost to cancellation.
    """
    n = j1 - j0 + 1
    k = np.clip(np.floor(pair.losses / h).astype(np.int64) - j0, 0, n - 2)
    d = np.clip(pair.losses - (j0 + k) * h, 0.0, h)
    em1h = math.expm1(h)
    down = pair.p * np.expm1(h - d) / em1h
    up = pair.p * np.exp(h - d) * np.expm1(d) / em1h
    masses = np.bincount(k, down, n) + np.bincount(k + 1, up, n)
    return _Discrete(j0, masses, pair.infinite_mass)


def connect_the_dots(pair: Pair, h: float, tail: float = _TAIL) -> _Discrete:
    """The dominating grid PLD of ``pair`` (Doroshenko et al. 2022), as described above.

    ``tail``: the P-mass allowed above the grid (it goes to +∞).
    """
    j0, j1 = _grid_range(pair, h, tail)
    shape = pair.monotone()
    if shape is not None:
        return _connect_the_dots_monotone(shape, j0, j1, h)
    if isinstance(pair, AtomsPair):
        return _connect_the_dots_atoms(pair, j0, j1, h)
    eps = np.arange(j0, j1 + 1) * h
    delta = pair.hockey(eps)
    delta = np.maximum.accumulate(delta[::-1])[::-1]  # enforce monotonicity (rounding)
    ex = np.exp(eps)
    slopes = np.diff(delta) / np.diff(ex)  # s_i on [ε_i, ε_{i+1}]
    s_minus = (delta[0] - 1.0) / ex[0]  # chord from (0, 1) to the first dot
    all_slopes = np.concatenate([[s_minus], slopes, [0.0]])
    masses = ex * np.diff(all_slopes)
    # Rounding in the second differences can leave masses of order 1e-13 below zero;
    # clipping them to zero only *adds* mass, which can only raise δ (the safe side).
    masses = np.clip(masses, 0.0, None)
    return _Discrete(j0, masses, min(1.0, float(delta[-1])))


def _at_most_one(d: _Discrete) -> _Discrete:
    """Scale a lower-bound grid PLD so that its finite mass is at most 1 − (mass at ∞).

    Issue 10 item 12b: quadrature leaves the total at 1 + 2e-16; the composition raises
    it to the count's power, and the excess (k·2e-16) comes out of the inverse transform
    as a uniform positive floor over the whole window — about 1e-19 per point, 1e-13
    summed above ε — which the noise guard (it sees negative values only) cannot detect.
    That spurious mass put lower bounds at δ = 1e-15 above the exact ε. Removing P-mass
    only lowers δ, so scaling down is valid for a lower bound.
    """
    cap = 1.0 - d.infinite
    total = math.fsum(d.masses)
    if total <= cap:
        return d
    masses = d.masses * (cap / total)
    while math.fsum(masses) > cap:
        masses = masses * (1.0 - 2.0**-52)
    return _Discrete(d.start, masses, d.infinite)


def _cell_atoms_monotone(
    shape: MonotoneLoss, j0: int, j1: int, h: float
) -> tuple[np.ndarray, np.ndarray]:
    """The grid cells of a monotone pair merged into single outputs: (losses, P-masses).

    Cell k holds the outputs whose loss is in (εₖ, εₖ₊₁]; reporting only the cell is a
    post-processing of the release, so the pair of cell probabilities (P(cell), Q(cell))
    is dominated by the release's pair. Its loss ℓₖ = log(P(cell)/Q(cell)) lies in the
    cell. P(cell) and Q(cell) are quadrature sums of non-negative terms
    (:func:`_monotone_nodes`), accurate far into the tails. Outputs above the grid form
    one more cell (its loss is then rounded down to the last point, see
    :func:`_merge_onto_grid`); outputs below the grid are dropped (less P-mass can only
    lower every δ of the composition).
    """
    nodes = _monotone_nodes(shape, j0, j1, h)
    n = len(nodes.eps)
    keep = nodes.cell >= 0
    cell = nodes.cell[keep]
    with np.errstate(over="ignore"):
        p_rows = (nodes.w[keep] * np.exp(nodes.loss[keep])).sum(axis=1)
    q_rows = nodes.w[keep].sum(axis=1)
    p = np.bincount(cell, p_rows, n)
    q = np.bincount(cell, q_rows, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        losses = np.log(p) - np.log(q)
    # the exact merged loss lies in its cell; quadrature can put it a rounding error
    # outside: clip into the cell (and the top cell, unbounded above, down to its point)
    losses = np.clip(
        np.nan_to_num(losses, nan=-np.inf), nodes.eps, np.append(nodes.eps[1:], nodes.eps[-1])
    )
    good = np.isfinite(p) & (p > 0)
    return losses[good], p[good]


def _cell_atoms(pair: Pair, j0: int, j1: int, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(losses, P-masses) of a post-processing of ``pair`` with at most one atom per cell.

    Monotone pairs: :func:`_cell_atoms_monotone`. Pairs with finitely many losses: their
    own atoms (exact). Other pairs (Laplace): the cells [εₖ, εₖ₊₁) merged as above, with
    P(cell) and Q(cell) from differences of P(L ≥ t) and Q(L ≥ t) — their masses are of
    the order of h there (bounded losses, no far tails), so the differences keep ~12 digits.
    """
    shape = pair.monotone()
    if shape is not None:
        return _cell_atoms_monotone(shape, j0, j1, h)
    if isinstance(pair, AtomsPair):
        return pair.losses, pair.p
    if isinstance(pair, RRPair):
        atoms = sorted(pair._atoms())
        return np.array([a[0] for a in atoms]), np.array([a[1] for a in atoms])
    edges = np.arange(j0, j1 + 2) * h
    p_tail = np.asarray(pair.p_at_least(edges), dtype=float)
    q_tail = np.asarray(pair.q_at_least(edges), dtype=float)
    p = -np.diff(p_tail)
    q = -np.diff(q_tail)
    p[-1] += p_tail[-1]  # above the range: rounded down later
    # one-sided: the tails are computed to a few units in the last place and their
    # difference adds one more, so P(cell) ≥ p − e_p and Q(cell) ≤ q + e_q with
    # e = 8u·(sum of the two tails) — a cell mass of order h loses ~u/h relative, which
    # the bound absorbs (lowering P-mass and loss only lowers every δ of a composition).
    # The exact merged loss lies in the cell, so clipping into it stays on the safe side.
    unit = 2.0**-53
    p = np.clip(p - 8 * unit * (p_tail[:-1] + p_tail[1:]), 0.0, None)
    q = np.clip(q, 0.0, None) + 8 * unit * (q_tail[:-1] + q_tail[1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        losses = np.log(p) - np.log(q)
    losses = np.clip(np.nan_to_num(losses, nan=-np.inf), edges[:-1], edges[1:])
    good = p > 0
    return losses[good], p[good]


_CELL_LOSS_ERROR = 2e-11
"""Margin for the error of a monotone pair's merged cell loss log(P(cell)/Q(cell)).

Those cells' masses are quadrature sums (:func:`_cell_atoms_monotone`); against 40-digit
mpmath cell probabilities of Gaussian and subsampled-Gaussian pairs the loss error is
about 1e-15 (a test checks ≤ 1e-13). Like the transform's rounding guard it is an
observed bound with a wide margin, **not a proof** (a Gauss–Legendre remainder bound
would make it one). The lower end of a composition of K releases is lowered by K times
it. Cells from tail differences (Laplace-like pairs, :func:`_cell_atoms`) do not rely on
it: their masses carry a one-sided rounding bound of their own."""

_ROUND_FRACTION = 1 / 32
"""A gathered group within this fraction of a step above a grid point is rounded down to it
(:func:`_merge_onto_grid`) when the next atom cannot balance it."""


def _round_down(target: int, h: float, balance: float, size: float, terms: int, mass: float) -> int:
    """The grid index at or below the merged loss ε_t − log1p(balance/mass) of a group.

    A margin for the balance's rounding is added first, so that the index is never above
    the true merged loss.
    """
    excess = (max(balance, 0.0) + 1e-15 * size * (terms + 4)) / mass
    merged = target * h - math.log1p(excess)
    index = math.floor(merged / h)
    while index * h > merged:
        index -= 1
    while (index + 1) * h <= merged:
        index += 1
    return index


def _merge_onto_grid(losses: np.ndarray, p: np.ndarray, j0: int, n: int, h: float) -> np.ndarray:
    """Grid masses of a pair *dominated* by the atoms (losses, P-masses), none of them lost.

    A sweep upwards through the atoms (sorted by loss) merges them into grid points: the
    atoms gathered for grid point ε_t (some below it, then part of one above it) are
    reported as one output whose loss is exactly ε_t — merging outputs, or a random part
    of one, is a post-processing, so the result is dominated by the atoms' pair (by the
    data-processing inequality; in the language of Blackwell's theorem, the likelihood
    ratio's law under Q shrinks in the convex order). Merged losses are
    −log E_P[e^{−L}] of what is merged, so the part of the atom above is chosen to make
    Σ p(e^{ε_t − ℓ} − 1) = 0; the split takes slightly *more* of the atom above than the
    float solution (a margin over the sum's rounding), so that the merged loss is at
    least ε_t — the loss placed on the grid is never above the true one (rounding a loss
    down only lowers every δ of a composition). The remainder of the split atom starts the
    next grid point ⌈ℓ/h⌉. What is gathered at the end, below its grid point, goes to the
    grid point below its merged loss (rounded down). A heavy atom (the next atom cannot
    balance it: an atom of a Laplace or randomized-response pair) would otherwise
    absorb all the mass above it: where its group sits within h/32 above a grid point
    it is rounded down there instead.

    Unlike rounding every loss down to the grid (a shift of up to h per release, K·h in a
    composition of K), merging preserves E_Q[P/Q] and perturbs the loss distribution by
    O(h²) per release, like connect-the-dots on the other side (Doroshenko et al. 2022):
    the lower bound converges like the upper one.
    """
    out = [0.0] * n
    top = j0 + n - 1
    target = 0  # absolute grid index of the point being gathered for
    gathered = 0.0  # P-mass gathered for it
    exact = 0.0  # … of which at the point itself
    balance = 0.0  # Σ p(e^{ε_target − ℓ} − 1) of what is gathered (> 0: merged loss below)
    size = 0.0  # Σ |terms| of the balance (its rounding is below 1e-15·size·terms)
    terms = 0
    started = False

    def close_below() -> None:
        # emit the group without balancing it: what lies at the point stays there, the
        # rest (merged) is rounded down to the grid point below its merged loss
        if exact > 0.0:
            out[target - j0] += exact
        below = gathered - exact
        if below > 0.0:
            index = _round_down(target, h, balance, size, terms, below)
            if index >= j0:
                out[min(index, top) - j0] += below

    # losses above the last grid point are rounded down to it, and losses within 1e-9·h
    # above a grid point (float noise of an atom that lies on it) down to that point:
    # rounding a loss down is valid for a lower bound
    clipped = np.minimum(losses, top * h)
    floor = np.floor(clipped / h) * h
    floor = np.where(floor > clipped, floor - h, floor)
    clipped = np.where(clipped - floor <= 1e-9 * h, floor, clipped)
    for loss, mass in zip(clipped.tolist(), p.tolist(), strict=True):
        while mass > 0.0:
            if not started:
                # the smallest grid point at or above the loss (float division can be off
                # by one either way)
                target = min(math.ceil(loss / h), top)
                while target * h < loss and target < top:
                    target += 1
                while (target - 1) * h >= loss:
                    target -= 1
                gathered, exact, balance, size, terms, started = 0.0, 0.0, 0.0, 0.0, 0, True
            c = mass * math.expm1(max(target * h - loss, -MAX_LOSS))  # < 0: atom above
            margin = 1e-15 * (size + abs(c)) * (terms + 4)
            below = gathered - exact
            if c < 0.0 and balance + c >= -margin and below > 0.0:
                # the whole atom above would not balance the group (a heavy atom below):
                # where the group sits just above a grid point, round it down there
                # instead of merging ever more mass into it
                index = _round_down(target, h, balance, size, terms, below)
                merged = target * h - math.log1p(max(balance, 0.0) / below)
                if merged - index * h <= _ROUND_FRACTION * h:
                    close_below()
                    started = False
                    continue
            if c >= 0.0 or balance + c >= -margin:
                # below the point, or not (safely) over-balancing: gather it all, go on
                gathered += mass
                if c == 0.0:
                    exact += mass
                balance += c
                size += abs(c)
                terms += 1
                break
            part = (balance + margin) / -c  # in (0, 1): the share of the atom to merge
            out[target - j0] += gathered + part * mass
            mass *= 1.0 - part
            started = False  # the remainder starts the next grid point
    if started and gathered > 0.0:
        close_below()
    return np.array(out)


def dominated(pair: Pair, h: float, tail: float = _TAIL) -> _Discrete:
    """A grid PLD *dominated* by ``pair`` (a post-processing of it): for lower bounds.

    The cells of the grid are merged into single outputs (:func:`_cell_atoms`), then the
    cell atoms into grid points (:func:`_merge_onto_grid`); both steps are
    post-processings, so every δ of any composition of these PLDs is at most the true
    one. The finite mass is scaled to at most 1 − (mass at ∞) (see :func:`_at_most_one`).
    ``tail``: the P-mass allowed above the grid (rounded down to its last point; a finer
    tail lets the lower end resolve small δ).
    """
    j0, j1 = _grid_range(pair, h, tail)
    losses, p = _cell_atoms(pair, j0, j1, h)
    masses = _merge_onto_grid(losses, p, j0, j1 - j0 + 1, h)
    return _at_most_one(_Discrete(j0, masses, pair.infinite_mass))


def _pairs(atom: ev.Event, kind: str = "upper") -> list[Pair]:
    """The dominating pair(s) of one release; two for subsampling (remove, add).

    For ``kind="lower"`` the pair must be *attained* by the release (a lower bound on its
    ε). The pairs differ for the discrete Laplace, whose upper bound is the ε-DP worst case
    (randomized response) and whose lower bound is a one-dimensional integer shift; the
    discrete Gaussian and sampling without replacement have lower-bound pairs only (no
    dominating pair is available for them here).
    """
    pure = getattr(atom, "epsilon", None)  # PureDP, ApproxDP, Laplace, RR, DiscreteLaplace
    if isinstance(pure, float) and not pure <= MAX_LOSS:
        raise NotApplicableError(
            f"method 'pld' cannot hold the privacy loss {pure!r} of {atom!r} (beyond "
            f"MAX_LOSS = {MAX_LOSS}, e^L overflows); use method='auto'."
        )
    if isinstance(atom, ev.Gaussian):
        return [GaussianPair(atom.mu)]
    if isinstance(atom, ev.Laplace):
        return [LaplacePair(atom.epsilon)]
    # Discrete noise on an integer statistic: the largest integer shift ⌊Δ⌋ is attained
    # (a lower bound in any dimension). In one dimension it also DOMINATES every smaller
    # shift: both families have monotone likelihood ratios (p(x − s)/p(x) is non-decreasing
    # in x), so the Neyman–Pearson tests of P₀ against every Pₛ are the same threshold
    # tests, whose power grows with s (Pₛ is a shift); the trade-off curve of (P₀, P_⌊Δ⌋)
    # is therefore below that of every (P₀, Pₛ), i.e. its hockey-stick curve is above.
    # Negative shifts and the reversed pair follow by symmetry.
    exact_1d = getattr(atom, "dimension", None) == 1
    if isinstance(atom, ev.DiscreteLaplace) and (kind == "lower" or exact_1d):
        dl_pair = discrete_laplace_pair(atom.scale, math.floor(atom.sensitivity))
        if dl_pair is not None:
            return [dl_pair]
    if isinstance(atom, ev.DiscreteGaussian) and (kind == "lower" or exact_1d):
        pair = discrete_gaussian_pair(atom.sigma, math.floor(atom.sensitivity))
        if pair is not None:
            return [pair]
    if isinstance(atom, ev.SampledWithoutReplacement) and kind == "lower":
        # Attained pairs: the replaced record z shifts the statistic, every other record
        # is neutral, so the batch without z releases exactly what the batch with z′ does:
        # (γA + (1−γ)B, B) and its reverse — the Poisson pairs at rate γ = b/n.
        rate = atom.sample_size / atom.population
        return _pairs(ev.PoissonSampled(atom.event, rate=rate), kind)
    if isinstance(atom, ev.BoundedRange):
        if kind == "lower":
            raise NotApplicableError(
                "no attained pair is known for an ε-bounded-range release (its worst case "
                "is not randomized response: Dong, Durfee & Rogers 2020)."
            )
        return [RRPair(atom.epsilon)]  # ε-BR ⇒ ε-DP: dominated by randomized response
    if isinstance(atom, (ev.PureDP, ev.DiscreteLaplace)):
        return [RRPair(atom.epsilon)]
    if isinstance(atom, ev.RandomizedResponse):
        return [RRPair(atom.epsilon, atom.categories)]
    if isinstance(atom, ev.ApproxDP):
        return [RRPair(atom.epsilon, 2, atom.delta)]
    if isinstance(atom, ev.PoissonSampled):
        inner = ev.flatten(atom.event)
        if len(inner) != 1:
            mu2 = Fraction(0)
            for sub, count in inner.items():
                if not isinstance(sub, ev.Gaussian):
                    raise NotApplicableError(
                        "method 'pld' subsamples a single release, or a composition of "
                        f"Gaussians; found {atom.event!r}."
                    )
                mu2 += count * (Fraction(sub.sensitivity) / Fraction(sub.sigma)) ** 2
            base: list[Pair] = [GaussianPair(_sqrt_directed(mu2, kind))]
        else:
            ((sub, count),) = inner.items()
            if count != 1:
                if not isinstance(sub, ev.Gaussian):
                    raise NotApplicableError(
                        f"method 'pld' cannot subsample a repeated {type(sub).__name__}."
                    )
                base = [
                    GaussianPair(
                        _sqrt_directed(
                            count * (Fraction(sub.sensitivity) / Fraction(sub.sigma)) ** 2, kind
                        )
                    )
                ]
            else:
                base = _pairs(sub, kind)
        if len(base) != 1 or base[0].infinite_mass:
            raise NotApplicableError(
                f"method 'pld' cannot subsample {atom.event!r} (nested sampling or δ > 0)."
            )
        if atom.rate == 1.0:
            return base
        return [
            SubsampledPair(base[0], atom.rate, "remove"),
            SubsampledPair(base[0], atom.rate, "add"),
        ]
    raise NotApplicableError(
        f"method 'pld' cannot account for {type(atom).__name__} events (found {atom!r}); "
        "use method='rdp' or method='auto'."
    )


_POOLS: dict[int, ThreadPoolExecutor] = {}
_THREADS: list[int | None] = [None]  # None: the two directions in parallel, FFTs on all cores


def set_threads(threads: int | None) -> None:
    """Limit the PLD accountant to ``threads`` threads (1: single-threaded); None: no limit.

    By default the two directions of a subsampled release are composed on two threads and
    each transform uses every core. Results do not depend on this setting.
    """
    if threads is not None:
        threads = check_int_at_least("threads", threads, 1)
    _THREADS[0] = threads


def _fft_workers() -> int:
    return -1 if _THREADS[0] is None else _THREADS[0]


def _pool() -> ThreadPoolExecutor:
    """A two-thread pool for the independent add and remove directions.

    NumPy and SciPy's FFT release the GIL, so the directions run on two cores where there
    are two. One pool per process: a pool inherited through ``fork`` has no threads.
    """
    pid = os.getpid()
    if pid not in _POOLS:
        _POOLS[pid] = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dpledger-pld")
    return _POOLS[pid]


def _in_parallel(tasks: list[Callable[[], Any]]) -> list[Any]:
    if len(tasks) < 2 or _THREADS[0] == 1:
        return [task() for task in tasks]
    futures = [_pool().submit(task) for task in tasks]
    return [future.result() for future in futures]


@functools.lru_cache(maxsize=512)
def _discretised(atom: ev.Event, h: float, kind: str, tail: float = _TAIL) -> tuple[_Discrete, ...]:
    pairs = _pairs(atom, kind)
    tasks: list[Callable[[], _Discrete]]
    if kind == "upper":
        tasks = [functools.partial(connect_the_dots, pair, h, tail) for pair in pairs]
    else:
        tasks = [functools.partial(dominated, pair, h, tail) for pair in pairs]
    grids = tuple(_in_parallel(tasks))
    for grid in grids:
        # overflow in a pair's formulas (extreme rates or losses) must not reach the
        # composition as NaN or negative mass: refuse instead of guessing
        if not (np.all(np.isfinite(grid.masses)) and np.all(grid.masses >= 0.0)) or not (
            0.0 <= grid.infinite <= 1.0
        ):
            raise NotApplicableError(
                f"method 'pld' could not discretise {atom!r} in floating point "
                "(overflow in its loss distribution); use method='auto'."
            )
    return grids


_LAMBDAS = np.logspace(-2.0, 2.3, 18)
_TILT_BELOW = 1e-7  # δ below which compositions are also tilted (see _compose)
_GUARD_TILT = 1e-5  # above _TILT_BELOW, tilt where the rounding guard exceeds this of δ
_TILT_ROUNDS = 4  # most tilted compositions one ε(δ) query solves on (PLDSummary._epsilon)
_WINDOW_TAIL = 1e-20  # default finite mass allowed outside the FFT window on either side
_AUTO_POINTS = 1 << 21  # largest window the automatic step may need (refine: up to MAX)
_MAX_AUTO_HALVINGS = 16  # the automatic step is at least min(grid, DEFAULT_GRID)/16
_BOUNDED_RATIO = 512  # bounded-loss compositions: step at most s/512 (PLDSummary._bounded_step)


def _log_mgfs(d: _Discrete, h: float, lambdas: np.ndarray) -> np.ndarray:
    """Log Σ mᵢ e^{λℓᵢ} of the finite (unnormalised) part, for each λ."""
    losses = (d.start + np.arange(len(d.masses))) * h
    positive = d.masses > 0
    if not np.any(positive):
        return np.full(len(lambdas), -np.inf)
    support = losses[positive]
    # log Σ m e^{λℓ} = shift + log Σ m e^{λℓ − shift}, shift = max λℓ (at an end of support)
    shift = np.maximum(lambdas * support[0], lambdas * support[-1])
    # only the positive range: no exponent below exceeds the shift by more than a block
    lo, hi = np.flatnonzero(positive)[[0, -1]]
    masses = d.masses[lo : hi + 1]
    # e^{λℓ} = e^{λ·(block start)}·e^{λ·(offset in block)}: 16 times fewer exponentials
    # (fewer per block where h·λ is large: e^{λ·h·(block − 1)} must stay finite)
    block = max(1, min(16, int(300.0 / (h * float(np.max(np.abs(lambdas))) + 1e-300))))
    size = -(-len(masses) // block) * block
    padded = np.zeros(size)
    padded[: len(masses)] = masses
    first = (d.start + lo + np.arange(0, size, block)) * h
    offsets = np.exp(np.outer(np.arange(block) * h, lambdas))  # (block, λ)
    inner = padded.reshape(-1, block) @ offsets  # (blocks, λ)
    outer = np.exp(np.outer(first, lambdas) - shift)  # (blocks, λ)
    scaled = np.einsum("ij,ij->j", outer, inner)
    with np.errstate(divide="ignore"):
        return np.asarray(shift + np.log(scaled), dtype=float)


@dataclass(frozen=True)
class _Composition:
    """The composed grid PLD of one direction, with tail bounds and fast δ(ε).

    ``error_max`` and ``error_l2`` bound the transform's rounding error e (the computed
    composed masses, before untilting, less the exact cyclic convolution of the grid
    masses) in the max and the Euclidean norm (:func:`_transform_error`). Untilting
    multiplies point i by fᵢ = exp(log Z − λℓᵢ) (1 when ``tilt`` is 0).
    """

    start: int  # grid index of the first window point
    masses: np.ndarray  # finite part (unnormalised: total ≈ 1 − infinite)
    infinite: float
    upper_tail: float  # bound on the finite mass above the window
    lower_tail: float  # bound on the finite mass below the window
    h: float
    error_max: float = 0.0
    error_l2: float = 0.0
    tilt: float = 0.0
    log_z: float = 0.0
    tail_p: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    tail_q: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @staticmethod
    def build(
        start: int,
        masses: np.ndarray,
        infinite: float,
        upper: float,
        lower: float,
        h: float,
        errors: tuple[float, float],
        tilt: float = 0.0,
        log_z: float = 0.0,
    ) -> _Composition:
        """``errors``: the (max, Euclidean) bounds of :func:`_transform_error`."""
        losses = (start + np.arange(len(masses))) * h
        # reverse cumulative sums (small terms first): Σ_{i≥j} mᵢ, and Σ_{i≥j} mᵢ e^{ℓ₀−ℓᵢ}
        # referenced to the window's first loss ℓ₀ so that no exponent is positive
        tail_p = np.cumsum(masses[::-1])[::-1]
        tail_q = np.cumsum((masses * np.exp(losses[0] - losses))[::-1])[::-1]
        return _Composition(
            start, masses, infinite, upper, lower, h, *errors, tilt, log_z, tail_p, tail_q
        )

    def delta(self, epsilon: float, kind: str) -> float:
        """δ̄(ε) (``kind="upper"``) or δ̲(ε) (``"lower"``)."""
        return self._delta(epsilon, kind)

    def _first_above(self, epsilon: float) -> int:
        """The first window index with loss > ε."""
        j = max(0, math.floor(epsilon / self.h) - self.start + 1)
        while j > 0 and (self.start + j - 1) * self.h > epsilon:
            j -= 1
        while j < len(self.masses) and (self.start + j) * self.h <= epsilon:
            j += 1
        return j

    def rounding_guard(self, epsilon: float) -> float:
        """A bound on the transform's rounding error in δ(ε) = Σ_{ℓᵢ>ε} mᵢ(1 − e^{ε−ℓᵢ}).

        Each weight 1 − e^{ε−ℓᵢ} is in [0, 1], so the error is at most Σ_{i≥j} fᵢ|eᵢ| ≤
        min(‖e‖_∞·Σfᵢ, ‖e‖₂·(Σfᵢ²)^½) (Cauchy–Schwarz) over the n points above ε; fᵢ is
        geometric in i, so both sums have closed forms.
        """
        j = self._first_above(epsilon)
        count = len(self.masses) - j
        if count <= 0:
            return 0.0
        if self.tilt == 0.0:
            value = min(count * self.error_max, math.sqrt(count) * self.error_l2)
        else:
            rate = self.tilt * self.h
            try:
                first = math.exp(self.log_z - self.tilt * (self.start + j) * self.h)
            except OverflowError:
                return math.inf
            linear = first * (-math.expm1(-rate * count) / -math.expm1(-rate))
            square = first * math.sqrt(-math.expm1(-2 * rate * count) / -math.expm1(-2 * rate))
            value = min(self.error_max * linear, self.error_l2 * square)
        return round_up(value * (1 + 1e-9)) if math.isfinite(value) else math.inf

    def _delta(self, epsilon: float, kind: str) -> float:
        j = self._first_above(epsilon)
        if j >= len(self.masses):
            body = 0.0
            guard = 0.0
        else:
            count = len(self.masses) - j
            guard = self.rounding_guard(epsilon)
            first = self.start * self.h
            if self.tail_q[j] > 0:
                body = float(self.tail_p[j] - math.exp(epsilon - first + math.log(self.tail_q[j])))
            else:  # the referenced sum underflowed: sum directly (every exponent ≤ 0)
                losses = (self.start + j + np.arange(count)) * self.h
                body = float(np.sum(self.masses[j:] * -np.expm1(epsilon - losses)))
        # plus a relative margin of 1e-7 of the body for the relative rounding of the masses
        # themselves (quadrature, tilting and untilting, the sums above), which the
        # transform's error bound does not cover
        guard += 1e-7 * abs(body)
        if kind == "upper":
            # below the window, the mass below it (not in the window: see _compose) counts
            below = self.lower_tail if epsilon < self.start * self.h else 0.0
            value = self.infinite + max(0.0, body) + self.upper_tail + below + guard
            return 1.0 if not value < 1.0 else round_up(value)
        # mass outside the window wraps into it (either side): none of it is certain
        value = self.infinite + body - self.lower_tail - self.upper_tail - guard
        return value if value > 0.0 else 0.0


_UNIT = 2.0**-53  # unit roundoff of float64


def _fft_error(size: int) -> float:
    """γ_F: the componentwise error of a computed real FFT of size N relative to ‖x‖₁.

    Every output of a fast Fourier transform is computed along a tree of log₂N butterfly
    levels; the nodes of one level that feed an output are partial transforms of disjoint
    subsets of x, so their moduli sum to at most ‖x‖₁, and each level adds at most a
    complex multiplication by a computed twiddle factor and an addition: ≤ (μ + √2·γ₂ +
    2u)·‖x‖₁ per level (Higham 2002, *Accuracy and Stability of Numerical Algorithms*,
    §3.6 and §24.1; μ the twiddles' error, ≤ 2u in pocketfft). That is < 7u per binary
    level; radix-4 and radix-3/5 passes and the real-to-half-complex post-processing
    stay below it per level of log₂N. The constant used, 12u per level plus two levels,
    is a margin over that; the same γ_F bounds the Euclidean error relative to √N‖x‖₂
    (Higham Thm 24.2) and the inverse transform's. ``tests/test_pld.py`` measures the
    componentwise error against 80-bit sums: it stays below γ_F/10.
    """
    return 12 * _UNIT * (math.log2(size) + 2)


def _transform_error(
    transforms: list[tuple[np.ndarray, int, float, float]],
    spectrum: np.ndarray,
    keep: np.ndarray,
    size: int,
) -> tuple[float, float]:
    """Bounds (‖e‖_∞, ‖e‖₂) on the error of the computed composition.

    ``transforms``: each part's computed half spectrum ẑ, its count k, its total mass S =
    ‖x‖₁ (x ≥ 0) and ‖x‖₂; ``spectrum`` the computed product ŝ, zero where not ``keep``.
    Against the exact cyclic convolution y of the grid masses (first order in u, with a
    1 % margin for the second):

    * |ẑⱼ − zⱼ| ≤ cⱼ = γ_F·S (u·S at j = 0: the correctly rounded sum), and
      ‖ẑ − z‖₂ ≤ γ_F·√N·‖x‖₂ (:func:`_fft_error`); aⱼ = |ẑⱼ| + cⱼ bounds |zⱼ| and |ẑⱼ|;
    * the power: |zᵏ − ẑᵏ| ≤ k·|ẑ − z|·a^{k−1}, and the computed power (binary powering, or
      exp(k·log ẑ)) is within ρ = u·(k·(2 + 2|log a| + 2π) + 4) of ẑᵏ, relative; Aⱼ =
      a^k(1 + ρ) bounds both;
    * the product of D parts: |ŝⱼ − sⱼ| ≤ Σ_d |ẑ_d − z_d|ⱼ·G_dⱼ + Hⱼ with G_d = k_d·a_d^{k_d−1}
      ·Π_{e≠d} A_e and H = ΠA·(Σρ + 3uD); a dropped frequency has |sⱼ| ≤ ΠA;
    * Σⱼ|ẑ − z|ⱼG_dⱼ ≤ min(Σ c·G, ‖ẑ − z‖₂‖G‖₂), and ‖(ẑ − z)∘G‖₂ ≤ min(‖c∘G‖₂,
      ‖ẑ − z‖₂·max G);
    * the inverse transform: ‖Δ‖∞ ≤ (2/N)·Σⱼ|Δⱼ| and ‖Δ‖₂ ≤ (2/N)^½·‖Δ‖₂ of the half
      spectrum (Parseval), plus its own rounding γ_F·(2/N)Σ|ŝⱼ| and γ_F·(2/N)^½‖ŝ‖₂.

    The clipping of negative outputs to 0 only moves them towards the exact masses (≥ 0).
    """
    gamma = _fft_error(size)
    parts = len(transforms)
    logs_a = []
    logs_big_a = []
    rhos = []
    comps = []
    for z, k, total, _ in transforms:
        c = np.full(len(z), gamma * total)
        c[0] = _UNIT * total
        a = np.abs(z) + c
        with np.errstate(divide="ignore"):
            log_a = np.log(a)
        rho = _UNIT * (k * (2 + 2 * np.abs(log_a) + 2 * math.pi) + 4)
        logs_a.append(log_a)
        logs_big_a.append(k * log_a + np.log1p(rho))
        rhos.append(rho)
        comps.append(c)
    log_all = np.sum(logs_big_a, axis=0)
    # H over the kept frequencies; a dropped one contributes ΠA in full
    with np.errstate(over="ignore"):
        big = np.exp(log_all)
        h_term = np.where(keep, big * (np.sum(rhos, axis=0) + 3 * _UNIT * parts), big)
    sum_err = float(np.sum(h_term))
    l2_err = float(np.sqrt(np.sum(h_term * h_term)))
    for (_, k, _, norm2), log_a, log_big, c in zip(
        transforms, logs_a, logs_big_a, comps, strict=True
    ):
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.exp(math.log(k) + (k - 1) * log_a + (log_all - log_big))
        g = np.where(keep, g, 0.0)  # dropped frequencies are counted in full above
        normwise = gamma * math.sqrt(size) * norm2
        g2 = float(np.sqrt(np.sum(g * g)))
        sum_err += min(float(np.sum(c * g)), normwise * g2)
        l2_err += min(float(np.sqrt(np.sum((c * g) ** 2))), normwise * float(np.max(g)))
    magnitude = np.abs(spectrum)
    own_max = gamma * 2 / size * float(np.sum(magnitude))
    own_l2 = gamma * math.sqrt(2 / size) * float(np.sqrt(np.sum(magnitude * magnitude)))
    error_max = 1.01 * (2 / size * sum_err + own_max) + 1e-300
    error_l2 = 1.01 * (math.sqrt(2 / size) * l2_err + own_l2) + 1e-300
    if not (math.isfinite(error_max) and math.isfinite(error_l2)):
        return (math.inf, math.inf)
    return (error_max, error_l2)


def _tilted(d: _Discrete, h: float, tilt: float) -> tuple[_Discrete, float]:
    """The exponentially tilted masses mᵢe^{λℓᵢ}/Z (finite part) and log Z."""
    losses = (d.start + np.arange(len(d.masses))) * h
    with np.errstate(divide="ignore"):
        logs = np.log(d.masses) + tilt * losses
    top = float(np.max(logs))
    log_z = top + math.log(float(np.sum(np.exp(logs - top))))
    return _Discrete(d.start, np.exp(logs - log_z), 0.0), log_z


def _saddle_tilt(parts: list[tuple[_Discrete, int]], h: float, epsilon: float) -> float:
    """The λ ≥ 0 minimising the Chernoff exponent K(λ) − λε of the composed finite part."""
    grid = np.logspace(-2.0, 3.0, 61)
    exponent = sum(k * _log_mgfs(d, h, grid) for d, k in parts) - grid * epsilon
    return float(grid[int(np.argmin(exponent))])


def _compose(
    parts: list[tuple[_Discrete, int]],
    h: float,
    window_tail: float = _WINDOW_TAIL,
    tilt: float = 0.0,
) -> _Composition:
    """Compose grid PLDs (with counts) by one real FFT over a Chernoff-sized window.

    ``window_tail`` bounds the finite mass left outside the window on each side; the
    upper part is added to δ̄ in full, the lower part aliases into the window (only
    adding mass) and is subtracted from δ̲.

    ``tilt`` = λ > 0 composes the exponentially tilted masses mᵢe^{λℓᵢ}/Z instead and
    untilts the result (tilting commutes with convolution). The transform's rounding
    error is about 1e-16 of the *largest* mass; tilting makes the masses near the loss
    of interest the largest ones, so that δ(ε) far in the tail (δ ≲ 1e-8) keeps its
    relative accuracy. Points far below are then inaccurate, and their guard says so.

    The transform's rounding error is bounded (:func:`_transform_error`), and both δ̄ and
    δ̲ move by the bound (:meth:`_Composition.rounding_guard`).
    """
    log_z_total = 0.0
    if tilt:
        tilted = []
        for d, k in parts:
            t, log_z = _tilted(d, h, tilt)
            tilted.append((t, k))
            log_z_total += k * log_z
        spread_parts = tilted
    else:
        spread_parts = parts
    log_keep = 0.0
    for d, k in parts:
        if d.infinite > 0:
            log_keep += k * math.log1p(-min(d.infinite, 1.0 - 1e-300))
    infinite = -math.expm1(log_keep)
    up = sum(k * _log_mgfs(d, h, _LAMBDAS) for d, k in parts)
    down = sum(k * _log_mgfs(d, h, -_LAMBDAS) for d, k in parts)
    log_tail = math.log(window_tail)
    # Chernoff: mass above t ≤ exp(K(λ) − λt); mass below t ≤ exp(K(−λ) + λt)
    hi = float(np.min((up - log_tail) / _LAMBDAS))
    lo = float(np.max((log_tail - down) / _LAMBDAS))
    if tilt:  # the tilted masses have a heavier upper tail: the window must hold it too
        up_t = sum(k * _log_mgfs(d, h, _LAMBDAS) for d, k in spread_parts)
        hi = max(hi, float(np.min((up_t - log_tail) / _LAMBDAS)))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise NotApplicableError("method 'pld': the composed losses have no finite window.")
    start, last = math.floor(lo / h) - 2, math.ceil(hi / h) + 2
    # The composed finite part lives on [Σk·first, Σk·last] (grid indices of each part's
    # first and last positive mass): a window reaching past that holds exact zeros, whose
    # rounding errors would only widen the guard (bounded losses: Laplace, pure DP)
    bottom = top_index = 0
    for d, k in parts:
        positive = np.flatnonzero(d.masses > 0)
        if positive.size:
            bottom += k * (d.start + int(positive[0]))
            top_index += k * (d.start + int(positive[-1]))
    start, last = max(start, bottom), min(last, top_index)
    if last < start:  # no finite mass at all (everything at +∞)
        start, last = bottom, bottom
    # the window grows with the count: refuse before allocating (MAX_GRID_POINTS)
    _check_grid(last - start + 4, 0.0, f"a composition of {sum(k for _, k in parts)} releases")
    size = 1 << max(1, (last - start).bit_length())
    _check_grid(size, 0.0, f"a composition of {sum(k for _, k in parts)} releases")
    transforms = []
    log_magnitude = np.zeros(size // 2 + 1)
    for d, k in spread_parts:
        idx = (d.start + np.arange(len(d.masses))) % size
        buffer = np.bincount(idx, weights=d.masses, minlength=size)  # adds wrapped masses
        z = sp_fft.rfft(buffer, workers=_fft_workers())
        # The zero frequency is the total mass. The transform sums it in floating point
        # (1 + 2e-16 for a total of exactly 1); raised to the count, that excess becomes a
        # uniform floor over the whole window (issue 10 item 12b: lower bounds above the
        # exact ε at δ = 1e-15). Use the correctly rounded sum.
        total = math.fsum(d.masses)
        z[0] = total
        with np.errstate(divide="ignore"):
            log_magnitude += k * np.log(np.abs(z))
        norm2 = float(np.sqrt(np.sum(d.masses * d.masses)))
        transforms.append((z, k, total, norm2))
    # Frequencies whose composed magnitude is below e^-70 are set to zero instead of
    # raised to the power (most of them, for long compositions); the error bound counts
    # each of them in full.
    keep = log_magnitude > -70.0
    spectrum = np.zeros(size // 2 + 1, dtype=complex)
    spectrum[keep] = 1.0
    for z, k, _, _ in transforms:
        spectrum[keep] *= z[keep] ** k
    composed = np.roll(sp_fft.irfft(spectrum, n=size, workers=_fft_workers()), -(start % size))
    # A bound on the rounding error, not an estimate: the observed noise floor (the most
    # negative output) missed errors that look like mass — a perturbation of the
    # low frequencies, 4e-7 of δ for 32 Gaussians at δ = 1e-9 (issue 15)
    errors = _transform_error(transforms, spectrum, keep, size)
    # keep [start, last] only: above `last` lies either no mass (the support ends there)
    # or mass that `upper` bounds, plus mass from below `start` wrapped around, whose
    # losses are below the window (δ̄ adds `lower` for ε there, δ̲ ignores it)
    composed = np.clip(composed[: last - start + 1], 0.0, None)
    if tilt:
        losses = (start + np.arange(len(composed))) * h
        with np.errstate(over="ignore"):
            factor = np.exp(log_z_total - tilt * losses)
        composed = composed * np.where(np.isfinite(factor), factor, 0.0)
    # finite mass above the window's last point and below its first (0 at the support)
    upper = 0.0 if last >= top_index else float(np.exp(np.min(up - _LAMBDAS * last * h)))
    lower = 0.0 if start <= bottom else float(np.exp(np.min(down + _LAMBDAS * start * h)))
    return _Composition.build(start, composed, infinite, upper, lower, h, errors, tilt, log_z_total)


def _guard_matters(directions: list[_Composition], epsilon: float, delta: float) -> bool:
    """Whether the rounding guard in δ̄(ε) exceeds :data:`_GUARD_TILT` of δ.

    Then a tilted composition is worth its cost: the guard moves ε by about that relative
    amount times |dε/d log δ| (a few 1e-8 of ε at 1e-6; the bound grows with the count:
    4.6e-5 of δ for 10,000 DP-SGD steps moved ε by 1.3e-5). ``epsilon`` and ``delta`` queries
    use the same rule, so that they answer from the same compositions.
    """
    return max(c.rounding_guard(epsilon) for c in directions) > _GUARD_TILT * delta


def _release_tail(window_tail: float, steps: int) -> float:
    """P-mass a single release may leave above its grid, for a composition of ``steps``.

    Each release's truncated upper tail goes to +∞, and the composition's mass at +∞ is
    about ``steps`` times it: keep that below 1000 × ``window_tail`` (``window_tail`` is
    1e-9 of the δ of interest, so at most 1e-6 of δ; finer tails than needed widen the
    window, and with it the rounding guard, for nothing). At most :data:`_TAIL`, a power
    of ten (shared caches).
    """
    level = max(1e3 * window_tail / max(steps, 1), 1e-300)
    return min(_TAIL, 10.0 ** math.floor(math.log10(level) + 1e-9))


def _window_tail_for(delta: float) -> float:
    """Finite mass allowed outside the FFT window (added to δ̄ in full) for answers near δ.

    A billionth of δ, at most 1e-16, rounded down to a power of ten, so that ``epsilon``
    and ``delta`` queries at the same δ level use the same window.
    """
    level = min(max(delta, 1e-290), 1e-7) * 1e-9
    # + 1e-9: log10(1e-16) evaluates to −16.000000000000004; do not drop a decade for it
    return 10.0 ** math.floor(math.log10(level) + 1e-9)


_TILT_GRID = np.logspace(-2.0, 3.0, 61)  # the λ of the saddle-point searches


@dataclass(frozen=True)
class _Moments:
    """Loss statistics of one grid PLD (for choosing a grid step, never in a bound)."""

    m2: float  # central moments under P (finite part, normalised)
    m4: float
    log_mgf_up: np.ndarray  # log Σ m e^{λℓ} at λ = _LAMBDAS
    log_mgf_down: np.ndarray  # … at −_LAMBDAS
    log_mgf_tilts: np.ndarray  # … at _TILT_GRID


def _tilted_moments(d: _Discrete, h: float, tilt: float) -> tuple[float, float]:
    """Central moments 2 and 4 of the loss of ``d`` under P tilted by e^{λℓ}."""
    losses = (d.start + np.arange(len(d.masses))) * h
    with np.errstate(divide="ignore"):
        logs = np.log(d.masses) + tilt * losses
    if not np.any(np.isfinite(logs)):
        return (0.0, 0.0)
    weights = np.exp(logs - np.max(logs))
    total = float(np.sum(weights))
    mean = float(np.dot(weights, losses)) / total
    centred = (losses - mean) ** 2
    return (
        float(np.dot(weights, centred)) / total,
        float(np.dot(weights, centred * centred)) / total,
    )


_MOMENTS: dict[tuple[int, float], tuple[_Discrete, _Moments]] = {}


def _moments(d: _Discrete, h: float) -> _Moments:
    """:class:`_Moments` of ``d`` (cached by identity: grid PLDs come from a cache)."""
    key = (id(d), h)
    hit = _MOMENTS.get(key)
    if hit is not None and hit[0] is d:
        return hit[1]
    m2, m4 = _tilted_moments(d, h, 0.0)
    value = _Moments(
        m2,
        m4,
        _log_mgfs(d, h, _LAMBDAS),
        _log_mgfs(d, h, -_LAMBDAS),
        _log_mgfs(d, h, _TILT_GRID),
    )
    if len(_MOMENTS) > 1024:
        _MOMENTS.clear()
    _MOMENTS[key] = (d, value)
    return value


@dataclass(frozen=True)
class PLDSummary(Summary):
    """A composition of releases, evaluated numerically on a grid of step at most ``grid``.

    The step actually used adapts to the scale of the per-release losses
    (:meth:`_grid_for`); ``refine`` halves it that many more times (for
    :func:`epsilon_bounds` at a small ``rtol``).
    """

    releases: tuple[tuple[ev.Event, int], ...] = ()
    grid: float = DEFAULT_GRID
    refine: int = 0
    scale_ratio: float = 1 / 16
    gaussian_only: bool = True
    scale_delta: float = 1e-6
    coarsen: bool = False
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __add__(self, other: PLDSummary) -> PLDSummary:
        merged: dict[ev.Event, int] = dict(self.releases)
        for event, count in other.releases:
            merged[event] = merged.get(event, 0) + count
        return dataclasses.replace(self, releases=tuple(merged.items()), _cache={})

    def scaled(self, count: int) -> PLDSummary:
        """The guarantee of ``count`` repetitions."""
        releases = tuple((e, k * count) for e, k in self.releases)
        return dataclasses.replace(self, releases=releases, _cache={})

    def _grid_for(self, kind: str) -> float:
        """The grid step: ``grid``, halved while it exceeds 1/16 of the loss scale.

        Discretising a release moves its losses by up to h, which perturbs the variance
        of its loss distribution by O(h²) — on either side: connect-the-dots spreads it,
        the dominated merge (:func:`_merge_onto_grid`) contracts it. Relative to the
        composition's variance that is O((h/s)²), s the root-mean-square over releases of
        the standard deviation of each release's loss, and independent of the count: the
        bracket's relative width measured ≈ 0.26·(h/s)² on DP-SGD compositions. With a
        fixed step, releases of small losses (low sampling rates) were bracketed 2 % wide
        where the headline case was 2e-5 wide. So the step is halved while h > s/16
        (≈ 1e-3 relative width, the upper end alone within ≈ 1.5e-4; ``scale_ratio``
        sets the 1/16 — 1/32 made calibrating 1,000 Laplace releases 2x slower for 2e-7
        relative in ε; :func:`epsilon_bounds` sets √rtol/4), as long as the
        composition's window stays within :data:`_AUTO_POINTS` points and the step at
        least 1/16 of ``min(grid, DEFAULT_GRID)``; ``refine`` halves further.
        Powers of two keep the discretisations of nearby compositions shared. The same
        step serves both bounds (``kind`` is accepted for the callers' symmetry).
        """
        del kind
        key = "step"
        if key not in self._cache:
            self._cache[key] = self._auto_step()
        step: float = self._cache[key] / 2**self.refine
        return step

    def _auto_step(self) -> float:
        if self.coarsen:
            coarse = self._bounded_step()
            if coarse is not None:
                return coarse
        h = self.grid
        floor = min(self.grid, DEFAULT_GRID) / _MAX_AUTO_HALVINGS
        for _ in range(3):  # the scale is estimated on the grid itself: follow it
            scale, width = self._loss_scale(h)
            if not (math.isfinite(width) and width > 0 and scale > 0):
                return h
            new = h
            while (
                new > scale * self.scale_ratio
                and new / 2 >= floor
                and width / (new / 2) <= _AUTO_POINTS
            ):
                new /= 2
            if new == h:
                break
            h = new
        return h

    def _bounded_step(self) -> float | None:
        """A coarser step for compositions of bounded-loss releases, or None.

        Where every release's losses lie in a bounded interval with atoms at a few known
        loss values only (Laplace, randomized response, pure and (ε, δ)-DP releases:
        :attr:`Pair.atom_losses`), the composition's window spans count × range, and on
        the default grid the transform dominates the cost (2²¹ points for 100 Laplace
        releases). With the atoms on the grid, the discretisation error follows the same
        (h/s)² law as for DP-SGD (:meth:`_grid_for`): ε moves by ≈ 0.04·(h/s)² relative
        (measured: 1.3e-6 at h = 5e-3 for Laplace releases, s = 0.79). So the step
        doubles from ``grid`` while it stays below s/:data:`_BOUNDED_RATIO` (≈ 1e-7
        relative in ε), at most :data:`MAX_GRID`, and every atom stays on a grid point
        (an atom between grid points is spread over a cell: an error of order h, not h²,
        near ε₀ — 2.3e-4 for one Laplace release with ε₀ = 1/3). s² is the count-weighted
        mean of the releases' loss variances under P. Only when the accountant chose the
        grid (``coarsen``): a grid the caller sets is a largest step, never exceeded.
        """
        atoms: set[float] = set()
        for event, _ in self.releases:
            for kind in ("upper", "lower"):
                try:
                    pairs = _pairs(event, kind)
                except NotApplicableError:
                    continue
                for pair in pairs:
                    if pair.atom_losses is None:
                        return None
                    atoms.update(pair.atom_losses)
        try:
            parts = self._parts_at(self.grid, "upper", _TAIL)
        except NotApplicableError:
            return None
        steps = sum(k for _, k in self.releases)
        variance = max(sum(k * _moments(d, self.grid).m2 for d, k in side) for side in parts)
        scale = math.sqrt(max(variance, 0.0) / max(steps, 1))

        def on_grid(step: float) -> bool:
            return all(
                abs(a / step - round(a / step)) <= 1e-9 * max(1.0, abs(a / step)) for a in atoms
            )

        h = self.grid
        if not on_grid(h):
            return None
        while 2 * h <= scale / _BOUNDED_RATIO and 2 * h <= MAX_GRID and on_grid(2 * h):
            h *= 2
        return h

    def _loss_scale(self, h: float) -> tuple[float, float]:
        """(s, w): the per-release loss scale, and the composed window's width.

        From the grid PLDs of step ``h`` (upper ones where they exist). s² is the
        count-weighted mean of the releases' loss variances under P *tilted* to the
        saddle point of the Chernoff bound at δ = ``scale_delta`` — the part of the
        distribution that decides ε(δ) there (for a Gaussian PLD the plain variance; for
        heavy tails far more). On a grid coarser than the losses it comes out too large
        (the grid spreads them), so the step is then refined less, never more. With
        ``gaussian_only`` (the default), s is ∞ — no refinement — unless the
        composition's excess kurtosis Σk·κ₄/(Σk·σ²)² is at most 1: the (h/s)² law holds
        for near-Gaussian compositions (long runs: the low-rate DP-SGD cases), while
        heavy-tailed ones (tiny rates with little noise: their tilted variance is
        unreliable) would pay for a finer bulk whose ε is decided in the tail (calibrating
        σ at rate 1e-9 took 8 s instead of 0.2 s).
        w is the Chernoff window of the composition at :data:`_WINDOW_TAIL` (as in
        :func:`_compose`), at least one release's range. (0, inf) where no grid PLD is
        available.
        """
        try:
            parts = self._parts_at(h, "upper", _TAIL)
        except NotApplicableError:
            try:
                parts = self._parts_at(h, "lower", _TAIL)
            except NotApplicableError:
                return (0.0, math.inf)
        steps = max(sum(k for _, k in self.releases), 1)
        scale2 = 0.0
        width = 0.0
        log_tail = math.log(_WINDOW_TAIL)
        for side in parts:
            stats = [(_moments(d, h), k) for d, k in side]
            tilt = 0.0
            if not self.gaussian_only:
                log_mgf = sum(k * m.log_mgf_tilts for m, k in stats)
                near = float(np.min((log_mgf - math.log(self.scale_delta)) / _TILT_GRID))
                if math.isfinite(near) and near > 0:
                    tilt = float(_TILT_GRID[int(np.argmin(log_mgf - _TILT_GRID * near))])
            variance = 0.0
            cumulant4 = 0.0
            for (m, k), (d, _) in zip(stats, side, strict=True):
                m2, m4 = (m.m2, m.m4) if tilt == 0.0 else _tilted_moments(d, h, tilt)
                variance += k * m2
                cumulant4 += k * (m4 - 3 * m2 * m2)
            if self.gaussian_only and not cumulant4 <= variance * variance:
                return (math.inf, math.inf)
            scale2 = max(scale2, variance / steps)
            up = sum(k * m.log_mgf_up for m, k in stats)
            down = sum(k * m.log_mgf_down for m, k in stats)
            hi = float(np.min((up - log_tail) / _LAMBDAS))
            lo = float(np.max((log_tail - down) / _LAMBDAS))
            reach = max(len(d.masses) * h for d, _ in side)
            width = max(width, hi - lo, reach)
        return (math.sqrt(scale2), width)

    def _parts(
        self, kind: str, window_tail: float = _WINDOW_TAIL
    ) -> list[list[tuple[_Discrete, int]]]:
        """The grid PLDs to compose, one list per direction.

        Each release is discretised with the tail :func:`_release_tail` allows for
        ``window_tail`` (upper ends move that mass to +∞, where it stays below the
        window tail; lower ends round it down to the last grid point).
        """
        if sum(k for _, k in self.releases) > 2**53:
            raise NotApplicableError(
                "method 'pld' composes at most 2**53 releases (the counts enter float "
                "arithmetic); use method='auto', 'gdp', 'rdp' or 'zcdp'."
            )
        steps = sum(k for _, k in self.releases)
        tail = _release_tail(window_tail, steps)
        return self._parts_at(self._grid_for(kind), kind, tail)

    def _parts_at(self, h: float, kind: str, tail: float) -> list[list[tuple[_Discrete, int]]]:
        """The grid PLDs of step ``h`` to compose, one list per direction."""
        # a canonical order, so that equal compositions give bit-identical answers
        releases = sorted(self.releases, key=lambda item: (repr(item[0]), item[1]))
        two_sided = [(e, k) for e, k in releases if len(_pairs(e, kind)) == 2]
        one_sided = [(e, k) for e, k in releases if len(_pairs(e, kind)) == 1]
        shared = [(_discretised(e, h, kind, tail)[0], k) for e, k in one_sided]
        return [
            shared + [(_discretised(e, h, kind, tail)[side], k) for e, k in two_sided]
            for side in ((0, 1) if two_sided else (0,))
        ]

    def _tilts(self, kind: str, window_tail: float, near: float) -> list[float]:
        """The saddle-point tilt of each direction for ε near ``near`` (2 digits of λ)."""
        # two significant digits of λ, so that nearby queries share one composition
        return [
            float(f"{_saddle_tilt(parts, self._grid_for(kind), near):.2g}")
            for parts in self._parts(kind, window_tail)
        ]

    def _chernoff_epsilon(self, kind: str, window_tail: float, delta: float) -> float:
        """The ε at which the Chernoff bound on P(L ≥ ε) reaches δ, over the directions.

        min over λ > 0 of (K(λ) − log δ)/λ, K the composed log-MGF of the finite part: a
        first guess of ε(δ) (above the answer; the hockey-stick δ(ε) ≤ P(L > ε)), used
        only to choose a tilt.
        """
        h = self._grid_for(kind)
        grid = np.logspace(-2.0, 3.0, 61)
        values = []
        for parts in self._parts(kind, window_tail):
            log_mgf = sum(k * _log_mgfs(d, h, grid) for d, k in parts)
            values.append(float(np.min((log_mgf - math.log(delta)) / grid)))
        return max(values)

    def _directions(
        self,
        kind: str,
        window_tail: float = _WINDOW_TAIL,
        near: float | None = None,
        tilts: list[float] | None = None,
    ) -> list[_Composition]:
        """Composed PLDs, one per direction; tilted for accuracy near ε = ``near``.

        ``tilts`` (one per direction, from :meth:`_tilts`) may be given instead of ``near``.
        """
        if tilts is None:
            tilts = [] if near is None else self._tilts(kind, window_tail, near)
        key = f"directions-{kind}-{window_tail!r}-{tilts!r}"
        if key not in self._cache:
            self._cache[key] = _in_parallel(
                [
                    functools.partial(
                        _compose,
                        parts,
                        self._grid_for(kind),
                        window_tail,
                        tilts[i] if tilts else 0.0,
                    )
                    for i, parts in enumerate(self._parts(kind, window_tail))
                ]
            )
        result: list[_Composition] = self._cache[key]
        return result

    def _upper_delta(self, epsilon: float, target: float) -> float:
        """δ̄(ε) with a window for δ near ``target``, tilted when δ is small."""
        tail = _window_tail_for(target)
        directions = self._directions("upper", tail)
        value = max(c.delta(epsilon, "upper") for c in directions)
        if min(value, target) < _TILT_BELOW or _guard_matters(directions, epsilon, value):
            tilted = self._directions("upper", tail, near=epsilon)
            value = min(value, max(c.delta(epsilon, "upper") for c in tilted))
        return value

    def delta_bounds(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper) bounds on δ(ε)."""
        if not self.releases:
            return (0.0, 0.0)
        upper = self.delta(epsilon)
        directions = self._directions("lower", 1e-16)
        shift = sum(k for _, k in self.releases) * _CELL_LOSS_ERROR  # see lower_epsilon
        lower = max(c.delta(epsilon + shift, "lower") for c in directions)
        # inconsistent (a numerical failure): the trivial lower bound, never the upper one
        return (lower if lower <= upper else 0.0, upper)

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε)."""
        if not self.releases:
            return 0.0
        directions = self._directions("upper", 1e-16)
        value = max(c.delta(epsilon, "upper") for c in directions)
        if (
            _window_tail_for(value) < 1e-16
            or value < _TILT_BELOW
            or _guard_matters(directions, epsilon, value)
        ):
            # a small δ: recompute with a window sized (and a tilt chosen) for it; the
            # first value may be far above the answer (the untilted guard), so the window
            # follows the answer until its size no longer changes
            target = value
            for _ in range(_TILT_ROUNDS):
                value = min(value, self._upper_delta(epsilon, target))
                if _window_tail_for(value) >= _window_tail_for(target):
                    break
                target = value
        return value

    def delta_curve(self, epsilons: list[float]) -> list[float]:
        """Upper bounds on δ(ε) at many ε from one composition (for plots).

        Valid at every ε, but not tilted: below δ ≈ 1e-10 the values are looser than
        :meth:`delta` (by up to ~1e-16 absolute plus the rounding guard).
        """
        if not self.releases:
            return [0.0 for _ in epsilons]
        directions = self._directions("upper", 1e-16)
        return [max(c.delta(e, "upper") for c in directions) for e in epsilons]

    def delta_at_most(self, epsilon: float, target: float) -> float:
        """Upper bound on δ(ε), computed with a window sized for δ near ``target``."""
        if not self.releases:
            return 0.0
        return self._upper_delta(epsilon, target)

    def _epsilon(self, delta: float, kind: str) -> float:
        """Upper bound on ε(δ) (``kind="upper"``).

        Below δ = :data:`_TILT_BELOW` the untilted composition is too coarse (its rounding
        guard, :func:`_transform_error` summed above ε, is ~1e-14 or more): the answer is
        re-solved on compositions tilted towards ε. The tilt is the saddle point of a
        *guess* of ε, and a poor guess gives a poor answer (issue 15: tilting towards
        the untilted answer — itself far off — gave ε(1e-15) = 18.44 for a composition
        whose exact ε is 17.48). So the first guess is the Chernoff ε (above the answer,
        but close), and the tilt then follows the answer until it no longer changes.
        Every solve is a valid upper bound; the smallest is returned.
        """
        # mass outside the window changes δ by at most this: 1e-9 of the target is enough
        tail = _window_tail_for(delta)
        plain = self._directions(kind, tail)
        result = self._solve_epsilon(plain, delta, kind)
        if kind != "upper" or not 0.0 < result < math.inf:
            return result
        # tilt where the rounding guard matters, and always below _TILT_BELOW
        if delta >= _TILT_BELOW and not _guard_matters(plain, result, delta):
            return result
        near = self._chernoff_epsilon(kind, tail, delta)
        if 0.0 < result < near:
            near = result
        seen: list[list[float]] = []
        for _ in range(_TILT_ROUNDS):
            if not (0.0 < near < math.inf):
                break
            tilts = self._tilts(kind, tail, near)
            if tilts in seen:
                break  # the tilt has settled
            seen.append(tilts)
            value = self._solve_epsilon(self._directions(kind, tail, tilts=tilts), delta, kind)
            result = min(result, value)
            near = value
        return result

    def lower_epsilon(self, delta: float) -> float | None:
        """A certified lower bound on ε(δ), or None where none is certified.

        ε̲ is an ε at which δ̲(ε) > δ was evaluated (the largest a bisection finds, to
        1e-12 relative), where δ̲ ≤ δ_true is the δ of a composition of pairs dominated
        by attained ones (:func:`dominated`), less the window's tail and the transform's
        rounding guard: there the true δ exceeds the target, so the true ε(δ) ≥ ε̲ — less
        K·:data:`_CELL_LOSS_ERROR` for the quadrature error of the merged losses. If δ̲
        still exceeds the target at the top of the window, only mass at +∞ can do so
        honestly: ∞ is returned when that mass alone exceeds δ, otherwise None (the
        search failed — never an upper bound passed off as a lower one).
        """
        if not self.releases:
            return 0.0
        tail = _window_tail_for(delta)
        plain = self._directions("lower", tail)
        result = self._solve_lower(plain, delta)
        if result is None or not 0.0 < result < math.inf:
            return result
        # the cells' losses come from quadrature, each within _CELL_LOSS_ERROR of the
        # true merged loss: the composed grid loss may exceed the true one by K times it
        shift = sum(k for _, k in self.releases) * _CELL_LOSS_ERROR
        # small δ, or a rounding guard that matters: the untilted transform's rounding
        # (subtracted in full) dominates δ̲ there — solve again on compositions tilted
        # towards the answer (as for the upper end); every solve is a valid lower bound
        if delta >= _TILT_BELOW and not _guard_matters(plain, result, delta):
            return max(0.0, result - shift)
        seen: list[list[float]] = []
        near = result
        for _ in range(_TILT_ROUNDS):
            tilts = self._tilts("lower", tail, near)
            if tilts in seen:
                break
            seen.append(tilts)
            tilted = self._directions("lower", tail, tilts=tilts)
            value = self._solve_lower(tilted, delta, start=result)
            if value is None or not 0.0 < value < math.inf:
                break
            result = max(result, value)
            near = value
        return max(0.0, result - shift)

    @staticmethod
    def _solve_lower(
        directions: list[_Composition], delta: float, start: float = 0.0
    ) -> float | None:
        """The largest ε found with δ̲(ε) > δ in one of ``directions`` (bisection).

        Any ε at which some certified δ̲(ε) exceeds δ is a lower bound on the true ε(δ)
        (the true δ(·) is non-increasing and above δ̲); only such evaluated points are
        returned, never a root the search merely bracketed. ``start`` is a point already
        certified (by another composition); a tilted composition is accurate only near its
        tilt, so its search starts there instead of at 0. 0 where δ̲(0) ≤ δ (the trivial
        bound); ∞ where the mass at +∞ alone exceeds δ; None where δ̲ exceeds δ up to the
        top of the window by other mass (the search failed).
        """

        def above(eps: float) -> bool:
            return max(c.delta(eps, "lower") for c in directions) > delta

        top = max((c.start + len(c.masses)) * c.h for c in directions)
        if start <= 0.0 and not above(0.0):
            return 0.0
        if above(top):
            if max(c.infinite for c in directions) > delta:
                return math.inf
            return None
        low, high = max(start, 0.0), top
        for _ in range(200):
            if high - low <= 1e-12 * high:
                break
            middle = (low + high) / 2
            if above(middle):
                low = middle
            else:
                high = middle
        return low

    @staticmethod
    def _solve_epsilon(directions: list[_Composition], delta: float, kind: str) -> float:
        def excess(eps: float) -> float:
            achieved = max(c.delta(eps, kind) for c in directions)
            return achieved - delta if achieved > delta else min(achieved - delta, 0.0)

        if excess(0.0) <= 0:
            return 0.0
        top = max((c.start + len(c.masses)) * c.h for c in directions)
        if excess(top) > 0:
            return math.inf  # only the mass at +∞ (or the tail bound) exceeds δ
        try:
            return smallest_satisfying(excess, 0.0, top, rtol=1e-12, what="epsilon")
        except NoSafeValueError as error:
            raise NotApplicableError(f"the PLD inversion for ε failed: {error}") from None

    def epsilon_bounds(self, delta: float) -> tuple[float | None, float]:
        """(lower, upper) certified bracket on ε(δ); lower is None where none is certified.

        A lower bound above the upper one is inconsistent (a numerical failure): it is
        reported as None, never clamped to the upper bound.
        """
        if not self.releases:
            return (0.0, 0.0)
        upper = round_up(self._epsilon(delta, "upper"))
        lower = self.lower_epsilon(delta)
        if lower is None or lower > upper:
            return (None, upper)
        return (lower, upper)

    def epsilon(self, delta: float) -> float:
        """Upper bound on ε(δ)."""
        if not self.releases:
            return 0.0
        if delta == 0:
            return math.inf
        return round_up(self._epsilon(delta, "upper"))


class PLDAccountant(Accountant[PLDSummary]):
    """Numerical PLD accountant: connect-the-dots upper bound, dominated (merged) lower bound.

    Valid for a composition fixed in advance (use it in a Ledger through ``plan``).
    """

    method: ClassVar[str] = "pld"
    handlers: ClassVar[dict[type[ev.Event], Any]] = {}

    def __init__(self, grid: float | None = None) -> None:
        """Compose on grids of step at most ``grid``.

        By default :data:`DEFAULT_GRID`, which compositions of bounded-loss releases may
        coarsen (:meth:`PLDSummary._bounded_step`); a step given here is never exceeded.
        """
        self.grid = None if grid is None else check_grid(grid)
        super().__init__()
        if self.grid is None:
            self._summary = PLDSummary((), DEFAULT_GRID, coarsen=True)
        else:
            self._summary = PLDSummary((), self.grid)

    @classmethod
    def zero(cls) -> PLDSummary:
        """Nothing released."""
        return PLDSummary()

    @classmethod
    def summarize(cls, event: ev.Event, grid: float | None = None) -> PLDSummary:
        """The PLD summary of ``event`` (checks every release is supported).

        ``grid``: as for the constructor (None: the default step, coarsened where allowed).
        """
        atoms = ev.flatten(event)
        for atom in atoms:
            _pairs(atom)
        if grid is None:
            return PLDSummary(tuple(atoms.items()), DEFAULT_GRID, coarsen=True)
        return PLDSummary(tuple(atoms.items()), check_grid(grid))

    def compose(self: Any, event: ev.Event, count: int = 1) -> Any:
        """Add ``count`` repetitions of ``event`` (all-or-nothing)."""
        ev._check_event("event", event)
        count = check_int_at_least("count", count, 1)
        new = PLDAccountant.summarize(event, self.grid).scaled(count)
        return self._compose_summary(new, event, count)

    def _compose_summary(self, new: PLDSummary, event: ev.Event, count: int) -> PLDAccountant:
        self._summary = self._summary + new
        self._events.append((event, count))
        return self


def epsilon_lower_bound(
    event: ev.Event, delta: float, *, grid: float = DEFAULT_GRID
) -> float | None:
    """A certified lower bound on the ε of ``event`` at ``delta``, from attained pairs.

    Returns None where no lower bound is certified (the search failed numerically); a
    returned float is a valid lower bound, never an upper bound in disguise.

    Available for more events than :func:`epsilon_bounds` — also for the discrete Gaussian
    (a one-dimensional integer shift) and sampling without replacement (the replaced
    record alone moves the statistic) — because a lower bound only needs *some* pair of
    neighbouring inputs, not a dominating one. It assumes the declared sensitivity is
    attained by a one-dimensional shift.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant.pld import epsilon_lower_bound
        >>> low = epsilon_lower_bound(ev.DiscreteGaussian(sigma=5.0) * 100, 1e-5)
        >>> 9.9 < low <= 10.72  # the zCDP upper bound is 10.72
        True
    """
    ev._check_event("event", event)
    delta = check_probability("delta", delta)
    grid = check_grid(grid)
    atoms = ev.flatten(event)
    for atom in atoms:
        _pairs(atom, "lower")
    if delta == 0:
        raise NotApplicableError("PLD lower bounds need delta > 0.")
    return PLDSummary(tuple(atoms.items()), grid).lower_epsilon(delta)


DEFAULT_RTOL = 1e-3
"""Default relative width of :func:`epsilon_bounds`' bracket."""

MAX_REFINE = 8
"""Most halvings of the automatic grid step :func:`epsilon_bounds` tries for its ``rtol``."""


def epsilon_bounds(
    event: ev.Event,
    delta: float,
    *,
    rtol: float = DEFAULT_RTOL,
    grid: float | None = None,
) -> tuple[float | None, float]:
    """A certified (lower, upper) bracket on the ε of ``event`` at ``delta`` (PLD).

    Upper end: the composition of connect-the-dots PLDs (Doroshenko, Ghazi, Kamath, Kumar
    & Manurangsi 2022, "Connect the dots: tighter discrete approximations of privacy loss
    distributions"), each the PLD of a pair that *dominates* the release. Lower end: the
    composition of grid PLDs of pairs *dominated* by a pair of neighbouring inputs the
    release attains (:func:`dominated`: a post-processing — cells merged into single
    outputs, then into grid points — so no rounding bias accumulates over a long
    composition, unlike losses rounded down to the grid). Both are composed by FFT as in
    Koskela, Jälkö & Honkela 2020 and Gopi, Lee & Wutschitz 2021 (PRV accountant), with
    the window's tails and the transform's rounding guard on the safe side of each.

    The grid step adapts to the scale of the per-release losses (see
    :meth:`PLDSummary._grid_for`); while the bracket is wider than ``rtol`` relative to
    its upper end, the step is halved (up to :data:`MAX_REFINE` times, or until a
    window would exceed :data:`MAX_GRID_POINTS`). Every bracket found along the way is
    valid, so the largest lower and the smallest upper end are returned: the bracket may
    stay wider than ``rtol`` where the grid limit is reached first.

    The upper end is at most what ``epsilon(event, delta, method="pld")`` returns. The
    lower end is None where no lower bound is certified (see
    :meth:`PLDSummary.lower_epsilon`); it is never clamped to the upper end.

    Args:
        event: The releases (every one supported by the PLD method, with a dominating
            pair for the upper end and an attained one for the lower end).
        delta: The δ of the guarantee, in [0, 1].
        rtol: The relative width (upper − lower)/upper to aim for; the default 1e-3
            answers typical audit questions, 1e-5 is reachable for most compositions.
        grid: The coarsest grid step; by default the step starts at √rtol times the
            loss scale (halving from :data:`MAX_GRID`; coarser than the default
            :data:`DEFAULT_GRID` where the losses are large, which is faster), and is
            refined from there.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant.pld import epsilon_bounds
        >>> lo, hi = epsilon_bounds(ev.Gaussian(5.0) * 100, 1e-5)
        >>> lo <= 9.997256146 <= hi
        True
        >>> (hi - lo) / hi <= 1e-3
        True
    """
    ev._check_event("event", event)
    delta = check_probability("delta", delta)
    rtol = check_positive("rtol", rtol)
    ratio = min(1.0, math.sqrt(rtol)) / 4
    coarsest = MAX_GRID if grid is None else check_grid(grid)
    releases = PLDAccountant.summarize(event, coarsest).releases
    summary = PLDSummary(releases, coarsest, 0, ratio, False, max(delta, 1e-300))
    lower, upper = summary.epsilon_bounds(delta)
    for refine in range(1, MAX_REFINE + 1):
        if lower is not None and (upper - lower <= rtol * upper or not math.isfinite(upper)):
            break
        finer = PLDSummary(releases, coarsest, refine, ratio, False, max(delta, 1e-300))
        try:
            low, high = finer.epsilon_bounds(delta)
        except NotApplicableError:
            break  # the window would exceed MAX_GRID_POINTS: keep the bracket found
        upper = min(upper, high)
        if low is not None:
            lower = low if lower is None else max(lower, low)
    if lower is not None and lower > upper:
        return (None, upper)  # inconsistent: a numerical failure, never clamped
    return (lower, upper)


__dir__ = namespace(__all__)
