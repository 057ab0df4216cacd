"""Tight numerical accounting with privacy loss distributions (PLD).

A release is represented by a dominating pair (P, Q); its privacy loss L = log(P/Q)
under P determines δ(ε) = E[(1 − e^{ε−L})₊] + P(L = ∞), and the losses of a composition
add (Sommer, Meiser & Mohammadi 2019; Koskela, Jälkö & Honkela 2020; Gopi, Lee & Wutschitz
2021). This module computes, for any composition of supported releases,

* an **upper bound** δ̄(ε): every release is replaced by its *connect-the-dots* PLD on a
  uniform grid of step h (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022): masses on
  grid points whose hockey-stick curve passes through the exact δ at every grid point and
  is linear in e^ε between them. δ(ε) is convex in e^ε, so this curve lies above the true
  one; the discrete PLD is the loss distribution of a genuine pair that dominates the
  release, and domination survives composition;
* a **lower bound** δ̲(ε): every release is replaced by a grid PLD of a pair *dominated*
  by a pair of neighbouring inputs it attains — its outputs merged cell by cell, then
  onto grid points so that each merged loss is exactly a grid point's
  (:func:`dominated`). Merging is a post-processing, so the composition's δ can only
  decrease; unlike rounding every loss down (a bias of up to h per release), merging
  perturbs each loss distribution by O(h²), and the bracket closes like h².

The grid step adapts to the scale of the per-release losses (:meth:`PLDSummary._grid_for`);
:func:`epsilon_bounds` refines it until the bracket is as narrow as asked (``rtol``).

Both are composed in one shot: the grid distributions are zero-padded to a window of N
points, transformed once (real FFT), raised to each release's count, multiplied, and
transformed back. The window is chosen from Chernoff bounds computed with the exact
moment generating function of the discrete PLDs: the mass beyond its top is bounded and
*added* to δ̄ (and its aliasing into the window only adds mass — the safe side); the mass
below its bottom is bounded and subtracted from δ̲. Mass at +∞ (δ of (ε, δ) releases,
truncated tails of single releases) composes as 1 − Π(1 − mᵢ)^{kᵢ}.

A long composition is *band-limited*: only the frequencies below a few dozen carry it
(10⁵ DP-SGD steps: ~40 of 320,001), and both transforms of the whole window did little
else than compute them. There (:func:`._spectral._band_spectrum`), every frequency's
modulus is bounded from two transforms of twice a release's length (Taylor's theorem
between their samples), those above e^-70 are computed directly, the rest counted in
full in the error bound, and δ̄, δ̲ are summed from the kept frequencies in closed form
with their own rounding bound (:class:`._composition._SpectralComposition`): a cold ε of
10⁵ steps took 0.040 s, now 0.018 s (``benchmarks/accounting.py --table speed``).

Poisson subsampling is accounted in **both** directions (remove: ((1−γ)B + γA ‖ B); add:
(B ‖ (1−γ)B + γA)); each direction is composed separately and the larger δ is reported —
taking only one under-reports ε. Events not supported here (sampling without replacement,
discrete Gaussian, zCDP/mCDP) raise :class:`~dpledger.errors.NotApplicableError`.

Floating point: the grid masses of Gaussian and subsampled-Gaussian releases are
quadrature sums of non-negative terms (small relative error even in the far tails); a
relative margin of δ covers them (1e-7 plus 3e-11 per release: :func:`_mass_margin`).
The FFT composition's rounding error is *bounded* (:func:`_transform_error`:
componentwise and normwise FFT error bounds, propagated through the powers, the product
and the inverse transform), and the bound, summed over the grid points above ε
(:meth:`_Composition.rounding_guard`), is added to δ̄ and subtracted from δ̲. The count
amplifies the transform's error at the few low frequencies that carry a long
composition; those are recomputed directly (:func:`_direct_transform`: each release
transformed about its centre, with 1 − e^{−iφ} summed without cancellation), to a bound
~100x below the FFT's, which makes the guard 10–20x smaller. Those frequencies (and the
zero frequency) are also *raised to the count* from S and W = S − z apart
(:func:`._transform._accurate_power`: exp(k·(log S + log(1 − W/S))) with log(1 − ω)
from ω itself): NumPy's ``z ** k`` loses about u·k·(2 + 2π) relative (the logarithm of
a z near 1 carries an absolute error of u, which the power multiplies by k), and for
10⁵ steps that alone made the guard 1.5e-5 of δ; the bound ρ' of the accurate power is
relative to k·|ω| instead (≈ 1e-15 there), and :func:`_transform_error` uses it where it
is the smaller — the guard of 10⁵ steps falls to 3e-6 of δ. Where it still matters (δ
below 1e-7, or a guard above 1e-5 of δ — :func:`epsilon_bounds` lowers that to rtol/10)
the composition is repeated on exponentially tilted masses, whose error is small
relative to the δ of interest, for the directions that decide the answer.

Speed (issue #33): no BLAS call on the hot path (``np.einsum``'s own loops: OpenBLAS'
threads made a cold query 4x slower on a loaded machine), the moments at the tilt grid
computed only when a tilt is chosen, and each release's grid range found by a vectorised
64-ary search instead of a scalar bisection (``benchmarks/accounting.py``).

The package is laid out by layer: :mod:`._pairs_table` (each event type's dominating or
attained pairs), :mod:`._discretise` (pairs onto the loss grid), :mod:`._composition`
(the FFT composition, its rounding guard, tilting and window sizing), :mod:`._transform`
(the bound on the transform's rounding error), :mod:`._spectral` (band-limited
compositions: frequency bounds and closed-form sums), :mod:`._accountant`
(the summary and accountant, the only layer that uses threads) and :mod:`._threads`
(the process-wide pool and :func:`set_threads`). Everything is importable from here.
"""

