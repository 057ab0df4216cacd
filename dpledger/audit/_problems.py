"""Where a declaration's problems are, and how their values read in the messages.

The pieces of :class:`~dpledger.errors.PipelineError` messages: the line of each key in
the TOML text (:class:`KeyLines`), whether a value is a usable number (:func:`is_number`),
a "did you mean" for a misspelt name (:func:`suggest`), and a mistyped value in words
(:func:`kind`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_COUNT", "KeyLines", "is_number", "kind", "suggest"]

MAX_COUNT = 2**63 - 1
"""The largest ``count`` a declaration may give (larger counts are refused, not wrapped)."""


class KeyLines:
    """Line numbers of keys in TOML text: [claim] keys and the n-th [[release]]'s keys."""

    def __init__(self, text: str | None) -> None:
        self.claim: dict[str, int] = {}
        self.releases: list[dict[str, int]] = []
        self.tables: dict[str, int] = {}
        if text is None:
            return
        current: dict[str, int] | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if line.startswith("[["):
                name = line.strip("[] \t")
                if name == "release":
                    current = {"": number}
                    self.releases.append(current)
                else:
                    current = None
                    self.tables.setdefault(name, number)
            elif line.startswith("["):
                name = line.split("]")[0].strip("[ \t")
                self.tables.setdefault(name, number)
                current = self.claim if name == "claim" else None
                if name == "claim":
                    self.claim[""] = number
            elif current is not None and "=" in line and not line.startswith("#"):
                key = line.split("=", 1)[0].strip().strip('"').split(".")[0]
                current.setdefault(key, number)

    def of_claim(self, key: str = "") -> int | None:
        return self.claim.get(key, self.claim.get(""))

    def of_release(self, index: int, key: str = "") -> int | None:
        if index < len(self.releases):
            table = self.releases[index]
            return table.get(key, table.get(""))
        return None


def is_number(value: Any) -> bool:
    """A real number (bool is not) that converts to a finite float (no 400-digit ints)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def suggest(word: Any, choices: Any) -> str:
    """' (did you mean 'x'?)' for a close match, else ''."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


def kind(value: Any) -> str:
    """How a mistyped value reads: 'a string', 'a list', 'a table', ..."""
    if isinstance(value, str):
        return f"a string ({value!r}): write it without quotes"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and abs(value) > MAX_COUNT:
        return f"an integer too large ({len(str(abs(value)))} digits)"
    return repr(value)
