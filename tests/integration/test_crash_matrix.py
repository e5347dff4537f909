"""SIGKILL at random points of observe, forget, consolidate, sweep, gc and repair, on
SQLite and on Redis: no acknowledged write lost, the store intact, the repair flag right,
and no record left without a vector after the next maintenance run
(tests/integration/crash_matrix.py; `scripts/crash-soak` runs many more kills)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.redis.store import RedisStore
from tests.integration.crash_matrix import check, kill_once

pytestmark = pytest.mark.slow

KILLS = 3  # per tier: each kill starts a process that loads the model


@pytest.mark.parametrize("tier", ["sqlite", "redis"])
def test_kills_at_random_points_lose_nothing(tier: str, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    embedder = LocalEmbedder()
    url = str(request.getfixturevalue("redis_url")) if tier == "redis" else "-"
    problems: dict[int, list[str]] = {}
    acks = 0
    for seed in range(KILLS):
        prefix = f"t{uuid.uuid4().hex[:8]}" if tier == "redis" else "-"
        outcome = kill_once(tmp_path / f"kill-{seed}", url, prefix, seed, embedder)
        acks += outcome.acks
        if check(outcome):
            problems[seed] = check(outcome)
        if tier == "redis":
            with RedisStore.from_url(url, prefix=prefix) as store:
                for ns in store.namespaces():
                    store.delete_namespace(ns)
    assert not problems, problems
    assert acks >= 2 * KILLS  # every worker got going before it was killed
