"""Tables for the analyst's queries: privacy units, groups, and reductions where the data lives.

A query reads three things from a table: the value columns (clipped to declared bounds),
each row's declared group (or −1), and — with ``privacy_id`` — whose row it is. It needs
only small reductions of them: the number of rows per group and exact column sums per
group. This module computes those reductions

* for numpy and pandas input in memory, vectorised (``Index.get_indexer`` and
  ``np.bincount``, no Python loop over the rows);
* for dask input **partition by partition** (each partition reduced where it is, only the
  groups × columns sums travel, summed as exact integers: the result does not depend on
  the partitioning), never gathering a column into one process.

**Privacy units** (Wilson et al. 2020, "Differentially Private SQL with Bounded User
Contribution"; Tumult Analytics' ``MaxRowsPerID``/``MaxGroupsPerID``/
``MaxRowsPerGroupPerID``; PipelineDP's contribution bounds). With ``privacy_id`` the
neighbouring tables differ in one *person* — all of that person's rows — and every
sensitivity is that of one person's contribution after **contribution bounding**: each
person keeps at most ``max_groups_per_id`` of their groups, at most
``max_rows_per_group_per_id`` rows in each, and at most ``max_rows_per_id`` rows in all.
Which groups and rows are kept is decided by independent uniform keys drawn per row (and
per (person, group) pair), ranked within the person: the kept rows of a person are a
random function of that person's rows alone, independent of everyone else's, so adding,
removing or replacing a person changes only that person's kept rows (the coupling the
sensitivity bound needs). On dask input the rows of one person may lie in several
partitions: the table is first **shuffled by the id** through dask (``shuffle(on=...)``:
every person's rows meet in one partition; no partition is gathered), then bounded and
reduced partition by partition.

Rows that a query cannot use — a value missing (NaN) in one of its columns, a group
label outside the declared groups — are dropped before the bounding. Each such rule reads
only the row itself (record-local), so it costs nothing and reveals nothing: unlike a
refusal, whose occurrence would depend on the private data.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpledger.algorithms import _data
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "Contribution",
    "Reduced",
    "Request",
    "Table",
    "bin_codes",
    "contribution",
    "labels_to_codes",
    "person_codes",
    "rank_within",
]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - exercised only without pandas
        return None
    return pandas


# -- contribution bounds --------------------------------------------------------------------


@dataclass(frozen=True)
class Contribution:
    """Declared bounds on one person's rows (None: not bounded separately)."""

    rows: int
    groups: int | None = None
    rows_per_group: int | None = None

    def effective(self, n_groups: int | None) -> tuple[int, int]:
        """(k′, F): the most rows a person keeps, and the most Σ_g n_g² over groups.

        A person keeps n_g ≤ c rows in each of at most g′ = min(g, G) groups, Σ n_g ≤ k′ =
        min(k, g′·c). Σ n_g² is largest with the rows piled up: ⌊k′/c⌋ groups of c rows and
        one of the rest (k′ mod c) — F = ⌊k′/c⌋·c² + (k′ mod c)². Without groups F = k′².
        """
        k = self.rows
        if n_groups is None:
            return k, k * k
        c = min(self.rows_per_group or k, k)
        g = min(self.groups or k, n_groups, k)
        top = min(k, g * c)
        full, rest = divmod(top, c)
        return top, full * c * c + rest * rest


MAX_BOUND = 2**53
"""The largest contribution bound (beyond it the sensitivities are not exact floats)."""


def _positive_int(name: str, value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 1 <= value <= MAX_BOUND
    ):
        raise InvalidArgumentError(
            f"`{name}` must be a positive integer of at most 2**53. Found {value!r}."
        )
    return int(value)


def contribution(
    privacy_id: Any, rows: Any, groups: Any, rows_per_group: Any, grouped: bool
) -> Contribution | None:
    """The declared contribution bounds, checked: all or none with ``privacy_id``."""
    given = {
        "max_rows_per_id": rows,
        "max_groups_per_id": groups,
        "max_rows_per_group_per_id": rows_per_group,
    }
    if privacy_id is None:
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise InvalidArgumentError(
                f"`{named[0]}` bounds a person's rows: it needs `privacy_id` (each row's "
                "person). Without it every row is its own person."
            )
        return None
    if not grouped and (groups is not None or rows_per_group is not None):
        raise InvalidArgumentError(
            "`max_groups_per_id` and `max_rows_per_group_per_id` bound a person's groups: "
            "they need `by=` (or a histogram's categories or edges)."
        )
    if rows is None:
        if groups is None or rows_per_group is None:
            raise InvalidArgumentError(
                "`privacy_id` needs declared contribution bounds: `max_rows_per_id` (the "
                "most rows one person may add), or with `by=` both `max_groups_per_id` and "
                "`max_rows_per_group_per_id`. Rows beyond the bounds are dropped, chosen at "
                "random within each person; the noise grows with the bounds."
            )
        g = _positive_int("max_groups_per_id", groups)
        c = _positive_int("max_rows_per_group_per_id", rows_per_group)
        return Contribution(g * c, g, c)
    return Contribution(
        _positive_int("max_rows_per_id", rows),
        None if groups is None else _positive_int("max_groups_per_id", groups),
        None
        if rows_per_group is None
        else _positive_int("max_rows_per_group_per_id", rows_per_group),
    )


