"""Storage that shrinks, on real parts (a SQLite file, embedded Chroma, the real
all-MiniLM-L6-v2 model):

- GC collects a synthesis that a later synthesis absorbed, once that one stood the grace
  period and the absorbed one decayed below the floor; its compact provenance, its own
  collected members' provenance and its stored members move up to the node that holds
  its text now, so a privacy forget still reaches that node;
- the pages a deletion frees go back to the file system (the file gets smaller);
- the sweep groups its candidates with the vectors they were stored with, and its
  extractive digests take their members' mean: the model is asked for nothing.

Decay, by hand: a semantic synthesis of importance 0.5 (half-life 90 d, lambda not
scaled between the 0.3 and 0.8 thresholds) falls below gc_salience 0.01 at
90 * log2(50) = 507.9 d; an episodic trace of 0.5 (14 d) at 79.0 d.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock, Memory, Status, Tier, vector_sync
from reverie.core.engine import MemoryEngine
from reverie.core.erasure import PROVENANCE_KEY
from reverie.core.errors import NotFound
from reverie.core.models import Kind, new_id
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NS = "default"
SEMANTIC_GC_DAYS = 90 * 5.643856  # 507.9 d: 0.5 * 2^(-t/90) = 0.01


def _consolidate(engine: MemoryEngine, members: Sequence[Memory], text: str) -> Memory:
    """A synthesis node as the REM cycle commits one: members consolidated into it."""
    fresh = [engine.get(m.id) for m in members]
    node = Memory(
        id=new_id(),
        namespace=NS,
        kind=Kind.SEMANTIC,
        tier=Tier.SYNTHESIS,
        text=text,
        created_at=engine.clock.now(),
        importance=max(m.importance for m in fresh),
        sources=frozenset().union(*(m.sources for m in fresh)),
        derived_from=frozenset(m.id for m in fresh),
    )
    puts = (node, *(m.evolve(status=Status.CONSOLIDATED, consolidated_into=node.id) for m in fresh))
    engine.store.commit(WriteBatch(NS, puts))
    ctx = engine._ctx
    vector_sync.index(ctx, NS, [(node, ctx.embed([node.text])[0])])
    return node


def _chain(engine: MemoryEngine) -> dict[str, Memory]:
    """a, b and the kept d (retention-exempt) folded into s1; s1 and c later into s2."""
    a = engine.observe("the greenhouse door sticks in the rain", source="chat-a", importance=0.5)
    b = engine.observe("the greenhouse needs a new hinge", source="chat-b", importance=0.5)
    d = engine.observe("the greenhouse was built in 2019", source="chat-d", importance=0.5)
    engine.store.commit(WriteBatch(NS, (engine.get(d.id).evolve(retention_exempt=True),)))
    s1 = _consolidate(engine, [a, b, d], "The greenhouse door sticks; it needs a new hinge.")
    engine.clock.advance(days=7)  # type: ignore[attr-defined]
    c = engine.observe("bought a hinge for the greenhouse door", source="chat-c", importance=0.5)
    s2 = _consolidate(engine, [s1, c], "The greenhouse door sticks; a new hinge was bought.")
    return {"a": a, "b": b, "c": c, "d": d, "s1": s1, "s2": s2}


def test_gc_collects_an_absorbed_synthesis_and_its_lineage_moves_up(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0))
    m = _chain(engine)
    engine.clock.advance(days=SEMANTIC_GC_DAYS - 8)  # type: ignore[attr-defined]
    first = engine.gc()  # the traces went (79 d); s1 is at 0.0102, above the floor
    assert first.members_collected == 3
    assert {x.id for x in engine.memories()} == {m["s1"].id, m["s2"].id, m["d"].id}
    engine.clock.advance(days=2)  # type: ignore[attr-defined]

    report = engine.gc()

    assert report.members_collected == 1 and report.repointed == 1
    assert {x.id for x in engine.memories()} == {m["s2"].id, m["d"].id}
    kept = engine.get(m["d"].id)  # exempt: stays, now under the node that holds its text
    assert kept.status is Status.CONSOLIDATED and kept.consolidated_into == m["s2"].id
    node = engine.get(m["s2"].id)
    prov = node.metadata[PROVENANCE_KEY]
    assert set(prov) == {m["a"].id, m["b"].id, m["c"].id, m["s1"].id}
    assert prov[m["s1"].id]["text_hash"] == content_hash(m["s1"].text)
    assert prov[m["s1"].id]["kind"] == "semantic"
    assert prov[m["s1"].id]["sources"] == ["chat-a", "chat-b", "chat-d"]
    assert prov[m["a"].id]["sources"] == ["chat-a"]  # s1's own provenance, moved up
    assert "hinge" not in str(prov)  # hashes, never the text
    assert m["s1"].id not in engine.vectors.ids(NS)

    # a privacy forget of a member collected two levels down still reaches s2
    engine.forget(m["a"].id)
    with pytest.raises(NotFound):
        engine.get(m["s2"].id)
    assert [x.text for x in engine.memories()] == [m["d"].text]
    assert engine.get(m["d"].id).status is Status.ACTIVE  # the lone survivor, restored
    engine.close()


def test_an_absorbed_synthesis_that_is_pinned_is_not_collected(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0))
    m = _chain(engine)
    engine.pin(m["s1"].id)
    engine.clock.advance(days=SEMANTIC_GC_DAYS + 30)  # type: ignore[attr-defined]
    engine.gc()
    assert {x.id for x in engine.memories()} == {m["s1"].id, m["s2"].id, m["d"].id}
    assert engine.get(m["d"].id).consolidated_into == m["s1"].id
    engine.close()


def _pages(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        return (
            int(conn.execute("PRAGMA page_count").fetchone()[0]),
            int(conn.execute("PRAGMA freelist_count").fetchone()[0]),
        )


def test_pages_freed_by_gc_go_back_to_the_file_system(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0))
    many = [
        engine.observe(
            f"note {i}: the boiler pressure read {i / 10:.1f} bar on the gauge "
            "in the cellar next to the old oak shelves",
            importance=0.5,
        )
        for i in range(240)
    ]
    keep = engine.observe("the boiler was serviced in March", importance=0.5)
    _consolidate(engine, many, "The boiler pressure was read 240 times in the cellar.")
    engine.flush()
    db = Path(engine.store.path)
    engine.store.erase_residue()  # the WAL into the file: its size, before
    before_pages, _ = _pages(db)
    before_bytes = os.path.getsize(db)
    engine.clock.advance(days=120)  # type: ignore[attr-defined]

    assert engine.gc().members_collected == 240

    pages, free = _pages(db)
    assert free == 0  # no page left on the free list: all handed back
    # 240 rows of about 1.6 KB (record and kept half-precision embedding) left: over
    # half the file
    assert pages < before_pages / 2
    engine.close()
    assert os.path.getsize(db) < before_bytes / 2
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0 + timedelta(days=120)))
    assert engine.get(keep.id).text == keep.text
    engine.close()


def test_compact_gives_a_file_made_before_free_pages_the_mode(tmp_path: Path) -> None:
    db = tmp_path / "h" / "memory.db"
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0))
    engine.observe("the boiler was serviced in March")
    engine.close()
    with sqlite3.connect(db) as conn:  # as a file made before: auto_vacuum off
        conn.execute("PRAGMA auto_vacuum = NONE")
        conn.execute("VACUUM")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    engine = open_engine(tmp_path / "h", clock=ManualClock(T0))
    engine.purge_residue(compact=True)
    engine.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental


class Asked:
    """The real model, recording every text it is asked to embed."""

    def __init__(self, real: LocalEmbedder) -> None:
        self.real = real
        self.name, self.dimension = real.name, real.dimension
        self.texts: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.real.embed(texts)


def test_the_sweep_groups_with_stored_vectors_and_asks_the_model_for_nothing(
    tmp_path: Path,
) -> None:
    model = Asked(LocalEmbedder().load())
    engine = open_engine(tmp_path / "h", embedder=model, clock=ManualClock(T0))
    said = [
        "we talked about the garden again",
        "more questions on the garden",
        "quick chat about the garden",
        "the printer jammed this morning",
        "the kettle boiled at lunch",
        "a bird sang outside in the afternoon",
    ]
    for i, text in enumerate(said):
        engine.observe(text, importance=0.2, at=T0 + timedelta(minutes=i))
    engine.flush()
    engine.clock.advance(days=60)  # type: ignore[attr-defined]
    model.texts.clear()

    report = engine.sweep()

    assert report.syntheses >= 1 and report.archived >= 2
    digests = {x.text for x in engine.memories() if x.tier is Tier.SYNTHESIS}
    assert len(digests) == report.syntheses
    # no stored text embedded again, and no digest: an extractive digest's vector is its
    # members' mean (vector_sync.node_vectors)
    assert model.texts == []
    ids = {x.id for x in engine.memories() if x.tier is Tier.SYNTHESIS}
    assert ids <= engine.vectors.ids(engine.default_namespace)
    engine.close()


def test_maintenance_due_reads_stored_vectors_for_its_duplicate_sample(tmp_path: Path) -> None:
    model = Asked(LocalEmbedder().load())
    engine = open_engine(tmp_path / "h", embedder=model, clock=ManualClock(T0))
    said = [f"the garden hose leaks at joint {i}" for i in range(8)]
    for i, text in enumerate(said):
        engine.observe(text, at=T0 + timedelta(minutes=i))
    engine.flush()
    model.texts.clear()

    engine.maintenance_due()

    assert model.texts == []  # every sampled memory's vector was already stored
    engine.close()
