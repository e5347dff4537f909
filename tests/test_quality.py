"""The house rules, checked on every run: lint, strict types on core, and layering."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


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
    r = run(
        py,
        "-c",
        "from reverie.core import Policy, Memory, ManualClock;"
        "from reverie.core.engine import MemoryEngine;"
        "from reverie.core.scoring import decay_value;"
        "from reverie.core.models import Kind;"
        "print(round(decay_value(0.5, Kind.EPISODIC, 14, Policy()), 3))",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0.25"
    # an adapter needing a missing extra says which extra to install
    r = run(py, "-c", "from reverie.integrations.embedders import LocalEmbedder; LocalEmbedder()")
    assert r.returncode != 0 and "reverie[local]" in r.stderr
