"""The analyst's queries' inputs: data, declared bounds and groups, persons, the result's shape.

What :mod:`dpledger.algorithms.descriptive` reads from its arguments before any reduction:
the value columns (a pandas or dask frame's numeric columns, a Series, an array), the
declared bounds per column, the declared groups and each record's group label, each
record's person (``privacy_id``), matched to the data by index (pandas) or by column
name (dask); and the pandas shape of an answer. Public quantities only, except the rows
themselves, which go to :class:`~dpledger.algorithms._tables.Table` to be reduced.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dpledger._validation import check_real
from dpledger.algorithms import _data, _tables
from dpledger.algorithms._tables import Contribution, Table
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

Bounds = tuple[float, float]


# -- inputs --------------------------------------------------------------------------------


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - exercised only without pandas
        return None
    return pandas


def _vector(data: Any) -> np.ndarray:
    try:
        array = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(
            f"`data` must be numbers (array, Series or DataFrame). Found {type(data).__name__}."
        ) from error
    if array.ndim != 1:
        raise InvalidArgumentError(
            f"`data` must be one-dimensional (or a DataFrame). Found shape {array.shape}."
        )
    return array.reshape(-1, 1)


def _bounds(bounds: Any, names: list[Any] | None, width: int) -> list[Bounds]:
    """Declared (lo, hi) per column: one pair, or a dict by column name."""
    if isinstance(bounds, dict):
        if names is None:
            raise InvalidArgumentError("`bounds` as a dict needs a DataFrame with named columns.")
        missing = [c for c in names if c not in bounds]
        if missing:
            raise InvalidArgumentError(
                f"`bounds` must declare every column; missing {missing!r}. Bounds are "
                "declared, never estimated from the data."
            )
        pairs = [bounds[c] for c in names]
    else:
        pairs = [bounds] * width
    out = []
    for pair in pairs:
        try:
            lo, hi = pair
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(
                f"`bounds` must be a (low, high) pair or a dict of them. Found {bounds!r}."
            ) from error
        lo, hi = check_real("bounds[0]", lo), check_real("bounds[1]", hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InvalidArgumentError(
                f"`bounds` must be finite with low < high. Found ({lo!r}, {hi!r})."
            )
        out.append((lo, hi))
    return out


def _declared_labels(name: str, labels: Any) -> tuple[list[Any], dict[Any, int]]:
    """The declared labels (groups, categories) and each one's position; named errors."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise InvalidArgumentError(
            f"`{name}` must be a list of the declared labels. Found {labels!r}."
        )
    keys = list(labels)
    try:
        position = {key: i for i, key in enumerate(keys)}
    except TypeError:
        raise InvalidArgumentTypeError(
            f"`{name}` must hold hashable labels. Found {labels!r}."
        ) from None
    if not keys or len(position) != len(keys):
        raise InvalidArgumentError(f"`{name}` must be distinct and non-empty. Found {labels!r}.")
    return keys, position


def _aligned(name: str, given: Any, data: Any, index: Any, n: int) -> Any:
    """One value per record of ``data``.

    A column name of ``data``, a Series matched by index (as pandas' groupby does), or a
    sequence matched by position.
    """
    pd = _pandas()
    if isinstance(given, str) and pd is not None and isinstance(data, pd.DataFrame):
        _tables.check_names(data, [given], name)
        return data[given].reset_index(drop=True)
    if (
        pd is not None
        and isinstance(given, pd.Series)
        and index is not None
        and not given.index.equals(index)
    ):
        same_labels = (
            given.index.is_unique
            and index.is_unique
            and len(given.index) == len(index)
            and bool(given.index.isin(index).all())
        )
        if not same_labels:
            raise InvalidArgumentError(
                f"`{name}` and `data` must have the same index labels (pandas objects are "
                "matched by index, as in groupby); they differ or repeat."
            )
        given = given.reindex(index)
    if _data.is_dask(given):
        raise InvalidArgumentTypeError(
            f"`{name}` is a dask collection but `data` is not: give both as dask objects of "
            "one frame (or both in memory)."
        )
    if np.ndim(given) != 1:
        raise InvalidArgumentError(
            f"`{name}` must hold one label per record (1-D). Found {type(given).__name__} of "
            f"shape {np.shape(given)}."
        )
    if len(given) != n:
        raise InvalidArgumentError(
            f"`{name}` must have one label per record ({n}). Found {len(given)}."
        )
    if pd is not None and isinstance(given, pd.Series):
        return given.reset_index(drop=True)  # matched already: by position from here on
    return np.asarray(given) if isinstance(given, np.ndarray) else np.asarray(given, dtype=object)


