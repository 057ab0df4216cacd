r"""The ``dpledger`` command line.

``dpledger account MECHANISM ...`` prints the (ε, δ) guarantee of a composition of
releases by every accounting method, and the tightest. ``dpledger calibrate MECHANISM``
prints the smallest noise meeting a target (ε, δ), and the guarantee it achieves;
``dpledger calibrate dpsgd`` sizes the noise multiplier of a training run.

Example::

    dpledger calibrate gaussian --epsilon 1 --delta 1e-5 --count 1000 --sampling-rate 0.01
    dpledger calibrate laplace --epsilon 1 --count 10
    dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256 --epochs 60 \
        --epsilon 3 --delta 1e-5
    dpledger account gaussian --sigma 5 --count 100 --delta 1e-5
    dpledger account gaussian --sigma 1.1 --sampling-rate 0.01 --count 10000 --delta 1e-5
    dpledger account laplace --scale 1 --count 100
    dpledger audit examples/audits/dpsgd.toml --plot dpsgd.png

Each mechanism has its own options; an option that does not apply to the chosen
mechanism (``account laplace --sigma 1``) is an error, not ignored. ``--delta`` defaults
to 0 where pure DP makes sense (Laplace, pure DP, randomized response) and is required
for Gaussian noise. ``dpledger audit PIPELINE.toml`` checks a declared pipeline's claim
(see :mod:`dpledger.audit`): exit status 0 if the claim is certified, 1 if it is not
(violated, not certified, unsupported), 2 on an error (also on a usage error, and when a
``--plot`` asked for cannot be written).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dpledger
from dpledger import accountant
from dpledger._format import down as fmt_down
from dpledger._format import up as fmt_up
from dpledger._table import format_table
from dpledger.accountant import events as ev
from dpledger.errors import (
    DPLedgerError,
    InvalidArgumentError,
    NotApplicableError,
    PipelineError,
)
from dpledger.ledger import commands as ledger_commands

__all__ = ["main"]


# -- account ---------------------------------------------------------------------------


def _release_event(args: argparse.Namespace) -> ev.Event:
    base: ev.Event
    if args.mechanism == "gaussian":
        base = ev.Gaussian(sigma=args.sigma, sensitivity=args.sensitivity)
    elif args.mechanism == "laplace":
        base = ev.Laplace(scale=args.scale, sensitivity=args.sensitivity)
    elif args.mechanism == "pure":
        base = ev.PureDP(epsilon=args.epsilon0)
    else:
        base = ev.RandomizedResponse(epsilon=args.epsilon0, categories=args.categories)
    if args.sampling_rate is not None:
        base = ev.PoissonSampled(base, rate=args.sampling_rate)
    return base * args.count if args.count != 1 else base


def _reason(error: Exception) -> str:
    """The first sentence of why a method does not apply (a table cell, not a paragraph)."""
    first = str(error).split(". ")[0].split(" (found")[0].rstrip(".,;")
    return first if len(first) <= 72 else first[:71] + "…"


# Why a method certifies no finite ε at δ = 0 (its row reads "inf"): each bounds δ(ε) by
# something positive at every finite ε, so only a δ > 0 compares it with the others.
_NEEDS_DELTA = {
    "advanced": "needs δ > 0: advanced composition spends a slack δ′ > 0",
    "mcdp": "needs δ > 0: its subgaussian tail bound is positive at every ε",
    "zcdp": "needs δ > 0: zCDP converts to (ε, δ) only for δ > 0",
    "rdp": "needs δ > 0: RDP converts to (ε, δ) only for δ > 0",
    "gdp": "needs δ > 0: μ-GDP has δ(ε) > 0 at every finite ε",
    "pld": "needs δ > 0: its numerical error bound is positive",
}


def _infinite_reason(method: str, delta: float) -> str:
    """The note of a method whose bound is infinite at ``delta`` (an "inf" row)."""
    if delta == 0 and method in _NEEDS_DELTA:
        return _NEEDS_DELTA[method]
    return f"no finite ε at δ = {delta:g} by this method"


def _account(args: argparse.Namespace) -> int:
    if args.mechanism == "gaussian" and not args.delta > 0:
        raise InvalidArgumentError(
            "`--delta` must be positive for gaussian: Gaussian noise is never pure DP "
            f"(ε = ∞ at δ = 0). Found {args.delta!r}."
        )
    event = _release_event(args)
    table = accountant.epsilon_by_method(event, args.delta)
    applicable = {m: v for m, v in table.items() if not isinstance(v, NotApplicableError)}
    best = min(applicable.values()) if applicable else None
    print(f"release : {event!r}")
    print(f"delta   : {args.delta:g}")
    print()
    print(f"By method (each an upper bound, rounded up): ε at δ = {args.delta:g}")
    rows = [("method", "epsilon", "note")]
    infinite = False
    for method, value in table.items():
        if isinstance(value, NotApplicableError):
            rows.append((method, "n/a", _reason(value)))
        elif math.isinf(value):
            infinite = True
            rows.append((method, "inf", _infinite_reason(method, args.delta)))
        else:
            rows.append((method, fmt_up(value, 8), "← tightest" if value == best else ""))
    print("\n".join(format_table(rows)))
    print()
    if infinite:
        # an "inf" is that method's bound, not the release's ε: say so, and how to compare
        print(f"inf: that method certifies no finite ε at δ = {args.delta:g} (see its note);")
        print("     the guarantee below is the tightest finite bound.")
        if args.delta == 0:
            print("     Give a δ > 0 (e.g. --delta 1e-6) to compare every method.")
        print()
    if best is None or math.isinf(best):
        print("No method certifies a finite ε for this release at this δ.")
        return 1
    print(f"Guarantee: ({fmt_up(best, 6)}, {args.delta:g})-DP (an upper bound, rounded up)")
    return 0


# -- calibrate -------------------------------------------------------------------------


def _calibrate(args: argparse.Namespace) -> int:
    from dpledger import calibrate  # imported when needed: `--help` stays light (issue #32)

    kind = args.mechanism
    sampling_rate = getattr(args, "sampling_rate", None)
    if sampling_rate == 1.0:
        sampling_rate = None  # every record in every sample: the unsampled release
    if kind == "gaussian":
        noise = calibrate.gaussian_sigma(
            args.epsilon,
            args.delta,
            sensitivity=args.sensitivity,
            count=args.count,
            sampling_rate=sampling_rate,
            method=args.method,
        )
        one: ev.Event = ev.Gaussian(noise, args.sensitivity)
        name = "sigma"
    elif kind == "laplace":
        noise = calibrate.laplace_scale(
            args.epsilon,
            sensitivity=args.sensitivity,
            count=args.count,
            delta=args.delta,
            method=args.method,
        )
        one = ev.Laplace(noise, args.sensitivity)
        name = "scale"
    else:
        noise = calibrate.discrete_gaussian_sigma(
            args.epsilon,
            args.delta,
            sensitivity=args.sensitivity,
            count=args.count,
            method=args.method,
        )
        one = ev.DiscreteGaussian(noise, args.sensitivity, dimension=1)
        name = "sigma"
    if sampling_rate is not None:
        one = ev.PoissonSampled(one, sampling_rate)
    event = one * args.count if args.count > 1 else one
    achieved_delta = accountant.delta(event, args.epsilon, method=args.method)
    achieved_epsilon = accountant.epsilon(event, args.delta, method=args.method)
    print(
        f"mechanism : {kind} (sensitivity {args.sensitivity:g}, count {args.count}"
        + (f", Poisson rate {sampling_rate:g})" if sampling_rate else ")")
    )
    print(f"target    : ({args.epsilon:g}, {args.delta:g})-DP, method {args.method}")
    print(f"{name:<9} : {fmt_up(noise, 10)}  (rounded up: at least the calibrated value)")
    print(
        f"achieved  : epsilon {fmt_up(achieved_epsilon, 10)} at delta {args.delta:g}; "
        f"delta {fmt_up(achieved_delta, 6)} at epsilon {args.epsilon:g}"
    )
    return 0


def _calibrate_dpsgd(args: argparse.Namespace) -> int:
    from dpledger import calibrate  # imported when needed: `--help` stays light (issue #32)

    run = calibrate.dpsgd_noise_multiplier(
        dataset_size=args.dataset_size,
        batch_size=args.batch_size,
        epochs=args.epochs,
        epsilon=args.epsilon,
        delta=args.delta,
        method=args.method,
    )
    per_epoch = run.steps // run.epochs
    print(
        f"DP-SGD    : {run.dataset_size} examples, batch size {run.batch_size}, {run.epochs} epochs"
    )
    print(
        f"steps     : {run.steps} = {run.epochs} epochs × ⌈{run.dataset_size}/{run.batch_size}⌉"
        f" = {run.epochs} × {per_epoch}"
    )
    print(
        f"rate q    : {fmt_up(run.sampling_rate, 8)} = {run.batch_size}/{run.dataset_size} "
        "(Poisson sampling)"
    )
    print(f"target    : ({run.epsilon:g}, {run.delta:g})-DP, method {args.method}")
    print(
        f"sigma     : {fmt_up(run.noise_multiplier, 10)}  (noise multiplier = noise std / "
        "clipping norm; rounded up)"
    )
    print(
        f"achieved  : epsilon {fmt_up(run.achieved_epsilon, 10)} at delta {run.delta:g} by "
        f"{run.accountant} (an upper bound, rounded up)"
    )
    print("convention: Opacus' epochs of ⌈N/B⌉ steps, each a Poisson sample at rate B/N")
    print("            (never fewer steps or a lower rate than Opacus or TF Privacy assume)")
    return 0


# -- audit -----------------------------------------------------------------------------


def _audit(args: argparse.Namespace) -> int:
    """Print the audit report(s); exit 0 if every claim is certified, else 1 (errors: 2).

    With several files: each report, then a summary table (one line per file). A file
    whose declaration is invalid is reported on stderr and counts as an error.
    """
    import json

    from dpledger.audit import PipelineError, check_claim
    from dpledger.audit.check import load_declaration

    if args.plot and len(args.pipeline) > 1:
        print("dpledger: error: --plot takes one pipeline", file=sys.stderr)
        return 2
    if args.plot:
        problem = _plot_problem(Path(args.plot))
        if problem:  # asked for a picture that cannot be made: say so before any work
            print(f"dpledger: error: --plot {args.plot}: {problem}", file=sys.stderr)
            return 2
    reports = []
    failed: list[dict[str, Any]] = []
    errors = 0
    for path in args.pipeline:
        try:
            pipeline = load_declaration(Path(path))  # [[release]] and/or [[dp_accounting]]
        except PipelineError as error:
            if args.json:
                problems = [{"line": line, "message": msg} for line, msg in error.problems]
                failed.append(
                    {"source": error.source, "error": "invalid declaration", "problems": problems}
                )
            elif len(args.pipeline) == 1:
                raise
            else:
                print(f"dpledger: error: {error}", file=sys.stderr)
            errors += 1
            continue
        reports.append(
            check_claim(
                pipeline, epsilon=args.epsilon, delta=args.delta, loose_ratio=args.loose_ratio
            )
        )
    if args.json:
        data = [r.to_dict() for r in reports] + failed
        print(
            json.dumps(data[0] if len(args.pipeline) == 1 else data, indent=2, ensure_ascii=False)
        )
    else:
        print("\n\n".join(r.format() for r in reports))
        if len(args.pipeline) > 1:
            print("\n" + _audit_summary(reports))
    if args.plot and reports:
        # the report above stands, but a plot asked for and not written is an error (exit
        # 2), never a warning under a success status that a script would take for a file
        try:
            from dpledger.audit.plot import plot_privacy_curve

            written = plot_privacy_curve(reports[0], args.plot)
        except (ImportError, OSError, ValueError) as error:
            print(
                f"dpledger: error: --plot {args.plot}: the plot was not written: {error}",
                file=sys.stderr,
            )
            return 2
        if not args.json:
            print(f"\nplot written to {written}")
    if errors:
        return 2
    return 0 if all(r.holds for r in reports) else 1


def _plot_problem(target: Path) -> str | None:
    """Why ``--plot target`` cannot be written (None: it can be tried)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return (
            "plotting needs matplotlib, which is not installed: pip install "
            "'dpledger[plot]', or leave out --plot."
        )
    folder = target.parent
    if not folder.is_dir():
        return f"the folder {str(folder)!r} does not exist."
    if target.is_dir():
        return "that is a folder; give a file name (e.g. --plot curve.png)."
    return None


