"""Benchmark: noise calibration, dpledger vs Google's dp_accounting, side by side.

Run:  pip install -e ".[compare]" && python benchmarks/calibrate.py [--quick]

``--quick`` is a smoke test: without dp_accounting's slow PLD case, every time measured once.

For each case both libraries solve for σ meeting (ε, δ); we report each σ, the wall
time (median (min–max) of 3 rounds, cold, or 1 round for slow cases), dpledger's speed-up
and the relative σ difference (negative = dpledger adds less noise), and whether each σ
meets the target when re-checked with dpledger's exact/valid accountant. That dpledger's
σ always meets it, and is never above a peer σ that meets it, are slow tests:
tests/package/test_benchmark_verdicts.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import skip
from _harness import parser, records, rounds, speedup

import dpledger.accountant as acc
from dpledger import calibrate
from dpledger import events as ev

try:
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant
except Exception as error:  # absent, or present but broken
    skip("benchmarks/calibrate.py", error)


CASES = [
    # name, epsilon, delta, count, rate, their accountant, slow
    ("1 Gaussian (1, 1e-5)", 1.0, 1e-5, 1, None, "pld", False),
    ("1 Gaussian (10, 1e-8)", 10.0, 1e-8, 1, None, "pld", False),
    ("1,000 Gaussians (1, 1e-5)", 1.0, 1e-5, 1000, None, "pld", True),
    ("1,000 Gaussians (1, 1e-5)", 1.0, 1e-5, 1000, None, "rdp", False),
    ("DP-SGD q=0.01 T=10k (8, 1e-5)", 8.0, 1e-5, 10_000, 0.01, "rdp", False),
    ("DP-SGD q=0.004 T=3k (1, 1e-5)", 1.0, 1e-5, 3_000, 0.004, "rdp", False),
]


def ours(epsilon: float, delta: float, count: int, rate: float | None) -> float:
    return calibrate.gaussian_sigma(epsilon, delta, count=count, sampling_rate=rate)


def theirs(accountant: str, epsilon: float, delta: float, count: int, rate: float | None) -> float:
    def make(sigma: float):
        event = dpa.GaussianDpEvent(sigma)
        if rate is not None:
            event = dpa.PoissonSampledDpEvent(rate, event)
        return dpa.SelfComposedDpEvent(event, count)

    fresh = (
        pld_privacy_accountant.PLDAccountant
        if accountant == "pld"
        else rdp_privacy_accountant.RdpAccountant
    )
    return float(dpa.calibrate_dp_mechanism(fresh, make, epsilon, delta))


def meets(sigma: float, epsilon: float, delta: float, count: int, rate: float | None) -> bool:
    """Whether σ meets (ε, δ), by dpledger's tightest valid accountant."""
    one: ev.Event = ev.Gaussian(sigma)
    if rate is not None:
        one = ev.PoissonSampled(one, rate)
    return acc.delta(one * count, epsilon) <= delta


def run_case(
    name: str,
    epsilon: float,
    delta: float,
    count: int,
    rate: float | None,
    accountant: str,
    slow: bool,
    repeat: int = 3,
) -> dict[str, object]:
    """Calibrate one case with both libraries and return its table row."""
    target = (epsilon, delta, count, rate)
    t_ours = rounds(lambda: ours(*target), repeat)
    t_theirs = rounds(lambda: theirs(accountant, *target), 1 if slow else repeat)
    mine, peer = t_ours.result, t_theirs.result
    return {
        "case": name,
        "peer": f"dp_accounting {accountant.upper()}",
        "sigma (dpledger)": mine,
        "sigma (peer)": peer,
        "time dpledger [s]": t_ours,
        "time peer [s]": t_theirs,
        "speed-up": speedup(t_theirs, t_ours),
        "sigma diff": f"{(mine / peer - 1) * 100:+.3f}%",
        "dpledger meets": "yes" if meets(mine, *target) else "NO",
        "peer meets": "yes" if meets(peer, *target) else "no (per dpledger)",
    }


def main() -> None:
    args = parser(__doc__, "skip dp_accounting's slow PLD case, time everything once").parse_args()
    repeat = 1 if args.quick else 3
    rows = [run_case(*case, repeat) for case in CASES if not (case[-1] and args.quick)]
    print(records(rows))
    print(
        "\nsigma diff < 0: dpledger needs less noise for the same guarantee. 'meets' re-checks\n"
        "each sigma with dpledger's tightest valid accountant (exact for plain Gaussians)."
    )


if __name__ == "__main__":
    main()
