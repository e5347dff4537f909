"""LLM-free retrieval on LoCoMo: does the agent recall the evidence turns?

Each turn is ingested as an observation at its session's time; every category 1-4
question with evidence is asked; a retrieved memory counts every source turn it
carries. Baselines run in the same process with the same embedder:
  dense  - plain cosine top-k over the turn embeddings (a plain vector-store memory)
  bm25   - the same FTS5 BM25 channel reverie uses, alone
Run: python benchmarks/locomo.py [--conversations N] [--out benchmarks/results]
     python benchmarks/locomo.py --store both   # SQLite tier vs Redis tier, same run
     python benchmarks/locomo.py --framework langgraph  # LangGraph InMemoryStore vs ReverieStore
     python benchmarks/locomo.py --framework llamaindex  # VectorMemoryBlock/Chroma vs reverie
(`--store redis` starts its own redis-server on a free port and stops it afterwards.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
KS = (1, 5, 10, 20, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    text: str
    at: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


def parse_when(s: str) -> datetime:
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Sequence[str], turn_ids: set[str]) -> frozenset[str]:
    """The README's rules: split on ';' and spaces, D:11:26 -> D11:26, D30:05 -> D30:5,
    drop ids that are not turns."""
    out = set()
    for item in raw:
        for part in re.split(r"[;\s]+", item):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                did = f"D{m.group(1)}:{m.group(2)}"
                if did in turn_ids:
                    out.add(did)
    return frozenset(out)


def load(path: Path) -> list[tuple[str, list[Turn], list[Question]]]:
    convs = []
    for c in json.loads(path.read_text()):
        conv = c["conversation"]
        sessions = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)),
            key=lambda k: int(k.split("_")[1]),
        )
        turns = []
        for s in sessions:
            start = parse_when(conv[f"{s}_date_time"])
            for i, t in enumerate(conv[s]):
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares an image: {t['blip_caption']}]"
                turns.append(Turn(t["dia_id"], text, start + timedelta(seconds=30 * i)))
        ids = {t.dia_id for t in turns}
        qs = []
        for q in c["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            ev = normalise_evidence(q.get("evidence", []), ids)
            if ev:
                qs.append(Question(q["question"], int(q["category"]), ev))
        convs.append((c["sample_id"], turns, qs))
    return convs


class Scores:
    """recall@k and all@k, per category and overall."""

    def __init__(self) -> None:
        self.recall: dict[tuple[int, int], list[float]] = defaultdict(list)
        self.all: dict[tuple[int, int], list[float]] = defaultdict(list)

    def add(self, q: Question, ranked_sources: Sequence[frozenset[str]]) -> None:
        for k in KS:
            got: set[str] = set().union(*ranked_sources[:k]) if ranked_sources else set()
            hit = len(q.evidence & got)
            for cat in (q.category, 0):
                self.recall[(cat, k)].append(hit / len(q.evidence))
                self.all[(cat, k)].append(float(hit == len(q.evidence)))

    def table(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for cat in (0, *CATEGORIES):
            name = "overall" if cat == 0 else f"{cat} {CATEGORIES[cat]}"
            row = {}
            for k in KS:
                row[f"recall@{k}"] = float(np.mean(self.recall[(cat, k)]))
                row[f"all@{k}"] = float(np.mean(self.all[(cat, k)]))
            row["n"] = len(self.recall[(cat, KS[0])])
            out[name] = row
        return out


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
        # the seed design's numbers: alpha 0.7 and a hard decay floor
        "seed-policy": Policy(alpha=0.7, floor_bypass_relevance=1.0),
        # relevance only: no decay in the score, no floor
        "relevance-only": Policy(alpha=1.0, decay_floor=0.0),
    }
    for name, changes in (extra or {}).items():
        policies[name] = Policy().replace(**changes)
    variants = [*variants, *(extra or {})]
    scores: dict[str, Scores] = {v: Scores() for v in ("dense", "bm25", *variants)}
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
                scores["dense"].add(q, [frozenset({turns[i].dia_id}) for i in order])
                lex = engine.lexical.search(ns, q.text, max(KS))
                scores["bm25"].add(q, [id_sources[h.id] for h in lex])

            for v in variants:
                engine.policy = policies[v]
                for q in questions:
                    t1 = time.perf_counter()
                    res = engine.recall(q.text, namespace=ns, k=max(KS), reinforce=False)
                    recall_seconds.append(time.perf_counter() - t1)
                    scores[v].add(q, [h.memory.sources for h in res])
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
        "machine": "2 cores, CPU only",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    if write:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "locomo.json").write_text(json.dumps(result, indent=2))
        (out_dir / "locomo.md").write_text(render(result))
        print(render(result))
    return result


def run_tiers(n_conversations: int | None, out_dir: Path, variants: Sequence[str]) -> None:
    """The same benchmark on the SQLite tier and on the Redis tier, one after the other in
    one process (same embedder, same data); writes locomo_tiers.{md,json}."""
    from reverie.integrations.embedders import LocalEmbedder

    embedder = MemoEmbedder(LocalEmbedder())  # one model, its vectors shared by both tiers
    results = {
        tier: run(n_conversations, out_dir, variants, store=tier, write=False, embedder=embedder)
        for tier in ("sqlite", "redis")
    }
    sqlite_ms = results["sqlite"]["recall_p50_ms"]
    redis_ms = results["redis"]["recall_p50_ms"]
    systems = [s for s in results["sqlite"]["tables"] if s != "dense"]
    delta = {
        s: {
            metric: results["redis"]["tables"][s]["overall"][metric]
            - results["sqlite"]["tables"][s]["overall"][metric]
            for metric in results["sqlite"]["tables"][s]["overall"]
            if metric != "n"
        }
        for s in systems
    }
    worst = max(abs(v) for d in delta.values() for v in d.values())
    summary = {"tiers": results, "redis_minus_sqlite": delta, "max_abs_delta": worst,
               "within_0_01": worst <= 0.01}
    lines = [
        f"# LoCoMo on the SQLite tier vs the Redis tier, {results['sqlite']['date']}, "
        f"{results['sqlite']['machine']}",
        "",
        f"{results['sqlite']['conversations']} conversations, {results['sqlite']['turns']} "
        f"turns, {results['sqlite']['questions']} questions. "
        "Same process, same embedder, same data; the vector tier is embedded Chroma in both, so "
        "the difference is the record store and its BM25 channel (SQLite's FTS5 rows vs "
        "postings in a real redis-server 7 started by the benchmark, each scored per "
        "namespace). Recall p50 (k=50): SQLite "
        f"{sqlite_ms:.1f} ms, Redis {redis_ms:.1f} ms. Ingest: SQLite "
        f"{results['sqlite']['ingest_turns_per_second']:.1f} turns/s, Redis "
        f"{results['redis']['ingest_turns_per_second']:.1f} turns/s (embeddings cached after "
        "the first tier, so ingest speeds are not comparable).",
        "",
        f"Largest |Redis - SQLite| over every system and metric below: **{worst:.4f}** "
        f"({'within' if worst <= 0.01 else 'NOT within'} 0.01).",
        "",
        "| system | tier | " + " | ".join(f"R@{k}" for k in KS) + " | "
        + " | ".join(f"all@{k}" for k in KS) + " |",
        "|---" * (2 + 2 * len(KS)) + "|",
    ]
    for s in systems:
        for tier in ("sqlite", "redis"):
            row = results[tier]["tables"][s]["overall"]
            lines.append(
                f"| {s} | {tier} | "
                + " | ".join(f"{row[f'recall@{k}']:.3f}" for k in KS) + " | "
                + " | ".join(f"{row[f'all@{k}']:.3f}" for k in KS) + " |"
            )
    text = "\n".join(lines) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "locomo_tiers.json").write_text(json.dumps(summary, indent=2))
    (out_dir / "locomo_tiers.md").write_text(text)
    print(text)


def render(r: dict[str, Any]) -> str:
    lines = [
        f"# LoCoMo retrieval (LLM-free), {r['date']}, {r['machine']}",
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
    return "\n".join(lines) + "\n"


def lexical_check(n_conversations: int | None, out_dir: Path) -> None:
    """Why the tiers can differ: BM25 top-50 of every question from the Redis tier, compared
    with SQLite holding each conversation in a file of its own (per-namespace statistics,
    like Redis) and with one file holding them all (FTS5 pools statistics over the file).
    No embedding involved; writes locomo_lexical_check.{md,json}."""
    from reverie.core.models import Kind, Memory, Tier
    from reverie.core.ports import WriteBatch
    from reverie.core.text import content_hash
    from reverie.integrations.redis.store import RedisStore
    from reverie.integrations.sqlite.store import SQLiteStore

    sys.path.insert(0, str(ROOT))
    from tests.servers import start_redis

    convs = load(DATA)[: n_conversations or None]
    same_own = same_pooled = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_redis(Path(tmp) / "redis")
        pooled = SQLiteStore(Path(tmp) / "pooled.db")
        redis_store = RedisStore.from_url(url)
        try:
            for sample, turns, questions in convs:
                ns = f"locomo/{sample}"
                first: dict[str, Memory] = {}
                for t in turns:  # one memory per distinct text, as observe folds repeats
                    first.setdefault(content_hash(t.text), Memory(
                        id=t.dia_id, namespace=ns, kind=Kind.EPISODIC, tier=Tier.TRACE,
                        text=t.text, created_at=t.at))
                own = SQLiteStore(Path(tmp) / f"{sample}.db")
                for store in (pooled, redis_store, own):
                    store.commit(WriteBatch(ns, tuple(first.values())))
                for q in questions:
                    got = [h.id for h in redis_store.search(ns, q.text, 50)]
                    total += 1
                    same_own += got == [h.id for h in own.search(ns, q.text, 50)]
                    same_pooled += got == [h.id for h in pooled.search(ns, q.text, 50)]
                own.close()
        finally:
            redis_store.close()
            pooled.close()
            server.stop()
    result = {"conversations": len(convs), "questions": total,
              "same_top50_as_sqlite_file_per_namespace": same_own,
              "same_top50_as_sqlite_one_pooled_file": same_pooled}
    text = (
        f"# LoCoMo BM25: Redis tier vs SQLite tier, {len(convs)} conversations\n\n"
        f"Questions whose BM25 top-50 ids (in order) from the Redis tier equal SQLite's:\n\n"
        f"| SQLite layout | equal / questions |\n|---|---|\n"
        f"| a file per conversation (per-namespace statistics) | {same_own} / {total} |\n"
        f"| one file, a namespace per conversation (pooled statistics) | {same_pooled} / {total}"
        " |\n"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "locomo_lexical_check.json").write_text(json.dumps(result, indent=2))
    (out_dir / "locomo_lexical_check.md").write_text(text)
    print(text)


def main(argv: Sequence[str] | None = None) -> None:
    from reverie.core import Policy

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
    ap.add_argument(
        "--store",
        choices=["sqlite", "redis", "both", "lexical-check"],
        default="sqlite",
        help="record store tier; 'both' compares them in one run (locomo_tiers.md); "
        "'lexical-check' compares their BM25 top-50 alone (locomo_lexical_check.md)",
    )
    ap.add_argument(
        "--framework",
        choices=["langgraph", "llamaindex"],
        default=None,
        help="langgraph: InMemoryStore vs reverie through ReverieStore, and adapter overhead "
        "(benchmarks/locomo_langgraph.py; locomo_langgraph.md); llamaindex: VectorMemoryBlock "
        "over Chroma vs reverie through ReverieRetriever/ReverieMemoryBlock, and adapter "
        "overhead (benchmarks/locomo_llamaindex.py; locomo_llamaindex.md)",
    )
    args = ap.parse_args(argv)
    if args.framework == "langgraph":
        from locomo_langgraph import run_langgraph

        run_langgraph(args.conversations, args.out)
        return
    if args.framework == "llamaindex":
        from locomo_llamaindex import run as run_llamaindex

        run_llamaindex(args.conversations, args.out)
        return
    if args.store == "lexical-check":
        lexical_check(args.conversations, args.out)
        return
    if args.store == "both":
        run_tiers(args.conversations, args.out, args.variants)
        return
    extra = {}
    for spec in args.policy:
        name, _, body = spec.partition("=")
        ints = {f for f, spec in Policy.__dataclass_fields__.items() if spec.type == "int"}
        extra[name] = {
            k: (int(v) if k in ints else float(v))
            for k, v in (kv.split(":") for kv in body.split(","))
        }
    run(args.conversations, args.out, args.variants, extra, store=args.store,
        write=args.store == "sqlite")


if __name__ == "__main__":
    main()