def _audit_summary(reports: list[Any]) -> str:
    rows = [("pipeline", "claim", "certified ε", "verdict")]
    for r in reports:
        claim = r.claim
        if claim.notion in ("approx_dp", "pure_dp"):
            claimed = f"({claim.epsilon:g}, {claim.delta:g})"
            value = "—" if r.epsilon is None else fmt_up(r.epsilon, 6)
            low = r.epsilon_lower
            if low is not None and r.epsilon is not None and low != r.epsilon:
                value = f"{fmt_down(low, 6)} – {value}"
        else:
            claimed = f"{r.quantity} = {r.claimed_value:g}" if r.quantity else claim.notion
            value = "—" if r.value is None else fmt_up(r.value, 6)
        rows.append((Path(r.source).name, claimed, value, r.verdict.replace("_", " ")))
    return "\n".join(["Summary:", *format_table(rows)])


# -- ledger ----------------------------------------------------------------------------


# `dpledger ledger show`, `verify`, `init-db` and `copy`: dpledger/ledger/commands.py


# -- the parser ------------------------------------------------------------------------


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written; every option with a default says what it is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or action.required
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or "%(default)" in text
        ):
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose sub-commands share the help formatter, unabbreviated."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)  # `--s` must not silently mean `--sigma`
        super().__init__(*args, **kwargs)


