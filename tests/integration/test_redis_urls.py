"""Opening the Redis tier by URL (`open_store`, what --store and $REVERIE_STORE use):
password, database number, TLS (rediss://) and cluster URLs, on real servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from reverie.core.errors import BackendUnavailable, InvalidInput
from reverie.core.ports import WriteBatch
from reverie.integrations.factory import open_store
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import make_memory
from tests.servers import RedisCluster, ServerProcess, make_tls_files, start_redis


@pytest.fixture
def password_server(tmp_path: Path) -> Iterator[tuple[ServerProcess, int]]:
    server, url = start_redis(tmp_path / "pw", password="s3cret word")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        yield server, port
    finally:
        server.stop()


def test_password_and_database_number(password_server: tuple[ServerProcess, int]) -> None:
    _, port = password_server
    store = open_store(f"redis://:s3cret%20word@127.0.0.1:{port}/3", Path("unused"))
    try:
        assert isinstance(store, RedisStore)
        store.commit(WriteBatch("ns", (make_memory(id="a", text="kept in database three"),)))
        got = store.get("ns", "a")
        assert got is not None and got.text == "kept in database three"
    finally:
        store.close()
    raw3 = redis.Redis(port=port, db=3, password="s3cret word", decode_responses=True)
    raw0 = redis.Redis(port=port, db=0, password="s3cret word", decode_responses=True)
    try:
        assert raw3.exists("rv:{ns}:m:a") == 1
        assert raw0.dbsize() == 0
    finally:
        raw3.close()
        raw0.close()
    with pytest.raises(BackendUnavailable):
        open_store(f"redis://:wrong@127.0.0.1:{port}/0", Path("unused"))
    with pytest.raises(BackendUnavailable):
        open_store(f"redis://127.0.0.1:{port}/0", Path("unused"))  # no password at all


def test_tls_with_the_servers_ca(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path / "tls")
    server, url = start_redis(tmp_path / "tls-data", tls=tls)
    try:
        assert url.startswith("rediss://")
        store = open_store(f"{url}?ssl_ca_certs={tls.ca}", Path("unused"))
        try:
            store.commit(WriteBatch("ns", (make_memory(id="t", text="sent over TLS only"),)))
            got = store.get("ns", "t")
            assert got is not None and got.text == "sent over TLS only"
        finally:
            store.close()
        # Not trusting the test CA: the certificate is refused, nothing is opened.
        with pytest.raises(BackendUnavailable):
            open_store(url, Path("unused"))
        # Plain redis:// to a TLS-only port does not get through either.
        with pytest.raises(BackendUnavailable):
            open_store(url.replace("rediss://", "redis://"), Path("unused"))
    finally:
        server.stop()


def test_cluster_url(redis_cluster: RedisCluster) -> None:
    store = open_store(redis_cluster.url, Path("unused"))
    try:
        assert isinstance(store, RedisStore)
        assert type(store.client).__name__ == "RedisCluster"
    finally:
        store.close()


def test_unknown_schemes_and_dead_servers(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        open_store("memcached://127.0.0.1:11211", tmp_path)
    server, url = start_redis(tmp_path / "gone")
    server.stop()
    with pytest.raises(BackendUnavailable):
        open_store(url, tmp_path)
