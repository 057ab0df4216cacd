"""Declarations whose releases are given as dp_accounting events (``[[dp_accounting]]``).

A declaration may give releases as Google dp_accounting ``DpEvent`` trees instead of, or
beside, ``[[release]]`` tables::

    [claim]
    epsilon = 5.64
    delta = 1e-5
    adjacency = "add_remove"

    [[dp_accounting]]
    label = "DP-SGD"
    event = "SelfComposedDpEvent(PoissonSampledDpEvent(0.01, GaussianDpEvent(1.1)), 10000)"

``event`` is the text ``print(event)`` shows (read without evaluating it, and without
dp_accounting installed), or the event as a table in dp_accounting's named-tuple form
(``{ class_name = "GaussianDpEvent", noise_multiplier = 1.1 }``, nested events as
tables); from Python, also the ``DpEvent`` object itself. Each is accounted under the
claim's adjacency (dp_accounting's ``NeighboringRelation``) by
:func:`dpledger.interop.from_dp_accounting`; one that has no dpledger counterpart makes
the verdict ``unsupported``, with the reason. A malformed one is a
:class:`~dpledger.errors.PipelineError`, with its line.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpledger.accountant import events as ev
from dpledger.audit.pipeline import Claim, Pipeline, Release, _Validator
from dpledger.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotApplicableError,
    PipelineError,
    UnsupportedReleaseError,
)
from dpledger.interop.dp_accounting import from_dp_accounting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = ["KEY", "dp_accounting_event", "dp_accounting_pipeline"]

KEY = "dp_accounting"
"""The declaration's table of dp_accounting events, and those releases' ``mechanism``."""
_ENTRY_KEYS = ("event", "label", "note")


def dp_accounting_pipeline(pipeline: Any) -> Pipeline | None:
    """The declaration as a :class:`Pipeline` if it has ``[[dp_accounting]]`` tables.

    Returns None for any other declaration (or one that does not read or parse as TOML),
    which the ordinary loader then handles and reports.

    Raises:
        PipelineError: Every problem of the declaration, each with its line.
    """
    peeked = _peek(pipeline)
    if peeked is None or KEY not in peeked[0]:
        return None
    data, text, source = peeked
    rest = {k: v for k, v in data.items() if k != KEY}
    check = _Validator(rest, text, source)
    for key in rest:
        if key not in ("claim", "release"):
            check.problem(
                check.lines.tables.get(key),
                f"unknown table [{key}] (expected [claim], [[release]] and [[dp_accounting]])",
            )
    claim = check._claim()
    releases = check._releases(claim.adjacency if claim else None) if "release" in rest else []
    releases += _entries(data[KEY], claim, check, text)
    if check.problems:
        raise PipelineError(check.problems, source)
    assert claim is not None
    return Pipeline(claim, tuple(releases), source, text)


def dp_accounting_event(release: Release, claim: Claim) -> ev.Event:
    """The event of a ``[[dp_accounting]]`` release under the claim's adjacency.

    Raises:
        UnsupportedReleaseError: The event has no dpledger counterpart (the reason is
            from_dp_accounting's).
    """
    try:
        return from_dp_accounting(release.params["event"], adjacency=claim.adjacency)
    except (NotApplicableError, InvalidArgumentError, InvalidArgumentTypeError) as error:
        raise UnsupportedReleaseError(f"{release.label or KEY}: {error}") from None


def _peek(pipeline: Any) -> tuple[dict[str, Any], str | None, str] | None:
    """(data, text, source) of a dict, TOML text or a TOML file; None if it does not parse."""
    if isinstance(pipeline, Mapping):
        return dict(pipeline), None, "pipeline"
    try:
        if isinstance(pipeline, Path) or (
            isinstance(pipeline, str) and "\n" not in pipeline and pipeline.endswith(".toml")
        ):
            text = Path(pipeline).read_bytes().decode("utf-8")
            return tomllib.loads(text), text, str(pipeline)
        if isinstance(pipeline, str):
            return tomllib.loads(pipeline), pipeline, "pipeline"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return None


def _header_lines(text: str | None) -> list[int]:
    if text is None:
        return []
    return [
        number
        for number, raw in enumerate(text.splitlines(), start=1)
        if raw.strip().replace(" ", "") in (f"[[{KEY}]]", f"[{KEY}]")
    ]


def _entries(raw: Any, claim: Claim | None, check: _Validator, text: str | None) -> list[Release]:
    """The ``[[dp_accounting]]`` tables as releases (each event parsed now, converted later)."""
    tables = [raw] if isinstance(raw, Mapping) else raw
    lines = _header_lines(text)
    if not isinstance(tables, list) or not tables:
        check.problem(lines[0] if lines else None, f"[[{KEY}]] must be an array of tables")
        return []
    out = []
    for index, table in enumerate(tables):
        where = f"[[{KEY}]] #{index + 1}"
        line = lines[index] if index < len(lines) else None
        if not isinstance(table, Mapping):
            check.problem(line, f"{where}: must be a table with an 'event'")
            continue
        for key in table:
            if key not in _ENTRY_KEYS:
                check.problem(
                    line, f"{where}: unknown key {key!r} (allowed: {', '.join(_ENTRY_KEYS)})"
                )
        label = table.get("label", "")
        if not isinstance(label, str):
            check.problem(line, f"{where}: label must be a string")
        if "event" not in table:
            check.problem(
                line,
                f"{where}: 'event' is required: the dp_accounting event as print(event) shows "
                "it, or as a table with its class_name",
            )
            continue
        event = table["event"]
        if claim is not None:
            try:
                from_dp_accounting(event, adjacency=claim.adjacency)
            except (InvalidArgumentError, InvalidArgumentTypeError) as error:
                check.problem(line, f"{where}: {error}")
                continue
            except NotApplicableError:
                pass  # a well-formed event with no counterpart: the verdict says why
        out.append(
            Release(
                mechanism=KEY,
                params={"event": _text(event) if isinstance(event, Mapping) else event},
                label=label if isinstance(label, str) else "",
                line=line,
            )
        )
    return out


def _text(value: Any) -> Any:
    """An event in dict form as the text ``print(event)`` shows (for the report's rows)."""
    if isinstance(value, Mapping):
        fields = ", ".join(
            f"{k}={_text(v)}" for k, v in value.items() if k not in ("class_name", "module_name")
        )
        return f"{value.get('class_name')}({fields})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(_text(v)) for v in value) + "]"
    return repr(value)
