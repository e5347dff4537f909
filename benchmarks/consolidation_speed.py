"""Speed of one full REM cycle (flag, cluster, synthesize, journaled commit, index) with
the extractive synthesizer, so no LLM time is in the numbers, at 1k, 10k, 50k and 100k
flagged memories, on the embedded default (a SQLite file and embedded Chroma).

The vectors are SYNTHETIC and precomputed (384 dimensions, like all-MiniLM-L6-v2):
groups of 1-12 paraphrase-like points around random topic centres (pairwise cosine
about 0.85 inside a group), served by a lookup embedder, so the timing is the cycle's,
not the model's. The store is filled directly through the record store's batch
commit (setup, not timed). Targets: 10k and 100k in at most 60 s on this machine,
growth close to n log n. The script prints each phase and the growth exponent between sizes.

Run: python benchmarks/consolidation_speed.py [--sizes 1000 10000 50000 100000]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DIM = 384
NOISE = 0.42  # norm of the per-member offset: pairwise cosine ~ 1 / (1 + 0.42^2) = 0.85


class LookupEmbedder:
    """Precomputed vectors by text; any other text (a synthesis node) gets a deterministic
    pseudo-random unit vector from its hash."""

    name = "synthetic-384"
    dimension = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self.table.get(t)
            if v is None:
                seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
                v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
                v /= np.linalg.norm(v)
            out[i] = v
        return out


def synthetic(n: int, seed: int = 7) -> tuple[list[str], np.ndarray, int]:
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    rows: list[np.ndarray] = []
    topic = 0
    while len(texts) < n:
        size = min(int(rng.integers(1, 13)), n - len(texts))
        centre = rng.standard_normal(DIM)
        centre /= np.linalg.norm(centre)
        for _ in range(size):
            off = rng.standard_normal(DIM)
            off *= NOISE / np.linalg.norm(off)
            v = centre + off
            rows.append(v / np.linalg.norm(v))
            texts.append(f"note {len(texts)} on topic {topic}: the user mentioned item {topic}")
        topic += 1
    return texts, np.asarray(rows, dtype=np.float32), topic


def fill(engine: Any, ns: str, texts: list[str], vectors: np.ndarray, t0: datetime) -> None:
    from reverie.core import Kind, Memory, Tier
    from reverie.core.ports import VectorItem, WriteBatch

    batch = 1000
    # ids as the engine makes them (uuid4 hex): random, so the indexes on ids take a
    # retired member's write at a random page, as they do in a real store (sequential
    # ids would keep them in a few pages and flatter the commit)
    ids = [hashlib.md5(f"bench-{i}".encode()).hexdigest() for i in range(len(texts))]
    for s in range(0, len(texts), batch):
        mems = [
            Memory(
                id=ids[i],
                namespace=ns,
                kind=Kind.EPISODIC,
                tier=Tier.TRACE,
                text=texts[i],
                created_at=t0 + timedelta(minutes=i),
                importance=0.2,
                sources=frozenset({f"s{i}"}),
            )
            for i in range(s, min(s + batch, len(texts)))
        ]
        engine.store.commit(WriteBatch(ns, tuple(mems)))
        # as the engine indexes a trace: its vector and its kind in the index, and the
        # same vector kept beside the record (where clustering reads it)
        vecs = {m.id: vectors[s + n] for n, m in enumerate(mems)}
        engine.store.put_embeddings(ns, vecs)
        engine.vectors.upsert(
            ns, [VectorItem(i, v, {"kind": "episodic"}) for i, v in vecs.items()]
        )


def measure(n: int, tmp: Path) -> dict[str, Any]:
    from reverie.core import ManualClock
    from reverie.core.policy import Policy
    from reverie.integrations import open_engine

    # the default policy: the exact k-NN, or the vector index's HNSW neighbours from
    # cluster_index_knn_min flagged memories on
    policy = Policy()

    texts, vectors, topics = synthetic(n)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    engine = open_engine(
        tmp / f"home-{n}",
        embedder=LookupEmbedder(dict(zip(texts, vectors, strict=True))),
        # the newest memory 60 days old: every one old enough for its blend to fall below tau
        clock=ManualClock(t0 + timedelta(minutes=n, days=60)),
        namespace="bench",
        policy=policy,
    )
    try:
        started = time.perf_counter()
        fill(engine, "bench", texts, vectors, t0)
        setup = time.perf_counter() - started
        started = time.perf_counter()
        report = engine.consolidate("bench")
        wall = time.perf_counter() - started
        sizes = [len(c.member_ids) for c in report.committed]
        row = {
            "flagged": report.flagged,
            "topics_generated": topics,
            "clusters": len(report.clusters),
            "committed": len(report.committed),
            "consolidated": report.consolidated,
            "mean_cluster_size": float(np.mean(sizes)) if sizes else 0.0,
            "nodes_before": report.nodes_before,
            "nodes_after": report.nodes_after,
            "seconds": wall,
            "phases": {k: round(v, 3) for k, v in report.phases.items()},
            "setup_seconds": setup,
        }
    finally:
        engine.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000, 100000])
    args = parser.parse_args()
    rows: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            print(f"n = {n}: filling and running one cycle ...", flush=True)
            rows[n] = measure(n, Path(tmp))
            r = rows[n]
            print(
                f"  {r['seconds']:.2f} s  flagged {r['flagged']}  clusters {r['committed']}"
                f"  consolidated {r['consolidated']}  nodes {r['nodes_before']} -> "
                f"{r['nodes_after']}  phases {r['phases']}",
                flush=True,
            )
    ns = sorted(rows)
    growth = []
    for a, b in itertools.pairwise(ns):
        ta, tb = rows[a]["seconds"], rows[b]["seconds"]
        exponent = math.log(tb / ta) / math.log(b / a)
        nlogn = math.log((b * math.log(b)) / (a * math.log(a))) / math.log(b / a)
        growth.append({"from": a, "to": b, "exponent": exponent, "n_log_n_exponent": nlogn})
        print(f"growth {a} -> {b}: time ~ n^{exponent:.2f} (n log n would be n^{nlogn:.2f})")
    fit = None
    if len(ns) >= 2:
        fit = float(np.polyfit(np.log(ns), np.log([rows[n]["seconds"] for n in ns]), 1)[0])
        print(f"fitted exponent over all sizes: {fit:.2f}")
    meta = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "vectors": f"synthetic, {DIM}-d, precomputed (no model time)",
        "synthesizer": "extractive (no LLM)",
        "store": "SQLite file + embedded Chroma",
        "knn": "default",
        # a shared machine: the load says how much the times are inflated
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
    }
    out = {"meta": meta, "rows": {str(k): v for k, v in rows.items()}, "growth": growth,
           "fitted_exponent": fit}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "consolidation_speed.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        "# Consolidation speed (one REM cycle, extractive synthesizer)",
        "",
        f"Measured on {meta['machine']}, Python {meta['python']}; "
        f"{meta['store']}; vectors {meta['vectors']}; k-NN for clustering: {meta['knn']}. "
        "LLM time excluded by design. "
        "Setup (filling the store) is not timed.",
        "",
        "| flagged | clusters | consolidated | nodes before -> after | cycle s | "
        "flag | cluster | synthesize | commit |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n in ns:
        r = rows[n]
        ph = r["phases"]
        lines.append(
            f"| {r['flagged']} | {r['committed']} | {r['consolidated']} | "
            f"{r['nodes_before']} -> {r['nodes_after']} | {r['seconds']:.2f} | "
            f"{ph.get('flag', 0):.2f} | {ph.get('cluster', 0):.2f} | "
            f"{ph.get('synthesize', 0):.2f} | {ph.get('commit', 0):.2f} |"
        )
    lines.append("")
    for g in growth:
        lines.append(
            f"- growth {g['from']} -> {g['to']}: time ~ n^{g['exponent']:.2f} "
            f"(n log n over that range would be n^{g['n_log_n_exponent']:.2f})"
        )
    if fit is not None:
        lines.append(f"- fitted exponent over all sizes: {fit:.2f}")
    per_cluster = ", ".join(
        f"{rows[n]['phases'].get('commit', 0) * 1000 / max(rows[n]['committed'], 1):.1f} ms "
        f"at {n}" for n in ns
    )
    lines.append(f"- commit phase per committed cluster: {per_cluster}")
    lines.append(f"- load average at the end (1, 5, 15 min): {meta['load_average_at_end']}")
    for n in (10000, 100000):
        if n in rows:
            verdict = "met" if rows[n]["seconds"] <= 60 else "NOT met"
            lines.append(
                f"- target {n // 1000}k in at most 60 s: {verdict} ({rows[n]['seconds']:.1f} s)"
            )
    (RESULTS / "consolidation_speed.md").write_text("\n".join(lines) + "\n")
    print(f"saved {RESULTS / 'consolidation_speed.md'}")


if __name__ == "__main__":
    sys.exit(main())
