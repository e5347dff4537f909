"""A maintenance lease held by a process that was SIGKILLed is taken over at once, not
after the lease runs out; a live holder keeps it, renewed by its heartbeat past the
lease's length. On SQLite and on Redis, with real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reverie.core.errors import LockBusy
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.servers import wait_until

pytestmark = pytest.mark.slow

NS = "maint"
HOLDER = """
import sys, time
kind, where, prefix, ttl = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
if kind == "sqlite":
    from reverie.integrations.sqlite.store import SQLiteStore
    store = SQLiteStore(where)
else:
    from reverie.integrations.redis.store import RedisStore
    store = RedisStore.from_url(where, prefix=prefix)
with store.lock("maint", ttl):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture(params=["sqlite", "redis"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str, Any]]:
    """(kind, location, prefix, a store of the test's own on that location)."""
    if request.param == "sqlite":
        where = str(tmp_path / "memory.db")
        store: Any = SQLiteStore(where)
        prefix = "-"
    else:
        where = request.getfixturevalue("redis_url")
        prefix = f"t{uuid.uuid4().hex[:8]}"
        store = RedisStore.from_url(where, prefix=prefix)
    try:
        yield str(request.param), where, prefix, store
    finally:
        store.close()


@contextmanager
def holder(kind: str, where: str, prefix: str, ttl: float) -> Iterator[subprocess.Popen[str]]:
    """A process holding the namespace's lease, once it says so."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, kind, where, prefix, str(ttl)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held", "the holder did not take the lease"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)


def test_a_killed_holders_lease_is_taken_over_at_once(opened: tuple[str, str, str, Any]) -> None:
    kind, where, prefix, store = opened
    with holder(kind, where, prefix, ttl=900.0) as proc:
        # alive: its lease holds
        with pytest.raises(LockBusy, match=f"pid {proc.pid} "), store.lock(NS, 900.0):
            pass
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        # 900 s were left on the dead process's lease: it is taken over now
        with store.lock(NS, 900.0) as token:
            assert token
        with store.lock(NS, 900.0):  # and released again by the new holder
            pass


def _lease_expiry(kind: str, store: Any) -> float:
    if kind == "sqlite":
        with store._db.read() as conn:
            row = conn.execute("SELECT expires_at FROM locks WHERE namespace = ?",
                               (NS,)).fetchone()
        return float(row[0]) if row else 0.0
    value = store._client.get(store._keys(NS).lock)
    return int(value.split("|", 1)[0]) / 1000 if value else 0.0


def test_a_live_holder_keeps_its_lease_past_its_length(opened: tuple[str, str, str, Any]
                                                       ) -> None:
    """The heartbeat renews a short lease while the holder lives: long after the first
    expiry the namespace is still busy, and the lease now ends later than it first did."""
    kind, where, prefix, store = opened
    with holder(kind, where, prefix, ttl=0.6):
        first = _lease_expiry(kind, store)
        assert first > 0
        wait_until(lambda: _lease_expiry(kind, store) > first + 1.2, "three renewals", 60.0, 0.05)
        wait_until(lambda: time.time() > first + 0.1, "the first expiry to pass", 60.0, 0.05)
        with pytest.raises(LockBusy), store.lock(NS, 0.6):
            pass
