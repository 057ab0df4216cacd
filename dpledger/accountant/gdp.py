"""Gaussian differential privacy and the exact analytic Gaussian mechanism.

A mechanism is μ-GDP (Dong, Roth & Su 2019, Def. 2.6) if distinguishing neighbours is
at least as hard as distinguishing N(0, 1) from N(μ, 1). The Gaussian mechanism with L2
sensitivity Δ and noise σ is exactly (Δ/σ)-GDP, and μᵢ-GDP mechanisms compose
(adaptively) to √(Σ μᵢ²)-GDP (DRS19, Cor. 3.3). μ-GDP is equivalent to (ε, δ(ε))-DP
for every ε ≥ 0 with

    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)        (DRS19, Cor. 2.13)

which for a single Gaussian is the analytic Gaussian of Balle & Wang 2018, Thm 8. This
is exact, so for compositions of (non-subsampled) Gaussians this accountant is tight.

The formula is evaluated without cancellation through the scaled complementary error
function erfcx(x) = e^{x²} erfc(x): with a = μ/2 − ε/μ and b = −μ/2 − ε/μ,
b² − a² = 2ε, so

    δ(ε) = ½ e^{−a²/2} [erfcx(−a/√2) − erfcx(−b/√2)],

and log δ is formed directly; δ down to 1e-300 and ε in the hundreds are accurate.
For μ < 1e-2 the difference of the two erfcx values loses digits, and the formula is
evaluated with mpmath at sufficient precision instead.

Pure ε-DP releases (Laplace, randomized response) are also μ-GDP, with
μ = 2 Φ⁻¹(e^ε / (1 + e^ε)): the ε-DP trade-off curve is the piecewise-linear curve
through (0, 1), (α*, α*) and (1, 0) with α* = 1/(1 + e^ε), and the convex symmetric
G_μ lies below it iff G_μ(α*) ≤ α*. This is valid but loose for Laplace compositions.
Subsampled events are not supported: the GDP central limit theorem for them is an
approximation, not a bound. A discrete Gaussian of known dimension is accounted at the
continuous price, σ₀ = σ√(1 − τ²/σ²), with its certified slack s ≤ 2⁻¹⁰⁰ kept beside μ²
(:class:`GDPSummary`; :mod:`.discrete_gaussian`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from scipy import special

from dpledger._mpcontext import context
from dpledger._numerics import (
    float_down,
    mul_up,
    ratio_squared_up,
    round_up,
    sqrt_up,
    square_up,
    sum_up,
)
from dpledger._public import namespace
from dpledger._solve import NoSafeValueError, smallest_satisfying
from dpledger._validation import check_nonnegative, check_positive, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.discrete_gaussian import continuous_price
from dpledger.errors import NotApplicableError

__all__ = [
    "GDPAccountant",
    "GDPSummary",
    "gaussian_delta",
    "gaussian_epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_log_delta",
    "pure_dp_to_gdp",
]

_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)
_ULP = 2.0**-52
_ERR_ULPS = 16.0


def _log_delta_mpmath(epsilon: float, mu: float) -> float:
    digits = 30 + int(max(0.0, -math.log10(mu)))
    with context(digits) as mp:  # this thread's own precision (dpledger._mpcontext)
        m, e = mp.mpf(mu), mp.mpf(epsilon)
        value = mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)
        if value <= 0:
            return -math.inf
        log_value = float(mp.log(value))
        # a margin relative to |log δ| (an absolute 1e-14 is below one ulp of log δ for
        # |log δ| ≳ 64, issue 10 item 20), plus the absolute one
        return min(0.0, log_value + abs(log_value) * 2.0**-48 + 1e-14)


def gdp_log_delta(epsilon: float, mu: float) -> float:
    """Return an upper bound on log δ(ε) of a μ-GDP mechanism (natural log).

    Exact up to float rounding, and that rounding is bounded explicitly (16 ulps of each
    magnitude, times the cancellation factor of the erfcx difference) and added, so the
    result is never below the true log δ(ε).

    Dong, Roth & Su 2019, Cor. 2.13; for one Gaussian, Balle & Wang 2018, Thm 8.

    Args:
        epsilon: ε ≥ 0 (``inf`` gives log δ = −inf).
        mu: μ ≥ 0 (0 is perfect privacy; ``inf`` no privacy).
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    mu = check_nonnegative("mu", mu, allow_inf=True)
    if mu == 0 or math.isinf(epsilon):
        return -math.inf
    if math.isinf(mu):
        return 0.0
    a = mu / 2 - epsilon / mu
    if a < -1e100:
        # beyond the exact forms' reach (their series overflow for |a| ≳ 1e154): δ(ε) ≤
        # Φ(a) ≤ φ(a)/|a| (Mills' ratio), a valid upper bound, and δ is below 1e-(10^199)
        return -1e300  # exp underflows; gdp_delta still reports a positive δ
    if mu < 1e-30:
        # δ(ε) ≤ Φ(μ/2 − ε/μ) − Φ(−μ/2 − ε/μ) (e^ε ≥ 1) = P(Z in an interval of length μ)
        # ≤ μ·φ(max(0, ε/μ − μ/2)): a closed-form upper bound, far below any useful δ here
        # (mpmath would need 30 + |log₁₀ μ| digits)
        x = max(0.0, epsilon / mu - mu / 2)
        return min(0.0, math.log(mu) - 0.5 * math.log(2 * math.pi) - x * x / 2 + 1e-12)
    if mu < 1e-2:
        return _log_delta_mpmath(epsilon, mu)
    return _log_delta_float(epsilon, mu)