def rank_within(owner: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Each element's rank (0, 1, …) among those of the same ``owner``, by ascending ``key``."""
    n = owner.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((key, owner))
    sorted_owner = owner[order]
    starts = np.flatnonzero(np.r_[True, sorted_owner[1:] != sorted_owner[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - run_start
    return ranks


def bound_contributions(
    ids: np.ndarray,
    group: np.ndarray | None,
    bounds: Contribution,
    n_groups: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Which rows to keep (a boolean mask): each person's contribution within ``bounds``.

    ``ids``: each row's person (integer codes), ``group``: each row's group (−1: dropped).
    Keys are drawn for every row (and every (person, group) pair) whether kept or not.
    """
    keep = np.ones(ids.size, dtype=bool) if group is None else group >= 0
    rows = np.flatnonzero(keep)
    person = ids[rows]
    key = rng.random(rows.size)
    if group is not None:
        cell = person.astype(np.int64) * max(n_groups, 1) + group[rows]
        if bounds.groups is not None:
            cells, inverse = np.unique(cell, return_inverse=True)
            cell_key = rng.random(cells.size)
            cell_person = cells // max(n_groups, 1)
            kept_cell = rank_within(cell_person, cell_key) < bounds.groups
            ok = kept_cell[inverse]
            rows, person, key, cell = rows[ok], person[ok], key[ok], cell[ok]
        if bounds.rows_per_group is not None:
            ok = rank_within(cell, key) < bounds.rows_per_group
            rows, person, key = rows[ok], person[ok], key[ok]
    ok = rank_within(person, key) < bounds.rows
    mask = np.zeros(ids.size, dtype=bool)
    mask[rows[ok]] = True
    return mask


def truncation_seed(rng: Any) -> np.random.SeedSequence:
    """The seed of the contribution bounding's keys: from ``rng`` when it is given.

    A seed or generator makes the bounding reproducible (a child stream, apart from the
    noise's); None draws 128 bits from the operating system.
    """
    if rng is None:
        return np.random.SeedSequence(secrets.randbits(128))
    if isinstance(rng, np.random.Generator):
        child = rng.bit_generator.seed_seq
        if isinstance(child, np.random.SeedSequence):
            spawned: np.random.SeedSequence = child.spawn(1)[0]
            return spawned
        return np.random.SeedSequence(int(rng.integers(2**63)))
    return np.random.SeedSequence([int(rng), 0x5EED_1D])


# -- requests and results -------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """The reductions one query needs: counts, and sums of clipped values.

    ``kinds`` lists the sums: "plain" (values clipped to ``bounds``), "centred" (clipped,
    minus the middle of the bounds), "square" (the centred values squared).
    """

    bounds: tuple[tuple[float, float], ...] = ()
    kinds: tuple[str, ...] = ()

    def sum_bounds(self, kind: str) -> list[tuple[float, float]]:
        half = [(hi - lo) / 2 for lo, hi in self.bounds]
        if kind == "plain":
            return list(self.bounds)
        if kind == "centred":
            return [(-h, h) for h in half]
        return [(0.0, h * h) for h in half]


@dataclass
class Reduced:
    """Rows kept per group (int) and exact grid sums per group × column, one per kind."""

    counts: np.ndarray
    sums: list[np.ndarray] = field(default_factory=list)

    def __add__(self, other: Reduced) -> Reduced:
        return Reduced(
            self.counts + other.counts,
            [a + b for a, b in zip(self.sums, other.sums, strict=True)],
        )


def reduce_block(
    size: int,
    values: np.ndarray | None,
    group: np.ndarray | None,
    n_groups: int,
    request: Request,
    ids: np.ndarray | None = None,
    bounds: Contribution | None = None,
    seed: np.random.SeedSequence | None = None,
) -> Reduced:
    """The reductions of one block of rows (all of them, or one dask partition).

    Drops (record-local) rows outside the declared groups, rows missing a value and rows
    without a person (``ids`` −1), then bounds each person's contribution.
    """
    keep = np.ones(size, dtype=bool) if group is None else group >= 0
    if values is not None and values.shape[1]:
        keep &= ~np.isnan(values).any(axis=1)
    if ids is not None:
        if bounds is None or seed is None:
            raise InvalidArgumentError("internal error: a privacy unit without its bounds.")
        keep &= ids >= 0
        generator = np.random.default_rng(seed)
        if group is None:
            inside = np.flatnonzero(keep)
            keep = np.zeros(size, dtype=bool)
            keep[inside] = bound_contributions(ids[inside], None, bounds, n_groups, generator)
        else:
            marked = np.where(keep, group, -1)
            keep = bound_contributions(ids, marked, bounds, n_groups, generator)
    g = np.zeros(size, dtype=np.int64) if group is None else group
    chosen = np.where(keep, g, -1)
    counts = np.bincount(chosen[keep], minlength=n_groups).astype(np.int64)
    sums = []
    if request.kinds:
        assert values is not None
        lo = np.array([b[0] for b in request.bounds])
        hi = np.array([b[1] for b in request.bounds])
        clipped = np.clip(np.where(keep[:, None], values, lo), lo, hi)
        middle = (lo + hi) / 2
        for kind in request.kinds:
            if kind == "plain":
                part = clipped
            elif kind == "centred":
                part = clipped - middle
            else:
                part = (clipped - middle) ** 2
            sums.append(_data.column_grid_sums(part, request.sum_bounds(kind), chosen, n_groups))
    return Reduced(counts.astype(object), sums)


# -- tables ---------------------------------------------------------------------------------


def labels_to_codes(labels: Any, keys: list[Any]) -> np.ndarray:
    """Each label's position among the declared ``keys`` (−1: not declared), vectorised.

    The labels are factorised (one hash pass, as ``value_counts`` does) and only their
    distinct values are looked up among the keys.
    """
    pd = _pandas()
    try:
        if pd is not None:
            values = labels if isinstance(labels, (pd.Series, pd.Index)) else np.asarray(labels)
            if getattr(values, "ndim", 1) != 1:
                values = np.asarray(labels, dtype=object)
            codes, uniques = pd.factorize(values, use_na_sentinel=True)
            index = pd.Index(keys, dtype=object) if _mixed(keys) else pd.Index(keys)
            lookup = np.append(index.get_indexer(pd.Index(uniques, dtype=object)), -1)
            return np.asarray(lookup[codes], dtype=np.int64)  # code −1 → the appended −1
        position = {key: i for i, key in enumerate(keys)}  # pragma: no cover - no pandas
        return np.array([position.get(label, -1) for label in labels], dtype=np.int64)
    except TypeError:
        raise InvalidArgumentTypeError("`by` must hold hashable group labels.") from None


def person_codes(ids: Any) -> np.ndarray:
    """Each row's person as an integer code; a row with a missing id is its own person."""
    pd = _pandas()
    if pd is not None:
        given = ids if isinstance(ids, (pd.Series, pd.Index)) else np.asarray(ids)
        codes, _ = pd.factorize(given, use_na_sentinel=True)
        return _own_person(np.asarray(codes, dtype=np.int64))
    seen: dict[Any, int] = {}  # pragma: no cover - without pandas
    out = []
    for value in np.asarray(ids, dtype=object):
        missing = value is None or (isinstance(value, float) and value != value)
        out.append(-1 if missing else seen.setdefault(value, len(seen)))
    return _own_person(np.array(out, dtype=np.int64))


def _own_person(codes: np.ndarray) -> np.ndarray:
    """A row with a missing id is its own person (a new code each), never dropped.

    Dropping it would make the number of people a query keeps depend on the data under
    replace-one (a person replaced by an id-less row); as its own person it is bounded
    like anyone else, record-local.
    """
    missing = codes < 0
    if missing.any():
        start = int(codes.max(initial=-1)) + 1
        codes = codes.copy()
        codes[missing] = start + np.arange(int(missing.sum()))
    return codes


def _mixed(keys: list[Any]) -> bool:
    return len({type(k) for k in keys}) > 1


def bin_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each value's bin [eᵢ, eᵢ₊₁) among ``edges`` (−1: outside, or not a number)."""
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(values) & (values >= edges[0]) & (values < edges[-1])
    codes = np.full(values.shape, -1, dtype=np.int64)
    codes[inside] = np.searchsorted(edges, values[inside], side="right") - 1
    return codes


@dataclass
class Table:
    """One query's view of its input: value columns, groups, persons; reduced on demand.

    ``frame`` is a pandas or dask DataFrame (or None for numpy input, then ``values``,
    ``labels`` and ``ids`` are arrays). ``value_columns`` name the summed columns in
    ``frame``; ``by_column``/``id_column`` the group and person columns.
    """

    n_groups: int
    keys: list[Any] | None
    names: list[Any] | None
    index: Any
    frame: Any = None
    value_columns: list[Any] = field(default_factory=list)
    by_column: Any = None
    id_column: Any = None
    values: np.ndarray | None = None
    labels: Any = None
    ids: Any = None
    coder: Callable[[Any], np.ndarray] | None = None
    bounds: Contribution | None = None
    rows: int | None = None

    @property
    def is_dask(self) -> bool:
        return self.frame is not None and _data.is_dask(self.frame)

    def reduce(self, request: Request, rng: Any) -> Reduced:
        """The query's reductions: kept rows per group and exact sums, where the data lives."""
        seed = None if self.bounds is None else truncation_seed(rng)
        if self.is_dask:
            return self._reduce_dask(request, seed)
        if self.frame is not None:
            values, labels, ids = self._from_frame(self.frame)
        else:
            values, labels, ids = self.values, self.labels, self.ids
        return self._reduce_arrays(
            self._size(values, labels, ids), values, labels, ids, request, seed
        )

    def _size(self, values: Any, labels: Any, ids: Any) -> int:
        if self.rows is not None:
            return self.rows
        for given in (values, labels, ids):
            if given is not None:
                return len(given)
        raise InvalidArgumentError("internal error: a table of unknown size.")

    def _from_frame(self, frame: Any) -> tuple[np.ndarray | None, Any, Any]:
        values = None
        if self.value_columns:
            try:
                values = frame[self.value_columns].to_numpy(dtype=float)
            except (TypeError, ValueError) as error:
                raise InvalidArgumentTypeError(
                    f"`data` must hold numbers in the summed columns {self.value_columns!r}. "
                    f"Found types {list(frame[self.value_columns].dtypes)}."
                ) from error
        labels = None if self.by_column is None else frame[self.by_column].to_numpy()
        ids = None if self.id_column is None else frame[self.id_column].to_numpy()
        return values, labels, ids

    def _reduce_arrays(
        self,
        size: int,
        values: np.ndarray | None,
        labels: Any,
        ids: Any,
        request: Request,
        seed: np.random.SeedSequence | None,
    ) -> Reduced:
        group = None if labels is None or self.coder is None else self.coder(labels)
        codes = None if ids is None else person_codes(ids)  # missing ids: −1, dropped
        return reduce_block(size, values, group, self.n_groups, request, codes, self.bounds, seed)

    def _reduce_dask(self, request: Request, seed: np.random.SeedSequence | None) -> Reduced:
        from dask.base import compute
        from dask.delayed import delayed

        frame = self.frame
        if self.id_column is not None:
            # every person's rows meet in one partition (a shuffle through dask, never a
            # gather), then each partition bounds its people's contributions
            frame = frame.shuffle(on=self.id_column)
        parts = frame.to_delayed(optimize_graph=False)
        if not parts:
            raise InvalidArgumentError("`data` has no partitions; give it at least one.")
        seeds: list[Any] = [None] * len(parts) if seed is None else seed.spawn(len(parts))
        block = delayed(_reduce_partition)
        # the partitions' recipe without the collection (dask would unpack a dataclass)
        recipe = _Recipe(
            self.n_groups,
            self.value_columns,
            self.by_column,
            self.id_column,
            self.coder,
            self.bounds,
        )
        pending = [block(recipe, part, request, s) for part, s in zip(parts, seeds, strict=True)]
        while len(pending) > 1:
            pending = [
                delayed(_add)(pending[i], pending[i + 1]) if i + 1 < len(pending) else pending[i]
                for i in range(0, len(pending), 2)
            ]
        (result,) = compute(pending[0])  # type: ignore[no-untyped-call]
        return result  # type: ignore[no-any-return]


class _Recipe:
    """What a partition needs to reduce itself (a plain object: dask passes it as is)."""

    def __init__(
        self,
        n_groups: int,
        value_columns: list[Any],
        by_column: Any,
        id_column: Any,
        coder: Any,
        bounds: Contribution | None,
    ) -> None:
        self.table = Table(
            n_groups,
            None,
            None,
            None,
            value_columns=value_columns,
            by_column=by_column,
            id_column=id_column,
            coder=coder,
            bounds=bounds,
        )


def _reduce_partition(
    recipe: _Recipe, frame: Any, request: Request, seed: np.random.SeedSequence | None
) -> Reduced:
    table = recipe.table
    values, labels, ids = table._from_frame(frame)
    return table._reduce_arrays(len(frame), values, labels, ids, request, seed)


def _add(a: Reduced, b: Reduced) -> Reduced:
    return a + b


def check_names(data: Any, names: Sequence[Any], what: str) -> None:
    """Refuse a column name that ``data`` does not have, naming it."""
    missing = [name for name in names if name not in data.columns]
    if missing:
        raise InvalidArgumentError(
            f"`{what}` names column {missing[0]!r}, which `data` does not have (columns: "
            f"{list(data.columns)!r})."
        )
