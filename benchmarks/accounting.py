"""Benchmark: tight numerical accounting, dpledger vs dp_accounting and prv_accountant.

Run:  pip install -e ".[compare]" && python benchmarks/accounting.py [--quick] [--rounds N]

``--quick`` is a smoke test (seconds, not a measurement): 3 of the bracket cases, speed
case (a), every time measured once, no grid sweep, no prv_accountant in the main table,
dp_accounting at its default step.

The "speed" table (``--table speed``) is the measurement of issue #33: ε at δ = 1e-5 of
(a) DP-SGD q = 0.01, σ = 1.1, T = 10⁴; (b) the same at T = 10⁵; (c) q = 10⁻³, T = 10⁴;
(d) a mixed composition — 10 Laplace (scale 10), 20 Gaussians (σ = 20), 2,000
Poisson-sampled Gaussians (q = 0.01, σ = 1.1) and 5 binary randomized responses (ε = 0.5).
Every contender runs once per round, the contenders interleaved round by round (their
order alternating), ``--rounds`` rounds (default 5); the table gives the median
(min–max) wall time and the ratio of medians with the spread of the per-round ratios.
*Cold*: every round uses a fresh noise value (σ and the scales × (1 + 10⁻⁶·round)) and
dpledger's caches are emptied, so that no cache of either library answers — a user
computing ε once. *Warm* (labelled): the same query again, caches kept. Both libraries
run on one thread (dpledger: ``set_threads(1)``; BLAS limited to one thread for both);
dpledger on two threads is a separate, labelled column. dp_accounting's PLD is run at
its default step h = 1e-4 and at the largest step of a ladder at which its ε is as
close to the truth as dpledger's upper bound ("equal accuracy"): the truth lies in
dpledger's certified bracket (``epsilon_bounds``, rtol = 1e-6, listed in ``TRUTH``), and
a distance is the largest from the bracket's ends. The machine, its cores and the load
average at the start and the end are printed.

For each case of the "main" table (``--table main``) the table gives every library's ε
(an upper bound, except prv_accountant's estimate, shown with its bracket), the wall time
(median (min–max) of ``--rounds`` cold rounds, interleaved), dpledger's speed-up over
dp_accounting's PLD, and the ε differences. A second table sweeps the grid step of both
PLD implementations on the DP-SGD case: accuracy against time.

The "bracket" table (``--table bracket``) puts dpledger's certified bracket
(``epsilon_bounds``, default rtol = 1e-3) beside prv_accountant's certified one on 53
DP-SGD configurations: Opacus' tests/prv_accountant.py grid and the TF Privacy, Abadi et
al. and Dong–Roth–Su examples listed in ``BRACKET_CASES``.

That dpledger's bracket lies inside prv_accountant's and is at most 1e-3 wide, that its ε
is the same on one thread, and that it never reports less than an exact reference, are
slow tests: tests/package/test_benchmark_verdicts.py.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import skip
from _harness import (
    Timing,
    interleaved,
    load,
    machine,
    parser,
    ratio,
    records,
    rounds,
    setup,
    speedup,
)

import dpledger.accountant as acc
from dpledger import events as ev
from dpledger.accountant import pld as our_pld

try:
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld
    from dp_accounting.rdp import rdp_privacy_accountant
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import (
        GaussianMechanism,
        LaplaceMechanism,
        PoissonSubsampledGaussianMechanism,
    )
except Exception as error:  # absent, or present but broken
    skip("benchmarks/accounting.py", error)

# name, our event, dp_accounting event, prv mechanism, count, δ, reference (exact or tight)
CASES = [
    (
        "DP-SGD q=0.01 s=1.1 T=10k",
        ev.PoissonSampled(ev.Gaussian(1.1), 0.01),
        dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)),
        lambda: PoissonSubsampledGaussianMechanism(noise_multiplier=1.1, sampling_probability=0.01),
        10_000,
        1e-5,
        5.192584,
    ),
    (
        "DP-SGD q=0.004 s=1.0 T=3k",
        ev.PoissonSampled(ev.Gaussian(1.0), 0.004),
        dpa.PoissonSampledDpEvent(0.004, dpa.GaussianDpEvent(1.0)),
        lambda: PoissonSubsampledGaussianMechanism(
            noise_multiplier=1.0, sampling_probability=0.004
        ),
        3_000,
        1e-5,
        1.1610147,
    ),
    (
        "100 Laplace scale 1",
        ev.Laplace(1.0),
        dpa.LaplaceDpEvent(1.0),
        lambda: LaplaceMechanism(mu=1.0),
        100,
        1e-6,
        71.5460036596749,  # exact, rounded down (mpmath; tests/accountant/test_pld.py)
    ),
    (
        "100 Gaussians s=5 (exact known)",
        ev.Gaussian(5.0),
        dpa.GaussianDpEvent(5.0),
        lambda: GaussianMechanism(noise_multiplier=5.0),
        100,
        1e-5,
        9.997256146,
    ),
]


# -- the "bracket" table: dpledger's certified bracket against prv_accountant's ---------------
# (noise multiplier σ, sampling rate q, steps, δ, source). Opacus' tests/prv_accountant.py
# grid (its msr_values: σ ∈ {0.8, 1.5, 2, 3}, q ∈ {0.001, 0.05, 0.2}, steps 100 to
# 100,000, δ = 1e-6; 40 cases), then 13 further examples. Steps are ⌈epochs·n/b⌉ as TF
# Privacy's compute_dp_sgd_privacy counts them; where a source fixes no number of epochs
# the one chosen here is stated.
OPACUS_GRID = [
    *[(s, q, 100) for q in (0.001, 0.05, 0.2) for s in (0.8, 1.5, 2.0, 3.0)],
    *[
        (s, q, t)
        for t in (1000, 20_000, 50_000)
        for q in (0.001, 0.05)
        for s in (0.8, 1.5, 2.0, 3.0)
    ],
    *[(s, 0.001, 100_000) for s in (0.8, 1.5, 2.0, 3.0)],
]
BRACKET_CASES = [
    *[(s, q, t, 1e-6, "Opacus prv_accountant test") for s, q, t in OPACUS_GRID],
    (
        1.3,
        150 / 60_000,
        6_000,
        1e-5,
        "TF Privacy compute_dp_sgd_privacy test (n=60k, b=150, 15 ep)",
    ),
    (1.1, 256 / 60_000, 14_063, 1e-5, "TF Privacy MNIST tutorial (b=256, 60 ep)"),
    (0.7, 256 / 60_000, 10_547, 1e-5, "TF Privacy MNIST tutorial (b=256, 45 ep)"),
    (1.1, 256 / 60_000, 3_516, 1e-5, "TF Privacy MNIST tutorial (b=256, 15 ep)"),
    (1.1, 0.01, 10_000, 1e-5, "Abadi et al. 2016 MNIST lot 600 (q=0.01), 100 ep"),
    (2.0, 0.01, 10_000, 1e-5, "Abadi et al. 2016 MNIST, small noise σ=2, 100 ep"),
    (4.0, 0.01, 10_000, 1e-5, "Abadi et al. 2016 MNIST, medium noise σ=4, 100 ep"),
    (8.0, 0.01, 10_000, 1e-5, "Abadi et al. 2016 MNIST, large noise σ=8, 100 ep"),
    (0.7, 256 / 60_000, 3_516, 1e-5, "Dong-Roth-Su 2022 MNIST (b=256, σ=0.7, 15 ep)"),
    (0.7, 256 / 60_000, 7_032, 1e-5, "Dong-Roth-Su 2022 MNIST (b=256, σ=0.7, 30 ep)"),
    (1.1, 512 / 25_000, 977, 1e-5, "Dong-Roth-Su 2022 IMDb (b=512, 20 ep)"),
    (0.55, 256 / 29_305, 2_061, 1e-5, "Dong-Roth-Su 2022 Adult (b=256, 18 ep)"),
    (0.6, 20_000 / 800_167, 801, 1e-5, "Dong-Roth-Su 2022 MovieLens (b=20000, 20 ep)"),
]


def ours(event: ev.Event, count: int, delta: float, grid: float | None = None) -> float:
    """dpledger's PLD ε; ``grid`` None: the accountant's default (adaptive) step."""
    return our_pld.PLDAccountant.summarize(event * count, grid).epsilon(delta)


def ours_single_thread(event: ev.Event, count: int, delta: float) -> float:
    """As :func:`ours`, on one thread (both directions in turn, one-threaded transforms)."""
    our_pld.set_threads(1)
    try:
        return ours(event, count, delta)
    finally:
        our_pld.set_threads(None)


def theirs_pld(event, count: int, delta: float, grid: float = 1e-4) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=grid)
    accountant.compose(event, count)
    return float(accountant.get_epsilon(delta))


def theirs_rdp(event, count: int, delta: float) -> float:
    accountant = rdp_privacy_accountant.RdpAccountant()
    accountant.compose(event, count)
    return float(accountant.get_epsilon(delta))


def prv(make, count: int, delta: float) -> tuple[float, float, float]:
    accountant = PRVAccountant(
        prvs=[make()], max_self_compositions=[count], eps_error=0.01, delta_error=delta / 1000
    )
    low, estimate, high = accountant.compute_epsilon(delta=delta, num_self_compositions=[count])
    return float(low), float(estimate), float(high)


def prv_bracket(sigma: float, rate: float, steps: int, delta: float) -> tuple[float, float]:
    """prv_accountant's certified (ε_low, ε_up), at the settings of :func:`prv`."""
    mechanism = PoissonSubsampledGaussianMechanism(
        noise_multiplier=sigma, sampling_probability=rate
    )
    low, _, high = prv(lambda: mechanism, steps, delta)
    return low, high


