"""What the examples share: where the data are, and how long a run takes.

**Data.** ``--data DIR`` names the folder that *holds* the data sets' folders —
``DIR/adult/adult.data``, ``DIR/uci/elevators/...`` — as ``$DPLEDGER_DATA`` does for the
docs and the benchmarks. Without ``--data``: ``$DPLEDGER_DATA``, else ``data/`` in the
working directory. A file missing where ``--data`` says is an error (exit status 2) that
names the path; only without ``--data`` may an example fall back to synthetic data, and it
says so on stdout.

**Run time.** Every example takes ``--quick`` (a run of well under a minute) and prints its
expected run time first; the times are measured on a 2-core machine (Python 3.11).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

DATA_HELP = (
    "the folder holding the data sets' folders (adult/, uci/), as $DPLEDGER_DATA "
    "(default: $DPLEDGER_DATA, else data/ in the working directory)"
)


def data_root(given: Path | None) -> Path:
    """The data folder: ``--data``, else ``$DPLEDGER_DATA``, else ``data/``."""
    if given is not None:
        return given
    return Path(os.environ.get("DPLEDGER_DATA") or "data")


def find_data(parser: argparse.ArgumentParser, given: Path | None, relative: str) -> Path | None:
    """The file ``relative`` under the data folder, or None if it is absent.

    Absent where ``--data`` says is a usage error (exit status 2), never a silent
    fallback; the message says what ``--data`` means and, when the folder given is the
    data set's own folder (``--data .../adult``), which folder to give instead.
    """
    root = data_root(given)
    path = root / relative
    if path.exists():
        return path
    if given is None:
        return None
    message = f"--data {given}: {path} not found. --data is the folder that holds "
    message += f"{Path(relative).parts[0]}/ (as $DPLEDGER_DATA is)"
    inner = Path(*Path(relative).parts[1:])
    if (given / inner).exists():
        message += f"; {given} is that folder itself: give --data {given.parent}"
    parser.error(message + ".")
    return None  # not reached: parser.error exits


def add_quick(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--quick`` option every example has; ``what`` says what it makes smaller."""
    parser.add_argument("--quick", action="store_true", help=f"a run of seconds: {what}")


def print_expected_time(full: str, quick: str, quick_mode: bool) -> None:
    """Say first how long this run takes (measured: see each example's docstring)."""
    if quick == full:
        print(f"expected run time: {full} (--quick is the same run)", flush=True)
    elif quick_mode:
        print(f"expected run time: {quick} with --quick (the full run: {full})", flush=True)
    else:
        print(f"expected run time: {full} (--quick: {quick})", flush=True)


def pyplot(parser: argparse.ArgumentParser, flag: str, asked: bool) -> Any:
    """matplotlib's pyplot (headless), or None without matplotlib.

    Called before the work starts. A plot the user asked for (``asked``: ``flag`` given)
    that cannot be drawn is a usage error (exit status 2); the default plot is skipped (the
    example says so where it would draw it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if asked:
            parser.error(f"{flag} needs matplotlib, which is not installed: pip install matplotlib")
        return None
    return plt
