"""The consolidation journal on Redis, beyond the contract's round trip, for the sync and
the asyncio store (through its blocking face): a damaged entry is reported as
`StoreCorrupt` (resuming consolidation from a guessed step would be worse), journals are
per namespace, and deleting a namespace deletes its journal."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from reverie.core.errors import StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.redis_keys import NamespaceKeys
from reverie.integrations.redis_store import RedisStore
from tests.blocking_async_store import BlockingAsyncStore
from tests.contract.conftest import make_memory


@pytest.fixture
def prefix() -> str:
    return f"j{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> Iterator[Any]:
    opened: Any = (
        RedisStore.from_url(redis_url, prefix=prefix)
        if request.param == "sync"
        else BlockingAsyncStore(redis_url, prefix=prefix)
    )
    with opened:
        yield opened
        for ns in opened.namespaces():
            opened.delete_namespace(ns)


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", '"a string"', "null"])
def test_a_damaged_entry_is_reported(
    store: Any, redis_url: str, prefix: str, damage: str
) -> None:
    store.journal_put("ns", "fp", {"step": "planned"})
    with redis.Redis.from_url(redis_url) as raw:  # damage from outside the store
        raw.hset(NamespaceKeys(prefix, "ns").journal, "fp", damage)
    with pytest.raises(StoreCorrupt):
        store.journal_get("ns", "fp")
    assert store.journal_get("ns", "other-fp") is None


def test_journals_are_per_namespace_and_go_with_it(store: Any) -> None:
    store.commit(WriteBatch("a", (make_memory(id="m", namespace="a"),)))
    store.commit(WriteBatch("b", (make_memory(id="m", namespace="b"),)))
    store.journal_put("a", "fp", {"step": "synthesized", "members": ["x", "y"]})
    store.journal_put("b", "fp", {"step": "done"})
    assert store.journal_get("a", "fp") == {"step": "synthesized", "members": ["x", "y"]}
    assert store.delete_namespace("a") == 1
    assert store.journal_get("a", "fp") is None
    assert store.journal_get("b", "fp") == {"step": "done"}
