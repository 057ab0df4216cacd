"""The dpledger command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpledger.cli import main


def test_account_prints_table(capsys):
    assert main(["account", "gaussian", "--sigma", "5", "--count", "100", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "gdp" in out and "9.9972562" in out and "tightest" in out  # 9.99725614… rounded up
    assert "not applicable" in out  # basic composition does not apply to Gaussians


def test_account_subsampled(capsys):
    args = ["account", "gaussian", "--sigma", "1.1", "--sampling-rate", "0.01"]
    assert main([*args, "--count", "1000", "--delta", "1e-5"]) == 0
    assert "rdp" in capsys.readouterr().out


def test_bad_value_is_an_error_with_exit_code_2(capsys):
    assert main(["account", "laplace", "--scale", "-1", "--delta", "1e-5"]) == 2
    assert "`scale`" in capsys.readouterr().err


def test_missing_parameter():
    with pytest.raises(SystemExit) as excinfo:
        main(["account", "gaussian", "--delta", "1e-5"])
    assert excinfo.value.code == 2


def test_module_entry_point():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpledger",
            "account",
            "pure",
            "--epsilon0",
            "1",
            "--count",
            "100",
            "--delta",
            "1e-6",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "83.53070" in result.stdout
