"""Noise samplers and releases; every mechanism exposes its privacy ``event``.

Each mechanism is built from its noise parameter and sensitivity (stated in the norm
the noise is calibrated in), exposes ``.event`` (the privacy event of one release,
exactly as implemented) and ``.release(value, rng=None)``. ``rng`` is a
``numpy.random.Generator``; by default a fresh one is seeded from the operating
system's CSPRNG. The Laplace and Gaussian mechanisms release on an exact grid with
discrete noise by default (Mironov 2012's floating-point attack does not apply).
"""

from __future__ import annotations

from dpledger._public import namespace
from dpledger.mechanisms.additive import (
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    default_granularity,
)
from dpledger.mechanisms.base import FloatingPointWarning, Mechanism
from dpledger.mechanisms.exact_value import ExactValue
from dpledger.mechanisms.knorm import KNorm
from dpledger.mechanisms.matrix import SymmetricGaussian, Wishart
from dpledger.mechanisms.regression import (
    SamplingError,
    auto_ridge,
    exponential_linear_sample,
    kng_linear_sample,
    sampler_epsilon,
)
from dpledger.mechanisms.selection import (
    Exponential,
    PermuteAndFlip,
    RandomizedResponse,
    ReportNoisyMax,
)

__all__ = [
    "DiscreteGaussian",
    "DiscreteLaplace",
    "ExactValue",
    "Exponential",
    "FloatingPointWarning",
    "Gaussian",
    "KNorm",
    "Laplace",
    "Mechanism",
    "PermuteAndFlip",
    "RandomizedResponse",
    "ReportNoisyMax",
    "SamplingError",
    "SymmetricGaussian",
    "Wishart",
    "auto_ridge",
    "default_granularity",
    "exponential_linear_sample",
    "kng_linear_sample",
    "sampler_epsilon",
]

__dir__ = namespace(
    __all__, "additive", "base", "exact_value", "knorm", "matrix", "regression", "selection"
)
