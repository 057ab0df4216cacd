"""The one scaffold of the benchmarks: methods × data × points (ε) × seeds → table → plot.

A benchmark file states only its own questions — which methods, which data, which ε
grid, what it reports — and leaves the rest to this module:

* :func:`parser`, :func:`setup`: the command line every benchmark shares (``--quick``, a
  smoke test of seconds) and a quiet environment with one BLAS thread per process (the
  products are small and the machines small and shared);
* :func:`rounds`: wall time over rounds, cold (``_common.clear_caches`` before each),
  reported as the median and the spread (min–max) of the rounds;
* :class:`Method`, :class:`Data`, :func:`run` → :class:`Results`: every method at every
  point on every seed's draw; the non-private baselines once per draw; each fit seeded
  from its identity (data, method, point, seed), so that a subset of a run reproduces
  the same fits; a failed fit is recorded (a finding, not a crash) and reported by
  :func:`finish`;
* :func:`grid_table`, :func:`table`, :func:`records`, :func:`cell`: readable tables (of
  medians and [25 %, 75 %] quantiles over seeds); :func:`plot`: the same grid as a PNG
  (matplotlib is optional: without it the plot is skipped, with a note);
* :func:`synthetic`: the synthetic sets (rows in the unit ball, a linear or logistic
  response) the regression benchmarks share; :func:`true_epsilon`: what a fitted dpledger
  estimator really spent.

Assertions about the results (dpledger's bound against a peer's, utility targets) are
not made here: they are slow tests, ``tests/package/test_benchmark_verdicts.py``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import clear_caches

START = time.perf_counter()
FAILURES: list[str] = []
VERDICTS = "pytest -m slow tests/package/test_benchmark_verdicts.py"

# ------------------------------------------------------------------ command line


def parser(doc: str | None, quick: str) -> argparse.ArgumentParser:
    """The benchmark's parser: its docstring as description, and ``--quick``."""
    out = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    out.add_argument("--quick", action="store_true", help=f"smoke test: {quick}")
    return out


def setup(threads: int = 1) -> None:
    """Silence the expected warnings; at most ``threads`` BLAS threads (0: the default)."""
    for message in (".*floating-point.*", ".*textbook.*"):
        warnings.filterwarnings("ignore", message=message)
    warnings.filterwarnings("ignore", category=UserWarning, module="diffprivlib")
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    warnings.filterwarnings("ignore", module="sklearn")
    if threads:
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency

        threadpool_limits(limits=threads)


def finish() -> None:
    """The failed fits (if any), the total time, and where the targets are checked."""
    if FAILURES:
        print(f"\n== Failed fits ({len(FAILURES)}; shown as —)")
        for line in dict.fromkeys(FAILURES):
            print(f"  {line}")
    print(f"\ntotal time: {time.perf_counter() - START:.0f} s")
    print(f"targets (assertions on these results): {VERDICTS}")


# ------------------------------------------------------------------ timing


@dataclass(frozen=True)
class Timing:
    """Wall times (s) of one call over rounds, and the last round's result."""

    times: tuple[float, ...]
    result: Any = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def __str__(self) -> str:
        if len(self.times) == 1:
            return f"{self.times[0]:.3g}"
        return f"{self.median:.3g} ({min(self.times):.2g}–{max(self.times):.2g})"


def rounds(fn: Callable[[], Any], count: int = 3, *, cold: bool = True) -> Timing:
    """Time ``count`` calls of ``fn``, each after emptying dpledger's caches if ``cold``."""
    times, result = [], None
    for _ in range(count):
        if cold:
            clear_caches()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return Timing(tuple(times), result)


def interleaved(
    contenders: dict[str, Callable[[int], Any]], count: int = 5, *, cold: bool = True
) -> dict[str, Timing]:
    """Time every contender ``count`` times, round by round, so that load hits all alike.

    Round r calls each ``fn(r)`` once (``r`` lets a contender build a fresh input — a new
    noise value — so that no cache of either library answers: a *cold* query, the way a
    user computes ε once); the order of the contenders alternates between rounds. With
    ``cold``, dpledger's caches are emptied before every call; without it (a *warm*
    timing, labelled as such), each contender is called once untimed with ``r = 0`` and
    then timed on that same input, caches kept.
    """
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, Any] = {}
    if not cold:
        for name in names:
            contenders[name](0)
    for r in range(1, count + 1):
        order = names if r % 2 else names[::-1]
        for name in order:
            if cold:
                clear_caches()
            start = time.perf_counter()
            results[name] = contenders[name](r if cold else 0)
            times[name].append(time.perf_counter() - start)
    return {name: Timing(tuple(times[name]), results[name]) for name in names}


