"""Latency of the shared tier against the embedded default, measured in one run.

Two tiers, the same data and the same vectors:
- embedded: SQLite file + embedded Chroma (the default, `open_engine()`),
- shared:   Redis (a `redis-server` this script starts on a free port) + a Chroma server
            (`chroma run`, also started here).
For each size (10k and 100k memories by default): single `observe` p50/p95 and `recall`
(k=10, reinforcing) p50/p95. Then observe throughput on the shared tier with 1, 2 and 4
worker processes writing to one namespace, and each worker's memory (RSS).

Embedding time is excluded everywhere and identical across tiers: every vector is
computed before any timed section and served from a lookup table. Only the first
--captions COCO captions (12k) go through the real all-MiniLM-L6-v2 model, to keep the
model's time bounded on 2 cores; the rest of the corpus is two-caption texts
("caption A. caption B") whose vector is the normalised sum of the two caption vectors:
realistic term statistics for BM25, no extra model time.

This machine has 2 cores shared by everything: the worker processes, redis-server and
the Chroma server all compete for them, so the throughput scaling measured here is a
floor of what a real deployment (Redis and Chroma on their own hosts) would see.

Run: python benchmarks/latency_tiers.py [--sizes 10000 100000] [--queries 200]
     [--workers 1 2 4] [--throughput-ops 2400] [--repeat 5] [--index-modes outbox behind]
     [--build-budget 1800]
Writes latency_tiers.{md,json}: the recall tables, then the throughput table. Throughput is
repeated (--repeat) with medians because single runs of the 4-vs-1 ratio vary by about
+-0.3x on a shared machine; `--sizes` with no value measures throughput alone, `--workers`
with no value recall alone.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from latency import pct, texts  # noqa: E402

CAPTIONS = 25_000  # about what clusters.jsonl holds
NS = "bench"


# --- vectors computed once, served from a table ----------------------------------------------


class TableEmbedder:
    """Vectors looked up from a table built before the timed sections: embedding cost is
    excluded, and both tiers get bit-identical vectors."""

    def __init__(self, table: dict[str, np.ndarray], name: str, dimension: int) -> None:
        self.table = table
        self._name = name
        self._dim = dimension

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, items: Sequence[str]) -> np.ndarray:
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self.table[t] for t in items])


def build_table(
    max_size: int, n_queries: int, extra: int, captions: int, cache: Path | None
) -> tuple[TableEmbedder, list[str], list[str]]:
    """(embedder, corpus of max_size + extra texts, queries). Real MiniLM vectors for up
    to `captions` captions and the queries; two-caption composites beyond them. Vectors
    are kept in `cache` (outside the project) so a re-run does not embed again."""
    from reverie.integrations.embedders import LocalEmbedder

    model = LocalEmbedder()
    n_caps = min(CAPTIONS, captions, max_size + extra)
    caps = list(dict.fromkeys(texts(n_caps + 200)))[:n_caps]
    queries = [f"a photo of {t.lower()}" for t in caps[:: max(1, len(caps) // n_queries)]]
    queries = queries[:n_queries]
    table: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        data = np.load(cache)
        if str(data["name"]) == model.name:
            table = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    missing = [t for t in dict.fromkeys(caps + queries) if t not in table]
    if missing:
        t0 = time.perf_counter()
        print(f"embedding {len(missing)} captions and queries", file=sys.stderr)
        vecs = np.asarray(model.embed(missing), dtype=np.float32)
        print(f"  {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        table.update(zip(missing, vecs, strict=True))
        if cache is not None:
            np.savez(cache, texts=np.array(list(table)), vectors=np.stack(list(table.values())),
                     name=model.name)
    table = {t: table[t] for t in caps + queries}
    vecs = np.stack([table[t] for t in caps])
    corpus = list(caps)
    rng = np.random.default_rng(7)
    cap_vecs = vecs
    while len(corpus) < max_size + extra:
        i, j = rng.integers(0, len(caps), size=2)
        if i == j:
            continue
        text = f"{caps[i].rstrip('.')}. {caps[j]}"
        if text in table:
            continue
        v = cap_vecs[i] + cap_vecs[j]
        table[text] = (v / np.linalg.norm(v)).astype(np.float32)
        corpus.append(text)
    emb = TableEmbedder(table, model.name, model.dimension)
    emb.real_captions = len(caps)  # type: ignore[attr-defined]
    return emb, corpus, queries


# --- servers -------------------------------------------------------------------------------


class Servers:
    """A redis-server and a Chroma server on free loopback ports, stopped on exit."""

    def __init__(self, base: Path) -> None:
        from tests.servers import start_chroma, start_redis

        self.redis, self.redis_url = start_redis(base / "redis")
        try:
            self.chroma, self.chroma_url = start_chroma(base / "chroma" / "data")
        except BaseException:
            self.redis.stop()
            raise

    def rss_mb(self) -> dict[str, float]:
        return {
            "redis_server_rss_mb": _rss_of(self.redis.proc.pid if self.redis.proc else None),
            "chroma_server_rss_mb": _rss_of(self.chroma.proc.pid if self.chroma.proc else None),
        }

    def stop(self) -> None:
        self.chroma.stop()
        self.redis.stop()


def _rss_of(pid: int | None, field: str = "VmRSS") -> float:
    if pid is None:
        return float("nan")
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def open_tier(tier: str, home: Path, servers: Servers, embedder: TableEmbedder) -> Any:
    from reverie.core import ManualClock
    from reverie.integrations import open_engine

    clock = ManualClock(datetime(2025, 1, 1, tzinfo=UTC))
    if tier == "embedded":
        return open_engine(home, embedder=embedder, clock=clock)
    return open_engine(
        home, store=servers.redis_url, vectors=servers.chroma_url, embedder=embedder,
        clock=clock,
    )


# --- one tier at one size ------------------------------------------------------------------


def build(
    tier: str,
    size: int,
    corpus: list[str],
    embedder: TableEmbedder,
    servers: Servers,
    tmp: Path,
    budget_s: float,
    bulk_above: int,
) -> tuple[Any, str, dict[str, Any]]:
    """One tier's engine holding `size` memories (plus 100 single observes, timed)."""
    from reverie.core.engine import Observation

    ns = f"{NS}-{size}"
    engine = open_tier(tier, tmp / f"{tier}-{size}", servers, embedder)
    base = corpus[:size]
    held_out = corpus[size : size + 100]
    t0 = time.perf_counter()
    done = 0
    chunk = 2000
    bulk_path = size > bulk_above
    for i in range(0, size, chunk):
        if bulk_path:
            bulk_load(engine, ns, base[i : i + chunk])
        else:
            engine.observe_many([Observation(t) for t in base[i : i + chunk]], namespace=ns,
                                batch_size=256)
        done = min(size, i + chunk)
        elapsed = time.perf_counter() - t0
        print(f"  [{tier} {size}] built {done} in {elapsed:.0f} s", file=sys.stderr)
        if elapsed > budget_s and done < size:
            print(f"  [{tier} {size}] build budget exceeded; stopping at {done}",
                  file=sys.stderr)
            break
    bulk = time.perf_counter() - t0
    obs = []
    for t in held_out:
        t1 = time.perf_counter()
        engine.observe(t, namespace=ns)
        obs.append(time.perf_counter() - t1)
    engine.flush()
    return engine, ns, {
        "tier": tier,
        "memories": done + len(held_out),
        "target_memories": size,
        "complete": done == size,
        "build_path": "bulk commit" if bulk_path else "observe_many",
        "bulk_observe_per_s": done / bulk,
        "observe_p50_ms": pct(obs, 50),
        "observe_p95_ms": pct(obs, 95),
    }


