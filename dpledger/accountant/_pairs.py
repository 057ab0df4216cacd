"""Dominating pairs of the basic mechanisms: hockey-stick curves and loss distributions.

For a pair (P, Q) with privacy loss L = log(P/Q) evaluated under P, each class gives

* ``hockey(eps)`` — δ(ε) = E_P[(1 − e^{ε−L})₊] (+ the mass where Q = 0) for real ε;
* ``p_at_least(t)`` / ``q_at_least(t)`` — P(L ≥ t) and Q(L ≥ t) (Q-probabilities of the
  same loss function), used for the lower-bound discretisation and subsampling;
* ``infinite_mass`` — P-mass where Q = 0 (loss +∞).

Sources: Gaussian — Balle & Wang 2018, Thm 8 (L ~ N(μ²/2, μ²) under P); Laplace —
L = (|x − ε₀| − |x|)/1 for Lap(0, 1) vs Lap(ε₀, 1), δ(ε) = 1 − e^{(ε−ε₀)/2} on [−ε₀, ε₀];
randomized response — its three output probabilities; Poisson subsampling with rate γ —
remove direction ((1−γ)B + γA ‖ B) and add direction (B ‖ (1−γ)B + γA), whose hockey-stick
curves follow from the base pair's (Balle, Barthe & Gaboardi 2018, Thm 2 — "advanced joint
convexity"; Zhu, Dong & Wang 2022, §5). The base pairs are symmetric, so H(B‖A) = H(A‖B).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpledger._numerics import round_up

__all__ = [
    "AtomsPair",
    "CellMeasure",
    "GaussianPair",
    "LaplacePair",
    "MonotoneLoss",
    "Pair",
    "RRPair",
    "SubsampledPair",
    "discrete_gaussian_pair",
    "discrete_laplace_pair",
]


@dataclass(frozen=True)
class MonotoneLoss:
    """The loss as a smooth monotone function of an output x with a smooth Q-density.

    Lets the connect-the-dots masses be computed as integrals of non-negative functions
    (no differences of nearly equal numbers); see :func:`dpledger.accountant.pld`.
    """

    loss: Callable[[np.ndarray], np.ndarray]  # L(x)
    inverse: Callable[[np.ndarray], np.ndarray]  # x(ℓ) (±inf outside the loss range)
    q_density: Callable[[np.ndarray], np.ndarray]  # density of x under Q
    #: the outputs integrated: Q's density stays a normal float inside (|x| ≤ 37 for a
    #: standard normal), so that quadrature weights keep their relative precision
    x_range: tuple[float, float]
    increasing: bool
    #: a bound on the P-mass of the outputs outside ``x_range``, which connect-the-dots
    #: sends to +∞ (dropping it was unsound: 5.9e-179 for μ = 10, ε(1e-200) 5 % low)
    beyond: float = 0.0


_X_EDGE = 37.0
"""|x| up to which the standard normal density (≥ 2.5e-298) stays a normal float."""


def _normal_outside(lo: float, hi: float, mean: float = 0.0) -> float:
    """An upper bound on P(X < lo) + P(X > hi) for X ~ N(mean, 1) (accurate tails)."""
    tails = float(special.ndtr(lo - mean)) + float(special.ndtr(mean - hi))
    return tails * (1 + 1e-10) + 1e-300


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    # in place: the same operations as exp(−0.5·x·x)/√(2π), two temporaries fewer (the
    # quadrature evaluates it at ~10⁵ nodes per release)
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return np.asarray(np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))
    out = -0.5 * x
    out *= x
    np.exp(out, out=out)
    out /= math.sqrt(2 * math.pi)
    return out


@dataclass(frozen=True)
class CellMeasure:
    """A pair's loss as a measure on one lattice cell (exact composition: see below).

    For a pair with losses in [−g, g], U = (g − L)/2 lies in [0, g]; in cell units
    σ = U/g ∈ [0, 1] the tilted law ν = e^{gσ}·P_σ is ``atom``·(δ₀ + δ₁) +
    ``lebesgue``·λ[0, 1]. The law of a composition's ΣUᵢ is e^{−s} times the
    convolution of the ν's (the tilt factorises over independent releases), which
    :mod:`dpledger.accountant.pld._lattice` computes exactly.
    """

    step: float  # g, the lattice step in loss units (the pair's largest loss)
    atom: float  # weight of each of δ₀ and δ₁
    lebesgue: float  # weight of Lebesgue measure on [0, 1]
    #: a bound on the relative error of ``atom`` and ``lebesgue``, in units of u = 2⁻⁵³
    roundings: int = 0


class Pair(abc.ABC):
    """A dominating pair (P, Q)."""

    infinite_mass: float = 0.0
    #: True where ``infinite_mass`` is only the far tail of a symmetric pair, put at +∞ for
    #: an upper bound (not a δ atom): Poisson sampling may then carry it (SubsampledPair)
    tail_at_infinity: bool = False
    #: (lowest, highest) finite loss value (may be ±inf)
    support: tuple[float, float] = (-math.inf, math.inf)
    #: for a bounded loss with a smooth part and atoms at a few loss values only: those
    #: values (a grid through them discretises the atoms exactly); None otherwise
    atom_losses: tuple[float, ...] | None = None

    def monotone(self) -> MonotoneLoss | None:
        """The loss as a monotone function of a smooth output, where it is one."""
        return None

    def subsampled_monotone(self, rate: float, direction: str) -> MonotoneLoss | None:
        """:meth:`monotone` of this pair Poisson-subsampled (see :class:`SubsampledPair`)."""
        return None

    def finite_atoms(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(losses, P-masses) of the finite part, sorted by loss, if it has finitely many."""
        return None

    def cell_measure(self) -> CellMeasure | None:
        """The loss as atoms at the ends of one lattice cell plus Lebesgue measure on it."""
        return None

    @abc.abstractmethod
    def hockey(self, eps: np.ndarray) -> np.ndarray:
        """δ(ε) for an array of real ε."""

    @abc.abstractmethod
    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        """P(L ≥ t) (finite losses only)."""

    @abc.abstractmethod
    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        """Q(L ≥ t)."""


