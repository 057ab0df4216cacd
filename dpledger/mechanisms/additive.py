"""Additive-noise mechanisms: Laplace, Gaussian and their exact discrete counterparts.

**Floating-point safety (the default).** Textbook floating-point Laplace or Gaussian
noise leaks the input through the low-order bits of the output (Mironov 2012). By
default, :class:`Laplace` and :class:`Gaussian` therefore release on a grid: the value
is mapped to the grid γ·ℤ (γ a power of two, so the mapping is exact), exact discrete
Laplace or discrete Gaussian noise in grid units is added with the integer-arithmetic
samplers of Canonne, Kamath & Steinke 2020, and the result is scaled back by γ (exact).
No floating-point rounding touches the noise, so the privacy analysis holds exactly.

Mapping to the grid (⌊x/γ⌋ coordinate-wise) can enlarge the sensitivity a little: a
coordinate difference a (in grid units) becomes at most ⌈a⌉. So the grid sensitivity
is ⌈Δ/γ⌉ in one dimension, ⌈Δ₁/γ⌉ + d − 1 in L1 and Δ₂/γ + √d in L2 for d
coordinates. The mechanism's ``event`` is the discrete event with that sensitivity —
what is actually released — so the ledger charges the true cost; with the default
γ ≈ 2⁻²⁰ × the noise scale the difference is negligible.

``safe=False`` gives the textbook float sampler (and a :class:`FloatingPointWarning`),
charged as the continuous event.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._validation import check_int_at_least, check_positive
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError, UnboundedLossError
from dpledger.mechanisms._exact import discrete_gaussian, discrete_laplace
from dpledger.mechanisms.base import Mechanism, as_vector, warn_floating_point
from dpledger.mechanisms.exact_value import ExactValue

__all__ = ["DiscreteGaussian", "DiscreteLaplace", "Gaussian", "Laplace", "default_granularity"]

_INT64_SAFE = 2.0**62  # grid values and noise below this sum exactly in int64


def default_granularity(noise_scale: float) -> float:
    """The default grid step: the largest power of two ≤ noise_scale · 2⁻²⁰."""
    noise_scale = check_positive("noise_scale", noise_scale)
    return math.ldexp(1.0, math.floor(math.log2(noise_scale)) - 20)


_MIN_NOISE = 2.0**-1000
"""The smallest noise scale with a representable default grid (scale · 2⁻²⁰, normal)."""

_MAX_NOISE = 2.0**1000
"""The largest noise scale (≈ 1.1e301): draws and released values stay in the float range."""


def _check_noise_scale(name: str, value: Any) -> float:
    """A positive noise scale of at most ``_MAX_NOISE`` (a named error otherwise)."""
    scale = check_positive(name, value)
    if scale > _MAX_NOISE:
        raise InvalidArgumentError(
            f"`{name}` must be at most 2**1000 ≈ 1.1e301, so that its draws stay in the float "
            f"range (rescale the data instead). Found {value!r}."
        )
    return scale


def _check_granularity(granularity: Any, noise_scale: float, name: str = "scale") -> float:
    if noise_scale < _MIN_NOISE:
        raise InvalidArgumentError(
            f"`{name}` must be at least 2**-1000 ≈ 9.3e-302 for the exact grid sampler "
            f"(rescale the data instead). Found {noise_scale!r}."
        )
    if granularity is None:
        return default_granularity(noise_scale)
    value = check_positive("granularity", granularity)
    mantissa, _ = math.frexp(value)
    if mantissa != 0.5:
        raise InvalidArgumentError(
            f"`granularity` must be a power of two (so that scaling is exact). Found {value!r}."
        )
    return value


def _grid_sensitivity(sensitivity: float, granularity: float, dimension: int, norm: str) -> float:
    units = Fraction(sensitivity) / Fraction(granularity)
    ceil_units = -((-units.numerator) // units.denominator)
    if dimension == 1:
        return float(ceil_units)
    if norm == "l1":
        return float(ceil_units + dimension - 1)
    return round_up(float(units) + math.sqrt(dimension))


def _integers(values: list[int]) -> np.ndarray:
    """Exact integer noise as an array: int64 when every |v| < 2⁶², else Python ints.

    Never float: ``np.array`` of Python ints turns the whole array into float64 as soon
    as one value reaches 2⁶³, and rounded noise leaks the input (Mironov 2012).
    """
    if all(-_INT64_SAFE < v < _INT64_SAFE for v in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)


def _add_exact(vector: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``vector + noise`` for integer arrays, exactly (no int64 wrap-around, no float)."""
    if (
        noise.dtype != object
        and vector.dtype != object
        and np.all(np.abs(vector.astype(float)) < _INT64_SAFE)
    ):
        return np.asarray(vector.astype(np.int64) + noise.astype(np.int64))
    return np.array(
        [int(a) + int(b) for a, b in zip(vector.reshape(-1), noise, strict=True)], dtype=object
    )


