"""The lean query path to a real Chroma server (`chroma_http`, `ChromaIndex.begin_query`):
the same answers as chromadb's own client, and the same failure behaviour a user relies
on: a restarted server is reconnected to, a stopped one is a `BackendUnavailable`, a
collection another client re-made is found again, and a cancelled query leaves the
connection usable."""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core.errors import BackendUnavailable
from reverie.core.ports import VectorItem
from reverie.integrations.chroma.http import QueryTransport
from reverie.integrations.chroma.index import ChromaIndex
from tests.servers import ServerProcess, free_port, start_chroma

DIM = 16


def _items(rng: np.random.Generator, n: int, tag: str = "") -> list[VectorItem]:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    return [
        VectorItem(f"{tag}v{i}", vecs[i], {"status": "active" if i % 3 else "archived"})
        for i in range(n)
    ]


@pytest.fixture
def ns() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def index(chroma_server_url: str, ns: str) -> Iterator[ChromaIndex]:
    made = ChromaIndex.server(chroma_server_url)
    try:
        yield made
    finally:
        if not made._cols.closed:
            made.drop_namespace(ns)
        made.close()


def test_lean_query_answers_as_the_chromadb_client(index: ChromaIndex, ns: str) -> None:
    rng = np.random.default_rng(3)
    index.upsert(ns, _items(rng, 300))
    col = index._cols.get(ns)
    assert col is not None
    for q in rng.standard_normal((8, DIM)).astype(np.float32):
        ours = index.query(ns, q, 20)
        theirs = col.query(query_embeddings=q[None, :], n_results=20, include=["distances"])
        assert [h.id for h in ours] == theirs["ids"][0]
        np.testing.assert_allclose(
            [h.similarity for h in ours], [1.0 - d for d in theirs["distances"][0]],
            rtol=0, atol=1e-6,
        )
        # a filtered query takes the same transport (over-fetch, then filter here)
        kept = index.query(ns, q, 5, where={"status": "active"})
        want = col.query(query_embeddings=q[None, :], n_results=5,
                         where={"status": "active"}, include=["distances"])
        assert [h.id for h in kept] == want["ids"][0]
        sent = index.begin_query(ns, q, 20)
        assert sent is not None
        assert sent.result() == ours


def test_begin_query_needs_a_collection_and_a_server(tmp_path: Path, ns: str,
                                                      index: ChromaIndex) -> None:
    q = np.ones(DIM, dtype=np.float32)
    assert index.begin_query(ns, q, 5) is None  # no collection yet: `query` answers []
    assert index.query(ns, q, 5) == []
    embedded = ChromaIndex.embedded(tmp_path / "chroma", call_seconds=0)
    try:
        embedded.upsert(ns, _items(np.random.default_rng(1), 5))
        assert embedded.begin_query(ns, q, 5) is None  # in process, no deadline: no worker
    finally:
        embedded.close()
    bounded = ChromaIndex.embedded(tmp_path / "bounded")  # behind the default deadline
    try:
        bounded.upsert(ns, _items(np.random.default_rng(1), 5))
        sent = bounded.begin_query(ns, q, 5)
        assert sent is not None  # started on the deadline's worker
        assert sent.result() == bounded.query(ns, q, 5)
    finally:
        bounded.close()


def test_a_cancelled_query_leaves_the_next_one_right(index: ChromaIndex, ns: str) -> None:
    rng = np.random.default_rng(4)
    index.upsert(ns, _items(rng, 50))
    a, b = rng.standard_normal((2, DIM)).astype(np.float32)
    want_b = index.query(ns, b, 10)
    sent = index.begin_query(ns, a, 10)
    assert sent is not None
    sent.cancel()  # its answer is never read: the connection must not hand it to b
    assert index.query(ns, b, 10) == want_b
    # two queries in flight on one thread each get their own answer
    first, second = index.begin_query(ns, a, 10), index.begin_query(ns, b, 10)
    assert first is not None and second is not None
    assert second.result() == want_b
    assert first.result() == index.query(ns, a, 10)


def test_a_collection_made_again_by_another_client_is_found(
    chroma_server_url: str, index: ChromaIndex, ns: str
) -> None:
    rng = np.random.default_rng(5)
    index.upsert(ns, _items(rng, 40, "old"))
    q = rng.standard_normal(DIM).astype(np.float32)
    assert index.query(ns, q, 3)[0].id.startswith("old")  # the handle is now cached
    other = ChromaIndex.server(chroma_server_url)
    try:
        other.drop_namespace(ns)
        other.upsert(ns, _items(rng, 40, "new"))
    finally:
        other.close()
    sent = index.begin_query(ns, q, 3)  # sent to the dropped collection's id
    assert sent is not None
    hits = sent.result()
    assert len(hits) == 3 and all(h.id.startswith("new") for h in hits)
    assert index.query(ns, q, 3) == hits


def test_a_restarted_server_is_reconnected_and_a_stopped_one_is_unavailable(
    tmp_path: Path,
) -> None:
    port = free_port()
    server: ServerProcess
    server, url = start_chroma(tmp_path / "data", port=port)
    index = ChromaIndex.server(url)
    try:
        rng = np.random.default_rng(6)
        index.upsert("ns", _items(rng, 30))
        q = rng.standard_normal(DIM).astype(np.float32)
        before = index.query("ns", q, 5)  # leaves a kept-alive connection behind
        server.stop()
        with pytest.raises(BackendUnavailable, match="Chroma server"):
            index.query("ns", q, 5)
        with pytest.raises(BackendUnavailable):
            sent = index.begin_query("ns", q, 5)
            assert sent is not None
            sent.result()
        server, _ = start_chroma(tmp_path / "data", port=port)
        assert index.query("ns", q, 5) == before
        sent = index.begin_query("ns", q, 5)
        assert sent is not None and sent.result() == before
    finally:
        index.close()
        server.stop()


def test_the_server_named_error_keeps_its_chromadb_type(
    chroma_server_url: str, index: ChromaIndex, ns: str
) -> None:
    from chromadb.errors import NotFoundError

    index.upsert(ns, _items(np.random.default_rng(7), 5))
    col = index._cols.get(ns)
    assert col is not None
    transport = QueryTransport("127.0.0.1", int(chroma_server_url.rsplit(":", 1)[1]),
                               tls=False)
    try:
        body = {"query_embeddings": np.ones((1, DIM), dtype=np.float32), "n_results": 2,
                "include": ["distances"]}
        assert len(transport.query(col.tenant, col.database, str(col.id), body)["ids"][0]) == 2
        with pytest.raises(NotFoundError):
            transport.query(col.tenant, col.database, str(uuid.uuid4()), body)
    finally:
        transport.close()


def test_each_thread_has_its_own_connection_and_an_ended_thread_lets_it_go(
    index: ChromaIndex, ns: str
) -> None:
    """An app that recalls from many short-lived threads must not pile up sockets."""
    rng = np.random.default_rng(8)
    index.upsert(ns, _items(rng, 20))
    q = rng.standard_normal(DIM).astype(np.float32)
    want = index.query(ns, q, 3)
    transport = index._transport
    assert transport is not None and len(transport._open) == 1  # this thread's
    answers: list[Any] = []
    threads = [threading.Thread(target=lambda: answers.append(index.query(ns, q, 3)))
               for _ in range(4)]
    for t in threads:
        t.start()
        t.join()
    assert answers == [want] * 4
    gc.collect()
    assert len(transport._open) == 1
