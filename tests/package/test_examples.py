"""The examples run end to end (with the real data when $DPLEDGER_DATA has them).

Every example takes ``--quick`` and says first how long it will take; each ``--quick`` run
is here. Those that cost more than a few seconds of CPU are marked slow (``-m slow``); the
default run keeps cheaper runs of the same code paths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
DATA = Path(os.environ.get("DPLEDGER_DATA") or "data")


def _run(
    name: str, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def _announces_its_time(stdout: str, quick: bool) -> None:
    first = stdout.splitlines()[0]
    assert first.startswith("expected run time: about "), first
    if quick:
        assert "with --quick (the full run: about " in first or "is the same run" in first


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_has_quick_and_announces_its_run_time(path):
    """Issue #36: every example has --quick and prints its expected run time first."""
    source = path.read_text(encoding="utf-8")
    assert "add_quick(parser" in source and "print_expected_time(" in source
    docstring = source.split('"""', 2)[1]
    assert re.search(r"[Aa]bout \d+(-\d+)? (s|seconds|min|minutes)\b", docstring), path.name
    assert path.name in {f"{t}.py" for t in QUICK}, "add its --quick run to QUICK below"


# -- data: --data is the folder holding adult/ and uci/, as $DPLEDGER_DATA -------------------


def test_ledger_adult_quick(tmp_path):
    result = _run("ledger_adult.py", "--quick", "--ledger", str(tmp_path / "l.db"))
    _announces_its_time(result.stdout, quick=True)
    assert "refused" in result.stdout and "mean age" in result.stdout
    assert re.search(r"spent: \(1(\.0000\d)?, 1e-06\)-DP", result.stdout), result.stdout
    real = (DATA / "adult" / "adult.data").exists()
    assert ("data: UCI Adult" in result.stdout) == real


def test_ledger_adult_without_data_says_it_uses_synthetic_data(tmp_path):
    result = _run("ledger_adult.py", env={"DPLEDGER_DATA": str(tmp_path)})
    note = f"note: no UCI Adult at {tmp_path}/adult/adult.data (give --data DIR"
    assert note in result.stdout and "using synthetic data" in result.stdout
    assert "data: synthetic" in result.stdout and "refused" in result.stdout


def test_data_missing_where_data_says_is_an_error(tmp_path):
    """Issue #36: the wrong --data fell back to synthetic data silently; now exit 2."""
    result = _run("ledger_adult.py", "--data", str(tmp_path), check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert f"--data {tmp_path}: {tmp_path}/adult/adult.data not found" in result.stderr
    assert "--data is the folder that holds adult/ (as $DPLEDGER_DATA is)" in result.stderr
    adult = tmp_path / "adult"  # the data set's own folder given: say which to give
    adult.mkdir()
    (adult / "adult.data").write_text("")
    result = _run("ledger_adult.py", "--data", str(adult), check=False)
    assert result.returncode == 2
    assert f"{adult} is that folder itself: give --data {tmp_path}." in result.stderr


# -- the --quick runs ----------------------------------------------------------------------


def test_blackbox_audit_quick():
    result = _run("blackbox_audit.py", "--quick")
    _announces_its_time(result.stdout, quick=True)
    lines = result.stdout.splitlines()
    verdicts = [line for line in lines if line.startswith(("report", "Laplace"))]
    assert len(verdicts) == 3
    assert verdicts[0].endswith("not refuted")
    assert verdicts[1].endswith("REFUTED") and verdicts[2].endswith("REFUTED")


def _slopes(stdout: str) -> dict[str, tuple[float, float]]:
    rows = [line.split() for line in stdout.splitlines()]
    return {
        row[0]: (float(row[-2]), float(row[-1]))
        for row in rows
        if row[:1] in (["linear"], ["quantile"], ["median"])
    }


def test_kng_rates_quick_exact_problems(tmp_path):
    """The default run's share of kng_rates --quick: the two problems sampled exactly."""
    plot = tmp_path / "rates.png"
    result = _run("kng_rates.py", "--quick", "--problems", "linear,median", "--out", str(plot))
    _announces_its_time(result.stdout, quick=True)
    slopes = _slopes(result.stdout)
    assert set(slopes) == {"linear", "median"}
    for kng, exponential in slopes.values():  # the two rates apart, each near its claim
        assert -1.25 < kng < -0.7 and -0.8 < exponential < -0.3 and kng < exponential - 0.2
    assert "caveat: --quick is a rough check" in result.stdout and plot.exists()


@pytest.mark.slow
def test_kng_rates_quick(tmp_path):
    plot = tmp_path / "rates.png"
    result = _run("kng_rates.py", "--quick", "--out", str(plot))
    _announces_its_time(result.stdout, quick=True)
    slopes = _slopes(result.stdout)
    assert set(slopes) == {"linear", "quantile", "median"}
    for kng, exponential in slopes.values():
        assert -1.6 < kng < -0.7 and -0.8 < exponential < -0.3 and kng < exponential - 0.2
    assert "the claim                   -1.000              -0.500" in result.stdout
    assert "caveat: --quick is a rough check" in result.stdout and plot.exists()


@pytest.mark.slow
def test_irls_figure1_quick(tmp_path):
    plot = tmp_path / "fig1.png"
    result = _run("irls_figure1.py", "--quick", "--plot", str(plot))
    _announces_its_time(result.stdout, quick=True)
    # the paper's Wishart IRLS really spends a δ near 1; the calibrated one (0.9, 1e-6)
    assert "δ ≥ 0.88 at any ε" in result.stdout
    assert "calibrated, gau  (0.9, 1e-06)-DP" in result.stdout
    sizes = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert "1000" in sizes and "10000" in sizes and plot.exists()


@pytest.mark.slow
def test_adassp_elevators_quick(tmp_path):
    result = _run("adassp_elevators.py", "--quick", "--data", str(tmp_path), check=False)
    assert result.returncode == 2 and "uci/elevators/elevators.data not found" in result.stderr
    plot = tmp_path / "elevators.png"
    result = _run("adassp_elevators.py", "--quick", str(plot))
    _announces_its_time(result.stdout, quick=True)
    rows = [line.split()[0] for line in result.stdout.splitlines() if line[:4].strip()]
    assert {"0.1", "1", "10"} <= set(rows)
    real = (DATA / "uci" / "elevators" / "elevators.data").exists()
    assert ("Wang AdaSSP" in result.stdout) == real
    assert ("using synthetic data" in result.stdout) == (not real)
    assert plot.exists()


# every example's --quick run above (the test of the first parametrized check)
QUICK = {
    "adassp_elevators": test_adassp_elevators_quick,
    "blackbox_audit": test_blackbox_audit_quick,
    "irls_figure1": test_irls_figure1_quick,
    "kng_rates": test_kng_rates_quick,
    "ledger_adult": test_ledger_adult_quick,
}
