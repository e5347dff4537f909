"""reverie as a user gets it: the public names, a light `import reverie`, and types.

`from reverie import open_engine, MemoryEngine, Policy` is the front door; importing it
must not load a backend, the embedding model or a framework. The wheel ships `py.typed`,
so a user's own `mypy --strict` checks their calls against reverie's signatures: the test
installs the project the way pip does for a user (not editable, which mypy cannot follow)
and type-checks tests/typing/user_script.py against it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_SCRIPT = ROOT / "tests" / "typing" / "user_script.py"
HEAVY = (
    "chromadb", "torch", "sentence_transformers", "redis", "typer", "rich", "tiktoken",
    "langchain", "langchain_core", "langchain_classic", "langgraph", "llama_index", "openai",
    "sqlite3", "sklearn",
)  # fmt: skip
FACES = {
    "reverie.adapters.langchain": {
        "ReverieRetriever", "memory_tools", "ChatModelSynthesizer", "LangChainEmbedder",
    },
    "reverie.adapters.langgraph": {"ReverieStore"},
    "reverie.adapters.llamaindex": {
        "ReverieMemoryBlock", "ReverieRetriever", "LlamaIndexSynthesizer", "ReverieEmbedding",
        "LlamaIndexEmbedder",
    },
}  # fmt: skip


def run(*cmd: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **env}
    )


def loaded_after(statement: str, cwd: Path) -> list[str]:
    probe = (
        f"import sys; {statement}; "
        f"print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
        "or m.startswith(('reverie.integrations', 'reverie.adapters.cli')))))"
    )
    r = run(sys.executable, "-c", probe, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return [m for m in r.stdout.strip().split(",") if m]


# ---------------------------------------------------------------- the public names


def test_the_front_door_names() -> None:
    import reverie
    from reverie import MemoryEngine, Policy, open_engine
    from reverie.core.engine import MemoryEngine as CoreEngine
    from reverie.integrations import open_engine as factory_open_engine

    assert MemoryEngine is CoreEngine and open_engine is factory_open_engine
    assert Policy() == reverie.DEFAULT_POLICY
    assert reverie.__version__ == importlib.metadata.version("reverie")
    assert sorted(reverie.__all__) == sorted(set(reverie.__all__))
    missing = [name for name in reverie.__all__ if not hasattr(reverie, name)]
    assert missing == []
    assert {"open_engine", "default_data_dir", "MemoryEngine", "Policy", "RecallResult",
            "Observation", "Hit", "Memory", "ManualClock", "ReverieError"} <= set(reverie.__all__)
    import reverie.core.errors as errors

    error_types = {n for n, v in vars(errors).items() if isinstance(v, type)
                   and issubclass(v, Exception) and v.__module__ == errors.__name__}
    assert error_types <= set(reverie.__all__)
    with pytest.raises(AttributeError):
        _ = reverie.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("face", sorted(FACES))
def test_each_face_exports_its_names(face: str) -> None:
    import importlib

    module = importlib.import_module(face)
    assert set(module.__all__) >= FACES[face]
    assert all(getattr(module, name).__module__.startswith(face) for name in module.__all__)
    assert set(dir(module)) >= FACES[face]


@pytest.mark.parametrize(
    ("framework", "face", "name", "extra"),
    [
        ("langchain_core", "reverie.adapters.langchain", "ReverieRetriever", "langchain"),
        ("langgraph", "reverie.adapters.langgraph", "ReverieStore", "langgraph"),
        ("llama_index", "reverie.adapters.llamaindex", "ReverieMemoryBlock", "llamaindex"),
    ],
)
def test_a_face_name_without_its_framework_names_the_extra(
    framework: str, face: str, name: str, extra: str, tmp_path: Path
) -> None:
    probe = (
        f"import sys; sys.modules[{framework!r}] = None\n"  # as if not installed
        f"import {face}\n"
        "from reverie import MissingExtra\n"
        "try:\n"
        f"    from {face} import {name}\n"
        "except MissingExtra as e:\n"
        "    print(e)\n"
    )
    r = run(sys.executable, "-c", probe, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"reverie[{extra}]" in r.stdout


def test_the_legacy_langchain_memory_keeps_its_path() -> None:
    from reverie.adapters.langchain.memory import ReverieMemory

    assert ReverieMemory.__name__ == "ReverieMemory"


def test_every_source_package_is_in_the_wheel() -> None:
    """pyproject lists the packages by hand (the folders are mapped onto `reverie.*`), so a
    new subpackage left off the list would be missing for users while tests pass here."""
    setuptools_config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools_config["package-dir"]
    on_disk = {
        ".".join([package, *init.parent.relative_to(ROOT / folder).parts])
        for package, folder in package_dir.items()
        for init in (ROOT / folder).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert sorted(setuptools_config["packages"]) == sorted(on_disk)


# ---------------------------------------------------------------- import cost


def test_import_reverie_loads_no_backend_or_framework(tmp_path: Path) -> None:
    assert loaded_after("import reverie", tmp_path) == []
    assert loaded_after("from reverie import MemoryEngine, Policy, Memory", tmp_path) == []


def test_face_packages_import_without_their_framework(tmp_path: Path) -> None:
    statement = "import reverie.adapters.langchain, reverie.adapters.langgraph, " \
        "reverie.adapters.llamaindex"  # fmt: skip
    assert loaded_after(statement, tmp_path) == []


def test_open_engine_loads_the_integrations_on_first_use(tmp_path: Path) -> None:
    loaded = loaded_after("from reverie import open_engine", tmp_path)
    assert "reverie.integrations.factory" in loaded
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_from_the_repo_root_subpackages_come_from_their_folders() -> None:
    """`./reverie/` is on sys.path when Python runs from the repository root (as pytest
    does); `reverie.core` and the rest must still resolve to core/, integrations/ and
    adapters/."""
    r = run(sys.executable, "-c",
            "import reverie, reverie.core, reverie.integrations, reverie.adapters.cli as c;"
            "print(reverie.__file__, reverie.core.__file__, reverie.integrations.__file__,"
            " c.__file__)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    paths = [Path(p) for p in r.stdout.split()]
    assert paths == [
        ROOT / "reverie" / "__init__.py",
        ROOT / "core" / "__init__.py",
        ROOT / "integrations" / "__init__.py",
        ROOT / "adapters" / "cli" / "__init__.py",
    ]


# ---------------------------------------------------------------- types, as installed


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module's mypy runs: the dependencies are analysed once."""
    return tmp_path_factory.mktemp("mypy") / ".mypy_cache"


