"""The releases of one analyst query: sizes, sensitivities, noise, calibrated together.

:class:`_Plan` holds a query's releases before any data is read, calibrates them jointly
through the ledger's planning path (or previews them without spending), and releases
the reduced statistics (:func:`exact`, :func:`exact_counts`) in order.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._validation import check_choice, check_positive, check_probability
from dpledger.algorithms import _data, _preview
from dpledger.algorithms._preview import Preview
from dpledger.algorithms._query_sensitivity import Bounds, _count_sensitivity, _sum_sensitivity
from dpledger.algorithms._tables import Contribution, Request
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger.split import Part
from dpledger.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace
from dpledger.mechanisms.base import Mechanism

# -- releases ------------------------------------------------------------------------------


class _Plan:
    """The releases of one query: sizes, sensitivities and the noise family; values later."""

    def __init__(
        self,
        ledger: Any,
        noise: str | None,
        share: Any,
        epsilon: Any,
        delta: Any,
        label: Any = None,
    ):
        from dpledger.ledger import Ledger
        from dpledger.ledger.receipts import check_label

        if not isinstance(ledger, Ledger):
            raise InvalidArgumentTypeError(
                f"`ledger` must be a dpledger.Ledger (the budget this query is charged to). "
                f"Found {type(ledger).__name__}."
            )
        self.ledger = ledger
        self.label = check_label(label)
        if noise is None:
            noise = "gaussian" if ledger.delta > 0 else "laplace"
        self.noise = check_choice("noise", noise, ("gaussian", "laplace"))
        if epsilon is None and delta is not None:
            raise InvalidArgumentError("`delta` goes with `epsilon`.")
        if epsilon is not None and share is not None:
            raise InvalidArgumentError("pass `share` or `epsilon`/`delta`, not both.")
        self.delta = 0.0 if delta is None else check_probability("delta", delta)
        if share is None and epsilon is None:
            raise InvalidArgumentError(
                "pass `share=` (the fraction of the ledger's remaining budget this query may "
                "use, in (0, 1], or a part of `ledger.split(k)`) or `epsilon=` (and "
                "`delta=`) for the query's own guarantee."
            )
        self.part: Part | None = None
        if isinstance(share, Part):
            share.check(ledger)
            self.part = share
        elif share is not None:
            share = check_probability("share", share, low_open=True, high_open=False)
        if epsilon is not None:
            epsilon = check_positive("epsilon", epsilon)
        self.epsilon = epsilon
        self.share = share
        if epsilon is not None:
            if self.noise == "laplace" and self.delta > 0:
                raise InvalidArgumentError("Laplace noise is pure: pass `delta=0`.")
            if self.noise == "gaussian" and self.delta == 0:
                raise InvalidArgumentError("Gaussian noise needs `delta` > 0 (or noise='laplace').")
        self.items: list[tuple[str, bool, float, float, int]] = []

    def add(self, label: str, integer: bool, l1: float, l2: float, size: int) -> None:
        """One release: its label, whether integer-valued, its sensitivities, its size."""
        self.items.append((label, integer, l1, l2, size))

    def add_count(
        self,
        n_groups: int,
        grouped: bool,
        contribution: Contribution | None,
        integer: bool = True,
        droppable: bool = False,
    ) -> None:
        """The release of the number of records (per group).

        ``integer``: integer noise (discrete Gaussian or Laplace on the integers), for a
        count released as such; otherwise the noise of the sums (a safe Gaussian on a fine
        grid), for a count that is only a denominator — its σ of a few units would cost
        ~6 % more than the continuous price as a discrete Gaussian on the integers
        (:mod:`dpledger.accountant.discrete_gaussian`), and nothing on a fine grid.
        """
        l1, l2 = _count_sensitivity(
            self.ledger.adjacency, contribution, n_groups, grouped, droppable
        )
        self.add("count", integer, l1, l2, n_groups)

    def add_sums(
        self,
        label: str,
        bounds: list[Bounds],
        n_groups: int,
        grouped: bool,
        contribution: Contribution | None,
    ) -> None:
        """The release of the column sums (per group) of values within ``bounds``."""
        l1, l2 = _sum_sensitivity(bounds, self.ledger.adjacency, grouped, contribution, n_groups)
        self.add(label, False, l1, l2, n_groups * len(bounds))

    def _factory(self, integer: bool, l1: float, l2: float, d: int) -> Callable[[float], Any]:
        if self.noise == "gaussian":
            if integer:
                return lambda s: DiscreteGaussian(s, l2, dimension=d)
            return lambda s: Gaussian(s, l2, dimension=d)
        if integer:
            return lambda t: DiscreteLaplace(t, l1, dimension=d)
        return lambda b: Laplace(b, l1, dimension=d)

    def reserve(self, rng: Any) -> Any:
        """Calibrate the query's releases jointly (nothing checked or recorded yet).

        One schedule through the ledger's planning path (:meth:`Ledger.reserve
        <dpledger.Ledger.reserve>`): release i gets noise p·Δᵢ (its sensitivity in the
        noise's norm: every release at the same μ, or the same ε for Laplace noise), and p
        is the least that meets the query's own (ε, δ) with the tightest method — the
        releases composed together, not split by basic composition — or that fits its
        ``share`` of what remains, in the ledger's currency.
        """
        parts = []
        for _, integer, l1, l2, size in self.items:
            sensitivity = l2 if self.noise == "gaussian" else l1
            parts.append((self._factory(integer, l1, l2, size), sensitivity))

        def schedule(p: float) -> list[Mechanism]:
            return [factory(p * sensitivity) for factory, sensitivity in parts]

        if self.epsilon is not None:
            return self.ledger.reserve(schedule, epsilon=self.epsilon, delta=self.delta, rng=rng)
        share = self.part.share() if self.part is not None else self.share
        return self.ledger.reserve(schedule, share=share, rng=rng)

    def labels(self) -> list[str]:
        prefix = f"{self.label}: " if self.label else ""
        return [f"{prefix}{label}" for label, *_ in self.items]

    def run(self, values: list[Any], rng: Any) -> list[np.ndarray]:
        """Check all of the query's releases fit, then charge and release them in order.

        Every value is validated and all of the releases are checked, in order, before the
        first (nothing half-done); a seeded rng is combined with the ledger's position, so
        no two queries repeat noise.
        """
        reservation = self.reserve(rng)
        named = [
            (label, np.asarray(value).astype(np.int64) if item[1] else value)
            for label, item, value in zip(self.labels(), self.items, values, strict=True)
        ]
        released = reservation.release_all(named)
        if self.part is not None:
            self.part.spent()
        return [np.asarray(noisy, dtype=float).reshape(-1) for noisy in released]

    def preview(
        self, query: str, answer: Callable[[list[Any]], tuple[float | None, str]]
    ) -> Preview:
        """What the query would release and spend, computed without spending."""
        reservation = self.reserve(None)
        mechanisms = list(reservation.mechanisms)
        sensitivities = [(l2 if self.noise == "gaussian" else l1) for _, _, l1, l2, _ in self.items]
        own = None if self.epsilon is None else (float(self.epsilon), float(self.delta))
        releases, epsilon, delta, cost, fits = _preview.describe(
            query, self.labels(), mechanisms, sensitivities, self.ledger, own
        )
        interval, note = answer(mechanisms)
        name = f"{query} ({self.label})" if self.label else query
        return Preview(name, releases, epsilon, delta, cost, fits, interval, note)


def _exact(integers: np.ndarray, request: Request, kind: str) -> Any:
    from dpledger.mechanisms import ExactValue

    units = _data.column_sum_units(request.sum_bounds(kind))
    return ExactValue.from_integers(integers, units).reshape(-1)


def _exact_counts(counts: np.ndarray) -> Any:
    """Counts as an exact value (for the fine-grid noise of a denominator)."""
    from dpledger.mechanisms import ExactValue

    integers = np.array([int(c) for c in counts], dtype=object)[:, None]
    return ExactValue.from_integers(integers, np.array([[Fraction(1)]], dtype=object)).reshape(-1)
