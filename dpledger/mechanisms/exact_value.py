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


def _as_fraction(factor: Any, name: str) -> Fraction:
    """``factor`` as the exact rational it is, or an error naming the argument ``name``."""
    if isinstance(factor, Fraction):
        return factor
    if isinstance(factor, int | np.integer) and not isinstance(factor, bool | np.bool_):
        return Fraction(int(factor))
    try:
        value = float(factor)
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value) or isinstance(factor, bool | np.bool_ | str):
        raise InvalidArgumentError(
            f"`{name}` must be a finite number (int, float or Fraction). Found {factor!r}."
        )
    return Fraction(value)  # a float is a dyadic rational: exact


def _broadcast(values: Any, shape: tuple[int, ...], name: str, dtype: Any) -> np.ndarray:
    """``values`` broadcast to ``shape``, or an error naming the argument."""
    try:
        return np.broadcast_to(np.asarray(values, dtype=dtype), shape)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"`{name}` must broadcast to the value's shape {shape}. Found shape {np.shape(values)}."
        ) from None


def _objects(values: Any, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    flat = np.asarray(values, dtype=object).reshape(-1)
    out.reshape(-1)[:] = [int(v) for v in flat]
    return out


def _integer_array(values: Any) -> np.ndarray:
    """``values`` as int64 (if it is an int64-safe integer array) or Python ints; else an error."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        if array.dtype.kind == "u" and array.size and int(array.max()) >= 2**62:
            return _objects(array, array.shape)
        return array.astype(np.int64, copy=False)
    if array.dtype != object or any(
        isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer)
        for v in array.reshape(-1)
    ):
        raise InvalidArgumentError(
            f"`integers` must hold integers only (an exact sum). Found dtype {array.dtype}."
        )
    return _objects(array, array.shape)


def _wide(array: np.ndarray) -> np.ndarray:
    """Python integers (exact arithmetic at any size); int64 stays only where no op runs."""
    return array if array.dtype == object else array.astype(object)


def _times_int(array: np.ndarray, factor: int) -> np.ndarray:
    """``array × factor`` exactly: int64 when it cannot overflow, else Python integers."""
    if factor == 1:
        return array
    if array.dtype == np.int64 and abs(factor) < _INT64_SAFE:
        top = int(np.max(np.abs(array))) if array.size else 0
        if top < _INT64_SAFE // abs(factor):
            return array * factor
    return _wide(array) * factor


def _fill(value: int, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` in every entry, as a read-only broadcast (no memory per entry)."""
    small = -_INT64_SAFE < value < _INT64_SAFE
    scalar = np.array(value, dtype=np.int64 if small else object)
    return np.broadcast_to(scalar, shape)


def _power_of_two_exponent(value: int) -> int | None:
    return value.bit_length() - 1 if value > 0 and value & (value - 1) == 0 else None


def _float_or_inf(numerator: int, denominator: int) -> float:
    try:
        return float(Fraction(numerator, denominator))
    except OverflowError:
        return math.copysign(math.inf, 1 if numerator > 0 else -1)


class ExactValue:
    """An array of exact reals qᵢ·√rᵢ/mᵢ (integers qᵢ, mᵢ > 0, rᵢ ∈ {1, 2}).

    Build it with :meth:`from_integers` (integers times an exact unit). The arithmetic
    the estimators need is exact: multiplying or dividing by a number (a float is taken
    as the dyadic rational it is), negation, numpy-style indexing, :meth:`ravel`,
    :meth:`reshape`, :meth:`scaled_root2` and :func:`concatenate`. ``numpy.asarray``
    gives the nearest-float approximation (for validation and display only); numpy
    ufuncs refuse an exact value (they would silently compute in floats).
    """

    __array_priority__ = 1000  # ``float * ExactValue`` goes to __rmul__, not to numpy
    __array_ufunc__ = None

    def __init__(self, numerators: Any, denominators: Any, root2: Any) -> None:
        q = np.asarray(numerators)
        m = np.asarray(denominators)
        self._q = q if q.dtype in (np.int64, object) else q.astype(object)
        self._m = m if m.dtype in (np.int64, object) else m.astype(object)
        self._r = np.asarray(root2, dtype=bool)
        if not (self._q.shape == self._m.shape == self._r.shape):
            raise InvalidArgumentError("internal error: exact value parts differ in shape.")

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_integers(cls, integers: Any, unit: Any = 1) -> ExactValue:
        """The exact values ``integers × unit``.

        ``integers``: an integer array (int64 is kept as it is, without a copy per entry)
        or an object array of Python integers. ``unit`` is a positive rational (int,
        Fraction or float — a float is the dyadic rational it is), or an array of them
        broadcast against ``integers``.
        """
        q = _integer_array(integers)
        shape = q.shape
        if np.ndim(unit) == 0:
            f = _as_fraction(unit, "unit")
            if f <= 0:
                raise InvalidArgumentError(f"`unit` must be positive. Found {unit!r}.")
            q = _times_int(q, f.numerator)
            return cls(q, _fill(f.denominator, shape), np.broadcast_to(False, shape))
        units = _broadcast(unit, shape, "unit", object)  # one per entry
        fractions = [_as_fraction(v, "unit") for v in units.reshape(-1)]
        if any(f <= 0 for f in fractions):
            raise InvalidArgumentError(f"every `unit` must be positive. Found {unit!r}.")
        numer = _objects([f.numerator for f in fractions], shape)
        denom = _objects([f.denominator for f in fractions], shape)
        return cls(_wide(q) * numer, denom, np.zeros(shape, dtype=bool))

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
        """The floats nearest the entries (within a few ulps): for validation and display.

        Beyond the float range: ±inf (which validation refuses with a clear error).
        """
        cached: np.ndarray | None = getattr(self, "_float", None)
        if cached is not None:
            return cached
        q, m, r = self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1)
        try:  # numerator and denominator within the float range: two roundings and a division
            with np.errstate(all="raise"):
                flat = q.astype(float) / m.astype(float)
        except (OverflowError, FloatingPointError):
            flat = np.array(
                [_float_or_inf(int(a), int(b)) for a, b in zip(q, m, strict=True)], dtype=float
            )
        with np.errstate(over="ignore"):
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
        return ExactValue(self._q[index], self._m[index], self._r[index])

    def ravel(self) -> ExactValue:
        """The entries as a 1-D exact value."""
        return ExactValue(self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1))

    def reshape(self, *shape: Any) -> ExactValue:
        """The entries in a new shape (as ``numpy.reshape``)."""
        q, m, r = self._q.reshape(*shape), self._m.reshape(*shape), self._r.reshape(*shape)
        return ExactValue(q, m, r)

    # -- exact arithmetic (in Python integers) -----------------------------------------

    def __mul__(self, factor: Any) -> ExactValue:
        if isinstance(factor, ExactValue | np.ndarray):
            raise InvalidArgumentError(
                "an exact value is scaled by a number, not by an array (see `times`)."
            )
        f = _as_fraction(factor, "factor")
        return ExactValue(
            _times_int(self._q, f.numerator), _times_int(self._m, f.denominator), self._r
        )

    __rmul__ = __mul__

    def times(self, factors: Any) -> ExactValue:
        """Each entry multiplied by its own rational factor (``factors`` broadcast)."""
        each = _broadcast(factors, self.shape, "factors", object).reshape(-1)
        fractions = [_as_fraction(f, "factors") for f in each]
        numer = _objects([f.numerator for f in fractions], self.shape)
        denom = _objects([f.denominator for f in fractions], self.shape)
        return ExactValue(_wide(self._q) * numer, _wide(self._m) * denom, self._r)

    def __truediv__(self, factor: Any) -> ExactValue:
        f = _as_fraction(factor, "factor")
        if f == 0:
            raise InvalidArgumentError("an exact value cannot be divided by zero.")
        return self * (1 / f)

    def __neg__(self) -> ExactValue:
        return ExactValue(-_wide(self._q), self._m, self._r)

    def scaled_root2(self, where: Any) -> ExactValue:
        """Entries where ``where`` is true multiplied by √2 (exactly: √2·√2 = 2)."""
        mask = _broadcast(where, self.shape, "where", bool)
        both = mask & self._r
        q = np.where(both, _wide(self._q) * 2, self._q) if np.any(both) else self._q
        return ExactValue(q, self._m, np.where(mask, ~self._r, self._r))

    # -- the grid ----------------------------------------------------------------------

    def floor_steps(self, granularity: float) -> np.ndarray:
        """⌊xᵢ/γ⌋ for every entry, exactly (int64 when all fit, else Python integers).

        With x = q·√r/m and γ = a/b: ⌊q·b/(m·a)⌋ for r = 1; for r = 2, ⌊√(2N²)/D⌋ with
        N = q·b, D = m·a is ⌊isqrt(2N²)/D⌋ for N ≥ 0 (⌊⌊y⌋/D⌋ = ⌊y/D⌋ for integer D > 0)
        and −⌈⌈√(2N²)⌉/D⌉ for N < 0.

        Fast paths (int64 numerators, one power-of-two denominator, γ a power of two, so
        x/γ = q·2ˢ): an arithmetic shift for r = 1; for r = 2 a float value f of √2·q·2ˢ
        (relative error ≤ 3.01u: q, √2 and the product rounded once each) is accepted when
        ⌊f − 2⁻⁵⁰|f| − 2⁻¹⁰⁰⁰⌋ = ⌊f + 2⁻⁵⁰|f| + 2⁻¹⁰⁰⁰⌋ and |f| < 2⁵⁰ — the interval, even
        after rounding its ends, contains the exact value and lies in one grid cell. Every
        other entry takes the exact integer path.
        """
        g = _as_fraction(granularity, "granularity")
        if g <= 0:
            raise InvalidArgumentError(f"`granularity` must be positive. Found {granularity!r}.")
        q, m, r = self._q.reshape(-1), self._m.reshape(-1), self._r.reshape(-1)
        steps = np.zeros(q.size, dtype=np.int64)
        todo = np.ones(q.size, dtype=bool)
        shift = self._dyadic_shift(m, g) if q.dtype == np.int64 else None
        if shift is not None:
            plain = np.flatnonzero(~r)
            fast = _shifted_floor(q[plain], shift)
            if fast is not None:
                steps[plain], todo[plain] = fast, False
            rooted = np.flatnonzero(r)
            if rooted.size:
                with np.errstate(all="ignore"):
                    f = np.ldexp(q[rooted].astype(float) * math.sqrt(2.0), shift)
                    margin = np.abs(f) * 2.0**-50 + 2.0**-1000
                    low, high = np.floor(f - margin), np.floor(f + margin)
                    ok = (low == high) & (np.abs(f) < 2.0**50)
                steps[rooted[ok]] = low[ok].astype(np.int64)
                todo[rooted[ok]] = False
        rest = np.flatnonzero(todo)
        if rest.size == 0:
            return steps.reshape(self.shape)
        exact = _exact_floor(_wide(q[rest]), _wide(m[rest]), r[rest], g)
        if all(-_INT64_SAFE < int(v) < _INT64_SAFE for v in exact):
            steps[rest] = exact.astype(np.int64)
            return steps.reshape(self.shape)
        out = steps.astype(object)
        out[rest] = exact
        return out.reshape(self.shape)

    @staticmethod
    def _dyadic_shift(m: np.ndarray, g: Fraction) -> int | None:
        """The s with 1/(m·γ) = 2ˢ for every entry, if m is one power of two and γ is one."""
        if m.size == 0 or m.dtype != np.int64:
            return None
        first = int(m[0])
        exponent = _power_of_two_exponent(first)
        top, bottom = _power_of_two_exponent(g.numerator), _power_of_two_exponent(g.denominator)
        if exponent is None or top is None or bottom is None or not np.all(m == first):
            return None
        return bottom - exponent - top


def _shifted_floor(q: np.ndarray, shift: int) -> np.ndarray | None:
    """⌊q·2ˢ⌋ for int64 q (|q| < 2⁶²), or None when a left shift could overflow."""
    if shift <= 0:
        if -shift >= 63:
            return np.where(q < 0, -1, 0).astype(np.int64)
        return np.asarray(np.right_shift(q, -shift))  # arithmetic shift: the floor
    if shift < 62 and (q.size == 0 or int(np.max(np.abs(q))) < 2 ** (62 - shift)):
        return np.asarray(np.left_shift(q, shift))
    return None


def _exact_floor(q: np.ndarray, m: np.ndarray, r: np.ndarray, g: Fraction) -> np.ndarray:
    """⌊q·√r/(m·γ)⌋ in Python integers (object arrays), γ = g."""
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
    return steps


def concatenate(parts: Sequence[ExactValue]) -> ExactValue:
    """The 1-D concatenation of exact values (each raveled)."""
    flat = [p.ravel() for p in parts]
    return ExactValue(
        np.concatenate([_wide(p._q) for p in flat]),
        np.concatenate([_wide(p._m) for p in flat]),
        np.concatenate([p._r for p in flat]).astype(bool),
    )


__dir__ = namespace(__all__)
