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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._validation import check_positive
from dpledger.accountant import events as ev
from dpledger.algorithms import _data, _preview, _tables
from dpledger.algorithms._preview import Preview
from dpledger.algorithms._tables import Contribution, Request
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["Preview", "count", "histogram", "mean", "sum", "variance"]

from dpledger.algorithms._query_inputs import (
    _bounds,
    _declared_groups,
    _declared_labels,
    _limits,
    _pandas,
    _schema,
    _shape,
    _table,
)
from dpledger.algorithms._query_plan import _exact, _exact_counts, _Plan
from dpledger.algorithms._query_sensitivity import (
    _count_sensitivity,
)
from dpledger.ledger.partitions import check_partition_data

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


def _public_rows(
    ledger: Any, grouped: bool, contribution: Contribution | None, droppable: bool = False
) -> bool:
    """Is the number of rows a query keeps public?

    Under replace-one, without groups, one row per person, and when no row can be dropped
    for a missing value (``droppable``: the query reads values whose type can be NaN —
    then replacing a record by one with a missing value changes the count).
    """
    if grouped or droppable or ledger.adjacency != ev.REPLACE_ONE:
        return False
    return contribution is None or contribution.effective(None)[0] == 1


def _may_miss(data: Any, names: list[Any] | None) -> bool:
    """Can a value of the query's columns be missing (NaN)? From the dtypes: the schema."""
    dtypes = getattr(data, "dtypes", None)
    if names is not None and dtypes is not None:
        kinds = [
            np.dtype(dtypes[name]).kind if hasattr(dtypes[name], "kind") else "O" for name in names
        ]
    else:
        dtype = getattr(data, "dtype", None)
        if dtype is None:
            dtype = np.asarray(data).dtype if not hasattr(data, "__dask_graph__") else None
        kinds = ["O" if dtype is None else getattr(dtype, "kind", "O")]
    return not all(kind in "biu" for kind in kinds)


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
    check_partition_data(ledger, data)  # a part's ledger takes only that part's data
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
    check_partition_data(ledger, data)  # a part's ledger takes only that part's data
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
    check_partition_data(ledger, data)  # a part's ledger takes only that part's data
    names = _schema(data, by, privacy_id)
    column_bounds = _bounds(bounds, names, 1 if names is None else len(names))
    half = [((hi - lo) / 2) for lo, hi in column_bounds]
    droppable = _may_miss(data, names)
    public_n = _public_rows(ledger, grouped, unit, droppable)
    if not public_n:
        plan.add_count(n_groups, grouped, unit, integer=False, droppable=droppable)
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
    check_partition_data(ledger, data)  # a part's ledger takes only that part's data
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
