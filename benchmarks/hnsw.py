"""HNSW settings for ChromaIndex, measured: recall@k against exact cosine, and latency.

Builds N real all-MiniLM-L6-v2 embeddings of COCO captions (or LoCoMo dialogue
turns), indexes them in embedded Chroma once per HNSW setting, and queries with
held-out texts of the same source. Recall is measured against brute-force numpy
cosine; a returned id counts as correct when its exact similarity reaches the
k-th exact similarity (so exact ties between duplicate captions are not misses).
Also measured: filtered queries (a metadata equality selecting 10 % of the items,
and one selecting 90 %, the shape of reverie's `status = active` filter), build
time, and query latency both through `ChromaIndex.query` and raw `collection.query`.

    python benchmarks/hnsw.py                    # 10k items, 500 queries, all settings
    python benchmarks/hnsw.py --n 10000 20000    # and how recall holds at 20k
    python benchmarks/hnsw.py --server           # also time the default over a server

The data is read from /work/shared/data (never copied into the repo); embeddings
are cached in the system temp directory so a re-run skips the embedding step.
Writes benchmarks/results/hnsw.json and hnsw.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # for tests.servers (the --server run)
    sys.path.insert(0, str(REPO))

from reverie.core.ports import VectorItem  # noqa: E402
from reverie.integrations.chroma.index import (  # noqa: E402
    DEFAULT_HNSW,
    ChromaIndex,
    HnswSettings,
    collection_name,
)

DATA = Path(os.environ.get("REVERIE_DATA", "/work/shared/data"))
NS = "bench/hnsw"
BUCKETS = 10  # filtered queries select one bucket: 10 % of the items

SETTINGS: list[tuple[str, HnswSettings]] = [
    ("chroma default", HnswSettings(ef_construction=100, ef_search=100, max_neighbors=16)),
    ("M16 efC200 efS200", HnswSettings(ef_construction=200, ef_search=200, max_neighbors=16)),
    ("M32 efC200 efS64", HnswSettings(ef_construction=200, ef_search=64, max_neighbors=32)),
    ("M32 efC200 efS128", HnswSettings(ef_construction=200, ef_search=128, max_neighbors=32)),
    ("M32 efC200 efS200", HnswSettings(ef_construction=200, ef_search=200, max_neighbors=32)),
    ("M48 efC400 efS256", HnswSettings(ef_construction=400, ef_search=256, max_neighbors=48)),
]


def load_texts(source: str) -> list[str]:
    """Distinct non-empty texts of `source`, in file order."""
    texts: list[str] = []
    if source == "coco":
        with open(DATA / "coco_captions" / "clusters.jsonl", encoding="utf-8") as f:
            for line in f:
                texts.extend(json.loads(line)["texts"])
    elif source == "locomo":
        with open(DATA / "locomo" / "locomo10.json", encoding="utf-8") as f:
            for sample in json.load(f):
                conv = sample["conversation"]
                for key, turns in conv.items():
                    if key.startswith("session_") and isinstance(turns, list):
                        texts.extend(t["text"] for t in turns if t.get("text"))
    else:
        raise SystemExit(f"unknown source {source!r}")
    seen: set[str] = set()
    out = []
    for t in texts:
        t = t.strip()
        if t and t not in seen:
            seen.add(t)
            out.append(t)
    return out


def embed_cached(texts: Sequence[str]) -> np.ndarray:
    """The local model's embeddings of `texts` (MiniLM unless $REVERIE_EMBEDDING_MODEL
    says otherwise), cached by model and content in the temp directory."""
    from reverie.integrations.embedders import LocalEmbedder, default_model

    model = default_model()
    digest = hashlib.sha256(("\n".join(texts) + model).encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / "reverie-bench" / f"{model}-{digest}.npy"
    if cache.exists():
        return np.load(cache)
    t0 = time.perf_counter()
    vecs = LocalEmbedder().embed(list(texts))
    dt = time.perf_counter() - t0
    print(f"embedded {len(texts)} texts in {dt:.1f} s ({len(texts) / dt:.0f}/s)", flush=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vecs)
    return vecs


def exact_topk(
    corpus: np.ndarray, queries: np.ndarray, k: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(top-k indices best first, k-th similarity) per query, by brute-force cosine."""
    sims = queries @ corpus.T
    if mask is not None:
        sims = np.where(mask, sims, -np.inf)
    idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(sims, idx, axis=1).argsort(axis=1)[:, ::-1]
    idx = np.take_along_axis(idx, order, axis=1)
    kth = np.take_along_axis(sims, idx[:, -1:], axis=1)[:, 0]
    return idx, kth, sims