# ruff: noqa: F401  (a package of re-exports: every name the module pld.py had)
from __future__ import annotations

from dpledger._public import namespace
from dpledger.accountant.costs import sqrt_directed as _sqrt_directed
from dpledger.accountant.pld._accountant import (
    _AUTO_POINTS,
    _BOUNDED_RATIO,
    _MAX_AUTO_HALVINGS,
    _TILT_BELOW,
    _TILT_ROUNDS,
    DEFAULT_GRID,
    DEFAULT_RTOL,
    MAX_GRID,
    MAX_REFINE,
    PLDAccountant,
    PLDSummary,
    _discretised,
    check_grid,
    epsilon_bounds,
    epsilon_lower_bound,
)
from dpledger.accountant.pld._composition import (
    _GUARD_TILT,
    _LAMBDAS,
    _MOMENTS,
    _TILT_GRID,
    _WINDOW_TAIL,
    _compose,
    _Composition,
    _guard_matters,
    _log_mgfs,
    _Moments,
    _moments,
    _release_tail,
    _saddle_tilt,
    _tilted,
    _tilted_moments,
    _window_tail_for,
)
from dpledger.accountant.pld._discretise import (
    _CELL_LOSS_ERROR,
    _GL_NODES,
    _GL_WEIGHTS,
    _ROUND_FRACTION,
    _TAIL,
    _X_STEP,
    MAX_GRID_POINTS,
    MAX_LOSS,
    _at_most_one,
    _cell_atoms,
    _cell_atoms_monotone,
    _check_grid,
    _connect_the_dots_atoms,
    _connect_the_dots_monotone,
    _Discrete,
    _grid_range,
    _merge_onto_grid,
    _monotone_nodes,
    _Nodes,
    _round_down,
    connect_the_dots,
    dominated,
)
from dpledger.accountant.pld._pairs_table import (
    _PAIRS,
    _pairs,
)
from dpledger.accountant.pld._threads import (
    _POOLS,
    _THREADS,
    _fft_workers,
    _in_parallel,
    _pool,
    set_threads,
)
from dpledger.accountant.pld._transform import (
    _UNIT,
    _fft_error,
    _transform_error,
)

__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_RTOL",
    "MAX_GRID_POINTS",
    "MAX_LOSS",
    "MAX_REFINE",
    "PLDAccountant",
    "PLDSummary",
    "epsilon_bounds",
    "epsilon_lower_bound",
    "set_threads",
]

__dir__ = namespace(__all__)