def ratio(slow: Timing, fast: Timing) -> str:
    """The ratio of medians, with the spread of the round-by-round ratios: "12.3x (9.8–14.1x)"."""
    rounds_ = [a / b for a, b in zip(slow.times, fast.times, strict=True)]
    text = f"{slow.median / fast.median:.1f}x"
    if len(rounds_) > 1:
        text += f" ({min(rounds_):.1f}–{max(rounds_):.1f}x)"
    return text


def machine() -> str:
    """The machine a timing ran on: cores, CPU model, load average now, Python and NumPy."""
    import os
    import platform

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}, NumPy "
        f"{np.__version__}; {load()}"
    )


def load() -> str:
    """The load average (1, 5, 15 min), as "load average 1.23 0.98 0.75"."""
    import os

    try:
        one, five, fifteen = os.getloadavg()
    except OSError:  # not available on this platform
        return "load average unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def speedup(slow: Timing | float, fast: Timing | float) -> str:
    """``slow`` / ``fast`` (medians), as "3.6x"."""
    a = slow.median if isinstance(slow, Timing) else slow
    b = fast.median if isinstance(fast, Timing) else fast
    return f"{a / b:.1f}x"


# ------------------------------------------------------------------ numbers and tables


def quantiles(values: Iterable[float]) -> tuple[float, float, float]:
    """(median, 25 %, 75 %) of the finite values; NaN if there are none."""
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    q25, q50, q75 = np.quantile(v, [0.25, 0.5, 0.75])
    return float(q50), float(q25), float(q75)


def fmt(x: float, digits: int = 3) -> str:
    """``digits`` significant digits; "∞" and "—" (NaN) for the non-finite."""
    if math.isinf(x):
        return "∞"
    if not math.isfinite(x):
        return "—"
    return f"{x:.{digits}g}" if 1e-3 <= abs(x) < 1e4 or x == 0 else f"{x:.2e}"


def percent(x: float) -> str:
    return f"{100 * x:.2f}" if math.isfinite(x) else "—"


def cell(values: Iterable[float], show: Callable[[float], str] = fmt) -> str:
    """ "median [25 %, 75 %]" of the values, each through ``show``."""
    med, lo, hi = quantiles(values)
    return "—" if not math.isfinite(med) else f"{show(med)} [{show(lo)}, {show(hi)}]"


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e5 else f"{value:.4e}"
    return str(value)


def _numeric(text: str) -> bool:
    return text[:1] in set("0123456789+-−.[∞—") or text.endswith("x")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table: numeric columns right-aligned, text columns left-aligned."""
    cells = [[_text(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    right = [i > 0 and all(_numeric(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = zip(row, widths, right, strict=True)
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])


def records(rows: Sequence[dict[str, Any]]) -> str:
    """A table of rows given as {header: cell}, every row with the same headers."""
    return table(list(rows[0]), [list(row.values()) for row in rows])


# ------------------------------------------------------------------ data


@dataclass
class Split:
    """Training and test rows; ``beta`` the true coefficients, where known."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    beta: np.ndarray | None = None


@dataclass
class Data:
    """A named data set: ``draw(seed)`` → a :class:`Split` (fixed, or drawn per seed)."""

    name: str
    draw: Callable[[int], Split]


def synthetic(
    seed: Sequence[int],
    n_train: int,
    n_test: int,
    d: int,
    *,
    beta_norm: float = 1.0,
    noise: float | None = None,
) -> Split:
    """Rows x ~ N(0, I/(2d)), those of norm > 1 scaled onto the unit sphere; β in a uniform
    direction with ‖β‖ = ``beta_norm``. Linear (``noise`` given): y = clip(xᵀβ +
    noise·N(0, 1), −1, 1); logistic (``noise`` None): P(y = 1) = σ(xᵀβ)."""
    rng = np.random.default_rng(list(seed))
    beta = rng.normal(size=d)
    beta *= beta_norm / np.linalg.norm(beta)
    n = n_train + n_test
    X = rng.normal(size=(n, d)) / math.sqrt(2 * d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    if noise is None:
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(X @ beta)))).astype(float)
    else:
        y = np.clip(X @ beta + noise * rng.normal(size=n), -1.0, 1.0)
    return Split(X[:n_train], y[:n_train], X[n_train:], y[n_train:], beta)


# ------------------------------------------------------------------ methods and runs