ROUNDS = 3


def measure_tiers(
    built: dict[str, tuple[Any, str, dict[str, Any]]], queries: Sequence[str]
) -> list[dict[str, Any]]:
    """Recall on every tier, interleaved: for each query every (tier, mode) runs once in a
    random order, so the tiers meet the same moments of a shared machine and their ratio
    is not one tier's quiet minute against the other's busy one. Back to back (each touch
    written behind while the next recall runs) cannot be interleaved: it runs as one block
    per tier and round, the tiers' order alternating."""

    def recall_one(engine: Any, ns: str, q: str, reinforce: bool, policy: Any) -> float:
        defaults = engine.policy
        engine.policy = policy
        t1 = time.perf_counter()
        engine.recall(q, namespace=ns, k=10, reinforce=reinforce)
        took = time.perf_counter() - t1
        engine.flush_reinforcement()  # untimed: the background touch finishes between calls
        engine.policy = defaults
        return took

    cases = [(t, m) for t in built for m in ("no_reinforce", "drained", "sync")]
    samples: dict[tuple[str, str], list[float]] = {
        (t, m): [] for t in built for m in ("no_reinforce", "drained", "sync", "back_to_back")
    }
    for engine, ns, _ in built.values():  # warm both tiers' caches the same way
        for q in queries:
            engine.recall(q, namespace=ns, k=10, reinforce=False)
    rng = np.random.default_rng(11)
    for r in range(ROUNDS):
        for q in queries:
            for i in rng.permutation(len(cases)):
                tier, mode = cases[int(i)]
                engine, ns, _ = built[tier]
                policy = engine.policy
                if mode == "sync":
                    policy = policy.replace(reinforce_async=False)
                samples[(tier, mode)].append(
                    recall_one(engine, ns, q, mode != "no_reinforce", policy)
                )
        for tier in (list(built) if r % 2 == 0 else list(built)[::-1]):
            engine, ns, _ = built[tier]
            for q in queries:
                t1 = time.perf_counter()
                engine.recall(q, namespace=ns, k=10)
                samples[(tier, "back_to_back")].append(time.perf_counter() - t1)
            engine.flush_reinforcement()
    rows = []
    for tier, (engine, ns, info) in built.items():
        parts = port_parts(engine, ns, queries)
        stats = engine.stats(namespace=ns)
        rows.append({
            **parts,
            **info,
            "stored": stats["total"],
            "vectors": stats["vectors"],
            "recall_p50_ms": pct(samples[(tier, "back_to_back")], 50),
            "recall_p95_ms": pct(samples[(tier, "back_to_back")], 95),
            "recall_no_reinforce_p50_ms": pct(samples[(tier, "no_reinforce")], 50),
            "recall_no_reinforce_p95_ms": pct(samples[(tier, "no_reinforce")], 95),
            "recall_drained_p50_ms": pct(samples[(tier, "drained")], 50),
            "recall_drained_p95_ms": pct(samples[(tier, "drained")], 95),
            "recall_sync_p50_ms": pct(samples[(tier, "sync")], 50),
            "recall_sync_p95_ms": pct(samples[(tier, "sync")], 95),
        })
    return rows


