"""Mechanisms: events, validation, safe releases; distribution tests (slow) for samplers."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger import mechanisms as mech
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms._exact import bernoulli_exp, discrete_gaussian, discrete_laplace

RNG = np.random.default_rng(20261122)


# -- events and contract -----------------------------------------------------------------


def test_safe_laplace_event_is_the_grid_event():
    m = mech.Laplace(scale=2.0, sensitivity=1.0)
    assert isinstance(m.event, ev.DiscreteLaplace)
    assert m.event.epsilon == 0.5  # Δ/γ is an integer here: no inflation
    vec = mech.Laplace(scale=2.0, sensitivity=1.0, dimension=10)
    assert vec.event.epsilon == pytest.approx(0.5 + 9 * vec.granularity / 2.0, rel=1e-12)
    assert vec.event.epsilon >= 0.5


def test_safe_gaussian_event_accounts_for_grid():
    m = mech.Gaussian(sigma=3.0, sensitivity=1.0, dimension=4)
    assert isinstance(m.event, ev.DiscreteGaussian)
    expected = (1.0 / m.granularity + 2.0) / (3.0 / m.granularity)  # (Δ/γ + √4)/(σ/γ)
    assert m.event.mu == pytest.approx(expected, rel=1e-12)
    assert m.event.mu >= 1.0 / 3.0


def test_unsafe_paths_warn_and_use_continuous_events():
    with pytest.warns(mech.FloatingPointWarning, match="Mironov"):
        m = mech.Laplace(scale=1.0, safe=False)
    assert m.event == ev.Laplace(1.0, 1.0)
    with pytest.warns(mech.FloatingPointWarning):
        g = mech.Gaussian(sigma=2.0, safe=False)
    assert g.event == ev.Gaussian(2.0, 1.0)


def test_selection_and_knorm_events():
    assert mech.RandomizedResponse(1.0, 3).event == ev.RandomizedResponse(1.0, 3)
    assert mech.Exponential(0.5).event == ev.PureDP(0.5)
    assert mech.PermuteAndFlip(0.5).event == ev.PureDP(0.5)
    assert mech.ReportNoisyMax(0.5, noise="gumbel").event == ev.PureDP(0.5)
    assert mech.KNorm(0.7, norm="l1", dimension=3).event == ev.PureDP(0.7)


def test_wishart_event_is_not_pure():
    """(0, 1 − e^{−ε}): δ rounded up from the 40-digit value, and no ε part (the loss on
    the common support is a constant: the next test)."""
    w = mech.Wishart(epsilon=0.5, trace_sensitivity=0.01, dimension=3)
    assert w.event.epsilon == 0.0
    exact = -mpmath.expm1(-mpmath.mpf(0.5))
    assert mpmath.mpf(w.event.delta) >= exact
    assert w.event.delta == pytest.approx(float(exact), rel=1e-15)
    assert w.scale == pytest.approx(0.01, rel=1e-14)


def test_wishart_loss_is_constant_on_the_common_support():
    """The density ratio of B + W against B′ + W (B′ = B + uuᵀ, ‖u‖² = Δ_tr) at outputs in
    both supports, by scipy's Wishart log-density (independent of the mechanism): exactly
    ε everywhere — so the only privacy cost is the support mismatch, (0, 1 − e^{−ε})-DP."""
    d, epsilon, delta_tr = 3, 0.7, 2.0
    w = mech.Wishart(epsilon, delta_tr, dimension=d)
    u = np.array([1.0, -0.5, 0.2])
    u *= math.sqrt(delta_tr) / np.linalg.norm(u)
    B = np.diag([0.5, 1.0, 2.0])
    B2 = B + np.outer(u, u)
    law = stats.wishart(df=d + 1, scale=w.scale * np.eye(d))
    rng = np.random.default_rng(8)
    losses = []
    while len(losses) < 300:
        out = w.release(B, rng)
        if np.linalg.eigvalsh(out - B2).min() > 1e-9:  # inside the neighbour's support
            losses.append(law.logpdf(out - B2) - law.logpdf(out - B))
    np.testing.assert_allclose(losses, epsilon, rtol=1e-9)


def test_wishart_support_failure_probability_by_simulation():
    """P[B + W − B′ ⋡ 0] for a worst-case rank-one neighbour ≈ 1 − e^{−ε} (SEED-NOTES)."""
    d, epsilon, delta_tr = 3, 0.4, 1.0
    w = mech.Wishart(epsilon, delta_tr, dimension=d)
    u = np.zeros(d)
    u[0] = math.sqrt(delta_tr)
    rng = np.random.default_rng(5)
    trials = 4000
    fails = 0
    for _ in range(trials):
        noisy = w.release(np.zeros((d, d)), rng)  # B = 0, B′ = uuᵀ
        if np.linalg.eigvalsh(noisy - np.outer(u, u)).min() < 0:
            fails += 1
    expected = 1 - math.exp(-epsilon)
    assert abs(fails / trials - expected) < 4 * math.sqrt(expected * (1 - expected) / trials)


def test_releases_have_right_shape_and_grid():
    m = mech.Gaussian(sigma=1.0, dimension=3)
    out = m.release([1.0, 2.0, 3.0], RNG)
    assert out.shape == (3,)
    steps = out / m.granularity
    assert np.all(steps == np.round(steps))  # exactly on the grid
    scalar = mech.Laplace(scale=1.0).release(5.0, RNG)
    assert isinstance(scalar, float)
    sym = mech.SymmetricGaussian(1.0, dimension=3).release(np.eye(3), RNG)
    assert np.array_equal(sym, sym.T)
    ints = mech.DiscreteGaussian(2.0, dimension=2).release([3, 4], RNG)
    assert ints.dtype.kind == "i"


def test_default_rng_is_fresh_each_time():
    m = mech.Gaussian(sigma=1.0, dimension=8)
    a, b = m.release(np.zeros(8)), m.release(np.zeros(8))
    assert not np.array_equal(a, b)


def test_seeded_rng_reproducible():
    m = mech.Laplace(scale=1.0, dimension=5)
    a = m.release(np.zeros(5), np.random.default_rng(3))
    b = m.release(np.zeros(5), np.random.default_rng(3))
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda v: mech.Laplace(scale=v), "scale"),
        (lambda v: mech.Gaussian(sigma=v), "sigma"),
        (lambda v: mech.Gaussian(sigma=1.0, sensitivity=v), "sensitivity"),
        (lambda v: mech.DiscreteLaplace(scale=v), "scale"),
        (lambda v: mech.DiscreteGaussian(sigma=v), "sigma"),
        (lambda v: mech.Exponential(epsilon=v), "epsilon"),
        (lambda v: mech.KNorm(epsilon=v), "epsilon"),
        (lambda v: mech.Wishart(epsilon=v, trace_sensitivity=1.0, dimension=2), "epsilon"),
        (lambda v: mech.Laplace(scale=1.0, granularity=v), "granularity"),
    ],
)
@pytest.mark.parametrize("bad", [-1.0, 0.0, math.nan, math.inf])
def test_constructors_reject_bad_values(factory, name, bad):
    with pytest.raises(InvalidArgumentError) as excinfo:
        factory(bad)
    assert f"`{name}`" in str(excinfo.value)


def test_bad_release_inputs():
    with pytest.raises(InvalidArgumentError, match="3 entries"):
        mech.Gaussian(1.0, dimension=3).release([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="finite"):
        mech.Laplace(1.0).release(math.nan)
    with pytest.raises(InvalidArgumentError, match="integer-valued"):
        mech.DiscreteLaplace(1.0).release(1.5)
    with pytest.raises(InvalidArgumentError, match=r"0\.\.2"):
        mech.RandomizedResponse(1.0, 3).release(3)
    with pytest.raises(InvalidArgumentError, match="power of two"):
        mech.Laplace(1.0, granularity=0.3)
    with pytest.raises(InvalidArgumentError, match="symmetric"):
        mech.SymmetricGaussian(1.0, dimension=2).release(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(InvalidArgumentTypeError, match="`rng`"):
        mech.Laplace(1.0).release(1.0, rng="42")
    # an int seed is accepted (issue 11): reproducible draws
    assert mech.Laplace(1.0).release(1.0, rng=42) == mech.Laplace(1.0).release(1.0, rng=42)
    with pytest.raises(InvalidArgumentError, match="`norm`"):
        mech.KNorm(1.0, norm="l3")


def test_calibrated_safe_mechanism_costs_what_was_calibrated():
    from dpledger import calibrate

    m = calibrate.mechanism(lambda b: mech.Laplace(b), epsilon=0.5, delta=0.0)
    assert acc.epsilon(m.event, 0.0) <= 0.5


# -- exact samplers: quick moment checks (default run) ------------------------------------


def test_bernoulli_exp_mean():
    rng = np.random.default_rng(1)
    draws = [bernoulli_exp(Fraction(3, 2), rng) for _ in range(20_000)]
    p = math.exp(-1.5)
    assert abs(np.mean(draws) - p) < 4 * math.sqrt(p * (1 - p) / 20_000)


def test_discrete_laplace_variance():
    rng = np.random.default_rng(2)
    t = 1.5
    draws = np.array([discrete_laplace(Fraction(t), rng) for _ in range(20_000)])
    r = math.exp(-1 / t)
    variance = 2 * r / (1 - r) ** 2
    assert abs(draws.mean()) < 0.1
    assert abs(draws.var() / variance - 1) < 0.06


def test_discrete_gaussian_variance():
    rng = np.random.default_rng(3)
    draws = np.array([discrete_gaussian(Fraction(9), rng) for _ in range(20_000)])
    assert abs(draws.mean()) < 0.1
    assert abs(draws.var() / 9.0 - 1) < 0.06  # σ² ≈ variance for σ ≥ 1 (CKS20, §2)


# -- distribution tests (slow) ------------------------------------------------------------


def _chi_square_pmf(samples: np.ndarray, pmf) -> float:
    values, counts = np.unique(samples, return_counts=True)
    support = np.arange(values.min() - 3, values.max() + 4)
    probs = np.array([pmf(k) for k in support])
    probs /= probs.sum()
    observed = np.array([counts[values == k].sum() if k in values else 0 for k in support])
    expected = probs * len(samples)
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("t", [0.5, 1.5, 7.3])
def test_discrete_laplace_pmf(t):
    rng = np.random.default_rng(10)
    samples = np.array([discrete_laplace(Fraction(t), rng) for _ in range(40_000)])
    assert _chi_square_pmf(samples, lambda k: math.exp(-abs(k) / t)) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.6, 2.0, 9.5])
def test_discrete_gaussian_pmf(sigma):
    rng = np.random.default_rng(11)
    s2 = Fraction(sigma) ** 2
    samples = np.array([discrete_gaussian(s2, rng) for _ in range(40_000)])
    assert _chi_square_pmf(samples, lambda k: math.exp(-k * k / (2 * sigma**2))) > 1e-3


@pytest.mark.slow
def test_randomized_response_distribution():
    rng = np.random.default_rng(12)
    m = mech.RandomizedResponse(1.2, categories=4)
    out = np.array([m.release(2, rng) for _ in range(40_000)])
    p = math.exp(1.2) / (math.exp(1.2) + 3)
    expected = np.array([(1 - p) / 3, (1 - p) / 3, p, (1 - p) / 3]) * len(out)
    observed = np.bincount(out, minlength=4)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("cls", [mech.Exponential, mech.PermuteAndFlip])
def test_selection_distribution(cls):
    rng = np.random.default_rng(13)
    scores = [0.0, 1.0, 2.5, 2.0]
    m = cls(1.0, 1.0)
    out = np.array([m.release(scores, rng) for _ in range(30_000)])
    observed = np.bincount(out, minlength=4)
    if cls is mech.Exponential:
        weights = np.exp(np.array(scores) / 2)
        expected = weights / weights.sum() * len(out)
        assert stats.chisquare(observed, expected).pvalue > 1e-3
    else:
        # permute-and-flip favours the best at least as much as the exponential mechanism
        weights = np.exp(np.array(scores) / 2)
        assert observed[2] / len(out) >= weights[2] / weights.sum() - 0.01


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_continuous_samplers_ks(kind):
    rng = np.random.default_rng(14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mech.FloatingPointWarning)
        if kind == "laplace":
            m = mech.Laplace(2.0, dimension=20_000, safe=False)
            dist = stats.laplace(scale=2.0)
        else:
            m = mech.Gaussian(2.0, dimension=20_000, safe=False)
            dist = stats.norm(scale=2.0)
    sample = m.release(np.zeros(20_000), rng)
    assert stats.kstest(sample, dist.cdf).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_safe_grid_samplers_ks(kind):
    """On the fine default grid the safe releases follow the continuous law closely."""
    rng = np.random.default_rng(15)
    n = 5_000
    m = mech.Laplace(2.0, dimension=n) if kind == "laplace" else mech.Gaussian(2.0, dimension=n)
    dist = stats.laplace(scale=2.0) if kind == "laplace" else stats.norm(scale=2.0)
    sample = m.release(np.zeros(n), rng)
    assert stats.kstest(sample, dist.cdf).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
@pytest.mark.parametrize("d", [1, 3, 8])
def test_knorm_norm_and_direction(norm, d):
    """‖z‖_K ~ Gamma(d, Δ/ε); z/‖z‖_K is uniform on the sphere of K (Hardt–Talwar)."""
    rng = np.random.default_rng(16)
    m = mech.KNorm(0.8, 1.5, norm=norm, dimension=d)
    noise = m.sample_noise(20_000, rng)
    order = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    radii = np.linalg.norm(noise, ord=order, axis=1)
    assert stats.kstest(radii, stats.gamma(d, scale=1.5 / 0.8).cdf).pvalue > 1e-3
    direction = noise / radii[:, None]
    # symmetric: every coordinate has mean 0; and the coordinates are exchangeable
    assert np.all(np.abs(direction.mean(axis=0)) < 5 * direction.std(axis=0) / math.sqrt(20_000))
    if d > 1:
        first, second = np.abs(direction[:, 0]), np.abs(direction[:, 1])
        assert stats.ks_2samp(first, second).pvalue > 1e-3
    if norm == "l2" and d == 3:
        # uniform on S²: each coordinate is uniform on [−1, 1] (Archimedes)
        assert stats.kstest(direction[:, 0], stats.uniform(-1, 2).cdf).pvalue > 1e-3


def test_the_grid_release_is_exact_beyond_two_to_the_53_steps():
    """⌊x/γ⌋ + noise is summed in exact integers and only then rounded to a float (a
    function of the exact noisy integer: post-processing). Before, a statistic of more
    than 2⁵³ grid steps (a sum of 10⁵ values near 10⁶ with noise ≈ 1) was refused after
    the charge, depending on the data."""
    from dpledger.mechanisms.additive import _release_on_grid

    gamma = 2.0**-20
    for value, noise in (
        (1e11, 3),
        (-7.25e15, -12345),
        (3e18, 5),  # grid 3e18·2²⁰ > 2⁶²: the Python-integer path
        (1e300, 2**70),  # object noise
    ):
        got = _release_on_grid(np.array([value]), gamma, np.array([noise]))
        exact = math.floor(value / gamma) + noise
        assert got[0] == float(exact) * gamma
    import dpledger as dpl
    from dpledger import algorithms as alg

    ledger = dpl.Ledger(1.0, 1e-6, adjacency="replace_one")
    total = alg.sum(np.full(100_000, 1e6 + 0.5), bounds=(1e6, 1e6 + 1), ledger=ledger,
                    share=0.5, rng=0)  # fmt: skip
    assert abs(total - 100_000 * (1e6 + 0.5)) < 100


def test_grid_noise_is_never_rounded_to_a_float_before_it_is_added():
    """np.array of Python ints turns float64 once a value reaches 2⁶³: the noise was
    rounded before the sum and double rounding leaked the input (helper-30: a parity test
    told inputs 4e-15 apart in 17 % of releases at granularity 2⁻⁶²). Noise arrays are
    int64 or Python ints, and the sum is exact."""
    from fractions import Fraction

    from dpledger.mechanisms.additive import _add_exact, _integers, _release_on_grid

    draws = [2**63 + 1, 2**62 + 2**10 - 1, 5]
    noise = _integers(draws)
    assert noise.dtype == object and [int(v) for v in noise] == draws
    assert _integers([3, -4]).dtype == np.int64
    gamma = 2.0**-62
    x = np.array([0.0, 2.0**-53, 0.0])
    out = _release_on_grid(x, gamma, noise)
    pairs = zip(x, draws, strict=True)
    exact = [float(int(Fraction(v) / Fraction(gamma)) + z) * gamma for v, z in pairs]
    assert list(out) == exact
    with pytest.raises(InvalidArgumentError, match="exact integers"):
        _release_on_grid(x, gamma, np.array(draws, dtype=float))
    big = _add_exact(np.array([2**62, 1], dtype=np.int64), _integers([2**62, 2]))
    assert [int(v) for v in big] == [2**63, 3]  # no int64 wrap-around


@pytest.mark.parametrize(
    "scores", [[1.0, [2.0]], [1.0, 1 + 0j], np.array([1 + 2j]), ["a", "b"], [1, 10**400]]
)
def test_selection_scores_that_are_not_real_are_named_errors(scores):
    """helper-37 F4: ragged or complex scores raised a raw ValueError/TypeError (also from
    Ledger.release, before the charge). Now an InvalidArgumentError naming `value`, and
    the ledger records nothing."""
    import dpledger as dpl

    for mechanism in (mech.Exponential(1.0), mech.PermuteAndFlip(1.0)):
        with pytest.raises(dpl.InvalidArgumentError, match="`value`"):
            mechanism.release(scores, np.random.default_rng(0))
        ledger = dpl.Ledger(1.0)
        with pytest.raises(dpl.InvalidArgumentError, match="`value`"):
            ledger.release(mechanism, scores)
        assert ledger.spent == (0.0, 0.0)
    assert mech.Exponential(1.0).release([1, 2**70], np.random.default_rng(0)) == 1
