"""Benchmark: DP-SGD calibration, dpledger vs dp_accounting's PLD calibration, side by side.

Run:  pip install -e ".[compare]" && python benchmarks/dpsgd.py [--repeats N] [--quick]

The run: 60,000 examples, batch 256, 60 epochs (14,100 steps at q = 256/60000), target
(3, 1e-5) — what ``dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256
--epochs 60 --epsilon 3 --delta 1e-5`` solves. Both libraries run in this one process,
interleaved round by round (their order alternating), ``--repeats`` rounds (default 5):

* dpledger: ``calibrate.dpsgd_noise_multiplier`` (σ by RDP bracket + PLD refinement,
  then the achieved ε by every applicable method), on one thread (``set_threads(1)``)
  and, labelled, on two;
* dp_accounting: ``calibrate_dp_mechanism`` on a fresh ``PLDAccountant`` (default
  ``value_discretization_interval`` 1e-4), its default bracket (from [0, 1]) and
  tolerance (1e-6 in σ), for ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))``
  self-composed 14,100 times.

*Cold*: every round asks for a fresh target ε (3 × (1 + 10⁻⁶·round)) and dpledger's
caches are emptied, so that no cache answers; *warm* (labelled): the same target again,
caches kept. BLAS runs on one thread for both. The table gives the median (min–max)
time of each and the ratio of medians with the spread of the per-round ratios; the
machine and the load average at the start and the end are printed. ``--quick`` is a
smoke test: one round, no warm table.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import skip
from _harness import interleaved, load, machine, parser, ratio, setup, table

from dpledger.accountant import pld
from dpledger.calibrate import dpsgd_noise_multiplier

try:
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
except Exception as error:  # absent, or present but broken
    skip("benchmarks/dpsgd.py", error)

N, B, EPOCHS, EPSILON, DELTA = 60_000, 256, 60, 3.0, 1e-5
STEPS, Q = EPOCHS * -(-N // B), B / N


def ours(r: int = 0, threads: int | None = 1) -> float:
    """dpledger's σ for the target of round ``r``, on ``threads`` threads."""
    pld.set_threads(threads)
    try:
        run = dpsgd_noise_multiplier(
            dataset_size=N, batch_size=B, epochs=EPOCHS, epsilon=_target(r), delta=DELTA
        )
    finally:
        pld.set_threads(None)
    return run.noise_multiplier


def _target(r: int) -> float:
    """The ε of round r: 3 at round 0, a fresh value in every later round (cold)."""
    return EPSILON * (1.0 + 1e-6 * r)


def theirs(r: int = 0) -> float:
    def make_event(sigma: float):
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(sigma)), STEPS
        )

    return float(
        dpa.calibrate_dp_mechanism(
            pld_privacy_accountant.PLDAccountant, make_event, _target(r), DELTA
        )
    )


def main() -> None:
    cli = parser(__doc__, "1 round, no warm table")
    cli.add_argument("--repeats", type=int, default=None, help="timed rounds of each (5)")
    args = cli.parse_args()
    setup(threads=1)  # one BLAS thread for both libraries
    repeats = args.repeats or (1 if args.quick else 5)
    print(
        f"DP-SGD calibration: N={N}, B={B}, {EPOCHS} epochs = {STEPS} steps at q={B}/{N}, "
        f"target ({EPSILON:g}, {DELTA:g})"
    )
    print(f"machine: {machine()}; dp_accounting {importlib.metadata.version('dp-accounting')}")
    ours(0)  # untimed warm-up: imports, FFT plans, thread pool
    if not args.quick:
        theirs(0)
    contenders = {
        "dpledger 1 thr": lambda r: ours(r, 1),
        "dpledger 2 thr": lambda r: ours(r, None),
        "dp_accounting PLD": theirs,
    }
    tables = [("cold", interleaved(contenders, repeats))]
    if not args.quick:
        tables.append(
            ("warm (same target, caches kept)", interleaved(contenders, repeats, cold=False))
        )
    rows = [
        [
            label,
            timed["dpledger 1 thr"],
            timed["dpledger 2 thr"],
            timed["dp_accounting PLD"],
            ratio(timed["dp_accounting PLD"], timed["dpledger 1 thr"]),
            ratio(timed["dp_accounting PLD"], timed["dpledger 2 thr"]),
        ]
        for label, timed in tables
    ]
    print(f"\n{repeats} round(s), interleaved; times: median (min–max) wall seconds")
    print(
        table(
            [
                "",
                "dpledger 1 thr [s]",
                "dpledger 2 thr [s]",
                "dp_accounting PLD [s]",
                "speed-up 1 thr",
                "speed-up 2 thr",
            ],
            rows,
        )
    )
    cold = tables[0][1]
    sigma_ours, sigma_theirs = cold["dpledger 1 thr"].result, cold["dp_accounting PLD"].result
    print(
        f"\nsigma (last cold round): dpledger {sigma_ours:.8f}, dp_accounting "
        f"{sigma_theirs:.8f}, relative difference {sigma_ours / sigma_theirs - 1:+.2e}"
    )
    print(f"machine at the end: {load()}")


if __name__ == "__main__":
    main()
