"""The K-norm mechanism for ℓ1, ℓ2 and ℓ∞ balls (Hardt & Talwar 2010).

Noise density f(z) ∝ exp(−ε‖z‖_K / Δ), where Δ bounds the K-norm sensitivity; the
release is ε-DP (Hardt & Talwar 2010, Thm 4.3). Exact sampler (Hardt & Talwar 2010,
Remark 4.2): radius r ~ Gamma(d + 1, scale Δ/ε), then a point uniform in r·K:

* ℓ2 ball: a uniform direction (normalised standard Gaussian) times U^{1/d};
* ℓ1 ball: signs uniform, magnitudes the first d of d + 1 normalised Exp(1) spacings;
* ℓ∞ ball: uniform on the cube [−1, 1]^d.

These samplers use floating-point arithmetic (there is no exact discrete counterpart
here); the release is a float vector and carries Mironov's 2012 caveat.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._validation import check_choice, check_int_at_least, check_positive
from dpledger.accountant import events as ev
from dpledger.mechanisms.base import Mechanism, as_vector, warn_floating_point

__all__ = ["KNorm", "uniform_in_ball"]

NORMS = ("l1", "l2", "linf")


def uniform_in_ball(norm: str, dimension: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` points uniform in the unit ball of ``norm`` in ``dimension`` dimensions."""
    d = dimension
    if norm == "l2":
        direction = rng.standard_normal((size, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        points: np.ndarray = direction * rng.random((size, 1)) ** (1.0 / d)
        return points
    if norm == "l1":
        spacings = rng.exponential(1.0, (size, d + 1))
        magnitudes = spacings[:, :d] / spacings.sum(axis=1, keepdims=True)
        signed: np.ndarray = magnitudes * rng.choice(np.array([-1.0, 1.0]), (size, d))
        return signed
    cube: np.ndarray = rng.uniform(-1.0, 1.0, (size, d))
    return cube


class KNorm(Mechanism):
    """The K-norm mechanism for the ℓ1, ℓ2 or ℓ∞ ball: ε-DP (Hardt & Talwar 2010).

    Args:
        epsilon: ε > 0.
        sensitivity: Sensitivity Δ of the value in the chosen norm.
        norm: "l1", "l2" or "linf".
        dimension: Number of coordinates d.
    """

    def __init__(
        self, epsilon: float, sensitivity: float = 1.0, *, norm: str = "l2", dimension: int = 1
    ) -> None:
        self.epsilon = check_positive("epsilon", epsilon)
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.norm = check_choice("norm", norm, NORMS)
        self.dimension = check_int_at_least("dimension", dimension, 1)
        warn_floating_point("KNorm", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "norm": self.norm,
            "dimension": self.dimension,
        }

    @property
    def event(self) -> ev.PureDP:
        """ε-DP (Hardt & Talwar 2010, Thm 4.3)."""
        return ev.PureDP(self.epsilon)

    def sample_noise(self, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``size`` independent noise vectors (rows), for tests and diagnostics."""
        generator = resolve_rng(rng)
        radius = generator.gamma(self.dimension + 1, self.sensitivity / self.epsilon, (size, 1))
        noise: np.ndarray = radius * uniform_in_ball(self.norm, self.dimension, size, generator)
        return noise

    def validate(self, value: Any) -> None:
        """``value`` must be finite with ``dimension`` entries."""
        as_vector(value, self.dimension)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> Any:
        """``value`` plus K-norm noise."""
        vector = as_vector(value, self.dimension)
        noisy = vector + self.sample_noise(1, rng)[0]
        return float(noisy[0]) if np.ndim(value) == 0 else noisy.reshape(np.shape(value))


__dir__ = namespace(__all__)
