"""RedisStore.created_times (recall's light read for conversation context) against a real
redis-server: the creation times of the records, per namespace, unknown ids left out, and a
damaged record reported, not guessed."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis

from reverie.core.errors import StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import T0, make_memory


def test_created_times_match_the_records(redis_store: RedisStore) -> None:
    store = redis_store
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


def test_a_damaged_record_is_reported(
    redis_store: RedisStore, redis_url: str, redis_prefix: str
) -> None:
    store = redis_store
    store.commit(WriteBatch("ns", (make_memory(id="a"),)))
    with redis.Redis.from_url(redis_url) as raw:  # damage from outside the store
        raw.set(NamespaceKeys(redis_prefix, "ns").record("a"), "{not json")
    with pytest.raises(StoreCorrupt):
        store.created_times("ns", ["a"])
