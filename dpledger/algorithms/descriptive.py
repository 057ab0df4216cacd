"""Private descriptive statistics charged to a ledger: count, sum, mean, variance, histogram.

The analyst's everyday queries. Each function

* takes the data (a numpy array, a pandas Series, or a DataFrame of several columns),
  **declared bounds** (never estimated from the data: values outside are clipped), and a
  :class:`~dpledger.Ledger` to charge;
* sizes its noise either as a ``share`` of what remains in the ledger (solved in the
  ledger's own currency, so the ledger accepts it) or for its own ``epsilon``/``delta``
  (then charged at its true cost) — all of a query's releases solved together through
  :meth:`~dpledger.Ledger.reserve`, each at the same μ, with the tightest method;
* checks that all of its releases fit before the first one, charges each before its
  noise is drawn (``Ledger.release``), and returns a float, or pandas objects with the
  index kept (columns; declared groups).

Sensitivities (one record, under the ledger's adjacency; Dwork & Roth 2014, §3): a count
moves by 1 (add/remove) or not at all (replace-one: the count is public and released
exactly); a clipped sum by max(|lo|, |hi|) (add/remove) or hi − lo (replace-one). With
``by``/``groups`` a record falls in one group, so a group-by count or sum is one release
of a vector whose L1 and L2 sensitivities are those of one group's — the parallel
composition of McSherry 2009, without paying once per group. Several columns are one
vector release: L2 sensitivity √Σ Δ_c², L1 Σ Δ_c.

Noise: the (discrete) Gaussian when the ledger has δ > 0, the (discrete) Laplace when it
is pure (``noise=`` overrides); counts and histograms get integer noise, sums the safe
grid mechanisms of :mod:`dpledger.mechanisms.additive`. The mean is a noisy sum over a
noisy count, the variance a post-processing of noisy count, sum and sum of squares
around the middle of the bounds; both are post-processing, so they cost only their
releases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._numerics import float_up, sqrt_up
from dpledger._public import namespace
from dpledger._validation import check_choice, check_positive, check_probability, check_real
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms import DiscreteGaussian, DiscreteLaplace, ExactValue, Gaussian, Laplace
from dpledger.mechanisms.base import Mechanism

__all__ = ["count", "histogram", "mean", "sum", "variance"]

Bounds = tuple[float, float]


# -- inputs --------------------------------------------------------------------------------


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - exercised only without pandas
        return None
    return pandas


def _columns(data: Any) -> tuple[np.ndarray, list[Any] | None, Any]:
    """(n × c float matrix, column names or None for a 1-D input, the input's index)."""
    pd = _pandas()
    if pd is not None and isinstance(data, pd.DataFrame):
        if data.shape[1] == 0:
            raise InvalidArgumentError("`data` must have at least one column. Found none.")
        try:
            values = data.to_numpy(dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentTypeError(
                f"`data` must hold numbers. Found columns of types {list(data.dtypes)}."
            ) from error
        return values, list(data.columns), data.index
    if pd is not None and isinstance(data, pd.Series):
        return _vector(data.to_numpy()), None, data.index
    return _vector(data), None, None


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


def _groups(
    by: Any, groups: Any, n: int, index: Any = None
) -> tuple[np.ndarray | None, list[Any] | None]:
    """Each row's group number (−1: not a declared group), and the declared groups.

    A pandas ``by`` is matched to pandas ``data`` by index (as pandas' groupby does), not
    by position; an index that does not match is refused.
    """
    if by is None:
        if groups is not None:
            raise InvalidArgumentError("`groups` needs `by` (each record's group).")
        return None, None
    if groups is None:
        raise InvalidArgumentError(
            "`by` needs `groups`: the declared list of groups. Which groups exist must not "
            "be read from the data (it would leak), so it is declared like a bound."
        )
    keys, position = _declared_labels("groups", groups)
    pd = _pandas()
    if (
        pd is not None
        and isinstance(by, pd.Series)
        and index is not None
        and not by.index.equals(index)
    ):
        same_labels = (
            by.index.is_unique
            and index.is_unique
            and len(by.index) == len(index)
            and bool(by.index.isin(index).all())
        )
        if not same_labels:
            raise InvalidArgumentError(
                "`by` and `data` must have the same index labels (pandas objects are "
                "matched by index, as in groupby); they differ or repeat."
            )
        by = by.reindex(index)
    if np.ndim(by) != 1:
        raise InvalidArgumentError(
            f"`by` must hold one group label per record (1-D). Found {type(by).__name__} of "
            f"shape {np.shape(by)}."
        )
    labels = list(by.to_numpy() if hasattr(by, "to_numpy") else np.asarray(by, dtype=object))
    if len(labels) != n:
        raise InvalidArgumentError(
            f"`by` must have one label per record ({n}). Found {len(labels)}."
        )
    try:
        numbers = [position.get(label, -1) for label in labels]
    except TypeError:
        raise InvalidArgumentTypeError("`by` must hold hashable group labels.") from None
    return np.array(numbers, dtype=np.int64), keys


# -- releases ------------------------------------------------------------------------------


class _Plan:
    """The releases of one query: statistic vectors, sensitivities and the noise family."""

    def __init__(self, ledger: Any, noise: str | None, share: Any, epsilon: Any, delta: Any):
        from dpledger.ledger import Ledger

        if not isinstance(ledger, Ledger):
            raise InvalidArgumentTypeError(
                f"`ledger` must be a dpledger.Ledger (the budget this query is charged to). "
                f"Found {type(ledger).__name__}."
            )
        self.ledger = ledger
        if noise is None:
            noise = "gaussian" if ledger.delta > 0 else "laplace"
        self.noise = check_choice("noise", noise, ("gaussian", "laplace"))
        if epsilon is None and delta is not None:
            raise InvalidArgumentError("`delta` goes with `epsilon`.")
        if epsilon is not None and share is not None:
            raise InvalidArgumentError("pass `share` or `epsilon`/`delta`, not both.")
        self.epsilon = epsilon
        self.delta = 0.0 if delta is None else check_probability("delta", delta)
        if share is None and epsilon is None:
            raise InvalidArgumentError(
                "pass `share=` (the fraction of the ledger's remaining budget this query may "
                "use, in (0, 1]) or `epsilon=` (and `delta=`) for the query's own guarantee."
            )
        if share is not None:
            share = check_probability("share", share, low_open=True, high_open=False)
        if epsilon is not None:
            epsilon = check_positive("epsilon", epsilon)
        self.share = share
        self.items: list[tuple[Any, bool, float, float, str]] = []

    def add(
        self, value: np.ndarray | ExactValue, integer: bool, l1: float, l2: float, label: str
    ) -> None:
        """One release: the vector, whether it is integer-valued, its sensitivities.

        Sums stay exact (:class:`~dpledger.mechanisms.ExactValue`) up to the mechanism.
        """
        self.items.append((value, integer, l1, l2, label))

    def add_count(
        self, rows: int, group: np.ndarray | None, n_groups: int, integer: bool = True
    ) -> None:
        """The release of the number of ``rows`` records (per group).

        ``integer``: integer noise (discrete Gaussian or Laplace on the integers), for a
        count released as such; otherwise the noise of the sums (a safe Gaussian on a fine
        grid), for a count that is only a denominator — its σ of a few units would cost
        ~6 % more than the continuous price as a discrete Gaussian on the integers
        (:mod:`dpledger.accountant.discrete_gaussian`), and nothing on a fine grid.
        """
        l1, l2 = _count_sensitivity(self.ledger.adjacency)
        counts = _per_group(np.ones((rows, 1)), group, n_groups, [(1.0, 1.0)]).reshape(-1)
        # exact either way: integers for integer noise, the exact value for the grid
        self.add(counts.floor_steps(1.0) if integer else counts, integer, l1, l2, "count")

    def add_sums(
        self,
        values: np.ndarray,
        group: np.ndarray | None,
        n_groups: int,
        bounds: list[Bounds],
        label: str,
    ) -> None:
        """The release of the column sums (per group) of ``values``, each within ``bounds``."""
        l1, l2 = _sum_sensitivity(bounds, self.ledger.adjacency, group is not None)
        self.add(_per_group(values, group, n_groups, bounds).reshape(-1), False, l1, l2, label)

    def _factory(self, integer: bool, l1: float, l2: float, d: int) -> Callable[[float], Any]:
        if self.noise == "gaussian":
            if integer:
                return lambda s: DiscreteGaussian(s, l2, dimension=d)
            return lambda s: Gaussian(s, l2, dimension=d)
        if integer:
            return lambda t: DiscreteLaplace(t, l1, dimension=d)
        return lambda b: Laplace(b, l1, dimension=d)

    def run(self, rng: Any) -> list[np.ndarray]:
        """Calibrate the query's releases jointly, check they all fit, then release them.

        One schedule through the ledger's planning path (:meth:`Ledger.reserve
        <dpledger.Ledger.reserve>`): release i gets noise p·Δᵢ (its sensitivity in the
        noise's norm: every release at the same μ, or the same ε for Laplace noise), and p
        is the least that meets the query's own (ε, δ) with the tightest method — the
        releases composed together, not split by basic composition — or that fits its
        ``share`` of what remains, in the ledger's currency.
        """
        if self.epsilon is not None:
            if self.noise == "laplace" and self.delta > 0:
                raise InvalidArgumentError("Laplace noise is pure: pass `delta=0`.")
            if self.noise == "gaussian" and self.delta == 0:
                raise InvalidArgumentError("Gaussian noise needs `delta` > 0 (or noise='laplace').")
        parts = []
        for value, integer, l1, l2, _ in self.items:
            sensitivity = l2 if self.noise == "gaussian" else l1
            parts.append((self._factory(integer, l1, l2, value.size), sensitivity))

        def schedule(p: float) -> list[Mechanism]:
            return [factory(p * sensitivity) for factory, sensitivity in parts]

        # every value validated and all of the query's releases checked, in order, before
        # the first (nothing half-done); a seeded rng is combined with the ledger's
        # position, so no two queries repeat noise
        if self.epsilon is not None:
            reservation = self.ledger.reserve(
                schedule, epsilon=self.epsilon, delta=self.delta, rng=rng
            )
        else:
            reservation = self.ledger.reserve(schedule, share=self.share, rng=rng)
        named = [
            (label, value.astype(np.int64) if integer else value)
            for value, integer, _, _, label in self.items
        ]
        return [
            np.asarray(noisy, dtype=float).reshape(-1) for noisy in reservation.release_all(named)
        ]


def _limits(bounds: list[Bounds]) -> tuple[np.ndarray, np.ndarray]:
    """The columns' lower and upper bounds, as two arrays."""
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def _clip(values: np.ndarray, bounds: list[Bounds]) -> np.ndarray:
    if np.isnan(values).any():
        raise InvalidArgumentError(
            "`data` has missing values (NaN): drop or impute them first (a declared "
            "imputation value is record-local, so it costs no privacy)."
        )
    lo, hi = _limits(bounds)
    clipped: np.ndarray = np.clip(values, lo, hi)
    return clipped


def _per_group(
    values: np.ndarray, group: np.ndarray | None, n_groups: int, bounds: list[Bounds]
) -> ExactValue:
    """Column sums per group (groups × columns), or (1 × columns) without groups.

    Exact sums of the values on a fixed grid within their ``bounds`` (record-local), kept
    exact up to the release grid (:class:`~dpledger.mechanisms.ExactValue`): a
    floating-point sum's error grows with the rows and depends on their order and on every
    other row, and can exceed the sensitivity at scale (Casacuberta et al. 2022).
    """
    return _data.exact_column_sums(values, bounds, group, n_groups)


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


def _sum_sensitivity(bounds: list[Bounds], adjacency: str, grouped: bool) -> tuple[float, float]:
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


def _count_sensitivity(adjacency: str) -> tuple[float, float]:
    """(L1, L2) of a (group) count vector."""
    if adjacency == ev.ADD_REMOVE:
        return 1.0, 1.0
    return 2.0, math.sqrt(2.0)  # replace-one: one group loses a record, another gains it


# -- the queries ---------------------------------------------------------------------------


def count(
    data: Any,
    *,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
) -> Any:
    """The number of records (per declared group), with integer noise.

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
    try:
        n = len(data)
    except TypeError as error:
        raise InvalidArgumentTypeError(
            f"`data` must be a sequence of records (array, Series, DataFrame, list). Found "
            f"{type(data).__name__}."
        ) from error
    pd = _pandas()
    pandas_data = pd is not None and isinstance(data, (pd.Series, pd.DataFrame))
    group, keys = _groups(by, groups, n, data.index if pandas_data else None)
    plan = _Plan(ledger, noise, share, epsilon, delta)
    if keys is None and ledger.adjacency == ev.REPLACE_ONE:
        return float(n)
    plan.add_count(n, group, len(keys) if keys else 1)
    (noisy,) = plan.run(rng)
    return _shape(noisy, None, keys, None)


def sum(
    data: Any,
    *,
    bounds: Any,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
) -> Any:
    """The sum of values clipped to the declared ``bounds`` (per column, per group)."""
    values, names, index = _columns(data)
    column_bounds = _bounds(bounds, names, values.shape[1])
    group, keys = _groups(by, groups, values.shape[0], index)
    plan = _Plan(ledger, noise, share, epsilon, delta)
    n_groups = len(keys) if keys else 1
    plan.add_sums(_clip(values, column_bounds), group, n_groups, column_bounds, "sum")
    (noisy,) = plan.run(rng)
    return _shape(noisy, names, keys, index)


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
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[Bounds], Any, Any]:
    """Noisy (count, centred sum, centred sum of squares) per group and column."""
    values, names, index = _columns(data)
    column_bounds = _bounds(bounds, names, values.shape[1])
    group, keys = _groups(by, groups, values.shape[0], index)
    n_groups = len(keys) if keys else 1
    plan = _Plan(ledger, noise, share, epsilon, delta)
    middle = np.array([(lo + hi) / 2 for lo, hi in column_bounds])
    half = [((hi - lo) / 2) for lo, hi in column_bounds]
    centred = _clip(values, column_bounds) - middle
    public_n = keys is None and ledger.adjacency == ev.REPLACE_ONE
    if not public_n:
        plan.add_count(values.shape[0], group, n_groups, integer=False)
    # centred on the middle of the bounds: each value moves the sum by at most half the
    # range (add/remove) or the whole range (replace-one)
    plan.add_sums(centred, group, n_groups, [(-h, h) for h in half], "sum")
    if second:
        square_bounds = [(0.0, h * h) for h in half]
        plan.add_sums(centred**2, group, n_groups, square_bounds, "sum of squares")
    released = plan.run(rng)
    if public_n:
        n = np.full((n_groups, 1), float(values.shape[0]))
        rest = released
    else:
        n, rest = released[0].reshape(n_groups, 1), released[1:]
    s1 = rest[0].reshape(n_groups, -1)
    s2 = rest[1].reshape(n_groups, -1) if second else None
    return n, s1, s2, column_bounds, names, keys


def mean(
    data: Any,
    *,
    bounds: Any,
    ledger: Any,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    share: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
) -> Any:
    """The mean of values clipped to ``bounds``: a noisy sum over a noisy count.

    The sum is taken around the middle of the bounds (its sensitivity is half the range
    under add/remove) and the result is clipped to the bounds (post-processing).
    """
    n, s1, _, column_bounds, names, keys = _moments(
        data, bounds, ledger, by, groups, share, epsilon, delta, noise, rng, second=False
    )
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
    share: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
) -> Any:
    """The (population) variance of values clipped to ``bounds``.

    From noisy count n, centred sum S₁ and centred sum of squares S₂ (centred on the middle
    m of the bounds): Var = S₂/n − (S₁/n)², clipped to [0, (hi − lo)²/4] — post-processing
    of three releases.
    """
    n, s1, s2, column_bounds, names, keys = _moments(
        data, bounds, ledger, by, groups, share, epsilon, delta, noise, rng, second=True
    )
    assert s2 is not None
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
    share: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    noise: str | None = None,
    rng: Any = None,
) -> Any:
    """Counts per declared category, or per bin between declared edges.

    Exactly one of ``categories`` (a list of values; records with another value are not
    counted) or ``edges`` (increasing numbers; bins are [eᵢ, eᵢ₊₁), values outside are
    not counted) — declared, never read from the data. One record moves one count: L1
    sensitivity 1, L2 1 (add/remove); 2 and √2 (replace-one). Returns a pandas Series
    indexed by category, or by bin interval.
    """
    from dpledger.ledger import Ledger

    pd = _pandas()
    if (categories is None) == (edges is None):
        raise InvalidArgumentError("pass exactly one of `categories` or `edges`.")
    if not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(
            f"`ledger` must be a dpledger.Ledger. Found {type(ledger).__name__}."
        )
    raw = data.to_numpy() if hasattr(data, "to_numpy") else np.asarray(data, dtype=object)
    if np.ndim(raw) != 1:
        raise InvalidArgumentError(
            "`data` must be one value per record (1-D: an array, list or Series). Found shape "
            f"{np.shape(raw)}: with several values per record one record would move several "
            "counts, beyond the sensitivity charged; call histogram once per column."
        )
    index: Any
    if edges is not None:
        try:
            bounds = np.asarray(edges, dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(f"`edges` must be numbers. Found {edges!r}.") from error
        if bounds.ndim != 1 or bounds.size < 2 or not np.all(np.diff(bounds) > 0):
            raise InvalidArgumentError(
                f"`edges` must be at least two increasing finite numbers. Found {edges!r}."
            )
        if not np.all(np.isfinite(bounds)):
            raise InvalidArgumentError(f"`edges` must be finite. Found {edges!r}.")
        try:
            values = np.asarray(raw, dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentTypeError(
                "`data` must be numbers to bin by `edges` (use `categories` for labels)."
            ) from error
        inside = values[np.isfinite(values) & (values >= bounds[0]) & (values < bounds[-1])]
        counts = np.bincount(
            np.searchsorted(bounds, inside, side="right") - 1, minlength=bounds.size - 1
        )
        index = (
            pd.IntervalIndex.from_breaks(bounds, closed="left")
            if pd is not None
            else list(bounds[:-1])
        )
    else:
        keys, position = _declared_labels("categories", categories)
        counts = np.zeros(len(keys), dtype=np.int64)
        try:
            for label in raw:
                i = position.get(label)
                if i is not None:
                    counts[i] += 1
        except TypeError:
            raise InvalidArgumentTypeError("`data` must hold hashable labels.") from None
        index = keys
    plan = _Plan(ledger, noise, share, epsilon, delta)
    l1, l2 = _count_sensitivity(ledger.adjacency)
    plan.add(np.asarray(counts, dtype=float), True, l1, l2, "histogram")
    (noisy,) = plan.run(rng)
    if pd is None:  # pragma: no cover
        return dict(zip(index, noisy, strict=True))
    return pd.Series(noisy, index=index)


__dir__ = namespace(__all__)
