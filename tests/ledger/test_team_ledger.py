"""Issue 35, the team ledger: PostgreSQL store, principals, O(1) open, roles, quotas, copy.

The PostgreSQL tests run against a throwaway cluster (tests/ledger/conftest.py); they are
skipped with the reason where PostgreSQL is missing, and fail instead in CI
(DPLEDGER_REQUIRE_POSTGRES=1). Load, fault and performance tests are in
test_team_ledger_slow.py (marked slow).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from fractions import Fraction

import pytest

import dpledger as dpl
from dpledger import events as ev
from dpledger.cli import main
from dpledger.errors import (
    BudgetExceededError,
    InvalidArgumentError,
    LedgerIntegrityError,
)
from dpledger.ledger import chain as chain_module
from dpledger.ledger import quotas as quota_module

KEY = b"kept in a vault"
CHECKPOINT_EVERY = 8  # the tests move the checkpoint more often than the stores (64) do


@pytest.fixture(autouse=True)
def _frequent_checkpoints(monkeypatch):
    monkeypatch.setattr(chain_module, "CHECKPOINT_EVERY", CHECKPOINT_EVERY)


def _spend(ledger, n, event=None):
    for _ in range(n):
        ledger.spend(event or ev.Gaussian(sigma=40.0))


# -- principals and freshness (both stores) ------------------------------------------------


def test_every_receipt_names_who_spent(tmp_path):
    with dpl.Ledger(1.0, 1e-6, path=tmp_path / "who.ledger") as ledger:
        receipt = ledger.spend(ev.Gaussian(40.0))
    who = receipt.principal
    assert set(who) >= {"user", "host", "pid", "program"} and who["user"]
    with dpl.Ledger.open(tmp_path / "who.ledger") as again:
        assert again.receipts[0].principal == who  # hashed with the receipt, so verified


def test_a_handle_sees_other_handles_spends_when_read(tmp_path):
    """Issue 35 item 6: the parent handle showed 0 receipts until its own next spend."""
    path = tmp_path / "fresh.ledger"
    parent = dpl.Ledger(1.0, 1e-6, accountant="gdp", path=path)
    child = dpl.Ledger.open(path)
    _spend(child, 3)
    assert len(parent.receipts) == 3
    assert parent.spent == child.spent and parent.spent[0] > 0
    assert parent.remaining == child.remaining
    assert parent.head == child.head
    parent.close()
    child.close()


# -- O(1) open from a sealed checkpoint (SQLite) ----------------------------------------------


def _long(path, n, key=None):
    with dpl.Ledger(5.0, 1e-6, accountant="gdp", path=path, key=key) as ledger:
        _spend(ledger, n, ev.Gaussian(sigma=200.0))
        return ledger.head, ledger.spent


def test_open_starts_at_the_checkpoint_and_everything_still_reads(tmp_path):
    path = tmp_path / "long.ledger"
    n = 2 * CHECKPOINT_EVERY + 5
    head, spent = _long(path, n)
    with dpl.Ledger.open(path) as again:
        assert again._first == 2 * CHECKPOINT_EVERY  # only the last 5 were replayed
        assert again.spent == spent and again.head == head
        again.spend(ev.Gaussian(sigma=200.0))
        assert [r.seq for r in again.receipts] == list(range(n + 1))
        assert again.verify() == n + 1
    with dpl.Ledger.open(path, expect_head=head) as again:  # O(1) too: one hash read
        assert again._first > 0


def test_an_old_edit_is_found_by_full_verification(tmp_path, capsys):
    """Opening checks only the tail; `dpledger ledger verify` re-checks everything."""
    path = tmp_path / "edited.ledger"
    _long(path, CHECKPOINT_EVERY + 3)
    conn = sqlite3.connect(path)
    body = json.loads(conn.execute("SELECT body FROM receipts WHERE seq=3").fetchone()[0])
    body["label"] = "edited"
    conn.execute(
        "UPDATE receipts SET body=? WHERE seq=3",
        (json.dumps(body, sort_keys=True, separators=(",", ":")),),
    )
    conn.commit()
    conn.close()
    with dpl.Ledger.open(path) as ledger:
        assert ledger.spent[0] > 0  # the tail after the checkpoint verifies
        with pytest.raises(LedgerIntegrityError, match="receipt 3"):
            ledger.verify()
    assert main(["ledger", "verify", str(path)]) == 2
    assert "receipt 3" in capsys.readouterr().err


def test_a_rewritten_running_total_is_refused(tmp_path):
    path = tmp_path / "total.ledger"
    _long(path, 5)
    conn = sqlite3.connect(path)
    state = json.loads(conn.execute("SELECT value FROM meta WHERE key='state'").fetchone()[0])
    state["total"] = ["0/1"]
    conn.execute(
        "UPDATE meta SET value=? WHERE key='state'",
        (json.dumps(state, sort_keys=True, separators=(",", ":")),),
    )
    conn.commit()
    conn.close()
    with pytest.raises(LedgerIntegrityError, match="state"):
        dpl.Ledger.open(path)


def test_a_file_without_a_state_is_verified_whole_and_gains_one(tmp_path):
    path = tmp_path / "old.ledger"
    _long(path, CHECKPOINT_EVERY + 2)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM meta WHERE key='state'")  # as written before issue 35
    conn.commit()
    conn.close()
    with dpl.Ledger.open(path) as ledger:
        assert ledger._first == 0
        ledger.spend(ev.Gaussian(sigma=200.0))
    with dpl.Ledger.open(path) as ledger:
        assert ledger._first == CHECKPOINT_EVERY + 3 and ledger.verify() == CHECKPOINT_EVERY + 3


def test_an_older_writer_leaves_a_stale_state_and_open_verifies_whole(tmp_path):
    """A version before issue 35 appends without moving the state: nothing breaks."""
    path = tmp_path / "mixed.ledger"
    _long(path, CHECKPOINT_EVERY + 2)
    conn = sqlite3.connect(path)
    state = conn.execute("SELECT value FROM meta WHERE key='state'").fetchone()[0]
    conn.close()
    with dpl.Ledger.open(path) as ledger:
        ledger.spend(ev.Gaussian(sigma=200.0))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE key='state'", (state,))  # as if not moved
    conn.commit()
    conn.close()
    with dpl.Ledger.open(path) as ledger:
        assert ledger._first == 0 and len(ledger.receipts) == CHECKPOINT_EVERY + 3


def test_postgresql_without_psycopg_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(InvalidArgumentError, match=r"dpledger\[postgres\]"):
        dpl.Ledger(1.0, 1e-6, path="postgresql://alice@db.example/studies?ledger=x")


def test_a_keyed_state_cannot_be_forged(tmp_path):
    path = tmp_path / "keyed.ledger"
    _long(path, 4, key=KEY)
    conn = sqlite3.connect(path)
    state = json.loads(conn.execute("SELECT value FROM meta WHERE key='state'").fetchone()[0])
    state["spent"] = [0.0, 0.0]
    body = {k: v for k, v in state.items() if k != "seal"}
    payload = "dpledger-state\n" + json.dumps(body, sort_keys=True, separators=(",", ":"))
    state["seal"] = hashlib.sha256(payload.encode()).hexdigest()  # no key: an unkeyed seal
    conn.execute(
        "UPDATE meta SET value=? WHERE key='state'",
        (json.dumps(state, sort_keys=True, separators=(",", ":")),),
    )
    conn.commit()
    conn.close()
    with pytest.raises(LedgerIntegrityError, match="seal"):
        dpl.Ledger.open(path, key=KEY)


# -- quotas (memory and file) ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["memory", "file"])
def test_a_quota_spend_must_fit_both(tmp_path, where):
    path = None if where == "memory" else tmp_path / "q.ledger"
    team = dpl.Ledger(1.0, 1e-6, accountant="gdp", path=path)
    alice = team.quota("alice", epsilon=0.3, delta=1e-7)
    step = ev.Gaussian(sigma=30.0)
    room = alice.fits(step)
    assert 0 < room < team.fits(step)
    for _ in range(room):
        assert alice.spend(step).quota == "alice"
    with pytest.raises(BudgetExceededError, match="quota 'alice'"):
        alice.spend(step)
    assert len(team.receipts) == room  # the refusal recorded nothing
    team.spend(step)  # the ledger itself still has room
    assert alice.spent[0] <= 0.3 and len(alice.receipts) == room
    with pytest.raises(InvalidArgumentError, match="fixed"):
        team.quota("alice", epsilon=0.5, delta=1e-7)
    if path is not None:
        team.close()
        with dpl.Ledger.open(path) as again:
            assert again.quota("alice", epsilon=0.3, delta=1e-7).fits(step) == 0
            assert again.verify() == room + 1


def test_a_quota_may_not_exceed_its_ledger():
    with pytest.raises(InvalidArgumentError, match="within its ledger"):
        dpl.Ledger(1.0, 1e-6).quota("x", epsilon=2.0, delta=1e-7)


def test_copy_file_to_file_keeps_chain_and_seal(tmp_path, capsys):
    source = tmp_path / "a.ledger"
    with dpl.Ledger(1.0, 1e-6, path=source, key=KEY) as ledger:
        ledger.quota("alice", epsilon=0.5, delta=1e-7).spend(ev.Gaussian(40.0))
        _spend(ledger, 3)
        head = ledger.head
    (tmp_path / "k").write_bytes(KEY)
    target = tmp_path / "b.ledger"
    assert (
        main(["ledger", "copy", str(source), str(target), "--key-file", str(tmp_path / "k")]) == 0
    )
    assert "copied 4 receipts" in capsys.readouterr().out
    with dpl.Ledger.open(target, key=KEY, expect_head=head) as copy:
        assert copy.head == head and copy.receipts[0].quota == "alice"
    assert (
        main(["ledger", "copy", str(source), str(target), "--key-file", str(tmp_path / "k")]) == 2
    )
    assert "already holds" in capsys.readouterr().err


# -- PostgreSQL ----------------------------------------------------------------------------


def test_pg_ledger_is_shared_and_fresh(pg_url):
    owner = dpl.Ledger(1.0, 1e-6, accountant="gdp", path=pg_url("owner"))
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger(1.0, 1e-6, accountant="gdp", path=pg_url("bob"))  # verified, same budget
    alice.spend(ev.Gaussian(40.0), label="alice's")
    bob.spend(ev.Gaussian(40.0), label="bob's")
    assert [r.label for r in owner.receipts] == ["alice's", "bob's"]  # never stale
    assert [r.principal["db_user"] for r in owner.receipts] == ["alice", "bob"]
    assert owner.spent == alice.spent == bob.spent
    assert owner.fits(ev.Gaussian(40.0)) == alice.fits(ev.Gaussian(40.0))
    with pytest.raises(InvalidArgumentError, match="different budget"):
        dpl.Ledger(2.0, 1e-6, path=pg_url("alice"))
    assert owner.verify() == 2
    for handle in (owner, alice, bob):
        handle.close()


def test_pg_everything_else_works_unchanged(pg_url, capsys):
    """Filters, plans, calibrate/reserve, key, expect_head, show: as on a file."""
    url = pg_url("owner")
    with dpl.Ledger(1.0, 1e-5, path=url, key=KEY) as ledger:
        mech = ledger.calibrate(lambda s: dpl.mechanisms.Gaussian(s), count=3, share=0.5)
        for _ in range(3):
            ledger.release(mech, 1.0, rng=0)
        head = ledger.head
    with dpl.Ledger.open(url.replace("owner@", "carol@"), key=KEY, expect_head=head) as read:
        assert len(read.receipts) == 3 and read.accountant == "gdp"
    with pytest.raises(LedgerIntegrityError):
        dpl.Ledger.open(url)  # created with a key
    assert main(["ledger", "show", url, "--key-file", "/nonexistent"]) == 2
    capsys.readouterr()
    planned = pg_url("owner", ledger=pg_url("owner").rsplit("=", 1)[1] + "-plan")
    with dpl.Ledger(3.6, 1e-6, path=planned) as ledger:
        ledger.plan([ev.PureDP(0.1)] * 60, method="optimal")
        _spend(ledger, 60, ev.PureDP(0.1))
        assert ledger.planned_remaining == []
    assert main(["ledger", "show", planned]) == 0
    out = capsys.readouterr().out
    assert "61 receipts" in out and "plan" in out


def test_pg_server_refuses_an_overspend_from_a_buggy_client(pg_url, monkeypatch):
    """Item 2: the database checks spent ≤ limit itself, in the spend's transaction."""
    url = pg_url("owner")
    dpl.Ledger(1.0, 0.0, accountant="basic", path=url).close()
    with dpl.Ledger.open(pg_url("alice")) as ledger:
        for _ in range(5):
            ledger.spend(epsilon=0.1)
        # a client whose check is broken: it believes everything fits
        monkeypatch.setattr(type(ledger._state.filter), "within", lambda self, total: True)
        with pytest.raises(BudgetExceededError, match="database refused"):
            ledger.spend(epsilon=0.5)
        monkeypatch.undo()
    with dpl.Ledger.open(pg_url("carol")) as check:
        assert len(check.receipts) <= 10 and check.spent[0] <= 1.0
        assert check.verify() == len(check.receipts)


