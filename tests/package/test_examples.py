"""The examples run end to end (with the real data when ../shared/data is present)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ledger_adult_example_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "ledger_adult.py"),
            "--ledger",
            str(tmp_path / "l.db"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "refused" in result.stdout and "mean age" in result.stdout
    assert "spent: (1.0000" in result.stdout or "spent: (0.9999" in result.stdout


def test_ledger_adult_example_without_data_uses_synthetic(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ledger_adult.py"), "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "not found" in result.stdout and "synthetic" in result.stdout
    assert "refused" in result.stdout


def test_blackbox_audit_example_runs():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "blackbox_audit.py"), "--samples", "10000"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    lines = result.stdout.splitlines()
    verdicts = [line for line in lines if line.startswith(("report", "Laplace"))]
    assert len(verdicts) == 3
    assert verdicts[0].endswith("not refuted")
    assert verdicts[1].endswith("REFUTED") and verdicts[2].endswith("REFUTED")


def test_irls_figure1_example_reports_true_costs(tmp_path):
    plot = tmp_path / "fig1.png"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "irls_figure1.py"),
            "--datasets",
            "1",
            "--sizes",
            "1000",
            "--plot",
            str(plot),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    # the paper's Wishart IRLS really spends a δ near 1; the calibrated one (0.9, 1e-6)
    assert "δ ≥ 0.880 at any ε" in result.stdout
    assert "calibrated, gau  (0.9000, 1e-06)-DP" in result.stdout
    assert plot.exists()


def test_kng_rates_example_prints_slopes(tmp_path):
    plot = tmp_path / "rates.png"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "kng_rates.py"), "--quick", "--out", str(plot)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    rows = [line.split() for line in result.stdout.splitlines()]
    slopes = {
        row[0]: (float(row[-2]), float(row[-1]))
        for row in rows
        if row[:1] in (["linear"], ["quantile"], ["median"])
    }
    assert set(slopes) == {"linear", "quantile", "median"}
    assert all(-3.0 < value < 1.0 for pair in slopes.values() for value in pair)
