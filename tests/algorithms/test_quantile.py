"""Private quantiles (KNG in one dimension): exact sampling, honest charges, errors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import Ledger
from dpledger.algorithms import quantile
from dpledger.algorithms.quantile import _sample
from dpledger.errors import (
    FloatingPointWarning,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

warnings.filterwarnings("ignore", message="quantile")


def test_sampler_follows_the_kng_density_exactly():
    # three points in [0, 10]: intervals [0,1), [1,3), [3,6), [6,10) with 0..3 points below
    values = np.array([1.0, 3.0, 6.0])
    epsilon, q, sens = 2.0, 0.5, 1.0
    lengths = np.array([1.0, 2.0, 3.0, 4.0])
    weights = lengths * np.exp(-epsilon * np.abs(np.arange(4) - q * 3) / (2 * sens))
    expected = weights / weights.sum()
    rng = np.random.default_rng(0)
    draws = np.array([_sample(values, q, epsilon, sens, 0.0, 10.0, rng) for _ in range(40_000)])
    observed = np.histogram(draws, bins=[0, 1, 3, 6, 10])[0] / draws.size
    # 40,000 draws: each frequency within 4 standard errors of the exact probability
    se = np.sqrt(expected * (1 - expected) / draws.size)
    assert np.all(np.abs(observed - expected) <= 4 * se)
    # uniform within the chosen interval
    inside = draws[(draws >= 3) & (draws < 6)]
    assert abs(inside.mean() - 4.5) < 0.05


def test_each_quantile_is_charged_as_a_bounded_range_release():
    data = np.random.default_rng(1).normal(50, 10, size=5000)
    ledger = dpl.Ledger(1.0, 0.0)
    low, mid, high = quantile(
        data, [0.1, 0.5, 0.9], ledger=ledger, bounds=(0, 100), epsilon=0.9, rng=2
    )
    assert low < mid < high
    assert abs(mid - 50) < 2
    charged = [r.event for r in ledger.receipts]
    assert charged == [dpl.events.BoundedRange(0.3)] * 3
    assert ledger.spent[0] == pytest.approx(0.9, rel=1e-12)


def test_share_is_solved_in_the_ledgers_currency():
    data = np.arange(1000.0)
    ledger = dpl.Ledger(1.0, 1e-6)
    quantile(data, [0.25, 0.75], ledger=ledger, bounds=(0, 1000), share=1.0, rng=3)
    assert len(ledger.receipts) == 2
    assert ledger.spent[0] >= 0.99 and ledger.spent[0] <= 1.0


def test_sensitivity_follows_adjacency():
    data = np.arange(100.0)
    for adjacency, label in (("replace_one", "Δ=1"), ("add_remove", "Δ=0.9")):
        ledger = dpl.Ledger(1.0, 0.0, adjacency=adjacency)
        quantile(data, 0.1, ledger=ledger, bounds=(0, 100), epsilon=1.0, rng=4)
        assert label in ledger.receipts[-1].label


def test_bad_inputs_are_named_and_charge_nothing():
    ledger = dpl.Ledger(1.0, 0.0)
    with pytest.raises(dpl.InvalidArgumentError, match="bounds"):
        quantile([1.0, 2.0], 0.5, ledger=ledger, bounds=(5, 1), epsilon=1.0)
    with pytest.raises(dpl.InvalidArgumentError, match="q"):
        quantile([1.0, 2.0], 1.5, ledger=ledger, bounds=(0, 5), epsilon=1.0)
    with pytest.raises(dpl.InvalidArgumentError, match="exactly one"):
        quantile([1.0, 2.0], 0.5, ledger=ledger, bounds=(0, 5))
    with pytest.raises(dpl.BudgetExceededError):
        quantile([1.0, 2.0], [0.1, 0.9], ledger=ledger, bounds=(0, 5), epsilon=2.0)
    assert ledger.receipts == ()


def test_missing_values_are_dropped_not_refused():
    """A NaN row used to raise — an error caused by what a private row holds (issue 34
    aligns quantile with the descriptive queries): it is dropped (record-local), so the
    release is the one on the other rows, draw for draw; ±inf are clipped like any value."""
    data = np.random.default_rng(7).uniform(0, 5, 200)
    with_missing = np.r_[np.full(30, math.nan), data[:100], math.inf, data[100:], -math.inf]
    first, second = Ledger(1.0, 0.0), Ledger(1.0, 0.0)
    kept = quantile(with_missing, [0.2, 0.8], ledger=first, bounds=(0, 5), epsilon=1.0, rng=8)
    alone = quantile(np.r_[data, 5.0, 0.0], [0.2, 0.8], ledger=second, bounds=(0, 5),
                     epsilon=1.0, rng=8)  # fmt: skip
    assert kept.equals(alone)
    assert [r.event for r in first.receipts] == [r.event for r in second.receipts]


# ---------------------------------------------------------------- review mends (helper-27)


@pytest.mark.parametrize(
    "data",
    [np.ones((50, 2)), [[1.0, 2.0], [3.0, 4.0]], pd.DataFrame({"a": [1.0, 2], "b": [3.0, 4]})],
)
def test_several_values_per_record_are_refused_not_flattened(data):
    """A 2-D input was flattened: one record then moved c values (worst loss 1.75 for 3
    columns at ε = 1 charged). Refused, nothing charged; one column (n, 1) is accepted."""
    ledger = Ledger(5.0, 0.0)
    with pytest.raises(InvalidArgumentError, match="one column"):
        quantile(data, 0.5, ledger=ledger, bounds=(0, 10), epsilon=1.0, rng=0)
    assert ledger.receipts == ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        column = quantile(np.ones((50, 1)), 0.5, ledger=ledger, bounds=(0, 10), epsilon=1.0)
    assert 0 <= column <= 10


def test_bounds_whose_width_overflows_are_refused():
    """(−1e308, 1e308): an overflowing gap got probability 0 and empty data released +inf,
    both depending on the data. Refused before the charge."""
    ledger = Ledger(5.0, 0.0)
    for mechanism in ("kng", "exponential"):
        with pytest.raises(InvalidArgumentError, match="bounds"):
            quantile([0.0], 0.5, ledger=ledger, bounds=(-1e308, 1e308), epsilon=1.0,
                     mechanism=mechanism)  # fmt: skip
    assert ledger.receipts == ()


def test_the_maximum_a_numpy_level_and_complex_data():
    """q = 1 (the maximum, Δ = 1) is in the documented [0, 1]; a 0-d numpy q is one level;
    complex data is refused rather than cast to its real part."""
    ledger = Ledger(5.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = quantile(np.arange(100.0), 1.0, ledger=ledger, bounds=(0, 100), epsilon=2.0, rng=1)
        level = quantile(np.arange(100.0), np.array(0.5), ledger=ledger, bounds=(0, 100),
                         epsilon=2.0, rng=1)  # fmt: skip
    assert 80 < top <= 100 and isinstance(level, float)
    with pytest.raises(InvalidArgumentTypeError, match="complex"):
        quantile(np.array([1 + 1j]), 0.5, ledger=ledger, bounds=(0, 100), epsilon=0.5)
    assert len(ledger.receipts) == 2


# ---------------------------------------------------- groups, labels, pandas out (issue 34)


def _silent(function, *args, **kwargs):
    """Run with every warning an error: the default (KNG) path warns nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function(*args, **kwargs)


