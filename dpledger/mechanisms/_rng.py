"""Former home of :mod:`dpledger._rng` (kept while modules move)."""

from dpledger._rng import resolve_rng as resolve_rng
