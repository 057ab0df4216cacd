"""The analyst's path: private count, sum, mean, variance, histogram charged to a ledger."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import algorithms as alg
from dpledger import events as ev
from dpledger.errors import BudgetExceededError, InvalidArgumentError


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 20_000
    return pd.DataFrame(
        {
            "age": rng.normal(40, 12, n).clip(17, 90),
            "hours": rng.normal(40, 10, n).clip(1, 99),
            "sex": rng.choice(["Female", "Male"], n),
        },
        index=pd.RangeIndex(n, name="id"),
    )


def test_each_query_charges_its_releases_with_the_stated_sensitivity(frame):
    ledger = dpl.Ledger(2.0, 1e-6, accountant="zcdp")
    alg.count(frame, ledger=ledger, share=0.1, rng=1)
    alg.sum(frame["age"], bounds=(0, 100), ledger=ledger, share=0.1, rng=2)
    alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, share=0.2, rng=3)
    alg.variance(frame["age"], bounds=(17, 90), ledger=ledger, share=0.2, rng=4)
    alg.histogram(frame["sex"], categories=["Female", "Male"], ledger=ledger, share=0.5, rng=5)
    labels = [r.label for r in ledger.receipts]
    assert labels == ["count", "sum", "count", "sum", "count", "sum", "sum of squares", "histogram"]
    # sensitivities in data units: count 1, clipped sum max(|lo|,|hi|) = 100, centred
    # mean sum (90-17)/2 = 36.5, centred squares 36.5², histogram 1
    sens = [float(r.mechanism.split("sensitivity=")[1].split(",")[0]) for r in ledger.receipts]
    assert sens == [1.0, 100.0, 1.0, 36.5, 1.0, 36.5, 36.5**2, 1.0]
    assert ledger.spent[0] <= 2.0


def test_results_are_accurate_and_keep_the_index(frame):
    ledger = dpl.Ledger(10.0, 1e-6)
    means = alg.mean(
        frame[["age", "hours"]],
        bounds={"age": (17, 90), "hours": (1, 99)},
        by=frame["sex"],
        groups=["Female", "Male"],
        ledger=ledger,
        share=0.5,
        rng=7,
    )
    truth = frame.groupby("sex")[["age", "hours"]].mean()
    assert isinstance(means, pd.DataFrame)
    assert list(means.index) == ["Female", "Male"] and list(means.columns) == ["age", "hours"]
    assert np.allclose(means.to_numpy(), truth.loc[["Female", "Male"]].to_numpy(), atol=0.5)
    var = alg.variance(frame["age"], bounds=(17, 90), ledger=ledger, share=0.5, rng=8)
    assert var == pytest.approx(frame["age"].var(ddof=0), rel=0.05)
    col_sums = alg.sum(
        frame[["age", "hours"]], bounds=(0, 100), ledger=dpl.Ledger(10, 1e-6), share=1.0, rng=9
    )
    assert isinstance(col_sums, pd.Series) and list(col_sums.index) == ["age", "hours"]


def test_group_counts_use_parallel_composition(frame):
    """A group-by count is one release (L2 sensitivity 1), not one per group."""
    ledger = dpl.Ledger(1.0, 1e-6, accountant="zcdp")
    counts = alg.count(
        frame,
        by=frame["sex"],
        groups=["Female", "Male", "Other"],
        ledger=ledger,
        share=1.0,
        rng=3,
    )
    assert list(counts.index) == ["Female", "Male", "Other"]
    assert len(ledger.receipts) == 1
    event = ledger.receipts[0].event
    assert isinstance(event, ev.DiscreteGaussian) and event.dimension == 3
    truth = frame["sex"].value_counts()
    sigma = event.sigma
    assert abs(counts["Female"] - truth["Female"]) < 6 * sigma
    assert abs(counts["Other"]) < 6 * sigma


def test_bounds_and_groups_are_declared_never_read_from_data(frame):
    ledger = dpl.Ledger(1.0, 1e-6)
    with pytest.raises(TypeError):
        alg.mean(frame["age"], ledger=ledger, share=0.5)  # bounds missing
    with pytest.raises(InvalidArgumentError, match="groups"):
        alg.count(frame, by=frame["sex"], ledger=ledger, share=0.5)
    with pytest.raises(InvalidArgumentError, match="every column"):
        alg.mean(frame[["age", "hours"]], bounds={"age": (0, 1)}, ledger=ledger, share=0.5)
    with pytest.raises(InvalidArgumentError, match="low < high"):
        alg.sum(frame["age"], bounds=(5, 5), ledger=ledger, share=0.5)
    with pytest.raises(InvalidArgumentError, match="share"):
        alg.sum(frame["age"], bounds=(0, 100), ledger=ledger)
    assert ledger.receipts == ()  # refused queries charge nothing


def test_a_query_that_does_not_fit_draws_nothing(frame):
    ledger = dpl.Ledger(0.5, 1e-6, accountant="zcdp")
    ledger.spend(ev.Gaussian(10.0))  # most of the budget
    before = len(ledger.receipts)
    with pytest.raises(BudgetExceededError):
        alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, epsilon=5.0, delta=1e-7)
    assert len(ledger.receipts) == before


def test_replace_one_count_is_public_and_free(frame):
    ledger = dpl.Ledger(1.0, 1e-6, adjacency="replace_one")
    assert alg.count(frame, ledger=ledger, share=0.5) == len(frame)
    assert ledger.receipts == ()
    ages = frame["age"].round().astype(np.int64)  # integers: no value can be missing
    m = alg.mean(ages, bounds=(17, 90), ledger=ledger, share=0.5, rng=1)
    assert [r.label for r in ledger.receipts] == ["sum"]  # n is public: one release
    sens = float(ledger.receipts[0].mechanism.split("sensitivity=")[1].split(",")[0])
    assert sens == 73.0  # replace-one moves a centred value by the whole range
    assert math.isfinite(m)


def test_under_replace_one_the_count_of_rows_kept_is_private_when_values_can_be_missing(frame):
    """Found in review: a float column's rows with NaN are dropped, so replacing a record
    by one with a missing value changes the number of rows a mean divides by; that count
    is released (sensitivity 1), not taken as public."""
    ledger = dpl.Ledger(1.0, 1e-6, adjacency="replace_one")
    alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, share=0.5, rng=1)
    assert [r.label for r in ledger.receipts] == ["count", "sum"]
    sens = float(ledger.receipts[0].mechanism.split("sensitivity=")[1].split(",")[0])
    assert sens == 1.0


def test_pure_ledger_uses_laplace_noise(frame):
    ledger = dpl.Ledger(1.0, 0.0)
    alg.histogram(frame["age"], edges=[0, 30, 60, 100], ledger=ledger, share=1.0, rng=2)
    assert isinstance(ledger.receipts[0].event, ev.DiscreteLaplace)
    assert ledger.spent[0] == pytest.approx(1.0, rel=1e-2)


def test_a_seed_never_repeats_noise_across_queries_on_one_ledger():
    # identical noise in two releases would publish the difference of the two histograms
    ledger = dpl.Ledger(4.0, 1e-6)
    data = np.arange(1000) % 50
    edges = list(range(51))
    true = np.bincount(data, minlength=50)
    first = alg.histogram(data, ledger=ledger, edges=edges, epsilon=1.0, delta=1e-6, rng=0)
    second = alg.histogram(data, ledger=ledger, edges=edges, epsilon=1.0, delta=1e-6, rng=0)
    noise_first = np.asarray(first, dtype=float) - true
    noise_second = np.asarray(second, dtype=float) - true
    assert not np.array_equal(noise_first, noise_second)  # 50 coordinates: never by chance


# ---------------------------------------------------------------- review mends (helper-29)


def test_group_sums_under_replace_one_cover_a_record_moving_between_groups():
    """Replace-one with groups: a record can leave one group and join another, moving two
    cells by −v and +v′ (sums (500, 500) → (499, 501) for values 1 in [0, 1]). The
    sensitivity was hi − lo = 1 (true ε 1.348 Gaussian, 2.0 Laplace at 1 charged); it is
    now L1 2·max(|lo|, |hi|), L2 √2·max(|lo|, |hi|), computed here by brute force."""
    import itertools

    from dpledger.algorithms._query_sensitivity import _sum_sensitivity

    for bounds in ([(0.0, 1.0)], [(-3.0, 1.0), (2.0, 5.0)], [(1e6, 1e6 + 1)]):
        l1, l2 = _sum_sensitivity(bounds, "replace_one", grouped=True)
        worst1 = worst2 = 0.0
        corners = [list(c) for c in itertools.product(*bounds)]
        for v, w in itertools.product(corners, corners):
            for moved in (False, True):  # w replaces v in the same group, or in another
                cells = [np.array(w) - v] if not moved else [-np.array(v), np.array(w)]
                change = np.concatenate(cells)
                worst1 = max(worst1, float(np.abs(change).sum()))
                worst2 = max(worst2, float(np.linalg.norm(change)))
        assert worst1 <= l1 <= worst1 * (1 + 1e-12)
        assert worst2 <= l2 <= worst2 * (1 + 1e-12)
    # and the query charges it: Laplace noise scale = L1/ε
    ledger = dpl.Ledger(1.0, 0.0, adjacency="replace_one")
    alg.sum(np.ones(10), bounds=(0, 1), by=np.array(["A"] * 5 + ["B"] * 5), groups=["A", "B"],
            ledger=ledger, epsilon=1.0, noise="laplace", rng=0)  # fmt: skip
    assert "sensitivity=2.0," in ledger.receipts[-1].mechanism
    assert ledger.receipts[-1].epsilon <= 1.0


def test_pandas_by_is_matched_by_index_like_groupby():
    """A `by` Series was matched by position: on a re-sorted Series the groups came back
    swapped ({lo: 9, hi: 1} against groupby's {lo: 1, hi: 9}), silently."""
    df = pd.DataFrame({"v": [1.0] * 50 + [9.0] * 50, "g": ["lo"] * 50 + ["hi"] * 50})
    data = df["v"].sort_index(ascending=False)
    ledger = dpl.Ledger(1e6, 1e-6)
    out = alg.mean(data, bounds=(0, 10), by=df["g"], groups=["lo", "hi"], ledger=ledger,
                   epsilon=1e5, delta=1e-7, rng=0)  # fmt: skip
    assert abs(out["lo"] - 1.0) < 0.1 and abs(out["hi"] - 9.0) < 0.1
    with pytest.raises(dpl.InvalidArgumentError, match="index"):
        alg.mean(data, bounds=(0, 10), by=df["g"].reset_index(drop=True).shift(1).iloc[1:],
                 groups=["lo", "hi"], ledger=ledger, epsilon=1.0, delta=1e-7)  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [
        {"groups": "ab"},
        {"groups": [["a"], ["b"]]},
        {"by": 3},
        {"by": [["a"]] * 4},
    ],
)
def test_bad_groups_get_named_errors(bad):
    kwargs = {"by": np.array(["a", "b", "a", "b"]), "groups": ["a", "b"], **bad}
    ledger = dpl.Ledger(1.0, 0.0)
    with pytest.raises(dpl.DPLedgerError, match=r"`(by|groups)`"):
        alg.sum(np.ones(4), bounds=(0, 1), ledger=ledger, share=0.5, **kwargs)
    assert ledger.receipts == ()


