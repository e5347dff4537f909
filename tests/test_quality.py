"""The house rules, checked on every run: lint, strict types on core, and layering."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_is_clean() -> None:
    r = run(sys.executable, "-m", "ruff", "check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_core_passes_mypy_strict() -> None:
    r = run(sys.executable, "-m", "mypy")  # pyproject: strict, files = ["core"]
    assert r.returncode == 0, r.stdout + r.stderr


def test_core_imports_nothing_but_numpy() -> None:
    probe = (
        "import sys, reverie.core, reverie.core.engine, reverie.core.retrieval;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'chromadb','torch','sentence_transformers','typer','rich','tiktoken','sqlite3',"
        "'langchain_core','llama_index','redis','sklearn'} "
        "or m.startswith(('reverie.integrations','reverie.adapters')));"
        "print(','.join(bad))"
    )
    r = run(sys.executable, "-c", probe)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"reverie.core pulled in: {r.stdout}"


def test_integrations_never_import_adapters() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "integrations").rglob("*.py")
        if "reverie.adapters" in p.read_text()
    ]
    core_offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "core").rglob("*.py")
        if "reverie.integrations" in p.read_text() or "reverie.adapters" in p.read_text()
    ]
    assert offenders == [] and core_offenders == []


def test_core_works_in_a_venv_with_only_numpy(tmp_path: Path) -> None:
    """The promise to users: `import reverie.core` needs numpy and nothing else."""
    wheel_dir = tmp_path / "wheels"
    r = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), ".")
    assert r.returncode == 0, r.stderr
    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", str(venv)).returncode == 0
    py = str(venv / "bin" / "python")
    wheel = next(wheel_dir.glob("reverie-*.whl"))
    r = run(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "numpy")
    assert r.returncode == 0, r.stderr
    r = run(py, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
            str(wheel))
    assert r.returncode == 0, r.stderr
    # away from the repository root, where the source folder ./reverie would shadow the wheel
    r = run(
        py,
        "-c",
        "import reverie;"
        "from reverie.core import Policy, Memory, ManualClock;"
        "from reverie.core.engine import MemoryEngine;"
        "from reverie.core.scoring import decay_value;"
        "from reverie.core.models import Kind;"
        "print(round(decay_value(0.5, Kind.EPISODIC, 14, Policy()), 3))",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0.25"
    # an adapter needing a missing extra says which extra to install
    r = run(py, "-c", "from reverie.integrations.embedders import LocalEmbedder; LocalEmbedder()",
            cwd=tmp_path)
    assert r.returncode != 0 and "reverie[local]" in r.stderr


def test_import_contracts_hold() -> None:
    """pyproject's [tool.importlinter] contracts: adapters > integrations > core, core free
    of backends and frameworks, integrations free of frameworks, each face independent."""
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "lint-imports")], cwd=ROOT, capture_output=True,
        text=True, timeout=300, env={**os.environ, "PYTHON": sys.executable},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "BROKEN" not in r.stdout and " KEPT" in r.stdout, r.stdout


# ---------------------------------------------------------------- private names

# Where code outside tests reaches into another module's private names. Each entry is a
# debt to pay by giving the name a public home; add nothing to it.
KNOWN_PRIVATE_REACHES: dict[str, set[str]] = {
    "core/eviction.py": {"engine._retrying", "engine._index", "engine._embed_memories",
                         "engine._ns"},
    "core/synthesis.py": {"from .text import _DATE"},
    "integrations/redis/async_store.py": {
        "from reverie.integrations.redis.store import _ACQUIRE",
        "from reverie.integrations.redis.store import _DEGREES",
        "from reverie.integrations.redis.store import _EDGES",
        "from reverie.integrations.redis.store import _RELEASE",
        "from reverie.integrations.redis.store import _check_ttl",
        "from reverie.integrations.redis.store import _check_window",
        "from reverie.integrations.redis.store import _safe",
        "store._guard",
    },
    "benchmarks/commit_speed.py": {"store._conn", "proxy._conn", "C._execute_plan",
                                   "C._plan_cluster"},
    "benchmarks/knn_speed.py": {"from reverie.core.clustering import _candidate_knn"},
    "benchmarks/latency_tiers.py": {"from reverie.core.engine import _vector_meta",
                                    "engine._indexer", "engine._prepare"},
}  # fmt: skip
CHECKED_FOLDERS = ("reverie", "core", "integrations", "adapters", "examples", "benchmarks")


def is_private(name: str) -> bool:
    """`_x`, but not a dunder (`__file__`) or an enum-style sunder (`_value2member_map_`)."""
    return name.startswith("_") and not name.endswith("_")


def own_private_names(cls: ast.ClassDef) -> set[str]:
    """The private names a class defines: its methods, class attributes, `self._x = ...`."""
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for node in ast.walk(cls):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                names.add(t.id)
            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                names.add(t.attr)
    return {n for n in names if is_private(n)}


def private_reaches(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """`from m import _x`, `import m._x`, and `obj._x` where `obj` is not `self`/`cls` and
    `_x` is not a private name of the class the code sits in."""

    def visit(node: ast.AST, allowed: frozenset[str]) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.ClassDef):
            allowed = allowed | own_private_names(node)
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if any(is_private(part) for part in (node.module or "").split(".")):
                yield node.lineno, f"from {module} import ..."
            for alias in node.names:
                if is_private(alias.name):
                    yield node.lineno, f"from {module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(is_private(part) for part in alias.name.split(".")):
                    yield node.lineno, f"import {alias.name}"
        elif (
            isinstance(node, ast.Attribute)
            and is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id not in ("self", "cls")
            and node.attr not in allowed
        ):
            yield node.lineno, f"{node.value.id}.{node.attr}"
        for child in ast.iter_child_nodes(node):
            yield from visit(child, allowed)

    yield from visit(tree, frozenset())


def test_private_reach_detection() -> None:
    source = (
        "from a.b import _x, y\n"
        "import c._d\n"
        "from ._e import f\n"
        "import m\n"
        "m._g()\n"
        "class K:\n"
        "    def __init__(self) -> None:\n"
        "        self._own = 1\n"
        "    def __eq__(self, other: object) -> bool:\n"
        "        return isinstance(other, K) and other._own == self._own and other._h\n"
        "print(m.__file__, K._value2member_map_)\n"
    )
    found = [what for _, what in private_reaches(ast.parse(source))]
    assert found == [
        "from a.b import _x", "import c._d", "from ._e import ...", "m._g", "other._h",
    ]  # fmt: skip


def test_no_module_reaches_into_another_modules_private_names() -> None:
    """A module uses another's public names only (tests may reach in)."""
    new: list[str] = []
    for folder in CHECKED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, what in private_reaches(ast.parse(path.read_text(), rel)):
                if what not in KNOWN_PRIVATE_REACHES.get(rel, set()):
                    new.append(f"{rel}:{line}: {what}")
    assert new == [], "reaches into private names:\n" + "\n".join(new)
