"""White-box audit: recompute a declared pipeline's guarantee and judge its claim.

Every release is turned into the event it really is — its noise, its sensitivity under
the *claim's* adjacency, its sampling scheme — never into the ε its authors assigned it.
The composition is then accounted by every applicable method of
:mod:`dpledger.accountant`; the smallest answer is a certified upper bound on the true ε.
Where the toolkit can also certify a *lower* bound (exact closed forms; the PLD lower
bound; ε at δ = 0 for pure releases), a claim below it is proved false.

Verdicts:

* ``holds`` — the certified upper bound meets the claim;
* ``holds_loosely`` — it meets it with room to spare: the true ε is below
  ``loose_ratio`` (default 0.8) times the claim, so the pipeline adds more noise than
  its claim needs;
* ``violated`` — a certified *lower* bound on the true ε exceeds the claim;
* ``not_certified`` — the upper bound exceeds the claim but no lower bound proves a
  violation (where the toolkit's upper and lower bounds are far apart, e.g. sampling
  without replacement, whose upper bound is Rényi-DP only): the claim may be true, but
  nothing the toolkit can prove supports it;
* ``unsupported`` — no valid accounting exists for what was declared (e.g. Poisson
  sampling under replace-one adjacency, shuffled batches whose claim needs an
  amplification theorem that does not exist).

Releases given by a guarantee (``pure_dp``, ``approx_dp``, ``zcdp``, ``mcdp``) are judged
by the worst mechanism with that guarantee: "violated" then means that the claim does not
follow from the declared guarantees.

This module holds the verdicts and the report. The translation of each declared release
into its event is :mod:`dpledger.audit._declared`; the certified lower bounds are
:mod:`dpledger.accountant.lower_bounds`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpledger import accountant
from dpledger._format import down as fmt_down
from dpledger._format import up as fmt_up
from dpledger._public import namespace
from dpledger._table import format_table
from dpledger.accountant import events as ev
from dpledger.accountant import lower_bounds
from dpledger.accountant.advanced import advanced_composition
from dpledger.accountant.pld import PLDSummary
from dpledger.audit._declared import DeclaredEvents, declared_events
from dpledger.audit._dp_accounting import dp_accounting_pipeline
from dpledger.audit.pipeline import Claim, Pipeline, load_pipeline, parse_pipeline
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = ["VERDICTS", "AuditReport", "check_claim", "load_declaration"]

VERDICTS = ("holds", "holds_loosely", "violated", "not_certified", "unsupported")


@dataclass
class AuditReport:
    """The result of :func:`check_claim`.

    Attributes:
        verdict: One of :data:`VERDICTS`.
        claim: The claim judged.
        epsilon: Certified upper bound on the true ε at the claimed δ (approx/pure DP
            claims), or ``None``.
        epsilon_lower: Certified lower bound on the true ε at the claimed δ, if one exists.
        delta: Certified upper bound on δ at the claimed ε (approx/pure DP claims).
        by_method: ε at the claimed δ by every accounting method (a float, or why the
            method does not apply).
        delta_by_method: δ at the claimed ε by every applicable method.
        value / claimed_value / quantity: For zCDP, mCDP, RDP and GDP claims, the
            recomputed parameter, the claimed one, and its name (e.g. ``"rho"``).
        margin: claimed ε − certified ε (positive: room to spare).
        findings: Human-readable explanations: why a claim fails, what it relied on.
        releases: One row per declared release: label, mechanism, count, sampling, event.
        event: The composed event that was accounted.
    """

    verdict: str
    claim: Claim
    epsilon: float | None = None
    epsilon_lower: float | None = None
    delta: float | None = None
    by_method: dict[str, float | str] = field(default_factory=dict)
    delta_by_method: dict[str, float] = field(default_factory=dict)
    value: float | None = None
    claimed_value: float | None = None
    quantity: str | None = None
    margin: float | None = None
    findings: list[str] = field(default_factory=list)
    releases: list[dict[str, Any]] = field(default_factory=list)
    event: ev.Event | None = field(default=None, repr=False)
    source: str = ""

    @property
    def holds(self) -> bool:
        """True if the claim is certified (verdict ``holds`` or ``holds_loosely``)."""
        return self.verdict in ("holds", "holds_loosely")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json``)."""

        def num(x: float | None) -> float | str | None:
            if x is None or math.isfinite(x):
                return x
            return "inf"

        return {
            "source": self.source,
            "verdict": self.verdict,
            "claim": {k: v for k, v in vars(self.claim).items() if v not in (None, "")},
            "claim_text": self.claim.describe(),
            "epsilon": num(self.epsilon),
            "epsilon_lower": num(self.epsilon_lower),
            "delta": num(self.delta),
            "quantity": self.quantity,
            "value": num(self.value),
            "claimed_value": num(self.claimed_value),
            "margin": num(self.margin),
            "delta_by_method": {m: num(v) for m, v in self.delta_by_method.items()},
            "by_method": {
                m: (num(v) if isinstance(v, float) else v) for m, v in self.by_method.items()
            },
            "findings": list(self.findings),
            "releases": [{k: v for k, v in row.items() if k != "event"} for row in self.releases],
            "event": ev.to_dict(self.event) if self.event is not None else None,
        }

    def format(self) -> str:
        """The report as a readable text table (what ``dpledger audit`` prints)."""
        out = []
        title = self.claim.name or self.source or "pipeline"
        out.append(f"Audit of {title}")
        if self.claim.source:
            out.append(f"  source: {self.claim.source}")
        out.append(f"  claim : {self.claim.describe()}")
        out.append("")
        rows = [("#", "label", "mechanism", "count", "sampling")]
        for i, row in enumerate(self.releases, start=1):
            rows.append(
                (str(i), row["label"] or "—", row["mechanism"], str(row["count"]), row["sampling"])
            )
        out.extend(format_table(rows))
        out.append("")
        if self.quantity is None and self.by_method:
            eps_c = self.claim.epsilon
            out.append(
                f"By method (each an upper bound): ε at the claimed δ = {self.claim.delta:g}, "
                f"δ at the claimed ε = {eps_c:g}"
            )
            best = self.epsilon
            mrows = [("method", "epsilon", "delta", "")]
            for method, value in self.by_method.items():
                if isinstance(value, float):
                    mark = "← tightest" if best is not None and value == best else ""
                    d = self.delta_by_method.get(method)
                    mrows.append(
                        (method, _fmt(value), fmt_up(d, 4) if d is not None else "—", mark)
                    )
                else:
                    mrows.append((method, "n/a", "", _short(value)))
            out.extend(format_table(mrows))
            out.append("")
        if self.quantity is not None and self.value is not None:
            out.append(
                f"recomputed {self.quantity} = {_fmt(self.value)} (claimed {self.claimed_value:g})"
            )
        if self.epsilon is not None:
            low = f"{_fmt(self.epsilon_lower, 'down')} ≤ " if self.epsilon_lower is not None else ""
            out.append(
                f"true ε at δ = {self.claim.delta:g}: {low}ε ≤ {_fmt(self.epsilon)} "
                f"(claimed {self.claim.epsilon:g})"
            )
        if self.delta is not None and self.claim.epsilon is not None and self.quantity is None:
            out.append(
                f"δ at the claimed ε = {self.claim.epsilon:g}: ≤ {fmt_up(self.delta, 4)} "
                f"(claimed {self.claim.delta:g})"
            )
        out.append("")
        out.append(f"VERDICT: {self.verdict.upper().replace('_', ' ')}")
        if self.findings:
            out.append("")
            out.append("Findings:")
            for finding in self.findings:
                out.append(f"  - {finding}")
        return "\n".join(out)

    def privacy_curve(self, epsilons: Any) -> list[float]:
        """Certified δ(ε) of the audited pipeline at each ε (for plots)."""
        if self.event is None:
            raise NotApplicableError("the report has no accountable event (verdict unsupported)")
        return _delta_curve(self.event, [float(e) for e in epsilons])


