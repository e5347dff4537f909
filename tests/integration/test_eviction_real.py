"""Sweep, GC and the forget cascade on real parts: a SQLite file, embedded Chroma and the
real all-MiniLM-L6-v2 model. The privacy check reads the raw bytes of every file the
store and the vector index left on disk."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.core import ManualClock, Status, Tier
from reverie.core.engine import MemoryEngine
from reverie.core.ports import WriteBatch
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SECRET = "QZ7781234"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def engine(home: Path) -> Iterator[MemoryEngine]:
    e = open_engine(home, clock=ManualClock(T0), namespace="user-a")
    yield e
    e.close()


def _files_containing(root: Path, needle: str) -> list[str]:
    low = needle.lower().encode()
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*")
        if p.is_file() and low in p.read_bytes().lower()
    )


def test_forget_removes_the_text_from_the_synthesis_everywhere(
    engine: MemoryEngine, home: Path
) -> None:
    secret = engine.observe(f"my passport number is {SECRET} and it expires soon")
    renew = engine.observe("I renewed my passport at the Lisbon consulate")
    queue = engine.observe("the consulate queue took two hours")
    other_ns = engine.observe(f"unrelated note {SECRET}", namespace="user-b")
    assert max(m.importance for m in (secret, renew, queue)) <= 0.8  # 14 d half-life or faster
    engine.clock.advance(days=60)  # type: ignore[attr-defined]

    report = engine.sweep(namespace="user-a")
    assert report.syntheses == 1 and report.archived == 3
    (node,) = engine.memories(tiers=[Tier.SYNTHESIS])
    assert SECRET in node.text
    assert engine.recall("what is the passport number?", k=1)[0].id == node.id

    deleted = engine.forget(secret.id)

    assert deleted == 1  # the memory; its synthesis is rebuilt from the other two
    rebuilt = engine.get(node.id)
    assert SECRET not in rebuilt.text and "Lisbon consulate" in rebuilt.text
    assert rebuilt.derived_from == {renew.id, queue.id}
    for m in (renew, queue):
        back = engine.get(m.id)
        assert back.status is Status.ARCHIVED and back.consolidated_into == node.id
    hits = engine.recall(f"I renewed my passport at the consulate, number {SECRET}", k=10,
                         include_history=True)
    assert hits.hits and all(SECRET not in h.text for h in hits)
    assert all(SECRET not in str(r) for r in engine.export(namespace="user-a"))
    assert engine.vectors.ids("user-a") == {node.id, renew.id, queue.id}
    # the other namespace is untouched
    assert engine.get(other_ns.id, namespace="user-b").is_active
    engine.forget(other_ns.id, namespace="user-b")
    engine.close()
    # nothing on disk keeps the text: not the record, not the lexical index, not Chroma
    assert _files_containing(home, SECRET) == []


def test_sweep_then_gc_on_sqlite_with_hand_computed_days(engine: MemoryEngine) -> None:
    # importance 0.5, episodic: below 0.15 after 14 * log2(0.5/0.15) = 24.3175 days and
    # below 0.01 after 14 * log2(0.5/0.01) = 79.0140 days (from the last access)
    a = engine.observe("the cafeteria served lentils today", importance=0.5)
    b = engine.observe("the elevator on floor three was broken", importance=0.5)
    held = engine.observe("contract 7 was signed by both parties", importance=0.5)
    engine.store.commit(
        WriteBatch("user-a", (engine.get(held.id).evolve(retention_exempt=True),))
    )
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    clock.set(T0 + timedelta(days=24.30))
    assert engine.sweep().candidates == 0
    clock.set(T0 + timedelta(days=24.33))
    swept = engine.sweep()
    assert swept.candidates == 3 and swept.archived == 3
    clock.set(T0 + timedelta(days=79.00))
    assert engine.gc().deleted == 0
    clock.set(T0 + timedelta(days=79.03))
    report = engine.gc()
    assert sorted(report.deleted_ids) == sorted([a.id, b.id]) and report.kept_exempt == 1
    assert engine.get(held.id).status is Status.ARCHIVED
    (node,) = engine.memories(tiers=[Tier.SYNTHESIS])
    assert node.is_active and "lentils" in node.text  # distilled, not lost
