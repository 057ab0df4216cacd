"""capeFM: Gaussian FM across S sites with correlation-assisted private estimation (CAPE).

S sites each hold their own rows (Nₛ may differ). Site s computes its coefficient sums
C₁ˢ, C₂ˢ (sums, so Σₛ Cⱼˢ is exactly the pooled Cⱼ for any Nₛ) and sends

    Ĉⱼˢ = Cⱼˢ + eⱼₛ + gⱼₛ,

where gⱼₛ ~ N(0, τⱼ²/S) is local noise and eⱼₛ is zero-sum noise produced as secure
aggregation would (Tasnim et al. 2023, Alg. 2): every site draws êⱼₛ ~ N(0, τⱼ²), the
aggregator learns only Σₛ êⱼₛ, and eⱼₛ = êⱼₛ − (1/S)Σₛ′ êⱼₛ′ — so Σₛ eⱼₛ = 0 exactly. The
aggregator's sum Σₛ Ĉⱼˢ = Cⱼ + Σₛ gⱼₛ carries noise of variance τⱼ²: the pooled level,
S times less than the conventional scheme (every site adding N(0, τⱼ²) on its own). C₂'s
noise is symmetric (Frobenius geometry, as in :mod:`.functional`).

Privacy (CAPE theorem, Tasnim et al. 2023, Thm 1): honest-but-curious parties, and at most
S_C = ⌈S/3⌉ − 1 sites colluding with the aggregator. The adversary (the aggregator and
the colluders) sees every zₛ = Cₛ + eₛ + gₛ, the broadcast ē = (1/S)Σê, and the
colluders' own ê_c, g_c. For an honest site h it can therefore form
uₕ = zₕ + ē = Cₕ + êₕ + gₕ, and it knows K = Σ_{h honest} êₕ = S·ē − Σ_c ê_c exactly.
Its view of the honest sites is (uₕ)ₕ and K, jointly Gaussian with covariance
τ²·[[(1 + 1/S)·I, 1], [1ᵀ, S_H]] (S_H = S − S_C honest sites); one record of site 0
shifts u₀ only, so its privacy loss is a Gaussian mechanism with μ² = c·S²/p², where S
is the whitened sensitivity of (C₁/a₁, C₂/a₂) and τⱼ = p·aⱼ
(:meth:`.functional._FunctionalMechanism._noise_shape`: the supremum over two rows of
‖ΔC₁‖²/a₁² + ‖ΔC₂‖²/a₂², below the per-order composition Σⱼ(Δⱼ/aⱼ)²), and c is the
(0, 0) entry of that covariance's inverse (block inversion; Schur complement
S_H/(S + 1)):

    c(S, S_C) = S/(S+1)·(1 + S/S_H)

c = 2S/(S+1) without colluders, 15/8 at S = 5 with one; it grows with S_C (a larger
coalition sees more) towards 5/2. (An earlier reconstruction from the theorem's proof,
which left the colluders' own ê_c out of the view, *fell* with S_C: 1.32 at S = 5, S_C = 1,
under-charging by a factor 1.42 in μ²; found in review and confirmed by a Monte Carlo of
the protocol.) Each site's ledger is charged that Gaussian —
``Gaussian(p/√c, S)``, one event for both orders, exact for every ε. The paper's own (ε, δ) —
δ = 2σ_z/(ε − μ_z)·φ((ε − μ_z)/σ_z), μ_z = μ²/2, σ_z = √(2μ_z) — is a looser upper bound
valid for μ_z < ε < 1; it is reported only there (``paper_delta_``), beside the exact
guarantee. Against anyone who sees only the aggregate the release is the pooled
Gaussian FM (``aggregate_epsilon_``).

The noise is drawn in floating point (the zero-sum construction has no exact discrete
counterpart here): a :class:`~dpledger.mechanisms.FloatingPointWarning` says so.

Not a scikit-learn estimator, and not exported beside them in :mod:`dpledger.algorithms`:
:class:`CapeFM` simulates a protocol among S parties, so its ``fit`` takes the sites (a
list of (X, y) pairs, one data set each, each with its own ledger and guarantee), not one
data set, and ``clone``/``cross_val_score`` have nothing to split. Import it from here:
``from dpledger.algorithms.cape import CapeFM``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from scipy import stats
from sklearn.exceptions import NotFittedError

from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger._validation import check_int_at_least
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._labels import CLASSES
from dpledger.algorithms._linear_base import data_units
from dpledger.algorithms._params import (
    Boolean,
    Bound,
    Constraint,
    Delta,
    Epsilon,
    Integer,
    Options,
    OrNone,
    Parameters,
    RandomState,
    parameter_names,
    validate_parameters,
)
from dpledger.algorithms.base import (
    ADJACENCIES,
    one_fit_budget,
    symmetric_from_upper,
    upper,
)
from dpledger.algorithms.functional import (
    FMLinearRegression,
    FMLogisticRegression,
    noise_spectral_scale,
    noisy_minimiser,
)
from dpledger.errors import InvalidArgumentError
from dpledger.ledger import Ledger
from dpledger.mechanisms.base import FloatingPointWarning

__all__ = ["CapeFM", "cape_factor", "max_colluders"]


def max_colluders(sites: int) -> int:
    """⌈S/3⌉ − 1: the most colluding sites the CAPE theorem allows."""
    sites = check_int_at_least("sites", sites, 2)
    return -(-sites // 3) - 1


def cape_factor(sites: int, colluders: int) -> float:
    """c(S, S_C): the per-site privacy loss is μ² = c·S²/p² (module docstring)."""
    sites = check_int_at_least("sites", sites, 2)
    colluders = check_int_at_least("colluders", colluders, 0)
    if colluders > max_colluders(sites):
        raise InvalidArgumentError(
            f"the CAPE theorem holds for at most ⌈S/3⌉ − 1 = {max_colluders(sites)} colluding "
            f"sites with S = {sites}. Found colluders={colluders}."
        )
    s, sh = float(sites), float(sites - colluders)
    return round_up(s / (s + 1) * (1 + s / sh))


class CapeFM:
    """Decentralised Gaussian FM over simulated sites (CAPE, or the conventional scheme).

    A protocol simulation, not a scikit-learn estimator (``fit(sites)`` takes one (X, y)
    pair per site): see the module's docstring.

    Args:
        epsilon: The ε each site's release must meet.
        delta: The δ each site's release must meet.
        x_bound: Declared bound on each row's L2 norm.
        y_bound: Declared bound on |y| (linear loss).
        adjacency: "add_remove" or "replace_one" (within a site's data).
        loss: "linear" or "logistic".
        classes: The logistic loss's two classes, or None: from each site's ``y`` dtype
            (:class:`~dpledger.algorithms.FMLogisticRegression`'s ``classes``).
        scheme: "cape" (zero-sum plus local noise) or "conventional" (each site alone).
        colluders: Sites assumed to collude with the aggregator (default ⌈S/3⌉ − 1, the
            most the theorem allows; more is refused).
        fit_intercept: Fit an intercept (a public constant column).
        rng: numpy Generator or int seed (reproducible), or None.

    The noise τⱼ is calibrated so that each site's exact guarantee (the Gaussian above,
    with the collusion factor c for CAPE) meets (ε, δ); the split between orders is the
    one of :class:`~dpledger.algorithms.FMLinearRegression`.

    Each site's budget (ε, δ) is for one fit: a second ``fit`` of this object, or of a
    ``copy.deepcopy`` of it, is refused (:class:`~dpledger.errors.BudgetExceededError`),
    and a pickled copy has no budget. Construct a new ``CapeFM`` for a new budget.

    Attributes:
        coef_: The coefficients of w, fitted on the aggregated releases, in data units.
        intercept_: The intercept (0.0 without ``fit_intercept``).
        n_features_in_: The number of features (columns) of every site's ``X``.
        releases_: The events charged to each site's ledger, in order (one Gaussian).
        site_ledgers_: Each site's own ledger, planned for its one release and charged.
        site_releases_: What each site sent: its C₁ and C₂ (upper triangle) with noise.
        tau_: (τ₁, τ₂), the pooled noise of C₁ and of C₂'s upper triangle.
        cape_factor_: c(S, S_C) (1 for the conventional scheme).
        colluders_: S_C, the colluding sites assumed.
        site_mu_: The μ of the Gaussian each site is charged (its exact guarantee).
        site_epsilon_: Each site's ε at ``delta`` (from ``site_mu_``).
        aggregate_epsilon_: The ε at ``delta`` against one who sees only the aggregate.
        aggregate_noise_variance_: The variance of the aggregate's noise on C₁.
        paper_delta_: The CAPE theorem's δ where it holds (μ_z < ε < 1), else None.
        eigenvalue_floor_: λ, the least eigenvalue the aggregated C₂ was given before the
            solve: the spectral scale of the aggregate's noise (as pooled Gaussian FM,
            :func:`~.functional.noisy_minimiser`; post-processing).
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        "epsilon": Epsilon(),
        "delta": Delta(gaussian=True),
        "x_bound": Bound(),
        "y_bound": OrNone(Bound()),  # the linear loss's only
        "adjacency": Options(ADJACENCIES, why="declared, never assumed"),
        "loss": Options(("linear", "logistic")),
        "classes": CLASSES,
        "scheme": Options(("cape", "conventional")),
        "colluders": OrNone(Integer(0)),
        "fit_intercept": Boolean(),
        "rng": RandomState(),
    }

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        x_bound: float,
        y_bound: float | None = None,
        adjacency: str,
        loss: str = "linear",
        classes: Any = None,
        scheme: str = "cape",
        colluders: int | None = None,
        fit_intercept: bool = True,
        rng: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.x_bound = x_bound
        self.y_bound = y_bound
        self.adjacency = adjacency
        self.loss = loss
        self.classes = classes
        self.scheme = scheme
        self.colluders = colluders
        self.fit_intercept = fit_intercept
        self.rng = rng
        one_fit_budget(self)  # one fit: the site ledgers are never opened twice (nor by a copy)

    def _validate_params(self) -> Parameters:
        """Every parameter checked (as an estimator's are), before any site's data is read."""
        values = {name: getattr(self, name) for name in parameter_names(type(self))}
        params = validate_parameters(self._parameter_constraints, values, "CapeFM")
        if params.loss == "linear" and params.y_bound is None:
            Bound().check("y_bound", None, "CapeFM")  # the linear loss needs it declared
        return params

    def _site_model(self, params: Parameters) -> FMLinearRegression | FMLogisticRegression:
        """Gaussian FM on one site's rows: its coefficients and sensitivities."""
        shared = {
            "epsilon": params.epsilon,
            "delta": params.delta,
            "x_bound": params.x_bound,
            "adjacency": params.adjacency,
            "fit_intercept": params.fit_intercept,
        }
        if params.loss == "logistic":
            return FMLogisticRegression(classes=params.classes, **shared)
        return FMLinearRegression(y_bound=params.y_bound, **shared)

    def fit(self, sites: Any) -> CapeFM:
        """Simulate the protocol over ``sites`` (a list of (X, y)) and estimate w."""
        params = self._validate_params()
        epsilon, delta, adjacency = params.epsilon, params.delta, params.adjacency
        lineage = one_fit_budget(self)
        # public: this object has fitted before (refused before any data is read)
        lineage.refuse("CapeFM", (epsilon, delta), has_ledger=False)
        if isinstance(sites, (str, bytes)) or not hasattr(sites, "__len__") or len(sites) < 2:
            raise InvalidArgumentError("`sites` must be a list of at least two (X, y) pairs.")
        count = len(sites)
        colluders = max_colluders(count) if params.colluders is None else params.colluders
        factor = cape_factor(count, colluders) if params.scheme == "cape" else 1.0
        model = self._site_model(params)
        with model._checked_parameters():
            arrays = _site_arrays(model, sites)
            d = arrays[0][0].size
            true = model._sensitivities(d, adjacency)
            a1, a2, sensitivity = model._noise_shape(d, adjacency, true)
        # one site's exact view: its noise on (C₁/a₁, C₂/a₂) is p/√c per entry, so
        # μ = √c·S/p (S the whitened sensitivity of pooled Gaussian FM): solve μ
        from dpledger.calibrate import gaussian_sigma

        p = math.sqrt(factor) * gaussian_sigma(epsilon, delta, sensitivity=sensitivity)
        tau1, tau2 = p * a1, p * a2
        site_events = [ev.Gaussian(p / math.sqrt(factor), sensitivity)]

        # one per-site ledger each, planning the site's release; the noise is drawn
        # jointly across sites (correlated), from the first site's generator
        scheme = params.scheme
        reservations = [
            Ledger(epsilon, delta, adjacency=adjacency).reserve(
                site_events,
                plan=True,
                rng=params.rng if s == 0 else None,
                label=f"capeFM ({scheme}) site release",
            )
            for s in range(count)
        ]

        def open_sites() -> list[Ledger]:
            return [site.open().ledger for site in reservations]

        ledgers = lineage.claim("CapeFM", (epsilon, delta), open_sites, has_ledger=False)
        warnings.warn(
            "capeFM draws floating-point Gaussian noise (the zero-sum construction has no "
            "exact discrete form here), which can leak low-order bits (Mironov 2012).",
            FloatingPointWarning,
            stacklevel=2,
        )
        generator = reservations[0].generator
        assert generator is not None
        sums = [np.zeros(d), np.zeros(arrays[0][1].size)]
        self.site_releases_ = []
        for site in reservations:  # charge every site before any noise is drawn
            for _ in site_events:
                site.charge(label=f"capeFM site release ({scheme})")
        for order, tau in ((0, tau1), (1, tau2)):
            size = sums[order].size
            if scheme == "cape":
                raw = generator.normal(0.0, tau, size=(count, size))
                zero_sum = raw - raw.mean(axis=0)  # e = ê − mean(ê): Σₛ eₛ = 0
                local = generator.normal(0.0, tau / math.sqrt(count), size=(count, size))
                noise = zero_sum + local
            else:
                noise = generator.normal(0.0, tau, size=(count, size))
            released = [a[order] + noise[s] for s, a in enumerate(arrays)]
            self.site_releases_.append(released)
            sums[order] = np.sum(released, axis=0)
        c1, c2 = sums[0], symmetric_from_upper(sums[1], d)
        # the aggregate's noise on C₂'s upper triangle (Frobenius form): sd τ₂ (CAPE) or
        # √S·τ₂ (conventional), so τ₂/√2 (·√S) off the diagonal; C₂'s eigenvalues are
        # floored at that noise's spectral scale, as pooled Gaussian FM's (public values)
        spread = tau2 * (1.0 if scheme == "cape" else math.sqrt(count)) / math.sqrt(2.0)
        self.eigenvalue_floor_ = noise_spectral_scale(spread, d)
        theta = noisy_minimiser(c1, c2, self.eigenvalue_floor_)
        # the linear loss is fitted in units of y_bound
        scale = 1.0 if params.loss == "logistic" else params.y_bound
        features = arrays[0][2]
        self.coef_, self.intercept_ = data_units(
            theta, features, params.x_bound, scale, params.fit_intercept
        )
        self.n_features_in_ = features
        self.releases_ = list(site_events)
        self.site_ledgers_ = ledgers
        self.tau_ = (tau1, tau2)
        self.cape_factor_ = factor
        self.colluders_ = colluders
        pooled = sensitivity / p  # the whitened μ of the pooled release (noise p on Cⱼ/aⱼ)
        mu_site = math.sqrt(factor) * pooled
        self.site_mu_ = mu_site
        from dpledger.accountant import gdp_epsilon

        self.site_epsilon_ = gdp_epsilon(delta, mu_site)
        noise_scale = 1.0 if scheme == "cape" else math.sqrt(count)
        self.aggregate_epsilon_ = gdp_epsilon(delta, pooled / noise_scale * 1.0)
        self.aggregate_noise_variance_ = tau1**2 * (1 if scheme == "cape" else count)
        self.paper_delta_ = _paper_delta(epsilon, mu_site) if scheme == "cape" else None
        return self

    def predict(self, X: Any) -> np.ndarray:
        """x·coef_ + intercept_ (the margin; logistic: the log-odds)."""
        if not hasattr(self, "coef_"):
            raise NotFittedError("this CapeFM is not fitted yet: call fit(sites) first.")
        X = _data.as_design(X)
        if _data.is_dask(X) or X.shape[1] != self.n_features_in_:
            raise InvalidArgumentError(
                f"`X` must be an in-memory array of {self.n_features_in_} features, as in "
                f"fit. Found {'a dask collection' if _data.is_dask(X) else X.shape[1]}."
            )
        return np.asarray(X @ self.coef_ + self.intercept_)


def _site_arrays(
    model: FMLinearRegression | FMLogisticRegression, sites: Any
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(C₁, C₂'s upper triangle, features) of each site, as floats; the same features."""
    arrays = []
    for k, pair in enumerate(sites):
        try:
            X, y = pair
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"`sites[{k}]` must be an (X, y) pair.") from None
        _, c1, c2, features = model._coefficients(X, y)
        # float noise (below): the exact sums are rounded once, to the nearest float
        arrays.append((np.asarray(c1), upper(np.asarray(c2)), features))
    if len({a[2] for a in arrays}) != 1:
        raise InvalidArgumentError("every site must have the same features.")
    return arrays


def _paper_delta(epsilon: float, mu: float) -> float | None:
    """The CAPE theorem's δ = 2σ_z/(ε − μ_z)·φ((ε − μ_z)/σ_z), where it holds (μ_z < ε < 1)."""
    mu_z = mu * mu / 2.0
    if not (mu_z < epsilon < 1.0):
        return None
    sigma_z = math.sqrt(2.0 * mu_z)
    t = (epsilon - mu_z) / sigma_z
    return float(2.0 * sigma_z / (epsilon - mu_z) * stats.norm.pdf(t))


__dir__ = namespace(__all__)