def test_results_are_pandas_objects_keyed_by_q_and_group():
    data = np.random.default_rng(20).uniform(0, 100, 3000)
    by = np.array(["a", "b", "c"])[np.arange(3000) % 3]
    ledger = Ledger(10.0, 0.0)
    one = _silent(quantile, data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, rng=1)
    assert isinstance(one, float)
    several = _silent(quantile, data, [0.25, 0.75], ledger=ledger, bounds=(0, 100),
                      epsilon=1.0, rng=1)  # fmt: skip
    assert isinstance(several, pd.Series) and list(several.index) == [0.25, 0.75]
    assert several.index.name == "q" and several[0.25] < several[0.75]
    low, high = several  # unpacks like the array it replaces
    assert (low, high) == (several[0.25], several[0.75])
    per_group = _silent(quantile, data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0,
                        by=by, groups=["a", "b", "c", "d"], rng=1)  # fmt: skip
    assert isinstance(per_group, pd.Series) and list(per_group.index) == ["a", "b", "c", "d"]
    assert all(abs(per_group[g] - 50) < 10 for g in "abc")
    assert 0 <= per_group["d"] <= 100  # an empty declared group: a draw on [lo, hi] all the same
    table = _silent(quantile, data, [0.1, 0.9], ledger=ledger, bounds=(0, 100), epsilon=1.0,
                    by=by, groups=["a", "b"], rng=1)  # fmt: skip
    assert isinstance(table, pd.DataFrame) and table.shape == (2, 2)
    assert list(table.index) == ["a", "b"] and list(table.columns) == [0.1, 0.9]
    assert table.columns.name == "q" and (table[0.1] < table[0.9]).all()


