"""Benchmark: what the ledger costs per release — in memory and persisted, filtered and planned.

Run:  python benchmarks/ledger.py [--steps N] [--dir DIR] [--quick]

The workload is DP-SGD on 60,000 examples, batch 256, 60 epochs: 14,100 steps of a
Poisson-subsampled Gaussian (q = 256/60000) at (3, 1e-5). For each ledger we time the
whole run, spend by spend, and report the cost per step:

* filtered: the default ledger (it picks a Rényi filter at the first step), noise
  calibrated in its currency (``Ledger.calibrate``);
* planned: the schedule calibrated with PLD and planned (``calibrate(..., plan=True)``);
  each step is then one position of the plan.

For persisted ledgers the floor is SQLite's own durable commit on the same disk: one
``BEGIN IMMEDIATE; INSERT; UPDATE; COMMIT`` of a receipt-sized row in rollback-journal
mode with ``synchronous=FULL`` (what the ledger does per spend) — reported alongside, with
the ratio. ``--dir`` chooses where the files go (the disk matters more than the code). ``--quick``
is a smoke test: 200 steps (unless ``--steps`` says otherwise).
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import parser, records

import dpledger as dpl
from dpledger import events as ev

Q = 256 / 60000


def sqlite_commit_floor(folder: Path, steps: int) -> float:
    """Seconds per durable commit of one receipt-sized row, in the ledger's journal mode."""
    path = folder / "floor.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE receipts (seq INTEGER PRIMARY KEY, body TEXT, hash TEXT)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('head', '')")
    body = "x" * 420
    start = time.perf_counter()
    for seq in range(steps):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO receipts VALUES (?, ?, ?)", (seq, body, "h" * 64))
        conn.execute("UPDATE meta SET value=? WHERE key='head'", (str(seq),))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed / steps


def run(kind: str, steps: int, path: Path | None) -> tuple[float, float, float, int, float]:
    """(seconds to calibrate, seconds for all steps, ε spent, steps accepted, σ)."""
    ledger = dpl.Ledger(3.0, 1e-5, path=path)
    start = time.perf_counter()
    step = ledger.calibrate(
        lambda s: ev.PoissonSampled(ev.Gaussian(s), Q), count=steps, plan=(kind == "planned")
    )
    calibrated = time.perf_counter() - start
    start = time.perf_counter()
    accepted = 0
    for _ in range(steps):
        ledger.spend(step)
        accepted += 1
    spent = time.perf_counter() - start
    eps = ledger.spent[0]
    ledger.close()
    return calibrated, spent, eps, accepted, step.event.sigma


def main() -> None:
    cli = parser(__doc__, "200 steps")
    cli.add_argument("--steps", type=int, default=None, help="DP-SGD steps (14,100)")
    cli.add_argument("--dir", type=Path, default=None, help="folder for the ledger files")
    args = cli.parse_args()
    args.steps = args.steps or (200 if args.quick else 14_100)
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        folder = Path(name)
        floor = sqlite_commit_floor(folder, min(args.steps, 2000))
        rows = []
        for kind in ("filtered", "planned"):
            for where in ("memory", "file"):
                path = folder / f"{kind}.ledger" if where == "file" else None
                cal, spent, eps, accepted, sigma = run(kind, args.steps, path)
                per_step = spent / args.steps
                ratio = f"{per_step / floor:.2f}" if where == "file" else ""
                rows.append(
                    {
                        "ledger": kind,
                        "storage": where,
                        "σ": f"{sigma:.5f}",
                        "steps": accepted,
                        "calibrate (s)": cal,
                        "all steps (s)": spent,
                        "per step (µs)": per_step * 1e6,
                        "× SQLite commit": ratio,
                        "ε spent": f"{eps:.5f}",
                    }
                )
        print(f"DP-SGD, {args.steps} steps at q = 256/60000, budget (3, 1e-5)\n{records(rows)}")
        print(f"\nSQLite's own durable commit here: {floor * 1e6:.0f} µs per receipt-sized row")


if __name__ == "__main__":
    main()
