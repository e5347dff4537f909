"""A synthesis node's vector, on real parts (a SQLite file, embedded Chroma).

An extractive synthesis holds its members' own words, so the REM cycle gives it the
normalised mean of its members' vectors and asks the model for nothing; a model's
synthesis (its own words) is embedded. A user relies on a member's words finding the
node after the cycle, and on maintenance not paying the model for every node."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from reverie.core import ManualClock, Memory, Tier, vector_sync
from reverie.core.ports import Vector
from reverie.integrations import open_engine
from tests.fakes import BagOfWordsEmbedder

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


class Recording(BagOfWordsEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.asked.extend(texts)
        return super().embed(texts)


def test_an_extractive_node_gets_its_members_mean_without_the_model(tmp_path: Path) -> None:
    embedder = Recording()
    engine = open_engine(tmp_path / "h", embedder=embedder, clock=ManualClock(T0))
    texts = [f"ok the weather in paris was rainy again {i}" for i in range(4)]
    members = [engine.observe(t, at=T0) for t in texts]
    engine.clock.advance(days=120)  # type: ignore[attr-defined]
    embedder.asked.clear()
    report = engine.consolidate()
    (node,) = [m for m in engine.memories() if m.tier is Tier.SYNTHESIS]
    assert report.consolidated == 4 and node.derived_from == {m.id for m in members}
    assert node.text not in embedder.asked  # no model time for the node

    # by hand: the members' own vectors, averaged and scaled to unit length
    own = BagOfWordsEmbedder().embed(texts)
    mean = own.mean(axis=0)
    expected = mean / np.linalg.norm(mean)
    ns = engine.default_namespace
    got = vector_sync.kept_embeddings(engine._ctx, ns, [node.id])[node.id]
    assert np.allclose(got, expected, atol=1e-3)  # kept at half precision
    # a member's words find the node through the dense channel too
    hits = engine.recall("the weather in paris was rainy", k=1).hits
    assert [h.memory.id for h in hits] == [node.id]
    engine.close()


def test_a_models_synthesis_is_embedded(tmp_path: Path) -> None:
    embedder = Recording()
    engine = open_engine(tmp_path / "h", embedder=embedder, clock=ManualClock(T0))
    a = engine.observe("the weather in paris was rainy", at=T0)
    b = engine.observe("the weather in paris was rainy again", at=T0)
    ns = engine.default_namespace

    def node(synthesizer: str) -> Memory:
        return Memory(
            id=f"syn-{synthesizer}", namespace=ns, kind=a.kind, tier=Tier.SYNTHESIS,
            text="Paris had a wet spell.", created_at=T0, derived_from=frozenset({a.id, b.id}),
            metadata={"synthesis": {"synthesizer": synthesizer}},
        )

    engine.flush()  # the members' vectors are kept once their queued write lands
    embedder.asked.clear()
    vecs = vector_sync.node_vectors(engine._ctx, ns, [node("extractive"), node("qwen")])
    assert embedder.asked == ["Paris had a wet spell."]  # the model's synthesis only
    assert np.allclose(vecs[1], BagOfWordsEmbedder().embed(["Paris had a wet spell."])[0])
    engine.close()
