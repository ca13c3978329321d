"""The package's import graph, read from the source with ``ast``: no cycles, a verifier that
depends on nothing of the prover, and test support that only tests import.

Every ``import`` and ``from ... import`` of a module counts, inside functions too, except under
``if TYPE_CHECKING:``. ``from jaxstark.x import y`` is an edge to the module ``jaxstark.x.y`` when
there is one, else to ``jaxstark.x``; an edge to a package is an edge to its ``__init__``.
Importing ``jaxstark.a.b`` also runs the ``__init__`` of ``jaxstark.a``: that is an edge too,
except from a module inside ``jaxstark.a`` (its package is already being imported). The
top-level package is the one every module is inside: only an explicit ``import jaxstark`` (or
``from jaxstark import name``) is an edge to it, and no module that ``import jaxstark`` loads may
have one (the command line, which it does not load, may).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "jaxstark"
TOP = "jaxstark"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (source file, is a package)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


MODULES = _modules()


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST):
    """Every import statement, outside ``if TYPE_CHECKING:`` bodies."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _explicit(name: str) -> set[str]:
    """The modules of jaxstark that module ``name``'s import statements name."""
    path, package = MODULES[name]
    here = name if package else name.rpartition(".")[0]  # the package relative imports start from
    out = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        base = here
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        source = ".".join(filter(None, (base if node.level else "", node.module or "")))
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            out.add(sub if sub in MODULES else source)
    return {m for m in out if m == TOP or m.startswith(TOP + ".")}


def _ancestors(name: str) -> list[str]:
    """The packages above ``name``, innermost last (``jaxstark`` itself left out)."""
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(2, len(parts))]


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of jaxstark that importing it runs."""
    graph = {}
    for name in MODULES:
        own = {name, *_ancestors(name)} if MODULES[name][1] else set(_ancestors(name))
        edges = set()
        for target in _explicit(name):
            if target in MODULES:
                edges.add(target)
            edges.update(p for p in _ancestors(target) if p not in own and p in MODULES)
        graph[name] = edges - {name}
    return graph


GRAPH = _graph()


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path whose last node is its first, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def _reach(start: str) -> dict[str, str]:
    """Every module ``start`` imports, transitively: module -> the module that imports it."""
    seen, todo = {start: start}, [start]
    while todo:
        node = todo.pop()
        for nxt in GRAPH[node]:
            if nxt not in seen:
                seen[nxt] = node
                todo.append(nxt)
    return seen


def _chain(seen: dict[str, str], end: str) -> str:
    out = [end]
    while seen[out[-1]] != out[-1]:
        out.append(seen[out[-1]])
    return " -> ".join(reversed(out))


def test_the_graph_is_read():
    assert len(MODULES) > 30 and MODULES["jaxstark.memory"][1] and not MODULES["jaxstark.memory.plan"][1]
    assert {"jaxstark.memory.plan", "jaxstark.field.goldilocks", "jaxstark.field"} <= GRAPH["jaxstark.prover"]
    assert "jaxstark.memory" not in GRAPH["jaxstark.memory.plan"]  # its own package


def test_the_helpers_find_a_cycle_and_its_path():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_module_the_package_loads_imports_the_package():
    """``jaxstark/__init__.py`` imports the library: a module of it importing ``jaxstark`` is a cycle."""
    loaded = _reach(TOP)
    bad = sorted(_chain(loaded, name) for name in loaded if name != TOP and TOP in GRAPH[name])
    assert not bad, f"modules that import {TOP!r} while it imports them: " + "; ".join(bad)


def test_the_import_graph_has_no_cycle():
    cycle = _cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", ["jaxstark.verifier"])
def test_the_verifier_depends_on_nothing_of_the_prover(module):
    forbidden = ("jaxstark.prover", "jaxstark.schedule", "jaxstark.rounds", "jaxstark.memory", "jaxstark.testing",
                 "jaxstark.cli", "jaxstark.examples")  # fmt: skip
    seen = _reach(module)
    bad = sorted(m for m in seen if any(m == f or m.startswith(f + ".") for f in forbidden))
    assert not bad, f"{module} imports " + "; ".join(_chain(seen, m) for m in bad)


def test_only_test_support_imports_test_support():
    bad = [
        f"{name} -> {target}"
        for name, targets in sorted(GRAPH.items())
        if not name.startswith("jaxstark.testing")
        for target in sorted(targets)
        if target == "jaxstark.testing" or target.startswith("jaxstark.testing.")
    ]
    assert not bad, "outside jaxstark.testing: " + "; ".join(bad)
