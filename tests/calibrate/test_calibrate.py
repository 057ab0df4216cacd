"""Calibration: exact references, never overshooting, minimality, errors."""

from __future__ import annotations

import math
import warnings

import mpmath
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dpledger.accountant as acc
from dpledger import calibrate, mechanisms
from dpledger import events as ev
from dpledger.cli import main
from dpledger.errors import CalibrationError, InvalidArgumentError
from tests import _reference as ref


def ref_sigma(epsilon: float, delta: float, count: int = 1, sensitivity: float = 1.0) -> float:
    """Exact smallest σ by 50-digit bisection: count Gaussians = one with μ = √count·Δ/σ."""
    return float(ref.gaussian_sigma(epsilon, delta)) * math.sqrt(count) * sensitivity


def test_reference_sigma_single():
    sigma = calibrate.gaussian_sigma(1.0, 1e-5)
    assert sigma == pytest.approx(3.730631635, abs=5e-10)
    assert sigma == pytest.approx(ref_sigma(1.0, 1e-5), rel=1e-10)


def test_reference_sigma_large_epsilon_and_classical_misses():
    sigma = calibrate.gaussian_sigma(10.0, 1e-8)
    assert sigma == pytest.approx(0.6158463558, abs=5e-11)
    assert sigma == pytest.approx(ref_sigma(10.0, 1e-8), rel=1e-10)
    with pytest.warns(calibrate.LegacyFormulaWarning, match="epsilon < 1"):
        classical = calibrate.classical_gaussian_sigma(10.0, 1e-8)
    assert classical == pytest.approx(0.6106, abs=1e-4)
    # the classical σ misses its own target: exact δ at ε = 10 exceeds 1e-8
    assert ref.gaussian_delta(10.0, 1 / classical) > mpmath.mpf("1e-8")
    assert acc.gaussian_delta(10.0, sigma=classical) > 1e-8


def test_classical_formula_silent_below_one():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = calibrate.classical_gaussian_sigma(0.5, 1e-5)
    assert value == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-14)


def test_reference_tiny_delta():
    sigma = calibrate.gaussian_sigma(1.0, 1e-300)
    assert ref.gaussian_delta(1.0, 1 / sigma) <= mpmath.mpf("1e-300")
    assert acc.gaussian_delta(1.0, sigma=sigma) <= 1e-300


def test_reference_thousand_gaussians():
    sigma = calibrate.gaussian_sigma(1.0, 1e-5, count=1000)
    assert sigma == pytest.approx(117.9729308, abs=5e-8)
    assert sigma == pytest.approx(ref_sigma(1.0, 1e-5, 1000), rel=1e-9)


exact_targets = st.tuples(
    st.floats(0.01, 50.0),
    st.floats(1e-12, 1e-2),
    st.integers(1, 10_000),
    st.floats(0.1, 10.0),
)


@settings(max_examples=1000, deadline=None)
@given(exact_targets)
@pytest.mark.slow
def test_exact_calibration_never_overshoots_and_is_minimal(target):
    """1,000 random targets: σ meets the target and is within 1e-6 of the exact minimum."""
    epsilon, delta, count, sensitivity = target
    sigma = calibrate.gaussian_sigma(epsilon, delta, sensitivity=sensitivity, count=count)
    event = ev.Gaussian(sigma, sensitivity) * count
    assert acc.delta(event, epsilon) <= delta  # re-evaluated: never misses the target
    exact = float(ref.gaussian_sigma(epsilon, delta)) * math.sqrt(count) * sensitivity
    assert sigma >= exact * (1 - 1e-12)
    assert sigma == pytest.approx(exact, rel=1e-6)


sampled_targets = st.tuples(
    st.floats(0.05, 50.0),
    st.floats(1e-12, 1e-2),
    st.integers(1, 2_000),
    st.floats(0.001, 0.5),
)


