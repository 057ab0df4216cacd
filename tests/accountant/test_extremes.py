"""Accounting at the extremes: ε at very small δ (PLD), unbounded Rényi orders, Gaussian SWOR.

References are independent: the analytic Gaussian in 50-digit mpmath (tests/_reference.py)
and the closed-form simple conversions (Bun & Steinke 2016, Prop. 1.3; Mironov 2017,
Prop. 3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant.rdp import rdp_curve, rdp_to_delta, rdp_to_epsilon
from dpledger.accountant.zcdp import zcdp_to_delta, zcdp_to_epsilon
from tests import _reference as ref

# --- item 2: ε(δ) from the PLD accountant at very small δ -------------------------------

SMALL_DELTAS = [1e-3, 1e-8, 1e-12, 1e-15, 1e-18, 1e-20]


@pytest.mark.parametrize(("sigma", "count"), [(1.0, 1), (5.0, 100), (2.0, 3)])
@pytest.mark.parametrize("delta", SMALL_DELTAS)
def test_pld_epsilon_at_small_delta_is_tight_and_safe(sigma, count, delta):
    """Never below the exact ε, within 1e-6 relative (was 9.22 vs 8.17 at δ = 1e-15 and
    ∞ at δ = 1e-20 for one Gaussian with σ = 1)."""
    exact = ref.gaussian_epsilon(delta, math.sqrt(count) / sigma)
    ours = acc.epsilon(ev.Gaussian(sigma) * count, delta, method="pld")
    assert ours >= exact
    assert ours <= exact * (1 + 1e-6)


@pytest.mark.parametrize(("sigma", "count"), [(1.0, 1), (5.0, 100)])
@pytest.mark.parametrize("delta", [1e-15, 1e-20])
def test_pld_epsilon_and_delta_agree_at_small_delta(sigma, count, delta):
    """delta(epsilon(δ)) ≤ δ: both queries follow the answer to the same window and tilt
    (delta once sized its window from the untilted value, 2 % high at δ = 1e-20)."""
    summary = acc.pld.PLDAccountant.summarize(ev.Gaussian(sigma) * count)
    eps = summary.epsilon(delta)
    assert summary.delta(eps) <= delta * (1 + 1e-9)
    assert float(ref.gaussian_delta(eps, math.sqrt(count) / sigma)) <= delta


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "count"), [(0.5, 1), (1.0, 10), (20.0, 1000), (0.2, 5)])
@pytest.mark.parametrize("delta", SMALL_DELTAS)
def test_pld_epsilon_at_small_delta_more_compositions(sigma, count, delta):
    exact = ref.gaussian_epsilon(delta, math.sqrt(count) / sigma)
    ours = acc.epsilon(ev.Gaussian(sigma) * count, delta, method="pld")
    assert exact <= ours <= exact * (1 + 1e-6)


def test_pld_epsilon_for_small_epsilon_is_safe_and_close():
    """Small ε (μ = 0.063): the default grid's discretisation limits the accuracy to a
    few 1e-6 relative (h² scaling: a finer grid is tighter); always on the safe side."""
    for delta in [1e-3, 1e-12, 1e-20]:
        exact = ref.gaussian_epsilon(delta, math.sqrt(10) / 50)
        ours = acc.epsilon(ev.Gaussian(50.0) * 10, delta, method="pld")
        assert exact <= ours <= exact * (1 + 5e-6)
        fine = acc.pld.PLDAccountant.summarize(ev.Gaussian(50.0) * 10, 3e-5).epsilon(delta)
        assert exact <= fine <= exact * (1 + 1e-6)


# --- item 3: no fixed cap on the Rényi order ---------------------------------------------


def _simple_zcdp(rho: float, delta: float) -> float:
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_zcdp_conversion_at_tiny_rho():
    """The order scan once stopped at 10⁵: 1.05e-4 where the optimum is 5.36e-6."""
    eps = zcdp_to_epsilon(1e-12, 1e-10)
    assert eps <= _simple_zcdp(1e-12, 1e-10)
    assert eps == pytest.approx(5.363325e-6, rel=1e-6)


@given(
    log_rho=st.floats(min_value=math.log(1e-14), max_value=math.log(1e3)),
    log_delta=st.floats(min_value=math.log(1e-20), max_value=math.log(0.1)),
)
def test_zcdp_conversion_never_looser_than_simple(log_rho, log_delta):
    rho, delta = math.exp(log_rho), math.exp(log_delta)
    assert zcdp_to_epsilon(rho, delta) <= _simple_zcdp(rho, delta) * (1 + 1e-15)


@pytest.mark.parametrize("rho", [1e-14, 1e-10, 1e-6, 1e-2, 1.0, 1e3])
@pytest.mark.parametrize("delta", [1e-20, 1e-10, 1e-3, 0.1])
def test_zcdp_conversion_grid(rho, delta):
    assert zcdp_to_epsilon(rho, delta) <= _simple_zcdp(rho, delta)
    # δ at that ε is at most the target (the inverse conversion searches the same way)
    eps = zcdp_to_epsilon(rho, delta)
    assert zcdp_to_delta(rho, eps) <= delta * (1 + 1e-9)


def _simple_rdp(curve, delta: float, top: float = 12.0) -> float:
    """Mironov 2017, Prop. 3: min over a dense order grid of R(α) + log(1/δ)/(α − 1)."""
    orders = 1 + np.logspace(-6, top, 2000)
    return min(curve(float(a)) + math.log(1 / delta) / (a - 1) for a in orders)


@pytest.mark.parametrize(
    "event",
    [
        ev.Gaussian(1e6),
        ev.Gaussian(3e4) * 10,
        ev.Gaussian(1.0) * 100,
        ev.Laplace(1e5),
    ],
    ids=["gauss-tiny", "gauss-small", "gauss", "laplace-tiny"],
)
@pytest.mark.parametrize("delta", [1e-20, 1e-10, 1e-3])
def test_rdp_conversion_never_looser_than_simple(event, delta):
    curve = rdp_curve(event)
    assert rdp_to_epsilon(curve, delta) <= _simple_rdp(curve, delta) * (1 + 1e-12)


def test_rdp_conversion_of_subsampled_gaussian_never_looser_than_simple():
    # the subsampled curve costs O(α) per integer order: a grid up to 10⁴ (its optimum
    # is far below)
    curve = rdp_curve(ev.PoissonSampled(ev.Gaussian(50.0), 1e-4) * 10)
    for delta in [1e-20, 1e-3]:
        assert rdp_to_epsilon(curve, delta) <= _simple_rdp(curve, delta, 4.0) * (1 + 1e-12)


def test_rdp_delta_at_tiny_epsilon_uses_large_orders():
    """δ(ε) for ρ = 1e-12 at ε = 1e-5: the best order is ~10⁷, beyond the old scan."""
    rho, eps = 1e-12, 1e-5
    ours = rdp_to_delta(lambda a: rho * a, eps)
    # simple conversion (Mironov 2017, Prop. 3) at its best order α − 1 = ε/(2ρ) − 1/2
    a = 0.5 + eps / (2 * rho)
    simple = math.exp((a - 1) * (rho * a - eps))
    assert ours <= simple


# --- item 1: Gaussian under sampling without replacement (WBK 2019, Thm 27) -------------


def test_swor_gaussian_known_value_at_order_50():
    """50 releases of a Gaussian (σ = 2.5) on 10 of 1,000 records, α = 50: the general
    bound (WBK Thm 9) gave 0.154; the Gaussian-specific Thm 27 gives 0.0985."""
    event = ev.SampledWithoutReplacement(ev.Gaussian(2.5), 10, 1000) * 50
    value = rdp_curve(event)(50.0)
    assert value == pytest.approx(0.0984741502970, rel=1e-9)
    assert value < 0.1


def test_swor_gaussian_never_above_the_general_bound():
    from dpledger.accountant.rdp import _wbk_gaussian_integer, _wbk_integer

    for sigma in [0.7, 2.5, 10.0]:
        mu2 = 1 / sigma**2
        for gamma in [0.001, 0.1, 0.5]:
            for alpha in [2, 3, 4, 7, 50, 300]:
                general = _wbk_integer(alpha, gamma, lambda a, m=mu2: a * m / 2, math.inf)
                assert _wbk_gaussian_integer(alpha, gamma, mu2) <= general * (1 + 1e-12)


def test_pearson_vajda_moments_against_mpmath():
    """The moments E_Q[(P/Q − 1)^k] against a 600-digit sum (independent of the code's
    precision choice): upper bounds, tight to 1e-12."""
    import mpmath

    from dpledger.accountant.rdp import _gaussian_pearson_vajda

    for sigma in [0.8, 2.5, 10.0, 100.0]:
        mu2 = 1 / sigma**2
        logs = _gaussian_pearson_vajda(mu2)
        assert logs
        with mpmath.workdps(600):
            m = mpmath.mpf(mu2)
            for index in [0, 1, len(logs) // 2, len(logs) - 1]:
                k = 2 * (index + 1)
                exact = mpmath.fsum(
                    math.comb(k, i) * (-1) ** (k - i) * mpmath.exp(m * i * (i - 1) / 2)
                    for i in range(k + 1)
                )
                assert mpmath.mpf(logs[index]) >= mpmath.log(exact)
                assert logs[index] <= float(mpmath.log(exact)) + 1e-12 * max(1, abs(logs[index]))


def test_swor_gaussian_curve_is_used_for_compositions_of_gaussians():
    single = rdp_curve(ev.SampledWithoutReplacement(ev.Gaussian(2.0), 10, 100))
    # two Gaussians of σ = 2√2 compose to one of σ = 2
    pair = ev.Composed((ev.Gaussian(2.0 * math.sqrt(2)), ev.Gaussian(2.0 * math.sqrt(2))))
    composed = rdp_curve(ev.SampledWithoutReplacement(pair, 10, 100))
    for alpha in [2.0, 3.5, 20.0]:
        assert composed(alpha) == pytest.approx(single(alpha), rel=1e-9)


@pytest.mark.parametrize("sigma", [0.8, 1.1, 2.5, 10.0, 30.0])
@pytest.mark.parametrize(("sample_size", "population"), [(1, 100), (1, 10), (5, 10), (99, 100)])
def test_swor_gaussian_not_above_dp_accounting(sigma, sample_size, population):
    """At every order of dp_accounting's default grid, never above its Thm 27 value (up to
    our safety margins, ~1e-11 relative); often far below where its float64 forward
    differences cancel (σ ≥ 10)."""
    rdp_module = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    orders = rdp_module.DEFAULT_RDP_ORDERS
    theirs = rdp_module._compute_rdp_sample_wor_gaussian(sample_size / population, sigma, orders)
    curve = rdp_curve(ev.SampledWithoutReplacement(ev.Gaussian(sigma), sample_size, population))
    for alpha, their in zip(orders, theirs, strict=True):
        assert curve(float(alpha)) <= their * (1 + 1e-9)


# --- the revert of the first merge: delta(epsilon(δ)) > δ for one Laplace release -------


def _laplace_hockey_stick(epsilon, scale):
    """δ(ε) of Laplace(scale) with sensitivity 1, by mpmath quadrature of the definition
    E_Q[(P/Q − e^ε)₊] with P = Lap(1, b), Q = Lap(0, b) (independent of the closed form)."""
    import mpmath

    with mpmath.workdps(40):
        b, e = mpmath.mpf(scale), mpmath.mpf(epsilon)

        def integrand(x):
            p = mpmath.exp(-abs(x - 1) / b) / (2 * b)
            q = mpmath.exp(-abs(x) / b) / (2 * b)
            return max(p - mpmath.exp(e) * q, 0)

        # P/Q is e^{1/b} above 1, e^{(2x−1)/b} on [0, 1], e^{−1/b} below 0; the integrand's
        # kink where P/Q = e^ε, x = (bε + 1)/2, is a breakpoint too (without it, quadrature
        # erred by 2e-15 — more than an exact answer's distance from the target)
        kink = (b * e + 1) / 2
        points = sorted(
            {mpmath.mpf(0), mpmath.mpf(0.5), mpmath.mpf(1)} | ({kink} if 0 < kink < 1 else set())
        )
        return mpmath.quad(integrand, [*points, mpmath.inf])


@pytest.mark.parametrize("scale", [1.0, 0.5, 3.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-7, 1e-10])
def test_laplace_epsilon_is_safe_and_consistent_with_delta(scale, delta):
    """The failure behind the revert of the first merge (hypothesis, Laplace(1), δ = 1e-5):
    delta(epsilon(δ)) came out 1.0000000766e-5. Against the exact curve, ε(δ) =
    ε₀ + 2 log(1 − δ) for ε₀ = 1/b (from δ(ε) = 1 − e^{(ε − ε₀)/2} on [0, ε₀]), it was
    ε = 0.99998000030 ≥ the exact 0.99997999990 — safe; delta(ε) was the loose side (the
    exact δ there is 9.9998e-6). Both must be upper bounds, and consistent."""
    import mpmath

    eps0 = 1 / scale
    exact_eps = float(eps0 + 2 * mpmath.log1p(-mpmath.mpf(delta)))
    event = ev.Laplace(scale)
    ours = acc.epsilon(event, delta, method="pld")
    assert ours >= exact_eps
    assert ours <= exact_eps + acc.pld.DEFAULT_GRID  # ε₀ off the grid: within a step
    # the exact δ at our ε, by quadrature of the definition, is below the target ...
    assert _laplace_hockey_stick(ours, scale) <= delta
    # ... our δ(ε) bounds it from above, and is consistent with ε(δ)
    back = acc.delta(event, ours, method="pld")
    assert back >= _laplace_hockey_stick(ours, scale)
    assert back <= delta * (1 + 1e-9)


def _wbk27_mpmath(alpha: int, gamma: float, sigma: float):
    """WBK 2019 Thm 27 (each term the smaller of the Pearson–Vajda and the Thm 9 term), in
    120-digit mpmath straight from the formula: m_k = Σᵢ C(k,i)(−1)^{k−i} e^{i(i−1)/(2σ²)}."""
    import mpmath

    with mpmath.workdps(400):
        mu2 = 1 / mpmath.mpf(sigma) ** 2
        g = mpmath.mpf(gamma)

        def m(k):
            return mpmath.fsum(
                math.comb(k, i) * (-1) ** (k - i) * mpmath.exp(mu2 * i * (i - 1) / 2)
                for i in range(k + 1)
            )

        total = 1 + g**2 * math.comb(alpha, 2) * min(4 * mpmath.expm1(mu2), 2 * mpmath.exp(mu2))
        for j in range(3, alpha + 1):
            pv = 4 * mpmath.sqrt(m(2 * (j // 2)) * m(2 * ((j + 1) // 2)))
            total += g**j * math.comb(alpha, j) * min(pv, 2 * mpmath.exp((j - 1) * j * mu2 / 2))
        # the curve is also at most the unsampled Gaussian's αμ²/2 (quasi-convexity)
        return min(mpmath.log(total) / (alpha - 1), alpha * mu2 / 2)


@pytest.mark.parametrize("sigma", [0.8, 2.5, 10.0])
@pytest.mark.parametrize(("sample_size", "population"), [(1, 100), (10, 1000), (5, 10)])
@pytest.mark.parametrize("alpha", [2, 3, 8, 33, 64])
def test_swor_gaussian_against_thm27_in_mpmath(sigma, sample_size, population, alpha):
    """Thm 27 recomputed in mpmath from the paper's formula: ours is above it (the safe
    side) and within 1e-9 of it."""
    curve = rdp_curve(ev.SampledWithoutReplacement(ev.Gaussian(sigma), sample_size, population))
    reference = _wbk27_mpmath(alpha, sample_size / population, sigma)
    ours = curve(float(alpha))
    assert ours >= reference
    assert ours <= float(reference) * (1 + 1e-9) + 1e-300
