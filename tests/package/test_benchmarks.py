"""Every benchmark's ``--quick`` mode runs to the end and prints its table.

The benchmarks are run as scripts (as ``tests/package/test_examples.py`` runs the examples), with
``DPLEDGER_DATA`` pointing at an empty folder: the quick runs then use synthetic data
only (the real data sets take minutes even in quick mode) and the data skips are
exercised. A benchmark whose peer library is missing prints a ``SKIP`` line and exits 0.
No timing is asserted (STYLE.md: timings belong in the benchmarks, not in the tests).
The verdicts the benchmarks' results support are slow tests, test_benchmark_verdicts.py;
here, the shared scaffold (``benchmarks/_harness.py``) is checked on toy estimators.
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

import numpy as np
import pytest

import dpledger.accountant
import dpledger.calibrate
from dpledger import events as ev

ROOT = Path(__file__).resolve().parents[2]
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
    "tables.py": ([], "peak ÷ dask's", ("dask", "pandas")),
    "tuning.py": ([], "private random search", ()),
    "ledger_team.py": ([], "spends/s", ()),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def test_every_benchmark_is_covered():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SCRIPTS)


#: quick modes that start a database cluster, fit dozens of models or run the peers'
#: accountants side by side (several CPU-seconds each): slow tests, so the default run
#: keeps within its CPU budget (README)
SLOW_QUICK = {"ledger_team.py", "tuning.py", "accounting.py", "dpsgd.py"}


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_QUICK else name
        for name in sorted(SCRIPTS)
    ],
)
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


def _harness() -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # the harness imports _common, as a benchmark does
    return importlib.import_module("_harness")


class _Echo:
    """An 'estimator' that remembers its seed, and fails when asked to."""

    def __init__(self, seed: int, fail: bool = False) -> None:
        self.seed, self.fail = seed, fail

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Echo:
        if self.fail:
            raise ValueError("asked to fail")
        return self


def test_harness_run_seeds_each_fit_by_its_identity_and_records_failures():
    """A subset of a run (fewer methods, fewer points) reproduces the full run's fits — the
    slow verdict tests rely on it — every fit has a seed of its own, and a failed fit is
    a NaN and a line in ``FAILURES``, not a crash."""
    h = _harness()
    rows = np.zeros((2, 1))
    data = h.Data("toy", lambda seed: h.Split(rows, rows[:, 0], rows, rows[:, 0]))
    methods = [
        h.Method(k, k, lambda point, seed, data, k=k: _Echo(seed, k == "c" and point == 1.0))
        for k in "abc"
    ]
    methods.append(h.Method("base", "base", lambda *_: _Echo(0), baseline=True))

    def measure(fit):
        return {"seed": fit.model.seed}

    h.FAILURES.clear()
    full = h.run(methods, data, [0.1, 1.0], 3, measure)
    part = h.run(methods[1:2], data, [1.0], 3, measure)
    assert part.get("seed", "b", 1.0) == full.get("seed", "b", 1.0)
    seeds = [s for k in "ab" for p in (0.1, 1.0) for s in full.get("seed", k, p)]
    assert len(set(seeds)) == len(seeds) == 12
    assert full.get("seed", "base", 1.0) == full.get("seed", "base") == [0, 0, 0]
    assert all(np.isnan(full.get("seed", "c", 1.0))) and len(h.FAILURES) == 3
    h.FAILURES.clear()
    table = h.grid_table(full, "seed", [0.1, 1.0]).splitlines()
    assert table[0].split() == ["method", "ε=0.1", "ε=1"]
    assert [line.split()[0] for line in table[2:]] == ["a", "b", "c", "base"]  # baselines last
    assert table[4].split()[-1] == "—"  # c's failed fits


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
