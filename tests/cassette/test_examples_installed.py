"""Each example in `examples/` runs after the install its README gives, and nothing more.

A fresh venv (no system site-packages) gets the project from a clean copy of the source
tree, the way a user installs it, one face at a time; after each install the face's
example runs in that venv as a script (tests/cassette/example_runs.py) against a loopback
server that replays the example's cassette (vcrpy's matching: method, path, body):

    1. reverie[local,llamaindex]   -> examples/llamaindex_agent.py
    2. + reverie[langchain]        -> examples/langchain_agent.py
    3. + reverie[langgraph]        -> examples/langgraph_agent.py

`local` is the default embedding model, which every example's `open_engine()` uses. One
venv is shared and grows, because a fresh install costs minutes on two cores (the `local`
extra alone is about 1.5 GB): a missing dependency still fails where it matters, since
each stage adds only packages that the later examples may use, and the llamaindex stage
runs before any LangChain package is there (checked). pip's cache makes a repeat run
offline-capable. Recording (`scripts/record-cassettes`) runs the same examples against the
live LLM server instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cassette.replay_server import replaying
from tests.cassettes import LLM_MODEL, llm_base_url, recording

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "example_runs.py"
INSTALL_TIMEOUT = 1800  # seconds; a first install on a loaded 2-core machine takes minutes
# the first stage installs torch and the model into a fresh venv: minutes, not seconds
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT + 600)]

# (example, the extras installed before it runs, its cassette); run in this order
STAGES = [
    ("llamaindex_agent", ("local", "llamaindex"), "llamaindex_example"),
    ("langchain_agent", ("langchain",), "langchain_agent_example"),
    ("langgraph_agent", ("langgraph",), "langgraph_agent_example"),
]


class UserVenv:
    """A venv holding only what `pip install reverie[...]` brings, grown extra by extra."""

    def __init__(self, base: Path) -> None:
        self.source = base / "source"
        # a clean copy: pip builds in the source tree, and a build/ left by an earlier
        # build would carry files the sources no longer have
        shutil.copytree(ROOT, self.source, ignore=shutil.ignore_patterns(
            ".*", "build", "dist", "*.egg-info", "__pycache__", "benchmarks", "cassettes",
            "tests", "examples",
        ))  # fmt: skip
        self.dir = base / "venv"
        r = subprocess.run([sys.executable, "-m", "venv", str(self.dir)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stderr
        self.python = self.dir / "bin" / "python"
        self.extras: list[str] = []

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}  # fmt: skip
        env["PATH"] = f"{self.dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return {**env, **extra}

    def install(self, extras: tuple[str, ...]) -> None:
        new = [e for e in extras if e not in self.extras]
        if not new:
            return
        r = subprocess.run(
            [str(self.python), "-m", "pip", "install", "--quiet", "--no-compile",
             "--disable-pip-version-check", f"{self.source}[{','.join(new)}]"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=self.env(),
        )  # fmt: skip
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        self.extras += new

    def importable(self, module: str) -> bool:
        r = subprocess.run(
            [str(self.python), "-c", f"import importlib.util as u; "
             f"print(u.find_spec({module!r}) is not None)"],
            capture_output=True, text=True, timeout=120, env=self.env(),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r.stdout.strip() == "True"

    def run_example(self, name: str, home: Path, base_url: str) -> dict[str, Any]:
        r = subprocess.run(
            [str(self.python), str(DRIVER), name, str(home)],
            capture_output=True, text=True, timeout=1800, cwd=home.parent,
            env=self.env(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="not-needed",
                         REVERIE_CHAT_MODEL=LLM_MODEL, HF_HUB_OFFLINE="1"),
        )  # fmt: skip
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
        result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
        return result


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UserVenv]:
    yield UserVenv(tmp_path_factory.mktemp("user-venv"))


@pytest.mark.parametrize(("example", "extras", "cassette"), STAGES,
                         ids=[s[0] for s in STAGES])  # fmt: skip
def test_example_runs_after_its_extra_alone(
    user_venv: UserVenv, tmp_path: Path, example: str, extras: tuple[str, ...], cassette: str
) -> None:
    user_venv.install(extras)
    assert (ROOT / "examples" / f"{example}.py").is_file()
    # what a user of the face has, and nothing of the faces not yet installed
    if "langchain" not in user_venv.extras and "langgraph" not in user_venv.extras:
        assert not user_venv.importable("langchain_core")
        assert not user_venv.importable("langchain_openai")
    if "llamaindex" in user_venv.extras:
        assert user_venv.importable("llama_index.llms.openai_like")
    assert not user_venv.importable("vcr") and not user_venv.importable("pytest")

    home = tmp_path / "home"
    if recording():  # the live server: nothing is written, the example just has to run
        result = user_venv.run_example(example, home, llm_base_url())
    else:
        with replaying(cassette) as server:
            result = user_venv.run_example(example, home, server.url)
        assert server.misses == [], f"requests not in {cassette}.yaml: {server.misses}"
        # every recorded exchange was asked for, in a body equal to the recorded one:
        # the installed example sent what the recorded one sent
        assert server.cassette.all_played

    if example == "llamaindex_agent":
        first, second = result["answers"]
        assert first.strip() and second.strip()
        assert "user: I live in Lisbon and I love green tea." in result["stored"]
    elif example == "langchain_agent":
        assert "The user's favourite drink is green tea" in result["stored"]
        if not recording():
            assert "green tea" in result["answer"]  # the recorded answer
    else:
        assert "The user said: What do I like to drink?" in result["stored"]
        if not recording():
            assert "green tea" in result["answer"]
