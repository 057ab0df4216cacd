"""A per-thread mpmath context, for certified bounds computed at a stated precision.

``mpmath.workdps``/``workprec`` (and ``mpmath.mp.dps = …``) set the precision of the
one global context ``mpmath.mp``, which every thread shares: while one thread evaluates
a certified bound inside ``workdps(60)``, another thread's ``workdps(15)`` lowers the
precision under it (and its exit restores the wrong value), so two ledgers used from two
threads could certify a bound computed at the wrong precision. :func:`context` instead
yields an ``mpmath.MPContext`` owned by the calling thread; every mpmath call of a
certified computation goes through it (``ctx.mpf``, ``ctx.exp``, ``ctx.ncdf``,
``ctx.matrix``, …). Numbers made by it carry it, so their arithmetic is at its
precision too. Single-threaded, the results are those of ``mpmath.workdps`` bit for bit
(the same class, the same precision).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["context"]

_local = threading.local()  # .ctx: this thread's mpmath.MPContext, made on first use


@contextlib.contextmanager
def context(dps: int | None = None, *, prec: int | None = None) -> Iterator[Any]:
    """This thread's mpmath context at ``dps`` decimal digits (or ``prec`` bits).

    The precision is set for the block and restored after it, so blocks nest. The
    context is created once per thread; mpmath is imported on first use, not with
    dpledger (issue #32).

    Args:
        dps: Working precision in decimal digits (as ``mpmath.workdps``).
        prec: Working precision in bits (as ``mpmath.workprec``); give exactly one.

    Yields:
        The calling thread's ``mpmath.MPContext``, at the requested precision.

    Example:
        >>> with context(50) as ctx:
        ...     str(ctx.mpf(1) / 3)[:12], ctx.dps
        ('0.3333333333', 50)
    """
    if (dps is None) == (prec is None):
        raise TypeError("internal error: pass exactly one of `dps` and `prec`")
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        import mpmath  # imported on first use, not with dpledger (issue #32)

        ctx = _local.ctx = mpmath.MPContext()
    saved = ctx.prec  # restored as mpmath's own workdps/workprec restore it
    if prec is None:
        ctx.dps = dps
    else:
        ctx.prec = prec
    try:
        yield ctx
    finally:
        ctx.prec = saved
