"""Fixtures shared by every test directory: real server processes, started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.servers import (
    RedisCluster,
    ServerStartError,
    start_chroma,
    start_redis,
    start_redis_cluster,
)

# Hypothesis in CI draws the same examples on every run (`derandomize`), so a red build
# reproduces on a laptop with the same command; locally it keeps exploring new examples.
# `HYPOTHESIS_PROFILE` picks a profile explicitly (e.g. `ci` to replay a CI run).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
# scripts/mutation: every mutant sees the same examples, and a machine slowed by load is
# not taken for a failing test (no deadline, no too-slow health check)
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture(scope="session")
def chroma_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real `chroma run` server for the whole session; fails loudly, never skips.

    Tests share it, so each must use namespaces of its own (see `unique_ns`-style
    fixtures in the contract suite).
    """
    base = tmp_path_factory.mktemp("chroma-server")
    try:
        server, url = start_chroma(base / "data")
    except ServerStartError as e:
        pytest.fail(f"cannot start the Chroma test server: {e}", pytrace=False)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL (redis://127.0.0.1:PORT/0) of a real `redis-server` on a free port for the whole
    session (never the machine's 6379); fails loudly, never skips. Tests share it, so each
    uses namespaces of its own (or flushes what it made)."""
    base = tmp_path_factory.mktemp("redis-server")
    try:
        server, url = start_redis(base / "data")
    except ServerStartError as e:
        pytest.fail(f"cannot start the Redis test server: {e}", pytrace=False)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A real local 3-master Redis Cluster for the whole session (`.url` is
    redis+cluster://127.0.0.1:PORT, `.ports` every master); fails loudly, never skips."""
    base = tmp_path_factory.mktemp("redis-cluster")
    try:
        cluster = start_redis_cluster(base)
    except ServerStartError as e:
        pytest.fail(f"cannot start the Redis Cluster for the tests: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
