"""`ReverieStore.search` over a namespace prefix vs. over one namespace.

LoCoMo's turns are spread over 20 store namespaces `("users", "u00")` ... `("users", "u19")`
(the first `--per-namespace` turns of the conversations, in order), put through the
LangGraph API. For each question (the same questions for both paths, interleaved in
rotating order, best of 3 per question on a shared machine):

  single  store.search(("users", "u00"), query=q, limit=10)    one namespace
  prefix  store.search(("users",), query=q, limit=10)          all 20 under the prefix

The embedder is the real MiniLM model, counted: how many times each path embeds the query
(target: once per search, whatever the number of namespaces), and the time of each path
with that embedding included (target: prefix p50 at most 2x single p50). Two clocks: wall
time, and the CPU time of the whole process (`time.process_time`, all threads: the model's
and recall's workers included), the steadier measure on a machine shared with other jobs.
Run: python benchmarks/store_prefix_search.py [--questions N] [--out benchmarks/results]
Writes store_prefix_search.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_data import DATA, ROOT, load

NAMESPACES = 20
LIMIT = 10
REPEATS = 3  # timed calls per question and path; the fastest is kept


class CountingEmbedder:
    """The real model, counting the texts it is asked to embed (by text). The stored items
    are embedded once, in batches, before anything is timed (`warm`); a query is a text
    never seen before, so the model embeds it inside the timed search."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}
        self.cache: dict[str, np.ndarray] = {}

    def warm(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self.cache[t] = np.asarray(v, dtype=np.float32)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for t in texts:
            self.calls[t] = self.calls.get(t, 0) + 1
        missing = [t for t in texts if t not in self.cache]
        fresh = dict(zip(missing, self.inner.embed(missing), strict=True)) if missing else {}
        return np.stack([self.cache.get(t, fresh.get(t)) for t in texts]).astype(np.float32)


def run(questions: int, per_namespace: int, out_dir: Path) -> dict[str, Any]:
    from reverie.adapters.langgraph.store import ReverieStore
    from reverie.core import ManualClock
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    convs = load(DATA)
    turns = [t for _, ts, _ in convs for t in ts][: NAMESPACES * per_namespace]
    qs = [x.text for _, _, qq in convs for x in qq][:questions]
    embedder = CountingEmbedder(LocalEmbedder())
    spaces = [("users", f"u{i:02d}") for i in range(NAMESPACES)]
    timing: dict[str, list[float]] = {"single": [], "prefix": []}
    cpu: dict[str, list[float]] = {"single": [], "prefix": []}
    embeds: dict[str, list[int]] = {"single": [], "prefix": []}
    found: dict[str, list[int]] = {"single": [], "prefix": []}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock(datetime(2025, 1, 1, tzinfo=UTC))
        engine = open_engine(Path(tmp), embedder=embedder, clock=clock)
        store = ReverieStore(engine, index={"fields": ["text"]}, reinforce=False)
        embedder.warm([t.text for t in turns])
        for i, t in enumerate(turns):
            clock.set(t.at)
            store.put(spaces[i % NAMESPACES], t.dia_id, {"text": t.text})
        clock.set(max(t.at for t in turns) + timedelta(hours=1))
        calls = {
            "single": lambda q: store.search(spaces[0], query=q, limit=LIMIT),
            "prefix": lambda q: store.search(("users",), query=q, limit=LIMIT),
        }
        for q in qs[:3]:  # warm caches, model and connections
            for f in calls.values():
                f(q + " (warm-up)")
        for n, q in enumerate(qs):
            order = list(calls)[n % 2 :] + list(calls)[: n % 2]
            best: dict[str, float] = {}
            best_cpu: dict[str, float] = {}
            for r in range(REPEATS):
                for path in order:
                    text = f"{q} [{path} {r}]"  # a text never embedded before: no cache
                    before = embedder.calls.get(text, 0)
                    c0, t0 = time.process_time(), time.perf_counter()
                    items = calls[path](text)
                    took, used = time.perf_counter() - t0, time.process_time() - c0
                    best[path] = min(best.get(path, took), took)
                    best_cpu[path] = min(best_cpu.get(path, used), used)
                    if r == 0:
                        embeds[path].append(embedder.calls.get(text, 0) - before)
                        found[path].append(len({i.namespace for i in items}))
            for path, took in best.items():
                timing[path].append(took)
                cpu[path].append(best_cpu[path])
        engine.close()
    p50 = {k: float(np.median(v)) for k, v in timing.items()}
    cpu50 = {k: float(np.median(v)) for k, v in cpu.items()}
    result = {
        "namespaces": NAMESPACES,
        "items": len(turns),
        "items_per_namespace": per_namespace,
        "questions": len(qs),
        "limit": LIMIT,
        "paths": {
            k: {
                "p50_ms": 1000 * p50[k],
                "p90_ms": 1000 * float(np.percentile(timing[k], 90)),
                "mean_ms": 1000 * float(np.mean(timing[k])),
                "cpu_p50_ms": 1000 * cpu50[k],
                "query_embeddings_per_search": sorted(set(embeds[k])),
                "namespaces_in_results_mean": float(np.mean(found[k])),
            }
            for k in timing
        },
        "prefix_vs_single_p50": p50["prefix"] / p50["single"],
        "prefix_vs_single_cpu_p50": cpu50["prefix"] / cpu50["single"],
        "machine": "2 cores, CPU only",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "store_prefix_search.json").write_text(json.dumps(result, indent=2))
    text = render(result)
    (out_dir / "store_prefix_search.md").write_text(text)
    print(text)
    return result


def render(r: dict[str, Any]) -> str:
    lines = [
        f"# ReverieStore.search over a prefix of {r['namespaces']} namespaces, {r['machine']}",
        "",
        f"{r['items']} LoCoMo turns, {r['items_per_namespace']} per namespace; "
        f"{r['questions']} questions, limit {r['limit']}; the real MiniLM model embeds each "
        "query (a fresh text per call, so nothing is cached); best of 3 per question, "
        "rotating order.",
        "",
        "| path | CPU p50 ms | wall p50 ms | wall p90 ms | wall mean ms | "
        "query embeddings per search | namespaces in results (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in r["paths"].items():
        lines.append(
            f"| {name} | {p['cpu_p50_ms']:.1f} | {p['p50_ms']:.1f} | {p['p90_ms']:.1f} | "
            f"{p['mean_ms']:.1f} | "
            f"{', '.join(str(x) for x in p['query_embeddings_per_search'])} | "
            f"{p['namespaces_in_results_mean']:.1f} |"
        )
    lines += [
        "",
        f"prefix / single at p50: {r['prefix_vs_single_cpu_p50']:.2f}x in CPU time, "
        f"{r['prefix_vs_single_p50']:.2f}x in wall time (target: at most 2x)",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--per-namespace", type=int, default=50)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    run(args.questions, args.per_namespace, args.out)


if __name__ == "__main__":
    main()
