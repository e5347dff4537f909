"""Scale of the shared tier (Redis + a Chroma server) with one namespace growing: the
companion of `scale.py`, with the same texts, vectors and recall protocol.

Per size, a fresh redis-server and a fresh Chroma server (`chroma run`) are started on free
loopback ports (so every figure is that size's alone), then:
- build (a worker process): ingest with `observe_many`, vectors written through the
  namespace's outbox to the Chroma server (the default), waited for with `flush()`; then
  recall and the raw Chroma server query (`HttpClient`, the same collection, k=10)
  interleaved query by query in a random order; then `maintenance_due()` and the server's
  own ingest rate (`add` of 2,048 more vectors, deleted again);
- open (a fresh worker): open the engine on the running servers and answer one recall (the
  time a restarted agent waits; on this tier it includes the worker's lexical mirror being
  filled from Redis); raw: a fresh process connects to the Chroma server and answers one
  query;
- memory: the resident memory of each process (worker peak, redis-server, Chroma server),
  Redis's own `used_memory`, and the Chroma server's files on disk. Redis keeps the records
  in memory; what it writes to disk depends on the server's persistence settings (RDB or
  AOF), which are the operator's.

Run: python benchmarks/scale_shared.py [--sizes 10000 100000] [--queries 200] [--add]
(`--sizes 1000000` builds for about 45 minutes on a 2-core machine and needs about 9 GB
of memory for the two servers and the worker; `--add` merges the sizes run into the
rows already written.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import scale
from common import HashEmbedder
from scale import (
    ROUNDS,
    corpus,
    disk_bytes,
    exponents,
    growth_lines,
    peak_rss_mib,
    queries,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
NS = "bench"


def _raw_collection(chroma_url: str) -> Any:
    import chromadb

    from reverie.integrations.chroma.collections import collection_name

    u = urlparse(chroma_url)
    client = chromadb.HttpClient(host=u.hostname or "127.0.0.1", port=u.port or 8000)
    return client.get_collection(collection_name(NS))


def build(size: int, home: Path, redis_url: str, chroma_url: str,
          n_queries: int) -> dict[str, Any]:
    import chromadb  # noqa: F401  (imported before the clock, as in scale.py)

    from reverie.core import ManualClock
    from reverie.integrations import open_engine

    emb = HashEmbedder()
    texts = corpus(size)
    clock = ManualClock(datetime(2025, 1, 1, tzinfo=UTC))
    engine = open_engine(home, store=redis_url, vectors=chroma_url, embedder=emb, clock=clock)
    ingest = scale.ingest_seconds(engine, texts)
    del texts
    # recall is timed as a running worker answers it, its BM25 mirror filled (until then
    # the Redis server scores the lexical channel: `open_first` times that start)
    t0 = time.perf_counter()
    assert engine.store.warm_lexical(NS, timeout=3600)
    filled = time.perf_counter() - t0
    row = scale.measured_row(engine, _raw_collection(chroma_url), emb, size, ingest,
                             n_queries)
    return {**row, "build_mirror_filled_s": filled}


def open_first(home: Path, redis_url: str, chroma_url: str) -> dict[str, Any]:
    """A restarted worker: connect to the servers and answer one recall."""
    emb = HashEmbedder()
    q1, q2 = queries(2)
    v1, v2 = emb.embed([q1, q2])
    import chromadb  # noqa: F401

    from reverie.integrations import open_engine

    t0 = time.perf_counter()
    engine = open_engine(home, store=redis_url, vectors=chroma_url, embedder=emb)
    engine.recall(q1, namespace=NS, k=10, reinforce=False, query_vector=v1)
    took = time.perf_counter() - t0
    t1 = time.perf_counter()
    engine.recall(q2, namespace=NS, k=10, reinforce=False, query_vector=v2)
    second = time.perf_counter() - t1
    # until the worker's BM25 mirror is filled, the Redis server scores the lexical
    # channel; how long the fill the first recall started takes, and a recall after it
    assert engine.store.warm_lexical(NS, timeout=3600)
    filled = time.perf_counter() - t0
    t1 = time.perf_counter()
    engine.recall(q2, namespace=NS, k=10, reinforce=False, query_vector=v2)
    after = time.perf_counter() - t1
    engine.close()
    return {"open_first_recall_s": took, "second_recall_s": second,
            "mirror_filled_after_s": filled, "recall_after_fill_s": after,
            "open_peak_rss_mib": peak_rss_mib()}


def raw_open_first(chroma_url: str) -> dict[str, Any]:
    v = HashEmbedder().embed(queries(1))[0]
    import chromadb  # noqa: F401

    t0 = time.perf_counter()
    col = _raw_collection(chroma_url)
    col.query(query_embeddings=v[None, :], n_results=10, include=["distances"])
    took = time.perf_counter() - t0
    return {"raw_open_first_query_s": took, "raw_open_peak_rss_mib": peak_rss_mib()}


# --------------------------------------------------------------------------- driver


def _rss_mib(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def run_worker(kind: str, size: int, home: Path, urls: tuple[str, str],
               n_queries: int) -> dict[str, Any]:
    return scale.run_worker(kind, size, home, n_queries, script=__file__,
                            extra=("--redis", urls[0], "--chroma", urls[1]))


def measure(size: int, n_queries: int, tmp: Path) -> dict[str, Any]:
    import redis

    from tests.servers import start_chroma, start_redis

    base = tmp / f"n{size}"
    redis_proc, redis_url = start_redis(base / "redis")
    try:
        chroma_dir = base / "chroma" / "data"
        chroma_proc, chroma_url = start_chroma(chroma_dir)
        try:
            urls = (redis_url, chroma_url)
            home = base / "home"
            print(f"[{size}] build", file=sys.stderr, flush=True)
            row = run_worker("build", size, home, urls, n_queries)
            info = redis.Redis.from_url(redis_url).info("memory")
            row["redis_used_memory_bytes_per_memory"] = info["used_memory"] / size
            row["redis_rss_mib"] = _rss_mib(redis_proc.proc.pid if redis_proc.proc else None)
            row["chroma_server_rss_mib_after_build"] = _rss_mib(
                chroma_proc.proc.pid if chroma_proc.proc else None)
            row["chroma_disk_bytes_per_memory"] = disk_bytes(chroma_dir) / size
            row["local_disk_bytes"] = disk_bytes(home) if home.exists() else 0
            print(f"[{size}] open", file=sys.stderr, flush=True)
            row.update(run_worker("open", size, home, urls, n_queries))
            row.update(run_worker("raw_open", size, home, urls, n_queries))
            row["chroma_server_rss_mib"] = _rss_mib(
                chroma_proc.proc.pid if chroma_proc.proc else None)
        finally:
            chroma_proc.stop()
    finally:
        redis_proc.stop()
    for m in ("no_reinforce", "drained", "back_to_back"):
        row[f"ratio_{m}_p50"] = row[f"{m}_p50_ms"] / row["raw_p50_ms"]
        row[f"ratio_{m}_p95"] = row[f"{m}_p95_ms"] / row["raw_p95_ms"]
    row["loadavg_1m_after"] = os.getloadavg()[0]
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Scale, shared tier (Redis + Chroma server)",
        "",
        f"Machine: {meta['machine']}; redis-server and the Chroma server run on the same "
        "machine, on loopback, started fresh for each size. Texts, vectors and recall as in "
        "`scale.md`: one namespace, the hashed bag-of-words embedder, COCO captions with "
        f"three Zipf-drawn words and a serial number; recall k=10, query vector given, "
        f"{meta['queries']} queries x {ROUNDS} rounds interleaved with the raw Chroma server "
        "query (`HttpClient`, unfiltered, k=10, the same collection) in a random order. "
        "Ingest: `observe_many`, vectors through the namespace's outbox, until every vector "
        "is on the server. Open -> first recall: a fresh process connects and answers one "
        "recall (its lexical channel scored by the Redis server while the worker's BM25 "
        "mirror fills beside it; mirror filled = from open until the fill is done); raw: a "
        "fresh process connects and answers one query. Memory: peak RSS of the worker "
        "process, RSS of redis-server and of the Chroma server, Redis's `used_memory`, and "
        "the Chroma server's files. Load average (1 min) at start "
        f"{meta['loadavg_start']:.2f}, end {meta['loadavg_end']:.2f}.",
        "",
        "| memories | ingest /s | raw Chroma add /s | recall p50 / p95 ms (drained) | "
        "back to back p50 / p95 | raw Chroma p50 / p95 | drained / raw p50, p95 | "
        "open -> first recall s | raw open -> first query s | mirror filled s | "
        "maintenance_due() s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['memories']:,} | {r['ingest_per_s']:,.0f} | {r['raw_chroma_add_per_s']:,.0f} | "
            f"{r['drained_p50_ms']:.2f} / {r['drained_p95_ms']:.2f} | "
            f"{r['back_to_back_p50_ms']:.2f} / {r['back_to_back_p95_ms']:.2f} | "
            f"{r['raw_p50_ms']:.2f} / {r['raw_p95_ms']:.2f} | "
            f"{r['ratio_drained_p50']:.2f}x, {r['ratio_drained_p95']:.2f}x | "
            f"{r['open_first_recall_s']:.2f} | {r['raw_open_first_query_s']:.2f} | "
            f"{r['mirror_filled_after_s']:.2f} | {r['maintenance_due_s']:.3f} |"
        )
    lines += [
        "",
        "| memories | worker peak RSS build / open MiB | raw open MiB | redis-server RSS MiB | "
        "Redis used_memory / memory | Chroma server RSS MiB | Chroma files / memory |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['memories']:,} | {r['build_peak_rss_mib']:.0f} / "
            f"{r['open_peak_rss_mib']:.0f} | {r['raw_open_peak_rss_mib']:.0f} | "
            f"{r['redis_rss_mib']:.0f} | {r['redis_used_memory_bytes_per_memory']:,.0f} B | "
            f"{r['chroma_server_rss_mib']:.0f} | {r['chroma_disk_bytes_per_memory']:,.0f} B |"
        )
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += [""] + [f"- {r['memories']:,}: {r['note']}" for r in notes]
    lines += growth_lines(meta, UNITS)
    return "\n".join(lines) + "\n"


GROWTH = {
    "ingest time": lambda r: r["ingest_s"],
    "recall p50 (drained)": lambda r: r["drained_p50_ms"],
    "raw Chroma p50": lambda r: r["raw_p50_ms"],
    "open -> first recall": lambda r: r["open_first_recall_s"],
    "raw Chroma open -> first query": lambda r: r["raw_open_first_query_s"],
    "mirror filled": lambda r: r["mirror_filled_after_s"],
    "maintenance_due()": lambda r: r["maintenance_due_s"],
    "Redis used_memory": lambda r: r["redis_used_memory_bytes_per_memory"] * r["memories"],
    "Chroma server RSS": lambda r: r["chroma_server_rss_mib"],
    "worker peak RSS (open)": lambda r: r["open_peak_rss_mib"],
}
UNITS = {"ingest time": "s", "recall p50 (drained)": "ms", "raw Chroma p50": "ms",
         "open -> first recall": "s", "raw Chroma open -> first query": "s",
         "mirror filled": "s", "maintenance_due()": "s", "Redis used_memory": "bytes",
         "Chroma server RSS": "MiB", "worker peak RSS (open)": "MiB"}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--extrapolate-to", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--worker", choices=["build", "open", "raw_open"])
    ap.add_argument("--size", type=int)
    ap.add_argument("--home", type=Path)
    ap.add_argument("--redis")
    ap.add_argument("--chroma")
    ap.add_argument("--add", action="store_true",
                    help="add these sizes to the rows already in OUT/scale_shared.json")
    args = ap.parse_args(argv)
    if args.worker:
        fn = {"build": lambda: build(args.size, args.home, args.redis, args.chroma,
                                     args.queries),
              "open": lambda: open_first(args.home, args.redis, args.chroma),
              "raw_open": lambda: raw_open_first(args.chroma)}[args.worker]
        print(json.dumps(fn()))
        return
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=os.environ.get("SCALE_TMP")) as tmp:
        rows = [measure(n, args.queries, Path(tmp)) for n in sorted(args.sizes)]
    if args.add:
        old = json.loads((args.out / "scale_shared.json").read_text())["rows"]
        by_size = {r["memories"]: r for r in old} | {r["memories"]: r for r in rows}
        rows = [by_size[n] for n in sorted(by_size)]
    exps = exponents(rows, GROWTH)
    meta: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores, CPU only",
        "queries": args.queries,
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg()[0],
        "exponents": exps,
    }
    if exps and args.extrapolate_to > rows[-1]["memories"]:
        f = args.extrapolate_to / rows[-1]["memories"]
        meta["extrapolated_to"] = args.extrapolate_to
        meta["extrapolated"] = {k: float(get(rows[-1]) * f ** exps[k])
                                for k, get in GROWTH.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale_shared.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=2))
    (args.out / "scale_shared.md").write_text(render(rows, meta))
    print(render(rows, meta))


if __name__ == "__main__":
    main()
