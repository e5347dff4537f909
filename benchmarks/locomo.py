"""LLM-free retrieval on LoCoMo: does the agent recall the evidence turns?

Each turn is ingested as an observation at its session's time; every category 1-4
question with evidence is asked; a retrieved memory counts every source turn it
carries. Baselines run in the same process with the same embedder:
  dense  - plain cosine top-k over the turn embeddings (a plain vector-store memory)
  bm25   - the same BM25 channel reverie uses, alone
Run: python benchmarks/locomo.py [--conversations N] [--out benchmarks/results]
Writes locomo.{md,json}. The same questions through the framework faces and on the shared
tier are locomo_langgraph.py, locomo_llamaindex.py and locomo_tiers.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo_data import DATA, KS, ROOT, Scores, load


def run(
    n_conversations: int | None,
    out_dir: Path,
    variants: Sequence[str],
    extra: dict[str, dict[str, float]] | None = None,
    store: str = "sqlite",
    write: bool = True,
    embedder: MemoEmbedder | None = None,
) -> dict[str, Any]:
    from reverie.core import ManualClock, Policy
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    convs = load(DATA)[: n_conversations or None]
    embedder = embedder or MemoEmbedder(LocalEmbedder())
    policies: dict[str, Policy] = {
        "reverie": Policy(),
        # the seed design's numbers: alpha 0.7, a hard decay floor, no speaker preference,
        # no neighbouring turns
        "seed-policy": Policy(alpha=0.7, floor_bypass_relevance=1.0, speaker_weight=0.0,
                              neighbour_weight=0.0),
        # relevance only: no decay in the score, no floor
        "relevance-only": Policy(alpha=1.0, decay_floor=0.0),
    }
    for name, changes in (extra or {}).items():
        policies[name] = Policy().replace(**changes)
    variants = [*variants, *(extra or {})]
    scores: dict[str, Scores] = {v: Scores() for v in ("dense", "bm25", *variants)}
    # Five conversations to tune on and five to report on (alternating in the dataset's
    # order): a change is judged on the report half only after it was made on the other.
    halves: dict[str, dict[str, Scores]] = {
        h: {v: Scores() for v in scores} for h in ("tune", "report")
    }
    ingest_seconds = 0.0
    ingest_turns = 0
    recall_seconds: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        server = None
        url = None
        if store == "redis":
            sys.path.insert(0, str(ROOT))
            from tests.servers import start_redis

            server, url = start_redis(Path(tmp) / "redis")
        engine = open_engine(Path(tmp), store=url, embedder=embedder, clock=clock)
        for n, (sample, turns, questions) in enumerate(convs, 1):
            ns = f"locomo/{sample}"
            half = halves[split_of(n - 1)]
            t0 = time.perf_counter()
            id_sources: dict[str, frozenset[str]] = {}
            clock.set(turns[-1].at)
            engine.observe_many(
                [Observation(t.text, source=t.dia_id, at=t.at) for t in turns], namespace=ns
            )
            ingest_seconds += time.perf_counter() - t0
            ingest_turns += len(turns)
            end = turns[-1].at + timedelta(hours=1)
            clock.set(end)
            for m in engine.store.scan(ns):
                id_sources[m.id] = m.sources

            # baselines over the same turns, same embedder
            turn_vecs = embedder.embed([t.text for t in turns])
            q_vecs = embedder.embed([q.text for q in questions])
            sims = q_vecs @ turn_vecs.T
            for qi, q in enumerate(questions):
                order = np.argsort(-sims[qi], kind="stable")[: max(KS)]
                for table in (scores, half):
                    table["dense"].add(q, [frozenset({turns[i].dia_id}) for i in order])
                lex = engine.lexical.search(ns, q.text, max(KS))
                for table in (scores, half):
                    table["bm25"].add(q, [id_sources[h.id] for h in lex])

            for v in variants:
                engine.policy = policies[v]
                for q in questions:
                    t1 = time.perf_counter()
                    res = engine.recall(q.text, namespace=ns, k=max(KS), reinforce=False)
                    recall_seconds.append(time.perf_counter() - t1)
                    scores[v].add(q, [h.memory.sources for h in res])
                    half[v].add(q, [h.memory.sources for h in res])
            print(
                f"[{n}/{len(convs)}] {sample}: {len(turns)} turns, {len(questions)} questions",
                file=sys.stderr,
            )
        engine.close()
        if server is not None:
            server.stop()
    result = {
        "store": store,
        "conversations": len(convs),
        "questions": sum(len(q) for _, _, q in convs),
        "turns": ingest_turns,
        "ingest_turns_per_second": ingest_turns / ingest_seconds,
        "recall_p50_ms": 1000 * float(np.median(recall_seconds)),
        "tables": {name: s.table() for name, s in scores.items()},
        "halves": {
            h: {name: s.table() for name, s in tables.items()}
            for h, tables in halves.items()
            if any(s.recall for s in tables.values())
        },
        "machine": "2 cores, CPU only",
    }
    if write:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "locomo.json").write_text(json.dumps(result, indent=2))
        (out_dir / "locomo.md").write_text(render(result))
        print(render(result))
    return result


def split_of(index: int) -> str:
    """The half a conversation belongs to, by its place in the dataset (0-based)."""
    return "tune" if index % 2 == 0 else "report"


def render(r: dict[str, Any]) -> str:
    lines = [
        f"# LoCoMo retrieval (LLM-free), {r['machine']}",
        "",
        f"{r['conversations']} conversations, {r['turns']} turns, {r['questions']} questions "
        f"(categories 1-4 with evidence). Ingest: {r['ingest_turns_per_second']:.1f} turns/s "
        f"through `observe_many` (embedding included). "
        f"Recall p50 (k=50): {r['recall_p50_ms']:.1f} ms.",
        "",
        "## Overall",
        "",
        "| system | " + " | ".join(f"R@{k}" for k in KS) + " | " + " | ".join(
            f"all@{k}" for k in KS) + " |",
        "|---" * (1 + 2 * len(KS)) + "|",
    ]
    for name, table in r["tables"].items():
        row = table["overall"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{row[f'recall@{k}']:.3f}" for k in KS)
            + " | "
            + " | ".join(f"{row[f'all@{k}']:.3f}" for k in KS)
            + " |"
        )
    lines += ["", "## recall@10 / all@10 per category", ""]
    cats = [c for c in next(iter(r["tables"].values())) if c != "overall"]
    lines.append("| system | " + " | ".join(cats) + " |")
    lines.append("|---" * (1 + len(cats)) + "|")
    for name, table in r["tables"].items():
        lines.append(
            f"| {name} | "
            + " | ".join(
                f"{table[c]['recall@10']:.3f} / {table[c]['all@10']:.3f} (n={table[c]['n']})"
                for c in cats
            )
            + " |"
        )
    if r.get("halves"):
        lines += [
            "",
            "## Tuning half and reporting half",
            "",
            "Conversations alternate between a half to tune on (1st, 3rd, ... in the "
            "dataset's order) and a half to report on (2nd, 4th, ...).",
            "",
            "| system | half | R@10 | all@10 | multi-hop R@10 | multi-hop all@10 | questions |",
            "|---|---|---|---|---|---|---|",
        ]
        multi = next(c for c in cats if c.endswith("multi-hop"))
        for name in r["tables"]:
            for half, tables in r["halves"].items():
                t = tables[name]
                lines.append(
                    f"| {name} | {half} | {t['overall']['recall@10']:.3f} | "
                    f"{t['overall']['all@10']:.3f} | {t[multi]['recall@10']:.3f} | "
                    f"{t[multi]['all@10']:.3f} | {t['overall']['n']} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument(
        "--variants", nargs="+", default=["reverie", "seed-policy", "relevance-only"]
    )
    ap.add_argument(
        "--policy",
        action="append",
        default=[],
        help="an extra variant, e.g. pure=alpha:1.0,decay_floor:0",
    )
    args = ap.parse_args(argv)
    extra = {}
    for spec in args.policy:
        name, _, body = spec.partition("=")
        # a whole number is an int (Policy refuses a float for an int knob, takes an int
        # for a float one)
        extra[name] = {
            k: (int(v) if v.lstrip("-").isdigit() else float(v))
            for k, v in (kv.split(":") for kv in body.split(","))
        }
    run(args.conversations, args.out, args.variants, extra)


if __name__ == "__main__":
    main()

