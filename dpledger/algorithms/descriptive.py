"""Private descriptive statistics charged to a ledger: count, sum, mean, variance, histogram.

The analyst's everyday queries. Each function

* takes the data (a numpy array, a pandas or dask Series, or a pandas or dask DataFrame of
  several columns), **declared bounds** (never estimated from the data: values outside
  are clipped), and a :class:`~dpledger.Ledger` to charge;
* sizes its noise either as a ``share`` of what remains in the ledger (solved in the
  ledger's own currency, so the ledger accepts it; a part of :meth:`Ledger.split
  <dpledger.Ledger.split>` takes an even part of what remains) or for its own
  ``epsilon``/``delta`` (then charged at its true cost) — all of a query's releases
  solved together through :meth:`~dpledger.Ledger.reserve`, each at the same μ, with the
  tightest method;
* with ``preview=True`` reports the noise (mechanism, scale, cost in ε and in the
  ledger's currency, a 95 % interval) without reading the data or spending
  (:class:`~dpledger.algorithms.Preview`);
* otherwise checks that all of its releases fit before the first one, charges each before
  its noise is drawn (``Ledger.release``; receipts carry the query's ``label``), and
  returns an int (counts) or a float, or pandas objects with the index kept (columns;
  declared groups).

Sensitivities (one record, under the ledger's adjacency; Dwork & Roth 2014, §3): a count
moves by 1 (add/remove) or not at all (replace-one: the count is public and released
exactly); a clipped sum by max(|lo|, |hi|) (add/remove) or hi − lo (replace-one). With
``by``/``groups`` a record falls in one group, so a group-by count or sum is one release
of a vector whose L1 and L2 sensitivities are those of one group's — the parallel
composition of McSherry 2009, without paying once per group. Several columns are one
vector release: L2 sensitivity √Σ Δ_c², L1 Σ Δ_c.

**People with many rows** (``privacy_id=``, with ``max_rows_per_id`` and, for group-bys,
``max_groups_per_id``/``max_rows_per_group_per_id``): the neighbouring tables differ in
one person's rows, each person's contribution is bounded first
(:mod:`dpledger.algorithms._tables`), and the sensitivities are one person's: with k′
rows at most and F the largest Σ_g n_g² over a person's groups (:meth:`Contribution.effective
<dpledger.algorithms._tables.Contribution.effective>`), a count moves by k′ in L1 and √F in
L2 (add/remove; replace-one: k′ − 1 without groups, 2k′ and √(2F) with them); clipped sums
by k′·Σm in L1 and √F·‖m‖ in L2, m = max(|lo|, |hi|) per column (add/remove); replace-one
without groups by the width w = max(hi, k′hi) − min(lo, k′lo) per column, with groups by
2k′·Σm in L1 and, in L2, √min(4F‖m‖², 2F(‖m‖² + Σ max(0, −lo·hi))) (the cross term of two
people's contributions is negative only where a column's bounds straddle zero).

Rows a query cannot use — a missing value (NaN) in one of its columns, a group outside
the declared ones, a row without a person — are dropped: each rule reads only its own row,
so it is free, and no query raises because of what the private rows hold.

Noise: the (discrete) Gaussian when the ledger has δ > 0, the (discrete) Laplace when it
is pure (``noise=`` overrides); counts and histograms get integer noise, sums the safe
grid mechanisms of :mod:`dpledger.mechanisms.additive`. The mean is a noisy sum over a
noisy count, the variance a post-processing of noisy count, sum and sum of squares
around the middle of the bounds; both are post-processing, so they cost only their
releases. Dask input is reduced partition by partition (:mod:`dpledger.algorithms._tables`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._numerics import float_up, sqrt_up
from dpledger._public import namespace
from dpledger._validation import check_choice, check_positive, check_probability, check_real
from dpledger.accountant import events as ev
from dpledger.algorithms import _data, _preview, _tables
from dpledger.algorithms._preview import Preview
from dpledger.algorithms._tables import Contribution, Request, Table
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger.split import Part
from dpledger.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace
from dpledger.mechanisms.base import Mechanism

__all__ = ["Preview", "count", "histogram", "mean", "sum", "variance"]

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


# -- releases ------------------------------------------------------------------------------


class _Plan:
    """The releases of one query: sizes, sensitivities and the noise family; values later."""

    def __init__(
        self,
        ledger: Any,
        noise: str | None,
        share: Any,
        epsilon: Any,
        delta: Any,
        label: Any = None,
    ):
        from dpledger.ledger import Ledger
        from dpledger.ledger.receipts import check_label

        if not isinstance(ledger, Ledger):
            raise InvalidArgumentTypeError(
                f"`ledger` must be a dpledger.Ledger (the budget this query is charged to). "
                f"Found {type(ledger).__name__}."
            )
        self.ledger = ledger
        self.label = check_label(label)
        if noise is None:
            noise = "gaussian" if ledger.delta > 0 else "laplace"
        self.noise = check_choice("noise", noise, ("gaussian", "laplace"))
        if epsilon is None and delta is not None:
            raise InvalidArgumentError("`delta` goes with `epsilon`.")
        if epsilon is not None and share is not None:
            raise InvalidArgumentError("pass `share` or `epsilon`/`delta`, not both.")
        self.delta = 0.0 if delta is None else check_probability("delta", delta)
        if share is None and epsilon is None:
            raise InvalidArgumentError(
                "pass `share=` (the fraction of the ledger's remaining budget this query may "
                "use, in (0, 1], or a part of `ledger.split(k)`) or `epsilon=` (and "
                "`delta=`) for the query's own guarantee."
            )
        self.part: Part | None = None
        if isinstance(share, Part):
            share.check(ledger)
            self.part = share
        elif share is not None:
            share = check_probability("share", share, low_open=True, high_open=False)
        if epsilon is not None:
            epsilon = check_positive("epsilon", epsilon)
        self.epsilon = epsilon
        self.share = share
        if epsilon is not None:
            if self.noise == "laplace" and self.delta > 0:
                raise InvalidArgumentError("Laplace noise is pure: pass `delta=0`.")
            if self.noise == "gaussian" and self.delta == 0:
                raise InvalidArgumentError("Gaussian noise needs `delta` > 0 (or noise='laplace').")
        self.items: list[tuple[str, bool, float, float, int]] = []

    def add(self, label: str, integer: bool, l1: float, l2: float, size: int) -> None:
        """One release: its label, whether integer-valued, its sensitivities, its size."""
        self.items.append((label, integer, l1, l2, size))

    def add_count(
        self, n_groups: int, grouped: bool, contribution: Contribution | None, integer: bool = True
    ) -> None:
        """The release of the number of records (per group).

        ``integer``: integer noise (discrete Gaussian or Laplace on the integers), for a
        count released as such; otherwise the noise of the sums (a safe Gaussian on a fine
        grid), for a count that is only a denominator — its σ of a few units would cost
        ~6 % more than the continuous price as a discrete Gaussian on the integers
        (:mod:`dpledger.accountant.discrete_gaussian`), and nothing on a fine grid.
        """
        l1, l2 = _count_sensitivity(self.ledger.adjacency, contribution, n_groups, grouped)
        self.add("count", integer, l1, l2, n_groups)

    def add_sums(
        self,
        label: str,
        bounds: list[Bounds],
        n_groups: int,
        grouped: bool,
        contribution: Contribution | None,
    ) -> None:
        """The release of the column sums (per group) of values within ``bounds``."""
        l1, l2 = _sum_sensitivity(bounds, self.ledger.adjacency, grouped, contribution, n_groups)
        self.add(label, False, l1, l2, n_groups * len(bounds))

    def _factory(self, integer: bool, l1: float, l2: float, d: int) -> Callable[[float], Any]:
        if self.noise == "gaussian":
            if integer:
                return lambda s: DiscreteGaussian(s, l2, dimension=d)
            return lambda s: Gaussian(s, l2, dimension=d)
        if integer:
            return lambda t: DiscreteLaplace(t, l1, dimension=d)
        return lambda b: Laplace(b, l1, dimension=d)

    def reserve(self, rng: Any) -> Any:
        """Calibrate the query's releases jointly (nothing checked or recorded yet).

        One schedule through the ledger's planning path (:meth:`Ledger.reserve
        <dpledger.Ledger.reserve>`): release i gets noise p·Δᵢ (its sensitivity in the
        noise's norm: every release at the same μ, or the same ε for Laplace noise), and p
        is the least that meets the query's own (ε, δ) with the tightest method — the
        releases composed together, not split by basic composition — or that fits its
        ``share`` of what remains, in the ledger's currency.
        """
        parts = []
        for _, integer, l1, l2, size in self.items:
            sensitivity = l2 if self.noise == "gaussian" else l1
            parts.append((self._factory(integer, l1, l2, size), sensitivity))

        def schedule(p: float) -> list[Mechanism]:
            return [factory(p * sensitivity) for factory, sensitivity in parts]

        if self.epsilon is not None:
            return self.ledger.reserve(schedule, epsilon=self.epsilon, delta=self.delta, rng=rng)
        share = self.part.share() if self.part is not None else self.share
        return self.ledger.reserve(schedule, share=share, rng=rng)

    def labels(self) -> list[str]:
        prefix = f"{self.label}: " if self.label else ""
        return [f"{prefix}{label}" for label, *_ in self.items]

    def run(self, values: list[Any], rng: Any) -> list[np.ndarray]:
        """Check all of the query's releases fit, then charge and release them in order.

        Every value is validated and all of the releases are checked, in order, before the
        first (nothing half-done); a seeded rng is combined with the ledger's position, so
        no two queries repeat noise.
        """
        reservation = self.reserve(rng)
        named = [
            (label, np.asarray(value).astype(np.int64) if item[1] else value)
            for label, item, value in zip(self.labels(), self.items, values, strict=True)
        ]
        released = reservation.release_all(named)
        if self.part is not None:
            self.part.spent()
        return [np.asarray(noisy, dtype=float).reshape(-1) for noisy in released]

    def preview(
        self, query: str, answer: Callable[[list[Any]], tuple[float | None, str]]
    ) -> Preview:
        """What the query would release and spend, computed without spending."""
        reservation = self.reserve(None)
        mechanisms = list(reservation.mechanisms)
        sensitivities = [(l2 if self.noise == "gaussian" else l1) for _, _, l1, l2, _ in self.items]
        own = None if self.epsilon is None else (float(self.epsilon), float(self.delta))
        releases, epsilon, delta, cost, fits = _preview.describe(
            query, self.labels(), mechanisms, sensitivities, self.ledger, own
        )
        interval, note = answer(mechanisms)
        name = f"{query} ({self.label})" if self.label else query
        return Preview(name, releases, epsilon, delta, cost, fits, interval, note)


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


def _row_sum_sensitivity(
    bounds: list[Bounds], adjacency: str, grouped: bool
) -> tuple[float, float]:
    """(L1, L2) sensitivity of a vector of clipped column sums (per group if ``grouped``).

    Add/remove: one record adds or removes its values, |v| ≤ m = max(|lo|, |hi|) per
    column, in one group. Replace-one: within one group the sums move by v′ − v, at most
    hi − lo per column; but with groups the record can also move to another group, which
    changes *two* cells by −v and +v′: L1 Σ 2m, L2 √2·‖m‖ (as a group count moves by 2
    in L1, √2 in L2). The sensitivity is the larger of the two cases.
    """
    # exact rationals, rounded up once: hi − lo and the sums never fall an ulp short
    top = [max(abs(Fraction(lo)), abs(Fraction(hi))) for lo, hi in bounds]
    within = [Fraction(hi) - Fraction(lo) for lo, hi in bounds]

    def total(terms: Iterable[Fraction]) -> Fraction:
        out = Fraction(0)  # (this module's `sum` is the private sum query)
        for term in terms:
            out += term
        return out

    def l1_of(per: list[Fraction], times: int = 1) -> float:
        return float_up(times * total(per))

    def l2_of(per: list[Fraction], times: int = 1) -> float:
        return sqrt_up(float_up(times * total(p * p for p in per)))

    if adjacency == ev.ADD_REMOVE:
        return l1_of(top), l2_of(top)
    if not grouped:
        return l1_of(within), l2_of(within)
    # grouped: also −v in one group and +v′ in another (L1 Σ2m, L2 √2·‖m‖)
    return max(l1_of(within), l1_of(top, 2)), max(l2_of(within), l2_of(top, 2))


def _row_count_sensitivity(adjacency: str) -> tuple[float, float]:
    """(L1, L2) of a (group) count vector."""
    if adjacency == ev.ADD_REMOVE:
        return 1.0, 1.0
    return 2.0, math.sqrt(2.0)  # replace-one: one group loses a record, another gains it


def _count_sensitivity(
    adjacency: str, unit: Contribution | None, n_groups: int, grouped: bool
) -> tuple[float, float]:
    """(L1, L2) of a (group) count vector: one record's, or one person's (module doc)."""
    if unit is None:
        return _row_count_sensitivity(adjacency)
    rows, squares = unit.effective(n_groups if grouped else None)
    if adjacency == ev.ADD_REMOVE:
        return float(rows), sqrt_up(float(squares))
    if not grouped:  # both people have 1..k′ rows: the count moves by at most k′ − 1
        return float(rows - 1), float(rows - 1)
    return float(2 * rows), sqrt_up(float(2 * squares))


def _sum_sensitivity(
    bounds: list[Bounds],
    adjacency: str,
    grouped: bool,
    unit: Contribution | None = None,
    n_groups: int = 1,
) -> tuple[float, float]:
    """(L1, L2) of a vector of clipped column sums: one record's, or one person's.

    One person (module doc): u ∈ ℝ^{groups × columns} with |u_gj| ≤ n_g·m_j, Σ n_g ≤ k′,
    Σ n_g² ≤ F. Add/remove: ‖u‖₁ ≤ k′·Σm, ‖u‖₂² ≤ F·‖m‖². Replace-one without groups:
    each column's sum ranges over [min(lo, k′lo), max(hi, k′hi)] for both people, so it
    moves by at most that width. Replace-one with groups: ‖u′ − u‖₁ ≤ 2k′Σm, and
    ‖u′ − u‖₂² = ‖u′‖² + ‖u‖² − 2⟨u′, u⟩ with u′_gj·u_gj ≥ n′_g·n_g·min(0, lo_j·hi_j), so
    −2⟨u′, u⟩ ≤ 2F·Σ max(0, −lo·hi) (Cauchy–Schwarz on Σ n′_g n_g) — and ≤ 4F‖m‖² by the
    triangle inequality; the smaller holds. Exact rationals, rounded up once.
    """
    if unit is None:
        return _row_sum_sensitivity(bounds, adjacency, grouped)
    rows, squares = unit.effective(n_groups if grouped else None)
    top = [max(abs(Fraction(lo)), abs(Fraction(hi))) for lo, hi in bounds]
    l1_top = Fraction(0)
    l2_top = Fraction(0)
    for m in top:
        l1_top += m
        l2_top += m * m
    if adjacency == ev.ADD_REMOVE:
        return float_up(rows * l1_top), sqrt_up(float_up(squares * l2_top))
    if not grouped:
        widths = [
            max(Fraction(hi), rows * Fraction(hi)) - min(Fraction(lo), rows * Fraction(lo))
            for lo, hi in bounds
        ]
        l1 = Fraction(0)
        l2 = Fraction(0)
        for w in widths:
            l1 += w
            l2 += w * w
        return float_up(l1), sqrt_up(float_up(l2))
    cross = Fraction(0)
    for lo, hi in bounds:
        cross += max(Fraction(0), -Fraction(lo) * Fraction(hi))
    l2_sq = min(4 * squares * l2_top, 2 * squares * (l2_top + cross))
    return float_up(2 * rows * l1_top), sqrt_up(float_up(l2_sq))


# -- the queries ---------------------------------------------------------------------------

_UNIT_DOC = """
    People with many rows: ``privacy_id`` (a column name of ``data``, or one id per record)
    makes a person the privacy unit; ``max_rows_per_id`` (and with ``by=``,
    ``max_groups_per_id``/``max_rows_per_group_per_id``) bound each person's
    contribution — rows beyond are dropped at random within the person — and the noise
    scales with the bounds. ``preview=True`` returns a :class:`Preview` instead, spending
    nothing and reading no data. ``label`` names the query in the receipts.
"""


def _contribution(privacy_id: Any, rows: Any, groups: Any, per_group: Any, grouped: bool) -> Any:
    return _tables.contribution(privacy_id, rows, groups, per_group, grouped)


def _public_rows(ledger: Any, grouped: bool, contribution: Contribution | None) -> bool:
    """Is the number of records public (replace-one, one person = one row, no groups)?"""
    if grouped or ledger.adjacency != ev.REPLACE_ONE:
        return False
    return contribution is None or contribution.effective(None)[0] == 1


def count(
    data: Any,
    *,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
    privacy_id: Any = None,
    max_rows_per_id: int | None = None,
    max_groups_per_id: int | None = None,
    max_rows_per_group_per_id: int | None = None,
    label: str | None = None,
    preview: bool = False,
) -> Any:
    """The number of records (per declared group), with integer noise: an int, or a Series.

    Under replace-one adjacency the total number of records is public and is returned
    exactly at no cost; group counts are still noisy (L1 sensitivity 2, L2 √2).

    Example:
        >>> import numpy as np
        >>> from dpledger import Ledger
        >>> from dpledger.algorithms import count
        >>> n = count(np.arange(1000), ledger=Ledger(1.0, 1e-6), share=0.5, rng=0)
        >>> abs(n - 1000) < 60
        True
    """
    keys = _declared_groups(by, groups)
    grouped = keys is not None
    n_groups = len(keys) if keys else 1
    bounds = _contribution(
        privacy_id, max_rows_per_id, max_groups_per_id, max_rows_per_group_per_id, grouped
    )
    plan = _Plan(ledger, noise, share, epsilon, delta, label)
    public = _public_rows(ledger, grouped, bounds)
    if preview:
        if public:
            return _free_preview(
                "count", plan, "the number of records is public under replace-one: exact, free"
            )
        plan.add_count(n_groups, grouped, bounds)
        return plan.preview("count", lambda m: (_preview.half_width(m[0]), "(per cell; exact)"))
    table = _table(
        data, by=by, groups=groups, privacy_id=privacy_id, contribution=bounds, summed=False
    )
    if public and bounds is None and table.rows is not None:
        return int(table.rows)
    if public and bounds is None:
        return len(data)
    if public:  # one row per person: the number of persons, public under replace-one
        return int(table.reduce(Request(), rng).counts[0])
    plan.add_count(n_groups, grouped, bounds)
    (noisy,) = plan.run([table.reduce(Request(), rng).counts.astype(np.int64)], rng)
    integers = np.rint(noisy).astype(np.int64)
    if keys is None:
        return int(integers[0])
    return _shape(integers, None, keys, None)


def _free_preview(query: str, plan: _Plan, note: str) -> Preview:
    return Preview(
        f"{query} ({plan.label})" if plan.label else query,
        (),
        0.0,
        float(plan.ledger.delta),
        {},
        True,
        0.0,
        note,
    )


def sum(
    data: Any,
    *,
    bounds: Any,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
    privacy_id: Any = None,
    max_rows_per_id: int | None = None,
    max_groups_per_id: int | None = None,
    max_rows_per_group_per_id: int | None = None,
    label: str | None = None,
    preview: bool = False,
) -> Any:
    """The sum of values clipped to the declared ``bounds`` (per column, per group)."""
    keys = _declared_groups(by, groups)
    grouped = keys is not None
    n_groups = len(keys) if keys else 1
    unit = _contribution(
        privacy_id, max_rows_per_id, max_groups_per_id, max_rows_per_group_per_id, grouped
    )
    plan = _Plan(ledger, noise, share, epsilon, delta, label)
    names = _schema(data, by, privacy_id)
    column_bounds = _bounds(bounds, names, 1 if names is None else len(names))
    plan.add_sums("sum", column_bounds, n_groups, grouped, unit)
    if preview:
        return plan.preview("sum", lambda m: (_preview.half_width(m[0]), "(per cell; exact)"))
    table = _table(
        data, by=by, groups=groups, privacy_id=privacy_id, contribution=unit, summed=True
    )
    request = Request(tuple(column_bounds), ("plain",))
    reduced = table.reduce(request, rng)
    (noisy,) = plan.run([_exact(reduced.sums[0], request, "plain")], rng)
    return _shape(noisy, table.names, keys, None)


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


def _exact(integers: np.ndarray, request: Request, kind: str) -> Any:
    from dpledger.mechanisms import ExactValue

    units = _data.column_sum_units(request.sum_bounds(kind))
    return ExactValue.from_integers(integers, units).reshape(-1)


def _exact_counts(counts: np.ndarray) -> Any:
    """Counts as an exact value (for the fine-grid noise of a denominator)."""
    from dpledger.mechanisms import ExactValue

    integers = np.array([int(c) for c in counts], dtype=object)[:, None]
    return ExactValue.from_integers(integers, np.array([[Fraction(1)]], dtype=object)).reshape(-1)


def _moments(
    data: Any,
    bounds: Any,
    ledger: Any,
    by: Any,
    groups: Any,
    share: Any,
    epsilon: Any,
    delta: Any,
    noise: Any,
    rng: Any,
    second: bool,
    privacy_id: Any,
    unit_bounds: tuple[Any, Any, Any],
    label: Any,
    preview: bool,
    rows: Any,
) -> Any:
    """Noisy (count, centred sum, centred sum of squares) per group and column."""
    keys = _declared_groups(by, groups)
    grouped = keys is not None
    n_groups = len(keys) if keys else 1
    unit = _contribution(privacy_id, *unit_bounds, grouped)
    plan = _Plan(ledger, noise, share, epsilon, delta, label)
    names = _schema(data, by, privacy_id)
    column_bounds = _bounds(bounds, names, 1 if names is None else len(names))
    half = [((hi - lo) / 2) for lo, hi in column_bounds]
    public_n = _public_rows(ledger, grouped, unit)
    if not public_n:
        plan.add_count(n_groups, grouped, unit, integer=False)
    # centred on the middle of the bounds: each value moves the sum by at most half the
    # range (add/remove) or the whole range (replace-one)
    plan.add_sums("sum", [(-h, h) for h in half], n_groups, grouped, unit)
    if second:
        plan.add_sums("sum of squares", [(0.0, h * h) for h in half], n_groups, grouped, unit)
    if preview:
        query = "variance" if second else "mean"
        return plan.preview(
            query, functools.partial(_mean_interval, public_n, second, data, rows, half, unit)
        )
    table = _table(
        data, by=by, groups=groups, privacy_id=privacy_id, contribution=unit, summed=True
    )
    request = Request(tuple(column_bounds), ("centred", "square") if second else ("centred",))
    reduced = table.reduce(request, rng)
    values: list[Any] = [] if public_n else [_exact_counts(reduced.counts)]
    values.append(_exact(reduced.sums[0], request, "centred"))
    if second:
        values.append(_exact(reduced.sums[1], request, "square"))
    released = plan.run(values, rng)
    if public_n:
        n = reduced.counts.astype(float).reshape(n_groups, 1)
        rest = released
    else:
        n, rest = released[0].reshape(n_groups, 1), released[1:]
    s1 = rest[0].reshape(n_groups, -1)
    s2 = rest[1].reshape(n_groups, -1) if second else None
    return n, s1, s2, column_bounds, table.names, keys


def _mean_interval(
    public_n: bool,
    second: bool,
    data: Any,
    rows: Any,
    half: list[float],
    unit: Any,
    mechanisms: list[Any],
) -> tuple[float | None, str]:
    """The 95 % half-width of a mean (None for a variance: see its releases)."""
    if second:
        return None, "a variance combines three releases; see each release's interval"
    if public_n and unit is None:
        records = len(data)  # public under replace-one
        if records == 0:
            return None, "no records"
        note = "(per cell; the number of records is public)"
        return _preview.half_width(mechanisms[0]) / records, note
    if rows is None:
        return None, (
            "the interval of a mean needs the number of records, which is private here: "
            "pass rows= (a public guess) for an approximate one"
        )
    n = float(check_positive("rows", rows))
    if public_n:  # the count is public (one row per person): only the sum is noisy
        return _preview.half_width(mechanisms[0]) / n, f"(per cell; at {n:g} people)"
    count, total = mechanisms[0], mechanisms[1]
    top = max(half)
    if type(total).__name__ == "Gaussian":
        sigma = math.hypot(float(total.sigma), top * float(count.sigma))
        width = 1.959963984540054 * sigma / n
    else:
        width = (_preview.half_width(total) + top * _preview.half_width(count)) / max(
            n - _preview.half_width(count), 1.0
        )
    return width, f"(per cell; approximate, at {n:g} records and the mean at an end of its bounds)"


def mean(
    data: Any,
    *,
    bounds: Any,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
    privacy_id: Any = None,
    max_rows_per_id: int | None = None,
    max_groups_per_id: int | None = None,
    max_rows_per_group_per_id: int | None = None,
    label: str | None = None,
    preview: bool = False,
    rows: float | None = None,
) -> Any:
    """The mean of values clipped to ``bounds``: a noisy sum over a noisy count.

    The sum is taken around the middle of the bounds (its sensitivity is half the range
    under add/remove) and the result is clipped to the bounds (post-processing).
    ``rows``: a public guess of the number of records, for the preview's interval only.
    """
    out = _moments(
        data,
        bounds,
        ledger,
        by,
        groups,
        share,
        epsilon,
        delta,
        noise,
        rng,
        False,
        privacy_id,
        (max_rows_per_id, max_groups_per_id, max_rows_per_group_per_id),
        label,
        preview,
        rows,
    )
    if preview:
        return out
    n, s1, _, column_bounds, names, keys = out
    middle = np.array([(lo + hi) / 2 for lo, hi in column_bounds])
    lo, hi = _limits(column_bounds)
    result = np.clip(middle + s1 / np.maximum(n, 1.0), lo, hi)
    return _shape(result, names, keys, None)


def variance(
    data: Any,
    *,
    bounds: Any,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
    privacy_id: Any = None,
    max_rows_per_id: int | None = None,
    max_groups_per_id: int | None = None,
    max_rows_per_group_per_id: int | None = None,
    label: str | None = None,
    preview: bool = False,
) -> Any:
    """The (population) variance of values clipped to ``bounds``.

    From noisy count n, centred sum S₁ and centred sum of squares S₂ (centred on the middle
    m of the bounds): Var = S₂/n − (S₁/n)², clipped to [0, (hi − lo)²/4] — post-processing
    of three releases.
    """
    out = _moments(
        data,
        bounds,
        ledger,
        by,
        groups,
        share,
        epsilon,
        delta,
        noise,
        rng,
        True,
        privacy_id,
        (max_rows_per_id, max_groups_per_id, max_rows_per_group_per_id),
        label,
        preview,
        None,
    )
    if preview:
        return out
    n, s1, s2, column_bounds, names, keys = out
    safe_n = np.maximum(n, 1.0)
    top = np.array([((hi - lo) / 2) ** 2 for lo, hi in column_bounds])
    result = np.clip(s2 / safe_n - (s1 / safe_n) ** 2, 0.0, top)
    return _shape(result, names, keys, None)


def histogram(
    data: Any,
    *,
    ledger: Any,
    categories: Sequence[Any] | None = None,
    edges: Sequence[float] | None = None,
    share: Any = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
    privacy_id: Any = None,
    max_rows_per_id: int | None = None,
    max_groups_per_id: int | None = None,
    max_rows_per_group_per_id: int | None = None,
    label: str | None = None,
    preview: bool = False,
) -> Any:
    """Counts per declared category, or per bin between declared edges (a Series of ints).

    Exactly one of ``categories`` (a list of values; records with another value are not
    counted) or ``edges`` (increasing numbers; bins are [eᵢ, eᵢ₊₁), values outside are
    not counted) — declared, never read from the data. One record moves one count: L1
    sensitivity 1, L2 1 (add/remove); 2 and √2 (replace-one). Returns a pandas Series
    indexed by category, or by bin interval.
    """
    pd = _pandas()
    if (categories is None) == (edges is None):
        raise InvalidArgumentError("pass exactly one of `categories` or `edges`.")
    index: Any
    if edges is not None:
        try:
            cuts = np.asarray(edges, dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(f"`edges` must be numbers. Found {edges!r}.") from error
        if cuts.ndim != 1 or cuts.size < 2 or not np.all(np.diff(cuts) > 0):
            raise InvalidArgumentError(
                f"`edges` must be at least two increasing finite numbers. Found {edges!r}."
            )
        if not np.all(np.isfinite(cuts)):
            raise InvalidArgumentError(f"`edges` must be finite. Found {edges!r}.")
        keys = list(range(cuts.size - 1))
        coder: Callable[[Any], np.ndarray] = functools.partial(_bin_codes, edges=cuts)
        index = (
            pd.IntervalIndex.from_breaks(cuts, closed="left") if pd is not None else list(cuts[:-1])
        )
    else:
        keys, _ = _declared_labels("categories", categories)
        coder = functools.partial(_tables.labels_to_codes, keys=keys)
        index = keys
    unit = _contribution(
        privacy_id, max_rows_per_id, max_groups_per_id, max_rows_per_group_per_id, True
    )
    plan = _Plan(ledger, noise, share, epsilon, delta, label)
    l1, l2 = _count_sensitivity(ledger.adjacency, unit, len(keys), True)
    plan.add("histogram", True, l1, l2, len(keys))
    if preview:
        return plan.preview("histogram", lambda m: (_preview.half_width(m[0]), "(per cell; exact)"))
    if not _data.is_dask(data) and not isinstance(data, (str, bytes)):
        raw = data.to_numpy() if hasattr(data, "to_numpy") else np.asarray(data, dtype=object)
        if np.ndim(raw) != 1:
            raise InvalidArgumentError(
                "`data` must be one value per record (1-D: an array, list or Series). Found "
                f"shape {np.shape(raw)}: with several values per record one record would move "
                "several counts, beyond the sensitivity charged; call histogram once per column."
            )
    table = _table(
        data,
        by=None,
        groups=None,
        privacy_id=privacy_id,
        contribution=unit,
        summed=False,
        histogram=(keys, coder),
    )
    counts = table.reduce(Request(), rng).counts.astype(np.int64)
    (noisy,) = plan.run([counts], rng)
    result = np.rint(noisy).astype(np.int64)
    if pd is None:  # pragma: no cover
        return dict(zip(index, result, strict=True))
    return pd.Series(result, index=index)


def _bin_codes(values: Any, edges: np.ndarray) -> np.ndarray:
    try:
        numbers = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentTypeError(
            "`data` must be numbers to bin by `edges` (use `categories` for labels)."
        ) from error
    return _tables.bin_codes(numbers, edges)


__dir__ = namespace(__all__)
