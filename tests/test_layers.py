"""The package's structure, checked by tools rather than habit (docs/layers.md).

- ``lint-imports`` keeps the layer contracts in ``pyproject.toml`` (function-local imports count);
- no import cycle among the package's rooms (its top-level modules and sub-packages);
- function-local imports of the package itself do not grow (a ratchet toward the goal of 60:
  lower it when you remove some, never raise it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "imaginebench"
LOCAL_IMPORTS_CEILING = 54


def test_the_layer_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycle_among_the_rooms():
    import grimp

    graph = grimp.build_graph("imaginebench", cache_dir=None)
    edges: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if _room(module) != _room(imported) and _room(module) != "__init__":
                edges[_room(module)].add(_room(imported))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    cycles = sorted((a, b) for a in edges for b in edges[a] if reaches(b, a))
    assert cycles == [], f"rooms that import each other (directly or around a loop): {cycles}"


def _local_imports() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("imaginebench"):
                        found.append(f"{path.relative_to(PACKAGE)}:{inner.lineno}")
                    elif isinstance(inner, ast.Import) and any(a.name.startswith("imaginebench") for a in inner.names):
                        found.append(f"{path.relative_to(PACKAGE)}:{inner.lineno}")
    return sorted(set(found))


def test_function_local_imports_of_the_package_do_not_grow():
    found = _local_imports()
    assert len(found) <= LOCAL_IMPORTS_CEILING, (
        f"{len(found)} function-local imports of imaginebench (ceiling {LOCAL_IMPORTS_CEILING}); import at the "
        f"top of the module unless it loads an optional extra lazily. Newest: {found[-5:]}")
