"""Privacy filters: the currencies a Ledger can keep, each valid under adaptivity.

A *filter* (Rogers, Roth, Ullman & Vadhan 2016) lets the analyst choose every release's
privacy parameters after seeing earlier outputs, and halts before the total would
exceed the budget; the whole interaction is then (ε, δ)-DP. Each class here states what
it charges per release, its budget, and the theorem that makes it a valid filter.

Charges are tuples of floats (each rounded up). A ledger's running total is the *exact*
rational sum of its charges (:class:`fractions.Fraction`), compared with the budget
(rounded down) exactly and shown rounded up: so "how many more fit" (:meth:`Filter.fits_count`)
and spending them one by one can never disagree.

:class:`~dpledger.ledger.planned.PlannedFilter` (its own module) is the filter of a
schedule fixed in advance; the budgets are in :mod:`dpledger.ledger.budgets`; the exact
per-release costs come from :mod:`dpledger.accountant.costs`.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, ClassVar, cast

from dpledger._numerics import float_down, float_up, round_up, square_up, sum_up
from dpledger._public import namespace
from dpledger._solve import NoSafeValueError, smallest_satisfying
from dpledger._validation import check_positive
from dpledger.accountant import events as ev
from dpledger.accountant.basic import BasicAccountant
from dpledger.accountant.costs import exact_basic, exact_mu_squared, exact_rho, pure_epsilon
from dpledger.accountant.discrete_gaussian import continuous_price
from dpledger.accountant.gdp import gdp_delta, gdp_epsilon, pure_dp_to_gdp
from dpledger.accountant.rdp import (
    budget_at_order,
    conversion_offset,
    epsilon_at_order,
    minimise_over_order,
    rdp_curve,
)
from dpledger.accountant.zcdp import ZCDPAccountant, zcdp_to_epsilon
from dpledger.errors import InvalidArgumentError, NotApplicableError
from dpledger.ledger.budgets import (
    ApproxDPBudget,
    Budget,
    Charge,
    GDPBudget,
    RDPBudget,
    ZCDPBudget,
)

__all__ = [
    "ACCOUNTANT_CHOICES",
    "FILTERS",
    "INFINITE",
    "AutoFilter",
    "BasicFilter",
    "Filter",
    "GDPFilter",
    "RDPFilter",
    "ZCDPFilter",
    "make_filter",
]

Total = tuple[Fraction, ...]
Cost = tuple[Fraction, ...]

_SLACK_SHARE = 2.0**-30
"""The share of a GDP ledger's δ reserved for the slack of discrete Gaussians."""

INFINITE = Fraction(2) ** 1100
"""An infinite charge, as an exact value above every float budget (it never fits)."""


def exact(value: float | Fraction) -> Fraction:
    """A charge as an exact rational (∞ as :data:`INFINITE`)."""
    if isinstance(value, Fraction):
        return value
    if math.isinf(value):
        return INFINITE
    return Fraction(value)


def shown_value(value: Fraction) -> float:
    """An exact amount as a float, rounded up (∞ for :data:`INFINITE`)."""
    return math.inf if value >= INFINITE else float_up(value)


# -- filters -----------------------------------------------------------------------------


def _budget_root(
    excess: Callable[[float], float], hi: float, what: str, epsilon: float, delta: float
) -> float:
    """The smallest safe 1/budget in [hi/2⁶⁰, hi]; a failure names the budget asked for."""
    try:
        return smallest_satisfying(excess, hi / 2**60, hi, what=f"1/{what}")
    except NoSafeValueError as error:
        raise InvalidArgumentError(
            f"no {what} budget converts to ({epsilon!r}, {delta!r})-DP within the range "
            f"searched: {error}."
        ) from None


