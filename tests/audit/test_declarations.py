"""Issue 10 item 14: every malformed declaration is a line-numbered error (exit 2), never a
traceback; typos get a did-you-mean; errors are sorted; --json and --plot behave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpledger.audit import PipelineError, check_claim, load_pipeline
from dpledger.cli import main

HEAD = '[claim]\nepsilon = 1.0\ndelta = 1e-5\nadjacency = "add_remove"\n[[release]]\n'
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "audits"


def _write(tmp_path, body: bytes | str, name="p.toml") -> Path:
    path = tmp_path / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return path


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        (
            HEAD.encode() + b'mechanism = "gaussian"\nsigma = 1.0\nsensitivity = 1.0\n'
            b'label = "caf\xe9"\n',
            9,
            "UTF-8",
        ),
        (
            HEAD.replace('"add_remove"', '["add_remove"]') + 'mechanism = "pure_dp"\nepsilon = 1\n',
            4,
            "adjacency",
        ),
        (HEAD + "mechanism = { a = 1 }\nepsilon = 1.0\n", 6, "a table"),
        (
            HEAD + 'mechanism = "gaussian"\nsigma = 1.0\nsensitivity = ' + "9" * 400 + "\n",
            8,
            "too large",
        ),
        (
            HEAD
            + 'mechanism = "gaussian"\nsigma = 1.0\nsensitivity = 1.0\ncount = '
            + str(2**64)
            + "\n",
            9,
            "2**63",
        ),
        (HEAD + 'mechanism = "zcdp"\nrho = 0\n', 7, "rho must be positive"),
        (
            HEAD + 'mechanism = "gaussian"\nsigma = 1.0\nsensitivity = 1.0\ncount = "50"\n',
            9,
            "without quotes",
        ),
        (
            HEAD + 'mechanism = "gausian"\nsigma = 1.0\nsensitivity = 1.0\n',
            6,
            "did you mean 'gaussian'",
        ),
        (
            HEAD + 'mechanism = "gaussian"\nsigma = 1.0\nsensitivty = 1.0\n',
            8,
            "did you mean 'sensitivity'",
        ),
        (
            HEAD + 'mechanism = "laplace"\ncalibration = ["standard"]\nsensitivity = 1.0\n'
            "epsilon = 1.0\n",
            7,
            "calibration",
        ),
    ],
    ids=[
        "non-utf8",
        "list-adjacency",
        "table-mechanism",
        "400-digits",
        "count>2^63",
        "rho0",
        "count-string",
        "mechanism-typo",
        "key-typo",
        "list-calibration",
    ],
)
def test_malformed_declarations_are_line_numbered_errors(tmp_path, capsys, body, line, words):
    path = _write(tmp_path, body)
    with pytest.raises(PipelineError) as caught:
        load_pipeline(path)
    assert any(ln == line and words in msg for ln, msg in caught.value.problems), (
        caught.value.problems
    )
    assert main(["audit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"p.toml:{line}:" in err


def test_tiny_sigma_is_audited_not_a_traceback(tmp_path, capsys):
    path = _write(tmp_path, HEAD + 'mechanism = "gaussian"\nsigma = 1e-300\nsensitivity = 1.0\n')
    assert main(["audit", str(path)]) == 1
    assert "VIOLATED" in capsys.readouterr().out


def test_problems_are_sorted_by_line(tmp_path):
    body = HEAD.replace("epsilon = 1.0", 'epsilon = "one"') + 'mechanism = "gausian"\n'
    with pytest.raises(PipelineError) as caught:
        load_pipeline(_write(tmp_path, body + "\n" + "[[release]]\nmechanism = 3\n"))
    lines = [ln for ln, _ in caught.value.problems if ln is not None]
    assert lines == sorted(lines) and len(lines) >= 3


def test_json_prints_errors_as_json(tmp_path, capsys):
    path = _write(tmp_path, HEAD + 'mechanism = "gausian"\nepsilon = 1.0\n')
    assert main(["audit", str(path), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["error"] == "invalid declaration" and data["problems"][0]["line"] == 6


def test_a_plot_that_cannot_be_written_is_an_error_before_the_audit(tmp_path, capsys):
    """Issue #36: a --plot asked for and not written exits 2, never 0 with a warning."""
    target = tmp_path / "missing-dir" / "plot.png"
    for name in ("dpsgd.toml", "ssp.toml"):  # whatever the verdict would be
        assert main(["audit", str(EXAMPLES / name), "--plot", str(target)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and "does not exist" in captured.err


def test_epochs_follow_opacus_convention():
    """14,100 steps of batch 256 over 60,000 records are 60 epochs (⌈N/B⌉ = 235 per epoch)."""
    release = {
        "mechanism": "gaussian",
        "sigma": 1.0,
        "sensitivity": 1.0,
        "sampling": "shuffled",
        "batch_size": 256,
        "population": 60000,
    }
    claim = {"epsilon": 3.0, "delta": 1e-5, "adjacency": "add_remove"}
    by_count = check_claim({"claim": claim, "release": [{**release, "count": 14_100}]})
    by_epochs = check_claim({"claim": claim, "release": [{**release, "epochs": 60}]})
    assert any("are 60 unsampled" in f for f in by_count.findings)
    assert by_count.epsilon == by_epochs.epsilon