def port_parts(engine: Any, ns: str, queries: Sequence[str]) -> dict[str, float]:
    """p50 of the port calls one recall makes, each timed alone, to show where a tier's
    time goes: the dense query, the lexical search, reading 20 records, the
    reinforcement write (touch of 10 ids), and placing 50 candidates in time for conversation
    context from full records (get_many) vs the light `created_times`."""
    pool = engine.policy.retrieval.candidate_pool
    vecs = engine.embedder.embed(list(queries))
    ids = [h.id for h in engine.vectors.query(ns, vecs[0], 20)]
    ids50 = [h.id for h in engine.vectors.query(ns, vecs[0], 50)]
    t_vec, t_lex, t_get, t_touch, t_get50, t_times50 = [], [], [], [], [], []
    when = engine.clock.now()
    for q, v in zip(queries, vecs, strict=True):
        t0 = time.perf_counter()
        engine.vectors.query(ns, v, pool)
        t1 = time.perf_counter()
        engine.lexical.search(ns, q, pool)
        t2 = time.perf_counter()
        engine.store.get_many(ns, ids)
        t3 = time.perf_counter()
        engine.store.touch(ns, ids[:10], when, engine.policy.decay.access_window)
        t4 = time.perf_counter()
        engine.store.get_many(ns, ids50)
        t5 = time.perf_counter()
        engine.store.created_times(ns, ids50)
        t6 = time.perf_counter()
        t_get50.append(t5 - t4)
        t_times50.append(t6 - t5)
        t_vec.append(t1 - t0)
        t_lex.append(t2 - t1)
        t_get.append(t3 - t2)
        t_touch.append(t4 - t3)
    return {
        "part_vector_query_p50_ms": pct(t_vec, 50),
        "part_lexical_search_p50_ms": pct(t_lex, 50),
        "part_get_many_20_p50_ms": pct(t_get, 50),
        "part_touch_10_p50_ms": pct(t_touch, 50),
        "part_get_many_50_p50_ms": pct(t_get50, 50),
        "part_created_times_50_p50_ms": pct(t_times50, 50),
    }


def bulk_load(engine: Any, ns: str, items: Sequence[str], chunk: int = 1000) -> None:
    """The bulk path for large sizes, identical for both tiers: traces built as `observe`
    builds them (entities, initial importance, confidence), committed 1000 to a batch (one
    transaction), vectors upserted in bulk. It skips the per-item duplicate lookup and
    entity linking, so a bulk-built namespace has no entity edges (COCO captions have
    almost no named entities anyway)."""
    from reverie.core.models import Kind, Memory, Tier, new_id
    from reverie.core.ports import VectorItem, WriteBatch
    from reverie.core.text import content_hash, extract_entities, initial_importance, strip_speaker

    policy = engine.policy
    for i in range(0, len(items), chunk):
        seen: set[str] = set()
        mems = []
        for t in items[i : i + chunk]:
            ents = extract_entities(strip_speaker(t))
            m = Memory(
                id=new_id(), namespace=ns, kind=Kind.EPISODIC, tier=Tier.TRACE, text=t,
                created_at=engine.clock.now(), importance=initial_importance(t, policy, ents),
                confidence=policy.funnel.initial_confidence_trace,
                sources=frozenset({f"observe:{new_id()}"}), entities=ents,
            )
            digest = content_hash(m.text)
            if digest not in seen and engine.store.find_by_hash(ns, digest) is None:
                seen.add(digest)
                mems.append(m)
        engine.store.commit(WriteBatch(ns, tuple(mems)))
        vecs = engine.embedder.embed([m.text for m in mems])
        engine.vectors.upsert(
            ns, [VectorItem(m.id, v) for m, v in zip(mems, vecs, strict=True)]
        )


