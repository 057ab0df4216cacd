"""What the benchmarks share with their environment: cold caches, peer libraries, data.

The scaffold of a benchmark run (command line, timing, tables, plots) is ``_harness.py``.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from pathlib import Path
from typing import NoReturn

from dpledger.accountant import rdp
from dpledger.accountant.pld import _accountant, _composition, _lattice


def clear_caches() -> None:
    """Empty every cache of dpledger's accountants, so that the next query runs cold.

    The module-level caches (process-wide, kept between queries): the PLD grid cache
    (byte-bounded) and the moments of its grids, the lattice compositions and binomial
    tables, and the Rényi curves of sampled Gaussians and their Pearson–Vajda moments.
    Per-object caches (a summary's compositions, a ledger's costs) die with their object;
    the benchmarks build new ones for every timed run. ``tests/package/test_benchmarks.py`` checks
    that no ``functools.lru_cache`` in dpledger's accountant or calibration is left out.
    """
    _accountant._clear_caches()
    _composition._clear_caches()
    _lattice._composed.cache_clear()
    _lattice._binomials.cache_clear()
    rdp._rdp_poisson_gaussian_cached.cache_clear()
    rdp._gaussian_pearson_vajda.cache_clear()
    # and any other module-level lru_cache of the accountants and calibration (a cache
    # added later, e.g. gdp._small_pure_dp_to_gdp, is then cleared without an edit here)
    for name, module in list(sys.modules.items()):
        if name.startswith(("dpledger.accountant", "dpledger.calibrate")) and module:
            for value in list(vars(module).values()):
                if isinstance(value, functools._lru_cache_wrapper):
                    value.cache_clear()


BENCH_INSTALL = 'pip install -e ".[bench]"'
"""Installs every peer library the benchmarks compare against (see pyproject.toml)."""

COMPARE_INSTALL = 'pip install -e ".[compare]"'
"""Installs the accounting peers (dp_accounting, prv_accountant; see pyproject.toml)."""


def skip(script: str, error: BaseException) -> NoReturn:
    """Say that ``script`` cannot run without its peer libraries, and exit with status 0.

    For the benchmarks that are nothing but a comparison: a missing peer is not a failure
    of dpledger (the tests run every benchmark, with or without the peers installed).
    """
    print(
        f"SKIP  {script}: a peer library is not available ({type(error).__name__}: {error}). "
        f"Install the peers with {COMPARE_INSTALL}."
    )
    raise SystemExit(0)


@functools.cache
def peer_missing(module: str) -> str | None:
    """None if the peer library ``module`` imports; else a note saying how to install it.

    A benchmark leaves out the rows and verdicts of a missing peer (and says so) instead
    of attempting every fit and failing each one.
    """
    try:
        importlib.import_module(module)
    except Exception as error:  # absent, or present but broken (e.g. a too-new scikit-learn)
        return (
            f"{module} is not available ({type(error).__name__}: {error}); its rows and the "
            f"verdicts that need it are left out. Install the peers with {BENCH_INSTALL} "
            "(diffprivlib needs scikit-learn < 1.8, which that extra pins)."
        )
    return None


def data_root() -> Path:
    """The data folder: ``$DPLEDGER_DATA``, or the project's own next to the checkout."""
    env = os.environ.get("DPLEDGER_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def where_to_look() -> str:
    """Where :func:`data_root` looks (for the skip messages)."""
    env = os.environ.get("DPLEDGER_DATA")
    return f"$DPLEDGER_DATA={env}" if env else str(data_root())
