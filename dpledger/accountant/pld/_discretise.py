"""Releases on a loss grid: the dominating (upper) and dominated (lower) grid PLDs.

:func:`connect_the_dots` replaces a release's pair by the connect-the-dots PLD on a
uniform grid of step h (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022), a pair that
dominates it: for upper bounds. :func:`dominated` merges the release's outputs cell by
cell, then onto grid points (a post-processing, so a pair it dominates): for lower
bounds. See :mod:`dpledger.accountant.pld`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpledger._numerics import float_up, round_up
from dpledger.accountant._pairs import MonotoneLoss, Pair
from dpledger.errors import NotApplicableError

MAX_GRID_POINTS = 1 << 24
"""Largest number of grid points one PLD may allocate (a single release or a window).

16,777,216 points of float64 are 128 MiB per array; a composition holds a few such arrays
per direction (the largest evaluation measured, five Poisson-sampled Gaussians at σ =
0.033 and rate 1e-6, peaks at 1.6 GB resident). A composition whose losses span more
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


class _GridLimitError(NotApplicableError):
    """A grid would exceed :data:`MAX_GRID_POINTS` (a coarser step may fit)."""


def _check_grid(points: float, top_loss: float, what: str) -> None:
    """Refuse, before allocating, a grid beyond :data:`MAX_GRID_POINTS` or :data:`MAX_LOSS`."""
    if not points <= MAX_GRID_POINTS:
        raise _GridLimitError(
            f"method 'pld' would need {points:.3g} grid points for {what}, more than "
            f"MAX_GRID_POINTS = {MAX_GRID_POINTS}; use a coarser grid, or method='auto' "
            "(which then uses the closed-form methods)."
        )
    if not abs(top_loss) <= MAX_LOSS:
        raise NotApplicableError(
            f"method 'pld' cannot hold privacy losses up to {top_loss:.4g} for {what} "
            f"(beyond MAX_LOSS = {MAX_LOSS}, e^L overflows); use method='auto'."
        )


def _first_beyond(holds: Callable[[np.ndarray], np.ndarray], a: float, b: float, h: float) -> float:
    """A point within h/4 above the threshold of a monotone test, on its ``False`` side.

    ``holds`` is True on [a, t*) and False from t* on (for the arrays it is given), with
    ``holds(a)`` True and ``holds(b)`` False. Returns a point c with ``holds(c)`` False
    and ``holds`` True somewhere within h/4 below c: a 64-ary search, each round one
    vectorised evaluation at 63 interior points (a bisection took ~40 scalar calls of a
    subsampled pair's tail, 1.5 ms per grid: a tenth of a cold DP-SGD query).
    """
    for _ in range(40):
        if b - a <= h / 4:
            break
        points = np.linspace(a, b, 65)[1:-1]
        inside = np.asarray(holds(points), dtype=bool)
        first = int(np.argmin(inside)) if not inside.all() else len(points)
        if first < len(points):
            b = float(points[first])
        if first > 0:
            a = float(points[first - 1])
    return b


def _first_doubling(holds: Callable[[np.ndarray], np.ndarray]) -> float:
    """The first of 1, 2, 4, … at which the monotone test ``holds`` is False.

    Eight doublings per vectorised evaluation; beyond 2^95 (far past :data:`MAX_LOSS`,
    which the caller then refuses) the last point is returned.
    """
    for start in range(0, 96, 8):
        points = 2.0 ** np.arange(start, start + 8)
        inside = np.asarray(holds(points), dtype=bool)
        if not inside.all():
            return float(points[int(np.argmin(inside))])
    return 2.0**95


def _grid_range(pair: Pair, h: float, tail: float = _TAIL) -> tuple[int, int]:
    """Grid indices covering the losses of ``pair``.

    Up to a P-mass of ``tail`` above the grid and :data:`_TAIL` below it.

    Raises:
        NotApplicableError: The range exceeds :data:`MAX_GRID_POINTS` or :data:`MAX_LOSS`.
    """
    lo, hi = pair.support
    if math.isinf(hi):
        # smallest t with P(L ≥ t) ≤ tail, to a quarter step on the side of the tail bound
        t = _first_doubling(lambda x: np.asarray(pair.p_at_least(x)) > tail)
        a = -t if t <= 1 else t / 2
        hi = _first_beyond(lambda x: np.asarray(pair.p_at_least(x)) > tail, a, t, h)
    if math.isinf(lo):
        t = -_first_doubling(lambda x: 1.0 - np.asarray(pair.p_at_least(-x)) > _TAIL)
        b = t / 2 if t < -1 else 1.0
        # the largest t with P(L < t) ≤ _TAIL: search on the reflected axis
        lo = -_first_beyond(lambda x: 1.0 - np.asarray(pair.p_at_least(-x)) > _TAIL, -b, -t, h)
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
    w = np.multiply(shape.q_density(x), half[:, None] * _GL_WEIGHTS)
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
    E_Q[(e^L − e^{ε_last})₊] to +∞, as does the P-mass outside the integrated outputs
    (:attr:`MonotoneLoss.beyond`). The Q-integrals are quadrature sums
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
    # the P-mass of outputs outside the integrated range goes to +∞ too (never dropped)
    return _Discrete(j0, masses, min(1.0, infinite + shape.beyond))


