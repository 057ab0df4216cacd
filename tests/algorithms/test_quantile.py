"""Private quantiles (KNG in one dimension): exact sampling, honest charges, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpledger as dpl
from dpledger import Ledger
from dpledger.algorithms import quantile
from dpledger.algorithms.quantile import _sample
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

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
    with pytest.raises(dpl.InvalidArgumentError, match="finite"):
        quantile([1.0, math.nan], 0.5, ledger=ledger, bounds=(0, 5), epsilon=1.0)
    with pytest.raises(dpl.InvalidArgumentError, match="exactly one"):
        quantile([1.0, 2.0], 0.5, ledger=ledger, bounds=(0, 5))
    with pytest.raises(dpl.BudgetExceededError):
        quantile([1.0, 2.0], [0.1, 0.9], ledger=ledger, bounds=(0, 5), epsilon=2.0)
    assert ledger.receipts == ()


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
