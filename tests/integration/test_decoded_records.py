"""Stores decode each exact record text once (core.codec.DecodedRecords). What a user relies
on: a read never returns a stale memory, whoever changed it (this store, another store
object on the same data: another process's view), and editing what was read changes
nothing stored or read later."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from reverie.core.models import Status
from reverie.core.ports import RecordStore, WriteBatch
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import T0, make_memory

Pair = tuple[RecordStore, RecordStore]


@pytest.fixture(params=["sqlite", "redis"])
def two_views(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    """Two store objects on the same data, each with its own connection."""
    if request.param == "sqlite":
        path = tmp_path / "reverie.db"
        make: Callable[[], RecordStore] = lambda: SQLiteStore(path)  # noqa: E731
    else:
        url, prefix = request.getfixturevalue("redis_url"), f"t{uuid.uuid4().hex[:12]}"
        make = lambda: RedisStore.from_url(url, prefix=prefix)  # noqa: E731
    a, b = make(), make()
    try:
        yield a, b
    finally:
        for ns in a.namespaces():
            a.delete_namespace(ns)
        a.close()
        b.close()


def test_a_change_by_another_writer_is_read_at_once(two_views: Pair) -> None:
    reader, writer = two_views
    m = make_memory()
    writer.commit(WriteBatch("ns", puts=[m]))
    assert reader.get_many("ns", [m.id])[m.id] == m  # decoded and kept by the reader
    writer.touch("ns", [m.id], T0 + timedelta(days=1), 5)
    again = reader.get_many("ns", [m.id])[m.id]
    assert (again.access_count, again.version) == (1, 2)
    changed = again.evolve(importance=0.9, version=3)
    writer.commit(WriteBatch("ns", puts=[changed]))
    assert reader.get("ns", m.id) == changed
    writer.delete("ns", [m.id])
    assert reader.get_many("ns", [m.id]) == {} and reader.get("ns", m.id) is None


def test_a_restore_of_the_same_version_with_other_content_is_read_as_written(
    two_views: Pair,
) -> None:
    """Import writes records as given, version included: the memo must key on content,
    not on the version number."""
    reader, writer = two_views
    m = make_memory()
    writer.commit(WriteBatch("ns", puts=[m]))
    assert reader.get("ns", m.id) == m
    edited = m.evolve(importance=0.25)  # same id, same version
    writer.commit(WriteBatch("ns", puts=[edited], restore=True))
    assert reader.get("ns", m.id) == edited


def test_what_a_caller_does_to_a_read_memory_changes_nothing(two_views: Pair) -> None:
    store, _ = two_views
    m = make_memory(metadata={"profile": {"city": "Lisbon"}})
    plain = make_memory()
    store.commit(WriteBatch("ns", puts=[m, plain]))
    got = store.get_many("ns", [m.id, plain.id])
    got[m.id].metadata["profile"]["city"] = "Porto"  # type: ignore[index]
    assert store.get("ns", m.id) == m
    assert store.get("ns", m.id).metadata == {"profile": {"city": "Lisbon"}}  # type: ignore[union-attr]
    assert store.get("ns", plain.id) == plain


def test_the_sqlite_store_can_keep_fewer_or_no_decoded_records(tmp_path: Path) -> None:
    path = tmp_path / "reverie.db"
    writer = SQLiteStore(path)
    memories = [make_memory() for _ in range(3)]
    writer.commit(WriteBatch("ns", puts=memories))
    for size, kept in ((0, 0), (2, 2)):
        reader = SQLiteStore(path, decoded_records=size)
        got = reader.get_many("ns", [m.id for m in memories])
        assert list(got.values()) == memories and len(reader._decoded) == kept
        reader.close()
    writer.close()


def test_a_write_keeps_its_active_records_decoded_and_not_the_retired(tmp_path: Path) -> None:
    """The writer's next recall reads its new memories back, so they stay decoded; a
    REM cycle retires thousands of members no recall returns, and remembering them
    would push the active ones out of the cache."""
    with SQLiteStore(tmp_path / "reverie.db", decoded_records=10) as store:
        kept, retired = make_memory(), make_memory()
        store.commit(WriteBatch("ns", puts=(kept, retired)))
        assert len(store._decoded) == 2
        store.commit(WriteBatch("ns", puts=(retired.evolve(status=Status.CONSOLIDATED),)))
        assert len(store._decoded) == 2  # the retired version was not added
        assert {m.id: m.status for m in store._decoded._memo.values()} == {
            kept.id: Status.ACTIVE, retired.id: Status.ACTIVE}
