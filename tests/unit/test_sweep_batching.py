"""The sweep embeds its digests together: one model call and one index write per sweep,
with the same nodes, members and vectors as embedding each digest on its own.

A model call has a fixed cost (tokenising, a forward pass, threads), paid once per call
whatever its size; the simulated year's profile showed the sweep paying it once per
digest. Counted here with an embedder that logs its calls; no clock is involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np

from reverie.core import ManualClock, Policy, Status, Tier
from reverie.core.engine import MemoryEngine
from reverie.core.ports import Vector
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0

# nine unrelated remarks: no two share a word, so none cluster by meaning and the sweep
# cuts them, in time order, into ceil(9 / 4) = 3 digests of 3 (sweep_digest_size 4)
REMARKS = (
    "alpha bravo", "charlie delta", "echo foxtrot", "golf hotel", "india juliett",
    "kilo lima", "mike november", "oscar papa", "quebec romeo",
)


class LoggingEmbedder(BagOfWordsEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_one_sweep_embeds_all_its_digests_in_one_call() -> None:
    embedder = LoggingEmbedder()
    vectors = InMemoryVectorIndex()
    engine = _engine(embedder, vectors)
    for i, text in enumerate(REMARKS):
        engine.observe(text, importance=0.5, at=T0 + timedelta(minutes=i))
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=30)  # 0.5 * 2^(-30/14) = 0.114 < evict_salience 0.15
    embedder.calls.clear()

    report = engine.sweep()

    nodes = list(engine.memories(tiers=[Tier.SYNTHESIS]))
    assert report.syntheses == 3 and report.archived == 9 and len(nodes) == 3
    digest_calls = [c for c in embedder.calls if any(t.startswith("Consolidated") for t in c)]
    assert len(digest_calls) == 1
    assert sorted(digest_calls[0]) == sorted(n.text for n in nodes)
    # each node's vector is what embedding it alone gives, and every member left the index's
    # active set
    stored = vectors.stored_vectors(engine.default_namespace, [n.id for n in nodes])
    for n in nodes:
        np.testing.assert_array_equal(stored[n.id], BagOfWordsEmbedder().embed([n.text])[0])
        assert len(n.derived_from) == 3
    members = {i for n in nodes for i in n.derived_from}
    assert all(engine.get(i).status is Status.ARCHIVED for i in members)
    assert len(members) == 9


def _engine(embedder: LoggingEmbedder, vectors: InMemoryVectorIndex) -> MemoryEngine:
    store = InMemoryStore()
    return MemoryEngine(
        store, store, vectors, embedder, policy=Policy(), clock=ManualClock(T0),
        token_counter=lambda s: len(s.split()),
    )