def recall(found: list[list[int]], kth: np.ndarray, sims: np.ndarray, k: int) -> float:
    """Mean fraction of the k results whose exact similarity reaches the k-th best."""
    total = 0.0
    for qi, ids in enumerate(found):
        good = sum(1 for i in ids[:k] if sims[qi, i] >= kth[qi] - 1e-5)
        total += good / k
    return total / len(found)


def pct(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def time_queries(
    fn: Callable[[int], list[int]], n: int, warmup: int = 20
) -> tuple[list[list[int]], list[float]]:
    for qi in range(min(warmup, n)):
        fn(qi)
    lat: list[float] = []
    found: list[list[int]] = []
    for qi in range(n):
        t0 = time.perf_counter()
        ids = fn(qi)
        lat.append((time.perf_counter() - t0) * 1000)
        found.append(ids)
    return found, lat


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_setting(
    client_factory: Callable[[], Any],
    label: str,
    hnsw: HnswSettings,
    corpus: np.ndarray,
    queries: np.ndarray,
    k: int,
    truth: dict[str, Any],
    data_dir: Path | None,
) -> dict[str, Any]:
    client = client_factory()
    index = ChromaIndex(client, hnsw=hnsw, location=label)
    index.drop_namespace(NS)
    items = [
        VectorItem(str(i), v, {"bucket": i % BUCKETS, "common": i % BUCKETS != 0})
        for i, v in enumerate(corpus)
    ]
    t0 = time.perf_counter()
    index.upsert(NS, items)
    col = client.get_collection(collection_name(NS), embedding_function=None)
    col.query(query_embeddings=queries[:1], n_results=k, include=["distances"])  # settle
    build_s = time.perf_counter() - t0
    assert index.count(NS) == len(corpus)

    def raw(qi: int) -> list[int]:
        r = col.query(query_embeddings=queries[qi : qi + 1], n_results=k, include=["distances"])
        return [int(i) for i in r["ids"][0]]

    def wrapped(qi: int) -> list[int]:
        return [int(h.id) for h in index.query(NS, queries[qi], k)]

    def filtered(qi: int) -> list[int]:
        where = {"bucket": qi % BUCKETS}
        return [int(h.id) for h in index.query(NS, queries[qi], k, where=where)]

    def common(qi: int) -> list[int]:
        return [int(h.id) for h in index.query(NS, queries[qi], k, where={"common": True})]

    def common_raw(qi: int) -> list[int]:
        r = col.query(
            query_embeddings=queries[qi : qi + 1],
            n_results=k,
            where={"common": True},
            include=["distances"],
        )
        return [int(i) for i in r["ids"][0]]

    n = len(queries)
    found_raw, lat_raw = time_queries(raw, n)
    found_wrapped, lat_wrapped = time_queries(wrapped, n)
    found_f, lat_f = time_queries(filtered, n)
    found_c, lat_c = time_queries(common, n)
    found_cr, lat_cr = time_queries(common_raw, n)
    row = {
        "label": label,
        "hnsw": asdict(hnsw),
        "build_s": round(build_s, 2),
        "recall": round(recall(found_raw, truth["kth"], truth["sims"], k), 4),
        "recall_wrapped": round(recall(found_wrapped, truth["kth"], truth["sims"], k), 4),
        "recall_filtered": round(recall(found_f, truth["kth_f"], truth["sims_f"], k), 4),
        "recall_common": round(recall(found_c, truth["kth_c"], truth["sims_c"], k), 4),
        "recall_common_raw": round(recall(found_cr, truth["kth_c"], truth["sims_c"], k), 4),
        "raw_p50_ms": round(statistics.median(lat_raw), 3),
        "raw_p95_ms": round(pct(lat_raw, 95), 3),
        "index_p50_ms": round(statistics.median(lat_wrapped), 3),
        "filtered_p50_ms": round(statistics.median(lat_f), 3),
        "common_p50_ms": round(statistics.median(lat_c), 3),
        "common_raw_p50_ms": round(statistics.median(lat_cr), 3),
        "disk_mb": round(dir_size(data_dir) / 2**20, 1) if data_dir else None,
    }
    index.drop_namespace(NS)
    index.close()
    if hasattr(client, "close"):
        client.close()
    print(json.dumps(row), flush=True)
    return row


def machine() -> dict[str, Any]:
    import chromadb

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(terse=True),
        "chromadb": chromadb.__version__,
        "numpy": np.__version__,
        "loadavg": " / ".join(f"{x:.1f}" for x in os.getloadavg()),
    }


