"""AsyncRedisStore against real servers (a redis-server and a 3-master cluster): the
operations an async engine path uses, and agreement with the sync store on one Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from reverie.core.errors import BackendUnavailable, ConflictError, LockBusy
from reverie.core.models import Edge, EdgeType, Status
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from reverie.integrations.redis_async import AsyncRedisStore
from reverie.integrations.redis_store import RedisStore
from tests.contract.conftest import T0, make_memory
from tests.servers import RedisCluster, start_redis


@pytest.fixture(params=["redis", "redis-cluster"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    cluster: RedisCluster = request.getfixturevalue("redis_cluster")
    return cluster.url


@pytest.fixture
def prefix(url: str) -> Iterator[str]:
    """A key prefix of this test's own on the shared server; its namespaces are dropped."""
    p = f"a{uuid.uuid4().hex[:12]}"
    yield p
    with RedisStore.from_url(url, prefix=p) as store:
        for ns in store.namespaces():
            store.delete_namespace(ns)


def test_async_round_trip_and_agreement_with_sync(url: str, prefix: str) -> None:
    a = make_memory(id="a", text="Maya paints watercolours in Lisbon", entities={"maya"})
    b = make_memory(id="b", text="Maya runs along the Tagus river", entities={"maya"})

    async def scenario() -> None:
        store = await AsyncRedisStore.open(url, prefix=prefix)
        try:
            await store.commit(WriteBatch("ns", (a, b), (Edge("a", "b", EdgeType.ENTITY, 0.4),)))
            assert await store.get("ns", "a") == a
            assert await store.get("ns", "nope") is None
            assert await store.get_many("ns", ["b", "nope", "a"]) == {"b": b, "a": a}
            assert [m.id async for m in store.scan("ns", batch_size=1)] == ["a", "b"]
            assert [m.id async for m in store.scan("ns", statuses=[Status.ARCHIVED])] == []
            found = await store.find_by_hash("ns", content_hash(a.text))
            assert found is not None and found.id == "a"
            assert [m.id for m in await store.find_by_entity("ns", "maya", 1)] == ["b"]
            hits = await store.search("ns", "watercolour painting", 5)
            assert [h.id for h in hits] == ["a"] and hits[0].score > 0
            assert await store.degrees("ns", ["a", "b", "c"]) == {"a": 1, "b": 1, "c": 0}
            assert await store.edges("ns", ["a"]) == [Edge("a", "b", EdgeType.ENTITY, 0.4)]
            counts = await store.count("ns")
            assert counts["status:active"] == 2 and counts["edges"] == 1
            with pytest.raises(ConflictError):
                await store.commit(WriteBatch("ns", (a.evolve(version=5),)))
            await store.commit(WriteBatch("ns", (a.evolve(status=Status.ARCHIVED),)))
            assert await store.search("ns", "watercolour", 5) == []
            assert await store.namespaces() == ["ns"]
        finally:
            await store.aclose()

    asyncio.run(scenario())
    # The sync store reads exactly what the async one wrote, search included.
    with RedisStore.from_url(url, prefix=prefix) as sync:
        got = sync.get("ns", "a")
        assert got is not None and got.status is Status.ARCHIVED and got.version == 2
        assert [h.id for h in sync.search("ns", "Tagus", 5)] == ["b"]


def test_concurrent_async_touches_never_lose_a_count(url: str, prefix: str) -> None:
    async def scenario() -> int:
        store = await AsyncRedisStore.open(url, prefix=prefix)
        try:
            await store.commit(WriteBatch("ns", (make_memory(id="hot"),)))

            async def worker(n: int) -> None:
                for i in range(20):
                    await store.touch("ns", ["hot", "ghost"], T0 + timedelta(minutes=n * 50 + i), 8)

            await asyncio.gather(*(worker(n) for n in range(6)))
            hot = await store.get("ns", "hot")
            assert hot is not None
            assert len(hot.recent_accesses) == 8
            return hot.access_count
        finally:
            await store.aclose()

    assert asyncio.run(scenario()) == 120


def test_async_lock_excludes_the_sync_holder(url: str, prefix: str) -> None:
    async def scenario(sync: RedisStore) -> None:
        store = await AsyncRedisStore.open(url, prefix=prefix)
        try:
            async with store.lock("ns") as token:
                assert token
                with pytest.raises(LockBusy), sync.lock("ns"):
                    pass
            with sync.lock("ns"), pytest.raises(LockBusy):
                async with store.lock("ns"):
                    pass
        finally:
            await store.aclose()

    with RedisStore.from_url(url, prefix=prefix) as sync:
        asyncio.run(scenario(sync))


def test_async_store_reports_a_dead_server(tmp_path: Path) -> None:
    server, url = start_redis(tmp_path / "doomed")

    async def scenario() -> None:
        store = await AsyncRedisStore.open(url, prefix="dead")
        try:
            await store.commit(WriteBatch("ns", (make_memory(id="kept"),)))
            server.stop()
            with pytest.raises(BackendUnavailable):
                await store.commit(WriteBatch("ns", (make_memory(id="lost"),)))
            with pytest.raises(BackendUnavailable):
                await store.get("ns", "kept")
        finally:
            await store.aclose()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
    with pytest.raises(BackendUnavailable):
        asyncio.run(AsyncRedisStore.open(url))
