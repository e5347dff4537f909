"""Backend failures come out typed and say what to fix, on real servers and files:
refused Redis credentials (`AuthFailed`), a Redis ACL user without a command
(`PermissionDenied`), a Redis Cluster URL pointed at a plain server (`WrongServerKind`),
a full SQLite store (`StorageFull`, the store still readable) and a locked one
(`BackendUnavailable`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from reverie.core.errors import (
    AuthFailed,
    BackendUnavailable,
    InvalidInput,
    PermissionDenied,
    ReverieError,
    StorageFull,
    WrongServerKind,
)
from reverie.core.ports import WriteBatch
from reverie.integrations.factory import open_store
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory
from tests.servers import ServerProcess, start_redis

ADMIN_PW = "adm-Pq3rT9"
READER_PW = "rd-Lk4mN2"
NOBODY_PW = "nb-Xw8yZ1"


@pytest.fixture(scope="module")
def acl_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A Redis with `requirepass` and two ACL users: `reader` may only read (and PING),
    `nobody` may run nothing at all."""
    server: ServerProcess
    server, url = start_redis(tmp_path_factory.mktemp("redis-acl") / "data", password=ADMIN_PW)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    admin = redis.Redis(port=port, password=ADMIN_PW)
    try:
        admin.execute_command(
            "ACL", "SETUSER", "reader", "on", f">{READER_PW}", "~*", "&*",
            "+@read", "+@connection", "-@write",
        )
        admin.execute_command("ACL", "SETUSER", "nobody", "on", f">{NOBODY_PW}", "~*", "-@all")
        yield port
    finally:
        admin.close()
        server.stop()


def _open(url: str) -> RedisStore:
    store = open_store(url, Path("unused"))
    assert isinstance(store, RedisStore)
    return store


def _says_what_to_fix(e: ReverieError) -> str:
    text = str(e)
    assert "check that the server is up" not in text
    return text


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:{port}/0",  # no password on a requirepass server (NOAUTH)
        "redis://:wrong-pw@127.0.0.1:{port}/0",  # wrong password (WRONGPASS)
        "redis://reader:wrong-pw@127.0.0.1:{port}/0",  # an ACL user, wrong password
        "redis://ghost:whatever@127.0.0.1:{port}/0",  # no such user
    ],
)
def test_refused_credentials_are_auth_failed(acl_redis: int, url: str) -> None:
    with pytest.raises(AuthFailed) as refused:
        _open(url.format(port=acl_redis))
    text = _says_what_to_fix(refused.value)
    assert "password" in text
    assert "wrong-pw" not in text and "whatever" not in text
    assert isinstance(refused.value, BackendUnavailable)  # callers catching outages still do


def test_read_only_acl_user_gets_permission_denied(acl_redis: int) -> None:
    store = _open(f"redis://reader:{READER_PW}@127.0.0.1:{acl_redis}/0")
    try:
        assert store.get("ns", "absent") is None  # reads are allowed
        with pytest.raises(PermissionDenied) as denied:
            store.commit(WriteBatch("ns", (make_memory(text="a write the user may not do"),)))
        text = _says_what_to_fix(denied.value)
        assert "ACL SETUSER" in text
        assert READER_PW not in text
    finally:
        store.close()
    admin = redis.Redis(port=acl_redis, password=ADMIN_PW)
    try:
        assert admin.dbsize() == 0  # nothing of the refused write was applied
    finally:
        admin.close()


def test_user_without_any_command_is_denied_on_open(acl_redis: int) -> None:
    with pytest.raises(PermissionDenied) as denied:
        _open(f"redis://nobody:{NOBODY_PW}@127.0.0.1:{acl_redis}/0")
    assert NOBODY_PW not in _says_what_to_fix(denied.value)


def test_cluster_url_on_a_plain_server(acl_redis: int) -> None:
    with pytest.raises(WrongServerKind) as wrong:
        open_store(f"redis+cluster://:{ADMIN_PW}@127.0.0.1:{acl_redis}", Path("unused"))
    text = str(wrong.value)
    assert "not a Redis Cluster" in text
    assert f"redis://:***@127.0.0.1:{acl_redis}" in text
    assert ADMIN_PW not in text
    assert isinstance(wrong.value, InvalidInput)


# --- SQLite ---------------------------------------------------------------------------------


def test_full_store_is_storage_full_and_stays_readable(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "full.db")
    try:
        kept = make_memory(text="written before the disk filled up")
        store.commit(WriteBatch("ns", (kept,)))
        conn = store._db.connection()
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the file cannot grow past this
        big = [make_memory(text=f"memory {i} " + "filler text " * 300) for i in range(40)]
        with pytest.raises(StorageFull) as full:
            store.commit(WriteBatch("ns", tuple(big)))
        assert "free disk space" in str(full.value)
        assert isinstance(full.value, BackendUnavailable)
        # the failed write applied nothing, and the store still answers
        got = store.get("ns", kept.id)
        assert got is not None and got.text == kept.text
        assert all(store.get("ns", m.id) is None for m in big)
        assert sum(store.count("ns").values()) >= 1
        # once there is room again, writes go through
        conn.execute("PRAGMA max_page_count = 1073741823")
        store.commit(WriteBatch("ns", tuple(big)))
        assert store.get("ns", big[-1].id) is not None
    finally:
        store.close()


def test_locked_store_stays_backend_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    SQLiteStore(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    store = SQLiteStore(path)
    try:
        store._db.connection().execute("PRAGMA busy_timeout = 50")
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(BackendUnavailable) as locked:
            store.commit(WriteBatch("ns", (make_memory(text="waits for the lock"),)))
        assert not isinstance(locked.value, StorageFull)
        assert "locked" in str(locked.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()


@pytest.mark.parametrize(("mode", "level"), [("NORMAL", 1), ("full", 2)])
def test_sqlite_synchronous_setting(tmp_path: Path, mode: str, level: int) -> None:
    store = SQLiteStore(tmp_path / "sync.db", synchronous=mode)
    try:
        conn = store._db.connection()
        assert int(conn.execute("PRAGMA synchronous").fetchone()[0]) == level
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()
    with pytest.raises(InvalidInput):
        SQLiteStore(tmp_path / "other.db", synchronous="OFF")
