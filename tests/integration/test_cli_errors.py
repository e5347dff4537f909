"""The `reverie` command meets bad input with one error line and exit code 2, never a
traceback, and stores nothing. Run as a real process (bytes in argv, files on disk),
on SQLite and embedded Chroma with the real embedding model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from reverie.adapters.cli.app import app

pytestmark = pytest.mark.slow

runner = CliRunner()


def refused(result: Result, words: str) -> None:
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert len(lines) == 1 and words in lines[0], result.output


def cli(home: Path, *args: str) -> Result:
    return runner.invoke(app, ["--home", str(home), *args])


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    for name in ("REVERIE_STORE", "REVERIE_VECTORS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 40)
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"text": "Ines moved to Porto", "speaker": "user"}) + "\n",
                     encoding="utf-8")
    assert cli(home, "ingest", str(notes)).exit_code == 0
    before = cli(home, "export").stdout

    refused(cli(home, "recall", "Porto", "-k", str(2**70)), "max_recall_k")
    refused(cli(home, "recall", "Porto \udced\udca0\udc80"), "surrogate")
    refused(cli(home, "ingest", str(binary)), "not UTF-8")
    refused(cli(home, "import", str(binary)), "not UTF-8")
    refused(cli(home, "--vectors", "ftp://x", "stats"), "ftp://x")
    refused(cli(home, "consolidate", "--strategy", "bogus"), "bogus")
    refused(cli(home, "recall", "Porto", "--as-of", "0001-01-01"), "as_of")

    assert not (tmp_path / "ftp:").exists()
    assert cli(home, "export").stdout == before  # nothing was stored by the refusals


def test_a_surrogate_in_argv_is_one_line_in_a_real_process(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on the command line reach Python as lone surrogates."""
    argv: list[str | bytes] = [sys.executable, "-m", "reverie.adapters.cli.app",
                               "--home", str(tmp_path), "remember", b"a\xed\xb0\x80",
                               "lives in", "b"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERIE_")}
    result = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                            timeout=300, check=False)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        "error: subject holds a lone surrogate ('\\udced' at position 1), which is not "
        "valid Unicode text: decode the source bytes with errors='replace'"
    ], result.stderr
