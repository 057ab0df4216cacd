"""The PLD accountant: summaries, the grid step, ε(δ) and δ(ε), and certified brackets.

See :mod:`dpledger.accountant.pld` for the method.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpledger._numerics import round_up
from dpledger._solve import NoSafeValueError, largest_holding, smallest_satisfying
from dpledger._validation import check_int_at_least, check_positive, check_probability
from dpledger.accountant import events as ev
from dpledger.accountant._base import Accountant, Summary
from dpledger.accountant.discrete_gaussian import as_continuous
from dpledger.accountant.pld._composition import (
    _GUARD_TILT,
    _LAMBDAS,
    _TILT_GRID,
    _WINDOW_TAIL,
    _compose,
    _Composition,
    _guard_matters,
    _moments,
    _release_tail,
    _saddle_tilt,
    _tilted_moments,
    _window_tail_for,
)
from dpledger.accountant.pld._discretise import (
    _CELL_LOSS_ERROR,
    _TAIL,
    _Discrete,
    _GridLimitError,
    connect_the_dots,
    dominated,
)
from dpledger.accountant.pld._lattice import LatticeComposition, lattice_composition
from dpledger.accountant.pld._pairs_table import _PAIRS, _pairs
from dpledger.accountant.pld._threads import _fft_workers, _in_parallel
from dpledger.errors import InvalidArgumentError, NotApplicableError

DEFAULT_GRID = 1e-4
"""Default loss-grid step h."""

MAX_GRID = 0.05
"""The coarsest grid step accepted: coarser steps make the Chernoff window meaningless."""


def check_grid(grid: Any) -> float:
    """A grid step in (0, MAX_GRID]."""
    value = check_positive("grid", grid)
    if value > MAX_GRID:
        raise InvalidArgumentError(
            f"`grid` must be at most {MAX_GRID} (a loss discretisation step; the default is "
            f"{DEFAULT_GRID}). Found {grid!r}."
        )
    return value


_TILT_BELOW = 1e-7  # δ below which compositions are also tilted (see _compose)
_TILT_ROUNDS = 4  # most tilted compositions one ε(δ) query solves on (PLDSummary._epsilon)
_AUTO_POINTS = 1 << 21  # largest window the automatic step may need (refine: up to MAX)
_MAX_AUTO_HALVINGS = 16  # the automatic step is at least min(grid, DEFAULT_GRID)/16
_BOUNDED_RATIO = 512  # bounded-loss compositions: step at most s/512 (PLDSummary._bounded_step)


_GRID_CACHE_BYTES = 256 << 20
"""Most bytes of grid PLDs kept between queries (and at most 512 of them).

