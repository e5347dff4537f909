"""Recall counts the degrees of memories whose edges it has read (for version links) on
those edges, instead of reading them again: the explanation's importance must be what the
store's own degrees give."""

from __future__ import annotations

from pathlib import Path

from reverie.core import ManualClock, Policy
from reverie.core.engine import MemoryEngine
from reverie.core.models import Edge, EdgeType
from reverie.core.ports import WriteBatch
from reverie.core.retrieval import degrees_from
from reverie.core.scoring import importance_score
from reverie.integrations.sqlite.store import SQLiteStore
from tests.fakes import BagOfWordsEmbedder, InMemoryVectorIndex
from tests.unit.conftest import T0


def test_each_end_of_an_edge_counts_once_for_the_ids_asked() -> None:
    edges = [
        Edge("a", "b", EdgeType.ENTITY, 1.0),
        Edge("a", "c", EdgeType.TEMPORAL, 0.5),
        Edge("c", "a", EdgeType.CAUSAL, 0.5),
        Edge("d", "a", EdgeType.ENTITY, 1.0),
    ]
    # a: out a-b, a-c, in c-a, d-a = 4; c: in a-c, out c-a = 2; e: none; b, d not asked
    assert degrees_from(edges, ["a", "c", "e"]) == {"a": 4, "c": 2, "e": 0}


def test_recall_explains_importance_with_the_stores_degrees(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    engine = MemoryEngine(
        store,
        store,
        InMemoryVectorIndex(),
        BagOfWordsEmbedder(),
        policy=Policy(),
        clock=ManualClock(T0),
    )
    texts = [
        "Maya paints the harbour at dawn",
        "Maya sells her harbour paintings",
        "the harbour market opens on Sunday",
        "Tom rows across the harbour",
        "Maya and Tom walk the harbour wall",
        "a storm closed the harbour",
    ]
    ids = [engine.observe(t).id for t in texts]
    store.commit(
        WriteBatch(
            "default",
            (),
            (
                Edge(ids[0], ids[1], EdgeType.ENTITY, 1.0),
                Edge(ids[0], ids[2], EdgeType.TEMPORAL, 0.5),
                Edge(ids[3], ids[0], EdgeType.ENTITY, 1.0),
                Edge(ids[4], ids[0], EdgeType.ENTITY, 1.0),
                Edge(ids[5], ids[1], EdgeType.CAUSAL, 0.8),
            ),
        )
    )
    hits = engine.recall("harbour Maya Tom", k=6, reinforce=False).hits
    assert {h.id for h in hits} == set(ids)
    degrees = store.degrees("default", ids)
    assert len(set(degrees.values())) > 1  # observe links some of them too
    now = engine.clock.now()
    for h in hits:
        want = importance_score(h.memory, degrees[h.id], now, engine.policy)
        assert h.explanation.importance == want, h.memory.text
    store.close()
