"""Benchmark: the functional mechanism family — FM, relaxed FM, Gaussian FM, capeFM —
against ADASSP, diffprivlib and non-private fits.

Run:  python benchmarks/functional_mechanism.py [--quick] [--seeds N] [--plot-dir DIR]

Side by side in one run, replace-one adjacency (as the papers), δ = 1e-5,
ε ∈ {0.01, 0.1, 1, 10}, x_bound = y_bound = 1 on data already in the unit ball:

* dpledger's FMLinearRegression / FMLogisticRegression, method "original" (FM, Zhang et
  al. 2012, Laplace), "relaxed" (relaxed FM, Ding et al. 2020) and "gaussian" (Gaussian FM,
  Tasnim et al. 2023), each variant "published" (the papers' constants) and "calibrated"
  (meets (ε, δ) exactly). Published variants are charged at the true cost of what they
  release; published Gaussian FM overspends its nominal budget (≈ 1.61 at nominal 1), so
  each published fit draws on its own large ledger — Ledger(1e6, 0.5, accountant="gdp")
  for the Gaussian ones, accountant="basic" for Laplace FM — and the TRUE ε it spent,
  accountant.epsilon(Composed(releases_), δ), is printed beside it.
* ADASSP (calibrated; linear only).
* diffprivlib 0.6.6 LinearRegression (its own functional mechanism, pure ε; bounds_X =
  bounds_y = (−1, 1)) and LogisticRegression (objective perturbation, data_norm = 1).
  diffprivlib does not state an adjacency; it is shown at its nominal ε.
* non-private sklearn (LinearRegression; LogisticRegression without penalty), the zero
  predictor (linear) and the training majority class (logistic).

All dpledger estimators here use floating-point noise (safe_noise=False; accounting exact
for the continuous mechanisms): the GDP ledger of the published Gaussian variants accepts
only continuous Gaussians, CapeFM draws floating-point noise, and the comparisons are then
like for like.

Data (``$DPLEDGER_DATA``, see benchmarks/_capefm.py; absent parts are skipped):
linear on the capeFM sets synth_D_20_N_20000, synth_D_50_N_10000 (both with the true β),
crime, twitter, and a synthetic set (d = 10, x ~ N(0, I/(2d)) clipped to the unit ball,
y = clip(xᵀβ + 0.1·N(0, 1), −1, 1), ‖β‖ = 1; 10,000 + 10,000 rows, drawn per seed);
logistic on Adult (one-hot, rows scaled to ‖x‖ ≤ 1, D = 108; adult.data / adult.test)
and a synthetic set (d = 10, same x, P(y = 1) = σ(xᵀβ), ‖β‖ = 10). capeFM sets: a
random 90/10 train/test split per seed (as the paper). fit_intercept=False everywhere (no
intercept in the paper; y = Xβ exactly on the capeFM synthetic sets; Adult's one-hot
blocks carry the intercept). Metrics: test MSE (linear), test accuracy (logistic), and
‖β − w‖/D where β is known (the synthetic linear sets); medians and IQR over seeds.

The ordering in noise (Gaussian FM < relaxed FM < FM) is compared at equal TRUE budget:
the calibrated variants each meet (ε, δ) exactly, so the noise std each adds per
coefficient of the loss polynomial (C₁ entries, the w_i² and w_i·w_j coefficients, and the
RMS over all released coefficients) is compared directly; the table prints, per set and ε,
the RMS of each and the ratios G/R and R/F (the papers' "≪" has no threshold; the ratio is
the finding). A separate table shows the papers' own constants — FM's b = Δ₁/ε, relaxed
FM's and Gaussian FM's classical σ = Δ√(2 ln(1.25/δ))/ε with the papers' Δ — at their
nominal ε, with what they really cost (the true ε at δ).

Gaussian FM logistic on Adult (issue #33): C₂'s eigenvalues are floored at the noise's
spectral scale before the solve (``eigenvalue_floor``, dpledger/algorithms/functional.py).
A study table shows, over ≥ 10 seeds and ε ∈ {0.1, 0.5, 1, 2, 5, 10}, the accuracy with
the papers' projection onto [0, ∞) ("zero", the old solve) and with the floor ("auto"),
the majority class, and the evidence for the cause: the median ‖w‖ and the share of ‖w‖²
in the directions where the data's own C₂ (computed here for diagnosis only, never by the
estimator) has less curvature than the floor λ. ``--adult-floor`` runs that study alone.

capeFM by experiment: S ∈ {2, 5, 10, 20} sites (a random equal partition of
synth_D_20_N_20000), the aggregator's noise Σₛ Ĉⱼˢ − Cⱼ measured over repetitions (from
``site_releases_``) against τⱼ² (``tau_``): CAPE ≈ 1× (the pooled variance at τ), the
conventional scheme ≈ S×; per-site and aggregate ε, the paper's δ; and ‖β − w‖/D of
capeFM (S = 5) against pooled calibrated Gaussian FM at ε ∈ {0.1, 1, 10} (at least 30 seeds).

The targets (the ordering in noise, on every set; capeFM's variance ≈ 1× and S×; capeFM
within 1.5× of pooled Gaussian FM) are slow tests: tests/package/test_benchmark_verdicts.py.

PNGs (``--plot-dir``): fm_vs_epsilon.png (error vs ε per data set), fm_vs_n.png
(synth_D_50_N_10000, N ∈ {500, …, 10000}, ε = 0.5 as in the authors' code) and
fm_vs_delta.png (synth_D_20_N_20000, ε = 1, δ ∈ {1e-6, …, 1e-2}).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import peer_missing
from _harness import (
    Data,
    Fit,
    Majority,
    Method,
    Panel,
    Results,
    Split,
    ZeroPredictor,
    cell,
    diffprivlib_model,
    finish,
    fmt,
    grid_table,
    parser,
    plot,
    quantiles,
    records,
    run,
    setup,
    synthetic,
    table,
    true_epsilon,
)

from dpledger import Ledger
from dpledger.algorithms import ADASSP, FMLinearRegression, FMLogisticRegression

EPSILONS = (0.01, 0.1, 1.0, 10.0)
DELTA = 1e-5
ADJ = "replace_one"
N_SYNTH = 10_000
D_SYNTH = 10
UNIT = {"x_bound": 1.0, "y_bound": 1.0, "adjacency": ADJ, "fit_intercept": False}
FM = {  # key: (method, variant, label, style)
    "fm_pub": ("original", "published", "FM published", ("C2", "--", "s")),
    "fm_cal": ("original", "calibrated", "FM calibrated", ("C2", "-", "o")),
    "rlx_pub": ("relaxed", "published", "relaxed FM published", ("C1", "--", "v")),
    "rlx_cal": ("relaxed", "calibrated", "relaxed FM calibrated", ("C1", "-", "^")),
    "gfm_pub": ("gaussian", "published", "Gaussian FM published", ("C0", "--", "D")),
    "gfm_cal": ("gaussian", "calibrated", "Gaussian FM calibrated", ("C0", "-", "d")),
}

# ------------------------------------------------------------------ methods and data


@dataclass
class FMData(Data):
    """A data set with its loss ("linear" or "logistic") and the δ its fits meet."""

    loss: str = "linear"
    delta: float = DELTA


def methods(loss: str, keys: Sequence[str] | None = None) -> list[Method]:
    """The methods for ``loss`` (those in ``keys``, if given): private, then baselines."""
    from sklearn.linear_model import LinearRegression, LogisticRegression

    common = {"x_bound": 1.0, "adjacency": ADJ, "fit_intercept": False, "safe_noise": False}

    def fm(method: str, variant: str) -> Callable[..., Any]:
        def make(epsilon: float, seed: int, data: FMData) -> Any:
            ledger = None
            if variant == "published":  # overspends: a large ledger of its own, true ε shown
                accountant = "basic" if method == "original" else "gdp"
                ledger = Ledger(1e6, 0.5, adjacency=ADJ, accountant=accountant)
            cls = FMLinearRegression if data.loss == "linear" else FMLogisticRegression
            extra = {"y_bound": 1.0} if data.loss == "linear" else {}
            kw = dict(common, method=method, variant=variant, ledger=ledger, **extra)
            return cls(epsilon=epsilon, delta=data.delta, rng=seed, **kw)

        return make

    def adassp(epsilon: float, seed: int, data: FMData) -> Any:
        return ADASSP(epsilon=epsilon, delta=data.delta, y_bound=1.0, rng=seed, **common)

    def dpl(epsilon: float, seed: int, data: FMData) -> Any:
        if data.loss == "linear":
            bounds = {"bounds_X": (-1.0, 1.0), "bounds_y": (-1.0, 1.0)}
            return diffprivlib_model(
                "LinearRegression", seed, epsilon=epsilon, **bounds, fit_intercept=False
            )
        return diffprivlib_model(
            "LogisticRegression", seed, epsilon=epsilon, data_norm=1.0, fit_intercept=False
        )

    out = [Method(k, label, fm(m, v), style) for k, (m, v, label, style) in FM.items()]
    if loss == "linear":
        out.append(Method("adassp", "ADASSP calibrated", adassp, ("C4", "-", "x")))
    if not peer_missing("diffprivlib"):
        out.append(Method("dpl", "diffprivlib", dpl, ("C5", ":", "+")))
    if loss == "linear":
        nonprivate = lambda *_: LinearRegression(fit_intercept=False)  # noqa: E731
        zero = Method("zero", "zero predictor", lambda *_: ZeroPredictor(), ("C3", "-", None))
    else:
        nonprivate = lambda *_: LogisticRegression(penalty=None, fit_intercept=False, max_iter=2000)  # noqa: E731
        zero = Method("majority", "majority class", lambda *_: Majority(), ("C3", "-", None))
    zero.baseline = True
    out += [Method("nonprivate", "non-private (sklearn)", nonprivate, baseline=True), zero]
    return [m for m in out if keys is None or m.key in keys]


def noise_stds(key: str, model: Any) -> tuple[float, float, float, float]:
    """Noise std on (a C₁ entry, a w_i² coefficient, a w_i·w_j coefficient, RMS over all).

    In sum units (the coefficients of Σₙ loss(xₙ, yₙ; w)). RMS over every released
    coefficient of w (C₁ and C₂; C₀ does not move the minimiser and is left out).
    """
    events = list(model.releases_)
    d = int(model.n_features_in_)
    off = d * (d - 1) // 2
    if key in ("fm_pub", "fm_cal"):
        one = diag = cross = math.sqrt(2.0) * float(events[0].scale)
    elif key in ("rlx_pub", "rlx_cal"):
        one = diag = cross = float(events[0].sigma)
    elif key == "gfm_pub":  # C₂'s upper triangle iid and mirrored: w_i·w_j gets 2σ₂
        one, diag = float(events[-2].sigma), float(events[-1].sigma)
        cross = 2.0 * diag
    elif key == "gfm_cal":  # Frobenius-isotropic: off-diagonal σ₂/√2, coefficient 2·that
        one, diag = (float(v) for v in model.noise_scales_)  # one whitened release
        cross = math.sqrt(2.0) * diag
    else:  # ADASSP: (λ_min, XᵀX Frobenius, Xᵀy); C₁ = −2Xᵀy
        one, diag = 2.0 * float(events[2].sigma), float(events[1].sigma)
        cross = math.sqrt(2.0) * diag
    rms = math.sqrt((d * one**2 + d * diag**2 + off * cross**2) / (2 * d + off))
    return one, diag, cross, rms


def measure(fit: Fit) -> dict[str, Any]:
    """Test MSE or accuracy, ‖β − w‖/D, the true ε spent, the noise per coefficient."""
    prediction = np.asarray(fit.model.predict(fit.split.X_test), dtype=float)
    if fit.data.loss == "linear":
        score = float(np.mean((prediction - fit.split.y_test) ** 2))
    else:
        score = float(np.mean(prediction == fit.split.y_test))
    beta = fit.split.beta
    w = np.asarray(fit.model.coef_, dtype=float).ravel()
    out = {"score": score, "coef": math.nan if beta is None else norm(beta - w) / beta.size}
    key = fit.method.key
    if key == "dpl":
        out["cost"] = fit.point  # nominal: diffprivlib states no adjacency
    elif not fit.method.baseline:
        out["cost"] = true_epsilon(fit.model, fit.data.delta)
        out["noise"] = noise_stds(key, fit.model)
    return out


def error_rate(accuracies: list[float]) -> float:
    """1 − the median accuracy."""
    return 1.0 - quantiles(accuracies)[0]


def norm(v: np.ndarray) -> float:
    return float(np.linalg.norm(v))


def split_90_10(X: np.ndarray, y: np.ndarray, seed: int, beta: Any) -> Split:
    order = np.random.default_rng([13, 3, seed]).permutation(len(y))
    train, test = order[: round(0.9 * len(y))], order[round(0.9 * len(y)) :]
    return Split(X[train], y[train], X[test], y[test], beta)


def data_sets(quick: bool) -> tuple[list[FMData], list[str]]:
    from _capefm import CAPEFM, adult_dir, capefm_dir, load_adult, load_capefm, where_to_look

    sets: list[FMData] = []
    notes: list[str] = []
    if capefm_dir() is None:
        notes.append(f"capefm data not found (looked in {where_to_look()}): capeFM sets skipped")
    else:
        for name in ["synth_D_20_N_20000", "crime"] if quick else list(CAPEFM):
            X, y, beta = load_capefm(name)
            sets.append(FMData(name, lambda s, X=X, y=y, b=beta: split_90_10(X, y, s, b)))
    linear = lambda s: synthetic((13, 1, s), N_SYNTH, N_SYNTH, D_SYNTH, noise=0.1)  # noqa: E731
    sets.append(FMData(f"synthetic linear d={D_SYNTH}", linear))
    if adult_dir() is None:
        notes.append(f"adult data not found (looked in {where_to_look()}): Adult skipped")
    else:
        parts = load_adult()
        sets.append(FMData("adult (one-hot, D=108)", lambda s: Split(*parts), "logistic"))
    logistic = lambda s: synthetic((13, 2, s), N_SYNTH, N_SYNTH, D_SYNTH, beta_norm=10.0)  # noqa: E731
    sets.append(FMData(f"synthetic logistic d={D_SYNTH}", logistic, "logistic"))
    return sets, notes


# ------------------------------------------------------------------ error vs ε, noise


def run_set(data: FMData, seeds: int) -> Results:
    """Every method at every ε on ``seeds`` draws; prints the tables."""
    res = run(methods(data.loss), data, EPSILONS, seeds, measure)
    what = "test MSE" if data.loss == "linear" else "test accuracy"
    d = data.draw(0).X.shape[1]
    print(
        f"\n== {data.name} ({data.loss}, D = {d}, {seeds} seeds, δ = {DELTA:g}, {ADJ}; "
        f"{res.elapsed:.0f} s)\n{what}: median [25 %, 75 %] over seeds; 'ε true' = ε actually "
        "spent at δ (published variants: above or below their nominal ε)"
    )
    true = ("ε true", lambda m, e: fmt(res.median("cost", m.key, e)))
    print(grid_table(res, "score", EPSILONS, extra=[true]))
    if np.isfinite(res.get("coef", "nonprivate")).all():
        print(
            f"\n‖β − w‖/D: median [25 %, 75 %] over seeds\n"
            f"{grid_table(res, 'coef', EPSILONS, extra=[true])}"
        )
    return res


def noise(res: Results, key: str, epsilon: float) -> tuple[float, ...] | None:
    """The noise per coefficient of ``key`` at ``epsilon`` (the same for every seed)."""
    return next((v for v in res.get("noise", key, epsilon) if isinstance(v, tuple)), None)


PAPER_NOISE = {  # the published variants: what each paper's formula sets, in sum units
    "fm_pub": "b = Δ₁/ε (Laplace), Δ₁ = D²/4 + 3D (logistic) or 2(1 + D)² (linear)",
    "rlx_pub": "σ = Δ₂√(2 ln(1.25/δ))/ε, Δ₂ = √(D²/16 + D) or 2√(1 + 4D + D²)",
    "gfm_pub": "σⱼ = Δⱼ√(2 ln(1.25/δ))/ε per order, each at the full (ε, δ); (Δ₁, Δ₂) = "
    "(1, 1/8) (logistic) or (4, 1) (linear, and Δ₀ = 1 for C₀)",
}


def ordering_rows(
    name: str, res: Results
) -> list[tuple[str, float, float, float, float, float, float]]:
    """(set, ε, RMS Gaussian FM, relaxed FM, FM, G/R, R/F), calibrated, per ε."""
    rows = []
    for e in EPSILONS:
        g, r, f = (noise(res, k, e) for k in ("gfm_cal", "rlx_cal", "fm_cal"))
        if g and r and f:
            rows.append((name, e, g[3], r[3], f[3], g[3] / r[3], r[3] / f[3]))
    return rows


def noise_table(sets: Sequence[FMData], results: Sequence[Results]) -> None:
    """The ordering at equal true budget (calibrated), per set and ε, with the ratios; then
    the published constants with their true cost, in a separate table."""
    rows = [
        row
        for data, res in zip(sets, results, strict=True)
        for row in ordering_rows(data.name, res)
    ]
    print(
        f"\n== Noise per coefficient at equal TRUE budget (calibrated: each meets (ε, δ = "
        f"{DELTA:g}) exactly), RMS noise std over every released coefficient of w (C₁ and C₂; "
        "C₀ left out), sum units.\nG = Gaussian FM, R = relaxed FM, F = FM (Laplace). The "
        "ordering G < R < F is a slow test (tests/package/test_benchmark_verdicts.py)."
    )
    print(
        table(
            ["set", "ε", "G (RMS)", "R (RMS)", "F (RMS)", "G/R", "R/F", "G < R < F"],
            [
                [
                    n,
                    f"{e:g}",
                    fmt(g),
                    fmt(r),
                    fmt(f),
                    f"{gr:.3f}",
                    f"{rf:.3f}",
                    "yes" if g < r < f else "NO",
                ]
                for n, e, g, r, f, gr, rf in rows
            ],
        )
    )
    per_coefficient = []
    seen = set()
    for data, res in zip(sets, results, strict=True):
        d = data.draw(0).X.shape[1]
        if (data.loss, d) in seen:  # the noise depends on the loss and D only
            continue
        seen.add((data.loss, d))
        for e in EPSILONS:
            for m in res.methods:
                if (stds := noise(res, m.key, e)) is not None:
                    per_coefficient.append(
                        [
                            f"{data.loss} D={d}",
                            m.label,
                            f"{e:g}",
                            fmt(res.median("cost", m.key, e)),
                            *map(fmt, stds),
                        ]
                    )
    print(
        "\nPer coefficient (one set per loss and D): C₁ = a linear coefficient; w_i², w_i·w_j "
        "= the quadratic ones. 'ε true' = ε spent at δ."
    )
    print(
        table(
            ["loss, D", "method", "ε nominal", "ε true", "C₁", "w_i²", "w_i·w_j", "RMS"],
            per_coefficient,
        )
    )
    published = []
    seen = set()
    for data, res in zip(sets, results, strict=True):
        d = data.draw(0).X.shape[1]
        if (data.loss, d) in seen:
            continue
        seen.add((data.loss, d))
        for key in PAPER_NOISE:
            for e in EPSILONS:
                stds = noise(res, key, e)
                calibrated = noise(res, key.replace("_pub", "_cal"), e)
                if stds is None:
                    continue
                ratio = stds[3] / calibrated[3] if calibrated else math.nan
                published.append(
                    [
                        f"{data.loss} D={d}",
                        FM[key][2],
                        f"{e:g}",
                        fmt(stds[0]),
                        fmt(stds[1]),
                        fmt(stds[3]),
                        fmt(res.median("cost", key, e)),
                        fmt(ratio),
                    ]
                )
    print(
        f"\n== The published constants (the papers' own noise formulas at their nominal ε, δ = "
        f"{DELTA:g}) and what they really cost: 'ε true' = the ε actually spent at δ (the "
        "ledger charges the released noise at the true sensitivities); 'RMS / calibrated' = "
        "the published RMS noise over the calibrated one at the same nominal ε.\n"
        + "\n".join(f"{FM[k][2]}: {v}" for k, v in PAPER_NOISE.items())
    )
    print(
        table(
            [
                "loss, D",
                "published",
                "ε nominal",
                "C₁ noise",
                "w_i² noise",
                "RMS",
                "ε true",
                "RMS / calibrated",
            ],
            published,
        )
    )


def error_ordering(sets: Sequence[FMData], results: Sequence[Results]) -> None:
    """The same ordering in the fitted error (calibrated, equal true budget)."""
    print()
    for data, res in zip(sets, results, strict=True):
        field = "coef" if np.isfinite(res.get("coef", "nonprivate")).all() else "score"
        what = {"coef": "‖β−w‖/D", "score": "MSE" if data.loss == "linear" else "accuracy"}
        parts = [
            f"ε={e:g}: "
            + " / ".join(fmt(res.median(field, k, e)) for k in ("gfm_cal", "rlx_cal", "fm_cal"))
            for e in EPSILONS
        ]
        print(
            f"{data.name}: median {what[field]}, calibrated Gaussian / relaxed / FM: "
            + "; ".join(parts)
        )


# ------------------------------------------------------------------ Adult: the eigenvalue floor

ADULT_EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
FLOORS = {"zero": "papers' projection onto [0, ∞) (before)", "auto": "noise floor (after)"}


def adult_floor_fits(seeds: int, epsilons: Sequence[float] = ADULT_EPSILONS) -> dict[str, Any]:
    """Calibrated Gaussian FM logistic on Adult, each release solved with each floor.

    Per (floor, ε): test accuracies over ``seeds``, ‖w‖, and the share of ‖w‖² in the
    directions where Adult's own C₂ = Σxxᵀ/8 has curvature below the floor λ (a diagnosis
    computed here from the data, never by the estimator). Both floors solve the same
    release (same seed): the floor is post-processing. Also the majority class and the
    non-private fit.
    """
    import warnings

    from _capefm import load_adult
    from sklearn.linear_model import LogisticRegression

    from dpledger.errors import RepeatedNoiseWarning

    X, y, X_test, y_test = load_adult()
    values, vectors = np.linalg.eigh(X.T @ X / 8.0)
    out: dict[str, Any] = {"acc": {}, "norm": {}, "share": {}, "floor": {}}
    for i, epsilon in enumerate(epsilons):
        for seed in range(seeds):
            for floor in FLOORS:
                with warnings.catch_warnings():  # the same release, solved two ways
                    warnings.simplefilter("ignore", RepeatedNoiseWarning)
                    model = FMLogisticRegression(
                        epsilon=epsilon,
                        delta=DELTA,
                        eigenvalue_floor=floor,
                        rng=8 * 10**6 + 1000 * i + seed,
                        x_bound=1.0,
                        adjacency=ADJ,
                        fit_intercept=False,
                        safe_noise=False,
                    ).fit(X, y)
                w = np.asarray(model.coef_, dtype=float)
                lam = math.sqrt(2 * w.size) * float(model.noise_scales_[1])  # the floor "auto"
                low = vectors[:, values < lam]
                key = (floor, epsilon)
                out["acc"].setdefault(key, []).append(float(model.score(X_test, y_test)))
                out["norm"].setdefault(key, []).append(norm(w))
                out["share"].setdefault(key, []).append(float(norm(low.T @ w) ** 2 / norm(w) ** 2))
                out["floor"][epsilon] = (lam, int(low.shape[1]))
    out["majority"] = float(max(np.mean(y_test), 1 - np.mean(y_test)))
    exact = LogisticRegression(penalty=None, fit_intercept=False, max_iter=2000).fit(X, y)
    out["nonprivate"] = float(exact.score(X_test, y_test))
    return out


def adult_floor_study(seeds: int) -> dict[str, Any]:
    """The before/after table of issue #33 (Gaussian FM logistic on Adult)."""
    fits = adult_floor_fits(seeds)
    print(
        f"\n== Gaussian FM logistic on Adult (calibrated, δ = {DELTA:g}, {ADJ}, no intercept, "
        f"safe_noise=False), {seeds} seeds: test accuracy median [25 %, 75 %]\n"
        f"majority class {100 * fits['majority']:.2f} %, non-private (sklearn) "
        f"{100 * fits['nonprivate']:.2f} %. λ = the floor 2s√m (s the noise sd of an "
        "off-diagonal entry of C₂, m = 108); 'dirs < λ' = directions of the data's C₂ with "
        "curvature below λ (of 108);\n‖w‖ and 'share' (of ‖w‖² in those directions): the "
        "papers' projection puts the weight there (noise amplified by eigenvalues just above "
        "0), the floor does not."
    )
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    rows = []
    for epsilon in ADULT_EPSILONS:
        lam, low = fits["floor"][epsilon]
        rows.append(
            [
                f"{epsilon:g}",
                *(cell(fits["acc"][f, epsilon], pct) for f in FLOORS),
                fmt(lam),
                str(low),
                *(fmt(quantiles(fits["norm"][f, epsilon])[0]) for f in FLOORS),
                *(f"{quantiles(fits['share'][f, epsilon])[0]:.2f}" for f in FLOORS),
            ]
        )
    head = ["ε", "accuracy % before", "accuracy % after", "λ", "dirs < λ"]
    head += ["‖w‖ before", "‖w‖ after", "share before", "share after"]
    print(table(head, rows))
    print("before = " + FLOORS["zero"] + "; after = " + FLOORS["auto"])
    return fits


