"""dp_accounting events read from their text and dict forms: no dp_accounting needed."""

from __future__ import annotations

import pytest

import dpledger as dpl
from dpledger import events as ev
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError, NotApplicableError
from dpledger.interop import from_dp_accounting
from dpledger.interop.dp_accounting import DP_ACCOUNTING_FIELDS, NOT_CONVERTED

DPSGD = (
    "SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.01, "
    "event=GaussianDpEvent(noise_multiplier=1.1)), count=10000)"
)
STEP = ev.PoissonSampled(ev.Gaussian(1.1), rate=0.01)


def test_text_as_print_shows_it():
    assert from_dp_accounting(DPSGD) == STEP * 10_000


@pytest.mark.parametrize(
    "text",
    [
        "dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(0.01, "
        "dp_accounting.GaussianDpEvent(1.1)), 10000)",  # positional fields, module prefix
        "  dp_event.SelfComposedDpEvent(count=10000, event=PoissonSampledDpEvent(event="
        "GaussianDpEvent(noise_multiplier=1.1), sampling_probability=0.01))\n",
    ],
)
def test_text_variants(text):
    assert from_dp_accounting(text) == STEP * 10_000


def test_dict_form_nested():
    data = {
        "class_name": "SelfComposedDpEvent",
        "module_name": "dp_accounting.dp_event",
        "count": 10_000,
        "event": {
            "class_name": "PoissonSampledDpEvent",
            "sampling_probability": 0.01,
            "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.1},
        },
    }
    assert from_dp_accounting(data) == STEP * 10_000


def test_adjacency_sets_the_sensitivity():
    # noise_multiplier = s / C for records bounded by C: a sum moves by C under add/remove,
    # by 2C under replace-one (dp_accounting's PLD accountant reads it so)
    assert from_dp_accounting("GaussianDpEvent(2.0)") == ev.Gaussian(2.0, 1.0)
    assert from_dp_accounting("GaussianDpEvent(2.0)", adjacency="replace_one") == ev.Gaussian(
        2.0, 2.0
    )
    assert from_dp_accounting("LaplaceDpEvent(3.0)", adjacency="REPLACE_ONE") == ev.Laplace(
        3.0, 2.0
    )
    with pytest.raises(NotApplicableError, match="REPLACE_SPECIAL"):
        from_dp_accounting("GaussianDpEvent(2.0)", adjacency="REPLACE_SPECIAL")
    with pytest.raises(InvalidArgumentError, match="adjacency"):
        from_dp_accounting("GaussianDpEvent(2.0)", adjacency="bounded")


def test_randomized_response_epsilon_is_rounded_up():
    rr = from_dp_accounting("RandomizedResponseDpEvent(0.5, 2)", adjacency="replace_one")
    assert isinstance(rr, ev.RandomizedResponse) and rr.categories == 2
    # true bucket w.p. 0.75, the other w.p. 0.25: ε = log 3, never below it
    assert 1.0986122886681098 <= rr.epsilon <= 1.0986122886681098 * (1 + 1e-13)


def test_mixture_with_one_shift_is_a_poisson_sampled_gaussian():
    text = "MixtureOfGaussiansDpEvent(2.0, [0.0, 1.5], [0.9, 0.1])"
    assert from_dp_accounting(text) == ev.PoissonSampled(ev.Gaussian(2.0, 1.5), rate=0.1)
    assert from_dp_accounting("MixtureOfGaussiansDpEvent(2.0, [-1.5], [1.0])") == ev.Gaussian(
        2.0, 1.5
    )
    with pytest.raises(NotApplicableError, match=r"2 distinct non-zero.*PoissonSampled"):
        from_dp_accounting("MixtureOfGaussiansDpEvent(2.0, [0.0, 1.0, 2.0], [0.8, 0.1, 0.1])")


@pytest.mark.parametrize(
    "text",
    [
        "NoOpDpEvent()",
        "ComposedDpEvent([])",
        "SelfComposedDpEvent(GaussianDpEvent(1.0), 0)",
        "PoissonSampledDpEvent(0.0, GaussianDpEvent(1.0))",
        "DiscreteLaplaceDpEvent(0.5, 0)",
        "MixtureOfGaussiansDpEvent(1.0, [0.0], [1.0])",
    ],
)
def test_events_that_release_nothing_are_pure_zero(text):
    assert from_dp_accounting(text) == ev.PureDP(0.0)