def _fmt(x: float | None, direction: str = "up") -> str:
    """A bound as printed: upper bounds rounded up, lower bounds (``"down"``) down."""
    if x is None:
        return "—"
    if not math.isfinite(x):
        return "∞"
    digits = 6 if abs(x) >= 1e-3 or x == 0 else 4
    return fmt_up(x, digits) if direction == "up" else fmt_down(x, digits)


def _short(reason: str) -> str:
    first = reason.split(". ")[0].split(" (found")[0].rstrip(",;")
    return first if len(first) <= 72 else first[:71] + "…"


def _gdp_is_exact(event: ev.Event) -> bool:
    """Whether Gaussian DP is exact for ``event`` (then no other curve can be smaller)."""
    exact = accountant.exact_value(event, "delta", 0.0)
    return exact is not None and exact[0] == "gdp"


def _delta_curve(event: ev.Event, epsilons: list[float]) -> list[float]:
    """Certified δ(ε) of ``event`` at each ε: the smallest of the methods' curves."""
    summaries = []
    for method in ("gdp", "pld", "rdp", "zcdp", "optimal", "basic"):
        try:
            summaries.append(accountant.ACCOUNTANTS[method].summarize(event))
        except NotApplicableError:
            continue
        if method == "gdp" and _gdp_is_exact(event):
            break
    if not summaries:
        raise NotApplicableError(f"no accounting method applies to {event!r}")
    curves = []
    for summary in summaries:
        try:
            if isinstance(summary, PLDSummary):
                curves.append(summary.delta_curve(epsilons))
            else:
                curves.append([summary.delta(e) for e in epsilons])
        except (NotApplicableError, ArithmeticError, MemoryError):
            continue  # this method gives no curve here (e.g. over PLD's grid limit)
    if not curves:
        raise NotApplicableError(f"no accounting method gives a privacy curve for {event!r}")
    return [min(values) for values in zip(*curves, strict=True)]


