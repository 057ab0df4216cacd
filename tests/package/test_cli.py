"""The dpledger command line."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import dpledger
import dpledger.accountant as acc

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from dpledger import calibrate
from dpledger import events as ev
from dpledger._format import down as fmt_down
from dpledger._format import up as fmt_up
from dpledger.cli import _parser, main

ROOT = Path(__file__).resolve().parents[2]


def _table_after(out: str, heading: str) -> list[str]:
    """The lines of the table under ``heading`` (header, rule, rows) up to a blank line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def _check_style(table: list[str], indent: str) -> list[dict[str, str]]:
    """The one table style (dashes under each column, two spaces apart); returns the rows."""
    header, rule, *body = table
    assert re.fullmatch(re.escape(indent) + r"-+(  -+)*", rule), rule
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    names = [header[a:b].strip() for a, b in spans]
    assert all(names) and header.startswith(indent) and header == header.rstrip()
    rows = []
    for line in body:
        assert line.startswith(indent) and line == line.rstrip()
        for a, _ in spans[1:]:  # every column starts where its dashes start
            assert line[a - 2 : a] == "  " or len(line) <= a - 2, line
        rows.append({n: line[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)})
    return rows


# -- account ---------------------------------------------------------------------------


def test_account_prints_every_method_rounded_up(capsys):
    assert main(["account", "gaussian", "--sigma", "5", "--count", "100", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    rows = {r["method"]: r for r in _check_style(_table_after(out, "By method"), "  ")}
    event = ev.Gaussian(5.0) * 100
    gdp = acc.epsilon(event, 1e-5, method="gdp")
    assert rows["gdp"]["epsilon"] == fmt_up(gdp, 8) and float(rows["gdp"]["epsilon"]) >= gdp
    assert rows["gdp"]["note"] == "← tightest"
    assert rows["basic"]["epsilon"] == "n/a" and "cannot account for" in rows["basic"]["note"]
    assert rows["rdp"]["epsilon"] == fmt_up(acc.epsilon(event, 1e-5, method="rdp"), 8)
    assert f"Guarantee: ({fmt_up(gdp, 6)}, 1e-05)-DP" in out


def test_account_subsampled(capsys):
    args = ["account", "gaussian", "--sigma", "1.1", "--sampling-rate", "0.01"]
    assert main([*args, "--count", "1000", "--delta", "1e-5"]) == 0
    rows = {r["method"]: r for r in _check_style(_table_after(capsys.readouterr().out, "By"), "  ")}
    assert rows["zcdp"]["epsilon"] == "n/a" and rows["pld"]["note"] == "← tightest"


@pytest.mark.parametrize(
    ("argv", "epsilon"),
    [
        (["laplace", "--scale", "2", "--count", "10"], 10 * 1 / 2),
        (["pure", "--epsilon0", "0.5", "--count", "4"], 4 * 0.5),
        (["rr", "--epsilon0", "0.25", "--count", "4", "--categories", "3"], 4 * 0.25),
    ],
)
def test_account_delta_defaults_to_zero_for_pure_dp(capsys, argv, epsilon):
    assert main(["account", *argv]) == 0
    out = capsys.readouterr().out
    assert "delta   : 0\n" in out and "ε at δ = 0\n" in out
    assert f"Guarantee: ({fmt_up(epsilon, 6)}, 0)-DP" in out  # basic composition is exact here


def test_account_gaussian_requires_delta(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["account", "gaussian", "--sigma", "1"])
    assert exit_.value.code == 2
    assert "--delta" in capsys.readouterr().err
    assert main(["account", "gaussian", "--sigma", "1", "--delta", "0"]) == 2
    err = capsys.readouterr().err
    assert "`--delta` must be positive for gaussian" in err and "Found 0.0" in err


def test_bad_value_is_an_error_with_exit_code_2(capsys):
    assert main(["account", "laplace", "--scale", "-1"]) == 2
    assert "`--scale` must be positive" in capsys.readouterr().err


def test_missing_parameter(capsys):
    with pytest.raises(SystemExit) as excinfo:
        main(["account", "laplace", "--count", "3"])
    assert excinfo.value.code == 2
    assert "--scale" in capsys.readouterr().err


# -- flags that do not apply -----------------------------------------------------------

DPSGD = "calibrate dpsgd --dataset-size 100 --batch-size 10 --epochs 1 --epsilon 1 --delta 1e-5"

NOT_APPLICABLE = [
    ("account laplace --sigma 1 --scale 1", "--sigma"),
    ("account laplace --scale 1 --sigma=1", "--sigma"),
    ("account laplace --scale 1 --epsilon0 1", "--epsilon0"),
    ("account laplace --scale 1 --categories 3", "--categories"),
    ("account gaussian --sigma 1 --scale 1 --delta 1e-5", "--scale"),
    ("account gaussian --sigma 1 --delta 1e-5 --method pld", "--method"),
    ("account gaussian --sigma 1 --delta 1e-5 --epsilon 1", "--epsilon"),
    ("account pure --epsilon0 1 --sensitivity 2", "--sensitivity"),
    ("account pure --epsilon0 1 --categories 3", "--categories"),
    ("account rr --epsilon0 1 --sigma 3", "--sigma"),
    ("calibrate laplace --epsilon 1 --sampling-rate 0.1", "--sampling-rate"),
    ("calibrate laplace --epsilon 1 --sigma 1", "--sigma"),
    ("calibrate discrete-gaussian --epsilon 1 --delta 1e-6 --sampling-rate 0.1", "--sampling-rate"),
    ("calibrate gaussian --epsilon 1 --delta 1e-5 --epochs 3", "--epochs"),
    (f"{DPSGD} --count 3", "--count"),
    (f"{DPSGD} --sampling-rate 0.1", "--sampling-rate"),
    (f"{DPSGD} --sensitivity 2", "--sensitivity"),
    ("ledger show x.ledger --json", "--json"),
    ("audit examples/audits/dpsgd.toml --sigma 1", "--sigma"),
]


@pytest.mark.parametrize(("command", "flag"), NOT_APPLICABLE)
def test_flag_that_does_not_apply_is_an_error(capsys, command, flag):
    argv = shlex.split(command)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    command = " ".join(argv[: 2 if argv[0] in ("account", "calibrate", "ledger") else 1])
    assert f"the option {flag} does not apply to `dpledger {command}`; its options are" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["account", "gaussian", "--sig", "1", "--delta", "1e-5"],  # abbreviations are refused
        ["account", "laplace", "--scale", "1", "surplus"],
        ["calibrate", "gaussian", "--epsilon", "1"],  # --delta is required for gaussian
        ["calibrate", "dpsgd", "--dataset-size", "100", "--epsilon", "1", "--delta", "1e-5"],
        shlex.split(DPSGD.replace("100", "1e5")),  # not an integer
        ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--method", "moments"],
        ["account", "uniform", "--scale", "1"],
        [],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("--dataset-size 100 --batch-size 101 --epochs 1", "`--batch-size` must be at most"),
        ("--dataset-size 0 --batch-size 1 --epochs 1", "`--dataset-size` must be an integer >= 1"),
        ("--dataset-size 100 --batch-size 0 --epochs 1", "`--batch-size` must be an integer >= 1"),
        ("--dataset-size 100 --batch-size 10 --epochs -2", "`--epochs` must be an integer >= 1"),
    ],
)
def test_calibrate_dpsgd_bad_sizes_are_named(capsys, flags, message):
    assert main(["calibrate", "dpsgd", *flags.split(), "--epsilon", "1", "--delta", "1e-5"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (["--epsilon", "0", "--delta", "1e-5"], "`--epsilon` must be positive"),
        (["--epsilon", "nan", "--delta", "1e-5"], "`--epsilon`"),
        (["--epsilon", "1", "--delta", "0"], "`--delta` must lie in (0, 1). Found 0.0"),
        (["--epsilon", "1", "--delta", "1"], "`--delta` must lie in (0, 1)"),
    ],
)
def test_calibrate_dpsgd_bad_target_is_named(capsys, target, message):
    sizes = ["--dataset-size", "100", "--batch-size", "10", "--epochs", "1"]
    assert main(["calibrate", "dpsgd", *sizes, *target]) == 2
    assert message in capsys.readouterr().err