@pytest.mark.parametrize("name", sorted(n for n in NOT_CONVERTED if n in DP_ACCOUNTING_FIELDS))
def test_every_unconverted_type_is_refused_by_name(name):
    fields = DP_ACCOUNTING_FIELDS[name]
    values = {
        "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.0},
        "step_counts": 3,
        "source_dataset_size": 100,
        "dataset_size": 100,
        "sample_size": 10,
        "truncated_batch_size": 10,
    }
    data = {"class_name": name, **{f: values.get(f, 0.5) for f in fields}}
    with pytest.raises(NotApplicableError, match=name):
        from_dp_accounting(data)


@pytest.mark.parametrize(
    ("text", "adjacency", "match"),
    [
        ("GaussianDpEvent(0.0)", "add_remove", "not private"),
        ("PoissonSampledDpEvent(0.1, GaussianDpEvent(1.0))", "replace_one", "add/remove"),
        (
            "SampledWithoutReplacementDpEvent(100, 10, GaussianDpEvent(1.0))",
            "add_remove",
            "replace-one",
        ),
        ("RandomizedResponseDpEvent(0.5, 2)", "add_remove", "REPLACE_ONE only"),
        ("FancyNewDpEvent(1.0)", "add_remove", "FancyNewDpEvent"),
        ("ComposedDpEvent([GaussianDpEvent(1.0), NonPrivateDpEvent()])", "add_remove", "NonPriv"),
    ],
)
def test_refusals_say_why(text, adjacency, match):
    with pytest.raises(NotApplicableError, match=match):
        from_dp_accounting(text, adjacency=adjacency)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("GaussianDpEvent(noise_multiplier=__import__('os').getcwd())", "not a dp_accounting"),
        ("GaussianDpEvent(noise_multiplier='1.0')", "not a number"),
        ("GaussianDpEvent(noise_multiplier=inf)", "not a number"),
        ("GaussianDpEvent(1.0, 2.0)", "at most 1 positional"),
        ("GaussianDpEvent(sigma=1.0)", "no field 'sigma'"),
        ("PoissonSampledDpEvent(0.1)", "needs 'event'"),
        ("GaussianDpEvent(-1.0)", r"GaussianDpEvent\.noise_multiplier"),
        ("PoissonSampledDpEvent(1.5, GaussianDpEvent(1.0))", "rate"),
        ("GaussianDpEvent(", "does not parse"),
        ("os.GaussianDpEvent(1.0)", "not a dp_accounting event class"),
        ({"noise_multiplier": 1.0}, "class_name"),
        ("1.0", "not a call"),
    ],
)
def test_malformed_events_are_refused_without_evaluation(value, match):
    with pytest.raises(InvalidArgumentError, match=match):
        from_dp_accounting(value)


def test_not_an_event():
    with pytest.raises(InvalidArgumentTypeError, match="already a dpledger event"):
        from_dp_accounting(ev.Gaussian(1.0))
    with pytest.raises(InvalidArgumentTypeError, match="DpEvent"):
        from_dp_accounting(3.0)
    with pytest.raises(NotApplicableError, match="own event types"):
        from_dp_accounting(
            {"class_name": "GaussianDpEvent", "module_name": "mylib", "noise_multiplier": 1}
        )


def test_deep_trees_convert_without_recursion():
    event: dict = {"class_name": "GaussianDpEvent", "noise_multiplier": 2.0}
    for _ in range(3000):
        event = {"class_name": "SelfComposedDpEvent", "event": event, "count": 1}
    converted = from_dp_accounting(event)
    assert ev.flatten(converted) == {ev.Gaussian(2.0): 1}


def test_converted_pipeline_is_accounted():
    eps = dpl.accountant.epsilon(from_dp_accounting(DPSGD), 1e-5)
    assert abs(eps - 5.1926204) < 1e-6  # the DP-SGD row of docs/accounting.md


def test_events_given_as_text_inside_a_dict_convert_each_on_its_own():
    # each text is parsed when it is reached and freed after; one node's result must never
    # be reused for another that takes its place in memory
    texts = [f"SelfComposedDpEvent(LaplaceDpEvent({b}), 2)" for b in range(1, 40)]
    data = {"class_name": "ComposedDpEvent", "events": [*texts, "GaussianDpEvent(3.0)"]}
    converted = from_dp_accounting(data)
    expected = ev.Composed((*(ev.Laplace(float(b)) * 2 for b in range(1, 40)), ev.Gaussian(3.0)))
    assert converted == expected