def ours_bracket(sigma: float, rate: float, steps: int, delta: float) -> tuple[float, float]:
    """dpledger's certified bracket at default settings (rtol = 1e-3)."""
    event = ev.PoissonSampled(ev.Gaussian(sigma), rate) * steps
    lower, upper = our_pld.epsilon_bounds(event, delta)
    assert lower is not None
    return lower, upper


def bracket_table(cases: list[tuple[float, float, int, float, str]], repeat: int = 3) -> None:
    """The "bracket" table: dpledger's certified bracket against prv_accountant's."""
    rows, widths, times, inside = [], [], [], 0
    for sigma, rate, steps, delta, source in cases:
        ours_bracket(sigma, rate, steps, delta)  # untimed: one-time costs
        t_ours = rounds(lambda s=sigma, q=rate, t=steps, d=delta: ours_bracket(s, q, t, d), repeat)
        t_prv = rounds(lambda s=sigma, q=rate, t=steps, d=delta: prv_bracket(s, q, t, d), 1)
        (lower, upper), (low, high) = t_ours.result, t_prv.result
        widths.append((upper - lower) / upper)
        times.append(t_ours.median)
        inside += low <= lower and upper <= high
        rows.append(
            {
                "σ": sigma,
                "q": f"{rate:.6g}",
                "steps": steps,
                "δ": f"{delta:g}",
                "dpledger bracket": f"[{lower:.6f}, {upper:.6f}]",
                "rel. width": f"{widths[-1]:.1e}",
                "prv_accountant bracket": f"[{low:.5f}, {high:.5f}]",
                "prv rel. width": f"{(high - low) / high:.1e}",
                "inside": "yes" if low <= lower and upper <= high else "NO",
                "t ours [s]": t_ours,
                "t prv [s]": t_prv,
                "source": source,
            }
        )
    print(records(rows))
    n = len(cases)
    print(
        f"\n{inside} of {n} inside prv_accountant's bracket; {sum(w <= 1e-3 for w in widths)} of "
        f"{n} at most 1e-3 wide (largest {max(widths):.1e}); {sum(t <= 1.0 for t in times)} of "
        f"{n} in at most 1 s (largest {max(times):.2f} s, median {sorted(times)[n // 2]:.2f} s). "
        "prv_accountant: eps_error = 0.01, delta_error = δ/1000."
    )


