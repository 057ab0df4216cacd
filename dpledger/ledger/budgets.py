"""Typed budgets: an amount of privacy in one currency, as a ledger reports it.

Each budget type is one currency of :mod:`dpledger.ledger.filters` — (ε, δ) under basic
composition, zCDP's ρ, Gaussian DP's μ, Rényi DP at one order, and the releases of a
planned schedule — with the conversion to ε at a δ that the receipts print (an upper
bound, rounded up; what *remains* is printed rounded down).
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import ClassVar

from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger.accountant.gdp import gdp_epsilon
from dpledger.accountant.rdp import epsilon_at_order
from dpledger.accountant.zcdp import zcdp_to_epsilon

__all__ = [
    "ApproxDPBudget",
    "Budget",
    "Charge",
    "GDPBudget",
    "RDPBudget",
    "ScheduleBudget",
    "ZCDPBudget",
]

Charge = tuple[float, ...]


class Budget(abc.ABC):
    """An amount of privacy in one currency; budgets of one currency are partially ordered."""

    currency: ClassVar[str]

    @abc.abstractmethod
    def as_tuple(self) -> Charge:
        """The amount as a tuple of floats."""

    @abc.abstractmethod
    def epsilon_at(self, delta: float) -> float:
        """ε at ``delta`` of a release costing this amount alone (an upper bound)."""

    def __str__(self) -> str:
        """The amount in its currency and, at the ledger's δ (``at_delta``), in ε.

        "ε ≈ 0.48 at δ=1e-06 (ρ=0.0625 (zCDP))": ε of a release costing this amount alone,
        rounded up for a charge or a total and down for what remains (``rounding``).
        """
        native = self.native()
        delta = getattr(self, "at_delta", None)
        if delta is None or self.currency in ("approx_dp", "plan"):
            return native
        try:
            epsilon = self.epsilon_at(delta)
        except (ArithmeticError, ValueError):  # pragma: no cover - a conversion that fails
            return native
        if not math.isfinite(epsilon):
            return native
        return f"ε ≈ {self._num(epsilon)} at δ={delta:.3g} ({native})"

    def native(self) -> str:
        """The amount in its own currency only, e.g. "ρ=0.0625 (zCDP)"."""
        return repr(self)

    def _num(self, value: float) -> str:
        """A printed amount: rounded up (a charge, a total), or down if it is what remains."""
        from dpledger._format import down, up

        return down(value) if getattr(self, "rounding", "up") == "down" else up(value)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Budget) or other.currency != self.currency:
            return NotImplemented
        return all(a <= b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True))

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Budget) or other.currency != self.currency:
            return NotImplemented
        return all(a >= b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True))


@dataclass(frozen=True)
class ApproxDPBudget(Budget):
    """(ε, δ) under basic composition; (ε₁, δ₁) ≤ (ε₂, δ₂) iff both coordinates are."""

    epsilon: float
    delta: float
    rounding: str = field(default="up", compare=False, repr=False)
    at_delta: float | None = field(default=None, compare=False, repr=False)
    currency: ClassVar[str] = "approx_dp"

    def as_tuple(self) -> Charge:
        """(ε, δ)."""
        return (self.epsilon, self.delta)

    def epsilon_at(self, delta: float) -> float:
        """ε, if this δ is within ``delta`` (else ∞)."""
        return self.epsilon if self.delta <= delta else math.inf

    def native(self) -> str:
        """The amount in its own currency only."""
        return f"(ε={self._num(self.epsilon)}, δ={self._num(self.delta)})"


@dataclass(frozen=True)
class ZCDPBudget(Budget):
    """ρ of zero-concentrated DP."""

    rho: float
    rounding: str = field(default="up", compare=False, repr=False)
    at_delta: float | None = field(default=None, compare=False, repr=False)
    currency: ClassVar[str] = "zcdp"

    def as_tuple(self) -> Charge:
        """(ρ,)."""
        return (self.rho,)

    def epsilon_at(self, delta: float) -> float:
        """The tight zCDP conversion (Canonne, Kamath & Steinke 2020)."""
        return 0.0 if self.rho == 0 else zcdp_to_epsilon(self.rho, delta)

    def native(self) -> str:
        """The amount in its own currency only."""
        return f"ρ={self._num(self.rho)} (zCDP)"


@dataclass(frozen=True)
class GDPBudget(Budget):
    """μ of Gaussian DP (stored as μ², which adds)."""

    mu_squared: float
    rounding: str = field(default="up", compare=False, repr=False)
    at_delta: float | None = field(default=None, compare=False, repr=False)
    currency: ClassVar[str] = "gdp"

    @property
    def mu(self) -> float:
        """μ."""
        return math.sqrt(self.mu_squared)

    def as_tuple(self) -> Charge:
        """(μ²,)."""
        return (self.mu_squared,)

    def epsilon_at(self, delta: float) -> float:
        """Exact for μ-GDP (Dong, Roth & Su 2019)."""
        return 0.0 if self.mu_squared == 0 else gdp_epsilon(delta, round_up(self.mu))

    def native(self) -> str:
        """The amount in its own currency only."""
        return f"μ={self._num(self.mu)} (Gaussian DP)"


@dataclass(frozen=True)
class RDPBudget(Budget):
    """Rényi divergence at one fixed order α."""

    order: float
    value: float
    rounding: str = field(default="up", compare=False, repr=False)
    at_delta: float | None = field(default=None, compare=False, repr=False)
    currency: ClassVar[str] = "rdp"

    def as_tuple(self) -> Charge:
        """(R(α),)."""
        return (self.value,)

    def epsilon_at(self, delta: float) -> float:
        """The conversion at this order (Balle et al. 2020, Thm 21)."""
        return epsilon_at_order(self.value, self.order, delta)

    def native(self) -> str:
        """The amount in its own currency only."""
        return f"R(α={self.order:.4g})={self._num(self.value)} (Rényi DP)"


@dataclass(frozen=True)
class ScheduleBudget(Budget):
    """Releases of a planned schedule (the currency of a planned ledger)."""

    releases: float
    rounding: str = field(default="up", compare=False, repr=False)
    at_delta: float | None = field(default=None, compare=False, repr=False)
    currency: ClassVar[str] = "plan"

    def as_tuple(self) -> Charge:
        """(releases,)."""
        return (self.releases,)

    def epsilon_at(self, delta: float) -> float:
        """Not meaningful per release: the whole schedule is certified at once."""
        return math.nan

    def native(self) -> str:
        """The amount in its own currency only."""
        return f"{self.releases:g} planned release" + ("" if self.releases == 1 else "s")


__dir__ = namespace(__all__)
