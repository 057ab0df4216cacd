"""Numerical PLD accounting: valid upper bounds, tight, both subsampling directions."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dpledger.accountant as acc
from dpledger import calibrate
from dpledger import events as ev
from dpledger.accountant._pairs import GaussianPair, LaplacePair, RRPair, SubsampledPair
from dpledger.accountant.pld import connect_the_dots, epsilon_bounds, epsilon_lower_bound
from dpledger.errors import NotApplicableError
from tests import _reference as ref

DPSGD = ev.PoissonSampled(ev.Gaussian(1.1), 0.01) * 10_000
DPSGD_SMALL = ev.PoissonSampled(ev.Gaussian(1.0), 0.004) * 3_000
# ε(1e-6) of 100 Laplace releases of scale 1, exact: 71.54600365967490428864955; computed
# in closed form (atoms at ±1 and an exponentially tilted Irwin–Hall sum for the smooth
# part, mpmath at 100 and 200 digits, identical) and cross-checked by an extrapolated
# fine-grid convolution (3e-11). Rounded down here, so that "never below" stays strict.
LAPLACE_100 = 71.5460036596749


def test_reference_dpsgd():
    """q = 0.01, σ = 1.1, 10,000 steps, δ = 1e-5: within 4e-5 of 5.192584, never below."""
    eps = acc.epsilon(DPSGD, 1e-5, method="pld")
    assert 5.192584 <= eps <= 5.192584 + 4e-5
    assert acc.epsilon(DPSGD, 1e-5) == eps  # auto picks PLD here


@pytest.mark.parametrize(
    ("event", "delta", "reference"),
    [
        (DPSGD, 1e-5, 5.192584),
        (DPSGD_SMALL, 1e-5, 1.1610147),
        (ev.Laplace(1.0) * 100, 1e-6, LAPLACE_100),
        # exact: 83.530701678483612 (tests/_reference.kov_epsilon, mpmath at 40 digits);
        # the bracket is now exact to ~1e-13 (issue 15 round 4), so 8 digits were too few
        (ev.PureDP(1.0) * 100, 1e-6, 83.530701678483612),
    ],
)
def test_bracket_is_narrow(event, delta, reference):
    """The default bracket is at most 1e-3 wide relative to its upper end (issue 15; it
    was 6.7e-3 on DP-SGD with the Hoeffding-corrected rounded-down lower end)."""
    lower, upper = epsilon_bounds(event, delta)
    assert lower <= reference <= upper
    assert upper - lower <= 1e-3 * upper


@pytest.mark.parametrize(("event", "reference"), [(DPSGD, 5.192584), (DPSGD_SMALL, 1.1610147)])
def test_bracket_reaches_1e_5(event, reference):
    lower, upper = epsilon_bounds(event, 1e-5, rtol=1e-5)
    assert lower <= reference <= upper
    assert upper - lower <= 1e-5 * upper


def test_reference_dpsgd_small_rate():
    eps = acc.epsilon(DPSGD_SMALL, 1e-5, method="pld")
    assert 1.1610147 <= eps <= 1.1610147 + 4e-5


def test_reference_laplace():
    """100 Laplace releases, scale 1: within 1e-6 relative of the exact value, never below."""
    eps = acc.epsilon(ev.Laplace(1.0) * 100, 1e-6, method="pld")
    assert LAPLACE_100 <= eps <= LAPLACE_100 * (1 + 1e-6)


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.5, 20.0), st.integers(1, 300)), min_size=1, max_size=3),
    st.sampled_from([1e-3, 1e-6, 1e-9, 1e-12]),
)
# both once fell ~1e-9 relative below the exact ε: cancellation in the grid masses, then
# correlated transform rounding (fixed by quadrature masses, a full noise sum and tilting)
@example(parts=[(3.5, 33)], delta=1e-9)
@example(parts=[(1.0, 6)], delta=1e-9)
def test_pld_bounds_contain_exact_gaussian(parts, delta):
    """For compositions of Gaussians (exact value known) PLD ε ≥ exact and is tight."""
    event = ev.Composed(tuple(ev.Gaussian(s) * k for s, k in parts))
    mu = math.sqrt(sum(k / s**2 for s, k in parts))
    exact = float(ref.gaussian_epsilon(delta, mu))
    lower, upper = epsilon_bounds(event, delta)
    assert lower <= exact <= upper
    assert upper - lower <= 1e-3 * upper  # the default rtol
    pld = acc.epsilon(event, delta, method="pld")
    assert exact <= pld <= exact + 1e-4 * max(1.0, exact)  # stated tolerance at the default grid


@pytest.mark.parametrize(
    ("scale", "shift", "count"),
    [(2.0, 3, 5), (1.0, 1, 20), pytest.param(5.0, 2, 50, marks=pytest.mark.slow)],
)
def test_discrete_laplace_bounds_contain_exact(scale, shift, count):
    """The lower end uses the attained 1-D discrete Laplace pair (not the RR worst case)."""
    exact = float(ref.discrete_laplace_epsilon(scale, shift, count, 1e-6))
    lower, upper = epsilon_bounds(ev.DiscreteLaplace(scale, shift) * count, 1e-6)
    assert lower <= exact <= upper
    assert exact - lower <= 1e-4 * exact  # tight from below
    # the upper end is the ε-DP worst case (randomized response), certified from below
    worst_lower, _ = epsilon_bounds(ev.PureDP(shift / scale) * count, 1e-6)
    assert upper >= worst_lower


@pytest.mark.parametrize(
    ("sigma", "shift", "count"), [(2.0, 1, 3), (1.0, 1, 5), (3.0, 2, 2), (0.5, 1, 4)]
)
def test_discrete_gaussian_lower_bound_against_exact(sigma, shift, count):
    """Lower bound from the attained 1-D pair: below the exact ε, within 1e-4 relative."""
    exact = float(ref.discrete_gaussian_epsilon(sigma, shift, count, 1e-6))
    lower = epsilon_lower_bound(ev.DiscreteGaussian(sigma, shift) * count, 1e-6)
    upper = acc.epsilon(ev.DiscreteGaussian(sigma, shift) * count, 1e-6)
    assert lower <= exact <= upper
    # 5e-4: the lower end carries the transform-error floor (issue 10 item 12b), large
    # for lattice PLDs (σ = 0.5) whose spectrum does not decay
    assert exact - lower <= 5e-4 * exact


@pytest.mark.parametrize(
    ("sigma", "shift", "count"),
    [(2.0, 1, 3), (1.0, 1, 5), (3.0, 2, 2), pytest.param(5.0, 1, 20, marks=pytest.mark.slow)],
)
def test_one_dimensional_discrete_gaussian_is_exact(sigma, shift, count):
    """dimension=1: the ⌊Δ⌋-shift pair dominates (MLR), so PLD brackets the exact value."""
    exact = float(ref.discrete_gaussian_epsilon(sigma, shift, count, 1e-6))
    event = ev.DiscreteGaussian(sigma, shift, dimension=1) * count
    lower, upper = epsilon_bounds(event, 1e-6)
    assert lower <= exact <= upper <= exact * (1 + 1e-6)
    pld = acc.epsilon(event, 1e-6, method="pld")
    assert exact <= pld <= exact * (1 + 1e-6)
    assert acc.epsilon(event, 1e-6) == pld  # auto picks it: tighter than zCDP/RDP
    assert upper < acc.epsilon(ev.DiscreteGaussian(sigma, shift) * count, 1e-6, method="zcdp")
    with pytest.raises(NotApplicableError):  # dimension unknown: no dominating pair here
        acc.epsilon(ev.DiscreteGaussian(sigma, shift) * count, 1e-6, method="pld")


def _discrete_gaussian_delta(
    sigma: float, shift: int, epsilon: float, rate: float = 1.0
) -> mpmath.mpf:
    """δ(ε) of N_Z(0, σ²) = A vs N_Z(shift, σ²) = B, Poisson-sampled at ``rate``: the
    larger of (1 − γ)B + γA against B and B against (1 − γ)B + γA (at γ = 1 the pair in
    both orders), by direct enumeration over ±(60σ + shift) in 80 digits (independent of
    the library; the rest is < e^{-1800})."""
    with mpmath.workdps(80):
        s2 = 2 * mpmath.mpf(sigma) ** 2
        half = int(60 * sigma) + shift + 1
        xs = range(-half, half + 1)
        a = [mpmath.e ** (-mpmath.mpf(x * x) / s2) for x in xs]
        b = [mpmath.e ** (-mpmath.mpf((x - shift) ** 2) / s2) for x in xs]
        norm = mpmath.fsum(a)
        g, e = mpmath.mpf(rate), mpmath.e ** mpmath.mpf(epsilon)
        pairs = [(p / norm, q / norm) for p, q in zip(a, b, strict=True)]
        remove = mpmath.fsum(max(0, (1 - g) * q + g * p - e * q) for p, q in pairs)
        add = mpmath.fsum(max(0, q - e * ((1 - g) * q + g * p)) for p, q in pairs)
        return max(remove, add)


@pytest.mark.parametrize(("sigma", "shift"), [(0.5, 1), (2.0, 1), (3.0, 2), (7.3, 1)])
def test_one_discrete_gaussian_upper_bound_keeps_its_far_tail(sigma, shift):
    """The dominating 1-D pair left out atoms below 1e-30 of the mode and everything past
    ±(12σ + shift + 1) — valid for the lower bound only. For the upper one that mass now
    goes to loss +∞. Before: δ̄(10) = 0 at σ = 2 (exactly 3.2e-89), and ε(1e-40) = 5.875
    where δ(5.875) is 1.1e-34."""
    event = ev.DiscreteGaussian(sigma, shift, dimension=1)
    far = 4.0 * shift * shift / (2 * sigma * sigma) + 6.0  # past the losses of the mode
    for epsilon in (far, far + 20.0):
        exact = _discrete_gaussian_delta(sigma, shift, epsilon)
        assert acc.delta(event, epsilon, method="pld") >= exact
        assert acc.delta(event, epsilon) >= exact
    for delta in (1e-12, 1e-35, 1e-45, 1e-100):
        for method in ("pld", "auto"):
            try:
                epsilon = acc.epsilon(event, delta, method=method)
            except NotApplicableError:
                continue
            if math.isfinite(epsilon):
                assert _discrete_gaussian_delta(sigma, shift, epsilon) <= delta, (method, delta)


@pytest.mark.slow
def test_a_subsampled_one_dimensional_discrete_gaussian_is_accounted():
    """The dominating discrete Gaussian pair carries its far tail at +∞; Poisson sampling
    refused any base pair with mass there, so this event (accounted before) raised
    NotApplicableError under every method (helper-31). Both directions are checked against
    an 80-digit enumeration (:func:`_discrete_gaussian_delta`)."""

    for sigma, shift, rate in ((2.0, 1, 0.1), (1.0, 2, 0.01)):
        event = ev.PoissonSampled(ev.DiscreteGaussian(sigma, shift, dimension=1), rate)
        for delta in (1e-6, 1e-12):
            epsilon = acc.epsilon(event, delta, method="pld")
            assert _discrete_gaussian_delta(sigma, shift, epsilon, rate) <= delta
            assert acc.epsilon(event, delta) <= epsilon
        for epsilon in (0.1, 1.0, 3.0):
            assert acc.delta(event, epsilon, method="pld") >= _discrete_gaussian_delta(
                sigma, shift, epsilon, rate
            )
    sigma = calibrate.solve(
        lambda s: ev.PoissonSampled(ev.DiscreteGaussian(s, dimension=1), 0.1) * 10,
        epsilon=1.0,
        delta=1e-6,
    )
    assert (
        acc.delta(ev.PoissonSampled(ev.DiscreteGaussian(sigma, dimension=1), 0.1) * 10, 1.0) <= 1e-6
    )


def test_one_release_is_its_own_composition(monkeypatch):
    """A single release is not sent through the FFT (the transform and its recomputed low
    frequencies cost ~0.3 s per query for one discrete Gaussian at ε = 10, and count()
    with noise="gaussian" took 12 s to calibrate); its bounds still bracket the exact δ."""
    from dpledger.accountant.pld import _composition

    def refuse(*args, **kwargs):
        raise AssertionError("a single release was transformed")

    monkeypatch.setattr(_composition.sp_fft, "rfft", refuse)
    for sigma, epsilon in ((1.0, 1.0), (0.3, 10.0), (1.0, 3.0)):
        event = ev.Gaussian(sigma)
        summary = acc.pld.PLDAccountant.summarize(event)
        lower, upper = summary.delta_bounds(epsilon)
        exact = ref.gaussian_delta(epsilon, 1 / sigma)
        assert lower <= exact <= upper <= exact * (1 + 1e-6)
    event = ev.DiscreteGaussian(0.3873, 1, dimension=1)
    lower, upper = acc.pld.PLDAccountant.summarize(event).delta_bounds(10.0)
    exact = _discrete_gaussian_delta(0.3873, 1, 10.0)
    assert lower <= exact <= upper <= exact * (1 + 1e-6)
    monkeypatch.undo()
    # two releases are composed as before
    assert acc.delta(ev.Gaussian(1.0) * 2, 1.0, method="pld") >= ref.gaussian_delta(
        1.0, math.sqrt(2)
    )


@pytest.mark.parametrize(
    ("scale", "shift", "count"),
    [(2.0, 3, 5), (1.0, 1, 20), pytest.param(5.0, 2, 50, marks=pytest.mark.slow)],
)
def test_one_dimensional_discrete_laplace_is_exact(scale, shift, count):
    exact = float(ref.discrete_laplace_epsilon(scale, shift, count, 1e-6))
    lower, upper = epsilon_bounds(ev.DiscreteLaplace(scale, shift, dimension=1) * count, 1e-6)
    assert lower <= exact <= upper <= exact * (1 + 1e-5)
    # without a dimension the ε-DP worst case (randomized response) is used: valid, looser
    # (equal for shift 1, where the two pairs coincide, up to discretisation noise)
    worst_case = epsilon_bounds(ev.DiscreteLaplace(scale, shift) * count, 1e-6)[1]
    assert worst_case >= exact and worst_case >= upper * (1 - 1e-8)


def test_mechanism_events_carry_their_dimension():
    from dpledger import mechanisms

    assert mechanisms.DiscreteGaussian(sigma=3.0).event.dimension == 1
    assert mechanisms.Gaussian(1.0, dimension=3).event.dimension == 3
    event = mechanisms.Laplace(1.0).event
    assert event.dimension == 1 and ev.from_dict(ev.to_dict(event)) == event
    # an event without a dimension serialises as before (no "dimension" key)
    assert "dimension" not in ev.to_dict(ev.DiscreteGaussian(2.0))
    with pytest.raises(ValueError, match="dimension"):
        ev.DiscreteGaussian(2.0, dimension=0)


def test_sampling_without_replacement_lower_bound_uses_the_attained_pair():
    swor = ev.SampledWithoutReplacement(ev.Gaussian(1.1), 100, 10_000) * 10_000
    poisson = ev.PoissonSampled(ev.Gaussian(1.1), 0.01) * 10_000
    lower = epsilon_lower_bound(swor, 1e-5)
    assert lower == acc.pld.PLDAccountant.summarize(poisson).lower_epsilon(1e-5)
    assert lower <= acc.epsilon(swor, 1e-5)
    with pytest.raises(NotApplicableError):
        acc.epsilon(swor, 1e-5, method="pld")  # no dominating pair: no PLD upper bound


@pytest.mark.parametrize(
    ("pair", "losses"),
    [
        (GaussianPair(0.7), None),
        (LaplacePair(0.9), [0.0, 0.9]),
        (RRPair(1.2, 3), None),
        (SubsampledPair(GaussianPair(1.0), 0.05, "remove"), None),
        (SubsampledPair(GaussianPair(1.0), 0.05, "add"), None),
        (SubsampledPair(LaplacePair(1.0), 0.2, "remove"), None),
    ],
)
def test_connect_the_dots_dominates(pair, losses):
    """The grid PLD's δ(ε) is ≥ the exact hockey-stick everywhere and equal on the grid."""
    h = 1e-3
    d = connect_the_dots(pair, h)
    grid = (d.start + np.arange(len(d.masses))) * h
    assert np.all(d.masses >= 0)
    for eps in np.linspace(grid[0] + 0.01, grid[-1] - 0.01, 37):
        above = grid > eps
        value = float(np.sum(d.masses[above] * -np.expm1(eps - grid[above]))) + d.infinite
        exact = float(pair.hockey(np.array([eps]))[0])
        assert value >= exact - 1e-12
    on_grid = grid[len(grid) // 3]
    above = grid > on_grid
    value = float(np.sum(d.masses[above] * -np.expm1(on_grid - grid[above]))) + d.infinite
    assert value == pytest.approx(float(pair.hockey(np.array([on_grid]))[0]), abs=1e-9)


@pytest.mark.parametrize("eps", [-0.3, 0.0, 0.05, 0.4])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_subsampled_hockey_by_integration(eps, direction):
    """Both subsampling directions' δ(ε) against direct integration (the kink included)."""
    q, mu = 0.1, 0.8
    pair = SubsampledPair(GaussianPair(mu), q, direction)
    with mpmath.workdps(30):
        a = lambda x: mpmath.npdf(x, mu, 1)  # noqa: E731
        b = lambda x: mpmath.npdf(x, 0, 1)  # noqa: E731
        mix = lambda x: (1 - q) * b(x) + q * a(x)  # noqa: E731
        p, qq = (mix, b) if direction == "remove" else (b, mix)
        e = mpmath.exp(eps)
        # the integrand's kink: p(x) = e^ε q(x), found by root finding
        f = lambda x: p(x) - e * qq(x)  # noqa: E731
        try:
            kink = mpmath.findroot(f, 0.5)
            points = [-mpmath.inf, kink, mpmath.inf]
        except (ValueError, ZeroDivisionError):
            points = [-mpmath.inf, 0, mpmath.inf]
        value = mpmath.quad(lambda x: max(f(x), 0), points)
    assert float(pair.hockey(np.array([eps]))[0]) == pytest.approx(
        float(value), rel=1e-9, abs=1e-15
    )


def test_both_directions_are_used():
    """Taking only the remove direction would under-report ε when the add side dominates."""
    event = ev.PoissonSampled(ev.Gaussian(0.6), 0.5) * 4
    summary = acc.PLDAccountant.summarize(event)
    directions = summary._directions("upper", 1e-16)
    assert len(directions) == 2
    values = [c.delta(0.5, "upper") for c in directions]
    assert summary.delta(0.5) == max(values)


def test_pld_refuses_unsupported():
    with pytest.raises(NotApplicableError, match="pld"):
        acc.epsilon(ev.ZCDP(0.1), 1e-5, method="pld")
    with pytest.raises(NotApplicableError, match="pld"):
        acc.epsilon(ev.SampledWithoutReplacement(ev.Gaussian(1.0), 10, 100), 1e-5, method="pld")


def test_pld_tighter_than_rdp_and_approxdp_infinite_mass():
    assert acc.epsilon(DPSGD, 1e-5, method="pld") < acc.epsilon(DPSGD, 1e-5, method="rdp")
    # (ε, δ) releases: the δ atoms compose as 1 − Π(1 − δᵢ)
    event = ev.ApproxDP(0.5, 1e-4) * 10
    assert acc.delta(event, 100.0, method="pld") == pytest.approx(1 - (1 - 1e-4) ** 10, rel=1e-9)


def test_calibration_through_pld():
    sigma = calibrate.gaussian_sigma(8.0, 1e-5, count=10_000, sampling_rate=0.01)
    event = ev.PoissonSampled(ev.Gaussian(sigma), 0.01) * 10_000
    assert acc.delta(event, 8.0) <= 1e-5
    smaller = ev.PoissonSampled(ev.Gaussian(sigma * (1 - 1e-4)), 0.01) * 10_000
    assert acc.delta(smaller, 8.0, method="pld") > 1e-5  # within 1e-4 of the smallest
    assert sigma < calibrate.gaussian_sigma(
        8.0, 1e-5, count=10_000, sampling_rate=0.01, method="rdp"
    )


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_pld_works_in_a_forked_child():
    """The two directions run on a thread pool; a forked child must get its own."""
    import os

    event = ev.PoissonSampled(ev.Gaussian(1.1), 0.01) * 100
    parent = acc.epsilon(event, 1e-5, method="pld")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            other = ev.PoissonSampled(ev.Gaussian(1.2), 0.01) * 100
            os.write(write, repr(acc.epsilon(other, 1e-5, method="pld")).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = float(os.read(read, 100).decode())
    assert status == 0 and 0 < child < parent


def test_pld_upper_bound_for_a_gaussian_composition_at_small_delta():
    """Once 4e-7 relative below the exact δ: the untilted guard saw negative errors only.

    The transform's error is now bounded (``_transform_error``); the untilted curve alone
    (``delta_curve``, never tilted) must hold too, since ε takes the smaller of the two.
    """
    mu = math.sqrt(32) / 0.99999
    exact = float(ref.gaussian_epsilon(1e-9, mu))
    assert acc.epsilon(ev.Gaussian(0.99999) * 32, 1e-9, method="pld") >= exact
    summary = acc.PLDAccountant.summarize(ev.Gaussian(0.99999) * 32)
    exact_delta = float(ref.gaussian_delta(exact, mu))
    assert summary.delta_curve([exact])[0] >= exact_delta


def _exact_power(counts: list[int], exponent: int) -> list[int]:
    """The exact ``exponent``-fold convolution of integer weights (binary powering)."""
    result = [1]
    base = np.array(counts, dtype=object)
    power = np.array(result, dtype=object)
    while exponent:
        if exponent & 1:
            power = np.convolve(power, base)
        exponent >>= 1
        if exponent:
            base = np.convolve(base, base)
    return list(power)


@pytest.mark.parametrize(
    ("parts", "bits"),
    [
        ([(0, [3, 5, 1000, 7, 1], 1)], 10),  # one release, no power: the normwise regime
        ([(-2, [1, 2, 1], 64)], 2),  # concentrated, a high power
        ([(0, [1, 1], 200)], 1),  # binomial: every frequency is raised
        ([(-3, [5, 1, 9, 2, 7, 7], 9), (1, [1, 3], 17)], 5),  # two parts
    ],
)
def test_transform_error_bound_holds_against_exact_integer_convolution(parts, bits):
    """The computed composition is within the bounds of ``_transform_error`` (both norms).

    Masses are dyadic (weights / 2^bits, exact in binary), so the exact composition is an
    integer convolution; it is compared point by point with the FFT composition.
    """
    from dpledger.accountant.pld import _compose, _Discrete

    discrete = []
    exact = [1]
    exact_start = 0
    denominator = 1
    for start, weights, count in parts:
        scale = 2**bits
        total = sum(weights)
        # a probability vector with dyadic masses: weights/total is not dyadic, so the
        # weights are already the masses in units of 1/scale (pad the rest onto the first)
        assert total <= scale
        masses = list(weights)
        masses[0] += scale - total
        discrete.append((_Discrete(start, np.array(masses, dtype=float) / scale, 0.0), count))
        exact = list(
            np.convolve(
                np.array(exact, dtype=object), np.array(_exact_power(masses, count), dtype=object)
            )
        )
        exact_start += start * count
        denominator *= scale**count
    composed = _compose(discrete, 1.0, window_tail=1e-300)
    window = np.zeros(len(composed.masses), dtype=object)
    offset = exact_start - composed.start
    assert offset >= 0 and offset + len(exact) <= len(window)
    window[offset : offset + len(exact)] = exact
    errors = np.array(
        [
            float(Fraction(int(c), denominator) - Fraction(float(m)))
            for c, m in zip(window, composed.masses, strict=True)
        ]
    )
    assert float(np.max(np.abs(errors))) <= composed.error_max
    assert float(np.sqrt(np.sum(errors * errors))) <= composed.error_l2
    # the guard of δ at every ε bounds the error of the δ computed from these masses
    for j in range(0, len(window), max(1, len(window) // 7)):
        eps = (composed.start + j) * composed.h - 0.5
        weights = np.maximum(0.0, -np.expm1(eps - (composed.start + np.arange(len(window)))))
        assert abs(float(np.sum(errors * weights))) <= composed.rounding_guard(eps)


@pytest.mark.parametrize("chunk", [1, 1 << 18])
@pytest.mark.parametrize("seed", range(4))
def test_direct_transform_is_within_its_bound_of_50_digit_sums(seed, chunk, monkeypatch):
    """The recomputed low frequencies (``_direct_transform``) against 50-digit sums:
    every value within its bound, and at the lowest frequencies of a concentrated
    distribution the bound is a few u·S — far below the FFT's γ_F·S. Both with the
    frequencies taken one at a time (chunk 1) and all at once."""
    from dpledger.accountant.pld import _transform
    from dpledger.accountant.pld._transform import _centre, _direct_transform, _fft_error

    monkeypatch.setattr(_transform, "_DIRECT_CHUNK", chunk)

    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 2500))
    size = 1 << int(rng.integers(14, 17))
    # a concentrated body and a sparse heavy tail, as a subsampled release's PLD
    masses = np.exp(-0.5 * ((np.arange(n) - n / 5) / (n / 40)) ** 2)
    masses += 1e-6 * rng.random(n) * (rng.random(n) < 0.3)
    masses /= masses.sum()
    centre = _centre(masses) + int(rng.integers(-2, 3))
    freqs = np.array([1, 2, 3, 7, int(rng.integers(8, size // 2))])
    total = math.fsum(masses)
    values, bounds = _direct_transform(masses, centre, size, freqs, total)
    with mpmath.workdps(50):
        for j, value, bound in zip(freqs, values, bounds, strict=True):
            exact = mpmath.fsum(
                mpmath.mpf(float(m)) * mpmath.expjpi(-2 * mpmath.mpf(int(j) * (i - centre)) / size)
                for i, m in enumerate(masses)
                if m > 0
            )
            error = float(abs(mpmath.mpc(value.real, value.imag) - exact))
            assert error <= bound, (j, error, bound)
    assert bounds[0] < _fft_error(size) * total / 20


@pytest.mark.slow
def test_direct_transform_memory_does_not_grow_with_window_times_frequencies():
    """256 recomputed frequencies over a window of 2²² points: the (frequency × block)
    arrays are built a few frequencies at a time. Built at once they took 128 MiB each and
    the call peaked at 1.28 GiB (NoisyGD at Poisson rate 1e-6 at 2.8 GB in one PLD
    evaluation); the peak is now what the 32 MiB window itself needs, below 4× it, and
    the values equal those computed one frequency at a time."""
    import tracemalloc

    from dpledger.accountant.pld._transform import _centre, _direct_transform

    n = 1 << 22
    masses = np.exp(-0.5 * ((np.arange(n) - n / 2) / (n / 50)) ** 2)
    masses /= masses.sum()
    centre, size, total = _centre(masses), n, math.fsum(masses)
    freqs = np.arange(1, 257)
    tracemalloc.start()
    try:
        values, bounds = _direct_transform(masses, centre, size, freqs, total)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * masses.nbytes, peak / 2**20
    one = [_direct_transform(masses, centre, size, freqs[j : j + 1], total) for j in (0, 100, 255)]
    for j, (v, b) in zip((0, 100, 255), one, strict=True):
        assert abs(values[j] - v[0]) <= bounds[j] + b[0]
        assert bounds[j] == pytest.approx(b[0], rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 5000),
    low=st.floats(-320.0, 250.0),
    span=st.floats(0.0, 40.0),
    zeros=st.floats(0.0, 0.9),
    seed=st.integers(0, 2**32 - 1),
)
def test_mass_total_is_within_its_bound_of_the_exact_sum(n, low, span, zeros, seed):
    """``_mass_total`` against the exact rational sum: within (1 + 2⁻¹⁷)·u·S, as its
    docstring proves, over magnitudes from subnormal to 1e290 (its fallback included)."""
    from dpledger.accountant.pld._transform import _TOTAL_ERROR, _mass_total

    rng = np.random.default_rng(seed)
    masses = rng.random(n) * 10.0 ** rng.uniform(low, low + span, n)
    masses[rng.random(n) < zeros] = 0.0
    exact = sum((Fraction(float(m)) for m in masses), Fraction(0))
    total = _mass_total(masses)
    assert abs(Fraction(total) - exact) <= Fraction(_TOTAL_ERROR) * exact


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 3000),
    log2_h=st.integers(-16, -1),
    start=st.integers(-3000, 3000),
    cut=st.floats(0.0, 1.0),
    below=st.floats(0.0, 1.0, exclude_max=True),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=1, log2_h=-1, start=0, cut=0.0, below=2.225073858507e-311, seed=2)  # subnormal
def test_composition_tail_sum_against_mpmath(n, log2_h, start, cut, below, seed):
    """δ's body Σ_{ℓᵢ>ε} mᵢ(1 − e^{ε−ℓᵢ}) from the block suffix sums (``_body``) against
    a 40-digit sum over every point: relative error below 1e-13 (the proof: γ of a few
    thousand terms), plus subnormal rounding where the body underflows. h a power of two,
    so the grid losses are exact floats and only the summation is tested."""
    from dpledger.accountant.pld._composition import _Composition

    rng = np.random.default_rng(seed)
    h = 2.0**log2_h
    masses = rng.exponential(size=n) * np.exp(-rng.uniform(0.0, 60.0, n))
    masses[rng.random(n) < 0.3] = 0.0
    composition = _Composition.build(start, masses, 0.0, 0.0, 0.0, h, (0.0, 0.0))
    j = min(n - 1, int(cut * n))
    epsilon = (start + j) * h - below * h
    first = composition._first_above(epsilon)
    assert first in (j, j + 1)  # j + 1 where ε rounds onto ℓⱼ
    if first == n:
        return
    body, _ = composition._body(epsilon, first)
    with mpmath.workdps(40):
        exact = mpmath.fsum(
            mpmath.mpf(float(masses[i]))
            * -mpmath.expm1(mpmath.mpf(epsilon) - (start + i) * mpmath.mpf(h))
            for i in range(first, n)
            if masses[i] > 0
        )
        if exact == 0:
            assert body == 0.0
        else:
            # relative, plus the absolute rounding of subnormal results (a few operations of
            # at most 2⁻¹⁰⁷⁵ per term: no relative bound exists below 2⁻¹⁰²², e.g. a body of
            # 2.409e-320 is the nearest float to 2.40885e-320)
            subnormal = 4 * (n - first) * mpmath.mpf(2) ** -1074
            assert abs(mpmath.mpf(body) - exact) <= 1e-13 * exact + subnormal, (body, exact)


def test_recomputed_frequencies_shrink_the_rounding_guard(monkeypatch):
    """Recomputing the carrying frequencies directly makes the guard of 3,000 DP-SGD steps
    ≥ 5x smaller than the FFT's bound alone (measured ~14x) — and the answer stays an
    upper bound on the other one's (both are valid)."""
    from dpledger.accountant.pld import PLDAccountant, _composition, _transform

    event = ev.PoissonSampled(ev.Gaussian(1.0), 0.004) * 3000

    def guard() -> tuple[float, float]:
        summary = PLDAccountant.summarize(event)
        directions = summary._directions("upper", _composition._window_tail_for(1e-5))
        eps = 1.161
        return max(c.rounding_guard(eps) for c in directions), summary.epsilon(1e-5)

    direct, eps_direct = guard()
    monkeypatch.setattr(_transform, "_DIRECT_MAX", 0)
    fft_only, eps_fft = guard()
    assert direct * 5 <= fft_only
    assert eps_direct <= eps_fft * (1 + 1e-6)


@pytest.mark.parametrize("size", [1024, 1536, 1280, 1800, 2000, 2025])
def test_fft_error_bound_holds_for_power_of_two_and_5_smooth_sizes(size):
    """The composition transforms at 5-smooth lengths (scipy's next_fast_len): the
    componentwise error of the computed real FFT stays below γ_F·‖x‖₁ (``_fft_error``),
    measured against a direct DFT in 80-bit arithmetic (pairwise sums), with a margin."""
    from scipy import fft as sp_fft

    from dpledger.accountant.pld._transform import _fft_error

    rng = np.random.default_rng(size)
    x = rng.random(size) ** 4 * (rng.random(size) < 0.6)
    computed = sp_fft.rfft(x)
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("needs 80-bit long double (x86) for the reference DFT")
    two_pi = 2 * np.longdouble("3.14159265358979323846264338327950288")
    n = np.arange(size, dtype=np.int64)
    js = np.arange(size // 2 + 1, dtype=np.int64)
    worst = 0.0
    for rows in np.array_split(np.arange(len(js)), 8):
        # j·n mod N exactly in integers, then the angle in 80-bit arithmetic
        angle = two_pi * (np.outer(js[rows], n) % size).astype(np.longdouble) / size
        real = np.sum(np.cos(angle) * x.astype(np.longdouble), axis=1)
        imag = -np.sum(np.sin(angle) * x.astype(np.longdouble), axis=1)
        error = np.abs(computed[rows].real - real) + np.abs(computed[rows].imag - imag)
        worst = max(worst, float(np.max(error)))
    assert worst <= _fft_error(size) * float(np.sum(x)) / 10


@pytest.mark.parametrize(("mu", "delta"), [(10.0, 1e-200), (22.0, 1e-60), (25.0, 1e-40)])
def test_p_mass_beyond_the_quadrature_range_is_not_dropped(mu, delta):
    """The Gaussian pair integrated outputs |x| ≤ 38.5 only and dropped P = N(μ, 1)'s mass
    above: 5.9e-179 at μ = 10, and ε(1e-200) came out 332.5 where the exact value is
    351.6 (helper review, issue 15). That mass now goes to +∞: the answer is never below
    the exact ε (here ∞: a mass at +∞ above δ certifies nothing finite)."""
    exact = float(ref.gaussian_epsilon(delta, mu))
    assert acc.epsilon(ev.Gaussian(1 / mu), delta, method="pld") >= exact


@pytest.mark.slow
@pytest.mark.parametrize(("mu", "delta"), [(10.0, 1e-200), (25.0, 1e-40)])
def test_bracket_contains_the_exact_epsilon_beyond_the_quadrature_range(mu, delta):
    """The same cases through ``epsilon_bounds`` (its lower end searches ~10 s here)."""
    exact = float(ref.gaussian_epsilon(delta, mu))
    lower, upper = epsilon_bounds(ev.Gaussian(1 / mu), delta)
    assert (lower is None or lower <= exact) and exact <= upper


def test_connect_the_dots_sends_the_mass_beyond_its_range_to_infinity():
    """Every monotone pair's P-mass outside the integrated outputs is in ``infinite``."""
    from scipy import special

    d = connect_the_dots(GaussianPair(10.0), 1e-2)
    assert d.infinite >= float(special.ndtr(10.0 - 37.0))  # P(N(10, 1) > 37) ≈ 1.3e-161
    for direction in ("remove", "add"):
        shape = SubsampledPair(GaussianPair(3.0), 0.01, direction).monotone()
        assert shape is not None and shape.beyond > 0.0
        assert (
            connect_the_dots(SubsampledPair(GaussianPair(3.0), 0.01, direction), 1e-2).infinite
            >= shape.beyond
        )


def test_mass_margin_grows_with_the_count_of_the_composition():
    """The relative margin for the masses' own error is 1e-7 + 3e-11 per release (a flat
    1e-7 was proven only to ~4,000 releases); each composition knows its count."""
    from dpledger.accountant.pld import PLDAccountant, _composition

    assert _composition._mass_margin(1) < _composition._mass_margin(10_000)
    assert _composition._mass_margin(10_000) >= 1e-7 + 10_000 * 2.4e-11
    summary = PLDAccountant.summarize(ev.PoissonSampled(ev.Gaussian(1.0), 0.01) * 700)
    for composition in summary._directions("upper"):
        assert composition.releases == 700


def test_subsampled_thresholds_past_the_float_range_against_mpmath():
    """At tiny rates and large losses (e^t/γ beyond 1.8e308) the subsampled pair's
    thresholds stay finite and exact (they overflowed to ∞, with a RuntimeWarning)."""
    import warnings

    rate, mu = 1e-300, 2.0
    t = np.array([0.5, 10.0, 700.0, 710.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inverse = GaussianPair(mu).subsampled_monotone(rate, "remove").inverse(t)
        threshold, ok = SubsampledPair(GaussianPair(mu), rate, "remove")._base_threshold(t, 1.0)
    assert ok.all()
    with mpmath.workdps(30):
        g = mpmath.mpf(rate)
        for i, x in enumerate(t.tolist()):
            v = mpmath.log(mpmath.expm1(x) / g + 1)
            assert abs(threshold[i] - v) <= 1e-13 * v
            assert abs(inverse[i] - (v + mu * mu / 2) / mu) <= 1e-13 * v


@pytest.mark.parametrize("rate", [1e-300, 1e-6, 0.5, 0.999])
def test_subsampled_loss_past_the_float_range_against_mpmath(rate):
    """log(1 − γ + γe^v), the subsampled pair's loss, for v beyond 709 (expm1 overflows):
    finite and exact, without a RuntimeWarning (it was ∞, with an overflow warning that
    reached users of NoisyGD at small sampling rates); unchanged below."""
    import warnings

    mu = 30.0
    x = np.array([-40.0, 0.0, 15.0, 38.0, 38.7, 40.0, 60.0, 1e3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        remove = GaussianPair(mu).subsampled_monotone(rate, "remove").loss(x)
        single = GaussianPair(mu).subsampled_monotone(rate, "remove").loss(np.float64(40.0))
    with mpmath.workdps(40):
        g = mpmath.mpf(rate)
        for value, point in zip(remove.tolist(), x.tolist(), strict=True):
            v = mu * mpmath.mpf(point) - mpmath.mpf(mu) ** 2 / 2
            exact = mpmath.log1p(g * mpmath.expm1(v))
            assert abs(value - exact) <= 1e-14 * abs(exact), (point, value)
    assert float(single) == remove[5]


@pytest.mark.parametrize("rate", [1e-300, 1e-10, 1e-3, 0.3, 0.5, 0.7, 1 - 2**-53, 1.0])
def test_mixture_threshold_against_mpmath(rate):
    """v = log((e^s − 1 + γ)/γ), the subsampled pair's threshold, within a few u of its
    condition number — for tiny s (e^s − 1 lost every digit: s = 1e-17 at γ = 1e-10 gave
    0, not 1e-7), for γ near 1 with very negative s (expm1(s) ≈ −1 lost them too: γ = 1,
    s = −36 gave −36.04) and past the float range of e^s/γ."""
    from dpledger.accountant._pairs import _mixture_threshold

    rng = np.random.default_rng(7)
    s = np.concatenate(
        [
            [1e-17, -1e-17, 1e-8, -36.0, 36.0, 700.0, -700.0, 710.0],
            rng.uniform(-50.0, 50.0, 100),
            10 ** rng.uniform(-20.0, 2.0, 100) * rng.choice([-1.0, 1.0], 100),
        ]
    )
    v, ok = _mixture_threshold(s, rate)
    with mpmath.workdps(60):
        for value, good, x in zip(v.tolist(), ok.tolist(), s.tolist(), strict=True):
            numerator = mpmath.exp(mpmath.mpf(x)) - (1 - mpmath.mpf(rate))  # e^s − 1 + γ
            if not good:
                assert numerator <= 1e-15 * rate  # none exists (or at the threshold)
                continue
            exact = mpmath.log(numerator / rate)
            # condition number of log(numerator) in the inputs e^s and (1 − γ)
            condition = (mpmath.exp(mpmath.mpf(x)) + abs(1 - rate)) / numerator
            assert abs(value - exact) <= 8e-16 * (abs(exact) + condition), (x, value, exact)


def test_delta_at_the_top_of_a_bounded_support_is_not_lost_to_rounding():
    """300 randomized responses of ε₀ = 0.1 (five categories, the grid path): the only
    loss above 30.0 is 300·ε₀ = 30 + 1.7e-15 (ε₀ is the float 0.1), with P-mass
    p^300. δ̄(30.0) was 0 — the atom sat on the grid point 0.1 − 7.6e-19 and the grid's
    losses were compared in floats — and a claim of ε = 30 at δ = 0 was audited "holds"
    (review). The exact δ comes from 60-digit mpmath."""
    from dpledger.accountant.pld import PLDAccountant

    event = ev.RandomizedResponse(0.1, categories=5) * 300
    with mpmath.workdps(60):
        e0 = mpmath.mpf(0.1)
        truthful = mpmath.exp(e0) / (mpmath.exp(e0) + 4)
        exact = truthful**300 * -mpmath.expm1(30 - 300 * e0)
    assert exact > 1e-300  # representable: the bound must see it
    assert PLDAccountant.summarize(event).delta(30.0) >= exact
    assert acc.delta(event, 30.0) >= exact
    from dpledger.audit import check_claim

    report = check_claim(
        {
            "claim": {"epsilon": 30.0, "delta": 0.0, "adjacency": "add_remove"},
            "release": [
                {"mechanism": "randomized_response", "epsilon": 0.1, "categories": 5, "count": 300}
            ],
        }
    )
    assert report.verdict not in ("holds", "holds_loosely")


def test_delta_below_the_top_of_the_support_is_positive_even_when_it_underflows():
    """200 Laplace releases (scale 0.3) Poisson-sampled at 0.01: the exact ε at δ = 0 is
    200·log(1 + 0.01(e^{1/0.3} − 1)) = 47.8531768777920045…; the top's P-mass is about
    1e-328, below the float range. δ̄ at the float just below was 0, and an audit of that
    ε at δ = 0 said "holds" (review). δ̄ must be positive there (the smallest float)."""
    from fractions import Fraction

    event = ev.PoissonSampled(ev.Laplace(scale=0.3), 0.01) * 200
    with mpmath.workdps(60):
        exact = 200 * mpmath.log1p(mpmath.mpf(0.01) * mpmath.expm1(1 / mpmath.mpf(0.3)))
        below = float(exact)
        if mpmath.mpf(below) >= exact:
            below = math.nextafter(below, 0.0)
        assert mpmath.mpf(below) < exact
    assert acc.delta(event, below) > 0.0
    assert acc.delta(event, below, method="pld") > 0.0
    assert Fraction(acc.epsilon(event, 0.0)) >= Fraction(below)


@settings(max_examples=100, deadline=None)
@given(
    log_h=st.floats(-6.0, -1.0),
    j0=st.integers(-100_000, 0),
    j1=st.integers(1, 100_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_atoms_are_never_placed_below_their_loss(log_h, j0, j1, seed):
    """``_atom_cells`` against exact rationals: each atom's grid position (j0 + k)·h + d
    is at least its loss (or the grid's first point, for atoms below it), within a few u
    of it, and atoms above the grid are dropped to +∞ — on random losses, on grid points
    and next to them (where the float floor may be off by one)."""
    from dpledger.accountant.pld._discretise import _atom_cells

    rng = np.random.default_rng(seed)
    h = 10.0**log_h
    on_grid = np.arange(j0, j1 + 1, max(1, (j1 - j0) // 30)) * h
    losses = np.concatenate(
        [
            rng.uniform(1.1 * j0 * h, 1.1 * j1 * h, 40),
            on_grid,
            np.nextafter(on_grid, np.inf),
            np.nextafter(on_grid, -np.inf),
            [0.1, 1 / 3],
        ]
    )
    kept, k, d = _atom_cells(losses, j0, j1, h)
    step = Fraction(h)
    placed = iter(zip(k.tolist(), d.tolist(), strict=True))
    for loss, keep in zip(losses.tolist(), kept.tolist(), strict=True):
        exact = Fraction(loss)
        assert keep == (exact <= j1 * step)
        if not keep:
            continue
        cell, offset = next(placed)
        assert 0 <= cell <= j1 - j0 - 1 and 0.0 <= offset <= h
        position = (j0 + cell) * step + Fraction(offset)
        target = max(exact, j0 * step)
        assert target <= position <= target + Fraction(10 * 2.0**-53) * (abs(exact) + step)


def test_the_grid_cache_is_bounded_in_bytes_and_moments_do_not_hold_grids(monkeypatch):
    """The cache of grid PLDs was bounded by count only (512), and the moments cache held
    every grid it had seen: a calibration probing 40 noise levels of a release with 7·10⁶
    grid points kept them all (5.8 GB for NoisyGD at rate 1e-6). Now at most
    _GRID_CACHE_BYTES are kept, and the moments refer to grids weakly."""
    import gc
    import weakref

    from dpledger.accountant.pld import _accountant

    monkeypatch.setattr(_accountant, "_GRID_CACHE_BYTES", 8 << 20)
    _accountant._GRID_CACHE.clear()
    for sigma in (0.3, 0.31, 0.32, 0.33, 0.34, 0.35):
        acc.delta(ev.PoissonSampled(ev.Gaussian(sigma), 0.01) * 3, 1.0, method="pld")
    total = sum(g.masses.nbytes for v in _accountant._GRID_CACHE.values() for g in v)
    assert 0 < total <= 8 << 20  # 3.6 MB per release: two kept, not six
    grids = _accountant._discretised(ev.PoissonSampled(ev.Gaussian(0.36), 0.01), 1e-4, "upper")
    acc.pld.PLDAccountant.summarize(ev.PoissonSampled(ev.Gaussian(0.36), 0.01) * 2).delta(1.0)
    ref_grid = weakref.ref(grids[0])
    del grids
    _accountant._GRID_CACHE.clear()
    gc.collect()
    assert ref_grid() is None  # nothing else (the moments cache) keeps it alive