@pytest.fixture(scope="module")
def user_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare interpreter whose site-packages holds reverie installed from the project as
    a user gets it (not editable), and, behind it, this environment's dependencies."""
    base = tmp_path_factory.mktemp("installed")
    venv = base / "venv"
    r = run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    assert r.returncode == 0, r.stderr
    python = venv / "bin" / "python"
    r = run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    assert r.returncode == 0, r.stderr
    target = Path(r.stdout.strip())
    # from a clean copy: pip builds in the source tree, and a build/ left there by an
    # earlier build would carry files (py.typed among them) the sources no longer have
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "benchmarks", "cassettes", "tests",
    ))  # fmt: skip
    r = run(sys.executable, "-m", "pip", "install", "-q", "--no-deps",
            "--disable-pip-version-check", "--target", str(target), str(source))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (target / "zz-dependencies.pth").write_text("\n".join(deps) + "\n")
    return python


def mypy_user_script(
    python: Path, workdir: Path, cache: Path
) -> subprocess.CompletedProcess[str]:
    script = workdir / USER_SCRIPT.name
    shutil.copyfile(USER_SCRIPT, script)
    return run(sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python),
               "--cache-dir", str(cache), "--no-error-summary",
               script.name, cwd=workdir)  # fmt: skip


def installed_reverie(python: Path) -> Path:
    r = run(str(python), "-c", "import reverie; print(reverie.__file__)", cwd=python.parent)
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip()).parent


@pytest.mark.slow
def test_the_wheel_ships_py_typed_and_the_demo_data(user_python: Path) -> None:
    package = installed_reverie(user_python)
    assert (package / "py.typed").is_file()
    assert (package / "core" / "engine.py").is_file()
    assert sorted(p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__") \
        == ["adapters", "core", "integrations"]
    assert list((package / "adapters" / "cli" / "data").glob("*.jsonl"))


@pytest.mark.slow
def test_a_users_script_passes_mypy_strict(
    user_python: Path, tmp_path: Path, mypy_cache: Path
) -> None:
    r = mypy_user_script(user_python, tmp_path, mypy_cache)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_without_py_typed_mypy_refuses_the_package(
    user_python: Path, tmp_path: Path, mypy_cache: Path
) -> None:
    marker = installed_reverie(user_python) / "py.typed"
    kept = marker.read_bytes()
    marker.unlink()
    try:
        r = mypy_user_script(user_python, tmp_path, mypy_cache)
    finally:
        marker.write_bytes(kept)
    assert r.returncode != 0
    assert "py.typed" in r.stdout, r.stdout


@pytest.mark.slow
def test_the_front_door_modules_pass_mypy_strict(tmp_path: Path, mypy_cache: Path) -> None:
    """`reverie/__init__.py` and the face packages' lazy exports are typed as strictly as
    core. The folders are laid out as one package (symlinks) so mypy sees `reverie.*`."""
    package = tmp_path / "tree" / "reverie"
    package.mkdir(parents=True)
    for name in ("__init__.py", "py.typed"):
        (package / name).symlink_to(ROOT / "reverie" / name)
    for folder in ("core", "integrations", "adapters"):
        (package / folder).symlink_to(ROOT / folder, target_is_directory=True)
    modules = ["reverie", "reverie.adapters.lazy", *sorted(FACES)]
    r = run(sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
            "--cache-dir", str(mypy_cache),
            *[arg for m in modules for arg in ("-m", m)],
            cwd=package.parent, MYPYPATH=str(package.parent))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
