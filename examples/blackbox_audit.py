"""Black-box audits of three mechanisms that all claim ε = 1 (or 0.1).

Runs each mechanism on two neighbouring inputs and prints the certified lower bound on ε
(95 % confidence) next to the claim:

* report-noisy-max over 10 counts with Laplace(2/ε) noise, returning the index only
  (correct: ε = 1) and returning the index *and* its noisy value (a known-wrong variant);
* a Laplace mechanism with half the scale its ε = 0.1 claim needs.

    python examples/blackbox_audit.py [--samples 10000] [--seed 7] [--quick]

About 1-3 seconds (``--quick`` is the same run).
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import add_quick, print_expected_time

from dpledger._format import down
from dpledger.audit import estimate_epsilon


def noisy_max(return_value: bool):
    def run(counts, rng):
        noisy = np.asarray(counts, dtype=float) + rng.laplace(scale=2.0, size=len(counts))
        i = int(np.argmax(noisy))
        return (i, noisy[i]) if return_value else i

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10_000, help="runs per input")
    parser.add_argument("--seed", type=int, default=7)
    add_quick(parser, "the same run (it takes seconds already)")
    args = parser.parse_args()
    print_expected_time("about 1-3 s", "about 1-3 s", args.quick)
    cases = [
        ("report-noisy-max, index only", noisy_max(False), [0] * 10, [1] * 10, 1.0),
        ("report-noisy-max, index and value", noisy_max(True), [0] * 10, [1] * 10, 1.0),
        ("Laplace, half the scale", lambda x, rng: x + rng.laplace(scale=5.0), 0.0, 1.0, 0.1),
    ]
    print(f"{'mechanism':<36} {'claimed ε':>9} {'certified ε ≥':>14}  verdict")
    for name, mech, data, neighbour, claimed in cases:
        rng = np.random.default_rng(args.seed)
        est = estimate_epsilon(mech, data, neighbour, samples=args.samples, rng=rng)
        verdict = "REFUTED" if est.flags(claimed) else "not refuted"
        print(f"{name:<36} {claimed:>9g} {down(est.epsilon, 5):>14}  {verdict}")
        print(f"    {est}")


if __name__ == "__main__":
    main()
