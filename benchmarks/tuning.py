"""Benchmark: private hyperparameter tuning against a naive grid search — cost and accuracy.

Run:  python benchmarks/tuning.py [--quick] [--seeds N] [--epsilon E [E ...]]

The task: choose the ridge λ of objective perturbation (dpledger
``ObjectivePerturbationClassifier``, logistic loss, pure ε per fit, replace-one adjacency,
rows in the unit ball, no intercept — the setting of benchmarks/logistic_regression.py)
from a grid of m values, every fit at the same ε.

* **naive grid** — ``dpledger.model_selection.GridSearchCV``: m candidates × k folds and
  the refit, every fit charged to one ledger (δ = 1e-6); its cost is the run's price as
  the ledger accounts it (``GridSearchCV.price``: the ledger's currency converted to ε at
  δ), and, for reference, the same releases composed with the tightest method. Its
  *selection* is not private (scikit-learn's validation scores have no noise): the cost
  counts the fits only — the naive grid is cheaper here than any private version of it.
* **private random search** — ``dpledger.model_selection.private_random_search``:
  K ~ Geometric with E[K] = 10 runs, each a uniformly drawn λ fitted on ~80 % of the
  training rows and scored by a noisy count of correct predictions on the rest; only the
  best run is released; charged PureDP(3ε) (Papernot & Steinke 2022, Cor. 3 with η = 1;
  Liu & Talwar 2019), whatever m and E[K].
* **naive grid at the same charge** — the naive grid with every fit at 3ε/(mk + 1), so
  that it charges the ledger what the private search does (basic composition): what the
  same budget buys when every fit is paid for.
* **fixed λ** — one fit at ε for each λ (no tuning; what a lucky or unlucky choice made
  in advance gives), for context.

Accuracy: on the test rows (Adult: ``adult.test``), median and [25 %, 75 %] quantiles
over seeds (the seed varies the noise, the split and the runs; the data are fixed).

Data: UCI Adult (one-hot, D = 108, rows divided by √14 so ‖x‖ ≤ 1; ``adult.data`` →
train, ``adult.test`` → test; benchmarks/_capefm.py), from ``$DPLEDGER_DATA`` (default:
the project's shared data folder); without it, a synthetic logistic set (d = 10,
10,000 + 10,000 rows, ‖β‖ = 10; the generator of benchmarks/logistic_regression.py),
with a note saying so.
"""

from __future__ import annotations

import time

import numpy as np
from _capefm import adult_dir, load_adult
from _common import where_to_look
from _harness import finish, parser, quantiles, setup, synthetic

from dpledger import Ledger
from dpledger.algorithms import ObjectivePerturbationClassifier
from dpledger.model_selection import GridSearchCV, private_random_search

LAMBDAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
QUICK_LAMBDAS = (1e-4, 1e-3, 1e-2)
DELTA = 1e-6
EXPECTED_RUNS = 10.0
FOLDS = 5


