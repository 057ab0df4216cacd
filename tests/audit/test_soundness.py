"""Issue 10, items 9-12 and the verdict-soundness acceptance line: a verdict must be proved.

References are independent of the code under test: 50-digit mpmath for the Gaussian
(Balle & Wang 2018, Thm 8) and randomized response (Kairouz, Oh & Viswanath 2015,
Thm 3.3), numerical integration (scipy) for one Poisson-subsampled Gaussian and for the
fixed-batch example.
"""

from __future__ import annotations

import math
import random

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from dpledger import events as ev
from dpledger.accountant.pld import epsilon_bounds, epsilon_lower_bound
from dpledger.audit import check_claim

mpmath.mp.dps = 50


# -- independent references -----------------------------------------------------------------


def gauss_delta(mu, eps):
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def rr_delta(eps0, k, eps):
    """Exact δ(ε) of k-fold ε0 randomized response (KOV 2015, Thm 3.3 form)."""
    e0, eps = mpmath.mpf(eps0), mpmath.mpf(eps)
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
    total = mpmath.mpf(0)
    for i in range(k + 1):  # i outputs agree with D: loss (2i − k)ε0
        loss = (2 * i - k) * e0
        if loss > eps:
            total += (
                mpmath.binomial(k, i) * p**i * (1 - p) ** (k - i) * (1 - mpmath.exp(eps - loss))
            )
    return total


def invert(delta_of, delta, hi=1.0):
    """Smallest ε with δ(ε) ≤ δ, by 50-digit bisection."""
    lo = mpmath.mpf(0)
    if delta_of(lo) <= delta:
        return lo
    while delta_of(hi) > delta:
        hi *= 2
    hi = mpmath.mpf(hi)
    for _ in range(160):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
    return hi


def subsampled_gauss_delta(q, sigma, eps):
    """Exact δ(ε) of one Poisson-subsampled Gaussian (both directions), by quadrature."""
    mu = 1.0 / sigma

    def add(x):  # P = (1−q)N(0,1) + qN(μ,1) vs Q = N(0,1)
        p = (1 - q) * stats.norm.pdf(x) + q * stats.norm.pdf(x - mu)
        return max(0.0, p - math.exp(eps) * stats.norm.pdf(x))

    def remove(x):
        p = (1 - q) * stats.norm.pdf(x) + q * stats.norm.pdf(x - mu)
        return max(0.0, stats.norm.pdf(x) - math.exp(eps) * p)

    kw = {"limit": 500, "epsabs": 1e-14, "epsrel": 1e-10}
    return max(integrate.quad(add, -40, 40 + mu, **kw)[0], integrate.quad(remove, -40, 40, **kw)[0])


# -- item 9: fixed-size batches under add/remove ------------------------------------------


def test_fixed_batches_under_add_remove_are_a_substitution():
    """Issue 10 item 9: n = 2, batch 1, 2 steps, σ = C = 1, claim (2, 0.03) was "holds"."""

    # truth: D = {a, b}, D' = D ∪ {c}; a = b = −1, c = +1 (clipped to C = 1); each step
    # releases its batch's gradient + N(0, 1). D: (−1, −1); D': c in step 1 or 2 (w.p. 1/3
    # each, the left-out record replaced by c), else (−1, −1).
    def p_d(x, y):
        return stats.norm.pdf(x + 1) * stats.norm.pdf(y + 1)

    def p_d2(x, y):
        return (
            stats.norm.pdf(x - 1) * stats.norm.pdf(y + 1)
            + stats.norm.pdf(x + 1) * stats.norm.pdf(y - 1)
            + stats.norm.pdf(x + 1) * stats.norm.pdf(y + 1)
        ) / 3

    e2 = math.exp(2.0)
    # the densities are smooth and negligible outside [−9, 9]²: a fine trapezoid grid
    # integrates the hockey-stick to ~1e-7, far below the margins tested
    grid = np.linspace(-9.0, 9.0, 2401)
    x, y = np.meshgrid(grid, grid, indexing="ij")
    d, d2 = p_d(x, y), p_d2(x, y)
    forward = float(np.trapezoid(np.trapezoid(np.maximum(0.0, d2 - e2 * d), grid), grid))
    backward = float(np.trapezoid(np.trapezoid(np.maximum(0.0, d - e2 * d2), grid), grid))
    truth = max(forward, backward)
    assert truth > 0.03  # the claim is false (the 0.122 for its worst case)
    for sampling in ("shuffled", "fixed_batches"):
        report = check_claim(
            {
                "claim": {"epsilon": 2.0, "delta": 0.03, "adjacency": "add_remove"},
                "release": [
                    {
                        "mechanism": "gaussian",
                        "sigma": 1.0,
                        "sensitivity": 1.0,
                        "count": 2,
                        "sampling": sampling,
                        "batch_size": 1,
                        "population": 2,
                    }
                ],
            }
        )
        assert report.verdict != "holds" and report.verdict != "holds_loosely"
        assert report.delta >= truth  # the accounted δ(2) is an upper bound
        assert any("substitution" in f for f in report.findings)


