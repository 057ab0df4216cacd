"""Data intake for the estimators: validation, declared-bound clipping, chunked statistics.

One pass over the rows, chunk by chunk, for numpy arrays, pandas objects and dask
arrays/DataFrames alike. Dask input is reduced partition by partition by dask itself
(each partition's statistics are computed where the partition lives and only the d×d
sums travel), so data larger than memory or spread over a cluster is never gathered.
Every sum is exact (values on a fixed grid, integer accumulation: see :data:`SUB_ROWS`),
so no floating-point error that grows with the number of rows enters a release.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._validation import check_positive
from dpledger.errors import DPLedgerError, InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms.exact_value import ExactValue

__all__ = [
    "GRAM",
    "ClippedRowSums",
    "ExactSums",
    "Moments",
    "Statistics",
    "as_design",
    "as_target",
    "exact_column_sums",
    "is_dask",
    "row_chunks",
    "sufficient_statistics",
    "warn_column_vector",
]

#: Rows per chunk for in-memory input (bounded memory for the per-chunk copies).
CHUNK_ROWS = 1 << 16

#: A public bound on the number of rows (int64 indexing): what a check that must not read
#: the private count may assume, and the most a declared ``data_size`` may count.
MAX_ROWS = 1 << 63

Transform = Callable[[np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray | None]]


def is_dask(data: Any) -> bool:
    """Is ``data`` a dask collection (array, DataFrame or Series)?"""
    return type(data).__module__.split(".")[0] == "dask" or hasattr(data, "__dask_graph__")


def _is_numeric(dtype: Any) -> bool:
    try:
        return bool(np.issubdtype(dtype, np.number)) or bool(np.issubdtype(dtype, np.bool_))
    except TypeError:  # pandas extension dtypes (strings, categories, ...)
        return False


def _numeric_frame(data: Any, name: str) -> Any:
    """A pandas/dask DataFrame's values, refusing non-numeric columns by name."""
    dtypes = getattr(data, "dtypes", None)
    if dtypes is not None and hasattr(dtypes, "items"):
        bad = [str(col) for col, dtype in dtypes.items() if not _is_numeric(dtype)]
        if bad:
            raise InvalidArgumentTypeError(
                f"`{name}` must have numeric columns only; non-numeric: {', '.join(bad)}. "
                "Encode categories first (e.g. pandas.get_dummies)."
            )
    return data


def as_design(X: Any) -> Any:
    """``X`` as a 2-D float array (numpy) or dask array; shape and type checked.

    In-memory data goes through scikit-learn's ``check_array``: numbers (bool included) as
    float64, 2-D, finite, at least one column — any number of rows: no rows is a data set
    like any other (the column count is public, declared by the schema; under add/remove
    the row count is not), and its statistics are zero sums.
    """
    if is_dask(X):
        X = _numeric_frame(X, "X")
        if _is_frame(X):
            return X  # reduced partition by partition, with its target's partitions
        if X.ndim != 2:
            raise InvalidArgumentError(
                f"`X` must be 2-D (rows × features). Found {X.ndim}-D with shape {X.shape}."
            )
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise InvalidArgumentTypeError(f"`X` must be real numbers. Found dtype {X.dtype}.")
        return X.astype(float).rechunk({1: -1})
    return _checked_array(_numeric_frame(X, "X"), "X")


def as_target(y: Any, rows: int | None) -> Any:
    """``y`` as a 1-D float array (numpy) or dask array, one value per row of ``X``.

    In-memory data goes through scikit-learn's ``check_array`` (numbers as float64, finite);
    a single column (n, 1) is taken as 1-D.
    """
    if y is None:
        raise InvalidArgumentError(
            "`y` is required: this estimator is supervised and requires y to be passed, but "
            "the target y is None (fit(X, y))."
        )
    if is_dask(y):
        if _is_frame(y):
            _numeric_frame(y, "y")
            if y.ndim == 2 and len(y.columns) != 1:
                raise InvalidArgumentError(f"`y` must be 1-D. Found {len(y.columns)} columns.")
            return y
        if y.ndim == 2 and y.shape[1] == 1:
            warn_column_vector()
            y = y[:, 0]
        if y.ndim != 1:
            raise InvalidArgumentError(f"`y` must be 1-D. Found shape {y.shape}.")
        return y.astype(float)
    array = _checked_array(y, "y")
    if array.ndim == 2 and array.shape[1] == 1:
        warn_column_vector()
        array = array[:, 0]
    if array.ndim != 1:
        raise InvalidArgumentError(f"`y` must be 1-D. Found shape {array.shape}.")
    if rows is not None and array.shape[0] != rows:
        raise InvalidArgumentError(
            f"`X` and `y` must have the same number of rows. Found {rows} and {array.shape[0]}."
        )
    return array


