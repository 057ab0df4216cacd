"""KNG's O(1/n) noise against the exponential mechanism's O(1/√n) (Reimherr & Awan 2019).

For linear regression, quantile regression (τ = 0.75) and the 1-D median, at fixed ε = 1
(add/remove), the error ‖θ̃ − θ̂‖ of each private release θ̃ from the non-private
minimiser θ̂ of the same loss is measured for n from 10² to 10⁵ (median over repetitions)
and a line is fitted to log error against log n. The poster's claim: slope −1 for KNG,
−½ for the exponential mechanism.

    python examples/kng_rates.py                # full run: about 40 minutes (see below)
    python examples/kng_rates.py --quick        # about 20 s: 5 sizes up to 10⁴, 8 reps
    python examples/kng_rates.py --out rates.png

Quantile regression is sampled by MCMC (the ε guarantee holds for exact sampling only);
the two others exactly. Synthetic data: x uniform in [−0.6, 0.6]², y = xᵀβ + 0.1 + noise,
clipped to the declared bounds (‖x‖ ≤ 1, |y| ≤ 1), Θ = {‖θ‖₂ ≤ 2}; for the median,
uniform values in the declared range [0, 1].

Measured (8 sizes, 8 reps; 37 minutes on a shared 2-core machine, 28 minutes of CPU,
almost all of it the MCMC of quantile regression at the largest n): slopes KNG −0.90,
exponential −0.44 (linear); KNG −1.13, exponential −0.56 (quantile regression); median
(uniform data) KNG −0.98, exponential −0.58.

``--quick`` (5 sizes from 10² to 10⁴, 8 reps, shorter MCMC chains; 20-25 s of CPU) is a
rough check, not the measurement. Over five seeds its slopes ranged: linear KNG −0.85 to
−0.98, exponential −0.38 to −0.51; quantile regression KNG −1.25 to −1.45 (steeper than
the full run's: at n = 100 the KNG error is inflated), exponential −0.55 to −0.67; median
KNG −0.82 to −1.05, exponential −0.54 to −0.70. It says so when it runs."""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import add_quick, print_expected_time, pyplot

from dpledger import Ledger
from dpledger.algorithms import (
    ExponentialLinearRegression,
    ExponentialQuantileRegression,
    KNGLinearRegression,
    KNGQuantileRegression,
    quantile,
)

EPSILON, TAU = 1.0, 0.75
BOUNDS = {"x_bound": 1.0, "y_bound": 1.0, "theta_bound": 2.0, "adjacency": "add_remove"}


