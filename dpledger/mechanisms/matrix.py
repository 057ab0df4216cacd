"""Noise for symmetric matrices: symmetric Gaussian ("Analyze Gauss") and Wishart.

* :class:`SymmetricGaussian` — i.i.d. noise on the upper triangle (diagonal included),
  mirrored (Dwork, Talwar, Thakurta & Zhang 2014, "Analyze Gauss"). The privacy is that of
  the Gaussian mechanism on the d(d+1)/2 released entries, so ``sensitivity`` is the L2
  norm of the change of those entries (for M = Σ xxᵀ with ‖x‖ ≤ 1: 1 under add/remove,
  √2 under replace-one, counting each off-diagonal entry once). It is released through
  :class:`~dpledger.mechanisms.Gaussian`, safe by default.
* :class:`Wishart` — B + W with W ~ Wishart(c·I, d + 1) (Imtiaz & Sarwate 2016), kept to
  reproduce the private IRLS paper (Park & Welling). Its density-ratio argument ignores
  the support: B + W lies in {M ⪰ B}, which differs between neighbours. With d + 1
  degrees of freedom the density is ∝ e^{−tr(W)/(2c)} on the cone (the det exponent
  (d + 1 − d − 1)/2 is 0), so for a rank-one change B′ = B + uuᵀ, ‖u‖² ≤ Δ_tr and
  c = Δ_tr/(2ε): the support of B′'s output lies inside B's; there the density ratio is
  the *constant* e^{‖u‖²/(2c)} ≤ e^ε; and B's output falls outside B′'s support with
  probability 1 − P[W ⪰ uuᵀ] = 1 − e^{−‖u‖²/(2c)} ≤ 1 − e^{−ε} (shift W by uuᵀ). So
  for every set S both P_B(S) − P_B′(S) and P_B′(S) − P_B(S) are at most 1 − e^{−ε}: the
  release is (0, 1 − e^{−ε})-DP, and for ‖u‖² = Δ_tr its privacy profile is exactly
  δ(ε′) = 1 − e^{−ε} at every ε′ ≥ 0 (the outside mass has infinite privacy loss).
  Replace-one (B′ = B − vvᵀ + uuᵀ) gives the same bound: the outside mass is at most
  1 − e^{−‖u‖²/(2c)} and the constant loss on the common support (‖v‖² − ‖u‖²)/(2c),
  which together stay below 1 − e^{−ε}. Its ``event`` is ApproxDP(0, 1 − e^{−ε}): never
  ε-DP for any ε, and no better than that δ at any ε.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._rng import resolve_rng
from dpledger._validation import check_int_at_least, check_positive
from dpledger.accountant import events as ev
from dpledger.accountant.lower_bounds import wishart_delta
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms.additive import _MAX_NOISE, Gaussian
from dpledger.mechanisms.base import Mechanism, warn_floating_point

__all__ = ["SymmetricGaussian", "Wishart"]


def _square(value: Any, dimension: int) -> np.ndarray:
    matrix = np.asarray(value, dtype=float)
    if matrix.shape != (dimension, dimension):
        raise InvalidArgumentError(
            f"`value` must be a {dimension}x{dimension} matrix. Found shape {matrix.shape}."
        )
    if not np.all(np.isfinite(matrix)):
        raise InvalidArgumentError("`value` must be finite.")
    if not np.allclose(matrix, matrix.T, rtol=0, atol=0):
        raise InvalidArgumentError("`value` must be symmetric.")
    return matrix


class SymmetricGaussian(Mechanism):
    """Symmetric Gaussian noise on a d×d symmetric matrix ("Analyze Gauss", DTTZ 2014).

    Args:
        sigma: Noise standard deviation of each upper-triangle entry.
        sensitivity: L2 norm of the change of the upper-triangle entries.
        dimension: d.
        safe: Exact discrete noise on a grid (default), as for ``Gaussian``.
    """

    def __init__(
        self, sigma: float, sensitivity: float = 1.0, *, dimension: int, safe: bool = True
    ) -> None:
        self.dimension = check_int_at_least("dimension", dimension, 1)
        entries = self.dimension * (self.dimension + 1) // 2
        self._entries = Gaussian(sigma, sensitivity, dimension=entries, safe=safe)
        self.sigma, self.sensitivity = self._entries.sigma, self._entries.sensitivity

    def _params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sensitivity": self.sensitivity, "dimension": self.dimension}

    @property
    def event(self) -> ev.Event:
        """The Gaussian event of the upper-triangle release."""
        return self._entries.event

    def validate(self, value: Any) -> None:
        """``value`` must be a finite symmetric d×d matrix."""
        _square(value, self.dimension)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """The symmetric matrix ``value`` plus symmetric noise."""
        matrix = _square(value, self.dimension)
        rows, cols = np.triu_indices(self.dimension)
        noisy_upper = np.asarray(self._entries.release(matrix[rows, cols], rng))
        out = np.zeros_like(matrix)
        out[rows, cols] = noisy_upper
        out[cols, rows] = noisy_upper
        return out


class Wishart(Mechanism):
    """The Wishart mechanism B + W, W ~ Wishart(scale·I, d + 1); (0, 1 − e^{−ε})-DP.

    Args:
        epsilon: The ε of the density-ratio argument.
        trace_sensitivity: Δ_tr bounding ‖u‖² for the rank-one change uuᵀ one record makes
            (e.g. weight_cap/N for Park & Welling's B = XᵀSX/N with ‖x‖ ≤ 1).
        dimension: d.
    """

    def __init__(self, epsilon: float, trace_sensitivity: float, *, dimension: int) -> None:
        self.epsilon = check_positive("epsilon", epsilon)
        self.trace_sensitivity = check_positive("trace_sensitivity", trace_sensitivity)
        self.dimension = check_int_at_least("dimension", dimension, 1)
        if not self.scale <= _MAX_NOISE:
            raise InvalidArgumentError(
                f"`trace_sensitivity` / (2 · `epsilon`) = {self.trace_sensitivity!r} / "
                f"(2 · {self.epsilon!r}), the Wishart scale, must be at most 2**1000 ≈ 1.1e301 "
                "so that the noise stays in the float range (rescale the data instead)."
            )
        warn_floating_point("Wishart", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "trace_sensitivity": self.trace_sensitivity,
            "dimension": self.dimension,
        }

    @property
    def scale(self) -> float:
        """The scale c = Δ_tr / (2ε) of the Wishart noise."""
        return self.trace_sensitivity / (2 * self.epsilon)

    @property
    def event(self) -> ev.ApproxDP:
        """(0, 1 − e^{−ε})-DP: the support mismatch costs δ = 1 − e^{−ε}, nothing else does.

        The loss on the common support is a constant (module docstring); δ is
        :func:`~dpledger.accountant.lower_bounds.wishart_delta`, rounded up.
        """
        return ev.ApproxDP(0.0, wishart_delta(self.epsilon))

    def validate(self, value: Any) -> None:
        """``value`` must be a finite symmetric d×d matrix."""
        _square(value, self.dimension)

    def release(self, value: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """``value`` plus Wishart noise."""
        from scipy import stats  # imported on first use, not with dpledger (issue #32)

        matrix = _square(value, self.dimension)
        generator = resolve_rng(rng)
        noise = stats.wishart(df=self.dimension + 1, scale=self.scale * np.eye(self.dimension)).rvs(
            random_state=generator
        )
        result: np.ndarray = matrix + np.atleast_2d(noise)
        return result


__dir__ = namespace(__all__)
