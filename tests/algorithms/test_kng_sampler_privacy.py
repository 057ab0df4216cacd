"""The KNG and exponential-mechanism samplers: nothing a fit does escapes ε.

Finding 1: the rejection samplers stopped after a *fixed* number of proposals, so the
failure (SamplingError after the charge) had probability (1 − a_D)^N, whose ratio between
neighbours is unbounded (reproducer: ε = 2, Θ radius 0.01, 100 rows x = 1, y = −0.0504
against the same plus (1, −1): 3.3e-4 against 4.9e-2). Now the budget is Geometric with a
public mean and the failure is part of an ε-bounded-range release
(:func:`dpledger.mechanisms.regression.sampler_epsilon`). Here the whole output law —
every θ and the failure — is computed exactly (mpmath) on the reproducers' pairs and its
log-ratio range checked against ε; the implementation's failure rate is checked against
that law.

Finding 2: the MCMC work cap read n, private under add/remove.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import dpledger as dpl
from dpledger.algorithms import _quantile_mcmc, kng
from dpledger.algorithms.kng import (
    ExponentialLinearRegression,
    ExponentialQuantileRegression,
    KNGLinearRegression,
    KNGQuantileRegression,
    SamplingError,
)
from dpledger.audit import estimate_epsilon
from dpledger.mechanisms.regression import LinearRelease

mp.mp.dps = 40
EPS, R = 2.0, 0.01

#: (y of the 100 rows, max_proposals): the issue's two reproducers
REPRODUCERS = [(-0.0504, 1000), (-0.1202, 10**6)]


def _pair(y_value):
    """The reproducer's neighbours as (A = Σx² + ridge, b = Σxy) before the ridge."""
    return (100.0, 100 * y_value), (101.0, 100 * y_value - 1.0)


def _output_law(kind, gram, moment, adjacency, max_proposals):
    """(density of θ on [−r, r], P(failure)) of the release, exactly, from the sampler's
    construction: an accepted proposal has sub-density ρ(θ); s = 1/(1 + max_proposals)."""
    b = 1.0  # x_bound, no intercept
    ridge = kng.auto_ridge(kind, EPS, b)
    eps_d = mp.mpf(kng.sampler_epsilon(kind, EPS, b, ridge, adjacency))
    A, m = mp.mpf(gram) + mp.mpf(ridge), mp.mpf(moment)
    if kind == "kng":
        delta = mp.mpf(kng.squared_gradient_sensitivity(b, 1.0, R, adjacency))
        beta = eps_d / delta

        def rho(t):  # z = Aθ − b ~ Laplace(1/β): θ's density is A·(β/2)e^{−β|z|}
            return A * beta / 2 * mp.exp(-beta * abs(A * t - m))

        def laplace_cdf(z):
            return mp.exp(beta * z) / 2 if z < 0 else 1 - mp.exp(-beta * z) / 2

        mass = laplace_cdf(A * R - m) - laplace_cdf(-A * R - m)
    else:
        delta = mp.mpf(kng.squared_loss_range(b, 1.0, R))
        centre = min(max(m / A, -R), R)  # the constrained minimiser of Aθ² − 2bθ

        def loss(t):
            return A * t * t - 2 * m * t

        const = mp.sqrt(eps_d * A / (2 * mp.pi * delta)) * mp.exp(
            eps_d * loss(centre) / (2 * delta)
        )

        def rho(t):
            return const * mp.exp(-eps_d * loss(t) / (2 * delta))

        mass = mp.quad(rho, [-R, centre, R])
    s = 1 / (1 + mp.mpf(max_proposals))
    scale = (1 - s) / (s + mass * (1 - s))
    return (lambda t: scale * rho(t)), s / (s + mass * (1 - s))


@pytest.mark.parametrize("kind", ["kng", "exponential"])
@pytest.mark.parametrize(("y_value", "max_proposals"), REPRODUCERS)
def test_the_whole_output_law_is_epsilon_bounded_range_on_the_reproducers(
    kind, y_value, max_proposals
):
    """Log-ratios of every output (θ on a grid of Θ, and the failure) span at most ε."""
    (g1, b1), (g2, b2) = _pair(y_value)
    density1, fail1 = _output_law(kind, g1, b1, "add_remove", max_proposals)
    density2, fail2 = _output_law(kind, g2, b2, "add_remove", max_proposals)
    grid = [mp.mpf(R) * (2 * i / 400 - 1) for i in range(401)]
    ratios = [mp.log(density1(t) / density2(t)) for t in grid] + [mp.log(fail1 / fail2)]
    assert max(ratios) - min(ratios) <= EPS * (1 + 1e-12)
    assert abs(mp.log(fail1 / fail2)) <= EPS


