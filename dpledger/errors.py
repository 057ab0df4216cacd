"""The exceptions and warnings dpledger raises — all of them, in this one module.

Few types, each a subclass of a built-in one so that ordinary ``except ValueError``
code keeps working. Every message says what was wrong, which value, and how to fix it.
"""

from __future__ import annotations

from dpledger._public import namespace

__all__ = [
    "BudgetExceededError",
    "CalibrationError",
    "ConvergenceError",
    "DPLedgerError",
    "FloatingPointWarning",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "LedgerIntegrityError",
    "LegacyFormulaWarning",
    "MCMCWarning",
    "NotApplicableError",
    "PipelineError",
    "RepeatedNoiseWarning",
    "SamplingError",
    "UnboundedLossError",
    "UnsupportedReleaseError",
]


class DPLedgerError(Exception):
    """Base class of every error dpledger raises on purpose."""


class InvalidArgumentError(DPLedgerError, ValueError):
    """An argument has the right type but an invalid value (NaN, out of range, ...)."""


class UnboundedLossError(InvalidArgumentError):
    """A noise release whose sensitivity-to-noise ratio overflows a float: no finite guarantee.

    Every event carries a finite privacy parameter (as ``PureDP`` and ``ZCDP`` refuse ε = ∞
    and ρ = ∞), so no accountant meets an infinite loss. A calibration probing too little
    noise reads this refusal as "misses the target".
    """


class InvalidArgumentTypeError(DPLedgerError, TypeError):
    """An argument has the wrong type."""


class NotApplicableError(DPLedgerError, ValueError):
    """An accounting method cannot bound the privacy loss of the given event.

    Raised, for example, when Gaussian DP is asked about a Poisson-subsampled event
    (its central-limit approximation is not an upper bound) or when basic composition
    is asked about a Gaussian event (which has no single (ε, δ) guarantee).
    """


class CalibrationError(DPLedgerError, ValueError):
    """A calibration could not find a noise parameter meeting the target.

    Attributes:
        bracket: The interval of the parameter that was searched.
    """

    def __init__(self, message: str, bracket: tuple[float, float] | None = None) -> None:
        super().__init__(message)
        self.bracket = bracket


class BudgetExceededError(DPLedgerError, ValueError):
    """A spend would overrun the ledger's budget; nothing was recorded or released.

    Attributes:
        requested: What the refused spend would have cost, in the ledger's currency.
        remaining: What the budget still allows, in the same currency.
    """

    def __init__(self, message: str, requested: object = None, remaining: object = None) -> None:
        super().__init__(message)
        self.requested = requested
        self.remaining = remaining


class LedgerIntegrityError(DPLedgerError, ValueError):
    """A stored ledger fails verification (edited, truncated or for another budget)."""


class PipelineError(DPLedgerError, ValueError):
    """A declaration failed validation; ``problems`` lists (line or None, message).

    Raised by :func:`dpledger.audit.parse_pipeline` and :func:`dpledger.audit.load_pipeline`
    with every problem of the declaration at once, each with its line where known.
    """

    def __init__(self, problems: list[tuple[int | None, str]], source: str = "pipeline") -> None:
        # in the order of the declaration (problems without a line first)
        problems = sorted(problems, key=lambda item: item[0] or 0)
        self.problems = problems
        self.source = source
        lines = [
            f"{source}:{line}: {msg}" if line else f"{source}: {msg}" for line, msg in problems
        ]
        super().__init__(f"{len(problems)} problem(s) in the declaration:\n  " + "\n  ".join(lines))


class UnsupportedReleaseError(DPLedgerError, ValueError):
    """No valid accounting exists for a declared release (the audit verdict ``unsupported``).

    Raised while a declaration is turned into events — e.g. Poisson sampling under
    replace-one adjacency, or an add/remove sensitivity asked of a release that declares
    only a replace-one one. :func:`dpledger.audit.check_claim` reports it in its findings;
    it does not propagate.
    """


class SamplingError(DPLedgerError, RuntimeError):
    """A capped sampler found no draw: the budget was charged and nothing was released."""


class ConvergenceError(DPLedgerError, RuntimeError):
    """The solver did not reach its gradient tolerance."""


# -- warnings ------------------------------------------------------------------------------


class FloatingPointWarning(UserWarning):
    """Textbook floating-point noise was requested (Mironov 2012: it can leak the input)."""


class LegacyFormulaWarning(UserWarning):
    """A textbook formula was used outside the range where it is proved."""


class MCMCWarning(UserWarning):
    """The chains look unconverged (split R̂ > 1.01 or a small effective sample size)."""


class RepeatedNoiseWarning(UserWarning):
    """A seeded fit on its own per-fit ledger repeats noise an earlier fit already drew."""


__dir__ = namespace(__all__)
