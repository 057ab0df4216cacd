"""Client processes that spend on one ledger at once (load, fairness and fault tests).

Each client is a forked process that opens the ledger, waits for the start signal,
attempts its spends and writes one line per outcome to its own file (``os.write`` of a
whole line: a client killed at any moment leaves only whole lines):

* ``OK seq elapsed`` — a spend reported as done (its receipt number);
* ``REFUSED elapsed`` — the budget (or the database) refused it;
* ``ERR elapsed message`` — a dpledger error (server down, timeout): the client goes on;
* ``RAW type message`` — anything else (a raw psycopg error would be a bug);
* ``DONE``.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import dpledger as dpl
from dpledger.errors import BudgetExceededError, DPLedgerError


@dataclass
class Outcome:
    """What one client saw."""

    ok: list[int] = field(default_factory=list)
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    done: bool = False
    slowest: float = 0.0  # the longest single call (s)


def _client(where: str, key, spends: int, event, out: Path, go: int, pause: float) -> None:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def line(text: str) -> None:
        os.write(fd, (text.replace("\n", " ") + "\n").encode())

    try:
        ledger = None
        try:
            ledger = dpl.Ledger.open(where, key=key)
        except DPLedgerError as error:  # retried in the loop
            line(f"ERR 0 {type(error).__name__}: {error}")
        os.read(go, 1)  # the start signal: every client begins together
        for _ in range(spends):
            start = time.monotonic()
            try:
                if ledger is None:
                    ledger = dpl.Ledger.open(where, key=key)
                receipt = ledger.spend(event)
                line(f"OK {receipt.seq} {time.monotonic() - start:.4f}")
            except BudgetExceededError:
                line(f"REFUSED {time.monotonic() - start:.4f}")
            except DPLedgerError as error:
                line(f"ERR {time.monotonic() - start:.4f} {type(error).__name__}: {error}")
                time.sleep(0.05)
            except Exception as error:
                line(f"RAW {type(error).__module__}.{type(error).__name__}: {error}")
            if pause:
                time.sleep(pause)
        line("DONE")
    finally:
        os._exit(0)


@dataclass
class Clients:
    """Running client processes (see :func:`start`)."""

    pids: list[int]
    files: list[Path]
    go_write: int

    def go(self) -> None:
        os.write(self.go_write, b"x" * len(self.pids))
        os.close(self.go_write)

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        os.kill(self.pids[index], sig)

    def wait(self, timeout: float = 600.0) -> list[Outcome]:
        deadline = time.monotonic() + timeout
        remaining = set(self.pids)
        while remaining:
            for pid in list(remaining):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    remaining.discard(pid)
            if time.monotonic() > deadline:
                for pid in remaining:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                raise TimeoutError(f"{len(remaining)} clients still running (a hang?)")
            time.sleep(0.02)
        return [read(path) for path in self.files]


def read(path: Path) -> Outcome:
    """Parse a client's file."""
    outcome = Outcome()
    if not path.exists():
        return outcome
    for text in path.read_text().splitlines():
        kind, _, rest = text.partition(" ")
        if kind == "OK":
            seq, elapsed = rest.split()
            outcome.ok.append(int(seq))
            outcome.slowest = max(outcome.slowest, float(elapsed))
        elif kind == "REFUSED":
            outcome.refused += 1
            outcome.slowest = max(outcome.slowest, float(rest.split()[0]))
        elif kind == "ERR":
            elapsed, _, message = rest.partition(" ")
            outcome.errors.append(message)
            outcome.slowest = max(outcome.slowest, float(elapsed))
        elif kind == "RAW":
            outcome.raw.append(rest)
        elif kind == "DONE":
            outcome.done = True
    return outcome


def start(
    where: str, clients: int, spends: int, event, folder: Path, key=None, pause: float = 0.0
) -> Clients:
    """Fork ``clients`` processes that each attempt ``spends`` spends of ``event``."""
    go_read, go_write = os.pipe()
    pids, files = [], []
    for index in range(clients):
        out = folder / f"client-{index}.txt"
        files.append(out)
        pid = os.fork()
        if pid == 0:
            os.close(go_write)
            _client(where, key, spends, event, out, go_read, pause)
        pids.append(pid)
    os.close(go_read)
    return Clients(pids, files, go_write)


def spread(counts: list[int]) -> float:
    """max/min of releases per client (inf if a client got none)."""
    return max(counts) / min(counts) if min(counts) > 0 else float("inf")