# ------------------------------------------------------------------------ check
def check_claim(
    pipeline: Pipeline | Mapping[str, Any] | str | Path,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    loose_ratio: float = 0.8,
) -> AuditReport:
    """Recompute a declared pipeline's guarantee with tight accounting and judge its claim.

    Args:
        pipeline: A :class:`~dpledger.audit.pipeline.Pipeline`, a dict of the same shape,
            TOML text, or the path of a TOML file.
        epsilon: Override the claim's ε (approximate/pure DP claims only).
        delta: Override the claim's δ (approximate/pure DP claims only).
        loose_ratio: A claim that holds with true ε below ``loose_ratio`` × claimed ε is
            reported as ``holds_loosely``.

    Returns:
        An :class:`AuditReport` (see the module docstring for the verdicts).

    Example:
        >>> from dpledger.audit import check_claim
        >>> report = check_claim({
        ...     "claim": {"epsilon": 1.0, "delta": 0.0, "adjacency": "add_remove",
        ...               "notion": "pure_dp"},
        ...     "release": [{"mechanism": "laplace", "scale": 0.5, "sensitivity": 1.0}],
        ... })
        >>> report.verdict, report.epsilon
        ('violated', 2.0)
    """
    pipe = _as_pipeline(pipeline)
    if not 0 < loose_ratio <= 1:
        raise InvalidArgumentError(f"`loose_ratio` must be in (0, 1]. Found {loose_ratio!r}.")
    claim = pipe.claim
    if epsilon is not None or delta is not None:
        if claim.notion not in ("approx_dp", "pure_dp"):
            raise InvalidArgumentError(
                f"`epsilon`/`delta` override an (ε, δ) claim; this claim is {claim.notion!r}."
            )
        from dpledger._validation import check_nonnegative, check_probability

        new_eps = check_nonnegative("epsilon", epsilon) if epsilon is not None else claim.epsilon
        new_delta = check_probability("delta", delta) if delta is not None else claim.delta
        notion = "pure_dp" if new_delta == 0 else "approx_dp"
        claim = Claim(**{**vars(claim), "epsilon": new_eps, "delta": new_delta, "notion": notion})

    declared = declared_events(pipe, claim)
    report = AuditReport(
        verdict="unsupported",
        claim=claim,
        findings=declared.findings,
        releases=declared.rows,
        source=pipe.source,
    )
    if declared.unsupported:
        report.findings[:0] = [f"unsupported: {u}" for u in declared.unsupported]
        return report
    event = declared.event
    report.event = event
    try:
        if claim.notion in ("approx_dp", "pure_dp"):
            _judge_dp(report, claim, declared, loose_ratio)
        else:
            _judge_other(report, claim, declared, loose_ratio)
    except NotApplicableError as exc:
        report.verdict = "unsupported"
        report.findings.insert(0, f"unsupported: {exc}")
        return report
    if declared.unamplified and not report.holds:
        report.findings.append(
            "The claim fails without amplification, and no valid amplification analysis "
            "exists for the declared batching: verdict unsupported. Use Poisson sampling (or "
            "sampling without replacement under replace-one) to claim amplification."
        )
        report.verdict = "unsupported"
    _explain(report, event, claim, pipe)
    return report