def main_table(repeat: int, with_prv: bool = True) -> None:
    """Every case by every library: ε, its error against the reference, wall times.

    Cold and interleaved: each round runs every contender once (dpledger's caches emptied
    before each), in alternating order, so that the load of a shared machine hits all.
    """
    rows = []
    for name, event, dp_event, prv_make, count, delta, reference in CASES:
        # one untimed run of each, so that one-time costs (imports, FFT plans) are not timed
        ours(event, count, delta)
        theirs_pld(dp_event, count, delta)
        timed = interleaved(
            {
                "ours": lambda _r, e=event, c=count, d=delta: ours(e, c, d),
                "one": lambda _r, e=event, c=count, d=delta: ours_single_thread(e, c, d),
                "dpld": lambda _r, e=dp_event, c=count, d=delta: theirs_pld(e, c, d),
            },
            repeat,
        )
        t_ours, t_one, t_dpld = timed["ours"], timed["one"], timed["dpld"]
        eps_drdp = theirs_rdp(dp_event, count, delta)
        eps_ordp = acc.epsilon(event * count, delta, method="rdp")
        t_prv: Timing | float = float("nan")
        prv_cell = "skipped (--quick)"
        try:
            if with_prv:
                t_prv = rounds(lambda m=prv_make, c=count, d=delta: prv(m, c, d), 1)
                low, est, high = t_prv.result
                prv_cell = f"{est:.6f} [{low:.4f}, {high:.4f}]"
        except Exception as error:  # prv_accountant fails on some cases (large ε / tiny δ)
            prv_cell, t_prv = f"failed: {type(error).__name__}", float("nan")
        eps_ours, eps_dpld = t_ours.result, t_dpld.result
        rows.append(
            {
                "case": name,
                "reference": reference,
                "dpledger PLD": eps_ours,
                "dp_acc PLD": eps_dpld,
                "dp_acc RDP": eps_drdp,
                "dpledger RDP": eps_ordp,
                "prv est [low, high]": prv_cell,
                "ours - ref": f"{eps_ours - reference:+.2e}",
                "dp_acc - ref": f"{eps_dpld - reference:+.2e}",
                "t ours 2 thr [s]": t_ours,
                "t ours 1 thr [s]": t_one,
                "t dp_acc [s]": t_dpld,
                "t prv [s]": t_prv,
                "speed-up, 2 thr": ratio(t_dpld, t_ours),
                "speed-up, 1 thr": ratio(t_dpld, t_one),
            }
        )
    print(records(rows))
    print(
        "\nAll ε are upper bounds except prv_accountant's estimate (its bracket is shown). "
        "Cold (caches emptied; the same query every round), interleaved; dp_accounting runs "
        "on one thread; dpledger on two ('2 thr': its two sampling directions and its "
        f"transforms) or one. {load()} at the end."
    )


