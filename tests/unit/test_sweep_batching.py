"""The sweep's digests get their vectors together: an extractive digest (its members'
own words) takes its members' mean with no model call, and a model's digests are embedded
in one model call per sweep, with the same vectors as embedding each on its own.

A model call has a fixed cost (tokenising, a forward pass, threads), paid once per call
whatever its size; the simulated year's profile showed the sweep paying it once per
digest. Counted here with an embedder that logs its calls; no clock is involved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

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


def test_an_extractive_sweep_gives_each_digest_its_members_mean_and_no_model_call() -> None:
    embedder, vectors, engine = _aged()

    report = engine.sweep()

    nodes = list(engine.memories(tiers=[Tier.SYNTHESIS]))
    assert report.syntheses == 3 and report.archived == 9 and len(nodes) == 3
    assert embedder.calls == []  # the digests hold the members' words: no model time
    # each digest's vector is its members' vectors averaged and scaled to unit length
    stored = vectors.stored_vectors(engine.default_namespace, [n.id for n in nodes])
    for n in nodes:
        own = BagOfWordsEmbedder().embed([engine.get(i).text for i in sorted(n.derived_from)])
        mean = own.mean(axis=0)
        np.testing.assert_allclose(stored[n.id], mean / np.linalg.norm(mean), rtol=1e-6)
        assert len(n.derived_from) == 3
    members = {i for n in nodes for i in n.derived_from}
    assert all(engine.get(i).status is Status.ARCHIVED for i in members)
    assert len(members) == 9


class Summarizer:
    """A Synthesizer test double: a digest in its own words, naming its members' first
    words (so no two digests share a text)."""

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        firsts = [r.split()[0] for r in REMARKS if r in prompt]
        return {
            "synthesis": "Small talk about " + " and ".join(firsts) + ".",
            "key_entities": [], "causal_chains": [], "temporal_anchors": [],
            "importance": 0.2,
        }


def test_a_models_digests_are_embedded_together_in_one_call() -> None:
    embedder, vectors, engine = _aged()

    report = engine.sweep(synthesizer=Summarizer())

    nodes = list(engine.memories(tiers=[Tier.SYNTHESIS]))
    assert report.syntheses == 3 and len(nodes) == 3
    assert all(n.text.startswith("Small talk about") for n in nodes)
    assert len(embedder.calls) == 1  # one model call for the whole sweep
    assert sorted(embedder.calls[0]) == sorted(n.text for n in nodes)
    # each node's vector is what embedding it alone gives
    stored = vectors.stored_vectors(engine.default_namespace, [n.id for n in nodes])
    for n in nodes:
        np.testing.assert_array_equal(stored[n.id], BagOfWordsEmbedder().embed([n.text])[0])


def _aged() -> tuple[LoggingEmbedder, InMemoryVectorIndex, MemoryEngine]:
    """The nine remarks, a month old: 0.5 * 2^(-30/14) = 0.114 < evict_salience 0.15."""
    embedder = LoggingEmbedder()
    vectors = InMemoryVectorIndex()
    engine = _engine(embedder, vectors)
    for i, text in enumerate(REMARKS):
        engine.observe(text, importance=0.5, at=T0 + timedelta(minutes=i))
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=30)
    embedder.calls.clear()
    return embedder, vectors, engine


def _engine(embedder: LoggingEmbedder, vectors: InMemoryVectorIndex) -> MemoryEngine:
    store = InMemoryStore()
    return MemoryEngine(
        store, store, vectors, embedder, policy=Policy(), clock=ManualClock(T0),
        token_counter=lambda s: len(s.split()),
    )
