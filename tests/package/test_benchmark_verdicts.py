"""The benchmarks' verdicts, as slow tests: what their tables must show, asserted.

A benchmark (``benchmarks/*.py``) measures and reports, side by side with the peer
libraries; the claims its numbers support are checked here, on the same code paths and
at the benchmark's own default settings (seeds, repetitions, data): each test calls the
benchmark's functions and asserts the verdict it used to print as PASS/FAIL, with the
same threshold. Fits are seeded from their identity (data, method, ε, seed), so a test
that runs only the methods and ε a verdict needs reproduces the full run's fits.

Run with ``pytest -m slow tests/package/test_benchmark_verdicts.py`` (minutes: each test is a
benchmark run). A test whose peer library or data set is absent is skipped, as the
benchmark leaves that part out. Timings are not asserted (STYLE.md): the speed targets
stay in the benchmarks.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*floating-point:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*textbook:UserWarning"),
]


@functools.cache
def bench(name: str) -> ModuleType:
    """The benchmark ``benchmarks/<name>.py``, imported (not run)."""
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    """One BLAS thread, as the benchmarks run (``_harness.setup``): the products are small,
    and extra threads only spin on a shared machine."""
    threadpoolctl = pytest.importorskip("threadpoolctl")  # a scikit-learn dependency
    with threadpoolctl.threadpool_limits(limits=1):
        yield


@pytest.fixture(autouse=True)
def no_failed_fits():
    """A verdict holds over every fit: none may fail (the benchmark shows a failure as —)."""
    yield
    failures = getattr(sys.modules.get("_harness"), "FAILURES", [])  # loaded by a benchmark
    found, failures[:] = list(failures), []
    assert not found, "failed fits:\n" + "\n".join(found)


def needs(*modules: str) -> None:
    for module in modules:
        pytest.importorskip(module)


# ------------------------------------------------------------------ accounting.py


def test_accounting_bracket_inside_prv_accountants_and_narrow():
    """dpledger's certified bracket lies inside prv_accountant's, at most 1e-3 wide, on
    every one of the 53 DP-SGD configurations of ``accounting.py --table bracket``."""
    needs("dp_accounting", "prv_accountant")
    accounting = bench("accounting")
    outside, wide = [], []
    for sigma, rate, steps, delta, source in accounting.BRACKET_CASES:
        lower, upper = accounting.ours_bracket(sigma, rate, steps, delta)
        low, high = accounting.prv_bracket(sigma, rate, steps, delta)
        case = f"σ={sigma} q={rate:.4g} T={steps} δ={delta:g} ({source})"
        if not low <= lower <= upper <= high:
            outside.append(f"{case}: [{lower}, {upper}] vs prv [{low}, {high}]")
        if (upper - lower) / upper > 1e-3:
            wide.append(f"{case}: [{lower}, {upper}]")
    assert not outside, "dpledger's bracket is not inside prv_accountant's:\n" + "\n".join(outside)
    assert not wide, "dpledger's bracket is wider than 1e-3:\n" + "\n".join(wide)


def test_accounting_no_under_report_and_thread_count_never_changes_epsilon():
    """Every case of the main table: dpledger's PLD ε is never below the reference (exact,
    or tight from above), and one thread gives the very same ε as two."""
    needs("dp_accounting", "prv_accountant")
    accounting = bench("accounting")
    for name, event, _, _, count, delta, reference in accounting.CASES:
        eps = accounting.ours(event, count, delta)
        assert eps >= reference, f"{name}: ε {eps} below the reference {reference}"
        assert accounting.ours_single_thread(event, count, delta) == eps, name


# ------------------------------------------------------------------ calibrate.py


def test_calibrate_sigma_meets_the_target_and_is_never_above_a_peers_that_does():
    """Every case of ``calibrate.py``: dpledger's σ meets (ε, δ) by its tightest valid
    accountant, and is no larger than dp_accounting's σ whenever that one meets it too."""
    needs("dp_accounting")
    calibrate = bench("calibrate")
    for name, epsilon, delta, count, rate, accountant, _ in calibrate.CASES:
        target = (epsilon, delta, count, rate)
        mine, peer = calibrate.ours(*target), calibrate.theirs(accountant, *target)
        assert calibrate.meets(mine, *target), f"{name}: dpledger's σ {mine} misses the target"
        if calibrate.meets(peer, *target):
            assert mine <= peer, f"{name} ({accountant}): dpledger σ {mine} > peer's {peer}"


# ------------------------------------------------------------------ linear_regression.py


@pytest.fixture(scope="module")
def linear_synthetic():
    """The benchmark's synthetic block at its defaults: 50 seeds, no intercept, safe noise."""
    return bench("linear_regression").synthetic_block(50, intercept=False, safe=True)


