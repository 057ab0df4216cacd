"""The exact sampler of the 1-D quantile (issue 34): its certified float bounds, the exact
path it falls back to, the point inside the chosen interval, and (slow) its distribution
against exact interval probabilities computed independently in mpmath."""

from __future__ import annotations

import importlib
import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpledger as dpl
from dpledger import Ledger
from dpledger.algorithms import quantile
from dpledger.algorithms.quantile import (
    _exp_enclosure,
    _KNGSampler,
    _rate,
    _sample,
    _sensitivity,
    _uniform_floor,
)
from dpledger.errors import FloatingPointWarning, InvalidArgumentError

MODULE = importlib.import_module("dpledger.algorithms.quantile")
WIDE = mpmath.mpf(2) ** -980


def _exact_probabilities(edges, q, epsilon, sensitivity):
    """P(interval k) ∝ (e_{k+1} − e_k)·exp(−ε|k − qn|/(2Δ)), in mpmath from exact inputs."""
    with mpmath.workprec(300):
        n = len(edges) - 2
        sensitivity = Fraction(sensitivity)
        rate = mpmath.mpf(epsilon) * sensitivity.denominator / (2 * sensitivity.numerator)
        qn = mpmath.mpf(q) * n
        weights = [
            (mpmath.mpf(edges[k + 1]) - mpmath.mpf(edges[k])) * mpmath.exp(-rate * abs(k - qn))
            for k in range(n + 1)
        ]
        total = mpmath.fsum(weights)
        return np.array([float(w / total) for w in weights])


def _interval_of(draws, edges):
    """Each draw's interval k: the last k with e_k ≤ θ (the positive one among tied edges)."""
    return np.searchsorted(np.asarray(edges), draws, side="right") - 1


def _chi2(draws, edges, probabilities):
    """χ² p-value of the draws' intervals; intervals of probability 0 must get no draw."""
    k = _interval_of(draws, edges)
    observed = np.bincount(k, minlength=len(probabilities)).astype(float)
    assert observed[probabilities == 0].sum() == 0
    expected = probabilities * draws.size
    big = expected >= 5  # the rest pooled into one cell
    obs = np.r_[observed[big], observed[~big].sum()]
    exp = np.r_[expected[big], expected[~big].sum()]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def _positions(draws, edges, width):
    """Each draw's relative position in its interval (intervals not tiny against the range)."""
    edges = np.asarray(edges)
    k = _interval_of(draws, edges)
    lengths = edges[k + 1] - edges[k]
    keep = lengths > 1e-6 * width
    return (draws[keep] - edges[k][keep]) / lengths[keep]


# -- the default path --------------------------------------------------------------------


def test_the_default_path_warns_nothing():
    data = np.random.default_rng(0).normal(50, 10, 2000)
    by = np.arange(2000) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for adjacency in ("add_remove", "replace_one"):
            ledger = Ledger(10.0, 1e-6, adjacency=adjacency)
            quantile(data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, rng=1)
            quantile(data, [0.1, 0.9], ledger=ledger, bounds=(0, 100), share=0.2, rng=2)
            quantile(data, [0.1, 0.9], ledger=ledger, bounds=(0, 100), epsilon=1.0, by=by,
                     groups=[0, 1, 2], rng=3)  # fmt: skip
            quantile([], 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, rng=4)
    with pytest.warns(FloatingPointWarning, match="exponential"):  # the float baseline says so
        quantile(data, 0.5, ledger=ledger, bounds=(0, 100), epsilon=1.0, rng=5,
                 mechanism="exponential")  # fmt: skip


def test_a_rate_beyond_the_cap_is_refused_before_the_charge():
    ledger = Ledger(1e14, 0.0)
    with pytest.raises(InvalidArgumentError, match="epsilon"):
        quantile([1.0, 2.0], 0.5, ledger=ledger, bounds=(0, 5), epsilon=1e13)
    assert ledger.receipts == ()
    assert 0 <= quantile([1.0, 2.0], 0.5, ledger=ledger, bounds=(0, 5), epsilon=1e12) <= 5