# -- calibrate -------------------------------------------------------------------------


def test_calibrate_dpsgd_prints_the_schedule_and_rounds_up(capsys):
    argv = "calibrate dpsgd --dataset-size 60000 --batch-size 256 --epochs 60"
    assert main([*argv.split(), "--epsilon", "3", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    run = calibrate.dpsgd_noise_multiplier(
        dataset_size=60_000, batch_size=256, epochs=60, epsilon=3.0, delta=1e-5
    )
    fields = dict(line.split(" : ", 1) for line in out.splitlines() if " : " in line)
    fields = {k.strip(): v for k, v in fields.items()}
    assert fields["steps"] == "14100 = 60 epochs × ⌈60000/256⌉ = 60 × 235"
    q = float(fields["rate q"].split()[0])
    assert 256 / 60_000 <= q <= 256 / 60_000 * (1 + 1e-7)
    sigma = float(fields["sigma"].split()[0])
    assert fields["sigma"].split()[0] == fmt_up(run.noise_multiplier, 10)
    assert run.noise_multiplier <= sigma <= run.noise_multiplier * (1 + 1e-9)
    achieved = float(fields["achieved"].split()[1])
    assert run.achieved_epsilon <= achieved <= 3.0
    assert fields["achieved"].endswith("by pld (an upper bound, rounded up)")
    convention = next(line for line in out.splitlines() if line.startswith("convention: "))
    assert "Opacus" in convention and "B/N" in convention
    # σ meets the target when re-accounted at the printed (rounded-up) value
    printed_run = ev.PoissonSampled(ev.Gaussian(sigma), 256 / 60_000) * 14_100
    assert acc.delta(printed_run, 3.0, method="pld") <= 1e-5


def test_calibrate_at_sampling_rate_one_is_the_unsampled_release(capsys):
    argv = "calibrate gaussian --epsilon 1 --delta 1e-5 --count 10"
    assert main([*shlex.split(argv), "--sampling-rate", "1"]) == 0
    sampled = capsys.readouterr().out
    assert main(shlex.split(argv)) == 0
    assert sampled == capsys.readouterr().out


def test_calibrate_laplace_delta_defaults_to_zero(capsys):
    assert main(["calibrate", "laplace", "--epsilon", "1", "--count", "10"]) == 0
    out = capsys.readouterr().out
    assert "target    : (1, 0)-DP" in out
    scale = float(out.split("scale     : ")[1].split()[0])
    assert 10 <= scale <= 10 * (1 + 1e-9)  # b = kΔ/ε, printed rounded up


# -- conventions -----------------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"dpledger {dpledger.__version__}\n"
    assert dpledger.__version__ == importlib.metadata.version("dpledger")


def test_py_typed_is_shipped():
    assert (ROOT / "dpledger" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["dpledger"]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(_parser()))


def test_every_command_is_covered():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"account gaussian", "calibrate dpsgd", "audit", "ledger show"} <= names
    assert len(names) == 17


@pytest.mark.parametrize(
    ("path", "parser"), COMMANDS, ids=[" ".join(p) or "dpledger" for p, _ in COMMANDS]
)
def test_help_has_description_defaults_and_an_example(path, parser):
    text = parser.format_help()
    assert parser.description and parser.description.split()[0] in text
    assert re.search(r"^Examples?:\n  dpledger ", text, re.MULTILINE), text
    for action in parser._actions:
        if not action.option_strings or action.default in (None, argparse.SUPPRESS):
            continue
        if action.default is False or action.required:
            continue
        help_text = parser._get_formatter()._expand_help(action)
        assert f"(default: {action.default})" in help_text, (path, action.dest)
    for action in parser._actions:  # required options say so
        if action.required and action.option_strings:
            assert "(required)" in (action.help or ""), (path, action.dest)


@pytest.mark.parametrize(
    ("path", "parser"), COMMANDS, ids=[" ".join(p) or "dpledger" for p, _ in COMMANDS]
)
def test_help_examples_parse(path, parser):
    """Every example in the help is a valid command line (parsed, not run)."""
    examples = [
        line.strip()
        for line in (parser.epilog or "").splitlines()
        if line.startswith("  dpledger ")
    ]
    assert examples
    for example in examples:
        argv = shlex.split(example)[1:]
        args, extra = _parser().parse_known_args(argv)
        assert not extra and args.handler is not None, example


# -- one table style -------------------------------------------------------------------


def test_account_audit_summary_and_ledger_show_print_through_one_function(
    capsys, monkeypatch, tmp_path
):
    import dpledger.cli as cli
    import dpledger.ledger.commands as ledger_commands

    calls: list[str] = []
    original = cli.format_table

    def spy(rows, **kwargs):
        calls.append(rows[0][0])
        return original(rows, **kwargs)

    monkeypatch.setattr(cli, "format_table", spy)
    monkeypatch.setattr(ledger_commands, "format_table", spy)  # `ledger show` lives there
    assert main(["account", "pure", "--epsilon0", "1", "--count", "3"]) == 0
    account = capsys.readouterr().out
    files = [str(ROOT / "examples" / "audits" / n) for n in ("dpsgd.toml", "ssp.toml")]
    assert main(["audit", *files]) == 1
    audit = capsys.readouterr().out
    path = tmp_path / "t.ledger"
    with dpledger.Ledger(1.0, 1e-6, path=path) as ledger:
        ledger.spend(ev.Gaussian(10.0), label="a count")
    assert main(["ledger", "show", str(path)]) == 0
    show = capsys.readouterr().out
    assert calls == ["method", "pipeline", "#"]
    _check_style(_table_after(account, "By method"), "  ")
    rows = _check_style(_table_after(audit, "Summary:"), "  ")
    assert [r["pipeline"] for r in rows] == ["dpsgd.toml", "ssp.toml"]
    lines = show.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#  "))
    rows = _check_style(lines[start : start + 3], "")
    assert rows[0]["label"] == "a count"


def test_module_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "dpledger", *shlex.split("account pure --epsilon0 1 --count 100")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "  optimal   100      ← tightest" in result.stdout  # δ = 0: basic is exact


# -- errors name flags -------------------------------------------------------------------


def _value_options(parser: argparse.ArgumentParser) -> list[str]:
    """The options of ``parser`` that take a number."""
    return [
        next(o for o in action.option_strings if o.startswith("--"))
        for action in parser._actions
        if action.option_strings and action.type in (int, float)
    ]


def _first_example(parser: argparse.ArgumentParser) -> list[str]:
    line = next(x for x in (parser.epilog or "").splitlines() if x.startswith("  dpledger "))
    return shlex.split(line)[1:]


NUMERIC = [
    pytest.param(path, flag, id=f"{' '.join(path)} {flag}")
    for path, parser in _commands(_parser())
    if path and path[0] in ("account", "calibrate", "audit")
    for flag in _value_options(parser)
]


@pytest.mark.parametrize(("path", "flag"), NUMERIC)
def test_every_bad_value_is_named_by_its_flag(capsys, monkeypatch, path, flag):
    """Issue #36: an error names the flag the user typed, never the Python argument."""
    parser = dict(_commands(_parser()))[path]
    argv = [a for a in _first_example(parser)]
    if flag in argv:  # replace the example's value of this flag
        i = argv.index(flag)
        del argv[i : i + 2]
    monkeypatch.chdir(ROOT)
    assert main([*argv, f"{flag}=-1"]) == 2
    err = capsys.readouterr().err
    assert f"`{flag}`" in err, err
    assert not re.search(r"`(?!--)[^`]*`", err), err  # no `rate`, `batch_size`, ...
    assert "Found -1" in err


def test_error_names_the_flag_of_a_differently_named_argument(capsys):
    # the events call them `rate` and `epsilon`; the flags are --sampling-rate, --epsilon0
    assert main(["account", "laplace", "--scale", "1", "--sampling-rate", "2"]) == 2
    assert "`--sampling-rate` must lie in (0, 1]. Found 2.0." in capsys.readouterr().err
    assert main(["account", "pure", "--epsilon0", "inf"]) == 2
    assert "`--epsilon0` must be non-negative and finite. Found inf." in capsys.readouterr().err
    flags = "--dataset-size 100 --batch-size 101 --epochs 1 --epsilon 1 --delta 1e-5"
    assert main(["calibrate", "dpsgd", *flags.split()]) == 2
    assert "rate --batch-size/--dataset-size above 1" in capsys.readouterr().err


def test_a_declarations_own_names_are_not_taken_for_flags(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        (ROOT / "examples" / "audits" / "dpsgd.toml")
        .read_text(encoding="utf-8")
        .replace("epsilon = 5.64", "epsilon = -5.64")
    )
    assert "epsilon = -5.64" in bad.read_text()
    assert main(["audit", str(bad), "--epsilon", "3"]) == 2
    err = capsys.readouterr().err
    assert "--epsilon" not in err and "epsilon" in err


# -- inf rows ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["laplace", "--scale", "1", "--count", "100"],
        ["pure", "--epsilon0", "1", "--count", "100"],
        ["rr", "--epsilon0", "1", "--categories", "4", "--count", "10"],
    ],
)
def test_account_explains_every_inf_row(capsys, argv):
    """Issue #36: `account laplace` printed bare `inf` rows; each now says why."""
    assert main(["account", *argv]) == 0
    out = capsys.readouterr().out
    rows = {r["method"]: r for r in _check_style(_table_after(out, "By method"), "  ")}
    infinite = [r for r in rows.values() if r["epsilon"] == "inf"]
    assert {r["method"] for r in infinite} >= {"advanced", "zcdp", "rdp", "gdp"}
    assert all(r["note"].startswith("needs δ > 0: ") for r in infinite)
    assert "inf: that method certifies no finite ε at δ = 0 (see its note);" in out
    assert "Give a δ > 0 (e.g. --delta 1e-6) to compare every method." in out
    assert main(["account", *argv, "--delta", "1e-6"]) == 0  # at δ > 0 they all apply
    out = capsys.readouterr().out
    rows = {r["method"]: r for r in _check_style(_table_after(out, "By method"), "  ")}
    assert "inf" not in {r["epsilon"] for r in rows.values()} and "\ninf:" not in out


