"""The functional mechanism for any loss of the margin: coefficients and sensitivities by sympy.

A loss ℓ(m, y) of the margin m = xᵀw and the label y (squared error, logistic, Huber,
Poisson, ...) is expanded in m to second order at a chosen point a:

    ℓ(xᵀw, y) ≈ Σₖ₌₀² gₖ(y)·(xᵀw − a)ᵏ,   gₖ(y) = ∂ᵏℓ/∂mᵏ(a, y) / k!,

exactly for a polynomial of degree ≤ 2 in m. With a = 0 this is Σₖ gₖ(y)·⟨x^{⊗k}, w^{⊗k}⟩,
so the functional mechanism's coefficient arrays are C₀ = Σ g₀(yᵢ), C₁ = Σ g₁(yᵢ)xᵢ and
C₂ = Σ g₂(yᵢ)xᵢxᵢᵀ (a ≠ 0 adds the terms of (m − a)ᵏ; see :meth:`PolynomialLoss.arrays`).
sympy differentiates ℓ and ``lambdify`` turns each gₖ into numpy code.

Sensitivities follow from the form gₖ(y)·x^{⊗k} with ‖x‖ ≤ B and y in the declared label
domain — only a one-dimensional supremum over y is needed (sympy's ``maximum`` and
``minimum`` on an interval, or the values on a finite label set):

* add/remove: Δₖ = sup|gₖ|·Bᵏ (the Frobenius norm of g·x^{⊗k} is |g|·‖x‖ᵏ);
* replace-one: order 0: sup gₖ − inf gₖ; order 1: (sup|g| + sup|g|)·B (x′ = −x); order 2:
  max(√2·sup|g|, sup g − inf g)·B², from ‖g xxᵀ − g′x′x′ᵀ‖_F² = g²‖x‖⁴ + g′²‖x′‖⁴ −
  2gg′(xᵀx′)²: with gg′ ≥ 0 it is largest at x ⟂ x′ (2 sup g²·B⁴), with gg′ < 0 at
  x′ = x ((g − g′)²·B⁴). (Until 2026-11-24 a g that changes sign got only the second
  term, missing same-sign pairs at x ⟂ x′: 1.1 instead of √2 for y·m² with y ∈ [−0.1, 1];
  the ready-made losses keep one sign and were not affected.)

These reproduce the hand-written linear (y² − 2ym + m²) and logistic (log 2 + (½ − y)m +
m²/8) cases exactly — :func:`squared_loss` and :func:`logistic_loss` — and extend to any
smooth loss, e.g. :func:`huber_loss` or :func:`poisson_loss` (docs/algorithms.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import sympy

from dpledger._public import namespace
from dpledger._validation import check_real
from dpledger.accountant import events as ev
from dpledger.algorithms import _data
from dpledger.algorithms._linear_base import LinearRegressorMixin
from dpledger.algorithms._params import Constraint, InstanceOf
from dpledger.algorithms.base import store_parameters
from dpledger.algorithms.functional import _FunctionalMechanism
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms.exact_value import ExactValue

__all__ = [
    "FMPolynomialRegression",
    "PolynomialLoss",
    "huber_loss",
    "logistic_loss",
    "poisson_loss",
    "squared_loss",
]

M, Y = sympy.symbols("m y", real=True)


def _exact_factor(constant: Any) -> float:
    """A constant g₂ as the factor of the Gram sum: a float never above it in magnitude.

    The sensitivities are charged with ``float(g₂)`` (nearest); the factor is that float
    if it is not above g₂ in magnitude (exactly g₂ when g₂ is dyadic: 1, 1/8), else the
    next float toward zero — so a record's term never exceeds what is charged.
    """
    value = float(constant)
    if constant.is_Rational:
        above = abs(Fraction(value)) > abs(Fraction(int(constant.p), int(constant.q)))
    else:
        above = value != 0.0  # irrational: float(g₂) is not g₂; step toward zero
    return float(np.nextafter(value, 0.0)) if above else value


@dataclass(frozen=True)
class PolynomialLoss:
    """ℓ(m, y), its second-order expansion in the margin m at ``point``, and its bounds.

    Args:
        expression: ℓ as a sympy expression in ``margin`` and ``label``.
        margin: The margin symbol m (= xᵀw).
        label: The label symbol y.
        labels: The declared label domain: an interval ``(lo, hi)`` (labels are clipped
            to it) or a finite set, e.g. ``{0, 1}`` (a row of another label is dropped:
            it becomes the zero row, which adds nothing to the coefficients).
        point: The expansion point a of the margin.
        name: A short name for messages and reprs.
    """

    expression: Any
    margin: Any = M
    label: Any = Y
    labels: Any = (-1.0, 1.0)
    point: float = 0.0
    name: str = "custom"
    _g: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            expr = sympy.sympify(self.expression, strict=True)
        except (sympy.SympifyError, TypeError, ValueError):
            raise InvalidArgumentTypeError(
                f"`expression` must be a sympy expression in the margin and the label. "
                f"Found {self.expression!r}."
            ) from None
        if not isinstance(expr, sympy.Expr):
            raise InvalidArgumentTypeError(
                f"`expression` must be a sympy expression. Found {self.expression!r}."
            )
        labels = self.labels
        if isinstance(labels, (set, frozenset)):
            values = [check_real("labels", v) for v in labels]
            if not values or not all(math.isfinite(v) for v in values):
                raise InvalidArgumentError(f"`labels` must be finite values. Found {labels!r}.")
        else:
            try:
                lo, hi = (check_real("labels", v) for v in labels)
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"`labels` must be an interval (lo, hi) or a finite set. Found {labels!r}."
                ) from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise InvalidArgumentError(
                    f"`labels` must be a finite interval with lo ≤ hi. Found {labels!r}."
                )
        free = expr.free_symbols - {self.margin, self.label}
        if free:
            raise InvalidArgumentError(
                f"the loss may depend on the margin and the label only; it also has "
                f"{sorted(map(str, free))}."
            )
        point = check_real("point", self.point)
        if not math.isfinite(point):
            raise InvalidArgumentError(f"`point` must be finite. Found {self.point!r}.")
        a = sympy.nsimplify(point)
        g = tuple(
            sympy.simplify(
                sympy.diff(expr, self.margin, k).subs(self.margin, a) / math.factorial(k)
            )
            for k in range(3)
        )
        object.__setattr__(self, "_g", g)
        if g[2] == 0:
            raise InvalidArgumentError(
                f"the loss {expr} has no quadratic term in the margin at {point!r}: the "
                "functional mechanism's objective would be linear, with no minimiser. Use a "
                "loss with curvature there (or expand at another point)."
            )
        probe = (
            np.array(sorted(float(v) for v in self.labels))
            if self._is_set()
            else np.linspace(float(self.labels[0]), float(self.labels[1]), 5)
        )
        for gk, f in zip(g, self.functions(), strict=True):
            try:
                with np.errstate(all="ignore"):
                    probed = f(probe)
                finite = bool(np.all(np.isfinite(probed)))
            except Exception as error:
                raise InvalidArgumentError(
                    f"the coefficient {gk} of the loss {expr} cannot be evaluated numerically "
                    f"({type(error).__name__}: {error}); the loss must be smooth at the "
                    "expansion point (no Abs, Max, Piecewise) and built from functions numpy "
                    "or scipy provide."
                ) from None
            if not finite:
                raise InvalidArgumentError(
                    f"the coefficient {gk} of the loss {expr} is not finite on the label "
                    f"domain {self.labels!r}."
                )

    # -- the expansion ------------------------------------------------------------------

    @property
    def g(self) -> tuple[Any, ...]:
        """(g₀, g₁, g₂) as sympy expressions in the label."""
        return self._g

    def _is_set(self) -> bool:
        return isinstance(self.labels, (set, frozenset))

    def label_values(self, y: np.ndarray) -> np.ndarray:
        """``y`` on the label domain: clipped to an interval; on a finite set, NaN off it.

        Record-local: a label outside a finite set is never refused (whether some private
        row holds one is private); it comes back NaN, and the estimator replaces its row
        by the zero row (:func:`.algorithms._labels.zero_undeclared`), which adds nothing
        to C₁ and C₂.
        """
        if self._is_set():
            allowed = np.array(sorted(float(v) for v in self.labels))
            values = np.asarray(y, dtype=float)
            return np.where(np.isin(values, allowed), values, np.nan)
        lo, hi = self.labels
        return np.asarray(np.clip(y, lo, hi), dtype=float)

    def functions(self) -> tuple[Callable[[np.ndarray], np.ndarray], ...]:
        """The gₖ as numpy functions of y (``sympy.lambdify``)."""
        out = []
        for gk in self._g:
            f = sympy.lambdify(self.label, gk, modules=["scipy", "numpy"])
            out.append(lambda y, f=f: np.broadcast_to(np.asarray(f(y), dtype=float), np.shape(y)))
        return tuple(out)

    def arrays(self, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(C₀, C₁, C₂) of Σᵢ ℓ(xᵢᵀw, yᵢ) ≈ C₀ + C₁ᵀw + wᵀC₂w (summed over the rows)."""
        g0, g1, g2 = (f(y) for f in self.functions())
        a = float(self.point)
        # Σₖ gₖ (m − a)ᵏ = (g₀ − a g₁ + a² g₂) + (g₁ − 2a g₂) m + g₂ m²
        h0 = g0 - a * g1 + a * a * g2
        h1 = g1 - 2 * a * g2
        return float(h0.sum()), X.T @ h1, (X * g2[:, None]).T @ X

    def moments(self) -> tuple[Any, float]:
        """(exact-sum specification of (C₀, C₁, C₂), factor of the Gram sum).

        The weights per row are (g₂, g₁, g₀) (expansion at 0), each kept within its range
        over the label domain (the ranges the sensitivities are derived from); rows are in
        the unit ball (scaled). A g₂ that does not depend on the label (squared loss: 1,
        logistic: 1/8) is not a weight: the plain Gram sum is multiplied by it instead.
        """
        from dpledger.algorithms import _data

        g0, g1, g2 = self.functions()
        a = float(self.point)

        def weights(X: np.ndarray, y: np.ndarray | None) -> tuple[Any, Any, Any]:
            assert y is not None
            v0, v1, v2 = g0(y), g1(y), g2(y)
            return v2, v1 - 2 * a * v2, v0 - a * v1 + a * a * v2

        if a != 0.0:
            raise InvalidArgumentError(
                "the coefficient ranges are derived for an expansion at point 0; expand at 0."
            )
        r0, r1, r2 = (self._range(gk) for gk in self._g)
        if not self._g[2].has(self.label):
            return _data.Moments(lambda X, y: (None, *weights(X, y)[1:]), b=r1, c=r0), (
                _exact_factor(self._g[2])
            )
        return _data.Moments(weights, a=r2, b=r1, c=r0), 1.0

    # -- sensitivities -------------------------------------------------------------------

    def _range(self, expr: Any) -> tuple[float, float]:
        """(inf, sup) of ``expr`` over the label domain (a named error if sympy cannot)."""
        try:
            low, high = self._range_of(expr)
        except (NotImplementedError, TypeError, ValueError, OverflowError) as error:
            raise InvalidArgumentError(
                f"cannot bound the coefficient {expr} of the loss {self.expression} over the "
                f"label domain {self.labels!r} ({type(error).__name__}: {error}). The loss "
                "must be smooth at margin 0 with coefficients bounded, and sympy must find "
                "their extremes on the labels (declare a finite label set, or simplify)."
            ) from None
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InvalidArgumentError(
                f"the coefficient {expr} of the loss {self.expression} is unbounded on the "
                f"label domain {self.labels!r} (range [{low}, {high}]): its sensitivity "
                "would be infinite."
            )
        return low, high

    def _range_of(self, expr: Any) -> tuple[float, float]:
        if self._is_set():
            values = [float(expr.subs(self.label, v)) for v in self.labels]
            return min(values), max(values)
        # exact endpoints: nsimplify may turn 1.4142135629 into √2, pulling a bound inward
        lo, hi = (_exact(v) for v in self.labels)
        interval = sympy.Interval(lo, hi)
        if not expr.has(self.label):
            value = float(expr)
            return value, value
        from sympy.calculus.util import maximum, minimum

        return float(minimum(expr, self.label, interval)), float(
            maximum(expr, self.label, interval)
        )

    def sensitivities(self, adjacency: str, x_bound: float = 1.0) -> dict[str, float]:
        """L2 (Frobenius) sensitivity of C₀, C₁, C₂ for one record (module docstring)."""
        if float(self.point) != 0.0:
            raise InvalidArgumentError(
                "sensitivities are derived for an expansion at point 0 (the hand-written "
                "cases); expand at 0 or bound the shifted arrays yourself."
            )
        out = {}
        for k, gk in enumerate(self._g):
            low, high = self._range(gk)
            top = max(abs(low), abs(high))
            if adjacency == ev.ADD_REMOVE:
                value = top
            elif k == 0:
                value = high - low
            elif k == 1:
                value = 2.0 * top
            else:  # same signs at x ⟂ x′, or opposite signs at x′ = x (module docstring)
                value = max(math.sqrt(2.0) * top, high - low)
            out[f"c{k}"] = value * x_bound**k
        return out


