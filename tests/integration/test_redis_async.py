"""AsyncRedisStore against real servers (a redis-server and a 3-master cluster): the
operations an async engine path uses, agreement with the sync store on one Redis, URLs,
and a dead server. The whole RecordStore contract runs against it too
(tests/contract/test_record_store_async.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from reverie.core.errors import BackendUnavailable, ConflictError, InvalidInput, LockBusy
from reverie.core.models import Edge, EdgeType, Status
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from reverie.integrations.redis.async_store import AsyncRedisStore
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import T0, make_memory
from tests.servers import RedisCluster, make_tls_files, start_redis


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


def test_journal_meta_and_namespace_deletion_agree_with_sync(url: str, prefix: str) -> None:
    """What one store writes of the maintenance state, the other reads and deletes."""
    kept = make_memory(id="k", namespace="keep", text="kept by the other tenant")
    gone = make_memory(id="g", text="dropped with its namespace", entities={"maya"})
    with RedisStore.from_url(url, prefix=prefix) as sync:
        sync.commit(WriteBatch("ns", (gone,), (Edge("g", "x", EdgeType.ENTITY, 0.5),)))
        sync.commit(WriteBatch("keep", (kept,)))
        sync.journal_put("ns", "fp-sync", {"step": "planned", "members": ["g"]})

        async def scenario() -> None:
            store = await AsyncRedisStore.open(url, prefix=prefix)
            try:
                assert await store.journal_get("ns", "fp-sync") == {
                    "step": "planned", "members": ["g"]}
                await store.journal_put("keep", "fp-async", {"step": "done", "n": 2})
                await store.set_meta("embedder", "bge-small/384")
                assert await store.created_times("ns", ["g", "k"]) == {"g": gone.created_at}
                assert await store.namespaces() == ["keep", "ns"]
                assert await store.delete_namespace("ns") == 1
                assert await store.delete_namespace("ns") == 0
                assert await store.namespaces() == ["keep"]
            finally:
                await store.aclose()

        asyncio.run(scenario())
        assert sync.journal_get("keep", "fp-async") == {"step": "done", "n": 2}
        assert sync.get_meta("embedder") == "bge-small/384"
        assert sync.get("ns", "g") is None and sync.journal_get("ns", "fp-sync") is None
        assert sync.edges("ns", ["g", "x"]) == [] and sync.find_by_entity("ns", "maya", 5) == []
        assert sync.count("ns")["total"] == 0 and sync.search("ns", "dropped", 5) == []
        assert sync.get("keep", "k") == kept
        # nothing of the namespace is left under its hash tag
        assert sync.client.keys(f"{prefix}:{{ns}}:*") == []


def test_every_operation_of_a_dead_or_closed_store_is_backend_unavailable(
    tmp_path: Path,
) -> None:
    server, url = start_redis(tmp_path / "dying")
    m = make_memory(id="m")
    calls = {
        "commit": lambda s: s.commit(WriteBatch("ns", (make_memory(id="n"),))),
        "get": lambda s: s.get("ns", "m"),
        "get_many": lambda s: s.get_many("ns", ["m"]),
        "created_times": lambda s: s.created_times("ns", ["m"]),
        "touch": lambda s: s.touch("ns", ["m"], T0, 4),
        "delete_namespace": lambda s: s.delete_namespace("ns"),
        "namespaces": lambda s: s.namespaces(),
        "get_meta": lambda s: s.get_meta("embedder"),
        "set_meta": lambda s: s.set_meta("embedder", "x"),
        "journal_get": lambda s: s.journal_get("ns", "fp"),
        "journal_put": lambda s: s.journal_put("ns", "fp", {"step": "done"}),
    }

    async def scenario() -> None:
        closed = await AsyncRedisStore.open(url, prefix="dead")
        store = await AsyncRedisStore.open(url, prefix="dead")
        try:
            await store.commit(WriteBatch("ns", (m,)))
            await closed.aclose()
            for call in calls.values():
                with pytest.raises(BackendUnavailable, match="closed"):
                    await call(closed)
            server.stop()
            for call in calls.values():
                with pytest.raises(BackendUnavailable):
                    await call(store)
            with pytest.raises(BackendUnavailable):
                async with store.lock("ns"):
                    pass
        finally:
            await store.aclose()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
    with pytest.raises(BackendUnavailable):  # opening pings: a dead URL fails at once
        asyncio.run(AsyncRedisStore.open(url))


def test_urls_password_database_tls_cluster_and_bad_ones(
    tmp_path: Path, redis_cluster: RedisCluster
) -> None:
    """The same URL rules as the sync store (one shared `open_client`)."""
    import redis.asyncio as aioredis

    pw_server, pw_url = start_redis(tmp_path / "pw", password="s3cret word")
    port = int(pw_url.rsplit(":", 1)[1].split("/")[0])
    tls = make_tls_files(tmp_path / "tls")
    tls_server, tls_url = start_redis(tmp_path / "tls-data", tls=tls)

    async def round_trip(url: str, memory_id: str) -> None:
        store = await AsyncRedisStore.open(url)
        try:
            await store.commit(WriteBatch("ns", (make_memory(id=memory_id),)))
            assert await store.get("ns", memory_id) is not None
        finally:
            await store.aclose()

    async def scenario() -> None:
        await round_trip(f"redis://:s3cret%20word@127.0.0.1:{port}/3", "in-db-3")
        await round_trip(f"{tls_url}?ssl_ca_certs={tls.ca}", "over-tls")
        for refused in (
            f"redis://:wrong@127.0.0.1:{port}/0",
            f"redis://127.0.0.1:{port}/0",  # no password at all
            tls_url,  # the test CA is not trusted
            tls_url.replace("rediss://", "redis://"),  # plain text to a TLS-only port
        ):
            with pytest.raises(BackendUnavailable):
                await AsyncRedisStore.open(refused)
        with pytest.raises(InvalidInput):
            await AsyncRedisStore.open("memcached://127.0.0.1:11211")
        clustered = await AsyncRedisStore.open(redis_cluster.url, prefix=f"u{uuid.uuid4().hex[:8]}")
        try:
            assert isinstance(clustered.client, aioredis.RedisCluster)
        finally:
            await clustered.aclose()

    try:
        asyncio.run(scenario())
        with redis.Redis(port=port, db=3, password="s3cret word") as raw3:
            assert raw3.exists("rv:{ns}:m:in-db-3") == 1
        with redis.Redis(port=port, db=0, password="s3cret word") as raw0:
            assert raw0.dbsize() == 0
    finally:
        pw_server.stop()
        tls_server.stop()
