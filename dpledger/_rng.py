"""Random number generators for releases: never a fixed default seed."""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["resolve_rng"]


def resolve_rng(rng: Any) -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator``; if None, a fresh one.

    The fresh generator is seeded with 128 bits from the operating system's CSPRNG
    (``secrets``), never from a fixed seed. Pass your own generator only for
    reproducible experiments: a seed that is known makes the noise known.
    """
    if rng is None:
        return np.random.default_rng(secrets.randbits(128))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise InvalidArgumentError(f"`rng` as a seed must be non-negative. Found {rng!r}.")
        return np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise InvalidArgumentTypeError(
            "`rng` must be a numpy.random.Generator (e.g. numpy.random.default_rng()), an "
            f"int seed, or None. Found {rng!r} of type {type(rng).__name__}."
        )
    return rng