def test_a_group_by_is_charged_once_per_level_whatever_the_number_of_groups():
    data = np.arange(600.0)
    by = np.arange(600) % 6
    for adjacency in ("add_remove", "replace_one"):
        ledger = Ledger(1.0, 0.0, adjacency=adjacency)
        _silent(quantile, data, [0.1, 0.5, 0.9], ledger=ledger, bounds=(0, 600), epsilon=0.9,
                by=by, groups=list(range(6)), rng=2)  # fmt: skip
        assert [r.event for r in ledger.receipts] == [dpl.events.BoundedRange(0.3)] * 3
        assert ledger.spent[0] == pytest.approx(0.9, rel=1e-12)
        assert all("6 groups" in r.label for r in ledger.receipts)


@pytest.mark.parametrize(
    ("adjacency", "q", "delta"),
    [("add_remove", 0.1, "Δ=0.9"), ("add_remove", 0.5, "Δ=0.5"),
     ("replace_one", 0.1, "Δ=1.8"), ("replace_one", 0.5, "Δ=1")],
)  # fmt: skip
def test_a_group_by_under_replace_one_doubles_the_sensitivity(adjacency, q, delta):
    """A record moved between groups changes two groups' draws: Δ = 2·max(q, 1 − q)."""
    ledger = Ledger(1.0, 0.0, adjacency=adjacency)
    _silent(quantile, np.arange(50.0), q, ledger=ledger, bounds=(0, 50), epsilon=1.0,
            by=np.arange(50) % 2, groups=[0, 1], rng=3)  # fmt: skip
    assert f"{delta}, 2 groups)" in ledger.receipts[-1].label


def _log_density(points, q, rate, lo, hi, at):
    """log of KNG's normalised density at the points ``at`` (exact maths in mpmath)."""
    import mpmath

    points = sorted(points)
    n = len(points)
    edges = [lo, *points, hi]
    weights = [
        (mpmath.mpf(edges[k + 1]) - mpmath.mpf(edges[k])) * mpmath.exp(-rate * abs(k - q * n))
        for k in range(n + 1)
    ]
    log_total = mpmath.log(mpmath.fsum(weights))
    return [-rate * abs(sum(x < t for x in points) - q * n) - log_total for t in at]


