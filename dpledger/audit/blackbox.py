"""Black-box auditing: a statistically certified lower bound on a mechanism's ε.

A mechanism M is (ε, δ)-DP only if, for every event E and neighbouring inputs D, D′,
P[M(D) ∈ E] ≤ e^ε P[M(D′) ∈ E] + δ. So any event with p = P[M(D) ∈ E] and
q = P[M(D′) ∈ E] proves ε ≥ log((p − δ)/q). :func:`estimate_epsilon` estimates p and q
by running the mechanism, and certifies the bound with exact Clopper–Pearson intervals:

1. the samples of each side are split at random into a *selection* part (half by
   default) and a *certification* part;
2. on the selection part, candidate events — thresholds on every output coordinate,
   equality events on discrete coordinates, and their combinations (a discrete coordinate
   equal to a value *and* a threshold on another) — are scored in both directions (D over
   D′ and D′ over D) by the bound they would certify, penalised for their selection
   noise, and the best is chosen;
3. on the certification part, which played no role in the choice, the event's counts give a
   one-sided lower Clopper–Pearson bound p̲ on p and an upper one q̄ on q, each at level
   1 − α/2; with probability at least 1 − α both hold, and then ε ≥ log((p̲ − δ)/q̄).

Choosing the event on independent samples is what makes the bound valid despite the search
over many events (no multiple-testing correction is needed); the split is drawn before the
mechanism runs. The bound is a *lower* bound for the two inputs given: a mechanism that is
not flagged is not thereby proved private (see docs/audit.md for the limits of black-box
auditing).

The guarantee assumes independent runs: each call draws fresh randomness (from the ``rng``
it is given, or its own) and keeps no state between calls. A mechanism that caches its
answer for an input and returns it again — "consistent answers" — releases once, however
often it is called, and repeated identical outputs then look like certainty: its bound is
meaningless. Each output is copied as soon as it is returned, so a mechanism that refills
and returns one buffer is measured correctly.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpledger._format import down
from dpledger._public import namespace
from dpledger._validation import check_int_at_least, check_probability
from dpledger.errors import InvalidArgumentError

__all__ = ["EpsilonEstimate", "estimate_epsilon"]

_MAX_DISCRETE = 64  # a coordinate with at most this many distinct values is "discrete"
_QUANTILES = np.linspace(0.002, 0.998, 160)
_MAX_COMBINED = 8192  # combined (value and threshold) candidate events at most
MAX_SAMPLES = 10**8
"""The most runs per input :func:`estimate_epsilon` accepts."""
MAX_OUTPUT_BYTES = 1 << 32
"""Memory the outputs of both inputs may take (4 GiB): samples × output length × 16 bytes."""


@dataclass(frozen=True)
class EpsilonEstimate:
    """The result of :func:`estimate_epsilon`.

    Attributes:
        epsilon: The certified lower bound on ε (0.0 if no event distinguishes the inputs).
        confidence: The probability with which the bound holds.
        delta: The δ the bound is for.
        event: The distinguishing event, in words ("output[0] ≤ 1.27", ...).
        direction: ``"dataset/neighbour"`` (p from the dataset) or the reverse.
        counts: Occurrences of the event among the certification samples (p side, q side).
        certification_samples: Certification samples per side.
        p_lower, q_upper: The Clopper–Pearson bounds behind ``epsilon``.
        point_estimate: log(p̂/q̂) on the certification samples (not certified).
        resolution: The smallest event probability the certification samples can resolve:
            an event never seen has a 1 − α/2 upper bound of this size.
        samples: Samples drawn per side.
    """

    epsilon: float
    confidence: float
    delta: float
    event: str
    direction: str
    counts: tuple[int, int]
    certification_samples: int
    p_lower: float
    q_upper: float
    point_estimate: float
    resolution: float
    samples: int

    def flags(self, claimed_epsilon: float) -> bool:
        """True if the certified lower bound exceeds ``claimed_epsilon``."""
        return self.epsilon > claimed_epsilon

    def __str__(self) -> str:
        if self.epsilon > 0:
            return (
                f"ε ≥ {down(self.epsilon, 4)} with confidence {self.confidence:g} "
                f"(δ = {self.delta:g}): "
                f"event {self.event} [{self.direction}], certified on "
                f"{self.certification_samples} samples per side "
                f"(counts {self.counts[0]} vs {self.counts[1]}; point estimate "
                f"{self.point_estimate:.4g})"
            )
        return (
            f"no distinguishing event found: ε ≥ 0 only. With {self.certification_samples} "
            f"certification samples per side, events of probability below "
            f"{self.resolution:.2g} cannot be resolved; draw more samples to look further."
        )


def _cp_lower(k: float, n: int, alpha: float) -> float:
    """One-sided Clopper–Pearson lower bound on p at level 1 − alpha."""
    if k <= 0:
        return 0.0
    return float(stats.beta.ppf(alpha, k, n - k + 1))


def _cp_upper(k: float, n: int, alpha: float) -> float:
    """One-sided Clopper–Pearson upper bound on p at level 1 − alpha."""
    if k >= n:
        return 1.0
    return float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def _bound(p_lo: float, q_hi: float, delta: float) -> float:
    if p_lo <= delta or q_hi <= 0:
        return 0.0 if p_lo <= delta else math.inf
    return max(0.0, math.log((p_lo - delta) / q_hi))


Mask = Callable[[np.ndarray], np.ndarray]


_PENALTY = 3.0


def _score(kp: float, kq: float, m: int, n: int, alpha: float, delta: float) -> float:
    """How well an event is expected to certify, judged on the selection samples.

    The bound the event would certify at the certification sample size, minus three
    standard errors of the selection estimate of log(p/q): many candidate events are
    compared, and without the penalty the winner is too often a rare event whose ratio
    looked large by chance (the winner's curse) and then certifies little.
    """
    predicted = _bound(
        _cp_lower(kp * n / m, n, alpha / 2), _cp_upper(kq * n / m, n, alpha / 2), delta
    )
    if kp <= 0 or kq <= 0:
        return predicted
    spread = math.sqrt((1 - kp / m) / kp + (1 - kq / m) / kq)
    return predicted - _PENALTY * spread


class _Event:
    """A candidate event on the output features: a callable mask with a description."""

    def __init__(self, text: str, mask: Mask) -> None:
        self.text, self.mask = text, mask


def _equal(j: int, v: float) -> Mask:
    return lambda x: np.asarray(x[:, j] == v)


def _is_nan(j: int) -> Mask:
    return lambda x: np.asarray(np.isnan(x[:, j]))


def _at_most(j: int, t: float) -> Mask:
    return lambda x: np.asarray(x[:, j] <= t)


def _above(j: int, t: float) -> Mask:
    return lambda x: np.asarray(x[:, j] > t)


def _both(first: Mask, second: Mask) -> Mask:
    return lambda x: np.asarray(first(x) & second(x))


def _candidates(a: np.ndarray, b: np.ndarray) -> list[_Event]:
    """Threshold and equality events on the pooled selection outputs."""
    pooled = np.concatenate([a, b])
    events: list[_Event] = []
    discrete: dict[int, np.ndarray] = {}
    for j in range(pooled.shape[1]):
        column = pooled[:, j]
        missing = np.isnan(column)
        if missing.any():
            # NaN is an output like any other: an event of its own (comparisons with NaN
            # are false, so thresholds alone would never see it), and thresholds come from
            # the other values (a NaN quantile would blind every threshold event)
            events.append(_Event(f"output[{j}] is NaN", _is_nan(j)))
            column = column[~missing]
            if column.size == 0:
                continue
        values = np.unique(column)
        if len(values) <= _MAX_DISCRETE:
            discrete[j] = values
            for v in values:
                events.append(_Event(f"output[{j}] = {v:g}", _equal(j, v)))
            thresholds = values
        else:
            finite = column[np.isfinite(column)]
            if finite.size == 0:
                continue
            thresholds = np.unique(np.quantile(finite, _QUANTILES))
        for t in thresholds:
            events.append(_Event(f"output[{j}] ≤ {t:.6g}", _at_most(j, t)))
            events.append(_Event(f"output[{j}] > {t:.6g}", _above(j, t)))
    # a discrete coordinate's value combined with a threshold on another coordinate: the
    # most frequent values first, at most _MAX_COMBINED events (their number grows with the
    # square of the output's length: a 16-bin histogram took minutes; any rule that looks
    # only at the selection samples keeps the bound valid)
    frequent = sorted(
        (-int(np.count_nonzero(pooled[:, j] == v)), j, float(v))
        for j, values in discrete.items()
        for v in values
    )
    combined = 0
    for minus_count, j, v in frequent:
        if combined >= _MAX_COMBINED or -minus_count < 10:
            break
        rows = pooled[:, j] == v
        for k in range(pooled.shape[1]):
            if k == j or combined >= _MAX_COMBINED:
                continue
            sub = pooled[rows, k]
            sub = sub[np.isfinite(sub)]
            if len(sub) < 10:
                continue
            for t in np.unique(np.quantile(sub, _QUANTILES[::8])):
                text = f"output[{j}] = {v:g} and output[{k}]"
                events.append(_Event(f"{text} ≤ {t:.6g}", _both(_equal(j, v), _at_most(k, t))))
                events.append(_Event(f"{text} > {t:.6g}", _both(_equal(j, v), _above(k, t))))
                combined += 2
    return events


def _row(out: Any, which: str) -> np.ndarray:
    """One output as a fresh float row, read as soon as the mechanism returns it.

    A copy: a mechanism that refills and returns one buffer would otherwise leave every
    row holding its last value, and the rows' spurious agreement would be "certified"
    (ε ≥ 5.6 for a 0.1-DP Laplace release in a review). Numbers only: strings, None and
    other objects are refused rather than parsed.
    """

    def refuse(reason: str = "") -> InvalidArgumentError:
        return InvalidArgumentError(
            f"the mechanism's output on the {which} must be a number or an array of "
            f"numbers{reason}; found {out!r}."
        )

    try:
        arr = np.asarray(out)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise refuse() from exc
    if arr.dtype.kind == "O":  # Python ints beyond int64, or mixed objects
        items = arr.ravel().tolist()
        if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in items):
            raise refuse()
        try:
            arr = np.array([float(x) for x in items])
        except OverflowError as exc:
            raise refuse(" within the float range") from exc
    elif arr.dtype.kind not in "biuf":
        raise refuse()
    return np.array(arr, dtype=float).ravel()


def _run(
    mechanism: Any,
    data: Any,
    samples: int,
    rng: np.random.Generator,
    progress: Callable[[int], None],
    which: str,
    exceptions: tuple[type[BaseException], ...] = (),
) -> np.ndarray:
    """``samples`` runs as rows; with ``exceptions``, column 0 codes the outcome.

    A run that raises the k-th class of ``exceptions`` is the output "raised" (code k,
    the other columns NaN); a return is code 0. Any other exception propagates.
    """
    call: Callable[[Any, np.random.Generator], Any]
    if hasattr(mechanism, "release") and callable(mechanism.release):
        call = lambda x, r: mechanism.release(x, rng=r)  # noqa: E731
    elif callable(mechanism):
        call = mechanism
    else:
        raise InvalidArgumentError(
            "`mechanism` must be a callable mechanism(data, rng) or a dpledger Mechanism. "
            f"Found {type(mechanism).__name__}."
        )
    codes = np.zeros(samples)
    rows: np.ndarray | None = None
    for i in range(samples):
        try:
            row = _row(call(data, rng), which)
        except exceptions as error:
            codes[i] = 1 + next(k for k, e in enumerate(exceptions) if isinstance(error, e))
            progress(1)
            continue
        if rows is None:
            need = 16 * samples * max(1, len(row))
            if need > MAX_OUTPUT_BYTES:
                raise InvalidArgumentError(
                    f"`samples` = {samples:,} runs of outputs of length {len(row)} would take "
                    f"{need / 2**30:.1f} GiB for both inputs, beyond "
                    f"{MAX_OUTPUT_BYTES / 2**30:.0f} GiB: draw fewer samples, or audit a "
                    "shorter output (a statistic of it)."
                )
            rows = np.full((samples, len(row)), np.nan)
        elif len(row) != rows.shape[1]:
            raise InvalidArgumentError(
                f"the mechanism's outputs on the {which} have different lengths "
                f"{sorted({rows.shape[1], len(row)})}."
            )
        rows[i] = row
        progress(1)
    if not exceptions:
        assert rows is not None  # without `exceptions` every run returned
        return rows
    values = np.empty((samples, 0)) if rows is None else rows
    return np.column_stack([codes, values])


class _Progress:
    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.shown = total, enabled, 0, -1

    def __call__(self, step: int) -> None:
        self.done += step
        if not self.enabled:
            return
        percent = 100 * self.done // self.total
        if percent != self.shown and (percent % 2 == 0 or self.done == self.total):
            self.shown = percent
            bar = "#" * (percent // 4)
            sys.stderr.write(f"\rsampling [{bar:<25}] {percent:3d}% ({self.done}/{self.total})")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def estimate_epsilon(
    mechanism: Any,
    dataset: Any,
    neighbour: Any,
    *,
    samples: int,
    confidence: float = 0.95,
    delta: float = 0.0,
    rng: np.random.Generator | None = None,
    selection_fraction: float = 0.5,
    progress: bool | None = None,
    exceptions: Any = (),
) -> EpsilonEstimate:
    """A lower bound on the ε of ``mechanism``, certified with probability ``confidence``.

    Args:
        mechanism: ``mechanism(data, rng)`` returning a number or an array of numbers, or a
            dpledger :class:`~dpledger.mechanisms.base.Mechanism` (``release(data, rng=rng)``).
        dataset: One input.
        neighbour: A neighbouring input (differing in one record).
        samples: Runs of the mechanism on each input.
        confidence: Probability that the returned bound holds (default 0.95).
        delta: The δ of the (ε, δ) guarantee being audited.
        rng: A ``numpy.random.Generator`` (seed it for a reproducible audit).
        selection_fraction: Share of the samples used to choose the event.
        progress: Show a progress bar on stderr (default: for 100,000 samples or more, on
            a terminal).
        exceptions: Exception classes that are *outputs* of the mechanism: a run raising
            one of them is recorded, not propagated. Then ``output[0]`` is the outcome
            (0 for a return, k for the k-th class raised) and the mechanism's values
            follow from ``output[1]`` (NaN in a run that raised). A refusal or failure
            whose probability depends on the data is a release, and this finds its leak.

    Returns:
        An :class:`EpsilonEstimate`; its ``epsilon`` is 0.0 when no event distinguishes
        the inputs, and its ``resolution`` then says how rare an event could still hide.

    Example:
        >>> import numpy as np
        >>> from dpledger.audit import estimate_epsilon
        >>> noisy_sum = lambda data, rng: sum(data) + rng.laplace(scale=1.0)  # ε = 1
        >>> est = estimate_epsilon(noisy_sum, [0, 0], [0, 1], samples=20_000,
        ...                        rng=np.random.default_rng(1))
        >>> 0.5 < est.epsilon <= 1.0
        True
    """
    samples = check_int_at_least("samples", samples, 20)
    if samples > MAX_SAMPLES:
        raise InvalidArgumentError(
            f"`samples` must be at most {MAX_SAMPLES:,} (the runs are held in memory). "
            f"Found {samples!r}."
        )
    confidence = check_probability("confidence", confidence, low_open=True)
    delta = check_probability("delta", delta)
    selection_fraction = check_probability("selection_fraction", selection_fraction, low_open=True)
    if rng is None:
        rng = np.random.default_rng()
    elif not isinstance(rng, np.random.Generator):
        raise InvalidArgumentError(f"`rng` must be a numpy.random.Generator. Found {rng!r}.")
    if progress is None:
        progress = samples >= 100_000 and sys.stderr.isatty()
    if isinstance(exceptions, type):
        exceptions = (exceptions,)
    if not (
        isinstance(exceptions, tuple)
        and all(isinstance(e, type) and issubclass(e, BaseException) for e in exceptions)
    ):
        raise InvalidArgumentError(
            f"`exceptions` must be an exception class or a tuple of them. Found {exceptions!r}."
        )
    bar = _Progress(2 * samples, bool(progress))
    # which runs choose the event and which certify it is fixed before any output exists
    order_a, order_b = rng.permutation(samples), rng.permutation(samples)
    a = _run(mechanism, dataset, samples, rng, bar, "dataset", exceptions)
    b = _run(mechanism, neighbour, samples, rng, bar, "neighbour", exceptions)
    if exceptions and a.shape[1] != b.shape[1] and min(a.shape[1], b.shape[1]) == 1:
        # one side always raised: its values are all missing
        width = max(a.shape[1], b.shape[1])
        a, b = (
            np.pad(x, ((0, 0), (0, width - x.shape[1])), constant_values=np.nan) for x in (a, b)
        )
    if a.shape[1] != b.shape[1]:
        raise InvalidArgumentError(
            f"the outputs on the two inputs have different lengths ({a.shape[1]} and {b.shape[1]})."
        )
    if a.shape[1] == 0:
        raise InvalidArgumentError("the mechanism's outputs are empty: there is nothing to test.")
    a, b = a[order_a], b[order_b]
    m = max(10, min(samples - 10, round(selection_fraction * samples)))
    n = samples - m
    alpha = 1 - confidence
    sel_a, sel_b, cert_a, cert_b = a[:m], b[:m], a[m:], b[m:]

    best: tuple[float, _Event, bool] | None = None
    for event in _candidates(sel_a, sel_b):
        ka, kb = (
            float(np.count_nonzero(event.mask(sel_a))),
            float(np.count_nonzero(event.mask(sel_b))),
        )
        for forward in (True, False):
            kp, kq = (ka, kb) if forward else (kb, ka)
            score = _score(kp, kq, m, n, alpha, delta)
            if best is None or score > best[0]:
                best = (score, event, forward)
    resolution = _cp_upper(0, n, alpha / 2)
    if best is None:  # pragma: no cover - there is always at least one threshold event
        raise InvalidArgumentError("no candidate events: the outputs are empty")
    _, event, forward = best
    ka, kb = int(np.count_nonzero(event.mask(cert_a))), int(np.count_nonzero(event.mask(cert_b)))
    kp, kq = (ka, kb) if forward else (kb, ka)
    p_lo, q_hi = _cp_lower(kp, n, alpha / 2), _cp_upper(kq, n, alpha / 2)
    eps = _bound(p_lo, q_hi, delta)
    with np.errstate(divide="ignore"):
        point = math.log(kp / kq) if kp > 0 and kq > 0 else (math.inf if kp > 0 else 0.0)
    return EpsilonEstimate(
        epsilon=eps,
        confidence=confidence,
        delta=delta,
        event=event.text,
        direction="dataset/neighbour" if forward else "neighbour/dataset",
        counts=(kp, kq),
        certification_samples=n,
        p_lower=p_lo,
        q_upper=q_hi,
        point_estimate=point,
        resolution=resolution,
        samples=samples,
    )


__dir__ = namespace(__all__)
