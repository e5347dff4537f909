"""SQLite failures a user will meet, caused for real on a real database file: another
process holding the write lock past the busy timeout surfaces as `BackendUnavailable`
(retryable, with the path and a hint), and a file that is not a database as
`StoreCorrupt`; neither leaks a raw `sqlite3` error to the caller."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reverie.core.errors import BackendUnavailable, StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory


def test_a_write_lock_held_elsewhere_is_reported_as_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "reverie.db"
    store = SQLiteStore(path)
    first = make_memory()
    store.commit(WriteBatch("ns", (first,)))
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another process's long write transaction
        with pytest.raises(BackendUnavailable, match=r"locked.*retry later") as caught:
            store.commit(WriteBatch("ns", (make_memory(),)))
        assert str(path) in str(caught.value)
        assert not isinstance(caught.value, sqlite3.Error)
        assert store.get("ns", first.id) == first  # readers are not blocked (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    later = make_memory()
    store.commit(WriteBatch("ns", (later,)))  # the lock gone, writes go through again
    assert store.get("ns", later.id) == later
    store.close()


def test_a_file_that_is_not_a_database_is_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "reverie.db"
    path.write_bytes(b"these bytes are not an SQLite database file at all" * 100)
    with pytest.raises(StoreCorrupt) as caught:
        SQLiteStore(path)
    assert str(path) in str(caught.value)