def _log_delta_float(epsilon: float, mu: float) -> float:
    """An upper bound on log δ(ε) in float64, its rounding error bounded and added.

    Valid for every μ > 0 (the cancellation of the erfcx difference is part of the error
    bound), but the bound loosens as 1/μ: :func:`gdp_log_delta` uses it for μ ≥ 1e-2
    only, and :func:`gdp_epsilon` uses it below that only to find a starting point that
    the exact evaluation then polishes and certifies.
    """
    a = mu / 2 - epsilon / mu
    b = -mu / 2 - epsilon / mu
    if a >= 5.0:
        # δ ≥ Φ(5) − tiny: no cancellation in the direct form.
        term = math.exp(epsilon + float(special.log_ndtr(b)))
        value = float(special.ndtr(a)) - term
        return min(0.0, math.log(value) + _ERR_ULPS * _ULP * (2.0 + epsilon) / value)
    x, y = float(special.erfcx(-a / _SQRT2)), float(special.erfcx(-b / _SQRT2))
    diff = x - y
    if diff <= 0:
        # For μ ≥ 1e-2 only reachable when δ underflows every representation (far below
        # 1e-300); for smaller μ the difference may also have cancelled away, which says
        # nothing: no bound (the caller falls back to the exact evaluation).
        return -math.inf if mu >= 1e-2 else 0.0
    # Rounding-error bound of this float64 evaluation (a few ulps of each magnitude,
    # amplified by the cancellation x − y), added so that the result is an upper bound.
    error = _ERR_ULPS * _ULP * (a * a / 2 + 1.0 + (x + y) / diff)
    return min(0.0, -a * a / 2 - _LOG2 + math.log(diff) + error)