@dataclass
class Method:
    """A method: ``make(point, seed, data)`` → an unfitted estimator. A ``baseline`` is
    non-private and fitted once per draw (its row repeats across the points). Methods
    with the same ``noise`` key draw the same noise seeds (paired comparisons); by default
    each method has its own."""

    key: str
    label: str
    make: Callable[[Any, int, Any], Any]
    style: tuple[str, str, str | None] = ("k", "-", None)
    baseline: bool = False
    noise: str | None = None


@dataclass
class Fit:
    """One fitted model and what it was fitted on, for the benchmark's ``measure``."""

    method: Method
    point: Any
    model: Any
    split: Split
    data: Any


class ZeroPredictor:
    """ŷ = 0 (Wang's 'trivial' baseline)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> ZeroPredictor:
        self.coef_ = np.zeros(X.shape[1])
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.zeros(X.shape[0])


class Majority(ZeroPredictor):
    """The training set's majority class (non-private)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> Majority:
        self.label = float(np.mean(y) >= 0.5)
        self.coef_ = np.zeros(X.shape[1])
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.label)


def diffprivlib_model(name: str, seed: int, **kwargs: Any) -> Any:
    """diffprivlib's ``models.<name>`` (a peer), seeded with ``seed``."""
    from diffprivlib import models

    return getattr(models, name)(random_state=seed % 2**32, **kwargs)


@dataclass
class Results:
    """Per (metric, method, point) the value of each seed's fit; baselines at point None."""

    methods: list[Method]
    seeds: list[int] = field(default_factory=list)
    values: dict[tuple[str, str, Any], dict[int, Any]] = field(default_factory=dict)
    elapsed: float = 0.0

    def get(self, metric: str, key: str, point: Any = None) -> list[Any]:
        """The seeds' values in seed order (NaN where the fit failed)."""
        baseline = any(m.baseline for m in self.methods if m.key == key)
        found = self.values.get((metric, key, None if baseline else point), {})
        return [found.get(s, math.nan) for s in self.seeds]

    def median(self, metric: str, key: str, point: Any = None) -> float:
        return quantiles(self.get(metric, key, point))[0]


def fit_seed(*identity: Any) -> int:
    """A fit's seed from its identity (data, method, point, seed): stable under subsets."""
    return zlib.crc32("|".join(map(str, identity)).encode())


def run(
    methods: Sequence[Method],
    data: Any,
    points: Sequence[Any],
    seeds: int | Iterable[int],
    measure: Callable[[Fit], dict[str, Any]],
    *,
    label: Callable[[Any], Any] = lambda point: point,
    results: Results | None = None,
) -> Results:
    """Fit every method at every point on every seed's draw; ``measure`` each fit.

    ``label(point)`` keys the results (the point itself by default); pass ``results`` to
    add to an earlier run. ``data`` is a :class:`Data` (or any object with ``name`` and
    ``draw``), handed to each ``make``.
    """
    res = results or Results(list(methods))
    start = time.perf_counter()
    for seed in range(seeds) if isinstance(seeds, int) else seeds:
        if seed not in res.seeds:
            res.seeds.append(seed)
        split = data.draw(seed)
        for m in methods:
            for point in [None] if m.baseline else points:
                noise = fit_seed(data.name, m.noise or m.key, point, seed)
                try:
                    model = m.make(point, noise, data).fit(split.X, split.y)
                except Exception as error:  # a failed fit is a finding, reported at the end
                    FAILURES.append(f"{m.label} ({data.name}, {point}): {error!r}"[:300])
                    continue
                values = measure(Fit(m, point, model, split, data))
                column = None if m.baseline else label(point)
                for metric, value in values.items():
                    res.values.setdefault((metric, m.key, column), {})[seed] = value
    res.elapsed += time.perf_counter() - start
    return res


_SPENT: dict[tuple[Any, float], float] = {}


def true_epsilon(model: Any, delta: float) -> float:
    """ε at ``delta`` a fitted dpledger estimator really spent (tightest valid accountant)."""
    from dpledger import accountant
    from dpledger.accountant import events

    tag = (tuple(model.releases_), delta)
    if tag not in _SPENT:
        _SPENT[tag] = accountant.epsilon(events.Composed(tag[0]), delta)
    return _SPENT[tag]


def paired(res: Results, metric: str, a: str, b: str, points: Sequence[Any]) -> str:
    """Method ``a`` against ``b`` seed by seed (same data, same seeds), at every point."""
    parts = []
    for p in points:
        diff = np.asarray(res.get(metric, a, p), float) - np.asarray(res.get(metric, b, p), float)
        diff = diff[np.isfinite(diff)]
        if diff.size:
            parts.append(
                f"{p:g}: higher in {int(np.sum(diff > 0))}, equal in {int(np.sum(diff == 0))} "
                f"of {diff.size}, median difference {fmt(float(np.median(diff)))}"
            )
    return "; ".join(parts)


