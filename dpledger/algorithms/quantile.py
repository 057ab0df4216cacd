"""Private quantiles: the K-norm gradient mechanism in one dimension, sampled exactly.

For the τ-quantile the loss ℓ(θ) = Σᵢ ρ_τ(xᵢ − θ) has (sub)gradient
g(θ) = Σᵢ (1{xᵢ < θ} − τ) = #{xᵢ < θ} − τn. KNG (Reimherr & Awan 2019) releases θ with
density ∝ exp(−ε·|g(θ)|/(2Δ)) on the declared range [lo, hi], Δ the sensitivity of g:
one record changes g by at most 1 under replace-one and by max(τ, 1 − τ) under
add/remove. The density is constant between consecutive sorted data points, so it is
sampled exactly: choose the interval [x₍ₖ₎, x₍ₖ₊₁₎) with probability ∝ its length ×
exp(−ε|k − τn|/(2Δ)) (log-space, Gumbel-max), then a uniform point inside it. This is
the exponential mechanism with utility −|g|, so it is ε-bounded-range (Durfee & Rogers
2019) — ε-DP and ε²/8-zCDP — and is charged as :class:`~dpledger.events.BoundedRange`.

Several quantiles are several releases, each charged (the default splits the budget
evenly); values outside the declared range are clipped to it (never read from the data).
The uniform draws are floating point (there is no exact sampler of a real interval).

``mechanism="exponential"`` releases instead the exponential mechanism with utility
−Σρ_τ(xᵢ − θ) (McSherry & Talwar 2007), the baseline KNG improves on: piecewise
exponential between sorted points, also sampled exactly, also ε-bounded-range.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from dpledger._public import namespace
from dpledger._validation import (
    check_choice,
    check_positive,
    check_probability,
    check_real,
    check_reals,
)
from dpledger.accountant import events as ev
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError
from dpledger.mechanisms.base import warn_floating_point

__all__ = ["quantile"]

_MAX_WIDTH = 2.0**900


def _intervals(values: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The edges lo, x₍₁₎, …, x₍ₙ₎, hi of sorted ``values`` and the n + 1 lengths between."""
    edges = np.concatenate([[lo], values, [hi]])
    return edges, np.diff(edges)


def _gumbel_max(log_weights: np.ndarray, keep: np.ndarray, rng: np.random.Generator) -> int:
    """An index k among ``keep``, drawn with probability ∝ exp(log_weights[k]).

    Gumbel-max: one uniform per index (all of them drawn, kept or not), the argmax of
    log-weight plus Gumbel noise.
    """
    gumbel = -np.log(-np.log(rng.random(log_weights.size)))
    return int(np.argmax(np.where(keep, log_weights + gumbel, -np.inf)))


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
    """One exact draw for the q-quantile of sorted ``values`` in [lo, hi] (KNG, or exponential).

    Both densities are piecewise on the intervals between lo, the sorted points and hi,
    where the k-th has #{x < θ} = k: an interval is chosen by its log-mass (Gumbel-max),
    then a point inside it. KNG's density ∝ exp(−ε·|k − qn|/(2Δ)) is constant there: a
    uniform point. The exponential mechanism's ∝ exp(−ε·L(θ)/(2Δ)), L(θ) = Σρ_q(xᵢ − θ),
    has slope k − qn in L, so it is exponential there: log-mass −cL(eₖ) + log(len) +
    log((1 − e^{−u})/u), u = c·slope·len, and the point inverts the CDF of the exponential
    truncated to the interval (log1p/expm1: stable).
    """
    n = values.size
    edges, lengths = _intervals(values, lo, hi)
    slopes = np.arange(n + 1, dtype=float) - q * n  # k − qn on interval k
    c = epsilon / (2.0 * sensitivity)
    if mechanism == "kng":
        with np.errstate(divide="ignore"):
            log_mass = np.log(lengths) - epsilon * np.abs(slopes) / (2.0 * sensitivity)
    else:
        start = q * float(np.sum(values - lo))  # L(lo): every point is ≥ lo
        at_edges = start + np.concatenate([[0.0], np.cumsum(slopes * lengths)[:-1]])
        u = c * slopes * lengths
        with np.errstate(divide="ignore"):
            log_mass = -c * at_edges + np.log(lengths) + _log_h(u)
    k = _gumbel_max(log_mass, lengths > 0, rng)  # every interval of positive length
    rate = 0.0 if mechanism == "kng" else c * slopes[k]  # the log-density's slope in θ
    length, v = lengths[k], rng.random()
    if abs(rate * length) < 1e-12:  # flat (KNG's always is): a uniform point
        return float(edges[k] + v * length)
    # t ∈ [0, length] with density ∝ exp(−|rate|·t), measured from the falling end
    t = -np.log1p(v * np.expm1(-abs(rate) * length)) / abs(rate)
    t = min(max(t, 0.0), length)
    return float(edges[k] + t if rate > 0 else edges[k + 1] - t)


