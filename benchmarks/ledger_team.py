"""Benchmark: the team ledger — PostgreSQL against pgbench, scaling, fairness, O(1) history.

Run:  python benchmarks/ledger_team.py [--receipts N] [--quick]

Starts a throwaway PostgreSQL cluster (the server binaries of Debian's postgresql-15;
as the ``postgres`` user when run as root) with ``fsync=on`` — durable, like a real
server — on this machine's temporary folder, and measures:

1. **Latency**: one client's spends, one after another (a GDP ledger, Gaussian releases;
   and a basic ledger, Laplace releases), against pgbench running a one-row-update +
   one-row-insert transaction on the same server (``BEGIN; UPDATE head; INSERT log;
   END``: the floor of any durable check-and-append), in interleaved rounds (each on a
   fresh ledger): medians and their range. The ratio is the acceptance number (≤ 2).
2. **Scaling**: spends per second with 1 and with 8 client processes (≥ 4× is the target),
   beside pgbench's own transactions per second with 1 and 8 clients on the same server —
   the ceiling a one-row-update transaction reaches on this machine.
3. **Fairness**: releases per client when 16 PostgreSQL clients (8 on a file) compete for
   a budget of exactly 1,000 releases; on a file also with SQLite's own busy wait (the
   ticket lock switched off), which is what the file store did before.
4. **History**: open, ``spent`` and one spend at 10² and at ``--receipts`` (10⁵) receipts,
   both stores (each the median of 15, the two lengths in alternation; the ledgers are
   built through the ordinary API, the file with ``synchronous=OFF`` while it is
   built). The ratio is the acceptance
   number (≤ 2).

``--quick`` (a smoke test: 300 receipts, few spends and clients) still prints every table;
without PostgreSQL it measures the file store only.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ledger's helpers

from _harness import parser, records

import dpledger as dpl
from dpledger import events as ev
from dpledger import mechanisms
from dpledger.ledger import fairlock
from tests.ledger import _load
from tests.ledger._postgres import Cluster, start_cluster

GAUSSIAN = ev.Gaussian(sigma=2000.0)
EXACT = mechanisms.Laplace(scale=1000.0)  # ε = 1/1000 exactly


def pgbench_latency(cluster: Cluster, seconds: int) -> float | None:
    """pgbench's average latency (s) of BEGIN; UPDATE one row; INSERT one row; END."""
    found = pgbench(cluster, seconds, 1)
    return None if found is None else found[0]


