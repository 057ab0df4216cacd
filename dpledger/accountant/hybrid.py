"""Curve-accounted releases composed with (ε, δ) releases: the split ``auto`` adds.

The methods that account with a curve (RDP, zCDP, GDP, PLD) cannot hold a release known
only by an (ε, δ) guarantee with δ > 0 — its Rényi divergences are infinite — and
basic, advanced and optimal composition cannot hold a release with no fixed (ε, δ) (a
zCDP or discrete-Gaussian release). A composition of both kinds was refused by every
method. This one splits it:

* the *curve* releases C (every release without a fixed δ > 0) are accounted together by
  the tightest method that applies to them (``method="auto"`` on C alone), which gives
  the guarantee (ε_C(δ₁), δ₁) for every δ₁ ∈ (0, 1);
* the *fixed* releases F (every release whose (ε, δ) guarantee has δ > 0, including
  subsampled ones, amplified as for basic composition) and that one guarantee of C are
  composed exactly by optimal composition (Kairouz, Oh & Viswanath 2015; basic
  composition where the enumeration is too large);
* δ₁ (for ``epsilon``) or ε_C (for ``delta``) is chosen by a golden-section search; every
  split is a valid bound, and the smallest found is returned.

Validity. C and F are interleaved and chosen adaptively, so C is an *interactive*
mechanism, (ε_C(δ₁), δ₁)-DP because its accountant's composition theorem holds for
adaptively chosen releases, run concurrently with the mechanisms of F. The concurrent
composition of interactive (ε, δ)-DP mechanisms obeys the optimal composition bound of
non-interactive ones (Vadhan & Zhang 2023, "Concurrent composition theorems for
differential privacy"; Lyu 2022; Vadhan & Wang 2021 for basic composition).

Example: a zCDP release with ρ = 0.1 and an (0.5, 1e-7)-DP release, at δ = 1e-5:

    >>> from dpledger import events as ev
    >>> from dpledger.accountant import epsilon
    >>> eps = epsilon(ev.ZCDP(0.1) + ev.ApproxDP(0.5, 1e-7), 1e-5)  # only auto holds it
    >>> 2.1 < eps < 2.5
    True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.basic import dp_guarantee
from dpledger.accountant.optimal import OptimalSummary
from dpledger.errors import NotApplicableError

__all__ = ["HybridAccountant", "HybridSummary"]

_SEARCH_STEPS = 20  # golden-section steps of the split (each evaluated point is valid)
_SPAN = 30.0  # δ₁ is searched over [δ·e^{−30}, δ) (log scale)
_GOLDEN = (math.sqrt(5) - 1) / 2


def _fixed_delta(atom: ev.Event) -> tuple[float, float] | None:
    """The release's fixed (ε, δ) if it has one with δ > 0 (it belongs to F), else None."""
    try:
        guarantee = dp_guarantee(atom)
    except NotApplicableError:
        return None
    return guarantee if guarantee[1] > 0 else None


