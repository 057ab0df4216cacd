"""Benchmark: private linear regression — ADASSP and SSP (calibrated and published),
diffprivlib's LinearRegression, non-private least squares and the zero predictor.

Run:  python benchmarks/linear_regression.py [--quick] [--sets a,b|all|none] [--seeds N]
                                             [--fold-seeds N] [--plot PATH]
      python benchmarks/linear_regression.py --scale [--rows N] [--chunk N]
      python benchmarks/linear_regression.py --split [--seeds N]
      python benchmarks/linear_regression.py --exact-cost [--quick]

Utility (default mode), side by side in one run, δ = 1e-6, add/remove adjacency,
ε ∈ {0.01, 0.1, 1, 10}:

* ADASSP and SSP from dpledger, variant "calibrated" (the releases composed jointly and
  calibrated to exactly (ε, δ)) and "published" (Wang 2018's constants, charged at their
  true cost). Published SSP really spends more than its nominal ε (≈ 1.7 at nominal 1), so
  a ledger holding the nominal budget refuses it: here it draws on a ledger large enough
  to accept it, and the table shows what it truly spent. All use x_bound = y_bound = 1 on
  data in the unit ball / interval, default (safe, discrete) noise.
* diffprivlib's LinearRegression (functional mechanism, pure ε-DP; δ = 0) with
  bounds_X = (−1, 1) per feature and bounds_y = (−1, 1), implied by ‖x‖ ≤ 1, |y| ≤ 1.
* Non-private least squares (sklearn LinearRegression), ridge λ = 1 (Wang's non-private
  baseline) and the zero predictor ŷ = 0.

Synthetic set (per seed, a fresh draw): θ* uniform on the unit sphere of R^10;
x ~ N(0, I/(2d)) with rows of norm > 1 scaled onto the unit sphere (≈ 3 % of rows);
y = clip(xᵀθ* + 0.1·N(0, 1), −1, 1); 10,000 training and 10,000 test rows.
Non-private MSE ≈ 0.01, zero predictor ≈ 0.06. Fitted without intercept (like Wang;
y is centred by construction), then again with fit_intercept=True.

UCI: the 15 sets of Wang (2018), loaded and preprocessed as the data sets' README says
(benchmarks/_uci.py), 10-fold cross-validation (KFold, shuffled, fixed seed),
``--fold-seeds`` noise draws per fold and method; fit_intercept=False as in Wang.
The preprocessing statistics (column means and sds, ȳ, max|y|) come from the whole data
set, as in Wang's experiments: identical for every method, and NOT private. If the data
folder (``$DPLEDGER_DATA``) is absent, the UCI part is skipped.

``--scale``: ADASSP on 10⁷ × 20 rows generated chunk by chunk inside dask (never held in
memory at once), against numpy's own X.T @ X + X.T @ y over the same chunks generated the
same way; rows/s, their ratio and the peak memory of each run (separate processes).

``--exact-cost``: what exact statistics cost against the float path they replaced —
λ_min by ``eigvalsh`` vs the certified grid index, and flooring the Gram matrix's upper
triangle from floats vs exactly — at d ∈ {20, 200, 1000, 2000}.

``--split``: the calibrated ADASSP's budget split (shares of μ² for λ_min, XᵀX, Xᵀy) on the
synthetic set at ε ∈ {0.1, 1}; median test MSE per split, paired against the default.

The utility targets (calibrated ADASSP within 1.5× least squares at ε = 1, never worse
than the zero predictor beyond its seed spread, ahead of diffprivlib, ahead of published
ADASSP on ≥ 12 of the 15 UCI sets) are slow tests: tests/package/test_benchmark_verdicts.py.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import peer_missing
from _harness import (
    Data,
    Fit,
    Method,
    Panel,
    Results,
    Split,
    ZeroPredictor,
    diffprivlib_model,
    finish,
    fmt,
    grid_table,
    paired,
    parser,
    plot,
    setup,
    synthetic,
    table,
    true_epsilon,
)
from _harness import run as run_grid
from _linear_speed import exact_cost_mode, scale_mode

from dpledger import Ledger
from dpledger.algorithms import ADASSP, SSP

EPSILONS = (0.01, 0.1, 1.0, 10.0)
DELTA = 1e-6
ADJ = "add_remove"
D_SYNTH = 10
N_SYNTH = 10_000
BOUNDS = {"delta": DELTA, "x_bound": 1.0, "y_bound": 1.0, "adjacency": ADJ}

# ------------------------------------------------------------------ methods


def methods(intercept: bool, safe: bool, keys: Sequence[str] | None = None) -> list[Method]:
    """The methods compared (those in ``keys``, if given): dpledger's, the peer's, baselines."""
    from sklearn.linear_model import LinearRegression, Ridge

    def dpledger(cls: Any, variant: str, ledger: bool = False) -> Any:
        def make(epsilon: float, seed: int, data: Any) -> Any:
            # Published SSP spends more than its nominal ε: a ledger holding the nominal
            # budget refuses it, so it draws on a large one; its true cost is reported.
            book = Ledger(1e6, DELTA, adjacency=ADJ) if ledger else None
            return cls(
                epsilon=epsilon,
                fit_intercept=intercept,
                safe_noise=safe,
                variant=variant,
                ledger=book,
                rng=seed,
                **BOUNDS,
            )

        return make

    def dpl(epsilon: float, seed: int, data: Any) -> Any:
        return diffprivlib_model(
            "LinearRegression",
            seed,
            epsilon=epsilon,
            bounds_X=(-1.0, 1.0),
            bounds_y=(-1.0, 1.0),
            fit_intercept=intercept,
        )

    out = [
        Method("adassp_cal", "ADASSP calibrated", dpledger(ADASSP, "calibrated"), ("C0", "-", "o")),
        Method("adassp_pub", "ADASSP published", dpledger(ADASSP, "published"), ("C0", "--", "s")),
        Method("ssp_cal", "SSP calibrated", dpledger(SSP, "calibrated"), ("C1", "-", "^")),
        Method("ssp_pub", "SSP published", dpledger(SSP, "published", True), ("C1", "--", "v")),
        Method("diffprivlib", "diffprivlib LinReg (FM)", dpl, ("C2", ":", "x")),
        Method(
            "ols",
            "least squares (non-private)",
            lambda *_: LinearRegression(fit_intercept=intercept),
            baseline=True,
        ),
        Method(
            "ridge1",
            "ridge λ=1 (non-private, Wang's)",
            lambda *_: Ridge(alpha=1.0, fit_intercept=intercept),
            ("0.5", "--", None),
            True,
        ),
        Method("zero", "zero predictor", lambda *_: ZeroPredictor(), ("C3", "-", None), True),
    ]
    dropped = {"diffprivlib"} if peer_missing("diffprivlib") else set()
    return [m for m in out if m.key not in dropped and (keys is None or m.key in keys)]


def measure(fit: Fit) -> dict[str, float]:
    """Test MSE; the ε really spent at δ (dpledger), the nominal ε (diffprivlib)."""
    residual = fit.model.predict(fit.split.X_test) - fit.split.y_test
    cost = math.nan if fit.method.baseline else fit.point
    if fit.method.key != "diffprivlib" and not fit.method.baseline:
        cost = true_epsilon(fit.model, DELTA)
    return {"mse": float(residual @ residual / len(residual)), "cost": cost}


def synthetic_data(tag: str = "") -> Data:
    """The synthetic set of the module docstring, a fresh draw per seed (``tag``: a run of
    its own, whose fits draw noise seeds of their own)."""
    return Data(
        f"synthetic n={N_SYNTH:,} d={D_SYNTH}{tag}",
        lambda seed: synthetic((20180, seed), N_SYNTH, N_SYNTH, D_SYNTH, noise=0.1),
    )


# ------------------------------------------------------------------ synthetic and UCI


def synthetic_block(seeds: int, intercept: bool, safe: bool) -> Results:
    """Every method on ``seeds`` synthetic draws; prints the table."""
    data = synthetic_data(", fit_intercept" if intercept else "")
    res = run_grid(methods(intercept, safe), data, EPSILONS, seeds, measure)
    ols = res.median("mse", "ols")
    print(
        f"\n== Synthetic: n = {N_SYNTH:,} train + {N_SYNTH:,} test, d = {D_SYNTH}, "
        f"fit_intercept={intercept}, {seeds} seeds, δ = {DELTA:g}, add/remove "
        f"({res.elapsed:.0f} s)\ntest MSE: median [25 %, 75 %] over seeds; '× LS' = median / "
        "median of least squares; 'ε spent' = true cost at δ (tightest valid accountant)"
    )
    ratio = ("× LS", lambda m, e: f"{res.median('mse', m.key, e) / ols:.3g}")
    spent = ("ε spent", lambda m, e: fmt(res.median("cost", m.key, e)))
    print(grid_table(res, "mse", EPSILONS, head="ε={:g} median [IQR]", extra=[ratio, spent]))
    if any(m.key == "diffprivlib" for m in res.methods):
        print(
            "calibrated ADASSP's MSE minus diffprivlib's, by seed, at ε = "
            + paired(res, "mse", "adassp_cal", "diffprivlib", EPSILONS)
        )
    return res


def uci_sets(names: Sequence[str], fold_seeds: int) -> list[Data]:
    """Each set's 10 folds, ``fold_seeds`` noise seeds per fold: seed → fold seed // fold_seeds."""
    from _uci import load_preprocessed
    from sklearn.model_selection import KFold

    out = []
    for name in names:
        X, y = load_preprocessed(name)
        folds = list(KFold(10, shuffle=True, random_state=0).split(X))

        def draw(seed: int, X: Any = X, y: Any = y, folds: Any = folds) -> Split:
            train, test = folds[seed // fold_seeds]
            return Split(X[train], y[train], X[test], y[test])

        out.append(Data(name, draw))
    return out


def cv_mean(values: Sequence[float], fold_seeds: int) -> tuple[float, float]:
    """(mean, sd over the 10 folds) of the per-fold mean CV test MSE."""
    per_fold = np.nanmean(np.reshape(np.asarray(values, float), (10, fold_seeds)), axis=1)
    return float(np.mean(per_fold)), float(np.std(per_fold, ddof=1))


def uci_block(
    names: Sequence[str],
    fold_seeds: int,
    safe: bool,
    keys: Sequence[str] | None = None,
    epsilons: Sequence[float] = EPSILONS,
) -> dict[str, Results]:
    """Every method (those in ``keys``) at every ε on each UCI set by 10-fold CV; prints a
    table per set and the ratios of calibrated to published ADASSP."""
    from _uci import WANG

    print(
        f"\n== UCI (Wang 2018's 15 sets): 10-fold CV (KFold shuffled, random_state=0), "
        f"{fold_seeds} noise seed(s) per fold and method, fit_intercept=False, δ = {DELTA:g}, "
        "add/remove\nPreprocessing as the data sets' README (Wang): y centred and divided by "
        "max|y|, columns z-scored, rows scaled to unit norm. These statistics come from the "
        "WHOLE\ndata set, as in Wang's experiments: identical for every method and NOT private."
        "\nCells: mean CV test MSE (± sd over the 10 folds of the per-fold mean). 'Wang' rows: "
        "his published AdaSSP/SSP results (exp_results.mat, one run; his non-private is ridge 1)."
    )
    per_set = {}
    for data in uci_sets(names, fold_seeds):
        res = run_grid(methods(False, safe, keys), data, epsilons, 10 * fold_seeds, measure)
        per_set[data.name] = res
        tail = []
        if ref := WANG.get(data.name):
            at = [EPSILONS.index(e) for e in epsilons]
            tail = [
                ["Wang AdaSSP (published)", *(fmt(ref["adassp"][i], 4) for i in at)],
                ["Wang SSP (published)", *(fmt(ref["ssp"][i], 4) for i in at)],
                ["Wang trivial / ridge-1", *[f"{ref['trivial']} / {ref['ridge']}"] * len(at)],
            ]

        def show(values: list[float]) -> str:
            mean, sd = cv_mean(values, fold_seeds)
            return f"{fmt(mean, 4)} ± {fmt(sd, 4)}"

        X = data.draw(0)
        print(
            f"\n-- {data.name}: n = {len(X.y) + len(X.y_test):,}, d = {X.X.shape[1]} "
            f"({res.elapsed:.1f} s)"
        )
        print(grid_table(res, "mse", epsilons, show=show, tail=tail))
    print("\nCalibrated vs published ADASSP (mean CV MSE, ratio cal/pub; < 1 = calibrated better)")
    rows = []
    for name, res in per_set.items():
        row = [name]
        for e in epsilons:
            cal, pub = (
                cv_mean(res.get("mse", k, e), fold_seeds)[0] for k in ("adassp_cal", "adassp_pub")
            )
            row.append(f"{fmt(cal, 4)} / {fmt(pub, 4)} = {cal / pub:.3f}")
        rows.append(row)
    print(table(["set", *(f"ε={e:g} cal / pub" for e in epsilons)], rows))
    return per_set


# ------------------------------------------------------------------ --split


def split_mode(seeds: int, safe: bool, epsilons: Sequence[float] = (0.1, 1.0)) -> None:
    """The calibrated ADASSP's budget split, paired seed by seed against the default."""
    splits = [(lam, (1 - lam) / 2, (1 - lam) / 2) for lam in (0.02, 0.05, 0.1, 0.2, 1 / 3)]
    splits += [(0.1, 0.9 * r / (1 + r), 0.9 / (1 + r)) for r in (1 / 3, 1 / 2, 2.0, 3.0)]
    default = "0.100, 0.450, 0.450"

    def make(split: tuple[float, ...]) -> Any:
        kw = {"fit_intercept": False, "safe_noise": safe, "budget_split": split, **BOUNDS}
        return lambda epsilon, seed, data: ADASSP(epsilon=epsilon, rng=seed, **kw)

    names = [", ".join(f"{s:.3f}" for s in split) for split in splits]
    ms = [
        Method(n, n + " *" * (n == default), make(s), noise="split")
        for n, s in zip(names, splits, strict=True)
    ]
    warnings.filterwarnings("ignore", message=".*repeats noise.*")  # paired on purpose
    res = run_grid(ms, synthetic_data(", split"), epsilons, seeds, measure)
    print(
        f"== Budget split of calibrated ADASSP (shares of μ² for λ_min, XᵀX, Xᵀy), synthetic set, "
        f"{seeds} seeds, δ = {DELTA:g}, add/remove, fit_intercept=False\nmedian test MSE; 'vs "
        "default' = median over seeds of (MSE − MSE at the default (0.1, 0.45, 0.45)), same "
        "data and noise seed"
    )

    def iqr(m: Method, e: float) -> str:
        q75, q25 = np.nanquantile(res.get("mse", m.key, e), [0.75, 0.25])
        return f"{q75 - q25:.6f}"

    def vs_default(m: Method, e: float) -> str:
        diff = np.subtract(res.get("mse", m.key, e), res.get("mse", default, e))
        return f"{float(np.nanmedian(diff)):+.2e}"

    med = res.median
    print(
        grid_table(
            res,
            "mse",
            epsilons,
            head="ε={:g} median",
            show=lambda v: f"{np.nanmedian(v):.6f}",
            extra=[("IQR", iqr), ("vs default (median diff)", vs_default)],
        )
    )
    for e in epsilons:
        best = min(names, key=lambda n: med("mse", n, e))
        print(
            f"best at ε = {e:g}: ({best}) (median {med('mse', best, e):.6f} vs default "
            f"{med('mse', default, e):.6f})"
        )
    score = {
        n: float(np.mean([med("mse", n, e) / med("mse", default, e) for e in epsilons]))
        for n in names
    }
    best = min(names, key=score.__getitem__)
    print(
        f"best over both ε (mean of median-MSE ratios to default): ({best}) "
        f"({score[best]:.4f}× default)"
    )


# ------------------------------------------------------------------ main


def main() -> None:
    cli = parser(__doc__, "3 seeds, 2 UCI sets, 1 noise seed per fold")
    cli.add_argument("--sets", default=None, help="UCI sets: comma list, 'all' or 'none'")
    cli.add_argument("--seeds", type=int, default=None, help="synthetic seeds (default 50)")
    cli.add_argument("--fold-seeds", type=int, default=None, help="UCI noise seeds per fold (5)")
    cli.add_argument("--plot", type=Path, default=Path("linear_regression.png"))
    cli.add_argument("--no-intercept-run", action="store_true", help="skip fit_intercept=True")
    cli.add_argument(
        "--float-noise",
        action="store_true",
        help="floating-point Gaussian noise (safe_noise=False; exact accounting)",
    )
    cli.add_argument("--scale", action="store_true", help="the speed and scale benchmark")
    cli.add_argument("--rows", type=int, default=10_000_000)
    cli.add_argument("--chunk", type=int, default=250_000)
    cli.add_argument("--features", type=int, default=20)
    cli.add_argument("--repeat", type=int, default=2, help="--scale repetitions (best of)")
    cli.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="BLAS threads per process (0: library default; 1 keeps numpy's floor "
        "and dask's workers in --scale, and the small products elsewhere, from "
        "oversubscribing the machine)",
    )
    cli.add_argument("--split", action="store_true", help="sweep ADASSP's budget split")
    cli.add_argument(
        "--exact-cost", action="store_true", help="the cost of exact statistics and λ_min"
    )
    args = cli.parse_args()
    safe = not args.float_noise
    if args.exact_cost:
        exact_cost_mode([20, 200] if args.quick else [20, 200, 1000, 2000])
    elif args.scale:
        repeat = 1 if args.quick else args.repeat
        scale_mode(args.rows, args.chunk, args.features, repeat, args.blas_threads)
    else:
        setup(threads=args.blas_threads)  # d ≤ 32: extra BLAS threads only contend
        if args.split:
            split_mode(args.seeds or (5 if args.quick else 50), safe)
        else:
            utility(cli, args, safe)


