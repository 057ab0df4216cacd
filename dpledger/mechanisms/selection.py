"""Selection mechanisms with exact samplers.

Randomized response, the exponential mechanism, permute-and-flip and report-noisy-max.

All sampling here is exact: scores and ε are floats, hence rationals, and every random
decision is an exact Bernoulli(exp(−γ)) with rational γ (Canonne, Kamath & Steinke 2020,
Algorithm 1), so no floating-point rounding shapes the output distribution.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._validation import check_int_at_least, check_nonnegative, check_positive
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms._exact import _uniform_below, bernoulli_exp
from dpledger.mechanisms.base import Mechanism

__all__ = ["Exponential", "PermuteAndFlip", "RandomizedResponse", "ReportNoisyMax"]


def _scores(scores: Any) -> list[Fraction]:
    try:
        raw = np.asarray(scores)
        if raw.dtype.kind == "O" and all(isinstance(x, numbers.Real) for x in raw.ravel()):
            raw = np.array([float(x) for x in raw.ravel()])  # e.g. integers beyond int64
    except (TypeError, ValueError, OverflowError):  # ragged, or beyond the float range
        raw = None
    if raw is None or raw.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"`value` must be a flat sequence of real scores. Found {scores!r}."
        )
    array = raw.astype(float).reshape(-1)
    if array.size == 0:
        raise InvalidArgumentError("`scores` must contain at least one score. Found [].")
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError(f"`scores` must be finite. Found {scores!r}.")
    return [Fraction(float(s)) for s in array]


class RandomizedResponse(Mechanism):
    """k-ary randomized response: the truth w.p. e^ε/(e^ε + k − 1), else uniform other.

    Exact sampler: draw a uniform category; return it if it is the truth, otherwise
    accept it with probability e^{−ε} (exact) and retry on rejection. Each untruthful
    category then has probability e^{−ε} times that of the truth, as required.

    Args:
        epsilon: ε ≥ 0.
        categories: Number k ≥ 2 of categories; inputs are 0, ..., k − 1.
    """

    def __init__(self, epsilon: float, categories: int = 2) -> None:
        self.epsilon = check_nonnegative("epsilon", epsilon)
        self.categories = check_int_at_least("categories", categories, 2)

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "categories": self.categories}

    @property
    def event(self) -> ev.RandomizedResponse:
        """The randomized-response event."""
        return ev.RandomizedResponse(self.epsilon, self.categories)

    def validate(self, value: Any) -> None:
        """``value`` must be a category index 0, ..., k − 1."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise InvalidArgumentError(
                f"`value` must be a category index 0..{self.categories - 1}. Found {value!r}."
            )
        if not 0 <= int(value) < self.categories:
            raise InvalidArgumentError(
                f"`value` must lie in 0..{self.categories - 1}. Found {value!r}."
            )

    def release(self, value: Any, rng: np.random.Generator | None = None) -> int:
        """The randomized response to the true category ``value``."""
        self.validate(value)
        generator = resolve_rng(rng)
        gamma = Fraction(self.epsilon)
        while True:
            candidate = _uniform_below(self.categories, generator)
            if candidate == int(value) or bernoulli_exp(gamma, generator):
                return candidate


class _ScoreSelection(Mechanism):
    """Shared constructor of the ε-DP selection mechanisms over scored candidates."""

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, monotonic: bool = False):
        self.epsilon = check_positive("epsilon", epsilon)
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.monotonic = bool(monotonic)

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity}

    def _factor(self) -> Fraction:
        """ε/(2Δ), or ε/Δ for monotonic utilities, as an exact rational."""
        divisor = 1 if self.monotonic else 2
        return Fraction(self.epsilon) / (divisor * Fraction(self.sensitivity))

    @property
    def event(self) -> ev.PureDP:
        """ε-DP."""
        return ev.PureDP(self.epsilon)

    def validate(self, value: Any) -> None:
        """``value`` must be a non-empty sequence of finite scores."""
        _scores(value)


class Exponential(_ScoreSelection):
    """The exponential mechanism: P[i] ∝ exp(ε·uᵢ/(2Δ)) (McSherry & Talwar 2007).

    ε-DP for utilities with sensitivity Δ; with ``monotonic=True`` (utilities move in
    the same direction between neighbours, e.g. counts) P[i] ∝ exp(ε·uᵢ/Δ) is ε-DP.
    Equivalent to report-noisy-max with Gumbel noise.

    Exact sampler: pick i uniformly and accept with probability exp(−ε(u_max − uᵢ)/(2Δ));
    the best candidate is always accepted, so at most k rounds are expected.
    """

    def release(self, value: Any, rng: np.random.Generator | None = None) -> int:
        """The index selected for the utilities ``value`` (a sequence of scores)."""
        scores = _scores(value)
        generator = resolve_rng(rng)
        top, factor = max(scores), self._factor()
        while True:
            i = _uniform_below(len(scores), generator)
            if bernoulli_exp(factor * (top - scores[i]), generator):
                return i


class PermuteAndFlip(_ScoreSelection):
    """Permute-and-flip (McKenna & Sheldon 2020): never worse than the exponential mechanism.

    Visit candidates in uniformly random order; accept candidate r with probability
    exp(ε(u_r − u*)/(2Δ)) (exactly); ε-DP (McKenna & Sheldon 2020, Thm 1).
    Equivalent to report-noisy-max with exponential noise (Ding et al. 2021).
    """

    def release(self, value: Any, rng: np.random.Generator | None = None) -> int:
        """The index selected for the utilities ``value``."""
        scores = _scores(value)
        generator = resolve_rng(rng)
        factor = self._factor()
        top = max(scores)
        while True:
            for i in generator.permutation(len(scores)):
                if bernoulli_exp(factor * (top - scores[int(i)]), generator):
                    return int(i)


class ReportNoisyMax(Mechanism):
    """Report-noisy-max: the index of the largest noisy score (only the index is released).

    ``noise="gumbel"`` is exactly the exponential mechanism and ``noise="exponential"``
    exactly permute-and-flip (Ding, Ding, Kifer et al. 2021), so both are sampled by those
    exact samplers; both are ε-DP.
    """

    def __init__(
        self,
        epsilon: float,
        sensitivity: float = 1.0,
        *,
        noise: str = "exponential",
        monotonic: bool = False,
    ) -> None:
        if noise not in ("exponential", "gumbel"):
            raise InvalidArgumentError(
                f"`noise` must be 'exponential' or 'gumbel'. Found {noise!r}."
            )
        self.noise = noise
        inner: Mechanism
        if noise == "gumbel":
            inner = Exponential(epsilon, sensitivity, monotonic=monotonic)
        else:
            inner = PermuteAndFlip(epsilon, sensitivity, monotonic=monotonic)
        self._inner = inner
        self.epsilon = float(epsilon)

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "noise": self.noise}

    @property
    def event(self) -> ev.Event:
        """ε-DP."""
        return self._inner.event

    def validate(self, value: Any) -> None:
        """``value`` must be a non-empty sequence of finite scores."""
        _scores(value)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> int:
        """The index of the noisy maximum of the scores ``value``."""
        result: int = self._inner.release(value, rng)
        return result


__dir__ = namespace(__all__)
