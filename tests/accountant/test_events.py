"""Events are frozen, validated records; bad values are refused with a clear message."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpledger import events as ev
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError

BAD_POSITIVE = [0.0, -1.0, math.nan, math.inf, -math.inf]
BAD_NONNEGATIVE = [-1e-9, -1.0, math.nan, math.inf, -math.inf]


def assert_names(excinfo: pytest.ExceptionInfo[BaseException], name: str, value: object) -> None:
    message = str(excinfo.value)
    assert f"`{name}`" in message
    assert repr(value) in message or str(value) in message


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda v: ev.Gaussian(sigma=v), "sigma"),
        (lambda v: ev.Gaussian(sigma=1.0, sensitivity=v), "sensitivity"),
        (lambda v: ev.Laplace(scale=v), "scale"),
        (lambda v: ev.Laplace(scale=1.0, sensitivity=v), "sensitivity"),
    ],
)
@pytest.mark.parametrize("value", BAD_POSITIVE)
def test_positive_parameters_rejected(factory, name, value):
    with pytest.raises(InvalidArgumentError) as excinfo:
        factory(value)
    assert_names(excinfo, name, value)


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda v: ev.PureDP(epsilon=v), "epsilon"),
        (lambda v: ev.ApproxDP(epsilon=v, delta=0.0), "epsilon"),
        (lambda v: ev.ZCDP(rho=v), "rho"),
        (lambda v: ev.ZCDP(rho=1.0, xi=v), "xi"),
        (lambda v: ev.MCDP(mu=v, tau=1.0), "mu"),
        (lambda v: ev.MCDP(mu=1.0, tau=v), "tau"),
        (lambda v: ev.RandomizedResponse(epsilon=v), "epsilon"),
    ],
)
@pytest.mark.parametrize("value", BAD_NONNEGATIVE)
def test_nonnegative_parameters_rejected(factory, name, value):
    with pytest.raises(InvalidArgumentError) as excinfo:
        factory(value)
    assert_names(excinfo, name, value)


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, math.nan, math.inf])
def test_delta_out_of_range(value):
    with pytest.raises(InvalidArgumentError, match="`delta`"):
        ev.ApproxDP(epsilon=1.0, delta=value)


@pytest.mark.parametrize("value", [0.0, -0.5, 1.0000001, math.nan, math.inf])
def test_rate_out_of_range(value):
    with pytest.raises(InvalidArgumentError, match="`rate`"):
        ev.PoissonSampled(ev.Gaussian(1.0), rate=value)


def test_rate_one_allowed():
    assert ev.PoissonSampled(ev.Gaussian(1.0), rate=1).rate == 1.0


@pytest.mark.parametrize("count", [0, -3])
def test_count_below_one(count):
    with pytest.raises(InvalidArgumentError, match=re.escape(f"Found {count}")):
        ev.Repeated(ev.PureDP(1.0), count)


@pytest.mark.parametrize("count", [1.5, "3", True, None])
def test_count_must_be_integer(count):
    with pytest.raises(InvalidArgumentTypeError, match="`count`"):
        ev.Repeated(ev.PureDP(1.0), count)


@pytest.mark.parametrize("value", ["1.0", None, [1.0], True, 1 + 2j])
def test_non_real_rejected_with_type_error(value):
    with pytest.raises(InvalidArgumentTypeError, match="`sigma`"):
        ev.Gaussian(sigma=value)


def test_events_are_frozen():
    event = ev.Gaussian(sigma=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.sigma = 2.0  # type: ignore[misc]


def test_values_normalised_to_float_and_hashable():
    assert ev.Gaussian(sigma=2) == ev.Gaussian(sigma=2.0)
    assert hash(ev.Gaussian(sigma=2)) == hash(ev.Gaussian(sigma=2.0))
    assert isinstance(ev.Gaussian(sigma=2).sigma, float)


def test_structural_events_validate_children():
    with pytest.raises(InvalidArgumentTypeError, match="`event`"):
        ev.Repeated("gaussian", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match=r"`events\[1\]`"):
        ev.Composed((ev.PureDP(1.0), 1.0))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="at least one"):
        ev.Composed(())
    with pytest.raises(InvalidArgumentTypeError, match="`event`"):
        ev.PoissonSampled(None, rate=0.1)  # type: ignore[arg-type]


def test_adjacency_explicit_for_sampling():
    assert ev.PoissonSampled(ev.Gaussian(1.0), 0.1).adjacency == ev.ADD_REMOVE
    assert ev.SampledWithoutReplacement(ev.Gaussian(1.0), 10, 100).adjacency == ev.REPLACE_ONE
    with pytest.raises(InvalidArgumentError, match="add_remove"):
        ev.PoissonSampled(ev.Gaussian(1.0), 0.1, adjacency=ev.REPLACE_ONE)
    with pytest.raises(InvalidArgumentError, match="replace_one"):
        ev.SampledWithoutReplacement(ev.Gaussian(1.0), 10, 100, adjacency=ev.ADD_REMOVE)
    with pytest.raises(InvalidArgumentError, match="`adjacency`"):
        ev.PoissonSampled(ev.Gaussian(1.0), 0.1, adjacency="neighbours")


def test_sample_size_not_above_population():
    with pytest.raises(InvalidArgumentError, match="`sample_size`"):
        ev.SampledWithoutReplacement(ev.Gaussian(1.0), sample_size=11, population=10)
    assert ev.SampledWithoutReplacement(ev.Gaussian(1.0), 10, 40).rate == 0.25


def test_randomized_response_from_probability():
    rr = ev.RandomizedResponse.from_truth_probability(0.75)
    assert rr.epsilon == pytest.approx(math.log(3.0), rel=1e-15)
    rr4 = ev.RandomizedResponse.from_truth_probability(0.5, categories=4)
    assert rr4.epsilon == pytest.approx(math.log(0.5 / (0.5 / 3)), rel=1e-15)
    with pytest.raises(InvalidArgumentError, match="`p_truth`"):
        ev.RandomizedResponse.from_truth_probability(0.2, categories=2)
    with pytest.raises(InvalidArgumentError, match="`categories`"):
        ev.RandomizedResponse(1.0, categories=1)


def test_operators_and_flatten():
    g, p = ev.Gaussian(1.0), ev.PureDP(0.5)
    combined = (g * 3 + p) * 2
    assert isinstance(combined, ev.Repeated)
    counts = ev.flatten(combined)
    assert counts == {g: 6, p: 2}
    assert ev.flatten(3 * g) == {g: 3}


finite_bad = st.one_of(
    st.floats(max_value=0.0, exclude_max=False, allow_nan=False),
    st.just(math.nan),
    st.just(math.inf),
)


@given(finite_bad)
def test_gaussian_sigma_property(value):
    with pytest.raises(InvalidArgumentError) as excinfo:
        ev.Gaussian(sigma=value)
    assert "`sigma`" in str(excinfo.value)
    assert "Found" in str(excinfo.value)


@given(st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(math.nan)))
def test_delta_property(value):
    with pytest.raises(InvalidArgumentError, match="`delta`"):
        ev.ApproxDP(1.0, value)


@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True)))
def test_rate_property(value):
    with pytest.raises(InvalidArgumentError, match="`rate`"):
        ev.PoissonSampled(ev.Gaussian(1.0), value)


@given(st.integers(max_value=0))
def test_count_property(count):
    with pytest.raises(InvalidArgumentError, match="`count`"):
        ev.Repeated(ev.Gaussian(1.0), count)