def _row_md(r: dict[str, Any], label: str | None = None) -> str:
    h = r["hnsw"]
    return (
        f"| {label or r['label']} | {h['max_neighbors']} | {h['ef_construction']} | "
        f"{h['ef_search']} | {r['recall']:.4f} | {r['recall_filtered']:.4f} | "
        f"{r['recall_common']:.4f} | {r['raw_p50_ms']:.2f} | {r['raw_p95_ms']:.2f} | "
        f"{r['index_p50_ms']:.2f} | {r['filtered_p50_ms']:.2f} | {r['common_p50_ms']:.2f} | "
        f"{r['common_raw_p50_ms']:.2f} | "
        f"{r['build_s']:.1f} | {r['disk_mb'] if r['disk_mb'] is not None else '-'} |"
    )


_HEADER = [
    "| setting | M | ef_c | ef_s | recall@k | recall@k 10 % filter | recall@k 90 % filter "
    "| raw p50 ms | raw p95 ms | index p50 ms | 10 % filter p50 ms | 90 % filter p50 ms "
    "| 90 % filter in Chroma p50 ms | build s | disk MB |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def write_markdown(path: Path, result: dict[str, Any]) -> None:
    m = result["machine"]
    p = result["params"]
    lines = [
        "# HNSW settings for ChromaIndex",
        "",
        f"Generated by `python benchmarks/hnsw.py {' '.join(p['argv'])}`: {p['source']} texts "
        f"embedded with all-MiniLM-L6-v2, {p['queries']} held-out query texts of the same "
        f"source, k = {p['k']}.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
        f"chromadb {m['chromadb']}, numpy {m['numpy']}, {m['os']}. Embedded Chroma "
        "(PersistentClient) in a temp directory, cosine space, one collection per run.",
        "",
        "Recall@k is against brute-force numpy cosine (exact ties count as hits). The "
        "filtered columns use a metadata equality filter selecting 10 % (or 90 %, the "
        "shape of `status = active`) of the items, scored against the exact top-k of that "
        "subset. Latencies are per single query after 20 warm-up queries: *raw* is "
        "`collection.query` alone, *index* is `ChromaIndex.query` (validation and hit "
        "conversion included). Filtered queries go through `ChromaIndex.query`, which "
        "filters the unfiltered top max(5k, 50) itself and falls back to Chroma's `where` "
        "only when too few of those match; the last latency column is Chroma's own "
        "`where` for the 90 % filter, for comparison. Build is the upsert of all items "
        "plus the first query. Load average "
        f"{m['loadavg']} at the start: the same setting's latencies moved by up to 2x "
        "between runs, and HNSW builds are multi-threaded, so recall moves by about "
        "+-0.0002 between builds. Read differences smaller than that as noise.",
    ]
    for n, rows in result["rows"].items():
        lines += ["", f"## {n} items", "", *_HEADER, *(_row_md(r) for r in rows)]
    if result.get("server"):
        s = result["server"]
        lines += [
            "",
            f"## Over HTTP ({s['n']} items)",
            "",
            "The default setting behind a local `chroma run` server on the same machine:",
            "",
            *_HEADER,
            _row_md(s),
        ]
    lines += ["", "## Choice", "", result.get("choice", ""), ""]
    path.write_text("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000])
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--source", choices=["coco", "locomo"], default="coco")
    ap.add_argument("--server", action="store_true", help="also time the default on a server")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results",
                    help="directory of hnsw.md and hnsw.json")
    ap.add_argument("--choice", default="", help="the 'Choice' paragraph of the markdown")
    ap.add_argument("--choice-file", type=Path, help="read the 'Choice' paragraph from a file")
    ap.add_argument(
        "--render-only",
        action="store_true",
        help="re-write the markdown from the existing JSON (e.g. with a new --choice-file)",
    )
    args = ap.parse_args(argv)
    stem = args.out / "hnsw"
    if args.render_only:
        result = json.loads(stem.with_suffix(".json").read_text())
        if args.choice_file or args.choice:
            result["choice"] = (
                args.choice_file.read_text().strip() if args.choice_file else args.choice
            )
            stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
        write_markdown(stem.with_suffix(".md"), result)
        return
    raw_argv = list(sys.argv[1:] if argv is None else argv)
    shown = []
    skip = False
    for a in raw_argv:  # keep the command line short in the report
        if skip:
            skip = False
            continue
        if a in ("--out", "--choice", "--choice-file"):
            skip = True
            continue
        shown.append(a)

    started_on = machine()
    texts = load_texts(args.source)
    random.Random(0).shuffle(texts)
    biggest = max(args.n)
    need = biggest + args.queries
    if len(texts) < need:
        raise SystemExit(f"{args.source} has {len(texts)} distinct texts, need {need}")
    # Queries are the first texts, so every size is queried with the same ones.
    texts = texts[:need]
    vecs = embed_cached(texts)
    queries, pool = vecs[: args.queries], vecs[args.queries :]

    import chromadb
    from chromadb.config import Settings

    rows: dict[str, list[dict[str, Any]]] = {}
    server_row = None
    for n in args.n:
        corpus = pool[:n]
        _, kth, sims = exact_topk(corpus, queries, args.k)
        qb = np.arange(args.queries) % BUCKETS
        buckets = np.arange(n) % BUCKETS
        _, kth_f, sims_f = exact_topk(corpus, queries, args.k, buckets[None, :] == qb[:, None])
        common = np.broadcast_to(buckets[None, :] != 0, (args.queries, n))
        _, kth_c, sims_c = exact_topk(corpus, queries, args.k, common)
        truth = {
            "kth": kth,
            "sims": sims,
            "kth_f": kth_f,
            "sims_f": sims_f,
            "kth_c": kth_c,
            "sims_c": sims_c,
        }
        rows[str(n)] = []
        for label, hnsw in SETTINGS:
            tmp = Path(tempfile.mkdtemp(prefix="reverie-hnsw-"))
            try:
                rows[str(n)].append(
                    run_setting(
                        lambda t=tmp: chromadb.PersistentClient(
                            path=str(t), settings=Settings(anonymized_telemetry=False)
                        ),
                        label,
                        hnsw,
                        corpus,
                        queries,
                        args.k,
                        truth,
                        tmp,
                    )
                )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

        if args.server and n == min(args.n):
            from tests.servers import start_chroma

            tmp = Path(tempfile.mkdtemp(prefix="reverie-hnsw-srv-"))
            server, url = start_chroma(tmp / "data")
            try:
                port = int(url.rsplit(":", 1)[1])
                server_row = run_setting(
                    lambda p=port: chromadb.HttpClient(
                        host="127.0.0.1", port=p, settings=Settings(anonymized_telemetry=False)
                    ),
                    "default, server",
                    DEFAULT_HNSW,
                    corpus,
                    queries,
                    args.k,
                    truth,
                    None,
                )
                server_row["n"] = n
            finally:
                server.stop()
                shutil.rmtree(tmp, ignore_errors=True)

    choice = args.choice_file.read_text().strip() if args.choice_file else args.choice
    if not choice:
        print(
            "no --choice or --choice-file: the markdown's 'Choice' section is empty; write "
            "it for these numbers and add it with --render-only --choice-file FILE",
            file=sys.stderr,
        )
    result = {
        "params": {
            "n": args.n,
            "queries": args.queries,
            "k": args.k,
            "source": args.source,
            "argv": shown,
        },
        "machine": started_on,
        "default": asdict(DEFAULT_HNSW),
        "rows": rows,
        "server": server_row,
        "choice": choice,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(stem.with_suffix(".md"), result)
    print(f"wrote {stem.with_suffix('.md')} and .json")


if __name__ == "__main__":
    main()
