"""Basic, advanced and optimal composition; mCDP and zCDP; against closed forms and mpmath."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant.mcdp import mcdp_to_epsilon
from dpledger.accountant.zcdp import zcdp_to_epsilon
from dpledger.errors import NotApplicableError
from tests import _reference as ref

# -- basic -------------------------------------------------------------------------------


def test_basic_adds_epsilon_and_delta():
    event = ev.PureDP(0.5) * 3 + ev.ApproxDP(1.0, 1e-6) * 2 + ev.Laplace(2.0, 1.0)
    assert acc.epsilon(event, 2e-6, method="basic") == pytest.approx(3.5 * 1.0 + 0.5, rel=1e-14)
    assert acc.epsilon(event, 1e-6, method="basic") == math.inf  # δ budget too small
    assert acc.delta(event, 4.0, method="basic") == pytest.approx(2e-6, rel=1e-14)
    assert acc.delta(event, 3.9, method="basic") == 1.0


@pytest.mark.parametrize("rate", [0.001, 0.1, 0.5])
def test_amplification_by_subsampling(rate):
    """Balle, Barthe & Gaboardi 2018: (log(1 + γ(e^ε − 1)), γδ)."""
    inner = ev.ApproxDP(2.0, 1e-6)
    expected = float(mpmath.log(1 + rate * mpmath.expm1(2)))
    for sampled in (
        ev.PoissonSampled(inner, rate),
        ev.SampledWithoutReplacement(inner, int(rate * 10_000), 10_000),
    ):
        eps, delta = acc.dp_guarantee(sampled)
        assert eps == pytest.approx(expected, rel=1e-13)
        assert eps >= expected
        assert delta == pytest.approx(rate * 1e-6, rel=1e-13)


# -- advanced ----------------------------------------------------------------------------


def test_reference_advanced_composition():
    """Dwork–Rothblum–Vadhan, 100 × ε₀ = 1, δ′ = 1e-6: 224.3934."""
    with mpmath.workdps(30):
        expected = float(mpmath.sqrt(200 * mpmath.log(10**6)) + 100 * mpmath.expm1(1))
    assert expected == pytest.approx(224.3934, abs=5e-5)
    ours = acc.epsilon(ev.PureDP(1.0) * 100, 1e-6, method="advanced")
    assert ours == pytest.approx(expected, rel=1e-12)
    assert ours >= expected
    assert acc.advanced_composition(1.0, 0.0, 100, 1e-6) == pytest.approx(expected, rel=1e-12)


def test_advanced_heterogeneous_and_delta_inverse():
    event = ev.PureDP(0.1) * 30 + ev.ApproxDP(0.5, 1e-7) * 4
    sq = 30 * 0.01 + 4 * 0.25
    mean = 30 * 0.1 * math.expm1(0.1) + 4 * 0.5 * math.expm1(0.5)
    delta = 1e-5
    expected = math.sqrt(2 * math.log(1 / (delta - 4e-7)) * sq) + mean
    assert acc.epsilon(event, delta, method="advanced") == pytest.approx(expected, rel=1e-12)
    assert acc.delta(event, expected, method="advanced") == pytest.approx(delta, rel=1e-9)


# -- optimal -----------------------------------------------------------------------------


def test_reference_optimal_composition():
    """Kairouz–Oh–Viswanath, 100 × ε₀ = 1 at δ = 1e-6: 83.5307017."""
    expected = float(ref.kov_epsilon(1e-6, [(1.0, 100)]))
    assert expected == pytest.approx(83.5307017, abs=5e-8)
    ours = acc.epsilon(ev.PureDP(1.0) * 100, 1e-6, method="optimal")
    assert ours == pytest.approx(expected, rel=1e-10)
    assert ours >= expected


@pytest.mark.parametrize("epsilon", [0.0, 1.0, 10.0, 40.0, 83.0])
def test_optimal_delta_matches_brute_force(epsilon):
    ours = acc.delta(ev.PureDP(1.0) * 100, epsilon, method="optimal")
    exact = float(ref.kov_delta(epsilon, [(1.0, 100)], []))
    assert ours >= exact
    assert ours == pytest.approx(exact, rel=1e-11)


def test_optimal_heterogeneous_with_deltas_matches_brute_force():
    event = ev.PureDP(0.3) * 12 + ev.ApproxDP(0.8, 1e-6) * 5 + ev.RandomizedResponse(1.5) * 3
    groups = [(0.3, 12), (0.8, 5), (1.5, 3)]
    for eps in [0.5, 2.0, 5.0]:
        exact = float(ref.kov_delta(eps, groups, [(1e-6, 5)]))
        ours = acc.delta(event, eps, method="optimal")
        assert ours >= exact
        assert ours == pytest.approx(exact, rel=1e-10)
    exact_eps = float(ref.kov_epsilon(1e-4, groups, [(1e-6, 5)]))
    ours_eps = acc.epsilon(event, 1e-4, method="optimal")
    assert ours_eps >= exact_eps
    assert ours_eps == pytest.approx(exact_eps, rel=1e-9)


def test_optimal_with_delta_floor():
    event = ev.ApproxDP(1.0, 1e-3) * 10
    # 1 − (1 − 1e-3)^10 ≈ 9.96e-3 > 1e-3: no ε suffices
    assert acc.epsilon(event, 1e-3, method="optimal") == math.inf


def test_optimal_refuses_huge_heterogeneous_enumeration():
    event = ev.Composed(tuple(ev.PureDP(0.01 * (i + 1)) * 50 for i in range(6)))
    with pytest.raises(NotApplicableError, match="optimal"):
        acc.epsilon(event, 1e-6, method="optimal")


@given(
    st.lists(st.tuples(st.floats(0.05, 2.0), st.integers(1, 30)), min_size=1, max_size=3),
    st.floats(1e-9, 1e-2),
)
def test_optimal_never_looser_than_advanced_or_basic(groups, delta):
    event = ev.Composed(tuple(ev.PureDP(e) * k for e, k in groups))
    opt = acc.epsilon(event, delta, method="optimal")
    assert opt <= acc.epsilon(event, delta, method="basic") * (1 + 1e-12)
    assert opt <= acc.epsilon(event, delta, method="advanced") * (1 + 1e-12)


# -- mCDP and zCDP -----------------------------------------------------------------------


def test_mcdp_closed_forms():
    """DR16: ε-DP → (ε(e^ε−1)/2, ε); Gaussian → (μ²/2, μ); composition; conversion."""
    event = ev.PureDP(0.5) * 8 + ev.Gaussian(sigma=4.0) * 2
    summary = acc.MCDPAccountant.summarize(event)
    mu = 8 * 0.5 * math.expm1(0.5) / 2 + 2 * (1 / 4) ** 2 / 2
    tau2 = 8 * 0.25 + 2 * (1 / 4) ** 2
    assert summary.mu == pytest.approx(mu, rel=1e-14)
    assert summary.tau_squared == pytest.approx(tau2, rel=1e-14)
    expected = mu + math.sqrt(tau2) * math.sqrt(2 * math.log(1e6))
    assert acc.epsilon(event, 1e-6, method="mcdp") == pytest.approx(expected, rel=1e-13)
    assert mcdp_to_epsilon(1.0, 1.0, 1e-6) == pytest.approx(
        1 + math.sqrt(2 * math.log(1e6)), rel=1e-14
    )


def test_mean_loss_is_not_epsilon():
    """A (1, √2)-mCDP release (mean loss 1) is far from (1, δ)-DP."""
    event = ev.MCDP(mu=1.0, tau=math.sqrt(2.0))
    assert acc.epsilon(event, 1e-6) > 7.0


def test_zcdp_rho_and_conversions():
    event = ev.Gaussian(sigma=3.0) * 4 + ev.PureDP(0.2) + ev.ZCDP(0.05)
    rho = 4 / 18 + 0.02 + 0.05
    summary = acc.ZCDPAccountant.summarize(event)
    assert summary.rho == pytest.approx(rho, rel=1e-14)
    simple = zcdp_to_epsilon(rho, 1e-6, tight=False)
    assert simple == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e6)), rel=1e-14)
    tight = acc.epsilon(event, 1e-6, method="zcdp")
    expected = float(ref.rdp_epsilon(lambda a: rho * a, 1e-6))
    assert tight == pytest.approx(expected, rel=1e-9)
    assert tight < simple


def test_zcdp_of_gaussians_equals_rdp_of_gaussians():
    event = ev.Gaussian(sigma=5.0) * 100
    assert acc.epsilon(event, 1e-5, method="zcdp") == pytest.approx(
        acc.epsilon(event, 1e-5, method="rdp"), rel=1e-12
    )


def test_zcdp_refuses_subsampling_and_approx():
    with pytest.raises(NotApplicableError, match="zcdp"):
        acc.epsilon(ev.PoissonSampled(ev.Gaussian(1.0), 0.1), 1e-5, method="zcdp")
    with pytest.raises(NotApplicableError, match="zcdp"):
        acc.epsilon(ev.ApproxDP(1.0, 1e-7), 1e-5, method="zcdp")
