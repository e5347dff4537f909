"""Embedded Chroma's HNSW files shrink back to the live vectors after GC collects most of
a namespace, on real parts (a SQLite file, embedded Chroma).

hnswlib keeps a slot in `data_level0.bin` for every vector ever added; a delete only marks
it. So a namespace of 1,200 vectors of which GC collects 1,100 keeps files sized for 1,200
until the index rebuilds it from its 100 live vectors (`chroma.compact`). These tests hold
the files to a bound computed from the live count, recall to the same ids, the other
namespace to its own files, and a kill at each step of the rebuild to an index that holds
every live vector.

The embedder is `tests.fakes.BagOfWordsEmbedder` (deterministic hashing, 256 dimensions):
the tests are about where vectors are stored, not how well they rank.

Slot size, by hand (hnswlib): 256 float32 (1,024 bytes) + a label (8) + the level-0 links
(4-byte count + 2 * max_neighbors 16 * 4 = 132) = 1,164 bytes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from reverie.core import ManualClock, Memory, Status, Tier, vector_sync
from reverie.core.engine import MemoryEngine
from reverie.core.models import Kind, new_id
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.ports import WriteBatch
from reverie.integrations import open_engine
from reverie.integrations.chroma import compact
from reverie.integrations.chroma.collections import collection_name
from tests.fakes import BagOfWordsEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NS = "garden"
OTHER = "kitchen"
SLOT = 256 * 4 + 8 + 4 + 2 * 16 * 4  # 1,164 bytes per HNSW element
SYNC = 1000  # Chroma persists the HNSW files every this many writes
MANY = 1100  # collected; with KEEP, past Chroma's sync threshold: the files persist
KEEP = 100
GC_DAYS = 120  # past the 30 d grace; an episodic 0.5 decays below 0.01 at 79 d
QUERIES = ("bed number 7 in the garden", "the shed roof leaks", "tile 52 and gutter 96")


def _open(home: Path) -> MemoryEngine:
    return open_engine(home, embedder=BagOfWordsEmbedder(), clock=ManualClock(T0))


def _fill(engine: MemoryEngine) -> list[str]:
    """MANY memories folded into one synthesis (collectable after the grace period), KEEP
    kept active, and a few memories in the other namespace; returns the kept ids."""
    many = [
        engine.observe(
            f"bed number {i} in the garden has rose {i + 1000} by the wall",
            namespace=NS,
            importance=0.5,
        )
        for i in range(MANY)
    ]
    kept = [
        engine.observe(
            f"the shed roof leaks near beam {i} after rain by tile {7 * i + 3} "
            f"and gutter {13 * i + 5}",
            namespace=NS,
            importance=0.9,
        )
        for i in range(KEEP)
    ]
    for i in range(20):
        engine.observe(f"the kitchen tap {i} drips", namespace=OTHER)
    engine.flush()
    node = Memory(
        id=new_id(),
        namespace=NS,
        kind=Kind.SEMANTIC,
        tier=Tier.SYNTHESIS,
        text="The garden beds each have a rose by the wall.",
        created_at=engine.clock.now(),
        importance=0.5,
        derived_from=frozenset(m.id for m in many),
    )
    fresh = list(engine.store.get_many(NS, [m.id for m in many]).values())
    assert len(fresh) == MANY
    puts = (
        node,
        *(
            m.evolve(status=Status.CONSOLIDATED, consolidated_into=node.id, importance=0.3)
            for m in fresh
        ),
    )
    engine.store.commit(WriteBatch(NS, puts))
    ctx = engine._ctx
    vector_sync.index(ctx, NS, [(node, ctx.embed([node.text])[0])])
    return [m.id for m in kept]


def _segment(home: Path, namespace: str) -> Path:
    """The namespace's HNSW segment directory, from Chroma's own catalogue."""
    db = home / "vectors" / "chroma.sqlite3"
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id "
            "WHERE c.name = ? AND s.scope = 'VECTOR'",
            (collection_name(namespace),),
        ).fetchone()
    assert row is not None, f"no collection for {namespace!r}"
    return home / "vectors" / str(row[0])


def _bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def _segment_dirs(home: Path) -> set[str]:
    return {p.name for p in (home / "vectors").iterdir() if p.is_dir()}


def _collections(home: Path) -> list[str]:
    with sqlite3.connect(home / "vectors" / "chroma.sqlite3") as conn:
        return sorted(r[0] for r in conn.execute("SELECT name FROM collections"))


def _top10(pairs: list[tuple[str, float]]) -> dict[float, set[str]]:
    """A query's 10 nearest as similarity -> ids. Many texts here differ in one number
    only, so their similarities tie and the index picks among them in its own order: the
    tie at the 10th similarity is left out, as any of its members may fill the last
    places. Similarities are rounded to 1e-5: float32 sums come out in another order in
    another graph."""
    pairs = sorted(pairs, key=lambda p: -p[1])[:10]
    by_score: dict[float, set[str]] = {}
    for i, sim in pairs:
        by_score.setdefault(round(sim, 5), set()).add(i)
    if len(pairs) == 10:
        by_score[round(pairs[-1][1], 5)] = set()
    return by_score


def _nearest(engine: MemoryEngine) -> list[dict[float, set[str]]]:
    """Each query's 10 nearest vectors, as the index finds them."""
    return [
        _top10([(h.id, h.similarity) for h in engine.vectors.query(NS, q, 10)])
        for q in BagOfWordsEmbedder().embed(list(QUERIES))
    ]


