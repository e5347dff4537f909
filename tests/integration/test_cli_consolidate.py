"""`reverie consolidate` on a real store (SQLite, embedded Chroma, the real model): a dry
run that writes nothing, then `--if-due` (the store has been idle for months) running a
cycle whose report and whose effect on the store agree."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reverie.adapters.cli.app import app
from reverie.core import ManualClock, Status, Tier
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow

runner = CliRunner()
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)  # long before the system clock: all decayed

TOPICS = [
    ["ugh the train to Leeds was late again this morning",
     "the train to Leeds was late again this morning, ugh",
     "this morning the Leeds train was late again"],
    ["the coffee machine on the second floor is broken again",
     "second floor coffee machine broken again"],
]


def run(home: Path, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["--home", str(home), "consolidate", "--json", *args])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    payload = json.loads(result.stdout)
    assert isinstance(payload, dict)
    return payload


def statuses(home: Path) -> dict[str, tuple[str, str | None]]:
    engine = open_engine(home, clock=ManualClock(T0))
    try:
        return {m.id: (m.status.value, m.consolidated_into) for m in engine.memories()}
    finally:
        engine.close()


def test_consolidate_dry_run_then_if_due(tmp_path: Path) -> None:
    home = tmp_path / "home"
    engine = open_engine(home, clock=ManualClock(T0))
    try:
        n = 0
        for topic in TOPICS:
            for text in topic:
                engine.observe(text, source=f"turn:{n}")
                n += 1
        engine.observe("Remember: my passport expires in 2031", pinned=True, source="pin")
    finally:
        engine.close()
    before = statuses(home)

    preview = run(home, "--dry-run")
    assert preview["dry_run"] is True and len(preview["clusters"]) == 2
    assert not any(c["committed"] for c in preview["clusters"])
    assert statuses(home) == before  # nothing written

    done = run(home, "--if-due")
    assert done["dry_run"] is False
    assert done["nodes_before"] == 6 and done["nodes_after"] == 3
    assert done["compression_ratio"] == 2.0
    assert [c["synthesis_id"] for c in done["clusters"]] == [
        c["synthesis_id"] for c in preview["clusters"]
    ]  # the dry run previewed exactly what ran
    after = statuses(home)
    for c in done["clusters"]:
        assert c["committed"] and not c["fell_back"]
        for member in c["members"]:
            assert after[member] == ("consolidated", c["synthesis_id"])
        assert after[c["synthesis_id"]] == ("active", None)

    engine = open_engine(home, clock=ManualClock(T0))
    try:
        node = engine.get(done["clusters"][0]["synthesis_id"])
        assert node.tier is Tier.SYNTHESIS and node.status is Status.ACTIVE
        hit = engine.recall("was the Leeds train late?", k=1, reinforce=False)[0]
        assert hit.memory.tier is Tier.SYNTHESIS and hit.sources == {"turn:0", "turn:1", "turn:2"}
    finally:
        engine.close()
