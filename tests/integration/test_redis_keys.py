"""The Redis key layout: one hash tag per namespace, hostile names rejected, and a
namespace's keys all on one Cluster slot (checked with redis-py's own slot function)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from reverie.core.errors import InvalidInput, InvalidNamespace
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.keys import NamespaceKeys, validate_prefix
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import make_memory


def every_key(k: NamespaceKeys) -> list[str]:
    return [
        k.seq, k.all, k.edges, k.doclen, k.doc, k.stats, k.journal, k.lock, k.registry,
        k.record("m{1}:x"), k.status("active"), k.tier("unit"), k.text_hash("ab" * 32),
        k.fact_key("semantic|a {b}|c"), k.entity("{maya}"), k.adjacency("id:with:colons"),
        k.term("paint"),
    ]


@pytest.mark.parametrize("ns", ["user/alice", "agent-7", "a.b@c+d=e", "x" * 128])
def test_every_key_of_a_namespace_is_on_its_slot(ns: str) -> None:
    keys = every_key(NamespaceKeys("rv", ns))
    assert all(key.startswith(f"rv:{{{ns}}}:") for key in keys)
    assert {key_slot(key.encode()) for key in keys} == {key_slot(ns.encode())}


@pytest.mark.parametrize(
    "ns",
    ["a*", "a:b", "{a}", "a}b", "a{b", "a b", "", "x" * 10_000, "a/", "a//b", "-a", "ä"],
)
def test_hostile_namespaces_are_rejected(ns: str) -> None:
    with pytest.raises(InvalidNamespace):
        NamespaceKeys("rv", ns)


@pytest.mark.parametrize("prefix", ["", "a{b}", "a:b", "a b", "*", "x" * 65])
def test_bad_prefixes_are_rejected(prefix: str) -> None:
    with pytest.raises(InvalidInput):
        validate_prefix(prefix)


def test_ids_and_texts_cannot_escape_their_namespace(redis_url: str) -> None:
    """Ids, keys and entities full of braces and colons stay inside the namespace's keys."""
    with RedisStore.from_url(redis_url, prefix="esc") as store:
        try:
            m = make_memory(namespace="one", id="x}:{two}:m:y", text="{two} *:* escape",
                            entities={"{two}", "a:b"}, key="k}{two")
            store.commit(WriteBatch("one", (m,)))
            for key in store.client.keys("esc:*"):  # a test may look; the store never does
                assert key.startswith(("esc:{one}:", "esc:namespaces")), key
            assert store.get("two", "y") is None and list(store.scan("two")) == []
            assert store.get("one", m.id) == m
        finally:
            for ns in store.namespaces():
                store.delete_namespace(ns)
