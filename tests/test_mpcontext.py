"""Certified mpmath bounds keep their precision when two threads compute at once.

``mpmath.workdps`` sets the precision of the global context every thread shares; the
bounds are computed in :func:`dpledger._mpcontext.context`, this thread's own context.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction

import mpmath
import pytest

from dpledger._mpcontext import context
from dpledger.accountant import lower_bounds as lb
from dpledger.accountant.rdp import rdp_randomized_response
from dpledger.accountant.rdp._without_replacement import _gaussian_pearson_vajda


@pytest.fixture(autouse=True)
def _frequent_switches() -> Iterator[None]:
    """Switch threads every 10 µs (not 5 ms), so that the blocks below interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _race(check: Callable[[], bool], disturb: Callable[[], None], seconds: float) -> int:
    """Run ``check`` in one thread and ``disturb`` in another for ``seconds``; failed checks."""
    start = threading.Barrier(2)
    stop = threading.Event()
    failures = [0, 0]  # failed checks, checks run
    errors: list[BaseException] = []

    def checker() -> None:
        try:
            start.wait()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                failures[0] += not check()
                failures[1] += 1
        except BaseException as error:  # re-raised in the main thread
            errors.append(error)
        finally:
            stop.set()

    def disturber() -> None:
        try:
            start.wait()
            while not stop.is_set():
                disturb()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=checker), threading.Thread(target=disturber)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    assert failures[1] > 0
    return failures[0]


def test_a_thread_keeps_its_precision_while_another_changes_its_own() -> None:
    with context(60) as ctx:
        third = (ctx.mpf(1) / 3)._mpf_  # 1/3 rounded to 60 digits

    def check() -> bool:
        with context(60) as ctx:
            ok = True
            for _ in range(20):
                ok &= ctx.dps == 60 and (ctx.mpf(1) / 3)._mpf_ == third
            return ok

    def disturb() -> None:
        with context(15) as ctx:
            ctx.mpf(1) / 3

    assert _race(check, disturb, 0.3) == 0


def test_certified_bounds_are_unchanged_while_another_thread_uses_mpmath() -> None:
    # the Pearson–Vajda sums cancel: at a lower precision than the one their error
    # bound assumes, the "upper bounds" came out below the certified ones (old workprec)
    expected = (
        _gaussian_pearson_vajda.__wrapped__(0.25),
        lb.gaussian_epsilon_lower(Fraction(1, 9), 1e-5),
    )
    rr = rdp_randomized_response(1.001, 1e-6)

    def check() -> bool:
        return (
            _gaussian_pearson_vajda.__wrapped__(0.25),  # not the cached value
            lb.gaussian_epsilon_lower(Fraction(1, 9), 1e-5),
        ) == expected

    def disturb() -> None:
        # other code at mpmath's global default precision, and a 50-digit bound
        with mpmath.workdps(15):
            mpmath.mpf(1) / 3
        assert rdp_randomized_response(1.001, 1e-6) == rr

    assert _race(check, disturb, 0.4) == 0


def test_blocks_nest_and_restore_the_precision() -> None:
    with context(30) as outer:
        assert outer.dps == 30
        with context(prec=200) as inner:
            assert inner is outer  # one context per thread
            assert inner.prec == 200
            with context(80):
                assert inner.dps == 80
            assert inner.prec == 200
        assert outer.dps == 30
        prec = outer.prec
    assert outer.prec == 53  # the context's default, as before the first block
    with context(30) as again:
        assert again is outer and again.prec == prec


def test_the_precision_is_restored_when_the_block_raises() -> None:
    with context(40) as ctx:
        with pytest.raises(ZeroDivisionError), context(90):
            ctx.mpf(1) / 0
        assert ctx.dps == 40
    assert ctx.prec == 53


def test_each_thread_has_its_own_context() -> None:
    seen: list[object] = []

    def run() -> None:
        with context(20) as ctx:
            seen.append(ctx)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    with context(20) as mine:
        assert seen and seen[0] is not mine


def test_exactly_one_precision_is_given() -> None:
    with pytest.raises(TypeError), context():
        pass
    with pytest.raises(TypeError), context(30, prec=100):
        pass