def gdp_delta(epsilon: float, mu: float) -> float:
    """Return the exact δ(ε) of a μ-GDP mechanism, rounded up (DRS19, Cor. 2.13).

    Never 0 for μ > 0 and finite ε (a Gaussian is never pure DP): a δ below the smallest
    float is reported as 5e-324.
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    mu = check_nonnegative("mu", mu, allow_inf=True)
    value = min(1.0, round_up(math.exp(gdp_log_delta(epsilon, mu))))
    if value == 0.0 and mu > 0 and not math.isinf(epsilon):
        return 5e-324
    return value


_HUGE_MU = 1e6
"""Above this μ, :func:`gdp_epsilon` returns its safe closed-form bracket end."""


def gdp_epsilon(delta: float, mu: float) -> float:
    """Return the smallest ε with δ(ε) ≤ ``delta`` for a μ-GDP mechanism.

    The root of the exact δ(ε) (DRS19, Cor. 2.13) is found by Brent's method and then
    checked: the returned ε satisfies δ(ε) ≤ ``delta`` as evaluated, and lies within a
    few ulps of the exact root.

    Args:
        delta: Target δ in [0, 1). δ = 0 gives ``inf`` unless μ = 0.
        mu: μ ≥ 0.
    """
    delta = check_probability("delta", delta)
    mu = check_nonnegative("mu", mu, allow_inf=True)
    if mu == 0:
        return 0.0
    if delta == 0 or math.isinf(mu):
        return math.inf
    log_target = math.log(delta)
    # δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) ≤ Φ(μ/2 − ε/μ); at ε_hi that bound equals the
    # target, so ε_hi is safe.
    hi = mu * mu / 2 - mu * float(special.ndtri_exp(log_target))
    hi = max(hi, 1e-12) * (1 + 1e-12) + 1e-12
    if not math.isfinite(hi):
        return math.inf
    if mu > _HUGE_MU:
        # far outside any useful range the exact root is numerically out of reach; the
        # safe end of the bracket is a valid (and relatively tight: the dropped term is
        # e^ε Φ(−μ/2 − ε/μ) ≪ δ) upper bound
        return round_up(hi)

    def excess(eps: float) -> float:
        return gdp_log_delta(eps, mu) - log_target

    if _POLISH_MU <= mu < 1e-2:
        found = _epsilon_polished(log_target, mu, hi)
        if found is not None:
            return round_up(found)
    try:
        return round_up(smallest_satisfying(excess, 0.0, hi, what="epsilon"))
    except NoSafeValueError:
        return round_up(hi)  # the bracket's safe end is itself a valid upper bound


_POLISH_MU = 1e-10
"""From here to μ = 1e-2 :func:`gdp_epsilon` polishes a float root (below, the float form
cancels too much to give a useful start, and the full search over the exact form runs)."""


def _epsilon_polished(log_target: float, mu: float, hi: float) -> float | None:
    """:func:`gdp_epsilon` for 1e-10 ≤ μ < 1e-2 in one or a few exact evaluations.

    There the exact δ(ε) is evaluated in mpmath (the float form cancels as 1/μ), which is
    slow (≈ 0.1 ms each; a Brent search takes a dozen). Instead: x₀, the root of the
    float bound (:func:`_log_delta_float`, an upper bound, so x₀ is close to the root:
    ~1e-13 relative for μ ≳ 1e-4, ~1e-6 near μ = 1e-10), then Newton steps on the
    function :func:`gdp_log_delta` compares,

        G(ε) = (1 − 2⁻⁴⁸)·log δ(ε) + 1e-14 + s − log δ*,

    (:func:`_log_delta_mpmath`'s margin, and a slack s = 2⁻⁵⁰|log δ*| for the float
    rounding of that comparison, which errs by at most ~4 ulps of |log δ|), evaluated
    exactly in mpmath with the exact derivative dδ/dε = −e^ε Φ(−μ/2 − ε/μ) (the φ terms
    cancel: e^ε φ(b) = φ(a)).

    Why the Newton point is safe without evaluating it: δ(ε) is log-concave in ε. With
    L the privacy loss (a Gaussian, log-concave density p) δ(ε) = E[(1 − e^{ε−L})₊] =
    ∫ f(t) p(ε + t) dt with f(t) = (1 − e^{−t})₊, log-concave (log f has second
    derivative −eᵗ/(eᵗ − 1)² < 0 on t > 0); f(t)p(ε + t) is log-concave in (ε, t), and
    integrating out t keeps log-concavity (Prékopa 1973, Thm 6). So G is concave and
    decreasing, lies below each of its tangents, and the Newton point x₁ = x₀ − G(x₀)/
    G′(x₀), where the tangent at x₀ is 0, has G(x₁) ≤ 0 — from any x₀, and every later
    Newton point too. In finite precision: cancellation costs at most log₁₀(38/μ) of the
    30 + log₁₀(1/μ) digits, so G(x₁) is known to ~1e-27 relative — ~10¹⁵ times below the
    slack s, which also covers the float comparison's own rounding (≤ 1.5 ulps of
    log δ; s is ≥ 4). x₁ is rounded up by two ulps and satisfies the comparison as
    evaluated; s moves it by at most a quarter of the margin's own effect. Tests check, on a
    dense grid, the evaluated comparison, that it is above the root computed at 80
    digits, and that it is no looser than the full search's margin allows.
    ``None``: no float start, or a degenerate evaluation (the caller runs the full
    search).
    """
    try:
        start = smallest_satisfying(
            lambda eps: _log_delta_float(eps, mu) - log_target, 0.0, hi, what="epsilon"
        )
    except NoSafeValueError:
        return None
    if start == 0.0:
        return 0.0 if gdp_log_delta(0.0, mu) <= log_target else None
    digits = 30 + int(max(0.0, -math.log10(mu)))
    with context(digits) as mp:  # this thread's own precision (dpledger._mpcontext)
        m, x = mp.mpf(mu), mp.mpf(start)
        shrink = 1 - mp.mpf(2) ** -48
        offset = mp.mpf(1e-14) + abs(mp.mpf(log_target)) * mp.mpf(2) ** -50
        for _ in range(6):
            head = mp.ncdf(m / 2 - x / m)
            tail = mp.exp(x) * mp.ncdf(-m / 2 - x / m)
            value = head - tail
            if value <= 0 or tail <= 0:
                return None
            excess = shrink * mp.log(value) + offset - log_target  # G(x)
            step = excess * value / (shrink * tail)  # −G/G′, G′ = −(1 − 2⁻⁴⁸)·tail/value
            x = x + step
            if x < 0:
                return None
            if abs(step) <= x * 1e-9:
                # quadratic convergence: x is now within ~1e-18 (relative) of the root;
                # from the usual float start (within ~1e-13) one step gets here
                break
        else:
            return None
        candidate = math.nextafter(math.nextafter(float(x), math.inf), math.inf)
    return min(candidate, hi)


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism N(0, σ²) with L2 sensitivity Δ.

    Balle & Wang 2018, "Improving the Gaussian Mechanism for Differential Privacy",
    Thm 8: δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ). Rounded up.

    Example:
        >>> from dpledger.accountant import gaussian_delta
        >>> gaussian_delta(1.0, sigma=3.730631635) < 1e-5
        True
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    return gdp_delta(epsilon, sensitivity / sigma)


def gaussian_epsilon(delta: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Smallest ε for which the Gaussian mechanism is (ε, δ)-DP (exact, rounded up).

    Inverts Balle & Wang 2018, Thm 8 (see :func:`gdp_epsilon`).

    Example:
        >>> from dpledger.accountant import gaussian_epsilon
        >>> round(gaussian_epsilon(1e-5, sigma=3.730631635), 6)
        1.0
    """
    delta = check_probability("delta", delta)
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    return gdp_epsilon(delta, sensitivity / sigma)


