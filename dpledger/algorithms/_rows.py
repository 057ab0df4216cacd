"""Record-local row maps: norms, clipping to a declared bound, scaling onto the unit ball.

Every map here acts on each row alone (its result never depends on another row), so
applying it before a release is privacy-neutral: a neighbouring data set's rows map to
the same rows, except the one that differs. What matters is that a row clipped to a
bound B has an *exact* norm ≤ B — not only a computed one — since the sensitivities
charged assume it: :func:`shrink_rows` re-checks after rounding, and the norms are
computed without under- or overflow.
"""

from __future__ import annotations

import numpy as np

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError

__all__ = ["clip_rows", "enforce_unit_norm", "norms", "row_norms", "scale_rows", "shrink_rows"]


def row_norms(X: np.ndarray) -> np.ndarray:
    """‖row‖₂ of every row, exact even where the squares under- or overflow."""
    squares = np.einsum("ij,ij->i", X, X)
    result = np.sqrt(squares)
    risky = (squares < 1e-280) | ~np.isfinite(squares)
    if risky.any():  # rescale by the largest entry first (as a careful norm does)
        sub = X[risky]
        top = np.max(np.abs(sub), axis=1)
        unit = sub / np.where(top > 0, top, 1.0)[:, None]
        result[risky] = top * np.sqrt(np.einsum("ij,ij->i", unit, unit))
    return np.asarray(result)


def norms(X: np.ndarray, norm: str) -> np.ndarray:
    """‖x‖_K of every row: "l2" (no under- or overflow), "l1" (∞ if it overflows), or ℓ∞."""
    if norm == "l2":
        return row_norms(X)
    if norm == "l1":
        return np.asarray(np.abs(X).sum(axis=1))
    return np.asarray(np.abs(X).max(axis=1))


def clip_rows(X: np.ndarray, bound: float, norm: str) -> np.ndarray:
    """Rows with ‖x‖_K > bound scaled onto the sphere of radius bound (record-local).

    A new array (the input is not modified); :func:`shrink_rows` does it in place.
    """
    clipped = np.array(X, dtype=float, order="C", copy=True)  # one summation order
    shrink_rows(clipped, bound, norm)
    return clipped


def shrink_rows(X: np.ndarray, bound: float, norm: str) -> None:
    """Scale, in place, the rows with ‖x‖_K > bound onto the sphere of radius bound.

    The *exact* norm of every row is ≤ bound afterwards: rows are brought to a computed
    norm ≤ bound·(1 − 2(d + 2)u) (u = 2⁻⁵³), and a computed ℓ₁ or ℓ₂ norm of d entries is
    within a relative (d + 2)u of the exact one (entries ≥ 2⁻⁹⁰⁰·2⁻⁴⁰ are normal, the
    bound is ≥ 2⁻⁹⁰⁰: no subnormal rounding); ℓ∞ is exact. Only the rows that are over
    are touched (read once, written once): the others keep their values exactly.
    """
    if X.dtype != np.float64 or not X.flags.c_contiguous or not X.flags.writeable:
        raise InvalidArgumentError("internal error: rows to shrink must be C-contiguous floats.")
    d = X.shape[1] if X.ndim == 2 else 1
    target = bound * (1.0 - 2.0 * (d + 2) * 2.0**-53)
    sizes = norms(X, norm)
    huge = ~np.isfinite(sizes)  # a finite row whose norm overflows: far above the bound
    if huge.any():  # in units of its largest entry first, then onto the sphere below
        X[huge] /= np.max(np.abs(X[huge]), axis=1)[:, None]
        sizes[huge] = norms(np.ascontiguousarray(X[huge]), norm)
    over = np.flatnonzero((sizes > target) | huge)
    if over.size == 0:
        return
    if over.size == len(X):  # every row (data on the sphere): in place, no gather
        _shrink_all(X, sizes, target, norm, d)
        return
    part = X[over]
    part *= (target / np.where(sizes[over] > 0, sizes[over], 1.0))[:, None]
    # rounding may leave a scaled row a hair above the target: shrink it by a margin of
    # the norm's own error size, doubled each pass (one pass suffices in practice; the
    # row's direction is kept)
    margin = 2.0 * (d + 2) * 2.0**-53
    for _ in range(60):
        after = norms(part, norm)
        still = after > target
        if not still.any():
            X[over] = part
            return
        part[still] *= (target / after[still] * (1.0 - margin))[:, None]
        margin = min(2.0 * margin, 0.5)
    raise InvalidArgumentError("internal error: a clipped row stayed outside `x_bound`.")


