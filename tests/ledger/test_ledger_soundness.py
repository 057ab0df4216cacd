"""Issue 10, items 1-8: the ledger never lets a budget be exceeded, lost or rolled back.

Each test names the item it covers; each failed on the main branch before the fix.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import shutil
import signal
import sqlite3
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import dpledger as dpl
import dpledger.accountant as acc
from dpledger import events as ev
from dpledger import mechanisms as mech
from dpledger.cli import main
from dpledger.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LedgerIntegrityError,
    NotApplicableError,
)

KEY = b"a secret key"


def _spend_n(ledger, n, event=None):
    for i in range(n):
        ledger.spend(event or ev.PureDP(0.01), label=f"q{i}")


# -- item 1: stale-handle planning ---------------------------------------------------------


def test_stale_handle_cannot_plan_over_other_spends(tmp_path):
    """Issue 10 item 1: a plan made through a stale handle cannot ignore another's spend."""
    path = tmp_path / "plan.ledger"
    a = dpl.Ledger(3.6, 1e-6, path=path, accountant="basic")
    b = dpl.Ledger.open(path)
    b.spend(ev.PureDP(0.5))
    schedule = [ev.PureDP(0.1)] * 60
    with pytest.raises(InvalidArgumentError, match="nothing recorded"):
        a.plan(schedule, method="optimal")
    # nothing was recorded, and a now knows about b's spend
    with dpl.Ledger.open(path) as check:
        assert [r.kind for r in check.receipts] == ["spend"]
    # what the file holds can never exceed the budget by an exact method
    for _ in range(100):
        try:
            a.spend(ev.PureDP(0.1))
        except BudgetExceededError:
            break
    with dpl.Ledger.open(path) as check:
        events = tuple(r.event for r in check.receipts)
    assert acc.epsilon(ev.Composed(events), 1e-6, method="optimal") <= 3.6
    a.close()
    b.close()


def test_second_stale_plan_cannot_replace_the_first(tmp_path):
    """Issue 10 item 1: a second plan (from a handle that has not seen the first) is refused."""
    path = tmp_path / "plan2.ledger"
    a = dpl.Ledger(3.6, 1e-6, path=path)
    b = dpl.Ledger.open(path)
    a.plan([ev.PureDP(0.1)] * 60, method="optimal")
    with pytest.raises(InvalidArgumentError, match="nothing recorded"):
        b.plan([ev.PureDP(0.5)] * 7, method="optimal")
    assert b.accountant == "plan"  # b has read a's plan inside the refused transaction
    with pytest.raises(NotApplicableError, match="planned schedule"):
        b.spend(ev.PureDP(0.5))
    for _ in range(60):
        b.spend(ev.PureDP(0.1))
    with pytest.raises(BudgetExceededError, match="planned releases were made"):
        a.spend(ev.PureDP(0.1))
    with dpl.Ledger.open(path) as check:
        assert len(check.receipts) == 61 and check.planned_remaining == []
    a.close()
    b.close()


def test_plan_is_a_filter_kept_in_order():
    """Issue 10 item 1: the plan is a currency; releases come in the declared order."""
    ledger = dpl.Ledger(5.0, 1e-6)
    schedule = [ev.PureDP(0.2), ev.Gaussian(20.0), ev.Gaussian(20.0), ev.PureDP(0.3)]
    ledger.plan(schedule, method="pld")
    assert ledger.accountant == "plan" and ledger.budget == dpl.ledger.ScheduleBudget(4.0)
    assert ledger.fits(ev.Gaussian(20.0)) == 0  # the next one is the PureDP(0.2)
    with pytest.raises(NotApplicableError, match="declared order"):
        ledger.spend(ev.Gaussian(20.0))
    ledger.spend(ev.PureDP(0.2))
    assert ledger.fits(ev.Gaussian(20.0)) == 2
    assert ledger.planned_remaining == schedule[1:]
    # receipts re-verify through the same transition
    again = dpl.Ledger.from_dict(ledger.to_dict())
    assert again.planned_remaining == schedule[1:]
    assert again.spent[0] <= 5.0


