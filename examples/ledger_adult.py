"""A worked analysis under one privacy ledger: a few queries on the UCI Adult census data.

Run:  python examples/ledger_adult.py [--data DIR] [--ledger FILE] [--seed N] [--quick]

About 1-2 seconds (``--quick`` is the same run). Reads ``adult/adult.data`` under the data
folder: ``--data DIR`` (the folder that holds ``adult/``, as ``$DPLEDGER_DATA`` does),
else ``$DPLEDGER_DATA``, else ``data/``. Not there with ``--data``: an error; without
``--data``: the same analysis on synthetic data of the same shape, and it says so. Every
release is charged to one zCDP ledger before it happens; the last, over-ambitious query
is refused and nothing is released for it.
"""

from __future__ import annotations

import argparse
import csv
import textwrap
from pathlib import Path

import numpy as np
from _common import DATA_HELP, add_quick, data_root, find_data, print_expected_time

import dpledger as dpl
from dpledger import calibrate, mechanisms
from dpledger._format import up

ADULT = "adult/adult.data"
EDUCATION_LEVELS = 16


def load(path: Path | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Ages, education numbers (1..16) and income>50K flags, and where they came from."""
    if path is not None:
        ages, education, rich = [], [], []
        with path.open(newline="") as handle:
            for row in csv.reader(handle, skipinitialspace=True):
                if len(row) < 15:
                    continue
                ages.append(float(row[0]))
                education.append(int(row[4]))
                rich.append(row[14].strip().startswith(">50K"))
        return np.array(ages), np.array(education), np.array(rich), f"UCI Adult ({ADULT})"
    print(
        f"note: no UCI Adult at {data_root(None) / ADULT} (give --data DIR, the folder "
        "holding adult/, or set $DPLEDGER_DATA); using synthetic data of the same shape."
    )
    rng = np.random.default_rng(0)
    n = 32_561
    ages = np.clip(rng.normal(38.6, 13.6, n).round(), 17, 90)
    education = np.clip(rng.normal(10, 2.6, n).round(), 1, 16).astype(int)
    rich = rng.random(n) < 0.24
    return ages, education, rich, "synthetic"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=DATA_HELP)
    parser.add_argument("--ledger", type=Path, default=None, help="keep the ledger in a file")
    parser.add_argument("--seed", type=int, default=None, help="seed the noise (default: fresh)")
    add_quick(parser, "the same run (it takes seconds already)")
    args = parser.parse_args()
    path = find_data(parser, args.data, ADULT)
    print_expected_time("about 1-2 s", "about 1-2 s", args.quick)
    if args.ledger is not None and args.ledger.exists():
        args.ledger.unlink()

    ages, education, rich, source = load(path)
    print(f"data: {source}, {len(ages)} records\n")

    # One budget for the whole analysis; add/remove-one neighbours.
    ledger = dpl.Ledger(epsilon=1.0, delta=1e-6, accountant="zcdp", path=args.ledger)
    rho = ledger.budget.rho
    shares = calibrate.split_budget(rho, [1, 1, 2], currency="zcdp")
    rng = np.random.default_rng(args.seed)

    def sigma_for(rho_share: float, sensitivity: float) -> float:
        # ρ = Δ²/(2σ²) for the (discrete) Gaussian: the σ that spends exactly this share
        return sensitivity / np.sqrt(2 * rho_share) * (1 + 1e-12)

    # 1. How many records? (integer count, sensitivity 1)
    count = ledger.release(
        mechanisms.DiscreteGaussian(sigma_for(shares[0], 1.0)), len(ages), rng, label="count"
    )
    # 2. Mean age: noisy sum of ages clipped to [0, 90] (sensitivity 90) / noisy count
    clipped_sum = float(np.clip(ages, 0, 90).sum())
    age_sum = ledger.release(
        mechanisms.Gaussian(sigma_for(shares[1], 90.0), 90.0), clipped_sum, rng, label="sum of ages"
    )
    # 3. Histogram of education levels (one record moves one bin: L2 sensitivity 1)
    histogram = np.bincount(education - 1, minlength=EDUCATION_LEVELS)
    noisy_histogram = ledger.release(
        mechanisms.DiscreteGaussian(sigma_for(shares[2], 1.0), dimension=EDUCATION_LEVELS),
        histogram,
        rng,
        label="education histogram",
    )

    print(f"records           : {count}   (true {len(ages)})")
    print(f"mean age          : {age_sum / count:.2f}   (true {ages.mean():.2f})")
    top = int(np.argmax(noisy_histogram)) + 1
    print(f"commonest level   : education-num {top}   (true {int(np.argmax(histogram)) + 1})")
    print()

    # 4. An over-ambitious query: the share of high earners with very little noise.
    try:
        ledger.release(mechanisms.DiscreteGaussian(2.0), int(rich.sum()), rng, label="rich count")
    except dpl.BudgetExceededError as refused:
        print(textwrap.fill(f"refused           : {refused}", 88, subsequent_indent=" " * 20))
        print(f"  requested {refused.requested},\n  remaining {refused.remaining}")

    eps, delta = ledger.spent
    print(f"\nspent: ({up(eps, 5)}, {delta:g})-DP of the (1, 1e-6) budget; receipts:")
    for receipt in ledger.receipts:
        print(
            f"  #{receipt.seq} {receipt.label:<20} {receipt.charge}  "
            f"epsilon so far {up(receipt.epsilon, 5)}"
        )
    ledger.close()


if __name__ == "__main__":
    main()
