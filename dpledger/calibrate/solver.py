"""The calibration solver and the calibrations built on it."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from dpledger import accountant
from dpledger._numerics import round_up
from dpledger._public import namespace
from dpledger._solve import NoSafeValueError, smallest_satisfying, step_up
from dpledger._validation import (
    check_callable,
    check_choice,
    check_int_at_least,
    check_nonnegative,
    check_positive,
    check_probability,
    check_reals,
)
from dpledger.accountant import events as ev
from dpledger.errors import (
    CalibrationError,
    DPLedgerError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    LegacyFormulaWarning,
    NotApplicableError,
    UnboundedLossError,
)
from dpledger.mechanisms.base import Mechanism

__all__ = [
    "LegacyFormulaWarning",
    "classical_gaussian_sigma",
    "discrete_gaussian_sigma",
    "discrete_laplace_scale",
    "gaussian_sigma",
    "gaussian_sigmas",
    "laplace_scale",
    "mechanism",
    "solve",
    "split_budget",
]

M = TypeVar("M", bound=Mechanism)

_MAX_DOUBLINGS = 2000


_MAX_COUNT = 2**63 - 1
"""The largest ``count`` a calibration accepts (a documented limit; accounting has none)."""


def check_count(count: Any) -> int:
    """``count`` as an int in [1, 2⁶³ − 1]."""
    value = check_int_at_least("count", count, 1)
    if value > _MAX_COUNT:
        raise InvalidArgumentError(
            f"`count` must be at most 2**63 − 1 for a calibration. Found an integer of "
            f"{len(str(value))} digits."
        )
    return value


def _target(epsilon: Any, delta: Any) -> tuple[float, float]:
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    return epsilon, delta


def _use_probability(event: ev.Event) -> float | None:
    """An upper bound on the probability that one record is used at all by ``event``.

    Defined when every release in ``event`` runs on a subsample (``PoissonSampled`` at rate
    q, ``SampledWithoutReplacement`` at rate m/n, each sampled independently): the record
    is used with probability p = 1 − Πᵢ(1 − qᵢ)^{kᵢ} (kᵢ releases at rate qᵢ), returned
    rounded up. ``None`` if some release sees the whole data set.

    Whatever the noise, ``event`` is then (0, p)-DP: neighbours' runs can be coupled to
    coincide unless the differing record is sampled, so every event of the output has
    probabilities within p of each other (add/remove for Poisson, replace-one for a fixed
    sample size). Where p ≤ δ every noise level meets (ε, δ) and no smallest one exists.
    """
    log_unused = 0.0
    for leaf, count in ev.flatten(event).items():
        if not isinstance(leaf, ev.SAMPLINGS):
            return None
        log_unused += count * math.log1p(-leaf.rate)
    return min(1.0, round_up(-math.expm1(log_unused) * (1 + 1e-12)))


def _excess_function(
    make_event: Callable[[float], ev.Event], epsilon: float, delta: float, method: str
) -> Callable[[float], float]:
    """excess(p) ≤ 0 ⇔ make_event(p) meets (ε, δ); non-increasing in the noise p."""
    if delta > 0:
        log_delta = math.log(delta)

        def by_delta(p: float) -> float:
            achieved = accountant.delta(make_event(p), epsilon, method=method)
            gap = (math.log(achieved) if achieved > 0 else -math.inf) - log_delta
            # The sign must come from comparing δ itself: two δ's a few ulps apart can
            # have equal logarithms, and "equal" must not pass for "within target".
            return max(gap, 5e-324) if achieved > delta else min(gap, 0.0)

        return by_delta

    def by_epsilon(p: float) -> float:
        return accountant.epsilon(make_event(p), 0.0, method=method) - epsilon

    return by_epsilon


def solve(
    make_event: Callable[[float], ev.Event],
    *,
    epsilon: float,
    delta: float,
    method: str = "auto",
    initial: float = 1.0,
    parameter: str = "noise parameter",
    rtol: float = 1e-12,
) -> float:
    """The smallest noise parameter p for which ``make_event(p)`` is (ε, δ)-DP.

    ``make_event`` must describe a release whose privacy improves as p grows (a noise
    scale). The bracket is found by doubling/halving from ``initial``; the root by
    Brent's method; then the candidate is re-accounted and stepped up until it meets
    the target (see :func:`dpledger._solve.smallest_satisfying`).

    Args:
        make_event: p ↦ the privacy event of the whole release with noise p.
        epsilon: Target ε > 0.
        delta: Target δ in [0, 1).
        method: Accounting method (see :data:`dpledger.accountant.METHODS`).
        initial: A starting guess for p.
        parameter: Name of p, for messages.
        rtol: Relative tolerance of the root.

    Returns:
        p, which meets the target when re-accounted with ``method``. Where every release
        is subsampled and a record is used at all with probability ≤ δ
        (:func:`_use_probability`), every p meets the target and there is no smallest: the
        first p found to meet it (the Rényi DP calibration with method "auto") is returned.

    Raises:
        CalibrationError: No p in the searched range meets the target (e.g. δ below what
            an (ε, δ) release in ``make_event`` already spends), with the bracket tried.

    Example:
        >>> from dpledger import calibrate, events as ev
        >>> sigma = calibrate.solve(lambda s: ev.Gaussian(s) * 10, epsilon=1.0, delta=1e-5)
        >>> round(sigma, 4)
        11.7973
    """
    make_event = check_callable("make_event", make_event)
    epsilon, delta = _target(epsilon, delta)
    method = check_choice("method", method, accountant.METHODS)
    initial = check_positive("initial", initial)
    rtol = check_positive("rtol", rtol)
    if rtol > 0.1:
        raise InvalidArgumentError(f"`rtol` must be at most 0.1. Found {rtol!r}.")
    excess = _excess_function(make_event, epsilon, delta, method)
    seen: dict[float, float] = {}  # the bracket ends are evaluated again by the root finder

    def safe_excess(p: float) -> float:
        if p in seen:
            return seen[p]
        try:
            value = excess(p)
        except (OverflowError, ZeroDivisionError, UnboundedLossError):
            value = math.inf  # too little noise to have any finite guarantee: misses
        except InvalidArgumentError:
            if p > 1e200:  # the noise overflowed (e.g. σ = ∞) before meeting the target
                value = math.inf
            else:
                raise
        seen[p] = value
        return value

    start = _anchor(make_event, epsilon, delta, method, initial)
    hi = start
    for _ in range(_MAX_DOUBLINGS):
        if safe_excess(hi) <= 0:
            break
        hi *= 2.0
        if math.isinf(hi):
            break
    else:
        hi = math.inf
    if not math.isfinite(hi) or safe_excess(hi) > 0:
        raise CalibrationError(
            f"no {parameter} in [{start!r}, {hi!r}] meets (ε, δ) = ({epsilon!r}, {delta!r}) "
            f"with method {method!r}; the target may be unreachable for this release.",
            bracket=(start, hi),
        )
    used = _use_probability(make_event(hi))
    if used is not None and used <= delta:
        # every p meets the target (:func:`_use_probability`): there is no smallest, and
        # halving towards 0 would only make each evaluation costlier (a Poisson-sampled
        # release at rate 1e-6 and small σ took minutes and gigabytes). ``hi`` meets it.
        return _meets_both_ways(make_event, hi, epsilon, delta, method)
    lo = hi / 2.0
    while lo > 1e-300 and safe_excess(lo) <= 0:
        hi, lo = lo, lo / 2.0
    found = _root(safe_excess, lo, hi, rtol, parameter)
    return _meets_both_ways(make_event, found, epsilon, delta, method)


def _anchor(
    make_event: Callable[[float], ev.Event],
    epsilon: float,
    delta: float,
    method: str,
    initial: float,
) -> float:
    """Where the bracket search of :func:`solve` starts: ``initial``, or a cheap safe point.

    With ``method="auto"`` the tightest method (PLD) is evaluated at every probe, and a
    probe with too little noise can cost seconds and gigabytes: a Poisson-sampled release
    at small σ has losses spanning hundreds of units on a 1e-4 grid (calibrating five
    steps at rate 1e-3 from a guess of σ = 0.01 took 11 s and 2.4 GB). So the search
    starts at the noise Rényi DP calibrates (cheap, to 1e-3): auto is at least as tight as
    RDP, so that point meets the target, and the search only halves down from it into
    the range where the answer lies. Where RDP does not apply or cannot reach the target,
    ``initial`` is used as given.
    """
    if method != "auto" or delta == 0:
        return initial
    try:
        anchor = solve(
            make_event, epsilon=epsilon, delta=delta, method="rdp", initial=initial, rtol=1e-3
        )
    except (DPLedgerError, ArithmeticError, ValueError):
        # only a starting point: whatever keeps RDP from giving one, the caller's guess
        # is used and the search itself reports any real failure
        return initial
    return anchor if math.isfinite(anchor) and anchor > 0 else initial


def _root(excess: Callable[[float], float], lo: float, hi: float, rtol: float, what: str) -> float:
    """:func:`smallest_satisfying`, its failure reported as a :class:`CalibrationError`."""
    try:
        return smallest_satisfying(excess, lo, hi, rtol=rtol, what=what)
    except NoSafeValueError as error:
        raise CalibrationError(str(error), bracket=error.bracket) from None


def _meets_both_ways(
    make_event: Callable[[float], ev.Event], p: float, epsilon: float, delta: float, method: str
) -> float:
    """``p`` stepped up (by a few ulps at most) until ε(δ) ≤ ε also holds as evaluated.

    A calibration is solved on δ(ε) ≤ δ; the inverse query ε(δ) rounds its own root up,
    so at the boundary it can read a few ulps above ε. A user checking the answer either
    way must see it meet the target, so the noise is nudged until both queries agree.
    """
    if delta == 0:
        return p  # solved on ε itself
    found = p

    def both(q: float) -> bool:
        event = make_event(q)
        # δ(ε) is re-checked too: at the ulp level it need not be monotone in p
        return accountant.epsilon(event, delta, method=method) <= epsilon and (
            q == found or accountant.delta(event, epsilon, method=method) <= delta
        )

    try:
        return step_up(both, p, relative=2.0**-48, tries=40, what="noise parameter")
    except NotApplicableError:
        return found  # no ε(δ) query here: δ(ε) ≤ δ is what this method certifies
    except NoSafeValueError:
        return found  # δ(ε) ≤ δ, the calibrated condition, holds at the solver's answer


def gaussian_sigma(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    sampling_rate: float | None = None,
    method: str = "auto",
) -> float:
    """Smallest σ such that ``count`` Gaussian releases are (ε, δ)-DP.

    Without sampling, "auto" uses the exact Gaussian-DP profile (Balle & Wang 2018,
    Thm 8; Dong, Roth & Su 2019, Cor. 3.3), so σ is exact: the smallest σ meeting the
    target, within about 1e-12 relative. With Poisson ``sampling_rate`` it brackets σ
    with RDP (at the optimal real order) and refines with the PLD upper bound, within
    about 1e-4 relative of the smallest σ that PLD certifies. Note ``count`` releases
    are composed as a schedule fixed in advance (PLD is not a filter: see Ledger.plan).

    Args:
        epsilon: Target ε > 0.
        delta: Target δ in (0, 1).
        sensitivity: L2 sensitivity Δ of each release.
        count: Number of (adaptive) releases.
        sampling_rate: Poisson sampling rate q of each release, or None.
        method: Accounting method.

    Example:
        >>> from dpledger.calibrate import gaussian_sigma
        >>> round(gaussian_sigma(1.0, 1e-5, count=1000), 4)
        117.9729
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    count = check_count(count)
    epsilon, delta = _target(epsilon, delta)
    if delta == 0:
        raise InvalidArgumentError(
            "`delta` must be positive for the Gaussian mechanism (it is never pure DP). Found 0.0."
        )
    rate = None
    if sampling_rate is not None:
        rate = check_probability("sampling_rate", sampling_rate, low_open=True, high_open=False)
        if rate == 1.0:
            rate = None  # every record is in every batch: the unsampled release

    def make(sigma: float) -> ev.Event:
        one: ev.Event = ev.Gaussian(sigma, sensitivity)
        if rate is not None:
            one = ev.PoissonSampled(one, rate)
        return one * count if count > 1 else one

    guess = sensitivity * math.sqrt(2 * count * math.log(1.25 / delta)) / epsilon
    if rate is None or method != "auto":
        if rate is not None:
            guess *= max(rate, 1e-3)
        return solve(
            make, epsilon=epsilon, delta=delta, method=method, initial=guess, parameter="sigma"
        )
    if epsilon < 1e-8:
        # at such ε the Rényi order scan reaches orders where each evaluation costs
        # O(α); subsampling only helps (the subsampled release is at least as private),
        # so the exact σ of the unsampled releases is a valid, safe answer
        return solve(
            lambda s: (
                ev.Gaussian(s, sensitivity) * count if count > 1 else ev.Gaussian(s, sensitivity)
            ),
            epsilon=epsilon,
            delta=delta,
            method="auto",
            initial=guess,
            parameter="sigma",
        )
    # Subsampled, "auto": RDP is valid and cheap, so its σ brackets the answer from above;
    # PLD (tighter) then refines inside the bracket, a few evaluations only.
    sigma_rdp = solve(  # only a safe bracket end is needed: a loose tolerance suffices
        make,
        epsilon=epsilon,
        delta=delta,
        method="rdp",
        initial=guess * max(rate, 1e-3),
        parameter="sigma",
        rtol=1e-3,
    )
    log_delta = math.log(delta)

    def excess(sigma: float) -> float:
        try:
            achieved = accountant.delta(make(sigma), epsilon, method="pld")
        except NotApplicableError:
            return math.inf  # PLD certifies nothing here (e.g. over its grid limit): unsafe
        gap = (math.log(achieved) if achieved > 0 else -math.inf) - log_delta
        return max(gap, 5e-324) if achieved > delta else min(gap, 0.0)

    if excess(sigma_rdp) > 0:
        return sigma_rdp  # PLD is not tighter here (e.g. tiny δ): RDP's σ is the answer
    # Where a record is used at all with probability p ≤ δ, every σ > 0 meets the target
    # (:func:`_use_probability`), so there is no smallest σ; RDP's σ is returned as it is
    # (PLD evaluations at small σ are costly there and could not find a minimum that does
    # not exist).
    used = _use_probability(make(sigma_rdp))
    if used is not None and used <= delta:
        return sigma_rdp
    lo = sigma_rdp * 0.95
    for _ in range(60):
        if lo <= 1e-300 or excess(lo) > 0:
            break
        lo *= 0.9
    # 2e-5 relative: well inside the 1e-4 the calibration promises for numerical methods
    found = _root(excess, lo, sigma_rdp, 2e-5, "sigma")
    return _meets_both_ways(make, found, epsilon, delta, "pld")


