"""dp_accounting events in their three forms — objects, text, dicts — as (name, fields).

The reading half of :mod:`dpledger.interop.dp_accounting`: :func:`describe` gives the
class name and the fields of an event given as a dp_accounting object, as the text
``print(event)`` shows (parsed with :mod:`ast`, never evaluated: only calls of event
classes, numbers and lists are accepted), or as its named-tuple/dict form; :func:`fold`
walks a tree of them without recursion.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dpledger._validation import shown
from dpledger.errors import InvalidArgumentError, InvalidArgumentTypeError, NotApplicableError

__all__ = ["DP_ACCOUNTING_FIELDS", "children", "describe", "fold"]

#: dp_accounting's event classes (``dp_accounting.dp_event``, version 0.6) and their
#: fields in constructor order: what the text and dict forms are parsed against.
DP_ACCOUNTING_FIELDS: dict[str, tuple[str, ...]] = {
    "NoOpDpEvent": (),
    "NonPrivateDpEvent": (),
    "UnsupportedDpEvent": (),
    "RandomizedResponseDpEvent": ("noise_parameter", "num_buckets"),
    "GaussianDpEvent": ("noise_multiplier",),
    "LaplaceDpEvent": ("noise_multiplier",),
    "DiscreteLaplaceDpEvent": ("noise_parameter", "sensitivity"),
    "SelfComposedDpEvent": ("event", "count"),
    "ComposedDpEvent": ("events",),
    "PoissonSampledDpEvent": ("sampling_probability", "event"),
    "SampledWithReplacementDpEvent": ("source_dataset_size", "sample_size", "event"),
    "SampledWithoutReplacementDpEvent": ("source_dataset_size", "sample_size", "event"),
    "SingleEpochTreeAggregationDpEvent": ("noise_multiplier", "step_counts"),
    "RepeatAndSelectDpEvent": ("event", "mean", "shape"),
    "MixtureOfGaussiansDpEvent": ("standard_deviation", "sensitivities", "sampling_probs"),
    "ZCDpEvent": ("rho", "xi"),
    "TruncatedSubsampledGaussianDpEvent": (
        "dataset_size",
        "sampling_probability",
        "truncated_batch_size",
        "noise_multiplier",
    ),
}
_DEFAULTS: dict[str, dict[str, Any]] = {"ZCDpEvent": {"xi": 0.0}}

_MODULE_PREFIXES = ("dp_accounting", "dp_event")
_MAX_TEXT = 1_000_000


def _parse_text(text: str) -> dict[str, Any]:
    """The text ``print(event)`` shows, as the dict form (parsed safely: never evaluated)."""
    if len(text) > _MAX_TEXT:
        raise InvalidArgumentError(
            f"a dp_accounting event's text must be at most {_MAX_TEXT:,} characters. Found "
            f"{len(text):,}."
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise InvalidArgumentError(
            f"not a dp_accounting event: {shown(text)} does not parse ({error})."
        ) from None
    value = _literal(tree.body, text)
    if not isinstance(value, dict):
        raise InvalidArgumentError(
            f"not a dp_accounting event: {shown(text)} is not a call such as "
            "GaussianDpEvent(noise_multiplier=1.0)."
        )
    return value


def _literal(node: ast.AST, text: str) -> Any:
    """A number, a list of values, or an event call (as the dict form) — nothing else."""
    if isinstance(node, ast.Call):
        return _call(node, text)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item, text) for item in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _literal(node.operand, text)
        if isinstance(inner, (int, float)):
            return -inner if isinstance(node.op, ast.USub) else inner
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return node.value
    piece = ast.get_source_segment(text, node) or ast.dump(node)
    raise InvalidArgumentError(
        f"not a dp_accounting event: {shown(piece)} is not a number, a list or an event "
        f"(in {shown(text)})."
    )


def _call(node: ast.Call, text: str) -> dict[str, Any]:
    parts = []
    func: ast.AST = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        raise InvalidArgumentError(f"not a dp_accounting event call: {shown(ast.unparse(node))}.")
    parts.append(func.id)
    name, prefix = parts[0], parts[1:]
    if any(p not in _MODULE_PREFIXES for p in prefix):
        raise InvalidArgumentError(
            f"{'.'.join(reversed(parts))} is not a dp_accounting event class (expected a name "
            "such as GaussianDpEvent, optionally prefixed by dp_accounting. or dp_event.)."
        )
    fields = DP_ACCOUNTING_FIELDS.get(name)
    out: dict[str, Any] = {"class_name": name}
    if fields is None:
        if name.endswith("DpEvent"):
            return out  # an event type dpledger does not know: refused by name when converted
        raise InvalidArgumentError(
            f"{name} is not a dp_accounting event class (in {shown(text)}): expected a name "
            "such as GaussianDpEvent."
        )
    if len(node.args) > len(fields):
        raise InvalidArgumentError(
            f"{name} takes at most {len(fields)} positional fields ({', '.join(fields)}). "
            f"Found {len(node.args)}."
        )
    for field, arg in zip(fields, node.args, strict=False):
        out[field] = _literal(arg, text)
    for keyword in node.keywords:
        if keyword.arg is None or keyword.arg in out:
            raise InvalidArgumentError(f"{name}: a field is given twice or as **kwargs.")
        out[keyword.arg] = _literal(keyword.value, text)
    return out


def describe(raw: Any) -> tuple[str, dict[str, Any]]:
    """(dp_accounting class name, fields) of an event object, its named tuple or dict form."""
    if isinstance(raw, str):
        raw = _parse_text(raw)
    if hasattr(raw, "_asdict") and hasattr(raw, "class_name"):  # DpEvent.to_named_tuple()
        raw = raw._asdict()
    if isinstance(raw, Mapping):
        data = dict(raw)
        name = data.pop("class_name", None)
        module = data.pop("module_name", "dp_accounting.dp_event")
        if isinstance(name, bytes):
            name = name.decode()
        if isinstance(module, bytes):
            module = module.decode()
        if not isinstance(name, str):
            raise InvalidArgumentError(
                "a dp_accounting event as a dict needs its 'class_name' (e.g. {'class_name': "
                f"'GaussianDpEvent', 'noise_multiplier': 1.0}}). Found {shown(raw)}."
            )
        if not (isinstance(module, str) and module.split(".")[0] == "dp_accounting"):
            raise NotApplicableError(
                f"{name} from module {module!r} is not one of dp_accounting's own event types."
            )
        return name, _fields(name, data)
    cls = type(raw)
    if cls.__module__.split(".")[0] != "dp_accounting" or not cls.__name__.endswith("DpEvent"):
        if getattr(cls, "__module__", "").startswith("dpledger"):
            raise InvalidArgumentTypeError(
                f"from_dp_accounting converts dp_accounting events; {cls.__name__} is already "
                "a dpledger event."
            )
        raise InvalidArgumentTypeError(
            "`event` must be a dp_accounting DpEvent, its text (print(event)) or its dict form "
            f"{{'class_name': ..., field: value}}. Found {shown(raw)} of type {cls.__name__}."
        )
    name = cls.__name__
    if name not in DP_ACCOUNTING_FIELDS:
        return name, {}
    return name, {f: getattr(raw, f) for f in DP_ACCOUNTING_FIELDS[name]}


def _fields(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a parsed event, complete and with no unknown name."""
    known = DP_ACCOUNTING_FIELDS.get(name)
    if known is None:
        return {}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InvalidArgumentError(
            f"{name} has no field {', '.join(map(repr, unknown))} (its fields: "
            f"{', '.join(known) or 'none'})."
        )
    out = {**_DEFAULTS.get(name, {}), **data}
    missing = [f for f in known if f not in out]
    if missing:
        raise InvalidArgumentError(f"{name} needs {', '.join(map(repr, missing))}.")
    return out


