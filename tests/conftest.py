"""Shared test configuration: Hypothesis profiles and helpers."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The project's data sets (never committed) live next to the checkout; docs and examples
# find them through DPLEDGER_DATA, as a user's would.
_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
if _DATA.is_dir():
    os.environ.setdefault("DPLEDGER_DATA", str(_DATA))