def _check_sampled(target, method):
    """Meets the target when re-accounted (always); minimal within 1e-6 for RDP (a
    closed-form curve) and within 1e-4 for auto (numerical PLD, the tolerance promised
    for numerical methods) when δ ≥ 1e-9. Below that PLD's δ carries ~1e-3 relative
    numerical noise (a documented limitation), so minimality is checked to 1e-2 there."""
    epsilon, delta, count, rate = target
    sigma = calibrate.gaussian_sigma(epsilon, delta, count=count, sampling_rate=rate, method=method)
    event = ev.PoissonSampled(ev.Gaussian(sigma), rate) * count
    assert acc.delta(event, epsilon, method=method) <= delta
    assert acc.delta(event, epsilon) <= delta
    numerical = 1e-4 if delta >= 1e-9 else 1e-2
    tolerance = 1e-6 if method == "rdp" else numerical
    smaller = ev.PoissonSampled(ev.Gaussian(sigma * (1 - tolerance)), rate) * count
    if -math.expm1(count * math.log1p(-rate)) <= delta:
        # a record is sampled at all with probability ≤ δ: every σ > 0 meets the target
        # ((0, p)-DP), so there is no smallest σ to be minimal against (calibrate.solve
        # returns the first σ found; e.g. (1, 2⁻⁷, 1 step, q = 2⁻⁸) by RDP: σ = 0.7965, and
        # RDP itself gives 7.0e-5 ≤ δ at a smaller σ — for either method). At p = δ exactly the
        # true δ(ε) of a smaller σ lies just below p, and the accountant's rounding guard
        # (an upper bound) may put it 3e-10 relative above: the calibrated σ itself is
        # checked exactly above, the smaller one up to that guard
        assert acc.delta(smaller, epsilon) <= delta * (1 + 1e-9)
        return
    assert acc.delta(smaller, epsilon, method=method) > delta


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["poisson", "fixed"]),
            st.floats(1e-9, 0.9),
            st.integers(1, 10**6),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_use_probability_bounds_the_exact_probability_from_above(parts):
    """The probability that a record is used at all, against 50-digit arithmetic: never
    below 1 − Π(1 − qᵢ)^{kᵢ}, and within 1e-9 of it."""
    from dpledger.calibrate.solver import _use_probability

    events = []
    exact = mpmath.mpf(1)
    with mpmath.workdps(50):
        for kind, rate, count in parts:
            if kind == "poisson":
                leaf: ev.Event = ev.PoissonSampled(ev.Gaussian(1.0), rate)
                q = mpmath.mpf(rate)
            else:
                population = 10**6
                size = max(1, round(rate * population))
                leaf = ev.SampledWithoutReplacement(ev.Laplace(1.0), size, population)
                q = mpmath.mpf(size) / population
            events.append(leaf * count if count > 1 else leaf)
            exact *= (1 - q) ** count
        exact = 1 - exact
        bound = _use_probability(ev.Composed(tuple(events)) if len(events) > 1 else events[0])
        assert bound is not None
        assert mpmath.mpf(bound) >= exact
        assert mpmath.mpf(bound) <= exact * (1 + mpmath.mpf(1e-9)) + mpmath.mpf(1e-300)


def test_use_probability_is_none_when_a_release_sees_everyone():
    from dpledger.calibrate.solver import _use_probability

    sampled = ev.PoissonSampled(ev.Gaussian(1.0), 1e-3) * 10
    assert _use_probability(ev.Composed((sampled, ev.Gaussian(2.0)))) is None
    assert _use_probability(ev.Laplace(1.0) * 3) is None


@pytest.mark.parametrize("rate, count", [(1e-6, 5), (1e-3, 1), (2e-4, 7)])
def test_use_probability_is_the_delta_at_epsilon_zero(rate, count):
    """Cross-check by the accountant (an independent upper bound, within ~1e-4 of the
    exact δ): a subsampled release that reveals the record (nearly) whenever it is sampled
    has δ(0) equal to the probability p that it is used — so p cannot be lowered — and a
    noisy one, less. That δ(0) ≤ p for every noise is the coupling argument of the
    docstring."""
    from dpledger.calibrate.solver import _use_probability

    revealing = ev.PoissonSampled(ev.PureDP(40.0), rate) * count
    bound = _use_probability(revealing)
    assert bound is not None
    assert acc.delta(revealing, 0.0) == pytest.approx(bound, rel=1e-4)
    noisy = ev.PoissonSampled(ev.Gaussian(0.5), rate) * count
    assert acc.delta(noisy, 0.0) <= 0.8 * bound


