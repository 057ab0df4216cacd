"""The discrete Gaussian at the continuous price (issue 33): never below the exact δ.

The exact hockey-stick divergence of N_Z(0, σ²)^d against N_Z(v, σ²)^d is computed here
by summation over the lattice, independently of dpledger: in one dimension in mpmath, in
two over a box of ±14σ around the centres in float64 (the mass outside is below e⁻⁹⁸).
Every method that accounts the discrete Gaussian (GDP and PLD at the continuous price plus
the slack, auto) must report at least that δ, for shifts in several directions; at large
σ the report must meet the continuous Gaussian's curve; in one dimension it must agree
with dp_accounting's discrete-Gaussian PLD.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant.discrete_gaussian import as_continuous, continuous_price
from dpledger.accountant.gdp import gaussian_delta

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)


@mpmath.workdps(40)
def exact_delta_1d(sigma: float, shift: int, epsilon: float) -> float:
    """Σ_k (p(k) − e^ε p(k − shift))₊ for p ∝ e^{−k²/(2σ²)} on the integers (mpmath)."""
    reach = int(20 * sigma) + abs(shift) + 1
    s2 = 2 * mpmath.mpf(sigma) ** 2
    weights = {k: mpmath.exp(-(mpmath.mpf(k) ** 2) / s2) for k in range(-reach - shift, reach + 1)}
    norm = mpmath.fsum(weights[k] for k in range(-reach, reach + 1))
    factor = mpmath.exp(epsilon)
    zero = mpmath.mpf(0)
    total = mpmath.fsum(
        max(zero, weights[k] - factor * weights[k - shift]) for k in range(-reach, reach + 1)
    )
    return float(total / norm)


def exact_delta_2d(sigma: float, shift: tuple[int, int], epsilon: float) -> float:
    """The same over Z² (float64, box of ±14σ beyond the shift)."""
    reach = int(14 * sigma) + max(abs(shift[0]), abs(shift[1])) + 1
    k = np.arange(-reach, reach + 1, dtype=float)
    s2 = 2 * sigma * sigma
    p1 = np.exp(-(k**2) / s2)
    norm = p1.sum() ** 2
    p = np.outer(p1, p1)
    q = np.outer(np.exp(-((k - shift[0]) ** 2) / s2), np.exp(-((k - shift[1]) ** 2) / s2))
    return float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum() / norm)


SHIFTS_1D = [1, 3, 7, 20]
SHIFTS_2D = [(1, 0), (3, 4), (7, 1), (1, 1), (5, 12)]


@pytest.mark.parametrize("sigma", [16.0, 30.0])
@pytest.mark.parametrize("shift", SHIFTS_1D)
def test_one_dimension_never_below_exact_summation(sigma, shift):
    event = ev.DiscreteGaussian(sigma, float(shift), dimension=1)
    for epsilon in EPSILONS:
        exact = exact_delta_1d(sigma, shift, epsilon)
        for method in ("gdp", "pld", "auto"):
            reported = acc.delta(event, epsilon, method=method)
            assert reported >= exact * (1 - 1e-10), (method, sigma, shift, epsilon)


@pytest.mark.parametrize("sigma", [16.0, 20.0])
@pytest.mark.parametrize("shift", SHIFTS_2D)
def test_two_dimensions_never_below_exact_summation(sigma, shift):
    norm = math.hypot(*shift)
    event = ev.DiscreteGaussian(sigma, norm, dimension=2)
    for epsilon in EPSILONS:
        exact = exact_delta_2d(sigma, shift, epsilon)
        for method in ("gdp", "pld", "auto"):
            reported = acc.delta(event, epsilon, method=method)
            assert reported >= exact * (1 - 1e-9), (method, sigma, shift, epsilon)
        # and the continuous price is close (σ₀/σ ≥ 0.993 at σ = 16): within 25 % of the
        # exact δ in these far tails, or at the slack
        reported = acc.delta(event, epsilon, method="gdp")
        assert reported <= max(exact * 1.25, 1e-7), (sigma, shift, epsilon, reported, exact)


def test_the_continuous_gaussian_at_the_same_sigma_is_not_a_bound():
    """Why σ₀ < σ: the continuous curve at σ itself is below the exact discrete δ here."""
    exact = exact_delta_1d(16.0, 7, 2.0)
    assert gaussian_delta(2.0, 16.0, 7.0) < exact


@pytest.mark.parametrize("dimension", [1, 10, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_at_a_fine_grid_the_price_is_the_continuous_one(dimension, epsilon):
    # the safe Gaussian's σ ≈ 2²⁰ grid units: the report equals the continuous curve
    sigma = 2.0**20
    sensitivity = 0.7 * sigma
    event = ev.DiscreteGaussian(sigma, sensitivity, dimension=dimension)
    continuous = gaussian_delta(epsilon, sigma, sensitivity)
    for method in ("gdp", "pld", "auto"):
        reported = acc.delta(event, epsilon, method=method)
        # (plus the slack, ≤ 2⁻¹⁰⁰, visible where δ itself is below 1e-30)
        limit = continuous * (1 + 1e-6) + 2.0**-99
        assert continuous <= reported <= limit, (method, reported, continuous)


def test_the_slack_is_at_most_two_to_the_minus_100_and_composes():
    for dimension in (1, 16, 10**6, 10**9):
        gaussian, slack = continuous_price(ev.DiscreteGaussian(100.0, 1.0, dimension=dimension))
        assert 0 < slack <= 2.0**-100 * (1 + 1e-3)
        assert gaussian.sigma < 100.0
    one = ev.DiscreteGaussian(100.0, 1.0, dimension=4)
    nested = ev.PoissonSampled(one * 3 + ev.Laplace(1.0), rate=0.1) * 5
    rewritten, slack = as_continuous(nested)
    assert slack == pytest.approx(15 * continuous_price(one)[1], rel=1e-9)
    assert not any(type(a) is ev.DiscreteGaussian for a, _ in ev.walk(rewritten))


def test_no_price_without_a_known_dimension_or_for_a_slack_of_one():
    assert continuous_price(ev.DiscreteGaussian(100.0, 1.0)) is None
    assert continuous_price(ev.DiscreteGaussian(0.2, 1.0, dimension=3)) is None
    # zCDP answers for both
    assert math.isfinite(acc.epsilon(ev.DiscreteGaussian(100.0, 1.0), 1e-6))
    assert math.isfinite(acc.epsilon(ev.DiscreteGaussian(16.0, 1.0, dimension=10**8), 1e-10))
    assert math.isfinite(acc.epsilon(ev.DiscreteGaussian(1e200, 1e200, dimension=1), 1e-10))


def test_one_dimension_agrees_with_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    for sigma, shift in [(16, 3), (30, 7)]:
        theirs = pld.from_discrete_gaussian_mechanism(
            sigma, sensitivity=shift, value_discretization_interval=1e-5
        )
        event = ev.DiscreteGaussian(float(sigma), float(shift), dimension=1)
        for epsilon in (0.5, 1.0, 2.0):
            ours = acc.delta(event, epsilon, method="pld")
            assert ours == pytest.approx(theirs.get_delta_for_epsilon(epsilon), rel=2e-3)


def test_lower_bounds_come_from_the_release_itself():
    """epsilon_bounds' lower end is attained by the discrete Gaussian, not its price."""
    from dpledger.accountant.pld import epsilon_bounds

    lower, upper = epsilon_bounds(ev.DiscreteGaussian(20.0, 5.0, dimension=2), 1e-5)
    assert lower is not None and lower <= upper

    @mpmath.workdps(30)
    def exact_epsilon():  # the 1-D shift (5, 0) is attained
        return mpmath.findroot(
            lambda e: exact_delta_1d(20.0, 5, float(e)) - 1e-5, (0.9, 0.95), solver="anderson"
        )

    assert lower <= float(exact_epsilon()) <= upper


def test_hostile_arguments_are_refused_by_name():
    from dpledger.accountant.discrete_gaussian import smoothing_width
    from dpledger.errors import DPLedgerError

    for bad in (0, -3, 1.5, float("nan"), "4"):
        with pytest.raises(DPLedgerError, match="dimension"):
            smoothing_width(bad)
    assert 2.0 < smoothing_width(10**400) < 10.0  # a huge count: finite, no overflow
    # and its slack is still counted (e^{−2π²τ²} underflows there: it was 0.0)
    _, slack = continuous_price(ev.DiscreteGaussian(1e6, 1.0, dimension=10**400))
    assert 2.0**-100 * 0.99 <= slack <= 2.0**-100 * 1.01
    for bad in (ev.Gaussian(1.0), 3.0, None):
        with pytest.raises(DPLedgerError, match="atom"):
            continuous_price(bad)
    with pytest.raises(DPLedgerError, match="event"):
        as_continuous("not an event")
