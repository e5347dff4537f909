"""Faults on the shared tier, with real processes: Redis SIGKILLed mid-burst, Redis
restarted from its append-only file, and the Chroma server's data deleted.

- Kill: a writer thread runs a burst of observes (new texts and repeats from new
  sources), fact updates (supersession: several records and indexes in one write) and
  reinforcing recalls, and records every write Redis acknowledged. Redis gets SIGKILL
  mid-burst. Every call after that must fail with the typed `BackendUnavailable`, fast,
  never with a raw redis-py error or a hang.
- Restart: the same redis-server (same port, same directory, `appendonly yes`,
  `appendfsync always`) comes back; every acknowledged write is there, and every
  secondary index agrees with the records (read straight from the keys by
  `redis_consistency.index_problems`): no half-written memory, including the one write
  that was in flight when the server died (it landed whole or not at all).
- Repair: with records in Redis and vectors on a Chroma server, the Chroma data
  directory is deleted and the server restarted empty; `engine.repair()` (what
  `reverie repair` runs) rebuilds the vector tier from the records, and recall gives
  the same results as before. This one uses the real MiniLM model, since "same recall
  results" is about retrieval; the kill test uses the deterministic hashing embedder,
  because it is about the store's atomicity.
"""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.core.errors import BackendUnavailable
from reverie.core.models import Kind, Status, fact_key
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.factory import open_store
from tests.fakes import BagOfWordsEmbedder
from tests.integration.redis_consistency import index_problems
from tests.servers import ServerProcess, start_chroma, start_redis, wait_until

pytestmark = pytest.mark.slow
T0 = datetime(2025, 4, 1, 9, 0, tzinfo=UTC)
SUBJECTS = ["alice", "bob", "carol"]


def _engine(url: str, tmp: Path, clock: ManualClock) -> MemoryEngine:
    store = open_store(url, tmp)
    return MemoryEngine(
        store, store, ChromaIndex.embedded(tmp / "chroma"), BagOfWordsEmbedder(),  # type: ignore[arg-type]
        clock=clock,
    )