def _release_on_grid(
    value: np.ndarray | ExactValue, granularity: float, noise: np.ndarray
) -> np.ndarray:
    """⌊value/γ⌋ + noise summed *exactly* in integers, then scaled back by γ.

    Beyond 2⁵³ grid steps the exact noisy integer is rounded to the nearest float: a fixed
    function of the exactly computed private release (post-processing), so no rounding
    touches the noise before it is added and large statistics (a sum of 10⁵ values near
    10⁶ at noise 1) need no coarser grid. Only a release beyond the float range is refused.
    """
    if noise.dtype.kind not in "iuO":  # float noise would be rounded before the sum
        raise InvalidArgumentError("internal error: grid noise must be exact integers.")
    if isinstance(value, ExactValue):  # the exact statistic, floored exactly
        grid: np.ndarray = value.floor_steps(granularity).reshape(-1)
        if grid.dtype == object:
            return _release_steps(grid, granularity, noise)
    else:
        grid = np.floor(value / granularity)
    if not np.all(np.isfinite(grid)):
        raise InvalidArgumentError(
            "`value` is beyond the float range in steps of the release grid; pass a larger "
            "power-of-two `granularity`."
        )
    if (
        noise.dtype != object
        and np.all(np.abs(grid) < _INT64_SAFE)
        and np.all(np.abs(noise.astype(float)) < _INT64_SAFE)
    ):
        exact = grid.astype(np.int64) + noise.astype(np.int64)  # |each| < 2⁶²: no overflow
        result: np.ndarray = exact.astype(float) * granularity
        if not np.all(np.isfinite(result)):
            raise InvalidArgumentError(
                "`value` plus noise is beyond the float range; rescale the statistic."
            )
        return result
    return _release_steps(grid, granularity, noise)


def _release_steps(grid: np.ndarray, granularity: float, noise: np.ndarray) -> np.ndarray:
    """(grid + noise)·γ for integer grid steps of any size: exact sum, one rounding."""
    try:
        steps = [float(int(g) + int(z)) for g, z in zip(grid, noise, strict=True)]
    except OverflowError:
        steps = [math.inf]
    result = np.array(steps, dtype=float) * granularity
    if not np.all(np.isfinite(result)):
        raise InvalidArgumentError(
            "`value` plus noise is beyond the float range; rescale the statistic."
        )
    return result


def _shape_like(result: np.ndarray, value: Any) -> Any:
    if np.ndim(value) == 0:
        return float(result[0]) if result.dtype.kind == "f" else int(result[0])
    return result.reshape(np.shape(value))


