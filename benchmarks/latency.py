"""Latency of the embedded default: observe and recall p50/p95 at 1k and 10k memories,
against the raw Chroma query for the same vectors, measured in the same run.

Recall is timed with the query's embedding excluded (query vectors are computed
first and served from a cache), so the ratio shows what reverie adds on top of the
vector search: the lexical channel, fusion, graph expansion, decay scoring, and
(by default) the access-reinforcement write. Reinforcement is measured three ways in the
same run: written behind the caller (Policy.background.reinforce_async, the default) back to back,
the same with the queue drained between calls outside the timing (an agent that does
anything between recalls, e.g. an LLM call), and written before recall returns (sync).
The baseline and the modes are interleaved query by query over several rounds, so noise
from a shared machine falls on all of them alike.
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


ROUNDS = 3


def recall_cold(engine: Any, q: str) -> float:
    t1 = time.perf_counter()
    engine.recall(q, namespace="bench", k=10, reinforce=False)
    return time.perf_counter() - t1


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
    raw_coll = engine.vectors.collection("bench")
    defaults = engine.policy
    sync = defaults.replace(reinforce_async=False)
    plain = defaults.replace(context_weight=0.0)  # the price of conversation context

    def raw_one(v: np.ndarray, k: int) -> float:
        t1 = time.perf_counter()
        raw_coll.query(query_embeddings=v[None, :], n_results=k, include=["distances"])
        return time.perf_counter() - t1

    def recall_one(q: str, reinforce: bool, policy: Any = defaults) -> float:
        engine.policy = policy
        t1 = time.perf_counter()
        engine.recall(q, namespace="bench", k=10, reinforce=reinforce)
        took = time.perf_counter() - t1
        engine.flush_reinforcement()  # untimed: the background write finishes between calls
        engine.policy = defaults
        return took

    # Interleaved: for each query every mode runs once, in a random order, so the baseline
    # and each mode meet the same moments of a shared machine; p50 over every sample.
    # Back to back (the default, each touch written behind while the next recall runs)
    # cannot be interleaved: it runs as a block per round.
    modes: dict[str, Any] = {
        "raw10": lambda q, v: raw_one(v, 10),
        "raw50": lambda q, v: raw_one(v, engine.policy.retrieval.candidate_pool),
        "no_reinforce": lambda q, v: recall_one(q, False),
        "drained": lambda q, v: recall_one(q, True),
        "sync": lambda q, v: recall_one(q, True, sync),
        "plain": lambda q, v: recall_one(q, False, plain),
    }
    samples: dict[str, list[float]] = {m: [] for m in [*modes, "back_to_back"]}
    rounds: list[dict[str, float]] = []
    for v, q in zip(vecs, queries, strict=True):  # warm caches equally for every mode
        raw_one(v, 10)
        recall_one(q, False)
    rng = np.random.default_rng(7)
    for _ in range(ROUNDS):
        this: dict[str, list[float]] = {m: [] for m in [*modes, "back_to_back"]}
        for v, q in zip(vecs, queries, strict=True):
            # a fresh order per query: whichever mode runs a query first finds the CPU
            # caches colder than the modes after it, so no mode may always go first
            for m in rng.permutation(list(modes)):
                this[str(m)].append(modes[str(m)](q, v))
        for q in queries:
            t1 = time.perf_counter()
            engine.recall(q, namespace="bench", k=10)
            this["back_to_back"].append(time.perf_counter() - t1)
        engine.flush_reinforcement()
        for m, xs in this.items():
            samples[m].extend(xs)
        rounds.append({m: pct(xs, 50) for m, xs in this.items()})
    engine.close()

    # Cold: a fresh engine on the same files decodes every record from the file (nothing
    # remembered yet); one untimed recall of another text first opens the vector index.
    engine = open_engine(tmp / f"n{size}", embedder=embedder, clock=clock)
    engine.recall("warm the vector index", namespace="bench", k=10, reinforce=False)
    cold = [recall_cold(engine, q) for q in queries]
    engine.close()

    def per_round(mode: str) -> list[float]:
        return [r[mode] / r["raw10"] for r in rounds]

    row: dict[str, Any] = {
        "memories": size,
        "bulk_observe_per_s": size / bulk,
        "observe_p50_ms": pct(obs, 50),
        "observe_p95_ms": pct(obs, 95),
        "rounds": ROUNDS,
        "raw_chroma_k10_p50_ms": pct(samples["raw10"], 50),
        "raw_chroma_k50_p50_ms": pct(samples["raw50"], 50),
        "recall_p50_ms": pct(samples["back_to_back"], 50),
        "recall_p95_ms": pct(samples["back_to_back"], 95),
        "recall_drained_p50_ms": pct(samples["drained"], 50),
        "recall_drained_p95_ms": pct(samples["drained"], 95),
        "recall_sync_p50_ms": pct(samples["sync"], 50),
        "recall_sync_p95_ms": pct(samples["sync"], 95),
        "recall_no_reinforce_p50_ms": pct(samples["no_reinforce"], 50),
        "recall_no_reinforce_p95_ms": pct(samples["no_reinforce"], 95),
        "recall_no_context_no_reinforce_p50_ms": pct(samples["plain"], 50),
        "recall_cold_p50_ms": pct(cold, 50),
        "per_round_drained_vs_raw_k10": per_round("drained"),
        "per_round_recall_vs_raw_k10": per_round("back_to_back"),
        "per_round_no_reinforce_vs_raw_k10": per_round("no_reinforce"),
    }
    k10, k50 = row["raw_chroma_k10_p50_ms"], row["raw_chroma_k50_p50_ms"]
    row["ratio_recall_vs_raw_k10"] = row["recall_p50_ms"] / k10
    row["ratio_recall_vs_raw_k50"] = row["recall_p50_ms"] / k50
    row["ratio_drained_vs_raw_k10"] = row["recall_drained_p50_ms"] / k10
    row["ratio_sync_vs_raw_k10"] = row["recall_sync_p50_ms"] / k10
    row["ratio_no_reinforce_vs_raw_k10"] = row["recall_no_reinforce_p50_ms"] / k10
    row["ratio_cold_vs_raw_k10"] = row["recall_cold_p50_ms"] / k10
    row["loadavg_1m_after"] = os.getloadavg()[0]
    return row


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Latency, embedded default (SQLite + embedded Chroma)",
        "",
        f"Machine: {meta['machine']}. {meta['queries']} recall queries per size, k=10, "
        f"{ROUNDS} rounds; recall excludes the query embedding; raw Chroma = an unfiltered "
        "`collection.query` with the same vectors (Chroma's fastest path; recall filters on "
        "status itself). Observe includes embedding one text. In each round every query runs "
        "once in each interleaved mode (raw k=10, raw k=50, recall without reinforcement, "
        "drained = reinforced with the touch written between calls outside the timing, sync "
        "= Policy(reinforce_async=False), context off), in a random order per query; "
        "then back to back = the default (touch written behind the caller while the next "
        "recall runs) as one block. p50 over all samples; the per-round column shows the "
        "spread of the drained ratio between rounds. Cold = the first recall of each query "
        "in a freshly opened engine (records decoded from the file). "
        f"Load average (1 min) at start {meta['loadavg_start']:.2f}, "
        f"end {meta['loadavg_end']:.2f}.",
        "",
        "| memories | observe p50 / p95 ms | bulk observe /s | raw Chroma k=10 p50 | "
        "raw Chroma k=50 p50 | recall w/o reinforce p50 / p95 | recall drained p50 / p95 | "
        "recall back to back p50 / p95 | recall sync p50 | recall cold p50 | "
        "w/o reinforce / raw k=10 | drained / raw k=10 | drained / raw k=10 per round | "
        "back to back / raw k=10 | sync / raw k=10 | cold / raw k=10 | "
        "context off, w/o reinforce p50 | load 1m |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        spread = " / ".join(f"{x:.2f}" for x in r["per_round_drained_vs_raw_k10"])
        lines.append(
            f"| {r['memories']:,} | {r['observe_p50_ms']:.1f} / {r['observe_p95_ms']:.1f} | "
            f"{r['bulk_observe_per_s']:.0f} | {r['raw_chroma_k10_p50_ms']:.2f} | "
            f"{r['raw_chroma_k50_p50_ms']:.2f} | "
            f"{r['recall_no_reinforce_p50_ms']:.2f} / {r['recall_no_reinforce_p95_ms']:.2f} | "
            f"{r['recall_drained_p50_ms']:.2f} / {r['recall_drained_p95_ms']:.2f} | "
            f"{r['recall_p50_ms']:.2f} / {r['recall_p95_ms']:.2f} | "
            f"{r['recall_sync_p50_ms']:.2f} | {r['recall_cold_p50_ms']:.2f} | "
            f"{r['ratio_no_reinforce_vs_raw_k10']:.2f}x | "
            f"{r['ratio_drained_vs_raw_k10']:.2f}x | {spread} | "
            f"{r['ratio_recall_vs_raw_k10']:.2f}x | {r['ratio_sync_vs_raw_k10']:.2f}x | "
            f"{r['ratio_cold_vs_raw_k10']:.2f}x | "
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
