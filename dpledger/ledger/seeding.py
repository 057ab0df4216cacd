"""The noise stream a schedule draws from: fresh, or derived from a seed and the ledger.

A seeded stream (for reproducible experiments) must never repeat another release's
noise: identical noise in two releases publishes the difference of their statistics
without noise and voids every composition theorem. See :func:`noise_generator` for what
enters the stream.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger.errors import RepeatedNoiseWarning

if TYPE_CHECKING:
    from dpledger.ledger.core import Ledger

__all__ = ["noise_generator"]

_USED_SEEDS: set[str] = set()
_USED_LOCK = threading.Lock()


def _digest(text: str) -> int:
    return int(hashlib.sha256(str(text).encode()).hexdigest()[:15], 16)


def noise_generator(rng: Any, ledger: Ledger | None, salt: int = 0) -> np.random.Generator:
    """The generator a schedule draws its noise from (derived once its releases are checked).

    Without ``rng``: a fresh OS-seeded generator. With a seed or a Generator (for
    reproducible experiments), the stream is derived from it *and* from the shared
    ledger's position (its head: receipt count and hash), so two fits drawing on one
    ledger never draw the same noise — not even clones whose Generator ``sklearn.clone``
    deep-copied with its state, as in cross-validation; on a file or database ledger also
    its location and a number its store hands out once each (two processes at one head,
    one seed: different noise; a fresh file hands out 0, 1, …: a rerun repeats), and a
    partition's part (sibling parts' ledgers start at one head).
    Identical noise in two releases would publish the difference of their statistics
    without noise and void every composition theorem. A Generator passed in is advanced
    (a draw of its seed), so successive fits with one Generator differ too. On a per-fit
    ledger (``ledger`` None) there is no shared position: a repeat of the same seed
    material in this process is warned about (:class:`~dpledger.errors.RepeatedNoiseWarning`).
    """
    if rng is None:
        return resolve_rng(None)
    if isinstance(rng, np.random.Generator):
        material = [int(v) for v in rng.integers(0, 2**63 - 1, size=4)]
    else:
        material = [int(resolve_rng(rng).integers(0, 2**63 - 1))]
    if ledger is not None:
        count, digest = ledger.head
        material += [int(count), _digest(digest)]
        if salt:  # another reservation of this ledger object opened at the same position
            material.append(int(salt))
        part = ledger.__dict__.get("_partition")
        if part is not None:  # sibling parts of a partition start at one head
            material.append(_digest(repr(part[1:])))
        if ledger._store is not None:
            # another process (another analyst, on a shared ledger) may open at this very
            # head with the same seed: the store hands each opening its own number; and
            # two files (two parts' ledgers) may both be fresh
            material += [0x6E6F6E6365, int(ledger._store.nonce()), _digest(ledger._store.where)]
    else:
        key = repr(material)
        with _USED_LOCK:
            repeated = key in _USED_SEEDS
            _USED_SEEDS.add(key)
        if repeated:
            warnings.warn(
                "this fit's seed repeats noise an earlier fit in this process already drew "
                "(the same int seed, or a copied Generator, on a per-fit ledger): releases "
                "with identical noise publish the difference of their statistics. Use a new "
                "seed per fit, rng=None, or a shared ledger (its position enters the seed).",
                RepeatedNoiseWarning,
                stacklevel=5,
            )
    return np.random.default_rng(np.random.SeedSequence(material))


__dir__ = namespace(__all__)