# -- the certificates --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_the_exp_enclosure_is_rigorous_and_tight(seed):
    rng = np.random.default_rng(seed)
    points = [Fraction(0), Fraction(-(10**20), 3), Fraction(745), Fraction(1, 2**80)]
    for _ in range(150):
        scale = float(rng.choice([1e-12, 1e-3, 1.0, 1e2, 1e4]))
        points.append(Fraction(float(rng.normal()) * scale))
    for x in points:
        precision = int(rng.choice([64, 128, 256]))
        lo, hi, e = _exp_enclosure(x, precision)
        with mpmath.workprec(precision + 200):
            value = mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
            low, high = mpmath.ldexp(lo, e), mpmath.ldexp(hi, e)
            assert low <= value <= high, x
            assert (high - low) / value <= mpmath.ldexp(1, -precision), x


CASES = {
    "three points": ([1.0, 3.0, 6.0], 0.5, 1.0, (0.0, 10.0)),
    "empty": ([], 0.3, 1.0, (0.0, 1.0)),
    "ties": ([5.0] * 50, 0.3, 0.5, (0.0, 10.0)),
    "ties at the largest rate": ([5.0] * 50, 0.3, 2.0**40, (0.0, 10.0)),
    "tiny rate": (list(np.random.default_rng(1).normal(0, 1, 200)), 0.9, 1e-300, (-5.0, 5.0)),
    "subnormal and huge gaps": (
        [0.0, 5e-324, 1e-300, 1e-300, 2.0**-1000],
        0.5,
        3.0,
        (0.0, 2.0**899),
    ),
    "one-ulp gaps": ([1.0, 1.0 + 2**-52, 1.0 + 2**-51], 0.5, 1e6, (1.0, 2.0)),
    "points on the bounds": (
        list(np.random.default_rng(2).integers(0, 5, 300) * 1.0),
        0.5,
        0.25,
        (0.0, 4.0),
    ),
    "maximum": (list(np.random.default_rng(3).normal(0, 1, 500)), 1.0, 7.3, (-3.0, 3.0)),
    "minimum": (list(np.random.default_rng(3).normal(0, 1, 500)), 0.0, 7.3, (-3.0, 3.0)),
    "far ties, second pass": ([2.0] * 3000, 1 / 3, 2.0**40, (0.0, 5.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_float_certificates_hold_exactly(name):
    """Every inequality the sampler's proof uses, checked in 400-bit arithmetic."""
    values, q, rate, (lo, hi) = CASES[name]
    values = np.sort(np.clip(np.asarray(values, dtype=float), lo, hi))
    sampler = _KNGSampler(values, q, rate, lo, hi)
    if name == "far ties, second pass":
        assert sampler.reference != math.floor(Fraction(q) * values.size)
    qn = Fraction(q) * values.size
    assert sampler.total < 2**62
    with mpmath.workprec(400):
        g = mpmath.ldexp(1, sampler.exponent)
        for k in range(values.size + 1):
            length = Fraction(float(sampler.edges[k + 1])) - Fraction(float(sampler.edges[k]))
            units = int(sampler.units[k])
            if length == 0:
                assert units == 0
                continue
            a = Fraction(rate) * (abs(k - qn) - abs(sampler.reference - qn)) + Fraction(sampler.mu)
            weight = (
                mpmath.mpf(length.numerator)
                / length.denominator
                * mpmath.exp(-mpmath.mpf(a.numerator) / a.denominator)
            )
            assert weight <= g * units, (k, weight, g * units)  # the acceptance ratio ≤ 1
            w = mpmath.mpf(float(sampler.w[k]))
            if sampler.z[k] >= MODULE._FLUSH:
                assert w * sampler.f_lo <= weight <= w * sampler.f_hi, k
            else:
                assert weight < WIDE, k


# -- the exact path ----------------------------------------------------------------------


def _spy(monkeypatch, name):
    calls = {"n": 0}
    original = getattr(_KNGSampler, name)

    def counted(self, *args):
        calls["n"] += 1
        return original(self, *args)

    monkeypatch.setattr(_KNGSampler, name, counted)
    return calls


def test_the_exact_path_decides_every_draw_as_the_certificates_do(monkeypatch):
    """With the float certificates off every acceptance goes through exact interval
    arithmetic; the draws from one seed are the same (the certificates never decide
    otherwise than the exact comparison, and consume the same bits)."""
    values = np.sort(np.random.default_rng(4).normal(5, 2, 40).clip(0, 10))
    sampler = _KNGSampler(values, 0.3, _rate(1.0, 1.0), 0.0, 10.0)
    exact = _spy(monkeypatch, "_accepts_exactly")
    fast = [sampler.draw(np.random.default_rng(s)) for s in range(300)]
    assert exact["n"] == 0
    monkeypatch.setattr(MODULE, "_FAST_PATH", False)
    slow = [sampler.draw(np.random.default_rng(s)) for s in range(300)]
    assert exact["n"] >= 300
    assert fast == slow


@pytest.mark.parametrize("fast", [True, False])
def test_short_words_and_inflated_proposals_stay_exact(monkeypatch, fast):
    """Two random bits a step (every comparison refined over many rounds) and proposal
    weights inflated at random (many rejections): still the exact distribution."""
    monkeypatch.setattr(MODULE, "_FAST_PATH", fast)
    monkeypatch.setattr(MODULE, "_WORD", 2)
    values = np.array([1.0, 3.0, 3.0, 6.0, 6.0, 6.0, 7.5])
    sampler = _KNGSampler(values, 0.5, _rate(1.5, 1.0), 0.0, 10.0)
    sampler.units = sampler.units * np.random.default_rng(5).integers(1, 5, sampler.units.size)
    sampler.cumulative = np.cumsum(sampler.units)
    sampler.total = int(sampler.cumulative[-1])
    accepts = _spy(monkeypatch, "_accepts")
    rng = np.random.default_rng(6)
    draws = np.array([sampler.draw(rng) for _ in range(4000)])
    assert accepts["n"] > 4400  # rejections happened
    edges = [0.0, *values, 10.0]
    assert _chi2(draws, edges, _exact_probabilities(edges, 0.5, 1.5, 1.0)) > 1e-4
    assert stats.kstest(_positions(draws, edges, 10.0), "uniform").pvalue > 1e-4


def test_a_flushed_interval_is_refined_and_rejected_exactly(monkeypatch):
    """A weight below 2⁻⁹⁸⁰ proposed with V's first word 0: the floats cannot decide, the
    exact path draws another word and rejects."""
    values = np.linspace(1.0, 9.0, 200)
    sampler = _KNGSampler(values, 0.5, 10.0, 0.0, 10.0)
    k = int(np.argmin(sampler.z))
    assert sampler.z[k] < MODULE._FLUSH and sampler.units[k] == 1
    words = iter([0, 5])
    monkeypatch.setattr(MODULE, "_bits", lambda rng: next(words))
    exact = _spy(monkeypatch, "_accepts_exactly")
    assert sampler._accepts(k, None) is False
    assert exact["n"] == 1 and next(words, None) is None  # both words were used


# -- the point inside the interval ---------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "floats", "masses"),
    [
        (1.0, 1.0 + 4 * 2**-52, 4, [1, 1, 1, 1]),
        (-3 * 5e-324, 2 * 5e-324, 5, [1, 1, 1, 1, 1]),  # subnormals across zero
        (1.0 - 2**-51, 1.0 + 2**-51, 6, [1, 1, 1, 1, 2, 2]),  # across a binade
    ],
)
def test_the_point_is_the_floor_of_an_exact_uniform(monkeypatch, a, b, floats, masses):
    """Each float f in [a, b) is returned with probability |[f, next f) ∩ [a, b)|/(b − a);
    with two-bit words (many refinement rounds) too."""
    for word in (64, 2):
        monkeypatch.setattr(MODULE, "_WORD", word)
        rng = np.random.default_rng(7)
        draws = [_uniform_floor(a, b, rng) for _ in range(3000)]
        support = sorted(set(draws))
        assert len(support) == floats and a <= support[0] and support[-1] < b
        observed = [draws.count(f) for f in support]
        expected = np.array(masses) / sum(masses) * len(draws)
        assert stats.chisquare(observed, expected).pvalue > 1e-4


# -- the distribution (slow) ---------------------------------------------------------------

DATA = {
    "spread": (np.random.default_rng(8).uniform(0, 10, 40), (0.0, 10.0)),
    "ties and empty intervals": (np.repeat([1.0, 2.0, 2.5, 4.0], [3, 10, 1, 6]), (0.0, 5.0)),
    "clipped to the bounds": (np.random.default_rng(9).normal(5, 4, 30), (2.0, 8.0)),
    "one-ulp intervals": (np.array([1.0, 1.0 + 2**-52, 1.0 + 2**-51, 1.5, 2.0]), (0.0, 3.0)),
}
P_VALUES: dict[str, float] = {}


@pytest.mark.slow
@pytest.mark.parametrize("adjacency", ["add_remove", "replace_one"])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("name", sorted(DATA))
def test_draws_follow_the_exact_interval_probabilities(name, q, adjacency):
    """10⁵ draws: χ² of their intervals against exact probabilities computed in mpmath
    (not by the sampler's code), and KS of their positions inside the intervals."""
    raw, (lo, hi) = DATA[name]
    values = np.sort(np.clip(raw, lo, hi))
    epsilon = 2.0
    delta = _sensitivity(q, "kng", adjacency, False, Fraction(hi) - Fraction(lo))
    sampler = _KNGSampler(values, q, _rate(epsilon, delta), lo, hi)
    rng = np.random.default_rng(10)
    draws = np.array([sampler.draw(rng) for _ in range(100_000)])
    edges = [lo, *values, hi]
    chi2 = _chi2(draws, edges, _exact_probabilities(edges, q, epsilon, delta))
    ks = stats.kstest(_positions(draws, edges, hi - lo), "uniform").pvalue
    P_VALUES[f"{name}, q={q}, {adjacency}"] = chi2
    print(f"{name}, q={q}, {adjacency}: chi2 p={chi2:.3g}, KS p={ks:.3g}")
    assert chi2 > 1e-4
    assert ks > 1e-4


@pytest.mark.slow
def test_fresh_samplers_as_quantile_makes_them_follow_the_exact_probabilities():
    """10⁵ calls of ``_sample`` (a sampler built per draw, as each release does)."""
    values, (lo, hi) = DATA["ties and empty intervals"]
    rng = np.random.default_rng(11)
    draws = np.array([_sample(values, 0.5, 2.0, 1.0, lo, hi, rng) for _ in range(100_000)])
    edges = [lo, *values, hi]
    chi2 = _chi2(draws, edges, _exact_probabilities(edges, 0.5, 2.0, 1.0))
    print(f"fresh samplers: chi2 p={chi2:.3g}")
    assert chi2 > 1e-4
    # the test can fail: the same draws against ε 5 % off
    assert _chi2(draws, edges, _exact_probabilities(edges, 0.5, 2.1, 1.0)) < 1e-4


@pytest.mark.slow
def test_the_released_quantiles_are_charged_and_in_range_at_scale():
    data = np.random.default_rng(12).lognormal(3, 1, 1_000_000)
    ledger = dpl.Ledger(1.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = quantile(data, [0.1, 0.5, 0.9], ledger=ledger, bounds=(0, 1000), epsilon=0.3,
                       rng=13)  # fmt: skip
    exact = np.quantile(data, [0.1, 0.5, 0.9])
    assert np.all(np.abs(out.to_numpy() - exact) < 0.01 * exact)
    assert len(ledger.receipts) == 3
