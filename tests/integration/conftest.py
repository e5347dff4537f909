"""Fixtures shared by the Redis integration tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from reverie.integrations.redis.store import RedisStore
from tests.blocking_async_store import BlockingAsyncStore


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of the test's own on the session's redis-server."""
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=["sync", "async"])
def either_redis_store(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str
) -> Iterator[Any]:
    """RedisStore, then AsyncRedisStore behind its blocking face: one test body, both
    stores; the namespaces it made are deleted afterwards."""
    opened: Any = (
        RedisStore.from_url(redis_url, prefix=redis_prefix)
        if request.param == "sync"
        else BlockingAsyncStore(redis_url, prefix=redis_prefix)
    )
    with opened:
        yield opened
        for ns in opened.namespaces():
            opened.delete_namespace(ns)