def grid_sweep() -> None:
    """Accuracy against time of both PLD implementations on the DP-SGD case."""
    name, event, dp_event, _, count, delta, reference = CASES[0]
    sweep = []
    for grid in (4e-4, 2e-4, 1e-4, 5e-5):
        t_o = rounds(lambda g=grid: ours(event, count, delta, g))
        t_t = rounds(lambda g=grid: theirs_pld(dp_event, count, delta, g), 1)
        sweep.append(
            {
                "grid h": grid,
                "dpledger ε": t_o.result,
                "dpledger error": f"{t_o.result - reference:+.2e}",
                "dpledger time [s]": t_o,
                "dp_acc ε": t_t.result,
                "dp_acc error": f"{t_t.result - reference:+.2e}",
                "dp_acc time [s]": t_t,
                "speed-up": speedup(t_t, t_o),
            }
        )
    print(f"\nAccuracy / time on {name} (reference {reference}):\n{records(sweep)}")


# -- the "speed" table: the four cases of issue #33, cold, interleaved ----------------------
SPEED_DELTA = 1e-5
#: name → (sampling rate, σ, steps) for the DP-SGD cases; "mixed" is built by _mixed
SPEED_CASES = {
    "(a) DP-SGD q=0.01 s=1.1 T=1e4": (0.01, 1.1, 10_000),
    "(b) DP-SGD q=0.01 s=1.1 T=1e5": (0.01, 1.1, 100_000),
    "(c) DP-SGD q=1e-3 s=1.1 T=1e4": (0.001, 1.1, 10_000),
    "(d) mixed: 10 Lap + 20 Gauss + 2000 DP-SGD + 5 RR": None,
}
#: dpledger's certified bracket on the true ε of each speed case at the nominal noise
#: (round 0), epsilon_bounds(event, 1e-5, rtol=1e-6) on this version; ``--truth``
#: recomputes it (a minute)
TRUTH = {
    "(a) DP-SGD q=0.01 s=1.1 T=1e4": (5.192582040426559, 5.192584104740065),
    "(b) DP-SGD q=0.01 s=1.1 T=1e5": (21.089498531359514, 21.089513677374036),
    "(c) DP-SGD q=1e-3 s=1.1 T=1e4": (0.4023365632498922, 0.40233696036717786),
    "(d) mixed: 10 Lap + 20 Gauss + 2000 DP-SGD + 5 RR": (4.776206296162524, 4.776217497774298),
}
#: the steps tried for dp_accounting's PLD, largest first, for "equal accuracy"
DPA_LADDER = (1e-4, 7e-5, 5e-5, 3e-5, 2e-5, 1e-5, 5e-6)


