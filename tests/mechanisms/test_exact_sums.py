"""Sums over the rows are exact: no floating-point error that grows with n reaches a release.

A float sum errs by up to ≈ n·u·Σ|terms| depending on the order of the rows and on every
other row, so neighbouring data sets can differ by more than the sensitivity
(Casacuberta, Shoemate, Vadhan & Wagaman 2022). These tests check the properties that
only an exact sum has — independence of the row order, the chunking and dask's
partitioning — that each record's contribution stays within its declared bounds exactly,
and that the exact sums agree with an independent high-precision sum of the data.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpledger.algorithms import _data as statistics
from dpledger.algorithms.linear import ADASSP


def _wild_rows(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows in the unit ball whose norms span 12 orders of magnitude (hard for float sums)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1)[:, None]
    X *= 10.0 ** rng.uniform(-12, 0, size=(n, 1))
    sphere = rng.random(n) < 0.3  # some rows on the sphere, as clipped rows are
    X[sphere] /= np.linalg.norm(X[sphere], axis=1)[:, None]
    y = np.clip(rng.normal(size=n) * 10.0 ** rng.uniform(-9, 0, size=n), -1, 1)
    return X, y


def _transform():
    return ADASSP(x_bound=1.0, y_bound=1.0, fit_intercept=False)._transform()


def test_the_statistics_do_not_depend_on_the_order_of_the_rows():
    X, y = _wild_rows(20_000, 4, seed=1)
    base = statistics.sufficient_statistics(X, y, _transform())
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(X))
        other = statistics.sufficient_statistics(X[order], y[order], _transform())
        np.testing.assert_array_equal(other.gram, base.gram)
        np.testing.assert_array_equal(other.vector, base.vector)


def test_the_statistics_do_not_depend_on_chunking_folding_or_dask(monkeypatch):
    X, y = _wild_rows(9_000, 3, seed=2)
    base = statistics.sufficient_statistics(X, y, _transform())
    monkeypatch.setattr(statistics, "CHUNK_ROWS", 1000)
    monkeypatch.setattr(statistics, "_FOLD_ROWS", 2500)  # int64 totals folded often
    folded = statistics.sufficient_statistics(X, y, _transform())
    np.testing.assert_array_equal(folded.gram, base.gram)
    np.testing.assert_array_equal(folded.vector, base.vector)
    da = pytest.importorskip("dask.array")
    lazy = statistics.sufficient_statistics(
        da.from_array(X, chunks=(1234, -1)), da.from_array(y, chunks=1234), _transform()
    )
    np.testing.assert_array_equal(lazy.gram, base.gram)
    np.testing.assert_array_equal(lazy.vector, base.vector)


def test_each_record_contributes_within_its_declared_bounds_exactly():
    # rows on the unit sphere (the clipped rows of real data): a float xxᵀ can have trace
    # 1 + ulp; the summed contribution must have trace ≤ 1 and |x·y| ≤ 1, exactly
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = rng.choice([-1.0, 1.0], size=400)
    same = lambda a, b: (a, b)  # noqa: E731 - the rows are already on the unit sphere
    for i in range(len(X)):
        one = statistics.sufficient_statistics(X[i : i + 1], y[i : i + 1], same)
        trace = sum(Fraction(v) for v in np.diag(one.gram))
        assert trace <= 1
        assert sum(Fraction(v) ** 2 for v in one.vector) <= 1


def test_the_exact_sums_agree_with_an_independent_exact_sum_of_the_data():
    # the data's own sums, in exact rational arithmetic, differ from the released statistic
    # only by the data grid: ≤ n · (2 · 2⁻²¹ + 2⁻⁴²) per Gram entry (two factors rounded to
    # the nearest 2⁻²⁰), far below any noise
    X, y = _wild_rows(3_000, 3, seed=4)
    stats = statistics.sufficient_statistics(X, y, _transform())
    rows = _transform()(X, y)[0]
    for j in range(3):
        for k in range(3):
            exact = sum(
                Fraction(a) * Fraction(b) for a, b in zip(rows[:, j], rows[:, k], strict=True)
            )
            assert abs(Fraction(stats.gram[j, k]) - exact) <= len(X) * Fraction(2, 2**21)


def test_descriptive_sums_do_not_depend_on_the_order_of_the_values():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(50_000, 2)) * 10.0 ** rng.uniform(-8, 8, size=(50_000, 1))
    values = np.clip(values, -1e8, 1e8)
    bounds = [(-1e8, 1e8), (-1e8, 1e8)]
    group = rng.integers(0, 3, size=50_000)
    base = statistics.exact_column_sums(values, bounds, group, 3)
    order = rng.permutation(50_000)
    np.testing.assert_array_equal(
        statistics.exact_column_sums(values[order], bounds, group[order], 3), base
    )
    # within the grid of 2⁻⁴⁰ of the bound's power of two per value of the exact sum
    for g in range(3):
        exact = sum(Fraction(v) for v in values[group == g, 0])
        assert abs(base.fractions()[g, 0] - exact) <= np.sum(group == g) * Fraction(2**27, 2**41)


def test_descriptive_values_stay_within_their_bounds_on_the_grid():
    # 0.1 is not a dyadic number: its grid value must not exceed the declared upper bound
    values = np.full((1000, 1), 0.1)
    total = statistics.exact_column_sums(values, [(-0.1, 0.1)])
    assert total.fractions()[0, 0] <= 1000 * Fraction(0.1)


def test_noisy_gd_steps_sum_the_clipped_gradients_exactly(monkeypatch):
    import warnings

    from dpledger.algorithms import NoisyGD
    from dpledger.ledger import Reservation

    released: list[np.ndarray] = []
    original = Reservation._charge_and_draw

    def recording(self, value, *args, **kwargs):
        released.append(np.array(value, dtype=float))  # the statistic, before its noise
        return original(self, value, *args, **kwargs)

    monkeypatch.setattr(Reservation, "_charge_and_draw", recording)
    X, y = _wild_rows(20_000, 3, seed=6)
    order = np.random.default_rng(0).permutation(len(X))
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same seed twice, on purpose
        for rows in (slice(None), order):
            released.clear()
            NoisyGD(
                epsilon=1.0,
                delta=1e-5,
                x_bound=1.0,
                y_bound=1.0,
                clip=0.5,
                steps=3,
                adjacency="replace_one",
                rng=0,
            ).fit(X[rows], y[rows])
            runs.append(list(released))
    assert len(runs[0]) == 3
    for first, second in zip(runs[0], runs[1], strict=True):
        np.testing.assert_array_equal(first, second)


def test_wide_rows_stay_within_their_norm_exactly():
    # many columns: the bound check on the squared norms stays exact
    rng = np.random.default_rng(7)
    X = rng.normal(size=(20, 6_000))
    X /= np.linalg.norm(X, axis=1)[:, None]
    grid, scale = statistics._rows_on_grid(X, 1.0, 20)
    for row in grid:
        assert sum(int(m) ** 2 for m in row) <= 2**40
    assert scale == 1.0


def test_a_range_narrower_than_a_grid_step_keeps_values_within_the_bound():
    # helper-33: no grid point in [low, high] used to clip to one beyond the bound
    total = statistics.exact_column_sums(
        np.full((1, 1), -0.1), [(float(np.nextafter(-0.1, -1.0)), -0.1)]
    ).fractions()[0, 0]
    assert abs(total) <= abs(Fraction(np.nextafter(-0.1, -1.0)))
    _, lowest, highest = statistics._grid_range(0.7, 0.7, 20)
    assert lowest == highest and Fraction(highest, 2**20) <= Fraction(0.7)


def test_fm_linear_squares_the_same_label_it_sums():
    # relaxed FM's joint sensitivity 4 assumes C₀'s y² is the square of C₁'s y (helper-33)
    from dpledger.algorithms.functional import _linear_weights

    y = np.array([1.0, -0.9999995231628418, 0.123456789])
    _, b, c = _linear_weights(None, y)
    np.testing.assert_array_equal(c, b * b)
    assert np.all(b * 2.0**20 == np.rint(b * 2.0**20))


def test_a_transformed_row_that_is_not_finite_is_refused_before_any_charge():
    from dpledger import Ledger
    from dpledger.algorithms import PrivateStandardScaler
    from dpledger.errors import InvalidArgumentError

    ledger = Ledger(1.0, 1e-5)
    X = np.zeros((10, 1))
    X[0, 0] = 1e308
    with pytest.raises(InvalidArgumentError, match="finite width"):
        PrivateStandardScaler(
            epsilon=0.5,
            delta=1e-6,
            bounds=(-1e308, 1e308),
            ledger=ledger,
            adjacency="add_remove",
            rng=0,
        ).fit(X)
    assert ledger.spent[0] == 0
    with pytest.raises(InvalidArgumentError, match="not finite"):
        statistics._rows_on_grid(np.array([[np.nan, 0.0]]), 1.0, 20)
