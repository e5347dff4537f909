"""The shape of core, checked from its source: no import cycle between its modules, no
module importing another's private names, and the end of the lifecycle (deletion,
eviction) and the REM cycle free of the engine (they get their dependencies explicitly)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"


def _imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Each core module's relative imports: (module, names imported from it)."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(CORE.glob("*.py")):
        found: list[tuple[str, list[str]]] = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [a.name for a in node.names]
                if node.module:
                    found.append((node.module.split(".")[0], names))
                else:
                    found.extend((n, []) for n in names)
        out[path.stem] = found
    return out


def test_core_modules_import_no_private_names() -> None:
    bad = [
        f"{mod} imports {target}.{name}"
        for mod, found in _imports().items()
        for target, names in found
        for name in names
        if name.startswith("_")
    ]
    assert bad == []


def test_core_has_no_import_cycle() -> None:
    graph = {mod: {t for t, _ in found} for mod, found in _imports().items()}
    done: set[str] = set()

    def visit(mod: str, path: list[str]) -> None:
        assert mod not in path, " -> ".join([*path, mod])
        if mod in done:
            return
        for dep in sorted(graph.get(mod, ())):
            if dep in graph:
                visit(dep, [*path, mod])
        done.add(mod)

    for mod in graph:
        visit(mod, [])


def test_the_lifecycle_parts_do_not_know_the_engine() -> None:
    imports = _imports()
    for mod in ("deletion", "eviction", "consolidation", "commit", "triggers", "clustering"):
        assert "engine" not in {t for t, _ in imports[mod]}, mod