def _count_locked_spends(monkeypatch):
    """Count the spends that take the locked (two-round-trip) path of the PostgreSQL store."""
    from dpledger.ledger.pgstore import PostgresStore

    locked = []
    original = PostgresStore._append

    def counted(self, *args, **kwargs):
        locked.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PostgresStore, "_append", counted)
    return locked


def test_pg_a_lone_spender_takes_one_round_trip_and_a_moved_head_the_locked_path(
    pg_cluster, pg_url, monkeypatch
):
    """A spend that follows the head its handle knows is one statement (head_is locks and
    checks the head); when someone else spent in between, nothing is written and the
    locked path appends after their receipts — the chain, the totals and both handles
    agree, and the handles go back to one round trip once alone again."""
    locked = _count_locked_spends(monkeypatch)
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger.open(pg_url("bob"))
    _spend(alice, 4, ev.PureDP(0.01))
    assert locked == []  # open read the head: every spend of a lone handle is one trip
    bob.spend(ev.PureDP(0.02), label="bob")  # bob's head is stale: zero rows, then locked
    assert len(locked) == 1
    alice.spend(ev.PureDP(0.03), label="alice after bob")  # alice's turn to find it moved
    assert len(locked) == 2
    _spend(alice, 2, ev.PureDP(0.01))  # contended last time: one locked spend, then alone
    assert len(locked) == 3
    _spend(alice, 3, ev.PureDP(0.01))
    assert len(locked) == 3
    with dpl.Ledger.open(pg_url("carol")) as check:
        assert check.verify() == 11
        assert [r.label for r in check.receipts][4:6] == ["bob", "alice after bob"]
        assert check.spent[0] == pytest.approx(0.14)
    assert alice.spent == bob.spent  # bob reads alice's later spends when asked
    name = pg_url("owner").rsplit("=", 1)[1]
    (row,) = pg_cluster.sql(
        f"SELECT total_num::text[], total_den::text[] FROM dpledger.ledgers WHERE name = '{name}'"
    )
    exact = Fraction(9 * Fraction(0.01)) + Fraction(0.02) + Fraction(0.03)
    assert Fraction(int(row[0][0]), int(row[1][0])) == exact
    alice.close()
    bob.close()