# -- item 10: no lower bound that is not one ------------------------------------------------


def test_unamplified_batches_certify_no_lower_bound():
    """Issue 10 item 10: "63.01 ≤ ε ≤ 63.01" for shuffled batches was no lower bound."""
    report = check_claim("examples/audits/dpsgd_shuffled.toml")
    assert report.epsilon_lower is None
    assert "≤ ε ≤" not in report.format()


def test_exponential_mechanism_is_judged_by_its_bounded_range_worst_case():
    """Issue 10 item 10: claim (0.5, 0.1) for an ε0 = 1 exponential mechanism was
    "violated, ε ≥ 0.853" — randomized response, which the exponential mechanism does not
    attain. Bounded-range worst case (Dong, Durfee & Rogers 2020): δ(0.5) ≈ 0.077."""

    def br_delta(eps):  # max over binary BR pairs: p(1 − e^{ε − a}), e^a = p + (1−p)e^{ε0}
        best = mpmath.mpf(0)
        for i in range(1, 2000):
            p = mpmath.mpf(i) / 2000
            a = mpmath.log(p + (1 - p) * mpmath.e)
            best = max(best, p * (1 - mpmath.exp(eps - a)))
        return best

    assert br_delta(0.5) < 0.08  # the claim holds in truth
    for mechanism in ("exponential", "report_noisy_max", "permute_and_flip"):
        report = check_claim(
            {
                "claim": {"epsilon": 0.5, "delta": 0.1, "adjacency": "add_remove"},
                "release": [{"mechanism": mechanism, "epsilon": 1.0}],
            }
        )
        assert report.verdict != "violated", mechanism
        assert report.epsilon_lower is None


# -- item 11: "exact" must mean exact -------------------------------------------------------


def test_optimal_composition_beyond_its_limit_is_not_exact():
    """Issue 10 item 11: 30 pure releases with 21 distinct ε: a loose RDP value was used as
    a lower bound (false "violated" for a claim PLD certifies)."""
    rng = random.Random(11)
    eps_values = [round(rng.uniform(0.05, 0.4), 6) for _ in range(21)]
    releases = [{"mechanism": "pure_dp", "epsilon": e} for e in eps_values]
    releases += [{"mechanism": "pure_dp", "epsilon": eps_values[i]} for i in range(9)]
    import dpledger.accountant as acc

    event = ev.Composed(
        tuple(ev.PureDP(e) for e in eps_values) + tuple(ev.PureDP(e) for e in eps_values[:9])
    )
    table = acc.epsilon_by_method(event, 1e-6)
    assert not isinstance(table["optimal"], float)  # beyond its support limit
    pld = table["pld"]
    others = min(v for m, v in table.items() if isinstance(v, float) and m != "pld")
    assert pld < others
    claim_between = (pld + others) / 2  # true (PLD certifies it) but above the rest
    report = check_claim(
        {
            "claim": {"epsilon": claim_between, "delta": 1e-6, "adjacency": "add_remove"},
            "release": releases,
        }
    )
    assert report.verdict in ("holds", "holds_loosely")
    assert report.epsilon <= pld
    assert report.epsilon_lower is None or report.epsilon_lower <= pld


