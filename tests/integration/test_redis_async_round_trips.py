"""The async store costs what the sync store costs: for every operation, the same number
of round trips to Redis and the same commands run by the server (Lua's inner calls
included), on one redis-server. A round trip is one write of a request to a connection (a
pipeline or a MULTI/EXEC is one); the connection handshake is not counted. Both stores run
the same sequence of operations, each on a key prefix of its own holding the same data."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
import redis.asyncio as aioredis

from reverie.core.models import Edge, EdgeType, Status
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.store import RedisStore
from tests.blocking_async_store import BlockingAsyncStore
from tests.contract.conftest import T0, make_memory
from tests.servers import start_redis


class Trips:
    """Round trips sent by one store's connections, handshakes left out."""

    def __init__(self) -> None:
        self.count = 0

    def sync_connection(self) -> type[redis.Connection]:
        trips = self

        class Counting(redis.Connection):
            handshaking = False

            def on_connect_check_health(self, *args: Any, **kwargs: Any) -> None:
                self.handshaking = True
                try:
                    super().on_connect_check_health(*args, **kwargs)
                finally:
                    self.handshaking = False

            def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
                trips.count += 0 if self.handshaking else 1
                super().send_packed_command(*args, **kwargs)

        return Counting

    def async_connection(self) -> type[aioredis.Connection]:
        trips = self

        class Counting(aioredis.Connection):
            handshaking = False

            async def on_connect_check_health(self, *args: Any, **kwargs: Any) -> None:
                self.handshaking = True
                try:
                    await super().on_connect_check_health(*args, **kwargs)
                finally:
                    self.handshaking = False

            async def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
                trips.count += 0 if self.handshaking else 1
                await super().send_packed_command(*args, **kwargs)

        return Counting


VECTOR = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def seed(store: Any, ns: str) -> None:
    mems = [
        make_memory(id=f"m{i}", namespace=ns, text=f"maya paints watercolours number {i}",
                    entities={"maya"}, created_at=T0 + timedelta(minutes=i))
        for i in range(12)
    ]
    fact = make_memory(id="f1", namespace=ns, text="maya lives in lisbon", key="maya|lives in")
    store.commit(WriteBatch(ns, (*mems, fact), (Edge("m0", "m1", EdgeType.ENTITY, 0.5),)))


def hold_lock(store: Any, ns: str) -> None:
    with store.lock(ns):
        pass


# Each operation as both stores are called (the async one through its blocking face).
OPERATIONS: list[tuple[str, Callable[[Any, str], Any]]] = [
    ("get", lambda s, ns: s.get(ns, "m3")),
    ("get_many", lambda s, ns: s.get_many(ns, ["m1", "m2", "nope"])),
    ("created_times", lambda s, ns: s.created_times(ns, ["m1", "m2", "nope"])),
    ("put_embeddings", lambda s, ns: s.put_embeddings(ns, {"m1": VECTOR, "nope": VECTOR})),
    ("embeddings", lambda s, ns: s.embeddings(ns, ["m1", "m2", "nope"])),
    ("find_by_hash", lambda s, ns: s.find_by_hash(ns, "0" * 64)),
    ("find_by_key", lambda s, ns: s.find_by_key(ns, "maya|lives in")),
    ("find_by_entity", lambda s, ns: s.find_by_entity(ns, "maya", 5)),
    ("scan", lambda s, ns: list(s.scan(ns, batch_size=5))),
    ("scan_statuses", lambda s, ns: list(s.scan(ns, statuses=[Status.ACTIVE, Status.ARCHIVED]))),
    ("count", lambda s, ns: s.count(ns)),
    ("edges", lambda s, ns: s.edges(ns, ["m0", "m5"])),
    ("degrees", lambda s, ns: s.degrees(ns, ["m0", "m5"])),
    ("search", lambda s, ns: s.search(ns, "maya watercolours", 5)),
    ("namespaces", lambda s, ns: s.namespaces()),
    ("touch", lambda s, ns: s.touch(ns, ["m1", "m2"], T0 + timedelta(days=1), 8)),
    ("commit", lambda s, ns: s.commit(WriteBatch(ns, (make_memory(id="n", namespace=ns),)))),
    ("commit_update", lambda s, ns: s.commit(WriteBatch(ns, (
        s.get(ns, "m4").evolve(status=Status.ARCHIVED),)))),
    ("meta", lambda s, ns: (s.set_meta("embedder", "e/8"), s.get_meta("embedder"))),
    ("journal", lambda s, ns: (s.journal_put(ns, "fp", {"step": "done"}), s.journal_get(ns, "fp"))),
    ("lock", hold_lock),
    ("delete", lambda s, ns: s.delete(ns, ["m5", "m0", "nope"])),
    ("delete_namespace", lambda s, ns: s.delete_namespace(ns)),
]


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    server, url = start_redis(tmp_path / "trips")
    try:
        yield url
    finally:
        server.stop()