def test_pg_a_contended_spend_is_built_on_the_sealed_head_and_replays_after(
    pg_cluster, pg_url, monkeypatch
):
    """Under contention the head is held for O(1) work: the spend is built on the head's
    sealed state, and the receipts others appended are verified and replayed after the
    commit — a rewritten state (unkeyed, by the database superuser, with the database's
    own total rewritten to match) is found then, and the error says the spend was
    recorded (and nothing released)."""
    from dpledger.ledger import chain, persistence

    caught_up = []
    original = persistence.catch_up
    monkeypatch.setattr(
        persistence, "catch_up", lambda *a: caught_up.append(len(a[1])) or original(*a)
    )
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger.open(pg_url("bob"))
    _spend(alice, 2, ev.PureDP(0.1))
    bob.spend(ev.PureDP(0.1))
    assert caught_up == [2] and bob.spent[0] == pytest.approx(0.3)
    _spend(alice, 2, ev.PureDP(0.1))
    name = pg_url("owner").rsplit("=", 1)[1]
    ((state,),) = pg_cluster.sql(f"SELECT state FROM dpledger.ledgers WHERE name = '{name}'")
    tip, checkpoint = chain.check_state(json.loads(state), None, "test")
    lower = (Fraction(3, 10), *tip.total[1:])  # below the five spends of 0.1
    forged = chain.Tip(tip.count, tip.hash, tip.filter, lower, tip.spent, tip.quotas)
    record = chain.canonical(chain.state_record(forged, checkpoint, None))
    nums = ",".join(str(x.numerator) for x in lower)
    dens = ",".join(str(x.denominator) for x in lower)
    pg_cluster.sql(
        "SET session_replication_role = replica; "
        f"UPDATE dpledger.ledgers SET state = '{record}', total_num = '{{{nums}}}', "
        f"total_den = '{{{dens}}}' WHERE name = '{name}'"
    )
    with pytest.raises(
        LedgerIntegrityError, match=r"recorded \(receipt 5\) but nothing was released"
    ):
        bob.spend(ev.PureDP(0.1))
    with pytest.raises(LedgerIntegrityError, match="does not add up"):
        dpl.Ledger.open(pg_url("carol"))  # and opening the ledger finds it too
    alice.close()
    bob.close()


