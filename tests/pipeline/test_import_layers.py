"""The package floors: no import circles in fairgate/, tasks/, flows/, cli/, and imports point down only
(cli -> flows -> tasks -> fairgate), counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLOORS = {"fairgate": 0, "tasks": 1, "flows": 2, "cli": 3}


def _modules() -> dict[str, Path]:
    modules = {}
    for package in FLOORS:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from a import b`` counts a.b when that is a module)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            for target in filter(None, map(resolve, targets)):
                if target != name and not name.startswith(target + "."):  # a package's own __init__ is fine
                    graph[name].add(target)
    return graph


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path start -> ... -> start, if there is one (depth-first)."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for target in graph[node]:
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_import_graph_is_found() -> None:
    graph = _import_graph()
    assert (
        "fairgate.engine.cube" in graph["fairgate.engine.auc"] or "fairgate.engine.auc" in graph["fairgate.engine.cube"]
    )
    assert "tasks.inputs.io" in graph["tasks.inputs.align"]


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_no_import_circles(package: str) -> None:
    graph = _import_graph()
    cycles = [cycle for name in graph if name.split(".")[0] == package if (cycle := _cycle_from(name, graph))]
    assert cycles == []


def test_imports_point_down() -> None:
    graph = _import_graph()
    upward = [
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if FLOORS[target.split(".")[0]] > FLOORS[name.split(".")[0]]
    ]
    assert upward == []