def _shrink_all(X: np.ndarray, sizes: np.ndarray, target: float, norm: str, d: int) -> None:
    """:func:`shrink_rows` where every row is over: the same steps, in place."""
    X *= (target / np.where(sizes > 0, sizes, 1.0))[:, None]
    margin = 2.0 * (d + 2) * 2.0**-53
    for _ in range(60):
        after = norms(X, norm)
        still = np.flatnonzero(after > target)
        if still.size == 0:
            return
        X[still] *= (target / after[still] * (1.0 - margin))[:, None]
        margin = min(2.0 * margin, 0.5)
    raise InvalidArgumentError("internal error: a clipped row stayed outside `x_bound`.")


def enforce_unit_norm(Xs: np.ndarray) -> None:
    """Shrink, in place, the rows whose *exact* norm could exceed 1 by rounding.

    :func:`shrink_rows` with bound 1: every row's exact norm is ≤ 1 afterwards (before, a
    row's computed norm was brought to ≤ 1, and its exact norm could still exceed 1 by
    2e-16, beyond the sensitivities without slack under ``safe_noise=False``).
    """
    shrink_rows(Xs, 1.0, "l2")


def scale_rows(
    X: np.ndarray, x_bound: float, unit: bool, out: np.ndarray | None = None
) -> np.ndarray:
    """Rows clipped to ``x_bound`` and divided by it (or unit-normed): ‖row‖ ≤ 1, always.

    Record-local. The norms are computed without under- or overflow, and the result is
    re-checked, so no row leaves the unit ball — not even by rounding, and not a row of
    subnormal entries whose squares would vanish. ``out``: an array of X's shape to write
    the rows into (it may be the leading columns of a wider array, e.g. one with an
    intercept column: no second copy of X), returned; by default a new C-ordered one.
    The same bits either way.
    """
    if unit:
        # each row to the sphere (a zero row stays zero), in units of its largest entry
        # first: 1/‖x‖ overflows for a subnormal row ([1e-310, 0] became NaN, and whether
        # a fit refused then depended on that one record)
        top = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(X.shape[0])
        X = X / np.where(top > 0, top, 1.0)[:, None]
    sizes = row_norms(X)
    positive = sizes > 0
    # 1/‖x‖ of a subnormal row is +inf (then clipped to 1/x_bound): without the errstate
    # numpy warned of the overflow, an observable that depended on that one record
    with np.errstate(over="ignore"):
        inverse = np.divide(1.0, sizes, out=np.zeros_like(sizes), where=positive)
    # unit: onto the sphere; else clipped to x_bound, scaled
    factor = inverse if unit else np.where(positive, np.minimum(1.0 / x_bound, inverse), 0.0)
    Xs: np.ndarray
    if out is None:
        Xs = np.multiply(X, factor[:, None], order="C", dtype=float)  # C order
    else:
        Xs = np.multiply(X, factor[:, None], out=out)
    in_place = Xs.flags.c_contiguous  # else re-checked through a C-ordered gather
    if unit:  # every row on the sphere: each is re-checked
        if in_place:
            enforce_unit_norm(Xs)
        else:
            _recheck(Xs, np.arange(len(Xs)))
        return Xs
    # a row whose computed norm is ≤ x_bound·(1 − 4(d + 2)u) was only multiplied by
    # fl(1/x_bound): its exact norm is ≤ x_bound(1 − 4(d + 2)u)(1 + u)(1 + (d + 2)u) (the
    # threshold's and the norm's rounding), and each entry of the product is within
    # (1 + u)² of x/x_bound (the reciprocal's and the product's rounding), so its exact new
    # norm is ≤ (1 − 4(d + 2)u)(1 + u)³(1 + (d + 2)u) ≈ 1 − 3(d + 2)u + 3u < 1: inside
    # without a re-check. The others (near or over the bound, or non-finite norms) are
    # re-checked as before.
    d = X.shape[1]
    inside = sizes <= x_bound * (1.0 - 4.0 * (d + 2) * 2.0**-53)
    near = np.flatnonzero(~inside)
    if near.size * 4 > len(Xs) and in_place:
        enforce_unit_norm(Xs)  # most rows near the bound: in place, no gather
    elif near.size:
        _recheck(Xs, near)
    return Xs


def _recheck(Xs: np.ndarray, rows: np.ndarray) -> None:
    """:func:`enforce_unit_norm` on the given rows of Xs, through a C-ordered gather.

    Row by row the same bits as in place (each row's norm and scaling are its own).
    """
    part = np.ascontiguousarray(Xs[rows])
    enforce_unit_norm(part)
    Xs[rows] = part


__dir__ = namespace(__all__)
