"""Fixtures shared by the Redis integration tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from reverie.integrations.redis.store import RedisStore


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of the test's own on the session's redis-server."""
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture
def redis_store(redis_url: str, redis_prefix: str) -> Iterator[RedisStore]:
    """A RedisStore under the test's own prefix; the namespaces it made are deleted afterwards."""
    with RedisStore.from_url(redis_url, prefix=redis_prefix) as opened:
        yield opened
        for ns in opened.namespaces():
            opened.delete_namespace(ns)