def load_declaration(pipeline: Pipeline | Mapping[str, Any] | str | Path) -> Pipeline:
    """A declaration, validated: ``[[release]]`` tables, ``[[dp_accounting]]`` events, or both.

    Accepts what :func:`check_claim` accepts (a ``Path`` is always read as a file);
    ``[[dp_accounting]]`` tables give releases as dp_accounting events
    (:mod:`dpledger.audit._dp_accounting`, :func:`dpledger.interop.from_dp_accounting`).
    """
    return _as_pipeline(pipeline)


def _as_pipeline(pipeline: Pipeline | Mapping[str, Any] | str | Path) -> Pipeline:
    if isinstance(pipeline, Pipeline):
        return pipeline
    with_events = dp_accounting_pipeline(pipeline)  # [[dp_accounting]] tables, if any
    if with_events is not None:
        return with_events
    if isinstance(pipeline, Mapping):
        return parse_pipeline(pipeline)
    if isinstance(pipeline, Path) or (
        isinstance(pipeline, str) and "\n" not in pipeline and pipeline.endswith(".toml")
    ):
        return load_pipeline(pipeline)
    if isinstance(pipeline, str):
        return parse_pipeline(pipeline)
    raise InvalidArgumentError(
        "`pipeline` must be a Pipeline, a dict, TOML text or a .toml path. "
        f"Found {type(pipeline).__name__}."
    )


