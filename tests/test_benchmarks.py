"""Every benchmark's ``--quick`` mode runs to the end and prints its table.

The benchmarks are run as scripts (as ``tests/test_examples.py`` runs the examples), with
``DPLEDGER_DATA`` pointing at an empty folder: the quick runs then use synthetic data
only (the real data sets take minutes even in quick mode) and the data skips are
exercised. A benchmark whose peer library is missing prints a ``SKIP`` line and exits 0.
No timing is asserted (STYLE.md: timings belong in the benchmarks, not in the tests).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import dpledger.accountant
import dpledger.calibrate
from dpledger import events as ev

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

# script: (extra arguments, a header word of its table, peer modules it cannot run without)
SCRIPTS: dict[str, tuple[list[str], str, tuple[str, ...]]] = {
    "accounting.py": ([], "dpledger PLD", ("dp_accounting", "prv_accountant")),
    "calibrate.py": ([], "sigma (dpledger)", ("dp_accounting",)),
    "dpsgd.py": ([], "dp_accounting PLD [s]", ("dp_accounting",)),
    "ledger.py": ([], "per step (µs)", ()),
    "functional_mechanism.py": (["--plot-dir", "{tmp}"], "FM calibrated", ()),
    "linear_regression.py": (["--plot", "{tmp}/linear.png"], "ADASSP calibrated", ()),
    "logistic_regression.py": (["--plot-dir", "{tmp}"], "noisy GD", ()),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def test_every_benchmark_is_covered():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SCRIPTS)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_quick_mode_runs_and_prints_its_table(script, tmp_path):
    extra, header, peers = SCRIPTS[script]
    data = tmp_path / "no-data"
    data.mkdir()
    env = {**os.environ, "DPLEDGER_DATA": str(data), "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / script),
            "--quick",
            *(a.replace("{tmp}", str(tmp_path)) for a in extra),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # anything written to the working directory lands here
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if _missing(peers):
        assert result.stdout.startswith("SKIP  "), result.stdout[-3000:]
    else:
        assert header in result.stdout, result.stdout[-3000:]
        assert "Traceback" not in result.stderr


def _common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_bench_common", BENCHMARKS / "_common.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lru_caches() -> dict[str, functools._lru_cache_wrapper]:
    """Every module-level ``functools.lru_cache`` of dpledger's accountants and calibration."""
    found = {}
    for package in (dpledger.accountant, dpledger.calibrate):
        names = [package.__name__] + [
            m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        ]
        for name in names:
            module = sys.modules.get(name) or importlib.import_module(name)
            for value in vars(module).values():
                if isinstance(value, functools._lru_cache_wrapper):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_clear_caches_empties_every_accountant_cache():
    """The benchmarks time cold runs: ``clear_caches`` must reach every cache there is."""
    from dpledger.accountant import pld, rdp
    from dpledger.accountant.pld import _accountant, _composition

    # fill them: a sampled Gaussian on a grid and in RDP, Laplace on the lattice
    pld.PLDAccountant.summarize(ev.PoissonSampled(ev.Gaussian(1.0), 0.01) * 100).epsilon(1e-5)
    pld.PLDAccountant.summarize(ev.Laplace(1.0) * 20).epsilon(1e-6)
    rdp.RDPAccountant.summarize(ev.PoissonSampled(ev.Gaussian(1.0), 0.01) * 100).epsilon(1e-5)
    caches = _lru_caches()
    assert caches, "no lru_cache found: has the search gone wrong?"
    assert _accountant._GRID_CACHE and any(c.cache_info().currsize for c in caches.values())

    _common().clear_caches()

    assert not _accountant._GRID_CACHE
    assert not _composition._MOMENTS
    filled = [name for name, c in caches.items() if c.cache_info().currsize]
    assert not filled, f"clear_caches() leaves these caches filled: {filled}"