def discrete_gaussian_sigma(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    dimension: int | None = 1,
    method: str = "auto",
) -> float:
    """Smallest σ for ``count`` discrete Gaussian releases to be (ε, δ)-DP.

    Calibrates exactly the event :class:`~dpledger.mechanisms.DiscreteGaussian` releases
    (``sigma``, ``sensitivity``, ``dimension``), so this and
    ``calibrate.mechanism(lambda s: DiscreteGaussian(s, sensitivity, dimension=d), ...)``
    give the same σ and a ledger charges exactly what was calibrated. With
    ``dimension=1`` the tightest method is the exact one-dimensional privacy loss
    distribution of the discrete Gaussian (PLD, upper bound); for vectors it is the
    continuous Gaussian's curve at σ₀ = σ√(1 − τ²/σ²) plus a slack ≤ 2⁻¹⁰⁰
    (:mod:`dpledger.accountant.discrete_gaussian`), and for ``dimension=None`` (any) the
    (Δ²/(2σ²))-zCDP bound of Canonne, Kamath & Steinke 2020 (Thm 14/15) converted by the
    tight Rényi conversion.

    Args:
        epsilon: Target ε > 0.
        delta: Target δ in [0, 1).
        sensitivity: L2 sensitivity of the integer-valued statistic.
        count: Number of releases.
        dimension: Coordinates per release (``None``: any number).
        method: Accounting method.

    Example:
        >>> from dpledger import calibrate, mechanisms
        >>> s = calibrate.discrete_gaussian_sigma(1.0, 1e-6, count=4)
        >>> m = calibrate.mechanism(lambda v: mechanisms.DiscreteGaussian(v), epsilon=1.0,
        ...                         delta=1e-6, count=4)
        >>> abs(s - m.sigma) <= 1e-6 * s  # the same calibration, up to solver tolerance
        True
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    count = check_count(count)
    if dimension is not None:
        dimension = check_int_at_least("dimension", dimension, 1)
    epsilon, delta = _target(epsilon, delta)
    guess = sensitivity * math.sqrt(2 * count * math.log(1.25 / max(delta, 1e-300))) / epsilon

    def make(sigma: float) -> ev.Event:
        one = ev.DiscreteGaussian(sigma, sensitivity, dimension=dimension)
        return one * count if count > 1 else one

    return solve(
        make, epsilon=epsilon, delta=delta, method=method, initial=guess, parameter="sigma"
    )


def _pure_noise_scale(
    event_type: Callable[[float, float], ev.Event],
    epsilon: float,
    sensitivity: float,
    count: int,
    delta: float,
    method: str,
) -> float:
    """Smallest scale of ``count`` releases of a (discrete) Laplace-type event."""
    sensitivity = check_positive("sensitivity", sensitivity)
    count = check_count(count)
    epsilon, delta = _target(epsilon, delta)
    return solve(
        lambda b: event_type(b, sensitivity) * count,
        epsilon=epsilon,
        delta=delta,
        method=method,
        initial=count * sensitivity / epsilon,
        parameter="scale",
    )


def laplace_scale(
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    delta: float = 0.0,
    method: str = "auto",
) -> float:
    """Smallest Laplace scale b such that ``count`` releases are (ε, δ)-DP.

    With δ = 0 this is b = count·Δ/ε (basic composition is exact for pure DP: the k-fold
    privacy loss reaches kΔ/b), rounded up. With δ > 0 the tightest valid method is used
    (``method="auto"``: the Laplace privacy loss distribution, exact optimal composition
    of Kairouz, Oh & Viswanath 2015, or the Laplace Rényi curve, whichever certifies more).

    Example:
        >>> from dpledger.calibrate import laplace_scale
        >>> round(laplace_scale(1.0, count=10), 9)  # 10 · Δ/ε, rounded up by an ulp or two
        10.0
    """
    return _pure_noise_scale(ev.Laplace, epsilon, sensitivity, count, delta, method)


def discrete_laplace_scale(
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    delta: float = 0.0,
    method: str = "auto",
) -> float:
    """Smallest discrete-Laplace scale t for ``count`` releases to be (ε, δ)-DP."""
    return _pure_noise_scale(ev.DiscreteLaplace, epsilon, sensitivity, count, delta, method)


def classical_gaussian_sigma(epsilon: float, delta: float, *, sensitivity: float = 1.0) -> float:
    """The classical σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1) — legacy only.

    Proved only for ε < 1; a :class:`LegacyFormulaWarning` is issued for ε ≥ 1, where it
    can miss the target (its claim first fails near ε ≈ 8.4 at δ = 1e-5). It is never
    used by default: prefer :func:`gaussian_sigma`, which is exact and smaller.
    """
    epsilon, delta = _target(epsilon, delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    if delta == 0:
        raise InvalidArgumentError("`delta` must be positive. Found 0.0.")
    if epsilon >= 1:
        warnings.warn(
            f"the classical Gaussian formula is proved only for epsilon < 1 (Dwork & Roth "
            f"2014, Thm A.1); at epsilon = {epsilon!r} it may not give ({epsilon!r}, "
            f"{delta!r})-DP. Use dpledger.calibrate.gaussian_sigma.",
            LegacyFormulaWarning,
            stacklevel=2,
        )
    return round_up(sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon)


def mechanism(
    factory: Callable[[float], M],
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    count: int = 1,
    method: str = "auto",
    initial: float = 1.0,
    ledger: Any = None,
    share: float = 1.0,
    plan: bool = False,
) -> M:
    """The mechanism ``factory(p)`` with the smallest p whose own event meets (ε, δ).

    Calibrates against the event the mechanism actually releases (for the safe Laplace
    and Gaussian mechanisms, the discrete event on their grid), so the ledger charges
    exactly what was calibrated.

    Without ``ledger`` the target is (``epsilon``, ``delta``) and ``count`` releases are
    composed as a schedule fixed in advance with the tightest non-adaptive method
    (``method="auto"``: PLD or an exact profile where one applies). A ledger filters
    adaptively and cannot always accept that answer in its own currency: a *planned*
    ledger (:meth:`~dpledger.ledger.Ledger.plan`) accepts exactly it.

    With ``ledger`` (and no ``epsilon``/``delta``: the ledger's budget is the target)
    this is :meth:`Ledger.calibrate <dpledger.ledger.Ledger.calibrate>`: the noise is
    solved in the ledger's own currency for ``share`` of what remains (or, with
    ``plan=True``, for the whole budget and planned), so the ledger accepts every
    release it was calibrated for.

    Example:
        >>> from dpledger import Ledger, calibrate, mechanisms
        >>> mech = calibrate.mechanism(lambda b: mechanisms.Laplace(b), epsilon=0.5, delta=0.0)
        >>> round(mech.scale, 6)
        2.0
        >>> ledger = Ledger(1.0, 1e-6)
        >>> mech = calibrate.mechanism(lambda b: mechanisms.Laplace(b), ledger=ledger,
        ...                            count=10)
        >>> ledger.fits(mech)
        10
    """
    factory = check_callable("factory", factory)
    count = check_count(count)
    if ledger is not None:
        if epsilon is not None or delta is not None:
            raise InvalidArgumentError(
                "with `ledger`, the ledger's budget is the target: omit `epsilon` and "
                f"`delta`. Found epsilon={epsilon!r}, delta={delta!r}."
            )
        calibrate_to = getattr(ledger, "calibrate", None)
        if not callable(calibrate_to):
            raise InvalidArgumentTypeError(
                f"`ledger` must be a dpledger Ledger. Found {type(ledger).__name__}."
            )
        return cast(
            M,
            calibrate_to(
                factory, count=count, share=share, plan=plan, method=method, initial=initial
            ),
        )
    if epsilon is None or delta is None:
        raise InvalidArgumentError(
            "give the target `epsilon` and `delta`, or a `ledger` to calibrate to. Found "
            f"epsilon={epsilon!r}, delta={delta!r}."
        )
    if plan or share != 1.0:
        raise InvalidArgumentError(
            f"`share` and `plan` apply with a `ledger` only. Found share={share!r}, plan={plan!r}."
        )
    p = solve(
        lambda q: factory(q).event * count,
        epsilon=epsilon,
        delta=delta,
        method=method,
        initial=initial,
    )
    return factory(p)


def split_budget(total: float, weights: Sequence[float], *, currency: str = "zcdp") -> list[float]:
    """Split a budget over releases in proportion to ``weights``, in the given currency.

    Currencies compose additively, so the shares compose back to exactly ``total``:

    * ``"pure"`` — ε's add (basic composition): εᵢ = ε·wᵢ/Σw;
    * ``"zcdp"`` — ρ's add (Bun & Steinke 2016): ρᵢ = ρ·wᵢ/Σw;
    * ``"gdp"`` — μ²'s add (Dong, Roth & Su 2019): μᵢ = μ·√(wᵢ/Σw).

    Each share is rounded down, so the shares never exceed the total.
    """
    total = check_nonnegative("total", total)
    currency = check_choice("currency", currency, ("pure", "zcdp", "gdp"))
    values = [
        check_positive(f"weights[{i}]", w) for i, w in enumerate(check_reals("weights", weights))
    ]
    if not values:
        raise InvalidArgumentError("`weights` must contain at least one weight. Found [].")
    norm = math.fsum(values)
    shrink = 1.0 - 2.0**-50
    if currency == "gdp":
        return [total * math.sqrt(w / norm) * shrink for w in values]
    return [total * (w / norm) * shrink for w in values]


def gaussian_sigmas(
    epsilon: float,
    delta: float,
    sensitivities: Sequence[float],
    *,
    weights: Sequence[float] | None = None,
) -> list[float]:
    """σᵢ for several Gaussian releases that jointly are exactly (ε, δ)-DP.

    The joint release is √(Σ(Δᵢ/σᵢ)²)-GDP (Dong, Roth & Su 2019, Cor. 3.3); the total μ
    is solved exactly and split as μᵢ² = μ²·wᵢ/Σw (default: equal weights), so
    σᵢ = Δᵢ/μᵢ. The result is re-accounted and scaled up if rounding requires.

    Example:
        >>> from dpledger.calibrate import gaussian_sigmas
        >>> s = gaussian_sigmas(1.0, 1e-5, [1.0, 1.0])
        >>> round(s[0], 4) == round(s[1], 4)
        True
    """
    epsilon, delta = _target(epsilon, delta)
    deltas = [
        check_positive(f"sensitivities[{i}]", s)
        for i, s in enumerate(check_reals("sensitivities", sensitivities))
    ]
    if not deltas:
        raise InvalidArgumentError("`sensitivities` must not be empty. Found [].")
    shares = check_reals("weights", weights) if weights is not None else [1.0] * len(deltas)
    if len(shares) != len(deltas):
        raise InvalidArgumentError(
            f"`weights` must have one weight per sensitivity ({len(deltas)}). Found {len(shares)}."
        )
    # Solve for one Gaussian with Δ = 1: its μ is the total budget in GDP currency.
    sigma_one = gaussian_sigma(epsilon, delta, method="gdp")
    mus = split_budget(1.0 / sigma_one, shares, currency="gdp")
    sigmas = [d / m for d, m in zip(deltas, mus, strict=True)]

    # scaled up until the re-accounted joint release meets the target; the step doubles,
    # so that σᵢ = Δᵢ/μᵢ that lost its precision (a subnormal Δᵢ, where a step of 2⁻⁴⁰
    # changed nothing and the loop never ended) still gets there in a few dozen steps
    def meets(factor: float) -> bool:
        joint = ev.Composed(
            tuple(ev.Gaussian(s * factor, d) for s, d in zip(sigmas, deltas, strict=True))
        )
        return accountant.delta(joint, epsilon, method="gdp") <= delta

    try:
        factor = step_up(meets, 1.0, first_step=2.0**-40, what="noise scale")
    except NoSafeValueError:  # pragma: no cover - the step doubles 200 times
        raise CalibrationError(
            f"no scaling of the noise meets (ε, δ) = ({epsilon!r}, {delta!r}) for "
            f"sensitivities {deltas!r}."
        ) from None
    return [s * factor for s in sigmas]


__dir__ = namespace(__all__)