The cache used to be bounded by count only: a calibration probing 40 noise levels of a
release with 7·10⁶ grid points kept every one of them (5.8 GB for NoisyGD at rate 1e-6).
Least recently used first out; a grid larger than the whole budget is not kept."""
_GRID_CACHE: collections.OrderedDict[tuple[Any, ...], tuple[_Discrete, ...]] = (
    collections.OrderedDict()
)
_GRID_CACHE_LOCK = threading.Lock()


def _discretised(atom: ev.Event, h: float, kind: str, tail: float = _TAIL) -> tuple[_Discrete, ...]:
    """The grid PLDs of one release (one per direction), cached within a byte budget."""
    key = (atom, h, kind, tail)
    with _GRID_CACHE_LOCK:
        hit = _GRID_CACHE.get(key)
        if hit is not None:
            _GRID_CACHE.move_to_end(key)
            return hit
    grids = _discretise_release(atom, h, kind, tail)
    size = sum(grid.masses.nbytes for grid in grids)
    if size <= _GRID_CACHE_BYTES:
        with _GRID_CACHE_LOCK:
            _GRID_CACHE[key] = grids
            total = sum(sum(g.masses.nbytes for g in v) for v in _GRID_CACHE.values())
            while _GRID_CACHE and (total > _GRID_CACHE_BYTES or len(_GRID_CACHE) > 512):
                _, dropped = _GRID_CACHE.popitem(last=False)
                total -= sum(g.masses.nbytes for g in dropped)
    return grids


def _clear_caches() -> None:
    """Empty the grid cache (for cold timings: ``benchmarks/_common.py``)."""
    with _GRID_CACHE_LOCK:
        _GRID_CACHE.clear()


def _discretise_release(
    atom: ev.Event, h: float, kind: str, tail: float = _TAIL
) -> tuple[_Discrete, ...]:
    pairs = _pairs(atom, kind)
    tasks: list[Callable[[], _Discrete]]
    if kind == "upper":
        tasks = [functools.partial(connect_the_dots, pair, h, tail) for pair in pairs]
    else:
        tasks = [functools.partial(dominated, pair, h, tail) for pair in pairs]
    grids = tuple(_in_parallel(tasks))
    for grid in grids:
        # overflow in a pair's formulas (extreme rates or losses) must not reach the
        # composition as NaN or negative mass: refuse instead of guessing
        if not (np.all(np.isfinite(grid.masses)) and np.all(grid.masses >= 0.0)) or not (
            0.0 <= grid.infinite <= 1.0
        ):
            raise NotApplicableError(
                f"method 'pld' could not discretise {atom!r} in floating point "
                "(overflow in its loss distribution); use method='auto'."
            )
    return grids


@dataclass(frozen=True)
class PLDSummary(Summary):
    """A composition of releases, evaluated numerically on a grid of step at most ``grid``.

    The step actually used adapts to the scale of the per-release losses
    (:meth:`_grid_for`); ``refine`` halves it that many more times (for
    :func:`epsilon_bounds` at a small ``rtol``).
    """

    releases: tuple[tuple[ev.Event, int], ...] = ()
    grid: float = DEFAULT_GRID
    refine: int = 0
    scale_ratio: float = 1 / 16
    gaussian_only: bool = True
    scale_delta: float = 1e-6
    coarsen: bool = False
    #: tilt where the rounding guard exceeds this of δ (:func:`_guard_matters`)
    guard_tilt: float = _GUARD_TILT
    #: compose lattice releases (Laplace, binary randomized response) exactly
    #: (:mod:`._lattice`) instead of on a grid; False only to study the grid method
    exact: bool = True
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __add__(self, other: PLDSummary) -> PLDSummary:
        merged: dict[ev.Event, int] = dict(self.releases)
        for event, count in other.releases:
            merged[event] = merged.get(event, 0) + count
        return dataclasses.replace(self, releases=tuple(merged.items()), _cache={})

    def scaled(self, count: int) -> PLDSummary:
        """The guarantee of ``count`` repetitions."""
        releases = tuple((e, k * count) for e, k in self.releases)
        return dataclasses.replace(self, releases=releases, _cache={})

    def _lattice(self, kind: str) -> LatticeComposition | None:
        """The exact composition of the releases' ``kind`` pairs, where one applies.

        Where every release is a Laplace or binary randomized-response pair on one loss
        lattice (and the composition is small enough, :data:`._lattice.MAX_WORK`), its δ(ε)
        has a closed form, evaluated to ~1e-11 relative (:mod:`._lattice`): then no grid
        is used, and ``grid`` and ``refine`` do not matter.
        """
        if not self.exact or not self.releases:
            return None
        key = f"lattice-{kind}"
        if key not in self._cache:
            self._cache[key] = _lattice_of(self.releases, kind)
        lattice: LatticeComposition | None = self._cache[key]
        return lattice

    @property
    def is_exact(self) -> bool:
        """Whether both ends come from the exact lattice composition (no grid)."""
        return self._lattice("upper") is not None and self._lattice("lower") is not None

    def _grid_for(self, kind: str) -> float:
        """The grid step: ``grid``, halved while it exceeds 1/16 of the loss scale.

        Discretising a release moves its losses by up to h, which perturbs the variance
        of its loss distribution by O(h²) — on either side: connect-the-dots spreads it,
        the dominated merge (:func:`_merge_onto_grid`) contracts it. Relative to the
        composition's variance that is O((h/s)²), s the root-mean-square over releases of
        the standard deviation of each release's loss, and independent of the count: the
        bracket's relative width measured ≈ 0.26·(h/s)² on DP-SGD compositions. With a
        fixed step, releases of small losses (low sampling rates) were bracketed 2 % wide
        where the headline case was 2e-5 wide. So the step is halved while h > s/16
        (≈ 1e-3 relative width, the upper end alone within ≈ 1.5e-4; ``scale_ratio``
        sets the 1/16 — 1/32 made calibrating 1,000 Laplace releases 2x slower for 2e-7
        relative in ε; :func:`epsilon_bounds` sets √rtol/4), as long as the
        composition's window stays within :data:`_AUTO_POINTS` points and the step at
        least 1/16 of ``min(grid, DEFAULT_GRID)``; ``refine`` halves further.
        Powers of two keep the discretisations of nearby compositions shared. The same
        step serves both bounds (``kind`` is accepted for the callers' symmetry).
        """
        del kind
        key = "step"
        if key not in self._cache:
            self._cache[key] = self._auto_step()
        step: float = self._cache[key] / 2**self.refine
        return step

    def _auto_step(self) -> float:
        if self.coarsen:
            coarse = self._bounded_step()
            if coarse is not None:
                return coarse
        h = self.grid
        floor = min(self.grid, DEFAULT_GRID) / _MAX_AUTO_HALVINGS
        for _ in range(3):  # the scale is estimated on the grid itself: follow it
            scale, width = self._loss_scale(h)
            if not (math.isfinite(width) and width > 0 and scale > 0):
                return h
            new = h
            while (
                new > scale * self.scale_ratio
                and new / 2 >= floor
                and width / (new / 2) <= _AUTO_POINTS
            ):
                new /= 2
            if new == h:
                break
            h = new
        return h

    def _bounded_step(self) -> float | None:
        """A coarser step for compositions of bounded-loss releases, or None.

        Where every release's losses lie in a bounded interval with atoms at a few known
        loss values only (Laplace, randomized response, pure and (ε, δ)-DP releases:
        :attr:`Pair.atom_losses`), the composition's window spans count × range, and on
        the default grid the transform dominates the cost (2²¹ points for 100 Laplace
        releases). With the atoms on the grid, the discretisation error follows the same
        (h/s)² law as for DP-SGD (:meth:`_grid_for`): ε moves by ≈ 0.04·(h/s)² relative
        (measured: 1.3e-6 at h = 5e-3 for Laplace releases, s = 0.79). So the step
        doubles from ``grid`` while it stays below s/:data:`_BOUNDED_RATIO` (≈ 1e-7
        relative in ε), at most :data:`MAX_GRID`, and every atom stays on a grid point
        (an atom between grid points is spread over a cell: an error of order h, not h²,
        near ε₀ — 2.3e-4 for one Laplace release with ε₀ = 1/3). s² is the count-weighted
        mean of the releases' loss variances under P. Only when the accountant chose the
        grid (``coarsen``): a grid the caller sets is a largest step, never exceeded.
        """
        atoms: set[float] = set()
        for event, _ in self.releases:
            for kind in ("upper", "lower"):
                try:
                    pairs = _pairs(event, kind)
                except NotApplicableError:
                    continue
                for pair in pairs:
                    if pair.atom_losses is None:
                        return None
                    atoms.update(pair.atom_losses)
        try:
            parts = self._parts_at(self.grid, "upper", _TAIL)
        except NotApplicableError:
            return None
        steps = sum(k for _, k in self.releases)
        variance = max(sum(k * _moments(d, self.grid).m2 for d, k in side) for side in parts)
        scale = math.sqrt(max(variance, 0.0) / max(steps, 1))

        def on_grid(step: float) -> bool:
            return all(
                abs(a / step - round(a / step)) <= 1e-9 * max(1.0, abs(a / step)) for a in atoms
            )

        h = self.grid
        if not on_grid(h):
            return None
        while 2 * h <= scale / _BOUNDED_RATIO and 2 * h <= MAX_GRID and on_grid(2 * h):
            h *= 2
        return h

    def _loss_scale(self, h: float) -> tuple[float, float]:
        """(s, w): the per-release loss scale, and the composed window's width.

        From the grid PLDs of step ``h`` (upper ones where they exist). s² is the
        count-weighted mean of the releases' loss variances under P *tilted* to the
        saddle point of the Chernoff bound at δ = ``scale_delta`` — the part of the
        distribution that decides ε(δ) there (for a Gaussian PLD the plain variance; for
        heavy tails far more). On a grid coarser than the losses it comes out too large
        (the grid spreads them), so the step is then refined less, never more. With
        ``gaussian_only`` (the default), s is ∞ — no refinement — unless the
        composition's excess kurtosis Σk·κ₄/(Σk·σ²)² is at most 1: the (h/s)² law holds
        for near-Gaussian compositions (long runs: the low-rate DP-SGD cases), while
        heavy-tailed ones (tiny rates with little noise: their tilted variance is
        unreliable) would pay for a finer bulk whose ε is decided in the tail (calibrating
        σ at rate 1e-9 took 8 s instead of 0.2 s).
        w is the Chernoff window of the composition at :data:`_WINDOW_TAIL` (as in
        :func:`_compose`), at least one release's range. (0, inf) where no grid PLD is
        available.
        """
        try:
            parts = self._parts_at(h, "upper", _TAIL)
        except NotApplicableError:
            try:
                parts = self._parts_at(h, "lower", _TAIL)
            except NotApplicableError:
                return (0.0, math.inf)
        steps = max(sum(k for _, k in self.releases), 1)
        scale2 = 0.0
        width = 0.0
        log_tail = math.log(_WINDOW_TAIL)
        for side in parts:
            stats = [(_moments(d, h), k) for d, k in side]
            tilt = 0.0
            if not self.gaussian_only:
                log_mgf = sum(k * m.log_mgf_tilts for m, k in stats)
                near = float(np.min((log_mgf - math.log(self.scale_delta)) / _TILT_GRID))
                if math.isfinite(near) and near > 0:
                    tilt = float(_TILT_GRID[int(np.argmin(log_mgf - _TILT_GRID * near))])
            variance = 0.0
            cumulant4 = 0.0
            for (m, k), (d, _) in zip(stats, side, strict=True):
                m2, m4 = (m.m2, m.m4) if tilt == 0.0 else _tilted_moments(d, h, tilt)
                variance += k * m2
                cumulant4 += k * (m4 - 3 * m2 * m2)
            if self.gaussian_only and not cumulant4 <= variance * variance:
                return (math.inf, math.inf)
            scale2 = max(scale2, variance / steps)
            up = sum(k * m.log_mgf_up for m, k in stats)
            down = sum(k * m.log_mgf_down for m, k in stats)
            hi = float(np.min((up - log_tail) / _LAMBDAS))
            lo = float(np.max((log_tail - down) / _LAMBDAS))
            reach = max(len(d.masses) * h for d, _ in side)
            width = max(width, hi - lo, reach)
        return (math.sqrt(scale2), width)

    def _parts(
        self, kind: str, window_tail: float = _WINDOW_TAIL
    ) -> list[list[tuple[_Discrete, int]]]:
        """The grid PLDs to compose, one list per direction.

        Each release is discretised with the tail :func:`_release_tail` allows for
        ``window_tail`` (upper ends move that mass to +∞, where it stays below the
        window tail; lower ends round it down to the last grid point).
        """
        if sum(k for _, k in self.releases) > 2**53:
            raise NotApplicableError(
                "method 'pld' composes at most 2**53 releases (the counts enter float "
                "arithmetic); use method='auto', 'gdp', 'rdp' or 'zcdp'."
            )
        steps = sum(k for _, k in self.releases)
        tail = _release_tail(window_tail, steps)
        return self._parts_at(self._grid_for(kind), kind, tail)

    def _parts_at(self, h: float, kind: str, tail: float) -> list[list[tuple[_Discrete, int]]]:
        """The grid PLDs of step ``h`` to compose, one list per direction."""
        # a canonical order, so that equal compositions give bit-identical answers
        releases = sorted(self.releases, key=lambda item: (repr(item[0]), item[1]))
        two_sided = [(e, k) for e, k in releases if len(_pairs(e, kind)) == 2]
        one_sided = [(e, k) for e, k in releases if len(_pairs(e, kind)) == 1]
        shared = [(_discretised(e, h, kind, tail)[0], k) for e, k in one_sided]
        return [
            shared + [(_discretised(e, h, kind, tail)[side], k) for e, k in two_sided]
            for side in ((0, 1) if two_sided else (0,))
        ]

    def _tilts(self, kind: str, window_tail: float, near: float) -> list[float]:
        """The saddle-point tilt of each direction for ε near ``near`` (2 digits of λ)."""
        # two significant digits of λ, so that nearby queries share one composition
        return [
            float(f"{_saddle_tilt(parts, self._grid_for(kind), near):.2g}")
            for parts in self._parts(kind, window_tail)
        ]

    def _chernoff_epsilon(self, kind: str, window_tail: float, delta: float) -> float:
        """The ε at which the Chernoff bound on P(L ≥ ε) reaches δ, over the directions.

        min over λ > 0 of (K(λ) − log δ)/λ, K the composed log-MGF of the finite part: a
        first guess of ε(δ) (above the answer; the hockey-stick δ(ε) ≤ P(L > ε)), used
        only to choose a tilt.
        """
        h = self._grid_for(kind)
        values = []
        for parts in self._parts(kind, window_tail):
            log_mgf = sum(k * _moments(d, h).log_mgf_tilts for d, k in parts)
            values.append(float(np.min((log_mgf - math.log(delta)) / _TILT_GRID)))
        return max(values)

    def _directions(
        self,
        kind: str,
        window_tail: float = _WINDOW_TAIL,
        near: float | None = None,
        tilts: list[float] | None = None,
    ) -> list[_Composition]:
        """Composed PLDs, one per direction; tilted for accuracy near ε = ``near``.

        ``tilts`` (one per direction, from :meth:`_tilts`) may be given instead of ``near``.
        """
        if tilts is None:
            tilts = [] if near is None else self._tilts(kind, window_tail, near)
        parts = self._parts(kind, window_tail)
        tilts = tilts or [0.0] * len(parts)
        if sum(k for _, k in self.releases) == 1:
            tilts = [0.0] * len(parts)  # one release is composed exactly, untilted (_compose)
        # cached direction by direction: a refinement that tilts one direction reuses the
        # other's untilted composition (see _binding)
        keys = [f"direction-{kind}-{window_tail!r}-{i}-{t!r}" for i, t in enumerate(tilts)]
        missing = [i for i, key in enumerate(keys) if key not in self._cache]
        if missing:
            composed = _in_parallel(
                [
                    functools.partial(
                        _compose,
                        parts[i],
                        self._grid_for(kind),
                        window_tail,
                        tilts[i],
                        workers=_fft_workers(len(missing)),
                    )
                    for i in missing
                ]
            )
            for i, composition in zip(missing, composed, strict=True):
                self._cache[keys[i]] = composition
        return [self._cache[key] for key in keys]

    @staticmethod
    def _binding(
        directions: list[_Composition], epsilon: float, kind: str
    ) -> tuple[list[bool], list[_Composition]]:
        """The directions that can decide an answer near ε: as a mask, and as a list.

        They are those with δ(ε) at least half the largest. The others (the "add"
        direction of DP-SGD sits at 0.06–0.2 of the "remove" one) keep their untilted
        composition in a refinement: it is a valid bound, and its rounding guard moves a
        δ that the maximum over directions does not take.
        """
        values = [c.delta(epsilon, kind) for c in directions]
        top = max(values)
        mask = [v >= top / 2 for v in values]
        return mask, [c for c, b in zip(directions, mask, strict=True) if b]

    def _focused_tilts(
        self, kind: str, window_tail: float, near: float, binding: list[bool]
    ) -> list[float]:
        """:meth:`_tilts`, with 0 (the untilted composition) for non-binding directions."""
        tilts = self._tilts(kind, window_tail, near)
        return [t if b else 0.0 for t, b in zip(tilts, binding, strict=True)]

    def _refinement(
        self,
        kind: str,
        window_tail: float,
        near: float | None = None,
        tilts: list[float] | None = None,
    ) -> list[_Composition] | None:
        """:meth:`_directions` for a refinement (a tilt, a finer window), or None.

        A refinement only tightens an answer that is already valid; where it cannot be
        built (its window beyond :data:`MAX_GRID_POINTS`, an overflow) the valid answer
        stands. (A tilted lower composition of 294 Gaussians at δ = 1e-15 needed 1.7e7
        points, and its refusal once discarded the bound the untilted one had certified.)
        """
        try:
            return self._directions(kind, window_tail, near=near, tilts=tilts)
        except NotApplicableError:
            return None

    def _upper_delta(self, epsilon: float, target: float) -> float:
        """δ̄(ε) with a window for δ near ``target``, tilted when δ is small (∞: none)."""
        tail = _window_tail_for(target)
        directions = self._refinement("upper", tail)
        if directions is None:
            return math.inf
        value = max(c.delta(epsilon, "upper") for c in directions)
        binding, deciding = self._binding(directions, epsilon, "upper")
        if min(value, target) < _TILT_BELOW or _guard_matters(
            deciding, epsilon, value, self.guard_tilt
        ):
            tilts = self._focused_tilts("upper", tail, epsilon, binding)
            tilted = self._refinement("upper", tail, tilts=tilts)
            if tilted is not None:
                value = min(value, max(c.delta(epsilon, "upper") for c in tilted))
        return value

    def delta_bounds(self, epsilon: float) -> tuple[float, float]:
        """(lower, upper) bounds on δ(ε)."""
        if not self.releases:
            return (0.0, 0.0)
        upper = self.delta(epsilon)
        exact = self._lattice("lower")
        if exact is not None:
            return (min(exact.delta_bounds(epsilon)[0], upper), upper)
        directions = self._directions("lower", 1e-16)
        shift = sum(k for _, k in self.releases) * _CELL_LOSS_ERROR  # see lower_epsilon
        lower = max(c.delta(epsilon + shift, "lower") for c in directions)
        # inconsistent (a numerical failure): the trivial lower bound, never the upper one
        return (lower if lower <= upper else 0.0, upper)

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε)."""
        if not self.releases:
            return 0.0
        exact = self._lattice("upper")
        if exact is not None:
            return exact.delta_bounds(epsilon)[1]
        directions = self._directions("upper", 1e-16)
        value = max(c.delta(epsilon, "upper") for c in directions)
        if (
            _window_tail_for(value) < 1e-16
            or value < _TILT_BELOW
            or _guard_matters(directions, epsilon, value, self.guard_tilt)
        ):
            # a small δ: recompute with a window sized (and a tilt chosen) for it; the
            # first value may be far above the answer (the untilted guard), so the window
            # follows the answer until its size no longer changes
            target = value
            for _ in range(_TILT_ROUNDS):
                value = min(value, self._upper_delta(epsilon, target))
                if _window_tail_for(value) >= _window_tail_for(target):
                    break
                target = value
        return value

    def delta_curve(self, epsilons: list[float]) -> list[float]:
        """Upper bounds on δ(ε) at many ε from one composition (for plots).

        Valid at every ε, but not tilted: below δ ≈ 1e-10 the values are looser than
        :meth:`delta` (by up to ~1e-16 absolute plus the rounding guard).
        """
        if not self.releases:
            return [0.0 for _ in epsilons]
        exact = self._lattice("upper")
        if exact is not None:
            return [exact.delta_bounds(e)[1] for e in epsilons]
        directions = self._directions("upper", 1e-16)
        return [max(c.delta(e, "upper") for c in directions) for e in epsilons]

    def delta_at_most(self, epsilon: float, target: float) -> float:
        """Upper bound on δ(ε), computed with a window sized for δ near ``target``."""
        if not self.releases:
            return 0.0
        if self._lattice("upper") is not None:
            return self.delta(epsilon)
        value = self._upper_delta(epsilon, target)
        return value if value <= 1.0 else self.delta(epsilon)

    def _epsilon(self, delta: float, kind: str) -> float:
        """Upper bound on ε(δ) (``kind="upper"``), rounded up: exact where it can be."""
        exact = self._lattice(kind) if kind == "upper" else None
        if exact is not None:
            return exact.epsilon_upper(delta)  # rounded up already
        return round_up(self._grid_epsilon(delta, kind))

    def _grid_epsilon(self, delta: float, kind: str) -> float:
        """Upper bound on ε(δ) (``kind="upper"``) from grid compositions.

        Below δ = :data:`_TILT_BELOW` the untilted composition is too coarse (its rounding
        guard, :func:`_transform_error` summed above ε, is ~1e-14 or more): the answer is
        re-solved on compositions tilted towards ε. The tilt is the saddle point of a
        *guess* of ε, and a poor guess gives a poor answer (issue 15: tilting towards
        the untilted answer — itself far off — gave ε(1e-15) = 18.44 for a composition
        whose exact ε is 17.48). So the first guess is the Chernoff ε (above the answer,
        but close), and the tilt then follows the answer until it no longer changes.
        Every solve is a valid upper bound; the smallest is returned.
        """
        # mass outside the window changes δ by at most this: 1e-9 of the target is enough
        tail = _window_tail_for(delta)
        plain = self._directions(kind, tail)
        result = self._solve_epsilon(plain, delta, kind)
        if kind != "upper" or not 0.0 < result < math.inf:
            return result
        # tilt where the rounding guard matters, and always below _TILT_BELOW
        binding, deciding = self._binding(plain, result, kind)
        if delta >= _TILT_BELOW and not _guard_matters(deciding, result, delta, self.guard_tilt):
            return result
        near = self._chernoff_epsilon(kind, tail, delta)
        if 0.0 < result < near:
            near = result
        seen: list[list[float]] = []
        for _ in range(_TILT_ROUNDS):
            if not (0.0 < near < math.inf):
                break
            tilts = self._focused_tilts(kind, tail, near, binding)
            if tilts in seen:
                break  # the tilt has settled
            seen.append(tilts)
            tilted = self._refinement(kind, tail, tilts=tilts)
            if tilted is None:
                break
            value = self._solve_epsilon(tilted, delta, kind)
            result = min(result, value)
            near = value
        return result

    def lower_epsilon(self, delta: float) -> float | None:
        """A certified lower bound on ε(δ), or None where none is certified.

        ε̲ is an ε at which δ̲(ε) > δ was evaluated (the largest a bisection finds, to
        1e-12 relative), where δ̲ ≤ δ_true is the δ of a composition of pairs dominated
        by attained ones (:func:`dominated`), less the window's tail and the transform's
        rounding guard: there the true δ exceeds the target, so the true ε(δ) ≥ ε̲ — less
        K·:data:`_CELL_LOSS_ERROR` for the quadrature error of the merged losses. If δ̲
        still exceeds the target at the top of the window, only mass at +∞ can do so
        honestly: ∞ is returned when that mass alone exceeds δ, otherwise None (the
        search failed — never an upper bound passed off as a lower one).
        """
        if not self.releases:
            return 0.0
        exact = self._lattice("lower")
        if exact is not None:
            return exact.epsilon_lower(delta)
        tail = _window_tail_for(delta)
        plain = self._directions("lower", tail)
        result = self._solve_lower(plain, delta)
        if result is None or not 0.0 < result < math.inf:
            return result
        # the cells' losses come from quadrature, each within _CELL_LOSS_ERROR of the
        # true merged loss: the composed grid loss may exceed the true one by K times it
        shift = sum(k for _, k in self.releases) * _CELL_LOSS_ERROR
        # small δ, or a rounding guard that matters: the untilted transform's rounding
        # (subtracted in full) dominates δ̲ there — solve again on compositions tilted
        # towards the answer (as for the upper end); every solve is a valid lower bound
        binding, deciding = self._binding(plain, result, "lower")
        if delta >= _TILT_BELOW and not _guard_matters(deciding, result, delta, self.guard_tilt):
            return max(0.0, result - shift)
        seen: list[list[float]] = []
        near = result
        for _ in range(_TILT_ROUNDS):
            tilts = self._focused_tilts("lower", tail, near, binding)
            if tilts in seen:
                break
            seen.append(tilts)
            tilted = self._refinement("lower", tail, tilts=tilts)
            if tilted is None:
                break
            value = self._solve_lower(tilted, delta, start=result)
            if value is None or not 0.0 < value < math.inf:
                break
            result = max(result, value)
            near = value
        return max(0.0, result - shift)

    @staticmethod
    def _solve_lower(
        directions: list[_Composition], delta: float, start: float = 0.0
    ) -> float | None:
        """The largest ε found with δ̲(ε) > δ in one of ``directions`` (bisection).

        Any ε at which some certified δ̲(ε) exceeds δ is a lower bound on the true ε(δ)
        (the true δ(·) is non-increasing and above δ̲); only such evaluated points are
        returned, never a root the search merely bracketed. ``start`` is a point already
        certified (by another composition); a tilted composition is accurate only near its
        tilt, so its search starts there instead of at 0. 0 where δ̲(0) ≤ δ (the trivial
        bound); ∞ where the mass at +∞ alone exceeds δ; None where δ̲ exceeds δ up to the
        top of the window by other mass (the search failed).
        """

        def above(eps: float) -> bool:
            return max(c.delta(eps, "lower") for c in directions) > delta

        top = max((c.start + c.length) * c.h for c in directions)
        if start <= 0.0 and not above(0.0):
            return 0.0
        if above(top):
            if max(c.infinite for c in directions) > delta:
                return math.inf
            return None
        return largest_holding(above, max(start, 0.0), top, rtol=1e-12)

    @staticmethod
    def _solve_epsilon(directions: list[_Composition], delta: float, kind: str) -> float:
        def excess(eps: float) -> float:
            achieved = max(c.delta(eps, kind) for c in directions)
            return achieved - delta if achieved > delta else min(achieved - delta, 0.0)

        if excess(0.0) <= 0:
            return 0.0
        top = max((c.start + c.length) * c.h for c in directions)
        if excess(top) > 0:
            return math.inf  # only the mass at +∞ (or the tail bound) exceeds δ
        try:
            return smallest_satisfying(excess, 0.0, top, rtol=1e-12, what="epsilon")
        except NoSafeValueError as error:
            raise NotApplicableError(f"the PLD inversion for ε failed: {error}") from None

    def epsilon_bounds(self, delta: float) -> tuple[float | None, float]:
        """(lower, upper) certified bracket on ε(δ); lower is None where none is certified.

        A lower bound above the upper one is inconsistent (a numerical failure): it is
        reported as None, never clamped to the upper bound.
        """
        if not self.releases:
            return (0.0, 0.0)
        upper = self._epsilon(delta, "upper")
        lower = self.lower_epsilon(delta)
        if lower is None or lower > upper:
            return (None, upper)
        return (lower, upper)

    def epsilon(self, delta: float) -> float:
        """Upper bound on ε(δ)."""
        if not self.releases:
            return 0.0
        if delta == 0 and self._lattice("upper") is None:
            return math.inf
        return self._epsilon(delta, "upper")


def _lattice_of(releases: tuple[tuple[ev.Event, int], ...], kind: str) -> LatticeComposition | None:
    """:func:`lattice_composition` of the releases' ``kind`` pairs (None: not lattice)."""
    measures = []
    for event, count in releases:
        try:
            pairs = _pairs(event, kind)
        except NotApplicableError:
            return None
        measure = pairs[0].cell_measure() if len(pairs) == 1 else None
        if measure is None:
            return None
        measures.append((measure, count))
    return lattice_composition(tuple(measures))


EXACT_DISCRETE_SIGMA = 1000.0
"""One-dimensional discrete Gaussians up to this σ keep their exact enumerated pair in the
PLD method (about 12σ atoms); wider ones are priced as continuous Gaussians."""


class PLDAccountant(Accountant[PLDSummary]):
    """Numerical PLD accountant: connect-the-dots upper bound, dominated (merged) lower bound.

    Valid for a composition fixed in advance (use it in a Ledger through ``plan``).
    """

    method: ClassVar[str] = "pld"
    #: event type → ``handler(atom, kind)``, the pair(s) of one such release (:func:`_pairs`)
    handlers: ClassVar[dict[type[ev.Event], Any]] = _PAIRS

    def __init__(self, grid: float | None = None) -> None:
        """Compose on grids of step at most ``grid``.

        By default :data:`DEFAULT_GRID`, which compositions of bounded-loss releases may
        coarsen (:meth:`PLDSummary._bounded_step`); a step given here is never exceeded.
        """
        self.grid = None if grid is None else check_grid(grid)
        super().__init__()
        if self.grid is None:
            self._summary = PLDSummary((), DEFAULT_GRID, coarsen=True)
        else:
            self._summary = PLDSummary((), self.grid)

    @classmethod
    def zero(cls) -> PLDSummary:
        """Nothing released."""
        return PLDSummary()

    @classmethod
    def summarize(cls, event: ev.Event, grid: float | None = None) -> PLDSummary:
        """The PLD summary of ``event`` (checks every release is supported).

        ``grid``: as for the constructor (None: the default step, coarsened where allowed).
        Discrete Gaussians are accounted at the continuous price plus a certified slack
        (:mod:`~dpledger.accountant.discrete_gaussian`, an (0, s)-DP release composed in),
        except one-dimensional ones with σ ≤ :data:`EXACT_DISCRETE_SIGMA`, whose exact pair
        is enumerated.
        """
        event, slack = as_continuous(event, exact_one_dimensional=EXACT_DISCRETE_SIGMA)
        if slack > 0:
            event = event + ev.ApproxDP(0.0, slack)
        atoms = ev.flatten(event)
        for atom in atoms:
            _pairs(atom)
        if grid is None:
            return PLDSummary(tuple(atoms.items()), DEFAULT_GRID, coarsen=True)
        return PLDSummary(tuple(atoms.items()), check_grid(grid))

    def compose(self: Any, event: ev.Event, count: int = 1) -> Any:
        """Add ``count`` repetitions of ``event`` (all-or-nothing)."""
        ev._check_event("event", event)
        count = check_int_at_least("count", count, 1)
        new = PLDAccountant.summarize(event, self.grid).scaled(count)
        return self._compose_summary(new, event, count)

    def _compose_summary(self, new: PLDSummary, event: ev.Event, count: int) -> PLDAccountant:
        self._summary = self._summary + new
        self._events.append((event, count))
        return self


def epsilon_lower_bound(
    event: ev.Event, delta: float, *, grid: float = DEFAULT_GRID
) -> float | None:
    """A certified lower bound on the ε of ``event`` at ``delta``, from attained pairs.

    Returns None where no lower bound is certified (the search failed numerically); a
    returned float is a valid lower bound, never an upper bound in disguise.

    Available for more events than :func:`epsilon_bounds` — also for the discrete Gaussian
    (a one-dimensional integer shift) and sampling without replacement (the replaced
    record alone moves the statistic) — because a lower bound only needs *some* pair of
    neighbouring inputs, not a dominating one. It assumes the declared sensitivity is
    attained by a one-dimensional shift. ``grid`` is the finest step: where the window
    would exceed :data:`MAX_GRID_POINTS` the step is doubled (up to :data:`MAX_GRID`).

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant.pld import epsilon_lower_bound
        >>> low = epsilon_lower_bound(ev.DiscreteGaussian(sigma=5.0) * 100, 1e-5)
        >>> 9.9 < low <= 10.72  # the zCDP upper bound is 10.72
        True
    """
    ev._check_event("event", event)
    delta = check_probability("delta", delta)
    grid = check_grid(grid)
    atoms = ev.flatten(event)
    for atom in atoms:
        _pairs(atom, "lower")
    if delta == 0:
        raise NotApplicableError("PLD lower bounds need delta > 0.")
    step = grid
    while True:
        try:
            return PLDSummary(tuple(atoms.items()), step).lower_epsilon(delta)
        except _GridLimitError:
            # a window beyond MAX_GRID_POINTS at this step: a lower bound is valid on any
            # grid, so coarsen (as epsilon_bounds does) instead of refusing (528 Gaussians
            # with σ = 0.3 at δ = 1e-15 needed 1.68e7 points on the default step)
            if 2 * step > MAX_GRID:
                raise
            step *= 2


DEFAULT_RTOL = 1e-3
"""Default relative width of :func:`epsilon_bounds`' bracket."""

MAX_REFINE = 8
"""Most halvings of the automatic grid step :func:`epsilon_bounds` tries for its ``rtol``."""


def epsilon_bounds(
    event: ev.Event,
    delta: float,
    *,
    rtol: float = DEFAULT_RTOL,
    grid: float | None = None,
) -> tuple[float | None, float]:
    """A certified (lower, upper) bracket on the ε of ``event`` at ``delta`` (PLD).

    Upper end: the composition of connect-the-dots PLDs (Doroshenko, Ghazi, Kamath, Kumar
    & Manurangsi 2022, "Connect the dots: tighter discrete approximations of privacy loss
    distributions"), each the PLD of a pair that *dominates* the release. Lower end: the
    composition of grid PLDs of pairs *dominated* by a pair of neighbouring inputs the
    release attains (:func:`dominated`: a post-processing — cells merged into single
    outputs, then into grid points — so no rounding bias accumulates over a long
    composition, unlike losses rounded down to the grid). Both are composed by FFT as in
    Koskela, Jälkö & Honkela 2020 and Gopi, Lee & Wutschitz 2021 (PRV accountant), with
    the window's tails and the transform's rounding guard on the safe side of each.

    The grid step adapts to the scale of the per-release losses (see
    :meth:`PLDSummary._grid_for`); while the bracket is wider than ``rtol`` relative to
    its upper end, the step is halved (up to :data:`MAX_REFINE` times, or until a
    window would exceed :data:`MAX_GRID_POINTS`). Every bracket found along the way is
    valid, so the largest lower and the smallest upper end are returned: the bracket may
    stay wider than ``rtol`` where the grid limit is reached first.

    The upper end comes from the bracket's own grids, which are coarser than the
    accountant's default where ``rtol`` allows: it can exceed what ``epsilon(event, delta,
    method="pld")`` returns by up to about ``rtol`` relative (both are upper bounds; take
    the smaller where it matters). The lower end is None where no lower bound is certified (see
    :meth:`PLDSummary.lower_epsilon`); it is never clamped to the upper end.

    Args:
        event: The releases (every one supported by the PLD method, with a dominating
            pair for the upper end and an attained one for the lower end).
        delta: The δ of the guarantee, in [0, 1].
        rtol: The relative width (upper − lower)/upper to aim for; the default 1e-3
            answers typical audit questions, 1e-5 is reachable for most compositions.
        grid: The coarsest grid step; by default the step starts at √rtol times the
            loss scale (halving from :data:`MAX_GRID`; coarser than the default
            :data:`DEFAULT_GRID` where the losses are large, which is faster), and is
            refined from there.

    Example:
        >>> from dpledger import events as ev
        >>> from dpledger.accountant.pld import epsilon_bounds
        >>> lo, hi = epsilon_bounds(ev.Gaussian(5.0) * 100, 1e-5)
        >>> lo <= 9.997256146 <= hi
        True
        >>> (hi - lo) / hi <= 1e-3
        True
    """
    ev._check_event("event", event)
    delta = check_probability("delta", delta)
    rtol = check_positive("rtol", rtol)
    ratio = min(1.0, math.sqrt(rtol)) / 4
    coarsest = MAX_GRID if grid is None else check_grid(grid)
    releases = PLDAccountant.summarize(event, coarsest).releases
    # the rounding guard moves each end of the bracket by ~1/20 of its share of δ (relative
    # to ε): tilt where that share exceeds rtol/10, so it takes at most ~1 % of the width
    level = min(_GUARD_TILT, rtol / 10)
    summary = PLDSummary(releases, coarsest, 0, ratio, False, max(delta, 1e-300), guard_tilt=level)
    lower, upper = summary.epsilon_bounds(delta)
    for refine in range(1, MAX_REFINE + 1):
        if summary.is_exact:
            break  # no grid: refining changes nothing
        if not math.isfinite(upper):
            break  # mass at +∞ above δ: a finer grid does not move it
        if lower is not None and upper - lower <= rtol * upper:
            break
        finer = PLDSummary(
            releases, coarsest, refine, ratio, False, max(delta, 1e-300), guard_tilt=level
        )
        try:
            low, high = finer.epsilon_bounds(delta)
        except NotApplicableError:
            break  # the window would exceed MAX_GRID_POINTS: keep the bracket found
        upper = min(upper, high)
        if low is not None:
            lower = low if lower is None else max(lower, low)
    if as_continuous(event, exact_one_dimensional=EXACT_DISCRETE_SIGMA)[1] > 0:
        # discrete Gaussians priced as continuous ones: the substitute is not attained by
        # the release, so the lower end comes from the release's own attained pairs
        try:
            lower = epsilon_lower_bound(event, delta)
        except NotApplicableError:
            lower = None
    if lower is not None and lower > upper:
        return (None, upper)  # inconsistent: a numerical failure, never clamped
    return (lower, upper)