def _groups(
    by: Any, groups: Any, n: int, index: Any = None
) -> tuple[np.ndarray | None, list[Any] | None]:
    """Each row's group number (−1: not a declared group), and the declared groups.

    A pandas ``by`` is matched to pandas ``data`` by index (as pandas' groupby does), not
    by position; an index that does not match is refused. Vectorised (no loop over rows).
    """
    keys = _declared_groups(by, groups)
    if keys is None:
        return None, None
    labels = _aligned("by", by, None, index, n)
    return _tables.labels_to_codes(labels, keys), keys


def _declared_groups(by: Any, groups: Any) -> list[Any] | None:
    if by is None:
        if groups is not None:
            raise InvalidArgumentError("`groups` needs `by` (each record's group).")
        return None
    if groups is None:
        raise InvalidArgumentError(
            "`by` needs `groups`: the declared list of groups. Which groups exist must not "
            "be read from the data (it would leak), so it is declared like a bound."
        )
    keys, _ = _declared_labels("groups", groups)
    return keys


def _table(
    data: Any,
    *,
    by: Any,
    groups: Any,
    privacy_id: Any,
    contribution: Contribution | None,
    summed: bool,
    histogram: tuple[list[Any], Callable[[Any], np.ndarray]] | None = None,
) -> Table:
    """The query's view of ``data``: value columns, group coder, persons (see _tables)."""
    keys: list[Any] | None
    coder: Callable[[Any], np.ndarray] | None
    if histogram is not None:
        keys, coder = histogram
    else:
        keys = _declared_groups(by, groups)
        coder = None if keys is None else functools.partial(_tables.labels_to_codes, keys=keys)
    n_groups = len(keys) if keys else 1
    named = [c for c in (by, privacy_id) if isinstance(c, str)]
    if _data.is_dask(data):
        return _dask_table(data, by, privacy_id, summed, histogram, keys, coder, contribution)
    pd = _pandas()
    is_frame = pd is not None and isinstance(data, pd.DataFrame)
    is_series = pd is not None and isinstance(data, pd.Series)
    index = data.index if (is_frame or is_series) else None
    try:
        n = len(data)
    except TypeError as error:
        raise InvalidArgumentTypeError(
            f"`data` must be a sequence of records (array, Series, DataFrame, list). Found "
            f"{type(data).__name__}."
        ) from error
    values = None
    names: list[Any] | None = None
    if summed:
        if is_frame:
            _tables.check_names(data, named, "by" if isinstance(by, str) else "privacy_id")
            names = [c for c in data.columns if c not in named]
            if not names:
                raise InvalidArgumentError("`data` must have at least one column. Found none.")
            try:
                values = data[names].to_numpy(dtype=float)
            except (TypeError, ValueError) as error:
                raise InvalidArgumentTypeError(
                    f"`data` must hold numbers. Found columns of types {list(data[names].dtypes)}."
                ) from error
        else:
            values = _vector(data.to_numpy() if is_series else data)
    labels = None
    if histogram is not None:
        labels = data.to_numpy() if hasattr(data, "to_numpy") else np.asarray(data, dtype=object)
    elif by is not None:
        labels = _aligned("by", by, data, index, n)
    ids = None if privacy_id is None else _aligned("privacy_id", privacy_id, data, index, n)
    return Table(
        n_groups,
        keys,
        names,
        index,
        values=values,
        labels=labels,
        ids=ids,
        coder=coder,
        bounds=contribution,
        rows=n,
    )