def test_pg_a_schema_without_head_is_still_spends(pg_cluster, pg_url, monkeypatch):
    """A database whose dpledger schema predates head_is: every spend takes the locked
    path, correctly; `dpledger ledger init-db` installs the function again."""
    locked = _count_locked_spends(monkeypatch)
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    pg_cluster.sql("DROP FUNCTION dpledger.head_is(text, bigint, text)")
    try:
        with dpl.Ledger.open(pg_url("alice")) as ledger:
            _spend(ledger, 3, ev.PureDP(0.1))
            assert len(locked) == 3
            assert ledger.verify() == 3
    finally:
        assert main(["ledger", "init-db", pg_cluster.url("postgres")]) == 0
    with dpl.Ledger.open(pg_url("alice")) as ledger:
        _spend(ledger, 2, ev.PureDP(0.1))
        assert len(locked) == 3
        assert ledger.spent[0] == pytest.approx(0.5)


def test_pg_a_refusal_on_a_stale_view_is_decided_again_on_the_head(pg_url):
    """A handle that has not seen another's spends is refused on the head, not on what it
    last knew: the refusal's remaining budget counts the other handle's spends."""
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger.open(pg_url("bob"))
    _spend(bob, 3, ev.PureDP(0.25))
    with pytest.raises(BudgetExceededError) as refused:
        alice.spend(ev.PureDP(0.5))  # fits what alice last knew (1.0), not the head (0.25)
    assert refused.value.remaining == bob.remaining
    assert len(alice.receipts) == 3
    alice.spend(ev.PureDP(0.25))
    assert bob.spent[0] == 1.0
    alice.close()
    bob.close()


