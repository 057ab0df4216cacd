"""Helpers that keep dpledger's public namespaces to what they export.

Every public module and package sets ``__dir__ = namespace(__all__, ...)`` (PEP 562), so
``dir()`` and tab completion list exactly the exported names (and the public
submodules), never implementation imports such as ``annotations``, ``Any`` or the
``check_*`` validators. ``deprecated_alias`` keeps a renamed function callable for one
release with a :class:`DeprecationWarning`.
"""

import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def namespace(exported: Iterable[str], *submodules: str) -> Callable[[], list[str]]:
    """A module ``__dir__`` listing ``exported`` and the public ``submodules``."""
    names = sorted({*exported, *submodules})

    def listing() -> list[str]:
        return list(names)

    return listing


def deprecated_alias(function: F, old_name: str, *, removed_in: str = "0.3") -> F:
    """``function`` under its former name, warning that the name is deprecated."""

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old_name} is deprecated and will be removed in dpledger {removed_in}; use "
            f"{function.__name__} (same arguments, same result).",
            DeprecationWarning,
            stacklevel=2,
        )
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated alias of :func:`{function.__name__}`."
    return alias  # type: ignore[return-value]