# -- item 12: PLD lower bounds ---------------------------------------------------------------


def test_low_rate_long_run_lower_bound_is_not_the_upper_bound():
    """Issue 10 item 12a: rate 0.001, σ = 3, 50,000 steps, δ = 1e-6 (true ε ≈ 0.29966;
    dp_accounting's pessimistic PLD at a 2e-6 grid, an upper bound, gives 0.2996594):
    the lower bound was ∞, clamped to the upper one, and a true claim of 0.300 "violated"."""
    event = ev.PoissonSampled(ev.Gaussian(3.0), 0.001) * 50_000
    lower, upper = epsilon_bounds(event, 1e-6)
    assert 0.2990 < lower <= 0.2996594 < 0.300
    assert lower < upper < 0.300
    report = check_claim(
        {
            "claim": {"epsilon": 0.300, "delta": 1e-6, "adjacency": "add_remove"},
            "release": [
                {
                    "mechanism": "gaussian",
                    "sigma": 3.0,
                    "sensitivity": 1.0,
                    "count": 50_000,
                    "sampling": "poisson",
                    "sampling_rate": 0.001,
                }
            ],
        }
    )
    assert report.verdict != "violated"


def test_lower_bound_at_tiny_delta_is_below_the_exact_value():
    """Issue 10 item 12b: 526 × Gaussian(σ = 2.406, Δ = 0.5) + PureDP(0.01) at δ = 1e-15."""
    mu = mpmath.sqrt(526) * mpmath.mpf(0.5) / mpmath.mpf(2.406)
    e0 = mpmath.mpf(0.01)
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))

    def delta(eps):  # Gaussian ⊗ RR(ε0), exact
        return p * gauss_delta(mu, eps - e0) + (1 - p) * gauss_delta(mu, eps + e0)

    exact = invert(delta, mpmath.mpf("1e-15"), hi=64.0)
    lower = epsilon_lower_bound(ev.Gaussian(2.406, 0.5) * 526 + ev.PureDP(0.01), 1e-15)
    assert lower <= exact
    assert float(exact) == pytest.approx(48.62, abs=0.01)


@pytest.mark.parametrize("seed", range(6))
def test_lower_never_above_exact_gaussian_compositions(seed):
    """Issue 10 item 12: lower ≤ exact ≤ upper on random Gaussian compositions, δ to 1e-15."""
    rng = random.Random(seed)
    sigmas = [rng.uniform(0.5, 20.0) for _ in range(rng.randint(1, 3))]
    counts = [rng.randint(1, 300) for _ in sigmas]
    delta = 10.0 ** -rng.choice([3, 6, 9, 12, 15])
    mu = mpmath.sqrt(sum(c / mpmath.mpf(s) ** 2 for s, c in zip(sigmas, counts, strict=True)))
    exact = invert(lambda e: gauss_delta(mu, e), mpmath.mpf(delta))
    event = ev.Composed(tuple(ev.Gaussian(s) * c for s, c in zip(sigmas, counts, strict=True)))
    lower = epsilon_lower_bound(event, delta)
    assert lower <= exact


# -- acceptance: verdict soundness -----------------------------------------------------------