@pytest.mark.parametrize("query", ["sum", "mean", "variance"])
def test_missing_values_are_dropped_not_read_as_zero_nor_refused(query):
    """NaN was silently imputed as 0 (50 NaN and 50 fives: mean 2.61); then refused — an
    error raised because of what a private row holds, uncharged. Now a row missing a value
    is dropped (record-local, like pandas' skipna): the answers are those of the 50 fives."""
    ledger = dpl.Ledger(1e6, 1e-6)
    data = np.r_[np.full(50, np.nan), np.full(50, 5.0)]
    answer = getattr(alg, query)(
        data, bounds=(0, 10), ledger=ledger, epsilon=1e5, delta=1e-7, rng=0
    )
    expected = {"sum": 250.0, "mean": 5.0, "variance": 0.0}[query]
    assert abs(answer - expected) < 0.05
    assert len(ledger.receipts) == {"sum": 1, "mean": 2, "variance": 3}[query]
    # the same charge as for the table without the missing rows
    other = dpl.Ledger(1e6, 1e-6)
    getattr(alg, query)(
        np.full(50, 5.0), bounds=(0, 10), ledger=other, epsilon=1e5, delta=1e-7, rng=0
    )
    assert [r.event for r in ledger.receipts] == [r.event for r in other.receipts]


@pytest.mark.parametrize(
    ("data", "kwargs"),
    [
        (np.ones((10, 3)), {"edges": [0, 1, 2]}),
        (pd.DataFrame({"a": [0.5, 1.5], "b": [0.5, 0.5]}), {"edges": [0, 1, 2]}),
        ([[1], [2]], {"categories": [1, 2]}),
        (5.0, {"edges": [0, 1]}),
        (["a", "b"], {"edges": [0, 1]}),
        (["a", "b"], {"categories": "ab"}),
        (["a", "b"], {"categories": [["a"]]}),
    ],
)
def test_histogram_takes_one_value_per_record_and_names_bad_input(data, kwargs):
    """A 2-D input was binned cell by cell: one record moved up to c counts while the
    charge assumed one (L1 2, L2 √2 under replace-one). Refused, as are strings to bin by
    edges, a string or unhashable `categories` (raw errors before); nothing charged."""
    ledger = dpl.Ledger(5.0, 0.0)
    with pytest.raises(dpl.DPLedgerError, match=r"`(data|categories)`"):
        alg.histogram(data, ledger=ledger, share=0.1, **kwargs)
    assert ledger.receipts == ()