def test_pg_a_refusal_is_reported_on_the_head_not_on_the_handles_view(pg_url):
    """A spend refused on what the handle last knew is decided again on the head, so the
    refusal states what really remains (not the stale remainder)."""
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger.open(pg_url("bob"))
    alice.spend(ev.PureDP(0.25))
    _spend(bob, 2, ev.PureDP(0.25))
    with pytest.raises(BudgetExceededError) as refused:
        alice.spend(ev.PureDP(0.9))  # over what alice knew remains (0.75) and the head (0.25)
    assert refused.value.remaining == bob.remaining
    assert len(alice.receipts) == 3
    alice.close()
    bob.close()


def test_pg_exact_totals_agree_with_the_client(pg_cluster, pg_url):
    """Exact rationals: ten Laplace(scale 10) releases use a basic budget of 1 exactly —
    and the database, holding numerators and denominators, agrees to the last digit."""
    url = pg_url("owner")
    with dpl.Ledger(1.0, 0.0, path=url) as ledger:
        for _ in range(10):
            ledger.spend(dpl.mechanisms.Laplace(scale=10.0))
        with pytest.raises(BudgetExceededError):
            ledger.spend(dpl.mechanisms.Laplace(scale=1e9))
        assert ledger.spent == (1.0, 0.0)
    name = url.rsplit("=", 1)[1]
    (row,) = pg_cluster.sql(
        f"SELECT total_num::text[], total_den::text[] FROM dpledger.ledgers WHERE name = '{name}'"
    )
    assert [Fraction(int(n), int(d)) for n, d in zip(*row, strict=True)] == [
        Fraction(1),
        Fraction(0),
    ]


def test_pg_quota_is_enforced_by_the_database(pg_url, monkeypatch):
    url = pg_url("owner")
    with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=url) as owner:
        owner.quota("alice", epsilon=0.2, delta=1e-7)
    with dpl.Ledger.open(pg_url("alice")) as ledger:
        with pytest.raises(InvalidArgumentError, match="dpledger_owner"):
            ledger.quota("mallory", epsilon=0.5, delta=1e-7)  # analysts cannot make quotas
        mine = ledger.quota("alice", epsilon=0.2, delta=1e-7)
        step = ev.Gaussian(sigma=30.0)
        for _ in range(mine.fits(step)):
            mine.spend(step)
        monkeypatch.setattr(
            quota_module,
            "debit",
            lambda ledger, name, currency, charge, totals=None: (
                currency.add(ledger._quota_totals[name], charge),
                (Fraction(10**9),),
            ),
        )
        with pytest.raises(BudgetExceededError, match="quota 'alice'"):
            mine.spend(step)


def test_pg_roles_least_privilege(pg_cluster, pg_url):
    """Item 3 and the security acceptance: tested by trying."""
    import psycopg

    url = pg_url("owner")
    name = url.rsplit("=", 1)[1]
    with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=url) as ledger:
        _spend(ledger, 2)
    with pytest.raises(InvalidArgumentError, match="dpledger_owner"):
        dpl.Ledger(1.0, 1e-6, path=pg_url("alice", ledger=name + "-new"))  # cannot create
    with pytest.raises(InvalidArgumentError, match="may not"):
        dpl.Ledger.open(pg_url("carol")).spend(ev.Gaussian(40.0))  # an auditor reads only
    with pytest.raises(InvalidArgumentError, match="may not"):
        dpl.Ledger.open(pg_url("eve"))  # no dpledger role: cannot even read

    def attempt(user, statement):
        with (
            psycopg.connect(pg_cluster.conninfo(user), autocommit=True) as conn,
            pytest.raises(psycopg.Error) as refused,
        ):
            conn.execute(statement)
        return refused.value

    for user in ("alice", "owner"):
        for statement in (
            f"UPDATE dpledger.receipts SET body = body WHERE ledger = '{name}'",
            f"DELETE FROM dpledger.receipts WHERE ledger = '{name}'",
            f"UPDATE dpledger.ledgers SET epsilon = 100 WHERE name = '{name}'",
            f"UPDATE dpledger.limits SET limit_num = '{{1000}}' WHERE ledger = '{name}'",
            f"DELETE FROM dpledger.ledgers WHERE name = '{name}'",
            "TRUNCATE dpledger.receipts",
        ):
            attempt(user, statement)
    raise_budget = (
        f"INSERT INTO dpledger.limits VALUES ('{name}', '', '{{\"accountant\":\"zcdp\"}}', "
        "'{1000}', '{1}')"
    )
    assert isinstance(attempt("alice", raise_budget), psycopg.errors.InsufficientPrivilege)
    assert "fixed" in str(attempt("owner", raise_budget))  # even the owner, once spent
    # even the superuser is stopped by the append-only trigger
    assert "append-only" in str(
        attempt("postgres", f"UPDATE dpledger.receipts SET hash = hash WHERE ledger = '{name}'")
    )