def _joint_range(groups_a, groups_b, q, rate, lo, hi):
    """The range (sup − inf) of the joint privacy loss of independent per-group draws."""
    cuts = sorted({lo, hi, *[x for g in (*groups_a, *groups_b) for x in g]})
    at = [(s + e) / 2 for s, e in itertools.pairwise(cuts) if e > s]
    total = 0.0
    for a, b in zip(groups_a, groups_b, strict=True):
        if sorted(a) == sorted(b):
            continue
        loss = [
            float(x - y)
            for x, y in zip(
                _log_density(a, q, rate, lo, hi, at),
                _log_density(b, q, rate, lo, hi, at),
                strict=True,
            )
        ]
        total += max(loss) - min(loss)
    return total


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_the_group_by_charge_bounds_the_joint_privacy_loss(q):
    """Exact joint loss ranges of the per-group draws over neighbouring grouped data sets:
    within the charged ε under both adjacencies (a record added; changed or moved between
    groups), and above it for a move under replace-one if Δ were not doubled (the test
    can fail). Twelve points a group, so that qn ≥ 1 and the worst case is reachable."""
    from dpledger.algorithms.quantile import _sensitivity

    epsilon, lo, hi = 1.0, 0.0, 10.0
    base = (list(np.linspace(1.0, 8.0, 12)), list(np.linspace(1.5, 9.0, 12)))

    def rate(adjacency):
        return epsilon / 2 / float(_sensitivity(q, "kng", adjacency, True, 10))

    worst = {"add_remove": 0.0, "replace_one": 0.0, "naive": 0.0}
    for value in (0.5, 5.2, 9.5):
        for g in (0, 1):
            added = tuple([*part, value] if i == g else part for i, part in enumerate(base))
            loss = _joint_range(base, added, q, rate("add_remove"), lo, hi)
            worst["add_remove"] = max(worst["add_remove"], loss)
        for source in (0, 1):
            for i in (0, 6, 11):  # the smallest, a middle and the largest point
                for target in (0, 1):
                    moved = [list(p) for p in base]
                    del moved[source][i]
                    moved[target].append(value)
                    for name, r in (("replace_one", rate("replace_one")), ("naive", epsilon / 2)):
                        loss = _joint_range(base, tuple(moved), q, r, lo, hi)
                        worst[name] = max(worst[name], loss)
    assert worst["add_remove"] <= epsilon * (1 + 1e-9)
    assert worst["replace_one"] <= epsilon * (1 + 1e-9)
    if q != 0.5:  # at the median 2·max(q, 1 − q) = 1: no doubling was needed
        assert worst["naive"] > epsilon * 1.5


def test_by_is_matched_by_index_and_undeclared_groups_are_dropped():
    spread = np.random.default_rng(6).uniform(-5, 5, 400)
    data = pd.Series(np.r_[10 + spread[:200], 90 + spread[200:]], index=np.arange(400) * 7)
    by = pd.Series(np.r_[["x"] * 200, ["y"] * 200], index=data.index)[::-1]  # reversed
    ledger = Ledger(10.0, 0.0)
    out = _silent(quantile, data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=4.0, by=by,
                  groups=["x"], rng=4)  # fmt: skip
    assert list(out.index) == ["x"] and abs(out["x"] - 10) < 2  # the "y" rows are dropped
    with pytest.raises(InvalidArgumentError, match="groups"):
        quantile(data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, by=by)
    with pytest.raises(InvalidArgumentError, match="by"):
        quantile(data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, by=by[:3], groups=["x"])
    assert len(ledger.receipts) == 1


def test_label_reaches_the_receipts():
    ledger = Ledger(10.0, 0.0)
    ages = np.random.default_rng(5).integers(18, 90, 1000)
    _silent(quantile, ages, 0.5, ledger=ledger, bounds=(0, 120), epsilon=1.0,
            label="median age", rng=5)  # fmt: skip
    _silent(quantile, ages, [0.25, 0.75], ledger=ledger, bounds=(0, 120), epsilon=1.0,
            label="age quartiles", by=ages > 50, groups=[False, True], rng=5)  # fmt: skip
    with pytest.warns(FloatingPointWarning):  # the floating-point baseline says so
        quantile(ages, 0.5, ledger=ledger, bounds=(0, 120), epsilon=1.0,
                 mechanism="exponential", label="median age", rng=5)  # fmt: skip
    assert [r.label for r in ledger.receipts] == [
        "median age (q=0.5, KNG, Δ=0.5)",
        "age quartiles (q=0.25, KNG, Δ=0.75, 2 groups)",
        "age quartiles (q=0.75, KNG, Δ=0.75, 2 groups)",
        "median age (q=0.5, exponential mechanism, Δ=60)",
    ]
    with pytest.raises(InvalidArgumentTypeError, match="label"):
        quantile(ages, 0.5, ledger=ledger, bounds=(0, 120), epsilon=1.0, label=3)
    assert len(ledger.receipts) == 4


def test_a_dask_column_is_refused_by_name_never_gathered():
    dd = pytest.importorskip("dask.dataframe")
    column = dd.from_pandas(pd.Series(np.arange(100.0)), npartitions=2)
    ledger = dpl.Ledger(1.0, 0.0)
    with pytest.raises(InvalidArgumentTypeError, match="dask"):
        quantile(column, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0)
    assert ledger.receipts == ()
