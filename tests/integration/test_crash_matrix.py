"""SIGKILL at random points of observe, forget, consolidate, sweep, gc and repair, on
SQLite and on Redis: no acknowledged write lost, the store intact, the repair flag right,
and no record left without a vector after the next maintenance run
(tests/integration/crash_matrix.py; `scripts/crash-soak` runs many more kills)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.crash_matrix import CrashServer, check

pytestmark = pytest.mark.slow

KILLS = 3  # per tier; the soak runs hundreds


@pytest.fixture(scope="module")
def crash_server() -> Iterator[CrashServer]:
    with CrashServer() as server:
        yield server


@pytest.mark.parametrize("tier", ["sqlite", "redis"])
def test_kills_at_random_points_lose_nothing(
    tier: str, tmp_path: Path, crash_server: CrashServer, request: pytest.FixtureRequest
) -> None:
    url = str(request.getfixturevalue("redis_url")) if tier == "redis" else "-"
    problems: dict[int, list[str]] = {}
    acks = 0
    for seed in range(KILLS):
        prefix = f"t{uuid.uuid4().hex[:8]}" if tier == "redis" else "-"
        outcome = crash_server.kill_once(tmp_path / f"kill-{seed}", url, prefix, seed)
        acks += outcome.acks
        if check(outcome):
            problems[seed] = check(outcome)
    assert not problems, problems
    assert acks >= KILLS  # every worker got going before it was killed


def test_a_fork_killed_holding_the_progress_lock_blocks_no_later_fork() -> None:
    """Every encode takes tqdm's lock; a worker killed while holding it must not leave
    the checker or the next worker (forks of the same server) waiting for ever."""
    import os
    import signal
    import time

    from tqdm import tqdm

    from tests.integration.crash_matrix import _fork, _lines, _private_progress_lock

    _private_progress_lock()
    list(tqdm(range(1), disable=True))

    def hold(w: int) -> None:
        tqdm.get_lock().acquire()
        os.write(w, b"holding\n")
        time.sleep(60)

    pid, r = _fork(hold)
    assert next(_lines(r, pid)) == "holding"
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(r)

    def bar(w: int) -> None:
        list(tqdm(range(2), disable=True))
        os.write(w, b"done\n")

    pid, r = _fork(bar)
    try:
        said = list(_lines(r, pid))
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    assert said == ["done"]
