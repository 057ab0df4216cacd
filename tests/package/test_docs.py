"""README.md and docs/*.md say what the code does: every example runs, every sample is real.

Conventions (for writers of the docs):

* Every ```python block runs; a page's blocks run in order in one namespace (a page is
  one walkthrough).
* A ```python block that needs an optional package names it in the fence's info string,
  ```python requires=opacus,torch``; it is run (after the page's earlier blocks) only
  where every package named imports, and is skipped otherwise. Such a block must not be
  needed by later blocks.
* A block's printed output is shown by a ```text block right after it, introduced by the
  line ``<!-- output -->``; the test compares it with what the block prints, exactly.
* Only where a block prints a float in full (``repr``, 16-17 digits) of a result whose
  last digits depend on the CPU, the line is ``<!-- output (last digits vary by CPU) -->``:
  there decimal numbers are compared to 1e-10 relative, the text still exactly. Measured
  (this machine, NumPy 2.4): NumPy's AVX-512 ``exp``/``log`` loops and its AVX2 or baseline
  ones differ in the last bits, and the privacy-loss-distribution (PLD) numbers built on
  them move by up to 9.0e-12 relative (a calibrated σ: 0.9691608429915478 with AVX-512,
  0.9691608429828559 without; a PLD ε by 1.1e-12, an RDP ε by 3.6e-15). OpenBLAS' kernel
  choice changed nothing. Rounded numbers (``dpledger._format.up``, ``:.4f``) and CLI
  samples are compared exactly. ``-m slow`` re-runs every page with NumPy's AVX-512 and
  AVX2 loops disabled, and requires that only marked blocks change.
* ``python tests/package/test_docs.py --write`` regenerates every shown output (python
  blocks and ``$ dpledger`` samples) from the code; review the diff.
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
VARIES = " (last digits vary by CPU)"
BLOCK = re.compile(
    r"```python([^\n]*)\n(.*?)```"
    r"(?:\n+<!-- output( \(last digits vary by CPU\))? -->\n```text\n(.*?)```)?",
    re.DOTALL,
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
    varies: bool = False  # marked "last digits vary by CPU"
    span: tuple[int, int] | None = None  # where the shown output is in the page


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
            info, code, varies, output = match.groups()
            span = match.span(4) if output is not None else None
            found.append(Block(path, index, code, _requires(info), output, bool(varies), span))
    return found


def _pages() -> list:
    pages: dict[Path, list[Block]] = {}
    for block in _blocks():
        pages.setdefault(block.path, []).append(block)
    return [pytest.param(blocks, id=path.name) for path, blocks in pages.items()]


NUMBER = re.compile(r"([-+]?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+))")
CPU_TOLERANCE = 1e-10  # relative; 11x the largest variation measured (9.0e-12, see above)


def _same_output(printed: str, shown: str, varies: bool = False) -> bool:
    """Equal text; where the last digits vary by CPU, decimal numbers to 1e-10 relative."""
    if not varies or printed == shown:
        return printed == shown
    ours, theirs = NUMBER.split(printed), NUMBER.split(shown)
    if len(ours) != len(theirs):
        return False
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if i % 2 == 0 or a == b:  # text, or the same number
            if a != b:
                return False
            continue
        x, y = float(a), float(b)
        if abs(x - y) > CPU_TOLERANCE * max(abs(x), abs(y)):
            return False
    return True


def test_output_comparison_can_fail():
    assert not _same_output("eps 5.192620377615203\n", "eps 5.192620377615204\n")
    assert _same_output("eps 5.192620377615203\n", "eps 5.192620377615204\n", varies=True)
    assert not _same_output("eps 5.19262037\n", "eps 5.19262038\n", varies=True)
    assert not _same_output("eps 5.1926\n", "eps 5.1926 \n", varies=True)
    assert not _same_output("a 1.0 b\n", "a 1.0\n", varies=True)


def _printed(block: Block, namespace: dict) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.code, f"<{block.path.name} block {block.index}>", "exec"), namespace)
    return printed.getvalue()


def _run(block: Block, namespace: dict) -> None:
    printed = _printed(block, namespace)
    if block.output is not None:
        where = f"{block.path.name} block {block.index}"
        assert _same_output(printed, block.output, block.varies), (where, printed)


def test_tolerance_is_only_for_full_precision_floats():
    """A block marked "last digits vary by CPU" shows a float in full (13+ digits)."""
    for block in _blocks():
        if block.varies:
            digits = [
                len(re.sub(r"\D", "", n.split("e")[0]).lstrip("0"))
                for n in NUMBER.findall(block.output or "")
            ]
            assert max(digits, default=0) >= 13, (block.path.name, block.index)


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


def _example_samples() -> list:
    samples = []
    for path in FILES:
        for match in TEXT.finditer(path.read_text(encoding="utf-8")):
            first, _, rest = match.group(1).partition("\n")
            if first.startswith("$ python examples/"):
                samples.append(pytest.param(first[2:], rest, id=f"{path.name}: {first[2:]}"))
    return samples


def _example_output(command: str) -> str:
    import subprocess
    import sys

    argv = [sys.executable, *shlex.split(command)[1:]]
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True, timeout=300)
    return run.stdout


@pytest.mark.parametrize(("command", "shown"), _example_samples())
def test_example_samples_are_what_the_example_prints(command, shown):
    """A ```text block whose first line is ``$ python examples/...`` is that run's output
    (with a seed); on a machine without the sample's data the example says so: skipped."""
    printed = _example_output(command)
    if "note: no " in printed and "note: no " not in shown:
        pytest.skip("the data the sample ran on are not on this machine")
    assert printed == shown


def test_audit_summary_sample_is_what_the_command_prints(capsys, monkeypatch):
    """docs/audit.md shows the summary of `dpledger audit examples/audits/*.toml`."""
    from dpledger.cli import main

    text = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    assert "dpledger audit examples/audits/*.toml" in text
    shown = re.search(r"```text\n(Summary:\n.*?)```", text, re.DOTALL)
    assert shown is not None
    monkeypatch.chdir(ROOT)
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "audits").glob("*.toml"))
    main(["audit", *files])
    out = capsys.readouterr().out
    assert out[out.index("Summary:\n") :] == shown.group(1)


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


@pytest.mark.slow
def test_only_marked_outputs_change_with_the_cpu_features():
    """The pages' outputs on this machine with NumPy's wider SIMD loops disabled (as on a
    CPU without them): unmarked outputs stay exact, marked ones within CPU_TOLERANCE."""
    import json
    import os
    import subprocess
    import sys

    try:  # NumPy's own record of its SIMD dispatch targets and of this CPU's features
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath

    found = umath.__cpu_features__
    wide = [f for f in umath.__cpu_dispatch__ if found.get(f)]  # above the baseline
    if not wide:
        pytest.skip("this CPU has no SIMD level above the baseline to disable")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(wide)}
    select = "doc_examples_run or cli_samples or optional_doc_examples"
    argv = [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", "-k", select]
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert result.returncode == 0, json.dumps(result.stdout[-4000:])


def _write() -> None:
    """Rewrite every shown output in README.md and docs/*.md with what the code prints."""
    import os

    os.chdir(ROOT)
    from dpledger.cli import main

    for path in FILES:
        text = path.read_text(encoding="utf-8")
        blocks = [b for b in _blocks() if b.path == path]
        namespace: dict = {"__name__": "__doc_example__"}
        edits: list[tuple[tuple[int, int], str]] = []
        for block in blocks:
            if any(importlib.util.find_spec(m) is None for m in block.requires):
                print(f"{path.name} block {block.index}: skipped (needs {block.requires})")
                continue
            try:
                printed = _printed(block, namespace if not block.requires else dict(namespace))
            except Exception as error:  # leave it as it is, and say so
                print(f"{path.name} block {block.index}: not run: {error!r}")
                continue
            if block.span is not None and printed != block.output:
                edits.append((block.span, printed))
        for match in TEXT.finditer(text):
            first, _, rest = match.group(1).partition("\n")
            if not first.startswith("$ dpledger ") or first[2:] in COVERED_ELSEWHERE:
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                main(shlex.split(first[2:])[1:])
            if out.getvalue() != rest:
                start = match.start(1) + len(first) + 1
                edits.append(((start, match.end(1)), out.getvalue()))
        for match in TEXT.finditer(text):
            first, _, rest = match.group(1).partition("\n")
            if first.startswith("$ python examples/"):
                printed = _example_output(first[2:])
                if "note: no " in printed and "note: no " not in rest:
                    print(f"{path.name}: {first[2:]}: skipped (its data are not here)")
                elif printed != rest:
                    start = match.start(1) + len(first) + 1
                    edits.append(((start, match.end(1)), printed))
        for (start, end), new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        if edits:
            path.write_text(text, encoding="utf-8")
            print(f"{path.name}: {len(edits)} output(s) rewritten")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/package/test_docs.py --write")
    _write()
