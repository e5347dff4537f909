"""RedisStore.created_times (recall's light read for conversation context) against a real
redis-server: the creation times of the records, per namespace, unknown ids left out, and a
damaged record reported, not guessed. The same assertions hold for AsyncRedisStore (run
through its blocking face)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis

from reverie.core.errors import StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.redis_keys import NamespaceKeys
from reverie.integrations.redis_store import RedisStore
from tests.blocking_async_store import BlockingAsyncStore
from tests.contract.conftest import T0, make_memory


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> Iterator[Any]:
    opened: Any = (
        RedisStore.from_url(redis_url, prefix=prefix)
        if request.param == "sync"
        else BlockingAsyncStore(redis_url, prefix=prefix)
    )
    with opened:
        yield opened


def test_created_times_match_the_records(store: Any) -> None:
    a = make_memory(id="a", created_at=T0 + timedelta(seconds=30, microseconds=7))
    b = make_memory(id="b", created_at=T0 + timedelta(days=3))
    elsewhere = make_memory(id="a", namespace="other", created_at=T0 + timedelta(days=9))
    store.commit(WriteBatch("ns", (a, b)))
    store.commit(WriteBatch("other", (elsewhere,)))
    got = store.created_times("ns", ["b", "a", "unknown", "a"])
    assert got == {"a": a.created_at, "b": b.created_at}
    assert store.created_times("other", ["a"]) == {"a": elsewhere.created_at}
    assert store.created_times("ns", []) == {}
    # the same answer the full records give
    full = store.get_many("ns", ["a", "b"])
    assert got == {i: m.created_at for i, m in full.items()}


def test_a_damaged_record_is_reported(store: Any, redis_url: str, prefix: str) -> None:
    store.commit(WriteBatch("ns", (make_memory(id="a"),)))
    with redis.Redis.from_url(redis_url) as raw:  # damage from outside the store
        raw.set(NamespaceKeys(prefix, "ns").record("a"), "{not json")
    with pytest.raises(StoreCorrupt):
        store.created_times("ns", ["a"])