@functools.lru_cache(maxsize=4096)
def _small_pure_dp_to_gdp(epsilon: float) -> float:
    """μ(ε) for 0 < ε < 1, in 60-digit arithmetic (1.6 ms: memoised, a pure function).

    Near ε = 0 the float path cancels (Φ⁻¹ of 1/2 + tiny): 2Φ⁻¹(1/2 + tanh(ε/2)/2) is
    evaluated in mpmath and rounded up by two ulps, far more than its error (never 0).
    """
    with context(60) as mp:  # this thread's own precision (dpledger._mpcontext)
        t = mp.tanh(mp.mpf(epsilon) / 2) / 2
        value = 2 * mp.sqrt(2) * mp.erfinv(2 * t)
    return math.nextafter(math.nextafter(float(value), math.inf), math.inf)


def pure_dp_to_gdp(epsilon: float) -> float:
    """Smallest μ such that every ε-DP mechanism is μ-GDP: μ = 2 Φ⁻¹(e^ε/(1+e^ε)).

    Derivation in the module docstring (the ε-DP trade-off function of Dong, Roth & Su
    2019, Eq. (5), lies above G_μ iff G_μ(1/(1+e^ε)) ≤ 1/(1+e^ε)). Rounded up.
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if epsilon == 0:
        return 0.0
    if math.isinf(epsilon):
        return math.inf
    if epsilon < 1.0:
        return _small_pure_dp_to_gdp(epsilon)
    # Φ⁻¹(e^ε/(1+e^ε)) = −Φ⁻¹(1/(1+e^ε)) = −ndtri_exp(−log(1+e^ε)).
    return round_up(
        -2.0 * float(special.ndtri_exp(-float(special.log1p(math.exp(-epsilon))) - epsilon))
    )


@dataclass(frozen=True)
class GDPSummary(Summary):
    """A μ-GDP guarantee, stored as μ² (which adds under composition), and a δ slack.

    ``slack`` s ≥ 0 is the certified additive slack of discrete Gaussians accounted at the
    continuous price (:mod:`.discrete_gaussian`): the guarantee is δ(ε) ≤ s + (1 − s)δ_μ(ε).
    Slacks add under composition (an upper bound on 1 − Π(1 − sᵢ)).
    """

    mu_squared: float = 0.0
    slack: float = 0.0

    @property
    def mu(self) -> float:
        """The GDP parameter μ = √(μ²), rounded up (a reported bound)."""
        return sqrt_up(self.mu_squared)

    def __add__(self, other: GDPSummary) -> GDPSummary:
        return GDPSummary(
            sum_up(self.mu_squared, other.mu_squared), min(1.0, sum_up(self.slack, other.slack))
        )

    def scaled(self, count: int) -> GDPSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return GDPSummary(mul_up(self.mu_squared, count), min(1.0, mul_up(self.slack, count)))

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        if self.slack == 0:
            return gdp_epsilon(delta, round_up(self.mu))
        # s + (1 − s)δ_μ(ε) ≤ δ holds where δ_μ(ε) ≤ δ − s (rounded down)
        rest = float_down(Fraction(delta) - Fraction(self.slack))
        if rest <= 0:
            return math.inf
        return gdp_epsilon(rest, round_up(self.mu))

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        value = gdp_delta(epsilon, round_up(self.mu))
        if self.slack == 0:
            return value
        return min(1.0, sum_up(value, self.slack))


def _from_mu(mu: float) -> GDPSummary:
    return GDPSummary(square_up(mu))


def _discrete_gaussian(e: ev.DiscreteGaussian) -> GDPSummary:
    """At the continuous Gaussian's price plus a certified slack (:mod:`.discrete_gaussian`)."""
    price = continuous_price(e)
    if price is None:
        raise NotApplicableError(
            f"method 'gdp' cannot account for {e!r}: the continuous price needs a known "
            "`dimension` and σ above about a grid unit. Use method='zcdp' or 'auto'."
        )
    gaussian, slack = price
    return GDPSummary(ratio_squared_up(gaussian.sensitivity, gaussian.sigma), slack)