# ------------------------------------------------------------------ capeFM


def partition(n: int, sites: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng([13, 4, seed]).permutation(n)
    return list(np.array_split(order, sites))


def cape(scheme: str, epsilon: float, seed: int, data: list[Any]) -> Any:
    from dpledger.algorithms.cape import CapeFM

    return CapeFM(epsilon=epsilon, delta=DELTA, scheme=scheme, rng=seed, **UNIT).fit(data)


def pooled(epsilon: float, seed: int, X: np.ndarray, y: np.ndarray) -> Any:
    model = FMLinearRegression(epsilon=epsilon, delta=DELTA, safe_noise=False, rng=seed, **UNIT)
    return model.fit(X, y)


def capefm_variance(X: np.ndarray, y: np.ndarray, reps: int, epsilon: float) -> list[dict]:
    """Per S: the aggregate noise variance / τ² of CAPE and of the conventional scheme."""
    from dpledger.algorithms.base import upper

    truth = (-2.0 * (X.T @ y), upper(X.T @ X))  # C₁ and upper(C₂), as CapeFM releases them
    sigma_pooled = float(pooled(epsilon, 987654, X, y).noise_scales_[0])
    rows, out, seed = [], [], 0
    for sites in (2, 5, 10, 20):
        data = [(X[p], y[p]) for p in partition(len(y), sites, sites)]
        ratios, fitted = {}, {}
        for scheme in ("cape", "conventional"):
            sq, n = [0.0, 0.0], [0, 0]
            for _ in range(reps):
                seed += 1
                model = cape(scheme, epsilon, 5 * 10**6 + seed, data)
                for order in (0, 1):
                    aggregate = np.sum(model.site_releases_[order], axis=0) - truth[order]
                    sq[order] += float(aggregate @ aggregate) / model.tau_[order] ** 2
                    n[order] += aggregate.size
            ratios[scheme], fitted[scheme] = [sq[0] / n[0], sq[1] / n[1]], model
        c, v = fitted["cape"], fitted["conventional"]
        sd = math.sqrt(2.0 / n[0])  # the sampling sd of a variance ratio over n[0] entries
        absolute = ratios["conventional"][0] * v.tau_[0] ** 2 / (ratios["cape"][0] * c.tau_[0] ** 2)
        out.append({"sites": sites, "sd": sd, **ratios})
        rows.append(
            {
                "S": sites,
                "S_C": c.colluders_,
                "c": f"{c.cape_factor_:.4f}",
                "CAPE var/τ² C₁": f"{ratios['cape'][0]:.3f} ± {3 * sd:.3f}",
                "CAPE var/τ² C₂": f"{ratios['cape'][1]:.3f}",
                "conv var/τ² C₁": f"{ratios['conventional'][0]:.2f} ± {3 * sd * sites:.2f}",
                "conv var/τ² C₂": f"{ratios['conventional'][1]:.2f}",
                "conv/CAPE": f"{absolute:.2f}",
                "τ₁²/σ₁² pooled": f"{c.tau_[0] ** 2 / sigma_pooled**2:.4f}",
                "site ε": fmt(c.site_epsilon_, 4),
                "aggregate ε": fmt(c.aggregate_epsilon_, 4),
                "paper δ": fmt(c.paper_delta_ or math.nan),
                "conv site ε": fmt(v.site_epsilon_, 4),
                "conv aggr. ε": fmt(v.aggregate_epsilon_, 4),
            }
        )
    print(
        f"\n== capeFM by experiment: synth_D_20_N_20000 split into S equal sites, ε = "
        f"{epsilon:g}, δ = {DELTA:g}, {ADJ}, {reps} repetitions\naggregate noise Σₛ Ĉⱼˢ − Cⱼ "
        "(from site_releases_), its variance per entry over repetitions and entries ÷ τⱼ² "
        "(tau_): CAPE should be 1 (= the pooled mechanism at τ),\nthe conventional scheme S. "
        "± = 3 sampling sd. 'τ₁²/σ₁² pooled' = CAPE's τ₁² against pooled calibrated Gaussian "
        f"FM at the same (ε, δ) (σ₁ = {sigma_pooled:.4g}): the collusion factor c."
    )
    print(records(rows))
    print(
        "'conv/CAPE' = the conventional scheme's aggregate variance over CAPE's, in absolute "
        "terms (each scheme's τ meets the per-site (ε, δ): CAPE's τ carries the factor √c)."
    )
    return out


def capefm_vs_pooled(X: np.ndarray, y: np.ndarray, beta: np.ndarray, seeds: int) -> dict:
    """‖β − w‖/D of capeFM (S = 5, both schemes) and pooled Gaussian FM, per ε and seed."""
    err: dict[tuple[str, float], list[float]] = {}
    for epsilon in (0.1, 1.0, 10.0):
        tag = 10 * round(epsilon * 100)
        for seed in range(seeds):
            data = [(X[p], y[p]) for p in partition(len(y), 5, 100 + seed)]
            for scheme in ("cape", "conventional"):
                model = cape(
                    scheme, epsilon, 6 * 10**6 + seed * 10**4 + tag + (scheme == "cape"), data
                )
                err.setdefault((scheme, epsilon), []).append(norm(beta - model.coef_) / beta.size)
            model = pooled(epsilon, 7 * 10**6 + seed * 10**4 + tag, X, y)
            err.setdefault(("pooled", epsilon), []).append(norm(beta - model.coef_) / beta.size)
    print(
        f"\n== capeFM (S = 5) vs pooled Gaussian FM (calibrated, safe_noise=False), "
        f"synth_D_20_N_20000 (all rows), ‖β − w‖/D, {seeds} seeds, δ = {DELTA:g}, {ADJ}"
    )
    rows = []
    for e in (0.1, 1.0, 10.0):
        ratio = np.median(err["cape", e]) / np.median(err["pooled", e])
        rows.append(
            [
                f"{e:g}",
                *(cell(err[k, e]) for k in ("cape", "pooled", "conventional")),
                f"{ratio:.2f}",
            ]
        )
    print(table(["ε", "capeFM", "pooled Gaussian FM", "conventional", "capeFM / pooled"], rows))
    return err


# ------------------------------------------------------------------ error vs N and δ


def sweep(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    beta: np.ndarray,
    column: str,
    points: Sequence[tuple[float, int, float, float]],
    seeds: int,
    path: Path,
) -> Results:
    """‖β − w‖/D of every linear method at each (value, N, ε, δ), N random rows per seed;
    the table, and the plot to ``path``."""
    res = None
    keep = [m for m in methods("linear") if m.key != "zero"]
    for value, n, epsilon, delta in points:

        def draw(seed: int, n: int = n) -> Split:
            rows = np.random.default_rng([13, 8, n, seed]).permutation(len(y))[:n]
            return Split(X[rows], y[rows], X[rows[:1]], y[rows[:1]], beta)  # no test rows used

        data = FMData(f"{name} {column}={value:g}", draw, "linear", delta)
        res = run(keep, data, [epsilon], seeds, measure, label=lambda _, v=value: v, results=res)
    assert res is not None
    values = [p[0] for p in points]
    title = f"{name}, {seeds} seeds: ‖β − w‖/D vs {column}"
    print(f"\n== {title}\n{grid_table(res, 'coef', values, head=column + '={:g}')}")
    zero = ("w = 0 (‖β‖/D)", norm(beta) / beta.size, "C3")
    panel = Panel(
        f"{title} (non-private ≈ 0: y = Xβ)",
        res,
        "coef",
        values,
        "‖β − w‖/D",
        levels=[zero],
        hide=["dpl"],
    )
    print(plot(path, [panel], xlabel=column))
    return res


# ------------------------------------------------------------------ main


def main() -> None:
    cli = parser(__doc__, "3 seeds, fewer sets, 5 capeFM repetitions")
    cli.add_argument("--seeds", type=int, default=None, help="seeds per point (default 10)")
    cli.add_argument("--plot-dir", type=Path, default=Path("."), help="where the PNGs go")
    cli.add_argument("--reps", type=int, default=None, help="capeFM variance repetitions (20)")
    cli.add_argument(
        "--adult-floor", action="store_true", help="only the Adult eigenvalue-floor study"
    )
    args = cli.parse_args()
    setup()
    seeds = args.seeds or (3 if args.quick else 10)
    reps = args.reps or (5 if args.quick else 20)
    from _capefm import adult_dir, where_to_look

    if args.adult_floor:
        if adult_dir() is None:
            print(f"adult data not found (looked in {where_to_look()}): study skipped")
        else:
            adult_floor_study(max(seeds, 10))
        finish()
        return
    args.plot_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"noise: floating point (safe_noise=False) for every dpledger estimator; x_bound = "
        f"y_bound = 1; {ADJ}; δ = {DELTA:g}; fit_intercept=False; seeds = {seeds}"
    )
    sets, notes = data_sets(args.quick)
    missing = peer_missing("diffprivlib")
    for note in [*notes, *([missing] if missing else [])]:
        print(note)
    results = [run_set(data, seeds) for data in sets]
    noise_table(sets, results)
    error_ordering(sets, results)
    if adult_dir() is not None and not args.quick:
        adult_floor_study(max(seeds, 10))
    panels = []
    for data, res in zip(sets, results, strict=True):
        if data.loss == "linear":
            panels.append(Panel(f"{data.name}: test MSE", res, "score", EPSILONS, "test MSE"))
        else:  # on a log scale, as the error
            error = "test error (1 − accuracy)"
            panels.append(Panel(f"{data.name}: {error}", res, "score", EPSILONS, error, error_rate))
        if np.isfinite(res.get("coef", "nonprivate")).all():
            panels.append(Panel(f"{data.name}: ‖β − w‖/D", res, "coef", EPSILONS, "‖β − w‖/D"))
    xlabel = f"nominal ε (δ = {DELTA:g})"
    print("\n" + plot(args.plot_dir / "fm_vs_epsilon.png", panels, xlabel=xlabel))

    from _capefm import capefm_dir, load_capefm

    if capefm_dir() is None:
        print("capeFM experiments and the N / δ sweeps skipped: capefm data absent")
        finish()
        return
    X20, y20, beta20 = load_capefm("synth_D_20_N_20000")
    X50, y50, beta50 = load_capefm("synth_D_50_N_10000")
    assert beta20 is not None and beta50 is not None
    capefm_variance(X20, y20, reps, epsilon=0.5)
    capefm_vs_pooled(X20, y20, beta20, max(seeds, 30))  # ≥ 30: a stable median at ε = 0.1
    sizes = [(n, n, 0.5, DELTA) for n in (500, 1000, 2000, 5000, 10000)]
    path = args.plot_dir / "fm_vs_n.png"
    sweep("synth_D_50_N_10000, ε = 0.5", X50, y50, beta50, "N", sizes, seeds, path)
    deltas = [(d, len(y20), 1.0, d) for d in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)]
    path = args.plot_dir / "fm_vs_delta.png"
    sweep("synth_D_20_N_20000 (all rows), ε = 1", X20, y20, beta20, "δ", deltas, seeds, path)
    finish()


if __name__ == "__main__":
    main()