def test_linear_adassp_within_1_5_times_least_squares_at_epsilon_1(linear_synthetic):
    ratio = linear_synthetic.median("mse", "adassp_cal", 1.0) / linear_synthetic.median(
        "mse", "ols"
    )
    assert ratio <= 1.5, f"calibrated ADASSP at ε = 1: {ratio:.3f}× least squares"


def test_linear_adassp_never_worse_than_zero_beyond_its_seed_spread(linear_synthetic):
    """At every ε: ADASSP's median MSE − the zero predictor's ≤ ADASSP's IQR over seeds."""
    zero = linear_synthetic.median("mse", "zero")
    for epsilon in bench("linear_regression").EPSILONS:
        q25, q50, q75 = np.quantile(
            linear_synthetic.get("mse", "adassp_cal", epsilon), [0.25, 0.5, 0.75]
        )
        assert q50 - zero <= q75 - q25, f"ε = {epsilon}: {q50} − {zero} > IQR {q75 - q25}"


def test_linear_adassp_beats_diffprivlib_at_every_epsilon(linear_synthetic):
    needs("diffprivlib")
    for epsilon in bench("linear_regression").EPSILONS:
        ours = linear_synthetic.median("mse", "adassp_cal", epsilon)
        theirs = linear_synthetic.median("mse", "diffprivlib", epsilon)
        assert ours < theirs, f"ε = {epsilon}: ADASSP {ours} vs diffprivlib {theirs}"


def test_linear_uci_calibrated_adassp_beats_published_on_12_of_15_sets():
    """Mean 10-fold CV test MSE (5 noise seeds per fold), at ε = 0.1 and at ε = 1."""
    uci = bench("_uci")
    if uci.data_dir() is None:
        pytest.skip(f"UCI data not found (looked in {uci.where_to_look()})")
    linear = bench("linear_regression")
    keys, epsilons = ("adassp_cal", "adassp_pub"), (0.1, 1.0)
    per_set = linear.uci_block(list(uci.SETS), 5, True, keys=keys, epsilons=epsilons)
    for epsilon in epsilons:
        mean = {
            name: [linear.cv_mean(res.get("mse", key, epsilon), 5)[0] for key in keys]
            for name, res in per_set.items()
        }
        losses = [
            f"{name} ({cal:.4g} vs {pub:.4g})" for name, (cal, pub) in mean.items() if cal >= pub
        ]
        assert len(per_set) - len(losses) >= 12, f"ε = {epsilon}: not lower on {losses}"


# ------------------------------------------------------------------ functional_mechanism.py

#: every set of benchmarks/functional_mechanism.py (a set whose data is absent is skipped)
FM_SETS = (
    "synth_D_20_N_20000",
    "synth_D_50_N_10000",
    "crime",
    "twitter",
    "synthetic linear d=10",
    "adult (one-hot, D=108)",
    "synthetic logistic d=10",
)


@functools.cache
def fm_sets() -> dict[str, object]:
    return {data.name: data for data in bench("functional_mechanism").data_sets(quick=False)[0]}


def test_fm_sets_are_the_benchmarks_sets():
    """The ordering below runs on every set the benchmark has (none left out by name)."""
    capefm = bench("_capefm")
    if capefm.capefm_dir() is None or capefm.adult_dir() is None:
        pytest.skip("a data folder is absent: the benchmark's list is shorter")
    assert set(fm_sets()) == set(FM_SETS)


@functools.cache
def fm_noise(name: str):
    """The benchmark's ordering rows for set ``name``: (set, ε, RMS G, R, F, G/R, R/F)."""
    fm = bench("functional_mechanism")
    sets = fm_sets()
    if name not in sets:
        pytest.skip(f"{name}: data absent")
    data = sets[name]
    keys = ("gfm_cal", "rlx_cal", "fm_cal")
    res = fm.run(fm.methods(data.loss, keys), data, fm.EPSILONS, 1, fm.measure)
    return fm.ordering_rows(name, res)


@pytest.mark.parametrize("name", FM_SETS)
def test_fm_noise_ordered_gaussian_relaxed_fm_at_equal_true_budget(name):
    """Calibrated (each meets (ε, δ) exactly): RMS noise per coefficient Gaussian FM <
    relaxed FM < FM at every ε of the benchmark, the ratios G/R and R/F printed (the papers'
    "≪" has no threshold: the ratio is reported, not tested against one)."""
    rows = fm_noise(name)
    assert [row[1] for row in rows] == list(bench("functional_mechanism").EPSILONS), rows
    for _, epsilon, g, r, f, g_r, r_f in rows:
        print(f"{name} ε = {epsilon:g}: G/R = {g_r:.3f}, R/F = {r_f:.3f}")
        assert g < r < f, f"ε = {epsilon}: RMS {g} / {r} / {f} (G/R {g_r:.3f}, R/F {r_f:.3f})"