def _approx(e: ev.ApproxDP) -> GDPSummary:
    """ApproxDP with δ = 0 is pure ε-DP; with δ > 0 it has no GDP guarantee."""
    if e.delta == 0:
        return _from_mu(pure_dp_to_gdp(e.epsilon))
    raise NotApplicableError(
        f"method 'gdp' cannot account for {e!r}: an (ε, δ) guarantee with δ > 0 has no "
        "μ-GDP guarantee. Use method='basic', 'optimal' or 'auto'."
    )


class GDPAccountant(Accountant[GDPSummary]):
    """Gaussian-DP accountant (Dong, Roth & Su 2019): exact for compositions of Gaussians.

    Supports Gaussian (μ = Δ/σ) and pure ε-DP releases (Laplace, PureDP, randomized
    response, ApproxDP with δ = 0) via :func:`pure_dp_to_gdp`. Subsampled events are
    refused: their GDP central-limit approximation is not an upper bound.
    """

    method: ClassVar[str] = "gdp"
    handlers: ClassVar[dict[type[ev.Event], Any]] = {
        ev.Gaussian: lambda e: GDPSummary(ratio_squared_up(e.sensitivity, e.sigma)),
        ev.DiscreteGaussian: _discrete_gaussian,
        ev.Laplace: lambda e: _from_mu(pure_dp_to_gdp(e.epsilon)),
        ev.DiscreteLaplace: lambda e: _from_mu(pure_dp_to_gdp(e.epsilon)),
        ev.PureDP: lambda e: _from_mu(pure_dp_to_gdp(e.epsilon)),
        ev.BoundedRange: lambda e: _from_mu(pure_dp_to_gdp(e.epsilon)),  # BR ⇒ ε-DP
        ev.RandomizedResponse: lambda e: _from_mu(pure_dp_to_gdp(e.epsilon)),
        ev.ApproxDP: _approx,  # δ = 0 only
    }

    @classmethod
    def zero(cls) -> GDPSummary:
        """The guarantee of releasing nothing."""
        return GDPSummary()

    @classmethod
    def _hint(cls) -> str:
        return (
            "Gaussian DP is exact for Gaussian releases and valid for pure-DP ones; for "
            "subsampled or (ε, δ) releases use method='rdp' or method='auto'."
        )


__dir__ = namespace(__all__)
