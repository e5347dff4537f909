"""Every command the CLI tells a user to type works as typed.

The hints are read from what the CLI shows (the top-level help and the demo's closing
panel), not copied into the test, so a hint that changes is tested as it now reads. Each
runs on real backends (SQLite, embedded Chroma, the real embedding model); `DIR` in a hint
is a directory of the test's own.
"""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from reverie.adapters.cli.app import app

app_module = importlib.import_module("reverie.adapters.cli.app")  # the package exports `app`

pytestmark = pytest.mark.slow

HINT = re.compile(r"`(reverie(?: [^`]*)?)`")

runner = CliRunner()


def ok(result: Result, command: str) -> Result:
    assert result.exit_code == 0, (
        f"`{command}` exited {result.exit_code}\n{result.output}\n{result.exception!r}"
    )
    return result


def run_as_typed(command: str, directory: Path) -> Result:
    argv = shlex.split(command.replace("DIR", shlex.quote(str(directory))))
    assert argv[0] == "reverie", command
    return ok(runner.invoke(app, argv[1:]), command)


def test_the_demo_and_help_hints_work_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    out = Console(width=4000, record=True, color_system=None)
    monkeypatch.setattr(app_module, "out", out)
    help_hints = HINT.findall(app.info.help or "")
    assert help_hints == ["reverie demo"]
    for command in help_hints:  # the first thing a user runs, in a temporary home
        run_as_typed(command, tmp_path / "unused")
    demo_hints = HINT.findall(out.export_text())
    assert "reverie demo --home DIR" in demo_hints, demo_hints
    assert len(demo_hints) >= 4, demo_hints

    kept = tmp_path / "kept data"  # a space, so the hint's quoting is tested too
    for command in demo_hints:
        out = Console(width=4000, record=True, color_system=None)
        monkeypatch.setattr(app_module, "out", out)
        run_as_typed(command, kept)
        if command.startswith("reverie demo"):
            assert "Every hit says why it ranked" in out.export_text()
            assert (kept / "memory.db").is_file()
        if " stats" in command:
            assert "memories" in out.export_text()
        if " history " in command:
            assert "Berlin" in out.export_text()


def test_demo_takes_home_and_namespace_on_either_side(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "out", Console(width=4000, record=True, color_system=None))
    home = tmp_path / "h"
    ok(runner.invoke(app, ["demo", "--home", str(home), "-n", "user/maya"]), "demo --home -n")
    refused = runner.invoke(app, ["--home", str(home), "demo", "--namespace", "user/maya"])
    assert refused.exit_code == 2  # the demo needs an empty namespace: the same one it filled
    assert "already holds memories" in refused.output
    again = runner.invoke(app, ["--home", str(home), "-n", "user/maya", "demo",
                                "--namespace", "user/other"])
    ok(again, "demo in another namespace of the same home")