def _judge_dp(
    report: AuditReport, claim: Claim, declared: DeclaredEvents, loose_ratio: float
) -> None:
    """An (ε, δ) claim against the certified upper and lower bounds on ε at its δ."""
    assert claim.epsilon is not None
    event = declared.event
    table = accountant.epsilon_by_method(event, claim.delta)
    report.by_method = {m: (v if isinstance(v, float) else str(v)) for m, v in table.items()}
    for method, value in table.items():
        if isinstance(value, float):
            try:
                report.delta_by_method[method] = accountant.delta(
                    event, claim.epsilon, method=method
                )
            except NotApplicableError:  # pragma: no cover - every ε method also gives δ
                continue
    upper = accountant.epsilon(event, claim.delta)
    report.epsilon = upper
    report.delta = accountant.delta(event, claim.epsilon)
    report.margin = claim.epsilon - upper if math.isfinite(upper) else -math.inf
    lower_event = declared.lower_event
    report.epsilon_lower = (
        None if lower_event is None else lower_bounds.epsilon_lower(lower_event, claim.delta)
    )
    if lower_bounds.wishart_epsilon_lower(declared.wishart_epsilon, claim.delta) is not None:
        report.epsilon_lower = math.inf
    # either certified comparison proves the claim (δ at the claimed ε avoids rounding ε up)
    # — but a computed δ of 0 proves nothing at δ = 0: a positive δ below 5e-324 underflows
    # to it (a Gaussian "held" as (40, 0)-DP), so a pure claim is proved by ε alone
    proved = upper <= claim.epsilon or (claim.delta > 0 and report.delta <= claim.delta)
    refuted = report.epsilon_lower is not None and report.epsilon_lower > claim.epsilon
    if proved and refuted:  # two certified bounds disagree: never pick one silently
        report.verdict = "not_certified"
        report.findings.append(
            f"Internal inconsistency: the certified bounds ε ≤ {_fmt(upper)} and "
            f"ε ≥ {_fmt(report.epsilon_lower)} disagree on this claim; no verdict is given "
            "(please report this as a defect)."
        )
    elif proved:
        loose = upper < loose_ratio * claim.epsilon
        report.verdict = "holds_loosely" if loose else "holds"
    elif refuted:
        report.verdict = "violated"
    else:
        report.verdict = "not_certified"
        report.findings.append(
            f"The tightest certified bound (ε ≤ {_fmt(upper)}) exceeds the claim, but no "
            "certified lower bound is available for these releases, so a violation is not "
            "proved either."
        )


def _judge_other(
    report: AuditReport, claim: Claim, declared: DeclaredEvents, loose_ratio: float
) -> None:
    """A zCDP, GDP, RDP or mCDP claim against the recomputed parameter and its lower bound.

    A lower bound exists where every release is attained and their stand-in is a
    composition of Gaussians (:mod:`dpledger.accountant.lower_bounds`).
    """
    event = declared.event
    attained = declared.lower_event if declared.complete else None
    lower: float | None
    if claim.notion == "zcdp":
        value = accountant.ZCDPAccountant.summarize(event).rho
        claimed, quantity = claim.rho, "rho"
        lower = None if attained is None else lower_bounds.zcdp_rho_lower(attained)
    elif claim.notion == "gdp":
        value = accountant.GDPAccountant.summarize(event).mu
        claimed, quantity = claim.mu, "mu"
        lower = None if attained is None else lower_bounds.gdp_mu_lower(attained)
    elif claim.notion == "rdp":
        assert claim.alpha is not None
        value = accountant.RDPAccountant.summarize(event).curve(claim.alpha)
        claimed, quantity = claim.epsilon, f"RDP ε at α = {claim.alpha:g}"
        lower = None if attained is None else lower_bounds.rdp_epsilon_lower(attained, claim.alpha)
    else:  # mcdp: (μ, τ) partially ordered
        summary = accountant.MCDPAccountant.summarize(event)
        report.quantity = "(mu, tau)"
        assert claim.mu is not None and claim.tau is not None
        report.findings.append(f"recomputed (μ, τ) = ({_fmt(summary.mu)}, {_fmt(summary.tau)})")
        report.value, report.claimed_value = summary.mu, claim.mu
        pair = None if attained is None else lower_bounds.mcdp_lower(attained)
        if summary.mu <= claim.mu and summary.tau <= claim.tau:
            loose = summary.mu < loose_ratio * claim.mu and summary.tau < loose_ratio * claim.tau
            report.verdict = "holds_loosely" if loose else "holds"
        elif pair is not None and (pair[0] > claim.mu or pair[1] > claim.tau):
            report.verdict = "violated"
        else:
            report.verdict = "not_certified"
        return
    assert claimed is not None
    report.value, report.claimed_value, report.quantity = value, claimed, quantity
    if value <= claimed:
        report.verdict = "holds_loosely" if value < loose_ratio * claimed else "holds"
    elif lower is not None and lower > claimed:
        report.verdict = "violated"
    else:
        report.verdict = "not_certified"