@pytest.fixture
def aof_redis(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A redis-server of this test alone (it gets killed), AOF on with fsync always."""
    server, url = start_redis(tmp_path / "redis-data", appendonly=True)
    state: dict[str, Any] = {"server": server, "url": url, "dir": tmp_path / "redis-data"}
    try:
        yield state
    finally:
        state["server"].stop()


def test_kill_mid_burst_then_restart_loses_nothing_acknowledged(
    aof_redis: dict[str, Any], tmp_path: Path
) -> None:
    url = aof_redis["url"]
    server: ServerProcess = aof_redis["server"]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    ns = "burst"
    clock = ManualClock(T0)
    engine = _engine(url, tmp_path, clock)

    acked: list[tuple[Any, ...]] = []
    touches = {"acked": 0, "failed_hits_max": 0}
    failures: list[BaseException] = []
    stop = threading.Event()

    def burst() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            clock.advance(seconds=1)
            src = f"src-{i}"
            try:
                if i % 5 == 0:
                    subject = SUBJECTS[i % 3]
                    obj = f"plan {i}"
                    m = engine.remember(subject, "current plan", obj, namespace=ns, source=src)
                    acked.append(("fact", m.id, subject, obj, src))
                elif i % 7 == 0 and acked:
                    first = next(a for a in acked if a[0] == "trace")
                    m = engine.observe(first[2], namespace=ns, source=src)
                    acked.append(("fold", m.id, first[2], src))
                elif i % 3 == 0:
                    hits = engine.recall(f"burst note {i - 1}", namespace=ns, k=3)
                    touches["acked"] += len(hits)
                else:
                    text = f"burst note {i}: the deploy of service {i} went fine"
                    m = engine.observe(text, namespace=ns, source=src)
                    acked.append(("trace", m.id, text, src))
            except BaseException as e:
                failures.append(e)
                if len(failures) >= 5:
                    return

    writer = threading.Thread(target=burst, daemon=True)
    writer.start()
    def enough_acked() -> bool:
        assert writer.is_alive(), failures
        return len(acked) >= 60

    wait_until(enough_acked, f"60 acknowledged writes (failures: {failures})", 120, 0.01)
    assert server.proc is not None
    server.proc.kill()  # SIGKILL: no shutdown, no final AOF rewrite
    server.proc.wait(timeout=30)
    killed_with = len(acked)
    writer.join(timeout=120)
    stop.set()
    assert not writer.is_alive(), "a write hung after Redis died"
    assert len(failures) == 5
    for e in failures:  # typed, with a message a user can act on
        assert isinstance(e, BackendUnavailable), f"{type(e).__name__}: {e}"
    read_errors: list[BaseException] = []

    def read() -> None:
        try:
            engine.store.count(ns)
        except BaseException as e:  # checked below
            read_errors.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=120)
    assert not reader.is_alive(), "a read against a dead Redis hung instead of failing"
    assert len(read_errors) == 1 and isinstance(read_errors[0], BackendUnavailable), read_errors
    assert len(acked) >= killed_with

    # the same server again, from its append-only file
    restarted, url2 = start_redis(aof_redis["dir"], port=port, appendonly=True)
    aof_redis["server"] = restarted
    assert url2 == url
    store = open_store(url, tmp_path)
    try:
        records = {m.id: m for m in store.scan(ns)}
        for entry in acked:
            kind, mid = entry[0], entry[1]
            m = records.get(mid)
            assert m is not None, f"acknowledged {kind} {mid} lost after restart"
            if kind in ("trace", "fold"):
                assert m.text == entry[2] and entry[3] in m.sources
            else:
                assert m.fact is not None and m.fact.object == entry[3]
                assert entry[4] in m.sources
        # at most the in-flight write can be there unacknowledged: each of its parts whole
        assert not index_problems(store.client, ns), index_problems(store.client, ns)
        for subject in SUBJECTS:
            versions = store.find_by_key(ns, fact_key(Kind.SEMANTIC, subject, "current plan"))
            if versions:
                assert sum(v.status is Status.ACTIVE for v in versions) == 1
        # a recall's reinforcement is written behind it: a touch that failed against the
        # dead server was retried, logged and recorded as failed, never silently dropped
        engine.flush_reinforcement()
        failed = engine._reinforcer.failed
        written = touches["acked"] - sum(len(event.ids) for event, _ in failed)
        assert sum(m.access_count for m in records.values()) >= written
        counts = store.count(ns)
        assert counts["total"] == len(records)
        # and the store works again for new writes through a fresh engine
        engine2 = MemoryEngine(
            store, store, ChromaIndex.embedded(tmp_path / "chroma2"), BagOfWordsEmbedder(),
            clock=clock,
        )
        m = engine2.observe("after the restart, writes work again", namespace=ns)
        assert store.get(ns, m.id) is not None
    finally:
        store.close()
        engine.vectors.close()


def test_repair_rebuilds_the_chroma_server_from_redis_records(tmp_path: Path) -> None:
    """`reverie repair` (the CLI, as a user runs it) after the Chroma data is gone."""
    from typer.testing import CliRunner

    from reverie.adapters.cli.app import app
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    # a Redis of its own: the store-wide embedder mark must be this test's model
    redis_server, redis_url = start_redis(tmp_path / "redis-data")
    chroma_dir = tmp_path / "chroma" / "data"
    chroma, chroma_url = start_chroma(chroma_dir)
    port = int(chroma_url.rsplit(":", 1)[1])
    ns = f"repair-{uuid.uuid4().hex[:8]}"
    embedder = LocalEmbedder()
    texts = [
        "my sister Ana is getting married in Porto next June",
        "I adopted a grey cat called Miso",
        "the quarterly budget review moved to Thursday",
        "our production database runs PostgreSQL 15 on two replicas",
        "I'm allergic to peanuts",
        "we hiked the Pacific Crest Trail in 2019",
        "the office wifi password rotates every month",
        "Bruno prefers window seats on long flights",
    ]
    queries = ["who is getting married?", "pet", "allergy", "database setup", "travel"]
    try:
        engine = open_engine(
            tmp_path / "home", store=redis_url, vectors=chroma_url, embedder=embedder,
            clock=ManualClock(T0), namespace=ns,
        )
        for t in texts:
            engine.observe(t)
        engine.remember("user", "works at", "Acme", source="a")
        engine.remember("user", "works at", "Globex", source="b")
        before = {
            q: [(h.id, round(h.score, 6)) for h in engine.recall(q, k=4, reinforce=False)]
            for q in queries
        }
        n_vectors = engine.stats()["vectors"]
        assert n_vectors == len(texts) + 2
        engine.close()

        chroma.stop()
        shutil.rmtree(chroma_dir)
        chroma, url2 = start_chroma(chroma_dir, port=port)
        assert url2 == chroma_url

        engine = open_engine(
            tmp_path / "home", store=redis_url, vectors=chroma_url, embedder=embedder,
            clock=ManualClock(T0), namespace=ns,
        )
        assert engine.stats()["vectors"] == 0  # the vector tier really is gone
        engine.close()
        result = CliRunner().invoke(app, [
            "--home", str(tmp_path / "home"), "--store", redis_url, "--vectors", chroma_url,
            "-n", ns, "repair",
        ])
        assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
        assert f"{len(texts) + 2}" in result.output  # the table's "indexed" column
        engine = open_engine(
            tmp_path / "home", store=redis_url, vectors=chroma_url, embedder=embedder,
            clock=ManualClock(T0), namespace=ns,
        )
        assert engine.stats()["vectors"] == n_vectors
        after = {
            q: [(h.id, round(h.score, 6)) for h in engine.recall(q, k=4, reinforce=False)]
            for q in queries
        }
        # the same hits in the same order; the rebuilt index holds the kept half-precision
        # vectors, so a score may move in its fifth decimal
        assert {q: [i for i, _ in hits] for q, hits in after.items()} == {
            q: [i for i, _ in hits] for q, hits in before.items()
        }
        for q, hits in after.items():
            for (_, a), (_, b) in zip(hits, before[q], strict=True):
                assert a == pytest.approx(b, abs=1e-4)
        # the superseded fact's vector is back too (history and `as_of` rank it)
        (old,) = [m for m in engine.history("user", "works at") if m.status is Status.SUPERSEDED]
        vec = embedder.embed([old.text])[0]
        assert old.id in {h.id for h in engine.vectors.query(ns, vec, 3)}
        engine.forget_namespace(ns)
        engine.close()
    finally:
        chroma.stop()
        redis_server.stop()
