"""The RecordStore contract, run against `AsyncRedisStore` (one redis-server and a real
3-master cluster), so the asyncio store is held to the very assertions the sync stores are.

The tests are those of test_record_store.py, collected again here; only the fixture
differs: `record_store` below is the async store behind a blocking face
(tests/blocking_async_store.py), which runs each call as a coroutine on an event loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.blocking_async_store import BlockingAsyncStore
from tests.contract import test_record_store as contract
from tests.servers import RedisCluster

globals().update({name: test for name, test in vars(contract).items() if name.startswith("test_")})


@pytest.fixture(params=["redis-async", "redis-async-cluster"])
def record_store(request: pytest.FixtureRequest) -> Iterator[BlockingAsyncStore]:
    """An AsyncRedisStore under a key prefix of its own on the session's server."""
    if request.param == "redis-async":
        url = str(request.getfixturevalue("redis_url"))
    else:
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        url = cluster.url
    store = BlockingAsyncStore(url, prefix=f"t{uuid.uuid4().hex[:12]}")
    try:
        yield store
    finally:
        for ns in store.namespaces():
            store.delete_namespace(ns)
        store.close()
