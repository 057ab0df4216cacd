"""Acceptance (issue 10): the hostile-input sweep — every public function, constructor,
method and CLI command, fed NaN, ±inf, 0, negatives, 1e-300, 1e300, 10**400, Fractions,
numpy scalars, wrong types and a 3,000-deep event, answers or raises a dpledger error;
never another exception, never more than 60 s, never more than 4 GB (the sweep runs in a
subprocess under an address-space limit). The sweep itself is tests/_hostile.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _sweep(mode: str, cwd: Path) -> tuple[list[dict], dict]:
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests._hostile import run\n"
        f"run({mode!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=3000
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [x for x in lines if "case" in x], lines[-1]


def test_hostile_inputs_quick(tmp_path):
    """Every fifth case of the sweep (about 600 calls), in the default run."""
    failures, summary = _sweep("quick", tmp_path)
    assert summary["cases"] > 400
    assert failures == [], failures[:20]


@pytest.mark.slow
def test_hostile_inputs_full(tmp_path):
    """The whole sweep (about 2,700 calls)."""
    failures, summary = _sweep("full", tmp_path)
    assert summary["cases"] > 2000
    assert failures == [], failures[:20]