def _fresh(r: int) -> float:
    """The noise factor of round r: 1 at round 0, a new value in every later round."""
    return 1.0 + 1e-6 * r


def speed_event(name: str, r: int = 0) -> ev.Event:
    """dpledger's event of a speed case, noise scaled by :func:`_fresh` (r)."""
    f = _fresh(r)
    case = SPEED_CASES[name]
    if case is not None:
        rate, sigma, steps = case
        return ev.PoissonSampled(ev.Gaussian(sigma * f), rate) * steps
    return (
        ev.Laplace(10.0 * f) * 10
        + ev.Gaussian(20.0 * f) * 20
        + ev.PoissonSampled(ev.Gaussian(1.1 * f), 0.01) * 2000
        + ev.RandomizedResponse(0.5 * f, 2) * 5
    )


def speed_theirs(name: str, r: int = 0, grid: float = 1e-4) -> float:
    """dp_accounting's PLD ε of a speed case at step ``grid``.

    The DP-SGD cases through its ``PLDAccountant``. The mixed case through its PLD
    functions, as its accountant builds them: the accountant refuses randomized response
    under add/remove (and composes a ``SelfComposedDpEvent`` of it once, whatever the
    count), so the 5-fold randomized response (its REPLACE_ONE PLD: that of an ε-DP
    release, the pair dpledger uses) is built and self-composed directly.
    """
    f = _fresh(r)
    case = SPEED_CASES[name]
    if case is not None:
        rate, sigma, steps = case
        event = dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma * f))
        return theirs_pld(event, steps, SPEED_DELTA, grid)
    p = 2.0 / (math.exp(0.5 * f) + 1.0)  # dp_accounting's noise parameter of ε-RR, k = 2
    parts = [
        dpa_pld.from_laplace_mechanism(10.0 * f, value_discretization_interval=grid).self_compose(
            10
        ),
        dpa_pld.from_gaussian_mechanism(
            20.0 * f / math.sqrt(20), value_discretization_interval=grid
        ),
        dpa_pld.from_gaussian_mechanism(
            1.1 * f, sampling_prob=0.01, value_discretization_interval=grid
        ).self_compose(2000),
        dpa_pld.from_randomized_response(
            p,
            2,
            value_discretization_interval=grid,
            neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
        ).self_compose(5),
    ]
    total = parts[0]
    for part in parts[1:]:
        total = total.compose(part)
    return float(total.get_epsilon_for_delta(SPEED_DELTA))


def speed_ours(name: str, r: int = 0, threads: int | None = 1) -> float:
    """dpledger's PLD ε (an upper bound) of a speed case, on ``threads`` threads."""
    our_pld.set_threads(threads)
    try:
        return our_pld.PLDAccountant.summarize(speed_event(name, r)).epsilon(SPEED_DELTA)
    finally:
        our_pld.set_threads(None)


def _distance(eps: float, bracket: tuple[float, float]) -> float:
    """The largest distance from ``eps`` to a truth known to lie in ``bracket``."""
    return max(abs(eps - bracket[0]), abs(eps - bracket[1]))


def equal_accuracy_grid(name: str, ours_eps: float) -> tuple[float, float, bool]:
    """The largest step of :data:`DPA_LADDER` at which dp_accounting is as accurate as us.

    Returns (step, its ε, reached), at the nominal noise; the finest step, with reached
    False, if none is (dp_accounting is then timed where it is still less accurate).
    """
    bracket = TRUTH[name]
    target = _distance(ours_eps, bracket)
    eps = math.nan
    for grid in DPA_LADDER:
        eps = speed_theirs(name, 0, grid)
        if _distance(eps, bracket) <= target:
            return grid, eps, True
    return DPA_LADDER[-1], eps, False


