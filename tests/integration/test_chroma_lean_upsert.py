"""The lean write path to a real Chroma server (`QueryTransport.upsert` / `update`, used by
`ChromaIndex.upsert` and `set_metadata` on a server): it stores exactly what chromadb's
own client stores (vectors bit for bit, metadata of every scalar type), and fails the way
a user relies on: a stopped server is a `BackendUnavailable`, a restarted one is
reconnected to, a collection another client re-made is written to, and the server's
named errors keep their chromadb types."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core.errors import BackendUnavailable, InvalidVector
from reverie.core.ports import VectorItem
from reverie.integrations.chroma_http import QueryTransport
from reverie.integrations.chroma_index import ChromaIndex
from tests.servers import ServerProcess, free_port, start_chroma

DIM = 384  # the benchmark's MiniLM size: base64 rows of 1536 bytes


def _items(rng: np.random.Generator, n: int, tag: str = "") -> list[VectorItem]:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    metas: list[dict[str, Any]] = [
        {"status": "active", "kind": "episodic"},
        {"status": "archived", "n": 7, "score": 0.25, "pinned": True},
        {},  # no metadata at all
    ]
    return [VectorItem(f"{tag}v{i}", vecs[i], metas[i % 3]) for i in range(n)]


@pytest.fixture
def ns() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def index(chroma_server_url: str, ns: str) -> Iterator[ChromaIndex]:
    made = ChromaIndex.server(chroma_server_url)
    try:
        yield made
    finally:
        if not made._closed:
            made.drop_namespace(ns)
        made.close()


def _stored(index: ChromaIndex, ns: str, ids: list[str]) -> dict[str, tuple[Any, Any]]:
    col = index._collection(ns)
    assert col is not None
    got = col.get(ids=ids, include=["embeddings", "metadatas"])
    return {
        i: (np.asarray(e, dtype=np.float32), m)
        for i, e, m in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True)
    }


@pytest.mark.parametrize("base64", [True, False], ids=["base64", "numbers"])
def test_lean_upsert_stores_what_the_chromadb_client_stores(
    index: ChromaIndex, ns: str, base64: bool
) -> None:
    rng = np.random.default_rng(11)
    ours = _items(rng, 30, "a")
    index.upsert(ns, ours[:1])  # makes the collection; the client then writes the twin
    index._base64 = base64  # both encodings the server accepts
    index.upsert(ns, ours)
    col = index._collection(ns)
    assert col is not None
    theirs = _items(np.random.default_rng(11), 30, "b")  # the same vectors, other ids
    col.upsert(
        ids=[it.id for it in theirs],
        embeddings=np.stack([it.vector for it in theirs]),
        metadatas=[dict(it.metadata) or None for it in theirs],
    )
    a = _stored(index, ns, [it.id for it in ours])
    b = _stored(index, ns, [it.id for it in theirs])
    assert len(a) == len(b) == 30
    for i in range(30):
        va, ma = a[f"av{i}"]
        vb, mb = b[f"bv{i}"]
        np.testing.assert_array_equal(va, vb)  # bit for bit what the client stored
        # (`get` returns them as JSON numbers, printed from float32: within an ulp)
        np.testing.assert_allclose(va, ours[i].vector, rtol=2e-7, atol=0)
        assert ma == mb
        assert (ma or {}) == dict(ours[i].metadata)
    # nearest neighbours agree with the exact answer
    hits = index.query(ns, ours[5].vector, 1)
    assert hits[0].id in ("av5", "bv5") and hits[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_a_lean_upsert_replaces_the_vector_and_set_metadata_merges(
    index: ChromaIndex, ns: str
) -> None:
    rng = np.random.default_rng(12)
    items = _items(rng, 6)
    index.upsert(ns, items)
    new_vec = rng.standard_normal(DIM).astype(np.float32)
    index.upsert(ns, [VectorItem("v0", new_vec, {"status": "superseded"})])
    index.set_metadata(ns, ["v1", "nope"], [{"status": "superseded", "extra": 3}, {"a": 1}])
    got = _stored(index, ns, ["v0", "v1", "v2"])
    np.testing.assert_allclose(got["v0"][0], new_vec, rtol=2e-7, atol=0)
    # the vector is replaced; the metadata is merged, as Chroma does through its own client
    assert got["v0"][1] == {"status": "superseded", "kind": "episodic"}
    assert got["v1"][1] == {"status": "superseded", "extra": 3, "n": 7, "score": 0.25,
                            "pinned": True}  # an update merges into it
    assert got["v2"][1] in (None, {})
    assert index.count(ns) == 6
    with pytest.raises(InvalidVector):  # validation still runs before anything is sent
        index.upsert(ns, [VectorItem("v9", np.zeros(DIM, dtype=np.float32), {})])
    assert index.count(ns) == 6


def test_a_collection_made_again_by_another_client_is_written_to(
    chroma_server_url: str, index: ChromaIndex, ns: str
) -> None:
    rng = np.random.default_rng(13)
    index.upsert(ns, _items(rng, 5, "old"))  # the handle is now cached
    other = ChromaIndex.server(chroma_server_url)
    try:
        other.drop_namespace(ns)
        other.upsert(ns, _items(rng, 3, "new"))
        index.upsert(ns, _items(rng, 4, "late"))  # sent to the dropped id: NotFound, then
        index.set_metadata(ns, ["newv0"], [{"status": "x"}])  # the new collection
        assert other.ids(ns) == {"newv0", "newv1", "newv2", "latev0", "latev1", "latev2",
                                 "latev3"}
        assert _stored(other, ns, ["newv0"])["newv0"][1] == {"status": "x",
                                                             "kind": "episodic"}
    finally:
        other.close()


def test_a_restarted_server_is_reconnected_and_a_stopped_one_is_unavailable(
    tmp_path: Path,
) -> None:
    port = free_port()
    server: ServerProcess
    server, url = start_chroma(tmp_path / "data", port=port)
    index = ChromaIndex.server(url)
    try:
        rng = np.random.default_rng(14)
        index.upsert("ns", _items(rng, 5, "a"))  # leaves a kept-alive connection behind
        server.stop()
        with pytest.raises(BackendUnavailable, match="Chroma server"):
            index.upsert("ns", _items(rng, 5, "b"))
        with pytest.raises(BackendUnavailable, match="Chroma server"):
            index.set_metadata("ns", ["av0"], [{"status": "x"}])
        server, _ = start_chroma(tmp_path / "data", port=port)
        index.upsert("ns", _items(rng, 5, "c"))  # the dead connection is replaced
        index.set_metadata("ns", ["cv0"], [{"status": "x"}])
        assert index.ids("ns") == {f"{t}v{i}" for t in "ac" for i in range(5)}
    finally:
        index.close()
        server.stop()


def test_the_server_named_error_keeps_its_chromadb_type(
    chroma_server_url: str, index: ChromaIndex, ns: str
) -> None:
    from chromadb.errors import NotFoundError

    index.upsert(ns, _items(np.random.default_rng(15), 3))
    col = index._collection(ns)
    assert col is not None
    transport = QueryTransport("127.0.0.1", int(chroma_server_url.rsplit(":", 1)[1]),
                               tls=False)
    body = {"ids": ["x"], "embeddings": np.ones((1, DIM), dtype=np.float32),
            "metadatas": [None], "documents": None, "uris": None}
    try:
        transport.upsert(col.tenant, col.database, str(col.id), body)
        with pytest.raises(NotFoundError):
            transport.upsert(col.tenant, col.database, str(uuid.uuid4()), body)
        with pytest.raises(NotFoundError):
            transport.update(col.tenant, col.database, str(uuid.uuid4()),
                             {**body, "embeddings": None})
        with pytest.raises(ValueError, match="unknown Chroma collection operation"):
            transport.send(col.tenant, col.database, str(col.id), body, operation="delete")
    finally:
        transport.close()
    assert "x" in index.ids(ns)