class Filter(abc.ABC):
    """A privacy filter with budget (ε, δ) in one currency."""

    name: ClassVar[str]
    budget_type: ClassVar[type[Budget]]

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = epsilon
        self.delta = delta

    @abc.abstractmethod
    def charge(self, event: ev.Event) -> Charge:
        """What one release of ``event`` costs (rounded up). Raises NotApplicableError."""

    def exact_charge(self, event: ev.Event) -> Cost | None:
        """The charge as exact rationals, where the formula is rational (else None)."""
        return None

    def cost(self, event: ev.Event) -> Cost:
        """What one release costs, exactly.

        The rational charge where the formula is rational (so ten releases of ε = 1/10
        fit a budget of 1), else the float charge (rounded up) as a rational. Memoised
        per event (events are immutable values).
        """
        cache: dict[ev.Event, Cost] = self.__dict__.setdefault("_costs", {})
        found = cache.get(event)
        if found is None:
            exact_value = self.exact_charge(event)
            if exact_value is None:
                found = tuple(exact(c) for c in self.charge(event))
            else:
                self.charge(event)  # the same applicability checks as the float path
                found = exact_value
            if len(cache) < 4096:
                cache[event] = found
        return found

    def shown_cost(self, event: ev.Event) -> Charge:
        """:meth:`cost` as floats, rounded up (what receipts show)."""
        return tuple(shown_value(c) for c in self.cost(event))

    @abc.abstractmethod
    def limit(self) -> Charge:
        """The budget in this currency (rounded down)."""

    @abc.abstractmethod
    def guarantee(self, total: Charge) -> tuple[float, float]:
        """The (ε, δ) guarantee of a total spend (an upper bound)."""

    def _settle(self, limit: Charge) -> Charge:
        """Shrink ``limit`` until its own reported guarantee is within (ε, δ).

        The budget is computed by a root finder, while ``guarantee`` rounds up: settling
        makes "spent never exceeds the budget" hold for the numbers actually reported.
        """
        for _ in range(200):
            eps, delta = self.guarantee(limit)
            if eps <= self.epsilon and delta <= self.delta:
                return limit
            limit = tuple(x * (1.0 - 2.0**-40) for x in limit)
        raise InvalidArgumentError(
            f"could not settle a budget for ({self.epsilon!r}, {self.delta!r}) in {self.name!r}"
        )

    def zero(self) -> Total:
        """No spend (an exact total)."""
        return tuple(Fraction(0) for _ in self.limit())

    def add(self, total: Total, charge: Cost) -> Total:
        """Total + charge, exactly."""
        return tuple(a + b for a, b in zip(total, charge, strict=True))

    def within(self, total: Total) -> bool:
        """Is an exact total within the budget?"""
        return all(a <= Fraction(b) for a, b in zip(total, self.limit(), strict=True))

    def fits_count(self, total: Total, charge: Cost) -> int:
        """How many more releases costing ``charge`` fit after ``total`` (exact).

        The largest n with total + n·charge within the budget; it is exactly the number
        of sequential spends that will be accepted, because totals are exact sums.
        Infinite charges fit zero times; an all-zero charge fits 2⁶³ − 1 times.
        """
        counts = []
        for used, cost, limit in zip(total, charge, self.limit(), strict=True):
            if cost == 0:
                continue
            if cost >= INFINITE:
                return 0
            room = Fraction(limit) - used
            counts.append(max(0, math.floor(room / cost)))
        if not self.within(total):
            return 0
        return min(counts) if counts else 2**63 - 1

    def settle(self, event: ev.Event) -> Filter:
        """The filter that handles ``event`` (itself; the auto filter decides here)."""
        return self

    def refusal(self, requested: Budget, remaining: Budget) -> str:
        """The message of a refused release."""
        return (
            f"this release would exceed the budget: it costs {requested} but only "
            f"{remaining} remains. Use more noise, fewer releases, or a new ledger; "
            "nothing was charged."
        )

    def admit(self, total: Total, event: ev.Event) -> None:  # noqa: B027 (optional hook)
        """Raise if ``event`` may not come next (beyond what it costs). Default: any may."""

    def share(self, event: ev.Event) -> Fraction:
        """The largest share of the budget one release of ``event`` takes (exact).

        1/share is how many such releases fit, before rounding down to a whole number: the
        finer comparison the automatic choice uses (two filters that both fit 2 releases
        may differ by 30 % in what one release costs).
        """
        shares = [
            (c / Fraction(limit)) if limit > 0 else (Fraction(0) if c == 0 else INFINITE)
            for c, limit in zip(self.cost(event), self.limit(), strict=True)
        ]
        return max(shares, default=Fraction(0))

    def fits(self, total: Total, event: ev.Event) -> int:
        """How many more releases of ``event`` this filter accepts after ``total``."""
        return self.fits_count(total, self.cost(event))

    def zero_shown(self) -> Charge:
        """No spend, as floats."""
        return tuple(0.0 for _ in self.limit())

    def shown(self, total: Total) -> Charge:
        """An exact total as floats, rounded up (what receipts and reports show)."""
        return tuple(shown_value(t) for t in total)

    def budget(self, amount: Charge) -> Budget:
        """``amount`` as a typed budget."""
        return self.budget_type(*amount)

    def stated(self, amount: Charge, *, remains: bool = False) -> Budget:
        """``amount`` as a typed budget that prints also in ε at this filter's δ.

        For what a user reads in a sentence — a refusal, ``Ledger.remaining``: "ε ≈ 0.48 at
        δ=1e-06 (ρ=0.0625 (zCDP))". ``remains``: printed rounded down (what remains must
        not look larger than it is); otherwise up.
        """
        shown: Budget = dataclasses.replace(
            cast(Any, self.budget(amount)),
            at_delta=self.delta,
            rounding="down" if remains else "up",
        )
        return shown

    def remaining(self, total: Total) -> Charge:
        """What is left, coordinate-wise, rounded down (never negative)."""
        out = []
        for used, limit in zip(total, self.limit(), strict=True):
            room = Fraction(limit) - used
            value = float(room) if room > 0 else 0.0
            if Fraction(value) > room:
                value = math.nextafter(value, -math.inf)
            out.append(max(0.0, value))
        return tuple(out)

    def config(self) -> dict[str, Any]:
        """The parameters that define this filter (persisted with a ledger)."""
        return {"accountant": self.name}

    @classmethod
    def describe(cls) -> str:
        """One line on what the filter guarantees."""
        return (cls.__doc__ or "").strip().splitlines()[0]


