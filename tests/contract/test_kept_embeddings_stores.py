"""Embeddings kept beside the records, on every store that keeps them: SQLite, Redis and
Redis Cluster. Recall trusts these vectors as it trusts the
vector index, so they must be exact, per namespace, and gone when the record is."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import InvalidInput
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory
from tests.servers import RedisCluster


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    made: Any
    if request.param == "sqlite":
        made = SQLiteStore(tmp_path / "m.db")
    elif request.param == "redis":
        made = RedisStore.from_url(str(request.getfixturevalue("redis_url")), prefix=prefix)
    else:
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        made = RedisStore.from_url(cluster.url, prefix=prefix)
    try:
        yield made
    finally:
        for ns in made.namespaces():
            made.delete_namespace(ns)
        made.close()


def _redis_client(store: Any) -> Any:
    return getattr(store, "_client", None)


VA = np.array([0.25, -1.0, 0.5, 3.0], dtype=np.float32)
VB = np.array([1.0, 2.0, -0.125, 0.0], dtype=np.float32)


def test_kept_vectors_round_trip_exactly_per_namespace(store: Any) -> None:
    store.commit(WriteBatch("a", (make_memory(id="x", namespace="a"),
                                  make_memory(id="y", namespace="a"))))
    store.commit(WriteBatch("b", (make_memory(id="x", namespace="b"),)))
    assert store.put_embeddings("a", {"x": VA, "y": VB.astype(np.float64), "ghost": VA}) == 2
    assert store.put_embeddings("b", {"x": VB}) == 1
    got = store.embeddings("a", ["x", "y", "ghost", "x"])
    assert sorted(got) == ["x", "y"]
    assert got["x"].dtype == np.float32 and np.array_equal(got["x"], VA)
    assert np.array_equal(got["y"], VB)
    assert np.array_equal(store.embeddings("b", ["x", "y"])["x"], VB)  # b's own, only x
    assert list(store.embeddings("b", ["x", "y"])) == ["x"]
    assert store.embeddings("c", ["x"]) == {} and store.embeddings("a", []) == {}


def test_a_bad_vector_is_refused_and_nothing_is_written(store: Any) -> None:
    store.commit(WriteBatch("a", (make_memory(id="x", namespace="a"),
                                  make_memory(id="y", namespace="a"))))
    store.put_embeddings("a", {"x": VA})
    for bad in (np.array([np.nan, 1.0]), np.zeros((2, 2)), np.array([]), "text"):
        with pytest.raises(InvalidInput):
            store.put_embeddings("a", {"y": VB, "x": bad})
    assert list(store.embeddings("a", ["x", "y"])) == ["x"]
    assert np.array_equal(store.embeddings("a", ["x"])["x"], VA)


def test_deleting_a_record_deletes_its_vector(store: Any) -> None:
    store.commit(WriteBatch("a", (make_memory(id="x", namespace="a"),
                                  make_memory(id="y", namespace="a"))))
    store.put_embeddings("a", {"x": VA, "y": VB})
    assert store.delete("a", ["x"]) == 1
    assert list(store.embeddings("a", ["x", "y"])) == ["y"]
    assert store.put_embeddings("a", {"x": VA}) == 0  # no record, no vector
    store.delete_namespace("a")
    store.commit(WriteBatch("a", (make_memory(id="y", namespace="a"),)))
    assert store.embeddings("a", ["x", "y"]) == {}  # the re-created namespace starts empty
    client = _redis_client(store)
    if client is not None:
        assert client.hlen(store._keys("a").emb) == 0
