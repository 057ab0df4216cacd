"""KNG's O(1/n) noise against the exponential mechanism's O(1/√n) (Reimherr & Awan 2019).

For linear regression, quantile regression (τ = 0.75) and the 1-D median, at fixed ε = 1
(add/remove), the error ‖θ̃ − θ̂‖ of each private release θ̃ from the non-private
minimiser θ̂ of the same loss is measured for n from 10² to 10⁵ (median over repetitions)
and a line is fitted to log error against log n. The poster's claim: slope −1 for KNG,
−½ for the exponential mechanism.

    python examples/kng_rates.py                # full run (see below: up to an hour)
    python examples/kng_rates.py --quick        # a few seconds, fewer sizes and reps
    python examples/kng_rates.py --out rates.png

Quantile regression is sampled by MCMC (the ε guarantee holds for exact sampling only);
the two others exactly. Synthetic data: x uniform in [−0.6, 0.6]², y = xᵀβ + 0.1 + noise,
clipped to the declared bounds (‖x‖ ≤ 1, |y| ≤ 1), Θ = {‖θ‖₂ ≤ 2}; for the median,
uniform values in the declared range [0, 1].

Measured (8 sizes, 8 reps; 51 minutes on a shared 2-core machine, about 30 minutes of
CPU, almost all of it the MCMC of quantile regression at the largest n): slopes KNG
−0.96, exponential −0.47 (linear); KNG −1.13, exponential −0.56 (quantile regression);
median (uniform data) KNG −1.07, exponential −0.58.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

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
    parser.add_argument("--quick", action="store_true", help="few sizes and reps (seconds)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per size")
    parser.add_argument("--out", default="kng_rates.png", help="where to write the plot")
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument(
        "--problems",
        default="linear,quantile regression,median",
        help="comma-separated subset of: linear, quantile regression, median",
    )
    args = parser.parse_args()
    if args.quick:
        sizes = np.unique(np.logspace(2, 3.5, 4).astype(int))
        reps = args.reps or 2
        mcmc = {"chains": 4, "burn_in": 150, "samples": 30}
    else:
        sizes = np.unique(np.logspace(2, 5, 8).astype(int))
        reps = args.reps or 8
        mcmc = {"chains": 4, "burn_in": 1200, "samples": 200}
    warnings.simplefilter("ignore")  # floating-point and MCMC notices: expected here
    started = time.time()
    results: dict[str, dict[str, np.ndarray]] = {}
    problems = [p.strip() for p in args.problems.split(",")]
    unknown = set(problems) - {"linear", "quantile regression", "median"}
    if unknown:
        parser.error(f"unknown problems: {', '.join(sorted(unknown))}")
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
    print(f"time: {time.time() - started:.0f} s")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
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
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