class BasicFilter(Filter):
    """Basic composition: Σεᵢ ≤ ε and Σδᵢ ≤ δ — valid for adaptively chosen (εᵢ, δᵢ).

    Rogers, Roth, Ullman & Vadhan 2016 ("Privacy Odometers and Filters"), §4: basic
    composition remains valid as a filter when each (εᵢ, δᵢ) is chosen adaptively.
    Accepts releases with a fixed (ε, δ) guarantee (pure/approximate DP, Laplace,
    randomized response, subsampled versions of these).
    """

    name: ClassVar[str] = "basic"
    budget_type: ClassVar[type[Budget]] = ApproxDPBudget

    def exact_charge(self, event: ev.Event) -> Cost | None:
        """(Σε, Σδ) exactly for pure, approximate and Laplace releases."""
        return exact_basic(event)

    def charge(self, event: ev.Event) -> Charge:
        """(ε, δ) of the release (basic composition inside it)."""
        try:
            summary = BasicAccountant.summarize(event)
        except NotApplicableError as error:
            raise NotApplicableError(
                f"this ledger's accountant is 'basic' (chosen at its first release, or "
                f"declared), which charges only releases with a fixed (ε, δ); {error} "
                "Charge Gaussian noise to a ledger created with accountant='zcdp' (or 'rdp'"
                ", 'gdp'), or whose first release is Gaussian; nothing was recorded."
            ) from None
        return (summary.total_epsilon, summary.total_delta)

    def limit(self) -> Charge:
        """(ε, δ)."""
        return (self.epsilon, self.delta)

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """(Σε, Σδ)."""
        return (total[0], total[1])