def test_a_fixed_cap_broke_the_charge_on_the_reproducer():
    """The old design's failure law, (1 − a)^N with the old ridge 1 and the full ε in the
    density: the failure alone had ε ≈ 5 against the 2 charged (the issue's figures)."""
    (g1, b1), (g2, b2) = _pair(-0.0504)
    fails = []
    beta = EPS / mp.mpf(kng.squared_gradient_sensitivity(1.0, 1.0, R, "add_remove"))

    def cdf(z):
        return mp.exp(beta * z) / 2 if z < 0 else 1 - mp.exp(-beta * z) / 2

    for gram, moment in ((g1, b1), (g2, b2)):
        A, m = mp.mpf(gram + 1.0), mp.mpf(moment)
        fails.append((1 - (cdf(A * R - m) - cdf(-A * R - m))) ** 1000)
    assert float(fails[0]) == pytest.approx(3.26e-4, rel=0.01)
    assert float(fails[1]) == pytest.approx(4.91e-2, rel=0.01)
    assert mp.log(fails[1] / fails[0]) > 4.9


def _mechanism(kind, adjacency="add_remove", max_proposals=1000):
    b, ridge = 1.0, kng.auto_ridge(kind, EPS, 1.0)
    sensitivity = (
        kng.squared_gradient_sensitivity(b, 1.0, R, adjacency)
        if kind == "kng"
        else kng.squared_loss_range(b, 1.0, R)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LinearRelease(
            kind, EPS, sensitivity, theta_bound=R, ridge=ridge, dimension=1,
            max_proposals=max_proposals, row_bound=b, adjacency=adjacency,
        )  # fmt: skip


@pytest.mark.parametrize("kind", ["kng", pytest.param("exponential", marks=pytest.mark.slow)])
def test_the_samplers_fail_as_often_as_their_exact_law_says(kind):
    """The implementation against the exact failure probability (3000 runs per side, a
    two-sided binomial test), and every θ it returns lies in Θ."""
    mechanism = _mechanism(kind)
    rng = np.random.default_rng(31)
    for gram, moment in _pair(-0.0504):
        _, fail = _output_law(kind, gram, moment, "add_remove", 1000)
        failures, runs = 0, 3000
        for _ in range(runs):
            try:
                theta = mechanism.release((np.array([[gram]]), np.array([moment])), rng)
                assert abs(theta[0]) <= R
            except SamplingError:
                failures += 1
        assert stats.binomtest(failures, runs, float(fail)).pvalue > 1e-4


@pytest.mark.parametrize("kind", ["kng", "exponential"])
def test_the_exponential_and_kng_samplers_match_their_density_on_theta(kind):
    """The released θ follow the truncated density (KS test against the exact CDF)."""
    mechanism = _mechanism(kind, max_proposals=10**6)
    (gram, moment), _ = _pair(-0.0504)
    density, _ = _output_law(kind, gram, moment, "add_remove", 10**6)
    rng = np.random.default_rng(5)
    draws = []
    while len(draws) < 1500:  # a (rare) failure is an output of its own: the law of θ given
        with contextlib.suppress(SamplingError):  # success is the truncated density
            draws.append(mechanism.release((np.array([[gram]]), np.array([moment])), rng)[0])
    draws = np.array(draws)
    total = mp.quad(density, [-R, R])
    grid = np.linspace(-R, R, 201)
    cdf_grid = np.array([float(mp.quad(density, [-R, t]) / total) for t in grid])
    assert stats.kstest(draws, lambda v: np.interp(v, grid, cdf_grid)).pvalue > 1e-3


def test_replace_one_exponential_mechanism_pays_half_log_j_in_its_density():
    b, eps = math.sqrt(2.0), 1.0
    ridge = kng.auto_ridge("exponential", eps, b)
    assert kng.sampler_epsilon("exponential", eps, b, ridge, "add_remove") == eps
    inner = kng.sampler_epsilon("exponential", eps, b, ridge, "replace_one")
    assert eps * 0.95 <= inner < eps * 0.9501
    assert kng.sampler_epsilon("kng", eps, b, kng.auto_ridge("kng", eps, b), "replace_one") == eps


@pytest.mark.parametrize("cls", [KNGLinearRegression, ExponentialLinearRegression])
def test_a_ridge_too_small_for_epsilon_is_refused_before_the_charge(cls):
    X, y = np.ones((10, 1)), np.zeros(10)
    ledger = dpl.Ledger(1.0, 0.0)
    model = cls(
        epsilon=0.1, x_bound=1.0, y_bound=1.0, theta_bound=1.0, adjacency="add_remove",
        ridge=1e-3, ledger=ledger, rng=0,
    )  # fmt: skip
    with pytest.raises(dpl.InvalidArgumentError, match=r"`ridge` = 0\.001 is too small"):
        model.fit(X, y)
    assert ledger.receipts == ()


def test_an_explicit_ridge_lowers_the_density_epsilon_not_the_charge():
    X, y = np.ones((50, 1)), np.full(50, 0.3)
    model = KNGLinearRegression(
        epsilon=2.0, x_bound=1.0, y_bound=1.0, theta_bound=1.0, adjacency="add_remove",
        fit_intercept=False, ridge=0.5, rng=0,
    ).fit(X, y)  # fmt: skip
    log_j = math.log1p(1.0 / 0.5)
    assert model.releases_ == [dpl.events.BoundedRange(2.0)]
    assert model.sampler_epsilon_ == pytest.approx(2 * (2.0 - log_j), rel=1e-12)
    assert model.sampler_epsilon_ < 2 * (2.0 - log_j)


def test_the_audit_finds_the_fixed_caps_failure_leak():
    """estimate_epsilon with `exceptions` treats a failure as an output: on the old,
    fixed-cap KNG sampler it certifies ε > 2, the charge (issue 31, sweep)."""
    beta = EPS / kng.squared_gradient_sensitivity(1.0, 1.0, R, "add_remove")

    def fixed_cap(data, rng):
        A, m = data
        theta = (m + rng.laplace(scale=1 / beta, size=1000)) / A
        inside = np.flatnonzero(np.abs(theta) <= R)
        if not inside.size:
            raise SamplingError("no proposal in Θ")
        return theta[inside[0]]

    (g1, b1), (g2, b2) = _pair(-0.0504)
    est = estimate_epsilon(
        fixed_cap, (g1 + 1.0, b1), (g2 + 1.0, b2), samples=20_000,
        rng=np.random.default_rng(3), exceptions=SamplingError,
    )  # fmt: skip
    assert est.epsilon > EPS
    assert "output[0]" in est.event


def test_the_audit_refuses_a_bad_exceptions_argument():
    with pytest.raises(dpl.InvalidArgumentError, match="`exceptions`"):
        estimate_epsilon(lambda d, r: 0.0, 0, 1, samples=20, exceptions="SamplingError")


@pytest.mark.slow
@pytest.mark.parametrize("cls", [KNGLinearRegression, ExponentialLinearRegression])
def test_fits_on_the_reproducer_keep_the_failure_within_the_charge(cls):
    """10⁴ fits per side through the estimator; 95 % Clopper–Pearson bounds on the two
    failure probabilities; their ratio's bound both ways is within e^ε."""
    X = np.ones((100, 1))
    y = np.full(100, -0.0504)
    pairs = [(X, y), (np.vstack([X, [[1.0]]]), np.append(y, -1.0))]
    counts = []
    runs = 10_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for XX, yy in pairs:
            failures = 0
            for seed in range(runs):
                model = cls(
                    epsilon=EPS, x_bound=1.0, y_bound=1.0, theta_bound=R, fit_intercept=False,
                    adjacency="add_remove", max_proposals=1000, rng=seed,
                )  # fmt: skip
                try:
                    model.fit(XX, yy)
                except SamplingError:
                    failures += 1
            counts.append(failures)
    (lo1, hi1), (lo2, hi2) = (
        stats.binomtest(k, runs).proportion_ci(0.95, method="exact") for k in counts
    )
    assert hi1 / lo2 <= math.exp(EPS) and hi2 / lo1 <= math.exp(EPS)


@pytest.mark.parametrize("cls", [KNGQuantileRegression, ExponentialQuantileRegression])
def test_the_mcmc_work_cap_never_reads_n_under_add_remove(cls, monkeypatch):
    """n = 250,000 released and 250,001 was refused (chains × steps × n × d against 10¹²):
    a refusal of infinite privacy loss. The cap now counts only public quantities; the
    chains are replaced by a stub here (the control flow, not the sampler, is tested)."""
    calls = []

    def stub(log_density, *, dimension, radius, rng, chains, burn_in, samples):
        calls.append(dimension)
        return np.zeros(dimension), None, None

    monkeypatch.setattr(_quantile_mcmc, "metropolis", stub)
    outcomes = []
    for n in (250_000, 250_001):
        X, y = np.full((n, 1), 0.5), np.zeros(n)
        ledger = dpl.Ledger(1.0, 0.0)
        model = cls(
            epsilon=1.0, x_bound=1.0, y_bound=1.0, theta_bound=1.0, adjacency="add_remove",
            chains=4, burn_in=250_000, samples=250_000, ledger=ledger, rng=0,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        outcomes.append([r.event for r in ledger.receipts])
    assert outcomes[0] == outcomes[1] == [dpl.events.BoundedRange(1.0)]
    assert calls == [2, 2]


# -- review (helper-3): the samplers at the edges of the declared float range ------------


def _fits(cls, X, y, runs, **kw):
    """(failures, released θ in units of r) over `runs` seeded fits."""
    failures, units = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(runs):
            model = cls(adjacency="add_remove", fit_intercept=False, rng=seed, **kw)
            try:
                model.fit(X, y)
            except SamplingError:
                failures += 1
                continue
            units.append(float(np.linalg.norm(model.theta_ / kw["theta_bound"])))
    return failures, units


@pytest.mark.slow
def test_the_exponential_tilt_never_overflows_at_a_tiny_theta():
    """r = 1e-160: ελ/Δ overflowed to inf and the neighbour with one more row rejected
    every proposal (P(fail) 1 against 0.44: an infinite loss). The coin is now taken in
    units of r; both sides fail about as often as their exact laws say (0.436, 0.425)."""
    kw = dict(epsilon=1.0, x_bound=1.0, y_bound=2e-154, theta_bound=1e-160)
    first = _fits(ExponentialLinearRegression, np.ones((1, 1)), np.zeros(1), 200, **kw)
    second = _fits(ExponentialLinearRegression, np.ones((2, 1)), np.array([0.0, 2e-154]), 200, **kw)
    for failures, units in (first, second):
        assert 50 < failures < 130
        assert max(units) <= 1.0


def test_kng_never_releases_theta_outside_a_tiny_theta():
    """θ ≈ 1e-200 against r = 1e-210: ‖θ‖₂ underflowed to 0 and passed the test."""
    X, y = np.ones((20, 1)), np.full(20, 1e-200)
    kw = dict(epsilon=1.0, x_bound=1.0, y_bound=1e-200, theta_bound=1e-210)
    _, units = _fits(KNGLinearRegression, X, y, 20, **kw)
    assert all(u <= 1.0 for u in units)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        # 2⁵³·b·C/r beyond 2¹⁰⁰⁰: λ overflowed for some data sets (certain failure on D′)
        (dict(epsilon=1.0, x_bound=1e18, y_bound=1e20, theta_bound=2.0**-900), "too far apart"),
        # auto ridge = b²/(e^{ε/2} − 1) = inf: charged, then raised inside the release
        (
            dict(epsilon=1e-200, x_bound=2.0**200, y_bound=2.0**-900, theta_bound=2.0**-900),
            "ridge|sensitivity",  # the exponential mechanism's Δ_ℓ underflows first
        ),
        # (C + br)² overflowed with a raw OverflowError
        (dict(epsilon=1.0, x_bound=1e100, y_bound=1.0, theta_bound=1e100), "sensitivity"),
    ],
)
@pytest.mark.parametrize("cls", [KNGLinearRegression, ExponentialLinearRegression])
def test_bounds_the_sampler_cannot_hold_are_refused_before_the_charge(cls, kw, match):
    if match == "sensitivity" and cls is KNGLinearRegression:
        kw = {**kw, "x_bound": 1e200}  # KNG's Δ = 2b(br + C) is finite at 1e100
    ledger = dpl.Ledger(1e300, 0.0)
    model = cls(adjacency="add_remove", fit_intercept=False, ledger=ledger, rng=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(dpl.InvalidArgumentError, match=match):
            model.fit(np.ones((3, 1)), np.zeros(3))
    assert ledger.receipts == ()


@pytest.mark.parametrize("cls", [KNGLinearRegression, ExponentialLinearRegression])
def test_a_huge_epsilon_takes_the_ridge_floor_without_overflow(cls):
    """math.expm1(ε/2) raised OverflowError beyond ε ≈ 1420 with ridge='auto'."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cls(
            epsilon=1e4, x_bound=1.0, y_bound=1.0, theta_bound=1.0, adjacency="add_remove",
            fit_intercept=False, rng=0,
        ).fit(np.ones((5, 1)), np.full(5, 0.5))  # fmt: skip
    assert model.ridge_ == pytest.approx(2.0**-60)
    assert model.sampler_epsilon_ == 1e4
