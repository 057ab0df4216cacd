"""Reservations: what Ledger.reserve promises (an adversarial review's findings, each kept)."""

from __future__ import annotations

import numpy as np
import pytest

import dpledger as dpl
from dpledger import events as ev
from dpledger import mechanisms
from dpledger.errors import InvalidArgumentTypeError, LedgerIntegrityError

pytestmark = pytest.mark.filterwarnings("ignore::dpledger.errors.FloatingPointWarning")


def test_calibrating_two_to_the_forty_releases_builds_no_list():
    """A count of identical releases is one run: 2⁴⁰ Gaussians calibrate like one, and
    exactly as zCDP says (ρ* / 2⁴⁰ per release)."""
    ledger = dpl.Ledger(1.0, 1e-5, accountant="zcdp")
    gaussian = ledger.calibrate(lambda s: ev.Gaussian(s), count=2**40)
    rho = ledger.budget.rho
    assert gaussian.sigma == pytest.approx(np.sqrt(2**40 / (2 * rho)), rel=1e-9)
    assert ledger.fits(gaussian) == 2**40


def test_two_reservations_opened_at_one_position_draw_different_noise():
    """The same seed on one ledger object, two reservations opened before either charges
    (threads): the noise differs (identical noise would publish the difference)."""
    ledger = dpl.Ledger(5.0, 1e-5)
    make = lambda p: [mechanisms.Gaussian(p, safe=False)]  # noqa: E731
    first = ledger.reserve(make, epsilon=1.0, delta=1e-6, rng=7).open()
    second = ledger.reserve(make, epsilon=1.0, delta=1e-6, rng=7).open()
    a = first.release(10.0)
    b = second.release(20.0)
    assert b - a != pytest.approx(10.0, abs=1e-9)


@pytest.mark.parametrize("initial", [1.0, 100.0])
def test_an_undecided_ledger_takes_the_currency_with_least_noise(initial):
    """200 Laplace releases for (1, 1e-6) on an undecided ledger: zCDP needs far less noise
    than basic composition (scale 200), whatever the starting guess; the ledger is then
    decided for zCDP and accepts the schedule."""
    ledger = dpl.Ledger(1.0, 1e-6)
    plan = ledger.reserve(lambda p: [ev.Laplace(p)] * 200, epsilon=1.0, delta=1e-6, initial=initial)
    assert plan.noise < 0.5 * 200
    plan.release_all([(f"q{i}", None) for i in range(200)])
    assert ledger.accountant == "zcdp" and len(ledger.receipts) == 200


def test_a_bad_rng_or_label_is_refused_before_anything_is_decided():
    ledger = dpl.Ledger(1.0, 1e-6)
    with pytest.raises(InvalidArgumentTypeError, match="rng"):
        ledger.reserve([ev.Gaussian(5.0)], rng="seed")
    with pytest.raises(InvalidArgumentTypeError, match="label"):
        ledger.reserve([ev.Gaussian(5.0)], label=7)
    own = dpl.Ledger(1.0, 1e-6)
    plan = own.reserve([ev.Gaussian(50.0)], plan=True)
    with pytest.raises(InvalidArgumentTypeError, match="label"):
        plan.charge(label=7)
    assert own.receipts == () and not plan.opened
    assert ledger.receipts == () and ledger.fits(ev.Laplace(10.0)) == 10  # still undecided


@pytest.mark.parametrize("made", [5, ev.Gaussian(1.0), "x"])
def test_a_schedule_factory_that_returns_no_sequence_is_named(made):
    with pytest.raises(InvalidArgumentTypeError, match="`schedule` must return a sequence"):
        dpl.Ledger(1.0, 1e-6).reserve(lambda p: made, epsilon=0.5, delta=1e-7)


@pytest.mark.parametrize("bad", [5, "x", None])
def test_walking_something_that_is_not_an_event_is_named(bad):
    with pytest.raises(InvalidArgumentTypeError, match="`event` must be a privacy event"):
        list(ev.walk(bad))