# -- audit --plot ----------------------------------------------------------------------


def test_plot_without_matplotlib_is_an_error_before_any_work(capsys, monkeypatch):
    """Issue #36: --plot without matplotlib warned and exited 0."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    monkeypatch.chdir(ROOT)
    assert main(["audit", "examples/audits/dpsgd.toml", "--plot", "x.png"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--plot x.png: plotting needs matplotlib, which is not installed" in captured.err
    assert "pip install 'dpledger[plot]', or leave out --plot" in captured.err


def test_plot_into_a_missing_folder_is_an_error(tmp_path, capsys):
    target = tmp_path / "missing" / "x.png"
    audit = str(ROOT / "examples" / "audits" / "dpsgd.toml")
    assert main(["audit", audit, "--plot", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "does not exist" in captured.err and not target.exists()


def test_plot_that_fails_while_written_is_an_error_after_the_report(tmp_path, capsys, monkeypatch):
    import dpledger.audit.plot as plot

    def fail(report, path):
        raise OSError("disk full")

    monkeypatch.setattr(plot, "plot_privacy_curve", fail)
    audit = str(ROOT / "examples" / "audits" / "dpsgd.toml")
    assert main(["audit", audit, "--plot", str(tmp_path / "x.png")]) == 2
    captured = capsys.readouterr()
    assert "VERDICT: HOLDS" in captured.out
    assert "the plot was not written: disk full" in captured.err


# -- ledger show -------------------------------------------------------------------------


@pytest.mark.parametrize("accountant", ["gdp", "zcdp", "rdp"])
def test_ledger_show_speaks_epsilon_next_to_the_native_currency(tmp_path, capsys, accountant):
    """Issue #36 item 3: spent and remaining in ε at the ledger's δ, the native amount beside."""
    path = tmp_path / "t.ledger"
    with dpledger.Ledger(1.0, 1e-6, accountant=accountant, path=path) as ledger:
        ledger.spend(ev.Gaussian(10.0), label="a count")
        eps = ledger.spent[0]
        remaining = ledger.remaining
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    native = {"gdp": "Gaussian DP", "zcdp": "zCDP", "rdp": "Rényi DP"}[accountant]
    spent = next(line for line in out.splitlines() if line.startswith("spent     : "))
    assert spent.startswith(f"spent     : ε = {fmt_up(eps, 6)} at δ = 1e-06 (")
    amount = {"gdp": "μ", "zcdp": "ρ", "rdp": r"R\(α=[\d.]+\)"}[accountant]
    assert re.search(rf"\(({amount})=[\d.e+-]+ \({native}\)\)$", spent), spent
    left = next(line for line in out.splitlines() if line.startswith("remaining : "))
    assert left.startswith(f"remaining : ε = {fmt_down(remaining.epsilon_at(1e-6), 6)} at δ")
    assert left.endswith(f"({native})) for one release using it all")
    assert left.count("ε") == 1 and spent.count("ε") == 1  # the native part is native only


def test_ledger_show_of_a_basic_ledger_is_in_epsilon_already(tmp_path, capsys):
    path = tmp_path / "t.ledger"
    with dpledger.Ledger(1.0, 0.0, accountant="basic", path=path) as ledger:
        ledger.spend(ev.PureDP(0.25))
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "spent     : (0.25, 0)-DP (filter-tracked)\n" in out
    assert "remaining : (ε=0.75, δ=0)\n" in out
