"""Parameter constraints: declared once per estimator, checked once before ``fit`` reads data.

scikit-learn's estimators declare a class-level table ``_parameter_constraints``
(parameter → what it may be) and check it in ``_fit_context`` before ``fit`` runs
(``sklearn/utils/_param_validation.py``, ``sklearn/base.py``). dpledger's estimators do the
same with this small equivalent. It differs in two ways:

* a constraint *converts* as it checks (``1`` → ``1.0``, ``None`` → an error naming the
  missing declaration), and ``fit`` reads the checked values (:class:`Parameters`), never
  the raw attributes;
* every message comes from :mod:`dpledger._validation`'s helpers or follows them: it
  names the argument and shows the value found ("`rho` must lie in (0, 1). Found 1.5.").

Order matters for privacy: every refusal here depends on the parameters alone, so
:func:`~dpledger.algorithms.base.fit_context` makes them all before ``fit`` reads any
data. A check relating several parameters is the estimator's ``_check_parameters``; a
check that needs the data's schema (the number of columns) stays in ``fit``.
"""

from __future__ import annotations

import abc
import inspect
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_nonnegative,
    check_positive,
    check_probability,
    check_reals,
    shown,
)
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "Boolean",
    "Bound",
    "Constraint",
    "Delta",
    "Epsilon",
    "InstanceOf",
    "Integer",
    "IsLedger",
    "NonNegative",
    "Options",
    "OrNone",
    "Parameters",
    "ParametersAsRead",
    "Positive",
    "Probability",
    "RandomState",
    "Shares",
    "parameter_names",
    "validate_parameters",
]


class Constraint(abc.ABC):
    """What one parameter may be: :meth:`check` returns the value checked and converted."""

    @abc.abstractmethod
    def check(self, name: str, value: Any, owner: str) -> Any:
        """``value`` converted, or an error naming ``name`` and showing ``value``.

        ``owner`` is the estimator's class name, for messages that need it.
        """


@dataclass(frozen=True)
class OrNone(Constraint):
    """None, or a value ``inner`` accepts."""

    inner: Constraint

    def check(self, name: str, value: Any, owner: str) -> Any:
        return None if value is None else self.inner.check(name, value, owner)


@dataclass(frozen=True)
class Positive(Constraint):
    """A real number > 0 and finite (a float)."""

    def check(self, name: str, value: Any, owner: str) -> float:
        return check_positive(name, value)


@dataclass(frozen=True)
class NonNegative(Constraint):
    """A real number ≥ 0 and finite (a float)."""

    def check(self, name: str, value: Any, owner: str) -> float:
        return check_nonnegative(name, value)


@dataclass(frozen=True)
class Probability(Constraint):
    """A real number in [0, 1], each end excluded as stated (a float)."""

    low_open: bool = False
    high_open: bool = True

    def check(self, name: str, value: Any, owner: str) -> float:
        return check_probability(name, value, low_open=self.low_open, high_open=self.high_open)


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a bool) ≥ ``minimum`` and, with ``maximum``, at most that (``why``)."""

    minimum: int
    maximum: int | None = None
    why: str = ""

    def check(self, name: str, value: Any, owner: str) -> int:
        count = check_int_at_least(name, value, self.minimum)
        if self.maximum is not None and count > self.maximum:
            reason = f" ({self.why})" if self.why else ""
            raise InvalidArgumentError(
                f"`{name}` must be at most {self.maximum:,}{reason}. Found {shown(value)}."
            )
        return count


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False (a Python or numpy bool)."""

    def check(self, name: str, value: Any, owner: str) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise InvalidArgumentTypeError(
            f"`{name}` must be True or False. Found {shown(value)} of type {type(value).__name__}."
        )


@dataclass(frozen=True)
class Options(Constraint):
    """One of the strings ``choices`` (``why``, if given, says what they mean)."""

    choices: tuple[str, ...]
    why: str = ""

    def check(self, name: str, value: Any, owner: str) -> str:
        if not self.why:
            return check_choice(name, value, self.choices)
        if isinstance(value, str) and value in self.choices:
            return value
        options = ", ".join(repr(c) for c in self.choices)
        raise InvalidArgumentError(
            f"`{name}` must be one of {options} ({self.why}). Found {shown(value)}."
        )


@dataclass(frozen=True)
class Bound(Constraint):
    """A declared bound on the data: required, > 0 and finite; within ``limits`` if given.

    Bounds are never estimated from the data (that would leak it), so None is refused.
    ``limits`` (low, high) keep the arithmetic on such bounds within normal floats, so that
    whether a fit fails never depends on the data.
    """

    limits: tuple[float, float] | None = None

    def check(self, name: str, value: Any, owner: str) -> float:
        if value is None:
            raise InvalidArgumentError(
                f"`{name}` must be declared: bounds are never estimated from the data (that "
                "would leak it). Found None."
            )
        bound = check_positive(name, value)  # refuses ∞ too
        if self.limits is not None and not self.limits[0] <= bound <= self.limits[1]:
            low, high = self.limits
            raise InvalidArgumentError(
                f"`{name}` must lie in [2**{math.log2(low):g}, 2**{math.log2(high):g}] ≈ "
                f"[{low:.2g}, {high:.2g}]: the statistics, the sensitivity and the clipped "
                "rows must stay normal floats, or whether a fit fails would depend on the "
                f"data (rescale the data instead). Found {shown(value)}."
            )
        return bound