def test_pg_superuser_edit_is_detected_and_a_key_stops_forgery(pg_cluster, pg_url):
    plain, keyed = pg_url("owner"), pg_url("owner", ledger=pg_url().rsplit("=", 1)[1] + "-k")
    for url, key in ((plain, None), (keyed, KEY)):
        with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=url, key=key) as ledger:
            _spend(ledger, 3)
    bypass = "SET session_replication_role = replica; "  # a superuser disables the triggers
    name = plain.rsplit("=", 1)[1]
    pg_cluster.sql(
        bypass + "UPDATE dpledger.receipts SET body = replace(body, '\"sigma\":40.0', "
        f"'\"sigma\":4000.0') WHERE ledger = '{name}' AND seq = 0"
    )
    with pytest.raises(LedgerIntegrityError, match="receipt 0"):
        dpl.Ledger.open(plain).verify()
    # with a key: rewriting a receipt and recomputing its (unkeyed) hash is still caught
    name = keyed.rsplit("=", 1)[1]
    rows = pg_cluster.sql(
        f"SELECT seq, body, prev FROM dpledger.receipts WHERE ledger = '{name}' AND seq = 2"
    )
    _, body, prev = rows[0]
    forged = body.replace('"sigma":40.0', '"sigma":4000.0')
    digest = hashlib.sha256((prev + "\n" + forged).encode()).hexdigest()
    pg_cluster.sql(
        bypass + f"UPDATE dpledger.receipts SET body = '{forged}', hash = '{digest}' "
        f"WHERE ledger = '{name}' AND seq = 2; UPDATE dpledger.ledgers SET hash = '{digest}' "
        f"WHERE name = '{name}'"
    )
    with pytest.raises(LedgerIntegrityError):
        dpl.Ledger.open(keyed, key=KEY)


def test_pg_url_rules(pg_cluster, tmp_path):
    url = pg_cluster.url("owner", "x")
    with pytest.raises(InvalidArgumentError, match="password"):
        dpl.Ledger(1.0, 1e-6, path=url.replace("owner@", "owner:secret@"))
    with pytest.raises(InvalidArgumentError, match="password"):
        dpl.Ledger(1.0, 1e-6, path=url + "&password=secret")
    with dpl.Ledger(1.0, 1e-6, path=pg_cluster.url("owner")) as default:
        assert default.path.endswith("ledger=default")
    with pytest.raises(InvalidArgumentError, match="no ledger"):
        dpl.Ledger.open(pg_cluster.url("alice", "never-made"))
    pg_cluster.sql("CREATE DATABASE empty_db")
    try:
        with pytest.raises(InvalidArgumentError, match="init-db"):
            dpl.Ledger(1.0, 1e-6, path=pg_cluster.url("owner", "x", db="empty_db"))
    finally:
        pg_cluster.sql("DROP DATABASE empty_db")
    unreachable = "postgresql://owner@/postgres?host=/nonexistent&port=1&ledger=x"
    with pytest.raises(LedgerIntegrityError, match="could not be reached"):
        dpl.Ledger(1.0, 1e-6, path=unreachable)


def test_pg_init_db_is_idempotent_and_copy_round_trips(pg_cluster, pg_url, tmp_path, capsys):
    assert main(["ledger", "init-db", pg_cluster.url("postgres"), "--analyst", "bob"]) == 0
    assert "bob is a member of dpledger_analyst" in capsys.readouterr().out
    source = tmp_path / "study.ledger"
    with dpl.Ledger(1.0, 1e-6, path=source) as ledger:
        ledger.quota("alice", epsilon=0.5, delta=1e-7).spend(ev.Gaussian(40.0))
        _spend(ledger, 2)
        head = ledger.head
    url = pg_url("owner")
    assert main(["ledger", "copy", str(source), url]) == 0
    back = tmp_path / "back.ledger"
    assert main(["ledger", "copy", url.replace("owner@", "carol@"), str(back)]) == 0
    with dpl.Ledger.open(back, expect_head=head) as copy:
        assert copy.verify() == 3 and copy.receipts[0].quota == "alice"
    assert main(["ledger", "verify", url]) == 0
    out = capsys.readouterr().out
    assert "3 receipts" in out


def _random_sigmas(ledger, n, seed=3):
    import random

    rng = random.Random(seed)
    for _ in range(n):
        ledger.spend(ev.Gaussian(rng.uniform(2000.0, 4000.0)))


