"""touch_many on SQLite, Redis and Redis Cluster: a burst of
recalls' touches in one transaction must leave every record exactly as the same touches
one by one would (counts, last access, the window of recent accesses, versions)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core import InvalidInput
from reverie.core.ports import WriteBatch
from reverie.integrations.redis import reads as redis_reads
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import T0, make_memory


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens empty stores of one kind (each its own file or key prefix)."""
    made: list[Any] = []

    def open_one() -> Any:
        if request.param == "sqlite":
            store: Any = SQLiteStore(tmp_path / f"{uuid.uuid4().hex}.db")
        else:
            url = (str(request.getfixturevalue("redis_url")) if request.param == "redis"
                   else request.getfixturevalue("redis_cluster").url)
            store = RedisStore.from_url(url, prefix=f"t{uuid.uuid4().hex[:12]}")
        made.append(store)
        return store

    yield open_one
    for store in made:
        if not isinstance(store, SQLiteStore):
            for ns in store.namespaces():
                store.delete_namespace(ns)
        store.close()


def test_touch_many_equals_the_same_touches_one_by_one(open_store: Callable[[], Any]) -> None:
    memories = [make_memory() for _ in range(4)]
    a, b, c, d = (m.id for m in memories)
    events = [
        ([a, b], T0 + timedelta(hours=1)),
        ([a, a, c], T0 + timedelta(hours=2)),  # listed twice: one access
        (["unknown", b], T0 + timedelta(hours=3)),
        ([a], T0 + timedelta(hours=4)),
        ([a], T0 + timedelta(hours=5)),
    ]
    one_by_one, batched = open_store(), open_store()
    for store in (one_by_one, batched):
        store.commit(WriteBatch("ns", puts=memories))
    for ids, at in events:
        one_by_one.touch("ns", ids, at, 3)
    batched.touch_many("ns", events, 3)
    ids = [a, b, c, d]
    assert batched.get_many("ns", ids) == one_by_one.get_many("ns", ids)
    got = batched.get("ns", a)
    assert got is not None and got.access_count == 4 and got.version == 5
    assert got.recent_accesses == tuple(T0 + timedelta(hours=h) for h in (2, 4, 5))
    assert batched.get("ns", d) == memories[3]  # untouched


def test_a_touch_of_more_ids_than_a_chunk_counts_each_once(
    open_store: Callable[[], Any],
) -> None:
    """620 ids span two write chunks (500 + 120): each is one access, not one per chunk."""
    store = open_store()
    memories = [make_memory() for _ in range(620)]
    store.commit(WriteBatch("ns", puts=memories))
    ids = [m.id for m in memories]
    store.touch("ns", ids, T0 + timedelta(hours=1), 3)
    store.touch_many("ns", [(ids[:10], T0 + timedelta(hours=2)), (ids, T0 + timedelta(hours=3))], 3)
    got = store.get_many("ns", ids)
    assert [m.access_count for m in got.values()] == [3] * 10 + [2] * 610
    assert {m.version for m in got.values()} == {4, 3}


def test_touch_many_writes_nothing_on_bad_input(open_store: Callable[[], Any]) -> None:
    store = open_store()
    m = make_memory()
    store.commit(WriteBatch("ns", puts=[m]))
    with pytest.raises(InvalidInput):
        store.touch_many("ns", [([m.id], T0)], 0)
    with pytest.raises(InvalidInput):
        store.touch_many("bad namespace!", [([m.id], T0)], 3)
    assert store.get("ns", m.id) == m
    store.touch_many("ns", [], 3)  # nothing to do
    assert store.get("ns", m.id) == m


@pytest.mark.parametrize("flavour", ["redis", "redis-cluster"])
def test_a_redis_touch_that_loses_a_race_reads_again_and_counts_once(
    flavour: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between a touch's read and its compare-and-set another process touches the same
    record: the set must not apply (it would lose that access), and the retry counts both."""
    url = (str(request.getfixturevalue("redis_url")) if flavour == "redis"
           else request.getfixturevalue("redis_cluster").url)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store, other = RedisStore.from_url(url, prefix=prefix), RedisStore.from_url(url, prefix=prefix)
    try:
        m = make_memory()
        store.commit(WriteBatch("ns", puts=[m]))
        plain = redis_reads.touch_chunk
        outcomes: list[bool] = []

        def racing(*args: Any) -> Any:
            steps = plain(*args)
            request_ = next(steps)
            raced = False
            try:
                while True:
                    reply = yield request_
                    if not outcomes and not raced:  # after the first read only
                        raced = True
                        outcomes.append(True)
                        other.touch("ns", [m.id], T0 + timedelta(hours=1), 3)
                    request_ = steps.send(reply)
            except StopIteration as done:
                outcomes.append(done.value[0])
                return done.value

        monkeypatch.setattr(redis_reads, "touch_chunk", racing)
        store.touch("ns", [m.id], T0 + timedelta(hours=2), 3)
        got = store.get("ns", m.id)
        assert got is not None and got.access_count == 2 and got.version == 3
        assert got.recent_accesses == (T0 + timedelta(hours=1), T0 + timedelta(hours=2))
        # the race, the other store's own touch, the lost set, the retry that wrote
        assert outcomes == [True, True, False, True]
    finally:
        store.delete_namespace("ns")
        store.close()
        other.close()


def test_lost_races_back_off_briefly_then_give_up_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every optimistic Redis write (WATCH/EXEC and the touch's compare-and-set)
    retries through one budget: short random waits, then `BackendUnavailable`."""
    from reverie.core.errors import BackendUnavailable
    from reverie.integrations.redis import connection

    races = connection.LostRaces("redis://x", "a touch")
    waits = [races.lost() for _ in range(50)]
    assert all(0 <= w <= connection._BACKOFF_MAX_S for w in waits)
    monkeypatch.setattr(connection, "_WRITE_DEADLINE_S", -1.0)  # already past the budget
    with pytest.raises(BackendUnavailable, match="a touch lost 1 races in a row"):
        connection.LostRaces("redis://x", "a touch").lost()
