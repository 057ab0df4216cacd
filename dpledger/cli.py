"""The ``dpledger`` command line.

``dpledger account MECHANISM ...`` prints the (ε, δ) guarantee of a composition of
releases by every accounting method, and the tightest. ``dpledger calibrate MECHANISM``
prints the smallest noise meeting a target (ε, δ), and the guarantee it achieves.

Example::

    dpledger calibrate gaussian --epsilon 1 --delta 1e-5 --count 1000 --sampling-rate 0.01
    dpledger calibrate laplace --epsilon 1 --count 10
    dpledger account gaussian --sigma 5 --count 100 --delta 1e-5
    dpledger account gaussian --sigma 1.1 --sampling-rate 0.01 --count 10000 --delta 1e-5
    dpledger account laplace --scale 1 --count 100 --delta 1e-6
    dpledger audit examples/audits/dpsgd.toml --plot dpsgd.png

``dpledger audit PIPELINE.toml`` checks a declared pipeline's claim (see
:mod:`dpledger.audit`): exit status 0 if the claim is certified, 1 if it is not
(violated, not certified, unsupported), 2 on an error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpledger import accountant, calibrate
from dpledger._format import down as fmt_down
from dpledger._format import up as fmt_up
from dpledger.accountant import events as ev
from dpledger.errors import DPLedgerError, InvalidArgumentError, NotApplicableError

__all__ = ["main"]


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


def _describe(event: ev.Event) -> str:
    return repr(event)


def _account(args: argparse.Namespace) -> int:
    event = _release_event(args)
    table = accountant.epsilon_by_method(event, args.delta)
    applicable = {m: v for m, v in table.items() if not isinstance(v, NotApplicableError)}
    best = min(applicable.values()) if applicable else None
    print(f"release : {_describe(event)}")
    print(f"delta   : {args.delta:g}")
    print()
    print(f"{'method':<10} {'epsilon':>14}  note")
    print(f"{'-' * 10} {'-' * 14}  {'-' * 40}")
    for method, value in table.items():
        if isinstance(value, NotApplicableError):
            print(f"{method:<10} {'-':>14}  not applicable")
        else:
            mark = "tightest" if value == best else ""
            print(f"{method:<10} {fmt_up(value, 8):>14}  {mark}")
    print()
    if best is None:
        print("No method applies to this release.")
        return 1
    print(
        f"Guarantee: ({fmt_up(best, 6)}, {args.delta:g})-DP  [every value above is an upper "
        "bound, rounded up]"
    )
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    kind = args.mechanism
    if kind == "gaussian":
        noise = calibrate.gaussian_sigma(
            args.epsilon,
            args.delta,
            sensitivity=args.sensitivity,
            count=args.count,
            sampling_rate=args.sampling_rate,
            method=args.method,
        )
        one: ev.Event = ev.Gaussian(noise, args.sensitivity)
        name = "sigma"
    elif kind == "laplace":
        if args.sampling_rate is not None:
            print(
                "dpledger: error: --sampling-rate is supported for gaussian only", file=sys.stderr
            )
            return 2
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
    if args.sampling_rate is not None:
        one = ev.PoissonSampled(one, args.sampling_rate)
    event = one * args.count if args.count > 1 else one
    achieved_delta = accountant.delta(event, args.epsilon, method=args.method)
    achieved_epsilon = accountant.epsilon(event, args.delta, method=args.method)
    print(
        f"mechanism : {kind} (sensitivity {args.sensitivity:g}, count {args.count}"
        + (f", Poisson rate {args.sampling_rate:g})" if args.sampling_rate else ")")
    )
    print(f"target    : ({args.epsilon:g}, {args.delta:g})-DP, method {args.method}")
    print(f"{name:<9} : {fmt_up(noise, 10)}  (rounded up: at least the calibrated value)")
    print(
        f"achieved  : epsilon {fmt_up(achieved_epsilon, 10)} at delta {args.delta:g}; "
        f"delta {fmt_up(achieved_delta, 6)} at epsilon {args.epsilon:g}"
    )
    return 0


def _audit(args: argparse.Namespace) -> int:
    """Print the audit report(s); exit 0 if every claim is certified, else 1 (errors: 2).

    With several files: each report, then a summary table (one line per file). A file
    whose declaration is invalid is reported on stderr and counts as an error.
    """
    import json

    from dpledger.audit import PipelineError, check_claim, load_pipeline

    if args.plot and len(args.pipeline) > 1:
        print("dpledger: error: --plot takes one pipeline", file=sys.stderr)
        return 2
    reports = []
    failed: list[dict[str, Any]] = []
    errors = 0
    for path in args.pipeline:
        try:
            pipeline = load_pipeline(path)
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
        # the verdict stands whatever happens to the picture: a failed plot is reported,
        # and the exit status stays the verdict's
        try:
            from dpledger.audit.plot import plot_privacy_curve

            written = plot_privacy_curve(reports[0], args.plot)
        except (ImportError, OSError, ValueError) as error:
            print(f"dpledger: warning: the plot was not written: {error}", file=sys.stderr)
        else:
            if not args.json:
                print(f"\nplot written to {written}")
    if errors:
        return 2
    return 0 if all(r.holds for r in reports) else 1


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
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["Summary:"]
    for n, row in enumerate(rows):
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        )
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _ledger_show(args: argparse.Namespace) -> int:
    from dpledger.ledger import Ledger

    key = None
    if args.key_file:
        try:
            key = Path(args.key_file).read_bytes()
        except OSError as error:
            raise InvalidArgumentError(
                f"cannot read the key file {args.key_file!r}: {error.strerror or error}."
            ) from error
    with Ledger.open(args.path, key=key, readonly=True) as ledger:
        receipts = ledger.receipts
        delta = ledger.delta
        print(f"ledger    : {args.path}  (verified: {len(receipts)} receipts, hash chain intact)")
        print(
            f"budget    : ({ledger.epsilon:g}, {delta:g})-DP, accountant "
            f"{ledger.accountant!r}, adjacency {ledger.adjacency!r}"
        )
        print(f"            = {ledger.budget}")
        print()
        rows = [("#", "time (UTC)", "label", "release", "charge", f"= ε at δ={delta:g}", "ε spent")]
        for r in receipts:
            if r.kind == "plan":
                charge, alone = "plan", ""
            else:
                charge = str(r.charge)
                eps = r.charge.epsilon_at(delta) if delta > 0 else r.charge.epsilon_at(0.0)
                alone = "" if eps != eps else fmt_up(eps, 6)
            rows.append(
                (
                    str(r.seq),
                    r.timestamp[:19],
                    r.label or "",
                    r.mechanism or repr(r.event),
                    charge,
                    alone,
                    fmt_up(r.epsilon, 6),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for n, row in enumerate(rows):
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
            if n == 0:
                print("  ".join("-" * w for w in widths))
        eps, spent_delta = ledger.spent
        remaining = ledger.remaining
        print()
        print(f"spent     : ({fmt_up(eps, 6)}, {spent_delta:g})-DP (filter-tracked)")
        left = remaining.epsilon_at(delta)
        extra = (
            ""
            if left != left
            else f"  (a release using all of it: ε = {fmt_down(left, 6)} at δ = {delta:g})"
        )
        print(f"remaining : {remaining}{extra}")
        planned = ledger.planned_remaining
        if planned is not None:
            print(f"planned   : {len(planned)} planned releases not yet made")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpledger",
        description="Differential-privacy accounting that never under-reports a privacy loss.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    account = commands.add_parser(
        "account", help="(ε, δ) of repeated releases by every accounting method"
    )
    account.add_argument("mechanism", choices=("gaussian", "laplace", "pure", "rr"))
    account.add_argument("--sigma", type=float, help="Gaussian noise standard deviation")
    account.add_argument("--scale", type=float, help="Laplace noise scale")
    account.add_argument("--epsilon0", type=float, help="ε of one pure-DP / RR release")
    account.add_argument("--categories", type=int, default=2, help="RR categories (default 2)")
    account.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (L2/L1)")
    account.add_argument("--count", type=int, default=1, help="number of releases")
    account.add_argument("--sampling-rate", type=float, default=None, help="Poisson rate")
    account.add_argument("--delta", type=float, required=True, help="target δ")
    account.set_defaults(handler=_account)

    cal = commands.add_parser("calibrate", help="smallest noise meeting a target (ε, δ)")
    cal.add_argument("mechanism", choices=("gaussian", "laplace", "discrete-gaussian"))
    cal.add_argument("--epsilon", type=float, required=True, help="target ε")
    cal.add_argument("--delta", type=float, default=0.0, help="target δ (default 0)")
    cal.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (L2/L1)")
    cal.add_argument("--count", type=int, default=1, help="number of releases")
    cal.add_argument("--sampling-rate", type=float, default=None, help="Poisson rate")
    cal.add_argument("--method", default="auto", choices=accountant.METHODS)
    cal.set_defaults(handler=_calibrate)

    aud = commands.add_parser("audit", help="check a declared pipeline's privacy claim")
    aud.add_argument("pipeline", nargs="+", help="pipeline declaration(s) (TOML)")
    aud.add_argument("--plot", metavar="FILE.png", default=None, help="draw δ(ε), claim marked")
    aud.add_argument("--json", action="store_true", help="print the report as JSON")
    aud.add_argument("--epsilon", type=float, default=None, help="override the claimed ε")
    aud.add_argument("--delta", type=float, default=None, help="override the claimed δ")
    aud.add_argument(
        "--loose-ratio", type=float, default=0.8, help="'holds loosely' below this × claim"
    )
    aud.set_defaults(handler=_audit)

    led = commands.add_parser("ledger", help="inspect a ledger file")
    led_commands = led.add_subparsers(dest="ledger_command", required=True)
    show = led_commands.add_parser("show", help="print receipts and spent/remaining")
    show.add_argument("path", help="the ledger's SQLite file")
    show.add_argument("--key-file", default=None, help="file holding the ledger's HMAC key")
    show.set_defaults(handler=_ledger_show)
    return parser


_REQUIRED = {"gaussian": "sigma", "laplace": "scale", "pure": "epsilon0", "rr": "epsilon0"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpledger`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "account":
        needed = _REQUIRED[args.mechanism]
        if getattr(args, needed) is None:
            parser.error(f"{args.mechanism} needs --{needed.replace('_', '-')}")
    try:
        status: int = args.handler(args)
    except DPLedgerError as error:
        print(f"dpledger: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status