def warn_column_vector() -> None:
    """scikit-learn's warning for a column-vector ``y`` (its shape is public: the schema)."""
    from sklearn.exceptions import DataConversionWarning

    warnings.warn(
        "A column-vector y was passed when a 1d array was expected. Please change the shape "
        "of y to (n_samples,), for example using ravel().",
        DataConversionWarning,
        stacklevel=4,
    )


def _checked_array(data: Any, name: str) -> np.ndarray:
    """``data`` through ``sklearn.utils.check_array``: float64, finite, ``X`` 2-D, ``y`` ≤ 2-D.

    scikit-learn's refusal becomes a dpledger error naming ``name`` and saying what is wrong
    (:func:`_refusal`) — never echoing the data, as scikit-learn's own message may.
    """
    from sklearn.utils import check_array

    design = name == "X"
    try:
        array: np.ndarray = check_array(
            data,
            dtype=np.float64,
            ensure_2d=design,
            allow_nd=False,
            ensure_min_samples=0,
            ensure_min_features=1 if design else 0,
            input_name=name,
        )
    except (TypeError, ValueError) as error:
        raise _refusal(data, name, error) from None
    return array


def _refusal(data: Any, name: str, error: Exception) -> DPLedgerError:
    """What is wrong with ``data`` (refused by ``check_array`` with ``error``), named."""
    from scipy import sparse

    design = name == "X"
    if sparse.issparse(data):
        return InvalidArgumentTypeError(
            f"`{name}` must be dense (a numpy array or a pandas or dask object). Found a sparse "
            f"{type(data).__name__}."
        )
    try:
        array = np.asarray(data)
    except (TypeError, ValueError) as reason:
        return InvalidArgumentTypeError(f"`{name}` must be a numeric array. {reason}")
    if np.iscomplexobj(array):
        return InvalidArgumentError(
            f"`{name}` must be real: Complex data not supported. Found dtype {array.dtype}."
        )
    if design and array.ndim != 2:
        return InvalidArgumentError(
            f"`X` must be 2-D (rows × features). Reshape your data: X.reshape(-1, 1) for a "
            f"single feature, X.reshape(1, -1) for a single row. Found {array.ndim}-D with "
            f"shape {array.shape}."
        )
    if not design and array.ndim > 2:
        return InvalidArgumentError(f"`y` must be 1-D. Found shape {array.shape}.")
    if design and array.shape[1] == 0:
        return InvalidArgumentError(
            f"`X` must have at least one column (feature): found 0 feature(s) "
            f"(shape={array.shape}) while a minimum of 1 is required."
        )
    try:
        values = array.astype(float)
    except (TypeError, ValueError):
        values = None
    if values is not None and not np.all(np.isfinite(values)):
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(values))[0])
        where = f"row {at[0]}" + (f", column {at[1]}" if len(at) == 2 else "")
        hint = " Impute or drop missing values first." if design else ""
        return InvalidArgumentError(
            f"`{name}` must be finite (no NaN or inf); found {float(values[at])!r} at "
            f"{where}.{hint}"
        )
    if values is None or array.dtype == object:
        return InvalidArgumentTypeError(
            f"`{name}` must be numeric. Found dtype {array.dtype} ({error})."
        )
    return InvalidArgumentError(f"`{name}` was refused: {error}")