def test_long_exact_totals_survive_a_file(tmp_path):
    """Many different float σ: the exact total's denominator passes Python's 4,300-digit
    limit on int ↔ text conversion (the state is written in chunks)."""
    path = tmp_path / "long.ledger"
    with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=path) as ledger:
        ledger._store._connection().execute("PRAGMA synchronous=OFF")  # test speed only
        _random_sigmas(ledger, 200)
        assert ledger._state.total[0].denominator.bit_length() > 14_400  # > 4,300 digits
        spent = ledger.spent
    with dpl.Ledger.open(path) as again:
        assert again.spent == spent and again.verify() == 200


@pytest.mark.slow
def test_pg_long_exact_totals(pg_url):
    """Slow: with 200 different σ each spend's exact arithmetic grows (~35 ms at the end)."""
    with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=pg_url("owner")) as ledger:
        _random_sigmas(ledger, 200)
        spent = ledger.spent
    with dpl.Ledger.open(pg_url("carol")) as again:
        assert again.spent == spent and again.verify() == 200


def test_pg_an_automatic_ledger_settling_on_renyi_gets_its_budget_from_the_database(
    pg_cluster, pg_url, monkeypatch
):
    """The Rényi order is chosen at the first release: the database computes its budget
    (the conversion in exact numeric) and enforces it against a client that would not."""
    url = pg_url("owner")
    step = ev.PoissonSampled(ev.Gaussian(5.0), rate=0.5)  # 5 fit
    with dpl.Ledger(1.0, 1e-5, path=url) as ledger:
        ledger.spend(step)
        assert ledger.accountant == "rdp"
        _spend(ledger, ledger.fits(step), step)
        name = url.rsplit("=", 1)[1]
        (row,) = pg_cluster.sql(
            f"SELECT limit_num[1]::text, limit_den[1]::text FROM dpledger.ledgers "
            f"WHERE name = '{name}'"
        )
        server = Fraction(int(row[0]), int(row[1].split(".")[0]))
        assert Fraction(ledger._state.filter.limit()[0]) <= server  # the client is stricter
        monkeypatch.setattr(type(ledger._state.filter), "within", lambda self, total: True)
        with pytest.raises(BudgetExceededError, match="database refused"):
            for _ in range(100):
                ledger.spend(step)