def _random_case(rng):
    """A declared pipeline with an exactly computable true ε(δ), and that truth."""
    kind = rng.choice(["gaussian", "pure", "subsampled"])
    delta = 10.0 ** -rng.choice([3, 5, 6, 8])
    if kind == "gaussian":
        sigmas = [rng.uniform(0.7, 30.0) for _ in range(rng.randint(1, 3))]
        counts = [rng.randint(1, 200) for _ in sigmas]
        releases = [
            {"mechanism": "gaussian", "sigma": s, "sensitivity": 1.0, "count": c}
            for s, c in zip(sigmas, counts, strict=True)
        ]
        mu = mpmath.sqrt(sum(c / mpmath.mpf(s) ** 2 for s, c in zip(sigmas, counts, strict=True)))
        truth = invert(lambda e: gauss_delta(mu, e), mpmath.mpf(delta))
    elif kind == "pure":
        eps0, k = rng.uniform(0.02, 1.0), rng.randint(1, 60)
        releases = [{"mechanism": "pure_dp", "epsilon": eps0, "count": k}]
        truth = invert(lambda e: rr_delta(eps0, k, e), mpmath.mpf(delta))
    else:
        q, sigma = rng.uniform(0.01, 0.3), rng.uniform(0.6, 3.0)
        delta = 10.0 ** -rng.choice([3, 5, 6])
        releases = [
            {
                "mechanism": "gaussian",
                "sigma": sigma,
                "sensitivity": 1.0,
                "sampling": "poisson",
                "sampling_rate": q,
            }
        ]
        lo, hi = 0.0, 1.0
        while subsampled_gauss_delta(q, sigma, hi) > delta:
            hi *= 2
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if subsampled_gauss_delta(q, sigma, mid) > delta else (lo, mid)
        truth = mpmath.mpf(hi)  # within 2^-40 · hi of the root
    return releases, delta, truth, kind


def _check_cases(n, seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(n):
        releases, delta, truth, kind = _random_case(rng)
        claim_eps = float(truth) * rng.choice([0.5, 0.9, 0.99, 0.999, 1.001, 1.01, 1.1, 2.0])
        report = check_claim(
            {
                "claim": {"epsilon": claim_eps, "delta": delta, "adjacency": "add_remove"},
                "release": releases,
            }
        )
        # quadrature and bisection (2^-40) for the subsampled truth; 50 digits otherwise
        slack = 1e-6 * float(truth) if kind == "subsampled" else 1e-12 * float(truth)
        if report.verdict == "violated":
            assert truth > claim_eps, (releases, delta, claim_eps, float(truth))
        if report.verdict in ("holds", "holds_loosely"):
            assert truth <= claim_eps + slack, (releases, delta, claim_eps, float(truth))
        if report.epsilon_lower is not None:
            assert report.epsilon_lower <= truth + slack, (releases, delta, float(truth))
        assert report.epsilon >= truth - slack, (releases, delta, float(truth))
        checked += 1
    return checked


def test_verdict_soundness_quick():
    """Acceptance: verdicts consistent with exact truth (a quick sample of the sweep)."""
    assert _check_cases(8, seed=2026) == 8


@pytest.mark.slow
def test_verdict_soundness_sweep():
    """Acceptance: ≥ 200 random declared pipelines with exactly computable truth."""
    assert _check_cases(210, seed=7) == 210


def test_reference_functions_agree_with_closed_forms():
    """The references themselves: GDP at μ = 1 and RR with k = 1 have closed forms."""
    assert float(invert(lambda e: gauss_delta(1.0, e), mpmath.mpf("1e-5"))) == pytest.approx(
        4.4, abs=0.1
    )
    # one ε0-RR release is exactly ε0-DP: δ(ε0) = 0
    assert rr_delta(0.7, 1, 0.7) == 0
    assert np.isclose(float(subsampled_gauss_delta(1.0, 1.0, 0.5)), float(gauss_delta(1.0, 0.5)))


def test_docs_audit_summary_is_what_the_command_prints(capsys):
    """docs/audit.md shows the summary of `dpledger audit examples/audits/*.toml`."""
    from pathlib import Path

    from dpledger.cli import main

    root = Path(__file__).resolve().parents[2]
    files = sorted(str(p) for p in (root / "examples" / "audits").glob("*.toml"))
    main(["audit", *files])
    printed = capsys.readouterr().out
    summary = printed[printed.index("Summary:") :]
    doc = (root / "docs" / "audit.md").read_text(encoding="utf-8")
    assert summary in doc
