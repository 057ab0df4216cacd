"""Issue 35 acceptance, load and faults (slow): many client processes on one ledger.

* Load: 16 processes × 200 spends on a PostgreSQL ledger sized for exactly 1,000 of them
  (8 processes on a file): exactly 1,000 receipts, spent ≤ limit exactly, every spend a
  client saw succeed is a receipt, releases per client within a factor 2.
* Faults: clients SIGKILLed mid-transaction; the postmaster SIGKILLed and restarted; the
  server SIGSTOPped for longer than the client timeout. No overspend, no lost
  acknowledged receipt, a dpledger error (never a hang, never a raw psycopg error), and
  the ledger verifies afterwards.

Timings are measured by benchmarks/ledger_team.py, not asserted here.
"""

from __future__ import annotations

import os
import random
import signal
import time
from fractions import Fraction
from pathlib import Path

import pytest

import dpledger as dpl
from dpledger import mechanisms
from tests.ledger import _load
from tests.ledger._postgres import start_cluster, wait_until_ready

pytestmark = pytest.mark.slow

STEP = mechanisms.Laplace(scale=1000.0)  # ε = 1/1000 exactly: a budget of 1 fits 1,000


def _check_load(ledger, outcomes, clients):
    receipts = ledger.receipts
    assert len(receipts) == 1000
    acknowledged = sorted(seq for o in outcomes for seq in o.ok)
    assert acknowledged == list(range(1000))  # each success is a receipt, each receipt one
    assert not any(o.raw for o in outcomes) and all(o.done for o in outcomes)
    assert ledger._state.total == (Fraction(1), Fraction(0))  # spent = limit, exactly
    assert ledger.spent == (1.0, 0.0)
    counts = [len(o.ok) for o in outcomes]
    print(f"releases per client ({clients} clients): {sorted(counts)}")
    assert _load.spread(counts) <= 2.0, counts
    assert ledger.verify() == 1000


def test_pg_sixteen_clients_spend_exactly_the_budget(pg_url, tmp_path):
    url = pg_url("owner")
    dpl.Ledger(1.0, 0.0, path=url).close()
    clients = _load.start(pg_url("alice"), 16, 200, STEP, tmp_path)
    clients.go()
    outcomes = clients.wait()
    with dpl.Ledger.open(url) as ledger:
        _check_load(ledger, outcomes, 16)


def test_sqlite_eight_clients_spend_exactly_the_budget(tmp_path):
    path = tmp_path / "team.ledger"
    dpl.Ledger(1.0, 0.0, path=path).close()
    clients = _load.start(str(path), 8, 200, STEP, tmp_path)
    clients.go()
    outcomes = clients.wait()
    with dpl.Ledger.open(path) as ledger:
        _check_load(ledger, outcomes, 8)


def _check_after_faults(where, outcomes, budget_receipts):
    assert not any(o.raw for o in outcomes), [o.raw for o in outcomes if o.raw]
    with dpl.Ledger.open(where) as ledger:
        committed = {r.seq for r in ledger.receipts}
        acknowledged = [seq for o in outcomes for seq in o.ok]
        assert len(acknowledged) == len(set(acknowledged))
        assert set(acknowledged) <= committed  # no acknowledged receipt lost
        assert len(committed) <= budget_receipts and ledger.spent[0] <= 10.0
        assert ledger.verify() == len(committed)
        ledger.spend(STEP)  # and it works again
    return len(acknowledged), len(committed)


def test_pg_clients_killed_mid_transaction(pg_url, tmp_path):
    url = pg_url("owner")
    dpl.Ledger(10.0, 0.0, path=url).close()
    rng = random.Random(5)
    clients = _load.start(pg_url("alice"), 8, 100_000, STEP, tmp_path)
    clients.go()
    for index in range(8):
        time.sleep(rng.uniform(0.1, 0.5))
        clients.kill(index)
    outcomes = clients.wait()
    acknowledged, committed = _check_after_faults(url, outcomes, 10_000)
    print(f"8 clients SIGKILLed: {acknowledged} acknowledged, {committed} committed")
    assert acknowledged > 50


@pytest.fixture
def own_cluster():
    """A cluster of this test's own (it is killed or stopped)."""
    cluster, reason = start_cluster()
    if cluster is None:
        if os.environ.get("DPLEDGER_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield cluster
    finally:
        cluster.stop()


def _server_processes(cluster) -> list[int]:
    postmaster = cluster.postmaster_pid()
    found = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = next(line for line in status.splitlines() if line.startswith("PPid:"))
            if int(ppid.split()[1]) == postmaster:
                found.append(int(entry.name))
    return found


def test_pg_postmaster_killed_and_restarted(own_cluster, tmp_path):
    url = own_cluster.url("owner", "crash")
    dpl.Ledger(10.0, 0.0, path=url).close()
    clients = _load.start(own_cluster.url("alice", "crash"), 4, 400, STEP, tmp_path, pause=0.005)
    clients.go()
    time.sleep(1.0)
    children = _server_processes(own_cluster)
    own_cluster.kill(signal.SIGKILL)  # the postmaster, mid-run
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in children[1:]):
        assert time.monotonic() < deadline, "the server processes did not exit"
        time.sleep(0.1)
    time.sleep(0.5)
    (own_cluster.data / "postmaster.pid").unlink(missing_ok=True)
    own_cluster.start()
    wait_until_ready(own_cluster)
    outcomes = clients.wait(timeout=300)
    errors = [e for o in outcomes for e in o.errors]
    assert errors and all("could not be reached" in e or "stopped answering" in e for e in errors)
    acknowledged, committed = _check_after_faults(url, outcomes, 10_000)
    print(
        f"postmaster SIGKILL: {acknowledged} acknowledged, {committed} committed, "
        f"{len(errors)} errors"
    )


def test_pg_server_stopped_longer_than_the_client_timeout(own_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("DPLEDGER_PG_TIMEOUT", "2")  # inherited by the forked clients
    url = own_cluster.url("owner", "stopped")
    dpl.Ledger(10.0, 0.0, path=url).close()
    clients = _load.start(own_cluster.url("alice", "stopped"), 4, 300, STEP, tmp_path, pause=0.005)
    clients.go()
    time.sleep(1.0)
    stopped = _server_processes(own_cluster)
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(6.0)  # three client timeouts
    for pid in stopped:
        os.kill(pid, signal.SIGCONT)
    outcomes = clients.wait(timeout=300)
    errors = [e for o in outcomes for e in o.errors]
    assert errors and all("stopped answering" in e or "could not be reached" in e for e in errors)
    slowest = max(o.slowest for o in outcomes)
    assert slowest < 3 * 2.0 + 2.0, slowest  # an error within the timeouts, never a hang
    acknowledged, committed = _check_after_faults(url, outcomes, 10_000)
    print(
        f"SIGSTOP 6 s (client timeout 2 s): {acknowledged} acknowledged, {committed} "
        f"committed, {len(errors)} errors, slowest call {slowest:.2f} s"
    )
