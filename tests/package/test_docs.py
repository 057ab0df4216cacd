"""README.md and docs/*.md say what the code does: every example runs, every sample is real.

Conventions (for writers of the docs):

* Every ```python block runs; a page's blocks run in order in one namespace (a page is
  one walkthrough).
* A ```python block that needs an optional package names it in the fence's info string,
  ```python requires=opacus,torch``; it is run (after the page's earlier blocks) only
  where every package named imports, and is skipped otherwise. Such a block must not be
  needed by later blocks.
* A block's printed output is shown by a ```text block right after it, introduced by the
  line ``<!-- output -->``; the test compares it with what the block prints: the text
  exactly, decimal numbers to 1e-9 relative (the last digits of a float may differ
  between platforms' FFT and libm).
* A ```text block whose first line is ``$ dpledger ...`` shows that command's output;
  the test runs the command (from the project root) and compares, exactly.
* Every ``dpledger`` command line in a ```bash block, and every inline `dpledger ... --x`
  with options, is a valid command line (parsed, not run).
* No page refers to files a user of the package does not have (the project's scratch and
  shared folders).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"```python([^\n]*)\n(.*?)```(?:\n+<!-- output -->\n```text\n(.*?)```)?", re.DOTALL
)
TEXT = re.compile(r"```text\n(.*?)```", re.DOTALL)
BASH = re.compile(r"```bash\n(.*?)```", re.DOTALL)
INLINE = re.compile(r"`(dpledger [^`]*)`")

COVERED_ELSEWHERE = {
    # needs a ledger file and shows timestamps: compared in tests/ledger/test_ledger_calibrate.py
    "dpledger ledger show study.ledger",
}


@dataclass(frozen=True)
class Block:
    path: Path
    index: int
    code: str
    requires: tuple[str, ...]
    output: str | None


def _requires(info: str) -> tuple[str, ...]:
    match = re.search(r"requires=(\S+)", info)
    return tuple(match.group(1).split(",")) if match else ()


def _blocks() -> list[Block]:
    found = []
    for path in FILES:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for index, match in enumerate(BLOCK.finditer(text)):
            info, code, output = match.groups()
            found.append(Block(path, index, code, _requires(info), output))
    return found


def _pages() -> list:
    pages: dict[Path, list[Block]] = {}
    for block in _blocks():
        pages.setdefault(block.path, []).append(block)
    return [pytest.param(blocks, id=path.name) for path, blocks in pages.items()]


NUMBER = re.compile(r"([-+]?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+))")


def _same_output(printed: str, shown: str) -> bool:
    """Equal text, and equal decimal numbers to 1e-9 relative."""
    ours, theirs = NUMBER.split(printed), NUMBER.split(shown)
    if len(ours) != len(theirs):
        return False
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if i % 2 == 0 or a == b:
            if a != b:
                return False
            continue
        x, y = float(a), float(b)
        if abs(x - y) > 1e-9 * max(abs(x), abs(y)):
            return False
    return True


def test_output_comparison_can_fail():
    assert _same_output("eps 5.192620377615203\n", "eps 5.192620377615204\n")
    assert not _same_output("eps 5.1926\n", "eps 5.1927\n")
    assert not _same_output("eps 5.1926\n", "eps 5.1926 \n")
    assert not _same_output("a 1.0 b\n", "a 1.0\n")


def _run(block: Block, namespace: dict) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.code, f"<{block.path.name} block {block.index}>", "exec"), namespace)
    if block.output is not None:
        where = f"{block.path.name} block {block.index}"
        assert _same_output(printed.getvalue(), block.output), (where, printed.getvalue())


@pytest.mark.parametrize("blocks", _pages())
def test_doc_examples_run(blocks, monkeypatch):
    monkeypatch.chdir(ROOT)  # pages may refer to files relative to the project
    namespace = {"__name__": "__doc_example__"}
    for block in blocks:
        if not block.requires:
            _run(block, namespace)


OPTIONAL = [b for b in _blocks() if b.requires]


@pytest.mark.parametrize(
    "block", OPTIONAL, ids=[f"{b.path.name}-{b.index}-{'+'.join(b.requires)}" for b in OPTIONAL]
)
def test_optional_doc_examples_run(block, monkeypatch):
    for module in block.requires:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module} (an optional comparison, not a dependency)")
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": "__doc_example__"}
    for earlier in _blocks():
        if earlier.path == block.path and earlier.index < block.index and not earlier.requires:
            _run(earlier, namespace)
    _run(block, namespace)


def test_docs_have_examples():
    assert len(_blocks()) >= 10


def test_conventions_are_used():
    """The output and requires conventions are in use (so the tests above test something)."""
    blocks = _blocks()
    assert sum(b.output is not None for b in blocks) >= 5
    assert any("opacus" in b.requires for b in blocks)


def _cli_samples() -> list:
    samples = []
    for path in FILES:
        for match in TEXT.finditer(path.read_text(encoding="utf-8")):
            first, _, rest = match.group(1).partition("\n")
            if first.startswith("$ dpledger "):
                command = first[2:]
                samples.append(pytest.param(command, rest, id=f"{path.name}: {command}"))
    return samples


@pytest.mark.parametrize(("command", "shown"), _cli_samples())
def test_cli_samples_are_what_the_command_prints(command, shown, capsys, monkeypatch):
    if command in COVERED_ELSEWHERE:
        pytest.skip("compared by its own test")
    from dpledger.cli import main

    monkeypatch.chdir(ROOT)
    main(shlex.split(command)[1:])
    assert capsys.readouterr().out == shown


def test_there_are_cli_samples():
    assert len(_cli_samples()) >= 3


def _command_lines() -> list:
    lines = []
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for block in BASH.findall(text):
            for line in block.splitlines():
                line = line.split("#", 1)[0].strip()
                if "dpledger " in line:
                    lines.append((path.name, "dpledger " + line.split("dpledger ", 1)[1]))
        for span in INLINE.findall(text):
            span = " ".join(span.split())  # a span may wrap across lines
            if " --" in span and not re.search(r"\b[A-Z]{3,}\b", span):  # no placeholders
                lines.append((path.name, span))
    return [pytest.param(line, id=f"{name}: {line}") for name, line in lines]


@pytest.mark.parametrize("line", _command_lines())
def test_documented_command_lines_parse(line):
    from dpledger.cli import _parser

    argv = shlex.split(line)[1:]
    if "--help" in argv or "--version" in argv:
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_known_args(argv)
        assert exit_.value.code == 0
        return
    args, extra = _parser().parse_known_args(argv)
    assert not extra and args.handler is not None


LOCAL_PATH = re.compile(r"\.\./shared|/work/|/tmp/|shared/docs|shared/data")
KNOWN_LOCAL_PATHS: dict[str, str] = {}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_reference_to_files_users_do_not_have(path):
    text = path.read_text(encoding="utf-8")
    hits = [line for line in text.splitlines() if LOCAL_PATH.search(line)]
    if path.name in KNOWN_LOCAL_PATHS:
        assert hits, f"{path.name} is clean now: remove it from KNOWN_LOCAL_PATHS"
        pytest.xfail(f"known: {KNOWN_LOCAL_PATHS[path.name]}")
    assert not hits


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


def test_readme_speed_claims_are_the_recorded_benchmark_table():
    """Every speed-up the README states for the accountant is in docs/accounting.md's
    `--table speed` record (the benchmark's printed table, with machine, rounds, spread and
    load), so the two cannot drift apart."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    claim = readme.split("tight numerical privacy loss", 1)[1].split("docs/accounting.md", 1)[0]
    claimed = set(re.findall(r"(\d+(?:\.\d+)?)×", claim))
    assert claimed, "the README's speed sentence moved: update this test"
    record = (ROOT / "docs" / "accounting.md").read_text(encoding="utf-8")
    table = record.split("`--table speed` is the measurement", 1)[1].split("\n\n(b)", 1)[0]
    recorded = set(re.findall(r"(\d+(?:\.\d+)?)×", table))
    missing = claimed - recorded
    assert not missing, f"README speed-ups not in the recorded table: {sorted(missing)}"
