"""KNG and the exponential mechanism for the check loss, sampled by Metropolis.

The mechanism that :class:`~dpledger.algorithms.kng.KNGQuantileRegression` and
:class:`~dpledger.algorithms.kng.ExponentialQuantileRegression` charge and release: the
log-density of KNG, −(ε/(2Δ_K))‖∇ℓₙ(θ)‖_K (Reimherr & Awan 2019), or of the exponential
mechanism, −(ε/(2Δ_ℓ))ℓₙ(θ) (McSherry & Talwar 2007), for ℓₙ(θ) = Σρ_τ(yᵢ − zᵢᵀθ), sampled
by :func:`~dpledger.algorithms._mcmc.metropolis`. Its event,
:class:`~dpledger.events.BoundedRange` (ε), is the guarantee of *exact* sampling; the
chains only approximate the density (no exact sampler is known for d > 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpledger._rng import resolve_rng
from dpledger._validation import check_choice
from dpledger.accountant import events as ev
from dpledger.algorithms._mcmc import MCMCDraw, metropolis
from dpledger.errors import InvalidArgumentError
from dpledger.mechanisms.base import Mechanism, warn_floating_point
from dpledger.mechanisms.knorm import NORMS


def _check_loss_log_density(
    kind: str, Z: np.ndarray, y: np.ndarray, tau: float, scale: float, norm: str
) -> Callable[[np.ndarray], np.ndarray]:
    """Log-density of KNG (−scale·‖∇ℓₙ‖_K) or the exponential mechanism (−scale·ℓₙ)."""
    order = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    # (d × n) layout: BLAS is slow for (n × d) @ (d × m) with tiny d and m
    Zt = np.ascontiguousarray(Z.T)
    target = y[None, :]

    def kng(points: np.ndarray) -> np.ndarray:
        fitted = np.einsum("md,dn->mn", points, Zt)
        weights = (target < fitted).astype(float) - tau
        gradient = weights @ Z  # m × d
        return np.asarray(-scale * np.linalg.norm(gradient, ord=order, axis=1))

    def exponential(points: np.ndarray) -> np.ndarray:
        residual = target - np.einsum("md,dn->mn", points, Zt)
        loss = residual * (tau - (residual < 0))
        return np.asarray(-scale * loss.sum(axis=1))

    return kng if kind == "kng" else exponential


class _QuantileRelease(Mechanism):
    """KNG or the exponential mechanism for the check loss, sampled by Metropolis.

    ``value`` is (Z, y): the clipped model rows and targets. Charged as
    :class:`~dpledger.events.BoundedRange` (ε) — the guarantee of *exact* sampling; the
    Metropolis output only approximates the density.
    """

    def __init__(
        self,
        kind: str,
        epsilon: float,
        sensitivity: float,
        *,
        tau: float,
        norm: str,
        theta_bound: float,
        dimension: int,
        chains: int,
        burn_in: int,
        samples: int,
    ) -> None:
        self.kind = check_choice("kind", kind, ("kng", "exponential"))
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.tau = float(tau)
        self.norm = check_choice("norm", norm, NORMS)
        self.theta_bound = float(theta_bound)
        self.dimension = int(dimension)
        self.chains = int(chains)
        self.burn_in = int(burn_in)
        self.samples = int(samples)
        warn_floating_point("MCMC sampling", no_exact_sampler=True)

    def _params(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "tau": self.tau,
            "norm": self.norm,
            "theta_bound": self.theta_bound,
        }

    @property
    def event(self) -> ev.BoundedRange:
        """ε-bounded-range *for exact sampling* (Durfee & Rogers 2019)."""
        return ev.BoundedRange(self.epsilon)

    def validate(self, value: Any) -> None:
        """(Z, y): a finite n×d array and a finite n-vector."""
        Z, y = value
        if np.ndim(Z) != 2 or np.shape(Z)[1] != self.dimension or np.shape(y) != (len(Z),):
            raise InvalidArgumentError(
                f"`value` must be (Z of shape (n, {self.dimension}), y of shape (n,)). Found "
                f"{np.shape(Z)} and {np.shape(y)}."
            )
        if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(y))):
            raise InvalidArgumentError("`value` must be finite (Z and y).")

    def release(self, value: Any, rng: np.random.Generator | None = None) -> MCMCDraw:
        """Run the chains; release the last state of chain 0 (one draw)."""
        Z, y = (np.asarray(v, dtype=float) for v in value)
        scale = self.epsilon / (2.0 * self.sensitivity)
        log_density = _check_loss_log_density(self.kind, Z, y, self.tau, scale, self.norm)
        theta, diagnostics, _ = metropolis(
            log_density,
            dimension=self.dimension,
            radius=self.theta_bound,
            rng=resolve_rng(rng),
            chains=self.chains,
            burn_in=self.burn_in,
            samples=self.samples,
        )
        return MCMCDraw(theta, diagnostics)
