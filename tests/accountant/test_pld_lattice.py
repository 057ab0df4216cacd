"""Exact composition of Laplace and binary randomized-response releases (issue 15).

References are independent: the truncated-power (Irwin–Hall) closed form in mpmath
(tests/_reference.laplace_rr_delta, checked at two precisions), brute-force enumeration
for randomized response (tests/_reference.kov_delta), and δ(ε) = 1 − e^{(ε−ε₀)/2} for one
Laplace release.
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import pytest

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant import pld
from dpledger.accountant._pairs import LaplacePair, RRPair
from dpledger.accountant.pld import _lattice
from tests import _reference as ref

LAPLACE_100 = mpmath.mpf("71.54600365967490428864955")  # tests/accountant/test_pld.py


def _composition(laplace: int, rr: int = 0, step: float = 1.0) -> _lattice.LatticeComposition:
    measures = []
    if laplace:
        measures.append((LaplacePair(step).cell_measure(), laplace))
    if rr:
        measures.append((RRPair(step).cell_measure(), rr))
    composition = _lattice.lattice_composition(tuple(measures))
    assert composition is not None
    return composition


def test_reference_closed_form_agrees_at_two_precisions_and_with_the_known_value():
    """The mpmath reference itself: 100 and 200 digits agree, δ(LAPLACE_100) = 1e-6."""
    low = ref.laplace_rr_delta(float(LAPLACE_100), 1.0, 100, dps=100)
    high = ref.laplace_rr_delta(float(LAPLACE_100), 1.0, 100, dps=200)
    assert abs(low - high) <= mpmath.mpf(10) ** -40
    # the float nearest LAPLACE_100 moves δ by at most |δ′|·ulp ≈ 1e-6·1.4e-14
    assert abs(low - mpmath.mpf("1e-6")) <= mpmath.mpf("1e-19")


@pytest.mark.parametrize(
    ("laplace", "rr", "step", "epsilons"),
    [
        (1, 0, 2.0, [0.0, 0.3, 1.9]),
        (7, 0, 0.37, [0.0, 0.5, 1.5, 2.5]),
        pytest.param(100, 0, 1.0, [40.0, 71.5, 90.0], marks=pytest.mark.slow),
        (30, 12, 0.8, [5.0, 12.5, 20.0]),
        (0, 40, 0.25, [1.0, 4.0]),
        (25, 0, 4.0, [30.0, 70.0]),
    ],
    ids=["one", "seven-small", "hundred", "mixed", "rr-only", "large-step"],
)
def test_delta_bracket_contains_the_closed_form_and_is_tight(laplace, rr, step, epsilons):
    """δ̲(ε) ≤ exact ≤ δ̄(ε), and the bracket is within 1e-9 relative of the exact value."""
    composition = _composition(laplace, rr, step)
    for eps in epsilons:
        exact = ref.laplace_rr_delta(eps, step, laplace, rr)
        lower, upper = composition.delta_bounds(eps)
        assert lower <= exact <= upper, (eps, lower, float(exact), upper)
        assert upper - lower <= 1e-9 * exact, (eps, lower, upper)


def test_randomized_response_alone_matches_enumeration():
    composition = _composition(0, 40, 0.25)
    for eps in (0.0, 1.0, 3.0, 6.0):
        exact = ref.kov_delta(eps, [(0.25, 40)], [])
        lower, upper = composition.delta_bounds(eps)
        assert lower <= exact <= upper
        assert upper - lower <= 1e-10 * max(exact, 1e-300) + 1e-300


def test_one_laplace_release_matches_its_curve_everywhere():
    """δ(ε) = 1 − e^{(ε−ε₀)/2} on [0, ε₀], 0 above (in mpmath), at 200 points."""
    composition = _composition(1, 0, 1.5)
    for i in range(201):
        eps = 1.6 * i / 200
        exact = (
            -mpmath.expm1((mpmath.mpf(eps) - mpmath.mpf(1.5)) / 2) if eps < 1.5 else mpmath.mpf(0)
        )
        lower, upper = composition.delta_bounds(eps)
        assert lower <= exact <= upper
        assert upper - lower <= 1e-12 * exact + 1e-300


def test_hundred_laplace_epsilon_is_exact_to_1e_13_through_every_entry_point():
    """ε(1e-6) of 100 Laplace releases (scale 1): every entry point brackets the exact
    71.5460036596749 within 1e-12 relative — the grid method was 2.9e-6 above it."""
    event = ev.Laplace(1.0) * 100
    eps = acc.epsilon(event, 1e-6, method="pld")
    assert LAPLACE_100 <= eps <= LAPLACE_100 * (1 + 1e-12)
    lower, upper = pld.epsilon_bounds(event, 1e-6)
    assert lower is not None and lower <= LAPLACE_100 <= upper
    assert (upper - lower) / upper <= 1e-12
    assert pld.epsilon_lower_bound(event, 1e-6) <= LAPLACE_100
    back = acc.delta(event, eps, method="pld")
    assert back <= 1e-6
    assert ref.laplace_rr_delta(eps, 1.0, 100) <= 1e-6  # the exact δ at our ε
    assert acc.epsilon(event, 1e-6) == eps  # auto: the tightest method
    assert acc.PLDAccountant.summarize(event).is_exact


def test_grid_and_exact_paths_agree_and_the_grid_path_stays_available():
    """exact=False keeps the grid method (used for every non-lattice mix); both are upper
    bounds, the exact one the smaller."""
    summary = acc.PLDAccountant.summarize(ev.Laplace(1.0) * 100)
    grid = dataclasses.replace(summary, exact=False, _cache={})
    assert not grid.is_exact
    exact, on_grid = summary.epsilon(1e-6), grid.epsilon(1e-6)
    assert LAPLACE_100 <= exact < on_grid <= LAPLACE_100 * (1 + 1e-6)


def test_epsilon_at_delta_zero_is_the_total_loss():
    """δ(ε) > 0 for every ε < Kε₀ (P(L = Kε₀) = 2^{−K}): ε(0) is Kε₀, rounded up."""
    event = ev.Laplace(2.0) * 40  # ε₀ = 0.5
    eps = acc.epsilon(event, 0.0, method="pld")
    assert 20.0 <= eps <= 20.0 * (1 + 1e-13)
    assert acc.delta(event, 20.0 * (1 - 1e-9), method="pld") > 0


def test_laplace_lower_pair_rounds_its_epsilon_down():
    """Laplace(3): ε₀ = 1/3 is rounded up for the dominating pair and down for the
    attained one; both compositions are exact, and bracket the closed form at 1/3."""
    event = ev.Laplace(3.0) * 60
    summary = acc.PLDAccountant.summarize(event)
    upper_step = summary._lattice("upper").step
    lower_step = summary._lattice("lower").step
    with mpmath.workdps(60):
        assert lower_step < upper_step and mpmath.mpf(lower_step) < mpmath.mpf(1) / 3
    with mpmath.workdps(60):
        third = mpmath.mpf(1) / 3
        lower, upper = summary.epsilon_bounds(1e-6)
        assert lower is not None
        # δ at each end, exact for ε₀ = 1/3: above the target at the lower end, below at
        # the upper end
        assert _delta_third(lower, third) > 1e-6 > _delta_third(upper, third)


def _delta_third(eps: float, third: mpmath.mpf) -> mpmath.mpf:
    with mpmath.workdps(120):
        return ref.laplace_rr_delta(eps, third, 60, dps=120)


def test_mixes_off_one_lattice_and_large_compositions_use_the_grid():
    """Different steps, a Gaussian, a k-ary or (ε, δ) release, or a composition past
    MAX_WORK: no exact composition (the grid method answers)."""
    for event in [
        ev.Laplace(1.0) * 10 + ev.Laplace(2.0) * 10,
        ev.Laplace(1.0) * 10 + ev.Gaussian(3.0),
        ev.Laplace(1.0) * 10 + ev.RandomizedResponse(1.0, categories=3),
        ev.Laplace(1.0) * 10 + ev.ApproxDP(1.0, 1e-9),
        ev.Laplace(1.0) * 400,
    ]:
        summary = acc.PLDAccountant.summarize(event)
        assert summary._lattice("upper") is None, event
        assert math.isfinite(summary.epsilon(1e-6))
    assert acc.PLDAccountant.summarize(ev.Laplace(1.0) * 340).is_exact


def test_pure_dp_and_laplace_on_one_lattice_compose_exactly():
    """PureDP(ε₀) is dominated by randomized response with ε₀: with Laplace releases of
    the same ε₀ (the same float) the composition is exact."""
    event = ev.Laplace(0.5) * 30 + ev.PureDP(2.0) * 12
    summary = acc.PLDAccountant.summarize(event)
    assert summary.is_exact
    eps = summary.epsilon(1e-5)
    assert ref.laplace_rr_delta(eps, 2.0, 30, 12) <= 1e-5
    assert ref.laplace_rr_delta(eps * (1 - 1e-10), 2.0, 30, 12) > 1e-5


# --- from the adversarial review (helper-22): crashes and loose brackets for large ε₀ ----


def test_large_step_brackets_are_tight_and_certified():
    """ε₀ = 20: the cut's position used to be charged as an error band weighted e^{2g}
    too high (ε(1e-6) of 100 releases 5.8e-6 relative above the truth, ε = T at 1e-10 for
    50); now δ̄ and δ̲ are evaluated at τ rounded up and down, and the bracket is exact."""
    for count, delta in [(100, 1e-6), (50, 1e-10)]:
        composition = _composition(count, 0, 20.0)
        upper, lower = composition.epsilon_upper(delta), composition.epsilon_lower(delta)
        assert (upper - lower) / upper <= 1e-12
        with mpmath.workdps(60):
            assert ref.laplace_rr_delta(upper, 20.0, count, dps=60) <= delta
            assert ref.laplace_rr_delta(lower, 20.0, count, dps=60) > delta


def test_compositions_past_the_float_range_use_the_grid_without_crashing():
    """ε₀ = 20 with 300 releases: the tilted measure spans more than the float range
    between cells (it crashed with OverflowError, or answered ε = T); the grid answers."""
    event = ev.Laplace(0.05) * 300
    assert acc.PLDAccountant.summarize(event)._lattice("upper") is None
    eps = acc.epsilon(event, 1e-6, method="pld")
    lower, upper = pld.epsilon_bounds(event, 1e-6)
    assert lower is not None and lower <= eps and upper < 6000.0


def test_tiny_steps_keep_a_relative_bracket():
    """ε₀ = 1e-300 (scale 1e300): δ(0) of 60 releases ≈ 3.08e-300 was bracketed in
    [2.6e-300, 3.6e-300] (an absolute 1e-300 in the atoms' error); now within 1e-9
    relative (20 releases here: the reference needs 360 digits, 1 − e^{−1e-300})."""
    composition = _composition(20, 0, 1e-300)
    exact = ref.laplace_rr_delta(0.0, 1e-300, 20, dps=360)
    assert exact > 1e-301
    lower, upper = composition.delta_bounds(0.0)
    assert lower <= exact <= upper
    assert upper - lower <= 1e-9 * exact


def test_delta_at_infinite_epsilon_is_zero():
    assert acc.delta(ev.Laplace(1.0) * 10, math.inf, method="pld") == 0.0
