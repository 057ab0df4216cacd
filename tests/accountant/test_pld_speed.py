"""The PLD accountant's faster paths (issue #33) keep their error bounds and their answers.

Each test can fail: the accurate power (:func:`_accurate_power`) against 50-digit powers;
a long composition's masses against the exact binomial convolution, within the transform's
error bound; the vectorised grid-range search against its specification; the rounding guard
of 10⁵ DP-SGD steps below the level that asks for a tilted composition.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpledger import events as ev
from dpledger.accountant._pairs import GaussianPair, SubsampledPair
from dpledger.accountant.pld import _compose, _Discrete
from dpledger.accountant.pld._composition import _GUARD_TILT, _window_tail_for
from dpledger.accountant.pld._discretise import _grid_range
from dpledger.accountant.pld._transform import _accurate_power, _power_rho


@pytest.mark.parametrize("seed", range(6))
def test_accurate_power_is_within_its_bound_of_50_digit_powers(seed):
    """(S − W)ᵏ from S and W apart: every finite ρ' bounds the error against mpmath, and
    at the small W of a long composition's carrying frequencies ρ' is far below NumPy's ρ."""
    rng = np.random.default_rng(seed)
    k = int(10 ** rng.uniform(0, 6))
    total = 1.0 - float(rng.uniform(0, 1e-3)) * (seed % 2)
    scale = 10 ** rng.uniform(-9, -0.5, size=40)
    w = scale * (rng.uniform(0, 1, 40) + 1j * rng.uniform(-1, 1, 40))
    w[0] = 0.0  # the zero frequency: W = 0
    values, rho = _accurate_power(total, w, k)
    assert np.isfinite(rho[0])
    with mpmath.workdps(50):
        for value, bound, wj in zip(values, rho, w, strict=True):
            if not math.isfinite(bound):
                continue
            base = mpmath.mpf(total) - mpmath.mpc(float(wj.real), float(wj.imag))
            exact = base**k
            error = abs(mpmath.mpc(value.real, value.imag) - exact)
            assert error <= bound * abs(exact), (k, wj, float(error / abs(exact)), bound)
    small = np.abs(w) * k < 50
    if np.any(small & np.isfinite(rho)) and k >= 1000:
        plain = _power_rho(np.log(np.abs(total - w)), k)
        assert np.all(rho[small] < plain[small] / 10)


@pytest.mark.parametrize("count", [2_000, 30_000])
def test_long_binomial_composition_is_within_the_transform_error_bound(count):
    """[¼, ½, ¼]ᵏ composed by FFT (the carrying frequencies raised by _accurate_power)
    against the exact binomial masses C(2k, i)/4ᵏ (40 digits): within error_max and
    error_l2."""
    d = _Discrete(-1, np.array([0.25, 0.5, 0.25]), 0.0)
    composed = _compose([(d, count)], 1.0, window_tail=1e-300)
    n = 2 * count
    errors = np.zeros(len(composed.masses))
    with mpmath.workdps(40):
        log_norm = mpmath.loggamma(n + 1) - n * mpmath.log(2)
        for j, mass in enumerate(composed.masses):
            i = composed.start + j + count  # index into 0..2k
            exact = mpmath.mpf(0)
            if 0 <= i <= n:
                exact = mpmath.exp(log_norm - mpmath.loggamma(i + 1) - mpmath.loggamma(n - i + 1))
            errors[j] = float(mpmath.mpf(float(mass)) - exact)
    assert float(np.max(np.abs(errors))) <= composed.error_max
    assert float(np.sqrt(np.sum(errors**2))) <= composed.error_l2


@pytest.mark.parametrize(
    "pair",
    [
        GaussianPair(1.0),
        GaussianPair(0.05),
        SubsampledPair(GaussianPair(1 / 1.1), 0.01, "remove"),
        SubsampledPair(GaussianPair(1 / 1.1), 0.001, "add"),
    ],
    ids=["gauss-1", "gauss-0.05", "dpsgd-remove", "dpsgd-add"],
)
@pytest.mark.parametrize("h", [1e-4, 3e-3])
def test_grid_range_search_meets_its_specification(pair, h):
    """The top index leaves at most ``tail`` of P above it, and a quarter step lower would
    leave more (so the range is not wider than the bisection's); likewise the bottom."""
    tail = 1e-18
    lo, _hi = pair.support
    j0, j1 = _grid_range(pair, h, tail)
    top = (j1 - 1) * h  # the search's point, rounded up to the grid (ceil(b/h))
    assert float(pair.p_at_least(np.array([top]))[0]) <= tail
    assert float(pair.p_at_least(np.array([top - h - h / 4 - h]))[0]) > tail
    bottom = (j0 + 1) * h
    assert 1.0 - float(pair.p_at_least(np.array([bottom]))[0]) <= 1e-15
    if not math.isinf(lo):
        assert bottom <= lo + 2 * h


def test_guard_of_1e5_dpsgd_steps_needs_no_tilt():
    """The power's own rounding no longer dominates the guard of 10⁵ steps: below
    _GUARD_TILT of δ at the answer (it was 1.5e-5 of δ, which asked for a tilted
    composition of 8·10⁵ points), and the answer is the tilted one's to 1e-6."""
    from dpledger.accountant.pld import PLDAccountant

    summary = PLDAccountant.summarize(ev.PoissonSampled(ev.Gaussian(1.1), 0.01) * 100_000)
    tail = _window_tail_for(1e-5)
    plain = summary._directions("upper", tail)
    eps = summary._solve_epsilon(plain, 1e-5, "upper")
    assert max(c.rounding_guard(eps) for c in plain) < _GUARD_TILT * 1e-5 / 2
    assert summary.epsilon(1e-5) == pytest.approx(21.08969, abs=2e-5)
