"""Mean-concentrated differential privacy (Dwork & Rothblum 2016).

A mechanism is (μ, τ)-mCDP if its privacy loss L has E[L] ≤ μ and L − E[L] is
τ-subgaussian (DR16, Def. 3.1). Guarantees compose by adding μ and adding τ in
quadrature: (Σμᵢ, √Στᵢ²) (DR16, Thm 3.4).

* ε-DP ⇒ (ε(e^ε − 1)/2, ε)-mCDP (DR16, Thm 3.5).
* Gaussian, L2 sensitivity Δ, noise σ ⇒ (Δ²/(2σ²), Δ/σ)-mCDP (DR16, §3: the
  privacy loss is exactly N(μ²/2, μ²) with μ = Δ/σ).
* (μ, τ)-mCDP ⇒ (μ + τ√(2 log(1/δ)), δ)-DP for every δ (DR16, §3: the subgaussian tail
  bound P[L − μ > t] ≤ exp(−t²/2τ²), and δ(ε) ≤ P[L > ε]).

The *mean* μ is not an ε: a mean loss of 1 is far from (1, δ)-DP (see SEED-NOTES on the
private IRLS paper). Note also that (μ, τ)-mCDP gives D_α ≤ μ + (α−1)τ²/2, which the
RDP accountant converts more tightly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from dpledger._numerics import (
    float_up,
    mul_up,
    ratio_squared_up,
    round_up,
    sqrt_up,
    square_up,
    sum_up,
)
from dpledger._public import deprecated_alias, namespace
from dpledger._validation import check_nonnegative, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.errors import NotApplicableError

__all__ = [
    "MCDPAccountant",
    "MCDPSummary",
    "mcdp_to_approx_dp",
    "mcdp_to_epsilon",
    "pure_dp_to_mcdp",
]


def pure_dp_to_mcdp(epsilon: float) -> tuple[float, float]:
    """(μ, τ) = (ε(e^ε − 1)/2, ε): every ε-DP mechanism is (μ, τ)-mCDP (DR16, Thm 3.5)."""
    epsilon = check_nonnegative("epsilon", epsilon)
    if math.isinf(epsilon) or epsilon > 709:
        return math.inf, epsilon
    # exact product of ε and e^ε − 1 (itself rounded up): never underflows to 0
    grown = math.nextafter(math.expm1(epsilon), math.inf)
    return float_up(Fraction(epsilon) * Fraction(grown) / 2), epsilon


def mcdp_to_epsilon(mu: float, tau: float, delta: float) -> float:
    """ε = μ + τ√(2 log(1/δ)): (μ, τ)-mCDP implies (ε, δ)-DP (Dwork & Rothblum 2016, §3).

    Example:
        >>> from dpledger.accountant.mcdp import mcdp_to_epsilon
        >>> round(mcdp_to_epsilon(1.0, 1.0, 1e-6), 3)
        6.257
    """
    mu = check_nonnegative("mu", mu, allow_inf=True)
    tau = check_nonnegative("tau", tau, allow_inf=True)
    delta = check_probability("delta", delta)
    if math.isinf(mu) or math.isinf(tau):
        return math.inf
    if tau == 0:
        return mu
    if delta == 0:
        return math.inf
    return round_up(mu + tau * math.sqrt(2 * math.log(1 / delta)))


@dataclass(frozen=True)
class MCDPSummary(Summary):
    """A (μ, τ)-mCDP guarantee, stored as (μ, τ²) which both add under composition."""

    mu: float = 0.0
    tau_squared: float = 0.0

    @property
    def tau(self) -> float:
        """The subgaussian parameter τ = √(τ²), rounded up (a reported bound)."""
        return sqrt_up(self.tau_squared)

    def __add__(self, other: MCDPSummary) -> MCDPSummary:
        return MCDPSummary(sum_up(self.mu, other.mu), sum_up(self.tau_squared, other.tau_squared))

    def scaled(self, count: int) -> MCDPSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return MCDPSummary(mul_up(self.mu, count), mul_up(self.tau_squared, count))

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        return mcdp_to_epsilon(self.mu, self.tau, delta)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        if epsilon <= self.mu:
            return 1.0
        if self.tau_squared == 0:
            return 0.0
        value = min(1.0, round_up(math.exp(-((epsilon - self.mu) ** 2) / (2 * self.tau_squared))))
        # positive for τ > 0: below the smallest float it is reported as that float, not 0
        return value if value > 0.0 or not math.isfinite(epsilon) else 5e-324


def _pure(epsilon: float) -> MCDPSummary:
    mu, tau = pure_dp_to_mcdp(epsilon)
    return MCDPSummary(mu, round_up(tau * tau))


def _approx(e: ev.ApproxDP) -> MCDPSummary:
    if e.delta == 0:
        return _pure(e.epsilon)
    raise NotApplicableError(
        f"method 'mcdp' cannot account for {e!r}: an (ε, δ) guarantee with δ > 0 is not "
        "mean-concentrated DP. Use method='basic', 'optimal' or 'auto'."
    )


class MCDPAccountant(Accountant[MCDPSummary]):
    """Mean-concentrated DP accountant (Dwork & Rothblum 2016)."""

    method: ClassVar[str] = "mcdp"
    handlers: ClassVar[dict[type[ev.Event], Any]] = {
        ev.Gaussian: lambda e: MCDPSummary(
            ratio_squared_up(e.sensitivity, e.sigma, 2), ratio_squared_up(e.sensitivity, e.sigma)
        ),
        ev.Laplace: lambda e: _pure(e.epsilon),
        ev.DiscreteLaplace: lambda e: _pure(e.epsilon),
        ev.PureDP: lambda e: _pure(e.epsilon),
        ev.BoundedRange: lambda e: _pure(e.epsilon),  # ε-bounded range ⇒ ε-DP
        ev.RandomizedResponse: lambda e: _pure(e.epsilon),
        ev.MCDP: lambda e: MCDPSummary(e.mu, square_up(e.tau)),
        ev.ApproxDP: _approx,
    }

    @classmethod
    def zero(cls) -> MCDPSummary:
        """The guarantee of releasing nothing."""
        return MCDPSummary()

    @classmethod
    def _hint(cls) -> str:
        return "mCDP has no subsampling or zCDP conversion here; use method='rdp' or 'auto'."


#: Deprecated (renamed: it returns ε): use :func:`mcdp_to_epsilon`.
mcdp_to_approx_dp = deprecated_alias(mcdp_to_epsilon, "mcdp_to_approx_dp")

__dir__ = namespace(__all__)
