"""The analyst's path: previews, even splits, labels, integer counts, dask tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import algorithms as alg
from dpledger.algorithms import _query_inputs, _tables

dd = pytest.importorskip("dask.dataframe")


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 5_000
    return pd.DataFrame(
        {
            "pid": rng.integers(0, 900, n),
            "age": rng.normal(40, 12, n).clip(17, 90),
            "hours": rng.normal(40, 10, n).clip(1, 99),
            "g": rng.choice(["a", "b", "c"], n),
        }
    )


# -- previews -----------------------------------------------------------------------------


def _coverage(draw, truth, width, runs):
    hits = sum(bool(np.all(np.abs(np.asarray(draw(i)) - truth) <= width)) for i in range(runs))
    return hits / runs


def _band(runs):
    """95 % ± three standard errors of a coverage over ``runs`` draws."""
    spread = 3 * np.sqrt(0.95 * 0.05 / runs)
    return 0.95 - spread, 0.95 + spread


@pytest.mark.parametrize(
    ("query", "runs"),
    [
        pytest.param(q, 1000, marks=pytest.mark.slow, id=f"{q}-1000")
        for q in ("count", "sum", "mean", "group-by")
    ]
    + [pytest.param("mean", 150, id="mean-150")],
)
def test_preview_intervals_cover_the_answer_95_percent_of_the_time(frame, query, runs):
    data = frame.iloc[:400]
    if query == "count":
        run = lambda ledger, **kw: alg.count(data, ledger=ledger, **kw)  # noqa: E731
        truth = len(data)
        adjacency = "add_remove"
    elif query == "sum":
        run = lambda ledger, **kw: alg.sum(data["age"], bounds=(0, 100), ledger=ledger, **kw)  # noqa: E731
        truth = data["age"].sum()
        adjacency = "add_remove"
    elif query == "mean":  # integers under replace-one: the number of records is public
        ages = data["age"].round().astype(np.int64)
        run = lambda ledger, **kw: alg.mean(ages, bounds=(0, 100), ledger=ledger, **kw)  # noqa: E731
        truth = ages.mean()
        adjacency = "replace_one"
    else:
        run = lambda ledger, **kw: alg.count(  # noqa: E731
            data, by=data["g"], groups=["a", "b", "c"], ledger=ledger, **kw
        )
        truth = data["g"].value_counts().reindex(["a", "b", "c"]).to_numpy()
        adjacency = "add_remove"
    # each cell separately: a group-by's coverage is checked on its first group
    preview = run(dpl.Ledger(0.5, 1e-6, adjacency=adjacency), share=1.0, preview=True)
    assert preview.interval is not None and preview.interval > 0
    cell = (lambda out: np.asarray(out)[0]) if query == "group-by" else (lambda out: out)
    target = truth[0] if query == "group-by" else truth
    covered = _coverage(
        lambda i: cell(run(dpl.Ledger(0.5, 1e-6, adjacency=adjacency), share=1.0, rng=i)),
        target,
        preview.interval,
        runs,
    )
    low, high = _band(runs)
    assert low <= covered <= high, (query, covered)


def test_preview_spends_nothing_and_matches_the_noise_of_the_query(frame):
    ledger = dpl.Ledger(1.0, 1e-6)
    preview = alg.mean(
        frame[["age", "hours"]], bounds=(0, 100), by="g" if False else frame["g"],
        groups=["a", "b", "c"], ledger=ledger, share=0.5, preview=True, label="age by g",
    )  # fmt: skip
    assert ledger.receipts == ()
    assert [r.label for r in preview.releases] == ["age by g: count", "age by g: sum"]
    assert preview.fits and preview.epsilon > 0 and preview.cost
    assert "costs ε ≤" in str(preview)
    alg.mean(frame[["age", "hours"]], bounds=(0, 100), by=frame["g"], groups=["a", "b", "c"],
             ledger=ledger, share=0.5, label="age by g", rng=0)  # fmt: skip
    charged = [r.mechanism for r in ledger.receipts]
    for mechanism, release in zip(charged, preview.releases, strict=True):
        assert mechanism.startswith(f"{release.mechanism}(sigma={release.noise_scale!r},")
    assert [r.label for r in ledger.receipts] == ["age by g: count", "age by g: sum"]


def test_preview_reads_no_data(frame):
    class Untouchable(pd.Series):
        def to_numpy(self, *args, **kwargs):  # pragma: no cover - the test fails if called
            raise AssertionError("the preview read the data")

    ledger = dpl.Ledger(1.0, 0.0)
    values = Untouchable(frame["age"].to_numpy())
    for query in (alg.sum, alg.mean, alg.variance):
        preview = query(values, bounds=(0, 100), ledger=ledger, share=0.5, preview=True)
        assert preview.releases and ledger.receipts == ()
    assert alg.count(values, ledger=ledger, share=0.5, preview=True).releases


def test_preview_says_when_the_query_does_not_fit(frame):
    ledger = dpl.Ledger(1.0, 1e-6)
    preview = alg.count(frame, ledger=ledger, epsilon=5.0, delta=1e-7, preview=True)
    assert not preview.fits and "NOT fit" in str(preview)
    assert preview.epsilon == 5.0


# -- splits, labels, integers -------------------------------------------------------------


def test_an_even_split_uses_the_whole_remainder(frame):
    from dpledger.ledger.split import split

    ledger = dpl.Ledger(1.0, 1e-6, accountant="zcdp")
    parts = split(ledger, 3)
    alg.count(frame, ledger=ledger, share=parts[2], rng=0)
    preview = alg.count(frame, ledger=ledger, share=parts[0], preview=True)
    assert parts.unused == 2  # a preview uses no part
    alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, share=parts[0], rng=1)
    alg.count(frame, ledger=ledger, share=parts[1], rng=2)
    charges = [r.charge.rho for r in ledger.receipts]
    # equal thirds of the budget: the count, the mean's two releases, the count
    assert charges[0] == pytest.approx(charges[1] + charges[2], rel=1e-9)
    assert charges[0] == pytest.approx(charges[3], rel=1e-9)
    assert ledger.remaining.rho == pytest.approx(0.0, abs=1e-12)
    assert preview.releases[0].noise_scale > 0
    with pytest.raises(dpl.InvalidArgumentError, match="used already"):
        alg.count(frame, ledger=ledger, share=parts[1])
    with pytest.raises(dpl.InvalidArgumentError, match="another ledger"):
        alg.count(frame, ledger=dpl.Ledger(1.0, 1e-6), share=parts[1])


def test_a_refused_query_leaves_its_part_unused(frame):
    from dpledger.ledger.split import split

    ledger = dpl.Ledger(1.0, 0.0)
    parts = split(ledger, 2)
    with pytest.raises(dpl.InvalidArgumentError):
        alg.mean(frame["age"], bounds=(17, 90), ledger=ledger, share=parts[0], noise="bogus")
    assert parts.unused == 2 and ledger.receipts == ()


def test_counts_are_integers_and_labels_reach_the_receipts(frame):
    ledger = dpl.Ledger(1.0, 1e-6)
    n = alg.count(frame, ledger=ledger, share=0.2, rng=0, label="rows")
    assert isinstance(n, int)
    by = alg.count(frame, by="g", groups=["a", "b"], ledger=ledger, share=0.2, rng=0)
    assert by.dtype == np.int64
    hist = alg.histogram(frame["g"], categories=["a", "b", "c"], ledger=ledger, share=0.2,
                         rng=0, label="groups")  # fmt: skip
    assert hist.dtype == np.int64
    assert [r.label for r in ledger.receipts] == ["rows: count", "count", "groups: histogram"]


# -- dask tables --------------------------------------------------------------------------


def _huge(epsilon=1e5):
    return {"ledger": dpl.Ledger(1e6, 1e-6), "epsilon": epsilon, "delta": 1e-7, "rng": 0}


def test_dask_and_pandas_reduce_to_identical_exact_statistics(frame):
    lazy = dd.from_pandas(frame, npartitions=7)
    request = _tables.Request(((0.0, 100.0), (0.0, 100.0)), ("plain", "centred", "square"))
    for by, privacy in ((None, None), ("g", None), ("g", "pid"), (None, "pid")):
        unit = None
        if privacy is not None:
            unit = _tables.Contribution(3, 2 if by else None, 2 if by else None)
        columns = ["age", "hours"] + [c for c in (by, privacy) if c]
        got = [
            _query_inputs._table(
                data[columns], by=by, groups=None if by is None else ["a", "b", "c"],
                privacy_id=privacy, contribution=unit, summed=True,
            ).reduce(request, 11)
            for data in (frame, lazy)
        ]  # fmt: skip
        pandas_result, dask_result = got
        if privacy is None:  # no random bounding: identical to the last integer
            assert (pandas_result.counts == dask_result.counts).all()
            for a, b in zip(pandas_result.sums, dask_result.sums, strict=True):
                assert (a == b).all()
        elif by is None:  # min(rows, k) per person, whichever rows the draw keeps
            kept = frame.groupby("pid").size().clip(upper=3).sum()
            assert pandas_result.counts.sum() == dask_result.counts.sum() == kept
        else:
            for result in got:
                assert result.counts.sum() <= frame.groupby("pid").size().clip(upper=3).sum()


def test_dask_queries_answer_like_pandas(frame):
    lazy = dd.from_pandas(frame, npartitions=4)
    assert alg.count(lazy, **_huge()) == alg.count(frame, **_huge())
    by = alg.count(lazy, by="g", groups=["a", "b", "c"], **_huge())
    assert by.tolist() == frame["g"].value_counts().reindex(["a", "b", "c"]).tolist()
    means = alg.mean(lazy[["age", "g"]], bounds=(17, 90), by="g", groups=["a", "b", "c"], **_huge())
    truth = frame.groupby("g")["age"].mean()
    assert np.allclose(means["age"].to_numpy(), truth.to_numpy(), atol=1e-3)
    var = alg.variance(lazy["age"], bounds=(17, 90), **_huge())
    assert var == pytest.approx(frame["age"].var(ddof=0), abs=1e-2)
    hist = alg.histogram(lazy["age"], edges=[0, 40, 100], **_huge())
    assert hist.tolist() == [int((frame["age"] < 40).sum()), int((frame["age"] >= 40).sum())]
    # a person's rows in several partitions: shuffled by id, bounded as in memory
    persons = alg.count(lazy, privacy_id="pid", max_rows_per_id=2, **_huge())
    assert persons == frame.groupby("pid").size().clip(upper=2).sum()


def test_dask_inputs_that_cannot_be_matched_are_refused(frame):
    lazy = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(dpl.InvalidArgumentTypeError, match="column name or a dask Series"):
        alg.count(lazy, by=frame["g"].to_numpy(), groups=["a"], **_huge())
    with pytest.raises(dpl.InvalidArgumentError, match="which `data` does not have"):
        alg.count(lazy, by="nope", groups=["a"], **_huge())


# -- estimators ---------------------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True])
def test_an_estimators_preview_spends_nothing_and_states_the_fits_noise(shared):
    from dpledger.algorithms import ADASSP

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    ledger = dpl.Ledger(2.0, 1e-6) if shared else None
    model = ADASSP(epsilon=1.0, delta=1e-6, x_bound=4.0, y_bound=3.0,
                   adjacency="add_remove", ledger=ledger, rng=0)  # fmt: skip
    preview = model.preview(X, y)
    assert not hasattr(model, "coef_") and not hasattr(model, "n_features_in_")
    if shared:
        assert ledger.receipts == () and preview.cost
    assert preview.fits and len(preview.releases) == 3
    model.fit(X, y)  # the one-fit budget was not claimed by the preview
    charged = [str(m) for m in model.releases_]
    assert len(charged) == 3
    if shared:
        for receipt, release in zip(ledger.receipts, preview.releases, strict=True):
            assert receipt.mechanism.startswith(f"Gaussian(sigma={release.noise_scale!r},")


def test_hostile_splits_and_previews_are_named_errors():
    """Hostile sweep: split(10**400) tried to build 10**400 parts (a hang); a supervised
    estimator's preview without y raised a raw TypeError."""
    from dpledger.algorithms import ADASSP

    for k in (10**400, 10**7, 0, True, "3"):
        with pytest.raises(dpl.InvalidArgumentError, match="`k`"):
            dpl.Ledger(1.0, 1e-6).split(k)
    model = ADASSP(epsilon=1.0, delta=1e-6, x_bound=1.0, y_bound=1.0, adjacency="add_remove")
    with pytest.raises(dpl.InvalidArgumentError, match="`y` is required"):
        model.preview(np.ones((5, 2)))
