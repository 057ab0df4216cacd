"""Privacy events: frozen, validated records of *what was released*.

An event describes a release by its noise and sensitivity (or by a guarantee the
release provably has), never by a claimed ε. Accountants turn events into guarantees.

Sensitivities are stated in the norm the noise is calibrated in: L1 for Laplace, L2 of
the released vector for Gaussian, each under the adjacency the analysis uses.
Adjacency matters explicitly for the sampled events: Poisson subsampling is analysed
under add/remove-one adjacency, sampling without replacement under replace-one
adjacency (Wang, Balle & Kasiviswanathan 2019), and the event records which.

Events compose with ``+`` (``Composed``) and repeat with ``* count`` (``Repeated``).

Example:
    >>> from dpledger import events as ev
    >>> step = ev.PoissonSampled(ev.Gaussian(sigma=1.1), rate=0.01)
    >>> training = step * 10_000
    >>> training.count
    10000
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from dpledger._numerics import div_down, div_up
from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_nonnegative,
    check_positive,
    check_probability,
)
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError, UnboundedLossError

__all__ = [
    "ADD_REMOVE",
    "ADJACENCIES",
    "MCDP",
    "REPLACE_ONE",
    "SAMPLINGS",
    "ZCDP",
    "ApproxDP",
    "BoundedRange",
    "Composed",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Event",
    "Gaussian",
    "Laplace",
    "PoissonSampled",
    "PureDP",
    "RandomizedResponse",
    "Repeated",
    "SampledWithoutReplacement",
    "flatten",
    "from_dict",
    "to_dict",
    "walk",
]

ADD_REMOVE = "add_remove"
"""Neighbouring data sets differ by adding or removing one record ("unbounded")."""
REPLACE_ONE = "replace_one"
"""Neighbouring data sets differ by replacing one record ("bounded", substitution)."""
ADJACENCIES = (ADD_REMOVE, REPLACE_ONE)


def _check_ratio(event: Any, noise: str, symbol: str) -> None:
    """Refuse ``sensitivity / noise`` beyond the float range (the release has no guarantee)."""
    scale = getattr(event, noise)
    sensitivity = event.sensitivity
    if math.isinf(div_up(sensitivity, scale)):
        raise UnboundedLossError(
            f"`sensitivity` / `{noise}` = {sensitivity!r} / {scale!r} overflows a float: "
            f"{type(event).__name__} noise this small for this sensitivity has no finite "
            f"privacy guarantee ({symbol} = ∞). Use more noise or a smaller sensitivity."
        )


def _set(obj: object, name: str, value: Any) -> None:
    """Store a normalised value on a frozen dataclass during validation."""
    object.__setattr__(obj, name, value)


def _check_event(name: str, value: Any) -> Event:
    if not isinstance(value, Event):
        raise InvalidArgumentTypeError(
            f"`{name}` must be a privacy event (dpledger.events.*). "
            f"Found {value!r} of type {type(value).__name__}."
        )
    return value


class Event:
    """Base class of privacy events. Subclasses are frozen, validated dataclasses."""

    __slots__ = ()

    def __add__(self, other: Event) -> Composed:
        if not isinstance(other, Event):
            return NotImplemented
        return Composed((self, other))

    def __mul__(self, count: int) -> Repeated:
        return Repeated(self, count)

    def children(self) -> tuple[Event, ...]:
        """The events this one is made of (none for a release; see :func:`walk`)."""
        return ()

    __rmul__ = __mul__

    def __repr__(self) -> str:
        """``Name(field=value, ...)``, as a dataclass shows it, to a bounded depth.

        Never recurses past :data:`_REPR_DEPTH` levels: a 3,000-deep ``Repeated`` has a
        repr, not a RecursionError.
        """
        depth = getattr(_REPR_STATE, "depth", 0)
        if depth >= _REPR_DEPTH:
            return f"{type(self).__name__}(…)"
        _REPR_STATE.depth = depth + 1
        try:
            shown = fields(self)  # type: ignore[arg-type]
            parts = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in shown)
        finally:
            _REPR_STATE.depth = depth
        return f"{type(self).__name__}({parts})"


_REPR_DEPTH = 20
_REPR_STATE = threading.local()


@dataclass(frozen=True, repr=False)
class Gaussian(Event):
    """Additive Gaussian noise N(0, σ²) on each coordinate of a statistic.

    Args:
        sigma: Standard deviation of the noise (absolute, not a multiplier).
        sensitivity: L2 sensitivity Δ₂ of the released vector under the chosen adjacency.

    The privacy of this release depends only on ``mu = sensitivity / sigma``
    (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2019, Thm 2.7).
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        _check_ratio(self, "sigma", "μ")

    @property
    def noise_multiplier(self) -> float:
        """σ / Δ₂, the noise in units of the sensitivity (rounded down: the safe side)."""
        return div_down(self.sigma, self.sensitivity)

    @property
    def mu(self) -> float:
        """Δ₂ / σ, the Gaussian-DP parameter of this release (rounded up)."""
        return div_up(self.sensitivity, self.sigma)


