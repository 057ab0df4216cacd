"""Benchmark: a private group-by count on a large table, against the table library's own.

Run:  python benchmarks/tables.py [--rows N] [--rounds R] [--quick]

Two questions, one table each:

* **pandas, in memory**: time of ``dpledger.algorithms.count(frame, by="g", ...)`` (the
  private group-by count: group labelling, counting, calibration, the ledger's check and
  charge, the noise) against pandas' ``frame["g"].value_counts()`` on the same frame,
  interleaved round by round (median and min–max over rounds, cold: dpledger's caches
  emptied before each call);
* **dask, partition by partition**: peak memory (resident set, ``VmHWM``) of the
  private group-by count on a dask DataFrame of 10 partitions against dask's own
  ``value_counts().compute()`` on the same frame. Each is measured in a fresh process
  whose frame is *lazy* (every partition generated where it is computed, from a seed), so
  the peak is what the computation itself holds — never the whole column in one process.
  The memory before the computation (interpreter, imports) is reported apart.

Both on 10⁷ rows, 20 groups, by default; ``--quick`` is a smoke test on 2·10⁵ rows.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import interleaved, machine, parser, ratio, setup, table

GROUPS = [f"group{i:02d}" for i in range(20)]
PARTITIONS = 10

_CHILD = r"""
import json, resource, sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, pandas as pd, dask, dask.dataframe as dd
import dpledger as dpl
from dpledger import algorithms as alg

rows, parts, which = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
groups = [f"group{i:02d}" for i in range(20)]
size = rows // parts

def partition(seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": pd.array(rng.choice(groups, size), dtype="str"),
                         "x": rng.random(size)})

meta = pd.DataFrame({"g": pd.array([], dtype="str"), "x": np.array([], dtype=float)})
frame = dd.from_map(partition, list(range(parts)), meta=meta, divisions=[None] * (parts + 1))
dask.config.set(scheduler="threads", num_workers=2)
def high_water_kb():
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's across exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

before = high_water_kb()
if which == "dask":
    counts = frame["g"].value_counts().compute()
    total = int(counts.sum())
else:
    counts = alg.count(frame, by="g", groups=groups, ledger=dpl.Ledger(1.0, 1e-6), share=1.0)
    total = int(counts.sum())
peak = high_water_kb()
print(json.dumps({"before_kb": before, "peak_kb": peak, "total": total}))
"""


def peak_memory(which: str, rows: int) -> dict[str, float]:
    """Peak RSS (MB) of one group-by count in a fresh process; ``which``: dask or dpledger."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(rows), str(PARTITIONS), which],
        check=True,
        capture_output=True,
        text=True,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "before": data["before_kb"] / 1024,
        "peak": data["peak_kb"] / 1024,
        "total": data["total"],
    }


def pandas_speed(rows: int, count: int) -> list[list[str]]:
    import numpy as np
    import pandas as pd

    import dpledger as dpl
    from dpledger import algorithms as alg

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"g": pd.array(rng.choice(GROUPS, rows), dtype="str")})
    timings = interleaved(
        {
            "pandas value_counts": lambda r: frame["g"].value_counts(),
            "dpledger private count": lambda r: alg.count(
                frame, by="g", groups=GROUPS, ledger=dpl.Ledger(1.0, 1e-6), share=1.0, rng=r
            ),
        },
        count,
    )
    plain, private = timings["pandas value_counts"], timings["dpledger private count"]
    return [
        ["pandas value_counts", str(plain), "1.0x"],
        ["dpledger private group-by count", str(private), ratio(private, plain)],
    ]


def main() -> None:
    cli = parser(__doc__, "2·10⁵ rows, 2 rounds")
    cli.add_argument("--rows", type=int, default=None, help="rows of the table (10⁷)")
    cli.add_argument("--rounds", type=int, default=None, help="timed rounds (5)")
    args = cli.parse_args()
    missing = [m for m in ("pandas", "dask") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP  needs {', '.join(missing)}: pip install 'dpledger[dask]'")
        return
    setup()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    count = args.rounds or (2 if args.quick else 5)
    print(f"machine: {machine()}")
    print(f"\n== pandas, in memory: {rows:,} rows, {len(GROUPS)} groups, {count} rounds, cold")
    print("wall time s: median (min–max); ratio of medians (min–max of the rounds' ratios)")
    print(table(["", "seconds", "÷ value_counts"], pandas_speed(rows, count)))
    print(f"\n== dask: {rows:,} rows in {PARTITIONS} lazy partitions, 2 threads, fresh processes")
    dask_run = peak_memory("dask", rows)
    ours = peak_memory("dpledger", rows)
    if dask_run["total"] != rows or abs(ours["total"] - rows) > rows // 100:
        raise SystemExit(f"wrong totals: {dask_run['total']} and {ours['total']} of {rows}")
    rows_out = [
        [
            "dask value_counts().compute()",
            f"{dask_run['before']:.0f}",
            f"{dask_run['peak']:.0f}",
            "1.00x",
        ],
        [
            "dpledger private group-by count",
            f"{ours['before']:.0f}",
            f"{ours['peak']:.0f}",
            f"{ours['peak'] / dask_run['peak']:.2f}x",
        ],
    ]
    print(table(["", "MB before", "MB peak", "peak ÷ dask's"], rows_out))


if __name__ == "__main__":
    main()
