"""LoCoMo on the embedded tier and on the shared tier, in one run: do they recall the same?

The same benchmark as locomo.py, once with SQLite records and once with Redis records (a
real redis-server 7 the benchmark starts on a free loopback port and stops afterwards),
one after the other in one process with one embedder. The vector tier is embedded Chroma
in both, so any difference comes from the record store and its BM25 channel.
Run: python benchmarks/locomo_tiers.py [--conversations N] [--out benchmarks/results]
Writes locomo_tiers.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo import run
from locomo_data import KS, ROOT


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
        f"# LoCoMo on the SQLite tier vs the Redis tier, {results['sqlite']['machine']}",
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


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument(
        "--variants", nargs="+", default=["reverie", "seed-policy", "relevance-only"]
    )
    args = ap.parse_args(argv)
    run_tiers(args.conversations, args.out, args.variants)


if __name__ == "__main__":
    main()
