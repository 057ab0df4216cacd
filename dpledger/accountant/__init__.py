"""Privacy events and the mathematics of composing and converting them.

One module per notion of privacy, each with an accountant that consumes events and
answers ``epsilon(delta)`` and ``delta(epsilon)``:

============  ===========================================================  ==============
method        notion                                                       module
============  ===========================================================  ==============
``basic``     basic composition of (ε, δ)-DP                               :mod:`.basic`
``advanced``  advanced composition (Dwork–Rothblum–Vadhan 2010)            :mod:`.advanced`
``optimal``   exact optimal composition (Kairouz–Oh–Viswanath 2015)        :mod:`.optimal`
``mcdp``      mean-concentrated DP (Dwork–Rothblum 2016)                   :mod:`.mcdp`
``zcdp``      zero-concentrated DP (Bun–Steinke 2016), CKS 2020 conversion :mod:`.zcdp`
``rdp``       Rényi DP, continuous optimal order (Mironov 2017 and later)  :mod:`.rdp`
``gdp``       Gaussian DP / analytic Gaussian (Dong–Roth–Su 2019)          :mod:`.gdp`
``pld``       numerical privacy loss distributions (connect-the-dots)     :mod:`.pld`
============  ===========================================================  ==============

``method="auto"`` evaluates every method that applies to the event and returns the
smallest answer. Each method returns an upper bound on the true privacy loss, so the
smallest of them is a valid upper bound too — the tightest the toolkit can certify.
Where a closed form is exact and applies (compositions of non-subsampled Gaussians: GDP;
of pure or approximate DP releases within optimal composition's support limit: optimal
composition) the numerical PLD method is skipped (:func:`exact_value` decides) — unless
it is exact there itself (Laplace and randomized-response releases on one lattice).
``auto`` also splits a composition of releases accounted by curves (Gaussian, zCDP, ...)
and (ε, δ) releases with δ > 0, which no single method holds (:mod:`.hybrid`). A method
that fails numerically on an event is isolated: it gives no answer, the others stand.

The accountant depends on nothing else in dpledger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpledger._public import namespace
from dpledger._validation import check_choice, check_nonnegative, check_probability
from dpledger.accountant import events
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.advanced import AdvancedAccountant, advanced_composition
from dpledger.accountant.basic import BasicAccountant, amplify_by_subsampling, dp_guarantee
from dpledger.accountant.discrete_gaussian import continuous_price
from dpledger.accountant.events import Event, _check_event
from dpledger.accountant.gdp import (
    GDPAccountant,
    gaussian_delta,
    gaussian_epsilon,
    gdp_delta,
    gdp_epsilon,
    pure_dp_to_gdp,
)
from dpledger.accountant.hybrid import HybridAccountant
from dpledger.accountant.mcdp import (
    MCDPAccountant,
    mcdp_to_approx_dp,
    mcdp_to_epsilon,
    pure_dp_to_mcdp,
)
from dpledger.accountant.optimal import OptimalAccountant
from dpledger.accountant.pld import PLDAccountant, epsilon_bounds
from dpledger.accountant.pld._accountant import EXACT_DISCRETE_SIGMA
from dpledger.accountant.rdp import RDPAccountant, rdp_curve, rdp_to_delta, rdp_to_epsilon
from dpledger.accountant.zcdp import (
    ZCDPAccountant,
    zcdp_to_approx_dp,
    zcdp_to_delta,
    zcdp_to_epsilon,
)
from dpledger.errors import DPLedgerError, NotApplicableError

__all__ = [
    "ACCOUNTANTS",
    "METHODS",
    "Accountant",
    "AdvancedAccountant",
    "BasicAccountant",
    "GDPAccountant",
    "HybridAccountant",
    "MCDPAccountant",
    "OptimalAccountant",
    "PLDAccountant",
    "RDPAccountant",
    "Summary",
    "ZCDPAccountant",
    "advanced_composition",
    "amplify_by_subsampling",
    "delta",
    "dp_guarantee",
    "epsilon",
    "epsilon_bounds",
    "epsilon_by_method",
    "events",
    "exact_value",
    "gaussian_delta",
    "gaussian_epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "mcdp_to_approx_dp",
    "mcdp_to_epsilon",
    "pure_dp_to_gdp",
    "pure_dp_to_mcdp",
    "rdp_curve",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "zcdp_to_approx_dp",
    "zcdp_to_delta",
    "zcdp_to_epsilon",
]

ACCOUNTANTS: dict[str, type[Accountant[Any]]] = {
    "basic": BasicAccountant,
    "advanced": AdvancedAccountant,
    "optimal": OptimalAccountant,
    "mcdp": MCDPAccountant,
    "zcdp": ZCDPAccountant,
    "rdp": RDPAccountant,
    "gdp": GDPAccountant,
    "pld": PLDAccountant,
}
"""The accountant class behind each ``method`` name."""

_AUTO_ONLY: dict[str, type[Accountant[Any]]] = {"hybrid": HybridAccountant}
"""Evaluated by ``auto`` besides :data:`ACCOUNTANTS`: the split of a composition of curve
releases and (ε, δ) releases that no single method holds (:mod:`.hybrid`)."""

METHODS: tuple[str, ...] = ("auto", *ACCOUNTANTS)
"""The values ``method`` accepts."""


def _priced_discrete(atom: Event) -> bool:
    """A discrete Gaussian that GDP accounts at the continuous price, nearly exactly.

    Its σ above :data:`EXACT_DISCRETE_SIGMA` grid units: the price is the continuous
    curve at σ₀ = σ√(1 − τ²/σ²) (τ ≈ 2, so σ₀/σ > 1 − 3·10⁻⁶) plus a slack ≤ 2⁻¹⁰⁰ — an
    upper bound PLD cannot meaningfully improve on (PLD applies the same price there).
    """
    return (
        type(atom) is events.DiscreteGaussian
        and atom.sigma > EXACT_DISCRETE_SIGMA
        and continuous_price(atom) is not None
    )


def _binary_rr(atom: Event) -> bool:
    return type(atom) is events.RandomizedResponse and atom.categories == 2


_EXACT_WHEN: dict[str, Callable[[Event], bool]] = {
    # all releases of these kinds → this method is exact, so PLD cannot improve on it
    "gdp": lambda atom: type(atom) is events.Gaussian or _priced_discrete(atom),
    "optimal": lambda atom: type(atom) in (events.PureDP, events.ApproxDP) or _binary_rr(atom),
}


def _exact_method(event: Event) -> str | None:
    atoms = events.flatten(event)
    for method, exact in _EXACT_WHEN.items():
        if all(exact(atom) for atom in atoms):
            return method
    return None


_NUMERICAL_FAILURES = (ArithmeticError, ValueError, MemoryError, RecursionError)
"""What a method may fail with on an event outside its numerical range (isolated)."""


def _evaluate(name: str, event: Event, query: str, value: float) -> float | NotApplicableError:
    """One method's answer, or the reason it has none.

    The one place where a method is run. A method that cannot account for the event
    says so (NotApplicableError); one that fails numerically (overflow, a domain error,
    a memory cap) is isolated the same way — its failure is reported as its reason, and
    "auto" answers with the others, each of which is a valid upper bound on its own.
    Programming errors (TypeError, AttributeError, ...) are not caught.
    """
    try:
        summary = {**ACCOUNTANTS, **_AUTO_ONLY}[name].summarize(event)
        result = summary.epsilon(value) if query == "epsilon" else summary.delta(value)
        return float(result)
    except NotApplicableError as error:
        return error
    except DPLedgerError:
        raise
    except _NUMERICAL_FAILURES as error:
        return NotApplicableError(
            f"method {name!r} failed numerically on this event ({type(error).__name__}: "
            f"{error}); it gives no bound here."
        )


def exact_value(event: Event, query: str, value: float) -> tuple[str, float] | None:
    """(method, value) when a closed form is exact for ``event`` *and* applies to it.

    The one place that decides exactness, per event and per size: GDP for compositions
    of Gaussians, optimal composition for pure/approximate DP releases — but only if that
    method actually answers (optimal composition enumerates at most its support limit; a
    larger composition is not exact by it, and then no value is called exact).
    """
    method = _exact_method(event)
    if method is None:
        return None
    result = _evaluate(method, event, query, value)
    if isinstance(result, NotApplicableError):
        return None
    return method, result


def _pld_is_exact(event: Event) -> bool:
    """Whether the PLD method composes ``event`` exactly too (no grid: :mod:`.pld._lattice`).

    Then it is not skipped beside another exact method: both are exact up to their own
    float margins, and the smaller stands (PLD's is ~1e-13 relative; optimal
    composition's, 16 ulps of its log δ, can be larger).
    """
    try:
        return PLDAccountant.summarize(event).is_exact
    except NotApplicableError:
        return False


def _results(
    event: Event, query: str, value: float, *, auto: bool = False
) -> dict[str, float | NotApplicableError]:
    """Every method's answer; with ``auto``, PLD is skipped where an exact method answered."""
    out: dict[str, float | NotApplicableError] = {}
    exact = exact_value(event, query, value) if auto else None
    for name in ACCOUNTANTS:
        if name == "pld" and exact is not None and not _pld_is_exact(event):
            out[name] = NotApplicableError(f"skipped: {exact[0]!r} is exact here")
            continue
        if exact is not None and name == exact[0]:
            out[name] = exact[1]
            continue
        out[name] = _evaluate(name, event, query, value)
    if auto:
        for name in _AUTO_ONLY:
            out[name] = _evaluate(name, event, query, value)
    return out


def _pick(
    event: Event, results: dict[str, float | NotApplicableError], method: str, query: str
) -> float:
    if method != "auto":
        result = results[method]
        if isinstance(result, NotApplicableError):
            raise result
        return result
    values = [r for r in results.values() if not isinstance(r, NotApplicableError)]
    if not values:
        reasons = "; ".join(f"{m}: {r}" for m, r in results.items())
        raise NotApplicableError(f"no accounting method applies to {event!r}. {reasons}")
    return min(values)


def epsilon_by_method(event: Event, delta: float) -> dict[str, float | NotApplicableError]:
    """ε at ``delta`` by every method: a float, or the reason it does not apply.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant import epsilon_by_method
        >>> table = epsilon_by_method(ev.Gaussian(sigma=5.0) * 100, delta=1e-5)
        >>> round(table["gdp"], 6), round(table["rdp"], 6)
        (9.997256, 10.724824)
    """
    _check_event("event", event)
    delta = check_probability("delta", delta)
    return _results(event, "epsilon", delta)


def epsilon(event: Event, delta: float, method: str = "auto") -> float:
    """Smallest ε such that ``event`` is (ε, δ)-DP, by ``method``.

    Args:
        event: What was released (see :mod:`dpledger.events`).
        delta: Target δ in [0, 1).
        method: One of :data:`METHODS`. ``"auto"`` returns the tightest bound among the
            methods that apply.

    Returns:
        An upper bound on the true ε, rounded up; ``inf`` if the method certifies no
        finite ε at this δ.

    Raises:
        NotApplicableError: ``method`` cannot account for some release in ``event``.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant import epsilon
        >>> round(epsilon(ev.PureDP(1.0) * 100, delta=1e-6, method="optimal"), 7)
        83.5307017
    """
    _check_event("event", event)
    delta = check_probability("delta", delta)
    method = check_choice("method", method, METHODS)
    if method != "auto":
        return _pick(event, _results_one(event, method, "epsilon", delta), method, "epsilon")
    return _pick(event, _results(event, "epsilon", delta, auto=True), method, "epsilon")


def delta(event: Event, epsilon: float, method: str = "auto") -> float:
    """Smallest δ such that ``event`` is (ε, δ)-DP, by ``method`` (at most 1).

    Args:
        event: What was released.
        epsilon: ε ≥ 0.
        method: One of :data:`METHODS`; ``"auto"`` returns the tightest valid bound.

    Raises:
        NotApplicableError: ``method`` cannot account for some release in ``event``.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant import delta
        >>> delta(ev.Gaussian(sigma=3.730631635), epsilon=1.0) <= 1e-5
        True
    """
    _check_event("event", event)
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    method = check_choice("method", method, METHODS)
    if method != "auto":
        return _pick(event, _results_one(event, method, "delta", epsilon), method, "delta")
    return _pick(event, _results(event, "delta", epsilon, auto=True), method, "delta")


def _results_one(
    event: Event, method: str, query: str, value: float
) -> dict[str, float | NotApplicableError]:
    return {method: _evaluate(method, event, query, value)}


__dir__ = namespace(
    __all__,
    "advanced",
    "basic",
    "costs",
    "events",
    "gdp",
    "hybrid",
    "lower_bounds",
    "mcdp",
    "optimal",
    "pld",
    "rdp",
    "zcdp",
)
