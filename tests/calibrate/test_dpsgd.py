"""DP-SGD calibration from dataset size, batch size and epochs (dpledger.calibrate.dpsgd)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountant as acc
from dpledger import calibrate
from dpledger import events as ev
from dpledger.calibrate import dpsgd_noise_multiplier, dpsgd_schedule
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

MNIST = {"dataset_size": 60_000, "batch_size": 256, "epochs": 60}


@pytest.fixture(scope="module")
def mnist():
    return dpsgd_noise_multiplier(**MNIST, epsilon=3.0, delta=1e-5)


@pytest.mark.parametrize(
    ("n", "b", "e"), [(60_000, 256, 60), (50_000, 500, 3), (10, 3, 7), (1000, 1000, 2), (7, 1, 1)]
)
def test_schedule_is_opacus_epochs(n, b, e):
    steps, q = dpsgd_schedule(dataset_size=n, batch_size=b, epochs=e)
    assert steps == e * math.ceil(n / b)  # an epoch is len(DataLoader) = ⌈N/B⌉ steps
    assert q == b / n


def test_mnist_schedule_and_result(mnist):
    assert (mnist.steps, mnist.sampling_rate) == (14_100, 256 / 60_000)
    assert mnist.accountant == "pld"
    assert mnist.achieved_epsilon <= 3.0
    assert mnist.step_event == ev.PoissonSampled(ev.Gaussian(mnist.noise_multiplier), 256 / 60_000)
    assert mnist.event == mnist.step_event * 14_100
    # the same σ as the general calibration for this schedule (it is a thin wrapper)
    assert mnist.noise_multiplier == calibrate.gaussian_sigma(
        3.0, 1e-5, count=14_100, sampling_rate=256 / 60_000
    )


def test_sigma_meets_the_target_and_is_nearly_the_smallest(mnist):
    sigma = mnist.noise_multiplier

    def run(s: float) -> ev.Event:
        return ev.PoissonSampled(ev.Gaussian(s), 256 / 60_000) * 14_100

    assert acc.delta(run(sigma), 3.0, method="pld") <= 1e-5
    assert acc.epsilon(run(sigma), 1e-5, method="pld") == pytest.approx(
        mnist.achieved_epsilon, rel=1e-12
    )
    # within 1e-4 of the smallest σ that PLD certifies
    assert acc.delta(run(sigma * (1 - 1e-4)), 3.0, method="pld") > 1e-5


def test_explicit_method_is_reported(mnist):
    rdp = dpsgd_noise_multiplier(**MNIST, epsilon=3.0, delta=1e-5, method="rdp")
    assert rdp.accountant == "rdp"
    assert rdp.noise_multiplier > mnist.noise_multiplier  # RDP is looser than PLD
    assert acc.epsilon(rdp.event, 1e-5, method="rdp") <= 3.0


def test_full_batch_is_the_unsampled_gaussian():
    run = dpsgd_noise_multiplier(
        dataset_size=1000, batch_size=1000, epochs=5, epsilon=1.0, delta=1e-5
    )
    assert run.steps == 5 and run.sampling_rate == 1.0 and run.accountant == "gdp"
    assert run.step_event == ev.Gaussian(run.noise_multiplier)
    assert run.noise_multiplier == calibrate.gaussian_sigma(1.0, 1e-5, count=5)


def test_repr_is_readable_and_rounds_sigma_up(mnist):
    text = repr(mnist)
    assert text.startswith("DPSGDCalibration(noise_multiplier=")
    shown = float(text.split("noise_multiplier=")[1].split(",")[0])
    assert mnist.noise_multiplier <= shown <= mnist.noise_multiplier * (1 + 1e-7)
    assert "steps=14100" in text and "sampling_rate=256/60000" in text and "'pld'" in text


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"batch_size": 60_001}, InvalidArgumentError, "`batch_size` must be at most"),
        ({"dataset_size": 0}, InvalidArgumentError, "`dataset_size` must be an integer >= 1"),
        ({"batch_size": 0}, InvalidArgumentError, "`batch_size`"),
        ({"epochs": 0}, InvalidArgumentError, "`epochs` must be an integer >= 1. Found 0"),
        ({"epochs": 1.5}, InvalidArgumentTypeError, "`epochs` must be an integer"),
        ({"dataset_size": True}, InvalidArgumentTypeError, "`dataset_size`"),
        ({"epsilon": 0.0}, InvalidArgumentError, "`epsilon` must be positive"),
        ({"epsilon": math.nan}, InvalidArgumentError, "`epsilon`"),
        ({"delta": 0.0}, InvalidArgumentError, "`delta` must lie in (0, 1). Found 0.0"),
        ({"delta": 1.0}, InvalidArgumentError, "`delta`"),
        ({"method": "moments"}, InvalidArgumentError, "`method` must be one of"),
    ],
)
def test_bad_arguments_are_named(changes, error, message):
    kwargs = {**MNIST, "epsilon": 3.0, "delta": 1e-5, **changes}
    with pytest.raises(error) as raised:
        dpsgd_noise_multiplier(**kwargs)
    assert message in str(raised.value)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        dpsgd_noise_multiplier(60_000, 256, 60, 3.0, 1e-5)  # type: ignore[misc]


@settings(max_examples=5, deadline=None)
@given(
    n=st.integers(100, 100_000),
    b_frac=st.floats(0.001, 0.5),
    epochs=st.integers(1, 3),
    epsilon=st.floats(0.5, 8.0),
)
@pytest.mark.slow
def test_calibration_never_overshoots(n, b_frac, epochs, epsilon):
    b = max(1, int(n * b_frac))
    run = dpsgd_noise_multiplier(
        dataset_size=n, batch_size=b, epochs=epochs, epsilon=epsilon, delta=1e-6
    )
    assert run.achieved_epsilon <= epsilon
    assert acc.delta(run.event, epsilon, method=run.accountant) <= 1e-6


def test_agrees_with_dp_accounting_pld_calibration(mnist):
    """σ agrees with dp_accounting's PLD calibration to 1e-4 relative (compare extra).

    dp_accounting: ``calibrate_dp_mechanism`` with its default bracket (from [0, 1]) and
    tolerance (1e-6 in σ), on a ``PLDAccountant`` with its default
    ``value_discretization_interval`` (1e-4), the run being ``PoissonSampledDpEvent(q,
    GaussianDpEvent(σ))`` self-composed 14,100 times.
    """
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    q, steps = 256 / 60_000, 14_100

    def make_event(sigma: float):
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps
        )

    theirs = dpa.calibrate_dp_mechanism(pld_privacy_accountant.PLDAccountant, make_event, 3.0, 1e-5)
    assert mnist.noise_multiplier == pytest.approx(theirs, rel=1e-4)
