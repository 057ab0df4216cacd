"""The analytic Gaussian / Gaussian DP: exact values against 50-digit mpmath."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger._solve import smallest_satisfying
from dpledger.accountant.gdp import gdp_delta, gdp_epsilon, gdp_log_delta, pure_dp_to_gdp
from dpledger.errors import InvalidArgumentError
from tests import _reference as ref

REL = 1e-8  # the bound for exact methods; actual agreement is ~1e-14


def test_reference_sigma_single_gaussian():
    """σ for (ε, δ) = (1, 1e-5), Δ = 1 is 3.730631635 (exact), solved two independent ways."""
    expected = ref.gaussian_sigma(1.0, 1e-5)
    assert float(expected) == pytest.approx(3.730631635, abs=5e-10)
    sigma = smallest_satisfying(lambda s: gdp_log_delta(1.0, 1.0 / s) - math.log(1e-5), 0.5, 50.0)
    assert sigma == pytest.approx(float(expected), rel=REL)
    assert acc.gaussian_delta(1.0, sigma=sigma) <= 1e-5


def test_reference_hundred_gaussians():
    """ε of 100 Gaussians σ = 5 at δ = 1e-5 is 9.997256146 (GDP / analytic, exact)."""
    expected = ref.gaussian_epsilon(1e-5, math.sqrt(100) / 5)
    assert float(expected) == pytest.approx(9.997256146, abs=5e-10)
    event = ev.Gaussian(sigma=5.0) * 100
    for method in ("gdp", "auto"):
        value = acc.epsilon(event, 1e-5, method=method)
        assert value == pytest.approx(float(expected), rel=REL)
        assert value >= float(expected)


@pytest.mark.parametrize("mu", [1e-4, 3e-3, 0.05, 0.3, 1.0, 2.5, 7.0, 20.0, 60.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.01, 0.5, 1.0, 3.0, 10.0, 50.0, 100.0, 300.0])
def test_log_delta_matches_mpmath(mu, epsilon):
    exact = ref.gaussian_delta(epsilon, mu)
    ours = gdp_log_delta(epsilon, mu)
    if exact < mpmath.mpf("1e-305"):
        # below float range: only require that we report something at least as small as
        # representable and not larger than the truth in log space
        assert ours <= float(mpmath.log(exact)) + 1e-9 * abs(float(mpmath.log(exact)))
        return
    exact_log = float(mpmath.log(exact))
    # an upper bound on log δ, at most 1e-12 above it (δ within 1e-12 relative)
    assert ours >= exact_log
    assert ours - exact_log <= 1e-12 * max(1.0, abs(exact_log))
    delta = gdp_delta(epsilon, mu)
    assert delta >= float(exact)
    assert delta == pytest.approx(float(exact), rel=1e-11)


@pytest.mark.parametrize("delta", [1e-300, 1e-200, 1e-100, 1e-30, 1e-12, 1e-5, 0.01, 0.3])
@pytest.mark.parametrize("mu", [0.02, 0.5, 1.0, 4.0, 12.0])
def test_epsilon_inverse_matches_mpmath(delta, mu):
    exact = ref.gaussian_epsilon(delta, mu)
    ours = gdp_epsilon(delta, mu)
    assert ours >= float(exact)  # never below the exact value
    assert ours == pytest.approx(float(exact), rel=REL, abs=1e-12)
    assert ref.gaussian_delta(ours, mu) <= mpmath.mpf(delta) * (1 + mpmath.mpf("1e-12"))


def _full_search(delta, mu):
    """The search a ledger ran before: Brent over the exact (mpmath) form, stepped up."""
    log_target = math.log(delta)
    hi = mu * mu / 2 - mu * float(special.ndtri_exp(log_target))
    hi = max(hi, 1e-12) * (1 + 1e-12) + 1e-12
    return smallest_satisfying(lambda eps: gdp_log_delta(eps, mu) - log_target, 0.0, hi)


def _root_80_digits(delta, mu, near):
    with mpmath.workdps(80):
        m, log_target = mpmath.mpf(mu), mpmath.log(mpmath.mpf(delta))

        def log_excess(eps):
            value = mpmath.ncdf(m / 2 - eps / m) - mpmath.exp(eps) * mpmath.ncdf(-m / 2 - eps / m)
            return mpmath.log(value) - log_target

        if log_excess(mpmath.mpf(0)) <= 0:
            return mpmath.mpf(0)
        return mpmath.findroot(log_excess, mpmath.mpf(near))


_SMALL_MU = [1e-12, 1e-10, 2.3e-10, 1e-8, 1e-6, 2.65e-5, 1e-4, 5e-4, 2e-3, 8.7e-3, 9.99e-3]
_DELTAS = [1e-300, 1e-100, 1e-30, 6.44e-11, 7.82e-6, 1e-6, 1e-4, 1e-3, 0.01, 0.3, 0.95]


@pytest.mark.parametrize("mu", _SMALL_MU)
def test_small_mu_root_is_certified_and_tight(mu, monkeypatch):
    """Below μ = 1e-2 the root is one Newton step on the exact form from the float root,
    safe by log-concavity (no evaluation at the point returned). For each δ: it holds as
    evaluated by gdp_log_delta; it is above the root computed at 80 digits; it is no
    looser than the full search's own margin allows (twice its distance to the root,
    + 4e-15); and it takes at most two exact evaluations (≤ 4 normal-cdf calls)."""
    from dpledger._mpcontext import context
    from dpledger.accountant import gdp as module

    with context(15) as mp:
        kind = type(mp)  # the class of the per-thread contexts the accountant uses
    calls = []
    original = kind.ncdf
    for delta in _DELTAS:
        full = _full_search(delta, mu)
        calls.clear()
        monkeypatch.setattr(
            kind, "ncdf", lambda self, *a, **k: calls.append(1) or original(self, *a, **k)
        )
        ours = gdp_epsilon(delta, mu)
        monkeypatch.setattr(kind, "ncdf", original)
        if mu >= module._POLISH_MU:
            assert len(calls) <= 4, (delta, len(calls))
        assert gdp_log_delta(ours, mu) <= math.log(delta)
        root = _root_80_digits(delta, mu, full)
        assert ours >= root
        slack = 2 * (mpmath.mpf(full) - root) + 4e-15 * root
        assert ours - root <= slack, (delta, ours, full, float(root))


@pytest.mark.slow
def test_small_mu_root_dense_grid():
    """The same on 60 × 60 (μ, δ) points, log-spaced over [1e-10, 1e-2) × [1e-300, 0.95]."""
    import numpy as np

    for mu in np.geomspace(1e-10, 9.99e-3, 60):
        for delta in np.geomspace(1e-300, 0.95, 60):
            mu, delta = float(mu), float(delta)
            ours = gdp_epsilon(delta, mu)
            assert gdp_log_delta(ours, mu) <= math.log(delta)
            full = _full_search(delta, mu)
            root = _root_80_digits(delta, mu, full)
            assert ours >= root
            assert ours - root <= 2 * (mpmath.mpf(full) - root) + 4e-15 * root, (mu, delta)


def test_large_epsilon_at_tiny_delta():
    """ε ≥ 100 at δ = 1e-300: the log-space evaluation stays exact."""
    mu = 6.0
    eps = gdp_epsilon(1e-300, mu)
    assert eps > 100
    assert eps == pytest.approx(float(ref.gaussian_epsilon(1e-300, mu)), rel=1e-10)


def test_delta_at_zero_and_extremes():
    assert gdp_delta(0.0, 1.0) == pytest.approx(float(ref.gaussian_delta(0.0, 1.0)), rel=1e-14)
    assert gdp_delta(math.inf, 1.0) == 0.0
    assert gdp_epsilon(0.0, 1.0) == math.inf
    assert gdp_epsilon(0.5, 0.0) == 0.0
    # a target δ larger than δ(0) needs no ε at all
    assert gdp_epsilon(0.9, 0.1) == 0.0


def test_sensitivity_scales_like_sigma():
    assert acc.gaussian_epsilon(1e-6, sigma=4.0, sensitivity=2.0) == pytest.approx(
        acc.gaussian_epsilon(1e-6, sigma=2.0), rel=1e-14
    )


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
def test_pure_dp_to_gdp_is_tight_at_symmetric_point(epsilon):
    """G_μ(α*) = α* at α* = 1/(1+e^ε): the conversion is the smallest valid μ."""
    mu = pure_dp_to_gdp(epsilon)
    with mpmath.workdps(40):
        alpha_star = 1 / (1 + mpmath.exp(epsilon))
        g = mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * alpha_star) - mu)
        assert g <= alpha_star * (1 + mpmath.mpf("1e-13"))
        # and slightly smaller μ would violate it
        g_smaller = mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * alpha_star) - mu * 0.999)
        assert g_smaller > alpha_star


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_pure_dp_gdp_profile_dominates_rr_profile(epsilon):
    """μ-GDP δ(ε′) must be ≥ the exact δ(ε′) of ε-randomized response at every ε′."""
    mu = pure_dp_to_gdp(epsilon)
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    for eps_prime in [0.0, 0.2 * epsilon, 0.5 * epsilon, 0.9 * epsilon]:
        rr_delta = p * (1 - math.exp(eps_prime - epsilon))
        assert gdp_delta(eps_prime, mu) >= rr_delta


@given(
    st.lists(
        st.tuples(st.floats(0.2, 50.0), st.floats(0.1, 5.0), st.integers(1, 200)),
        min_size=1,
        max_size=4,
    ),
    st.floats(1e-12, 0.1),
)
def test_composition_of_gaussians_is_one_gaussian(specs, delta):
    """Σ of Gaussians = one Gaussian with μ = √Σμᵢ² (DRS19 Cor. 3.3); compare to mpmath."""
    event = ev.Composed(tuple(ev.Gaussian(s, d) * k for s, d, k in specs))
    mu = math.sqrt(sum(k * (d / s) ** 2 for s, d, k in specs))
    ours = acc.epsilon(event, delta, method="gdp")
    exact = float(ref.gaussian_epsilon(delta, mu))
    assert ours >= exact * (1 - 1e-12)
    assert ours == pytest.approx(exact, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, 0.0])
def test_gaussian_epsilon_rejects_bad_sigma(bad):
    with pytest.raises(InvalidArgumentError, match="`sigma`"):
        acc.gaussian_epsilon(1e-5, sigma=bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, math.nan])
def test_gaussian_epsilon_rejects_bad_delta(bad):
    with pytest.raises(InvalidArgumentError, match="`delta`"):
        acc.gaussian_epsilon(bad, sigma=1.0)


@pytest.mark.parametrize("bad", [-0.1, math.nan])
def test_gaussian_delta_rejects_bad_epsilon(bad):
    with pytest.raises(InvalidArgumentError, match="`epsilon`"):
        acc.gaussian_delta(bad, sigma=1.0)
