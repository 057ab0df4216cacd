"""Partitions: disjoint parts, each with the whole budget, the parent charged once (issue 34)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import algorithms as alg
from dpledger import events as ev


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    n = 3000
    return pd.DataFrame(
        {
            "region": rng.choice(["north", "south", "elsewhere"], n),
            "age": rng.normal(40, 12, n).clip(17, 90),
        }
    )


def test_each_part_spends_the_whole_budget_and_the_parent_is_charged_once(table, tmp_path):
    path = tmp_path / "study.ledger"
    study = dpl.Ledger(1.0, 1e-6, path=path)
    parts = study.partition(table, by="region", parts=["north", "south"])
    assert len(study.receipts) == 1
    assert study.receipts[0].event == ev.ApproxDP(1.0, 1e-6)
    assert study.remaining.epsilon == 0.0  # all of it went to the parts, once
    for part in parts:
        assert (part.data["region"] == part.value).all()
        assert (part.ledger.epsilon, part.ledger.delta) == (1.0, 1e-6)
        alg.count(part.data, ledger=part.ledger, share=0.5, rng=0)
        alg.mean(part.data["age"], bounds=(17, 90), ledger=part.ledger, share=1.0, rng=1)
        assert part.ledger.spent[0] == pytest.approx(1.0, rel=1e-6)  # the whole budget
        with pytest.raises(dpl.BudgetExceededError):
            alg.count(part.data, ledger=part.ledger, epsilon=0.1, delta=1e-7)
    assert len(study.receipts) == 1  # the parts' spends never reach the parent
    # persisted: the parent and its parts reopen and verify; partitioning again reopens
    study.close()
    again = dpl.Ledger.open(path)
    again.verify()
    reopened = again.partition(table, by="region", parts=["north", "south"])
    assert len(again.receipts) == 1
    for part in reopened:
        part.ledger.verify()
        assert len(part.ledger.receipts) == 3  # the count, and the mean's count and sum
        assert part.ledger.path.name.startswith("study.region=")


def test_a_query_that_crosses_parts_is_refused_before_any_charge(table):
    study = dpl.Ledger(1.0, 1e-6)
    parts = study.partition(table, by="region", parts=["north", "south"])
    north = parts["north"].ledger
    for data in (table, parts["south"].data, table["age"].to_numpy()):
        with pytest.raises(dpl.InvalidArgumentError, match="cross parts"):
            alg.count(data, ledger=north, share=0.5)
    with pytest.raises(dpl.InvalidArgumentError, match="cross parts"):
        alg.quantile(parts["south"].data["age"], 0.5, ledger=north, bounds=(0, 100), share=0.5)
    assert north.receipts == ()
    # a column of the part's own data is the part's data
    alg.sum(parts["north"].data["age"], bounds=(0, 100), ledger=north, share=0.5, rng=0)
    assert len(north.receipts) == 1


def test_a_zcdp_study_charges_its_parts_in_rho(table):
    study = dpl.Ledger(1.0, 1e-6, accountant="zcdp")
    parts = study.partition(table, by="region", parts=["north", "south"], share=0.5)
    (receipt,) = study.receipts
    assert isinstance(receipt.event, ev.ZCDP)
    for part in parts:  # each part's whole budget is within the parent's one charge
        assert part.ledger.budget.rho <= receipt.event.rho
    assert receipt.event.rho <= study.budget.rho / 2 * (1 + 1e-12)


def test_partitions_that_cannot_be_charged_exactly_are_refused(table):
    gdp = dpl.Ledger(1.0, 1e-6, accountant="gdp")
    with pytest.raises(dpl.InvalidArgumentError, match="'basic' or 'zcdp'"):
        gdp.partition(table, by="region", parts=["north"])
    replace = dpl.Ledger(1.0, 1e-6, adjacency="replace_one")
    with pytest.raises(dpl.InvalidArgumentError, match="add/remove"):
        replace.partition(table, by="region", parts=["north"])
    plain = dpl.Ledger(1.0, 1e-6)
    with pytest.raises(dpl.InvalidArgumentError, match="column"):
        plain.partition(table, by="nope", parts=["north"])
    with pytest.raises(dpl.InvalidArgumentError, match="distinct"):
        plain.partition(table, by="region", parts=["north", "north"])
    assert gdp.receipts == replace.receipts == plain.receipts == ()
