"""Benchmark: noise calibration, dpledger vs Google's dp_accounting, side by side.

Run:  pip install -e ".[compare]" && python benchmarks/calibrate.py [--quick]

``--quick`` is a smoke test: without dp_accounting's slow PLD case, every time measured once.

For each case both libraries solve for σ meeting (ε, δ); we report each σ, the wall
time (best of 3, or 1 for slow cases), dpledger's speed-up and the relative σ
difference (negative = dpledger adds less noise), and whether each σ meets the target
when re-checked with dpledger's exact/valid accountant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import clear_caches, skip, table, timed

import dpledger.accountant as acc
from dpledger import calibrate
from dpledger import events as ev

try:
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant
except Exception as error:  # absent, or present but broken
    skip("benchmarks/calibrate.py", error)


def their_sigma(accountant: str, make_event, epsilon: float, delta: float) -> float:
    fresh = (
        (lambda: pld_privacy_accountant.PLDAccountant())
        if accountant == "pld"
        else (lambda: rdp_privacy_accountant.RdpAccountant())
    )
    return float(dpa.calibrate_dp_mechanism(fresh, make_event, epsilon, delta))


def run_case(
    name: str,
    epsilon: float,
    delta: float,
    count: int,
    rate: float | None,
    theirs: str,
    slow: bool,
    repeat: int = 3,
) -> list[object]:
    """Calibrate one case with both libraries and return its table row."""

    def ours() -> float:
        clear_caches()  # time cold: no cached grids or Rényi curves
        return calibrate.gaussian_sigma(epsilon, delta, count=count, sampling_rate=rate)

    def make(sigma: float):
        event = dpa.GaussianDpEvent(sigma)
        if rate is not None:
            event = dpa.PoissonSampledDpEvent(rate, event)
        return dpa.SelfComposedDpEvent(event, count)

    def meets(sigma: float) -> bool:
        one: ev.Event = ev.Gaussian(sigma)
        if rate is not None:
            one = ev.PoissonSampled(one, rate)
        return acc.delta(one * count, epsilon) <= delta

    sigma_ours, t_ours = timed(ours, repeat)
    sigma_theirs, t_theirs = timed(
        lambda: their_sigma(theirs, make, epsilon, delta), repeat=1 if slow else repeat
    )
    return [
        name,
        f"dp_accounting {theirs.upper()}",
        sigma_ours,
        sigma_theirs,
        t_ours,
        t_theirs,
        f"{t_theirs / t_ours:.1f}x",
        f"{(sigma_ours / sigma_theirs - 1) * 100:+.3f}%",
        "yes" if meets(sigma_ours) else "NO",
        "yes" if meets(sigma_theirs) else "no (per dpledger)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: skip dp_accounting's slow PLD case, time everything once",
    )
    args = parser.parse_args()

    cases = [
        # name, epsilon, delta, count, rate, their accountant, slow
        ("1 Gaussian (1, 1e-5)", 1.0, 1e-5, 1, None, "pld", False),
        ("1 Gaussian (10, 1e-8)", 10.0, 1e-8, 1, None, "pld", False),
        ("1,000 Gaussians (1, 1e-5)", 1.0, 1e-5, 1000, None, "pld", True),
        ("1,000 Gaussians (1, 1e-5)", 1.0, 1e-5, 1000, None, "rdp", False),
        ("DP-SGD q=0.01 T=10k (8, 1e-5)", 8.0, 1e-5, 10_000, 0.01, "rdp", False),
        ("DP-SGD q=0.004 T=3k (1, 1e-5)", 1.0, 1e-5, 3_000, 0.004, "rdp", False),
    ]
    repeat = 1 if args.quick else 3
    rows = [run_case(*case, repeat) for case in cases if not (case[-1] and args.quick)]
    headers = [
        "case",
        "peer",
        "sigma (dpledger)",
        "sigma (peer)",
        "time dpledger [s]",
        "time peer [s]",
        "speed-up",
        "sigma diff",
        "dpledger meets",
        "peer meets",
    ]
    print(table(headers, rows))
    print(
        "\nsigma diff < 0: dpledger needs less noise for the same guarantee. 'meets' re-checks\n"
        "each sigma with dpledger's tightest valid accountant (exact for plain Gaussians)."
    )


if __name__ == "__main__":
    main()
