"""The noise of a query before it is spent: mechanism, scale, cost, and a 95 % interval.

A :class:`Preview` is computed from public quantities only — the declared bounds, groups
and contribution bounds, the ledger's budget and what it has spent, the column names —
never from the data (the one exception is the number of records under replace-one
adjacency without a privacy unit, which that adjacency makes public). It spends nothing
and records nothing.

The intervals (Dwork & Roth 2014, §3 for the tails):

* Gaussian noise of standard deviation σ: ±z·σ with z = Φ⁻¹(0.975) ≈ 1.96 — for the
  discrete Gaussian the same half-width rounded up to an integer (its tails are at most
  the continuous one's plus a term below 10⁻¹⁰ for σ ≥ 1; Canonne, Kamath & Steinke 2020,
  Prop. 25 and §2.5);
* Laplace noise of scale b: ±b·ln 20 (P(|X| > t) = e^{−t/b}); the discrete Laplace on the
  integers with scale t: the least integer h with 2e^{−(h+1)/t}/(1 + e^{−1/t}) ≤ 0.05;
* the safe (grid) mechanisms add at most one grid step, counted in.

An interval is per cell: each group's (each column's) answer is within it with
probability ≥ 95 % (not simultaneously). A mean's interval needs the number of records:
it is exact when that number is public (replace-one), otherwise it is given at a declared
``rows=`` and treats the noisy count by the delta method at the worst-case position of
the mean (the middle of the bounds' error is largest at an end), so it is an
approximation, labelled as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from dpledger._format import up
from dpledger.accountant import events as ev

__all__ = ["Preview", "ReleasePreview", "describe", "half_width", "schedule_preview"]

_Z95 = NormalDist().inv_cdf(0.975)


def half_width(mechanism: Any, level: float = 0.95) -> float:
    """The half-width h with P(|noise| ≤ h) ≥ ``level`` for one coordinate of ``mechanism``."""
    name = type(mechanism).__name__
    tail = 1.0 - level
    if name in ("Gaussian", "DiscreteGaussian"):
        sigma = float(mechanism.sigma)
        z = NormalDist().inv_cdf(1.0 - tail / 2)
        width = z * sigma
        if name == "DiscreteGaussian":
            return float(math.ceil(width + 1e-9))
        return width + float(getattr(mechanism, "granularity", 0.0) or 0.0)
    if name == "Laplace":
        scale = float(mechanism.scale)
        return scale * math.log(1.0 / tail) + float(getattr(mechanism, "granularity", 0.0) or 0.0)
    if name == "DiscreteLaplace":
        t = float(mechanism.scale)
        # P(|X| > h) = 2e^{−(h+1)/t}/(1 + e^{−1/t}) ≤ tail
        h = -t * math.log(tail * (1.0 + math.exp(-1.0 / t)) / 2.0) - 1.0
        return float(max(0, math.ceil(h - 1e-9)))
    raise ValueError(f"no interval for {name}")


@dataclass(frozen=True)
class ReleasePreview:
    """One release of the query: what it releases and the noise it would add."""

    label: str
    mechanism: str
    noise_scale: float
    sensitivity: float
    cells: int
    half_width: float


@dataclass(frozen=True)
class Preview:
    """What a query would release and spend, computed without spending.

    Attributes:
        query: The query's name (and ``label=``).
        releases: Each release: mechanism, noise scale (σ for Gaussian noise, the scale b
            for Laplace noise, in the data's units), sensitivity, cells, and the 95 %
            half-width of its noise.
        epsilon: The query's cost in ε at the ledger's δ (its releases composed with the
            tightest method), or its own ε when it was given one.
        delta: The δ that ε is stated at.
        cost: The query's cost in the ledger's currency (e.g. ``{"rho": ...}``).
        fits: Whether the ledger would accept the whole query now.
        interval: The 95 % half-width of the *answer* per cell, or None where it needs a
            number of records that is private (pass ``rows=``).
        note: How the interval was computed (exact, or an approximation at ``rows``).
        schedule: An estimator's fit: its releases (mechanisms or events) at their
            calibrated noise, in order — what :meth:`Ledger.check <dpledger.Ledger.check>`
            takes, so a caller can price several fits together (empty for a query).
    """

    query: str
    releases: tuple[ReleasePreview, ...]
    epsilon: float
    delta: float
    cost: dict[str, Any]
    fits: bool
    interval: float | None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    schedule: tuple[Any, ...] = ()

    def __str__(self) -> str:
        price = "; ".join(f"{name} {_number(value)}" for name, value in self.cost.items())
        lines = [
            f"{self.query}: costs ε ≤ {up(self.epsilon, 4)} at δ = {self.delta:.3g}"
            + (f" (in the ledger's currency: {price})" if price else "")
            + ("" if self.fits else " — does NOT fit the ledger's remaining budget"),
        ]
        for r in self.releases:
            cells = f"{r.cells} cell{'s' if r.cells > 1 else ''}"
            lines.append(
                f"  {r.label}: {r.mechanism}, noise scale {up(r.noise_scale, 4)} "
                f"(sensitivity {up(r.sensitivity, 4)}, {cells}), "
                f"95 % of its noise within ±{up(r.half_width, 4)}"
            )
        if self.interval is not None:
            lines.append(
                f"  answer: within ±{up(self.interval, 4)} with 95 % probability {self.note}"
            )
        elif self.note:
            lines.append(f"  answer: {self.note}")
        return "\n".join(lines)


def _number(value: Any) -> str:
    """A cost, rounded up (a printed charge is never below the true one)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(up(v, 4) for v in value) + ")"
    return up(value, 4)


def describe(
    query: str,
    labels: Sequence[str],
    mechanisms: Sequence[Any],
    sensitivities: Sequence[float],
    ledger: Any,
    own: tuple[float, float] | None,
) -> tuple[tuple[ReleasePreview, ...], float, float, dict[str, Any], bool]:
    """(releases, ε, δ, cost in the ledger's currency, fits) for a calibrated schedule."""
    from dpledger import accountant
    from dpledger.errors import DPLedgerError

    releases = []
    for label, mechanism, sensitivity in zip(labels, mechanisms, sensitivities, strict=True):
        name = type(mechanism).__name__
        scale = getattr(mechanism, "sigma", getattr(mechanism, "scale", math.nan))
        try:
            width = half_width(mechanism)
        except ValueError:  # an event without additive noise (a sampler's release)
            width = math.nan
        releases.append(
            ReleasePreview(
                label,
                name,
                float(scale),
                float(sensitivity),
                int(getattr(mechanism, "dimension", 1)),
                width,
            )
        )
    from dpledger.ledger.planning import price_schedule
    from dpledger.ledger.receipts import as_event

    events = [as_event(m, None, None) for m in mechanisms]
    composed = ev.Composed(tuple(events)) if len(events) > 1 else events[0]
    if own is not None:
        epsilon, delta = own
    else:
        delta = float(ledger.delta)
        epsilon = accountant.epsilon(composed, delta)
    cost: dict[str, Any]
    try:
        currency, price = price_schedule(ledger, mechanisms)
        cost = {currency: price[0]} if len(price) == 1 else {currency: price}
    except DPLedgerError:
        cost = {}
    try:
        ledger.check(mechanisms)
        fits = True
    except DPLedgerError:
        fits = False
    return tuple(releases), float(epsilon), delta, cost, fits


def schedule_preview(owner: str, reservation: Any, own: tuple[float, float]) -> Preview:
    """The :class:`Preview` of an estimator's fit from its (unopened) reservation.

    A fit on a shared ledger is priced in that ledger's currency and checked against it;
    a fit with its own (ε, δ) (``ledger=None``) plans its schedule exactly at that budget.
    """
    mechanisms = list(reservation.mechanisms)
    schedule = tuple(mechanisms)
    labels = [f"{owner}: release {i + 1}" for i in range(len(mechanisms))]
    sensitivities = [float(getattr(m, "sensitivity", math.nan)) for m in mechanisms]
    note = "the coefficients' error depends on the data: see each release's noise"
    if reservation.planned:
        releases, _, _, _, _ = describe(
            owner, labels, mechanisms, sensitivities, reservation.ledger, own
        )
        return Preview(
            f"{owner}.fit",
            releases,
            own[0],
            own[1],
            {},
            True,
            None,
            note + " (its own budget)",
            schedule=schedule,
        )
    releases, epsilon, delta, cost, fits = describe(
        owner, labels, mechanisms, sensitivities, reservation.ledger, None
    )
    return Preview(
        f"{owner}.fit", releases, epsilon, delta, cost, fits, None, note, schedule=schedule
    )