def _exact(engine: MemoryEngine) -> list[dict[float, set[str]]]:
    """Each query's 10 nearest live vectors, by comparing it with every one of them."""
    stored = engine.vectors.stored_vectors(NS, sorted(engine.vectors.ids(NS)))  # type: ignore[attr-defined]
    ids = list(stored)
    matrix = np.stack([stored[i] for i in ids]).astype(np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    out = []
    for q in BagOfWordsEmbedder().embed(list(QUERIES)):
        sims = matrix @ (q / np.linalg.norm(q))
        out.append(_top10(list(zip(ids, sims.tolist(), strict=True))))
    return out


def _within(found: dict[float, set[str]], exact: dict[float, set[str]]) -> bool:
    """Every id found at a similarity is at that similarity in the exact answer."""
    return all(ids <= exact.get(sim, set()) or not ids for sim, ids in found.items())


def _found_share(found: dict[float, set[str]], exact: dict[float, set[str]]) -> float:
    """The share of the exact nearest ids that the index found."""
    want = set().union(*exact.values())
    return len(set().union(*found.values()) & want) / len(want)


def test_gc_of_most_of_a_namespace_shrinks_its_hnsw_files(tmp_path: Path) -> None:
    home = tmp_path / "h"
    engine = _open(home)
    kept = _fill(engine)
    engine.close()
    before = _bytes(_segment(home, NS))
    other_dir = _segment(home, OTHER)
    other_before = sorted((p.name, p.stat().st_size) for p in other_dir.iterdir())
    assert before >= SYNC * SLOT  # a slot for every vector written before the persist

    engine = _open(home)
    engine.clock.advance(days=GC_DAYS)  # type: ignore[attr-defined]
    assert engine.gc(namespace=NS).members_collected == MANY
    live = engine.vectors.count(NS)
    engine.close()

    assert live == KEEP + 1  # the kept memories and the synthesis
    after = _bytes(_segment(home, NS))
    # hnswlib's block holds at least its initial 100 slots and grows by 1.2 at a time:
    # at most 2 x max(live, 100) slots, plus a header and the pickled labels
    assert after <= 2 * max(live, 100) * SLOT + 64 * 1024
    assert after < before / 5
    # the old segment's directory is gone: only the two namespaces' segments remain
    assert _segment_dirs(home) == {_segment(home, NS).name, other_dir.name}
    assert _collections(home) == sorted([collection_name(NS), collection_name(OTHER)])
    # the other namespace's files are untouched
    assert sorted((p.name, p.stat().st_size) for p in other_dir.iterdir()) == other_before

    engine = _open(home)
    assert engine.vectors.count(OTHER) == 20
    assert set(kept) <= engine.vectors.ids(NS)
    assert not engine.stats(namespace=NS)["vector_repair_needed"]
    engine.close()


def test_the_rebuilt_index_finds_the_same_memories(tmp_path: Path) -> None:
    home = tmp_path / "h"
    engine = _open(home)
    _fill(engine)
    engine.close()
    # GC under a limit it cannot reach (1: only a namespace emptied of vectors): the
    # deletes happen, the rebuild does not
    policy = DEFAULT_POLICY.replace(
        maintenance=replace(DEFAULT_POLICY.maintenance, index_compact_deleted_fraction=1.0)
    )
    engine = open_engine(home, embedder=BagOfWordsEmbedder(), clock=ManualClock(T0), policy=policy)
    engine.clock.advance(days=GC_DAYS)  # type: ignore[attr-defined]
    assert engine.gc(namespace=NS).members_collected == MANY
    seg = _segment(home, NS)
    before = _nearest(engine)
    exact = _exact(engine)
    ids = engine.vectors.ids(NS)
    freed = engine.vectors.compact(NS, 0.5)  # type: ignore[attr-defined]
    assert freed > 0
    assert _segment(home, NS) != seg
    assert engine.vectors.ids(NS) == ids
    after = _nearest(engine)
    # the rebuilt graph finds the nearest live vectors, and everything the graph full of
    # deleted slots found (it can miss some: hnswlib walks past deleted nodes). HNSW is
    # approximate: among texts that differ in one number only, its neighbour selection
    # may leave one of several tied vectors off the path, so it finds nine in ten at least
    assert all(_within(a, e) for a, e in zip(after, exact, strict=True))
    assert all(_found_share(a, e) >= 0.9 for a, e in zip(after, exact, strict=True))
    assert all(_within(b, e) for b, e in zip(before, exact, strict=True))
    engine.close()
    engine = _open(home)
    assert _nearest(engine) == after
    engine.close()


def test_a_namespace_below_the_deleted_share_is_not_rebuilt(tmp_path: Path) -> None:
    home = tmp_path / "h"
    engine = _open(home)
    _fill(engine)
    engine.close()
    seg = _segment(home, NS)
    # 1,100 of 1,201 slots deleted is a share of 0.916: not rebuilt under a 0.95 limit
    engine = open_engine(
        home,
        embedder=BagOfWordsEmbedder(),
        clock=ManualClock(T0),
        policy=DEFAULT_POLICY.replace(
            maintenance=replace(DEFAULT_POLICY.maintenance, index_compact_deleted_fraction=0.95)
        ),
    )
    engine.clock.advance(days=GC_DAYS)  # type: ignore[attr-defined]
    assert engine.gc(namespace=NS).members_collected == MANY
    engine.close()
    assert _segment(home, NS) == seg
    assert _bytes(seg) >= MANY * SLOT


STAGES = ("copy", "between_renames", "before_drop")


def _die_at(stage: str, home: str) -> None:
    """Run the GC in a child process that is killed at `stage` of the rebuild."""
    from chromadb.api.models.Collection import Collection

    if stage in ("copy", "between_renames"):
        # the rebuilt collection's first add (copying) or its rename (switching in)
        name = "add" if stage == "copy" else "modify"
        real = getattr(Collection, name)

        def killed(self, *a, **kw):  # type: ignore[no-untyped-def]
            if self.name.endswith("-next"):
                os._exit(9)
            return real(self, *a, **kw)

        setattr(Collection, name, killed)
    else:

        def drop(*a, **kw):  # type: ignore[no-untyped-def]
            os._exit(9)

        compact._drop = drop  # type: ignore[assignment]
    engine = open_engine(
        home,
        embedder=BagOfWordsEmbedder(),
        clock=ManualClock(T0),
    )
    engine.clock.advance(days=GC_DAYS)  # type: ignore[attr-defined]
    engine.gc(namespace=NS)
    os._exit(0)  # not reached when the kill point was


@pytest.mark.parametrize("stage", STAGES)
def test_a_kill_during_the_rebuild_leaves_every_live_vector(tmp_path: Path, stage: str) -> None:
    home = tmp_path / "h"
    engine = _open(home)
    kept = _fill(engine)
    engine.close()
    dirs_before = _segment_dirs(home)

    proc = mp.get_context("spawn").Process(target=_die_at, args=(stage, str(home)))
    proc.start()
    proc.join(600)
    assert proc.exitcode == 9, f"the child was not killed at {stage} ({proc.exitcode})"
    left = _collections(home)
    if stage == "copy":
        assert collection_name(NS) + "-next" in left
    if stage == "between_renames":
        assert collection_name(NS) not in left  # the kill came between the renames

    engine = _open(home)
    assert engine.vectors.count(NS) == KEEP + 1
    assert set(kept) <= engine.vectors.ids(NS)
    assert not engine.stats(namespace=NS).get("vector_repair_needed")
    hits = [h.id for h in engine.recall("shed roof beam 7", namespace=NS, k=3, reinforce=False)]
    assert kept[7] == hits[0]
    engine.close()
    # leftovers dropped: one collection per namespace, and one segment directory each
    assert _collections(home) == sorted([collection_name(NS), collection_name(OTHER)])
    assert len(_segment_dirs(home)) == 2
    if stage != "before_drop":
        # the old graph was kept: the next GC that deletes a vector rebuilds it
        assert _segment_dirs(home) == dirs_before


def test_a_failure_midway_leaves_a_usable_index_in_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromadb.api.models.Collection import Collection

    home = tmp_path / "h"
    engine = _open(home)
    kept = _fill(engine)
    engine.close()
    real_modify = Collection.modify

    def modify(self, *a, **kw):  # type: ignore[no-untyped-def]
        if self.name.endswith("-next"):
            raise OSError("disk went away")
        return real_modify(self, *a, **kw)

    monkeypatch.setattr(Collection, "modify", modify)
    engine = _open(home)
    engine.clock.advance(days=GC_DAYS)  # type: ignore[attr-defined]
    with pytest.raises(OSError, match="disk went away"):
        engine.gc(namespace=NS)
    # the namespace resolves again: the old collection is renamed back, the copy dropped
    assert engine.vectors.count(NS) == KEEP + 1
    hits = [h.id for h in engine.recall("shed roof beam 7", namespace=NS, k=3, reinforce=False)]
    assert kept[7] == hits[0]
    monkeypatch.setattr(Collection, "modify", real_modify)
    # the next deletion rebuilds it
    engine.forget(kept[0], namespace=NS)
    assert engine.vectors.count(NS) == KEEP
    engine.close()
    assert _collections(home) == sorted([collection_name(NS), collection_name(OTHER)])
    assert _bytes(_segment(home, NS)) <= 2 * 100 * SLOT + 64 * 1024
