"""Exact statistics for the grid mechanisms: an array known as exact reals, not floats.

A grid mechanism (:class:`~dpledger.mechanisms.Laplace`, :class:`~dpledger.mechanisms.Gaussian`
with ``safe=True``) releases ⌊x/γ⌋ + noise. Its grid sensitivity — ⌈Δ/γ⌉ per coordinate,
Δ₂/γ + √d in L2 — holds for the *exact* statistic x. A float x that was rounded, scaled by
√2 or divided by a noise shape on its way to the mechanism can sit on the other side of
a grid edge from the exact value, and then two neighbouring data sets differ by one grid
step more than charged, in every coordinate where that happens.

:class:`ExactValue` carries each entry as an exact real q·√r / m with integers q, m > 0
and r ∈ {1, 2} — every statistic the estimators release is of this form: an exact
integer sum on a dyadic grid (:mod:`dpledger.algorithms._data`), times rational factors
(a float is a dyadic rational), times √2 in the Frobenius geometry of a symmetric matrix.
:meth:`ExactValue.floor_steps` computes ⌊x/γ⌋ exactly in integer arithmetic (an integer
square root for the √2 entries), so the mechanism floors the exact statistic and the
charged grid sensitivity is the true one. Only ``numpy.asarray(value)`` — validation,
display, the textbook float path — sees a float approximation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError

__all__ = ["ExactValue", "concatenate"]

_INT64_SAFE = 2**62
_ISQRT = np.frompyfunc(math.isqrt, 1, 1)


def _as_fraction(factor: Any) -> Fraction:
    if isinstance(factor, Fraction):
        return factor
    if isinstance(factor, int | np.integer):
        return Fraction(int(factor))
    value = float(factor)
    if not math.isfinite(value):
        raise InvalidArgumentError(f"an exact value's factor must be finite. Found {factor!r}.")
    return Fraction(value)  # a float is a dyadic rational: exact


def _objects(values: Any, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    flat = np.asarray(values).reshape(-1)
    out.reshape(-1)[:] = [int(v) for v in flat]
    return out


class ExactValue:
    """An array of exact reals qᵢ·√rᵢ/mᵢ (integers qᵢ, mᵢ > 0, rᵢ ∈ {1, 2}).

    Build it with :meth:`from_integers` (integers times an exact unit). The arithmetic
    the estimators need is exact: multiplying or dividing by a number (a float is taken
    as the dyadic rational it is), negation, numpy-style indexing, :meth:`ravel`,
    :meth:`reshape`, :meth:`scaled_root2` and :func:`concatenate`. ``numpy.asarray``
    gives the nearest-float approximation (for validation and display only).
    """

    __array_priority__ = 1000  # ``float * ExactValue`` goes to __rmul__, not to numpy

    def __init__(self, numerators: np.ndarray, denominators: np.ndarray, root2: np.ndarray):
        if not (numerators.shape == denominators.shape == root2.shape):
            raise InvalidArgumentError("internal error: exact value parts differ in shape.")
        self._q = numerators
        self._m = denominators
        self._r = root2.astype(bool)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_integers(cls, integers: Any, unit: Any = 1) -> ExactValue:
        """The exact values ``integers × unit``.

        ``unit`` is a rational (int, Fraction or float — a float is the dyadic rational it
        is), or an array of them broadcast against ``integers``.
        """
        array = np.asarray(integers)
        if array.dtype.kind not in "iuO":
            raise InvalidArgumentError(
                f"`integers` must be integers (an exact sum). Found dtype {array.dtype}."
            )
        shape = array.shape
        q = _objects(array, shape)
        if any(not isinstance(v, int) for v in q.reshape(-1)):
            raise InvalidArgumentError("`integers` must hold integers only.")
        if np.ndim(unit) == 0:
            f = _as_fraction(unit)
            if f <= 0:
                raise InvalidArgumentError(f"`unit` must be positive. Found {unit!r}.")
            m = np.empty(shape, dtype=object)
            m.reshape(-1)[:] = [f.denominator] * m.size
            return cls(q * f.numerator, m, np.zeros(shape, dtype=bool))
        units = np.broadcast_to(np.asarray(unit, dtype=object), shape)  # one per entry
        fractions = [_as_fraction(v) for v in units.reshape(-1)]
        if any(f <= 0 for f in fractions):
            raise InvalidArgumentError(f"every `unit` must be positive. Found {unit!r}.")
        numer = _objects([f.numerator for f in fractions], shape)
        denom = _objects([f.denominator for f in fractions], shape)
        return cls(q * numer, denom, np.zeros(shape, dtype=bool))

    # -- the array protocol ------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return tuple(self._q.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._q.ndim

    @property
    def size(self) -> int:
        """The number of entries."""
        return int(self._q.size)

    def __len__(self) -> int:
        return len(self._q)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._approximation()
        return out.copy() if dtype is None else out.astype(dtype)

    def _approximation(self) -> np.ndarray:
        """The floats nearest the entries (within a few ulps): for validation and display."""
        cached: np.ndarray | None = getattr(self, "_float", None)
        if cached is not None:
            return cached
        q, m, r = self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1)
        try:  # numerator and denominator within the float range: two roundings and a division
            with np.errstate(all="raise"):
                flat = q.astype(float) / m.astype(float)
        except (OverflowError, FloatingPointError):
            flat = np.array(
                [
                    float(Fraction(int(a), int(b)))
                    if abs(int(a)) < 2**1000 * int(b)
                    else math.copysign(math.inf, int(a))
                    for a, b in zip(q, m, strict=True)
                ],
                dtype=float,
            )
        result: np.ndarray = np.where(r, flat * math.sqrt(2.0), flat).reshape(self.shape)
        self._float = result
        return result

    def fractions(self) -> np.ndarray:
        """The entries as exact :class:`~fractions.Fraction` (refused for √2 entries)."""
        if np.any(self._r):
            raise InvalidArgumentError("an entry scaled by √2 is irrational: no Fraction.")
        out = np.empty(self.shape, dtype=object)
        out.reshape(-1)[:] = [
            Fraction(int(q), int(m))
            for q, m in zip(self._q.reshape(-1), self._m.reshape(-1), strict=True)
        ]
        return out

    def __repr__(self) -> str:
        return f"ExactValue(≈{np.asarray(self)!r})"

    def __getitem__(self, index: Any) -> ExactValue:
        q, m, r = self._q[index], self._m[index], self._r[index]
        if not isinstance(q, np.ndarray):  # one entry: keep it an array of shape ()
            q, m, r = (np.array(q, dtype=object), np.array(m, dtype=object), np.array(r))
        return ExactValue(q, m, r)

    def ravel(self) -> ExactValue:
        """The entries as a 1-D exact value."""
        return ExactValue(self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1))

    def reshape(self, *shape: Any) -> ExactValue:
        """The entries in a new shape (as ``numpy.reshape``)."""
        q, m, r = self._q.reshape(*shape), self._m.reshape(*shape), self._r.reshape(*shape)
        return ExactValue(q, m, r)

    # -- exact arithmetic --------------------------------------------------------------

    def __mul__(self, factor: Any) -> ExactValue:
        if isinstance(factor, ExactValue | np.ndarray):
            raise InvalidArgumentError(
                "internal error: an exact value is scaled by a number, not by an array."
            )
        f = _as_fraction(factor)
        return ExactValue(self._q * f.numerator, self._m * f.denominator, self._r)

    __rmul__ = __mul__

    def times(self, factors: Any) -> ExactValue:
        """Each entry multiplied by its own rational factor (``factors`` broadcast)."""
        each = np.broadcast_to(np.asarray(factors, dtype=object), self.shape).reshape(-1)
        fractions = [_as_fraction(f) for f in each]
        numer = _objects([f.numerator for f in fractions], self.shape)
        denom = _objects([f.denominator for f in fractions], self.shape)
        return ExactValue(self._q * numer, self._m * denom, self._r)

    def __truediv__(self, factor: Any) -> ExactValue:
        f = _as_fraction(factor)
        if f == 0:
            raise InvalidArgumentError("internal error: an exact value divided by zero.")
        return self * (1 / f)

    def __neg__(self) -> ExactValue:
        return ExactValue(-self._q, self._m, self._r)

    def scaled_root2(self, where: np.ndarray) -> ExactValue:
        """Entries where ``where`` is true multiplied by √2 (exactly: √2·√2 = 2)."""
        mask = np.broadcast_to(np.asarray(where, dtype=bool), self.shape)
        both = mask & self._r
        q = np.where(both, self._q * 2, self._q)
        return ExactValue(q.astype(object), self._m, np.where(mask, ~self._r, self._r))

    # -- the grid ----------------------------------------------------------------------

    def floor_steps(self, granularity: float) -> np.ndarray:
        """⌊xᵢ/γ⌋ for every entry, exactly (int64 when all fit, else Python integers).

        With x = q·√r/m and γ = a/b: ⌊q·b/(m·a)⌋ for r = 1; for r = 2, ⌊√(2N²)/D⌋ with
        N = q·b, D = m·a is ⌊isqrt(2N²)/D⌋ for N ≥ 0 (⌊⌊y⌋/D⌋ = ⌊y/D⌋ for integer D > 0)
        and −⌈⌈√(2N²)⌉/D⌉ for N < 0.
        """
        g = _as_fraction(granularity)
        if g <= 0:
            raise InvalidArgumentError(f"`granularity` must be positive. Found {granularity!r}.")
        q, m, r = self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1)
        numer = q * g.denominator
        denom = m * g.numerator
        steps = np.empty(q.size, dtype=object)
        plain = ~r
        if np.any(plain):
            steps[plain] = numer[plain] // denom[plain]
        if np.any(r):
            n, dd = numer[r], denom[r]
            square = 2 * n * n
            root = _ISQRT(square)
            inexact = (root * root != square).astype(bool)
            ceil_root = root + inexact.astype(object)
            positive = np.array([v >= 0 for v in n], dtype=bool)
            steps[r] = np.where(positive, root // dd, (-ceil_root) // dd)
        if all(-_INT64_SAFE < int(v) < _INT64_SAFE for v in steps):
            return steps.astype(np.int64).reshape(self.shape)
        return steps.reshape(self.shape)


def concatenate(parts: Sequence[ExactValue]) -> ExactValue:
    """The 1-D concatenation of exact values (each raveled)."""
    flat = [p.ravel() for p in parts]
    return ExactValue(
        np.concatenate([p._q for p in flat]).astype(object),
        np.concatenate([p._m for p in flat]).astype(object),
        np.concatenate([p._r for p in flat]).astype(bool),
    )


__dir__ = namespace(__all__)