def measure(store: Any, trips: Trips, url: str) -> dict[str, tuple[int, dict[str, int]]]:
    """Per operation: round trips, and the server's command counts (from INFO commandstats,
    reset before each operation by a client of the test's own). A first pass over another
    namespace warms up what is not the operation's cost: the Lua scripts' first load
    (EVALSHA, NOSCRIPT, SCRIPT LOAD) and the pool's connections."""
    for ns in ("warm-up", "other", "ns"):  # "other": namespaces() lists two
        seed(store, ns)
    for _, op in OPERATIONS:
        op(store, "warm-up")
    out: dict[str, tuple[int, dict[str, int]]] = {}
    with redis.Redis.from_url(url, decode_responses=True) as admin:
        for name, op in OPERATIONS:
            admin.config_resetstat()
            trips.count = 0
            op(store, "ns")
            sent = trips.count
            stats = admin.info("commandstats")
            commands = {
                k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()
                if k not in ("cmdstat_config|resetstat", "cmdstat_info")
            }
            out[name] = (sent, commands)
    return out


def test_every_operation_costs_the_same_round_trips_and_commands(server_url: str) -> None:
    sync_trips, async_trips = Trips(), Trips()
    with RedisStore.from_url(
        server_url, prefix=f"s{uuid.uuid4().hex[:8]}",
        connection_class=sync_trips.sync_connection(),
    ) as sync:
        sync_costs = measure(sync, sync_trips, server_url)
    with BlockingAsyncStore(
        server_url, prefix=f"a{uuid.uuid4().hex[:8]}",
        connection_class=async_trips.async_connection(),
    ) as asynchronous:
        async_costs = measure(asynchronous, async_trips, server_url)
    assert all(trips > 0 for trips, _ in sync_costs.values()), sync_costs  # counting works
    assert sync_costs["get"] == (1, {"get": 1})  # one GET, one round trip
    # a new memory: WATCH, every read its plan needs in one pipeline, MULTI/EXEC
    assert sync_costs["commit"][0] == 3, sync_costs["commit"]
    # the newest ids with their ties (one script), then their records and seqs
    assert sync_costs["find_by_entity"][0] == 2, sync_costs["find_by_entity"]
    for name, _ in OPERATIONS:
        assert async_costs[name] == sync_costs[name], name


def test_every_sync_operation_has_an_async_twin_with_the_same_parameters() -> None:
    """A RedisStore operation added without its AsyncRedisStore twin fails here; only the
    lifecycle is named the asyncio way (open for from_url, aclose for close)."""
    import inspect

    from reverie.integrations.redis.async_store import AsyncRedisStore

    renamed = {"from_url": "open", "close": "aclose"}
    public = [n for n in dir(RedisStore) if not n.startswith("_")]
    assert {renamed.get(n, n) for n in public} == {
        n for n in dir(AsyncRedisStore) if not n.startswith("_")
    }
    for name in public:
        sync_op = getattr(RedisStore, name)
        async_op = getattr(AsyncRedisStore, renamed.get(name, name))
        if isinstance(sync_op, property) or not callable(sync_op):
            continue
        assert list(inspect.signature(sync_op).parameters) == list(
            inspect.signature(async_op).parameters
        ), name
        if name not in ("lock", "scan"):  # an async context manager, an async iterator
            assert inspect.iscoroutinefunction(async_op), name
    assert inspect.isasyncgenfunction(AsyncRedisStore.scan)
