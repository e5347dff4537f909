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


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (absolute names; relative imports stay in the package)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_integrations_never_import_adapters() -> None:
    def offenders(folder: str, banned: tuple[str, ...]) -> list[str]:
        return [
            str(p.relative_to(ROOT))
            for p in (ROOT / folder).rglob("*.py")
            if any(m.startswith(banned) for m in imported_modules(p))
        ]

    assert offenders("integrations", ("reverie.adapters",)) == []
    assert offenders("core", ("reverie.integrations", "reverie.adapters")) == []


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
    `_x` is not a private name of a class of the same module (a module may use its own
    privates; another module may not)."""

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

    own = frozenset().union(
        *(own_private_names(n) for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    )
    yield from visit(tree, own)


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
                new.append(f"{rel}:{line}: {what}")
    assert new == [], "reaches into private names:\n" + "\n".join(new)