@dataclass(frozen=True, repr=False)
class Laplace(Event):
    """Additive Laplace noise with scale ``b`` on each coordinate of a statistic.

    Args:
        scale: The Laplace scale b (absolute noise; the standard deviation is b√2).
        sensitivity: L1 sensitivity Δ₁ of the released vector under the chosen adjacency.

    The release is ε-DP with ε = Δ₁ / b (Dwork & Roth 2014, Thm 3.6).
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        _check_ratio(self, "scale", "ε")

    @property
    def epsilon(self) -> float:
        """Δ₁ / b, the pure-DP parameter of this release (rounded up)."""
        return div_up(self.sensitivity, self.scale)


@dataclass(frozen=True, repr=False)
class DiscreteLaplace(Event):
    """Discrete Laplace noise, P[z] ∝ exp(−|z|/t), added to an integer-valued statistic.

    Args:
        scale: The scale t (in the integer units of the statistic).
        sensitivity: L1 sensitivity of the integer-valued statistic.
        dimension: Number of coordinates, if known (``None``: any). With ``dimension=1``
            the PLD method uses the exact one-dimensional pair (see :mod:`.pld`).

    The release is ε-DP with ε = Δ₁/t: the density ratio at any shift of L1 norm Δ₁ is at
    most exp(Δ₁/t) (Canonne, Kamath & Steinke 2020, §2; Inusah & Kozubowski 2006).
    """

    scale: float
    sensitivity: float = 1.0
    dimension: int | None = None

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        _check_ratio(self, "scale", "ε")
        if self.dimension is not None:
            _set(self, "dimension", check_int_at_least("dimension", self.dimension, 1))

    @property
    def epsilon(self) -> float:
        """Δ₁ / t, the pure-DP parameter of this release (rounded up)."""
        return div_up(self.sensitivity, self.scale)


@dataclass(frozen=True, repr=False)
class DiscreteGaussian(Event):
    """Discrete Gaussian noise N_Z(0, σ²) on each coordinate of an integer-valued statistic.

    Args:
        sigma: The parameter σ of P[z] ∝ exp(−z²/(2σ²)) (integer units).
        sensitivity: L2 sensitivity of the integer-valued statistic.
        dimension: Number of coordinates, if known (``None``: any). With ``dimension=1``
            the PLD method uses the exact one-dimensional pair (see :mod:`.pld`).

    For an integer shift v, D_α(N_Z(0, σ²) ‖ N_Z(v, σ²)) ≤ αv²/(2σ²) (Canonne, Kamath &
    Steinke 2020, §2); Rényi divergences of independent coordinates add, so the release
    is (Δ²/(2σ²))-zCDP with Δ = the L2 sensitivity, exactly as the continuous Gaussian.
    With a known ``dimension``, GDP and PLD account it at the continuous Gaussian's exact
    price at σ₀ = σ√(1 − τ²/σ²) plus a slack ≤ 2⁻¹⁰⁰
    (:mod:`~dpledger.accountant.discrete_gaussian`).
    """

    sigma: float
    sensitivity: float = 1.0
    dimension: int | None = None

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        _check_ratio(self, "sigma", "μ")
        if self.dimension is not None:
            _set(self, "dimension", check_int_at_least("dimension", self.dimension, 1))

    @property
    def mu(self) -> float:
        """Δ₂ / σ (rounded up)."""
        return div_up(self.sensitivity, self.sigma)


@dataclass(frozen=True, repr=False)
class PureDP(Event):
    """A release known to be ε-differentially private (and nothing more)."""

    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))


@dataclass(frozen=True, repr=False)
class BoundedRange(Event):
    """An ε-bounded-range release, such as the exponential mechanism with parameter ε.

    (Report-noisy-max with Gumbel noise is the exponential mechanism.) Every privacy-loss
    value of one output lies in an interval of width ε (Durfee & Rogers 2019). It is
    ε-DP, and ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2) — four times less than the ε²/2
    of a generic ε-DP release — and its worst case is *not* randomized response (Dong,
    Durfee & Rogers 2020), so no lower bound is certified from it.
    """

    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))


@dataclass(frozen=True, repr=False)
class ApproxDP(Event):
    """A release known to be (ε, δ)-differentially private (and nothing more)."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        _set(self, "delta", check_probability("delta", self.delta))


