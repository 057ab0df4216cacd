"""Noise calibration: the smallest noise that provably meets a target (ε, δ).

Every calibration goes through one solver, :func:`solve`: bracket the noise parameter,
root-find with Brent's method, re-evaluate, and step to the safe side — the returned
parameter always meets the target when its event is re-accounted, and is within the
solver's tolerance of the smallest parameter that does (exactly so for exact methods).
Failure raises :class:`~dpledger.errors.CalibrationError` with the bracket tried.

Example:
    >>> from dpledger import calibrate
    >>> round(calibrate.gaussian_sigma(1.0, 1e-5), 6)
    3.730632
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.calibrate.dpsgd import DPSGDCalibration, dpsgd_noise_multiplier, dpsgd_schedule
from dpledger.calibrate.solver import (
    LegacyFormulaWarning,
    classical_gaussian_sigma,
    discrete_gaussian_sigma,
    discrete_laplace_scale,
    gaussian_sigma,
    gaussian_sigmas,
    laplace_scale,
    mechanism,
    solve,
    split_budget,
)

__all__ = [
    "DPSGDCalibration",
    "LegacyFormulaWarning",
    "classical_gaussian_sigma",
    "discrete_gaussian_sigma",
    "discrete_laplace_scale",
    "dpsgd_noise_multiplier",
    "dpsgd_schedule",
    "gaussian_sigma",
    "gaussian_sigmas",
    "laplace_scale",
    "mechanism",
    "solve",
    "split_budget",
]

__dir__ = namespace(__all__, "dpsgd", "solver")
