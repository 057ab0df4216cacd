"""Rényi differential privacy with the optimal order found by continuous optimisation.

A mechanism is (α, R(α))-RDP if D_α(M(D) ‖ M(D′)) ≤ R(α) for all neighbours (Mironov
2017, Def. 4). RDP curves add under adaptive composition (Mironov 2017, Prop. 1).

Curves of Gaussian, Laplace, pure-DP, randomized-response, bounded-range, zCDP and mCDP
releases (:mod:`._curves`); of Poisson-subsampled Gaussians at real orders (Mironov,
Talwar & Zhang 2019: :mod:`._poisson`); of sampling without replacement of any release
with a curve (Wang, Balle & Kasiviswanathan 2019: :mod:`._without_replacement`).
Conversion to (ε, δ): for any α > 1, (α, R)-RDP implies (ε, δ)-DP with
ε = R + log(1 − 1/α) − (log δ + log α)/(α − 1) (Balle et al. 2020, Thm 21; Canonne,
Kamath & Steinke 2020, Prop. 12), at the α found by a search over the continuous order
(:mod:`._conversion`, :mod:`._order`) — no fixed grid limits the answer.

The package is laid out one idea per module: :mod:`._curves`, :mod:`._poisson` and
:mod:`._without_replacement` (the curves of each release type), :mod:`._order` (the
order search, also used by the ledger's Rényi and zCDP filters), :mod:`._conversion`
(Rényi → (ε, δ)) and :mod:`._accountant` (the handler table, summary and accountant).
Everything is importable from here.
"""

# ruff: noqa: F401  (a package of re-exports: every name the module rdp.py had)
from __future__ import annotations

from dpledger._public import namespace
from dpledger.accountant.rdp._accountant import (
    _CURVES,
    RDPAccountant,
    RDPSummary,
    _without_replacement_curve,
    rdp_curve,
)
from dpledger.accountant.rdp._conversion import (
    _safe_eval,
    _stays_below,
    budget_at_order,
    conversion_offset,
    epsilon_at_order,
    rdp_to_delta,
    rdp_to_epsilon,
)
from dpledger.accountant.rdp._curves import (
    Curve,
    _bounded_range_curve,
    _check_order,
    _gaussian_curve,
    _laplace_curve,
    _log_expm1,
    _log_sum_exp,
    _mcdp_curve,
    _no_curve,
    _pure_curve,
    _pure_epsilon,
    _randomized_response_curve,
    _single_gaussian_multiplier,
    _zcdp_curve,
    rdp_gaussian,
    rdp_laplace,
    rdp_pure_dp,
    rdp_randomized_response,
)
from dpledger.accountant.rdp._order import (
    _MAX_ORDER,
    _MIN_ORDER_GAP,
    _SCAN,
    _walk,
    minimise_over_order,
)
from dpledger.accountant.rdp._poisson import (
    _EXACT_BLOCKS,
    _MAX_SERIES_TERMS,
    _SERIES_START_LIMIT,
    MAX_INTEGER_ORDER,
    _exponents,
    _log_a_fractional,
    _log_a_integer,
    _log_pmf_terms,
    _log_weights,
    _poisson_curve,
    _rdp_poisson_gaussian_cached,
    _series_terms,
    rdp_poisson_gaussian,
)
from dpledger.accountant.rdp._without_replacement import (
    _PV_MAX_BITS,
    _PV_MAX_ORDER,
    _WBK_GAUSSIAN_MAX_ORDER,
    _WBK_MAX_ORDER,
    _chord,
    _gaussian_pearson_vajda,
    _log1p_sum_up,
    _wbk_gaussian_integer,
    _wbk_integer,
)

__all__ = [
    "RDPAccountant",
    "RDPSummary",
    "budget_at_order",
    "conversion_offset",
    "epsilon_at_order",
    "minimise_over_order",
    "rdp_curve",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_poisson_gaussian",
    "rdp_pure_dp",
    "rdp_randomized_response",
    "rdp_to_delta",
    "rdp_to_epsilon",
]

__dir__ = namespace(__all__)
