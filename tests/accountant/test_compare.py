"""Cross-checks against Google's dp_accounting (installed with the `compare` extra)."""

from __future__ import annotations

import pytest

import dpledger.accountant as acc
from dpledger import events as ev

dpa = pytest.importorskip("dp_accounting")
rdp_module = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")


def _their_rdp(event, count: int, delta: float) -> float:
    accountant = rdp_module.RdpAccountant()
    accountant.compose(event, count)
    return float(accountant.get_epsilon(delta))


GAUSSIAN_CASES = [(0.5, 1), (1.0, 10), (5.0, 100), (20.0, 1000), (2.0, 3)]
LAPLACE_CASES = [(0.3, 5), (1.0, 100), (3.0, 50), (10.0, 1000)]
SAMPLED_CASES = [
    (0.01, 1.1, 10_000),
    (0.004, 1.0, 3_000),
    (0.1, 2.0, 100),
    (0.05, 0.8, 500),
    (0.5, 4.0, 50),
    (0.001, 0.6, 100_000),
]
DELTAS = [1e-5, 1e-8]


@pytest.mark.parametrize(("sigma", "count"), GAUSSIAN_CASES)
@pytest.mark.parametrize("delta", DELTAS)
def test_rdp_at_least_as_tight_gaussian(sigma, count, delta):
    ours = acc.epsilon(ev.Gaussian(sigma) * count, delta, method="rdp")
    theirs = _their_rdp(dpa.GaussianDpEvent(sigma), count, delta)
    assert ours <= theirs * (1 + 1e-12)
    assert ours >= theirs * 0.98  # same theory: tighter only through the order choice


@pytest.mark.parametrize(("scale", "count"), LAPLACE_CASES)
@pytest.mark.parametrize("delta", DELTAS)
def test_rdp_at_least_as_tight_laplace(scale, count, delta):
    ours = acc.epsilon(ev.Laplace(scale) * count, delta, method="rdp")
    theirs = _their_rdp(dpa.LaplaceDpEvent(scale), count, delta)
    assert ours <= theirs * (1 + 1e-12)
    assert ours >= theirs * 0.98


@pytest.mark.parametrize(("rate", "sigma", "count"), SAMPLED_CASES)
@pytest.mark.parametrize("delta", DELTAS)
def test_rdp_at_least_as_tight_poisson_gaussian(rate, sigma, count, delta):
    event = ev.PoissonSampled(ev.Gaussian(sigma), rate) * count
    ours = acc.epsilon(event, delta, method="rdp")
    theirs = _their_rdp(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma)), count, delta)
    assert ours <= theirs * (1 + 1e-12)
    assert ours >= theirs * 0.98


@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.730631635, 10.0, 50.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 1.0, 5.0, 20.0])
def test_analytic_gaussian_delta_agrees(sigma, epsilon):
    theirs = plm.GaussianPrivacyLoss(sigma, sensitivity=1.0).get_delta_for_epsilon(epsilon)
    ours = acc.gaussian_delta(epsilon, sigma=sigma)
    if theirs < 1e-290:
        assert ours < 1e-280
        return
    assert ours == pytest.approx(theirs, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.730631635, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
def test_analytic_gaussian_epsilon_agrees(sigma, delta):
    theirs = dpa.get_epsilon_gaussian(sigma, delta, tol=1e-14)
    assert acc.gaussian_epsilon(delta, sigma=sigma) == pytest.approx(theirs, rel=1e-9)


pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


@pytest.mark.parametrize(("rate", "sigma", "steps"), [(0.01, 1.1, 10_000), (0.004, 1.0, 3_000)])
def test_pld_agrees_with_dp_accounting_fine_grid(rate, sigma, steps):
    """Against dp_accounting's pessimistic connect-the-dots PLD at a 5x finer grid."""
    theirs = (
        pld_module.from_gaussian_mechanism(
            sigma, sampling_prob=rate, value_discretization_interval=2e-5
        )
        .self_compose(steps)
        .get_epsilon_for_delta(1e-5)
    )
    ours = acc.epsilon(ev.PoissonSampled(ev.Gaussian(sigma), rate) * steps, 1e-5, method="pld")
    assert abs(ours - theirs) <= 4e-5
    assert ours >= theirs - 2e-6  # theirs is itself an upper bound, ~1e-6 above the truth


def test_pld_laplace_agrees_with_dp_accounting():
    theirs = (
        pld_module.from_laplace_mechanism(1.0, value_discretization_interval=1e-5)
        .self_compose(100)
        .get_epsilon_for_delta(1e-6)
    )
    ours = acc.epsilon(ev.Laplace(1.0) * 100, 1e-6, method="pld")
    assert abs(ours - theirs) <= 1e-5


DISCRETE_1D = [
    *[
        ("laplace", scale, shift, count)
        for scale, shift, count in [(2.0, 3, 5), (1.0, 1, 20), (5.0, 2, 50)]
    ],
    *[
        ("gaussian", sigma, shift, count)
        for sigma, shift, count in [(2.0, 1, 3), (5.0, 1, 20), (3.0, 2, 4)]
    ],
]


@pytest.mark.parametrize(("noise", "width", "shift", "count"), DISCRETE_1D)
def test_one_dimensional_discrete_noise_agrees_with_dp_accounting(noise, width, shift, count):
    """1-D discrete Laplace (scale) / Gaussian (σ) against dp_accounting's discrete PLDs."""
    if noise == "laplace":
        theirs_pld = pld_module.from_discrete_laplace_mechanism(
            1 / width, sensitivity=shift, value_discretization_interval=1e-5
        )
        event: ev.Event = ev.DiscreteLaplace(width, shift, dimension=1)
    else:
        theirs_pld = pld_module.from_discrete_gaussian_mechanism(
            width, sensitivity=shift, value_discretization_interval=1e-5
        )
        event = ev.DiscreteGaussian(width, shift, dimension=1)
    theirs = theirs_pld.self_compose(count).get_epsilon_for_delta(1e-6)
    ours = acc.epsilon(event * count, 1e-6, method="pld")
    assert abs(ours - theirs) <= 5e-5