def utility(cli: argparse.ArgumentParser, args: argparse.Namespace, safe: bool) -> None:
    """The default mode: the synthetic set, then the UCI sets; the plot."""
    from _common import where_to_look
    from _uci import SETS, data_dir

    seeds = args.seeds or (3 if args.quick else 50)
    fold_seeds = args.fold_seeds or (1 if args.quick else 5)
    noise = "exact discrete Gaussian (safe_noise=True, default)" if safe else "float Gaussian"
    print(f"noise: {noise}; all dpledger estimators with x_bound = 1, y_bound = 1")
    title = f"synthetic n={N_SYNTH:,} d={D_SYNTH}, {seeds} seeds (median)"
    panels = [Panel(title, synthetic_block(seeds, False, safe), "mse", EPSILONS, "test MSE")]
    if not args.no_intercept_run:
        synthetic_block(seeds, True, safe)
    if args.sets == "none":
        names: list[str] = []
    elif args.sets in (None, "all"):
        names = ["elevators", "yacht"] if args.quick and args.sets is None else list(SETS)
    else:
        names = [n.strip() for n in args.sets.split(",") if n.strip()]
        if unknown := [n for n in names if n not in SETS]:
            cli.error(f"unknown sets {unknown}; known: {', '.join(SETS)}")
    if names and data_dir() is None:
        print(
            f"\nUCI data not found (looked in {where_to_look()}; set DPLEDGER_DATA to the "
            "folder holding uci/): skipping the UCI part."
        )
        names = []

    def mean(values: list[float]) -> float:
        return cv_mean(values, fold_seeds)[0]

    for name, res in (uci_block(names, fold_seeds, safe) if names else {}).items():
        panels.append(Panel(f"{name} (mean CV)", res, "mse", EPSILONS, "test MSE", stat=mean))
    print("\n" + plot(args.plot, panels, xlabel=f"ε (δ = {DELTA:g})"))
    finish()


if __name__ == "__main__":
    main()