def children(name: str, fields: Mapping[str, Any]) -> list[Any]:
    """The events inside an event (``events`` of a composition, else its ``event``)."""
    if name == "ComposedDpEvent":
        events = fields["events"]
        if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Sequence):
            raise InvalidArgumentTypeError(
                f"ComposedDpEvent.events must be a list of events. Found {shown(events)}."
            )
        return list(events)
    if "event" in fields:
        return [fields["event"]]
    return []


# -- one walk over a tree, without recursion -------------------------------------------


def fold(root: Any, expand: Callable[[Any], tuple[Any, list[Any]]], build: Any) -> Any:
    """Post-order over a tree: ``build(info, converted children)`` at each node.

    ``expand(node)`` gives (information for ``build``, the node's children). Iterative, so
    a 3,000-deep composition converts; a node object met twice is converted once.
    """
    # keyed by id, holding the node itself: a node parsed from text lives only as long as
    # its parent's fields, and a freed node's id may be reused by the next parse
    memo: dict[int, tuple[Any, Any]] = {}
    todo: list[tuple[Any, Any, list[Any] | None]] = [(root, None, None)]
    out: list[Any] = []
    while todo:
        node, info, kids = todo.pop()
        if kids is None:
            if id(node) in memo:
                out.append(memo[id(node)][1])
                continue
            info, kids = expand(node)
            todo.append((node, info, kids))
            todo.extend((kid, None, None) for kid in reversed(kids))
            continue
        done = out[len(out) - len(kids) :] if kids else []
        del out[len(out) - len(kids) :]
        result = build(info, done)
        memo[id(node)] = (node, result)
        out.append(result)
    return out[0]
