"""Shared machinery of the accountants: summaries, dispatch and the stateful wrapper.

Each notion of privacy (basic composition, zCDP, RDP, ...) is a *currency*. An
accountant for a notion has

* a :class:`Summary` — an immutable value in that currency (a (ε, δ) pair, a ρ, a
  Rényi curve, ...) that composes with ``+`` and repeats with :meth:`Summary.scaled`,
  and converts to (ε, δ)-DP with :meth:`Summary.epsilon` / :meth:`Summary.delta`;
* a dispatch table from event types to the summary of one such release.

``Repeated`` and ``Composed`` events are expanded generically (:func:`events.flatten`),
so each notion only states what a single release costs. The stateful
:class:`Accountant` composes all-or-nothing: the summary of the new event is computed
completely before the state changes, so a failed ``compose`` leaves it untouched.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from dpledger._validation import check_int_at_least, check_nonnegative, check_probability
from dpledger.accountant.events import Event, _check_event, flatten
from dpledger.errors import NotApplicableError

__all__ = ["Accountant", "Summary"]

S = TypeVar("S", bound="Summary")


class Summary(abc.ABC):
    """An immutable privacy guarantee in one accountant's currency."""

    @abc.abstractmethod
    def __add__(self: S, other: S) -> S:
        """Compose two guarantees."""

    @abc.abstractmethod
    def scaled(self: S, count: int) -> S:
        """The guarantee of ``count`` adaptive repetitions."""

    @abc.abstractmethod
    def epsilon(self, delta: float) -> float:
        """Smallest ε this method certifies at ``delta`` (``inf`` if none)."""

    @abc.abstractmethod
    def delta(self, epsilon: float) -> float:
        """Smallest δ this method certifies at ``epsilon`` (at most 1)."""


class Accountant(abc.ABC, Generic[S]):
    """A stateful accountant for one privacy notion.

    Subclasses set :attr:`method` (its name in ``dpledger.accountant.epsilon``),
    :attr:`handlers` (event type → summary of one such release) and :meth:`zero`.
    Dispatch is on the exact type of a release. Accountants whose summary keeps
    something per release instead (RDP: its Rényi curve; PLD: its pairs) map each type
    to that, and override :meth:`summarize`.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant import ZCDPAccountant
        >>> acc = ZCDPAccountant().compose(ev.Gaussian(sigma=2.0), count=10)
        >>> round(acc.summary.rho, 6)
        1.25
    """

    method: ClassVar[str]
    handlers: ClassVar[dict[type[Event], Callable[[Any], Any]]]

    def __init__(self) -> None:
        self._summary: S = self.zero()
        self._events: list[tuple[Event, int]] = []

    @classmethod
    @abc.abstractmethod
    def zero(cls) -> S:
        """The guarantee of releasing nothing."""

    @classmethod
    def summarize(cls, event: Event) -> S:
        """The guarantee of ``event`` in this accountant's currency.

        Raises:
            NotApplicableError: This notion cannot bound some release in ``event``.
        """
        total = cls.zero()
        for atom, count in flatten(event).items():
            handler = cls.handlers.get(type(atom))
            if handler is None:
                raise NotApplicableError(
                    f"method {cls.method!r} cannot account for {type(atom).__name__} events "
                    f"(found {atom!r}). {cls._hint()}"
                )
            summary: S = handler(atom)
            total = total + summary.scaled(count)
        return total

    @classmethod
    def _hint(cls) -> str:
        return "Use method='auto' to pick a method that applies."

    @property
    def summary(self) -> S:
        """The guarantee of everything composed so far."""
        return self._summary

    @property
    def events(self) -> list[tuple[Event, int]]:
        """The events composed so far, with their counts (a copy)."""
        return list(self._events)

    def compose(self: Any, event: Event, count: int = 1) -> Any:
        """Add ``count`` adaptive repetitions of ``event``; all-or-nothing.

        Returns:
            ``self``, so calls can be chained.
        """
        _check_event("event", event)
        count = check_int_at_least("count", count, 1)
        new = self.summarize(event).scaled(count)
        self._summary = self._summary + new
        self._events.append((event, count))
        return self

    def epsilon(self, delta: float) -> float:
        """Smallest ε this accountant certifies at ``delta`` for everything composed."""
        return self._summary.epsilon(check_probability("delta", delta))

    def delta(self, epsilon: float) -> float:
        """Smallest δ this accountant certifies at ``epsilon`` for everything composed."""
        return self._summary.delta(check_nonnegative("epsilon", epsilon, allow_inf=True))
