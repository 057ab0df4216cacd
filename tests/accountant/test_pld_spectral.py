"""Band-limited compositions (issue #33): δ summed from the kept frequencies, no transform.

Each test can fail: the closed-form sums (:func:`_geometric_sums`) against 40-digit sums,
within their rounding bound; the frequency bounds (:func:`_frequency_bounds`) above the
transform between their sample points; a long binomial composition's δ̲ ≤ δ ≤ δ̄ against
the exact binomial masses; and the band-limited composition of 10⁵ DP-SGD steps against
the transform of the whole window, within both guards.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpledger import events as ev
from dpledger.accountant.pld import PLDAccountant, _compose, _Discrete
from dpledger.accountant.pld import _composition as composition_module
from dpledger.accountant.pld._composition import _mass_margin, _SpectralComposition
from dpledger.accountant.pld._spectral import _frequency_bounds, _geometric_sums
from dpledger.accountant.pld._transform import _centre


@pytest.mark.parametrize("seed", range(6))
def test_geometric_sums_are_within_their_bound_of_40_digit_sums(seed):
    """Σ_{u<L} Re Σⱼ cⱼe^{iθⱼ(b+u)}e^{au}: the closed form against mpmath (a direct sum for
    short L, the same closed form at 40 digits for long L), within the returned bound."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1_000, 2_000_000))
    count = int(rng.integers(1, 60))
    freqs = np.unique(rng.integers(0, size // 2 + 1, count)).astype(np.int64)
    freqs[0] = 0
    coefficients = (rng.normal(size=len(freqs)) + 1j * rng.normal(size=len(freqs))) / size
    coefficients[0] = coefficients[0].real
    first = int(rng.integers(0, 2 * size))
    length = int(rng.integers(1, 40)) if seed % 2 else int(rng.integers(1, size))
    rates = (0.0, -float(10 ** rng.uniform(-6, -3)), -float(rng.uniform(0.0, 2.0)))
    values, bounds = _geometric_sums(freqs, coefficients, size, first, length, rates)
    with mpmath.workdps(40):
        pi2 = 2 * mpmath.pi / size
        for value, bound, a in zip(values, bounds, rates, strict=True):
            exact = mpmath.mpf(0)
            for j, c in zip(freqs, coefficients, strict=True):
                cj = mpmath.mpc(float(c.real), float(c.imag))
                z = mpmath.mpf(a) + 1j * pi2 * int(j)
                if length < 40:
                    q = mpmath.fsum(mpmath.exp(z * u) for u in range(length))
                elif z == 0:
                    q = mpmath.mpf(length)
                else:
                    q = (1 - mpmath.exp(z * length)) / (1 - mpmath.exp(z))
                exact += mpmath.re(cj * mpmath.exp(1j * pi2 * ((int(j) * first) % size)) * q)
            assert abs(mpmath.mpf(float(value)) - exact) <= bound, (value, exact, bound)


@pytest.mark.parametrize("seed", range(4))
def test_frequency_bounds_lie_above_the_transform_between_samples(seed):
    """|z(ω)| ≤ A_a for ω within π/M of 2πa/M: checked at random ω of the low intervals
    (where the slope term matters) against a 30-digit transform."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    masses = np.exp(-0.5 * ((np.arange(n) - n / 2) / (n / 10)) ** 2) * rng.uniform(0.5, 1, n)
    masses /= masses.sum()
    centre = _centre(masses)
    points = 2 * n + int(rng.integers(0, 50))
    bounds = _frequency_bounds(masses, centre, points, float(masses.sum()))
    with mpmath.workdps(30):
        ms = [mpmath.mpf(float(m)) for m in masses]
        for a in range(min(8, len(bounds))):
            for offset in rng.uniform(-0.5, 0.5, 4):
                omega = 2 * mpmath.pi * (a + offset) / points
                z = mpmath.fsum(
                    m * mpmath.exp(-1j * omega * (i - centre)) for i, m in enumerate(ms)
                )
                assert abs(z) <= bounds[a], (a, offset, float(abs(z)), bounds[a])


def _binomial_delta(count: int, epsilon: float) -> mpmath.mpf:
    """δ(ε) of [¼, ½, ¼]^count on the integers −count … count (40 digits)."""
    with mpmath.workdps(40):
        i = max(-count, math.floor(epsilon) + 1)
        mass = mpmath.exp(
            mpmath.loggamma(2 * count + 1)
            - mpmath.loggamma(i + count + 1)
            - mpmath.loggamma(count - i + 1)
            - 2 * count * mpmath.log(2)
        )
        total = mpmath.mpf(0)
        while i <= count and mass > 0:
            term = mass * -mpmath.expm1(mpmath.mpf(epsilon) - i)
            total += term
            if i > epsilon + 10 and term < total * mpmath.mpf(10) ** -35:
                break
            mass = mass * (count - i) / (i + count + 1)
            i += 1
        return total


@pytest.mark.parametrize("count", [100_000, 400_000])
def test_band_limited_binomial_composition_brackets_the_exact_delta(count):
    """[¼, ½, ¼]^k summed from its kept frequencies: δ̲(ε) ≤ δ(ε) ≤ δ̄(ε) against the exact
    binomial δ, at ε from the centre to 8 standard deviations, and the bracket is tight."""
    d = _Discrete(-1, np.array([0.25, 0.5, 0.25]), 0.0)
    composed = _compose([(d, count)], 1.0, window_tail=1e-300)
    assert isinstance(composed, _SpectralComposition)
    assert composed.freqs.size * 64 <= composed.size
    sigma = math.sqrt(count / 2)
    for t in (0.0, 1.3, 3.7, 6.1, 8.0):
        epsilon = t * sigma + 0.37
        exact = _binomial_delta(count, epsilon)
        upper, lower = composed.delta(epsilon, "upper"), composed.delta(epsilon, "lower")
        assert lower <= exact <= upper, (t, lower, float(exact), upper)
        # the relative margin of the masses and the transform's guard, on either side
        guard = composed.rounding_guard(epsilon)
        width = 2 * (_mass_margin(count) * float(exact) + guard) * (1 + 1e-6) + 1e-10
        assert upper - lower <= width, (t, lower, upper)


def test_band_limited_dpsgd_composition_agrees_with_the_whole_transform(monkeypatch):
    """10⁵ DP-SGD steps (both directions, plain and tilted): δ summed from the ~40 kept
    frequencies and δ from the inverse transform of all 633,064 points agree within the
    sum of their guards."""
    summary = PLDAccountant.summarize(ev.PoissonSampled(ev.Gaussian(1.1), 0.01) * 100_000)
    h = summary._grid_for("upper")
    band = composition_module._band_spectrum
    for side in summary._parts("upper", 1e-16):
        for tilt in (0.0, 1.1):
            fast = _compose(side, h, 1e-16, tilt)
            monkeypatch.setattr(composition_module, "_band_spectrum", lambda *a: None)
            whole = _compose(side, h, 1e-16, tilt)
            monkeypatch.setattr(composition_module, "_band_spectrum", band)
            assert isinstance(fast, _SpectralComposition)
            assert not isinstance(whole, _SpectralComposition)
            for epsilon in (0.5, 10.0, 21.0, 25.0):
                a, b = fast.delta(epsilon, "upper"), whole.delta(epsilon, "upper")
                slack = 2 * (fast.rounding_guard(epsilon) + whole.rounding_guard(epsilon))
                assert abs(a - b) <= slack + 2e-7 * b, (tilt, epsilon, a, b, slack)


def test_a_periodic_pld_keeps_the_whole_window_path():
    """Randomized response on the grid (10⁶ steps, two atoms 60 steps apart) has spectral
    peaks at high frequencies: the band path's direct bounds there are worse than the FFT's,
    so it is not taken (the review of issue 33 measured a 4.5× wider rounding guard)."""
    import dataclasses

    from dpledger import events as ev
    from dpledger.accountant.pld import PLDAccountant, _compose

    summary = dataclasses.replace(
        PLDAccountant.summarize(ev.RandomizedResponse(0.003) * 1_000_000), exact=False, _cache={}
    )
    h = summary._grid_for("upper")
    for side in summary._parts("upper", 1e-16):
        composed = _compose(side, h, 1e-16, 0.0)
        assert not hasattr(composed, "freqs") or composed.freqs is None