def pgbench(cluster: Cluster, seconds: int, clients: int) -> tuple[float, float] | None:
    """(average latency in s, transactions per second) of pgbench running ``clients``
    clients of BEGIN; UPDATE one row; INSERT one row; END on the same server."""
    tool = cluster.bindir / "pgbench"
    if not tool.exists():
        return None
    cluster.sql(
        "CREATE TABLE IF NOT EXISTS bench_head (id int PRIMARY KEY, n bigint, total numeric);"
        "INSERT INTO bench_head VALUES (1, 0, 0) ON CONFLICT DO NOTHING;"
        "CREATE TABLE IF NOT EXISTS bench_log (id bigserial PRIMARY KEY, at timestamptz, "
        "body text)"
    )
    script = cluster.base / "spend.sql"
    script.write_text(
        "BEGIN;\n"
        "UPDATE bench_head SET n = n + 1, total = total + 1 WHERE id = 1;\n"
        "INSERT INTO bench_log (at, body) VALUES (now(), repeat('x', 600));\n"
        "END;\n"
    )
    os.chmod(script, 0o644)
    result = subprocess.run(
        [
            str(tool),
            "-n",
            "-c",
            str(clients),
            "-j",
            str(min(clients, os.cpu_count() or 1)),
            "-T",
            str(seconds),
            "-f",
            str(script),
            "-h",
            str(cluster.socket_dir),
            "-p",
            str(cluster.port),
            "-U",
            "postgres",
            "postgres",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    latency = re.search(r"latency average = ([0-9.]+) ms", result.stdout)
    rate = re.search(r"tps = ([0-9.]+)", result.stdout)
    if latency is None or rate is None:
        return None
    return float(latency.group(1)) / 1000, float(rate.group(1))


def memory_latency(event: ev.Event, spends: int) -> float:
    """Seconds per spend of the same GDP ledger in memory (no store)."""
    ledger = dpl.Ledger(1.0, 1e-6, accountant="gdp")
    ledger.spend(event)
    start = time.perf_counter()
    for _ in range(spends):
        ledger.spend(event)
    return (time.perf_counter() - start) / spends


def single_client_latency(url: str, spends: int, event: object = GAUSSIAN) -> float:
    with dpl.Ledger.open(url) as ledger:
        ledger.spend(event)  # connect, warm the caches
        start = time.perf_counter()
        for _ in range(spends):
            ledger.spend(event)
        return (time.perf_counter() - start) / spends


def throughput(where: str, clients: int, spends: int, folder: Path, event: object) -> float:
    """Spends per second of ``clients`` processes each making ``spends`` spends."""
    run = folder / f"run-{clients}-{time.monotonic_ns()}"
    run.mkdir()
    started = _load.start(where, clients, spends, event, run)
    time.sleep(0.5)  # every client has connected
    begin = time.perf_counter()
    started.go()
    outcomes = started.wait()
    elapsed = time.perf_counter() - begin
    done = sum(len(o.ok) for o in outcomes)
    assert not any(o.raw or o.errors for o in outcomes), "a client failed"
    return done / elapsed


def fairness(
    where: str, clients: int, folder: Path, create: Callable[[], None], releases: int
) -> list[int]:
    """Releases per client when ``clients`` compete for a budget of exactly ``releases``."""
    create()
    run = folder / f"fair-{clients}-{time.monotonic_ns()}"
    run.mkdir()
    step = mechanisms.Laplace(scale=float(releases))  # a budget of 1 fits exactly `releases`
    started = _load.start(where, clients, 2 * releases // clients + 10, step, run)
    time.sleep(0.5)
    started.go()
    outcomes = started.wait()
    return sorted(len(o.ok) for o in outcomes)


def build(where: str, count: int, fast_file: bool) -> None:
    """A ledger with ``count`` receipts, through the ordinary API."""
    with dpl.Ledger(1.0, 1e-6, accountant="gdp", path=where) as ledger:
        if fast_file:
            ledger._store._connection().execute("PRAGMA synchronous=OFF")  # type: ignore[union-attr]
        for _ in range(count):
            ledger.spend(ev.Gaussian(sigma=2000.0))


def bulk_copy(cluster: Cluster, url: str, file: str) -> None:
    """Put the receipts of ``file`` into the PostgreSQL ledger ``url`` in bulk.

    A shortcut for building a long history quickly (the database's triggers are off
    while the superuser copies; the rows and head are exactly what spending would have
    written): the same configuration and no key give the same genesis, so the chain,
    head and sealed state of the file verify as they are.
    """
    import json
    import sqlite3
    from fractions import Fraction

    import psycopg

    name = url.rsplit("ledger=", 1)[1]
    dpl.Ledger(1.0, 1e-6, accountant="gdp", path=url).close()
    source = sqlite3.connect(file)
    meta = dict(source.execute("SELECT key, value FROM meta").fetchall())
    head, state = json.loads(meta["head"]), json.loads(meta["state"])
    charge = Fraction(1, 4_000_000)  # μ² of Gaussian(σ = 2000), exactly
    with psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        with conn.cursor().copy(
            "COPY dpledger.receipts (ledger, seq, body, hash, prev, filter, charge_num, "
            "charge_den, total_num, total_den, db_user) FROM STDIN"
        ) as copy:
            for seq, body, digest in source.execute("SELECT seq, body, hash FROM receipts"):
                total = charge * (seq + 1)
                copy.write_row(
                    (
                        name,
                        seq,
                        body,
                        digest,
                        json.loads(body)["prev"],
                        '{"accountant":"gdp"}',
                        [charge.numerator],
                        [charge.denominator],
                        [total.numerator],
                        [total.denominator],
                        "owner",
                    )
                )
        total = [Fraction(x.split("/")[0]) / int(x.split("/")[1]) for x in state["total"]]
        conn.execute(
            "UPDATE dpledger.ledgers l SET count = %s, hash = %s, seal = %s, state = %s, "
            "filter = m.filter, limit_num = m.limit_num, limit_den = m.limit_den, "
            "total_num = %s::text[]::numeric[], total_den = %s::text[]::numeric[] "
            "FROM dpledger.limits m WHERE l.name = %s AND m.ledger = l.name AND m.scope = ''",
            (
                head["count"],
                head["hash"],
                head["seal"],
                meta["state"],
                [str(t.numerator) for t in total],
                [str(t.denominator) for t in total],
                name,
            ),
        )
    source.close()


def history(places: dict[int, str], repeats: int) -> dict[int, dict[str, float]]:
    """Median seconds of open, spent (with a fresh read) and one spend, per ledger length.

    The lengths are measured in alternation, round by round (a round measures each once),
    so that the server's background work (a checkpoint, autovacuum after a bulk load)
    falls on both alike.
    """
    ledgers = {count: dpl.Ledger.open(where) for count, where in places.items()}
    times: dict[int, dict[str, list[float]]] = {
        count: {"open": [], "spent": [], "spend": []} for count in places
    }
    try:
        for _ in range(repeats):
            for count, where in places.items():
                ledger, kept = ledgers[count], times[count]
                for measure, call in (
                    ("spent", lambda ledger=ledger: ledger.spent),
                    ("spend", lambda ledger=ledger: ledger.spend(ev.Gaussian(sigma=2000.0))),
                    ("open", lambda where=where: dpl.Ledger.open(where).close()),
                ):
                    start = time.perf_counter()
                    call()
                    kept[measure].append(time.perf_counter() - start)
    finally:
        for ledger in ledgers.values():
            ledger.close()
    return {
        count: {measure: statistics.median(values) for measure, values in kept.items()}
        for count, kept in times.items()
    }


def main() -> None:
    cli = parser(__doc__, "300 receipts, few spends and clients")
    cli.add_argument("--receipts", type=int, default=None, help="the long history (10⁵)")
    args = cli.parse_args()
    long = args.receipts or (300 if args.quick else 100_000)
    spends = 10 if args.quick else 300
    many = 2 if args.quick else 8  # clients for scaling
    releases = 40 if args.quick else 1000  # the contended budget
    pg_clients, file_clients = (4, 4) if args.quick else (16, 8)
    folder = Path(tempfile.mkdtemp(prefix="dpledger-bench-"))
    cluster, reason = start_cluster(fsync=True)
    try:
        if cluster is None:
            print(f"(PostgreSQL not measured: {reason})")
        rows = []
        if cluster is not None:
            # interleaved rounds: a fresh GDP ledger, a fresh basic ledger, pgbench; each
            # round's spends start from an empty ledger (the same arithmetic every round)
            rounds = 2 if args.quick else 7
            gdp, basic, floors = [], [], []
            for round_ in range(rounds):
                for kind, event, budget, kept in (
                    ("gdp", GAUSSIAN, (1.0, 1e-6), gdp),
                    ("basic", EXACT, (1e6, 0.0), basic),
                ):
                    name = f"latency-{kind}-{round_}"
                    dpl.Ledger(*budget, accountant=kind, path=cluster.url("owner", name)).close()
                    kept.append(single_client_latency(cluster.url("alice", name), spends, event))
                found = pgbench_latency(cluster, 1 if args.quick else 3)
                if found is not None:
                    floors.append(found)
            memory = memory_latency(GAUSSIAN, spends)
            floor = statistics.median(floors) if floors else None
            rows.append(
                {
                    "measure": "the same spend in memory (ms): the ledger's own arithmetic",
                    "dpledger": f"{memory * 1e3:.2f}",
                    "reference": "",
                    "ratio": "",
                }
            )
            for measure, times in (
                (f"one client's spend latency (ms), GDP ledger, {rounds} rounds", gdp),
                ("the same, a basic ledger (Laplace: cheap arithmetic) (ms)", basic),
            ):
                ours = statistics.median(times)
                rows.append(
                    {
                        "measure": measure,
                        "dpledger": f"{ours * 1e3:.2f} ({min(times) * 1e3:.2f}–"
                        f"{max(times) * 1e3:.2f})",
                        "reference": (
                            f"pgbench 1 update + 1 insert: {floor * 1e3:.2f} "
                            f"({min(floors) * 1e3:.2f}–{max(floors) * 1e3:.2f})"
                        )
                        if floor
                        else "pgbench not found",
                        "ratio": f"{ours / floor:.2f}" if floor else "",
                    }
                )
            seconds = 1 if args.quick else 5
            floor_one, floor_many = pgbench(cluster, seconds, 1), pgbench(cluster, seconds, many)
            if floor_one and floor_many:
                rows.append(
                    {
                        "measure": f"pgbench's own transactions/s, 1 client → {many} clients",
                        "dpledger": "",
                        "reference": f"{floor_one[1]:.0f} → {floor_many[1]:.0f} "
                        f"({os.cpu_count()} cores)",
                        "ratio": f"{floor_many[1] / floor_one[1]:.2f}",
                    }
                )
            for kind, event, budget in (("GDP", GAUSSIAN, (1e6, 1e-6)), ("basic", EXACT, (1e6, 0))):
                url = cluster.url("owner", f"scaling-{kind}")
                dpl.Ledger(*budget, path=url).close()
                where = cluster.url("alice", f"scaling-{kind}")
                one = throughput(where, 1, spends, folder, event)
                eight = throughput(where, many, spends, folder, event)
                rows.append(
                    {
                        "measure": f"spends/s, 1 client → {many} clients ({kind} ledger)",
                        "dpledger": f"{one:.0f} → {eight:.0f}",
                        "reference": "target ≥ 4×",
                        "ratio": f"{eight / one:.2f}",
                    }
                )
            fair_url = cluster.url("owner", "fair")
            counts = fairness(
                cluster.url("alice", "fair"),
                pg_clients,
                folder,
                lambda: dpl.Ledger(1.0, 0.0, path=fair_url).close(),
                releases,
            )
            rows.append(
                {
                    "measure": f"releases per client, {pg_clients} PostgreSQL clients",
                    "dpledger": f"min {counts[0]} max {counts[-1]} (sum {sum(counts)})",
                    "reference": "target max/min ≤ 2",
                    "ratio": f"{_load.spread(counts):.2f}",
                }
            )
        for fair in (True, False):
            path = folder / f"fair-{fair}.ledger"
            if not fair:
                fairlock._SETLK = None  # SQLite's busy wait alone (the store before issue 35)
            counts = fairness(
                str(path),
                file_clients,
                folder,
                lambda p=path: dpl.Ledger(1.0, 0.0, path=p).close(),
                releases,
            )
            rows.append(
                {
                    "measure": f"releases per client, {file_clients} file clients"
                    + (" (ticket lock)" if fair else " (SQLite busy wait)"),
                    "dpledger": f"min {counts[0]} max {counts[-1]} (sum {sum(counts)})",
                    "reference": "target max/min ≤ 2",
                    "ratio": f"{_load.spread(counts):.2f}",
                }
            )
        fairlock._SETLK = getattr(fairlock.fcntl, "F_OFD_SETLK", None)
        print(f"Team ledger, {time.strftime('%Y-%m-%d')}\n{records(rows)}\n")

        stores: list[tuple[str, Callable[[int], str]]] = [
            ("file", lambda n: str(folder / f"history-{n}.ledger"))
        ]
        if cluster is not None:
            stores.append(("PostgreSQL", lambda n: cluster.url("owner", f"history-{n}")))
        history_rows = []
        for name, where in stores:
            for count in (100, long):
                started = time.perf_counter()
                if name == "file":
                    build(where(count), count, True)
                else:
                    assert cluster is not None
                    bulk_copy(cluster, where(count), str(folder / f"history-{count}.ledger"))
                built = time.perf_counter() - started
                print(f"({name}: built {count} receipts in {built:.1f} s)", file=sys.stderr)
            results = history(
                {count: where(count) for count in (100, long)}, 3 if args.quick else 15
            )
            for measure in ("open", "spent", "spend"):
                short, big = results[100][measure], results[long][measure]
                history_rows.append(
                    {
                        "store": name,
                        "measure": measure,
                        "at 10² (ms)": f"{short * 1e3:.2f}",
                        f"at {long} (ms)": f"{big * 1e3:.2f}",
                        "ratio (target ≤ 2)": f"{big / short:.2f}",
                    }
                )
        print(f"History: open, spent and a spend\n{records(history_rows)}")
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
