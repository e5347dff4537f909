"""SQLite stores that cannot be used as they are, each condition caused for real on real
files: pages of the records table overwritten on disk (`StoreCorrupt` on the reads and
writes that meet them, the file left as it was), a file system that fills up
(`StorageFull`, writes resume once there is room), a store on a file system mounted
read-only, a store whose write-ahead log cannot be opened, and a store path that runs
through a regular file. The last three are `BackendUnavailable` saying what to fix, never
`StoreCorrupt` (the file is fine, and a user told it is damaged may delete it) and never
a raw `sqlite3` or `OSError`.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.core.errors import BackendUnavailable, ReverieError, StorageFull, StoreCorrupt
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory
from tests.servers import small_tmpfs

NS = "ns"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pages_digest(path: Path) -> str:
    """The file past SQLite's 100-byte header, whose change counter any open may bump."""
    return hashlib.sha256(path.read_bytes()[100:]).hexdigest()


def filled(path: Path, n: int = 120) -> list[str]:
    """A closed store at `path` holding `n` memories of some length; their ids."""
    memories = [
        make_memory(namespace=NS, text=f"note {i} " + "lorem ipsum " * 40) for i in range(n)
    ]
    store = SQLiteStore(path)
    try:
        store.commit(WriteBatch(NS, tuple(memories)))
    finally:
        store.close()
    return [m.id for m in memories]


def overwrite_record_pages(path: Path) -> int:
    """Overwrite every leaf page of the records table with 0xFF bytes, as a failing disk
    or a stray write would; the schema pages stay intact, so the file still opens."""
    conn = sqlite3.connect(path)
    try:
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = [
            r[0]
            for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf'"
            )
        ]
    finally:
        conn.close()
    assert pages, "the records table has no leaf pages to damage"
    with path.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * page_size)
            f.write(b"\xff" * page_size)
    return len(pages)


def test_damaged_record_pages_are_store_corrupt_and_the_file_is_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reverie.db"
    ids = filled(path)
    overwrite_record_pages(path)
    before = pages_digest(path)

    store = SQLiteStore(path)  # the schema is intact: the damage shows where it is read
    try:
        reads = [
            lambda: store.get(NS, ids[60]),
            lambda: store.get_many(NS, ids),
            lambda: list(store.scan(NS)),
            lambda: store.search(NS, "lorem", 3),
        ]
        for read in reads:
            with pytest.raises(StoreCorrupt, match="is damaged") as caught:
                read()
            assert str(path) in str(caught.value)
            assert "restore the store from a backup" in str(caught.value)
        with pytest.raises(StoreCorrupt):
            store.commit(WriteBatch(NS, (make_memory(namespace=NS, text="a new note"),)))
    finally:
        store.close()
    assert pages_digest(path) == before  # reverie did not touch the damaged pages


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A real 5 MB tmpfs of the test's own (tests run as root, like the full-disk test)."""
    with small_tmpfs(tmp_path / "disk") as where:
        yield where


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


def test_a_store_on_a_read_only_file_system_is_unavailable_not_corrupt(mount: Path) -> None:
    path = mount / "reverie.db"
    ids = filled(path, 5)
    before = digest(path)
    remount(mount, "ro")
    try:
        with pytest.raises(BackendUnavailable) as caught:
            SQLiteStore(path)
        assert not isinstance(caught.value, StoreCorrupt)
        text = str(caught.value)
        assert str(path) in text and "read-only" in text and "writable" in text
        with pytest.raises(BackendUnavailable):
            SQLiteStore(mount / "new.db")  # nor can a new store be made there
    finally:
        remount(mount, "rw")
    assert digest(path) == before
    store = SQLiteStore(path)  # writable again: everything is there
    try:
        assert set(store.get_many(NS, ids)) == set(ids)
    finally:
        store.close()


def test_a_write_ahead_log_that_cannot_be_opened_is_unavailable_not_corrupt(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reverie.db"
    ids = filled(path, 5)
    wal = tmp_path / "reverie.db-wal"
    assert not wal.exists()  # the last close checkpointed and removed it
    wal.mkdir()  # something else holds the log's name: SQLite cannot open the log
    try:
        with pytest.raises(BackendUnavailable, match="-wal") as caught:
            SQLiteStore(path)
        assert not isinstance(caught.value, StoreCorrupt)
    finally:
        wal.rmdir()
    store = SQLiteStore(path)
    try:
        assert set(store.get_many(NS, ids)) == set(ids)
    finally:
        store.close()


def test_a_store_path_through_a_regular_file_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a user's file, not a folder")
    with pytest.raises(BackendUnavailable, match="check the path") as caught:
        SQLiteStore(blocker / "reverie" / "reverie.db")
    assert isinstance(caught.value, ReverieError)
    assert blocker.read_text() == "a user's file, not a folder"


def test_a_full_file_system_is_storage_full_and_writes_resume_once_space_is_freed(
    mount: Path,
) -> None:
    """The store alone on a real 5 MB file system (no vector index beside it), filled by
    commits until the disk refuses: `StorageFull`, nothing of the refused batch applied,
    every acknowledged write readable; once a file is deleted, writes go through again."""
    ballast = mount / "ballast"
    ballast.write_bytes(b"\0" * (1024 * 1024))  # what the user deletes to make room
    path = mount / "reverie.db"
    acknowledged: list[str] = []
    refused: list[str] = []
    store = SQLiteStore(path)
    try:
        for i in range(2000):  # 5 MB fills long before
            batch = [
                make_memory(namespace=NS, text=f"entry {i}.{j} " + "word " * 150) for j in range(5)
            ]
            try:
                store.commit(WriteBatch(NS, tuple(batch)))
            except StorageFull as e:
                assert "free disk space" in str(e) and str(path) in str(e)
                refused = [m.id for m in batch]
                break
            acknowledged += [m.id for m in batch]
        assert refused, "the file system never filled up"
        assert acknowledged
        assert set(store.get_many(NS, acknowledged)) == set(acknowledged)
        assert store.get_many(NS, refused) == {}
        ballast.unlink()
        later = make_memory(namespace=NS, text="written once there is room again")
        store.commit(WriteBatch(NS, (later,)))
        acknowledged.append(later.id)
    finally:
        store.close()
    store = SQLiteStore(path)
    try:
        assert set(store.get_many(NS, acknowledged)) == set(acknowledged)
    finally:
        store.close()