def speed_table(count: int, quick: bool) -> None:
    """The four cases of issue #33: cold (and warm) times, one thread each, and the ratios."""
    names = list(SPEED_CASES)
    if quick:
        names = names[:1]
    print(
        f"Speed: ε at δ = {SPEED_DELTA:g}, {count} round(s), contenders interleaved; dp_accounting "
        "and dpledger '1 thr' on one thread (BLAS too), dpledger '2 thr' on two\n"
    )
    rows = []
    for name in names:
        ours_eps = speed_ours(name)  # untimed: imports, FFT plans, the pool
        if quick:
            grid, their_eps, reached = 1e-4, speed_theirs(name), False
        else:
            grid, their_eps, reached = equal_accuracy_grid(name, ours_eps)
        contenders = {
            "ours 1": lambda r, n=name: speed_ours(n, r, 1),
            "ours 2": lambda r, n=name: speed_ours(n, r, None),
            "dp_acc default": lambda r, n=name: speed_theirs(n, r),
        }
        if grid != 1e-4:
            contenders["dp_acc equal"] = lambda r, n=name, g=grid: speed_theirs(n, r, g)
        cold = interleaved(contenders, count)
        warm = interleaved(
            {k: contenders[k] for k in ("ours 1", "dp_acc default")},
            1 if quick else count,
            cold=False,
        )
        equal = cold.get("dp_acc equal", cold["dp_acc default"])
        bracket = TRUTH[name]
        rows.append(
            {
                "case": name,
                "truth in": f"[{bracket[0]:.7f}, {bracket[1]:.7f}]",
                "dpledger ε (upper)": f"{ours_eps:.7f}",
                "dp_acc ε h=1e-4": f"{speed_theirs(name):.7f}",
                "dp_acc h equal": f"{grid:g} ({their_eps:.7f})"
                + ("" if reached else " not reached"),
                "distance ours / dp_acc equal": f"{_distance(ours_eps, bracket):.1e} / "
                f"{_distance(their_eps, bracket):.1e}",
                "ours 1 thr cold [s]": cold["ours 1"],
                "ours 2 thr cold [s]": cold["ours 2"],
                "dp_acc h=1e-4 [s]": cold["dp_acc default"],
                "dp_acc h equal [s]": equal,
                "ratio equal acc., 1 thr": ratio(equal, cold["ours 1"]),
                "ratio h=1e-4, 1 thr": ratio(cold["dp_acc default"], cold["ours 1"]),
                "ratio equal, ours 2 thr": ratio(equal, cold["ours 2"]),
                "warm: ours 1 thr [s]": warm["ours 1"],
                "warm: ratio h=1e-4": ratio(warm["dp_acc default"], warm["ours 1"]),
            }
        )
    print(records(rows))
    print(
        "\nTimes: median (min–max) wall seconds; ratios: of medians (min–max of the "
        "per-round ratios). 'equal acc.': dp_accounting at the largest step of "
        f"{DPA_LADDER} whose ε is as close to the truth as dpledger's upper bound ('not "
        "reached': none is, the finest is timed); a distance is the largest from the truth's "
        f"bracket. {load()} at the end."
    )


def recompute_truth() -> None:
    """Print dpledger's certified bracket (rtol = 1e-6) on each speed case (for TRUTH)."""
    for name in SPEED_CASES:
        lower, upper = our_pld.epsilon_bounds(speed_event(name), SPEED_DELTA, rtol=1e-6)
        print(f"    {name!r}: ({lower!r}, {upper!r}),")


def main() -> None:
    cli = parser(__doc__, "3 bracket cases, 1 speed case, each time measured once, no sweep")
    cli.add_argument(
        "--table",
        choices=("speed", "main", "bracket", "all"),
        default="all",
        help="which tables to run (bracket: the 53 DP-SGD cases against prv_accountant)",
    )
    cli.add_argument("--rounds", type=int, default=None, help="timed rounds (default 5)")
    cli.add_argument(
        "--truth", action="store_true", help="recompute the brackets of TRUTH and stop"
    )
    args = cli.parse_args()
    setup(threads=1)  # one BLAS thread for every library (dp_accounting is one-threaded)
    warnings.simplefilter("ignore")
    if args.truth:
        recompute_truth()
        return
    repeat = args.rounds or (1 if args.quick else 5)
    print(f"machine at the start: {machine()}\n")
    if args.table in ("speed", "all"):
        speed_table(repeat, args.quick)
    if args.table in ("bracket", "all"):
        if args.table == "all":
            print()
        # quick: two Opacus cases and TF Privacy's (prv_accountant takes minutes on others)
        cases = [BRACKET_CASES[i] for i in (0, 4, 40)] if args.quick else BRACKET_CASES
        print(f"Bracket: certified (lower, upper) ε on {len(cases)} DP-SGD configurations\n")
        bracket_table(cases, 1 if args.quick else 3)
    if args.table in ("main", "all"):
        if args.table == "all":
            print()
        main_table(repeat, with_prv=not args.quick)
        if not args.quick:
            grid_sweep()
    print(f"\nmachine at the end: {load()}")


if __name__ == "__main__":
    main()
