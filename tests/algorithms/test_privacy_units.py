"""People with many rows: contribution bounding, person-level sensitivities and neighbours."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import algorithms as alg
from dpledger.algorithms import _query_inputs, _query_sensitivity, _tables
from dpledger.algorithms._tables import Contribution

QUERIES = {
    "count": lambda data, **kw: alg.count(data, **kw),
    "sum": lambda data, **kw: alg.sum(data["v"], bounds=(0, 10), **kw),
    "mean": lambda data, **kw: alg.mean(data["v"], bounds=(0, 10), **kw),
    "variance": lambda data, **kw: alg.variance(data["v"], bounds=(0, 10), **kw),
    "histogram": lambda data, **kw: alg.histogram(data["g"], categories=["a", "b"], **kw),
}


def _people(rng: np.random.Generator, persons: int = 200, most: int = 8) -> pd.DataFrame:
    rows = rng.integers(1, most + 1, size=persons)
    pid = np.repeat(np.arange(persons), rows)
    return pd.DataFrame(
        {
            "pid": pid,
            "v": rng.uniform(0, 10, pid.size),
            "g": rng.choice(["a", "b", "c"], pid.size),
        }
    )


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_privacy_id_without_a_bound_is_refused_before_any_charge(query):
    data = _people(np.random.default_rng(0))
    ledger = dpl.Ledger(1.0, 1e-6)
    with pytest.raises(dpl.InvalidArgumentError, match="max_rows_per_id"):
        QUERIES[query](data, ledger=ledger, share=0.5, privacy_id=data["pid"])
    with pytest.raises(dpl.InvalidArgumentError, match="privacy_id"):
        QUERIES[query](data, ledger=ledger, share=0.5, max_rows_per_id=3)
    assert ledger.receipts == ()


@pytest.mark.parametrize(
    ("rows", "groups", "per_group"), [(3, None, None), (5, 2, None), (6, 2, 2), (None, 1, 3)]
)
def test_bounding_keeps_each_persons_rows_within_the_declared_bounds(rows, groups, per_group):
    rng = np.random.default_rng(1)
    data = _people(rng, persons=300, most=12)
    codes = _tables.labels_to_codes(data["g"], ["a", "b", "c"])
    unit = _tables.contribution(data["pid"], rows, groups, per_group, grouped=True)
    keep = _tables.bound_contributions(data["pid"].to_numpy(), codes, unit, 3, rng)
    kept = data[keep]
    per_person = kept.groupby("pid").size()
    assert per_person.max() <= unit.rows
    if groups is not None:
        assert kept.groupby("pid")["g"].nunique().max() <= groups
    if per_group is not None:
        assert kept.groupby(["pid", "g"]).size().max() <= per_group
    # nothing dropped beyond the bounds: a person keeps min(their rows, k) when only k binds
    if groups is None and per_group is None:
        expected = data.groupby("pid").size().clip(upper=rows)
        assert per_person.reindex(expected.index, fill_value=0).equals(expected)


def _brute_force(k, g, c, n_groups, bounds, adjacency, grouped):
    """The largest L1 and L2 change of the released vector between neighbouring people,
    by enumerating every contribution (rows per group, each value at a bound)."""
    values = sorted({bounds[0], bounds[1]})
    contributions = []
    cells = range(n_groups) if grouped else range(1)
    for counts in itertools.product(range(k + 1), repeat=len(cells)):
        if sum(counts) == 0 or sum(counts) > k:
            continue
        if grouped and (sum(1 for x in counts if x) > g or max(counts) > c):
            continue
        # a cell's sum takes every value n·lo + j·(hi − lo), extremes at all-lo / all-hi
        options = [[n * values[0], n * values[-1]] if n else [0.0] for n in counts]
        for sums in itertools.product(*options):
            contributions.append((np.array(counts, float), np.array(sums, float)))
    best = np.zeros(4)  # count L1, count L2, sum L1, sum L2
    pairs = (
        [(u, (np.zeros(len(cells)), np.zeros(len(cells)))) for u in contributions]
        if adjacency == "add_remove"
        else itertools.product(contributions, contributions)
    )
    for (n1, s1), (n2, s2) in pairs:
        dn, ds = n1 - n2, s1 - s2
        best = np.maximum(
            best,
            [np.abs(dn).sum(), np.sqrt((dn**2).sum()), np.abs(ds).sum(), np.sqrt((ds**2).sum())],
        )
    return best


@pytest.mark.parametrize("adjacency", ["add_remove", "replace_one"])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize(
    ("k", "g", "c"), [(1, 1, 1), (3, 3, 3), (3, 2, 3), (4, 2, 2), (4, 3, 1), (5, 2, 3)]
)
@pytest.mark.parametrize("bounds", [(0.0, 2.0), (-1.0, 3.0), (-2.0, 2.0)])
def test_person_sensitivities_bound_every_pair_of_neighbours(adjacency, grouped, k, g, c, bounds):
    n_groups = 3
    unit = Contribution(k, g if grouped else None, c if grouped else None)
    if not grouped:
        g = c = k
    count_l1, count_l2 = _query_sensitivity._count_sensitivity(adjacency, unit, n_groups, grouped)
    sum_l1, sum_l2 = _query_sensitivity._sum_sensitivity(
        [bounds], adjacency, grouped, unit, n_groups
    )
    brute = _brute_force(k, g, c, n_groups, bounds, adjacency, grouped)
    tol = 1e-12
    assert brute[0] <= count_l1 + tol and brute[1] <= count_l2 + tol
    assert brute[2] <= sum_l1 + tol and brute[3] <= sum_l2 + tol
    if adjacency == "add_remove":  # tight: attained by a person piling up rows
        assert count_l1 == pytest.approx(brute[0]) and count_l2 == pytest.approx(brute[1])
        assert sum_l1 == pytest.approx(brute[2]) and sum_l2 == pytest.approx(brute[3])


def test_with_one_row_per_person_the_person_level_charges_are_the_row_level_ones():
    for adjacency in ("add_remove", "replace_one"):
        for grouped in (False, True):
            unit = Contribution(1)
            person = _query_sensitivity._count_sensitivity(adjacency, unit, 3, grouped)
            if adjacency == "replace_one" and not grouped:
                assert person == (0.0, 0.0)  # the count is public: released exactly, free
            else:
                row = _query_sensitivity._count_sensitivity(adjacency, None, 3, grouped)
                assert person == pytest.approx(row)
            for bounds in ([(0.0, 5.0)], [(-2.0, 2.0)]):
                assert _query_sensitivity._sum_sensitivity(
                    bounds, adjacency, grouped, unit, 3
                ) == pytest.approx(_query_sensitivity._sum_sensitivity(bounds, adjacency, grouped))


def test_each_persons_kept_contribution_is_within_the_charged_sensitivity():
    """Exact neighbour check: the table with one person removed differs from the full
    table by exactly that person's kept rows (each person's bounding reads only their own
    rows), so every person's kept contribution must lie within the charged sensitivity."""
    rng = np.random.default_rng(2)
    data = _people(rng, persons=150, most=15)
    keys = ["a", "b", "c"]
    ledger = dpl.Ledger(1e6, 1e-6)
    for seed in range(5):
        alg.sum(data["v"], bounds=(0, 10), by=data["g"], groups=keys, ledger=ledger,
                epsilon=1.0, delta=1e-7, privacy_id=data["pid"], max_rows_per_id=6,
                max_groups_per_id=2, max_rows_per_group_per_id=4, rng=seed)  # fmt: skip
        l2 = _query_sensitivity._sum_sensitivity(
            [(0.0, 10.0)], "add_remove", True, Contribution(6, 2, 4), 3
        )[1]
        assert f"sensitivity={l2!r}," in ledger.receipts[-1].mechanism  # what was charged
        codes = _tables.labels_to_codes(data["g"], keys)
        unit = Contribution(6, 2, 4)
        keep = _tables.bound_contributions(
            data["pid"].to_numpy(), codes, unit, 3, np.random.default_rng(seed)
        )
        kept = data[keep]
        per_cell = kept.groupby(["pid", "g"])["v"].sum().unstack(fill_value=0.0)
        norms = np.sqrt((per_cell.to_numpy() ** 2).sum(axis=1))
        assert norms.max() <= l2 + 1e-9
        # the worst case is within a factor of the bound (the bound is not loose by much)
        assert norms.max() >= 0.5 * l2