def _mixture_threshold(s: np.ndarray, g: float) -> tuple[np.ndarray, np.ndarray]:
    """(v, ok): the v with log(1 − γ + γe^v) = s, where one exists (ok: s > log(1 − γ)).

    v = log((e^s − 1 + γ)/γ), evaluated without avoidable cancellation: log1p(expm1(s)/γ)
    (e^s − 1 lost every digit of a small s: s = 1e-17 at γ = 1e-10 gave 0, not 1e-7),
    except for s < 0 with γ ≥ ½, where e^s − (1 − γ) is better (1 − γ is exact there,
    expm1(s) ≈ −1 is not), and beyond the float range of expm1(s)/γ (large s, tiny γ),
    s + log(1 − (1 − γ)e^{−s}) − log γ. Where no v exists, v is −∞.
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        shifted = np.expm1(s)
        near_one = (s < 0) & (g >= 0.5)
        numerator = np.where(near_one, np.exp(s) - (1 - g), shifted + g)
        ok = numerator > 0
        v = np.full_like(s, -np.inf)
        v[ok] = np.where(near_one[ok], np.log(numerator[ok] / g), np.log1p(shifted[ok] / g))
        big = ok & np.isposinf(v)
        if np.any(big):
            top = s[big]
            v[big] = top + np.log1p(-(1 - g) * np.exp(-top)) - math.log(g)
    return v, ok


class GaussianPair(Pair):
    """N(μ, 1) vs N(0, 1): L ~ N(μ²/2, μ²) under P, N(−μ²/2, μ²) under Q."""

    def __init__(self, mu: float) -> None:
        self.mu = mu

    def monotone(self) -> MonotoneLoss:
        # Q = N(0, 1), L(x) = μx − μ²/2
        mu = self.mu
        return MonotoneLoss(
            loss=lambda x: mu * x - mu * mu / 2,
            inverse=lambda t: (t + mu * mu / 2) / mu,
            q_density=_normal_pdf,
            x_range=(-_X_EDGE, _X_EDGE),
            increasing=True,
            beyond=_normal_outside(-_X_EDGE, _X_EDGE, mu),  # P = N(μ, 1)
        )

    def subsampled_monotone(self, rate: float, direction: str) -> MonotoneLoss:
        # A = N(μ, 1), B = N(0, 1), v(x) = μx − μ²/2 = L_AB(x) and
        # log(1 − γ + γe^v) = log1p(γ·expm1(v)).
        mu, g = self.mu, rate

        def mixed(x: np.ndarray) -> np.ndarray:
            v = np.asarray(mu * x - mu * mu / 2, dtype=float)
            with np.errstate(over="ignore"):
                out = np.asarray(np.expm1(v), dtype=float)  # a new array, worked on in place
                out *= g
                np.log1p(out, out=out)
            # beyond v ≈ 709 expm1 overflows: there 1 − γ + γe^v = γe^v(1 + (1 − γ)e^{−v}/γ)
            far = v > 700.0
            if np.any(far):
                vf = v[far]
                out[far] = vf + math.log(g) + np.log1p((1.0 - g) * np.exp(-vf) / g)
            return np.asarray(out)

        def v_of(s: np.ndarray) -> np.ndarray:
            # the v with log(1 − γ + γe^v) = s; −inf where s ≤ log(1 − γ)
            return _mixture_threshold(s, g)[0]

        if direction == "remove":  # Q = B, P = (1 − γ)B + γA
            return MonotoneLoss(
                loss=mixed,
                inverse=lambda t: (v_of(t) + mu * mu / 2) / mu,
                q_density=_normal_pdf,
                x_range=(-_X_EDGE, _X_EDGE),
                increasing=True,
                beyond=(1 - g) * _normal_outside(-_X_EDGE, _X_EDGE)
                + g * _normal_outside(-_X_EDGE, _X_EDGE, mu),
            )
        x_range = (-_X_EDGE, mu + _X_EDGE)  # Q's density is normal while one part is
        return MonotoneLoss(  # Q = (1 − γ)B + γA, L = −log(1 − γ + γe^v); P = B
            loss=lambda x: -mixed(x),
            inverse=lambda t: (v_of(-t) + mu * mu / 2) / mu,
            q_density=lambda x: (1 - g) * _normal_pdf(x) + g * _normal_pdf(x - mu),
            x_range=x_range,
            increasing=False,
            beyond=_normal_outside(*x_range),
        )

    def hockey(self, eps: np.ndarray) -> np.ndarray:
        mu = self.mu
        eps = np.asarray(eps, dtype=float)
        a = mu / 2 - eps / mu
        b = -mu / 2 - eps / mu
        out = np.empty_like(eps)
        direct = a >= 0
        # direct form where Φ(a) ≥ 1/2 (no damaging cancellation)
        out[direct] = special.ndtr(a[direct]) - np.exp(eps[direct] + special.log_ndtr(b[direct]))
        # erfcx form elsewhere: δ = ½ e^{−a²/2} [erfcx(−a/√2) − erfcx(−b/√2)]
        ind = ~direct
        aa, bb = a[ind], b[ind]
        diff = special.erfcx(-aa / math.sqrt(2)) - special.erfcx(-bb / math.sqrt(2))
        out[ind] = 0.5 * np.exp(-aa * aa / 2) * diff
        return np.asarray(np.clip(out, 0.0, 1.0))

    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        return np.asarray(special.ndtr(self._standardised(t, 1.0)))

    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        return np.asarray(special.ndtr(self._standardised(t, -1.0)))

    def _standardised(self, t: np.ndarray, sign: float) -> np.ndarray:
        """(±μ²/2 − t)/μ: L's mean under P (+) or Q (−), less t, over its deviation μ.

        As μ/2 − t/μ where μ² would overflow (μ beyond 1e150; a raw OverflowError before).
        """
        t = np.asarray(t, dtype=float)
        mu = self.mu
        if mu < 1e150:
            return np.asarray((sign * mu**2 / 2 - t) / mu)
        return np.asarray(sign * (mu / 2) - t / mu)


class LaplacePair(Pair):
    """Lap(0, 1) vs Lap(ε₀, 1): losses in [−ε₀, ε₀], atoms at both ends."""

    def __init__(self, epsilon: float) -> None:
        self.e0 = epsilon
        self.support = (-epsilon, epsilon)
        self.atom_losses = (-epsilon, epsilon)

    def cell_measure(self) -> CellMeasure:
        # P(L = ε₀) = ½ (U = 0), P(L = −ε₀) = ½e^{−ε₀} (U = ε₀, tilted: ½), and the
        # density ¼e^{−(ε₀−l)/2} of L between is ½e^{−u} in U = (ε₀ − l)/2, tilted: ½ du =
        # (ε₀/2) dσ. ε₀/2 is exact unless ε₀ is subnormal (then one rounding).
        half = self.e0 / 2
        return CellMeasure(self.e0, 0.5, half, roundings=0 if half * 2 == self.e0 else 1)

    def hockey(self, eps: np.ndarray) -> np.ndarray:
        e0 = self.e0
        eps = np.asarray(eps, dtype=float)
        middle = -np.expm1((eps - e0) / 2)
        low = -np.expm1(eps)
        return np.asarray(np.where(eps >= e0, 0.0, np.where(eps <= -e0, low, middle)))

    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        e0 = self.e0
        t = np.asarray(t, dtype=float)
        # P(L = ε₀) = ½; on (−ε₀, ε₀): P(L ≥ t) = 1 − ½e^{−(ε₀−t)/2}; P(L = −ε₀) = ½e^{−ε₀}
        inside = 1 - 0.5 * np.exp(-(e0 - t) / 2)
        return np.asarray(
            np.where(t > e0, 0.0, np.where(t <= -e0, 1.0, np.where(t == e0, 0.5, inside)))
        )

    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        e0 = self.e0
        t = np.asarray(t, dtype=float)
        inside = 0.5 * np.exp(-(e0 + t) / 2)
        at_top = 0.5 * math.exp(-e0)
        return np.asarray(
            np.where(t > e0, 0.0, np.where(t <= -e0, 1.0, np.where(t == e0, at_top, inside)))
        )


class RRPair(Pair):
    """k-ary randomized response (ε₀-DP); k = 2 is the worst case of pure ε₀-DP.

    ``keep`` scales the finite part and ``infinite_mass`` = 1 − keep models an (ε, δ)
    release as the canonical pair of Kairouz, Oh & Viswanath 2015.
    """

    def __init__(self, epsilon: float, categories: int = 2, delta: float = 0.0) -> None:
        self.e0 = epsilon
        norm = math.exp(epsilon) + categories - 1
        self.p, self.q = math.exp(epsilon) / norm, 1.0 / norm
        self.middle = (categories - 2) / norm
        self.keep = 1.0 - delta
        self.infinite_mass = delta
        self.support = (-epsilon, epsilon)
        self.atom_losses = (-epsilon, 0.0, epsilon)

    def cell_measure(self) -> CellMeasure | None:
        if self.middle > 0 or self.infinite_mass > 0:
            return None  # a loss of 0 (k > 2) is half a cell; δ > 0 is not on the lattice
        # L = ε₀ with P-mass p = 1/(1 + e^{−ε₀}) (U = 0), L = −ε₀ with 1 − p (U = ε₀,
        # tilted: e^{ε₀}(1 − p) = p). math.exp is within 1 ulp: p within 4u, say 6.
        return CellMeasure(self.e0, 1.0 / (1.0 + math.exp(-self.e0)), 0.0, roundings=6)

    def _atoms(self) -> list[tuple[float, float, float]]:
        """(loss, P-mass, Q-mass) of the finite part."""
        k = self.keep
        atoms = [(self.e0, k * self.p, k * self.q), (-self.e0, k * self.q, k * self.p)]
        if self.middle > 0:
            atoms.append((0.0, k * self.middle, k * self.middle))
        return atoms

    def finite_atoms(self) -> tuple[np.ndarray, np.ndarray]:
        atoms = sorted(self._atoms())
        return np.array([a[0] for a in atoms]), np.array([a[1] for a in atoms])

    def hockey(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        out = np.full_like(eps, self.infinite_mass)
        for loss, p_mass, _ in self._atoms():
            out = out + p_mass * np.clip(-np.expm1(eps - loss), 0.0, None)
        return np.asarray(np.clip(out, 0.0, 1.0))

    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return sum(np.where(loss >= t, p, 0.0) for loss, p, _ in self._atoms())  # type: ignore[return-value]

    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return sum(np.where(loss >= t, q, 0.0) for loss, _, q in self._atoms())  # type: ignore[return-value]


class AtomsPair(Pair):
    """A pair with finitely many loss values: (loss, P-mass, Q-mass) atoms (vectorised)."""

    def __init__(self, atoms: list[tuple[float, float, float]]) -> None:
        losses, p, q = (np.array(column, dtype=float) for column in zip(*atoms, strict=True))
        self._set(losses, p, q)

    @classmethod
    def from_arrays(cls, losses: np.ndarray, p: np.ndarray, q: np.ndarray) -> AtomsPair:
        """The pair with atoms (losses[i], p[i], q[i])."""
        pair = cls.__new__(cls)
        pair._set(np.asarray(losses, float), np.asarray(p, float), np.asarray(q, float))
        return pair

    def _set(self, losses: np.ndarray, p: np.ndarray, q: np.ndarray) -> None:
        order = np.argsort(losses, kind="stable")
        self.losses, self.p, self.q = losses[order], p[order], q[order]
        self.support = (float(self.losses[0]), float(self.losses[-1]))
        # suffix sums, small terms first where they are (the tails): Σ_{i≥j}
        self._p_tail = np.append(np.cumsum(self.p[::-1])[::-1], 0.0)
        self._q_tail = np.append(np.cumsum(self.q[::-1])[::-1], 0.0)

    def finite_atoms(self) -> tuple[np.ndarray, np.ndarray]:
        return self.losses, self.p

    @property
    def atoms(self) -> list[tuple[float, float, float]]:
        """The atoms, sorted by loss."""
        return list(zip(self.losses.tolist(), self.p.tolist(), self.q.tolist(), strict=True))

    def hockey(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        out = np.empty_like(eps)
        for i, e in enumerate(eps.ravel()):
            j = int(np.searchsorted(self.losses, e, side="right"))
            finite = np.sum(self.p[j:] * -np.expm1(e - self.losses[j:]))
            out.ravel()[i] = self.infinite_mass + finite
        return np.asarray(np.clip(out, 0.0, 1.0))

    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        j = np.searchsorted(self.losses, np.asarray(t, dtype=float), side="left")
        return np.asarray(self._p_tail[j])

    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        j = np.searchsorted(self.losses, np.asarray(t, dtype=float), side="left")
        return np.asarray(self._q_tail[j])


def discrete_gaussian_pair(
    sigma: float, shift: int, *, dominating: bool = False
) -> AtomsPair | None:
    """N_Z(0, σ²) vs N_Z(shift, σ²) on the integers (None if too wide to enumerate).

    The loss at x is ((x − s)² − x²)/(2σ²) = (s² − 2sx)/(2σ²). Like
    :func:`discrete_laplace_pair`, a one-dimensional integer shift is *attained*, so this
    pair gives lower bounds for the discrete Gaussian (Canonne, Kamath & Steinke 2020).
    Atoms with P- and Q-mass below 1e-30 of the mode are left out, and so is everything
    beyond ±(12σ + shift + 1): dropping mass lowers δ, which is valid for a lower bound
    only. With ``dominating`` (for upper bounds) that P-mass goes to loss +∞ instead —
    bounded from above, the tail by a geometric series — so every δ can only rise. (It
    was dropped for upper bounds too: the PLD gave δ(10) = 0 for σ = 2, exactly
    3.2e-89, and ε(1e-40) = 5.875 where the exact ε is 6.5.)
    """
    if shift <= 0:
        return AtomsPair([(0.0, 1.0, 1.0)])
    if not 2 * sigma * sigma > 1e-300:
        return None  # σ² underflows: a point mass, not enumerable here (other methods apply)
    half = math.ceil(12.0 * sigma) + shift + 1  # e^{-72} of the mode at the ends
    if half > 2_000_000:
        return None
    x = np.arange(-half, half + 1, dtype=float)
    log_w = -(x * x) / (2 * sigma * sigma)
    norm = np.exp(log_w - log_w.max()).sum()
    p = np.exp(log_w - log_w.max()) / norm
    log_q = -((x - shift) ** 2) / (2 * sigma * sigma)
    q = np.exp(log_q - log_q.max()) / norm
    keep = (p > 1e-30 * p.max()) | (q > 1e-30 * q.max())
    if not keep.any():
        return None
    losses = (shift * shift - 2 * shift * x[keep]) / (2 * sigma * sigma)
    pair = AtomsPair.from_arrays(losses, p[keep], q[keep])
    if dominating:
        # P-mass beyond ±half, Σ_{|x|>half} e^{−x²/2σ²}/norm (the weights are e^{−x²/2σ²}
        # with the mode 1 at x = 0, enumerated, so norm ≥ 1): a geometric series whose
        # ratio is at most e^{−(2(half + 1) + 1)/2σ²}
        two_s2 = 2 * sigma * sigma
        first = math.exp(-((half + 1) ** 2) / two_s2)
        tail = 2 * first / -math.expm1(-(2 * (half + 1) + 1) / two_s2) / norm
        dropped = math.fsum(p[~keep].tolist())
        # a relative margin for the rounding of the masses and of the sums
        pair.infinite_mass = min(1.0, round_up((dropped + tail) * (1 + 1e-9)))
        pair.tail_at_infinity = True
    return pair


def discrete_laplace_pair(scale: float, shift: int) -> AtomsPair | None:
    """DLap(0, t) vs DLap(shift, t) on the integers, P[x] ∝ e^{−|x|/t}.

    The loss (|x − s| − |x|)/t is s/t for x ≤ 0, (s − 2x)/t for 0 < x < s and −s/t for
    x ≥ s. A one-dimensional integer shift is attainable by any integer statistic whose
    sensitivity is at least ``shift``, so this pair gives *lower* bounds for the discrete
    Laplace mechanism; in one dimension it also dominates (see :mod:`.pld`). ``None`` if
    there are too many atoms to enumerate (more than 4 million).
    """
    if shift <= 0:
        return AtomsPair([(0.0, 1.0, 1.0)])
    if shift > 4_000_000:
        return None
    r = math.exp(-1.0 / scale)
    c = -math.expm1(-1.0 / scale) / (1 + r)  # P[X = x] = c·r^{|x|}
    end = 1 / (1 + r)  # P[X ≤ 0] = P[X ≥ 0]
    far = math.exp(-shift / scale) / (1 + r)  # P[X ≥ s] = P[X ≤ −s]
    x = np.arange(1, shift, dtype=float)
    losses = np.concatenate([[shift / scale, -shift / scale], (shift - 2 * x) / scale])
    p = np.concatenate([[end, far], c * np.exp(-x / scale)])
    q = np.concatenate([[far, end], c * np.exp(-(shift - x) / scale)])
    return AtomsPair.from_arrays(losses, p, q)


class SubsampledPair(Pair):
    """Poisson subsampling with rate γ of a symmetric base pair (A, B), one direction.

    * ``"remove"``: P = (1−γ)B + γA, Q = B; L = log(1 − γ + γe^{L_AB}) ≥ log(1 − γ).
    * ``"add"``: P = B, Q = (1−γ)B + γA; L = −log(1 − γ + γe^{L_AB}) ≤ −log(1 − γ).
    """

    def __init__(self, base: Pair, rate: float, direction: str) -> None:
        if base.infinite_mass and not base.tail_at_infinity:
            raise ValueError("internal error: subsampled pairs need a base without δ atoms")
        # An enumerated base (the dominating 1-D discrete Gaussian) may carry P-mass m at
        # loss +∞ (its far tail). Its hockey-stick curve includes m, and the amplification
        # identities below hold for any symmetric pair, atoms at ±∞ included: "remove"
        # gets γ·H_A‖B, "add" (1 − e^ε(1 − γ))·H_B‖A, H_B‖A ≤ H_A‖B by symmetry of the pair
        # it dominates. The P(L ≥ t) below count finite losses only, as everywhere.
        self.base, self.rate, self.direction = base, rate, direction
        edge = math.log1p(-rate) if rate < 1 else -math.inf
        self.support = (edge, math.inf) if direction == "remove" else (-math.inf, -edge)

    def monotone(self) -> MonotoneLoss | None:
        return self.base.subsampled_monotone(self.rate, self.direction)

    def hockey(self, eps: np.ndarray) -> np.ndarray:
        g = self.rate
        eps = np.asarray(eps, dtype=float)
        out = np.zeros_like(eps)
        if self.direction == "remove":
            inner, ok = _mixture_threshold(eps, g)
            out[ok] = g * self.base.hockey(inner[ok])
            out[~ok] = -np.expm1(eps[~ok])
        else:
            scale = 1 - np.exp(eps) * (1 - g)
            ok = scale > 0
            inner = eps[ok] + math.log(g) - np.log(scale[ok])
            out[ok] = scale[ok] * self.base.hockey(inner)
        return np.asarray(np.clip(out, 0.0, 1.0))

    def _base_threshold(self, t: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
        """U with L ≥ t ⇔ sign·(L_AB − u) ≥ 0, and where such u exists."""
        return _mixture_threshold(sign * t, self.rate)

    def p_at_least(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        g = self.rate
        if self.direction == "remove":
            u, ok = self._base_threshold(t, 1.0)
            out = np.ones_like(t)
            out[ok] = (1 - g) * self.base.q_at_least(u[ok]) + g * self.base.p_at_least(u[ok])
            return out
        # add: L ≥ t ⇔ L_AB ≤ u (u = log((e^{−t} − 1 + γ)/γ)); P = B
        u, ok = self._base_threshold(t, -1.0)
        out = np.zeros_like(t)
        out[ok] = 1 - self.base.q_at_least(np.nextafter(u[ok], np.inf))
        return out

    def q_at_least(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        g = self.rate
        if self.direction == "remove":
            u, ok = self._base_threshold(t, 1.0)
            out = np.ones_like(t)
            out[ok] = self.base.q_at_least(u[ok])
            return out
        u, ok = self._base_threshold(t, -1.0)
        out = np.zeros_like(t)
        above = np.nextafter(u[ok], np.inf)
        finite_a = 1 - self.base.infinite_mass  # A's mass at +∞ is never at or below u
        out[ok] = (1 - g) * (1 - self.base.q_at_least(above)) + g * np.maximum(
            finite_a - self.base.p_at_least(above), 0.0
        )
        return out