def test_pg_the_documented_grants_are_the_installed_ones(pg_cluster):
    """docs/ledger.md lists the functions analysts may execute: exactly those installed."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "ledger.md").read_text()
    block = doc[doc.index("GRANT EXECUTE ON FUNCTION") :].split("TO dpledger_owner", 1)[0]
    documented = set(re.findall(r"dpledger\.(\w+)\(", block))
    installed = {
        name
        for (name,) in pg_cluster.sql(
            "SELECT DISTINCT routine_name FROM information_schema.role_routine_grants "
            "WHERE grantee = 'dpledger_analyst' AND routine_schema = 'dpledger'"
        )
    }
    assert documented == installed == {"lock_head", "sync", "head_is"}


def test_pg_a_rolled_back_database_is_refused_before_anything_is_written(pg_cluster, pg_url):
    """A handle that knows more receipts than the database has (a restored backup) is
    refused before writing, on every try — nothing is recorded on the rolled-back head."""
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    name = pg_url("owner").rsplit("=", 1)[1]
    alice, bob = dpl.Ledger.open(pg_url("alice")), dpl.Ledger.open(pg_url("bob"))
    _spend(bob, 2, ev.PureDP(0.1))
    backup = f"backup_{name.replace('-', '_')}"
    pg_cluster.sql(
        f"CREATE TABLE public.{backup} AS SELECT * FROM dpledger.ledgers WHERE name = '{name}'"
    )
    alice.spend(ev.PureDP(0.1))  # alice knows 3 receipts
    pg_cluster.sql(
        "SET session_replication_role = replica; "
        f"DELETE FROM dpledger.receipts WHERE ledger = '{name}' AND seq = 2; "
        f"DELETE FROM dpledger.ledgers WHERE name = '{name}'; "
        f"INSERT INTO dpledger.ledgers SELECT * FROM public.{backup}; DROP TABLE public.{backup}"
    )
    for _ in range(3):
        with pytest.raises(LedgerIntegrityError, match="has 3 receipts but its head records 2"):
            alice.spend(ev.PureDP(0.2))
    count = pg_cluster.sql(f"SELECT count(*) FROM dpledger.receipts WHERE ledger = '{name}'")
    assert count == [(2,)]
    alice.close()
    bob.close()


def test_pg_an_edited_receipt_is_refused_before_anything_is_written(pg_cluster, pg_url):
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    name = pg_url("owner").rsplit("=", 1)[1]
    alice, bob = dpl.Ledger.open(pg_url("alice")), dpl.Ledger.open(pg_url("bob"))
    _spend(bob, 2, ev.PureDP(0.1))
    pg_cluster.sql(
        "SET session_replication_role = replica; UPDATE dpledger.receipts SET body = "
        f"replace(body, '\"label\":null', '\"label\":\"edited\"') WHERE ledger = '{name}' "
        "AND seq = 1"
    )
    for _ in range(2):
        with pytest.raises(LedgerIntegrityError, match="receipt 1 was modified"):
            alice.spend(ev.PureDP(0.2))  # contended: bob's receipts are read, and refused
    count = pg_cluster.sql(f"SELECT count(*) FROM dpledger.receipts WHERE ledger = '{name}'")
    assert count == [(2,)]
    alice.close()
    bob.close()


def test_pg_a_spend_waiting_for_the_head_too_long_is_never_committed_later(
    pg_cluster, pg_url, monkeypatch
):
    """The head held by another session beyond the timeout: the lone spender's statement
    fails in the server (lock_timeout, 0.8 × the client timeout) with a dpledger error
    saying nothing was recorded — and nothing is, even after the other session lets go."""
    import time

    import psycopg

    monkeypatch.setenv("DPLEDGER_PG_TIMEOUT", "2")
    dpl.Ledger(1.0, 0.0, accountant="basic", path=pg_url("owner")).close()
    name = pg_url("owner").rsplit("=", 1)[1]
    alice = dpl.Ledger.open(pg_url("alice"))
    alice.spend(ev.PureDP(0.1))  # alone: the next spend is one statement
    with psycopg.connect(pg_cluster.conninfo()) as blocker:
        blocker.execute("SELECT 1 FROM dpledger.ledgers WHERE name = %s FOR UPDATE", (name,))
        started = time.monotonic()
        with pytest.raises(LedgerIntegrityError, match=r"stayed locked.*nothing was recorded"):
            alice.spend(ev.PureDP(0.2))
        assert time.monotonic() - started < 2.0
    time.sleep(0.3)  # the blocker has committed: a statement still waiting would now run
    count = pg_cluster.sql(f"SELECT count(*) FROM dpledger.receipts WHERE ledger = '{name}'")
    assert count == [(1,)]
    alice.spend(ev.PureDP(0.2))  # the handle carries on
    assert alice.spent[0] == pytest.approx(0.3)
    alice.close()


def test_pg_a_quota_looked_up_while_spending_keeps_the_head_locked(pg_url, monkeypatch):
    """Replaying another's receipt charged to a quota this handle has not loaded reads the
    quota's definition inside the spend's transaction (a COMMIT there would release the
    head, and the spend would then fail as out of date)."""
    from dpledger.ledger.pgstore import PostgresStore

    with dpl.Ledger(3.0, 1e-6, path=pg_url("owner")) as owner:
        owner.quota("q", epsilon=1.0, delta=1e-7)
    alice = dpl.Ledger.open(pg_url("alice"))
    bob = dpl.Ledger.open(pg_url("bob"))
    bob.quota("q", epsilon=1.0, delta=1e-7).spend(ev.Gaussian(sigma=30.0))
    states = []
    original = PostgresStore.quotas

    def quotas(self):
        found = original(self)
        if self is alice._store:
            states.append(self._conn.info.transaction_status.name)
        return found

    monkeypatch.setattr(PostgresStore, "quotas", quotas)
    alice.spend(ev.Gaussian(sigma=30.0))
    assert "INTRANS" in states and len(alice.receipts) == 2
    alice.close()
    bob.close()


def test_pg_a_refusal_on_the_contended_path_hints_on_the_whole_history(pg_url):
    """A refusal decided while others' receipts were not yet replayed is decided again
    after replaying them: its hint counts every release, like the other handle's."""
    dpl.Ledger(1.0, 1e-6, accountant="zcdp", path=pg_url("owner")).close()
    alice = dpl.Ledger.open(pg_url("alice"))
    alice.spend(ev.Gaussian(sigma=50.0))
    bob = dpl.Ledger.open(pg_url("bob"))
    with pytest.raises(BudgetExceededError) as bobs:
        while True:
            bob.spend(ev.Gaussian(sigma=50.0))
    with pytest.raises(BudgetExceededError) as alices:
        alice.spend(ev.Gaussian(sigma=50.0))
    assert str(alices.value) == str(bobs.value)
    assert len(alice.receipts) == len(bob.receipts)
    alice.close()
    bob.close()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "1e9"])
def test_pg_a_bad_client_timeout_is_named(pg_url, monkeypatch, value):
    monkeypatch.setenv("DPLEDGER_PG_TIMEOUT", value)
    with pytest.raises(InvalidArgumentError, match="DPLEDGER_PG_TIMEOUT"):
        dpl.Ledger(1.0, 0.0, path=pg_url("owner"))


def test_pg_a_url_libpq_refuses_is_a_named_error(pg_cluster):
    url = pg_cluster.url("alice", "x").replace("&ledger=", "&sslmod=require&ledger=")
    with pytest.raises(InvalidArgumentError, match="not one libpq accepts"):
        dpl.Ledger.open(url)