def test_solve_stops_where_every_noise_meets_the_target():
    """A record used at all with probability 5e-6 < δ = 1e-5: every σ meets (1, 1e-5), so
    there is no smallest. ``solve`` returns the first σ found to meet it instead of halving
    towards 0 with ever costlier PLD evaluations (NoisyGD at Poisson rate 1e-6 took 5 min
    and 4.2 GB that way). The answer meets the target when re-accounted."""
    probes: list[float] = []

    def make(sigma: float) -> ev.Event:
        probes.append(sigma)
        return ev.PoissonSampled(ev.Gaussian(sigma), 1e-6) * 5

    sigma = calibrate.solve(make, epsilon=1.0, delta=1e-5)
    assert acc.delta(make(sigma), 1.0) <= 1e-5
    assert acc.epsilon(make(sigma), 1e-5) <= 1.0
    assert len(probes) <= 20, len(probes)
    assert min(probes) >= sigma / 4  # no search towards 0


@settings(max_examples=20, deadline=None)
@given(sampled_targets)
@pytest.mark.slow
def test_sampled_calibration_meets_target_rdp(target):
    _check_sampled(target, "rdp")


@settings(max_examples=5, deadline=None)
@given(sampled_targets)
@pytest.mark.slow
def test_sampled_calibration_meets_target_auto(target):
    _check_sampled(target, "auto")


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(sampled_targets)
@example(target=(1.0, 0.0078125, 1, 0.00390625))  # use probability 2⁻⁸ ≤ δ = 2⁻⁷
def test_sampled_calibration_meets_target_thorough(target):
    _check_sampled(target, "rdp")


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(sampled_targets)
@example((1.0, 0.0078125, 1, 0.0078125))  # p = δ exactly: the accountant's guard
def test_sampled_calibration_meets_target_auto_thorough(target):
    _check_sampled(target, "auto")


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 50.0), st.integers(1, 1000), st.floats(0.1, 10.0))
@pytest.mark.slow
def test_laplace_pure_is_exact(epsilon, count, sensitivity):
    scale = calibrate.laplace_scale(epsilon, sensitivity=sensitivity, count=count)
    assert acc.epsilon(ev.Laplace(scale, sensitivity) * count, 0.0) <= epsilon
    assert scale == pytest.approx(count * sensitivity / epsilon, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 20.0), st.floats(1e-10, 1e-3), st.integers(2, 300))
@pytest.mark.slow
def test_laplace_with_delta_meets_target_and_beats_pure(epsilon, delta, count):
    scale = calibrate.laplace_scale(epsilon, count=count, delta=delta)
    assert acc.delta(ev.Laplace(scale) * count, epsilon) <= delta
    assert scale <= count / epsilon * (1 + 1e-12)


def test_discrete_calibrations_meet_target():
    sigma = calibrate.discrete_gaussian_sigma(1.0, 1e-6, sensitivity=2.0, count=10)
    assert acc.delta(ev.DiscreteGaussian(sigma, 2.0, dimension=1) * 10, 1.0) <= 1e-6
    vector = calibrate.discrete_gaussian_sigma(1.0, 1e-6, sensitivity=2.0, count=10, dimension=None)
    assert acc.delta(ev.DiscreteGaussian(vector, 2.0) * 10, 1.0) <= 1e-6
    assert vector > sigma  # the exact 1-D profile is tighter than the zCDP route
    scale = calibrate.discrete_laplace_scale(0.5, count=4)
    assert acc.epsilon(ev.DiscreteLaplace(scale) * 4, 0.0) <= 0.5


def test_solve_reports_bracket_when_unreachable():
    # δ of 0.1 per release can never fit under a 1e-3 target, whatever the noise
    with pytest.raises(CalibrationError) as excinfo:
        calibrate.solve(lambda p: ev.ApproxDP(1 / p, 0.1), epsilon=1.0, delta=1e-3)
    assert excinfo.value.bracket is not None
    assert "noise parameter" in str(excinfo.value)


