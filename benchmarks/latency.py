"""Latency of the embedded default: observe and recall p50/p95 at 1k and 10k memories,
against the raw Chroma query for the same vectors, measured in the same run.

Recall is timed with the query's embedding excluded (query vectors are computed
first and served from a cache), so the ratio shows what reverie adds on top of the
vector search: the lexical channel, fusion, graph expansion, decay scoring, and
(by default) the access-reinforcement write. Reinforcement is measured three ways in the
same run: written behind the caller (Policy.reinforce_async, the default) back to back,
the same with the queue drained between calls outside the timing (an agent that does
anything between recalls, e.g. an LLM call), and written before recall returns (sync).
Run: python benchmarks/latency.py [--sizes 1000 10000] [--queries 200]
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder

ROOT = Path(__file__).resolve().parents[1]
COCO = ROOT.parent / "shared" / "data" / "coco_captions" / "clusters.jsonl"


def texts(n: int) -> list[str]:
    out: list[str] = []
    with COCO.open() as f:
        for line in f:
            out.extend(json.loads(line)["texts"])
            if len(out) >= n:
                break
    return out[:n]


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def measure(size: int, n_queries: int, embedder: MemoEmbedder, tmp: Path) -> dict[str, Any]:
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine

    corpus = texts(size + n_queries)
    base, held_out = corpus[:size], corpus[size:]
    print(f"[{size}] embedding {size} texts", file=sys.stderr)
    embedder.warm(base)
    clock = ManualClock(datetime(2025, 1, 1, tzinfo=UTC))
    engine = open_engine(tmp / f"n{size}", embedder=embedder, clock=clock)
    t0 = time.perf_counter()
    engine.observe_many([Observation(t) for t in base], namespace="bench")
    bulk = time.perf_counter() - t0

    # single observes of new texts (the hot path of an agent), embedding included
    obs = []
    for t in held_out[: min(100, n_queries)]:
        t1 = time.perf_counter()
        engine.observe(t, namespace="bench")
        obs.append(time.perf_counter() - t1)

    queries = [f"a photo of {t.lower()}" for t in base[:: max(1, size // n_queries)][:n_queries]]
    embedder.warm(queries)
    vecs = [embedder.cache[q] for q in queries]
    raw_coll = engine.vectors._collection("bench")  # type: ignore[attr-defined]

    def raw(k: int) -> list[float]:
        out = []
        for v in vecs:
            t1 = time.perf_counter()
            raw_coll.query(query_embeddings=v[None, :], n_results=k, include=["distances"])
            out.append(time.perf_counter() - t1)
        return out

    def recall(reinforce: bool, drain: bool = False) -> list[float]:
        out = []
        for q in queries:
            t1 = time.perf_counter()
            engine.recall(q, namespace="bench", k=10, reinforce=reinforce)
            out.append(time.perf_counter() - t1)
            if drain:  # untimed: the background write finishes between calls
                engine.flush_reinforcement()
        engine.flush_reinforcement()
        return out

    raw(10)  # warm caches equally for both sides
    recall(False)
    r_raw10, r_raw50 = raw(10), raw(engine.policy.candidate_pool)
    r_read, r_full = recall(False), recall(True)
    r_drained = recall(True, drain=True)
    defaults = engine.policy
    engine.policy = defaults.replace(reinforce_async=False)
    r_sync = recall(True)
    engine.policy = defaults
    # the price of conversation context: the same reads with it turned off
    engine.policy = defaults.replace(context_weight=0.0)
    r_plain = recall(False)
    engine.policy = defaults
    engine.close()
    row = {
        "memories": size,
        "bulk_observe_per_s": size / bulk,
        "observe_p50_ms": pct(obs, 50),
        "observe_p95_ms": pct(obs, 95),
        "raw_chroma_k10_p50_ms": pct(r_raw10, 50),
        "raw_chroma_k50_p50_ms": pct(r_raw50, 50),
        "recall_p50_ms": pct(r_full, 50),
        "recall_p95_ms": pct(r_full, 95),
        "recall_drained_p50_ms": pct(r_drained, 50),
        "recall_drained_p95_ms": pct(r_drained, 95),
        "recall_sync_p50_ms": pct(r_sync, 50),
        "recall_sync_p95_ms": pct(r_sync, 95),
        "recall_no_reinforce_p50_ms": pct(r_read, 50),
        "recall_no_reinforce_p95_ms": pct(r_read, 95),
        "recall_no_context_no_reinforce_p50_ms": pct(r_plain, 50),
    }
    row["ratio_recall_vs_raw_k10"] = row["recall_p50_ms"] / row["raw_chroma_k10_p50_ms"]
    row["ratio_recall_vs_raw_k50"] = row["recall_p50_ms"] / row["raw_chroma_k50_p50_ms"]
    row["ratio_drained_vs_raw_k10"] = row["recall_drained_p50_ms"] / row["raw_chroma_k10_p50_ms"]
    row["ratio_sync_vs_raw_k10"] = row["recall_sync_p50_ms"] / row["raw_chroma_k10_p50_ms"]
    row["loadavg_1m_after"] = os.getloadavg()[0]
    return row


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"# Latency, embedded default (SQLite + embedded Chroma), {meta['date']}",
        "",
        f"Machine: {meta['machine']}. {meta['queries']} recall queries per size, k=10; "
        "recall excludes the query embedding; raw Chroma = an unfiltered `collection.query` "
        "with the same vectors (Chroma's fastest path; recall filters on status itself). "
        "Observe includes embedding one text. Recall = the default (reinforcement written "
        "behind the caller), back to back; drained = the same with the queue drained between "
        "calls outside the timing; sync = Policy(reinforce_async=False). "
        f"Load average (1 min) at start {meta['loadavg_start']:.2f}, "
        f"end {meta['loadavg_end']:.2f}.",
        "",
        "| memories | observe p50 / p95 ms | bulk observe /s | raw Chroma k=10 p50 | "
        "raw Chroma k=50 p50 | recall p50 / p95 ms | recall drained p50 / p95 | "
        "recall sync p50 / p95 | recall w/o reinforce p50 | "
        "recall / raw k=10 | drained / raw k=10 | sync / raw k=10 | recall / raw k=50 | "
        "recall w/o reinforce, context off p50 | load 1m |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['memories']:,} | {r['observe_p50_ms']:.1f} / {r['observe_p95_ms']:.1f} | "
            f"{r['bulk_observe_per_s']:.0f} | {r['raw_chroma_k10_p50_ms']:.2f} | "
            f"{r['raw_chroma_k50_p50_ms']:.2f} | "
            f"{r['recall_p50_ms']:.2f} / {r['recall_p95_ms']:.2f} | "
            f"{r['recall_drained_p50_ms']:.2f} / {r['recall_drained_p95_ms']:.2f} | "
            f"{r['recall_sync_p50_ms']:.2f} / {r['recall_sync_p95_ms']:.2f} | "
            f"{r['recall_no_reinforce_p50_ms']:.2f} | {r['ratio_recall_vs_raw_k10']:.2f}x | "
            f"{r['ratio_drained_vs_raw_k10']:.2f}x | {r['ratio_sync_vs_raw_k10']:.2f}x | "
            f"{r['ratio_recall_vs_raw_k50']:.2f}x | "
            f"{r['recall_no_context_no_reinforce_p50_ms']:.2f} | {r['loadavg_1m_after']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    from reverie.integrations.embedders import LocalEmbedder

    embedder = MemoEmbedder(LocalEmbedder())
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(n, args.queries, embedder, Path(tmp)) for n in args.sizes]
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} cores, CPU only",
        "queries": args.queries,
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg()[0],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latency.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    (args.out / "latency.md").write_text(render(rows, meta))
    print(render(rows, meta))


if __name__ == "__main__":
    main()