def test_removing_a_person_changes_the_released_statistic_by_their_kept_rows_only():
    rng = np.random.default_rng(3)
    data = _people(rng, persons=100, most=10)
    table = _query_inputs._table(
        data["v"], by=None, groups=None, privacy_id=data["pid"],
        contribution=Contribution(4), summed=True,
    )  # fmt: skip
    request = _tables.Request(((0.0, 10.0),), ("plain",))
    full = table.reduce(request, 7)
    without = data[data["pid"] != 0]
    other = _query_inputs._table(
        without["v"], by=None, groups=None, privacy_id=without["pid"],
        contribution=Contribution(4), summed=True,
    )  # fmt: skip
    fewer = other.reduce(request, 7)
    rows = int((data["pid"] == 0).sum())
    assert full.counts[0] - fewer.counts[0] == min(rows, 4)


def test_replace_one_with_one_row_per_person_releases_the_public_count_exactly():
    data = _people(np.random.default_rng(4))
    ledger = dpl.Ledger(1.0, 1e-6, adjacency="replace_one")
    n = alg.count(data, ledger=ledger, share=0.5, privacy_id="pid", max_rows_per_id=1, rng=0)
    assert n == data["pid"].nunique() and isinstance(n, int)
    assert ledger.receipts == ()
    # more rows per person: the count is no longer public, and is charged
    alg.count(data, ledger=ledger, share=0.5, privacy_id="pid", max_rows_per_id=3, rng=0)
    assert len(ledger.receipts) == 1
    assert ledger.receipts[0].event.sensitivity == 2.0  # k − 1