# -- item 2: rollback of a keyed ledger -----------------------------------------------------


def _rows(path):
    conn = sqlite3.connect(path)
    genesis = conn.execute("SELECT value FROM meta WHERE key='genesis'").fetchone()[0]
    hashes = [h for (h,) in conn.execute("SELECT hash FROM receipts ORDER BY seq")]
    conn.close()
    return genesis, hashes


def _rollback(path, keep, head_hash, seal=None):
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM receipts WHERE seq >= ?", (keep,))
    head = {"count": keep, "hash": head_hash}
    if seal is not None:
        head["seal"] = seal
    conn.execute(
        "UPDATE meta SET value=? WHERE key='head'",
        (json.dumps(head, sort_keys=True, separators=(",", ":")),),
    )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("keep", [0, 2])
def test_keyed_rollback_is_detected(tmp_path, keep):
    """Issue 10 item 2: deleting receipts and resetting the head needs the key."""
    path = tmp_path / "keyed.ledger"
    with dpl.Ledger(1.0, 0.0, path=path, key=KEY) as ledger:
        _spend_n(ledger, 5, ev.PureDP(0.15))
    genesis, hashes = _rows(path)
    target = genesis if keep == 0 else hashes[keep - 1]
    # the attacker can compute an unkeyed seal, but not the HMAC
    from dpledger.ledger.store import seal

    _rollback(path, keep, target, seal=seal(keep, target, None))
    with pytest.raises(LedgerIntegrityError, match="seal"):
        dpl.Ledger.open(path, key=KEY)


def test_replayed_old_copy_is_detected_with_expect_head(tmp_path):
    """Issue 10 item 2: an authentic older copy is detected against a recorded head."""
    path = tmp_path / "replay.ledger"
    with dpl.Ledger(1.0, 0.0, path=path, key=KEY) as ledger:
        _spend_n(ledger, 2, ev.PureDP(0.1))
    shutil.copy(path, tmp_path / "backup.ledger")
    with dpl.Ledger.open(path, key=KEY) as ledger:
        _spend_n(ledger, 3, ev.PureDP(0.1))
        recorded = ledger.head
    shutil.copy(tmp_path / "backup.ledger", path)
    assert len(dpl.Ledger.open(path, key=KEY).receipts) == 2  # authentic, so it verifies
    with pytest.raises(LedgerIntegrityError, match="rolled back"):
        dpl.Ledger.open(path, key=KEY, expect_head=recorded)


# -- item 3: truncated exports ------------------------------------------------------------


@pytest.mark.parametrize("key", [None, KEY])
def test_truncated_export_is_refused(key):
    """Issue 10 item 3: exports carry the (sealed) head and are verified on import."""
    ledger = dpl.Ledger(1.0, 0.0, key=key)
    _spend_n(ledger, 5, ev.PureDP(0.1))
    data = ledger.to_dict()
    assert dpl.Ledger.from_dict(data, key=key).spent == ledger.spent
    cut = copy.deepcopy(data)
    cut["receipts"] = cut["receipts"][:2]
    with pytest.raises(LedgerIntegrityError, match="head"):
        dpl.Ledger.from_dict(cut, key=key)
    no_head = {k: v for k, v in data.items() if k != "head"}
    with pytest.raises(InvalidArgumentError, match="head"):
        dpl.Ledger.from_dict(no_head, key=key)


def test_keyed_export_head_cannot_be_moved_without_key():
    """Issue 10 item 3: with a key, truncating *and* rewriting the head is refused."""
    from dpledger.ledger.store import seal

    ledger = dpl.Ledger(1.0, 0.0, key=KEY)
    _spend_n(ledger, 5, ev.PureDP(0.1))
    data = ledger.to_dict()
    data["receipts"] = data["receipts"][:2]
    last = data["receipts"][-1]["hash"]
    data["head"] = {"count": 2, "hash": last, "seal": seal(2, last, None)}
    with pytest.raises(LedgerIntegrityError, match="seal"):
        dpl.Ledger.from_dict(data, key=KEY)