def _explain(report: AuditReport, event: ev.Event, claim: Claim, pipe: Pipeline) -> None:
    """Findings that say what the claim relied on, where recognisable."""
    if (
        claim.notion not in ("approx_dp", "pure_dp")
        or report.epsilon is None
        or claim.epsilon is None
    ):
        return
    true = report.epsilon
    atoms = ev.flatten(event)
    # the mean privacy loss reported as ε (Dwork–Rothblum mCDP's μ is a *mean*)
    try:
        mean_loss = accountant.MCDPAccountant.summarize(event).mu
    except NotApplicableError:
        mean_loss = None
    if (
        mean_loss is not None
        and mean_loss > 0
        and abs(mean_loss - claim.epsilon) <= 0.05 * claim.epsilon
        and true > 1.5 * claim.epsilon
    ):
        report.findings.append(
            f"The claimed ε = {claim.epsilon:g} equals the releases' mean privacy loss "
            f"(μ = {_fmt(mean_loss)}, Dwork & Rothblum 2016). A mean loss is not ε: the "
            f"loss exceeds its mean with substantial probability; at δ = {claim.delta:g} "
            f"the true ε is {_fmt(true)}."
        )
    # one kind of (ε₀-DP) release, repeated k times: basic / √k / advanced composition
    if len(atoms) == 1:
        ((atom, k),) = atoms.items()
        eps0 = (
            lower_bounds.attained_pure_epsilon(atom)
            if not isinstance(atom, ev.PoissonSampled)
            else None
        )
        if k > 1 and eps0 is not None and math.isfinite(eps0) and eps0 > 0:
            if math.isclose(claim.epsilon, eps0 * math.sqrt(k), rel_tol=0.01):
                report.findings.append(
                    f"The claim is the per-release ε₀ = {eps0:g} times √k (k = {k}). No "
                    "composition theorem gives ε₀√k: advanced composition has an extra "
                    f"√(2 ln(1/δ′)) factor. Tight accounting gives ε = {_fmt(true)}."
                )
            if math.isclose(claim.epsilon, eps0 * k, rel_tol=1e-6) and true < claim.epsilon:
                report.findings.append(
                    f"The claim is basic composition (k·ε₀ = {k} × {eps0:g}); tight "
                    f"accounting gives ε = {_fmt(true)}."
                )
            if claim.delta > 0:
                adv = advanced_composition(eps0, 0.0, k, claim.delta)
                if math.isclose(claim.epsilon, adv, rel_tol=0.01):
                    report.findings.append(
                        f"The claim matches advanced composition (Dwork, Rothblum & Vadhan "
                        f"2010: {_fmt(adv)}), which is valid but loose; tight accounting "
                        f"gives ε = {_fmt(true)}."
                    )
    # releases calibrated with the classical formula, or whose σ matches it implicitly
    if report.verdict in ("holds", "holds_loosely") and any(
        "classical Gaussian" in f for f in report.findings
    ):
        report.findings.append(f"The claim still holds here: true ε ≤ {_fmt(true)}.")
    if report.verdict == "violated" and report.epsilon_lower is not None:
        report.findings.append(
            f"Violation certified: the true ε at δ = {claim.delta:g} is at least "
            f"{_fmt(report.epsilon_lower)} > {claim.epsilon:g}."
        )
    if report.verdict == "holds_loosely":
        report.findings.append(
            f"The true ε ≤ {_fmt(true)} is {100 * true / claim.epsilon:.0f}% of the claim: "
            "the pipeline could add less noise (dpledger.calibrate solves for the smallest)."
        )
    if pipe.claim.delta > 0:
        for release in pipe.releases:
            if release.population and claim.delta >= 1.0 / release.population:
                report.findings.append(
                    f"δ = {claim.delta:g} ≥ 1/n = 1/{release.population}: such a δ permits "
                    "releasing a record outright."
                )
                break


__dir__ = namespace(__all__)
