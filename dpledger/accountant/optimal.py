"""Optimal composition of (ε, δ)-DP mechanisms (Kairouz, Oh & Viswanath 2015), exactly.

Every (εᵢ, δᵢ)-DP mechanism is dominated by the canonical pair of KOV15 (Thm 2.1): with
probability δᵢ the output reveals the input, otherwise it is binary randomized response
with parameter εᵢ. The composition is therefore dominated by the product of canonical
pairs, and its exact privacy profile is

    δ(ε) = 1 − Πᵢ(1 − δᵢ) · (1 − δ_RR(ε)),
    δ_RR(ε) = E[(1 − e^{ε − L})₊],   L = Σᵢ (±εᵢ),

where, under the first distribution, each step contributes +εᵢ with probability
e^{εᵢ}/(1 + e^{εᵢ}) and −εᵢ otherwise (KOV15, Thm 3.3 for equal εᵢ, stated there at the
points ε = (k − 2i)ε₀; the same expression gives every ε ≥ 0, and the heterogeneous case
is the same hockey-stick divergence of the product — Murtagh & Vadhan 2016 show
computing it is #P-hard in general, so releases are grouped by (εᵢ, δᵢ) and the joint
distribution of L is enumerated exactly up to :data:`MAX_SUPPORT` points).

Evaluation is exact, not on a grid: each term is formed in log space and the
sum has no cancellation (all terms are positive). The only float64 error is in the log
of each term (lgamma and products of size up to k·ε); an explicit margin of 16 ulps
of the largest intermediate magnitude is added to log δ, so the returned δ is an upper
bound. ``epsilon(delta)`` inverts δ(ε) with the safe-side root finder. Tests cross-check
against direct summation in mpmath at 50 significant digits.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from scipy import special

from dpledger._numerics import float_up, round_up
from dpledger._public import namespace
from dpledger._solve import NoSafeValueError, smallest_satisfying
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.basic import BasicAccountant, dp_guarantee
from dpledger.errors import NotApplicableError

__all__ = ["MAX_SUPPORT", "OptimalAccountant", "OptimalSummary", "optimal_composition_delta"]

MAX_SUPPORT = 2_000_000
"""Largest number of privacy-loss values enumerated exactly (Π over groups of (kᵢ + 1))."""

_ULP = 2.0**-52


def _loss_distribution(
    groups: tuple[tuple[float, int], ...],
) -> tuple[np.ndarray, np.ndarray, float]:
    """Support, log-probabilities and a float-error bound of L = Σ ±εᵢ under P."""
    values = np.zeros(1)
    log_probs = np.zeros(1)
    magnitude = 0.0
    for epsilon, count in groups:
        losers = np.arange(count + 1, dtype=float)
        log_norm = count * float(np.logaddexp(0.0, epsilon))
        log_binom = (
            special.gammaln(count + 1)
            - special.gammaln(losers + 1)
            - special.gammaln(count - losers + 1)
        )
        group_log_probs = log_binom + (count - losers) * epsilon - log_norm
        group_values = (count - 2 * losers) * epsilon
        magnitude += 3 * float(special.gammaln(count + 1)) + 2 * log_norm + count * epsilon
        values = (values[:, None] + group_values[None, :]).ravel()
        log_probs = (log_probs[:, None] + group_log_probs[None, :]).ravel()
    return values, log_probs, magnitude


def optimal_composition_delta(
    epsilon: float, groups: tuple[tuple[float, int], ...], log_keep: float = 0.0
) -> float:
    """Log δ(ε) of the optimal composition; see the module docstring.

    Args:
        epsilon: ε ≥ 0.
        groups: (εᵢ, kᵢ) pairs: kᵢ releases that are εᵢ-DP apart from their δᵢ.
        log_keep: log Πᵢ(1 − δᵢ)^{kᵢ}.

    Returns:
        log δ(ε), an upper bound (natural log).
    """
    log_fail = math.log(-math.expm1(log_keep)) if log_keep < 0 else -math.inf
    values, log_probs, magnitude = _loss_distribution(groups)
    # Each loss value is a float sum over the groups of (kᵢ − 2lᵢ)εᵢ: one rounding per
    # product and per addition, each at most half an ulp of the total Σkᵢεᵢ. Raise every
    # value by that bound so none lands at or below ε when the exact one is above it
    # (issue 10 item 20: δ = 0 one ulp below the last atom). A larger loss only enlarges
    # δ(ε) = Σ p(v)(1 − e^{ε−v})⁺, so the result stays an upper bound.
    total = math.fsum(e * k for e, k in groups)
    values = values + (len(groups) + 2) * _ULP * total
    above = values > epsilon
    if not np.any(above):
        return log_fail
    terms = log_probs[above] + np.log(-np.expm1(epsilon - values[above]))
    log_rr = float(special.logsumexp(terms)) + 16 * _ULP * (magnitude + abs(epsilon) + 1.0)
    return float(np.logaddexp(log_fail, log_keep + min(0.0, log_rr)))


@dataclass(frozen=True)
class OptimalSummary(Summary):
    """The multiset of (εᵢ, δᵢ) guarantees composed."""

    counts: tuple[tuple[tuple[float, float], int], ...] = ()
    _groups: tuple[tuple[float, int], ...] = field(default=(), compare=False, repr=False)

    @staticmethod
    def of(counter: Counter[tuple[float, float]]) -> OptimalSummary:
        """Build a summary from a Counter of (ε, δ) → count."""
        items = tuple(sorted(counter.items()))
        support = 1
        groups: Counter[float] = Counter()
        for (epsilon, _), count in items:
            if epsilon > 0:
                groups[epsilon] += count
        for count in groups.values():
            support *= count + 1
        if support > MAX_SUPPORT:
            raise NotApplicableError(
                f"exact optimal composition of these {len(groups)} distinct ε values would "
                f"enumerate {support} privacy-loss values (limit {MAX_SUPPORT}); use "
                "method='advanced', 'rdp' or 'auto'."
            )
        return OptimalSummary(items, tuple(sorted(groups.items())))

    def _counter(self) -> Counter[tuple[float, float]]:
        return Counter(dict(self.counts))

    def __add__(self, other: OptimalSummary) -> OptimalSummary:
        return OptimalSummary.of(self._counter() + other._counter())

    def scaled(self, count: int) -> OptimalSummary:
        """The guarantee of ``count`` adaptive repetitions (exact, rounded up)."""
        return OptimalSummary.of(Counter({key: k * count for key, k in self.counts}))

    @property
    def _log_keep(self) -> float:
        return math.fsum(k * math.log1p(-d) for (_, d), k in self.counts if d > 0)

    def _log_delta(self, epsilon: float) -> float:
        return optimal_composition_delta(epsilon, self._groups, self._log_keep)

    def delta(self, epsilon: float) -> float:
        """Smallest δ certified at ``epsilon`` by this notion (at most 1)."""
        if math.isinf(epsilon):
            return min(1.0, round_up(-math.expm1(self._log_keep)))
        return min(1.0, round_up(math.exp(self._log_delta(epsilon))))

    def epsilon(self, delta: float) -> float:
        """Smallest ε certified at ``delta`` by this notion (``inf`` if none)."""
        if delta == 0 and self._log_keep < 0:
            return math.inf
        if -math.expm1(self._log_keep) >= delta and self._log_keep < 0:
            return math.inf
        hi = float_up(sum((Fraction(e) * k for e, k in self._groups), Fraction(0)))
        if delta == 0:
            return hi  # Σ kᵢεᵢ exactly, rounded up once (basic composition is then exact)
        log_target = math.log(delta)
        # Bracket above every raised loss value (see optimal_composition_delta): δ = 0 there.
        top = math.nextafter(hi + (len(self._groups) + 3) * _ULP * hi, math.inf)
        try:
            result = smallest_satisfying(
                lambda e: self._log_delta(e) - log_target, 0.0, top, what="epsilon"
            )
        except NoSafeValueError as error:
            raise NotApplicableError(f"the optimal-composition inversion failed: {error}") from None
        return round_up(result)


def _one(event: ev.Event) -> OptimalSummary:
    return OptimalSummary.of(Counter({dp_guarantee(event): 1}))


class OptimalAccountant(Accountant[OptimalSummary]):
    """Exact optimal composition of (ε, δ)-DP releases (Kairouz, Oh & Viswanath 2015)."""

    method: ClassVar[str] = "optimal"
    handlers: ClassVar[dict[type[ev.Event], Any]] = dict.fromkeys(BasicAccountant.handlers, _one)

    @classmethod
    def zero(cls) -> OptimalSummary:
        """The guarantee of releasing nothing."""
        return OptimalSummary()

    @classmethod
    def _hint(cls) -> str:
        return BasicAccountant._hint()


__dir__ = namespace(__all__)
