"""The package's module graph: no import loops, counting imports inside functions.

A loop hides which module owns what: each side reaches into the other at call time, and a
newcomer cannot read one without the other. Imports inside functions count, since they are
the usual way such a loop is kept from failing at import time.
"""

import ast
import pathlib

import swe

ROOT = pathlib.Path(swe.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of swe it imports}``, from every relative import in its source
    (module level, inside functions and under ``TYPE_CHECKING`` alike)."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            named = [f"{target}.{a.name}" for a in node.names]
            # "from . import module" imports that module, not the package's other ones.
            modules = [c for c in named if c in mods]
            for c in modules if modules and not node.module else [target, *named]:
                if c in mods and c != m:
                    graph[m].add(c)
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, loops = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return loops


def test_import_loops_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_loops(graph) == [["a", "b", "c"]]
    assert import_loops({"a": {"b"}, "b": set()}) == []


def test_graph_sees_function_level_imports():
    graph = import_graph()
    assert "swe.model" in graph and "swe.calibration.sampling" in graph
    # cli imports the calibration subpackage inside a function only
    assert "swe.calibration" in graph["swe.cli"]


def test_no_import_loops():
    loops = import_loops(import_graph())
    assert loops == [], f"modules that import each other in a loop: {loops}"