#: the exponential mechanism's draw (the name the tests call it by)
_sample_exponential = functools.partial(_sample, mechanism="exponential")


def quantile(
    data: Any,
    q: float | Sequence[float],
    *,
    ledger: Any,
    bounds: tuple[float, float],
    epsilon: float | None = None,
    share: float | None = None,
    mechanism: str = "kng",
    rng: Any = None,
) -> Any:
    """Private q-quantile(s) of ``data`` with declared ``bounds``, charged to ``ledger``.

    Args:
        data: A 1-D numpy array or pandas Series of numbers.
        q: A quantile in [0, 1], or several (one release each).
        ledger: The :class:`~dpledger.Ledger` to charge.
        bounds: The declared range (lo, hi); values outside are clipped to it.
        epsilon: The ε of the whole query (split evenly over the quantiles), or
        share: the fraction of the ledger's remaining budget to use (solved in its
            currency). Exactly one of ``epsilon`` and ``share``.
        mechanism: "kng" (default: O_p(1/n) noise) or "exponential": the exponential
            mechanism with utility −Σρ_q(xᵢ − θ), Δ = max(q, 1 − q)(hi − lo) under either
            adjacency (one point's loss lies in [0, Δ]; McSherry & Talwar 2007), sampled
            exactly (piecewise exponential density); O_p(1/√n) noise, the baseline of
            Reimherr & Awan. Both are ε-bounded-range, charged alike.
        rng: numpy Generator or int seed (reproducible), or None.

    Returns:
        A float, or an array of floats for several quantiles.

    Example:
        >>> import numpy as np
        >>> from dpledger import Ledger
        >>> from dpledger.algorithms import quantile
        >>> ages = np.random.default_rng(0).integers(18, 90, size=10_000)
        >>> median = quantile(ages, 0.5, ledger=Ledger(1.0, 0.0), bounds=(0, 120),
        ...                   epsilon=0.5, rng=1)
        >>> 50 < median < 58
        True
    """
    from dpledger.ledger import Ledger

    if not isinstance(ledger, Ledger):
        raise InvalidArgumentTypeError(
            f"`ledger` must be a dpledger.Ledger. Found {type(ledger).__name__}."
        )
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
    values = values.reshape(-1)
    if not np.all(np.isfinite(values)):
        raise InvalidArgumentError("`data` must be finite; impute or drop missing values first.")
    values = np.sort(np.clip(values, lo, hi))
    k = len(levels)
    check_choice("mechanism", mechanism, ("kng", "exponential"))
    if (epsilon is None) == (share is None):
        raise InvalidArgumentError(
            f"give exactly one of `epsilon` and `share`. Found epsilon={epsilon!r}, "
            f"share={share!r}."
        )
    if epsilon is not None:
        each = check_positive("epsilon", epsilon) / k
        reservation = ledger.reserve([ev.BoundedRange(each)] * k, rng=rng)
    else:
        share = check_probability("share", share, low_open=True, high_open=False)
        reservation = ledger.reserve(lambda p: [ev.BoundedRange(1.0 / p)] * k, share=share, rng=rng)
        each = reservation.events[0].epsilon  # type: ignore[attr-defined]
    generator = reservation.open().generator  # all of them checked, before the first draw
    assert generator is not None
    warn_floating_point("quantile (uniform draws on the chosen interval)", no_exact_sampler=True)
    out = []
    for level in levels:
        # each release is charged, then drawn by its sampler (the exponential mechanism
        # over the intervals between data points, or KNG)
        if mechanism == "exponential":
            sensitivity = max(level, 1.0 - level) * (hi - lo)
            label = f"quantile q={level:g} (exponential mechanism, Δ={sensitivity:g})"
        else:
            sensitivity = 1.0 if ledger.adjacency == ev.REPLACE_ONE else max(level, 1.0 - level)
            label = f"quantile q={level:g} (KNG, Δ={sensitivity:g})"
        reservation.charge(label=label)
        out.append(_sample(values, level, each, sensitivity, lo, hi, generator, mechanism))
    return out[0] if single else np.array(out)


__dir__ = namespace(__all__)