# -- item 4: committed receipts only in the -wal file --------------------------------------


def test_killed_process_leaves_every_receipt_in_the_main_file(tmp_path):
    """Issue 10 item 4: after commit + SIGKILL, a copy of the .ledger file alone is complete."""
    path = tmp_path / "wal.ledger"
    with dpl.Ledger(1.0, 0.0, path=path) as ledger:
        _spend_n(ledger, 3, ev.PureDP(0.05))
    pid = os.fork()
    if pid == 0:
        try:
            child = dpl.Ledger.open(path)
            _spend_n(child, 5, ev.PureDP(0.05))
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    backup = tmp_path / "backup.ledger"
    shutil.copyfile(path, backup)  # the main file only, as a backup tool would
    for side in ("-wal", "-shm", "-journal"):
        extra = tmp_path / f"wal.ledger{side}"
        if extra.exists():
            extra.unlink()
    for candidate in (backup, path):
        with dpl.Ledger.open(candidate) as reopened:
            assert len(reopened.receipts) == 8
            assert reopened.spent[0] == pytest.approx(0.4)


# -- item 5: one persisted Ledger shared by threads ----------------------------------------


def test_threads_share_one_persisted_ledger(tmp_path):
    """Issue 10 item 5: 8 threads × 30 spends on one persisted object all work."""
    path = tmp_path / "threads.ledger"
    ledger = dpl.Ledger(1.0, 0.0, path=path)
    successes, failures = [], []

    def work():
        ok = 0
        for _ in range(30):
            try:
                ledger.spend(ev.PureDP(0.005))
                ok += 1
            except BudgetExceededError:
                pass
            except Exception as error:  # anything else is the defect
                failures.append(error)
        successes.append(ok)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sum(successes) == len(ledger.receipts) == 199  # 200 × float(0.005) > 1
    with dpl.Ledger.open(path) as check:
        assert len(check.receipts) == 199
        events = ev.Composed(tuple(r.event for r in check.receipts))
        assert acc.epsilon(events, 0.0, method="basic") <= 1.0
    ledger.close()


# -- item 6: false integrity errors under concurrency ---------------------------------------


def test_open_while_another_process_writes_never_fails(tmp_path):
    """Issue 10 item 6: verification reads one snapshot, so a concurrent commit is harmless."""
    path = tmp_path / "snap.ledger"
    stop = tmp_path / "stop"
    dpl.Ledger(1e6, 0.0, path=path).close()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with dpl.Ledger.open(path) as writer:
                deadline = time.monotonic() + 60.0
                while not stop.exists() and time.monotonic() < deadline:
                    writer.spend(ev.PureDP(0.001))
                    time.sleep(0.001)
            code = 0
        finally:
            os._exit(code)
    errors, sizes = [], []
    try:
        time.sleep(0.2)
        for _ in range(30):
            try:
                with dpl.Ledger.open(path) as reader:
                    reader.refresh()
                    sizes.append(len(reader.receipts))
            except LedgerIntegrityError as error:
                errors.append(error)
    finally:
        stop.touch()
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert errors == []
    assert len(sizes) == 30 and sizes[-1] > sizes[0]  # the writer really was writing


# -- item 7: mechanisms validate before the charge, and are frozen -------------------------


@pytest.mark.parametrize(
    ("mechanism", "value"),
    [
        (lambda: mech.RandomizedResponse(0.5, 3), 7),
        (lambda: mech.RandomizedResponse(0.5, 3), True),
        (lambda: mech.Exponential(1.0), [1.0, float("nan"), 2.0]),
        (lambda: mech.PermuteAndFlip(1.0), []),
        (lambda: mech.ReportNoisyMax(1.0), [float("inf")]),
    ],
)
def test_release_charges_nothing_for_malformed_input(mechanism, value):
    """Issue 10 item 7: every mechanism validates before the charge."""
    ledger = dpl.Ledger(5.0, 0.0)
    with pytest.raises(InvalidArgumentError, match=r"`value`|`scores`"):
        ledger.release(mechanism(), value)
    assert ledger.receipts == ()


