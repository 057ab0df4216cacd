"""Opacus: an accountant that charges a dpledger ledger for every DP-SGD step.

:class:`LedgerAccountant` implements Opacus' accountant interface
(``opacus.accountants.IAccountant``: ``step``, ``get_epsilon``, ``__len__``,
``mechanism``, ``get_optimizer_hook_fn``, ``state_dict``/``load_state_dict``), so it can
take the place of Opacus' own accountant (``privacy_engine.accountant = ...``). Each
step is charged to a :class:`~dpledger.Ledger` **before its noise is drawn**, and
``get_epsilon`` answers with dpledger's numerically tight PLD accountant (an upper bound).

**When the charge happens.** Opacus calls its accountant from the optimizer's step
hook, which runs inside ``DPOptimizer.pre_step`` *after* ``add_noise`` has drawn the
noise and written the noisy gradient to ``p.grad``, and before the parameter update.
Through the accountant interface alone, the earliest charge is therefore after the
noise is drawn. :meth:`LedgerAccountant.attach` closes that gap: it wraps the
optimizer's ``add_noise`` so that the step is charged (durably, for a file ledger)
first, and a refused step raises before any noise is drawn, with the step's clipped
gradients discarded. It also checks what the interface cannot see: that the data loader
is Opacus' Poisson loader (``DPDataLoader``), sampling at no more than the rate charged.
An optimizer that was not attached is refused at its first step: the noisy gradient
already drawn is deleted before the error is raised, so nothing derived from it is
released and nothing is charged.

**What a step costs.** Opacus adds N(0, (σC)²) noise to the sum of per-example
gradients clipped to norm C, on a batch that holds each example independently with
probability q: under add/remove adjacency the sum's sensitivity is C, so a step is
``PoissonSampled(Gaussian(sigma=σ, sensitivity=1), rate=q)`` (the clipping norm as the
unit; Mironov, Talwar & Zhang 2019). The rate charged is the probability with which
Opacus' sampler really keeps an example (:func:`poisson_rate`): it compares
``torch.rand``'s float32 draws — multiples of 2⁻²⁴ — with q rounded to float32, which
keeps an example with probability ⌈fl32(q)·2²⁴⌉/2²⁴, up to 2⁻²⁴ above q (q = 0.01 keeps
it with probability 0.0100000501). Replace-one ledgers are refused: Poisson subsampling
is analysed under add/remove.

**Planning.** Charged one by one, steps go through the ledger's filter (valid however
the next step is chosen, and looser: a Rényi filter for DP-SGD). A run whose length is
known — ``epochs`` given to :meth:`~LedgerAccountant.attach`, or
:meth:`~LedgerAccountant.make_private_with_epsilon` — is reserved on the ledger's one
planning path (:meth:`Ledger.reserve <dpledger.Ledger.reserve>`) before the first step:
on a ledger with nothing recorded it is *planned* (certified once by PLD; the ledger then
accepts exactly those steps), otherwise checked against what the ledger has left. A run
that does not fit is refused before any noise is drawn.

Example (needs Opacus and PyTorch)::

    ledger = dpledger.Ledger(3.0, 1e-5, path="training.ledger")
    accountant = LedgerAccountant(ledger)
    model, optimizer, loader = accountant.make_private_with_epsilon(
        PrivacyEngine(), module=model, optimizer=optimizer, data_loader=loader,
        epochs=2, max_grad_norm=1.0,
    )  # σ calibrated to the ledger, the run planned, every step charged before its noise
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_positive,
    check_probability,
    shown,
)
from dpledger.accountant import METHODS
from dpledger.accountant import epsilon as _epsilon
from dpledger.accountant import events as ev
from dpledger.calibrate import gaussian_sigma
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger import Ledger, Reservation
from dpledger.ledger.planning import Repeat

try:  # Opacus (and PyTorch) are optional: the module imports without them, the class does not
    # (Opacus ships no type information: its names are Any to mypy)
    from opacus.accountants import IAccountant  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from opacus.accountants.registry import register_accountant  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from opacus.data_loader import DPDataLoader  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from opacus.optimizers import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        DPOptimizer,
        DPOptimizerFastGradientClipping,
        DPPerLayerOptimizer,
    )
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError as error:  # pragma: no cover - exercised where Opacus is missing
    IAccountant = object
    _MISSING: ImportError | None = error
else:
    _MISSING = None

__all__ = [
    "MECHANISM",
    "SUPPORTED_OPTIMIZERS",
    "LedgerAccountant",
    "noise_multiplier",
    "poisson_rate",
    "step_event",
]

MECHANISM = "dpledger"
"""The accountant's name in Opacus' registry (``PrivacyEngine(accountant="dpledger")``)."""

#: The DP optimizers whose step is one Poisson-sampled Gaussian of ``noise_multiplier``
#: (flat and per-layer clipping, ghost clipping); adaptive clipping (whose noise is
#: split between the gradient and the clipped-count release) and the distributed
#: optimizers (every rank would charge the same step) are refused.
SUPPORTED_OPTIMIZERS: tuple[type, ...] = (
    () if _MISSING else (DPOptimizer, DPPerLayerOptimizer, DPOptimizerFastGradientClipping)
)


def _require_opacus() -> None:
    if _MISSING is not None:
        raise ImportError(
            "LedgerAccountant needs Opacus and PyTorch: pip install 'dpledger[opacus]' (or "
            f"pip install opacus). Import failed: {_MISSING}"
        )


_RAND_STEPS = 16_777_216  # 2²⁴: torch.rand's float32 draws are multiples of 2⁻²⁴


def poisson_rate(sample_rate: float) -> float:
    """The probability with which Opacus' Poisson sampler keeps an example at ``sample_rate``.

    ``UniformWithReplacementSampler`` keeps example i when ``torch.rand(n)[i] <
    sample_rate``: float32 draws, uniform on the multiples of 2⁻²⁴ in [0, 1), compared
    with the rate rounded to float32. That probability is ⌈fl32(q)·2²⁴⌉/2²⁴, which can
    exceed q by up to 2⁻²⁴; the larger of it and q is returned (a larger rate is the
    privacy-safe side; a generator on a finer dyadic grid keeps an example with no
    larger probability).

    Example:
        >>> poisson_rate(0.01)
        0.010000050067901611
        >>> poisson_rate(0.5)
        0.5
    """
    q = check_probability("sample_rate", sample_rate, low_open=True, high_open=False)
    threshold = float(np.float32(q))
    kept = math.ceil(threshold * _RAND_STEPS) / _RAND_STEPS
    return min(1.0, max(q, kept))


def step_event(noise_multiplier: float, sample_rate: float) -> ev.Event:
    """The event of one Opacus DP-SGD step: a Poisson-sampled Gaussian (add/remove).

    Args:
        noise_multiplier: Opacus' σ: noise standard deviation ÷ the clipping norm.
        sample_rate: The rate Opacus reports (:func:`poisson_rate` of it is charged).

    Example:
        >>> step_event(1.1, 0.5)
        PoissonSampled(event=Gaussian(sigma=1.1, sensitivity=1.0), rate=0.5, \
adjacency='add_remove')
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    return ev.PoissonSampled(
        ev.Gaussian(sigma=sigma, sensitivity=1.0), rate=poisson_rate(sample_rate)
    )


