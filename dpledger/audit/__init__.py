"""Auditing privacy claims.

* White-box: :func:`check_claim` recomputes a declared pipeline's guarantee (TOML or a
  dict: see :mod:`dpledger.audit.pipeline`) with tight accounting and gives a verdict
  with the reasons (:class:`AuditReport`).
* Black-box: :func:`estimate_epsilon` runs a mechanism on two neighbouring inputs and
  returns a lower bound on its ε that holds with a stated confidence.

The white-box audit's certified lower bounds are privacy mathematics and live in
:mod:`dpledger.accountant.lower_bounds`; every exception it raises is in
:mod:`dpledger.errors` (:class:`~dpledger.errors.PipelineError` for a bad declaration).

Example:
    >>> from dpledger.audit import check_claim
    >>> report = check_claim({
    ...     "claim": {"epsilon": 1.0, "delta": 1e-5, "adjacency": "add_remove"},
    ...     "release": [{"mechanism": "gaussian", "sigma": 3.8, "sensitivity": 1.0}],
    ... })
    >>> report.verdict
    'holds'
"""

from dpledger._public import namespace
from dpledger.audit.blackbox import EpsilonEstimate, estimate_epsilon
from dpledger.audit.check import VERDICTS, AuditReport, check_claim
from dpledger.audit.pipeline import Claim, Pipeline, Release, load_pipeline, parse_pipeline
from dpledger.errors import PipelineError

__all__ = [
    "VERDICTS",
    "AuditReport",
    "Claim",
    "EpsilonEstimate",
    "Pipeline",
    "PipelineError",
    "Release",
    "check_claim",
    "estimate_epsilon",
    "load_pipeline",
    "parse_pipeline",
]

__dir__ = namespace(__all__, "blackbox", "check", "pipeline", "plot")