def row_chunks(X: np.ndarray, y: np.ndarray | None) -> Iterator[tuple[np.ndarray, Any]]:
    """(X, y) in blocks of :data:`CHUNK_ROWS` rows (views, no copies).

    At least one block, empty for 0 rows: the statistics of no rows are zero sums of the
    right shapes, computed by the same transform (control flow never depends on n).
    """
    if X.shape[0] == 0:
        yield X, y
        return
    for start in range(0, X.shape[0], CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        yield X[start:stop], (None if y is None else y[start:stop])


@dataclass(frozen=True)
class Moments:
    """The per-row weights of the sums Σ aᵢx̃ᵢx̃ᵢᵀ, Σ bᵢx̃ᵢ and Σ cᵢ, and their declared ranges.

    ``weights(X̃, ỹ)`` returns (a, b, c) for a block of transformed rows, each an array
    of one value per row or None (a: every aᵢ = 1; b, c: that sum is not wanted). It must
    be record-local (a row's weights depend on that row and public values only). Each
    weight is kept within its declared range (``a``, ``b``, ``c``: (low, high)) and every
    row within ``row_norm`` in ℓ₂: the ranges the sensitivities are derived from.
    With ``gram=False`` the Gram sum is not computed (an empty array).
    """

    weights: Callable[[np.ndarray, np.ndarray | None], tuple[Any, Any, Any]]
    row_norm: float = 1.0
    a: tuple[float, float] | None = None
    b: tuple[float, float] | None = (-1.0, 1.0)
    c: tuple[float, float] | None = None
    gram: bool = True


#: (X̃ᵀX̃, X̃ᵀỹ) for rows in the unit ball and |ỹ| ≤ 1 (SSP, ADASSP).
GRAM = Moments(lambda X, y: (None, y, None))


@dataclass(frozen=True)
class Statistics:
    """Σ aᵢx̃ᵢx̃ᵢᵀ, Σ bᵢx̃ᵢ (zeros if no b) and Σ cᵢ (0 if no c), each correctly rounded.

    ``exact`` holds the same three sums as :class:`~dpledger.mechanisms.ExactValue`: what
    a release passes to its mechanism, so that the grid floors the exact sum.
    """

    gram: np.ndarray
    vector: np.ndarray
    scalar: float
    exact: ExactSums


class ExactSums:
    """The exact Σ aᵢx̃ᵢx̃ᵢᵀ, Σ bᵢx̃ᵢ and Σ cᵢ (a 1-entry array), built when first asked for."""

    def __init__(self, exact: _Exact, units: tuple[Fraction, Fraction, Fraction]) -> None:
        self._exact = exact
        self._units = units

    def gram_integers(self) -> tuple[np.ndarray, Fraction]:
        """The Gram sum as grid integers and the value of one unit (a power of two)."""
        return self._exact.gram, self._units[0]

    @functools.cached_property
    def gram(self) -> ExactValue:
        return ExactValue.from_integers(self._exact.gram, self._units[0])

    @functools.cached_property
    def vector(self) -> ExactValue:
        return ExactValue.from_integers(self._exact.vector, self._units[1])

    @functools.cached_property
    def scalar(self) -> ExactValue:
        scalar = np.array([self._exact.scalar], dtype=object)
        return ExactValue.from_integers(scalar, self._units[2])


# -- exact sums -----------------------------------------------------------------------
#
# A floating-point sum over n rows errs by up to ≈ n·u·Σ|terms|, and how much depends on
# the order and on every other row: two neighbouring data sets can then differ by more
# than the sensitivity (Casacuberta, Shoemate, Vadhan & Wagaman 2022 turn this into
# attacks on DP sums at n ≈ 10⁸). So every value entering a sum is first put on a fixed
# dyadic grid relative to its declared bound (record-local: rounded to nearest, kept
# within the declared range, rows within their declared norm), the products of a block of
# SUB_ROWS rows are computed by BLAS *exactly* (each product is an integer below 2⁴⁰ in
# grid units, so every partial sum of ≤ 2¹⁰ of them is an integer below 2⁵⁰, exact in
# float64 whatever the order of summation), and the block sums are added as integers.
# The totals are exact — independent of the order, the chunking and dask's partitioning —
# and are rounded to float64 once, at the end. The grid: 2⁻²⁰ of the row bound for the
# rows (2⁻¹⁴ when the Gram weights vary, with 2⁻¹² of their bound for the weights), 2⁻⁴⁰
# for scalar terms — far below the noise of any release.

SUB_ROWS = 1 << 10
_PRODUCT_BITS = 40  # grid bits of one product: a block sum stays below 2⁵⁰ < 2⁵³
_X_BITS = 20
_X_BITS_WEIGHTED = 14
_A_BITS = _PRODUCT_BITS - 2 * _X_BITS_WEIGHTED  # 12
_FOLD_ROWS = 1 << 22  # int64 accumulators hold 2²² rows of terms < 2⁴⁰ (2⁶² < 2⁶³)


def _power_of_two_above(bound: float) -> float:
    """The smallest power of two ≥ ``bound`` (> 0)."""
    mantissa, exponent = math.frexp(bound)
    if exponent > 1023 and mantissa != 0.5:
        raise InvalidArgumentError(
            f"a declared bound of {bound!r} is beyond 2**1023 ≈ 9e307: sums of such values "
            "leave the float range. Rescale the data (and its bounds) first."
        )
    return math.ldexp(1.0, exponent - 1 if mantissa == 0.5 else exponent)


def _grid_range(low: float, high: float, bits: int) -> tuple[float, int, int]:
    """(scale P, lowest and highest grid integer within [low, high]) for values/P·2^bits."""
    top = max(abs(low), abs(high))
    scale = _power_of_two_above(top) if top > 0 else 1.0
    unit = Fraction(2**bits) / Fraction(scale)
    lowest = -((-Fraction(low) * unit).__floor__())  # ⌈low·unit⌉, exactly
    highest = (Fraction(high) * unit).__floor__()
    if lowest > highest:  # no grid point in a range narrower than a step: every value
        # goes to the neighbouring point nearer zero (|·| ≤ the bound; neighbours agree)
        lowest = highest = highest if low > 0 else lowest
    return scale, int(lowest), int(highest)


def _on_grid(values: Any, low: float, high: float, bits: int) -> tuple[np.ndarray, float]:
    """(integers m as floats, scale P): values ≈ m·P·2^-bits, rounded to nearest, in range."""
    scale, lowest, highest = _grid_range(low, high, bits)
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError("internal error: a per-row weight is not finite.")
    grid = np.clip(np.rint(array / scale * 2.0**bits), lowest, highest)
    return grid, scale


def _rows_on_grid(X: np.ndarray, norm: float, bits: int) -> tuple[np.ndarray, float]:
    """(integer grid M as floats, scale P): rows ≈ M·P·2^-bits with ‖row‖₂ ≤ ``norm`` exactly.

    Rounded to nearest; a row the rounding pushes past the norm (one on the boundary) is
    rounded toward zero from slightly inside instead, which cannot leave the ball.
    """
    if not np.all(np.isfinite(X)):
        raise InvalidArgumentError(
            "a transformed row is not finite (declared bounds so wide that their width "
            "overflows?): rescale the data and its bounds."
        )
    scale = _power_of_two_above(norm)
    unit = 2.0**bits
    limit = float(((Fraction(norm) / Fraction(scale) * 2**bits) ** 2).__floor__())
    factor = unit / scale  # a power of two: X·factor is X/scale·unit, or exact where that
    if math.isfinite(factor):  # underflows (to a |value| < 2⁻¹⁰⁰⁰, which rounds to 0 anyway)
        grid = X * factor
        np.rint(grid, out=grid)
    else:
        grid = np.rint(X / scale * unit)
    squares = _squared_norms(grid)
    outside = squares > limit
    if outside.any():
        grid[outside] = np.trunc(X[outside] / scale * unit * (1.0 - 2.0**-30))
        again = _squared_norms(grid[outside])
        if np.any(again > limit):
            raise InvalidArgumentError("internal error: a transformed row exceeds its bound.")
    return grid, scale


def _squared_norms(grid: np.ndarray) -> np.ndarray:
    """Σⱼ mᵢⱼ² per row of grid integers, exact wherever it decides the bound check.

    The terms are non-negative integers: every partial sum up to 2⁵³ is exact, and a sum
    beyond 2⁵³ rounds to a value still above any limit (≤ 2⁴²) — in any column count.
    """
    return np.asarray(np.einsum("ij,ij->i", grid, grid))


@dataclass
class _Exact:
    """Exact sums of grid integers (int64 while they fit, Python integers beyond)."""

    gram: np.ndarray
    vector: np.ndarray
    scalar: int
    rows: int = 0

    def __add__(self, other: _Exact) -> _Exact:
        return _Exact(
            _wide(self.gram) + _wide(other.gram),
            _wide(self.vector) + _wide(other.vector),
            int(self.scalar) + int(other.scalar),
            self.rows + other.rows,
        )


def _wide(array: np.ndarray) -> np.ndarray:
    return array if array.dtype == object else array.astype(object)


class _Layout:
    """The grids of one :class:`Moments`: bits and scales, fixed before any data is read."""

    def __init__(self, spec: Moments) -> None:
        self.spec = spec
        self.x_bits = _X_BITS if spec.a is None else _X_BITS_WEIGHTED
        self.b_bits = _PRODUCT_BITS - self.x_bits
        self.x_scale = _power_of_two_above(check_positive("row_norm", spec.row_norm))

    def block(self, X: np.ndarray, y: np.ndarray | None) -> _Exact:
        """The exact grid sums of one transformed block (any number of rows)."""
        spec = self.spec
        a, b, c = spec.weights(X, y)
        d = X.shape[1]
        M, _ = _rows_on_grid(X, spec.row_norm, self.x_bits)
        A = None if spec.a is None else _on_grid(a, *spec.a, _A_BITS)[0]
        B = None if spec.b is None or b is None else _on_grid(b, *spec.b, self.b_bits)[0]
        C = None if spec.c is None or c is None else _on_grid(c, *spec.c, _PRODUCT_BITS)[0]
        g = d if spec.gram else 0
        gram = np.zeros((g, g), dtype=np.int64)
        vector = np.zeros(d, dtype=np.int64)
        for start in range(0, X.shape[0], SUB_ROWS):
            rows = slice(start, start + SUB_ROWS)
            Mb = M[rows]
            if spec.gram:
                left = Mb if A is None else Mb * A[rows, None]
                gram += (left.T @ Mb).astype(np.int64)  # exact: integers below 2⁵⁰
            if B is not None:
                vector += (Mb.T @ B[rows]).astype(np.int64)
        scalar = 0 if C is None else int(C.astype(np.int64).sum(dtype=np.int64))
        return _Exact(gram, vector, scalar, X.shape[0])

    def units(self) -> tuple[Fraction, Fraction, Fraction]:
        """The exact value of one grid unit of the Gram matrix, the vector and the scalar.

        Exact (powers of two as Fractions: a float product could underflow to 0). A sum
        not asked for (b or c None) is all zeros; its unit is 1.
        """
        spec = self.spec

        def unit(bounds: tuple[float, float] | None, bits: int) -> Fraction:
            if bounds is None:
                return Fraction(1)
            return Fraction(_grid_range(*bounds, bits)[0]) / Fraction(2**bits)

        x_unit = Fraction(self.x_scale) / 2**self.x_bits
        a_unit = unit(spec.a, _A_BITS)
        return (
            x_unit * x_unit * a_unit,
            x_unit * unit(spec.b, self.b_bits),
            unit(spec.c, _PRODUCT_BITS),
        )

    def result(self, exact: _Exact) -> Statistics:
        """The exact sums in data units, each rounded to the nearest float once."""
        units = self.units()
        scalar = np.array([exact.scalar], dtype=object)
        return Statistics(
            _scaled(exact.gram, units[0]),
            _scaled(exact.vector, units[1]),
            float(_scaled(scalar, units[2])[0]),
            ExactSums(exact, units),
        )


def _scaled(integers: np.ndarray, unit: Fraction) -> np.ndarray:
    """The integers × unit (a power of two): the nearest floats (the float view of a sum).

    One correct rounding of the integer, then an exact scaling — unless the result leaves
    the normal range, where it is rounded once more (a float view only: releases take the
    exact sums).
    """
    nearest = np.array([float(int(v)) for v in integers.ravel()]).reshape(integers.shape)
    exponent = unit.numerator.bit_length() - unit.denominator.bit_length()  # unit = 2^exponent
    with np.errstate(over="ignore", under="ignore"):
        return np.asarray(np.ldexp(nearest, exponent), dtype=float)


def _block_statistics(
    X: np.ndarray, y: np.ndarray | None, transform: Transform, layout: _Layout
) -> _Exact:
    """Exact grid sums of one (already validated) block after the record-local ``transform``."""
    Xt, yt = transform(X, y)
    return layout.block(np.asarray(Xt, dtype=float), yt)


def column_sum_units(bounds: list[tuple[float, float]]) -> np.ndarray:
    """The exact value of one grid unit of each column's sums (a 1 × columns object array)."""
    units = [
        Fraction(float(_grid_range(float(lo), float(hi), _PRODUCT_BITS)[0]))
        * Fraction(1, 2**_PRODUCT_BITS)
        for lo, hi in bounds
    ]
    return np.array(units, dtype=object)[None, :]


def column_grid_sums(
    values: np.ndarray,
    bounds: list[tuple[float, float]],
    group: np.ndarray | None = None,
    n_groups: int = 1,
) -> np.ndarray:
    """The exact grid-integer column sums (n_groups × columns, Python integers) of values.

    Each value is put on the grid 2⁻⁴⁰·P of its column (P the power of two ≥ the larger
    |bound|), rounded to nearest and kept within [low, high] (record-local), and the grid
    integers are summed exactly. Rows with a negative ``group`` are left out. Partial sums
    of blocks (dask partitions) add up exactly to the sums of the whole.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    columns = values.shape[1]
    grids = [_grid_range(float(lo), float(hi), _PRODUCT_BITS) for lo, hi in bounds]
    scales = np.array([g[0] for g in grids])
    lowest = np.array([float(g[1]) for g in grids])
    highest = np.array([float(g[2]) for g in grids])
    if not np.all(np.isfinite(values)):
        raise InvalidArgumentError("internal error: a summed value is not finite.")
    total = np.zeros((n_groups, columns), dtype=object)
    for start in range(0, values.shape[0], CHUNK_ROWS):  # int64 sums of ≤ 2¹⁶ values < 2⁴⁰
        block = values[start : start + CHUNK_ROWS]
        grid = np.clip(np.rint(block / scales * 2.0**_PRODUCT_BITS), lowest, highest)
        integers = grid.astype(np.int64)
        if group is None:
            part = integers.sum(axis=0, dtype=np.int64)[None, :]
        else:
            g = group[start : start + CHUNK_ROWS]
            keep = g >= 0
            part = np.stack(
                [_group_integer_sums(integers[keep, j], g[keep], n_groups) for j in range(columns)],
                axis=1,
            )
        total = total + part.astype(object)
    return total


def _group_integer_sums(integers: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Σ integers per group, exactly (int64), by two float bincounts.

    Each |integer| ≤ 2⁴⁰ splits into high·2²⁰ + low with 0 ≤ low < 2²⁰ and |high| ≤ 2²⁰;
    a block's ≤ 2¹⁶ halves sum to below 2³⁷ in magnitude, exact in float64 in any order.
    """
    low = integers & ((1 << 20) - 1)
    high = integers >> 20
    lows = np.bincount(group, weights=low, minlength=n_groups).astype(np.int64)
    highs = np.bincount(group, weights=high, minlength=n_groups).astype(np.int64)
    return (highs << 20) + lows


def exact_column_sums(
    values: np.ndarray,
    bounds: list[tuple[float, float]],
    group: np.ndarray | None = None,
    n_groups: int = 1,
) -> ExactValue:
    """Column sums (per group: n_groups × columns) of values within per-column ``bounds``.

    The exact sum (:func:`column_grid_sums`) as an :class:`~dpledger.mechanisms.ExactValue`
    (``numpy.asarray`` rounds it once), whatever the order of the rows.
    """
    total = column_grid_sums(values, bounds, group, n_groups)
    return ExactValue.from_integers(total, column_sum_units(bounds))


class ClippedRowSums:
    """Σᵢ clip_C(rᵢ·xᵢ) over fixed rows xᵢ, exactly, for one weight vector r after another.

    The per-row gradients of a generalised linear model are rᵢ·xᵢ (rᵢ the residual), so
    clipping each to L2 norm C is scaling the row by bᵢ = rᵢ·min(1, C/(|rᵢ|·‖xᵢ‖)), and
    the clipped sum is Σ bᵢxᵢ: the rows are put on a grid once, each step only the
    weights (noisy gradient descent: T releases over the same rows).

    The grid, record-local. Each row is split exactly into a power of two and a mantissa
    row, xᵢ = 2^eᵢ·x′ᵢ with max_j |x′ᵢⱼ| in [1/2, 1) (a zero row stays zero), and x′ᵢ is
    rounded to nearest on the grid 2⁻²⁰: the integers M′ᵢ (|M′ᵢⱼ| ≤ 2²⁰, and some
    |M′ᵢⱼ| ≥ 2¹⁹). The row summed is x̂ᵢ = 2^eᵢ·M′ᵢ·2⁻²⁰ (within 2⁻²¹·√d relative of xᵢ),
    with the exact squared norm sᵢ = Σⱼ M′ᵢⱼ² (grid units). The weight b′ᵢ = rᵢ·2^eᵢ of
    the mantissa row is rounded to nearest on the grid unit_b = P·2⁻²⁰ (P the power of
    two ≥ 2C) and clipped, in grid units, to the integer Fᵢ = ⌊capᵢ·(1 − (d + 8)·2⁻⁵²)/
    unit_b⌋ with capᵢ = C/(√sᵢ·2⁻²⁰) computed in floating point: so Bᵢ·unit_b ≤ the
    exact C/‖x̂′ᵢ‖ (the computed capᵢ is within a relative γ_{d+3} of it, Higham 2002,
    and the margin exceeds that and the product's rounding), and every term's *exact*
    norm |Bᵢ|·unit_b·‖M′ᵢ‖·2⁻²⁰ is ≤ C — the sensitivity the release is charged for.
    Fᵢ ≤ 2²⁰ (‖M′ᵢ‖ ≥ 2¹⁹), so every product Bᵢ·M′ᵢⱼ is an integer below 2⁴⁰ and a
    block of :data:`SUB_ROWS` of them sums below 2⁵⁰, exactly in float64 whatever the
    order (as in :func:`sufficient_statistics`); the blocks are added as integers. A
    weight that is not finite (a residual that overflowed) contributes nothing.
    """

    def __init__(self, X: np.ndarray, bound: float) -> None:
        rows, d = X.shape
        self.bound = check_positive("bound", bound)
        if not np.all(np.isfinite(X)):
            raise InvalidArgumentError("internal error: a row to sum is not finite.")
        top = np.max(np.abs(X), axis=1) if d else np.zeros(rows)
        _, exponent = np.frexp(top)  # top = m·2^e, m in [1/2, 1) (0 for a zero row)
        self._exponent = exponent.astype(np.int64)
        blocks = -(-rows // SUB_ROWS)
        grid = np.zeros((blocks * SUB_ROWS, d))  # zero rows pad the last block
        with np.errstate(under="ignore"):  # entries far below the row's top round to 0
            mantissa = np.ldexp(X, -self._exponent[:, None])
        np.rint(mantissa * 2.0**_X_BITS, out=grid[:rows])
        self._grid = grid.reshape(blocks, SUB_ROWS, d)
        squares = _squared_norms(grid[:rows])
        self.b_scale = _power_of_two_above(2.0 * self.bound)
        self._b_unit = self.b_scale * 2.0**-_X_BITS
        margin = 1.0 - (d + 8) * 2.0**-52
        with np.errstate(divide="ignore"):
            cap = self.bound / (np.sqrt(squares) * 2.0**-_X_BITS)
        cap = np.floor(np.where(squares > 0, cap, 0.0) * margin / self._b_unit)
        self._cap = np.minimum(cap, 2.0**_X_BITS)  # ≤ 2²⁰ already (‖M′ᵢ‖ ≥ 2¹⁹)
        self.unit = Fraction(self._b_unit) * Fraction(1, 2**_X_BITS)  # one Bᵢ·M′ᵢⱼ
        self.rows = rows

    def weights(self, r: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The grid integers Bᵢ (as floats) of the clipped weights of the residuals ``r``.

        ``rows``: the rows ``r`` belongs to (an index array), or None for all rows.
        """
        exponent = self._exponent if rows is None else self._exponent[rows]
        cap = self._cap if rows is None else self._cap[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.rint(np.ldexp(np.abs(r), exponent) / self._b_unit)
            clipped = np.minimum(scaled, cap)
            return np.where(np.isfinite(scaled), np.copysign(clipped, r), 0.0)

    def sum(self, r: np.ndarray, rows: np.ndarray | None = None) -> ExactValue:
        """Σᵢ clip_C(rᵢ·x̂ᵢ) exactly, over all rows or over ``rows``.

        ``rows``: an index array (``r`` then holds one residual per index), or None.
        """
        _, _, d = self._grid.shape
        if rows is None:
            grid, count = self._grid, self.rows
        else:
            count = len(rows)
            blocks = -(-count // SUB_ROWS)
            flat = np.zeros((blocks * SUB_ROWS, d))
            flat[:count] = self._grid.reshape(-1, d)[rows]
            grid = flat.reshape(blocks, SUB_ROWS, d)
        blocks = grid.shape[0]
        B = np.zeros(blocks * SUB_ROWS)
        B[:count] = self.weights(r, rows)
        parts = np.matmul(B.reshape(blocks, 1, SUB_ROWS), grid)[:, 0, :]
        total = np.zeros(d, dtype=object)
        step = _FOLD_ROWS // SUB_ROWS  # int64 holds 2¹² block sums below 2⁵⁰
        for start in range(0, blocks, step):
            part = parts[start : start + step].astype(np.int64).sum(axis=0, dtype=np.int64)
            total = total + part.astype(object)
        return ExactValue.from_integers(total, self.unit)


MAX_FEATURES = 4096
"""The most columns a sufficient-statistics estimator takes (XᵀX: 128 MiB per copy)."""


def sufficient_statistics(
    X: Any, y: Any, transform: Transform, moments: Moments = GRAM
) -> Statistics:
    """Σ over rows of the weighted moments of ``moments``, exactly, in one pass.

    ``transform`` is applied to each block independently (it must be record-local, like
    clipping to declared bounds: a row's result never depends on other rows), and so
    are ``moments.weights``. The sums are exact (see the comment above :data:`SUB_ROWS`):
    the same whatever the order of the rows or their chunking, each rounded once. No rows
    (``X`` of shape (0, d)) give zero sums of the same shapes as any other data set
    (``transform`` and ``weights`` are called on the empty block, so they fix the shapes).
    """
    features = int(X.shape[1]) if len(getattr(X, "shape", ())) == 2 else 0
    if moments.gram and features > MAX_FEATURES:
        raise InvalidArgumentError(
            f"`X` has {features:,} columns: XᵀX would hold {features:,}² floats "
            f"({8 * features**2 / 2**30:.1f} GiB per copy, several copies, and an O(d³) "
            f"factorisation). Sufficient-statistics estimators take at most "
            f"{MAX_FEATURES:,} columns; reduce the dimension first (public projections or "
            "feature selection on public data)."
        )
    layout = _Layout(moments)
    if is_dask(X) or is_dask(y):
        return layout.result(_dask_statistics(X, y, transform, layout))
    return layout.result(_exact_sums(X, y, transform, layout))


def _exact_sums(
    X: np.ndarray, y: np.ndarray | None, transform: Transform, layout: _Layout
) -> _Exact:
    """Exact grid sums over all rows of an in-memory block, chunk by chunk."""
    total: _Exact | None = None
    running: _Exact | None = None
    for Xb, yb in row_chunks(X, y):
        part = _block_statistics(Xb, yb, transform, layout)
        if running is None:
            running = part
        elif running.rows + part.rows > _FOLD_ROWS:  # int64 would overflow: fold it in
            total = running if total is None else total + running
            running = part
        else:
            running.gram += part.gram
            running.vector += part.vector
            running.scalar += part.scalar
            running.rows += part.rows
    if running is None:  # pragma: no cover - row_chunks yields at least one block
        raise InvalidArgumentError("internal error: no block of rows to sum.")
    return running if total is None else total + running


def _is_frame(data: Any) -> bool:
    """A dask DataFrame or Series (partitions, no array chunks)."""
    return hasattr(data, "npartitions") and not hasattr(data, "chunks")


def _frame_block(X: Any, y: Any, transform: Transform, layout: _Layout) -> _Exact:
    """One partition of a dask DataFrame (and of its target Series)."""
    if y is not None:
        if len(X) != len(y) or not X.index.equals(y.index):
            raise InvalidArgumentError(
                "`X` and `y` partitions do not align (different rows in a partition); "
                "take both from one DataFrame."
            )
        y = np.asarray(y, dtype=float).reshape(-1)
    return _checked_block(np.asarray(X, dtype=float), y, transform, layout)


def _dask_statistics(X: Any, y: Any, transform: Transform, layout: _Layout) -> _Exact:
    try:
        import dask.array as da
        from dask.base import compute
        from dask.delayed import delayed
    except ImportError as error:  # pragma: no cover - dask input implies dask
        raise InvalidArgumentTypeError(
            "dask input needs dask: pip install 'dpledger[dask]'."
        ) from error
    if _is_frame(X) and (y is None or (_is_frame(y) and y.npartitions == X.npartitions)):
        # partition by partition, X's and y's together: no extra pass to learn the lengths
        blocks = X.to_delayed(optimize_graph=False)
        targets = [None] * len(blocks) if y is None else y.to_delayed(optimize_graph=False)
        frame_stats = delayed(_frame_block)
        return _tree_sum(
            [
                frame_stats(xb, yb, transform, layout)
                for xb, yb in zip(blocks, targets, strict=True)
            ],
            delayed,
            compute,
        )
    if _is_frame(X):
        X = X.to_dask_array(lengths=True)
    if _is_frame(y):
        y = y.to_dask_array(lengths=True)
        if y.ndim == 2:
            y = y[:, 0]
    if not is_dask(X):
        X = da.from_array(np.asarray(X), chunks=(CHUNK_ROWS, -1))  # type: ignore[no-untyped-call]
    if y is not None and not is_dask(y):
        y = da.from_array(np.asarray(y), chunks=(CHUNK_ROWS,))  # type: ignore[no-untyped-call]
    if y is not None:
        if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in y.chunks[0]):
            raise InvalidArgumentError("dask inputs need known chunk sizes (lengths=True).")
        if X.shape[0] != y.shape[0]:
            raise InvalidArgumentError(
                f"`X` and `y` must have the same number of rows. Found {X.shape[0]} and "
                f"{y.shape[0]}."
            )
        y = y.rechunk((X.chunks[0],))
    X = X.rechunk({1: -1})
    # unoptimised graphs: X's and y's chunks from one source are computed once, not twice
    blocks = X.to_delayed(optimize_graph=False).ravel()
    targets = (
        [None] * len(blocks) if y is None else list(y.to_delayed(optimize_graph=False).ravel())
    )
    block_stats = delayed(_checked_block)
    return _tree_sum(
        [block_stats(xb, yb, transform, layout) for xb, yb in zip(blocks, targets, strict=True)],
        delayed,
        compute,
    )


def _checked_block(
    X: np.ndarray, y: np.ndarray | None, transform: Transform, layout: _Layout
) -> _Exact:
    """A dask block, validated where it is computed (it was never seen as a whole)."""
    if not np.all(np.isfinite(X)) or (y is not None and not np.all(np.isfinite(y))):
        raise InvalidArgumentError("`X` and `y` must be finite; a partition holds NaN or inf.")
    return _exact_sums(X, y, transform, layout)


def _tree_sum(parts: list[Any], delayed: Any, compute: Any) -> _Exact:
    """Pairwise sum of the partial exact sums: only d×d sums travel, never the rows."""
    if not parts:  # a dask collection has at least one partition, even with no rows
        raise InvalidArgumentError(
            "`X` has no partitions (a dask collection with none); give it at least one "
            "(an empty partition is fine: no rows sum to zero statistics)."
        )
    while len(parts) > 1:
        parts = [
            delayed(_add_pair)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    (result,) = compute(parts[0])
    return result  # type: ignore[no-any-return]


def _add_pair(a: _Exact, b: _Exact) -> _Exact:
    return a + b