def test_every_mechanism_has_validate():
    """Issue 10 item 7: validate is part of the contract (abstract), not optional."""
    from dpledger.mechanisms.base import Mechanism

    assert "validate" in Mechanism.__abstractmethods__
    for name in mech.__all__:
        cls = getattr(mech, name)
        if isinstance(cls, type) and issubclass(cls, Mechanism) and cls is not Mechanism:
            assert "validate" not in getattr(cls, "__abstractmethods__", ()), name


@pytest.mark.parametrize(
    ("mechanism", "field", "value"),
    [
        (lambda: mech.Gaussian(1.0), "sensitivity", 100.0),
        (lambda: mech.Gaussian(1.0), "safe", False),
        (lambda: mech.Laplace(1.0), "granularity", 1.0),
        (lambda: mech.DiscreteGaussian(1.0), "sigma", 1e-3),
        (lambda: mech.RandomizedResponse(1.0), "epsilon", 0.0),
        (lambda: mech.Exponential(1.0), "sensitivity", 1e-9),
    ],
)
def test_mechanisms_are_frozen(mechanism, field, value):
    """Issue 10 item 7: changing a mechanism would silently change what is charged."""
    m = mechanism()
    before = m.event
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(m, field, value)
    assert m.event == before


def test_knorm_and_wishart_warn_like_unsafe_laplace():
    """Issue 10 item 7: floating-point samplers warn, as Laplace(safe=False) does."""
    from dpledger.mechanisms import FloatingPointWarning

    with pytest.warns(FloatingPointWarning, match="KNorm"):
        mech.KNorm(1.0, dimension=3)
    with pytest.warns(FloatingPointWarning, match="Wishart"):
        mech.Wishart(1.0, 1.0, dimension=2)
    with pytest.warns(FloatingPointWarning, match="Laplace"):
        mech.Laplace(1.0, safe=False)


# -- item 8: smaller defects ---------------------------------------------------------------


def test_foreign_sqlite_database_is_refused_and_untouched(tmp_path):
    """Issue 10 item 8: another application's SQLite database never becomes a ledger."""
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    conn.execute("INSERT INTO customers VALUES (1, 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerIntegrityError, match="another application"):
        dpl.Ledger(1.0, 0.0, path=path)
    with pytest.raises(LedgerIntegrityError, match="not a dpledger ledger"):
        dpl.Ledger.open(path)
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"customers"}


def test_fits_agrees_with_spending_exactly():
    """Issue 10 item 8: fits() said 200 where the 200th spend was refused (200 × 0.01 > 2)."""
    ledger = dpl.Ledger(2.0, 0.0)
    event = ev.PureDP(0.01)
    n = ledger.fits(event)
    for _ in range(n):
        ledger.spend(event)
    with pytest.raises(BudgetExceededError):
        ledger.spend(event)
    assert ledger.fits(event) == 0
    assert n == 199  # float(0.01) = 0.01000000000000000020816681711721685...
    assert sum(__import__("fractions").Fraction(0.01) for _ in range(200)) > 2


@pytest.mark.parametrize("accountant", ["basic", "zcdp", "gdp", "rdp"])
def test_fits_agrees_with_spending_for_every_filter(accountant):
    """Issue 10 item 8: the property behind it, for every filter."""
    rng = np.random.default_rng(3)
    for _ in range(3):
        ledger = dpl.Ledger(float(rng.uniform(0.5, 2.0)), 1e-6, accountant=accountant)
        if accountant == "basic":
            event = ev.PureDP(float(rng.uniform(0.01, 0.2)))
        else:
            event = ev.Gaussian(float(rng.uniform(3.0, 15.0)))
        n = ledger.fits(event)
        for _ in range(n):
            ledger.spend(event)
        with pytest.raises(BudgetExceededError):
            ledger.spend(event)