# --- observe throughput with N worker processes on Redis -----------------------------------


# Throughput modes: how a worker's vectors reach the Chroma server (policy changes, outbox
# settings)
MODE_POLICY: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "outbox": ({}, {}),  # the default: behind observe, through the namespace's shared outbox
    "outbox-nolinger": ({}, {"linger_seconds": 0.0}),  # drains never wait for more
    "behind": ({}, {"enabled": False}),  # behind observe, each engine its own upserts
    "inline": ({"index_async": False}, {"enabled": False}),  # observe waits for its vector
}


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system, every thread) a process has used so far."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _observe_worker(
    wid: int, vec_file: str, items: list[str], redis_url: str, chroma_url: str, ns: str,
    barrier: Any, out: Any, mode: str = "outbox",
) -> None:
    """One agent worker: its own engine on the shared tier, observing its own texts. Its
    time and CPU run from the common start to the end of `close()`, which writes any
    vectors still queued behind observe, so write-behind work is counted."""
    try:
        from reverie.core import DEFAULT_POLICY, ManualClock
        from reverie.integrations import open_engine
        from reverie.integrations.redis.outbox import OutboxSettings

        data = np.load(vec_file)
        table = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        embedder = TableEmbedder(table, str(data["name"]), int(data["dim"]))
        engine = open_engine(
            Path(tempfile.gettempdir()) / f"reverie-bench-w{os.getpid()}",
            store=redis_url, vectors=chroma_url, embedder=embedder,
            clock=ManualClock(datetime(2025, 1, 1, tzinfo=UTC)),
            policy=DEFAULT_POLICY.replace(**MODE_POLICY[mode][0]),
            outbox=OutboxSettings(**MODE_POLICY[mode][1]),
        )
        engine.observe("warm-up: open every connection before the clock starts", namespace=ns)
        engine.flush()
        upserts = [0]  # the upserts this worker's engine makes itself (no outbox)
        plain_upsert = engine.vectors.upsert

        def counted_upsert(*args: Any, **kwargs: Any) -> Any:
            upserts[0] += 1
            return plain_upsert(*args, **kwargs)

        engine.vectors.upsert = counted_upsert
        drains0 = getattr(engine.vectors, "drains", 0)
        barrier.wait(timeout=300)
        c0 = os.times()
        t0 = time.perf_counter()
        for t in items:
            engine.observe(t, namespace=ns)
        engine.flush()  # the vectors written behind observe are part of the work
        elapsed = time.perf_counter() - t0
        c1 = os.times()
        # vector writes that reached the Chroma server: the outbox counts the batches this
        # worker drained (everyone's), the engine's writer the upserts it made itself
        drains = getattr(engine.vectors, "drains", None)
        calls = drains - drains0 if drains is not None else upserts[0]
        rss, peak = _rss_of(os.getpid()), _rss_of(os.getpid(), "VmHWM")
        engine.close()
        out.put({"wid": wid, "ops": len(items), "seconds": elapsed, "end": time.time(),
                 "start": time.time() - elapsed,
                 "cpu_s": (c1.user - c0.user) + (c1.system - c0.system),
                 "index_calls": calls if mode != "inline" else len(items),
                 "rss_mb": rss, "peak_rss_mb": peak})
    except BaseException as e:  # report, never hang the parent
        import traceback

        out.put({"wid": wid, "error": f"{e!r}\n{traceback.format_exc()}"})


