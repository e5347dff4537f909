"""A process SIGKILLed with vectors still queued leaves acknowledged records without
vectors; the next engine to open the store says so (`vector_repair_needed`), and the
next maintenance run repairs them. A process that closed cleanly leaves no flag. On
SQLite and on Redis (each with embedded Chroma), real processes, the real model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reverie.core.engine import MemoryEngine
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.redis.store import RedisStore

pytestmark = pytest.mark.slow

NS = "behind"
COUNT = 12
# The writer observes COUNT texts, printing each acknowledged id; with `block` its vector
# index never completes a write (a stuck index, then a kill), so every vector stays queued.
WRITER = """
import sys, threading
from reverie.integrations import open_engine
from reverie.integrations.redis.store import RedisStore
home, redis_url, prefix, block = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
store = RedisStore.from_url(redis_url, prefix=prefix) if redis_url != "-" else None
engine = open_engine(home, store=store, namespace="behind")
if block:
    engine.vectors.upsert = lambda *a, **k: threading.Event().wait()
for i in range(COUNT):
    m = engine.observe(f"note {i}: the parcel for flat {i} went to the neighbour")
    print(m.id, flush=True)
print("done", flush=True)
if block:
    threading.Event().wait()
engine.close()
""".replace("COUNT", str(COUNT))


@pytest.fixture(params=["sqlite", "redis"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """(home, redis url or '-', key prefix)."""
    if request.param == "sqlite":
        yield tmp_path, "-", "-"
        return
    url = str(request.getfixturevalue("redis_url"))
    prefix = f"t{uuid.uuid4().hex[:8]}"
    yield tmp_path, url, prefix
    with RedisStore.from_url(url, prefix=prefix) as store:
        for ns in store.namespaces():
            store.delete_namespace(ns)


def run_writer(home: Path, url: str, prefix: str, *, kill: bool) -> list[str]:
    """The ids the writer acknowledged (before it was killed, with `kill`)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), url, prefix, "1" if kill else "0"],
        stdout=subprocess.PIPE, text=True,
    )
    acknowledged: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == "done":
                break
            acknowledged.append(line.strip())
        if kill:
            os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=300) == (-signal.SIGKILL if kill else 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    assert len(acknowledged) == COUNT
    return acknowledged


def reopen(home: Path, url: str, prefix: str) -> MemoryEngine:
    store: Any = RedisStore.from_url(url, prefix=prefix) if url != "-" else None
    return open_engine(home, store=store, embedder=LocalEmbedder(), namespace=NS)


def test_a_kill_with_vectors_queued_is_flagged_and_healed(location: tuple[Path, str, str]
                                                          ) -> None:
    home, url, prefix = location
    acknowledged = run_writer(home, url, prefix, kill=True)
    engine = reopen(home, url, prefix)
    try:
        records = {m.id for m in engine.memories()}
        assert records == set(acknowledged)  # no acknowledged write lost
        lacking = records - engine.vectors.ids(NS)
        assert lacking  # the kill left records without vectors...
        assert engine.stats()["vector_repair_needed"] is True  # ...and the store says so
        engine.gc(NS)  # the next maintenance run repairs them first
        assert engine.vectors.ids(NS) == records
        assert engine.stats()["vector_repair_needed"] is False
        hits = engine.recall("which neighbour got the parcel for flat 3", k=3, reinforce=False)
        assert any(h.memory.id in lacking for h in hits)  # dense recall finds them again
    finally:
        engine.close()


def test_a_clean_close_leaves_no_flag(tmp_path: Path) -> None:
    acknowledged = run_writer(tmp_path, "-", "-", kill=False)
    engine = reopen(tmp_path, "-", "-")
    try:
        assert engine.vectors.ids(NS) == set(acknowledged)
        assert engine.stats()["vector_repair_needed"] is False
    finally:
        engine.close()
