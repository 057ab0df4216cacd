"""The house rules, checked on the whole package (docs/architecture.md).

* **Layers**: foundation (the root's private helpers and ``errors``) < accountant <
  mechanisms < calibrate < ledger < algorithms < interop < model_selection < audit < the
  top (``dpledger``, the CLI): no module imports a higher layer, not even inside a function.
* **No cycle**: the module-level import graph is acyclic.
* **No private name crosses a layer**: an underscore module or name of one layer is
  never imported by another (the foundation's modules are the shared helpers); no module
  outside ``dpledger/ledger`` touches a private attribute of the ledger or a reservation.
* **No isinstance ladders** on release classes outside ``accountant/events.py``: dispatch
  is a handler table or a method.
* **One idea per file**: no file above ~800 lines except those that hold one idea.
* **Every exception and warning in** ``dpledger/errors.py``.

Each scanner is shown to fail on a bad example, so the rules can fail.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import dpledger
from dpledger import events as ev
from dpledger.ledger import Ledger, Reservation

PACKAGE = Path(dpledger.__file__).parent
FOUNDATION = {
    "_public",
    "errors",
    "_validation",
    "_numerics",
    "_format",
    "_table",
    "_solve",
    "_rng",
    "_mpcontext",
}
LAYERS = [
    "foundation",
    "accountant",
    "mechanisms",
    "calibrate",
    "ledger",
    "algorithms",
    "interop",
    "model_selection",
    "audit",
    "top",
]
#: files that hold one idea and may exceed the length limit
ONE_IDEA = {"algorithms/_eigen.py", "accountant/pld/_accountant.py", "algorithms/_data.py"}
MAX_LINES = 800
#: internal exceptions that never reach a user (each caller maps them to errors.py's)
INTERNAL_EXCEPTIONS = {
    "_solve.py": {"NoSafeValueError"},
    "ledger/persistence.py": {"NotAtHeadError"},  # a store catches it, and replays
}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return "top"
    return "foundation" if parts[1] in FOUNDATION else parts[1]


def _imports(module: str, path: Path, *, top_level_only: bool = False) -> list[tuple[str, str]]:
    """(imported module, imported name or "") for every dpledger import in ``path``."""
    tree = ast.parse(path.read_text())
    nodes: list[ast.AST] = []
    if top_level_only:
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes.append(node)
    else:
        nodes = list(ast.walk(tree))
    found = []
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + [base] * bool(base))
            if base.split(".")[0] != "dpledger":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full, "") if full in MODULES else (base, alias.name))
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.split(".")[0] == "dpledger"]
    return found


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def upward_imports(modules: dict[str, Path]) -> list[str]:
    """Imports of a higher layer, anywhere in a module."""
    bad = []
    for module, path in modules.items():
        for target, _ in _imports(module, path):
            if LAYERS.index(_layer(target)) > LAYERS.index(_layer(module)):
                bad.append(f"{module} -> {target}")
    return bad


def private_crossings(modules: dict[str, Path]) -> list[str]:
    """Private modules or names imported from another layer (the foundation excepted)."""
    bad = []
    for module, path in modules.items():
        for target, name in _imports(module, path):
            if _layer(target) in (_layer(module), "foundation"):
                continue
            if any(_private(p) for p in target.split(".")[1:]) or _private(name):
                bad.append(f"{module} -> {target}" + (f".{name}" if name else ""))
    return bad


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Cycles of the module-level import graph (strongly connected components > 1)."""
    graph = {
        m: {t for t, _ in _imports(m, p, top_level_only=True) if t in modules and t != m}
        for m, p in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def connect(node: str) -> None:  # Tarjan, iterative enough for this package's depth
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    return cycles


RELEASE_CLASSES = {
    name
    for name, obj in vars(ev).items()
    if inspect.isclass(obj) and issubclass(obj, ev.Event) and obj is not ev.Event
}


def isinstance_ladders(paths: list[Path]) -> list[str]:
    """Functions testing two or more release classes with isinstance (a hand-written ladder)."""
    bad = []
    for path in paths:
        for func in ast.walk(ast.parse(path.read_text())):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            tested: set[str] = set()
            for node in ast.walk(func):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                    target = node.args[1]
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    for name in names:
                        label = getattr(name, "attr", None) or getattr(name, "id", None)
                        if label in RELEASE_CLASSES:
                            tested.add(label)
            if len(tested) >= 2:
                bad.append(f"{path.name}:{func.lineno} {func.name} {sorted(tested)}")
    return bad


def _private_attributes(cls: type) -> set[str]:
    names = {n for n in vars(cls) if _private(n)}
    for node in ast.walk(ast.parse(inspect.getsource(cls))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and _private(node.attr)
        ):
            names.add(node.attr)
    return names


LEDGER_PRIVATE = _private_attributes(Ledger) | _private_attributes(Reservation)


def ledger_privates_used(paths: list[Path]) -> list[str]:
    """``x._name`` for a private attribute of the ledger or a reservation (x not self/cls)."""
    bad = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in LEDGER_PRIVATE
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                bad.append(f"{path.name}:{node.lineno} .{node.attr}")
    return bad


def exceptions_outside_errors(paths: list[Path]) -> list[str]:
    """Public exception or warning classes defined anywhere but errors.py."""
    bad = []
    for path in paths:
        relative = str(path.relative_to(PACKAGE))
        if relative == "errors.py":
            continue
        allowed = INTERNAL_EXCEPTIONS.get(relative, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or _private(node.name) or node.name in allowed:
                continue
            bases = " ".join(ast.unparse(b) for b in node.bases)
            if any(word in bases for word in ("Error", "Exception", "Warning")):
                bad.append(f"{relative}:{node.lineno} {node.name}")
    return bad


# -- the rules on the package -------------------------------------------------------------


def test_no_import_points_up():
    assert upward_imports(MODULES) == []


def test_the_import_graph_has_no_cycle():
    assert import_cycles(MODULES) == []


def test_no_private_name_crosses_a_layer():
    assert private_crossings(MODULES) == []


def test_no_module_outside_the_ledger_touches_its_private_names():
    outside = [p for m, p in MODULES.items() if _layer(m) != "ledger"]
    assert {"_state", "_pending", "_lock", "_handler", "_currency"} <= LEDGER_PRIVATE
    assert ledger_privates_used(outside) == []


def test_no_isinstance_ladders_on_release_classes():
    paths = [p for m, p in MODULES.items() if m != "dpledger.accountant.events"]
    assert isinstance_ladders(paths) == []


def test_files_hold_one_idea():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in MODULES.values()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert {k: v for k, v in long.items() if k not in ONE_IDEA} == {}


def test_every_exception_and_warning_lives_in_errors():
    assert exceptions_outside_errors(list(MODULES.values())) == []


# -- the scanners can fail ---------------------------------------------------------------


def _fake(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    out = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "_") + ".py")
        path.write_text(text)
        out[name] = path
    return out


def test_the_scanners_find_violations(tmp_path):
    fake = _fake(
        tmp_path,
        {
            "dpledger.accountant.fake": "from dpledger.ledger import Ledger\n",
            "dpledger.ledger": "from dpledger.accountant._pairs import Pair\n",
            "dpledger.ledger.a": "import dpledger.ledger.b\n",
            "dpledger.ledger.b": "import dpledger.ledger.a\n",
        },
    )
    assert upward_imports(fake) == ["dpledger.accountant.fake -> dpledger.ledger"]
    assert private_crossings(fake) == ["dpledger.ledger -> dpledger.accountant._pairs.Pair"]
    assert ["dpledger.ledger.a", "dpledger.ledger.b"] in import_cycles(fake)
    ladder = tmp_path / "ladder.py"
    ladder.write_text(
        "def f(a):\n    if isinstance(a, ev.Laplace):\n        return 1\n"
        "    return isinstance(a, (ev.Gaussian, ev.PureDP))\n"
    )
    assert isinstance_ladders([ladder]) == ["ladder.py:1 f ['Gaussian', 'Laplace', 'PureDP']"]
    peek = tmp_path / "peek.py"
    peek.write_text("def f(ledger):\n    return ledger._state, self._state\n")
    assert ledger_privates_used([peek]) == ["peek.py:2 ._state"]


def test_the_exception_scan_finds_a_stray_class(tmp_path, monkeypatch):
    stray = PACKAGE / "algorithms" / "base.py"  # a real path, so relative_to works
    text = "class StrayError(ValueError):\n    pass\n\nclass _Internal(Exception):\n    pass\n"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: text)
    assert exceptions_outside_errors([stray]) == ["algorithms/base.py:1 StrayError"]


@pytest.mark.parametrize("module", ["dpledger.accountant.costs", "dpledger.ledger.planning"])
def test_layers_are_assigned(module):
    assert module in MODULES and _layer(module) in LAYERS
