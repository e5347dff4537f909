"""A Chroma server that goes away and comes back, with the real `chroma run` process
stopped and started again on the same port and data directory while the client stays
open.

What a user relies on: while the server is down every index call fails with
`BackendUnavailable` naming the server (never a raw httpx or socket error), a failed
observe stores nothing and recall answers from the lexical index; once it is back, the
same open index and the same engine work again without being reopened (chromadb's client
for writes, reverie's own kept-alive connection for queries), with every vector written
before the drop still there.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock
from reverie.core.errors import BackendUnavailable
from reverie.core.ports import VectorItem
from reverie.integrations import open_engine
from reverie.integrations.chroma.index import ChromaIndex
from tests.fakes import BagOfWordsEmbedder
from tests.servers import ServerProcess, free_port, start_chroma

pytestmark = pytest.mark.slow

DIM = 8


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


class Restartable:
    """A Chroma server of the test's own that can be stopped and started again."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.server: ServerProcess
        self.server, self.url = start_chroma(data, port=self.port)

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        self.server, url = start_chroma(self.data, port=self.port)
        assert url == self.url


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Restartable]:
    made = Restartable(tmp_path / "chroma" / "data")
    try:
        yield made
    finally:
        made.stop()


def test_every_index_call_works_again_once_the_server_is_back(chroma: Restartable) -> None:
    ns = f"r-{uuid.uuid4().hex[:8]}"
    index = ChromaIndex.server(chroma.url)
    try:
        index.upsert(ns, [VectorItem(f"v{i}", unit(i), {"status": "active"}) for i in range(4)])
        before = index.query(ns, unit(1), 1)  # leaves a kept-alive query connection
        assert before[0].id == "v1"

        chroma.stop()
        calls: list[Any] = [
            lambda: index.query(ns, unit(1), 1),
            lambda: index.upsert(ns, [VectorItem("v9", unit(5))]),
            lambda: index.set_metadata(ns, ["v0"], [{"status": "archived"}]),
            lambda: index.delete(ns, ["v3"]),
            lambda: index.ids(ns),
            lambda: index.count(ns),
        ]
        for call in calls:
            with pytest.raises(BackendUnavailable, match=chroma.url.replace(".", r"\.")):
                call()

        chroma.start()
        assert index.query(ns, unit(1), 1) == before
        assert index.ids(ns) == {"v0", "v1", "v2", "v3"}  # nothing written while down
        index.upsert(ns, [VectorItem("v4", unit(4), {"status": "active"})])
        index.set_metadata(ns, ["v0"], [{"status": "archived"}])
        index.delete(ns, ["v3"])
        assert index.ids(ns) == {"v0", "v1", "v2", "v4"}
        assert index.count(ns) == 4
        assert [h.id for h in index.query(ns, unit(4), 1)] == ["v4"]
        assert [h.id for h in index.query(ns, unit(0), 4, where={"status": "archived"})] == ["v0"]
    finally:
        index.close()


def test_a_restart_between_two_calls_is_not_seen_by_the_caller(chroma: Restartable) -> None:
    """The server restarts while the client is idle: the kept-alive query connection and
    chromadb's own are dead, and the next calls must open fresh ones, not fail."""
    ns = f"r-{uuid.uuid4().hex[:8]}"
    index = ChromaIndex.server(chroma.url)
    try:
        index.upsert(ns, [VectorItem(f"v{i}", unit(i)) for i in range(3)])
        before = index.query(ns, unit(2), 1)
        sent = index.begin_query(ns, unit(1), 1)
        assert sent is not None and [h.id for h in sent.result()] == ["v1"]
        chroma.stop()
        chroma.start()
        assert index.query(ns, unit(2), 1) == before
        sent = index.begin_query(ns, unit(1), 1)
        assert sent is not None and [h.id for h in sent.result()] == ["v1"]
        index.upsert(ns, [VectorItem("v3", unit(3))])
        assert index.ids(ns) == {"v0", "v1", "v2", "v3"}
    finally:
        index.close()


def test_an_open_engine_rides_out_a_server_restart(chroma: Restartable, tmp_path: Path) -> None:
    engine = open_engine(
        tmp_path / "home",
        vectors=chroma.url,
        embedder=BagOfWordsEmbedder(),
        clock=ManualClock(datetime(2025, 3, 1, 9, 0, tzinfo=UTC)),
    )
    try:
        boat = engine.observe("the boat is moored at pier seven")
        engine.observe("grandma's recipe needs cardamom")
        before = [h.id for h in engine.recall("where is the boat moored", k=2).hits]
        assert before[0] == boat.id

        chroma.stop()
        with pytest.raises(BackendUnavailable, match="Chroma server"):
            engine.observe("the bike lock code is 4812")
        assert engine.store.count("default")["total"] == 2  # the failed observe stored nothing
        # recall answers from the records' lexical index while the vectors are out of reach
        assert engine.recall("where is the boat moored", k=1).hits[0].id == boat.id

        chroma.start()
        assert [h.id for h in engine.recall("where is the boat moored", k=2).hits] == before
        bike = engine.observe("the bike lock code is 4812")
        assert engine.recall("bike lock code", k=1).hits[0].id == bike.id
        stats = engine.stats()
        assert stats["vectors"] == 3 and stats["vector_repair_needed"] is False
    finally:
        engine.close()