def throughput(
    workers: Sequence[int], total_ops: int, corpus: list[str], embedder: TableEmbedder,
    servers: Servers, tmp: Path, modes: Sequence[str] = ("outbox",), repeat: int = 1,
    prefill: int = 0,
) -> list[dict[str, Any]]:
    """Each mode of `MODE_POLICY` (`outbox`, the default policy; `behind`, each engine its
    own upserts; `inline`) at each worker count; per-process CPU from /proc, Redis commands
    from INFO commandstats, vector writes counted by each worker (outbox batches it drained,
    or its engine's own upserts).

    `repeat` > 1 measures every worker count that many times, the order reversed every
    other run (1, 2, 4, then 4, 2, 1, ...), so a slow spell of the shared machine does not
    always land on the same row; each run's ratios are against its own one-worker row.
    `prefill` > 0 first bulk-loads that many other memories (records and vectors) into each
    row's namespace, so the workers write into a namespace of that size."""
    import redis

    rc = redis.Redis.from_url(servers.redis_url, decode_responses=True)
    rows: list[dict[str, Any]] = []
    offset = 0
    for run in range(repeat):
        order = list(workers) if run % 2 == 0 else list(reversed(workers))
        for mode in modes:
            mode_rows, offset = _throughput_mode(
                order, total_ops, corpus, embedder, servers, tmp, mode, offset, rc,
                prefill,
            )
            for r in mode_rows:
                r["run"] = run + 1
            rows += sorted(mode_rows, key=lambda r: r["workers"])
    rc.close()
    return rows


