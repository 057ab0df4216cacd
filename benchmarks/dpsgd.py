"""Benchmark: DP-SGD calibration, dpledger vs dp_accounting's PLD calibration, side by side.

Run:  pip install -e ".[compare]" && python benchmarks/dpsgd.py [--repeats N] [--quick]

The run: 60,000 examples, batch 256, 60 epochs (14,100 steps at q = 256/60000), target
(3, 1e-5) — what ``dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256
--epochs 60 --epsilon 3 --delta 1e-5`` solves. Both libraries run in this one process,
alternating, ``--repeats`` times (default 5), each timed cold (dpledger's curve caches
cleared; dp_accounting keeps none):

* dpledger: ``calibrate.dpsgd_noise_multiplier`` (σ by RDP bracket + PLD refinement,
  then the achieved ε by every applicable method);
* dp_accounting: ``calibrate_dp_mechanism`` on a fresh ``PLDAccountant`` (default
  ``value_discretization_interval`` 1e-4), its default bracket (from [0, 1]) and
  tolerance (1e-6 in σ), for ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))``
  self-composed 14,100 times.

The table gives each repeat's times and the ratio; the summary the median and range of
the ratios, and the σ of both with their relative difference. ``--quick`` is a smoke
test: one repeat, and no warm-up of dp_accounting (its first run is then timed with its
imports).
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import skip
from _harness import parser, rounds, speedup, table

from dpledger.calibrate import dpsgd_noise_multiplier

try:
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
except Exception as error:  # absent, or present but broken
    skip("benchmarks/dpsgd.py", error)

N, B, EPOCHS, EPSILON, DELTA = 60_000, 256, 60, 3.0, 1e-5
STEPS, Q = EPOCHS * -(-N // B), B / N


def ours() -> float:
    run = dpsgd_noise_multiplier(
        dataset_size=N, batch_size=B, epochs=EPOCHS, epsilon=EPSILON, delta=DELTA
    )
    return run.noise_multiplier


def theirs() -> float:
    def make_event(sigma: float):
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(sigma)), STEPS
        )

    return float(
        dpa.calibrate_dp_mechanism(pld_privacy_accountant.PLDAccountant, make_event, EPSILON, DELTA)
    )


def main() -> None:
    cli = parser(__doc__, "1 repeat")
    cli.add_argument("--repeats", type=int, default=None, help="timed runs of each (5)")
    args = cli.parse_args()
    repeats = args.repeats or (1 if args.quick else 5)

    ours()  # untimed warm-up: imports, FFT plans, thread pool
    if not args.quick:
        theirs()
    rows, ratios = [], []
    sigma_ours = sigma_theirs = float("nan")
    for i in range(1, repeats + 1):  # alternating, each timed cold
        t_ours, t_theirs = rounds(ours, 1), rounds(theirs, 1)
        sigma_ours, sigma_theirs = t_ours.result, t_theirs.result
        ratios.append(t_theirs.median / t_ours.median)
        rows.append([i, t_ours, t_theirs, speedup(t_theirs, t_ours)])
    print(
        f"DP-SGD calibration: N={N}, B={B}, {EPOCHS} epochs = {STEPS} steps at q={B}/{N}, "
        f"target ({EPSILON:g}, {DELTA:g})"
    )
    print(
        f"machine: {os.cpu_count()} CPUs ({platform.machine()}), Python "
        f"{platform.python_version()}, dp_accounting {importlib.metadata.version('dp-accounting')}"
    )
    print()
    print(table(["repeat", "dpledger [s]", "dp_accounting PLD [s]", "speed-up"], rows))
    print()
    print(
        f"speed-up: median {statistics.median(ratios):.1f}x, range "
        f"{min(ratios):.1f}x - {max(ratios):.1f}x over {len(ratios)} repeats"
    )
    print(
        f"sigma: dpledger {sigma_ours:.8f}, dp_accounting {sigma_theirs:.8f}, relative "
        f"difference {sigma_ours / sigma_theirs - 1:+.2e}"
    )


if __name__ == "__main__":
    main()