def test_corrupt_and_truncated_files_give_integrity_errors(tmp_path):
    """Issue 10 item 8: a corrupt or truncated file is a LedgerIntegrityError, not sqlite3's."""
    path = tmp_path / "good.ledger"
    with dpl.Ledger(1.0, 0.0, path=path) as ledger:
        _spend_n(ledger, 20)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.ledger"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.ledger"
    garbage.write_bytes(b"this is not a database" * 100)
    for bad in (truncated, garbage):
        with pytest.raises(LedgerIntegrityError):
            dpl.Ledger.open(bad)
        with pytest.raises(LedgerIntegrityError):
            dpl.Ledger(1.0, 0.0, path=bad)


def test_directory_and_missing_parent_give_clear_errors(tmp_path):
    """Issue 10 item 8: a directory or a missing directory is named in a clear error."""
    with pytest.raises(InvalidArgumentError, match="directory"):
        dpl.Ledger(1.0, 0.0, path=tmp_path)
    with pytest.raises(InvalidArgumentError, match="directory"):
        dpl.Ledger(1.0, 0.0, path=tmp_path / "missing" / "x.ledger")
    with pytest.raises(InvalidArgumentError, match="directory"):
        dpl.Ledger.open(tmp_path)
    with pytest.raises(InvalidArgumentTypeError, match="`path`"):
        dpl.Ledger(1.0, 0.0, path=3.5)


def _read_only_checks(path):
    """Run as a user who cannot write the ledger's directory: read it, refuse to spend."""
    with dpl.Ledger.open(path, readonly=True) as ledger:
        assert len(ledger.receipts) == 2
    assert main(["ledger", "show", str(path)]) == 0
    with pytest.raises(InvalidArgumentError, match=r"read-only|cannot open"):
        dpl.Ledger.open(path).spend(ev.PureDP(0.1))


