"""Google dp_accounting's ``DpEvent`` trees to dpledger events and back.

:func:`from_dp_accounting` turns a dp_accounting event — the object itself, the text
``print(event)`` shows, or its named-tuple/dict form — into the dpledger event that
describes the same release, or refuses with an error naming the type that has no
counterpart. :func:`to_dp_accounting` is its inverse. Both convert **exactly**: an event
is mapped only where both libraries describe the same mechanism, never to a bound of it;
a float that has to be recomputed is rounded to the privacy-safe side (less noise, a
larger ε), so a converted event never promises more privacy than the original.

Parsing the text and dict forms needs no dp_accounting (an auditor can check a
dp_accounting pipeline without installing it); ``to_dp_accounting`` builds
dp_accounting's objects and imports it (``pip install "dpledger[compare]"``).

**Adjacency.** dp_accounting's events carry no neighbouring relation; its accountants
do (``NeighboringRelation``). Both functions take it as ``adjacency``: ``"add_remove"``
(dp_accounting's ``ADD_OR_REMOVE_ONE``, its accountants' default) or ``"replace_one"``
(``REPLACE_ONE``); ``REPLACE_SPECIAL`` has no dpledger counterpart. A dpledger
sensitivity is the release's sensitivity under that relation; a dp_accounting
``noise_multiplier`` is the noise over the bound C on one record's contribution (its
docstrings: "if ‖v_i‖ ≤ C, the noise_multiplier is s / C"). Under add/remove the
sensitivity of the sum is C; under replace-one it is 2C — which is how dp_accounting's
PLD accountant reads a Gaussian under ``REPLACE_ONE`` ("twice the sensitivity"). So
``GaussianDpEvent(m)`` is ``Gaussian(sigma=m, sensitivity=1)`` under add/remove and
``Gaussian(sigma=m, sensitivity=2)`` under replace-one. (dp_accounting's *RDP*
accountant reads the same event under ``REPLACE_ONE`` with sensitivity C, i.e. half of
its own definition: for a sum of records bounded by C it reports a smaller ε than the
event's definition gives. dpledger follows the definition.)

Poisson subsampling is analysed under add/remove only and sampling without replacement
under replace-one only (as in dp_accounting: its accountants refuse the other pairing),
and randomized response — which dp_accounting accounts under ``REPLACE_ONE`` only — is
converted under replace-one only.

The mapping (dp_accounting → dpledger; :func:`to_dp_accounting` is the reverse):

* ``NoOpDpEvent()`` → ``PureDP(0)``;
* ``GaussianDpEvent(m)`` → ``Gaussian(m, 1)`` (replace-one: ``Gaussian(m, 2)``);
* ``LaplaceDpEvent(m)`` → ``Laplace(m, 1)`` (replace-one: ``Laplace(m, 2)``);
* ``DiscreteLaplaceDpEvent(a, C)`` → ``DiscreteLaplace(1/a, C)`` (replace-one: 2C; the
  dimension is unknown, so dpledger prices it as an ε-DP release of ε = aC);
* ``RandomizedResponseDpEvent(p, k)`` → ``RandomizedResponse(log(1 + k(1 − p)/p), k)``
  (replace-one only);
* ``ZCDpEvent(rho, xi)`` → ``ZCDP(rho, xi)``;
* ``SelfComposedDpEvent(e, n)`` → ``Repeated(e, n)``;
* ``ComposedDpEvent([e, ...])`` → ``Composed((e, ...))``;
* ``PoissonSampledDpEvent(q, e)`` → ``PoissonSampled(e, q)`` (add/remove only);
* ``SampledWithoutReplacementDpEvent(n, m, e)`` → ``SampledWithoutReplacement(e, m, n)``
  (replace-one only);
* ``MixtureOfGaussiansDpEvent(s, [0, c], [1 − q, q])`` → ``PoissonSampled(Gaussian(s,
  |c|), q)`` (one distinct non-zero sensitivity; add/remove only; converts back as a
  ``PoissonSampledDpEvent``).

Refused, each with its reason (:data:`NOT_CONVERTED`): ``NonPrivateDpEvent``,
``UnsupportedDpEvent``, ``SampledWithReplacementDpEvent``,
``SingleEpochTreeAggregationDpEvent``, ``RepeatAndSelectDpEvent``,
``TruncatedSubsampledGaussianDpEvent``, a mixture of Gaussians with several distinct
non-zero sensitivities, and from dpledger ``PureDP`` (ε > 0), ``ApproxDP``,
``BoundedRange``, ``MCDP`` and ``DiscreteGaussian``. Degenerate events that release
nothing (a zero sampling probability, a count of 0, one bucket, an empty composition)
become ``PureDP(0)``.

Example:
    >>> from dpledger.interop import from_dp_accounting
    >>> text = ("SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.01, "
    ...         "event=GaussianDpEvent(noise_multiplier=1.1)), count=10000)")
    >>> from_dp_accounting(text)
    Repeated(event=PoissonSampled(event=Gaussian(sigma=1.1, sensitivity=1.0), rate=0.01, \
adjacency='add_remove'), count=10000)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from dpledger._numerics import SAFETY_ULPS, div_down, div_up, float_up, round_up
from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_nonnegative,
    check_real,
    shown,
)
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError, NotApplicableError
from dpledger.interop._forms import DP_ACCOUNTING_FIELDS, children, describe, fold

__all__ = [
    "DP_ACCOUNTING_FIELDS",
    "NOT_CONVERTED",
    "from_dp_accounting",
    "to_dp_accounting",
]


#: Why each event type that is not converted has no counterpart (dp_accounting's and
#: dpledger's class names).
NOT_CONVERTED: dict[str, str] = {
    "NonPrivateDpEvent": (
        "a non-private release has no finite ε (dp_accounting accounts it as ε = ∞); "
        "dpledger's events hold finite guarantees only, and no budget can pay for it"
    ),
    "UnsupportedDpEvent": "it is dp_accounting's placeholder for a release with no description",
    "SampledWithReplacementDpEvent": (
        "dpledger has no sampling-with-replacement event (and neither of dp_accounting's "
        "accountants supports it)"
    ),
    "SingleEpochTreeAggregationDpEvent": (
        "tree aggregation is analysed under REPLACE_SPECIAL adjacency (a record replaced by a "
        "zero record), for which dpledger has no adjacency or event"
    ),
    "RepeatAndSelectDpEvent": (
        "dpledger has no event for private selection among a random number of runs "
        "(Papernot & Steinke 2022)"
    ),
    "TruncatedSubsampledGaussianDpEvent": (
        "dpledger has no analysis of truncated Poisson sampling (a Poisson-sampled Gaussian "
        "at the same rate is not proved to dominate it: the truncation couples the records)"
    ),
    "PureDP": (
        "dp_accounting has no event for a release known only by an ε-DP guarantee (its "
        "RandomizedResponseDpEvent has the same worst case only under REPLACE_ONE, and is a "
        "different mechanism); PureDP(0) becomes NoOpDpEvent"
    ),
    "ApproxDP": "dp_accounting has no event for a release known only by an (ε, δ) guarantee",
    "BoundedRange": (
        "dp_accounting has no bounded-range (exponential mechanism) event; ZCDpEvent(rho=ε²/8) "
        "is an upper bound, not the same release"
    ),
    "MCDP": "dp_accounting has no mean-concentrated DP event",
    "DiscreteGaussian": (
        "dp_accounting has no discrete Gaussian event, and GaussianDpEvent(σ) would under-state "
        "it (dpledger prices N_Z(0, σ²) as the continuous Gaussian at σ₀ < σ, plus a slack)"
    ),
}

_ADJACENCY_NAMES = {
    ev.ADD_REMOVE: ev.ADD_REMOVE,
    ev.REPLACE_ONE: ev.REPLACE_ONE,
    "ADD_OR_REMOVE_ONE": ev.ADD_REMOVE,
    "REPLACE_ONE": ev.REPLACE_ONE,
}


# -- the neighbouring relation ---------------------------------------------------------


def _adjacency(value: Any) -> str:
    """``"add_remove"``/``"replace_one"`` from ours or dp_accounting's NeighboringRelation."""
    name = getattr(value, "name", value)  # an enum member: its name
    if isinstance(name, str) and name in _ADJACENCY_NAMES:
        return _ADJACENCY_NAMES[name]
    if name == "REPLACE_SPECIAL":
        raise NotApplicableError(
            "dp_accounting's REPLACE_SPECIAL relation (a record replaced by a special, e.g. "
            "zero, record) has no dpledger adjacency; use 'add_remove' or 'replace_one'."
        )
    return check_choice("adjacency", value, ev.ADJACENCIES)


