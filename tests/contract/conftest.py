"""Fixtures of the contract suites: every implementation of a port runs one suite."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core.models import Kind, Memory, Tier
from reverie.core.ports import LexicalIndex, RecordStore
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.sqlite.store import SQLiteStore
from tests.fakes import InMemoryStore

# --- VectorIndex -------------------------------------------------------------------------


@pytest.fixture(params=[
    "embedded",
    pytest.param("server", marks=pytest.mark.slow),
    pytest.param("outbox", marks=pytest.mark.slow),
])
def vector_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChromaIndex]:
    """Each VectorIndex implementation: embedded Chroma (fresh directory), a real Chroma
    server (shared by the session, so tests take namespaces from `vector_ns`), and that
    server behind the shared tier's Redis outbox (`redis.outbox`, on the session's
    redis-server under a key prefix of its own): what open_engine gives a Redis store."""
    with _open_vector_index(request, tmp_path, f"vq{uuid.uuid4().hex[:8]}") as index:
        yield index


@contextmanager
def _open_vector_index(
    request: pytest.FixtureRequest, tmp_path: Path, prefix: str
) -> Iterator[ChromaIndex]:
    kind = request.node.callspec.params["vector_index"]
    if kind == "embedded":
        index: Any = ChromaIndex.embedded(tmp_path / "chroma")
        store = None
    else:
        index = ChromaIndex.server(request.getfixturevalue("chroma_server_url"))
        store = None
        if kind == "outbox":
            from reverie.integrations.redis.outbox import OutboxIndex
            from reverie.integrations.redis.store import RedisStore

            store = RedisStore.from_url(request.getfixturevalue("redis_url"), prefix=prefix)
            index = OutboxIndex(index, store.client, prefix=prefix)
    try:
        yield index
    finally:
        index.close()
        if store is not None:
            store.close()


@pytest.fixture
def vector_ns(vector_index: ChromaIndex) -> Iterator[Callable[[str], str]]:
    """`vector_ns("a")` -> a namespace no other test uses; dropped after the test."""
    made: list[str] = []
    run = uuid.uuid4().hex[:10]

    def make(name: str = "ns") -> str:
        ns = f"t-{run}/{name}"
        made.append(ns)
        return ns

    yield make
    if not getattr(vector_index, "_closed", False):
        for ns in made:
            vector_index.drop_namespace(ns)


@pytest.fixture
def vector_index_twin(
    vector_index: ChromaIndex, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[ChromaIndex]:
    """A second, independent index on the same backend as `vector_index` (another
    process's view: its own client and collection cache; the same outbox)."""
    prefix = getattr(vector_index, "_prefix", "unused")
    with _open_vector_index(request, tmp_path, prefix) as twin:
        yield twin


# --- RecordStore (and LexicalIndex, where the store is one) --------------------------------

RecordStoreFactory = Callable[[Path], RecordStore]

# One entry per implementation: the whole RecordStore suite runs against each. A factory
# gets a fresh temporary directory; one that needs a server (Redis) should fail loudly if
# the server cannot be started, like `chroma_server_url` does.
RECORD_STORES: dict[str, RecordStoreFactory] = {
    "sqlite": lambda tmp: SQLiteStore(tmp / "store" / "reverie.db"),
    "memory": lambda tmp: InMemoryStore(),
}



def _redis_store(url: str) -> RecordStore:
    """A RedisStore under a key prefix of its own: the session's server is shared, and the
    prefix gives each test an empty store (its own namespace set and meta too)."""
    from reverie.integrations.redis.store import RedisStore

    return RedisStore.from_url(url, prefix=f"t{uuid.uuid4().hex[:12]}")


def _drop_redis_store(store: RecordStore) -> None:
    for ns in store.namespaces():
        store.delete_namespace(ns)


# Stores on a session server (real redis-server, real 3-master cluster): built from a
# fixture's URL; the fixture fails loudly when the server cannot start.
SERVER_RECORD_STORES: dict[str, Callable[[pytest.FixtureRequest], RecordStore]] = {
    "redis": lambda req: _redis_store(req.getfixturevalue("redis_url")),
    "redis-cluster": lambda req: _redis_store(req.getfixturevalue("redis_cluster").url),
}


@pytest.fixture(params=sorted(RECORD_STORES) + sorted(SERVER_RECORD_STORES))
def record_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param in SERVER_RECORD_STORES:
        store = SERVER_RECORD_STORES[request.param](request)
        try:
            yield store
        finally:
            _drop_redis_store(store)
            store.close()
        return
    store = RECORD_STORES[request.param](tmp_path)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def lexical_store(record_store: RecordStore) -> RecordStore:
    """The store, when it is also the LexicalIndex kept in step with it; else skip."""
    if not isinstance(record_store, LexicalIndex):
        pytest.skip(
            f"{type(record_store).__name__} is not a LexicalIndex; the search tests need a "
            "store that keeps its own lexical index"
        )
    return record_store


T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
_ids = itertools.count(1)


def make_memory(**overrides: Any) -> Memory:
    """A valid active episodic trace in namespace 'ns' with unique id and text."""
    n = next(_ids)
    fields: dict[str, Any] = {
        "id": f"m{n}",
        "namespace": "ns",
        "kind": Kind.EPISODIC,
        "tier": Tier.TRACE,
        "text": f"memory number {n}",
        "created_at": T0 + timedelta(seconds=n),
    }
    fields.update(overrides)
    return Memory(**fields)
