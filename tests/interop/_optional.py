"""Optional packages of the interop tests: skip without them, unless CI requires them."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

REQUIRE = "DPLEDGER_REQUIRE_OPACUS"


def require(name: str, extra: str) -> ModuleType:
    """Import ``name``; skip the calling test module without it — fail if CI requires it.

    CI sets DPLEDGER_REQUIRE_OPACUS=1 after installing ``dpledger[opacus]``: there a missing
    package is a broken install, not a reason to skip.
    """
    try:
        return importlib.import_module(name)
    except ImportError as error:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(
                f"{name} is required ({REQUIRE}=1) but does not import: {error}. "
                f"Install it with pip install 'dpledger[{extra}]'.",
                pytrace=False,
            )
        pytest.skip(
            f"{name} is not installed (pip install 'dpledger[{extra}]'; CI sets {REQUIRE}=1 "
            "to require it)",
            allow_module_level=True,
        )
