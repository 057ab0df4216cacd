"""Exact statistics reach the grid mechanisms exact: ⌊x/γ⌋ of the exact value, always."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger as dpl
from dpledger.mechanisms import ExactValue, Gaussian, Laplace
from dpledger.mechanisms.additive import _release_on_grid
from dpledger.mechanisms.exact_value import concatenate


def _reference_floor(q: int, factor: Fraction, root2: bool, gamma: float) -> int:
    """⌊q·factor·(√2)/γ⌋ independently: Fractions for rationals, 200-digit mpmath for √2."""
    t = Fraction(q) * factor / Fraction(gamma)
    if not root2:
        return math.floor(t)
    # √2·t is irrational (t ≠ 0): with 100 digits beyond t's own, the floor is right
    digits = 100 + len(str(abs(t.numerator))) + len(str(t.denominator))
    with mpmath.workdps(digits):
        return int(mpmath.floor(mpmath.sqrt(2) * mpmath.mpf(t.numerator) / t.denominator))


@settings(max_examples=300, deadline=None)
@given(
    q=st.integers(-(2**130), 2**130),
    unit_exp=st.integers(-60, 10),
    factor=st.floats(1e-6, 1e6) | st.sampled_from([1.0, 2.0, 0.125, 1 / 3]),
    negative=st.booleans(),
    root2=st.booleans(),
    gamma_exp=st.integers(-40, 20),
)
def test_floor_steps_is_the_exact_floor(q, unit_exp, factor, negative, root2, gamma_exp):
    value = ExactValue.from_integers(np.array([q], dtype=object), 2.0**unit_exp)
    value = value / factor
    if negative:
        value = -value
    if root2:
        value = value.scaled_root2(np.array([True]))
    gamma = 2.0**gamma_exp
    f = Fraction(2.0**unit_exp) / Fraction(factor) * (-1 if negative else 1)
    assert int(value.floor_steps(gamma)[0]) == _reference_floor(q, f, root2, gamma)


def test_root2_twice_is_two_and_the_operations_compose_exactly():
    m = ExactValue.from_integers(np.array([[4, -3], [-3, 7]]), Fraction(1, 3))
    rows, cols = np.triu_indices(2)
    w = m[rows, cols].scaled_root2(rows != cols).scaled_root2(rows != cols)  # ×2 off-diagonal
    np.testing.assert_array_equal(w.fractions(), [Fraction(4, 3), Fraction(-2), Fraction(7, 3)])
    joined = concatenate([m[0] * 3, w.times([1, 2, 3])])
    np.testing.assert_array_equal(joined.fractions(), [4, -3, Fraction(4, 3), -4, 7])
    with pytest.raises(dpl.InvalidArgumentError, match="irrational"):
        m[rows, cols].scaled_root2(rows != cols).fractions()


def test_a_rounded_total_would_cross_a_grid_edge_the_exact_one_does_not():
    # 2⁶⁰ − 1 rounds to the float 2⁶⁰, one grid step of 2¹⁰ above the exact value's floor
    q = 2**60 - 1
    exact = ExactValue.from_integers(np.array([q], dtype=object))
    zero = np.zeros(1, dtype=np.int64)
    assert _release_on_grid(np.array([float(q)]), 2.0**10, zero)[0] == 2.0**60
    assert _release_on_grid(exact, 2.0**10, zero)[0] == (2**50 - 1) * 2.0**10


def test_the_float_path_of_root2_crosses_edges_the_exact_path_does_not():
    # the √2 of the Frobenius geometry, applied to a rounded float: some values land on the
    # wrong side of a grid edge; the exact value never does
    rng = np.random.default_rng(3)
    q = [int(v) for v in rng.integers(2**55, 2**62, size=20_000)]
    exact = ExactValue.from_integers(np.array(q, dtype=object), 2.0**-40)
    rooted = exact.scaled_root2(np.ones(len(q), dtype=bool))
    gamma = 2.0**-20
    floors = rooted.floor_steps(gamma)
    naive = np.floor(np.array([float(v) * 2.0**-40 for v in q]) * math.sqrt(2.0) / gamma)
    reference = [_reference_floor(v, Fraction(2.0**-40), True, gamma) for v in q[:200]]
    np.testing.assert_array_equal(floors[:200].astype(object), reference)
    assert np.any(naive != floors.astype(float)), "the float path should cross some edges"


@pytest.mark.parametrize("family", [Gaussian, Laplace])
def test_grid_mechanisms_floor_exact_values_and_accept_them_like_arrays(family, monkeypatch):
    mech = family(1.0, 1.0, dimension=3)
    monkeypatch.setattr(type(mech), "_draw_grid", lambda self, size, rng: np.zeros(size, int))
    value = ExactValue.from_integers(np.array([2**60 - 1, -5, 7], dtype=object), 2.0**-40)
    mech.validate(value)
    out = mech.release(value, np.random.default_rng(0))
    steps = value.floor_steps(mech.granularity)
    np.testing.assert_array_equal(out, steps.astype(float) * mech.granularity)
    with pytest.raises(dpl.InvalidArgumentError, match="entries"):
        mech.validate(ExactValue.from_integers(np.arange(4)))


def _spy(monkeypatch):
    """Record (mechanism, value) of every release (all go through a reservation)."""
    from dpledger.ledger import Reservation

    seen: list[tuple[object, object]] = []
    original = Reservation._charge_and_draw

    def recording(self, value, *args, **kwargs):
        seen.append((self.next_mechanism(), value))
        return original(self, value, *args, **kwargs)

    monkeypatch.setattr(Reservation, "_charge_and_draw", recording)
    return seen


def _fits():
    from dpledger.algorithms import (
        ADASSP,
        SSP,
        FMLinearRegression,
        FMLogisticRegression,
        NoisyGD,
        PrivateIRLS,
        PrivateStandardScaler,
    )

    # published variants cost more than their nominal budget: a large shared ledger
    big = dpl.Ledger(1e3, 0.5, adjacency="replace_one")
    common = {"epsilon": 2.0, "delta": 1e-5, "adjacency": "replace_one", "ledger": big}
    reg = {**common, "x_bound": 1.0, "y_bound": 1.0}
    yield "SSP", SSP(**reg), "y"
    yield "SSP published", SSP(**reg, variant="published"), "y"
    yield "ADASSP", ADASSP(**reg), "y"
    for method in ("gaussian", "relaxed", "original"):
        for variant in ("calibrated", "published"):
            yield (
                f"FM {method} {variant}",
                FMLinearRegression(**reg, method=method, variant=variant),
                "y",
            )
    yield "FM logistic", FMLogisticRegression(**common, x_bound=1.0), "labels"
    yield "IRLS", PrivateIRLS(**common, x_bound=1.0, loss="logistic"), "labels"
    yield "NoisyGD", NoisyGD(**reg, steps=3), "y"
    yield "scaler", PrivateStandardScaler(**common, bounds=(-3.0, 3.0)), None


@pytest.mark.parametrize("name", [name for name, _, _ in _fits()])
def test_every_grid_release_of_a_sum_gets_the_exact_statistic(name, monkeypatch):
    # every statistic over the rows reaches its grid mechanism exact (ADASSP's λ_min is an
    # eigenvalue, not a sum: certified separately)
    _, model, target = next(f for f in _fits() if f[0] == name)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(500, 3)) / 2
    y = np.clip(X @ [0.5, -0.2, 0.1], -1, 1) if target == "y" else (X[:, 0] > 0) * 1.0
    seen = _spy(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y) if target is not None else model.fit(X)
    grid = [
        (m, v)
        for m, v in seen
        if isinstance(m, Gaussian | Laplace) or isinstance(getattr(m, "inner", None), Gaussian)
    ]
    assert grid, "no grid release seen"
    for mechanism, value in grid:
        assert isinstance(value, ExactValue), (name, mechanism)
    if name == "ADASSP":  # λ_min: the certified index, one grid step more than Weyl's 1
        mechanism, value = grid[0]
        assert mechanism.sensitivity == 1.0 + mechanism.granularity
        stats, _ = model._statistics(X, y)
        cell = np.linalg.eigvalsh(stats.gram)[0] / mechanism.granularity  # float: ±1e-9 cells
        k = int(value.floor_steps(mechanism.granularity)[0])
        assert k in (math.floor(cell) - 1, math.floor(cell))


def test_descriptive_sums_release_the_exact_sums(monkeypatch):
    from dpledger.algorithms import mean

    seen = _spy(monkeypatch)
    ledger = dpl.Ledger(1.0, 1e-6)
    mean(np.linspace(0, 1, 101), bounds=(0.0, 1.0), ledger=ledger, share=1.0)
    sums = [v for m, v in seen if isinstance(m, Gaussian | Laplace)]
    assert sums and all(isinstance(v, ExactValue) for v in sums)


@settings(max_examples=300, deadline=None)
@given(
    q=st.lists(st.integers(-(2**62) + 1, 2**62 - 1), min_size=1, max_size=6),
    unit_exp=st.integers(-1100, 60),
    gamma_exp=st.integers(-1074, 60),
    root2=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_the_int64_fast_paths_are_the_exact_floor(q, unit_exp, gamma_exp, root2):
    # int64 totals on a power-of-two unit (the Gram sums): shifts and the certified float
    # filter for √2 entries must agree with the exact reference everywhere
    value = ExactValue.from_integers(np.array(q, dtype=np.int64), Fraction(2) ** unit_exp)
    value = value.scaled_root2(np.array(root2[: len(q)]))
    gamma = 2.0**gamma_exp
    got = value.floor_steps(gamma)
    unit = Fraction(2) ** unit_exp
    for i, v in enumerate(q):
        assert int(got[i]) == _reference_floor(v, unit, root2[i], gamma)


def test_zero_dimensional_values_huge_values_and_non_integers():
    # helper-35: 0-d arithmetic, values beyond the float range, silent truncation
    five = ExactValue.from_integers(5, 0.5)
    assert float(np.asarray(-(five * 3) / 2)) == -3.75
    np.testing.assert_array_equal(five.times(4).fractions(), Fraction(10))
    huge = ExactValue.from_integers(np.array([2**1100, -(2**1100), 3], dtype=object))
    assert list(np.asarray(huge)) == [math.inf, -math.inf, 3.0]
    assert "ExactValue" in repr(huge)
    with pytest.raises(dpl.InvalidArgumentError, match="finite"):
        Gaussian(1.0, 1.0, dimension=3).validate(huge)
    for bad in ([0.5], [Fraction(7, 2)], [True]):
        with pytest.raises(dpl.InvalidArgumentError, match="integers"):
            ExactValue.from_integers(np.array(bad, dtype=object))
    with pytest.raises(TypeError):
        np.exp(five)  # ufuncs would compute in floats: refused


def test_a_grid_unit_below_the_float_range_stays_exact():
    # helper-35: a unit that underflowed to 0.0 in floats used to be replaced by 1: the
    # "exact" sum was then the raw grid integers, 2¹⁰⁸⁰ times the true one
    from dpledger.algorithms import _data

    X = np.full((10, 2), 0.5)
    spec = _data.Moments(
        lambda Xb, yb: (np.full(len(Xb), 1e-320), None, None), a=(0.0, 1e-320), b=None
    )
    stats = _data.sufficient_statistics(X, None, lambda Xb, yb: (Xb, yb), spec)
    total = stats.exact.gram.fractions()[0, 0]
    assert 0 < total <= 10 * Fraction(1e-320) * Fraction(1, 4)


def test_a_value_the_grid_cannot_hold_is_refused_before_the_charge():
    # helper-35: it used to pass validation, be charged, then fail in release
    ledger = dpl.Ledger(10.0, 1e-6)
    mech = Gaussian(1e-290, 1e-290)
    with pytest.raises(dpl.InvalidArgumentError, match="grid"):
        ledger.release(mech, 1e30, np.random.default_rng(0))
    assert ledger.spent == (0.0, 0.0)


@pytest.mark.parametrize("epsilon", [1.0, 1e20])
def test_adassp_charges_the_extra_grid_step_exactly(epsilon, monkeypatch):
    # helper-36: 1 + γ in floats is 1.0 for γ < 2⁻⁵², which dropped the extra step
    from dpledger.algorithms import ADASSP
    from dpledger.mechanisms.additive import _grid_sensitivity

    seen = _spy(monkeypatch)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2)) / 3
    y = np.clip(X @ [0.5, -0.2], -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ADASSP(epsilon=epsilon, delta=1e-6, x_bound=1, y_bound=1, adjacency="add_remove").fit(X, y)
    mech = seen[0][0]
    assert mech.dimension == 1
    units = _grid_sensitivity(mech.sensitivity, mech.granularity, 1, "l2")
    assert units >= math.ceil(1 / Fraction(mech.granularity)) + 1


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda e: ExactValue.from_integers([1], float("nan")), "unit"),
        (lambda e: ExactValue.from_integers([1], "x"), "unit"),
        (lambda e: ExactValue.from_integers([1, 2], [1.0, 2.0, 3.0]), "unit"),
        (lambda e: e * float("inf"), "factor"),
        (lambda e: e * "x", "factor"),
        (lambda e: e / True, "factor"),
        (lambda e: e.floor_steps(float("nan")), "granularity"),
        (lambda e: e.floor_steps("a"), "granularity"),
        (lambda e: e.floor_steps(-1.0), "granularity"),
        (lambda e: e.times([1, 2, 3]), "factors"),
        (lambda e: e.scaled_root2([True, False, True]), "where"),
    ],
)
def test_bad_arguments_get_a_named_error(call, name):
    e = ExactValue.from_integers(np.array([3, -4]))
    with pytest.raises(dpl.InvalidArgumentError, match=f"`{name}`"):
        call(e)