def data(quick: bool) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(name, X_train, y_train, X_test, y_test): Adult if present, else synthetic."""
    if adult_dir() is not None:
        Xtr, ytr, Xte, yte = load_adult()
        return "UCI Adult (one-hot, D=108, 32,561 train / 16,281 test rows)", Xtr, ytr, Xte, yte
    n = 3_000 if quick else 10_000
    print(f"note: Adult not found (looked in {where_to_look()}): synthetic data instead\n")
    split = synthetic((13, 2, 0), n, n, 10, beta_norm=10.0)
    name = f"synthetic logistic (d=10, {n:,} train / {n:,} test rows)"
    return name, split.X, split.y, split.X_test, split.y_test


def model(epsilon: float, seed: int | None, ledger: Ledger | None = None, **kw: float) -> object:
    return ObjectivePerturbationClassifier(
        epsilon=epsilon,
        delta=0.0,
        loss="logistic",
        x_bound=1.0,
        adjacency="replace_one",
        fit_intercept=False,
        ledger=ledger,
        rng=seed,
        **kw,
    )


def ledger_for(epsilon: float) -> Ledger:
    """A basic-composition ledger (pure-DP work) with room for the naive grid's fits.

    The ledger's accounting of the naive grid is then Σε over its fits; the tightest
    composition of the same releases is printed next to it. (An automatic ledger with a
    large budget would choose zCDP for pure-DP releases, whose conversion of one
    PureDP(3ε) release is far above 3ε.)
    """
    return Ledger(100.0 * epsilon, DELTA, accountant="basic", adjacency="replace_one")


def cell(values: list[float]) -> str:
    mid, lo, hi = quantiles(values)
    return f"{mid:.4f} [{lo:.4f}, {hi:.4f}]"


Data = tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def run(
    epsilon: float, lambdas: tuple[float, ...], folds: int, seeds: int, sets: Data, salt: int
) -> None:
    """One ε: the naive grid's price, then every method on every seed; prints the table.

    ``salt`` keeps the seeds of one ε apart from another's (the same seed on a per-fit
    ledger would repeat noise across the ε rows: harmless here, and warned about).
    """
    name, Xtr, ytr, Xte, yte = sets
    grid = {"l2_regularization": list(lambdas)}
    m = len(lambdas)
    # the naive grid's price (the same for every seed: it depends on public facts only)
    priced = GridSearchCV(model(epsilon, 0), grid, cv=folds, ledger=ledger_for(epsilon)).price(
        Xtr, ytr
    )
    naive_acc, equal_acc, tuned_acc, tuned_cost, chosen = [], [], [], [], []
    share = 3 * epsilon / priced.fits  # the naive grid's per-fit ε at the search's charge
    fixed: dict[float, list[float]] = {lam: [] for lam in lambdas}
    started = time.process_time()
    for seed in range(seeds):
        search = GridSearchCV(
            model(epsilon, 1000 + seed + salt), grid, cv=folds, ledger=ledger_for(epsilon)
        ).fit(Xtr, ytr)
        naive_acc.append(search.best_estimator_.score(Xte, yte))
        equal = GridSearchCV(
            model(share, 4000 + seed + salt), grid, cv=folds, ledger=ledger_for(epsilon)
        ).fit(Xtr, ytr)
        equal_acc.append(equal.best_estimator_.score(Xte, yte))
        ledger = ledger_for(epsilon)
        result = private_random_search(
            model(epsilon, None),
            grid,
            Xtr,
            ytr,
            ledger=ledger,
            expected_runs=EXPECTED_RUNS,
            rng=2000 + seed + salt,
        )
        tuned_acc.append(result.best_estimator.score(Xte, yte))
        tuned_cost.append(result.epsilon)
        if ledger.spent != (result.epsilon, 0.0) or len(ledger.receipts) != 1:
            print(f"FINDING: the search charged {ledger.spent}, not PureDP({result.epsilon})")
        chosen.append(result.best_params["l2_regularization"])
        for index, lam in enumerate(lambdas):
            single = model(epsilon, 3000 + 100 * seed + index + salt, l2_regularization=lam)
            single.fit(Xtr, ytr)
            fixed[lam].append(single.score(Xte, yte))
    cpu = time.process_time() - started
    print(f"== ε = {epsilon:g} per fit; λ ∈ {list(lambdas)} (m = {m}); {seeds} seeds; {name}")
    print(f"{'method':<34} {'fits':>14} {'charged ε (δ=1e-6)':>19}  test accuracy, median [IQR]")
    print(
        f"{'naive grid (' + str(m) + '×' + str(folds) + ' CV + refit)':<34} {priced.fits:>14} "
        f"{priced.epsilon:>19.4f}  {cell(naive_acc)}"
    )
    tightest = priced.tightest_epsilon
    print(f"{'  (same fits, tightest composition)':<34} {'':>14} {tightest:>19.4f}")
    label = f"  same charge (each fit ε={share:.3g})"
    print(f"{label:<34} {priced.fits:>14} {equal.price_.epsilon:>19.4f}  {cell(equal_acc)}")
    runs = f"K~Geom, E[K]={EXPECTED_RUNS:g}"
    charged = max(tuned_cost)
    print(f"{'private random search':<34} {runs:>14} {charged:>19.4f}  {cell(tuned_acc)}")
    for lam in lambdas:
        label = f"fixed λ = {lam:g} (no tuning)"
        print(f"{label:<34} {1:>14} {epsilon:>19.4f}  {cell(fixed[lam])}")
    ratio = priced.epsilon / max(tuned_cost)
    print(
        f"private random search charged {ratio:.1f}× less than the naive grid "
        f"(PureDP(3ε) = {3 * epsilon:g}, whatever m); λ it released: "
        f"{sorted(chosen)}; {cpu:.0f} CPU-s\n"
    )
    if not max(tuned_cost) < priced.epsilon:
        print("FINDING: private tuning did not charge less than the naive grid")


def main() -> None:
    cli = parser(__doc__, "3 λ, 3 folds, 2 seeds, ε = 0.5, a 3,000-row synthetic set")
    cli.add_argument("--seeds", type=int, default=5, help="seeds (default 5)")
    cli.add_argument(
        "--epsilon", type=float, nargs="+", default=[0.5, 1.0], help="ε per fit (0.5 1)"
    )
    args = cli.parse_args()
    setup()
    sets = data(args.quick)
    lambdas = QUICK_LAMBDAS if args.quick else LAMBDAS
    folds = 3 if args.quick else FOLDS
    seeds = 2 if args.quick else args.seeds
    epsilons = [0.5] if args.quick else args.epsilon
    for position, epsilon in enumerate(epsilons):
        run(epsilon, lambdas, folds, seeds, sets, salt=100_000 * position)
    finish()


if __name__ == "__main__":
    main()