class ZCDPFilter(Filter):
    """zCDP filter: Σρᵢ ≤ ρ*, the largest ρ whose tight conversion meets (ε, δ).

    Valid for adaptively chosen ρᵢ: the Rényi filter of Feldman & Zrnic 2021
    ("Individual Privacy Accounting via a Rényi Filter", Thm 3.1) with budget ρ*·α at
    order α halts exactly when Σρᵢ would exceed ρ* — the same rule at every α — so the
    interaction is (α, ρ*α)-RDP for all α, i.e. ρ*-zCDP (Bun & Steinke 2016), which
    converts to (ε, δ) (Canonne, Kamath & Steinke 2020). See also Whitehouse et al. 2023.
    Accepts Gaussian, discrete Gaussian, pure-DP and ρ-zCDP (ξ = 0) releases.
    """

    name: ClassVar[str] = "zcdp"
    budget_type: ClassVar[type[Budget]] = ZCDPBudget

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        if delta == 0:
            raise InvalidArgumentError(
                "a zCDP ledger needs `delta` > 0 (zCDP implies no pure-DP guarantee). Found 0.0."
            )

        def excess(rho_inverse: float) -> float:
            return zcdp_to_epsilon(1.0 / rho_inverse, delta) - epsilon

        # smallest 1/ρ meeting the target ⇔ largest ρ; rounded down by the solver's safety
        hi = 1.0
        while excess(hi) > 0:
            hi *= 2.0
        inverse = _budget_root(excess, hi, "rho", epsilon, delta)
        self._rho = self._settle(((1.0 / inverse) * (1.0 - 2.0**-50),))[0]

    def exact_charge(self, event: ev.Event) -> Cost | None:
        """ρ exactly where it is rational (Gaussian, pure DP, ρ-zCDP)."""
        rho = exact_rho(event)
        return None if rho is None else (rho,)

    def charge(self, event: ev.Event) -> Charge:
        """ρ of the release."""
        summary = ZCDPAccountant.summarize(event)
        if summary.xi != 0:
            raise NotApplicableError(
                f"the zCDP ledger accepts ρ-zCDP releases (ξ = 0); {event!r} has ξ = "
                f"{summary.xi!r}. Use accountant='rdp'."
            )
        return (summary.rho,)

    def limit(self) -> Charge:
        """(ρ*,)."""
        return (self._rho,)

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """(ε at δ, δ) by the tight conversion."""
        return (zcdp_to_epsilon(total[0], self.delta), self.delta)