@dataclass(frozen=True)
class HybridSummary(Summary):
    """The curve releases (one composed event) and the fixed (ε, δ) releases."""

    curve: tuple[tuple[ev.Event, int], ...] = ()
    fixed: tuple[tuple[tuple[float, float], int], ...] = ()
    _cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def __add__(self, other: HybridSummary) -> HybridSummary:
        curve: Counter[ev.Event] = Counter(dict(self.curve))
        curve.update(dict(other.curve))
        fixed: Counter[tuple[float, float]] = Counter(dict(self.fixed))
        fixed.update(dict(other.fixed))
        return HybridSummary(tuple(curve.items()), tuple(sorted(fixed.items())))

    def scaled(self, count: int) -> HybridSummary:
        """The guarantee of ``count`` repetitions."""
        return HybridSummary(
            tuple((e, k * count) for e, k in self.curve),
            tuple((g, k * count) for g, k in self.fixed),
        )

    def _check(self) -> None:
        if not self.curve or not self.fixed:
            raise NotApplicableError(
                "method 'hybrid' composes releases accounted by curves with (ε, δ) releases "
                "with δ > 0; this composition has only one kind (use the method for it)."
            )

    def _curve_event(self) -> ev.Event:
        return ev.Composed(tuple(e * k if k > 1 else e for e, k in self.curve))

    def _summaries(self) -> list[tuple[str, Summary]]:
        """The curve releases' summary by every other method that applies (built once).

        As for ``auto``, the numerical PLD is left out where a closed form is exact for
        the curve releases (GDP for Gaussians) and PLD is not exact itself.
        """
        from dpledger import accountant  # the package imports this module

        if "summaries" not in self._cache:
            event = self._curve_event()
            skip_pld = accountant._exact_method(event) is not None and not (
                accountant._pld_is_exact(event)
            )
            found = []
            for name, method in accountant.ACCOUNTANTS.items():  # not the split itself
                if name == "pld" and skip_pld:
                    continue
                try:
                    found.append((name, method.summarize(event)))
                except NotApplicableError:
                    continue
            if not found:
                raise NotApplicableError(
                    f"method 'hybrid': no method accounts for the curve releases {event!r}."
                )
            self._cache["summaries"] = found
        summaries: list[tuple[str, Summary]] = self._cache["summaries"]
        return summaries

    def _curve(self, query: str, value: float, search: bool) -> float:
        """ε_C(δ₁) or δ_C(ε₁) of the curve releases: the smallest over the methods.

        While the split is searched (``search``), the numerical PLD is left out where
        another method applies (it would be recomposed at every trial δ₁); the split
        found is then evaluated with every method.
        """
        key = (query, value, search)
        if key not in self._cache:
            summaries = self._summaries()
            if search and any(name != "pld" for name, _ in summaries):
                summaries = [(n, s) for n, s in summaries if n != "pld"]
            values = []
            for _, summary in summaries:
                try:
                    values.append(
                        summary.epsilon(value) if query == "epsilon" else summary.delta(value)
                    )
                except (NotApplicableError, ArithmeticError, ValueError, MemoryError):
                    continue  # as in auto: a method that fails numerically gives no bound
            self._cache[key] = min(values, default=math.inf if query == "epsilon" else 1.0)
        value_found: float = self._cache[key]
        return value_found

    def _basic_only(self) -> bool:
        """Whether F with one more release is beyond optimal composition's enumeration."""
        return self._composed((1.0, 0.5)) is None

    def _composed(self, extra: tuple[float, float]) -> OptimalSummary | None:
        counts: Counter[tuple[float, float]] = Counter(dict(self.fixed))
        counts[extra] += 1
        try:
            return OptimalSummary.of(counts)
        except NotApplicableError:
            return None  # too many distinct values to enumerate: basic composition

    def _epsilon_at(self, delta: float, delta_curve: float, search: bool = False) -> float:
        """ε of the split that gives δ₁ = ``delta_curve`` to the curve releases."""
        eps_curve = self._curve("epsilon", delta_curve, search)
        if math.isinf(eps_curve):
            return math.inf
        composed = self._composed((eps_curve, delta_curve))
        if composed is not None:
            return composed.epsilon(delta)
        spent = math.fsum([delta_curve, *(d * k for (_, d), k in self.fixed)])
        if spent > delta:
            return math.inf
        return round_up(math.fsum([eps_curve, *(e * k for (e, _), k in self.fixed)]))

    def _delta_at(self, epsilon: float, eps_curve: float, search: bool = False) -> float:
        """δ of the split that gives ε₁ = ``eps_curve`` to the curve releases."""
        delta_curve = self._curve("delta", eps_curve, search)
        composed = self._composed((eps_curve, delta_curve))
        if composed is not None:
            return composed.delta(epsilon)
        if math.fsum([eps_curve, *(e * k for (e, _), k in self.fixed)]) > epsilon:
            return 1.0
        return min(1.0, round_up(math.fsum([delta_curve, *(d * k for (_, d), k in self.fixed)])))

    def epsilon(self, delta: float) -> float:
        """Smallest ε found over the splits of δ (each a valid bound)."""
        self._check()
        if delta <= 0.0:
            return math.inf
        if self._basic_only():
            # basic composition: ε_C(δ₁) falls with δ₁, so all that F leaves goes to C
            rest = delta - math.fsum(d * k for (_, d), k in self.fixed)
            return self._epsilon_at(delta, rest * (1 - 1e-12)) if rest > 0 else math.inf
        log_hi = math.log(delta) + math.log1p(-1e-9)
        value, at = _golden_min(
            lambda t: self._epsilon_at(delta, math.exp(t), search=True), log_hi - _SPAN, log_hi
        )
        return min(value, self._epsilon_at(delta, math.exp(at)))

    def delta(self, epsilon: float) -> float:
        """Smallest δ found over the splits of ε (each a valid bound)."""
        self._check()
        if math.isinf(epsilon):
            return self._delta_at(epsilon, math.inf)
        if self._basic_only():
            # basic composition: δ_C(ε₁) falls with ε₁, so all that F leaves goes to C
            rest = epsilon - math.fsum(e * k for (e, _), k in self.fixed)
            return self._delta_at(epsilon, rest * (1 - 1e-12)) if rest >= 0 else 1.0
        value, at = _golden_min(lambda e: self._delta_at(epsilon, e, search=True), 0.0, epsilon)
        return min(value, self._delta_at(epsilon, at))


def _golden_min(function: Callable[[float], float], low: float, high: float) -> tuple[float, float]:
    """(smallest value, its argument) of ``function`` found by golden-section search.

    Every evaluated value is a valid bound, so the minimum over them is one whatever the
    shape of the function (it need not be unimodal for the answer to be valid, only for
    it to be the optimum).
    """
    best = min((function(low), low), (function(high), high))
    a, b = low, high
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = function(c), function(d)
    for _ in range(_SEARCH_STEPS):
        best = min(best, (fc, c), (fd, d))
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = function(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = function(d)
    return min(best, (fc, c), (fd, d))


class HybridAccountant(Accountant[HybridSummary]):
    """Curve releases by the tightest curve method, composed with (ε, δ) releases."""

    method: ClassVar[str] = "hybrid"
    #: none: every release is taken, its kind decided by its guarantee (see summarize)
    handlers: ClassVar[dict[type[ev.Event], Any]] = {}

    @classmethod
    def zero(cls) -> HybridSummary:
        """Nothing released."""
        return HybridSummary()

    @classmethod
    def summarize(cls, event: ev.Event) -> HybridSummary:
        """The split of ``event`` (refused where it has only one kind of release)."""
        curve: list[tuple[ev.Event, int]] = []
        fixed: Counter[tuple[float, float]] = Counter()
        for atom, count in ev.flatten(event).items():
            guarantee = _fixed_delta(atom)
            if guarantee is None:
                curve.append((atom, count))
            else:
                fixed[guarantee] += count
        summary = HybridSummary(tuple(curve), tuple(sorted(fixed.items())))
        summary._check()
        return summary


__dir__ = namespace(__all__)
