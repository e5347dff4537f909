"""Recall when the vector index does not answer: the records are the truth and still
readable, so recall answers from the lexical channel (and logs why) rather than failing;
an index that refuses the credentials is a setting to fix and is raised."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from reverie.core import ManualClock, Policy
from reverie.core.engine import MemoryEngine
from reverie.core.errors import AuthFailed, BackendUnavailable, DeadlineExceeded, StorageFull
from reverie.core.ports import Vector, VectorHit
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0


class FailingQueries(InMemoryVectorIndex):
    """An index that takes writes but whose reads raise `error` once it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.error: BackendUnavailable | None = None

    def query(
        self, namespace: str, vector: Vector, k: int, where: Mapping[str, Any] | None = None
    ) -> list[VectorHit]:
        if self.error is not None:
            raise self.error
        return super().query(namespace, vector, k, where)

    def similarities(self, namespace: str, vector: Vector, ids: Sequence[str]) -> dict[str, float]:
        if self.error is not None:
            raise self.error
        return super().similarities(namespace, vector, ids)


def _engine(index: FailingQueries) -> MemoryEngine:
    store = InMemoryStore()
    return MemoryEngine(
        store, store, index, BagOfWordsEmbedder(), policy=Policy(), clock=ManualClock(T0)
    )


TEXTS = [
    "my sister Ana is getting married in Porto next June",
    "I adopted a grey cat called Miso",
    "the quarterly budget review moved to Thursday",
]


@pytest.mark.parametrize(
    "error",
    [
        DeadlineExceeded("the index did not answer within 30 s"),
        StorageFull("the index's disk is full"),
        BackendUnavailable("cannot reach the index"),
    ],
    ids=["deadline", "full", "down"],
)
def test_recall_answers_lexically_when_the_index_does_not_answer(
    error: BackendUnavailable, caplog: pytest.LogCaptureFixture
) -> None:
    index = FailingQueries()
    engine = _engine(index)
    ids = [engine.observe(t).id for t in TEXTS]
    engine.flush()
    index.error = error
    with caplog.at_level(logging.WARNING, logger="reverie"):
        hits = engine.recall("grey cat Miso", k=2, reinforce=False).hits
    assert hits and hits[0].memory.id == ids[1]  # its words, found by BM25
    assert all(h.memory.id in ids for h in hits)
    assert any("lexical index alone" in r.getMessage() for r in caplog.records)


def test_a_refused_index_is_raised_not_answered_around() -> None:
    index = FailingQueries()
    engine = _engine(index)
    engine.observe(TEXTS[1])
    engine.flush()
    index.error = AuthFailed("the Chroma server refused the token")
    with pytest.raises(AuthFailed):
        engine.recall("grey cat", k=1, reinforce=False)