@dataclass(frozen=True)
class Epsilon(Constraint):
    """The ε a fit must meet: required, > 0 and finite."""

    def check(self, name: str, value: Any, owner: str) -> float:
        if value is None:
            raise InvalidArgumentError(
                f"{owner} needs `{name}`, the guarantee this fit must meet. Found None."
            )
        return check_positive(name, value)  # refuses ∞ too


@dataclass(frozen=True)
class Delta(Constraint):
    """The δ a fit must meet: required, in [0, 1); > 0 where every release is Gaussian."""

    gaussian: bool = False

    def check(self, name: str, value: Any, owner: str) -> float:
        if value is None:
            raise InvalidArgumentError(
                f"{owner} needs `{name}` (0 for pure DP where the method allows it). Found None."
            )
        delta = check_probability(name, value, high_open=True)
        if self.gaussian and delta == 0:
            raise InvalidArgumentError(
                f"{owner} releases Gaussian noise: `{name}` must be > 0. Found {shown(value)}."
            )
        return delta


@dataclass(frozen=True)
class IsLedger(Constraint):
    """A :class:`~dpledger.Ledger` or None."""

    def check(self, name: str, value: Any, owner: str) -> Any:
        from dpledger.ledger import Ledger

        if value is not None and not isinstance(value, Ledger):
            raise InvalidArgumentTypeError(
                f"`{name}` must be a dpledger.Ledger or None. Found {type(value).__name__}."
            )
        return value


@dataclass(frozen=True)
class RandomState(Constraint):
    """None (OS-seeded noise), a non-negative int seed or a ``numpy.random.Generator``.

    Returned as given: a Generator is advanced only when the fit draws its seed from it.
    """

    def check(self, name: str, value: Any, owner: str) -> Any:
        if value is None or isinstance(value, np.random.Generator):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            if value < 0:
                raise InvalidArgumentError(
                    f"`{name}` as a seed must be non-negative. Found {shown(value)}."
                )
            return value
        raise InvalidArgumentTypeError(
            f"`{name}` must be a numpy.random.Generator (e.g. numpy.random.default_rng()), an "
            f"int seed, or None. Found {shown(value)} of type {type(value).__name__}."
        )


_COUNTS = {2: "two", 3: "three"}


@dataclass(frozen=True)
class Shares(Constraint):
    """``count`` positive finite shares of a budget, one for each of ``of`` (floats)."""

    count: int
    of: str

    def check(self, name: str, value: Any, owner: str) -> tuple[float, ...]:
        shares = check_reals(name, value)
        if len(shares) != self.count or any(not (s > 0 and math.isfinite(s)) for s in shares):
            number = _COUNTS.get(self.count, str(self.count))
            raise InvalidArgumentError(
                f"`{name}` must be {number} positive shares for {self.of}. Found {shown(value)}."
            )
        return tuple(shares)


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of ``kind``; ``hint`` says what that is (and how to make one)."""

    kind: type
    hint: str

    def check(self, name: str, value: Any, owner: str) -> Any:
        if not isinstance(value, self.kind):
            raise InvalidArgumentError(f"`{name}` must be {self.hint}. Found {shown(value)}.")
        return value


class Parameters(Mapping[str, Any]):
    """The checked values of an estimator's parameters: ``params.x_bound`` (read-only)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r} was checked") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("checked parameters are read-only")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Parameters({self._values!r})"


class ParametersAsRead(Parameters):
    """An estimator's parameters, each checked by its constraint when it is read.

    What its private helpers read outside ``fit`` (introspection: a helper called on its
    own). Inside ``fit`` they read :class:`Parameters`, all checked (together too) before
    any data was.
    """

    __slots__ = ("_constraints", "_estimator")

    def __init__(
        self, estimator: Any, constraints: Mapping[str, Constraint], fixed: Mapping[str, Any]
    ) -> None:
        super().__init__(fixed)
        object.__setattr__(self, "_estimator", estimator)
        object.__setattr__(self, "_constraints", constraints)

    def __getattr__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        if name not in parameter_names(type(self._estimator)):
            raise AttributeError(f"no parameter {name!r}")
        value = getattr(self._estimator, name)
        return self._constraints[name].check(name, value, type(self._estimator).__name__)

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __iter__(self) -> Iterator[str]:
        return iter({*self._values, *parameter_names(type(self._estimator))})

    def __len__(self) -> int:
        return len({*self._values, *parameter_names(type(self._estimator))})


_NAMES: dict[type, tuple[str, ...]] = {}  # parameter_names, by class (signatures are fixed)


def parameter_names(cls: type) -> tuple[str, ...]:
    """The parameters of ``cls.__init__`` (all keyword), in the order of its signature."""
    names = _NAMES.get(cls)
    if names is None:
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]
        names = _NAMES[cls] = tuple(
            name
            for name, p in signature.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )
    return names


def validate_parameters(
    constraints: Mapping[str, Constraint], values: Mapping[str, Any], owner: str
) -> Parameters:
    """Check each of ``values`` against its constraint, in their order: the checked values.

    The first value refused raises (its constraint's error); a value without a constraint
    is a programming error (every estimator declares all of its parameters).
    """
    checked = {}
    for name, value in values.items():
        if name not in constraints:
            raise TypeError(f"internal error: {owner} declares no constraint for `{name}`.")
        checked[name] = constraints[name].check(name, value, owner)
    return Parameters(checked)
