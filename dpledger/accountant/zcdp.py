"""Zero-concentrated differential privacy (Bun & Steinke 2016).

A mechanism is (ξ, ρ)-zCDP if D_α(M(D) ‖ M(D′)) ≤ ξ + ρα for all α > 1 (BS16, Def. 1.1);
ρ-zCDP is ξ = 0. Guarantees add under adaptive composition (BS16, Lemma 2.3).

* Gaussian, L2 sensitivity Δ, noise σ: ρ = Δ²/(2σ²) (BS16, Prop. 1.6); the same for the
  discrete Gaussian on integer-valued statistics (Canonne, Kamath & Steinke 2020, §2).
* ε-DP (Laplace, randomized response, PureDP): ρ = ε²/2 (BS16, Prop. 1.4).
* (μ, τ)-mCDP: the subgaussian moment bound gives D_α ≤ μ + (α−1)τ²/2, i.e.
  (ξ, ρ) = (μ − τ²/2, τ²/2) (Dwork & Rothblum 2016, Def. 3.1).
* Subsampling is not supported: zCDP is not amplified by subsampling (BS16, §1.3 and
  the discussion motivating truncated CDP, Bun et al. 2018); use RDP.

Conversions to (ε, δ):

* tight (default): ε = min over α > 1 of ξ + ρα + log(1 − 1/α) − (log δ + log α)/(α − 1)
  (Canonne, Kamath & Steinke 2020, Cor. 13; Balle et al. 2020, Thm 21), minimised over
  the continuous order.
* simple: ε = ξ + ρ + 2√(ρ log(1/δ)) (BS16, Prop. 1.3), for comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from dpledger._numerics import mul_up, ratio_squared_up, round_up, square_up, sum_up
from dpledger._public import deprecated_alias, namespace
from dpledger._validation import check_nonnegative, check_probability, check_real
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.rdp import rdp_to_delta, rdp_to_epsilon
from dpledger.errors import InvalidArgumentError

__all__ = [
    "ZCDPAccountant",
    "ZCDPSummary",
    "zcdp_to_approx_dp",
    "zcdp_to_delta",
    "zcdp_to_epsilon",
]


def zcdp_to_epsilon(rho: float, delta: float, *, xi: float = 0.0, tight: bool = True) -> float:
    """Smallest ε such that (ξ, ρ)-zCDP implies (ε, δ)-DP.

    Args:
        rho: ρ ≥ 0.
        delta: δ in [0, 1).
        xi: ξ (may be negative only for guarantees derived from mCDP; default 0).
        tight: Use the conversion of Canonne, Kamath & Steinke 2020 (Cor. 13) optimised
            over the continuous order; if False, the simple ξ + ρ + 2√(ρ log 1/δ) of
            Bun & Steinke 2016 (Prop. 1.3).

    Returns:
        ε, rounded up (``inf`` when δ = 0 and ρ > 0).

    Example:
        >>> from dpledger.accountant.zcdp import zcdp_to_epsilon
        >>> zcdp_to_epsilon(0.5, 1e-5) < zcdp_to_epsilon(0.5, 1e-5, tight=False)
        True
    """
    rho = check_nonnegative("rho", rho, allow_inf=True)
    delta = check_probability("delta", delta)
    xi = check_real("xi", xi)
    if math.isinf(xi) and xi < 0:
        raise InvalidArgumentError(f"`xi` must be finite (or +inf). Found {xi!r}.")
    if math.isinf(rho) or (math.isinf(xi) and xi > 0):
        return math.inf
    if rho == 0:
        return round_up(max(0.0, xi))
    if delta == 0:
        return math.inf
    simple = round_up(max(0.0, xi + rho + 2 * math.sqrt(rho * math.log(1 / delta))))
    if not tight:
        return simple
    # Mathematically the tight conversion at its best order is never above the simple one
    # (its offset is below log(1/δ)/(α − 1) at every α, and the simple bound is that at
    # α − 1 = √(log(1/δ)/ρ)); the order search is unbounded, so the minimum below only
    # guards against a numerical miss of the optimiser — both are valid bounds.
    return min(rdp_to_epsilon(lambda a: xi + rho * a, delta), simple)


def zcdp_to_delta(rho: float, epsilon: float, *, xi: float = 0.0) -> float:
    """Smallest δ such that (ξ, ρ)-zCDP implies (ε, δ)-DP (CKS 2020, Cor. 13)."""
    rho = check_nonnegative("rho", rho, allow_inf=True)
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    xi = check_real("xi", xi)
    if math.isinf(rho):
        return 0.0 if math.isinf(epsilon) else 1.0
    if rho == 0:
        return 0.0 if epsilon >= xi else 1.0
    return rdp_to_delta(lambda a: xi + rho * a, epsilon)


@dataclass(frozen=True)
class ZCDPSummary(Summary):
    """A (ξ, ρ)-zCDP guarantee."""

    rho: float = 0.0
    xi: float = 0.0

    def __add__(self, other: ZCDPSummary) -> ZCDPSummary:
        return ZCDPSummary(sum_up(self.rho, other.rho), sum_up(self.xi, other.xi))

    def scaled(self, count: int) -> ZCDPSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return ZCDPSummary(mul_up(self.rho, count), mul_up(self.xi, count))

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        return zcdp_to_epsilon(self.rho, delta, xi=self.xi)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        return zcdp_to_delta(self.rho, epsilon, xi=self.xi)


def _pure(epsilon: float) -> ZCDPSummary:
    return ZCDPSummary(square_up(epsilon, 2))


def _approx(e: ev.ApproxDP) -> ZCDPSummary:
    if e.delta == 0:
        return _pure(e.epsilon)
    return ZCDPAccountant._refuse(e)


class ZCDPAccountant(Accountant[ZCDPSummary]):
    """zCDP accountant (Bun & Steinke 2016) with the tight conversion of CKS 2020."""

    method: ClassVar[str] = "zcdp"
    handlers: ClassVar[dict[type[ev.Event], Any]] = {
        ev.Gaussian: lambda e: ZCDPSummary(ratio_squared_up(e.sensitivity, e.sigma, 2)),
        ev.Laplace: lambda e: _pure(e.epsilon),
        ev.DiscreteLaplace: lambda e: _pure(e.epsilon),
        ev.DiscreteGaussian: lambda e: ZCDPSummary(ratio_squared_up(e.sensitivity, e.sigma, 2)),
        ev.PureDP: lambda e: _pure(e.epsilon),
        # ε-bounded range ⇒ ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2)
        ev.BoundedRange: lambda e: ZCDPSummary(square_up(e.epsilon, 8)),
        ev.RandomizedResponse: lambda e: _pure(e.epsilon),
        ev.ZCDP: lambda e: ZCDPSummary(e.rho, e.xi),
        ev.MCDP: lambda e: ZCDPSummary(square_up(e.tau, 2), round_up(e.mu - e.tau**2 / 2)),
        ev.ApproxDP: _approx,
    }

    @classmethod
    def zero(cls) -> ZCDPSummary:
        """The guarantee of releasing nothing."""
        return ZCDPSummary()

    @classmethod
    def _refuse(cls, event: ev.Event) -> ZCDPSummary:
        from dpledger.errors import NotApplicableError

        raise NotApplicableError(
            f"method 'zcdp' cannot account for {event!r}: an (ε, δ) guarantee with δ > 0 is "
            "not zCDP. Use method='basic', 'optimal' or 'auto'."
        )

    @classmethod
    def _hint(cls) -> str:
        return "zCDP is not amplified by subsampling; use method='rdp' or method='auto'."


#: Deprecated (renamed: it returns ε): use :func:`zcdp_to_epsilon`.
zcdp_to_approx_dp = deprecated_alias(zcdp_to_epsilon, "zcdp_to_approx_dp")

__dir__ = namespace(__all__)
