"""A Redis write that loses its WATCH race, on a real redis-server and a real Cluster.

Every `RedisStore.commit` WATCHes the keys that decide its outcome, reads, plans and runs
MULTI/EXEC (`redis.plan`). Here a second store, on its own connection, really does write
one of those keys between the first write's read and its EXEC, so the server aborts the
EXEC (redis-py's `WatchError`). What a user relies on: the loser reads again and
retries, so two writers touching the same edge hash both land with nothing lost; a loser
whose compare-and-set no longer holds after the re-read fails with `ConflictError` and
applies nothing; a loser whose text another writer just stored fails with
`ConflictError` too, so one text is never stored twice. Every secondary index agrees
with the records afterwards (`redis_consistency.index_problems`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reverie.core.errors import ConflictError
from reverie.core.models import Edge, EdgeType
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import make_memory
from tests.integration.redis_consistency import index_problems

NS = "races"


@pytest.fixture(params=["redis", "redis-cluster"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[RedisStore, RedisStore]]:
    """Two stores on one server and key prefix, each with its own client: two workers."""
    url = (
        str(request.getfixturevalue("redis_url"))
        if request.param == "redis"
        else request.getfixturevalue("redis_cluster").url
    )
    prefix = f"w{uuid.uuid4().hex[:12]}"
    first, second = RedisStore.from_url(url, prefix=prefix), RedisStore.from_url(url, prefix=prefix)
    try:
        yield first, second
    finally:
        for ns in first.namespaces():
            first.delete_namespace(ns)
        first.close()
        second.close()


def race_once(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch, other_write: Callable[[], None]
) -> list[str]:
    """Make `other_write` (another store's commit) run after `store`'s next write has
    read what it WATCHes and before its EXEC, once. Returns one entry per time the
    write planned: "raced" for the planning the other write overtook, "again" after."""
    planned: list[str] = []
    plain = store._plan

    def racing(batch: Any) -> Any:
        if planned:
            planned.append("again")
            return plain(batch)
        commands = plain(batch)
        other_write()  # a real write on another connection, to a watched key
        planned.append("raced")
        return commands

    monkeypatch.setattr(store, "_plan", racing)
    return planned


def test_a_write_that_loses_the_race_on_the_edge_hash_retries_and_both_land(
    pair: tuple[RedisStore, RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = pair
    base = make_memory(namespace=NS, text="the project kickoff is on monday")
    peer = make_memory(namespace=NS, text="the kickoff agenda has four items")
    store.commit(WriteBatch(NS, (base, peer)))
    mine = make_memory(namespace=NS, text="alice leads the kickoff")
    theirs = make_memory(namespace=NS, text="bob books the room for the kickoff")
    # both writers also link peer to base; an edge written twice keeps its higher weight
    planned = race_once(
        store,
        monkeypatch,
        lambda: other.commit(
            WriteBatch(
                NS,
                (theirs,),
                edges=(
                    Edge(theirs.id, base.id, EdgeType.ENTITY, 0.5),
                    Edge(peer.id, base.id, EdgeType.ENTITY, 0.9),
                ),
            )
        ),
    )

    store.commit(
        WriteBatch(
            NS,
            (mine,),
            edges=(
                Edge(mine.id, base.id, EdgeType.ENTITY, 0.7),
                Edge(peer.id, base.id, EdgeType.ENTITY, 0.4),
            ),
        )
    )

    # the first EXEC was aborted by the server and the write planned again from a re-read
    assert planned == ["raced", "again"]
    assert store.get(NS, mine.id) == mine
    assert store.get(NS, theirs.id) == theirs
    edges = {(e.src, e.dst, e.type, e.weight) for e in store.edges(NS, [base.id])}
    assert edges == {
        (mine.id, base.id, EdgeType.ENTITY, 0.7),
        (theirs.id, base.id, EdgeType.ENTITY, 0.5),
        (peer.id, base.id, EdgeType.ENTITY, 0.9),  # not the loser's stale 0.4
    }
    assert store.count(NS)["total"] == 4
    assert index_problems(store.client, NS, store.prefix) == []


def test_a_loser_whose_compare_and_set_fails_after_the_re_read_applies_nothing(
    pair: tuple[RedisStore, RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = pair
    v1 = make_memory(namespace=NS, text="the rent is 900 euros")
    store.commit(WriteBatch(NS, (v1,)))
    theirs = v1.evolve(text="the rent is 950 euros")
    mine = v1.evolve(text="the rent is 1000 euros")
    planned = race_once(store, monkeypatch, lambda: other.commit(WriteBatch(NS, (theirs,))))

    with pytest.raises(ConflictError):
        store.commit(WriteBatch(NS, (mine,)))

    assert planned == ["raced", "again"]  # it re-read before refusing
    assert store.get(NS, v1.id) == theirs  # the winner's version, untouched
    assert store.find_by_hash(NS, content_hash(mine.text)) is None
    assert store.find_by_hash(NS, content_hash(theirs.text)) == theirs
    assert index_problems(store.client, NS, store.prefix) == []


def test_two_writers_storing_one_text_at_once_store_it_once(
    pair: tuple[RedisStore, RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = pair
    text = "the spare key is under the blue flower pot"
    theirs = make_memory(namespace=NS, text=text)
    mine = make_memory(namespace=NS, text=text)
    planned = race_once(store, monkeypatch, lambda: other.commit(WriteBatch(NS, (theirs,))))

    with pytest.raises(ConflictError):
        store.commit(WriteBatch(NS, (mine,)))

    assert planned == ["raced", "again"]
    assert store.get(NS, mine.id) is None
    assert store.find_by_hash(NS, content_hash(text)) == theirs
    assert store.count(NS)["total"] == 1
    assert index_problems(store.client, NS, store.prefix) == []