class GDPFilter(Filter):
    """Gaussian-DP filter: Σμᵢ² ≤ μ*², μ* the largest μ with δ_μ(ε) ≤ δ(1 − 2⁻³⁰).

    Valid for adaptively chosen releases each μᵢ-GDP given the past: fully adaptive
    composition of GDP mechanisms (Smith & Thakurta 2022; Koskela, Tobaben & Honkela
    2023) — the interaction is μ*-GDP, and μ*-GDP is exactly (ε, δ_μ*(ε))-DP (Dong, Roth
    & Su 2019). It charges

    * a Gaussian: μ² = (Δ/σ)², exactly — the tightest filter for Gaussian work;
    * a discrete Gaussian: (Δ/σ₀)² at the continuous price, σ₀ = √(σ² − τ²), with its
      certified slack s ≤ 2⁻¹⁰⁰ (:mod:`~dpledger.accountant.discrete_gaussian`) drawn
      from the reserved 2⁻³⁰δ in proportion to its charge: the charge is at least
      s·μ*²/(2⁻³⁰δ) (binding only for a release taking below ~10⁻¹⁴ of the budget, or
      for σ of about 3 grid units or less, where the slack grows). The slacks of all
      accepted ones then add to at most 2⁻³⁰δ, and the interaction is (ε, δ)-DP by the
      theorem there (its transcript argument holds for any stopping rule on public
      parameters);
    * a pure ε-DP release (Laplace, randomized response, bounded range, ...): μ(ε)² with
      μ(ε) = 2Φ⁻¹(e^ε/(1 + e^ε)), the GDP parameter every ε-DP mechanism has
      (:func:`~dpledger.accountant.gdp.pure_dp_to_gdp`) — valid, dearer than zCDP's ε²/2.

    Subsampled releases, zCDP events and (ε, δ) releases with δ > 0 have no GDP
    guarantee and are refused.
    """

    name: ClassVar[str] = "gdp"
    budget_type: ClassVar[type[Budget]] = GDPBudget

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        if delta == 0:
            raise InvalidArgumentError("a GDP ledger needs `delta` > 0. Found 0.0.")
        self._slack_budget = delta * _SLACK_SHARE  # exact: a power of two
        target = float_down(Fraction(delta) - Fraction(self._slack_budget))
        log_target = math.log(target)

        def excess(inverse: float) -> float:
            achieved = gdp_delta(epsilon, 1.0 / inverse)
            if achieved > target:
                return 1.0
            return math.log(achieved) - log_target if achieved > 0 else -math.inf

        hi = 1.0
        while excess(hi) > 0:
            hi *= 2.0
        inverse = _budget_root(excess, hi, "mu", epsilon, delta)
        mu = (1.0 / inverse) * (1.0 - 2.0**-50)
        self._mu_squared = self._settle((mu * mu * (1.0 - 2.0**-50),))[0]

    def exact_charge(self, event: ev.Event) -> Cost | None:
        """Σ(Δ/σ)² exactly, for Gaussian releases."""
        mu2 = exact_mu_squared(event)
        return None if mu2 is None else (mu2,)

    def _atom(self, atom: ev.Event) -> float:
        """μ² of one release (rounded up); raises NotApplicableError."""
        if type(atom) is ev.Gaussian:
            return square_up(atom.mu)
        if type(atom) is ev.DiscreteGaussian:
            price = continuous_price(atom)
            if price is not None:
                gaussian, slack = price
                # the slack is drawn from the reserve in proportion to the charge: a release
                # with a tiny μ² is charged at least s·μ*²/reserve (so Σs ≤ reserve)
                if self._slack_budget == 0:  # δ·2⁻³⁰ underflows (δ below ~1e-314)
                    return math.inf
                floor = round_up(slack / self._slack_budget * self._mu_squared * (1 + 2**-40))
                return max(square_up(gaussian.mu), floor)
            if atom.dimension is not None:
                return math.inf  # σ ≲ 1 grid unit: the slack reaches 1, nothing fits
            raise NotApplicableError(
                "the GDP ledger charges a discrete Gaussian at the continuous price, which "
                f"needs a known dimension (found {atom!r}); "
                "use accountant='zcdp'."
            )
        pure = pure_epsilon(atom)
        if pure is not None:
            return square_up(pure_dp_to_gdp(pure))
        raise NotApplicableError(
            f"the GDP ledger accepts Gaussian, discrete Gaussian and pure ε-DP releases "
            f"(found {atom!r}); use accountant='zcdp' for zCDP events or 'rdp' for "
            "subsampling."
        )

    def charge(self, event: ev.Event) -> Charge:
        """μ² of the release."""
        total = 0.0
        for atom, count in ev.flatten(event).items():
            total = sum_up(total, round_up(count * self._atom(atom)))  # ∞, not an error
        return (total,)

    def limit(self) -> Charge:
        """(μ*²,)."""
        return (self._mu_squared,)

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """(ε at δ, δ): the slacks of discrete Gaussians are within the reserved 2⁻³⁰δ."""
        rest = float_down(Fraction(self.delta) - Fraction(self._slack_budget))
        return (gdp_epsilon(rest, round_up(math.sqrt(total[0]))), self.delta)