@dataclass(frozen=True, repr=False)
class ZCDP(Event):
    """A release known to be (ξ, ρ)-zero-concentrated DP: D_α ≤ ξ + ρα for all α > 1.

    Bun & Steinke 2016, Def. 1.1; ``xi = 0`` (the default) is ρ-zCDP.
    """

    rho: float
    xi: float = 0.0

    def __post_init__(self) -> None:
        _set(self, "rho", check_nonnegative("rho", self.rho))
        _set(self, "xi", check_nonnegative("xi", self.xi))


@dataclass(frozen=True, repr=False)
class MCDP(Event):
    """A release known to be (μ, τ)-mean-concentrated DP (Dwork & Rothblum 2016, Def. 3.1).

    The privacy loss L has mean at most ``mu`` and L − E[L] is ``tau``-subgaussian.
    """

    mu: float
    tau: float

    def __post_init__(self) -> None:
        _set(self, "mu", check_nonnegative("mu", self.mu))
        _set(self, "tau", check_nonnegative("tau", self.tau))


@dataclass(frozen=True, repr=False)
class RandomizedResponse(Event):
    """k-ary randomized response: report the true category w.p. e^ε/(e^ε + k − 1).

    Every other category is reported w.p. 1/(e^ε + k − 1). The release is ε-DP
    (Warner 1965; Kairouz, Oh & Viswanath 2015 for the k-ary form).

    Args:
        epsilon: The log-ratio of the truthful to each untruthful probability.
        categories: The number k ≥ 2 of categories.
    """

    epsilon: float
    categories: int = 2

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        _set(self, "categories", check_int_at_least("categories", self.categories, 2))

    @classmethod
    def from_truth_probability(cls, p_truth: float, categories: int = 2) -> RandomizedResponse:
        """Build the event from the probability of reporting the true category.

        Args:
            p_truth: Probability of the true category, in [1/k, 1).
            categories: The number k ≥ 2 of categories.
        """
        k = check_int_at_least("categories", categories, 2)
        p = check_probability("p_truth", p_truth, low_open=True)
        q = (1.0 - p) / (k - 1)
        if p < q:
            raise InvalidArgumentError(
                f"`p_truth` must be at least 1/categories = {1 / k!r} (otherwise relabel the "
                f"outputs). Found {p_truth!r}."
            )
        return cls(epsilon=math.log(p) - math.log(q), categories=k)


@dataclass(frozen=True, repr=False)
class Repeated(Event):
    """The same release made ``count`` times (possibly adaptively chosen inputs)."""

    event: Event
    count: int

    def __post_init__(self) -> None:
        _check_event("event", self.event)
        _set(self, "count", check_int_at_least("count", self.count, 1))

    def children(self) -> tuple[Event, ...]:
        """The repeated release."""
        return (self.event,)


