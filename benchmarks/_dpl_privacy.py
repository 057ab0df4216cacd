"""diffprivlib's LogisticRegression (a peer): its ε′, Δ and noise at a nominal ε, and the
ε it really guarantees (replace-one) — the analysis ``benchmarks/logistic_regression.py``
compares at (its docstring, "diffprivlib's true ε", gives the argument).

Mirrors ``diffprivlib.mechanisms.Vector.randomise`` (0.6.6) and bounds the privacy loss of
the mechanism as Chaudhuri, Monteleoni & Sarwate (2011) do, with three Jacobian terms:
CMS's, a rank-one one, and the logistic loss's joint bound (what dpledger's erm.py charges).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _harness import fmt, records, table
from scipy.optimize import brentq

from dpledger.algorithms.erm import objective_perturbation_epsilon

ADJ = "replace_one"
R = 1.0  # the rows' norm bound (data_norm)
C_LOGISTIC = 0.25  # sup ℓ″ of the logistic loss
#: Jacobian term of the objective-perturbation analysis the comparisons use: "cms"
#: (2·log(1 + cR²/(nλ)), the paper's), "rank_one" (log(1 + cR²/(nλ))) or "joint" (the
#: logistic loss's joint bound of dpledger's erm.py, the tightest: what it charges).
OBJPERT_JACOBIAN = "joint"


@dataclass(frozen=True)
class DplPrivacy:
    """What diffprivlib's Vector mechanism does at one nominal ε, and its true ε."""

    nominal: float
    eps_prime: float  # ε′ its noise is drawn for
    delta_reg: float  # Δ it adds (0 unless its ε′ ≤ 0)
    scale: float  # Gamma scale of ‖b‖: 2R/ε′
    true_cms: float  # ε′ + 2·log(1 + cR²/(n(λ + Δ)))
    true_rank_one: float  # ε′ + log(1 + cR²/(n(λ + Δ)))
    true_joint: float  # the logistic joint bound (dpledger.algorithms.erm._logistic_joint)

    def true(self, jacobian: str = OBJPERT_JACOBIAN) -> float:
        return {"cms": self.true_cms, "rank_one": self.true_rank_one}.get(jacobian, self.true_joint)


def dpl_privacy(nominal: float, *, data_norm: float, n: int, C: float) -> DplPrivacy:
    """diffprivlib's ε′, Δ and noise at ``nominal`` ε, and the ε they really give.

    Mirrors ``diffprivlib.mechanisms.Vector.randomise`` (0.6.6) with function_sensitivity
    c = 1/4, data_sensitivity = data_norm (fit_intercept=False), alpha = 1/C, n rows:
    ``epsilon_p = ε − 2·log(1 + c·R/alpha)``; if ``epsilon_p ≤ 0``:
    ``delta = (c·R/expm1(ε/4) − alpha)/n`` and ``epsilon_p = ε/2``; ``scale = 2R/epsilon_p``.

    The true ε (CMS 2011, Theorem 9, for rows with ‖x‖ ≤ R): the noise density ratio is
    at most exp(‖∇ℓ(x) − ∇ℓ(x′)‖/scale) ≤ exp(2R/scale) = e^{ε′}; the Jacobian ratio at
    most (1 + c·R²/(n(λ + Δ)))² with nλ = 1/C (CMS), or 1 + c·R²/(n(λ + Δ)) by the matrix
    determinant lemma (the Hessians differ by one rank-one term c′·xxᵀ, c′ ≤ c, on top of a
    matrix ⪰ n(λ + Δ)·I). diffprivlib's n(λ + Δ) is 1/C, or c·R/expm1(ε/4) when Δ > 0.
    """
    c = C_LOGISTIC
    alpha = 1.0 / C
    eps_p = nominal - 2.0 * math.log1p(c * data_norm / alpha)
    delta_reg = 0.0
    if eps_p <= 0:
        delta_reg = (c * data_norm / math.expm1(nominal / 4.0) - alpha) / n
        eps_p = nominal / 2.0
    n_reg = alpha + n * delta_reg  # n(λ + Δ)
    jac = math.log1p(c * data_norm**2 / n_reg)
    scale = 2.0 * data_norm / eps_p
    joint = objective_perturbation_epsilon(
        noise="laplace",
        scale=scale,
        lipschitz=data_norm,
        curvature=c * data_norm**2,
        size=n,
        regularization=n_reg / n,
        adjacency=ADJ,
        loss="logistic",
    )
    return DplPrivacy(nominal, eps_p, delta_reg, scale, eps_p + 2 * jac, eps_p + jac, joint)


