"""The ``dpledger ledger`` commands verify, init-db and copy (parsed in dpledger.cli).

Each takes the parsed arguments and returns the exit status; a dpledger error propagates
to the command line, which prints it (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpledger._format import up as fmt_up
from dpledger._public import namespace
from dpledger.errors import InvalidArgumentError

__all__ = ["Progress", "copy", "init_db", "read_key", "verify"]


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
    from dpledger.ledger.pgstore import init_db

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


__dir__ = namespace(__all__)