def test_read_only_directory(tmp_path):
    """Issue 10 item 8: a ledger in a read-only directory can be read and shown."""
    import tempfile

    folder = Path(tempfile.mkdtemp(dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        path = folder / "l.ledger"
        with dpl.Ledger(1.0, 0.0, path=path) as ledger:
            _spend_n(ledger, 2)
        if os.geteuid() != 0:
            folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
            try:
                _read_only_checks(path)
            finally:
                folder.chmod(stat.S_IRWXU)
            return
        # as root, permissions do not bind: check as an unprivileged user in a child
        folder.chmod(0o755)
        path.chmod(0o644)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                _read_only_checks(path)
                code = 0
            except BaseException as error:  # report through the exit status
                os.write(2, f"read-only check failed: {error!r}\n".encode())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_readonly_open_reads_and_refuses_spends(tmp_path, capsys):
    """Issue 10 item 8: `readonly=True` writes nothing (no journal, no file) and refuses spends."""
    path = tmp_path / "l.ledger"
    with dpl.Ledger(1.0, 0.0, path=path) as ledger:
        _spend_n(ledger, 2)
    before = sorted(p.name for p in tmp_path.iterdir())
    mtime = path.stat().st_mtime_ns
    with dpl.Ledger.open(path, readonly=True) as ledger:
        assert len(ledger.receipts) == 2
        with pytest.raises(InvalidArgumentError, match="read-only"):
            ledger.spend(ev.PureDP(0.1))
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert path.stat().st_mtime_ns == mtime
    assert main(["ledger", "show", str(path)]) == 0
    assert "2 receipts" in capsys.readouterr().out


def test_cli_missing_key_file_is_a_clear_error(tmp_path, capsys):
    """Issue 10 item 8: `ledger show --key-file missing` is an error message, exit 2."""
    path = tmp_path / "k.ledger"
    with dpl.Ledger(1.0, 0.0, path=path, key=KEY) as ledger:
        _spend_n(ledger, 1)
    assert main(["ledger", "show", str(path), "--key-file", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "key" in err and "nope" in err and "Traceback" not in err
    assert main(["ledger", "show", str(tmp_path / "absent.ledger")]) == 2
    assert main(["ledger", "show", str(tmp_path)]) == 2


# -- a budget is never duplicated ----------------------------------------------------------


def test_copies_share_the_budget_and_pickling_is_refused_in_memory(tmp_path):
    """A copy of a ledger would duplicate its budget: copies are the same object."""
    ledger = dpl.Ledger(1.0, 0.0)
    assert copy.copy(ledger) is ledger and copy.deepcopy(ledger) is ledger
    with pytest.raises(TypeError, match="duplicate"):
        pickle.dumps(ledger)
    keyed = dpl.Ledger(1.0, 0.0, path=tmp_path / "k.ledger", key=KEY)
    with pytest.raises(TypeError, match="key"):
        pickle.dumps(keyed)
    stored = dpl.Ledger(1.0, 0.0, path=tmp_path / "s.ledger")
    stored.spend(ev.PureDP(0.5))
    again = pickle.loads(pickle.dumps(stored))
    again.spend(ev.PureDP(0.5))
    with pytest.raises(BudgetExceededError):
        stored.spend(ev.PureDP(0.1))  # the file's budget, shared


# -- acceptance: ledger stress -------------------------------------------------------------


def _stress_writer(path, seed, out_fd):
    rng = np.random.default_rng(seed)
    ok = 0
    with dpl.Ledger.open(path) as ledger:
        for _ in range(500):
            try:
                ledger.spend(ev.Gaussian(float(rng.uniform(20.0, 400.0))))
                ok += 1
            except BudgetExceededError:
                pass
    os.write(out_fd, f"W {ok}\n".encode())


def _stress_verifier(path, stop_path, out_fd):
    opened = errors = 0
    while not os.path.exists(stop_path):
        try:
            with dpl.Ledger.open(path, readonly=True) as ledger:
                total = ledger.spent[0]
                assert total <= 1.0
            opened += 1
        except LedgerIntegrityError as error:
            errors += 1
            os.write(out_fd, f"E {error}\n".encode())
    os.write(out_fd, f"V {opened} {errors}\n".encode())


def _fork(target, *args):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            target(*args)
            code = 0
        finally:
            os._exit(code)
    return pid


@pytest.mark.slow
def test_stress_eight_writers_four_verifiers(tmp_path):
    """Issue 10 acceptance: 8 processes × 500 spends while 4 processes open and verify in a
    loop — no overspend (checked by an independent accountant), no false integrity error."""
    path = tmp_path / "stress.ledger"
    stop = tmp_path / "stop"
    dpl.Ledger(1.0, 1e-6, accountant="gdp", path=path).close()
    read_fd, write_fd = os.pipe()
    verifiers = [_fork(_stress_verifier, path, stop, write_fd) for _ in range(4)]
    writers = [_fork(_stress_writer, path, seed, write_fd) for seed in range(8)]
    statuses = [os.waitpid(pid, 0)[1] for pid in writers]
    stop.touch()
    statuses += [os.waitpid(pid, 0)[1] for pid in verifiers]
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        lines = pipe.read().splitlines()
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in statuses), lines
    successes = sum(int(line.split()[1]) for line in lines if line.startswith("W "))
    verified = [line.split() for line in lines if line.startswith("V ")]
    assert len(verified) == 4
    assert sum(int(v[2]) for v in verified) == 0, [x for x in lines if x.startswith("E ")]
    assert sum(int(v[1]) for v in verified) >= 4  # the verifiers really ran
    with dpl.Ledger.open(path) as ledger:
        assert len(ledger.receipts) == successes > 100
        events = ev.Composed(tuple(r.event for r in ledger.receipts))
        # μ-GDP of the composition, exactly: sqrt(Σ 1/σ²) — independent of the filter code
        mu = float(np.sqrt(sum(1.0 / r.event.sigma**2 for r in ledger.receipts)))
        assert acc.gaussian_epsilon(1e-6, sigma=1.0 / mu) <= 1.0
        assert acc.epsilon(events, 1e-6, method="gdp") <= 1.0