class RDPFilter(Filter):
    """Rényi filter at one order α: ΣRᵢ(α) ≤ B(α), B the largest that converts to (ε, δ).

    Valid for adaptively chosen releases (Feldman & Zrnic 2021, Thm 3.1; Lécuyer 2021):
    the interaction is (α, B)-RDP, and (α, B)-RDP implies (ε, δ)-DP for
    B = ε − log(1 − 1/α) + (log δ + log α)/(α − 1) (Balle et al. 2020, Thm 21). The order
    is fixed when the ledger is created (default: the best order for a Gaussian-like
    workload that uses the whole budget). Accepts everything with a Rényi curve,
    including Poisson-subsampled Gaussians (DP-SGD).
    """

    name: ClassVar[str] = "rdp"
    budget_type: ClassVar[type[Budget]] = RDPBudget

    def __init__(self, epsilon: float, delta: float, order: float | None = None) -> None:
        super().__init__(epsilon, delta)
        if delta == 0:
            raise InvalidArgumentError("an RDP ledger needs `delta` > 0. Found 0.0.")
        if order is None:
            rho = ZCDPFilter(epsilon, delta).limit()[0]
            log_delta = math.log(delta)

            def objective(a: float) -> float:
                return rho * a + conversion_offset(a, log_delta)

            order, _ = minimise_over_order(objective)
        self.order = check_positive("order", order)
        if self.order <= 1:
            raise InvalidArgumentError(f"`order` must be greater than 1. Found {order!r}.")
        a = self.order
        limit = budget_at_order(epsilon, a, delta)
        if limit <= 0:
            raise InvalidArgumentError(
                f"at order {a!r} no Rényi budget converts to ({epsilon!r}, {delta!r})-DP; "
                "choose a larger order."
            )
        self._limit = self._settle((limit * (1.0 - 2.0**-50),))[0]

    @staticmethod
    def order_for(epsilon: float, delta: float, workload: ev.Event) -> float:
        """The order at which the most repetitions of ``workload`` fit (ε, δ).

        Maximises B(α)/R(α), B the budget at order α and R the workload's Rényi
        divergence (Mironov 2017; the conversion is Balle et al. 2020, Thm 21). Any
        order gives a valid filter; this only chooses the one that suits the workload.
        """
        curve = rdp_curve(workload)
        log_delta = math.log(delta)

        def objective(a: float) -> float:
            budget = epsilon - conversion_offset(a, log_delta)
            if budget <= 0:
                return math.inf
            value = curve(a)
            return math.inf if not value > 0 else math.log(value) - math.log(budget)

        order, best = minimise_over_order(objective)
        if not math.isfinite(best):
            raise NotApplicableError(
                f"no Rényi order gives a budget for ({epsilon!r}, {delta!r}) that fits "
                f"{workload!r}."
            )
        return order

    def charge(self, event: ev.Event) -> Charge:
        """R(α) of the release."""
        return (round_up(rdp_curve(event)(self.order)),)

    def limit(self) -> Charge:
        """(B(α),)."""
        return (self._limit,)

    def budget(self, amount: Charge) -> Budget:
        """``amount`` as an RDP budget at this order."""
        return RDPBudget(self.order, amount[0])

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """(ε at δ, δ) at the fixed order."""
        return (epsilon_at_order(total[0], self.order, self.delta), self.delta)

    def config(self) -> dict[str, Any]:
        """Includes the order."""
        return {"accountant": self.name, "order": self.order}