def _scale(adjacency: str) -> float:
    """The sensitivity of a sum of records bounded by 1 under ``adjacency`` (1 or 2)."""
    return 1.0 if adjacency == ev.ADD_REMOVE else 2.0


# -- dp_accounting -> dpledger ---------------------------------------------------------

_Fields = dict[str, Any]
_Kids = list[ev.Event]
_FromHandler = Callable[[str, _Fields, _Kids, str], ev.Event]


def _nothing() -> ev.Event:
    """What a degenerate event (it releases nothing) becomes: PureDP(0)."""
    return ev.PureDP(0.0)


def _refuse(name: str, why: str) -> NotApplicableError:
    return NotApplicableError(f"dp_accounting's {name} cannot be converted: {why}.")


def _non_private(name: str, field: str) -> NotApplicableError:
    return _refuse(name, f"{field} = 0 adds no noise: the release is not private (ε = ∞)")


def _number(name: str, fields: Mapping[str, Any], field: str) -> float:
    return check_nonnegative(f"{name}.{field}", fields[field])


def _count(name: str, fields: Mapping[str, Any], field: str) -> int:
    return check_int_at_least(f"{name}.{field}", fields[field], 0)


def _from_noop(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    return ev.PureDP(0.0)


def _from_gaussian(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    m = _number(name, fields, "noise_multiplier")
    if m == 0:
        raise _non_private(name, "noise_multiplier")
    return ev.Gaussian(sigma=m, sensitivity=_scale(adj))


def _from_laplace(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    m = _number(name, fields, "noise_multiplier")
    if m == 0:
        raise _non_private(name, "noise_multiplier")
    return ev.Laplace(scale=m, sensitivity=_scale(adj))


def _from_discrete_laplace(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    # P[z] ∝ exp(−a|z|): dpledger's scale t = 1/a, rounded down (less noise: the safe side)
    a = _number(name, fields, "noise_parameter")
    c = _count(name, fields, "sensitivity")
    if c == 0:
        return _nothing()
    if a == 0:
        raise _non_private(name, "noise_parameter")
    return ev.DiscreteLaplace(scale=div_down(1.0, a), sensitivity=c * _scale(adj))


def _from_randomized_response(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    p = check_nonnegative(f"{name}.noise_parameter", fields["noise_parameter"])
    k = check_int_at_least(f"{name}.num_buckets", fields["num_buckets"], 1)
    if p > 1:
        raise InvalidArgumentError(f"`{name}.noise_parameter` must lie in [0, 1]. Found {p!r}.")
    if adj != ev.REPLACE_ONE:
        raise _refuse(
            name,
            "dp_accounting defines randomized response under REPLACE_ONE only (its accountants "
            "refuse it under ADD_OR_REMOVE_ONE); convert with adjacency='replace_one'",
        )
    if k == 1:
        return _nothing()
    if p == 0:
        raise _non_private(name, "noise_parameter")
    # true bucket w.p. 1 − p + p/k, each other w.p. p/k: ε = log(1 + k(1 − p)/p), rounded up
    ratio = Fraction(k) * (1 - Fraction(p)) / Fraction(p)
    return ev.RandomizedResponse(epsilon=round_up(math.log1p(float_up(ratio))), categories=k)


def _from_self_composed(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    count = _count(name, fields, "count")
    return _nothing() if count == 0 else ev.Repeated(kids[0], count)


def _from_composed(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    return ev.Composed(tuple(kids)) if kids else _nothing()


def _from_poisson(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    q = check_nonnegative(f"{name}.sampling_probability", fields["sampling_probability"])
    if q == 0:
        return _nothing()
    if adj != ev.ADD_REMOVE:
        raise _refuse(
            name,
            "Poisson subsampling is analysed under add/remove adjacency only (dpledger has no "
            "replace-one amplification for it; a replace-one neighbour is two add/remove "
            "changes); convert with adjacency='add_remove'",
        )
    return ev.PoissonSampled(kids[0], rate=q)


def _from_without_replacement(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    n = check_int_at_least(f"{name}.source_dataset_size", fields["source_dataset_size"], 1)
    m = _count(name, fields, "sample_size")
    if m == 0:
        return _nothing()
    if adj != ev.REPLACE_ONE:
        raise _refuse(
            name,
            "sampling a fixed-size batch without replacement is analysed under replace-one "
            "adjacency only (as dp_accounting's accountants do); convert with "
            "adjacency='replace_one'",
        )
    return ev.SampledWithoutReplacement(kids[0], sample_size=m, population=n)


def _from_zcdp(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    return ev.ZCDP(rho=_number(name, fields, "rho"), xi=_number(name, fields, "xi"))


def _from_mixture(name: str, fields: _Fields, kids: _Kids, adj: str) -> ev.Event:
    """N(0, s²) against Σ pᵢ N(cᵢ, s²): exactly a Poisson-sampled Gaussian when one |c| ≠ 0.

    With zero sensitivities of total probability 1 − q and every other one equal to c,
    the pair is (N(0, s²), (1 − q)N(0, s²) + qN(c, s²)) — the dominating pair of the
    Poisson-subsampled Gaussian at rate q under add/remove (dpledger accounts both
    directions of it).
    """
    s = _number(name, fields, "standard_deviation")
    sens = [
        check_real(f"{name}.sensitivities[{i}]", c) for i, c in enumerate(fields["sensitivities"])
    ]
    probs = [
        check_nonnegative(f"{name}.sampling_probs[{i}]", p)
        for i, p in enumerate(fields["sampling_probs"])
    ]
    if len(sens) != len(probs) or not sens:
        raise InvalidArgumentError(
            f"{name}: `sensitivities` and `sampling_probs` must be non-empty and of one length. "
            f"Found {len(sens)} and {len(probs)}."
        )
    if math.fsum(probs) > 1 + 1e-12:
        raise InvalidArgumentError(f"{name}: `sampling_probs` must sum to 1. Found {probs!r}.")
    if adj != ev.ADD_REMOVE:
        raise _refuse(name, "dp_accounting defines it under ADD_OR_REMOVE_ONE only")
    moved = {abs(c) for c, p in zip(sens, probs, strict=True) if c != 0 and p > 0}
    if not moved:
        return _nothing()
    if len(moved) > 1:
        biggest = max(moved)
        raise _refuse(
            name,
            f"its sensitivities take {len(moved)} distinct non-zero values, and dpledger has no "
            "event for such a mixture (it is dominated by "
            f"PoissonSampled(Gaussian({s:g}, {biggest:g}), rate=Σp) — use that if an upper "
            "bound is enough)",
        )
    (c,) = moved
    if s == 0:
        raise _non_private(name, "standard_deviation")
    # the rate: the total probability of a shift, rounded up (a larger rate is the safe side)
    shifted = [Fraction(p) for c_i, p in zip(sens, probs, strict=True) if c_i != 0]
    q = min(1.0, float_up(sum(shifted, Fraction(0))))
    gaussian = ev.Gaussian(sigma=s, sensitivity=c)
    return gaussian if q == 1.0 else ev.PoissonSampled(gaussian, rate=q)


_FROM: dict[str, _FromHandler] = {
    "NoOpDpEvent": _from_noop,
    "GaussianDpEvent": _from_gaussian,
    "LaplaceDpEvent": _from_laplace,
    "DiscreteLaplaceDpEvent": _from_discrete_laplace,
    "RandomizedResponseDpEvent": _from_randomized_response,
    "SelfComposedDpEvent": _from_self_composed,
    "ComposedDpEvent": _from_composed,
    "PoissonSampledDpEvent": _from_poisson,
    "SampledWithoutReplacementDpEvent": _from_without_replacement,
    "ZCDpEvent": _from_zcdp,
    "MixtureOfGaussiansDpEvent": _from_mixture,
}


def from_dp_accounting(event: Any, *, adjacency: Any = ev.ADD_REMOVE) -> ev.Event:
    """The dpledger event describing the same release as a dp_accounting ``DpEvent``.

    Args:
        event: A ``dp_accounting`` event object; the text ``print(event)`` shows (parsed
            without evaluating it, and without dp_accounting installed), e.g.
            ``"GaussianDpEvent(noise_multiplier=1.1)"``, with or without a
            ``dp_accounting.`` prefix; or its named-tuple/dict form
            (``event.to_named_tuple()``, ``{"class_name": "GaussianDpEvent",
            "noise_multiplier": 1.1}``, nested events as dicts).
        adjacency: The neighbouring relation it is accounted under: ``"add_remove"``
            (dp_accounting's default ``ADD_OR_REMOVE_ONE``) or ``"replace_one"``; a
            ``dp_accounting.NeighboringRelation`` member is accepted too.

    Returns:
        The event (see the module docstring for the mapping and the sensitivities).

    Raises:
        NotApplicableError: The event (or one inside it) has no dpledger counterpart
            under this adjacency; the message names the type and why.
        InvalidArgumentError: The text or dict is not a well-formed dp_accounting event,
            or a field is invalid (named as ``Class.field``).
        InvalidArgumentTypeError: ``event`` is none of the accepted forms.

    Example:
        >>> from dpledger.interop import from_dp_accounting
        >>> from_dp_accounting("GaussianDpEvent(noise_multiplier=2.0)", adjacency="replace_one")
        Gaussian(sigma=2.0, sensitivity=2.0)
    """
    adj = _adjacency(adjacency)

    def expand(raw: Any) -> tuple[Any, list[Any]]:
        name, fields = describe(raw)
        if name in NOT_CONVERTED:
            raise _refuse(name, NOT_CONVERTED[name])
        if name not in _FROM:
            raise NotApplicableError(
                f"{name} is not a dp_accounting event type dpledger knows (known: "
                f"{', '.join(sorted(DP_ACCOUNTING_FIELDS))}); it cannot be converted."
            )
        return (name, fields), children(name, fields)

    def build(info: tuple[str, dict[str, Any]], kids: list[ev.Event]) -> ev.Event:
        name, fields = info
        try:
            return _FROM[name](name, fields, kids, adj)
        except (InvalidArgumentError, InvalidArgumentTypeError) as error:
            if f"{name}." in str(error):  # the message names the field already
                raise
            raise type(error)(f"{name}: {error}") from None

    result: ev.Event = fold(event, expand, build)
    return result


# -- dpledger -> dp_accounting ---------------------------------------------------------


def _dp_event_module() -> Any:
    try:
        from dp_accounting import dp_event  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as error:  # pragma: no cover - exercised where it is missing
        raise ImportError(
            "to_dp_accounting needs dp_accounting: pip install 'dpledger[compare]' "
            "(or pip install dp-accounting)."
        ) from error
    return dp_event


def _noise_multiplier(noise: float, sensitivity: float, adj: str) -> float:
    """Noise ÷ (the per-record bound C), C = Δ (add/remove) or Δ/2 (replace-one), rounded down."""
    return div_down(noise * _scale(adj), sensitivity)


def _to_gaussian(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    return dpe.GaussianDpEvent(_noise_multiplier(event.sigma, event.sensitivity, adj))


def _to_laplace(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    return dpe.LaplaceDpEvent(_noise_multiplier(event.scale, event.sensitivity, adj))


def _to_discrete_laplace(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    per_record = event.sensitivity / _scale(adj)
    if per_record != int(per_record):
        raise NotApplicableError(
            f"dp_accounting's DiscreteLaplaceDpEvent takes an integer sensitivity (the bound on "
            f"one record's L1 contribution); {event!r} under {adj} gives {per_record!r}."
        )
    # a = 1/t rounded up (less noise: the safe side); the dimension is not carried over
    return dpe.DiscreteLaplaceDpEvent(
        noise_parameter=div_up(1.0, event.scale), sensitivity=int(per_record)
    )


def _to_randomized_response(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    if adj != ev.REPLACE_ONE:
        raise NotApplicableError(
            "dp_accounting defines randomized response under REPLACE_ONE only (its accountants "
            "refuse it under ADD_OR_REMOVE_ONE): convert RandomizedResponse with "
            "adjacency='replace_one'."
        )
    k = event.categories
    # p = k/(e^ε + k − 1), rounded down (less noise: the safe side); ε = 0 is p = 1 exactly
    down = k / (math.expm1(event.epsilon) + k) * (1 - 4 * SAFETY_ULPS)
    p = 1.0 if event.epsilon == 0 else down
    return dpe.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)


def _to_pure(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    if event.epsilon == 0:
        return dpe.NoOpDpEvent()
    raise NotApplicableError(f"{event!r} cannot be converted: {NOT_CONVERTED['PureDP']}.")


def _to_zcdp(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    return dpe.ZCDpEvent(rho=event.rho, xi=event.xi)


def _to_repeated(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    return dpe.SelfComposedDpEvent(kids[0], event.count)


def _to_composed(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    return dpe.ComposedDpEvent(list(kids))


def _to_poisson(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    if adj != ev.ADD_REMOVE:
        raise NotApplicableError(
            "a PoissonSampled event is analysed under add/remove adjacency: convert it with "
            "adjacency='add_remove'."
        )
    return dpe.PoissonSampledDpEvent(event.rate, kids[0])


def _to_without_replacement(event: Any, kids: list[Any], adj: str, dpe: Any) -> Any:
    if adj != ev.REPLACE_ONE:
        raise NotApplicableError(
            "a SampledWithoutReplacement event is analysed under replace-one adjacency: "
            "convert it with adjacency='replace_one'."
        )
    return dpe.SampledWithoutReplacementDpEvent(event.population, event.sample_size, kids[0])


_TO: dict[type[ev.Event], Callable[[Any, list[Any], str, Any], Any]] = {
    ev.Gaussian: _to_gaussian,
    ev.Laplace: _to_laplace,
    ev.DiscreteLaplace: _to_discrete_laplace,
    ev.RandomizedResponse: _to_randomized_response,
    ev.PureDP: _to_pure,
    ev.ZCDP: _to_zcdp,
    ev.Repeated: _to_repeated,
    ev.Composed: _to_composed,
    ev.PoissonSampled: _to_poisson,
    ev.SampledWithoutReplacement: _to_without_replacement,
}


def to_dp_accounting(event: ev.Event, *, adjacency: Any = ev.ADD_REMOVE) -> Any:
    """The dp_accounting ``DpEvent`` describing the same release as a dpledger event.

    The inverse of :func:`from_dp_accounting`: ``from_dp_accounting(to_dp_accounting(e))``
    describes the same release as ``e`` (sensitivities expressed in units of the
    per-record bound; noise rounded down where it is recomputed). Needs dp_accounting.

    Args:
        event: A dpledger event.
        adjacency: The neighbouring relation ``event``'s sensitivities are stated under
            (``"add_remove"`` or ``"replace_one"``, or a ``NeighboringRelation``); account
            the result with a dp_accounting accountant of the same relation.

    Raises:
        NotApplicableError: The event (or one inside it) has no dp_accounting counterpart;
            the message names the type and why.
        ImportError: dp_accounting is not installed.

    Example (needs dp_accounting; run by ``tests/interop``)::

        to_dp_accounting(ev.PoissonSampled(ev.Gaussian(2.2, 2.0), rate=0.01) * 100)
        # SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.01,
        #     event=GaussianDpEvent(noise_multiplier=1.1)), count=100)
    """
    adj = _adjacency(adjacency)
    if not isinstance(event, ev.Event):
        raise InvalidArgumentTypeError(
            f"`event` must be a dpledger event (dpledger.events.*). Found {shown(event)} of "
            f"type {type(event).__name__}."
        )
    dpe = _dp_event_module()

    def expand(node: ev.Event) -> tuple[Any, list[Any]]:
        handler = _TO.get(type(node))
        if handler is None:
            why = NOT_CONVERTED.get(type(node).__name__, "dp_accounting has no such event")
            raise NotApplicableError(f"{node!r} cannot be converted: {why}.")
        return (node, handler), list(node.children())

    def build(info: tuple[ev.Event, Any], kids: list[Any]) -> Any:
        node, handler = info
        return handler(node, kids, adj, dpe)

    return fold(event, expand, build)


__dir__ = namespace(__all__)
