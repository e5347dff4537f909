"""The REM cycle's k-NN: exact (blocked matrix products, n^2), the search by cells
(`cell_knn`: each memory against the memories listed in its nearest k-means cell, the
default from `cluster_cells_min` flagged memories) and the vector index's HNSW
neighbours (ChromaIndex.neighbors, ~log n per memory) plus the candidate search in
core/clustering.py, on the same synthetic vectors as benchmarks/consolidation_speed.py
(384-d, groups of 1-12 around random topic centres). Every point is flagged.

Timed: exact `knn(vectors, k, min_sim)` at the union-find bar; `cell_knn` with the
policy's cells and probes; for HNSW, the neighbours call (k *
cluster_neighbor_overfetch asked) and `candidate_knn` over those candidates (only up to
`--hnsw-max` memories: a query costs milliseconds).
Not timed: filling the index (in real use it already holds every memory). Also reported:
the fraction of the exact thresholded k-NN links the HNSW path finds (what the
clustering can see), so speed is never bought with silently lost links.

Run: python benchmarks/knn_speed.py [--sizes 10000 50000 100000] [--hnsw-max 10000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))


def measure(n: int, tmp: Path, hnsw: bool) -> dict[str, Any]:
    from consolidation_speed import synthetic

    from reverie.core.cluster_base import candidate_knn, knn, policy_cell_knn
    from reverie.core.policy import Policy
    from reverie.core.ports import VectorItem
    from reverie.integrations.chroma.index import ChromaIndex

    policy = Policy()
    k = policy.maintenance.cluster_knn
    bar = min(policy.maintenance.cluster_theta, policy.maintenance.cluster_entity_theta)
    _, vecs, _ = synthetic(n)
    ids = [f"m{i:06d}" for i in range(n)]
    t0 = time.perf_counter()
    e_idx, _ = knn(vecs, k, min_sim=bar)
    exact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    c_idx, _ = policy_cell_knn(vecs, k, bar, policy)
    cell_s = time.perf_counter() - t0
    exact_links = {(r, int(j)) for r in range(n) for j in e_idx[r] if j >= 0}
    cell_links = {(r, int(j)) for r in range(n) for j in c_idx[r] if j >= 0}
    row: dict[str, Any] = {
        "n": n,
        "exact_knn_s": exact_s,
        "cell_knn_s": cell_s,
        "cell_links_found": len(exact_links & cell_links) / max(len(exact_links), 1),
        "exact_links": len(exact_links),
    }
    print(f"n={n}: exact {exact_s:.2f}s | cells {cell_s:.2f}s, links found "
          f"{row['cell_links_found']:.4f}", flush=True)
    if not hnsw:
        return row
    index = ChromaIndex.embedded(tmp / f"chroma-{n}")
    try:
        t0 = time.perf_counter()
        for s in range(0, n, 2000):
            index.upsert("b", [VectorItem(ids[i], vecs[i]) for i in range(s, min(s + 2000, n))])
        fill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        found = index.neighbors("b", ids, k * policy.maintenance.cluster_neighbor_overfetch)
        query_s = time.perf_counter() - t0
    finally:
        index.close()
    pos = {x: r for r, x in enumerate(ids)}
    cands = [[pos[h.id] for h in found.get(x, [])] for x in ids]
    t0 = time.perf_counter()
    h_idx, _ = candidate_knn(vecs, cands, k, min_sim=bar)
    cand_s = time.perf_counter() - t0
    hnsw_links = {(r, int(j)) for r in range(n) for j in h_idx[r] if j >= 0}
    found_frac = len(exact_links & hnsw_links) / max(len(exact_links), 1)
    row |= {
        "hnsw_neighbors_s": query_s,
        "candidate_knn_s": cand_s,
        "hnsw_total_s": query_s + cand_s,
        "index_fill_s_untimed": fill_s,
        "links_found": found_frac,
    }
    print(
        f"n={n}: exact {exact_s:.2f}s | hnsw {query_s:.2f}s + candidates {cand_s:.2f}s | "
        f"links found {found_frac:.4f} (fill {fill_s:.1f}s, untimed)",
        flush=True,
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000, 100000])
    ap.add_argument("--hnsw-max", type=int, default=10000,
                    help="measure the HNSW path only up to this many memories")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(n, Path(tmp), n <= args.hnsw_max) for n in args.sizes]
    growth = []
    for a, b in itertools.pairwise(rows):
        lr = math.log(b["n"] / a["n"])
        g = {
            "from": a["n"], "to": b["n"],
            "exact": math.log(b["exact_knn_s"] / a["exact_knn_s"]) / lr,
            "cells": math.log(b["cell_knn_s"] / a["cell_knn_s"]) / lr,
            "n_log_n": math.log(b["n"] * math.log(b["n"]) / (a["n"] * math.log(a["n"]))) / lr,
        }
        if "hnsw_total_s" in a and "hnsw_total_s" in b:
            g["hnsw"] = math.log(b["hnsw_total_s"] / a["hnsw_total_s"]) / lr
        growth.append(g)
    from reverie.core.policy import Policy

    meta = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "load_average": os.getloadavg(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "knn_speed.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "growth": growth}, indent=2) + "\n"
    )
    m = Policy().maintenance
    lines = [
        "# REM k-NN: exact, by cells, and HNSW neighbours (ChromaIndex.neighbors)",
        "",
        f"Measured on {meta['machine']} (load average at the end "
        f"{meta['load_average'][0]:.1f}: the machine is shared); synthetic 384-d vectors "
        "(benchmarks/consolidation_speed.py), all flagged; default policy (k 8, union-find "
        f"bar 0.7; cells of {m.cluster_cell_size} memories, {m.cluster_cell_probe} probes; "
        "HNSW over-fetch 4); embedded Chroma, DEFAULT_HNSW (ef_search 200). Filling "
        "the index is not timed. 'links found': share of the exact thresholded k-NN links "
        f"the path also finds. HNSW measured up to {args.hnsw_max} memories.",
        "",
        "| n | exact k-NN s | cells s | cells: links found | HNSW total s | "
        "HNSW: links found |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        hnsw = (f"{r['hnsw_total_s']:.2f} | {r['links_found']:.4f}"
                if "hnsw_total_s" in r else "- | -")
        lines.append(
            f"| {r['n']} | {r['exact_knn_s']:.2f} | {r['cell_knn_s']:.2f} | "
            f"{r['cell_links_found']:.4f} | {hnsw} |"
        )
    lines.append("")
    for g in growth:
        hnsw = f", HNSW ~ n^{g['hnsw']:.2f}" if "hnsw" in g else ""
        lines.append(
            f"- growth {g['from']} -> {g['to']}: exact ~ n^{g['exact']:.2f}, cells ~ "
            f"n^{g['cells']:.2f}{hnsw} (n log n would be n^{g['n_log_n']:.2f})"
        )
    (RESULTS / "knn_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