# ------------------------------------------------------------------ reporting


def grid_table(
    res: Results,
    metric: str,
    points: Sequence[Any],
    *,
    head: str = "ε={:g}",
    show: Callable[[list[Any]], str] = cell,
    extra: Sequence[tuple[str, Callable[[Method, Any], str]]] = (),
    first: Sequence[tuple[str, Callable[[Method], str]]] = (),
    tail: Sequence[Sequence[Any]] = (),
) -> str:
    """Rows: the methods (private, then baselines). Columns: ``first`` per method, then per
    point ``show(values over seeds)`` and ``extra`` (header, fn(method, point))."""
    headers = ["method", *(h for h, _ in first)]
    for p in points:
        headers += [head.format(p), *(h for h, _ in extra)]
    rows = []
    for m in sorted(res.methods, key=lambda m: m.baseline):
        row = [m.label, *(fn(m) for _, fn in first)]
        for p in points:
            row += [show(res.get(metric, m.key, p)), *(fn(m, p) for _, fn in extra)]
        rows.append(row)
    return table(headers, [*rows, *tail])


@dataclass
class Panel:
    """One panel of :func:`plot`: a metric of a run against its points."""

    title: str
    res: Results
    metric: str
    points: Sequence[Any]
    ylabel: str
    stat: Callable[[list[Any]], float] = lambda v: quantiles(v)[0]
    x: Callable[[Method, Any], float] | None = None  # where a point is drawn (default: itself)
    levels: Sequence[tuple[str, float, str]] = ()  # extra horizontal lines: label, y, colour
    hide: Sequence[str] = ()  # methods left out of the axis limits (runaway peers)


def plot(
    path: Path, panels: Sequence[Panel], *, xlabel: str, yscale: str = "log", cols: int = 4
) -> str:
    """Draw the panels (medians against the points; baselines as horizontal lines) to
    ``path``; returns a line saying where it went, or why it was skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install matplotlib)"
    cols = min(cols, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.4 * nrows), squeeze=False)
    legend: dict[str, Any] = {}
    for ax, p in zip(axes.ravel(), panels, strict=False):
        shown: list[float] = []
        for m in (m for m in p.res.methods if not m.baseline):
            colour, line, marker = m.style
            ys = [p.stat(p.res.get(p.metric, m.key, q)) for q in p.points]
            xs = [p.x(m, q) if p.x else q for q in p.points]
            if not all(math.isfinite(x) for x in xs):
                xs = list(p.points)  # no finite x (no ε bound): drawn at its nominal point
            (handle,) = ax.plot(xs, ys, color=colour, ls=line, marker=marker)
            legend.setdefault(m.label, handle)
            if m.key not in p.hide:
                shown += [y for y in ys if math.isfinite(y) and (y > 0 or yscale != "log")]
        levels = [
            (m.label, p.stat(p.res.get(p.metric, m.key)), m.style[0])
            for m in p.res.methods
            if m.baseline
        ]
        drawn = [lv for lv in [*levels, *p.levels] if math.isfinite(lv[1]) and lv[1] > 1e-12]
        values = [v for _, v, _ in drawn]
        low = min(shown, default=0.0) - 0.01
        if yscale == "log":  # runaway methods clipped at 10³× the largest baseline
            top = min(max(shown + values, default=1.0), 1e3 * max(values or shown or [1.0]))
            ax.set_ylim(0.5 * min(shown + values, default=1.0), 2.0 * top)
        else:  # a baseline far below the methods (the majority class) stays below the axis
            ax.set_ylim(low, max(shown + values, default=1.0) + 0.01)
        for name, level, colour in drawn:
            below = yscale != "log" and level < low
            handle = ax.axhline(level, color=colour, lw=1)
            legend.setdefault(f"{name} ({fmt(level)}, below the axis)" if below else name, handle)
        ax.set_xscale("log")
        ax.set_yscale(yscale)
        ax.set_title(p.title, fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(p.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    width = max(4.4 * cols, 7.0)
    ncol = max(1, int(width / 2.8))  # labels up to ~45 characters
    space = 0.2 + 0.17 * math.ceil(len(legend) / ncol)  # inches under the panels
    fig.set_size_inches(width, 3.4 * nrows + space)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=ncol, fontsize=7)
    fig.tight_layout(rect=(0, space / (3.4 * nrows + space), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"plot: {path}"
