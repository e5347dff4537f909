"""`reverie sweep` and `reverie gc` end to end on real backends (SQLite, embedded Chroma,
the real embedding model). The CLI runs on the system clock, so the memories are
written 200 days in the past: decayed far below both thresholds (0.5 * 2^(-200/14)
is about 3e-5)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reverie.adapters.cli.app import app
from reverie.core.ports import WriteBatch
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
runner = CliRunner()


def run(home: Path, *args: str) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    return result.stdout


def export(home: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in run(home, "export").splitlines() if line.strip()]


def test_sweep_and_gc_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = datetime.now(UTC) - timedelta(days=200)
    with open_engine(home) as e:
        for i, text in enumerate(
            ["the bus was late again", "we ordered pizza for the team", "it rained all day"]
        ):
            e.observe(text, at=old + timedelta(hours=i), importance=0.5)
        e.observe("my daughter's name is Lia", importance=0.5)  # fresh: stays

    before = export(home)
    out = run(home, "sweep", "--dry-run")
    assert "dry run" in out and "3 memories" in out
    assert export(home) == before

    run(home, "sweep")
    records = [r["record"] for r in export(home) if r["type"] == "memory"]
    by_status: dict[str, int] = {}
    for r in records:
        assert isinstance(r, dict)
        by_status[str(r["status"])] = by_status.get(str(r["status"]), 0) + 1
    assert by_status == {"active": 2, "archived": 3}  # Lia + the synthesis; 3 distilled

    out = run(home, "gc", "--dry-run")
    assert "dry run" in out
    assert len([r for r in export(home) if r["type"] == "memory"]) == 5
    out = run(home, "gc")
    assert "members collected 0" in out  # the synthesis is new: its members stay 30 days
    assert len([r for r in export(home) if r["type"] == "memory"]) == 5
    with open_engine(home) as e:  # the synthesis made 31 days ago
        (node,) = e.memories(tiers=["synthesis"])
        aged = node.evolve(created_at=node.created_at - timedelta(days=31))
        e.store.commit(WriteBatch(e.default_namespace, (aged,)))
    out = run(home, "gc")
    assert "members collected 3" in out
    texts = [r["record"]["text"] for r in export(home) if r["type"] == "memory"]  # type: ignore[index]
    assert len(texts) == 2 and any("pizza" in t for t in texts)  # kept inside the synthesis
