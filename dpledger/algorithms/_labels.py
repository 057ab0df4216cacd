"""A binary classifier's two classes: declared, or read from the labels' schema, never their values.

Which labels occur in private data is private: scikit-learn's ``np.unique(y)`` would
publish it unpaid (one person with a third label, or a data set where one class is
missing, would change the fitted ``classes_``, the predictions' type or a refusal). So
the two classes are public information:

* ``classes=(a, b)`` declared by the caller (any two distinct, comparable labels); or
* with ``classes=None``, ``y``'s schema — its dtype, which neighbouring data sets share:
  a pandas ``Categorical`` gives its two categories, a bool dtype (False, True), a
  numeric dtype (0, 1), and input without a dtype of its own (a list) the labels 0 and
  1; any other dtype (strings, objects) must be declared, and is refused with a message
  that says so, naming ``classes=`` (a dtype is public: the refusal reads no value).

``classes_`` is the two labels sorted, as scikit-learn's; the second is the positive
class (``predict_proba[:, 1]``, ``decision_function > 0``).

Each row's label is then compared with the two classes on its own (record-local): code 0
for ``classes_[0]``, 1 for ``classes_[1]`` and :data:`UNDECLARED` for any other value —
a third label, NaN, None. Such a row is never refused (a refusal would tell whether some
private row holds an undeclared label): the estimators replace it by the zero row (every
feature 0, the intercept column too), a record of the domain that contributes nothing to
any statistic, so the guarantee holds unchanged under either adjacency and the public
row count (``data_size``, or n under replace-one) keeps its meaning. How many rows were
dropped is private and never shown.

A plain list has no dtype: numpy would infer one from *all* its elements (a string among
numbers turns every label into a string), so a list is read element by element as
Python objects against the labels 0 and 1, or the declared classes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._validation import shown
from dpledger.algorithms import _data
from dpledger.algorithms._params import Constraint
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "CLASSES",
    "UNDECLARED",
    "Classes",
    "declared_classes",
    "label_codes",
    "zero_undeclared",
]

#: the code of a row whose label is neither declared class (its row contributes nothing)
UNDECLARED = -1.0


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(isinstance(value, (float, np.floating)) and math.isnan(value))
    except (TypeError, ValueError):  # pragma: no cover - a float always converts
        return False


@dataclass(frozen=True)
class Classes(Constraint):
    """None (the classes from ``y``'s schema), or two distinct, comparable labels.

    Returned sorted (a tuple), as ``classes_`` will hold them.
    """

    def check(self, name: str, value: Any, owner: str) -> tuple[Any, Any] | None:
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidArgumentError(
                f"`{name}` must be None or the two class labels, e.g. classes=('no', 'yes') "
                f"or classes=(-1, 1). Found {shown(value)}."
            )
        labels = list(value.tolist() if isinstance(value, np.ndarray) else value)
        if len(labels) != 2:
            raise InvalidArgumentError(
                f"`{name}` must hold exactly two labels: {owner} is a binary classifier "
                f"(fit one model per class for more). Found {len(labels)}: {shown(value)}."
            )
        for label in labels:
            if _is_missing(label) or not _hashable(label):
                raise InvalidArgumentError(
                    f"`{name}` must hold two labels (numbers, strings or bools; not None, "
                    f"NaN or containers). Found {shown(value)}."
                )
        if bool(labels[0] == labels[1]):
            raise InvalidArgumentError(
                f"`{name}` must hold two distinct labels. Found {shown(value)}."
            )
        try:
            first, second = sorted(labels)
        except TypeError:
            raise InvalidArgumentTypeError(
                f"`{name}` must hold two labels of comparable types (both numbers or both "
                f"strings: classes_ is sorted, as scikit-learn's). Found {shown(value)}."
            ) from None
        return (first, second)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


#: the constraint of every classifier's ``classes`` parameter
CLASSES = Classes()


# -- the schema: dtype, categories -------------------------------------------------------


def _dtype(y: Any) -> Any:
    """``y``'s own dtype (numpy, pandas or dask), or None for input without one (a list)."""
    dtype = getattr(y, "dtype", None)
    if dtype is None and hasattr(y, "dtypes") and getattr(y, "ndim", 1) == 2:
        dtypes = list(y.dtypes)  # a one-column DataFrame: its column's dtype
        dtype = dtypes[0] if len(dtypes) == 1 else None
    return dtype


def _categories(dtype: Any) -> list[Any] | None:
    """A categorical dtype's categories (None if ``dtype`` is not categorical)."""
    if getattr(dtype, "name", None) != "category":
        return None
    categories = getattr(dtype, "categories", None)
    if categories is None:  # pragma: no cover - a pandas categorical dtype has them
        return None
    return list(categories)


def _kind(dtype: Any) -> str:
    """'bool', 'number', 'string' or 'object' for a (numpy, pandas or dask) dtype."""
    try:
        import pandas as pd

        api = pd.api.types
        if api.is_bool_dtype(dtype):
            return "bool"
        if api.is_numeric_dtype(dtype) and not api.is_complex_dtype(dtype):
            return "number"
        if api.is_string_dtype(dtype) and not api.is_object_dtype(dtype):
            return "string"
        return "object"
    except ImportError:  # pragma: no cover - pandas is a dependency of scikit-learn's
        kind = np.dtype(dtype).kind
        return {"b": "bool", "i": "number", "u": "number", "f": "number", "U": "string"}.get(
            kind, "object"
        )


def declared_classes(classes: tuple[Any, Any] | None, y: Any, owner: str) -> np.ndarray:
    """The two classes (sorted), from ``classes`` or ``y``'s schema; never from its values.

    Refuses, reading no value: a dtype that cannot hold a declared class (labels that
    could never match), and with ``classes=None`` a schema that does not name two classes.
    """
    if y is None:
        raise InvalidArgumentError(
            f"`y` is required: {owner} requires y to be passed, but the target y is None "
            "(fit(X, y) with one label per row)."
        )
    dtype = _dtype(y)
    categories = None if dtype is None else _categories(dtype)
    if classes is not None:
        if categories is not None and not all(c in categories for c in classes):
            raise InvalidArgumentError(
                f"`classes` {shown(classes)} must be categories of y's categorical dtype "
                f"{shown(categories)}: a class that is not a category matches no row."
            )
        if dtype is not None and categories is None:
            kind = _kind(dtype)
            strings = [isinstance(c, str) for c in classes]
            if (kind == "string" and not all(strings)) or (
                kind in ("bool", "number") and any(strings)
            ):
                raise InvalidArgumentTypeError(
                    f"`classes` {shown(classes)} cannot match labels of y's dtype {dtype}: "
                    "declare labels of y's type, or convert y first."
                )
        return _as_array(classes)
    if dtype is None:  # a list: no schema of its own, the labels 0 and 1
        return np.array([0, 1])
    if categories is not None:
        if len(categories) != 2 or any(c == "__UNKNOWN_CATEGORIES__" for c in categories):
            raise InvalidArgumentError(
                f"`y` is categorical with {len(categories)} categories; {owner} is a binary "
                "classifier: declare the two classes, classes=(negative, positive) (rows "
                "with other labels are dropped; unknown dask categories are never computed)."
            )
        try:
            return _as_array(tuple(sorted(categories)))
        except TypeError:
            raise InvalidArgumentTypeError(
                f"`y`'s categories {shown(categories)} must be comparable (classes_ is "
                "sorted): declare classes=(negative, positive)."
            ) from None
    kind = _kind(dtype)
    if kind == "bool":
        return np.array([False, True])
    if kind == "number":  # 0 and 1 in y's own numeric type, as scikit-learn's classes_
        numeric = dtype if isinstance(dtype, np.dtype) else getattr(dtype, "numpy_dtype", None)
        return np.array([0, 1], dtype=numeric if isinstance(numeric, np.dtype) else None)
    raise InvalidArgumentError(
        f"Unknown label type: `y` has dtype {dtype}, and {owner} never reads which labels "
        "occur in the data (that would publish them without charge). Declare the two "
        "classes: classes=(negative, positive), e.g. classes=('<=50K', '>50K'); rows with "
        "other labels are dropped. (Labels 0 and 1, bools and a two-category pandas "
        "Categorical need no declaration: their dtype names the classes.)"
    )


def _as_array(labels: tuple[Any, ...]) -> np.ndarray:
    """The labels as ``classes_``: a numpy array (of objects unless numpy keeps them plain)."""
    array = np.asarray(labels)
    if array.dtype.kind not in "biufU":
        array = np.empty(len(labels), dtype=object)
        array[:] = list(labels)
    return array


# -- each row's code ----------------------------------------------------------------------


def _column(y: Any) -> Any:
    """``y`` as one column: (n, 1) and one-column frames flattened with scikit-learn's warning."""
    if _dtype(y) is None and not _data.is_dask(y):
        # no dtype of its own (a list): each element as the Python object it is
        if hasattr(y, "__array__"):  # an array-like: its values, then one by one
            y = np.asarray(y).astype(object)
        elif isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise InvalidArgumentTypeError(
                f"`y` must be a 1-D array-like of labels. Found {type(y).__name__}."
            )
        else:
            y = np.asarray(y, dtype=object)
    ndim = getattr(y, "ndim", 1)
    if ndim == 2 and y.shape[1] == 1:
        _data.warn_column_vector()
        return y.iloc[:, 0] if hasattr(y, "iloc") else y[:, 0]
    if ndim != 1:
        raise InvalidArgumentError(f"`y` must be 1-D. Found shape {getattr(y, 'shape', ())}.")
    return y


def _block_codes(values: Any, classes: np.ndarray) -> np.ndarray:
    """0, 1 or :data:`UNDECLARED` for each label of a block, each compared on its own."""
    if _categories(getattr(values, "dtype", None)) is not None:
        categorical = values.cat if hasattr(values, "cat") else values  # Series or Categorical
        categories = list(categorical.categories)  # compare the codes: one per row
        codes = np.asarray(categorical.codes)
        out = np.full(codes.shape, UNDECLARED)
        for code, label in enumerate(classes.tolist()):
            if label in categories:
                out[codes == categories.index(label)] = float(code)
        return out
    if hasattr(values, "to_numpy"):  # pandas: extension dtypes (nullable, strings) as objects
        native = isinstance(values.dtype, np.dtype) and values.dtype.kind in "biufU"
        values = values.to_numpy() if native else values.to_numpy(dtype=object, na_value=None)
    array = np.asarray(values)
    out = np.full(array.shape, UNDECLARED)
    for code, label in enumerate(classes.tolist()):
        out[_equal(array, label)] = float(code)
    return out


def _equal(array: np.ndarray, label: Any) -> np.ndarray:
    """``array == label`` element by element; False wherever the comparison is not a bool."""
    if array.dtype.kind in "biuf" and isinstance(label, (bool, int, float, np.generic)):
        with np.errstate(invalid="ignore"):
            return np.asarray(array == label, dtype=bool)
    if array.dtype.kind == "U" and isinstance(label, str):
        return np.asarray(array == label, dtype=bool)
    # objects (and mixed types): Python's == on each element alone, never an exception
    flat = array.ravel()
    found = np.zeros(flat.shape, dtype=bool)
    for i, value in enumerate(flat.tolist()):
        try:
            same = value == label
            found[i] = same is True or (isinstance(same, np.bool_) and bool(same))
        except Exception:  # a label that cannot be compared is undeclared
            found[i] = False
    return found.reshape(array.shape)


def label_codes(y: Any, classes: np.ndarray, rows: int | None) -> Any:
    """Each row's code (float): 0, 1 or :data:`UNDECLARED`, record-local.

    ``rows``: X's row count (checked, a public fact of the input), or None for dask
    input (compared partition by partition, lazily). A dask collection comes back as one.
    """
    y = _column(y)
    if _data.is_dask(y):
        if hasattr(y, "map_partitions"):
            return y.map_partitions(
                lambda part: _series(_block_codes(part, classes), part),
                meta=("codes", "f8"),
            )
        return y.map_blocks(_block_codes, classes, dtype=float)
    codes = _block_codes(y, classes)
    if rows is not None and codes.shape[0] != rows:
        raise InvalidArgumentError(
            f"`X` and `y` must have the same number of rows. Found {rows} and {codes.shape[0]}."
        )
    return codes


def _series(codes: np.ndarray, like: Any) -> Any:
    import pandas as pd

    return pd.Series(codes, index=like.index, name="codes")


def zero_undeclared(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The labels of ``rows`` (a transformed copy, changed in place): undeclared rows zeroed.

    Every undeclared row becomes the zero row (every column, the intercept's too): inside
    every row-norm bound, and contributing nothing to any statistic of these models (xxᵀ,
    x·(anything), a gradient r·x), so the row is dropped without changing the row count.
    Its label becomes ½, inside every declared label range. Returns the labels.
    """
    undeclared = codes == UNDECLARED
    rows[undeclared] = 0.0
    return np.where(undeclared, 0.5, codes)


__dir__ = namespace(__all__)
