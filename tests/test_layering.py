"""The modules of ``batchenv`` form layers: no import circle between them.

The graph is read from the source with ``ast`` (no import runs): an edge ``a -> b`` for every
``import``/``from ... import`` of a ``batchenv`` module in ``a``, at module level or inside a
function. An import deferred into a function still makes ``a`` depend on ``b``, so it counts:
a circle through one is a circle all the same, only hidden until the function first runs.
A package's ``__init__`` is the module named after the package; importing ``p.m`` counts as
an edge to ``p.m``, not to ``p`` (Python runs ``p/__init__`` first, but that is not a
dependency of the importer's code).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "batchenv"

#: Circles known and owned elsewhere, as sorted tuples of module names (each with the
#: file to fix named in a comment). Empty: every circle fails the test.
KNOWN_CIRCLES: set[tuple[str, ...]] = set()


def module_files(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's ``__init__``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def _known_module(name: str, modules: dict) -> str | None:
    """The module ``name`` is, or lives in (``batchenv.core.BatchEnv`` -> ``batchenv.core``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Dotted names an import statement may refer to (a ``from`` import: each name under
    its module, which :func:`_known_module` trims back to a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: from the importing module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{alias.name}" for alias in node.names]


@cache
def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its source)."""
    modules = module_files(package)
    root = package.name
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for name in _imported_names(node, module, is_package):
                if name == root or name.startswith(root + "."):
                    target = _known_module(name, modules)
                    if target is not None and target != module:
                        targets.add(target)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def a_path(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One circle through ``members`` (a component of :func:`circles`), as the modules in
    import order with the first repeated at the end, for the failure message."""
    inside = set(members)
    start = members[0]
    path, seen = [start], {start}
    node = start
    while True:
        options = sorted(graph[node] & inside)
        if start in options:
            return [*path, start]
        fresh = [m for m in options if m not in seen]
        node = fresh[0] if fresh else options[0]
        if node in seen:  # closed a smaller loop not through start: report that one
            return [*path[path.index(node):], node]
        path.append(node)
        seen.add(node)


def test_the_graph_sees_module_level_relative_and_deferred_imports():
    graph = import_graph()
    assert "batchenv.core" in graph["batchenv.sharded"]  # from batchenv.core import ...
    assert "batchenv.sharded._shard" in graph["batchenv.sharded"]
    # an import inside a function (sharded's process backend is loaded on demand)
    assert "batchenv.sharded._process" in graph["batchenv.sharded"]
    assert "batchenv.envs.pong" in graph["batchenv.envs"]


def test_the_circle_finder_names_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert a_path(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_relative_imports_resolve(tmp_path):
    package = tmp_path / "batchenv"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .sub import thing\n")
    (package / "sub" / "__init__.py").write_text("from . import leaf\n")
    (package / "sub" / "leaf.py").write_text(
        "def f():\n    from .. import top\n    from ..sub import other\n")
    (package / "top.py").write_text("")
    (package / "sub" / "other.py").write_text("")
    graph = import_graph(package)
    assert graph["batchenv"] == {"batchenv.sub"}
    assert graph["batchenv.sub"] == {"batchenv.sub.leaf"}
    assert graph["batchenv.sub.leaf"] == {"batchenv.top", "batchenv.sub.other"}


def test_no_import_circle_between_modules():
    graph = import_graph()
    found = [c for c in circles(graph) if tuple(c) not in KNOWN_CIRCLES]
    if found:
        pytest.fail("import circles in batchenv (each a -> b -> ... -> a; an import inside "
                    "a function counts):\n" + "\n".join(
                        "  " + " -> ".join(a_path(graph, c)) for c in found))


def test_known_circles_are_still_circles():
    """An entry of KNOWN_CIRCLES that was fixed must leave the list."""
    assert KNOWN_CIRCLES <= {tuple(c) for c in circles(import_graph())}
