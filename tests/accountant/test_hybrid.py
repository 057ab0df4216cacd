"""auto's split of curve releases and (ε, δ) releases (dpledger.accountant.hybrid)."""

from __future__ import annotations

import math

import mpmath
import pytest

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant import pld
from dpledger.accountant.hybrid import HybridAccountant
from dpledger.errors import NotApplicableError
from tests import _reference as ref


def test_mixes_no_single_method_holds_are_now_accounted():
    """zCDP or a discrete Gaussian (no dimension) with an (ε, δ) release: every method
    refused the composition; auto now answers, above each part's own ε."""
    for curve in (ev.ZCDP(0.1), ev.DiscreteGaussian(3.0) * 2):
        event = curve + ev.ApproxDP(0.5, 1e-7)
        table = acc.epsilon_by_method(event, 1e-5)
        assert all(isinstance(v, NotApplicableError) for v in table.values())
        eps = acc.epsilon(event, 1e-5)
        assert math.isfinite(eps)
        assert eps >= acc.epsilon(curve, 1e-5) + 0.5 * 0  # never below the curve part
        assert eps >= 0.5
        assert acc.delta(event, eps) <= 1e-5 * 1.01  # the δ search agrees


def test_split_is_between_the_exact_value_and_a_simple_split():
    """Gaussians with an (ε, δ) release, where PLD is near-exact (the (ε, δ) release is
    its canonical pair): the split never beats PLD's certified lower end, and is at most
    the simple split δ/2 + δ/2 computed independently in mpmath (analytic Gaussian plus
    optimal composition of the rest)."""
    sigma, count, delta = 3.0, 4, 1e-5
    event = ev.Gaussian(sigma) * count + ev.ApproxDP(0.5, 1e-7)
    split = HybridAccountant.summarize(event).epsilon(delta)
    lower, upper = pld.epsilon_bounds(event, delta)
    assert lower is not None and lower <= split
    assert upper <= split  # PLD is the tighter method here; auto takes it
    assert acc.epsilon(event, delta) == acc.epsilon(event, delta, method="pld")
    # the simple split: δ₁ = δ/2 to the Gaussians (μ = √count/σ), then KOV composition
    # of (ε₁, δ/2) with (0.5, 1e-7) at δ, by enumeration in mpmath
    mu = math.sqrt(count) / sigma
    eps1 = float(ref.gaussian_epsilon(delta / 2, mu))
    simple = ref.kov_epsilon(delta, [(eps1, 1), (0.5, 1)], [(delta / 2, 1), (1e-7, 1)])
    assert split <= simple * (1 + 1e-9)


def test_basic_composition_where_enumeration_is_too_large():
    """Many distinct (ε, δ) releases exceed optimal composition's enumeration: the split
    composes them basically, and the result is the sum rule at the split found."""
    fixed = [ev.ApproxDP(0.01 * (i + 1), 1e-9) for i in range(30)]
    event = ev.Composed((ev.ZCDP(0.05), *fixed))
    eps = acc.epsilon(event, 1e-5)
    total_fixed = sum(0.01 * (i + 1) for i in range(30))
    rest = 1e-5 - 30e-9
    assert eps == pytest.approx(total_fixed + acc.epsilon(ev.ZCDP(0.05), rest), rel=1e-9)
    assert eps >= total_fixed + acc.epsilon(ev.ZCDP(0.05), rest * (1 + 1e-9))


def test_too_much_fixed_delta_gives_infinity_not_an_error():
    """(ε, δ) releases whose δ alone exceeds the target: ε = ∞ (the honest answer), e.g.
    the published Wishart second moment of PrivateIRLS (δ ≈ 0.36 per release)."""
    event = ev.ZCDP(0.1) + ev.ApproxDP(0.4, 0.36) * 5
    assert acc.epsilon(event, 1e-5) == math.inf


def test_one_kind_only_is_not_the_splits_business():
    for event in (ev.Gaussian(1.0) * 3, ev.ApproxDP(1.0, 1e-6) * 3):
        with pytest.raises(NotApplicableError, match="only one kind"):
            HybridAccountant.summarize(event)


def test_reference_kov_with_deltas_matches_a_closed_form():
    """The mpmath reference used above, for one (0.7, 1e-3) release at δ = 2e-3:
    1 − (1 − δ₀)(1 − p(1 − e^{ε−0.7})) = δ, p = e^{0.7}/(1 + e^{0.7})."""
    with mpmath.workdps(50):
        p = mpmath.e ** mpmath.mpf(0.7) / (1 + mpmath.e ** mpmath.mpf(0.7))
        rr = 1 - (1 - mpmath.mpf(2e-3)) / (1 - mpmath.mpf(1e-3))
        exact = mpmath.mpf(0.7) + mpmath.log(1 - rr / p)
        assert abs(ref.kov_epsilon(2e-3, [(0.7, 1)], [(1e-3, 1)]) - exact) < 1e-12
