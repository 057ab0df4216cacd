"""Private quantiles: the K-norm gradient mechanism in one dimension, sampled exactly.

For the τ-quantile the loss ℓ(θ) = Σᵢ ρ_τ(xᵢ − θ) has (sub)gradient
g(θ) = Σᵢ (1{xᵢ < θ} − τ) = #{xᵢ < θ} − τn. KNG (Reimherr & Awan 2019) releases θ with
density ∝ exp(−c·|g(θ)|), c = ε/(2Δ), on the declared range [lo, hi], Δ the sensitivity
of g: one record changes g by at most 1 under replace-one and by max(τ, 1 − τ) under
add/remove. This is the exponential mechanism with utility −|g|, so it is
ε-bounded-range (Durfee & Rogers 2019) — ε-DP and ε²/8-zCDP — and is charged as
:class:`~dpledger.events.BoundedRange`. Several quantiles are several releases, each
charged (the default splits the budget evenly); values outside the declared range are
clipped to it (never read from the data).

**Exact sampling.** Floating-point samplers of DP mechanisms can leak the data through
which floats they can and cannot return (Mironov 2012), so the default draw is exact in
distribution, given uniform random bits (in the spirit of Canonne, Kamath & Steinke
2020). The density is constant on the n + 1 intervals [eₖ, eₖ₊₁) between lo, the sorted
points and hi, where #{x < θ} = k; interval k has mass wₖ = Lₖ·exp(−c·|k − τn|), Lₖ its
exact length (see :class:`_KNGSampler` for the proof):

1. *The interval, by von Neumann rejection.* Floating-point log-weights relative to a
   reference index carry a *certified* error bound (64 ulp per ``np.log``/``np.exp``,
   one rounding per arithmetic operation, an exponent error that does not grow with
   |k − τn|). From them come integer proposal weights vₖ ≥ wₖ/(Z·g) — for one constant
   Z·g and every k, proved, not hoped — summing to T < 2⁶². k is proposed with
   probability vₖ/T (a uniform integer below T: exact) and accepted with probability
   ρₖ = wₖ/(Z·g·vₖ) ≤ 1, so an accepted k has probability exactly ∝ wₖ. The acceptance
   compares a uniform V, its bits drawn 64 at a time, with ρₖ: almost always the float
   bounds decide it; otherwise (probability ~10⁻¹⁰) ρₖ is enclosed by an exact integer
   interval evaluation of exp at increasing precision and V gets more bits, until the
   comparison is certified. Proposals are rejected with probability ~10⁻¹⁰ (~10⁻³ for
   ε/(2Δ) near its cap 2⁴⁰).
2. *The point inside, rounded down.* θ = eₖ + Lₖ·U with U uniform on [0, 1) is exact;
   the release is ⌊θ⌋, the largest float ≤ θ — a post-processing of an exact draw, so it
   costs nothing. U's bits are drawn lazily until every θ they allow has the same floor,
   with exact integer arithmetic.

The timing of a draw (how many proposals, how many refinement rounds) depends on the
data and is not covered by the guarantee; its output is. How many random bits a draw
consumes also varies, but the bits after it are fresh and independent (a stopping time
of i.i.d. bits), so later draws are exact too. A rate c above 2⁴⁰ (ε per quantile above
~10¹²) is refused before any charge: the certificate has a c·u term.

``by``/``groups`` release one quantile per declared group for each level, all charged as
one release per level (see :func:`quantile` for the proof).

``mechanism="exponential"`` releases instead the exponential mechanism with utility
−Σρ_τ(xᵢ − θ) (McSherry & Talwar 2007), the baseline KNG improves on: piecewise
exponential between sorted points. It is drawn in floating point (Gumbel-max over the
intervals' log-masses, then an inverted truncated-exponential CDF) and warns
:class:`~dpledger.errors.FloatingPointWarning`: certifying its log-masses would need the
exact loss Σρ_τ(xᵢ − eₖ), an exact sum over the data for every proposal.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, cast

import numpy as np

from dpledger._numerics import float_down, float_up
from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_positive,
    check_probability,
    check_real,
    check_reals,
)
from dpledger.accountant import events as ev
from dpledger.algorithms._query_inputs import _groups, _pandas, _shape
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.ledger.receipts import check_label
from dpledger.mechanisms.base import warn_floating_point

__all__ = ["quantile"]

_MAX_WIDTH = 2.0**900
#: the largest rate c = ε/(2Δ) the exact sampler certifies (its exponent error has a c·u term)
_MAX_RATE = 2.0**40
#: the unit roundoff of float64
_U = 2.0**-53
#: log-weights (relative to the largest) below this are "flushed": only bounded above
_FLUSH = -690.0
#: a flushed weight is below 2**_FLUSHED_LOG2 (e^−680 < 2^−980)
_FLUSHED_LOG2 = -980
#: random bits per step of the lazy comparisons
_WORD = 64
#: the float certificates decide most comparisons; off, every one takes the exact path (tests)
_FAST_PATH = True


def _intervals(values: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The edges lo, x₍₁₎, …, x₍ₙ₎, hi of sorted ``values`` and the n + 1 lengths between."""
    edges = np.concatenate([[lo], values, [hi]])
    return edges, np.diff(edges)


