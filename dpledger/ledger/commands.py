"""The ``dpledger ledger`` commands: show, verify, init-db and copy, and their parsers.

Each takes the parsed arguments and returns the exit status; a dpledger error propagates
to the command line (dpledger.cli), which prints it (exit status 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpledger._format import down as fmt_down
from dpledger._format import up as fmt_up
from dpledger._public import namespace
from dpledger._table import format_table
from dpledger.errors import InvalidArgumentError

__all__ = ["Progress", "add_parsers", "copy", "init_db", "read_key", "show", "verify"]


def read_key(args: argparse.Namespace) -> bytes | None:
    """The HMAC key read from ``--key-file`` (None without one)."""
    if not getattr(args, "key_file", None):
        return None
    try:
        return Path(args.key_file).read_bytes()
    except OSError as error:
        raise InvalidArgumentError(
            f"cannot read the key file {args.key_file!r}: {error.strerror or error}."
        ) from error


class Progress:
    """A progress bar on stderr for long verifications (only on a terminal, or forced)."""

    def __init__(self, label: str, force: bool = False) -> None:
        self.label = label
        self.show = force or sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (only for 10,000 receipts or more)."""
        if not self.show or total < 10_000:
            return
        percent = 100 * done // max(total, 1)
        if percent == self.last:
            return
        self.last = percent
        bar = "#" * (percent // 4)
        end = "\n" if done >= total else ""
        print(f"\r{self.label} [{bar:<25}] {done}/{total}", end=end, file=sys.stderr, flush=True)


def show(args: argparse.Namespace) -> int:
    """`dpledger ledger show`: verify (read-only), print the budget, receipts, spent, remaining."""
    from dpledger.ledger.core import Ledger

    key = read_key(args)
    with Ledger.open(args.path, key=key, readonly=True) as ledger:
        ledger.verify(progress=Progress("verifying"))
        receipts = ledger.receipts
        delta = ledger.delta
        print(f"ledger    : {args.path}  (verified: {len(receipts)} receipts, hash chain intact)")
        print(
            f"budget    : ({ledger.epsilon:g}, {delta:g})-DP, accountant "
            f"{ledger.accountant!r}, adjacency {ledger.adjacency!r}"
        )
        print(f"            = {ledger.budget.native()}")
        print()
        rows = [("#", "time (UTC)", "label", "release", "charge", f"= ε at δ={delta:g}", "ε spent")]
        for r in receipts:
            if r.kind == "plan":
                charge, alone = "plan", ""
            else:
                charge = r.charge.native()
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
        print("\n".join(format_table(rows, indent="")))
        eps, spent_delta = ledger.spent
        remaining = ledger.remaining
        spends = [r for r in receipts if r.kind != "plan"]
        print()
        # ε at the ledger's δ first (what the user asked for), the native amount beside it
        if ledger.budget.currency in ("approx_dp", "plan") or not spends:
            spent = f"({fmt_up(eps, 6)}, {spent_delta:g})-DP (filter-tracked)"
        else:
            spent = f"ε = {fmt_up(eps, 6)} at δ = {delta:g} ({spends[-1].total.native()})"
        print(f"spent     : {spent}")
        left = remaining.epsilon_at(delta)
        if remaining.currency in ("approx_dp", "plan") or not math.isfinite(left):
            print(f"remaining : {remaining.native()}")
        else:
            # not budget − spent in ε (composition is not additive in ε): one release's ε
            print(
                f"remaining : ε = {fmt_down(left, 6)} at δ = {delta:g} ({remaining.native()}) "
                "for one release using it all"
            )
        planned = ledger.planned_remaining
        if planned is not None:
            print(f"planned   : {len(planned)} planned releases not yet made")
    return 0


def verify(args: argparse.Namespace) -> int:
    """`dpledger ledger verify`: re-verify from the genesis; receipts by principal."""
    from dpledger.ledger.core import Ledger

    with Ledger.open(args.path, key=read_key(args), readonly=True) as ledger:
        count = ledger.verify(progress=Progress("verifying", force=args.progress))
        eps, delta = ledger.spent
        by: dict[str, int] = {}
        for receipt in ledger.receipts:
            who = receipt.principal or {}
            name = str(who.get("db_user") or who.get("user") or "unknown")
            by[name] = by.get(name, 0) + 1
    print(
        f"{args.path}: verified from the genesis: {count} receipts, every charge and running "
        f"total recomputed, hash chain and seals intact; spent ({fmt_up(eps, 6)}, {delta:g})."
    )
    if by:
        print("receipts by: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    return 0


def init_db(args: argparse.Namespace) -> int:
    """`dpledger ledger init-db`: install the schema and roles, grant users."""
    from dpledger.ledger.pgconnect import init_db

    grant = {"owner": args.owner, "analyst": args.analyst, "auditor": args.auditor}
    for line in init_db(args.url, grant={k: v for k, v in grant.items() if v}):
        print(line)
    return 0


def copy(args: argparse.Namespace) -> int:
    """`dpledger ledger copy`: move a ledger between stores, verified."""
    from dpledger.ledger.persistence import copy_ledger

    count = copy_ledger(
        args.source, args.destination, key=read_key(args), progress=Progress("copying")
    )
    print(
        f"copied {count} receipts from {args.source} to {args.destination}; the copy verifies "
        "(same chain, same head)."
    )
    return 0


def add_parsers(commands: Any, command: Callable[..., argparse.ArgumentParser]) -> None:
    """Add `dpledger ledger` and its commands to the command line's ``commands``.

    ``command(parent, name, summary, description, examples)`` is the command line's own
    sub-command factory (its help style), passed in: the ledger does not import the CLI.
    """
    led = command(
        commands,
        "ledger",
        "inspect, verify, copy a ledger; set up a team's database",
        "Inspect a persisted privacy ledger, a file or a team's ledger in PostgreSQL "
        "(postgresql://user@host/db?ledger=NAME; see docs/ledger.md).",
        [
            "dpledger ledger show study.ledger",
            "dpledger ledger verify postgresql://alice@db.example/studies?ledger=adult",
        ],
    )
    led_commands = led.add_subparsers(dest="ledger_command", required=True, metavar="COMMAND")
    show_parser = command(
        led_commands,
        "show",
        "print receipts and spent/remaining",
        "Verify a ledger's hash chain (read-only) and print its budget, every "
        "receipt, what was spent and what remains.",
        [
            "dpledger ledger show study.ledger",
            "dpledger ledger show study.ledger --key-file study.key",
            "dpledger ledger show 'postgresql://alice@db.example/studies?ledger=adult'",
        ],
    )
    show_parser.add_argument("path", help="the ledger's SQLite file, or a postgresql:// URL")
    show_parser.add_argument(
        "--key-file", default=None, help="file holding the ledger's HMAC key (default: none)"
    )
    show_parser.set_defaults(handler=show)
    verify_parser = command(
        led_commands,
        "verify",
        "re-verify a whole ledger from its genesis",
        "Re-verify everything (read-only): every receipt's hash and link, every charge "
        "recomputed from its release, every running total replayed, the head and the sealed "
        "total. Opening a ledger checks only the receipts after its last checkpoint; run "
        "this after a restore, or on a schedule. Exit status 2 if anything does not verify.",
        [
            "dpledger ledger verify study.ledger",
            "dpledger ledger verify 'postgresql://carol@db.example/studies?ledger=adult' "
            "--key-file study.key",
        ],
    )
    verify_parser.add_argument("path", help="the ledger's SQLite file, or a postgresql:// URL")
    verify_parser.add_argument(
        "--key-file", default=None, help="file holding the ledger's HMAC key (default: none)"
    )
    verify_parser.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not on a terminal"
    )
    verify_parser.set_defaults(handler=verify)
    init = command(
        led_commands,
        "init-db",
        "install the team-ledger schema and roles in PostgreSQL",
        "Install (or update; safe to run again) the dpledger schema, its check-and-debit "
        "trigger and the roles dpledger_owner (creates ledgers, sets budgets), "
        "dpledger_analyst (spends, reads) and dpledger_auditor (reads) in a database. Run "
        "as a superuser or the database owner with CREATEROLE; the password comes from "
        "PGPASSWORD, ~/.pgpass or a service file, never the URL.",
        [
            "dpledger ledger init-db postgresql://postgres@db.example/studies",
            "dpledger ledger init-db postgresql://postgres@db.example/studies "
            "--owner dana --analyst alice --analyst bob --auditor carol",
        ],
    )
    init.add_argument("url", help="postgresql://user@host:port/database")
    for role, what in (
        ("owner", "creates ledgers and quotas"),
        ("analyst", "spends and reads"),
        ("auditor", "reads"),
    ):
        init.add_argument(
            f"--{role}",
            action="append",
            default=[],
            metavar="USER",
            help=f"make an existing database user a member of dpledger_{role} ({what}); repeatable",
        )
    init.set_defaults(handler=init_db)
    copy_parser = command(
        led_commands,
        "copy",
        "copy a ledger between a file and PostgreSQL",
        "Copy a ledger (file to PostgreSQL, PostgreSQL to file, or file to file) with its "
        "receipts, hash chain and seals unchanged, then verify the copy in full. The "
        "destination must not hold a ledger of that name yet.",
        [
            "dpledger ledger copy study.ledger 'postgresql://dana@db.example/studies?ledger=adult'",
            "dpledger ledger copy 'postgresql://carol@db.example/studies?ledger=adult' "
            "backup.ledger",
        ],
    )
    copy_parser.add_argument("source", help="the ledger to copy: a file or a postgresql:// URL")
    copy_parser.add_argument("destination", help="where to: a new file or a postgresql:// URL")
    copy_parser.add_argument(
        "--key-file", default=None, help="file holding the ledger's HMAC key (default: none)"
    )
    copy_parser.set_defaults(handler=copy)


__dir__ = namespace(__all__)
