"""Random number generators for releases: never a fixed default seed."""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["check_rng", "resolve_rng"]


def resolve_rng(rng: Any) -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator``; if None, a fresh one.

    The fresh generator is seeded with 128 bits from the operating system's CSPRNG
    (``secrets``), never from a fixed seed. Pass your own generator only for
    reproducible experiments: a seed that is known makes the noise known.
    """
    check_rng(rng)
    if rng is None:
        return np.random.default_rng(secrets.randbits(128))
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(int(rng))


def check_rng(rng: Any) -> None:
    """Refuse an ``rng`` that is not None, a non-negative int seed or a Generator (unused)."""
    if rng is None or isinstance(rng, np.random.Generator):
        return
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise InvalidArgumentError(f"`rng` as a seed must be non-negative. Found {rng!r}.")
        return
    raise InvalidArgumentTypeError(
        "`rng` must be a numpy.random.Generator (e.g. numpy.random.default_rng()), an "
        f"int seed, or None. Found {rng!r} of type {type(rng).__name__}."
    )