@pytest.mark.slow
def test_solve_starts_where_rdp_meets_the_target_and_accounts_each_noise_once(monkeypatch):
    """A probe with far too little noise is what made PLD costly: five Poisson-sampled
    steps at rate 1e-3 from a guess of σ = 0.01 took 11 s and 2.4 GB (NoisyGD's own
    guess). The search now starts at RDP's σ (which "auto" also meets) and halves down,
    and no σ is accounted twice (the bracket ends were, by the root finder)."""
    from dpledger.calibrate import solver

    real = solver.accountant.delta
    probes: list[float] = []

    def spy(event, epsilon, method="auto"):
        if method == "auto":
            probes.append(event.event.event.sigma)
        return real(event, epsilon, method=method)

    def make(sigma):
        return ev.PoissonSampled(ev.Gaussian(sigma), 1e-3) * 5

    monkeypatch.setattr(solver.accountant, "delta", spy)
    sigma = calibrate.solve(make, epsilon=1.0, delta=1e-5, initial=0.01)
    monkeypatch.undo()
    assert min(probes) >= sigma / 2
    assert len(probes) == len(set(probes))
    # the answer meets the target, is minimal, and agrees with the dedicated calibration
    assert acc.delta(make(sigma), 1.0) <= 1e-5
    assert acc.delta(make(sigma * (1 - 1e-6)), 1.0) > 1e-5
    assert sigma == pytest.approx(
        calibrate.gaussian_sigma(1.0, 1e-5, count=5, sampling_rate=1e-3), rel=1e-4
    )
    # where RDP cannot reach the target (δ = 0.1 per release), the given start is used
    with pytest.raises(CalibrationError, match=r"in \[2\.0, "):
        calibrate.solve(lambda p: ev.ApproxDP(1 / p, 0.1), epsilon=1.0, delta=1e-3, initial=2.0)


def test_one_discrete_gaussian_calibration():
    # the function and calibrate.mechanism calibrate the same event: one answer
    for dimension in (1, 3):
        sigma = calibrate.discrete_gaussian_sigma(1.0, 1e-6, count=4, dimension=dimension)
        mech = calibrate.mechanism(
            lambda s, d=dimension: mechanisms.DiscreteGaussian(s, dimension=d),
            epsilon=1.0,
            delta=1e-6,
            count=4,
        )
        assert sigma == pytest.approx(mech.sigma, rel=1e-6)
        assert acc.epsilon(mech.event * 4, 1e-6) <= 1.0


def test_mechanism_calibrates_to_a_ledger():
    from dpledger import Ledger

    ledger = Ledger(1.0, 1e-6)
    mech = calibrate.mechanism(lambda s: mechanisms.DiscreteGaussian(s), ledger=ledger, count=4)
    for _ in range(4):
        ledger.spend(mech)
    assert ledger.spent[0] >= 0.99
    with pytest.raises(InvalidArgumentError, match="omit `epsilon`"):
        calibrate.mechanism(lambda s: mechanisms.Laplace(s), ledger=ledger, epsilon=1.0)
    with pytest.raises(InvalidArgumentError, match="or a `ledger`"):
        calibrate.mechanism(lambda s: mechanisms.Laplace(s), epsilon=1.0)
    with pytest.raises(InvalidArgumentError, match="with a `ledger` only"):
        calibrate.mechanism(lambda s: mechanisms.Laplace(s), epsilon=1.0, delta=0.0, share=0.5)


def test_mechanism_calibrates_its_own_event():
    mech = calibrate.mechanism(
        lambda s: mechanisms.Gaussian(s, dimension=4), epsilon=1.0, delta=1e-5, count=3
    )
    assert acc.delta(mech.event * 3, 1.0) <= 1e-5
    smaller = mechanisms.Gaussian(mech.sigma * (1 - 1e-6), dimension=4)
    assert acc.delta(smaller.event * 3, 1.0) > 1e-5


def test_split_budget():
    shares = calibrate.split_budget(1.0, [1, 2, 1], currency="zcdp")
    assert math.fsum(shares) <= 1.0
    assert shares[1] == pytest.approx(0.5, rel=1e-14)
    gdp_shares = calibrate.split_budget(2.0, [1, 3], currency="gdp")
    assert math.sqrt(sum(m * m for m in gdp_shares)) <= 2.0
    assert gdp_shares[1] ** 2 / gdp_shares[0] ** 2 == pytest.approx(3.0, rel=1e-12)
    with pytest.raises(InvalidArgumentError, match=r"`weights\[1\]`"):
        calibrate.split_budget(1.0, [1, -1])
    with pytest.raises(InvalidArgumentError, match="`currency`"):
        calibrate.split_budget(1.0, [1], currency="rdp")


