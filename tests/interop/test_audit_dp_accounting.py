"""`dpledger audit` of a pipeline given as dp_accounting events (``[[dp_accounting]]``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpledger.audit import PipelineError, check_claim
from dpledger.audit.check import load_declaration
from dpledger.cli import main

ROOT = Path(__file__).resolve().parents[2]

CLAIM = """
[claim]
epsilon = 5.64
delta = 1e-5
adjacency = "add_remove"
"""
DPSGD = (
    "SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.01, "
    "event=GaussianDpEvent(noise_multiplier=1.1)), count=10000)"
)
AS_EVENTS = CLAIM + f'\n[[dp_accounting]]\nlabel = "DP-SGD"\nevent = "{DPSGD}"\n'


def test_events_audit_like_the_same_releases_declared():
    declared = check_claim(ROOT / "examples" / "audits" / "dpsgd.toml")
    events = check_claim(AS_EVENTS)
    assert events.verdict == declared.verdict == "holds"
    assert events.epsilon == declared.epsilon
    assert events.epsilon_lower == declared.epsilon_lower  # certified from below as well
    assert events.releases[0]["label"] == "DP-SGD"
    assert "SelfComposedDpEvent" in events.releases[0]["mechanism"]


def test_events_beside_releases_and_as_tables():
    text = (
        CLAIM
        + '\n[[release]]\nmechanism = "laplace"\nscale = 10.0\nsensitivity = 1.0\n'
        + f'\n[[dp_accounting]]\nevent = "{DPSGD}"\n'
        + "\n[[dp_accounting]]\n"
        + 'event = { class_name = "LaplaceDpEvent", noise_multiplier = 10.0 }\n'
    )
    report = check_claim(text)
    assert len(report.releases) == 3
    laplace = '\n[[release]]\nmechanism = "laplace"\nscale = 10.0\nsensitivity = 1.0\ncount = 2\n'
    declared = check_claim(CLAIM + f'\n[[dp_accounting]]\nevent = "{DPSGD}"\n' + laplace)
    assert report.epsilon == declared.epsilon  # the same three releases
    assert "LaplaceDpEvent(noise_multiplier=10.0)" in report.releases[2]["mechanism"]


def test_a_dp_event_object_from_python():
    dpa = pytest.importorskip("dp_accounting")
    event = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 10_000
    )
    claim = {"epsilon": 5.64, "delta": 1e-5, "adjacency": "add_remove"}
    report = check_claim({"claim": claim, "dp_accounting": {"event": event}})
    assert report.verdict == "holds"
    assert report.epsilon == check_claim(AS_EVENTS).epsilon


def test_unconvertible_event_gives_unsupported_with_the_reason():
    text = (
        CLAIM
        + "[[dp_accounting]]\n"
        + 'event = "SampledWithReplacementDpEvent(1000, 10, GaussianDpEvent(1.0))"\n'
    )
    report = check_claim(text)
    assert report.verdict == "unsupported"
    assert "SampledWithReplacementDpEvent" in report.findings[0]
    replace_one = check_claim(AS_EVENTS.replace('"add_remove"', '"replace_one"'))
    assert replace_one.verdict == "unsupported"
    assert "add/remove" in replace_one.findings[0]


def test_malformed_declarations_list_every_problem_with_its_line():
    text = (
        CLAIM
        + "\n[[dp_accounting]]\nevent = \"GaussianDpEvent(noise_multiplier=__import__('os'))\"\n"
        + '\n[[dp_accounting]]\nevnt = "GaussianDpEvent(1.0)"\n'
        + "\n[extra]\nx = 1\n"
    )
    with pytest.raises(PipelineError) as caught:
        load_declaration(text)
    problems = caught.value.problems
    assert any(line == 7 and "not a dp_accounting event class" in msg for line, msg in problems)
    assert any(line == 10 and "unknown key 'evnt'" in msg for line, msg in problems)
    assert any(line == 10 and "'event' is required" in msg for line, msg in problems)
    assert any("unknown table [extra]" in msg for _, msg in problems)
    with pytest.raises(PipelineError, match="delta"):
        load_declaration(
            {
                "claim": {"epsilon": 1.0, "adjacency": "add_remove"},
                "dp_accounting": {"event": DPSGD},
            }
        )


def test_cli_audits_a_file_of_events(tmp_path, capsys):
    path = tmp_path / "dpsgd_events.toml"
    path.write_text(AS_EVENTS)
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: HOLDS" in out and "SelfComposedDpEvent" in out
    assert main(["audit", "--json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "holds"
    assert data["event"]["type"] == "Repeated"
    bad = tmp_path / "bad.toml"
    bad.write_text(CLAIM + '[[dp_accounting]]\nevent = "GaussianDpEvent("\n')
    assert main(["audit", "--json", str(bad), str(path)]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out[-1]["error"] == "invalid declaration" and out[-1]["problems"][0]["line"] == 6