@dataclass(frozen=True, repr=False)
class Composed(Event):
    """Several releases on the same data, in sequence (adaptive composition)."""

    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        events: Any = self.events
        if isinstance(events, Event) or not hasattr(events, "__iter__"):
            raise InvalidArgumentTypeError(
                f"`events` must be a sequence of privacy events. Found {events!r}."
            )
        items = tuple(events)
        if not items:
            raise InvalidArgumentError("`events` must contain at least one event. Found ().")
        for i, item in enumerate(items):
            _check_event(f"events[{i}]", item)
        _set(self, "events", items)

    def children(self) -> tuple[Event, ...]:
        """The composed releases."""
        return self.events


def _refuse_nested(inner: Event, other: type, outer: str) -> None:
    """Refuse sampling nested in sampling of the other kind (mismatched adjacency).

    Poisson subsampling is analysed under add/remove and sampling without replacement
    under replace-one; no theorem covers one inside the other, so the event is refused
    rather than accounted with a bound that does not exist. (Sampling of the same kind
    nested in itself is one sampling of the product rate, and is accepted.)
    """
    for current, _ in walk(inner):
        if isinstance(current, other):
            raise InvalidArgumentError(
                f"{outer} of an event that contains {type(current).__name__}: the two "
                "samplings are analysed under different adjacencies (add/remove vs "
                "replace-one) and no theorem bounds one nested in the other. Found "
                f"{current!r} inside."
            )


@dataclass(frozen=True, repr=False)
class PoissonSampled(Event):
    """``event`` run on a Poisson subsample: each record is kept independently w.p. ``rate``.

    Analysed under add/remove-one adjacency (Mironov, Talwar & Zhang 2019; Balle, Barthe &
    Gaboardi 2018). The inner event's sensitivity is the effect of one record.
    """

    event: Event
    rate: float
    adjacency: str = ADD_REMOVE

    def __post_init__(self) -> None:
        _check_event("event", self.event)
        _set(self, "rate", check_probability("rate", self.rate, low_open=True, high_open=False))
        check_choice("adjacency", self.adjacency, ADJACENCIES)
        _refuse_nested(self.event, SampledWithoutReplacement, "PoissonSampled")
        if self.adjacency != ADD_REMOVE:
            raise InvalidArgumentError(
                "`adjacency` must be 'add_remove' for Poisson subsampling: the amplification "
                "theorems used here (Mironov-Talwar-Zhang 2019, Balle-Barthe-Gaboardi 2018) are "
                f"proved for add/remove neighbours. Found {self.adjacency!r}."
            )

    def children(self) -> tuple[Event, ...]:
        """The sampled release."""
        return (self.event,)


@dataclass(frozen=True, repr=False)
class SampledWithoutReplacement(Event):
    """``event`` run on a uniformly random subset of ``sample_size`` of ``population`` records.

    Analysed under replace-one adjacency, the only one under which a fixed-size sample
    of a fixed-size population is well defined (Wang, Balle & Kasiviswanathan 2019;
    Balle, Barthe & Gaboardi 2018).
    """

    event: Event
    sample_size: int
    population: int
    adjacency: str = REPLACE_ONE

    def __post_init__(self) -> None:
        _check_event("event", self.event)
        _set(self, "sample_size", check_int_at_least("sample_size", self.sample_size, 1))
        _set(self, "population", check_int_at_least("population", self.population, 1))
        _refuse_nested(self.event, PoissonSampled, "SampledWithoutReplacement")
        if self.sample_size > self.population:
            raise InvalidArgumentError(
                f"`sample_size` must not exceed `population` ({self.population}). "
                f"Found {self.sample_size}."
            )
        check_choice("adjacency", self.adjacency, ADJACENCIES)
        if self.adjacency != REPLACE_ONE:
            raise InvalidArgumentError(
                "`adjacency` must be 'replace_one' for sampling without replacement: a fixed "
                "sample size from a fixed population is defined only for replace-one "
                f"neighbours. Found {self.adjacency!r}."
            )

    @property
    def rate(self) -> float:
        """The sampling ratio m / n."""
        return self.sample_size / self.population

    def children(self) -> tuple[Event, ...]:
        """The sampled release."""
        return (self.event,)


