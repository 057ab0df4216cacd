"""The losses of private ERM: φ(θᵀx; y) and its derivatives, vectorised over rows.

The generalised linear losses of Chaudhuri, Monteleoni & Sarwate 2011 — logistic, Huber
SVM, Huber regression — with |φ′| ≤ a and φ′ c-Lipschitz (the conditions the privacy
proofs of :mod:`dpledger.algorithms.erm` use), and the derivatives the certified solver
(:mod:`dpledger.algorithms._erm_solver`) steers with: φ, φ′, φ″ and, for the logistic
loss, φ‴ (its third-order correction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

__all__: list[str] = []

_UNIT = 2.0**-53  # unit roundoff of float64


@dataclass(frozen=True)
class _Loss:
    """φ(t; y) of a generalised linear loss, with |φ′| ≤ a and 0 ≤ φ″ ≤ c."""

    name: str
    a: float
    c: float
    width: float = 0.0  # h of the Huber SVM, κ of the Huber regression

    def derivatives(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """φ, φ′ and φ″ (with respect to t) for every row; φ′ is :meth:`slope`'s."""
        d1 = self.slope(t, y)
        if self.name == "logistic":  # y in {-1, +1}
            m = y * t
            # log(1 + e^{−m}) = max(−m, 0) + log1p(e^{−|m|}): what np.logaddexp computes
            value = np.maximum(-m, 0.0) + np.log1p(np.exp(-np.abs(m)))
            s = -y * d1  # σ(−m)
            return value, d1, s * (1.0 - s)
        if self.name == "huber_svm":
            h = self.width
            m = y * t
            value = np.where(m > 1 + h, 0.0, np.where(m < 1 - h, 1 - m, (1 + h - m) ** 2 / (4 * h)))
            d2 = np.where(np.abs(1 - m) <= h, 1.0 / (2 * h), 0.0)
            return value, d1, d2
        kappa = self.width  # Huber regression on the residual
        r = t - y
        inside = np.abs(r) <= kappa
        near = np.where(inside, r, 0.0)  # squared only where used (a huge label's r²
        # overflowed: a warning that depended on the data)
        value = np.where(inside, near * near / 2, kappa * np.abs(r) - kappa * kappa / 2)
        return value, d1, inside.astype(float)

    def slope(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """φ′ (with respect to t) for every row: the certificate's.

        :meth:`derivative_error` bounds its rounding (the logistic one by ``expit``).
        """
        if self.name == "logistic":  # y in {-1, +1}
            return np.asarray(-y * special.expit(-(y * t)))
        if self.name == "huber_svm":
            h = self.width
            m = y * t
            return np.asarray(
                y * np.where(m > 1 + h, 0.0, np.where(m < 1 - h, -1.0, -(1 + h - m) / (2 * h)))
            )
        kappa = self.width  # Huber regression on the residual
        return np.asarray(np.clip(t - y, -kappa, kappa))

    def steer(
        self,
        t: np.ndarray,
        y: np.ndarray,
        out: tuple[np.ndarray, np.ndarray],
        work: tuple[np.ndarray, np.ndarray],
    ) -> None:
        """φ and φ′ into ``out``, for Newton's step and line search only.

        Never read by the certificate, which recomputes φ′ by :meth:`derivatives` (the
        φ′ that :meth:`derivative_error` bounds) at the point it judges: these only
        decide how fast Newton's phase gets there. For the logistic loss one exponential
        e = e^{−|m|} (m = y·t) gives both, in the preallocated arrays ``out`` with
        ``work`` for the intermediates (a fresh array per operation cost more than the
        arithmetic at 10⁵ rows): φ = max(−m, 0) + log1p(e), σ(−m) = e^{−max(m, 0)}/(1 + e),
        φ′ = −y·σ(−m). φ″ is formed apart, for the rows a Hessian uses only
        (:meth:`curvature`). The other losses: :meth:`derivatives`.
        """
        value, d1 = out
        if self.name != "logistic":
            found = self.derivatives(t, y)
            np.copyto(value, found[0])
            np.copyto(d1, found[1])
            return
        r, a = work
        np.multiply(y, t, out=r)  # m
        np.abs(r, out=a)  # |m|
        np.negative(r, out=r)
        np.maximum(r, 0.0, out=r)  # max(−m, 0)
        e = np.negative(a, out=value)  # value holds e until φ is formed from it
        np.exp(e, out=e)  # e^{−|m|}
        np.subtract(r, a, out=d1)  # −max(m, 0)
        np.exp(d1, out=d1)
        q = np.add(e, 1.0, out=a)
        np.reciprocal(q, out=q)  # 1/(1 + e)
        d1 *= q  # σ(−m)
        d1 *= y
        np.negative(d1, out=d1)
        np.log1p(e, out=value)
        value += r

    def steer_at_zero(
        self, y: np.ndarray, out: tuple[np.ndarray, np.ndarray], work: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """:meth:`steer` at t = 0 on every row: the same bits, without its passes.

        For the logistic loss every m = y·0 is ±0, so :meth:`steer` forms e = 1,
        max(−m, 0) = ±0 and 1/(1 + e) = 0.5, all exactly: φ = log1p(1) (the same call on
        the same value) and φ′ = −0.5·y (exact). The other losses: :meth:`steer` on zeros.
        """
        value, d1 = out
        if self.name != "logistic":
            d1.fill(0.0)  # t = 0, read before φ′ is written over it
            self.steer(d1, y, out, work)
            return
        value.fill(float(np.log1p(np.ones(1))[0]))
        np.multiply(y, -0.5, out=d1)

    def curvature(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """φ″ at t, for Newton's Hessians only (never certified).

        For the logistic loss σ(m)σ(−m) = e·q² (e = e^{−|m|}, q = 1/(1 + e), m = y·t).
        The other losses: :meth:`derivatives`.
        """
        if self.name != "logistic":
            return np.asarray(self.derivatives(t, y)[2], dtype=float)
        e = np.multiply(y, t)
        np.abs(e, out=e)
        np.negative(e, out=e)
        np.exp(e, out=e)
        q = np.add(e, 1.0)
        np.reciprocal(q, out=q)
        e *= q
        e *= q
        return np.asarray(e)

    def third(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """φ‴ at t, for Newton's third-order correction only (never certified).

        For the logistic loss the derivative of φ″ = σ(m)σ(−m) in t:
        y·φ″·(σ(−m) − σ(m)) = −y·sign(m)·e·q²·(1 − e)·q (e, q of :meth:`curvature`).
        The other losses are piecewise quadratic: 0 (no correction).
        """
        if self.name != "logistic":
            return np.zeros(np.shape(t))
        m = np.multiply(y, t)
        e = np.exp(-np.abs(m))
        q = 1.0 / (1.0 + e)
        return np.asarray(-y * np.sign(m) * e * q * q * q * (1.0 - e))

    def change(
        self,
        t: np.ndarray,
        t_new: np.ndarray,
        y: np.ndarray,
        old: np.ndarray,
        new: np.ndarray,
        work: np.ndarray,
    ) -> tuple[float, float]:
        """Σ(φ(t_new; y) − φ(t; y)) summed per row, without the cancellation of two large values.

        ``old`` and ``new`` are the two values of φ; ``work`` a scratch array of the
        rows' length. Also returns the size of what was subtracted, Σ(|old| + |new|)
        (the scale of the change's rounding error).

        A Huber-regression row whose residual stays on one linear piece changes by
        κ·sign(r)·(t_new − t) exactly as the loss does; subtracting the two values of
        κ|r| − κ²/2 lost every digit when |r| was huge (one label of 1e20 gave φ ≈ 1e20,
        whose ulp swamps any decrease: the line search never passed and the fit raised
        after its charge, depending on that one label). Elsewhere the values are
        subtracted as they are (bounded margins for logistic and Huber SVM: |t| ≤ R‖θ‖).
        """
        if self.name in ("logistic", "huber_svm"):  # φ ≥ 0: Σ|φ| = Σφ
            total = float(np.subtract(new, old, out=work).sum())
            return total, float(old.sum()) + float(new.sum())
        out = np.asarray(new - old, dtype=float)
        size_rows = np.abs(old) + np.abs(new)
        kappa = self.width
        r, r_new = t - y, t_new - y
        above = (r > kappa) & (r_new > kappa)
        below = (r < -kappa) & (r_new < -kappa)
        step = t_new - t
        out = np.where(above, kappa * step, np.where(below, -kappa * step, out))
        size_rows = np.where(above | below, np.abs(kappa * step), size_rows)
        return float(out.sum()), float(size_rows.sum())

    def derivative_error(self, t: np.ndarray, y: np.ndarray, d1: np.ndarray) -> np.ndarray:
        """A bound on the rounding error of φ′ as :meth:`derivatives` computes it at t.

        expit, clip and products: a few units in the last place of φ′ (8u|φ′|). The Huber
        SVM's −(1 + h − m)/(2h), where evaluated, also carries the absolute error of
        1 + h − m, 2u(1 + h + |m|), not small relative to φ′ near the region's edge
        (elsewhere φ′ is an exact constant; a t on the other side of a kink is covered by
        :meth:`curvature_bound`).
        """
        bound = 8 * _UNIT * np.abs(d1) + 1e-300
        if self.name == "huber_svm":  # only where the quadratic piece was evaluated
            m = np.abs(t)  # |y·t| with y = ±1
            inside = np.abs(1 - y * t) <= self.width
            edge = 2.02 * _UNIT * (1 + self.width + m) / (2 * self.width)
            bound = bound + np.where(inside, edge, 0.0)
        return np.asarray(bound)

    def curvature_bound(self, t: np.ndarray, y: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """The supremum of φ″ over [t − radius, t + radius], per row.

        How far φ′ can move with t there (a local Lipschitz constant of φ′, for the
        rounding bound of the gradient).
        """
        if self.name == "logistic":  # φ″ = σ(s)σ(−s) = e/(1 + e)², e = e^{−s}, falls in |s|
            e = np.exp(-np.maximum(np.abs(t) - radius, 0.0))
            q = 1.0 / (1.0 + e)
            return np.asarray(e * q * q * (1 + 1e-12))  # a few u, inside the 1e-12
        if self.name == "huber_svm":  # φ″ = c on |1 − y·s| ≤ h, else 0
            gap = np.abs(1 - y * t) - self.width
        else:  # φ″ = 1 on |s − y| ≤ κ, else 0
            gap = np.abs(t - y) - self.width
        return np.where(gap <= radius, self.c, 0.0)
