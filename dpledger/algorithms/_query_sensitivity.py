"""Sensitivities of the analyst's queries: one record's, or one person's (privacy units).

See :mod:`dpledger.algorithms.descriptive` for the statement; each bound is proved in its
function's docstring and checked against every neighbouring pair of small contributions
in ``tests/algorithms/test_privacy_units.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from dpledger._numerics import float_up, sqrt_up
from dpledger.accountant import events as ev
from dpledger.algorithms._tables import Contribution

Bounds = tuple[float, float]


def _row_sum_sensitivity(
    bounds: list[Bounds], adjacency: str, grouped: bool
) -> tuple[float, float]:
    """(L1, L2) sensitivity of a vector of clipped column sums (per group if ``grouped``).

    Add/remove: one record adds or removes its values, |v| ≤ m = max(|lo|, |hi|) per
    column, in one group. Replace-one: within one group the sums move by v′ − v, at most
    hi − lo per column; but with groups the record can also move to another group, which
    changes *two* cells by −v and +v′: L1 Σ 2m, L2 √2·‖m‖ (as a group count moves by 2
    in L1, √2 in L2). The sensitivity is the larger of the two cases.
    """
    # exact rationals, rounded up once: hi − lo and the sums never fall an ulp short
    top = [max(abs(Fraction(lo)), abs(Fraction(hi))) for lo, hi in bounds]
    within = [Fraction(hi) - Fraction(lo) for lo, hi in bounds]

    def total(terms: Iterable[Fraction]) -> Fraction:
        out = Fraction(0)  # (this module's `sum` is the private sum query)
        for term in terms:
            out += term
        return out

    def l1_of(per: list[Fraction], times: int = 1) -> float:
        return float_up(times * total(per))

    def l2_of(per: list[Fraction], times: int = 1) -> float:
        return sqrt_up(float_up(times * total(p * p for p in per)))

    if adjacency == ev.ADD_REMOVE:
        return l1_of(top), l2_of(top)
    if not grouped:
        return l1_of(within), l2_of(within)
    # grouped: also −v in one group and +v′ in another (L1 Σ2m, L2 √2·‖m‖)
    return max(l1_of(within), l1_of(top, 2)), max(l2_of(within), l2_of(top, 2))


def _row_count_sensitivity(adjacency: str) -> tuple[float, float]:
    """(L1, L2) of a (group) count vector."""
    if adjacency == ev.ADD_REMOVE:
        return 1.0, 1.0
    return 2.0, math.sqrt(2.0)  # replace-one: one group loses a record, another gains it


def _count_sensitivity(
    adjacency: str,
    unit: Contribution | None,
    n_groups: int,
    grouped: bool,
    droppable: bool = False,
) -> tuple[float, float]:
    """(L1, L2) of a (group) count vector: one record's, or one person's (module doc).

    ``droppable``: the count is of the rows a query keeps, and a row can be dropped for a
    missing value. Under replace-one without groups a person then keeps 0..k′ rows (one
    record: 0 or 1), so the count moves by k′ (1), not k′ − 1 (0: public).
    """
    if unit is None and not (droppable and adjacency == ev.REPLACE_ONE and not grouped):
        return _row_count_sensitivity(adjacency)
    rows, squares = (1, 1) if unit is None else unit.effective(n_groups if grouped else None)
    if adjacency == ev.ADD_REMOVE:
        return float(rows), sqrt_up(float(squares))
    if not grouped:  # 1..k′ rows each (0..k′ when rows can be dropped)
        moved = rows if droppable else rows - 1
        return float(moved), float(moved)
    return float(2 * rows), sqrt_up(float(2 * squares))


def _sum_sensitivity(
    bounds: list[Bounds],
    adjacency: str,
    grouped: bool,
    unit: Contribution | None = None,
    n_groups: int = 1,
) -> tuple[float, float]:
    """(L1, L2) of a vector of clipped column sums: one record's, or one person's.

    One person (module doc): u ∈ ℝ^{groups × columns} with |u_gj| ≤ n_g·m_j, Σ n_g ≤ k′,
    Σ n_g² ≤ F. Add/remove: ‖u‖₁ ≤ k′·Σm, ‖u‖₂² ≤ F·‖m‖². Replace-one without groups:
    each column's sum ranges over [min(lo, k′lo), max(hi, k′hi)] for both people, so it
    moves by at most that width. Replace-one with groups: ‖u′ − u‖₁ ≤ 2k′Σm, and
    ‖u′ − u‖₂² = ‖u′‖² + ‖u‖² − 2⟨u′, u⟩ with u′_gj·u_gj ≥ n′_g·n_g·min(0, lo_j·hi_j), so
    −2⟨u′, u⟩ ≤ 2F·Σ max(0, −lo·hi) (Cauchy–Schwarz on Σ n′_g n_g) — and ≤ 4F‖m‖² by the
    triangle inequality; the smaller holds. Exact rationals, rounded up once.
    """
    if unit is None:
        return _row_sum_sensitivity(bounds, adjacency, grouped)
    rows, squares = unit.effective(n_groups if grouped else None)
    top = [max(abs(Fraction(lo)), abs(Fraction(hi))) for lo, hi in bounds]
    l1_top = Fraction(0)
    l2_top = Fraction(0)
    for m in top:
        l1_top += m
        l2_top += m * m
    if adjacency == ev.ADD_REMOVE:
        return float_up(rows * l1_top), sqrt_up(float_up(squares * l2_top))
    if not grouped:
        widths = [
            max(Fraction(hi), rows * Fraction(hi)) - min(Fraction(lo), rows * Fraction(lo))
            for lo, hi in bounds
        ]
        l1 = Fraction(0)
        l2 = Fraction(0)
        for w in widths:
            l1 += w
            l2 += w * w
        return float_up(l1), sqrt_up(float_up(l2))
    cross = Fraction(0)
    for lo, hi in bounds:
        cross += max(Fraction(0), -Fraction(lo) * Fraction(hi))
    l2_sq = min(4 * squares * l2_top, 2 * squares * (l2_top + cross))
    return float_up(2 * rows * l1_top), sqrt_up(float_up(l2_sq))