def dpl_true_epsilon(
    nominal: float,
    *,
    data_norm: float,
    n: int,
    C: float,
    fit_intercept: bool = False,
    jacobian: str = OBJPERT_JACOBIAN,
) -> float:
    """The ε diffprivlib's LogisticRegression really guarantees (replace-one), or ∞.

    With ``fit_intercept=True`` there is no finite bound: sklearn's loss leaves the
    intercept unregularised, so the Hessian n·∇²J = Σℓ″(·)x̃x̃ᵀ + nλ·diag(1, …, 1, 0) has no
    eigenvalue floor in the intercept direction. Take D with every row (e₁, y = 1), D′ with
    one row replaced by x′ = 0, and an output w = (t·e₁, intercept 0), t → ∞ (every output
    has positive density: b = −n∇J(w) is onto). Under D all ℓ″ ≈ e^{−t}; under D′ the new
    row has ℓ″ = 1/4 on x̃′ = (0, 1). The Jacobian ratio det A_{D′}/det A_D grows like
    e^{t}/(4n) → ∞, so the privacy loss is unbounded: no ε-DP guarantee (and clipping the
    augmented row to √(R² + 1), as diffprivlib does, does not help).
    """
    if fit_intercept:
        return math.inf
    return dpl_privacy(nominal, data_norm=data_norm, n=n, C=C).true(jacobian)


def dpl_nominal_for(
    target: float, *, data_norm: float, n: int, C: float, jacobian: str = OBJPERT_JACOBIAN
) -> float:
    """The largest nominal ε whose true ε is the ``target`` (numerically, per branch).

    Each of diffprivlib's two branches (ε′ > 0: no Δ; ε′ ≤ 0: Δ > 0) is increasing in the
    nominal ε; they meet at ε₀ = 2·log(1 + c·R·C), where the true ε may jump (it does not
    when R = 1 and the CMS Jacobian is used). Solve in each branch, keep the largest
    solution (the least noise at the target).
    """

    def true(nominal: float) -> float:
        return dpl_true_epsilon(nominal, data_norm=data_norm, n=n, C=C, jacobian=jacobian)

    edge = 2.0 * math.log1p(C_LOGISTIC * data_norm * C)
    best = math.nan
    low = 1e-9
    if true(edge) >= target > true(low):  # branch with Δ (nominal ≤ edge)
        best = brentq(lambda e: true(e) - target, low, edge, xtol=1e-13, rtol=1e-13)
    high = max(2 * edge, 4 * target + 10.0)
    above = edge * (1 + 1e-12) + 1e-12
    if true(above) <= target <= true(high):  # branch without Δ (nominal > edge)
        best = brentq(lambda e: true(e) - target, above, high, xtol=1e-13, rtol=1e-13)
    if math.isnan(best):
        raise ValueError(f"no nominal ε gives true ε {target} (C = {C}, n = {n})")
    return float(best)


def dpl_analysis(sets: Sequence[Any], lambdas: Sequence[float], epsilons: Sequence[float]) -> None:
    """diffprivlib's ε′, Δ, noise and true ε at each nominal ε, per data set and λ."""
    print(
        "\n== diffprivlib LogisticRegression: true ε (replace-one, R = data_norm = "
        f"{R:g}, fit_intercept=False, C = 1/(nλ))\nε′ = ε − 2·log(1 + c·R·C) [its code]; if "
        "ε′ ≤ 0: Δ = (c·R/(e^{ε/4} − 1) − 1/C)/n, ε′ = ε/2; ‖b‖ ~ Gamma(d, 2R/ε′).\ntrue ε "
        "(CMS) = ε′ + 2·log(1 + c·R²/(n(λ + Δ))); rank-one bound: ε′ + log(1 + c·R²/(n(λ + "
        "Δ))); joint (logistic, tightest): ε′/2 + max_p [ε′p/2 + log(1 + p(1 − p)R²/(n(λ + "
        "Δ)))]; c = 1/4."
    )
    target = f"nominal ε giving true ε = col. 3 ({OBJPERT_JACOBIAN})"
    for data in sets:
        rows = []
        for lam in lambdas:
            C = 1.0 / (data.n * lam)
            for e in epsilons:
                p = dpl_privacy(e, data_norm=R, n=data.n, C=C)
                rows.append(
                    {
                        "λ": f"{lam:g}",
                        "C": fmt(C, 4),
                        "nominal ε": f"{e:g}",
                        "ε′": fmt(p.eps_prime, 4),
                        "Δ": fmt(p.delta_reg, 3),
                        "‖b‖ scale": fmt(p.scale, 4),
                        "true ε CMS": fmt(p.true_cms, 6),
                        "true ε rank-1": fmt(p.true_rank_one, 4),
                        "true ε joint": fmt(p.true_joint, 4),
                        target: fmt(dpl_nominal_for(e, data_norm=R, n=data.n, C=C), 6),
                    }
                )
        print(f"\n{data.name} (n = {data.n}):\n{records(rows)}")
    # the c·R vs c·R² slip matters when R ≠ 1: illustrate with R = √2 (its intercept norm)
    # and R = 0.5, at n = 10,000, λ = 1e-4 (C = 1)
    rows = []
    for r in (0.5, math.sqrt(2.0), 2.0):
        for e in epsilons:
            p = dpl_privacy(e, data_norm=r, n=10_000, C=1.0)
            rows.append([fmt(r, 4), f"{e:g}", fmt(p.eps_prime, 4), fmt(p.true_cms, 4)])
    print(
        "\nwhen R ≠ 1 the slack c·R (its code) ≠ c·R² (CMS): true ε at C = 1 (R = √2 is its "
        "augmented norm with an intercept, were the intercept regularised):"
    )
    print(table(["R", "nominal ε", "ε′ (diffprivlib)", "true ε CMS"], rows))
