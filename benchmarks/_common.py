"""Small helpers shared by the benchmarks: timing, cold caches, tables, peer libraries."""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from dpledger.accountant import rdp
from dpledger.accountant.pld import _accountant, _composition, _lattice


def clear_caches() -> None:
    """Empty every cache of dpledger's accountants, so that the next query runs cold.

    The module-level caches (process-wide, kept between queries): the PLD grid cache
    (byte-bounded) and the moments of its grids, the lattice compositions and binomial
    tables, and the Rényi curves of sampled Gaussians and their Pearson–Vajda moments.
    Per-object caches (a summary's compositions, a ledger's costs) die with their object;
    the benchmarks build new ones for every timed run. ``tests/test_benchmarks.py`` checks
    that no ``functools.lru_cache`` in dpledger's accountant or calibration is left out.
    """
    _accountant._clear_caches()
    _composition._clear_caches()
    _lattice._composed.cache_clear()
    _lattice._binomials.cache_clear()
    rdp._rdp_poisson_gaussian_cached.cache_clear()
    rdp._gaussian_pearson_vajda.cache_clear()


def timed(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """Run ``fn`` ``repeat`` times; return its last result and the best wall time (s)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned numeric columns."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([line, rule, *body])


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e5 else f"{value:.4e}"
    return str(value)


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