def noise_multiplier(
    *, epsilon: float, delta: float, sample_rate: float, steps: int, method: str = "auto"
) -> float:
    """The smallest σ with which ``steps`` Opacus steps at ``sample_rate`` meet (ε, δ).

    Opacus' ``get_noise_multiplier`` with dpledger's calibration: the σ is certified
    (re-accounted with the tightest valid method and rounded up), where Opacus' bisection
    stops within ``epsilon_tolerance`` (0.01) below the target and, given ``epochs``,
    counts ⌊epochs/q⌋ steps. Pass ``steps = epochs × len(data_loader)`` of the loader
    ``make_private`` returns, and its ``1 / len(data_loader)`` as the rate.

    Example:
        >>> sigma = noise_multiplier(epsilon=1.0, delta=1e-5, sample_rate=0.05, steps=100)
        >>> round(sigma, 4)
        2.1422
    """
    count = check_int_at_least("steps", steps, 1)
    rate = poisson_rate(sample_rate)
    return float(gaussian_sigma(epsilon, delta, count=count, sampling_rate=rate, method=method))


class LedgerAccountant(IAccountant):  # type: ignore[misc]
    """An Opacus accountant that charges a dpledger ledger for every step, before its noise.

    Args:
        ledger: The budget each step is charged to (add/remove adjacency). ``None`` makes
            an accountant that only answers ``get_epsilon`` (what Opacus' registry builds
            for ``get_noise_multiplier``); it refuses to take a step.
        label: The label of each step's receipt.
        method: The accounting method of :meth:`get_epsilon` (default: PLD, tight).

    Use it in place of Opacus' accountant, then attach the optimizer (or let
    :meth:`make_private_with_epsilon` do all three)::

        engine = PrivacyEngine()
        engine.accountant = LedgerAccountant(ledger)
        model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer,
            data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0)
        engine.accountant.attach(optimizer, loader, epochs=epochs)

    Attributes:
        history: Opacus' record of the steps taken: (noise_multiplier, sample_rate, steps)
            runs, as its PRV and RDP accountants keep it (only steps the ledger accepted).
        sample_rate: The rate Opacus gave ``get_optimizer_hook_fn`` (None before
            ``make_private``).
        reservation: The run reserved on the ledger (None when steps are charged one by
            one without a plan).
    """

    def __init__(
        self, ledger: Ledger | None = None, *, label: str = "DP-SGD step", method: str = "pld"
    ) -> None:
        _require_opacus()
        if ledger is not None:
            if not isinstance(ledger, Ledger):
                raise InvalidArgumentTypeError(
                    f"`ledger` must be a dpledger.Ledger. Found {shown(ledger)} of type "
                    f"{type(ledger).__name__}."
                )
            if ledger.adjacency != ev.ADD_REMOVE:
                raise InvalidArgumentError(
                    "Opacus samples each batch by Poisson sampling, whose amplification is "
                    "analysed under add/remove adjacency; this ledger's adjacency is "
                    f"{ledger.adjacency!r}. Use a Ledger(..., adjacency='add_remove')."
                )
        if not isinstance(label, str):
            raise InvalidArgumentTypeError(f"`label` must be a string. Found {shown(label)}.")
        self.ledger = ledger
        self.label = label
        self.method = check_choice("method", method, METHODS)
        self.history: list[tuple[float, float, int]] = []
        self.sample_rate: float | None = None
        self.reservation: Reservation | None = None
        self._charged: dict[int, tuple[float, float]] = {}  # optimizer → its charged step

    # -- Opacus' accountant interface --------------------------------------------------

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Charge one step to the ledger, then record it (Opacus' ``IAccountant.step``).

        Raises:
            BudgetExceededError: The ledger refuses the step (nothing is recorded).
            NotApplicableError: A planned ledger's next step is a different one.
        """
        event = step_event(noise_multiplier, sample_rate)
        if self.ledger is None:
            raise InvalidArgumentError(
                "this LedgerAccountant has no ledger, so it cannot take a step: build it "
                "as LedgerAccountant(ledger) and set privacy_engine.accountant to it."
            )
        self.ledger.spend(event, label=self.label)
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            sigma, rate, steps = self.history[-1]
            self.history[-1] = (sigma, rate, steps + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """ε at ``delta`` of the steps taken, by dpledger's accountant (an upper bound).

        Composes the history as a fixed schedule with :attr:`method` (PLD by default).
        Opacus-specific options (``eps_error``, ...) are accepted and not needed.
        """
        delta = check_probability("delta", delta)
        event = self.history_event()
        return 0.0 if event is None else _epsilon(event, delta, method=self.method)

    def history_event(self) -> ev.Event | None:
        """The steps taken, as one dpledger event (None before the first step)."""
        runs = [
            step_event(sigma, rate) * steps if steps > 1 else step_event(sigma, rate)
            for sigma, rate, steps in self.history
        ]
        if not runs:
            return None
        return runs[0] if len(runs) == 1 else ev.Composed(tuple(runs))

    def __len__(self) -> int:
        """The number of steps taken (charged)."""
        return sum(steps for _, _, steps in self.history)

    @classmethod
    def mechanism(cls) -> str:
        """``"dpledger"``, this accountant's name in Opacus' registry."""
        return MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float) -> Any:
        """The step hook ``PrivacyEngine.make_private`` attaches to the optimizer.

        Runs after the noise is drawn: it checks that the attached optimizer charged the
        step first; for an optimizer that was not attached it deletes the noisy gradient
        and raises, so nothing is released.
        """
        self.sample_rate = check_probability(
            "sample_rate", sample_rate, low_open=True, high_open=False
        )

        def hook(optimizer: Any) -> None:
            if self._charged.pop(id(optimizer), None) is not None:
                return
            _discard(optimizer, noisy=True)
            raise InvalidArgumentError(
                "this step was not charged to the ledger: call accountant.attach(optimizer, "
                "data_loader) after make_private, so that each step is charged before its "
                "noise is drawn (and the loader checked to be Poisson). The noisy gradient "
                "was deleted; nothing was released or charged."
            )

        return hook

    def state_dict(self, destination: Any = None) -> Any:
        """Opacus' state (history, mechanism) and, for information, the ledger's head."""
        state = super().state_dict(destination)
        if self.ledger is not None:
            state["ledger_head"] = self.ledger.head
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore the history (what :meth:`get_epsilon` reports); the budget is the ledger's.

        A checkpoint restores Opacus' record of the steps, not the budget: the ledger keeps
        its own receipts (reopen a file ledger to resume a run).
        """
        super().load_state_dict(state_dict)
        self.history = [(float(s), float(q), int(n)) for s, q, n in self.history]

    # -- dpledger's additions ----------------------------------------------------------

    def attach(
        self,
        optimizer: Any,
        data_loader: Any,
        *,
        epochs: int | None = None,
        plan: bool = True,
    ) -> LedgerAccountant:
        """Charge every step of ``optimizer`` before its noise is drawn; check the loader.

        Call it after ``make_private`` (which gives this accountant Opacus' rate).

        Args:
            optimizer: The ``DPOptimizer`` ``make_private`` returned.
            data_loader: The data loader it returned: Opacus' Poisson ``DPDataLoader``.
            epochs: The run's length, if known: ``epochs × len(data_loader)`` steps are
                reserved on the ledger now (refused whole, before any noise, if they do
                not fit). Without it, steps are charged one by one through the ledger's
                filter.
            plan: With ``epochs``, on a ledger with nothing recorded: plan the run (the
                ledger then accepts exactly these steps, certified by PLD). With
                ``plan=False``, or on a ledger with receipts, the run is checked against
                what the ledger has left in its own currency.

        Returns:
            ``self``.

        Raises:
            InvalidArgumentError: No ledger, ``make_private`` not run with this
                accountant, a loader that is not Poisson or samples at a higher rate than
                charged, or an unsupported optimizer (adaptive clipping, distributed).
            BudgetExceededError: The reserved run does not fit the ledger.
        """
        ledger, rate = self._ready()
        if type(optimizer) not in SUPPORTED_OPTIMIZERS:
            raise InvalidArgumentError(
                f"{type(optimizer).__name__} is not supported: a step of DPOptimizer, "
                "DPPerLayerOptimizer or DPOptimizerFastGradientClipping is one Poisson-sampled "
                "Gaussian; adaptive clipping releases a noisy count as well, and a "
                "distributed optimizer would charge each step once per rank."
            )
        sampler: Any = getattr(data_loader, "batch_sampler", None)
        if not isinstance(data_loader, DPDataLoader) or type(sampler) is not (
            UniformWithReplacementSampler
        ):
            raise InvalidArgumentError(
                "the data loader must be the Poisson DPDataLoader that make_private(..., "
                "poisson_sampling=True) returns: the amplification charged for is Poisson "
                f"sampling's. Found {type(data_loader).__name__} with batch sampler "
                f"{type(sampler).__name__}."
            )
        if poisson_rate(sampler.sample_rate) > poisson_rate(rate):
            raise InvalidArgumentError(
                f"the loader samples at {sampler.sample_rate!r}, above the rate {rate!r} "
                "Opacus gave this accountant: attach the loader make_private returned."
            )
        if epochs is not None:
            epochs = check_int_at_least("epochs", epochs, 1)
            steps = epochs * len(data_loader)
            event = step_event(optimizer.noise_multiplier, rate)
            plan = plan and not ledger.receipts
            reservation = ledger.reserve(Repeat(event, steps), plan=plan, label=self.label)
            reservation.open()  # refused whole before any step
            self.reservation = reservation
        self._wrap(optimizer, rate)
        return self

    def make_private_with_epsilon(
        self,
        engine: Any,
        *,
        module: Any,
        optimizer: Any,
        data_loader: Any,
        epochs: int,
        max_grad_norm: Any,
        epsilon: float | None = None,
        delta: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """``PrivacyEngine.make_private_with_epsilon`` with σ calibrated to the ledger.

        The run is ``epochs × len(Poisson loader)`` steps at Opacus' rate
        ``1 / len(Poisson loader)`` (exactly what ``make_private`` will set up). Without
        ``epsilon``/``delta``, σ is the smallest for which the whole run meets the ledger's
        (ε, δ) by PLD, and the run is planned (the ledger must have nothing recorded);
        with them, σ is the smallest for which the run meets (ε, δ) and fits what the
        ledger has left in its currency. Then ``engine.make_private(noise_multiplier=σ,
        ...)`` runs with this accountant, and the optimizer is attached.

        Args:
            engine: An ``opacus.PrivacyEngine``; its accountant becomes this one.
            module: As for ``make_private``.
            optimizer: As for ``make_private``.
            data_loader: As for ``make_private`` (Poisson sampling is required).
            epochs: The number of epochs the run will take.
            max_grad_norm: The clipping norm C.
            epsilon: With ``delta``: this run's share of the ledger (default: the whole).
            delta: See ``epsilon``.
            **kwargs: Passed to ``make_private`` (not ``noise_multiplier`` or
                ``poisson_sampling=False``).

        Returns:
            What ``make_private`` returns.
        """
        ledger = self._ledger()
        epochs = check_int_at_least("epochs", epochs, 1)
        if "noise_multiplier" in kwargs or kwargs.get("poisson_sampling", True) is not True:
            raise InvalidArgumentError(
                "make_private_with_epsilon chooses the noise multiplier and needs Poisson "
                "sampling: pass neither `noise_multiplier` nor poisson_sampling=False."
            )
        per_epoch = len(DPDataLoader.from_data_loader(data_loader))
        rate = 1 / per_epoch  # what make_private gives the accountant
        steps = epochs * per_epoch
        if epsilon is None and delta is None:
            if ledger.receipts:
                raise InvalidArgumentError(
                    f"the ledger has {len(ledger.receipts)} receipts: a run planned on its whole "
                    "budget needs a ledger with nothing recorded. Pass epsilon= and delta= (this "
                    "run's share; checked against what the ledger has left) instead."
                )
            reservation = ledger.reserve(
                lambda s: Repeat(step_event(s, rate), steps), plan=True, label=self.label
            )
        else:
            reservation = ledger.reserve(
                lambda s: Repeat(step_event(s, rate), steps),
                epsilon=epsilon,
                delta=delta,
                label=None,
            )
        assert reservation.noise is not None
        engine.accountant = self
        made = engine.make_private(
            module=module,
            optimizer=optimizer,
            data_loader=data_loader,
            noise_multiplier=reservation.noise,
            max_grad_norm=max_grad_norm,
            **kwargs,
        )
        dp_optimizer, dp_loader = made[1], made[-1]  # (module, optimizer, [criterion,] loader)
        if self.sample_rate != rate or len(dp_loader) != per_epoch:
            raise InvalidArgumentError(  # pragma: no cover - Opacus changed its convention
                f"Opacus set up {len(dp_loader)} steps an epoch at rate {self.sample_rate!r}; "
                f"{per_epoch} at {rate!r} were calibrated. Nothing was charged."
            )
        self.attach(dp_optimizer, dp_loader)
        reservation.open()  # planned (or checked) before the first step
        self.reservation = reservation
        return made

    # -- internals -----------------------------------------------------------------------

    def _ledger(self) -> Ledger:
        if self.ledger is None:
            raise InvalidArgumentError(
                "this LedgerAccountant has no ledger: build it as LedgerAccountant(ledger)."
            )
        return self.ledger

    def _ready(self) -> tuple[Ledger, float]:
        ledger = self._ledger()
        if self.sample_rate is None:
            raise InvalidArgumentError(
                "Opacus has not given this accountant its sample rate: set "
                "privacy_engine.accountant = accountant before privacy_engine.make_private(...)"
                ", then attach the optimizer and loader it returns."
            )
        return ledger, self.sample_rate

    def _wrap(self, optimizer: Any, rate: float) -> None:
        """Make ``optimizer.add_noise`` charge the step first (once per optimizer)."""
        if getattr(optimizer, "_dpledger_accountant", None) is self:
            return
        original = optimizer.add_noise

        def add_noise() -> None:
            adjusted = getattr(optimizer, "_adjusted_noise_multiplier", None)
            sigma = optimizer.noise_multiplier
            if adjusted is not None and adjusted != sigma:
                _discard(optimizer, noisy=False)
                raise InvalidArgumentError(
                    "adaptive clipping draws the gradient noise at another multiplier "
                    f"({adjusted!r}, not {sigma!r}): not supported; nothing was charged."
                )
            step_rate = rate * optimizer.accumulated_iterations
            try:
                self.step(noise_multiplier=sigma, sample_rate=step_rate)
            except BaseException:
                _discard(optimizer, noisy=False)  # refused: no noise is drawn
                raise
            self._charged[id(optimizer)] = (sigma, step_rate)
            original()

        optimizer.add_noise = add_noise
        optimizer._dpledger_accountant = self


def _discard(optimizer: Any, *, noisy: bool) -> None:
    """Delete a refused step's gradients (per-example, clipped sums and, if drawn, noisy)."""
    for p in optimizer.params:
        p.grad_sample = None
        p.summed_grad = None
        if noisy:
            p.grad = None


if _MISSING is None:
    register_accountant(MECHANISM, LedgerAccountant, force=True)

__dir__ = namespace(__all__)