def test_fm_logistic_on_adult_is_monotone_in_epsilon_and_above_the_majority_class():
    """Issue #33: calibrated Gaussian FM logistic on Adult (the eigenvalue floor), 10 seeds,
    ε ∈ {0.1, 0.5, 1, 2, 5, 10}: every median accuracy above the majority class, and the
    median never falls by more than the larger IQR of two consecutive ε (seed noise)."""
    capefm = bench("_capefm")
    if capefm.adult_dir() is None:
        pytest.skip(f"adult data not found (looked in {capefm.where_to_look()})")
    fm = bench("functional_mechanism")
    fits = fm.adult_floor_fits(10)
    stats = [np.quantile(fits["acc"]["auto", e], [0.25, 0.5, 0.75]) for e in fm.ADULT_EPSILONS]
    for epsilon, (_, median, _) in zip(fm.ADULT_EPSILONS, stats, strict=True):
        assert median > fits["majority"], f"ε = {epsilon}: {median} ≤ {fits['majority']}"
    for i in range(1, len(stats)):
        spread = max(stats[i - 1][2] - stats[i - 1][0], stats[i][2] - stats[i][0])
        drop = stats[i - 1][1] - stats[i][1]
        assert drop <= spread, f"ε = {fm.ADULT_EPSILONS[i]}: median falls {drop:.4f} > {spread:.4f}"


@pytest.fixture(scope="module")
def capefm_d20():
    capefm = bench("_capefm")
    if capefm.capefm_dir() is None:
        pytest.skip(f"capefm data not found (looked in {capefm.where_to_look()})")
    return capefm.load_capefm("synth_D_20_N_20000")


def test_capefm_aggregate_noise_is_pooled_and_conventional_s_times(capefm_d20):
    """S ∈ {2, 5, 10, 20} sites, 20 repetitions at ε = 0.5: the aggregate noise variance / τ²
    is 1 for CAPE (both orders) and S for the conventional scheme, within 3 sampling sd."""
    X, y, _ = capefm_d20
    for row in bench("functional_mechanism").capefm_variance(X, y, 20, epsilon=0.5):
        sites, sd = row["sites"], row["sd"]
        assert all(abs(r - 1) <= 3 * sd for r in row["cape"]), (sites, row["cape"])
        assert all(abs(r / sites - 1) <= 3 * sd for r in row["conventional"]), (sites, row)


def test_capefm_within_1_5_times_pooled_gaussian_fm(capefm_d20):
    """capeFM with S = 5 sites: median ‖β − w‖/D within 1.5× of pooled calibrated Gaussian FM
    at the same (ε, δ), ε ∈ {0.1, 1, 10}, 30 seeds."""
    X, y, beta = capefm_d20
    err = bench("functional_mechanism").capefm_vs_pooled(X, y, beta, 30)
    for epsilon in (0.1, 1.0, 10.0):
        ratio = np.median(err["cape", epsilon]) / np.median(err["pooled", epsilon])
        assert ratio <= 1.5, f"ε = {epsilon}: capeFM {ratio:.2f}× pooled"


# ------------------------------------------------------------------ logistic_regression.py


def logistic_sets() -> dict[str, object]:
    return {data.key: data for data in bench("logistic_regression").data_sets()[0]}


@functools.cache
def adult_objective_perturbation():
    """Adult at ε = 1, 10 seeds (hyper-parameters on 3 proxy seeds): the three forms of
    objective perturbation and the non-private fit."""
    adult = logistic_sets().get("adult")
    if adult is None:
        pytest.skip("adult data absent")
    keys = ("objpert_l1", "objpert", "objpert_g")
    return bench("logistic_regression").run_set(adult, 10, 3, keys=keys, epsilons=[1.0])[0]


@pytest.mark.parametrize(
    "key",
    [
        "objpert_l1",
        pytest.param(
            "objpert",
            marks=pytest.mark.xfail(
                raises=AssertionError,
                reason="documented (docs/algorithms.md): the ℓ₂ form is 2.28 points below",
            ),
        ),
        "objpert_g",
    ],
)
def test_logistic_objective_perturbation_within_2_points_of_nonprivate_on_adult(key):
    """(a) Adult, ε = 1: objective perturbation's median accuracy is at most 2 points below
    the non-private fit's (pure ε with ℓ₁ noise, the norm the public rule picks on Adult;
    pure ε with ℓ₂ noise; δ = 1e-5)."""
    res = adult_objective_perturbation()
    base, accuracy = res.median("acc", "nonprivate"), res.median("acc", key, 1.0)
    assert accuracy >= base - 0.02, f"{key}: {accuracy:.4f} vs non-private {base:.4f}"


# (b) objective perturbation against diffprivlib at equal true ε is decided by the paired
# 95 % interval over seeds (the criterion), in test_benchmark_verdicts_logistic.py;
# a comparison of medians failed on differences inside the seed noise (0.06 points).