def _two_analysts_same_seed(first_path, second_path):
    """Two handles (two processes' worth: nothing shared in memory) open a reservation at
    the same head with the same seed, then each releases; the difference of the releases
    must not be the difference of the statistics."""
    make = lambda p: [mechanisms.Gaussian(p, safe=False)]  # noqa: E731
    one, two = dpl.Ledger.open(first_path), dpl.Ledger.open(second_path)
    try:
        first = one.reserve(make, epsilon=0.5, delta=1e-6, rng=7).open()
        second = two.reserve(make, epsilon=0.5, delta=1e-6, rng=7).open()
        assert one.head == two.head  # the same position: only the store's nonce differs
        a = first.release(10.0)
        b = second.release(20.0)
        return b - a
    finally:
        one.close()
        two.close()


def test_two_processes_at_one_head_of_a_file_ledger_with_one_seed_draw_different_noise(tmp_path):
    path = tmp_path / "team.ledger"
    dpl.Ledger(5.0, 1e-5, path=path).close()
    assert _two_analysts_same_seed(path, path) != pytest.approx(10.0, abs=1e-9)


def test_a_seeded_script_rerun_on_a_fresh_file_ledger_draws_the_same_noise(tmp_path):
    """The store's numbers are 0, 1, 2, ... on a fresh file: seeded runs stay reproducible."""
    draws = []
    path = tmp_path / "fresh.ledger"
    for _ in range(2):
        path.unlink(missing_ok=True)  # the script starts from a fresh ledger each time
        with dpl.Ledger(5.0, 1e-5, path=path) as ledger:
            reservation = ledger.reserve(
                lambda p: [mechanisms.Gaussian(p, safe=False)] * 2, epsilon=1.0, delta=1e-6, rng=11
            )
            draws.append([reservation.release(0.0), reservation.release(0.0)])
    assert draws[0] == draws[1]


def test_two_analysts_at_one_head_of_a_database_ledger_with_one_seed_draw_different_noise(
    pg_url,
):
    dpl.Ledger(5.0, 1e-5, path=pg_url("owner")).close()
    assert _two_analysts_same_seed(pg_url("alice"), pg_url("bob")) != pytest.approx(10.0, abs=1e-9)


@pytest.mark.parametrize("persisted", [False, True])
def test_sibling_parts_of_a_partition_with_one_seed_draw_different_noise(tmp_path, persisted):
    """Every part's ledger starts at one head (same budget, same genesis; fresh files):
    the part itself enters the stream, or the parts' noisy answers would differ by exactly
    the difference of their statistics."""
    import pandas as pd

    table = pd.DataFrame({"region": ["north", "south"] * 5, "x": range(10)})
    path = tmp_path / "study.ledger" if persisted else None
    with dpl.Ledger(2.0, 1e-6, accountant="zcdp", path=path) as ledger:
        parts = ledger.partition(table, by="region", parts=["north", "south"])
        make = lambda p: [mechanisms.Gaussian(p, safe=False)]  # noqa: E731
        answers = [
            parts[v].ledger.reserve(make, epsilon=0.5, delta=1e-6, rng=7).release(value)
            for v, value in (("north", 10.0), ("south", 35.0))
        ]
    assert answers[1] - answers[0] != pytest.approx(25.0, abs=1e-9)


def test_a_modified_noise_counter_is_refused_never_reset(tmp_path):
    import sqlite3

    path = tmp_path / "counter.ledger"
    dpl.Ledger(5.0, 1e-5, path=path).close()
    make = lambda p: [mechanisms.Gaussian(p, safe=False)]  # noqa: E731
    for bad in ["abc", "-1", "²", "9" * 4400]:
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('nonce', ?)", (bad,))
        with dpl.Ledger.open(path) as ledger, pytest.raises(LedgerIntegrityError, match="noise"):
            ledger.reserve(make, epsilon=0.5, delta=1e-6, rng=7).open()
