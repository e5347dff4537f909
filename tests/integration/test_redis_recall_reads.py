"""`recall_reads` of the Redis store: recall's one-round-trip read of
its candidates (records, kept embeddings, degrees) must say exactly what the three
separate reads say, on a real Redis and a real 3-master cluster, in one namespace only,
and in one round trip per chunk."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from reverie.core.models import Edge, EdgeType
from reverie.core.ports import WriteBatch
from reverie.integrations.redis import reads as redis_reads
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import T0, make_memory
from tests.servers import RedisCluster


@pytest.fixture(params=["redis", "redis-cluster"])
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    made: Any
    if request.param == "redis":
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


def _vec(i: int) -> np.ndarray:
    return np.array([i, 1.0, -0.5, 0.25 * i], dtype=np.float32)


def _fill(store: Any, ns: str, n: int) -> list[str]:
    ids = [f"m{i:04d}" for i in range(n)]
    store.commit(WriteBatch(ns, tuple(make_memory(id=i, namespace=ns, text=f"memory {i}")
                                      for i in ids)))
    # m0000 has three edges (two out, one in), m0001 two, m0002 one; the rest none
    store.commit(WriteBatch(ns, edges=(
        Edge("m0000", "m0001", EdgeType.ENTITY, 1.0),
        Edge("m0000", "m0002", EdgeType.CAUSAL, 0.5),
        Edge("m0003", "m0000", EdgeType.TEMPORAL, 0.5),
    )))
    # every other memory keeps an embedding
    store.put_embeddings(ns, {i: _vec(k) for k, i in enumerate(ids) if k % 2 == 0})
    return ids


def test_recall_reads_equal_the_separate_reads(store: Any) -> None:
    ids = _fill(store, "a", 12)
    _fill(store, "b", 12)  # same ids in another namespace: never read
    store.commit(WriteBatch("b", edges=(Edge("m0005", "m0006", EdgeType.ENTITY, 1.0),)))
    asked = ["m0000", "ghost", *ids[1:8], "m0000"]

    got = store.recall_reads("a", asked, embeddings=True, degrees=True)

    assert got.memories == store.get_many("a", asked)
    assert list(got.memories) == [i for i in dict.fromkeys(asked) if i != "ghost"]
    assert set(got.embeddings) == {"m0000", "m0002", "m0004", "m0006"}
    for i, v in got.embeddings.items():
        np.testing.assert_array_equal(v, _vec(int(i[1:])))
    assert got.degrees == store.degrees("a", asked)
    assert got.degrees["m0000"] == 3 and got.degrees["m0001"] == 1
    assert got.degrees["m0005"] == 0 and got.degrees["ghost"] == 0  # b's edge is b's
    assert all(m.namespace == "a" for m in got.memories.values())


def test_recall_reads_reads_only_what_it_is_asked(store: Any) -> None:
    _fill(store, "a", 4)
    got = store.recall_reads("a", ["m0000", "m0001"])
    assert set(got.memories) == {"m0000", "m0001"}
    assert got.embeddings == {} and got.degrees == {}
    assert store.recall_reads("a", []) == redis_reads.RecallReads({}, {}, {})


def test_recall_reads_one_round_trip_per_chunk(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """620 ids are two chunks (500 + 120): two pipelined round trips, all answered."""
    ids = _fill(store, "a", 620)
    requests: list[Any] = []
    ask = store._ask

    def counting(conn: Any, request: Any) -> Any:
        requests.append(request)
        return ask(conn, request)

    monkeypatch.setattr(store, "_ask", counting)
    got = store.recall_reads("a", ids, embeddings=True, degrees=True)
    assert len(requests) == 2
    assert all(isinstance(r, redis_reads.Pipelined) and not r.atomic for r in requests)
    assert [len(r.calls) for r in requests] == [3, 3]
    assert len(got.memories) == 620 and len(got.embeddings) == 310
    assert len(got.degrees) == 620 and sum(got.degrees.values()) == 6


def test_an_entity_lookup_sends_only_its_limit_of_equal_time_ids(store: Any) -> None:
    """Memories written at one time share an entity by the thousand: the server picks the
    newest by insertion order and sends the limit, not the whole group (whose records the
    client would then read, on every observe that names the entity)."""
    at = T0 + timedelta(days=1)
    ms = [make_memory(id=f"t{i:04d}", entities={"maya"}, created_at=at) for i in range(1200)]
    for part in range(0, len(ms), 400):
        store.commit(WriteBatch("ns", tuple(ms[part : part + 400])))
    keys = store._keys("ns")

    def top() -> Any:  # the script's reply alone, as the store's read asks it
        return (yield redis_reads.Lua("entity_top", [keys.entity("maya"), keys.all], [5]))

    sent = store._run(top())
    assert list(sent) == ["t1199", "t1198", "t1197", "t1196", "t1195"]
    assert [m.id for m in store.find_by_entity("ns", "maya", 5)] == list(sent)
