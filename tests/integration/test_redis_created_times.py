"""RedisStore.created_times (recall's light read for conversation context) against a real
redis-server: the creation times of the records, per namespace, unknown ids left out, and a
damaged record reported, not guessed."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from reverie.core.errors import StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.redis_store import RedisStore
from tests.contract.conftest import T0, make_memory


def test_created_times_match_the_records(redis_url: str) -> None:
    a = make_memory(id="a", created_at=T0 + timedelta(seconds=30, microseconds=7))
    b = make_memory(id="b", created_at=T0 + timedelta(days=3))
    elsewhere = make_memory(id="a", namespace="other", created_at=T0 + timedelta(days=9))
    with RedisStore.from_url(redis_url, prefix=f"t{uuid.uuid4().hex[:8]}") as store:
        store.commit(WriteBatch("ns", (a, b)))
        store.commit(WriteBatch("other", (elsewhere,)))
        got = store.created_times("ns", ["b", "a", "unknown", "a"])
        assert got == {"a": a.created_at, "b": b.created_at}
        assert store.created_times("other", ["a"]) == {"a": elsewhere.created_at}
        assert store.created_times("ns", []) == {}
        # the same answer the full records give
        full = store.get_many("ns", ["a", "b"])
        assert got == {i: m.created_at for i, m in full.items()}


def test_a_damaged_record_is_reported(redis_url: str) -> None:
    with RedisStore.from_url(redis_url, prefix=f"t{uuid.uuid4().hex[:8]}") as store:
        store.commit(WriteBatch("ns", (make_memory(id="a"),)))
        store.client.set(store._keys("ns").record("a"), "{not json")
        with pytest.raises(StoreCorrupt):
            store.created_times("ns", ["a"])