SAMPLINGS = (PoissonSampled, SampledWithoutReplacement)
"""The subsampled releases (each has a ``rate``): the one test for "is it sampled?"."""


def walk(event: Event) -> Iterator[tuple[Event, int]]:
    """Every node of ``event``'s tree with its depth (1 at the root), without recursion.

    Repetitions, compositions and sampling wrappers included (:meth:`Event.children`):
    the one walk over an event's structure (a 3,000-deep tree needs no recursion).
    """
    _check_event("event", event)
    stack = [(event, 1)]
    while stack:
        current, depth = stack.pop()
        yield current, depth
        stack.extend((child, depth + 1) for child in current.children())


def flatten(event: Event) -> Counter[Event]:
    """Expand ``Repeated``/``Composed`` trees into a multiset of the releases they contain.

    Returns:
        A Counter mapping each non-structural event to how many times it is released.
    """
    _check_event("event", event)
    result: Counter[Event] = Counter()
    stack: list[tuple[Event, int]] = [(event, 1)]
    while stack:
        current, multiplicity = stack.pop()
        if isinstance(current, Repeated):
            stack.append((current.event, multiplicity * current.count))
        elif isinstance(current, Composed):
            stack.extend((child, multiplicity) for child in current.events)
        else:
            result[current] += multiplicity
    return result


_EVENT_TYPES: dict[str, type[Event]] = {}


def _register_types() -> None:
    for cls in (
        Gaussian,
        Laplace,
        DiscreteLaplace,
        DiscreteGaussian,
        PureDP,
        BoundedRange,
        ApproxDP,
        ZCDP,
        MCDP,
        RandomizedResponse,
        Repeated,
        Composed,
        PoissonSampled,
        SampledWithoutReplacement,
    ):
        _EVENT_TYPES[cls.__name__] = cls


def to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready description of ``event`` (inverse: :func:`from_dict`)."""
    _check_event("event", event)
    out: dict[str, Any] = {"type": type(event).__name__}
    for name in event.__dataclass_fields__:  # type: ignore[attr-defined]
        value = getattr(event, name)
        if name == "dimension" and value is None:
            continue  # optional and unknown: omitted (older descriptions lack it)
        if isinstance(value, Event):
            out[name] = to_dict(value)
        elif isinstance(value, tuple):
            out[name] = [to_dict(item) for item in value]
        else:
            out[name] = value
    return out


def from_dict(data: Any) -> Event:
    """Rebuild an event from :func:`to_dict` output, validating every field.

    Raises:
        InvalidArgumentError: Unknown type, missing or unexpected fields, or invalid
            values (the event constructors' own checks apply).
    """
    if not isinstance(data, dict) or "type" not in data:
        raise InvalidArgumentError(
            f"an event description must be a dict with a 'type'. Found {data!r}."
        )
    if not _EVENT_TYPES:
        _register_types()
    cls = _EVENT_TYPES.get(data["type"])
    if cls is None:
        raise InvalidArgumentError(
            f"unknown event type {data['type']!r}; known: {', '.join(sorted(_EVENT_TYPES))}."
        )
    fields = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    extra = set(data) - fields - {"type"}
    if extra:
        raise InvalidArgumentError(f"unexpected fields for {cls.__name__}: {sorted(extra)}.")
    kwargs: dict[str, Any] = {}
    for name in fields:
        if name not in data:
            continue
        value = data[name]
        if name == "event":
            value = from_dict(value)
        elif name == "events":
            if not isinstance(value, list):
                raise InvalidArgumentError(f"`events` must be a list. Found {value!r}.")
            value = tuple(from_dict(item) for item in value)
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as error:
        raise InvalidArgumentError(f"invalid fields for {cls.__name__}: {error}") from error


__dir__ = namespace(__all__)
