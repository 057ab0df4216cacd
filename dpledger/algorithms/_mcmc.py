"""Random-walk Metropolis on a ball Θ, with its convergence diagnostics.

For a release with no exact sampler (KNG and the exponential mechanism for quantile
regression, :mod:`dpledger.algorithms.kng`): :func:`metropolis` runs several adaptive
chains on Θ = {‖θ‖₂ ≤ r} for any log-density and returns *one* draw, the last state of
chain 0. It is only approximately distributed as the density, so the ε charged for it is
the guarantee of exact sampling only (:data:`MCMC_LABEL` says so on the ledger). The
diagnostics (split R̂ and effective sample size, Gelman et al., *Bayesian Data Analysis*,
3rd ed., §11.4–11.5; Geyer 1992) are computed from every draw: functions of the data
outside the guarantee, for the data holder only (:class:`MCMCWarning`). The caps below are
checked from public quantities before anything is charged (:data:`CHAINS`, :data:`STEPS`,
:func:`check_steps`, :func:`check_work`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpledger.algorithms._params import Integer
from dpledger.errors import InvalidArgumentError, MCMCWarning
from dpledger.mechanisms.knorm import uniform_in_ball

__all__ = [
    "CHAINS",
    "MAX_CHAINS",
    "MAX_MCMC_STEPS",
    "MAX_MCMC_WORK",
    "MCMC_LABEL",
    "STEPS",
    "MCMCDiagnostics",
    "MCMCDraw",
    "MCMCWarning",
    "check_steps",
    "check_work",
    "effective_sample_size",
    "metropolis",
    "split_rhat",
    "warn_if_unconverged",
]


#: The largest number of Metropolis steps per chain (burn-in + kept samples).
MAX_MCMC_STEPS = 10**6
#: The most chains one fit runs.
MAX_CHAINS = 64
#: The most work one MCMC fit may ask for: chains × (burn_in + samples) × rows × columns
#: (each step evaluates the loss on every row). About 8 minutes at the 2·10⁹ per second
#: measured on a 2-core machine; a fit beyond it is refused before anything is charged.
MAX_MCMC_WORK = 10**12
#: The ledger label's note on every MCMC release.
MCMC_LABEL = "MCMC: approximate sampler; ε holds for exact sampling only"


#: chains per fit: at least 2 (split R̂ compares chains), at most :data:`MAX_CHAINS`
CHAINS = Integer(2, MAX_CHAINS, why="no hang")
#: burn-in or kept steps per chain, at most :data:`MAX_MCMC_STEPS`
STEPS = Integer(1, MAX_MCMC_STEPS, why="no hang")


def check_steps(burn_in: int, samples: int) -> None:
    """Refuse more than :data:`MAX_MCMC_STEPS` steps per chain (burn-in + kept), naming both."""
    if burn_in + samples > MAX_MCMC_STEPS:
        raise InvalidArgumentError(
            f"`burn_in` + `samples` must be at most {MAX_MCMC_STEPS} steps per chain (no "
            f"hang). Found {burn_in} + {samples}."
        )


def check_work(
    chains: int, burn_in: int, samples: int, rows: int | None, columns: int, counted: str
) -> None:
    """Refuse a run beyond :data:`MAX_MCMC_WORK` (each step evaluates every row).

    ``rows`` must be public (None: counted as 1); ``counted`` names it in the message.
    """
    work = chains * (burn_in + samples) * (rows or 1) * columns
    if work > MAX_MCMC_WORK:
        raise InvalidArgumentError(
            f"`chains` × (`burn_in` + `samples`) × {counted} × columns = {chains} × "
            f"{burn_in + samples} × {rows or 1} × {columns} = {work:.3g} exceeds "
            f"MAX_MCMC_WORK = {MAX_MCMC_WORK:.0e} (every step evaluates the loss on every "
            "row: hours of work). Use fewer chains or steps, or a subsample of the rows."
        )


@dataclass(frozen=True)
class MCMCDiagnostics:
    """Convergence diagnostics of one Metropolis run (not private: for the data holder).

    Attributes:
        acceptance_rate: Post-burn-in acceptance rate of each chain.
        ess: Effective sample size of each coordinate, all chains pooled.
        rhat: Split R̂ of each coordinate (Gelman et al., BDA3 §11.4).
        chains: Number of chains.
        burn_in: Burn-in steps per chain (discarded; the step size adapts only here).
        samples: Kept steps per chain.
    """

    acceptance_rate: np.ndarray
    ess: np.ndarray
    rhat: np.ndarray
    chains: int
    burn_in: int
    samples: int


@dataclass(frozen=True)
class MCMCDraw:
    """What an MCMC release returns: the one released θ, and the (non-private) diagnostics."""

    theta: np.ndarray
    diagnostics: MCMCDiagnostics


def split_rhat(draws: np.ndarray) -> np.ndarray:
    """Split R̂ per coordinate of ``draws`` (chains × steps × d); inf where a chain is constant.

    Each chain is split in halves; R̂ = √(V⁺/W) with W the mean within-half variance and
    V⁺ = (n − 1)/n·W + B/n (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4).
    """
    _, steps, d = draws.shape
    half = steps // 2
    if half < 2:
        return np.full(d, np.inf)
    parts = np.concatenate([draws[:, :half], draws[:, steps - half :]], axis=0)
    within = parts.var(axis=1, ddof=1).mean(axis=0)
    between = half * parts.mean(axis=1).var(axis=0, ddof=1)
    pooled = (half - 1) / half * within + between / half
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(pooled / within)
    return np.where(within > 0, rhat, np.inf)


def effective_sample_size(draws: np.ndarray) -> np.ndarray:
    """Multi-chain effective sample size per coordinate (BDA3 §11.5, Geyer's sequence).

    ρ̂ₜ = 1 − (W − mean autocovariance at lag t)/V⁺ over split chains; the sum of
    consecutive pairs ρ̂₂ₖ + ρ̂₂ₖ₊₁ is truncated at its first negative term and made
    monotone (Geyer 1992); ESS = mn/(−1 + 2Σ pairs).
    """
    _, steps, d = draws.shape
    half = steps // 2
    if half < 4:
        return np.zeros(d)
    parts = np.concatenate([draws[:, :half], draws[:, steps - half :]], axis=0)
    m, n = parts.shape[0], half
    centred = parts - parts.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    autocov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n
    within = parts.var(axis=1, ddof=1).mean(axis=0)
    between = n * parts.mean(axis=1).var(axis=0, ddof=1)
    pooled = (n - 1) / n * within + between / n
    out = np.zeros(d)
    for j in range(d):
        if not pooled[j] > 0:
            continue
        rho = 1.0 - (within[j] - autocov[:, :, j].mean(axis=0)) / pooled[j]
        rho[0] = 1.0
        total, previous = 0.0, math.inf
        for k in range(0, n - 1, 2):
            pair = rho[k] + rho[k + 1]
            if pair < 0:
                break
            pair = min(pair, previous)
            total += pair
            previous = pair
        tau = max(-1.0 + 2.0 * total, 1.0 / math.log10(max(m * n, 10)))
        out[j] = m * n / tau
    return out


def metropolis(
    log_density: Callable[[np.ndarray], np.ndarray],
    *,
    dimension: int,
    radius: float,
    rng: np.random.Generator,
    chains: int = 4,
    burn_in: int = 2000,
    samples: int = 1000,
) -> tuple[np.ndarray, MCMCDiagnostics, np.ndarray]:
    """Random-walk Metropolis on Θ = {‖θ‖₂ ≤ radius} for any log-density, several chains.

    Chains start at independent uniform points of Θ drawn from ``rng`` — data-independent,
    never the non-private estimate. During burn-in each chain's step size adapts
    (Robbins–Monro on its log, towards acceptance 0.234) and, at a quarter, half and three
    quarters of the burn-in, the proposal's shape is set to the chains' pooled
    within-chain covariance over the last quarter of the burn-in; after
    burn-in the kernel is fixed, so every kept step leaves the target invariant
    (symmetric Gaussian proposals; points outside Θ have density 0 and are rejected).

    Args:
        log_density: Maps an (m, d) array of points in Θ to their m log-densities (up to
            a constant; vectorised over the chains).
        dimension: d.
        radius: Θ's radius.
        rng: The generator (seeded per fit by the caller).
        chains: Number of chains (≥ 2 for R̂).
        burn_in: Discarded adaptive steps per chain.
        samples: Kept steps per chain.

    Returns:
        (θ, diagnostics, draws): θ is the *last state of chain 0* — one draw, the
        mechanism's output (a summary of many draws would be a different, unaccounted
        release); draws are all kept states (chains × samples × d), for diagnostics.
    """
    d = dimension
    current = radius * uniform_in_ball("l2", d, chains, rng)
    logp = np.asarray(log_density(current), dtype=float)
    scale = np.full(chains, 2.38 * radius / (2.0 * math.sqrt(d)))
    shape = np.eye(d)
    window = max(burn_in // 4, 1)
    history = np.empty((chains, window, d))  # the last `window` burn-in states (a ring)
    checkpoints = {burn_in // 4, burn_in // 2, (3 * burn_in) // 4} - {0}
    since = 0  # steps since the proposal's shape was last set

    def step(adapting: bool, t: int) -> np.ndarray:
        nonlocal current, logp, scale
        noise = rng.standard_normal((chains, d)) @ shape.T
        proposal = current + scale[:, None] * noise
        inside = np.einsum("ij,ij->i", proposal, proposal) <= radius * radius
        lp = np.full(chains, -np.inf)
        if inside.any():
            lp[inside] = log_density(proposal[inside])
        accept = np.log(rng.random(chains)) < lp - logp
        current = np.where(accept[:, None], proposal, current)
        logp = np.where(accept, lp, logp)
        if adapting:
            gain = 1.0 / math.sqrt(1.0 + (t - since) / 10.0)
            scale = scale * np.exp(gain * (accept - 0.234))
        return np.asarray(accept)

    for t in range(burn_in):
        step(True, t)
        history[:, t % window] = current
        if t + 1 in checkpoints:  # t + 1 ≥ window: the ring holds the last window steps
            recent = history
            centred = (recent - recent.mean(axis=1, keepdims=True)).reshape(-1, d)
            covariance = centred.T @ centred / max(centred.shape[0] - 1, 1)
            covariance += 1e-12 * (np.trace(covariance) / d + radius * radius * 1e-12) * np.eye(d)
            try:
                shape = np.linalg.cholesky(covariance)
                scale = np.full(chains, 2.38 / math.sqrt(d))
                since = t + 1
            except np.linalg.LinAlgError:
                pass  # keep the previous shape
    draws = np.empty((chains, samples, d))
    accepted = np.zeros(chains)
    for t in range(samples):
        accepted += step(False, t)
        draws[:, t] = current
    diagnostics = MCMCDiagnostics(
        acceptance_rate=accepted / max(samples, 1),
        ess=effective_sample_size(draws),
        rhat=split_rhat(draws),
        chains=chains,
        burn_in=burn_in,
        samples=samples,
    )
    return np.array(current[0], dtype=float), diagnostics, draws


def warn_if_unconverged(diagnostics: MCMCDiagnostics, what: str) -> None:
    """Warn (:class:`MCMCWarning`) if R̂ > 1.01 or ESS < 100 (``stacklevel`` counts from ``fit``)."""
    rhat = float(np.max(diagnostics.rhat))
    ess = float(np.min(diagnostics.ess))
    if not (rhat <= 1.01) or ess < 100:
        warnings.warn(
            f"{what}: the chains may not have converged (max split R̂ = {rhat:.3g}, min ESS "
            f"= {ess:.3g}; want R̂ ≤ 1.01 and ESS ≥ 100): the release may be far from the "
            "mechanism's density, whose ε it is charged. Raise `burn_in`/`samples`. (This "
            "warning depends on the data: do not publish it.)",
            MCMCWarning,
            stacklevel=4,
        )