def _throughput_mode(
    workers: Sequence[int], total_ops: int, corpus: list[str], embedder: TableEmbedder,
    servers: Servers, tmp: Path, mode: str, offset: int, rc: Any, prefill: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    ctx = mp.get_context("spawn")
    rows = []
    warm = "warm-up: open every connection before the clock starts"
    redis_pid = servers.redis.proc.pid if servers.redis.proc else None
    chroma_pid = servers.chroma.proc.pid if servers.chroma.proc else None
    # The rows share one block of texts dealt out in turn, so each row observes the same
    # mix: beyond the real captions the corpus holds longer two-caption composites, and a
    # row given a later slice of its own would observe longer texts than the others.
    block = corpus[offset : offset + total_ops * len(workers)]
    offset += total_ops * len(workers)
    dealt = {n: block[i :: len(workers)] for i, n in enumerate(sorted(workers))}
    for n in workers:
        per = total_ops // n
        chunks = [dealt[n][w * per : (w + 1) * per] for w in range(n)]
        needed = [t for c in chunks for t in c] + [warm]
        vec_file = tmp / f"vectors-{n}.npz"
        np.savez(
            vec_file, texts=np.array(needed), name=embedder.name, dim=embedder.dimension,
            vectors=np.stack([embedder.table.get(t, embedder.table[corpus[0]])
                              for t in needed]),
        )
        ns = f"throughput-{n}-{uuid.uuid4().hex[:6]}"
        if prefill:
            filler = open_tier("shared", tmp / f"prefill-{ns}", servers, embedder)
            bulk_load(filler, ns, corpus[offset : offset + prefill])
            filler.close()
            offset += prefill
        barrier = ctx.Barrier(n + 1)
        out = ctx.Queue()
        procs = [
            ctx.Process(target=_observe_worker, args=(
                w, str(vec_file), chunks[w], servers.redis_url, servers.chroma_url, ns,
                barrier, out, mode,
            ))
            for w in range(n)
        ]
        for p in procs:
            p.start()
        barrier.wait(timeout=600)
        rc.config_resetstat()
        cpu0 = (_cpu_s(redis_pid), _cpu_s(chroma_pid))
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        reports = [out.get(timeout=1800) for _ in procs]
        wall = time.perf_counter() - t0
        cpu1 = (_cpu_s(redis_pid), _cpu_s(chroma_pid))
        commands = sum(
            int(v["calls"]) for k, v in rc.info("commandstats").items()
            if k not in ("cmdstat_config|resetstat", "cmdstat_info")
        )
        for p in procs:
            p.join(timeout=60)
        errors = [r["error"] for r in reports if "error" in r]
        if errors:
            raise RuntimeError("a throughput worker failed:\n" + "\n".join(errors))
        ops = sum(r["ops"] for r in reports)
        worker_cpu = sum(r["cpu_s"] for r in reports)
        rows.append({
            "mode": mode,
            "index_async": mode != "inline",
            "workers": n,
            "observes": ops,
            "wall_s": wall,
            "observe_per_s": ops / wall,
            "worker_cpu_ms_per_observe": worker_cpu / ops * 1000,
            "redis_cpu_ms_per_observe": (cpu1[0] - cpu0[0]) / ops * 1000,
            "chroma_cpu_ms_per_observe": (cpu1[1] - cpu0[1]) / ops * 1000,
            "cores_busy": (worker_cpu + cpu1[0] - cpu0[0] + cpu1[1] - cpu0[1]) / wall,
            "redis_commands_per_observe": commands / ops,
            "vector_writes_per_observe": sum(r["index_calls"] for r in reports) / ops,
            "load_1m_before_after": [load0, os.getloadavg()[0]],
            "prefilled_memories": prefill,
            "worker_rss_mb_mean": float(np.mean([r["rss_mb"] for r in reports])),
            "worker_peak_rss_mb_max": float(np.max([r["peak_rss_mb"] for r in reports])),
            **servers.rss_mb(),
        })
        print(f"  throughput {n} workers ({mode}): {ops / wall:.0f} "
              "observe/s", file=sys.stderr)
    base = min(rows, key=lambda r: r["workers"])["observe_per_s"]
    for r in rows:
        r["speedup_vs_1"] = r["observe_per_s"] / base
    return rows, offset


# --- report --------------------------------------------------------------------------------


def render(rows: list[dict[str, Any]], tput: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    if not rows:  # a throughput-only run
        return "\n".join([
            "# Observe throughput, shared tier (Redis + Chroma server)",
            "",
            f"Machine: {meta['machine']}; redis-server {meta['redis_version']}, chromadb "
            f"{meta['chromadb']}; 1-minute load average "
            f"{meta['load_average_1m_before_after'][0]:.1f} before, "
            f"{meta['load_average_1m_before_after'][1]:.1f} after. Both servers run on this "
            "same machine, on loopback. Embedding time "
            "excluded: every vector (all-MiniLM-L6-v2 over COCO captions) is computed "
            "before the timed sections.",
            "",
            *render_throughput(tput),
            *[line for note in meta.get("notes", []) for line in ("", note)],
        ]) + "\n"
    lines = [
        "# Latency, embedded default vs shared tier (Redis + Chroma server)",
        "",
        f"Machine: {meta['machine']}; redis-server {meta['redis_version']}, chromadb "
        f"{meta['chromadb']}; 1-minute load average {meta['load_average_1m_before_after'][0]:.1f}"
        f" before, {meta['load_average_1m_before_after'][1]:.1f} after. Both servers run on "
        "this same machine, on loopback. "
        f"{meta['queries']} recall queries per size (k=10, reinforcing: each recall also "
        "writes its access counts). Embedding time excluded and identical across tiers: "
        f"every vector (all-MiniLM-L6-v2 over {meta['real_captions']:,} COCO captions; beyond "
        "them, two-caption "
        "composites with the normalised sum of their vectors) is computed before the timed "
        "sections. Observe = one new text through `engine.observe`. Recall = the default "
        "(reinforcement written behind the caller), back to back; drained = the same with "
        "the queue drained between calls outside the timing; sync = "
        "Policy(reinforce_async=False), the touch written before recall returns. Both "
        f"tiers are built first and measured together over {ROUNDS} rounds: for each query "
        "every (tier, mode) but back to back runs once in a random order, so the tiers "
        "meet the same moments of the shared machine; back to back runs as one block per "
        "tier and round, the tiers' order alternating. p50 over all samples.",
        "",
        "| memories | tier | observe p50 / p95 ms | recall p50 / p95 ms | "
        "recall drained p50 / p95 | recall sync p50 / p95 | "
        "recall w/o reinforce p50 / p95 ms | bulk build /s | recall p50 vs embedded | "
        "drained vs embedded drained | sync vs embedded sync |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    emb = {r["target_memories"]: r for r in rows if r["tier"] == "embedded"}
    for r in rows:
        ref = emb.get(r["target_memories"])
        ratio = r["recall_p50_ms"] / ref["recall_p50_ms"] if ref else float("nan")

        def vs(key: str, r: dict[str, Any] = r, ref: dict[str, Any] | None = ref) -> str:
            if ref is None or key not in r or key not in ref:
                return "-"
            return f"{r[key] / ref[key]:.2f}x"

        def cell(key: str, r: dict[str, Any] = r) -> str:
            if f"{key}_p50_ms" not in r:
                return "-"
            return f"{r[f'{key}_p50_ms']:.1f} / {r[f'{key}_p95_ms']:.1f}"
        note = "" if r["complete"] else f" (of {r['target_memories']:,}: build time-boxed)"
        note += " (bulk-built)" if r.get("build_path") == "bulk commit" else ""
        lines.append(
            f"| {r['memories']:,}{note} | {r['tier']} | {r['observe_p50_ms']:.1f} / "
            f"{r['observe_p95_ms']:.1f} | {r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f}"
            f" | {cell('recall_drained')} | {cell('recall_sync')}"
            f" | {r['recall_no_reinforce_p50_ms']:.1f} / {r['recall_no_reinforce_p95_ms']:.1f}"
            f" | {r['bulk_observe_per_s']:.0f} | {ratio:.2f}x"
            f" | {vs('recall_drained_p50_ms')} | {vs('recall_sync_p50_ms')} |"
        )
    if any("part_vector_query_p50_ms" in r for r in rows):
        lines += [
            "",
            "Where a recall's time goes: p50 of each port call timed alone (k=50 candidates).",
            "",
            "| memories | tier | vector query | lexical search | get_many 20 | touch 10 | "
            "get_many 50 | created_times 50 |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if "part_vector_query_p50_ms" in r:
                lines.append(
                    f"| {r['memories']:,} | {r['tier']} | {r['part_vector_query_p50_ms']:.1f}"
                    f" | {r['part_lexical_search_p50_ms']:.1f} | "
                    f"{r['part_get_many_20_p50_ms']:.1f} | {r['part_touch_10_p50_ms']:.1f} | "
                    f"{r.get('part_get_many_50_p50_ms', float('nan')):.2f} | "
                    f"{r.get('part_created_times_50_p50_ms', float('nan')):.2f} |"
                )
    if tput:
        lines += ["", *render_throughput(tput)]
    for note in meta.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def render_throughput(tput: list[dict[str, Any]]) -> list[str]:
    lines = [
        "Observe throughput on the shared tier: N worker processes, each with its own "
        "engine, observing distinct texts into one namespace; wall time from a common "
        "start barrier until the last worker has observed its texts and written every "
        "vector (`engine.flush()`). Vectors: `outbox` = written behind observe and through "
        "the namespace's Redis outbox, drained by one worker at a time for everyone "
        "(Policy.background.index_async and OutboxSettings.enabled, the default); "
        "`behind` = written behind observe, each worker's engine upserting its own batches "
        "(OutboxSettings(enabled=False)); "
        "`inline` = each observe writes its own vector before returning (index_async=False, "
        "the oldest path); modes listed in one table were measured in the same run. "
        "CPU is ms per observe from /proc (workers: user + system of the timed section); "
        "cores busy = all of it over the wall time (2 cores here); Redis commands from "
        "INFO commandstats (MULTI/EXEC/WATCH included); vector writes = batches written to "
        "the Chroma server per observe (an outbox batch is one merged upsert)."
        + (f" Each row's namespace first held {tput[0]['prefilled_memories']:,} other "
           "memories (bulk-loaded records and vectors, `--prefill`)."
           if tput and tput[0].get("prefilled_memories") else ""),
        "",
        "| run | vectors | workers | observes | wall s | observe/s | vs 1 worker | worker CPU | "
        "redis CPU | chroma CPU | cores busy | Redis cmds / observe | vector writes / "
        "observe | worker RSS MB (mean) | worker peak RSS MB | redis-server RSS MB | "
        "chroma server RSS MB | load 1m |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tput:
        def num(key: str, fmt: str = ".2f", t: dict[str, Any] = t) -> str:
            return format(t[key], fmt) if key in t else "-"
        load = t.get("load_1m_before_after")
        lines.append(
            f"| {t.get('run', 1)} "
            f"| {_mode(t)} | {t['workers']} | "
            f"{t['observes']} | {t['wall_s']:.1f} | {t['observe_per_s']:.0f} | "
            f"{t['speedup_vs_1']:.2f}x | {num('worker_cpu_ms_per_observe')} | "
            f"{num('redis_cpu_ms_per_observe')} | {num('chroma_cpu_ms_per_observe')} | "
            f"{num('cores_busy')} | {num('redis_commands_per_observe', '.1f')} | "
            f"{num('vector_writes_per_observe', '.3f')} | "
            f"{t['worker_rss_mb_mean']:.0f} | {t['worker_peak_rss_mb_max']:.0f} | "
            f"{t['redis_server_rss_mb']:.0f} | {t['chroma_server_rss_mb']:.0f} | "
            + (f"{load[0]:.1f} -> {load[1]:.1f} |" if load else "- |")
        )
    return lines + render_medians(tput)


def _mode(t: Mapping[str, Any]) -> str:
    """A row's vector mode; rows saved before the outbox have only `index_async`."""
    if "mode" in t:
        return str(t["mode"])
    return "behind" if t.get("index_async", False) else "inline"


def render_medians(tput: list[dict[str, Any]]) -> list[str]:
    """Over repeated runs: each worker count's median rate, and the median of the runs'
    own ratios to their one-worker row (every ratio listed)."""
    runs = {t.get("run", 1) for t in tput}
    if len(runs) < 2:
        return []
    lines = [
        "",
        f"Over the {len(runs)} runs (median; every run's ratio listed in run order):",
        "",
        "| vectors | workers | observe/s (median) | vs 1 worker (median) | each run |",
        "|---|---|---|---|---|",
    ]
    for mode in sorted({_mode(t) for t in tput}, key=list(MODE_POLICY).index):
        rows = [t for t in tput if _mode(t) == mode]
        for n in sorted({t["workers"] for t in rows}):
            mine = sorted((t for t in rows if t["workers"] == n), key=lambda t: t.get("run", 1))
            ratios = [t["speedup_vs_1"] for t in mine]
            lines.append(
                f"| {mode} | {n} | "
                f"{float(np.median([t['observe_per_s'] for t in mine])):.0f} | "
                f"{float(np.median(ratios)):.2f}x | "
                + ", ".join(f"{r:.2f}x" for r in ratios) + " |"
            )
    return lines


def _redis_version() -> str:
    import subprocess

    exe = shutil.which("redis-server") or "redis-server"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
    except OSError:
        return "?"
    parts = [p for p in out.stdout.split() if p.startswith("v=")]
    return parts[0][2:] if parts else out.stdout.strip()


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workers", nargs="*", type=int, default=[1, 2, 4])
    ap.add_argument("--throughput-ops", type=int, default=2400)
    ap.add_argument("--prefill", type=int, default=0,
                    help="throughput: memories bulk-loaded into each row's namespace first "
                         "(default 0: the workers start from an empty namespace)")
    ap.add_argument("--repeat", type=int, default=5,
                    help="throughput runs over every worker count, the order reversed every "
                         "other run; the report adds each count's median and every run's "
                         "ratio")
    ap.add_argument("--index-modes", nargs="+", choices=list(MODE_POLICY),
                    default=["outbox", "behind"],
                    help="throughput with vectors written behind observe through the shared "
                         "outbox (the default policy), behind observe by each worker "
                         "(OutboxSettings(enabled=False)) and/or inline (index_async=False), "
                         "in the same run")
    ap.add_argument("--tiers", nargs="+", default=["embedded", "shared"])
    ap.add_argument("--build-budget", type=float, default=1800.0,
                    help="seconds allowed to build one tier at one size before it stops")
    ap.add_argument("--bulk-above", type=int, default=20_000,
                    help="sizes above this are built with bulk commits instead of observe_many")
    ap.add_argument("--captions", type=int, default=12_000,
                    help="real captions to embed (the rest of the corpus is composites)")
    ap.add_argument("--vector-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "reverie-bench-vectors.npz")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    import chromadb

    load_before = os.getloadavg()
    embedder, corpus, queries = build_table(
        max(args.sizes, default=0), args.queries,
        100 + args.throughput_ops * max(1, len(args.workers)) * len(args.index_modes)
        * max(1, args.repeat) * (1 + -(-args.prefill // max(1, args.throughput_ops))),
        args.captions,
        args.vector_cache,
    )
    rows: list[dict[str, Any]] = []
    tput: list[dict[str, Any]] = []
    meta: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores, CPU only, {platform.python_version()}",
        "queries": args.queries,
        "redis_version": _redis_version(),
        "chromadb": chromadb.__version__,
        "load_average_1m_before_after": [load_before[0], load_before[0]],
        "real_captions": getattr(embedder, "real_captions", args.captions),
        "notes": [],
    }

    def save() -> str:
        """Written after every measurement, so a run stopped part-way keeps what it had."""
        meta["load_average_1m_before_after"][1] = os.getloadavg()[0]
        emb = {r["target_memories"]: r for r in rows if r["tier"] == "embedded"}
        for r in rows:
            if r["tier"] == "shared" and r["target_memories"] in emb:
                ratio = r["recall_p50_ms"] / emb[r["target_memories"]]["recall_p50_ms"]
                r["recall_p50_vs_embedded"] = ratio
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "latency_tiers.json").write_text(
            json.dumps({"meta": meta, "rows": rows, "throughput": tput}, indent=2)
        )
        text = render(rows, tput, meta)
        (args.out / "latency_tiers.md").write_text(text)
        return text

    with tempfile.TemporaryDirectory(prefix="reverie-tiers-") as tmpdir:
        tmp = Path(tmpdir)
        servers = Servers(tmp / "servers")
        try:
            for size in args.sizes:
                built = {}
                for tier in args.tiers:
                    print(f"[{tier} {size}]", file=sys.stderr)
                    built[tier] = build(tier, size, corpus, embedder, servers, tmp,
                                        args.build_budget, args.bulk_above)
                try:
                    rows.extend(measure_tiers(built, queries))
                finally:
                    for engine, _, _ in built.values():
                        engine.close()
                save()
            if args.workers:
                # texts no size used, so every observe in the throughput runs is new
                fresh = corpus[max(args.sizes, default=0) + 100 :]
                tput = throughput(args.workers, args.throughput_ops, fresh, embedder,
                                  servers, tmp, args.index_modes, max(1, args.repeat),
                                  args.prefill)
        finally:
            servers.stop()
    print(save())


if __name__ == "__main__":
    main()