def _dask_table(
    data: Any,
    by: Any,
    privacy_id: Any,
    summed: bool,
    histogram: Any,
    keys: list[Any] | None,
    coder: Any,
    contribution: Contribution | None,
) -> Table:
    """A dask table: the columns it needs, reduced partition by partition later."""
    import dask.dataframe as dd

    is_frame = isinstance(data, dd.DataFrame)
    if not is_frame and not isinstance(data, dd.Series):
        raise InvalidArgumentTypeError(
            "dask `data` must be a dask DataFrame or Series (a dask array: convert it with "
            f"dask.dataframe.from_dask_array). Found {type(data).__name__}."
        )
    frame = data if is_frame else data.to_frame(name="__value")
    named = [c for c in (by, privacy_id) if isinstance(c, str)]
    names: list[Any] | None = None
    columns: list[Any] = []
    if summed:
        if is_frame:
            _tables.check_names(frame, named, "by" if isinstance(by, str) else "privacy_id")
            columns = names = [c for c in frame.columns if c not in named]
        else:
            columns = ["__value"]

    def column(name: str, given: Any, new: str) -> Any:
        nonlocal frame
        if isinstance(given, str):
            _tables.check_names(frame, [given], name)
            return given
        if not _data.is_dask(given):
            raise InvalidArgumentTypeError(
                f"with dask `data`, `{name}` must be a column name or a dask Series of the "
                f"same frame. Found {type(given).__name__}."
            )
        frame = frame.assign(**{new: given})
        return new

    by_column = None
    if histogram is not None:
        if is_frame:
            raise InvalidArgumentError(
                "`data` must be one value per record (1-D: a Series): with several values "
                "per record one record would move several counts; call histogram per column."
            )
        by_column = "__value"
    elif by is not None:
        by_column = column("by", by, "__by")
    id_column = None if privacy_id is None else column("privacy_id", privacy_id, "__id")
    return Table(
        len(keys) if keys else 1,
        keys,
        names,
        None,
        frame=frame,
        value_columns=columns,
        by_column=by_column,
        id_column=id_column,
        coder=coder,
        bounds=contribution,
        rows=None,
    )


def _schema(data: Any, by: Any, privacy_id: Any) -> list[Any] | None:
    """The summed columns' names (public: the schema), or None for one column of values."""
    if _is_frame(data):
        named = [c for c in (by, privacy_id) if isinstance(c, str)]
        _tables.check_names(data, named, "by" if isinstance(by, str) else "privacy_id")
        names = [c for c in data.columns if c not in named]
        if not names:
            raise InvalidArgumentError("`data` must have at least one column. Found none.")
        return names
    return None


def _is_frame(data: Any) -> bool:
    """A pandas or dask DataFrame (named columns), not a Series or an array."""
    pd = _pandas()
    if pd is not None and isinstance(data, pd.DataFrame):
        return True
    if _data.is_dask(data):
        import dask.dataframe as dd

        return isinstance(data, dd.DataFrame)
    return False


def _limits(bounds: list[Bounds]) -> tuple[np.ndarray, np.ndarray]:
    """The columns' lower and upper bounds, as two arrays."""
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def _shape(result: np.ndarray, names: list[Any] | None, keys: list[Any] | None, index: Any) -> Any:
    """A float, or pandas objects keyed by groups (rows) and columns."""
    pd = _pandas()
    table = result.reshape(len(keys) if keys else 1, -1)
    if keys is None and names is None:
        return float(table[0, 0])
    if pd is None:  # pragma: no cover - without pandas: dicts
        if keys is None:
            return dict(zip(names or [0], table[0], strict=True))
        return {
            k: dict(zip(names or [0], row, strict=True)) for k, row in zip(keys, table, strict=True)
        }
    if keys is None:
        return pd.Series(table[0], index=names)
    if names is None:
        return pd.Series(table[:, 0], index=pd.Index(keys))
    return pd.DataFrame(table, index=pd.Index(keys), columns=names)
