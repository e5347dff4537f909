"""The consolidation journal on Redis, beyond the contract's round trip: a damaged entry is
reported as `StoreCorrupt` (resuming consolidation from a guessed step would be worse),
journals are per namespace, and deleting a namespace deletes its journal."""

from __future__ import annotations

import pytest
import redis

from reverie.core.errors import StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import make_memory


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", '"a string"', "null"])
def test_a_damaged_entry_is_reported(
    redis_store: RedisStore, redis_url: str, redis_prefix: str, damage: str
) -> None:
    store = redis_store
    store.journal_put("ns", "fp", {"step": "planned"})
    with redis.Redis.from_url(redis_url) as raw:  # damage from outside the store
        raw.hset(NamespaceKeys(redis_prefix, "ns").journal, "fp", damage)
    with pytest.raises(StoreCorrupt):
        store.journal_get("ns", "fp")
    assert store.journal_get("ns", "other-fp") is None


def test_journals_are_per_namespace_and_go_with_it(redis_store: RedisStore) -> None:
    store = redis_store
    store.commit(WriteBatch("a", (make_memory(id="m", namespace="a"),)))
    store.commit(WriteBatch("b", (make_memory(id="m", namespace="b"),)))
    store.journal_put("a", "fp", {"step": "synthesized", "members": ["x", "y"]})
    store.journal_put("b", "fp", {"step": "done"})
    assert store.journal_get("a", "fp") == {"step": "synthesized", "members": ["x", "y"]}
    assert store.delete_namespace("a") == 1
    assert store.journal_get("a", "fp") is None
    assert store.journal_get("b", "fp") == {"step": "done"}
