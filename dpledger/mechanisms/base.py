"""The mechanism contract: a noise sampler that knows its own privacy event."""

from __future__ import annotations

import abc
import dataclasses
import warnings
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger.accountant.events import Event
from dpledger.errors import FloatingPointWarning, InvalidArgumentError

__all__ = ["FloatingPointWarning", "Mechanism", "as_vector"]


class _FrozenAfterInit(abc.ABCMeta):
    """Metaclass that freezes an instance once its constructor returns."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = super().__call__(*args, **kwargs)
        object.__setattr__(instance, "_frozen", True)
        return instance


class Mechanism(abc.ABC, metaclass=_FrozenAfterInit):
    """A randomized release: ``.event`` says what it costs, ``.release`` draws the noise.

    Mechanisms are constructed from their noise parameter and sensitivity; ``event`` is
    the privacy event of *one* call to ``release`` exactly as implemented (for the safe
    discrete path, the discrete event on the grid actually used).

    Mechanisms are immutable: what a ledger charged (``event``) and what ``release``
    draws can never drift apart (``mech.sensitivity = 100`` raises
    :class:`dataclasses.FrozenInstanceError`; build a new mechanism instead). Every
    mechanism validates its input in ``validate``, which ``Ledger.release`` calls before
    the charge, so a malformed input costs nothing.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise dataclasses.FrozenInstanceError(
                f"cannot assign to {name!r}: mechanisms are immutable (the ledger charges their "
                f"event); construct a new {type(self).__name__} instead."
            )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete {name!r}: mechanisms are immutable.")

    @property
    @abc.abstractmethod
    def event(self) -> Event:
        """The privacy event of one release."""

    @abc.abstractmethod
    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        """Return the noisy release of ``value`` (the noise is drawn here)."""

    @abc.abstractmethod
    def validate(self, value: Any) -> None:
        """Raise if ``value`` is not a valid input (called by ``Ledger.release`` first)."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({fields})"

    def _params(self) -> dict[str, Any]:
        return {}


def as_vector(value: Any, dimension: int, *, integer: bool = False) -> np.ndarray:
    """Validate a release input: a finite scalar or 1-D array with ``dimension`` entries."""
    try:
        array = np.asarray(value, dtype=np.int64 if integer else float)
    except (TypeError, ValueError, OverflowError) as error:
        kind = "integers" if integer else "numbers"
        raise InvalidArgumentError(
            f"`value` must be {kind} (a scalar or a 1-D array). Found a {type(value).__name__}."
        ) from error
    if integer and not np.array_equal(array, np.asarray(value)):
        raise InvalidArgumentError(f"`value` must be integer-valued. Found {value!r}.")
    flat = array.reshape(-1)
    if flat.size != dimension:
        raise InvalidArgumentError(
            f"`value` must have {dimension} entries (the mechanism's `dimension`). "
            f"Found shape {array.shape}."
        )
    if not integer and not np.all(np.isfinite(flat)):
        raise InvalidArgumentError(f"`value` must be finite. Found {value!r}.")
    return flat


def warn_floating_point(name: str, *, no_exact_sampler: bool = False) -> None:
    """Warn that textbook floating-point noise is in use (Mironov 2012).

    Args:
        name: The mechanism's name.
        no_exact_sampler: The mechanism has no exact sampler at all (K-norm, Wishart), as
            opposed to one where ``safe=False`` was asked for.
    """
    if no_exact_sampler:
        message = (
            f"{name} has no exact sampler: it draws textbook floating-point noise, which can "
            "leak the input through its low-order bits (Mironov 2012). Its event assumes exact "
            "arithmetic, like Laplace(safe=False)."
        )
    else:
        message = (
            f"{name} with safe=False draws textbook floating-point noise, which can leak the "
            "input through its low-order bits (Mironov 2012). Use the default safe=True "
            "(exact discrete noise on a grid) unless you know why you need this."
        )
    warnings.warn(message, FloatingPointWarning, stacklevel=3)


__dir__ = namespace(__all__)