def _exact(value: Any) -> Any:
    """``value`` as a sympy number equal to it exactly (a simple form when that is exact)."""
    exact, simple = sympy.Rational(value), sympy.nsimplify(value)
    return simple if simple == exact else exact


def squared_loss(y_bound: float = 1.0) -> PolynomialLoss:
    """(y − m)² with |y| ≤ ``y_bound``: linear regression (exact at order 2)."""
    return PolynomialLoss((Y - M) ** 2, labels=(-y_bound, y_bound), name="squared")


def logistic_loss() -> PolynomialLoss:
    """log(1 + eᵐ) − y·m with y ∈ {0, 1}: logistic regression (Zhang et al.'s expansion)."""
    return PolynomialLoss(sympy.log(1 + sympy.exp(M)) - Y * M, labels={0, 1}, name="logistic")


def huber_loss(scale: float = 1.0, y_bound: float = 1.0) -> PolynomialLoss:
    """The pseudo-Huber loss s²(√(1 + ((y − m)/s)²) − 1), |y| ≤ ``y_bound`` (smooth, robust)."""
    s = sympy.nsimplify(scale)
    expr = s**2 * (sympy.sqrt(1 + ((Y - M) / s) ** 2) - 1)
    return PolynomialLoss(expr, labels=(-y_bound, y_bound), name="pseudo-Huber")