def _bits(rng: np.random.Generator) -> int:
    """``_WORD`` uniform random bits, as a non-negative int.

    ``Generator.integers`` over the full 64-bit range is the bit generator's next 64-bit
    word (two words of a 32-bit one); ``random_raw`` would not be (32 bits on MT19937).
    """
    return int(rng.integers(0, 1 << 64, dtype=np.uint64)) >> (64 - _WORD)


def _at_most(a: int, a_exp: int, b: int, b_exp: int) -> bool:
    """Exactly: a·2^a_exp ≤ b·2^b_exp, for ints a, b ≥ 0 (exponents of any size)."""
    if a == 0:
        return True
    if b == 0:
        return False
    top_a, top_b = a.bit_length() + a_exp, b.bit_length() + b_exp  # 2^(top−1) ≤ value < 2^top
    if top_a != top_b:
        return top_a < top_b
    shift = a_exp - b_exp  # |shift| ≤ the difference of the bit lengths: small
    return (a << shift) <= b if shift >= 0 else a <= (b << -shift)


def _exp_taylor(y: int, wp: int) -> tuple[int, int]:
    """(S, J): |S − e^{y/2^wp}·2^wp| ≤ 2J + 4 for |y| ≤ 2^(wp−1), in integer arithmetic.

    Terms tⱼ = tⱼ₋₁·y/(j·2^wp) truncated toward zero: each computed term is within 2 units
    of the true one (the error halves and gains at most 1 per step), and once a term
    truncates to 0 the true tail is below 4 units (terms at least halve).
    """
    term = total = 1 << wp
    j = 0
    while term:
        j += 1
        product = term * y
        term = abs(product) // (j << wp)
        term = term if product >= 0 else -term
        total += term
    return total, j