def test_privacy_id_by_column_name_is_not_summed():
    data = _people(np.random.default_rng(5))[["pid", "v"]]
    ledger = dpl.Ledger(1e6, 1e-6)
    total = alg.sum(data, bounds=(0, 10), privacy_id="pid", max_rows_per_id=100,
                    ledger=ledger, epsilon=1e5, delta=1e-7, rng=0)  # fmt: skip
    assert list(total.index) == ["v"]
    assert abs(total["v"] - data["v"].sum()) < 20.0  # σ ≈ 1 at Δ = 100 rows × 10


@pytest.mark.slow
def test_person_level_audit_stays_below_the_charge():
    """Black-box audit, person level: a count with up to 3 rows per person, the neighbour
    adding one person with 9 rows (3 kept); 10⁴ runs per side; the certified lower bound
    on ε must not exceed the charged ε = 1."""
    rng = np.random.default_rng(6)
    base = _people(rng, persons=40, most=5)
    extra = pd.DataFrame({"pid": [999] * 9, "v": 1.0, "g": "a"})
    neighbour = pd.concat([base, extra], ignore_index=True)

    def run(data, generator):
        ledger = dpl.Ledger(1.0, 0.0)
        return alg.count(data, ledger=ledger, epsilon=1.0, noise="laplace",
                         privacy_id="pid", max_rows_per_id=3,
                         rng=int(generator.integers(2**62)))  # fmt: skip

    from dpledger.audit import estimate_epsilon

    estimate = estimate_epsilon(run, base, neighbour, samples=10_000, rng=np.random.default_rng(7))
    assert estimate.epsilon <= 1.0
    assert estimate.epsilon > 0.3  # the audit can see the change (it would see a leak)
    assert math.isfinite(estimate.epsilon)


# -- sufficient-statistics estimators -----------------------------------------------------