def synthetic(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.uniform(-0.6, 0.6, (n, 2))
    y = np.clip(X @ np.array([0.8, -0.4]) + 0.1 + 0.15 * rng.normal(size=n), -1.0, 1.0)
    return X, y


def linear_reference(X: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    """The minimiser of Σ(yᵢ − zᵢᵀθ)² + ridge·‖θ‖² (the fitted model's public ``ridge_``)."""
    Z = np.c_[X, np.ones(len(X))]
    return np.asarray(np.linalg.solve(Z.T @ Z + ridge * np.eye(3), Z.T @ y))


def quantile_reference(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The minimiser of Σρ_τ(yᵢ − zᵢᵀθ), by linear programming."""
    from sklearn.linear_model import QuantileRegressor

    fit = QuantileRegressor(quantile=TAU, alpha=0.0, solver="highs").fit(X, y)
    return np.r_[fit.coef_, fit.intercept_]


def errors(problem: str, n: int, seed: int, mcmc: dict) -> tuple[float, float]:
    """(KNG error, exponential-mechanism error) for one data set of size n."""
    rng = np.random.default_rng(seed)
    X, y = synthetic(n, rng)
    if problem == "median":
        values = rng.uniform(0.0, 1.0, n)  # a flat density: no tails to shape small n
        exact = float(np.quantile(values, 0.5, method="inverted_cdf"))
        out = []
        for mechanism in ("kng", "exponential"):
            ledger = Ledger(EPSILON, 0.0)
            released = quantile(
                values,
                0.5,
                ledger=ledger,
                bounds=(0.0, 1.0),
                epsilon=EPSILON,
                mechanism=mechanism,
                rng=rng,
            )
            out.append(abs(released - exact))
        return out[0], out[1]
    if problem == "linear":
        reference = None  # per model: the minimiser of its own loss (its ridge)
        models = [KNGLinearRegression, ExponentialLinearRegression]
        extra: dict = {}
    else:
        reference = quantile_reference(X, y)
        models = [KNGQuantileRegression, ExponentialQuantileRegression]
        extra = {"tau": TAU, **mcmc}
    out = []
    for cls in models:
        model = cls(epsilon=EPSILON, rng=rng, **BOUNDS, **extra).fit(X, y)
        target = linear_reference(X, y, model.ridge_) if reference is None else reference
        out.append(float(np.linalg.norm(model.theta_ - target)))
    return out[0], out[1]


def slope(sizes: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of log(value) on log(n)."""
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser, "5 sizes up to 10⁴, 8 reps, short MCMC chains (a rough check)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per size (8)")
    parser.add_argument("--out", default=None, help="where to write the plot (kng_rates.png)")
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument(
        "--problems",
        default="linear,quantile regression,median",
        help="comma-separated subset of: linear, quantile regression, median",
    )
    args = parser.parse_args()
    problems = [p.strip() for p in args.problems.split(",")]
    unknown = set(problems) - {"linear", "quantile regression", "median"}
    if unknown:
        parser.error(f"--problems: unknown problem(s) {', '.join(sorted(unknown))}")
    plt = pyplot(parser, "--out", asked=args.out is not None)
    if "quantile regression" in problems:  # its MCMC is nearly all of the time
        print_expected_time("about 40 min", "about 20 s", args.quick)
    else:
        print_expected_time("about 5 s", "about 3 s", args.quick)
    if args.quick:
        # enough to see the two rates apart (5 sizes over two decades, medians of 8), and
        # chains long enough to mix at n ≤ 10⁴; the full run's largest n is 10⁵
        sizes = np.unique(np.logspace(2, 4, 5).astype(int))
        reps = args.reps or 8
        mcmc = {"chains": 4, "burn_in": 600, "samples": 100}
    else:
        sizes = np.unique(np.logspace(2, 5, 8).astype(int))
        reps = args.reps or 8
        mcmc = {"chains": 4, "burn_in": 1200, "samples": 200}
    warnings.simplefilter("ignore")  # floating-point and MCMC notices: expected here
    started = time.time()
    results: dict[str, dict[str, np.ndarray]] = {}
    for problem in problems:
        table = np.empty((len(sizes), reps, 2))
        for i, n in enumerate(sizes):
            for r in range(reps):
                seed = args.seed + 1000 * i + r
                table[i, r] = errors(problem, int(n), seed, mcmc)
        medians = np.median(table, axis=1)
        results[problem] = {"kng": medians[:, 0], "exponential": medians[:, 1]}
    print(f"ε = {EPSILON}, add/remove; sizes {sizes.min()}..{sizes.max()}, {reps} reps each")
    print(f"{'problem':<22}{'KNG slope':>12}{'exponential slope':>20}")
    for problem, curves in results.items():
        name = problem if problem != "quantile regression" else f"quantile reg. τ={TAU}"
        print(
            f"{name:<22}{slope(sizes, curves['kng']):>12.3f}"
            f"{slope(sizes, curves['exponential']):>20.3f}"
        )
    print(f"{'the claim':<22}{-1.0:>12.3f}{-0.5:>20.3f}")
    if args.quick:
        print(
            "caveat: --quick is a rough check (n ≤ 10⁴, short chains): its slopes vary by "
            "about ±0.1 with\nthe seed, and quantile regression's KNG slope comes out "
            "steeper (−1.25 to −1.45) than the\nfull run's −1.13. The full run is the "
            "measurement (see the docstring)."
        )
    print(f"time: {time.time() - started:.0f} s")
    if plt is None:
        print("note: matplotlib is not installed: no plot")
        return
    fig, axes = plt.subplots(1, len(results), figsize=(4.4 * len(results), 4), squeeze=False)
    for ax, (problem, curves) in zip(axes[0], results.items(), strict=True):
        for key, style in (("kng", "o-"), ("exponential", "s--")):
            label = f"{'KNG' if key == 'kng' else 'exponential'} ({slope(sizes, curves[key]):.2f})"
            ax.loglog(sizes, curves[key], style, label=label)
        ax.set_title(problem)
        ax.set_xlabel("n")
        ax.legend()
    axes[0][0].set_ylabel("median ‖θ̃ − θ̂‖")
    fig.tight_layout()
    out = args.out or "kng_rates.png"
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