class _GridMechanism(Mechanism):
    """Shared logic of Laplace and Gaussian: a noise scale, safe grid or textbook float."""

    _noise_name: str  # "scale" or "sigma"
    _norm: str  # "l1" or "l2"
    #: the event of float noise, and of the same noise on the grid
    _events: ClassVar[tuple[type[Any], type[Any]]]

    def __init__(
        self,
        noise: float,
        sensitivity: float,
        *,
        dimension: int,
        safe: bool,
        granularity: float | None,
    ) -> None:
        self._noise = _check_noise_scale(self._noise_name, noise)
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.dimension = check_int_at_least("dimension", dimension, 1)
        self.safe = bool(safe)
        self.granularity = _check_granularity(granularity, self._noise, self._noise_name)
        units = Fraction(self.sensitivity) / Fraction(self.granularity)
        if self.safe and units > Fraction(sys.float_info.max) / 2:
            raise UnboundedLossError(
                f"`sensitivity` = {self.sensitivity!r} is beyond the float range in steps of "
                f"the release grid (granularity {self.granularity!r}, from "
                f"`{self._noise_name}` = {self._noise!r}): noise this small for this "
                "sensitivity cannot be released on the grid (and would have no useful "
                "privacy guarantee). Use more noise or a smaller sensitivity."
            )
        _ = self.event  # the event's own checks (e.g. an overflowing ratio), at construction
        if not self.safe:
            warn_floating_point(type(self).__name__)

    def _params(self) -> dict[str, Any]:
        return {
            self._noise_name: self._noise,
            "sensitivity": self.sensitivity,
            "dimension": self.dimension,
        }

    def _grid(self) -> tuple[float, float]:
        """(noise in grid units, sensitivity in grid units)."""
        grid_sensitivity = _grid_sensitivity(
            self.sensitivity, self.granularity, self.dimension, self._norm
        )
        return self._noise / self.granularity, grid_sensitivity

    @property
    def event(self) -> ev.Event:
        """The discrete event on the grid (safe), or the textbook one."""
        textbook, on_grid = self._events
        if not self.safe:
            event: ev.Event = textbook(self._noise, self.sensitivity)
            return event
        noise, sensitivity = self._grid()
        event = on_grid(noise, sensitivity, dimension=self.dimension)
        return event

    def _draw_grid(self, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _draw_float(self, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def validate(self, value: Any) -> None:
        """``value`` must be finite with ``dimension`` entries (on the grid: in grid steps too).

        Checked before the charge, so a value the grid cannot hold costs nothing.
        """
        vector = as_vector(value, self.dimension)
        if self.safe:
            with np.errstate(over="ignore"):
                steps = np.abs(vector) / self.granularity
            if not np.all(np.isfinite(steps)):
                raise InvalidArgumentError(
                    "`value` is beyond the float range in steps of the release grid; pass a "
                    "larger power-of-two `granularity` or rescale the statistic."
                )

    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        """``value`` plus noise on every coordinate (on the grid unless ``safe=False``).

        An :class:`~dpledger.mechanisms.ExactValue` is floored to the grid exactly (the
        grid sensitivity then holds for the exact statistic, whatever float arithmetic
        would have done to it); a float value is floored as it is.
        """
        vector = as_vector(value, self.dimension)
        generator = resolve_rng(rng)
        if not self.safe:
            return _shape_like(vector + self._draw_float(vector.size, generator), value)
        noise = self._draw_grid(vector.size, generator)
        exact = value if isinstance(value, ExactValue) else vector
        return _shape_like(_release_on_grid(exact, self.granularity, noise), value)


class Laplace(_GridMechanism):
    """The Laplace mechanism: ε = Δ₁/b (Dwork, McSherry, Nissim & Smith 2006).

    Args:
        scale: Noise scale b (absolute).
        sensitivity: L1 sensitivity of the released value.
        dimension: Number of coordinates released together.
        safe: Release exactly on a grid with discrete Laplace noise (default, see the
            module docstring); False for textbook float noise.
        granularity: Grid step (a power of two); default about b · 2⁻²⁰.

    Example:
        >>> import numpy as np
        >>> from dpledger.mechanisms import Laplace
        >>> mech = Laplace(scale=2.0, sensitivity=1.0)
        >>> mech.event.epsilon
        0.5
        >>> noisy = mech.release(10.0, rng=np.random.default_rng(0))
    """

    _noise_name = "scale"
    _norm = "l1"
    _events = (ev.Laplace, ev.DiscreteLaplace)

    def __init__(
        self,
        scale: float,
        sensitivity: float = 1.0,
        *,
        dimension: int = 1,
        safe: bool = True,
        granularity: float | None = None,
    ) -> None:
        super().__init__(
            scale, sensitivity, dimension=dimension, safe=safe, granularity=granularity
        )

    @property
    def scale(self) -> float:
        """The noise scale b."""
        return self._noise

    def _draw_grid(self, size: int, rng: np.random.Generator) -> np.ndarray:
        t = Fraction(self.scale) / Fraction(self.granularity)
        return _integers([discrete_laplace(t, rng) for _ in range(size)])

    def _draw_float(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, self.scale, size)


class Gaussian(_GridMechanism):
    """The Gaussian mechanism: N(0, σ²) noise on each coordinate, L2 sensitivity Δ.

    Its privacy is exactly that of (Δ/σ)-GDP (Balle & Wang 2018, Thm 8) in the textbook
    form; the safe default is the discrete Gaussian on a grid (Canonne, Kamath & Steinke
    2020), accounted at the continuous Gaussian's exact price plus a slack ≤ 2⁻¹⁰⁰
    (:mod:`dpledger.accountant.discrete_gaussian`) — see the module docstring.

    Args:
        sigma: Noise standard deviation σ (absolute).
        sensitivity: L2 sensitivity of the released value.
        dimension: Number of coordinates released together.
        safe: Exact discrete noise on a grid (default); False for textbook float noise.
        granularity: Grid step (a power of two); default about σ · 2⁻²⁰.

    Example:
        >>> from dpledger.mechanisms import Gaussian
        >>> Gaussian(sigma=4.0, dimension=3).event.sigma
        1048576.0
    """

    _noise_name = "sigma"
    _norm = "l2"
    _events = (ev.Gaussian, ev.DiscreteGaussian)

    def __init__(
        self,
        sigma: float,
        sensitivity: float = 1.0,
        *,
        dimension: int = 1,
        safe: bool = True,
        granularity: float | None = None,
    ) -> None:
        super().__init__(
            sigma, sensitivity, dimension=dimension, safe=safe, granularity=granularity
        )

    @property
    def sigma(self) -> float:
        """The noise standard deviation σ."""
        return self._noise

    def _draw_grid(self, size: int, rng: np.random.Generator) -> np.ndarray:
        s = Fraction(self.sigma) / Fraction(self.granularity)
        return _integers([discrete_gaussian(s * s, rng) for _ in range(size)])

    def _draw_float(self, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, self.sigma, size)


class _IntegerMechanism(Mechanism):
    """Shared logic of the discrete Laplace and Gaussian: exact noise on integers."""

    _noise_name: ClassVar[str]  # "scale" or "sigma"
    _event_type: ClassVar[type[Any]]

    def __init__(self, noise: float, sensitivity: float, *, dimension: int) -> None:
        setattr(self, self._noise_name, check_positive(self._noise_name, noise))
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.dimension = check_int_at_least("dimension", dimension, 1)
        _ = self.event  # the event's own checks (e.g. an overflowing ratio), at construction

    def _noise(self) -> float:
        noise: float = getattr(self, self._noise_name)
        return noise

    def _params(self) -> dict[str, Any]:
        return {
            self._noise_name: self._noise(),
            "sensitivity": self.sensitivity,
            "dimension": self.dimension,
        }

    @property
    def event(self) -> ev.Event:
        """The discrete event."""
        event: ev.Event = self._event_type(
            self._noise(), self.sensitivity, dimension=self.dimension
        )
        return event

    def validate(self, value: Any) -> None:
        """``value`` must be integer-valued with ``dimension`` entries."""
        as_vector(value, self.dimension, integer=True)

    def _draw(self, noise: Fraction, rng: np.random.Generator) -> int:
        raise NotImplementedError

    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        """Integer ``value`` plus exact discrete noise on every coordinate."""
        vector = as_vector(value, self.dimension, integer=True)
        generator = resolve_rng(rng)
        noise = Fraction(self._noise())
        drawn = _integers([self._draw(noise, generator) for _ in range(vector.size)])
        return _shape_like(_add_exact(vector, drawn), value)


class DiscreteLaplace(_IntegerMechanism):
    """Discrete Laplace noise on an integer-valued statistic: ε = Δ₁/t (exact sampler).

    Args:
        scale: The scale t of P[z] ∝ exp(−|z|/t); any positive float (used exactly).
        sensitivity: L1 sensitivity of the integer-valued statistic.
        dimension: Number of coordinates.
    """

    scale: float
    _noise_name = "scale"
    _event_type = ev.DiscreteLaplace

    def __init__(self, scale: float, sensitivity: float = 1.0, *, dimension: int = 1) -> None:
        super().__init__(scale, sensitivity, dimension=dimension)

    def _draw(self, noise: Fraction, rng: np.random.Generator) -> int:
        return discrete_laplace(noise, rng)


class DiscreteGaussian(_IntegerMechanism):
    """Discrete Gaussian noise on an integer-valued statistic (exact sampler, CKS 2020).

    Args:
        sigma: The parameter σ of P[z] ∝ exp(−z²/(2σ²)); any positive float (used exactly).
        sensitivity: L2 sensitivity of the integer-valued statistic.
        dimension: Number of coordinates.
    """

    sigma: float
    _noise_name = "sigma"
    _event_type = ev.DiscreteGaussian

    def __init__(self, sigma: float, sensitivity: float = 1.0, *, dimension: int = 1) -> None:
        super().__init__(sigma, sensitivity, dimension=dimension)

    def _draw(self, noise: Fraction, rng: np.random.Generator) -> int:
        return discrete_gaussian(noise * noise, rng)


__dir__ = namespace(__all__)
