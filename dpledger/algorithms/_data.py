"""Data intake for the estimators: validation, declared-bound clipping, chunked statistics.

One pass over the rows, chunk by chunk, for numpy arrays, pandas objects and dask
arrays/DataFrames alike. Dask input is reduced partition by partition by dask itself
(each partition's statistics are computed where the partition lives and only the d×d
sums travel), so data larger than memory or spread over a cluster is never gathered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["as_design", "as_target", "gram", "is_dask", "row_chunks", "sufficient_statistics"]

#: Rows per chunk for in-memory input (bounded memory for the per-chunk copies).
CHUNK_ROWS = 1 << 16

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
    """``X`` as a 2-D float array (numpy) or dask array; shape and type checked."""
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
    X = _numeric_frame(X, "X")
    try:
        array = np.asarray(X)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(f"`X` must be a numeric 2-D array. {error}") from None
    if array.ndim != 2:
        raise InvalidArgumentError(
            f"`X` must be 2-D (rows × features); reshape a single feature with "
            f"X.reshape(-1, 1). Found {array.ndim}-D with shape {array.shape}."
        )
    if np.iscomplexobj(array):
        raise InvalidArgumentTypeError(f"`X` must be real. Found dtype {array.dtype}.")
    if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
        try:
            array = array.astype(float)
        except (TypeError, ValueError):
            raise InvalidArgumentTypeError(
                f"`X` must be numeric. Found dtype {array.dtype}."
            ) from None
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise InvalidArgumentError(f"`X` must have rows and columns. Found shape {array.shape}.")
    array = array.astype(float, copy=False)
    if not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise InvalidArgumentError(
            f"`X` must be finite; found {array[bad[0], bad[1]]!r} at row {bad[0]}, column "
            f"{bad[1]}. Impute or drop missing values first."
        )
    return array


def as_target(y: Any, rows: int | None) -> Any:
    """``y`` as a 1-D float array (numpy) or dask array, one value per row of ``X``."""
    if is_dask(y):
        if _is_frame(y):
            _numeric_frame(y, "y")
            if y.ndim == 2 and len(y.columns) != 1:
                raise InvalidArgumentError(f"`y` must be 1-D. Found {len(y.columns)} columns.")
            return y
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise InvalidArgumentError(f"`y` must be 1-D. Found shape {y.shape}.")
        return y.astype(float)
    try:
        array = np.asarray(y)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(f"`y` must be a numeric 1-D array. {error}") from None
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise InvalidArgumentError(f"`y` must be 1-D. Found shape {array.shape}.")
    if np.iscomplexobj(array):
        raise InvalidArgumentTypeError(f"`y` must be real. Found dtype {array.dtype}.")
    try:
        array = array.astype(float)
    except (TypeError, ValueError):
        raise InvalidArgumentTypeError(f"`y` must be numeric. Found dtype {array.dtype}.") from None
    if rows is not None and array.shape[0] != rows:
        raise InvalidArgumentError(
            f"`X` and `y` must have the same number of rows. Found {rows} and {array.shape[0]}."
        )
    if not np.all(np.isfinite(array)):
        at = int(np.argwhere(~np.isfinite(array))[0][0])
        raise InvalidArgumentError(f"`y` must be finite; found {array[at]!r} at row {at}.")
    return array


def row_chunks(X: np.ndarray, y: np.ndarray | None) -> Iterator[tuple[np.ndarray, Any]]:
    """(X, y) in blocks of :data:`CHUNK_ROWS` rows (views, no copies)."""
    for start in range(0, X.shape[0], CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        yield X[start:stop], (None if y is None else y[start:stop])


Moments = Callable[[np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray]]


def gram(X: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(XᵀX, Xᵀy) of one block (Xᵀy = 0 without y)."""
    return X.T @ X, (np.zeros(X.shape[1]) if y is None else X.T @ y)