def _atom_cells(
    losses: np.ndarray, j0: int, j1: int, h: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kept, k, d): each atom's cell k (from j0) and offset d ≥ its true offset ℓ − εₖ.

    kept is False for atoms above the grid's last point. In floats, d errs by at most
    m = 4u(|ℓ| + h) (the product kh and one subtraction), so d + m is used; atoms within m
    of a grid point or outside [j0·h, j1·h] (where the floor itself may be off by one)
    are placed in exact rational arithmetic instead (below the grid: moved up to the
    first point, d = 0).
    """
    n = j1 - j0 + 1
    with np.errstate(invalid="ignore"):
        cell = np.floor(losses / h)
        offset = losses - cell * h
    margin = 4 * 2.0**-53 * (np.abs(losses) + h) + 5e-324
    k = cell.astype(np.int64) - j0
    border = (offset < margin) | (offset > h - margin) | (k < 0) | (k > n - 2)
    kept = np.ones(len(losses), dtype=bool)
    d = np.minimum(offset + margin, h)
    step = Fraction(h)
    for i in np.flatnonzero(border).tolist():
        exact = Fraction(float(losses[i]))
        if exact > j1 * step:
            kept[i] = False
            continue
        k[i] = min(max(math.floor(exact / step) - j0, 0), n - 2)
        rest = exact - (j0 + int(k[i])) * step  # in [0, h] unless below the grid
        d[i] = 0.0 if rest <= 0 else min(float_up(rest), h)
    return kept, k[kept], d[kept]


def _connect_the_dots_atoms(
    losses: np.ndarray, p: np.ndarray, infinite_mass: float, j0: int, j1: int, h: float
) -> _Discrete:
    """Connect-the-dots masses of a pair with finitely many losses, atom by atom.

    An atom with P-mass p at loss ℓ ∈ [εₖ, εₖ₊₁] is spread, linearly in e^ℓ, to the two
    grid points (as in :func:`_connect_the_dots_monotone`): P-mass
    p·(e^{h−d} − 1)/(e^h − 1) to εₖ and p·e^{h−d}(e^d − 1)/(e^h − 1) to εₖ₊₁, d = ℓ − εₖ.
    Every term is non-negative, so no mass is lost to cancellation.

    The cell and d are never below the truth: the grid's losses are the real numbers
    (j0 + i)·h, and a float evaluation put the atom 0.1 of randomized response on the
    point 1000·h = 0.1 − 7.6e-19 (h = 1e-4), *below* its loss — a composition of 300 then
    had δ̄(30.0) = 0 where the exact δ is 6.6e-215 (:func:`_atom_cells`).
    """
    n = j1 - j0 + 1
    kept, k, d = _atom_cells(losses, j0, j1, h)
    if not kept.all():
        # the grid covers the support (see _grid_range); an atom above it goes to +∞ (δ
        # atoms), never down onto the top point
        infinite_mass = min(1.0, round_up(math.fsum([infinite_mass, *p[~kept].tolist()])))
        p = p[kept]
    em1h = math.expm1(h)
    down = p * np.expm1(h - d) / em1h
    up = p * np.exp(h - d) * np.expm1(d) / em1h
    masses = np.bincount(k, down, n) + np.bincount(k + 1, up, n)
    return _Discrete(j0, masses, infinite_mass)


def connect_the_dots(pair: Pair, h: float, tail: float = _TAIL) -> _Discrete:
    """The dominating grid PLD of ``pair`` (Doroshenko et al. 2022), as described above.

    ``tail``: the P-mass allowed above the grid (it goes to +∞).
    """
    j0, j1 = _grid_range(pair, h, tail)
    shape = pair.monotone()
    if shape is not None:
        return _connect_the_dots_monotone(shape, j0, j1, h)
    atoms = pair.finite_atoms()
    if atoms is not None:
        return _connect_the_dots_atoms(*atoms, pair.infinite_mass, j0, j1, h)
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
    atoms = pair.finite_atoms()
    if atoms is not None:
        return atoms
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