def _command(
    parent: Any, name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A sub-command with a one-line summary, a description and an "Example" epilog."""
    lines = "\n".join(f"  {e}" for e in examples)
    epilog = f"Example{'s' if len(examples) > 1 else ''}:\n{lines}"
    parser: argparse.ArgumentParser = parent.add_parser(
        name, help=summary, description=textwrap.fill(description, 88), epilog=epilog
    )
    parser.set_defaults(_parser=parser)
    return parser


_DELTA_PURE = "target δ (0: pure DP)"
_ACCOUNT_COMMON = (
    "count, sampling-rate: the release is repeated --count times, each on a Poisson "
    "sample of the data at --sampling-rate (add/remove adjacency)."
)


def _account_parsers(commands: Any) -> None:
    account = _command(
        commands,
        "account",
        "(ε, δ) of repeated releases by every accounting method",
        "Print ε at a given δ of --count releases of one mechanism by every accounting "
        "method (each an upper bound, rounded up) and the tightest. Pick the mechanism; "
        "`dpledger account MECHANISM --help` lists its options.",
        [
            "dpledger account gaussian --sigma 5 --count 100 --delta 1e-5",
            "dpledger account laplace --scale 1 --count 100",
        ],
    )
    mechanisms = account.add_subparsers(dest="mechanism", required=True, metavar="MECHANISM")

    def common(parser: argparse.ArgumentParser, *, delta_required: bool) -> None:
        parser.add_argument("--count", type=int, default=1, help="number of releases")
        parser.add_argument(
            "--sampling-rate",
            type=float,
            default=None,
            help="Poisson sampling rate q of each release (default: no sampling)",
        )
        if delta_required:
            parser.add_argument(
                "--delta", type=float, required=True, help="target δ > 0 (required)"
            )
        else:
            parser.add_argument("--delta", type=float, default=0.0, help=_DELTA_PURE)
        # the events' own argument names, for errors (see _with_flags)
        names = {"rate": "sampling_rate"}
        if any(action.dest == "epsilon0" for action in parser._actions):
            names["epsilon"] = "epsilon0"  # PureDP(epsilon=...), RandomizedResponse(...)
        parser.set_defaults(handler=_account, _names=names)

    gaussian = _command(
        mechanisms,
        "gaussian",
        "Gaussian noise",
        "ε of --count releases with Gaussian noise of standard deviation --sigma added to "
        "a query of L2 sensitivity --sensitivity. Gaussian noise is never pure DP, so "
        f"--delta is required. {_ACCOUNT_COMMON}",
        [
            "dpledger account gaussian --sigma 5 --count 100 --delta 1e-5",
            "dpledger account gaussian --sigma 1.1 --sampling-rate 0.01 --count 10000 --delta 1e-5",
        ],
    )
    gaussian.add_argument(
        "--sigma", type=float, required=True, help="noise standard deviation (required)"
    )
    gaussian.add_argument("--sensitivity", type=float, default=1.0, help="L2 sensitivity")
    common(gaussian, delta_required=True)

    laplace = _command(
        mechanisms,
        "laplace",
        "Laplace noise",
        "ε of --count releases with Laplace noise of scale --scale added to a query of L1 "
        f"sensitivity --sensitivity. {_ACCOUNT_COMMON}",
        [
            "dpledger account laplace --scale 1 --count 100",
            "dpledger account laplace --scale 1 --count 100 --delta 1e-6",
        ],
    )
    laplace.add_argument("--scale", type=float, required=True, help="noise scale b (required)")
    laplace.add_argument("--sensitivity", type=float, default=1.0, help="L1 sensitivity")
    common(laplace, delta_required=False)

    pure = _command(
        mechanisms,
        "pure",
        "a release that is ε0-DP",
        f"ε of --count releases that are each --epsilon0-DP. {_ACCOUNT_COMMON}",
        ["dpledger account pure --epsilon0 1 --count 100 --delta 1e-6"],
    )
    pure.add_argument("--epsilon0", type=float, required=True, help="ε of one release (required)")
    common(pure, delta_required=False)

    rr = _command(
        mechanisms,
        "rr",
        "randomized response",
        "ε of --count randomized-response releases, each --epsilon0-DP over --categories "
        f"categories. {_ACCOUNT_COMMON}",
        ["dpledger account rr --epsilon0 1 --categories 4 --count 10"],
    )
    rr.add_argument("--epsilon0", type=float, required=True, help="ε of one release (required)")
    rr.add_argument("--categories", type=int, default=2, help="number of categories")
    common(rr, delta_required=False)


def _calibrate_parsers(commands: Any) -> None:
    cal = _command(
        commands,
        "calibrate",
        "smallest noise meeting a target (ε, δ)",
        "Print the smallest noise that meets a target (ε, δ) after composition (and "
        "sampling), rounded up, and the guarantee it achieves. Pick the mechanism; "
        "`dpledger calibrate MECHANISM --help` lists its options.",
        [
            "dpledger calibrate gaussian --epsilon 1 --delta 1e-5 --count 1000",
            "dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256 --epochs 60 "
            "--epsilon 3 --delta 1e-5",
        ],
    )
    mechanisms = cal.add_subparsers(dest="mechanism", required=True, metavar="MECHANISM")

    def target(parser: argparse.ArgumentParser, *, delta_required: bool) -> None:
        parser.add_argument("--epsilon", type=float, required=True, help="target ε (required)")
        if delta_required:
            parser.add_argument(
                "--delta", type=float, required=True, help="target δ > 0 (required)"
            )
        else:
            parser.add_argument("--delta", type=float, default=0.0, help=_DELTA_PURE)

    def releases(parser: argparse.ArgumentParser, sensitivity: str) -> None:
        parser.add_argument("--sensitivity", type=float, default=1.0, help=sensitivity)
        parser.add_argument("--count", type=int, default=1, help="number of releases")

    def method(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--method",
            default="auto",
            choices=accountant.METHODS,
            metavar="METHOD",
            help=f"accounting method, one of {', '.join(accountant.METHODS)} ('auto': the "
            "tightest that applies)",
        )

    gaussian = _command(
        mechanisms,
        "gaussian",
        "Gaussian noise σ",
        "The smallest σ such that --count Gaussian releases of L2 sensitivity "
        "--sensitivity (each on a Poisson sample at --sampling-rate, if given) are "
        "(ε, δ)-DP: exact without sampling, within about 1e-4 relative of PLD's smallest "
        "with sampling.",
        [
            "dpledger calibrate gaussian --epsilon 1 --delta 1e-5 --count 1000",
            "dpledger calibrate gaussian --epsilon 1 --delta 1e-5 --count 10000 "
            "--sampling-rate 0.01",
        ],
    )
    target(gaussian, delta_required=True)
    releases(gaussian, "L2 sensitivity")
    gaussian.add_argument(
        "--sampling-rate",
        type=float,
        default=None,
        help="Poisson sampling rate q of each release (default: no sampling)",
    )
    method(gaussian)
    gaussian.set_defaults(handler=_calibrate)

    laplace = _command(
        mechanisms,
        "laplace",
        "Laplace noise scale",
        "The smallest Laplace scale such that --count releases of L1 sensitivity "
        "--sensitivity are (ε, δ)-DP (pure ε-DP with the default δ = 0).",
        [
            "dpledger calibrate laplace --epsilon 1 --count 10",
            "dpledger calibrate laplace --epsilon 1 --delta 1e-6 --count 100",
        ],
    )
    target(laplace, delta_required=False)
    releases(laplace, "L1 sensitivity")
    method(laplace)
    laplace.set_defaults(handler=_calibrate)

    discrete = _command(
        mechanisms,
        "discrete-gaussian",
        "discrete Gaussian σ",
        "The smallest σ such that --count discrete Gaussian releases (Canonne, Kamath & "
        "Steinke 2020) of integer-valued L2 sensitivity --sensitivity are (ε, δ)-DP.",
        ["dpledger calibrate discrete-gaussian --epsilon 1 --delta 1e-6 --count 4"],
    )
    target(discrete, delta_required=True)
    releases(discrete, "L2 sensitivity")
    method(discrete)
    discrete.set_defaults(handler=_calibrate)

    dpsgd = _command(
        mechanisms,
        "dpsgd",
        "DP-SGD noise multiplier from dataset size, batch size and epochs",
        "The smallest noise multiplier σ (noise std / clipping norm) for DP-SGD to be "
        "(ε, δ)-DP, in Opacus' convention: epochs × ⌈N/B⌉ steps, each a Poisson sample "
        "at rate q = B/N. Accounted with the privacy loss distribution (method 'auto'); "
        "see docs/training.md.",
        [
            "dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256 --epochs 60 "
            "--epsilon 3 --delta 1e-5"
        ],
    )
    dpsgd.add_argument(
        "--dataset-size", type=int, required=True, help="N, training examples (required)"
    )
    dpsgd.add_argument(
        "--batch-size", type=int, required=True, help="B, expected batch size (required)"
    )
    dpsgd.add_argument("--epochs", type=int, required=True, help="E, epochs (required)")
    target(dpsgd, delta_required=True)
    method(dpsgd)
    dpsgd.set_defaults(handler=_calibrate_dpsgd)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dpledger",
        description="Differential-privacy accounting that never under-reports a privacy loss.",
        epilog=(
            "Examples:\n"
            "  dpledger account gaussian --sigma 5 --count 100 --delta 1e-5\n"
            "  dpledger calibrate dpsgd --dataset-size 60000 --batch-size 256 --epochs 60 "
            "--epsilon 3 --delta 1e-5\n"
            "  dpledger audit examples/audits/dpsgd.toml\n\n"
            "`dpledger COMMAND --help` describes each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {dpledger.__version__}")
    parser.set_defaults(_parser=parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _account_parsers(commands)
    _calibrate_parsers(commands)

    aud = _command(
        commands,
        "audit",
        "check a declared pipeline's privacy claim",
        "Recompute the guarantee of each declared pipeline (TOML) by every accounting "
        "method, certify it from above and below, and give a verdict on its claim. Exit "
        "status 0 if every claim is certified, 1 if one is not, 2 on an error (also when "
        "a --plot asked for cannot be written). With several files, a summary table "
        "follows the reports.",
        [
            "dpledger audit examples/audits/dpsgd.toml",
            "dpledger audit examples/audits/*.toml",
            "dpledger audit examples/audits/ssp.toml --plot ssp.png",
        ],
    )
    aud.add_argument("pipeline", nargs="+", help="pipeline declaration(s) (TOML)")
    aud.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="draw δ(ε) with the claim marked (default: no plot)",
    )
    aud.add_argument("--json", action="store_true", help="print the report as JSON")
    aud.add_argument(
        "--epsilon", type=float, default=None, help="override the claimed ε (default: declared)"
    )
    aud.add_argument(
        "--delta", type=float, default=None, help="override the claimed δ (default: declared)"
    )
    aud.add_argument(
        "--loose-ratio",
        type=float,
        default=0.8,
        help="the claim 'holds loosely' when certified ε is below this × the claim",
    )
    aud.set_defaults(handler=_audit)

    ledger_commands.add_parsers(commands, _command)
    return parser


def _refuse_unknown(args: argparse.Namespace, extra: list[str]) -> None:
    """Exit 2 naming the first option that does not apply to the chosen (sub)command."""
    parser: argparse.ArgumentParser = args._parser
    known = sorted(
        {
            option
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--") and option not in ("--help", "--version")
        }
    )
    flag = next((e for e in extra if e.startswith("-")), extra[0]).split("=", 1)[0]
    what = "option" if flag.startswith("-") else "argument"
    message = f"the {what} {flag} does not apply to `{parser.prog}`"
    if known:
        message += f"; its options are {', '.join(known)}"
    parser.error(message + ".")


# An argument named in an error: `name` (any name) or a bare snake_case name (never plain
# words such as "delta" or "count", which also occur in prose).
_NAMED = re.compile(r"`([A-Za-z_]\w*)`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")


def _with_flags(message: str, args: argparse.Namespace) -> str:
    """``message`` with every argument it names written as the flag that set it.

    dpledger's errors name the Python argument (`rate`, `batch_size`); on the command line
    the user typed a flag (`--sampling-rate`, `--batch-size`). Every option of the command
    maps its destination to its flag, and ``_names`` (set by a parser) maps the library's
    own argument names where they differ (`rate` → `sampling_rate`). Only options that
    hold a value are mapped: an unset ``audit --epsilon`` is not what a message about the
    declared claim's `epsilon` refers to.
    """
    parser: argparse.ArgumentParser = args._parser
    flags = {
        action.dest: long[0]
        for action in parser._actions
        if (long := [o for o in action.option_strings if o.startswith("--")])
        and getattr(args, action.dest, None) is not None
    }
    for name, dest in getattr(args, "_names", {}).items():
        if dest in flags:
            flags[name] = flags[dest]

    def flag(match: re.Match[str]) -> str:
        quoted, bare = match.groups()
        found = flags.get(quoted or bare)
        if found is None:
            return match.group(0)
        return f"`{found}`" if quoted else found

    return _NAMED.sub(flag, message)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpledger`` command; returns the exit status."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_unknown(args, extra)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        status = handler(args)
    except PipelineError as error:  # about the declaration's lines, not the flags
        print(f"dpledger: error: {error}", file=sys.stderr)
        return 2
    except DPLedgerError as error:
        print(f"dpledger: error: {_with_flags(str(error), args)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status