def poisson_loss(y_bound: float) -> PolynomialLoss:
    """Poisson regression's negative log-likelihood eᵐ − y·m, 0 ≤ y ≤ ``y_bound``."""
    return PolynomialLoss(sympy.exp(M) - Y * M, labels=(0.0, y_bound), name="Poisson")


class FMPolynomialRegression(LinearRegressorMixin, _FunctionalMechanism):
    """Gaussian FM for any loss of the margin, expanded to second order by sympy.

    The coefficient arrays and their sensitivities come from ``loss`` (a
    :class:`PolynomialLoss`); C₁ and C₂ are released with one noise scale, calibrated
    jointly to (ε, δ) (the split of :mod:`.functional`), and the noisy quadratic is
    minimised with C₂'s eigenvalues floored at the noise's spectral scale
    (:func:`~.functional.noisy_minimiser`). ``predict`` returns the margin xᵀw + b.

    Args:
        loss: The loss, e.g. ``huber_loss()`` or ``poisson_loss(y_bound=10)``.
        epsilon: The ε this fit must meet.
        delta: The δ this fit must meet (> 0).
        {x_bound}
        {adjacency}
        {fit_intercept}
        row_norm: "clip" (default) or "unit".
        budget_split: Shares of μ² for (C₁, C₂).
        eigenvalue_floor: "auto" or "noise" (default: C₂'s eigenvalues raised to the noise's
            spectral scale before the solve) or "zero" (projected onto [0, ∞), the papers'
            step); see :mod:`.functional`.
        {ledger_safe_noise_rng}

    Example:
        >>> import numpy as np
        >>> from dpledger.algorithms.polynomial import FMPolynomialRegression, huber_loss
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(20_000, 2)) / 2
        >>> y = np.clip(X @ [0.6, -0.3] + 0.1 * rng.standard_t(2, size=20_000), -1, 1)
        >>> model = FMPolynomialRegression(loss=huber_loss(), epsilon=2.0, delta=1e-5,
        ...                                x_bound=1.0, adjacency="replace_one", rng=0)
        >>> len(model.fit(X, y).releases_)  # C₁ and C₂ in one whitened release
        1

    Attributes:
        coef_: The minimiser's coefficients (the margin per unit of each feature).
        intercept_: The margin at x = 0 (0.0 without ``fit_intercept``).
        method_: "gaussian" (Gaussian FM, the only method here).
        noise_scales_: (σ₁, σ₂), the noise on C₁ and on C₂'s upper triangle.
        eigenvalue_floor_: λ, the least eigenvalue the noisy C₂ was given before the solve.
        {n_features_in_}
        {ledger_}
        releases_: The events charged, in order.
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {
        **_FunctionalMechanism._parameter_constraints,
        "loss": InstanceOf(
            PolynomialLoss,
            "a PolynomialLoss (e.g. huber_loss(), poisson_loss(10), or "
            "PolynomialLoss(expression, labels=...))",
        ),
    }
    _target_scaled = False  # the labels are in the loss's own domain
    #: Gaussian FM, calibrated: the one method and variant this estimator supports
    _fixed_parameters: ClassVar[dict[str, Any]] = {"method": "gaussian", "variant": "calibrated"}

    def __init__(
        self,
        *,
        loss: Any = None,
        epsilon: float | None = None,
        delta: float | None = None,
        x_bound: float | None = None,
        adjacency: str | None = None,
        fit_intercept: bool = True,
        row_norm: str = "clip",
        budget_split: Any = None,
        eigenvalue_floor: str = "auto",
        ledger: Any = None,
        safe_noise: bool = True,
        rng: Any = None,
    ) -> None:
        store_parameters(self, locals())

    def _loss(self) -> PolynomialLoss:
        loss: PolynomialLoss = self._params.loss
        return loss

    def _coefficients(self, X: Any, y: Any) -> tuple[ExactValue, ExactValue, ExactValue, int]:
        loss = self._loss()
        Xd = _data.as_design(X)
        yd = _data.as_target(y, None if _data.is_dask(Xd) else Xd.shape[0])
        rows = self._rows()

        def transform(Xb: np.ndarray, yb: np.ndarray | None) -> tuple[np.ndarray, Any]:
            Xs = rows(Xb)
            if yb is None:
                return Xs, None
            labels = loss.label_values(yb)
            off = np.isnan(labels)  # off a finite label set: the zero row, a declared label
            Xs[off] = 0.0
            return Xs, np.where(off, lowest, labels)

        lowest = min(float(v) for v in loss.labels) if loss._is_set() else 0.0

        moments, factor = loss.moments()
        stats = _data.sufficient_statistics(Xd, yd, transform, moments)
        self.n_features_in_ = int(Xd.shape[1])
        exact = stats.exact
        return exact.scalar, exact.vector, exact.gram * factor, int(Xd.shape[1])

    def _sensitivities(self, d: int, adjacency: str) -> dict[str, float]:
        return self._loss().sensitivities(adjacency, 1.0)  # rows are scaled to the unit ball

    def _pair_terms(self, d: int) -> tuple[float, float] | None:
        loss = self._loss()
        if loss.g[2].has(loss.label):  # g₂ varies with the label: compose the orders
            return None
        return super()._pair_terms(d)


__dir__ = namespace(__all__)
