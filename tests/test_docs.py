"""Every ```python block in README.md and docs/*.md runs without error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks():
    for path in FILES:
        if not path.exists():
            continue
        for index, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            yield path, index, match.group(1)


def _pages():
    """Each page's blocks, run in order in one namespace (a page is one walkthrough)."""
    pages: dict[Path, list[str]] = {}
    for path, _, code in _blocks():
        pages.setdefault(path, []).append(code)
    return [pytest.param(blocks, id=path.name) for path, blocks in pages.items()]


@pytest.mark.parametrize("blocks", _pages())
def test_doc_examples_run(blocks, monkeypatch):
    monkeypatch.chdir(ROOT)  # pages refer to ../shared/data relative to the project
    namespace = {"__name__": "__doc_example__"}
    for code in blocks:
        exec(compile(code, "<doc>", "exec"), namespace)


def test_docs_have_examples():
    assert len(list(_blocks())) >= 10


def test_readme_main_job_output_is_current(capsys, monkeypatch):
    """The README shows the main job's real output (kept true by this test)."""
    from dpledger.cli import main

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "pip install . && dpledger audit examples/audits/dpsgd.toml"
    assert command in text
    shown = re.search(re.escape(command) + r"\n```\n\n```text\n(.*?)```", text, re.DOTALL)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    assert main(["audit", "examples/audits/dpsgd.toml"]) == 0
    assert capsys.readouterr().out == shown.group(1)