def _exp_enclosure(x: Fraction, precision: int) -> tuple[int, int, int]:
    """Integers (lo, hi, e) with lo·2^e ≤ exp(x) ≤ hi·2^e, (hi − lo)/lo ≈ 2^−precision.

    Rigorous integer interval arithmetic (no library rounding claims): exp(x) =
    exp(x/2^s)^(2^s) with |x/2^s| ≤ 1/2; x/2^s is rounded outward to ``wp`` bits (exp is
    increasing), the Taylor sum bounded by :func:`_exp_taylor`, then squared s times with
    the lower end rounded down and the upper end up.
    """
    num, den = x.numerator, x.denominator
    s = max(0, abs(num).bit_length() - den.bit_length() + 2)  # |x| < 2^(s−1)
    wp = precision + s + 32
    y_lo = (num << wp) // (den << s)
    y_hi = -((-num << wp) // (den << s))
    lo, terms_lo = _exp_taylor(y_lo, wp)
    hi, terms_hi = _exp_taylor(y_hi, wp)
    lo, hi, e = lo - 2 * terms_lo - 4, hi + 2 * terms_hi + 4, -wp
    for _ in range(s):
        lo, hi, e = lo * lo, hi * hi, 2 * e
        drop = max(0, hi.bit_length() - wp - 8)
        lo, hi, e = lo >> drop, -((-hi) >> drop), e + drop
    return lo, hi, e


def _floor_float(num: int, shift: int) -> float:
    """The largest float ≤ num/2^shift (Python's int division is correctly rounded)."""
    value = num / (1 << shift)
    top, bottom = value.as_integer_ratio()
    if top << shift > num * bottom:
        value = math.nextafter(value, -math.inf)
    return value


def _uniform_floor(a: float, b: float, rng: np.random.Generator) -> float:
    """⌊a + (b − a)·U⌋ (the largest float below), U exactly uniform on [0, 1), a < b.

    U's bits are drawn ``_WORD`` at a time: with m the bits so far, U ∈ [m, m + 1)/2^bits
    and θ ∈ [θ₀, θ₁); the floor is returned once θ₀'s floor f has θ₁ ≤ next float after f,
    so every θ allowed floors to f. Exact integer arithmetic on the common dyadic grid of
    a and b.
    """
    (pa, qa), (pb, qb) = a.as_integer_ratio(), b.as_integer_ratio()
    t = max(qa, qb).bit_length() - 1  # the finer denominator, 2^t
    start = pa << (t - qa.bit_length() + 1)
    width = (pb << (t - qb.bit_length() + 1)) - start
    m, bits = _bits(rng), _WORD
    while True:
        low = (start << bits) + width * m
        floor = _floor_float(low, t + bits)
        top, bottom = math.nextafter(floor, math.inf).as_integer_ratio()
        if (low + width) * bottom <= top << (t + bits):
            return floor
        m, bits = (m << _WORD) | _bits(rng), bits + _WORD


class _KNGSampler:
    """Exact draws from KNG's density for sorted ``values``, level q, rate c = ε/(2Δ).

    Target: interval k (k = 0..n, k points below it) with probability ∝
    wₖ = Lₖ·exp(−c·dₖ), dₖ = |k − qn|, all exact reals (c and q floats, Lₖ the exact
    difference of two floats).

    **Log-weights.** With K = ⌊qn⌋, φ = qn − K ∈ [0, 1) and Aₖ = |k − K| (exact
    integers), dₖ = Aₖ − σₖφ, σₖ = +1 if k > K else −1. Relative to a reference r,
    Δdₖ = dₖ − d_r = (Aₖ − A_r) − (σₖ − σ_r)φ: an exact integer minus 0 or ±2φ, one
    rounding — its error does not grow with dₖ. Computed: ℓ̂ = log(L̂) (L̂ = fl(Lₖ),
    relative error u = 2⁻⁵³), ŝ = fl(c·Δd̂), ŷ = fl(ℓ̂ − ŝ), μ = max ŷ, ẑ = fl(ŷ − μ) ≤ 0.
    The exact zₖ = log Lₖ − c·Δdₖ − μ (wₖ ∝ e^{zₖ}: the constant is e^{c·d_r + μ}) obeys,
    allowing 64 ulp (128u relative) per ``np.log``:
    |ẑ − z| ≤ 128u·|ℓ̂| + 2u + 3u|ŝ| + uc + u|ŷ| + u|ẑ|. For ẑ ≥ −690 (|ℓ̂| ≤ 745,
    |ŷ| ≤ |μ| + 691, |ŝ| ≤ |ℓ̂| + |ŷ| + ε) this is ≤ δ = u(2¹⁸ + 8|μ| + 2c); for ẑ < −690 it
    is ≤ δ/2 + 6u|ẑ|, so z < −680 and the weight is below 2⁻⁹⁸⁰ ("flushed"). δ ≤ 2⁻¹⁰
    because c ≤ 2⁴⁰ and |μ| ≤ 2³⁶ (r is first ⌊qn⌋; if |μ| is larger, r becomes the
    argmax and the log-weights are recomputed, which bounds |μ| by ~745).

    **Proposal.** With ŵ = exp(ẑ) (64 ulp) and e^{zₖ} ∈ ŵ·[F_lo, F_hi],
    F = 1 ∓ (2δ + 1024u): units vₖ = max(⌈fl(ŵ·F_hi)/g⌉, 1{Lₖ > 0}), g = 2^e chosen so
    that Σvₖ < 2⁶² (int64, exact cumulative sums). So vₖ·g ≥ e^{zₖ} for every k (flushed:
    1 unit ≥ 2⁻⁹⁸⁰/g), and vₖ = 0 exactly when Lₖ = 0 (fl(a − b) = 0 iff a = b).

    **Acceptance.** k proposed with probability vₖ/T is accepted with probability
    ρₖ = e^{zₖ}/(g·vₖ) = Rₖ·exp(−aₖ), Rₖ = Lₖ/(g·vₖ) and aₖ = c·Δdₖ + μ exact rationals:
    P(k, accept) = e^{zₖ}/(g·T) ∝ wₖ, and rounds repeat independently until one accepts
    (von Neumann). V < ρₖ is decided on V's first 64 bits by ŵ·F_lo ≤ e^{zₖ} ≤ ŵ·F_hi
    when they suffice, else by :func:`_exp_enclosure` at doubling precision with 64 more
    bits of V per round, until V's dyadic interval lies on one side of ρₖ's enclosure.
    """

    def __init__(self, values: np.ndarray, q: float, rate: float, lo: float, hi: float):
        n = values.size
        self.edges, lengths = _intervals(values, lo, hi)
        self.rate, self.q, self.n = rate, q, n
        top, bottom = q.as_integer_ratio()  # qn = top·n/bottom, bottom a power of two
        base = top * n // bottom  # ⌊qn⌋
        phi = (top * n - base * bottom) / bottom  # φ = qn − ⌊qn⌋, correctly rounded
        with np.errstate(divide="ignore"):
            ell = np.log(lengths)  # −inf on the empty intervals (weight exactly 0)
        reference = base
        for _ in range(4):  # |μ| > 2³⁶ only for huge rates and ties; 2 passes then suffice
            y = self._log_weights(ell, base, phi, reference)
            top = int(np.argmax(y))
            mu = float(y[top])
            if abs(mu) <= 2.0**36 or top == reference:
                break
            reference = top
        # the bound holds for the y, μ and reference of the last pass, whatever |μ| is
        delta = _U * (2.0**18 + 8.0 * abs(mu) + 2.0 * rate)
        if not delta <= 2.0**-10:  # unreachable for c ≤ 2⁴⁰ (see the class docstring)
            raise RuntimeError(f"internal error: the KNG sampler's bound {delta} is too wide")
        z = y - mu
        w = np.exp(z)
        self.z, self.w, self.reference, self.mu = z, w, reference, mu
        self.f_lo = 1.0 - (2.0 * delta + 1024.0 * _U)
        self.f_hi = 1.0 + (2.0 * delta + 1024.0 * _U)
        # g = 2^e with Σ fl(ŵ·F_hi)/g < 2⁶¹: the (pairwise) float sum is within a factor 2
        self.exponent = math.frexp(2.0 * self.f_hi * float(np.sum(w)))[1] - 61
        units = np.ceil(w * math.ldexp(self.f_hi, -self.exponent))
        self.units = np.maximum(units, lengths > 0).astype(np.int64)
        self.cumulative = np.cumsum(self.units)
        self.total = int(self.cumulative[-1])  # < 2⁶¹ + n + 1

    def _log_weights(self, ell: np.ndarray, base: int, phi: float, reference: int) -> np.ndarray:
        """ŷₖ = fl(ℓ̂ₖ − fl(c·Δd̂ₖ)), Δd relative to ``reference`` (class docstring)."""
        delta_d = np.abs(np.arange(-base, ell.size - base, dtype=float))
        delta_d -= delta_d[reference]  # Aₖ − A_r: exact integers
        if reference > base:  # σ_r = +1: Δd = Aₖ − A_r + 2φ where σₖ = −1
            delta_d[: base + 1] += 2.0 * phi
        else:  # σ_r = −1: Δd = Aₖ − A_r − 2φ where σₖ = +1
            delta_d[base + 1 :] -= 2.0 * phi
        delta_d *= self.rate
        return cast(np.ndarray, ell - delta_d)

    def draw(self, rng: np.random.Generator) -> float:
        """One exact draw (rounded down to a float): an interval, then a point inside."""
        while True:
            k = int(np.searchsorted(self.cumulative, int(rng.integers(0, self.total)), "right"))
            if self._accepts(k, rng):
                return _uniform_floor(float(self.edges[k]), float(self.edges[k + 1]), rng)

    def _accepts(self, k: int, rng: np.random.Generator) -> bool:
        """A Bernoulli(ρₖ) draw: is V < ρₖ = e^{zₖ}/(g·vₖ)?"""
        m = _bits(rng)
        units = int(self.units[k])
        if _FAST_PATH:
            if self.z[k] >= _FLUSH:  # e^{zₖ} ≥ ŵ·F_lo: accept if (m + 1)/2⁶⁴ ≤ ŵ·F_lo/(g·vₖ)
                wn, wd = float(self.w[k]).as_integer_ratio()
                fn, fd = self.f_lo.as_integer_ratio()
                if _at_most((m + 1) * units * wd * fd, self.exponent, wn * fn, _WORD):
                    return True
                wn, wd = float(self.w[k]).as_integer_ratio()
                fn, fd = self.f_hi.as_integer_ratio()
                upper, upper_exp = wn * fn, -((wd * fd).bit_length() - 1)
            else:  # flushed: e^{zₖ} < 2⁻⁹⁸⁰
                upper, upper_exp = 1, _FLUSHED_LOG2
            # reject if m/2⁶⁴ ≥ (an upper bound of e^{zₖ})/(g·vₖ)
            if _at_most(upper, upper_exp + _WORD, m * units, self.exponent):
                return False
        return self._accepts_exactly(k, m, units, rng)

    def _accepts_exactly(self, k: int, m: int, units: int, rng: np.random.Generator) -> bool:
        """V < ρₖ by exact interval arithmetic, V's bits and the precision growing together."""
        length = Fraction(float(self.edges[k + 1])) - Fraction(float(self.edges[k]))
        ratio = length / units  # Rₖ = ratio/2^e
        qn = Fraction(self.q) * self.n
        a = Fraction(self.rate) * (abs(k - qn) - abs(self.reference - qn))
        a += Fraction(self.mu)
        bits = _WORD
        while True:
            lo, hi, e = _exp_enclosure(-a, 2 * bits)
            # accept: (m + 1)/2^bits ≤ ratio·lo·2^(e − exponent)
            left, right = (m + 1) * ratio.denominator, ratio.numerator * lo
            if _at_most(left, -bits, right, e - self.exponent):
                return True
            # reject: ratio·hi·2^(e − exponent) ≤ m/2^bits
            left, right = ratio.numerator * hi, m * ratio.denominator
            if _at_most(left, e - self.exponent, right, -bits):
                return False
            m, bits = (m << _WORD) | _bits(rng), bits + _WORD


def _log_h(u: np.ndarray) -> np.ndarray:
    """log((1 − e^{−u})/u), elementwise and stable for every real u (0 at u = 0)."""
    out = np.zeros_like(u)
    pos, neg = u > 1e-12, u < -1e-12
    out[pos] = np.log(-np.expm1(-u[pos])) - np.log(u[pos])
    a = -u[neg]  # (e^{a} − 1)/a = e^{a}(1 − e^{−a})/a
    out[neg] = a + np.log(-np.expm1(-a)) - np.log(a)
    small = ~(pos | neg)
    out[small] = -u[small] / 2.0
    return out


def _gumbel_max(log_weights: np.ndarray, keep: np.ndarray, rng: np.random.Generator) -> int:
    """An index k among ``keep``, drawn with probability ∝ exp(log_weights[k]) (in floats).

    Gumbel-max: one uniform per index (all of them drawn, kept or not), the argmax of
    log-weight plus Gumbel noise.
    """
    gumbel = -np.log(-np.log(rng.random(log_weights.size)))
    return int(np.argmax(np.where(keep, log_weights + gumbel, -np.inf)))


def _sample_exponential_float(
    values: np.ndarray,
    q: float,
    epsilon: float,
    sensitivity: float,
    lo: float,
    hi: float,
    rng: np.random.Generator,
) -> float:
    """One floating-point draw of the exponential mechanism for the q-quantile.

    Its density ∝ exp(−c·L(θ)), L(θ) = Σρ_q(xᵢ − θ), has slope k − qn in L on interval k,
    so it is exponential there: log-mass −cL(eₖ) + log(len) + log((1 − e^{−u})/u),
    u = c·slope·len; an interval by Gumbel-max, then the point inverts the CDF of the
    exponential truncated to the interval (log1p/expm1: stable).
    """
    n = values.size
    edges, lengths = _intervals(values, lo, hi)
    slopes = np.arange(n + 1, dtype=float) - q * n  # k − qn on interval k
    c = epsilon / (2.0 * sensitivity)
    start = q * float(np.sum(values - lo))  # L(lo): every point is ≥ lo
    at_edges = start + np.concatenate([[0.0], np.cumsum(slopes * lengths)[:-1]])
    with np.errstate(divide="ignore"):
        log_mass = -c * at_edges + np.log(lengths) + _log_h(c * slopes * lengths)
    k = _gumbel_max(log_mass, lengths > 0, rng)  # every interval of positive length
    rate, length, v = c * slopes[k], lengths[k], rng.random()
    if abs(rate * length) < 1e-12:  # flat: a uniform point
        return float(edges[k] + v * length)
    # t ∈ [0, length] with density ∝ exp(−|rate|·t), measured from the falling end
    t = -np.log1p(v * np.expm1(-abs(rate) * length)) / abs(rate)
    t = min(max(t, 0.0), length)
    return float(edges[k] + t if rate > 0 else edges[k + 1] - t)


@functools.lru_cache(maxsize=64)  # public parameters only; saves exact rationals per draw
def _rate(epsilon: float, sensitivity: float | Fraction) -> float:
    """KNG's rate c = ε/(2Δ), rounded down (a smaller c is more private); capped."""
    rate = float_down(Fraction(epsilon) / (2 * Fraction(sensitivity)))
    if not rate <= _MAX_RATE:
        raise InvalidArgumentError(
            "`epsilon` per quantile is too large for the exact sampler: ε/(2Δ) must be at "
            f"most 2**40 ≈ 1.1e12. Found ε = {epsilon!r}, Δ = {float(sensitivity)!r}."
        )
    return rate


def _sample(
    values: np.ndarray,
    q: float,
    epsilon: float,
    sensitivity: float,
    lo: float,
    hi: float,
    rng: np.random.Generator,
    mechanism: str = "kng",
) -> float:
    """One draw for the q-quantile of sorted ``values`` in [lo, hi].

    KNG exactly (:class:`_KNGSampler`), or the exponential mechanism in floating point.
    """
    if mechanism == "kng":
        return _KNGSampler(values, q, _rate(epsilon, sensitivity), lo, hi).draw(rng)
    return _sample_exponential_float(values, q, epsilon, sensitivity, lo, hi, rng)


#: the exponential mechanism's draw (the name the tests call it by)
_sample_exponential = functools.partial(_sample, mechanism="exponential")


def _sensitivity(
    level: float, mechanism: str, adjacency: str, grouped: bool, width: Fraction
) -> Fraction:
    """Δ of one level's release, exactly (the proof is in :func:`quantile`)."""
    top = max(Fraction(level), 1 - Fraction(level))
    if mechanism == "exponential":
        return top * width
    if adjacency == ev.REPLACE_ONE:
        return 2 * top if grouped else Fraction(1)
    return top


def _levels(q: Any) -> tuple[list[float], bool]:
    """The quantile levels, and whether one scalar level was given."""
    if np.ndim(q) == 0 and hasattr(q, "item"):  # a 0-d numpy array or numpy scalar
        q = cast(Any, q).item()
    single = isinstance(q, (int, float, np.floating, np.integer))
    levels = (
        [check_probability("q", q, high_open=False)]
        if single
        else [
            check_probability(f"q[{i}]", v, high_open=False)
            for i, v in enumerate(check_reals("q", q))
        ]
    )
    if not levels:
        raise InvalidArgumentError("`q` must hold at least one quantile. Found none.")
    return levels, single


def _values(data: Any) -> np.ndarray:
    """``data`` as a 1-D float array (one value per record, NaN for a missing one)."""
    if hasattr(data, "__dask_graph__"):
        raise InvalidArgumentTypeError(
            "`data` is a dask collection: the exact quantile sampler needs the column sorted "
            "in one process, so it takes in-memory data only (a numpy array or pandas "
            "Series); compute the column first if it fits in memory."
        )
    raw = data.to_numpy() if hasattr(data, "to_numpy") else data
    if np.iscomplexobj(raw):
        raise InvalidArgumentTypeError("`data` must be real numbers. Found complex values.")
    try:
        values = np.asarray(raw, dtype=float)
    except (TypeError, ValueError, OverflowError) as error:
        raise InvalidArgumentTypeError(
            f"`data` must be a 1-D array of real numbers. {error}"
        ) from None
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim > 1:
        raise InvalidArgumentError(
            "`data` must be one column (1-D, or shape (n, 1)): with several values per "
            "record one record moves several of them, beyond the sensitivity charged. Found "
            f"shape {values.shape}; call quantile once per column."
        )
    return values.reshape(-1)


def _per_group(values: np.ndarray, group: np.ndarray | None, n_groups: int) -> list[np.ndarray]:
    """Each declared group's values, sorted.

    Rows missing a value or outside the declared groups are dropped: record-local rules
    (refusing them would read the private rows).
    """
    present = ~np.isnan(values)
    values = values[present]
    if group is None:
        return [np.sort(values)]
    group = group[present]
    order = np.lexsort((values, group))
    labels, ordered = group[order], values[order]
    cuts = np.searchsorted(labels, np.arange(n_groups + 1), side="left")
    return [ordered[cuts[j] : cuts[j + 1]] for j in range(n_groups)]


def quantile(
    data: Any,
    q: float | Sequence[float],
    *,
    ledger: Any,
    bounds: tuple[float, float],
    epsilon: float | None = None,
    share: float | None = None,
    mechanism: str = "kng",
    by: Any = None,
    groups: Sequence[Any] | None = None,
    label: str | None = None,
    rng: Any = None,
) -> Any:
    """Private q-quantile(s) of ``data`` with declared ``bounds``, charged to ``ledger``.

    Each level is one release, charged as ``BoundedRange(ε)`` before it is drawn; with
    ``by``/``groups`` a level's release is the vector of its per-group draws, charged once:

    * *add/remove*: a record lies in one group, so it changes one group's g(θ) by at most
      Δ = max(q, 1 − q) and no other group's draw; the joint density ratio is that one
      group's, within ε (parallel composition; McSherry 2009).
    * *replace-one*: a record changed within its group moves that group's g by ≤ 1; a
      record moved from group a to group b changes g_a and g_b by ≤ max(q, 1 − q) each,
      each draw's log-ratio ranging over ≤ 2c·max(q, 1 − q), so the pair ranges over
      ≤ 4c·max(q, 1 − q) (bounded-range composes additively). With Δ = 2·max(q, 1 − q)
      (≥ 1) and c = ε/(2Δ) both cases stay within ε. The exponential mechanism needs no
      such doubling: removing or adding a record moves a group's loss one way only, by
      ≤ max(q, 1 − q)(hi − lo), so a move ranges over ≤ 2·c·Δ = ε with the usual Δ.

    Args:
        data: A 1-D numpy array or pandas Series of numbers (or one column, (n, 1)).
        q: A quantile in [0, 1], or several (one release each).
        ledger: The :class:`~dpledger.Ledger` to charge.
        bounds: The declared range (lo, hi); values outside are clipped to it.
        epsilon: The ε of the whole query (split evenly over the quantiles), or
        share: the fraction of the ledger's remaining budget to use (solved in its
            currency). Exactly one of ``epsilon`` and ``share``.
        mechanism: "kng" (default: O_p(1/n) noise, sampled exactly) or "exponential":
            the exponential mechanism with utility −Σρ_q(xᵢ − θ), Δ = max(q, 1 − q)(hi − lo)
            under either adjacency (McSherry & Talwar 2007), drawn in floating point (it
            warns); O_p(1/√n) noise, the baseline of Reimherr & Awan. Both are
            ε-bounded-range, charged alike.
        by: Each record's group label (array or Series, matched by index to a pandas
            ``data``), with
        groups: the declared groups (never read from the data); records in no declared
            group are dropped, as are records missing their value (NaN; ±inf are clipped
            to the bounds). Each rule reads only its own record, so it is free: under
            replace-one a dropped record turning into a kept one changes the kept data by
            one addition, within Δ.
        label: The analysis' name for the receipts: "median age" gives receipts
            "median age (q=0.5, KNG, Δ=0.5)" (add/remove; Δ=1 under replace-one).
        rng: numpy Generator or int seed (reproducible), or None.

    Returns:
        A float for one quantile; for several, a pandas Series indexed by q. With
        ``by``: a Series indexed by group for one quantile, a DataFrame groups × q for
        several. (Without pandas: dicts.)

    Raises:
        InvalidArgumentError: A bad argument (named), or ε/(2Δ) above 2⁴⁰ for KNG;
            nothing is charged.

    Example:
        >>> import numpy as np
        >>> from dpledger import Ledger
        >>> from dpledger.algorithms import quantile
        >>> ages = np.random.default_rng(0).integers(18, 90, size=10_000)
        >>> ledger = Ledger(1.0, 0.0)
        >>> median = quantile(ages, 0.5, ledger=ledger, bounds=(0, 120), epsilon=0.5,
        ...                   label="median age", rng=1)
        >>> 50 < median < 58, ledger.receipts[-1].label
        (True, 'median age (q=0.5, KNG, Δ=0.5)')
    """
    from dpledger.ledger import Ledger
    from dpledger.ledger.partitions import check_partition_data

    if not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(
            f"`ledger` must be a dpledger.Ledger. Found {type(ledger).__name__}."
        )
    check_partition_data(ledger, data)  # a part's ledger takes only that part's data
    levels, single = _levels(q)
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"`bounds` must be (lo, hi). Found {bounds!r}.") from None
    lo, hi = check_real("bounds[0]", lo), check_real("bounds[1]", hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and hi - lo <= _MAX_WIDTH):
        raise InvalidArgumentError(
            "`bounds` must be finite with lo < hi and hi − lo at most 2**900 ≈ 8.5e270 (the "
            "interval lengths and the loss at n ≤ 2⁵³ points must not overflow, or which "
            f"interval can be drawn would depend on the data). Found {bounds!r}."
        )
    values = _values(data)
    name = check_label(label)
    pd = _pandas()
    pandas_data = pd is not None and isinstance(data, (pd.Series, pd.DataFrame))
    group, keys = _groups(by, groups, values.size, data.index if pandas_data else None)
    check_choice("mechanism", mechanism, ("kng", "exponential"))
    if (epsilon is None) == (share is None):
        raise InvalidArgumentError(
            f"give exactly one of `epsilon` and `share`. Found epsilon={epsilon!r}, "
            f"share={share!r}."
        )
    k = len(levels)
    if epsilon is not None:
        each = check_positive("epsilon", epsilon) / k
        reservation = ledger.reserve([ev.BoundedRange(each)] * k, rng=rng)
    else:
        share = check_probability("share", share, low_open=True, high_open=False)
        reservation = ledger.reserve(lambda p: [ev.BoundedRange(1.0 / p)] * k, share=share, rng=rng)
        each = reservation.events[0].epsilon  # type: ignore[attr-defined]
    width = Fraction(hi) - Fraction(lo)
    plan = [
        _sensitivity(level, mechanism, ledger.adjacency, keys is not None, width)
        for level in levels
    ]
    rates = [_rate(each, delta) for delta in plan] if mechanism == "kng" else []
    parts = _per_group(np.clip(values, lo, hi), group, len(keys) if keys else 1)
    generator = reservation.open().generator  # all of them checked, before the first draw
    assert generator is not None
    if mechanism == "exponential":
        warn_floating_point("quantile (the exponential mechanism's draws)", no_exact_sampler=True)
    kind = "KNG" if mechanism == "kng" else "exponential mechanism"
    where = f", {len(keys)} groups" if keys else ""
    out = np.empty((len(parts), k))
    for j, (level, delta) in enumerate(zip(levels, plan, strict=True)):
        reservation.charge(
            label=f"{name or 'quantile'} (q={level:g}, {kind}, Δ={float_up(delta):g}{where})"
        )
        for i, part in enumerate(parts):
            if mechanism == "kng":
                out[i, j] = _KNGSampler(part, level, rates[j], lo, hi).draw(generator)
            else:
                out[i, j] = _sample_exponential_float(
                    part, level, each, float_up(delta), lo, hi, generator
                )
    shaped = _shape(out, None if single else levels, keys, None)
    if not single and pd is not None:
        axis = shaped.index if keys is None else shaped.columns
        axis.name = "q"
    return shaped


__dir__ = namespace(__all__)
