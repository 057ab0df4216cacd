"""``import dpledger`` and ``dpledger --help`` stay light (issue #32).

Each check runs in a fresh interpreter (a subprocess), since this test session has long
since imported everything. Only which modules get loaded is asserted: import times are
measured by the benchmarks, not by tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import dpledger

ROOT = Path(__file__).resolve().parents[2]

# Third-party modules that ``import dpledger`` (and the CLI's help) must not load: the
# optional integrations, and the parts of scipy/mpmath that only some computations need.
HEAVY = (
    "sklearn",
    "pandas",
    "dask",
    "matplotlib",
    "scipy.stats",
    "scipy.optimize",
    "mpmath",
)

_REPORT = """
import json, sys
heavy = {heavy!r}
print(json.dumps(sorted(name for name in heavy if name in sys.modules)))
"""


def _loaded_after(code: str) -> list[str]:
    """The modules of HEAVY that a fresh interpreter has loaded after running ``code``."""
    script = code + _REPORT.format(heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
    )
    loaded: list[str] = json.loads(result.stdout.splitlines()[-1])
    return loaded


def test_import_dpledger_loads_no_heavy_module():
    assert _loaded_after("import dpledger") == []


def test_import_public_names_loads_no_heavy_module():
    code = "import dpledger\nfrom dpledger import Ledger, accountant, events\n"
    assert _loaded_after(code) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["account", "--help"],
        ["calibrate", "--help"],
        ["calibrate", "gaussian", "--help"],
        ["audit", "--help"],
        ["ledger", "show", "--help"],
    ],
    ids=" ".join,
)
def test_cli_help_loads_no_heavy_module(argv):
    code = (
        "import contextlib, io, runpy, sys\n"
        f"sys.argv = ['dpledger', *{argv!r}]\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        runpy.run_module('dpledger', run_name='__main__', alter_sys=True)\n"
        "    except SystemExit as stop:\n"
        "        assert stop.code in (0, None), stop.code\n"
        "assert 'usage: dpledger' in out.getvalue(), out.getvalue()\n"
    )
    assert _loaded_after(code) == []


def test_module_entry_point_help():
    result = subprocess.run(
        [sys.executable, "-m", "dpledger", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert result.stdout.startswith("usage: dpledger")
    assert "calibrate" in result.stdout


@pytest.mark.parametrize("name", ["algorithms", "audit", "calibrate", "mechanisms"])
def test_lazy_subpackages_are_the_real_modules(name):
    """Loaded on first use (PEP 562), they are the same module objects ``import`` gives."""
    module = getattr(dpledger, name)
    assert module is sys.modules[f"dpledger.{name}"]
    assert module.__name__ == f"dpledger.{name}"
    assert name in dir(dpledger)
    namespace: dict[str, object] = {}
    exec(f"from dpledger import {name} as imported", namespace)
    assert namespace["imported"] is module


def test_lazy_subpackages_in_a_fresh_interpreter():
    """Attribute access, ``from dpledger import ...``, ``dir`` and ``*`` all still work."""
    code = (
        "import dpledger\n"
        "names = dir(dpledger)\n"
        "assert dpledger.audit.check_claim is dpledger.audit.check.check_claim\n"
        "from dpledger import calibrate, mechanisms\n"
        "assert calibrate is dpledger.calibrate and mechanisms is dpledger.mechanisms\n"
        "assert round(calibrate.gaussian_sigma(1.0, 1e-5), 6) == 3.730632\n"
        "assert dir(dpledger) == names\n"
        "namespace = {}\n"
        "exec('from dpledger import *', namespace)\n"
        "assert set(dpledger.__all__) <= set(namespace), set(dpledger.__all__) - set(namespace)\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "ok"


def test_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        dpledger.nonexistent  # noqa: B018
