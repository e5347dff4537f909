"""What `maintenance_due()` asks of a store without a scan: the time of the last write and
the newest active memories (`KnowsRecentWrites`), on SQLite, Redis and Redis Cluster. What a
user relies on: the same triggers fire as a scan of every record would give, while no record
outside the sample is read, and the answers survive reopening the store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import Policy, Status
from reverie.core.capabilities import resolve
from reverie.core.models import Memory
from reverie.core.ports import VectorItem, WriteBatch
from reverie.core.triggers import check_triggers
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.plan import LAST_WRITE
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import T0, make_memory

Store = SQLiteStore | RedisStore


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens the same store again on each call (one file, or one server and prefix)."""
    opened: list[Store] = []
    if request.param == "sqlite":
        def make() -> Store:
            opened.append(SQLiteStore(tmp_path / "m.db"))
            return opened[-1]
    else:
        url = (str(request.getfixturevalue("redis_url")) if request.param == "redis"
               else request.getfixturevalue("redis_cluster").url)
        prefix = f"t{uuid.uuid4().hex[:12]}"

        def make() -> Store:
            opened.append(RedisStore.from_url(url, prefix=prefix))
            return opened[-1]
    yield make
    if isinstance(opened[-1], RedisStore):
        last = make()
        for ns in last.namespaces():
            last.delete_namespace(ns)
    for store in opened:
        store.close()


def test_last_write_is_the_newest_write_and_survives_reopening(
    open_store: Callable[[], Store],
) -> None:
    with open_store() as store:
        assert store.last_write("ns") is None
        a = make_memory(id="a", namespace="ns", created_at=T0)
        b = make_memory(id="b", namespace="ns", created_at=T0 + timedelta(hours=5))
        store.commit(WriteBatch("ns", (a, b)))
        store.commit(WriteBatch("other", (
            make_memory(id="c", namespace="other", created_at=T0 + timedelta(days=9)),)))
        assert store.last_write("ns") == T0 + timedelta(hours=5)
        # an update later than every creation moves it; an older restore does not
        store.commit(WriteBatch("ns", (a.evolve(importance=0.9,
                                                updated_at=T0 + timedelta(days=2)),)))
        old = make_memory(id="d", namespace="ns", created_at=T0 - timedelta(days=30))
        store.commit(WriteBatch("ns", (old,), restore=True))
    with open_store() as store:
        assert store.last_write("ns") == T0 + timedelta(days=2)
        assert store.last_write("other") == T0 + timedelta(days=9)


def test_a_redis_namespace_written_before_the_kept_time_is_scanned_once(
    redis_url: str,
) -> None:
    with RedisStore.from_url(redis_url, prefix=f"t{uuid.uuid4().hex[:12]}") as store:
        a = make_memory(id="a", namespace="ns", created_at=T0 + timedelta(hours=3))
        store.commit(WriteBatch("ns", (a, make_memory(id="b", namespace="ns", created_at=T0))))
        kept = store._keys("ns").wrote
        store.client.delete(kept)  # as a store written before the time was kept
        assert store.last_write("ns") == T0 + timedelta(hours=3)
        assert store.client.zscore(kept, LAST_WRITE) is not None  # kept for the next call
        store.delete_namespace("ns")
        assert store.client.exists(kept) == 0
        assert store.last_write("ns") is None


def test_newest_active_reads_from_the_end_skipping_retired(
    open_store: Callable[[], Store],
) -> None:
    with open_store() as store:
        ms = [make_memory(id=f"m{i}", namespace="ns", text=f"text {i}") for i in range(6)]
        store.commit(WriteBatch("ns", tuple(ms)))
        store.commit(WriteBatch("ns", (ms[5].evolve(status=Status.SUPERSEDED),)))
        assert [m.id for m in store.newest_active("ns", 3)] == ["m2", "m3", "m4"]
        assert [m.id for m in store.newest_active("ns", 10)] == [f"m{i}" for i in range(5)]
        assert store.newest_active("ns", 0) == [] and store.newest_active("none", 3) == []


class _Counting:
    """The store, counting the records its scans hand out."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.scanned = 0

    def scan(self, namespace: str, **kw: Any) -> Iterator[Memory]:
        for m in self.inner.scan(namespace, **kw):
            self.scanned += 1
            yield m

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_due_triggers_match_a_full_scan_without_one(
    open_store: Callable[[], Store], tmp_path: Path,
) -> None:
    policy = Policy(trigger_node_count=50, trigger_idle_hours=1.0)
    rng = np.random.default_rng(1)
    base = rng.standard_normal(16).astype(np.float32)
    with open_store() as sqlite:
        store = _Counting(sqlite)
        index = ChromaIndex.embedded(tmp_path / "vectors")
        ms = [make_memory(id=f"m{i:03d}", namespace="ns", text=f"note {i}",
                          created_at=T0 + timedelta(minutes=i)) for i in range(120)]
        sqlite.commit(WriteBatch("ns", tuple(ms)))
        # the newest ten are near-duplicates of one another
        vecs = {m.id: (base + 0.01 * rng.standard_normal(16) if i >= 110
                       else rng.standard_normal(16)).astype(np.float32)
                for i, m in enumerate(ms)}
        for v in vecs.values():
            v /= np.linalg.norm(v)
        index.upsert("ns", [VectorItem(i, v, {"status": "active"}) for i, v in vecs.items()])

        def vectors_of(sample: Any) -> np.ndarray:
            return np.stack([vecs[m.id] for m in sample])

        caps = resolve(sqlite, index)
        assert caps.last_write is not None and caps.newest_active is not None
        now = T0 + timedelta(hours=7)
        direct = check_triggers(store, index, "ns", now, policy, [], vectors_of,
                                caps.last_write, caps.newest_active)
        assert store.scanned == 0
        by_scan = check_triggers(store, index, "ns", now, policy, [], vectors_of)
        assert store.scanned == 120
        assert direct == by_scan
        assert {t.name for t in direct} >= {"node_count", "idle", "near_duplicates"}
        idle = next(t for t in direct if t.name == "idle")
        assert idle.value == (7 * 60 - 119) / 60  # hours since the newest record
        index.close()
