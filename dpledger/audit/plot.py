"""Plot an audited pipeline's privacy curve δ(ε) with its claim marked (matplotlib)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dpledger._public import namespace
from dpledger.audit.check import AuditReport
from dpledger.errors import InvalidArgumentError, NotApplicableError

__all__ = ["plot_privacy_curve"]


def plot_privacy_curve(report: AuditReport, path: str | Path) -> Path:
    """Draw the certified δ(ε) of the audited pipeline, mark the claim, save to ``path``.

    Needs matplotlib (``pip install "dpledger[plot]"``). Returns the path written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InvalidArgumentError(
            "plotting needs matplotlib: pip install 'dpledger[plot]'"
        ) from exc
    if report.event is None:
        raise NotApplicableError("nothing to plot: no valid accounting exists (unsupported)")
    claim = report.claim
    top = 1.0
    for value in (claim.epsilon, report.epsilon):
        if value is not None and math.isfinite(value):
            top = max(top, 1.6 * value)
    epsilons = np.linspace(0.0, top, 120)
    deltas = np.array(report.privacy_curve(epsilons))
    # below ~1e-10 the plotted (untilted) numerical bounds flatten on their rounding guard
    floor = min(1e-10, claim.delta / 1000) if claim.delta > 0 else 1e-10
    fig, ax = plt.subplots(figsize=(7, 4.5))
    shown_curve = deltas >= floor
    ax.semilogy(
        epsilons[shown_curve], deltas[shown_curve], lw=2, label="certified δ(ε) (tightest method)"
    )
    if claim.epsilon is not None and claim.notion in ("approx_dp", "pure_dp"):
        shown = max(claim.delta, floor)
        colour = "tab:green" if report.holds else "tab:red"
        ax.plot(
            [claim.epsilon],
            [shown],
            "o",
            ms=9,
            color=colour,
            label=f"claim ({claim.epsilon:g}, {claim.delta:g})",
        )
        ax.axvline(claim.epsilon, color=colour, ls=":", lw=1)
        ax.axhline(shown, color=colour, ls=":", lw=1)
    if report.epsilon is not None and math.isfinite(report.epsilon) and claim.delta > 0:
        ax.plot(
            [report.epsilon],
            [claim.delta],
            "x",
            ms=9,
            color="black",
            label=f"true ε ≤ {report.epsilon:.4g}",
        )
    ax.set_xlabel("ε")
    ax.set_ylabel("δ")
    ax.set_ylim(floor, 1.5)
    title = claim.name or report.source or "pipeline"
    ax.set_title(f"{title}\nverdict: {report.verdict.replace('_', ' ')}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


__dir__ = namespace(__all__)
