"""DP-SGD: the noise multiplier for a training run given by dataset size, batch and epochs.

The schedule follows Opacus' convention for epochs: an epoch is ⌈N/B⌉ optimizer steps
(``len(data_loader)`` of a PyTorch loader without ``drop_last``), so a run of E epochs is
``steps = E × ⌈N/B⌉`` steps, each of which samples every example independently with
probability ``q = B/N`` (Poisson sampling, expected batch size B). Both are at least what
the frameworks themselves account for, so the σ returned here is enough for either:

* Opacus' ``make_private`` samples at ``1/⌈N/B⌉ ≤ B/N`` and runs ``E × ⌈N/B⌉`` steps;
  its ``get_noise_multiplier(sample_rate=B/N, epochs=E)`` assumes ``⌊E·N/B⌋`` steps;
* TF Privacy's ``compute_noise`` assumes ``⌈E·N/B⌉ ≤ E × ⌈N/B⌉`` steps at ``q = B/N``.

A Poisson-subsampled Gaussian only loses privacy as q or the number of steps grows (a
sample at rate q' < q is a subsample of one at rate q, and post-processing cannot hurt),
so calibrating for the larger schedule is the safe direction.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpledger import accountant
from dpledger._format import up as fmt_up
from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_int_at_least,
    check_positive,
    check_probability,
)
from dpledger.accountant import events as ev
from dpledger.calibrate.solver import gaussian_sigma
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = ["DPSGDCalibration", "dpsgd_noise_multiplier", "dpsgd_schedule"]


@dataclass(frozen=True, repr=False)
class DPSGDCalibration:
    """The calibrated noise multiplier of a DP-SGD run and the schedule it was sized for.

    Attributes:
        noise_multiplier: σ, the Gaussian noise standard deviation divided by the clipping
            norm (Opacus' and TF Privacy's ``noise_multiplier``).
        steps: Optimizer steps, ``epochs × ⌈dataset_size / batch_size⌉``.
        sampling_rate: Poisson sampling rate of each step, ``batch_size / dataset_size``.
        epsilon: The target ε.
        delta: The target δ.
        achieved_epsilon: ε of the whole run at ``delta`` by ``accountant`` (an upper
            bound, ≤ ``epsilon``).
        accountant: The accounting method that certifies the run (``"pld"`` unless RDP
            was tighter, or the one asked for).
        dataset_size: N.
        batch_size: B (the expected batch size).
        epochs: E.
    """

    noise_multiplier: float
    steps: int
    sampling_rate: float
    epsilon: float
    delta: float
    achieved_epsilon: float
    accountant: str
    dataset_size: int
    batch_size: int
    epochs: int

    @property
    def step_event(self) -> ev.Event:
        """One step: the Poisson-subsampled Gaussian (sensitivity 1 = the clipping norm).

        A full batch (``sampling_rate == 1``) is the plain Gaussian.
        """
        return _step(self.noise_multiplier, self.sampling_rate)

    @property
    def event(self) -> ev.Event:
        """The whole run: ``step_event`` composed ``steps`` times."""
        return self.step_event * self.steps

    def __repr__(self) -> str:
        return (
            f"DPSGDCalibration(noise_multiplier={fmt_up(self.noise_multiplier, 8)}, "
            f"steps={self.steps}, sampling_rate={self.batch_size}/{self.dataset_size}, "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"achieved_epsilon={fmt_up(self.achieved_epsilon, 8)}, "
            f"accountant={self.accountant!r})"
        )


def _step(sigma: float, rate: float) -> ev.Event:
    gaussian = ev.Gaussian(sigma)
    return ev.PoissonSampled(gaussian, rate) if rate < 1 else gaussian


def dpsgd_schedule(*, dataset_size: int, batch_size: int, epochs: int) -> tuple[int, float]:
    """``(steps, sampling_rate)`` of a DP-SGD run under Opacus' epoch convention.

    ``steps = epochs × ⌈dataset_size / batch_size⌉`` and ``sampling_rate = batch_size /
    dataset_size`` (see the module docstring for how this relates to Opacus and TF
    Privacy).

    Raises:
        InvalidArgumentError: A size is not a positive integer, or the batch is larger
            than the dataset.
    """
    n = check_int_at_least("dataset_size", dataset_size, 1)
    b = check_int_at_least("batch_size", batch_size, 1)
    e = check_int_at_least("epochs", epochs, 1)
    if b > n:
        raise InvalidArgumentError(
            f"`batch_size` must be at most `dataset_size` ({n}): a Poisson sampling rate "
            f"batch_size/dataset_size above 1 is not a probability. Found {b}."
        )
    return e * -(-n // b), b / n


def dpsgd_noise_multiplier(
    *,
    dataset_size: int,
    batch_size: int,
    epochs: int,
    epsilon: float,
    delta: float,
    method: str = "auto",
) -> DPSGDCalibration:
    """The smallest noise multiplier σ for a DP-SGD run to be (ε, δ)-DP.

    The run is ``steps = epochs × ⌈N/B⌉`` steps, each a Gaussian of sensitivity 1 (the
    clipping norm) and noise σ on a Poisson sample at rate ``q = B/N`` — Opacus' epoch
    convention (see :mod:`dpledger.calibrate.dpsgd` for how it compares with Opacus' and
    TF Privacy's own step counts; it is never fewer steps nor a smaller rate). σ is
    :func:`~dpledger.calibrate.gaussian_sigma` with ``count=steps, sampling_rate=q``:
    with ``method="auto"``, bracketed with Rényi DP (Mironov, Talwar & Zhang 2019) and
    refined with the numerical privacy loss distribution of the Poisson-subsampled
    Gaussian (Koskela, Jälkö & Honkela 2020; Doroshenko, Ghazi, Kamath, Kumar &
    Manurangsi 2022, the method of Google's dp_accounting), within about 1e-4 relative of
    the smallest σ that PLD certifies; σ always meets the target when re-accounted.
    The schedule is composed as fixed in advance (PLD is not a privacy filter): charge it
    to a ledger with ``Ledger.plan`` (docs/training.md).

    Args:
        dataset_size: N, the number of training examples (≥ 1).
        batch_size: B, the expected batch size (1 ≤ B ≤ N).
        epochs: E, the number of epochs (≥ 1).
        epsilon: Target ε > 0.
        delta: Target δ in (0, 1).
        method: Accounting method (see :data:`dpledger.accountant.METHODS`); "auto" is
            the tightest.

    Returns:
        The noise multiplier, the schedule (steps, q), the ε achieved at ``delta`` and
        the accountant that certifies it.

    Raises:
        InvalidArgumentError: An argument is out of range (the message names it).
        CalibrationError: No σ in the searched range meets the target.

    Example:
        >>> from dpledger.calibrate import dpsgd_noise_multiplier
        >>> run = dpsgd_noise_multiplier(
        ...     dataset_size=60_000, batch_size=256, epochs=60, epsilon=3.0, delta=1e-5
        ... )
        >>> run.steps, run.sampling_rate == 256 / 60_000, run.accountant
        (14100, True, 'pld')
        >>> round(run.noise_multiplier, 4), run.achieved_epsilon <= 3.0
        (0.9692, True)
    """
    steps, rate = dpsgd_schedule(dataset_size=dataset_size, batch_size=batch_size, epochs=epochs)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta, low_open=True)
    method = check_choice("method", method, accountant.METHODS)
    # a full batch (q = 1) is no sampling: the unsampled Gaussian, calibrated exactly
    sigma = gaussian_sigma(
        epsilon, delta, count=steps, sampling_rate=rate if rate < 1 else None, method=method
    )
    run = _step(sigma, rate) * steps
    achieved, used = _certified_epsilon(run, delta, method)
    return DPSGDCalibration(
        noise_multiplier=sigma,
        steps=steps,
        sampling_rate=rate,
        epsilon=epsilon,
        delta=delta,
        achieved_epsilon=achieved,
        accountant=used,
        dataset_size=int(dataset_size),
        batch_size=int(batch_size),
        epochs=int(epochs),
    )


def _certified_epsilon(run: ev.Event, delta: float, method: str) -> tuple[float, str]:
    """(ε at ``delta``, the method that gives it): for "auto", the tightest that applies."""
    if method != "auto":
        return accountant.epsilon(run, delta, method=method), method
    found = [
        (value, name)
        for name, value in accountant.epsilon_by_method(run, delta).items()
        if not isinstance(value, NotApplicableError)
    ]
    if not found:  # not reached for a (subsampled) Gaussian schedule
        raise NotApplicableError(f"no accounting method applies to {run!r}.")
    return min(found)


__dir__ = namespace(__all__)