def _block_statistics(
    X: np.ndarray, y: np.ndarray | None, transform: Transform, moments: Moments
) -> tuple[np.ndarray, np.ndarray]:
    """``moments`` of one (already validated) block after the record-local ``transform``."""
    Xt, yt = transform(X, y)
    return moments(Xt, yt)


MAX_FEATURES = 4096
"""The most columns a sufficient-statistics estimator takes (XᵀX: 128 MiB per copy)."""


def sufficient_statistics(
    X: Any, y: Any, transform: Transform, *, moments: Moments = gram
) -> tuple[np.ndarray, np.ndarray]:
    """Σ over row blocks of ``moments(X̃, ỹ)`` (default (X̃ᵀX̃, X̃ᵀỹ)), in one pass.

    ``transform`` is applied to each block independently (it must be record-local, like
    clipping to declared bounds: a row's result never depends on other rows), and so
    must ``moments`` be (a sum of per-row terms, e.g. weighted moments Σ sᵢx̃ᵢx̃ᵢᵀ).
    """
    features = int(X.shape[1]) if len(getattr(X, "shape", ())) == 2 else 0
    if features > MAX_FEATURES:
        raise InvalidArgumentError(
            f"`X` has {features:,} columns: XᵀX would hold {features:,}² floats "
            f"({8 * features**2 / 2**30:.1f} GiB per copy, several copies, and an O(d³) "
            f"factorisation). Sufficient-statistics estimators take at most "
            f"{MAX_FEATURES:,} columns; reduce the dimension first (public projections or "
            "feature selection on public data)."
        )
    if is_dask(X) or is_dask(y):
        return _dask_statistics(X, y, transform, moments)
    d = None
    xtx: np.ndarray | None = None
    xty: np.ndarray | None = None
    for Xb, yb in row_chunks(X, y):
        a, b = _block_statistics(Xb, yb, transform, moments)
        if xtx is None:
            xtx, xty, d = a, b, a.shape[0]
        else:
            xtx += a
            xty += b
    if xtx is None or xty is None or d is None:
        raise InvalidArgumentError("`X` must have at least one row.")
    return xtx, xty


def _is_frame(data: Any) -> bool:
    """A dask DataFrame or Series (partitions, no array chunks)."""
    return hasattr(data, "npartitions") and not hasattr(data, "chunks")


def _frame_block(
    X: Any, y: Any, transform: Transform, moments: Moments
) -> tuple[np.ndarray, np.ndarray]:
    """One partition of a dask DataFrame (and of its target Series)."""
    if y is not None:
        if len(X) != len(y) or not X.index.equals(y.index):
            raise InvalidArgumentError(
                "`X` and `y` partitions do not align (different rows in a partition); "
                "take both from one DataFrame."
            )
        y = np.asarray(y, dtype=float).reshape(-1)
    return _checked_block(np.asarray(X, dtype=float), y, transform, moments)


def _dask_statistics(
    X: Any, y: Any, transform: Transform, moments: Moments
) -> tuple[np.ndarray, np.ndarray]:
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
                frame_stats(xb, yb, transform, moments)
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
        [block_stats(xb, yb, transform, moments) for xb, yb in zip(blocks, targets, strict=True)],
        delayed,
        compute,
    )


def _checked_block(
    X: np.ndarray, y: np.ndarray | None, transform: Transform, moments: Moments
) -> tuple[np.ndarray, np.ndarray]:
    """A dask block, validated where it is computed (it was never seen as a whole)."""
    if not np.all(np.isfinite(X)) or (y is not None and not np.all(np.isfinite(y))):
        raise InvalidArgumentError("`X` and `y` must be finite; a partition holds NaN or inf.")
    return _block_statistics(X, y, transform, moments)


def _tree_sum(parts: list[Any], delayed: Any, compute: Any) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise sum of the partial statistics: only d×d sums travel, never the rows."""
    if not parts:
        raise InvalidArgumentError("`X` must have at least one row.")
    while len(parts) > 1:
        parts = [
            delayed(_add_pair)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    (result,) = compute(parts[0])
    return result[0], result[1]


def _add_pair(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    return a[0] + b[0], a[1] + b[1]