def test_gaussian_sigmas_jointly_exact():
    sigmas = calibrate.gaussian_sigmas(1.0, 1e-5, [1.0, 2.0, 0.5], weights=[1, 1, 2])
    joint = ev.Composed(
        tuple(ev.Gaussian(s, d) for s, d in zip(sigmas, [1.0, 2.0, 0.5], strict=True))
    )
    assert acc.delta(joint, 1.0) <= 1e-5
    # jointly exact: the total μ equals that of the single calibrated Gaussian
    mu = math.sqrt(sum((d / s) ** 2 for s, d in zip(sigmas, [1.0, 2.0, 0.5], strict=True)))
    assert mu == pytest.approx(1 / calibrate.gaussian_sigma(1.0, 1e-5), rel=1e-9)


BAD = [-1.0, 0.0, math.nan, math.inf]


@pytest.mark.parametrize("bad", BAD)
def test_bad_epsilon(bad):
    with pytest.raises(InvalidArgumentError, match="`epsilon`"):
        calibrate.gaussian_sigma(bad, 1e-5)
    with pytest.raises(InvalidArgumentError, match="`epsilon`"):
        calibrate.laplace_scale(bad)


@pytest.mark.parametrize("bad", [-1e-5, 1.0, 2.0, math.nan])
def test_bad_delta(bad):
    with pytest.raises(InvalidArgumentError, match="`delta`"):
        calibrate.gaussian_sigma(1.0, bad)


@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True)))
def test_bad_sampling_rate(bad):
    with pytest.raises(InvalidArgumentError, match="`sampling_rate`"):
        calibrate.gaussian_sigma(1.0, 1e-5, sampling_rate=bad)


@given(st.integers(max_value=0))
def test_bad_count(bad):
    with pytest.raises(InvalidArgumentError, match="`count`"):
        calibrate.gaussian_sigma(1.0, 1e-5, count=bad)


def test_gaussian_needs_positive_delta():
    with pytest.raises(InvalidArgumentError, match="`delta`"):
        calibrate.gaussian_sigma(1.0, 0.0)


def test_cli_calibrate(capsys):
    assert (
        main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--count", "1000"]) == 0
    )
    out = capsys.readouterr().out
    assert "117.9729308" in out and "achieved" in out
    assert main(["calibrate", "laplace", "--epsilon", "1", "--count", "10"]) == 0
    assert "scale" in capsys.readouterr().out
    assert main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "0"]) == 2


def test_a_sampling_rate_of_one_is_the_unsampled_release():
    # every record in every batch: q = 1 is no subsampling (it crashed in log1p(-q))
    sampled = calibrate.gaussian_sigma(1.0, 1e-5, count=10, sampling_rate=1.0)
    assert sampled == calibrate.gaussian_sigma(1.0, 1e-5, count=10)


def test_discrete_gaussian_at_an_absurd_epsilon_is_a_number_not_a_crash():
    # σ² underflows: the PLD pair is not enumerated, the Rényi route answers
    sigma = calibrate.discrete_gaussian_sigma(1e300, 1e-6)
    assert 0 < sigma < 1e-100


@pytest.mark.parametrize("tiny", [5e-324, 1e-320, 1e-310])
def test_gaussian_sigmas_with_a_subnormal_sensitivity_meets_the_target(tiny):
    """helper-37 F3: σ = Δ/μ for a subnormal Δ lost its precision and the re-accounting
    loop, stepping by 2⁻⁴⁰, never ended (5e-324: no return after 20 s). The step now
    doubles: the answer comes at once and meets the target when re-accounted."""
    sigmas = calibrate.gaussian_sigmas(1.0, 1e-5, [tiny, 1.0])
    joint = ev.Composed(tuple(ev.Gaussian(s, d) for s, d in zip(sigmas, [tiny, 1.0], strict=True)))
    assert acc.delta(joint, 1.0) <= 1e-5
    assert sigmas[1] == pytest.approx(calibrate.gaussian_sigmas(1.0, 1e-5, [1.0, 1.0])[1], rel=0.1)