class AutoFilter(Filter):
    """The default: undecided until the first release, then the filter that fits it best.

    At the first release the ledger fixes, for good, the filter under which one release
    like it takes the smallest share of the budget (:meth:`Filter.share`): basic
    composition, zCDP or Gaussian DP for releases they can account (with δ = 0 only
    basic applies) — so Gaussian and discrete-Gaussian work is charged at its exact GDP
    price (:class:`GDPFilter`, which also accepts pure-DP releases afterwards); a Rényi
    filter, at the order where the most such releases fit, for releases only Rényi DP
    can account (Poisson-subsampled Gaussians: DP-SGD). On a
    tie the earlier candidate (basic, then zCDP) is kept.

    Why this is valid: the first release is chosen before any output exists, so a choice
    that depends only on it is a choice made in advance, and from then on the ledger *is*
    that filter (each valid under adaptivity, see its docstring). No single filter is
    known that fits as many pure-DP releases as basic composition and as many Gaussian
    releases as GDP at once (docs/ledger.md, "The default ledger"); a refused release
    says which accountant would have accepted it.
    """

    name: ClassVar[str] = "auto"
    budget_type: ClassVar[type[Budget]] = ApproxDPBudget

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        self._chosen: dict[ev.Event, Filter] = {}

    def candidates(self) -> list[Filter]:
        """The filters it chooses between (without the Rényi one), in order of preference."""
        if self.delta == 0:
            return [BasicFilter(self.epsilon, 0.0)]
        return [
            BasicFilter(self.epsilon, self.delta),
            ZCDPFilter(self.epsilon, self.delta),
            GDPFilter(self.epsilon, self.delta),
        ]

    def settle(self, event: ev.Event) -> Filter:
        """The filter under which the most releases like ``event`` fit."""
        found = self._chosen.get(event)
        if found is not None:
            return found
        best: Filter | None = None
        best_share: Fraction | None = None
        for candidate in self.candidates():
            try:
                share = candidate.share(event)
            except NotApplicableError:
                continue
            if best_share is None or share < best_share:
                best, best_share = candidate, share
        if best is None and self.delta > 0:
            order = RDPFilter.order_for(self.epsilon, self.delta, event)
            best = RDPFilter(self.epsilon, self.delta, order)
        if best is None:
            raise NotApplicableError(
                f"no filter of a pure-DP ledger (δ = 0) can account for {event!r}: it has no "
                "pure ε. Give the ledger a δ > 0."
            )
        if len(self._chosen) < 256:
            self._chosen[event] = best
        return best

    def charge(self, event: ev.Event) -> Charge:
        """Never charged itself: :meth:`settle` hands every release to the chosen filter."""
        raise NotApplicableError("internal error: the auto filter charges nothing itself")

    def limit(self) -> Charge:
        """(ε, δ)."""
        return (self.epsilon, self.delta)

    def guarantee(self, total: Charge) -> tuple[float, float]:
        """Nothing is spent before the choice."""
        return (0.0, 0.0)


FILTERS: dict[str, type[Filter]] = {
    "basic": BasicFilter,
    "zcdp": ZCDPFilter,
    "gdp": GDPFilter,
    "rdp": RDPFilter,
}
ACCOUNTANT_CHOICES = ("auto", *FILTERS)


def make_filter(
    accountant: str,
    epsilon: float,
    delta: float,
    order: float | None = None,
    workload: ev.Event | None = None,
) -> Filter:
    """Build the filter named ``accountant`` ("auto": decided at the first release).

    ``workload`` (for "rdp" without ``order``): the order is chosen so that the most
    repetitions of the workload fit.
    """
    if accountant == "auto":
        if order is not None or workload is not None:
            raise InvalidArgumentError(
                "`order` and `workload` apply to accountant='rdp' only. Found accountant='auto'."
            )
        # with δ = 0 only basic composition applies: nothing to decide
        return BasicFilter(epsilon, 0.0) if delta == 0 else AutoFilter(epsilon, delta)
    if accountant == "rdp":
        if order is None and workload is not None:
            if delta == 0:
                raise InvalidArgumentError("an RDP ledger needs `delta` > 0. Found 0.0.")
            order = RDPFilter.order_for(epsilon, delta, workload)
        return RDPFilter(epsilon, delta, order)
    if order is not None or workload is not None:
        raise InvalidArgumentError(
            f"`order` and `workload` apply to accountant='rdp' only. Found "
            f"accountant={accountant!r}."
        )
    return FILTERS[accountant](epsilon, delta)


__dir__ = namespace(__all__)