@pytest.mark.parametrize("adjacency", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name", ["ADASSP", "SSP"])
def test_estimators_charge_one_persons_sensitivity(name, adjacency):
    from dpledger.algorithms import linear

    rng = np.random.default_rng(8)
    ids = np.repeat(np.arange(300), rng.integers(1, 9, 300))
    X = rng.normal(size=(ids.size, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=ids.size) * 0.1
    ledger = dpl.Ledger(20.0, 1e-6, adjacency=adjacency)
    model = getattr(alg, name)(epsilon=5.0, delta=1e-6, x_bound=4.0, y_bound=8.0,
                               adjacency=adjacency, max_rows_per_id=5, ledger=ledger)  # fmt: skip
    model.fit(X, y, privacy_id=ids)
    k_deltas = linear._sensitivities(adjacency, 5)
    one = linear._sensitivities(adjacency)
    assert k_deltas == pytest.approx([5 * d for d in one])
    shown = [r.mechanism for r in ledger.receipts]
    # X̃ᵀX̃ and X̃ᵀỹ are the last two releases (ADASSP's λ_min adds one grid step to k)
    for mechanism, sensitivity in zip(shown[-2:], k_deltas[1:], strict=True):
        assert f"sensitivity={sensitivity!r}," in mechanism
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("name", ["ADASSP", "SSP"])
def test_estimators_refuse_a_privacy_id_without_a_bound_before_reading_or_charging(name):
    rng = np.random.default_rng(9)
    X, y = rng.normal(size=(50, 2)), rng.normal(size=50)
    ledger = dpl.Ledger(5.0, 1e-6)
    model = getattr(alg, name)(epsilon=1.0, delta=1e-6, x_bound=3.0, y_bound=3.0,
                               adjacency="add_remove", ledger=ledger)  # fmt: skip
    with pytest.raises(dpl.InvalidArgumentError, match="max_rows_per_id"):
        model.fit(X, y, privacy_id=np.arange(50) // 2)
    model.set_params(max_rows_per_id=2)
    with pytest.raises(dpl.InvalidArgumentError, match="privacy_id"):
        model.fit(X, y)
    assert ledger.receipts == ()


def test_a_persons_rows_move_the_statistics_within_the_person_sensitivity():
    """The Gram matrix and moment vector of one person's kept rows (scaled to the unit
    ball) are within the person-level bounds used for the charge."""
    from dpledger.algorithms import _linear_base, linear

    rng = np.random.default_rng(10)
    ids = np.repeat(np.arange(40), 12)
    X = rng.normal(size=(ids.size, 3)) * 3
    y = rng.normal(size=ids.size) * 5
    Xk, yk, k = _linear_base.person_rows(X, y, ids, 4, 0)
    kept_ids = ids[np.isin(np.arange(ids.size), np.flatnonzero(np.isin(X[:, 0], Xk[:, 0])))]
    assert k == 4 and Xk.shape[0] == 40 * 4
    _, d_xx, d_xy = linear._sensitivities("add_remove", k)
    for person in range(40):
        rows = Xk[kept_ids == person]
        target = yk[kept_ids == person]
        scaled = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True) / 4.0, 1.0) / 4.0
        scaled = np.hstack([scaled, np.ones((len(rows), 1))]) / np.sqrt(2.0)
        gram = scaled.T @ scaled
        moment = scaled.T @ (np.clip(target, -8, 8) / 8)
        assert np.linalg.norm(gram) <= d_xx + 1e-12
        assert np.linalg.norm(moment) <= d_xy + 1e-12


def test_a_row_without_an_id_is_its_own_person_never_dropped():
    ids = pd.Series([1, 1, 1, None, None, 2], dtype="Int64")
    codes = _tables.person_codes(ids)
    assert len(set(codes[3:5])) == 2 and codes[3] not in codes[[0, 5]]
    ledger = dpl.Ledger(1e6, 1e-6)
    n = alg.count(pd.DataFrame({"id": ids}), privacy_id="id", max_rows_per_id=1,
                  ledger=ledger, epsilon=1e5, delta=1e-7, rng=0)  # fmt: skip
    assert n == 4  # persons 1 and 2, and the two id-less rows


@pytest.mark.parametrize("bound", [10**400, 2**53 + 1, 10**18])
def test_a_contribution_bound_beyond_2_53_is_refused_by_name(bound):
    """Hostile sweep: 10**400 raised a raw OverflowError (query and estimator)."""
    data = _people(np.random.default_rng(11))
    ledger = dpl.Ledger(1.0, 1e-6)
    with pytest.raises(dpl.InvalidArgumentError, match="max_rows_per_id"):
        alg.count(data, ledger=ledger, share=0.5, privacy_id="pid", max_rows_per_id=bound)
    model = alg.ADASSP(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0,
                       adjacency="add_remove", max_rows_per_id=bound, ledger=ledger)  # fmt: skip
    with pytest.raises(dpl.InvalidArgumentError, match="max_rows_per_id"):
        model.fit(np.ones((5, 2)), np.ones(5), privacy_id=np.arange(5))
    assert ledger.receipts == ()
