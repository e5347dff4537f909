"""Write-behind vector indexing on the shared tier: a real `redis-server` and a real
`chroma run` server (tests/servers.py), several engines and worker processes.

What a user running many agent workers relies on: every observed memory ends up in the
vector index once its worker closes; the engine that observed a memory finds it by
meaning straight away; another process finds it by its words while its vector is still
queued, and by meaning once the batch lands; a worker killed with vectors queued loses
no record, and `repair` indexes what it left behind.

The embedder is `BagOfWordsEmbedder` (deterministic, no model load in every process);
nothing here is about retrieval quality. Each test writes under a Redis key prefix and a
namespace of its own, so the session servers' other tenants are never touched.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import traceback
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.store import RedisStore
from tests.fakes import BagOfWordsEmbedder
from tests.servers import wait_until

T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
WORKERS = 3
PER_WORKER = 60


class GatedVectors:
    """The real Chroma index, with writes held until `gate` opens: a Chroma server that is
    slow to take a batch, so a test can look while vectors are still queued."""

    def __init__(self, inner: ChromaIndex, gate: threading.Event) -> None:
        self.inner = inner
        self.gate = gate

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        self.gate.wait(timeout=60)
        self.inner.upsert(namespace, items)

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        self.gate.wait(timeout=60)
        self.inner.set_metadata(namespace, ids, metadata)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def engine_on(
    redis_url: str, chroma_url: str, prefix: str, gate: threading.Event | None = None
) -> MemoryEngine:
    store = RedisStore.from_url(redis_url, prefix=prefix)
    vectors: Any = ChromaIndex.server(chroma_url)
    if gate is not None:
        vectors = GatedVectors(vectors, gate)
    return MemoryEngine(store, store, vectors, BagOfWordsEmbedder(), clock=ManualClock(T0))


@pytest.fixture
def tenant() -> Iterator[tuple[str, str]]:
    """(Redis key prefix, namespace) of this test alone."""
    tag = uuid.uuid4().hex[:8]
    yield f"behind-{tag}", f"ns-{tag}"


def cosine(engine: MemoryEngine, a: str, b: str) -> float:
    va, vb = engine.embedder.embed([a, b])
    return float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))


def _worker(
    wid: int, redis_url: str, chroma_url: str, prefix: str, ns: str, kill: bool, out: Any
) -> None:
    try:
        gate = threading.Event()
        if not kill:
            gate.set()
        engine = engine_on(redis_url, chroma_url, prefix, gate)
        ids = [
            engine.observe(f"worker {wid} note {i}: topic{wid}x{i} is filed", namespace=ns).id
            for i in range(PER_WORKER)
        ]
        if kill:  # die with every vector still queued: no close, no atexit
            out.put({"wid": wid, "ids": ids, "queued": engine._indexer.backlog})
            out.close()
            out.join_thread()  # the report is in the pipe before the process dies
            os.kill(os.getpid(), signal.SIGKILL)
        engine.close()
        out.put({"wid": wid, "ids": ids, "calls": engine._indexer.calls})
    except BaseException:
        out.put({"wid": wid, "error": traceback.format_exc()})


def _run_workers(
    n: int, redis_url: str, chroma_url: str, prefix: str, ns: str, kill: bool = False
) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(w, redis_url, chroma_url, prefix, ns, kill, out))
        for w in range(n)
    ]
    for p in procs:
        p.start()
    reports = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    errors = [r["error"] for r in reports if "error" in r]
    assert not errors, "\n".join(errors)
    return reports


def test_every_worker_vector_is_indexed_once_the_workers_close(
    redis_url: str, chroma_server_url: str, tenant: tuple[str, str]
) -> None:
    prefix, ns = tenant
    reports = _run_workers(WORKERS, redis_url, chroma_server_url, prefix, ns)
    engine = engine_on(redis_url, chroma_server_url, prefix)
    try:
        stats = engine.stats(namespace=ns)
        assert stats["total"] == stats["vectors"] == WORKERS * PER_WORKER
        assert stats["vector_repair_needed"] is False
        # each worker's vectors went in batches: never more calls than observes
        assert all(0 < r["calls"] <= PER_WORKER for r in reports)
        # every memory's vector is in the index, and it is its own text's vector (cosine 1)
        assert engine.vectors.ids(ns) == {i for r in reports for i in r["ids"]}
        for r in reports:
            for i, memory_id in enumerate(r["ids"]):
                text = f"worker {r['wid']} note {i}: topic{r['wid']}x{i} is filed"
                vec = engine.embedder.embed([text])[0]
                sim = engine.vectors.similarities(ns, vec, [memory_id])[memory_id]
                assert sim == pytest.approx(1.0, abs=1e-5)
        assert engine.repair(namespace=ns).indexed == 0  # nothing was missing
    finally:
        engine.forget_namespace(ns)
        engine.close()


def test_the_observing_engine_recalls_by_meaning_at_once(
    redis_url: str, chroma_server_url: str, tenant: tuple[str, str]
) -> None:
    prefix, ns = tenant
    engine = engine_on(redis_url, chroma_server_url, prefix)
    try:
        text = "the heron fishes at the weir at dawn"
        m = engine.observe(text, namespace=ns)
        hit = engine.recall("heron weir", namespace=ns, reinforce=False)[0]
        assert hit.id == m.id
        assert hit.explanation.dense == pytest.approx(cosine(engine, "heron weir", text),
                                                      abs=1e-4)
    finally:
        engine.forget_namespace(ns)
        engine.close()


def test_another_process_finds_a_queued_memory_by_words_then_by_meaning(
    redis_url: str, chroma_server_url: str, tenant: tuple[str, str]
) -> None:
    prefix, ns = tenant
    gate = threading.Event()
    writer = engine_on(redis_url, chroma_server_url, prefix, gate)
    reader = engine_on(redis_url, chroma_server_url, prefix)
    try:
        writer.observe("the lighthouse keeper paints the stairs", namespace=ns)  # indexed
        wait_until(  # until the writer's thread holds it at the gate
            lambda: not writer._indexer.backlog, "the writer to take the first vector"
        )
        text = "the heron fishes at the weir at dawn"
        m = writer.observe(text, namespace=ns)  # queued behind the held write
        first = reader.recall("heron weir", namespace=ns, reinforce=False)
        assert first[0].id == m.id  # by its words: the record and postings are in Redis
        assert first[0].explanation.dense == 0.0  # no vector in Chroma yet
        gate.set()
        writer.flush()
        again = reader.recall("heron weir", namespace=ns, reinforce=False)
        assert again[0].id == m.id
        assert again[0].explanation.dense == pytest.approx(
            cosine(reader, "heron weir", text), abs=1e-4
        )
    finally:
        gate.set()
        writer.close()
        reader.forget_namespace(ns)
        reader.close()


def test_a_killed_worker_loses_no_record_and_repair_indexes_its_vectors(
    redis_url: str, chroma_server_url: str, tenant: tuple[str, str]
) -> None:
    prefix, ns = tenant
    (report,) = _run_workers(1, redis_url, chroma_server_url, prefix, ns, kill=True)
    assert report["queued"] > 0  # it died with vectors queued
    engine = engine_on(redis_url, chroma_server_url, prefix)
    try:
        stats = engine.stats(namespace=ns)
        assert stats["total"] == PER_WORKER  # every acknowledged observe is stored
        assert stats["vectors"] < PER_WORKER  # the queued ones never reached Chroma
        missing = PER_WORKER - stats["vectors"]
        assert engine.repair(namespace=ns).indexed == missing
        assert engine.stats(namespace=ns)["vectors"] == PER_WORKER
        assert engine.vectors.ids(ns) == set(report["ids"])
        last = report["ids"][-1]
        text = f"worker 0 note {PER_WORKER - 1}: topic0x{PER_WORKER - 1} is filed"
        vec = engine.embedder.embed([text])[0]
        assert engine.vectors.similarities(ns, vec, [last])[last] == pytest.approx(1.0, abs=1e-5)
    finally:
        engine.forget_namespace(ns)
        engine.close()
