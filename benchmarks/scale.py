"""Scale of the embedded default (SQLite + embedded Chroma) with one namespace growing to
100k memories and beyond: ingest rate, open -> first recall, recall p50/p95 against the raw
Chroma query on the same vectors (interleaved), peak resident memory, bytes on disk per
memory and `maintenance_due()`, with the growth exponent of each fitted over the sizes.

Vectors come from a fast deterministic embedder (hashed bag of words projected to 384
dimensions, unit length), so the model is a negligible part of every cost and a million
memories fit a 2-core machine; recall is given the query's vector (`query_vector=`), so the
query embedding is excluded, as in `latency.py`. Texts are COCO captions, each with three
words drawn from a Zipf-distributed vocabulary and a serial number, so every text is distinct
and the lexical channel sees realistic term frequencies.

Imports are done before the clock starts, for reverie and raw Chroma alike.
Each size runs in fresh processes, so peak RSS is that size's alone:
- build: ingest with `observe_many`, then recall and raw Chroma interleaved query by query
  (random order per query, several rounds), then `maintenance_due()`;
- open: a new process opens the engine and answers one recall (the time a restarted agent
  waits), and raw Chroma opens the same collection and answers one query, each in its own
  process with its own peak RSS.

Run: python benchmarks/scale.py [--sizes 10000 100000] [--queries 200] [--homes DIR]
(`--homes DIR --reopen` measures the open times again on the engines a run kept, and
`--homes DIR --remeasure --sizes N` recall, `maintenance_due()` and the raw add;
`--sizes 300000 --add` measures a long size in a run of its own and adds it to the rows
already in the output).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from common import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
COCO = ROOT.parent / "shared" / "data" / "coco_captions" / "clusters.jsonl"
NS = "bench"
ROUNDS = 3


def captions() -> list[str]:
    out: list[str] = []
    with COCO.open() as f:
        for line in f:
            out.extend(json.loads(line)["texts"])
    return out


def corpus(n: int, seed: int = 11) -> list[str]:
    """`n` distinct texts: a caption, three Zipf-drawn words and a serial number."""
    caps = captions()
    vocab = sorted({w.strip(".,").lower() for c in caps for w in c.split() if w.isalpha()})
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(caps), size=n)
    words = (rng.zipf(1.3, size=(n, 3)) - 1) % len(vocab)
    return [
        f"{caps[p].rstrip('. ')}, {vocab[a]} {vocab[b]} {vocab[c]} (note {i})"
        for i, (p, (a, b, c)) in enumerate(zip(pick.tolist(), words.tolist(), strict=True))
    ]


def queries(n_queries: int) -> list[str]:
    caps = captions()
    rng = np.random.default_rng(5)
    return [f"a photo of {caps[i].lower()}" for i in rng.integers(0, len(caps), n_queries)]


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def disk_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- workers


def build(size: int, home: Path, n_queries: int) -> dict[str, Any]:
    from reverie.core import ManualClock
    from reverie.integrations import open_engine

    emb = HashEmbedder()
    texts = corpus(size)
    clock = ManualClock(datetime(2025, 1, 1, tzinfo=UTC))
    engine = open_engine(home, embedder=emb, clock=clock)
    ingest = ingest_seconds(engine, texts)
    t_embed = time.perf_counter()
    for i in range(0, min(size, 20_000), 256):
        emb.embed(texts[i : i + 256])
    embed_rate = min(size, 20_000) / (time.perf_counter() - t_embed)
    del texts
    row = measured_row(engine, engine.vectors.collection(NS), emb, size, ingest, n_queries)
    row["bare_embedder_per_s"] = embed_rate
    return row


def ingest_seconds(engine: Any, texts: Sequence[str]) -> float:
    """Seconds to observe `texts` into NS through `observe_many`, flushed."""
    from reverie.core.engine import Observation

    t0 = time.perf_counter()
    step = 10_000
    for i in range(0, len(texts), step):
        engine.observe_many([Observation(t) for t in texts[i : i + step]], namespace=NS,
                            batch_size=256)
    engine.flush()
    return time.perf_counter() - t0


def measured_row(engine: Any, raw: Any, emb: Any, size: int, ingest: float,
                 n_queries: int) -> dict[str, Any]:
    """A built store's row: recall timed against `raw` (its collection, embedded or on a
    server), `maintenance_due()`, the raw add rate; the engine is closed after."""
    qs = queries(n_queries)
    vecs = emb.embed(qs)
    samples, cpu = timed_recalls(engine, raw, qs, vecs)
    t1 = time.perf_counter()
    due = engine.maintenance_due(namespace=NS)
    due_s = time.perf_counter() - t1
    raw_add = raw_add_rate(raw, emb)
    engine.close()
    row: dict[str, Any] = {
        "memories": size,
        "ingest_per_s": size / ingest,
        "ingest_s": ingest,
        "raw_chroma_add_per_s": raw_add,
        "maintenance_due_s": due_s,
        "maintenance_due_fired": [t.name for t in due],
        "build_peak_rss_mib": peak_rss_mib(),
    }
    for m, xs in samples.items():
        row[f"{m}_p50_ms"] = pct(xs, 50)
        row[f"{m}_p95_ms"] = pct(xs, 95)
        row[f"{m}_cpu_p50_ms"] = pct(cpu[m], 50)
        row[f"{m}_cpu_p95_ms"] = pct(cpu[m], 95)
    return row


def timed_recalls(engine: Any, raw: Any, qs: Sequence[str], vecs: np.ndarray,
                  ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each call, per mode: recall (without reinforcement, and
    drained: its touch written between calls, untimed) interleaved query by query with the
    raw Chroma query on `raw` (a collection, embedded or on a server) in a random order,
    then recall back to back, for ROUNDS rounds; every path warmed first. CPU time is the
    process's (every thread: the index's, the touch writer's): on a shared machine wall
    time also holds the waits for a core."""
    def raw_one(v: np.ndarray) -> tuple[float, float]:
        t1, c1 = time.perf_counter(), time.process_time()
        raw.query(query_embeddings=v[None, :], n_results=10, include=["distances"])
        return time.perf_counter() - t1, time.process_time() - c1

    def recall_one(q: str, v: np.ndarray, reinforce: bool) -> tuple[float, float]:
        t1, c1 = time.perf_counter(), time.process_time()
        engine.recall(q, namespace=NS, k=10, reinforce=reinforce, query_vector=v)
        took = time.perf_counter() - t1, time.process_time() - c1
        engine.flush_reinforcement()  # untimed: the touch is written between calls
        return took

    modes = {
        "raw": lambda q, v: raw_one(v),
        "no_reinforce": lambda q, v: recall_one(q, v, False),
        "drained": lambda q, v: recall_one(q, v, True),
    }
    for q, v in zip(qs, vecs, strict=True):  # warm every path once
        raw_one(v)
        recall_one(q, v, False)
    samples: dict[str, list[float]] = {m: [] for m in [*modes, "back_to_back"]}
    cpu: dict[str, list[float]] = {m: [] for m in samples}
    rng = np.random.default_rng(7)
    for _ in range(ROUNDS):
        for q, v in zip(qs, vecs, strict=True):
            for m in rng.permutation(list(modes)):
                wall, used = modes[str(m)](q, v)
                samples[str(m)].append(wall)
                cpu[str(m)].append(used)
        for q, v in zip(qs, vecs, strict=True):
            t1, c1 = time.perf_counter(), time.process_time()
            engine.recall(q, namespace=NS, k=10, query_vector=v)
            samples["back_to_back"].append(time.perf_counter() - t1)
            cpu["back_to_back"].append(time.process_time() - c1)
        engine.flush_reinforcement()
    return samples, cpu


RAW_ADDS = 2_048


def raw_add_rate(collection: Any, emb: Any) -> float:
    """The vector store's own ingest rate at this size, the baseline for ingest: `add` of
    RAW_ADDS new vectors, 256 at a time, straight into the namespace's collection of the
    same vectors (timed last, then deleted, so every other figure is measured without
    them)."""
    texts = [f"raw add probe {i}, {t}" for i, t in enumerate(queries(RAW_ADDS))]
    vecs = emb.embed(texts)
    ids = [f"raw-add-{i}" for i in range(RAW_ADDS)]
    t0 = time.perf_counter()
    for i in range(0, RAW_ADDS, 256):
        collection.add(ids=ids[i : i + 256], embeddings=vecs[i : i + 256])
    took = time.perf_counter() - t0
    collection.delete(ids=ids)
    return RAW_ADDS / took


def remeasure(size: int, home: Path, n_queries: int) -> dict[str, Any]:
    """A kept store's recall, `maintenance_due()` and raw add again, on the current code
    (the ingest figures stay the build's)."""
    from reverie.integrations import open_engine

    emb = HashEmbedder()
    engine = open_engine(home, embedder=emb)
    row = measured_row(engine, engine.vectors.collection(NS), emb, size, 1.0, n_queries)
    return {k: v for k, v in row.items()
            if k not in ("ingest_per_s", "ingest_s", "build_peak_rss_mib")}


def open_first(home: Path) -> dict[str, Any]:
    """A restarted agent: open the engine and answer one recall."""
    emb = HashEmbedder()
    q = queries(1)[0]
    v = emb.embed([q])[0]
    import chromadb  # noqa: F401  (imported before the clock, as for raw Chroma)

    from reverie.integrations import open_engine  # imports are not part of opening

    t0 = time.perf_counter()
    engine = open_engine(home, embedder=emb)
    engine.recall(q, namespace=NS, k=10, reinforce=False, query_vector=v)
    took = time.perf_counter() - t0
    t1 = time.perf_counter()
    engine.recall(queries(2)[1], namespace=NS, k=10, reinforce=False,
                  query_vector=emb.embed([queries(2)[1]])[0])
    second = time.perf_counter() - t1
    engine.close()
    return {"open_first_recall_s": took, "second_recall_s": second,
            "open_peak_rss_mib": peak_rss_mib()}


def raw_open_first(home: Path) -> dict[str, Any]:
    """Raw Chroma on the same vectors: open the client and answer one query."""
    emb = HashEmbedder()
    v = emb.embed(queries(1))[0]
    import chromadb

    from reverie.integrations.chroma.collections import collection_name

    t0 = time.perf_counter()
    client = chromadb.PersistentClient(path=str(home / "vectors"))
    col = client.get_collection(collection_name(NS))
    col.query(query_embeddings=v[None, :], n_results=10, include=["distances"])
    took = time.perf_counter() - t0
    return {"raw_open_first_query_s": took, "raw_open_peak_rss_mib": peak_rss_mib()}


# --------------------------------------------------------------------------- driver


OPENS = 3  # fresh processes per side: one open of a large store moves by a second


def opened(size: int, home: Path, n_queries: int) -> dict[str, Any]:
    """Open -> first recall and raw Chroma's open -> first query, each in OPENS fresh
    processes taking turns; the medians (and every value)."""
    runs: list[dict[str, Any]] = []
    for _ in range(OPENS):
        runs.append(run_worker("open", size, home, n_queries))
        runs.append(run_worker("raw_open", size, home, n_queries))
    out: dict[str, Any] = {}
    for key in ("open_first_recall_s", "second_recall_s", "open_peak_rss_mib",
                "raw_open_first_query_s", "raw_open_peak_rss_mib"):
        values = [r[key] for r in runs if key in r]
        out[key] = float(np.median(values))
        out[f"{key}_all"] = values
    return out


def reopen(rows: list[dict[str, Any]], homes: Path, n_queries: int) -> None:
    """Measure open -> first recall (and raw Chroma's) again on kept homes."""
    for row in rows:
        row.update(opened(row["memories"], homes / f"n{row['memories']}", n_queries))


def run_worker(kind: str, size: int, home: Path, n_queries: int, *,
               script: str = __file__, extra: Sequence[str] = ()) -> dict[str, Any]:
    """One worker process of `script` (this benchmark's, or another's built the same
    way): its last line of output, as JSON."""
    out = subprocess.run(
        [sys.executable, script, "--worker", kind, "--size", str(size), "--home", str(home),
         "--queries", str(n_queries), *extra],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"the {kind} worker at {size:,} memories failed")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def measure(size: int, n_queries: int, tmp: Path) -> dict[str, Any]:
    home = tmp / f"n{size}"
    print(f"[{size}] build", file=sys.stderr, flush=True)
    row = run_worker("build", size, home, n_queries)
    row["bytes_per_memory"] = disk_bytes(home) / size
    row["sqlite_bytes_per_memory"] = sum(
        p.stat().st_size for p in home.glob("memory.db*")) / size
    print(f"[{size}] open", file=sys.stderr, flush=True)
    row.update(opened(size, home, n_queries))
    row["ratio_no_reinforce_p50"] = row["no_reinforce_p50_ms"] / row["raw_p50_ms"]
    row["ratio_drained_p50"] = row["drained_p50_ms"] / row["raw_p50_ms"]
    row["ratio_back_to_back_p50"] = row["back_to_back_p50_ms"] / row["raw_p50_ms"]
    row["loadavg_1m_after"] = os.getloadavg()[0]
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


GROWTH = {
    "ingest time": lambda r: r["ingest_s"],
    "recall p50 (drained)": lambda r: r["drained_p50_ms"],
    "raw Chroma p50": lambda r: r["raw_p50_ms"],
    "open -> first recall": lambda r: r["open_first_recall_s"],
    "raw Chroma open -> first query": lambda r: r["raw_open_first_query_s"],
    "maintenance_due()": lambda r: r["maintenance_due_s"],
    "disk bytes": lambda r: r["bytes_per_memory"] * r["memories"],
    "peak RSS (build)": lambda r: r["build_peak_rss_mib"],
}


def merged(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`old` rows with `new` ones added, a size in both taken from `new`, by size."""
    by_size = {r["memories"]: r for r in old} | {r["memories"]: r for r in new}
    return [by_size[n] for n in sorted(by_size)]


def exponents(rows: list[dict[str, Any]],
              growth: dict[str, Callable[[dict[str, Any]], float]] | None = None,
              ) -> dict[str, float]:
    """Least-squares slope of log(cost) against log(memories): cost ~ n^exponent, for each
    cost of `growth` (this benchmark's by default)."""
    if len(rows) < 2:
        return {}
    x = np.log([r["memories"] for r in rows])
    out = {}
    for name, get in (growth or GROWTH).items():
        y = np.log([max(get(r), 1e-9) for r in rows])
        out[name] = float(np.polyfit(x, y, 1)[0])
    return out


def extrapolate(rows: list[dict[str, Any]], exps: dict[str, float], n: int) -> dict[str, float]:
    """What the fitted exponents say at `n` memories, from the largest measured size."""
    last = rows[-1]
    f = n / last["memories"]
    return {name: float(get(last) * f ** exps[name]) for name, get in GROWTH.items()
            if name in exps}


MODES = {"raw": "raw Chroma", "no_reinforce": "w/o reinforce", "drained": "drained",
         "back_to_back": "back to back"}


def _rate(x: float | None) -> str:
    return "not measured" if x is None else f"{x:,.0f}"


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Scale, embedded default (SQLite + embedded Chroma)",
        "",
        f"Machine: {meta['machine']}. One namespace; vectors from a deterministic hashed "
        f"bag-of-words embedder (384 dimensions; {rows[0]['bare_embedder_per_s']:,.0f} texts/s "
        "alone), so the embedder is a negligible part of every cost. Texts: COCO captions "
        "with three Zipf-drawn words and a serial number. Recall: k=10, query vector given "
        f"(embedding excluded), {meta['queries']} queries x {ROUNDS} rounds, interleaved "
        "query by query with the raw Chroma query (unfiltered `collection.query`, k=10, the "
        "same vectors) in a random order; raw Chroma add = the ingest baseline, `add` of "
        f"{RAW_ADDS:,} more vectors (256 a call) into the built collection, timed after "
        "every other figure and deleted again; drained = the access touch written between calls "
        "outside the timing; back to back = the default, touches written behind while the "
        "next recall runs. Open -> first recall: a fresh process opens the engine and "
        "answers one recall; raw Chroma: a fresh process opens the client and answers one "
        "query; the median of three of each, taking turns. Peak RSS per process "
        "(ru_maxrss). Bytes on disk: the engine's whole "
        f"directory (SQLite file with its WAL, and Chroma). Load average (1 min) at start "
        f"{meta['loadavg_start']:.2f}, end {meta['loadavg_end']:.2f}.",
        *([
            "",
            "Open -> first recall and raw Chroma's open -> first query were measured again "
            "on the same files after the run, by `--reopen` (load averages above are that "
            "re-measurement's); every other column is from the run itself.",
        ] if meta.get("open_remeasured") else []),
        *([
            "",
            "At " + ", ".join(f"{r['memories']:,}" for r in rows if r.get("recall_remeasured"))
            + " memories, recall, `maintenance_due()` and raw Chroma's add were measured "
            "again on the kept store by `--remeasure`; ingest and the build's peak RSS are "
            "from its build.",
        ] if any(r.get("recall_remeasured") for r in rows) else []),
        "",
        "| memories | ingest /s | raw Chroma add /s | recall p50 / p95 ms (drained) | "
        "w/o reinforce p50 / p95 | "
        "back to back p50 / p95 | raw Chroma p50 / p95 | drained / raw | "
        "open -> first recall s | raw Chroma open -> first query s | maintenance_due() s | "
        "bytes/memory (SQLite) | peak RSS build / open / raw open MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['memories']:,} | {r['ingest_per_s']:,.0f} | "
            f"{_rate(r.get('raw_chroma_add_per_s'))} | "
            f"{r['drained_p50_ms']:.2f} / {r['drained_p95_ms']:.2f} | "
            f"{r['no_reinforce_p50_ms']:.2f} / {r['no_reinforce_p95_ms']:.2f} | "
            f"{r['back_to_back_p50_ms']:.2f} / {r['back_to_back_p95_ms']:.2f} | "
            f"{r['raw_p50_ms']:.2f} / {r['raw_p95_ms']:.2f} | "
            f"{r['ratio_drained_p50']:.2f}x | {r['open_first_recall_s']:.2f} | "
            f"{r['raw_open_first_query_s']:.2f} | {r['maintenance_due_s']:.3f} | "
            f"{r['bytes_per_memory']:,.0f} ({r['sqlite_bytes_per_memory']:,.0f}) | "
            f"{r['build_peak_rss_mib']:.0f} / {r['open_peak_rss_mib']:.0f} / "
            f"{r['raw_open_peak_rss_mib']:.0f} |"
        )
    lines += [
        "", "Recall against the raw Chroma query, per mode: ratio of p50 and of p95, in wall "
        "time and in the process's CPU time per call (all threads; CPU time is what the "
        "call itself costs, wall time adds the waits for a core on a shared machine):", "",
        "| memories | mode | wall p50 / p95 ms | wall / raw p50, p95 | CPU p50 / p95 ms | "
        "CPU / raw p50, p95 |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        for m in ("raw", "no_reinforce", "drained", "back_to_back"):
            has_cpu = f"{m}_cpu_p50_ms" in r
            cpu_ms = (f"{r[f'{m}_cpu_p50_ms']:.2f} / {r[f'{m}_cpu_p95_ms']:.2f}" if has_cpu
                      else "not measured")
            cpu_x = (f"{r[f'{m}_cpu_p50_ms'] / r['raw_cpu_p50_ms']:.2f}x, "
                     f"{r[f'{m}_cpu_p95_ms'] / r['raw_cpu_p95_ms']:.2f}x" if has_cpu else "")
            lines.append(
                f"| {r['memories']:,} | {MODES[m]} | {r[f'{m}_p50_ms']:.2f} / "
                f"{r[f'{m}_p95_ms']:.2f} | {r[f'{m}_p50_ms'] / r['raw_p50_ms']:.2f}x, "
                f"{r[f'{m}_p95_ms'] / r['raw_p95_ms']:.2f}x | {cpu_ms} | {cpu_x} |"
            )
    lines += growth_lines(meta, UNITS)
    return "\n".join(lines) + "\n"


UNITS = {"ingest time": "s", "recall p50 (drained)": "ms", "raw Chroma p50": "ms",
         "open -> first recall": "s", "raw Chroma open -> first query": "s",
         "maintenance_due()": "s", "disk bytes": "bytes", "peak RSS (build)": "MiB"}


def growth_lines(meta: dict[str, Any], units: dict[str, str]) -> list[str]:
    """The growth exponents and the extrapolation of a scale run, as markdown."""
    lines: list[str] = []
    exps = meta.get("exponents", {})
    if exps:
        lines += ["", "Growth exponents (cost ~ memories^e, least squares over the sizes above):",
                  "", "| cost | exponent |", "|---|---|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in exps.items()]
    extra = meta.get("extrapolated")
    if extra:
        n = meta["extrapolated_to"]
        lines += [
            "", f"Extrapolated to {n:,} memories from the largest size with the exponents "
            "above (an estimate, not a measurement):", "", "| cost | value |", "|---|---|",
        ]
        lines += [f"| {k} | {v:,.2f} {units[k]} |" for k, v in extra.items()]
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--extrapolate-to", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--worker", choices=["build", "open", "raw_open", "remeasure"])
    ap.add_argument("--size", type=int)
    ap.add_argument("--home", type=Path)
    ap.add_argument("--homes", type=Path, help="keep each size's engine here (n<size>/)")
    ap.add_argument("--add", action="store_true",
                    help="add these sizes to the rows already in OUT/scale.json (a long size "
                    "measured in a run of its own), replacing a size measured again")
    ap.add_argument("--reopen", action="store_true",
                    help="re-measure only the open times on the homes kept in --homes, "
                    "updating the results in --out")
    ap.add_argument("--remeasure", action="store_true",
                    help="re-measure recall, maintenance_due() and the raw add on the homes "
                    "kept in --homes for --sizes (a store too long to build again), "
                    "keeping each build's ingest figures")
    args = ap.parse_args(argv)
    if args.worker:
        fn = {"build": lambda: build(args.size, args.home, args.queries),
              "open": lambda: open_first(args.home),
              "raw_open": lambda: raw_open_first(args.home),
              "remeasure": lambda: remeasure(args.size, args.home, args.queries)}[args.worker]
        print(json.dumps(fn()))
        return
    load_start = os.getloadavg()[0]
    if args.reopen:  # only the open measurements, again, on the homes a run kept
        assert args.homes is not None, "--reopen needs --homes"
        rows = json.loads((args.out / "scale.json").read_text())["rows"]
        reopen(rows, args.homes, args.queries)
    elif args.remeasure:
        assert args.homes is not None, "--remeasure needs --homes"
        rows = json.loads((args.out / "scale.json").read_text())["rows"]
        for row in rows:
            if row["memories"] in args.sizes:
                n = row["memories"]
                row.update(run_worker("remeasure", n, args.homes / f"n{n}", args.queries))
                row["recall_remeasured"] = True
                for mode in ("no_reinforce", "drained", "back_to_back"):
                    row[f"ratio_{mode}_p50"] = row[f"{mode}_p50_ms"] / row["raw_p50_ms"]
    elif args.homes is not None:
        rows = [measure(n, args.queries, args.homes) for n in sorted(args.sizes)]
    else:
        with tempfile.TemporaryDirectory(dir=os.environ.get("SCALE_TMP")) as tmp:
            rows = [measure(n, args.queries, Path(tmp)) for n in sorted(args.sizes)]
    if args.add:
        rows = merged(json.loads((args.out / "scale.json").read_text())["rows"], rows)
    exps = exponents(rows)
    meta: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores, CPU only",
        "queries": args.queries,
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg()[0],
        "exponents": exps,
        "open_remeasured": bool(args.reopen),
    }
    if exps and args.extrapolate_to > rows[-1]["memories"]:
        meta["extrapolated_to"] = args.extrapolate_to
        meta["extrapolated"] = extrapolate(rows, exps, args.extrapolate_to)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    (args.out / "scale.md").write_text(render(rows, meta))
    print(render(rows, meta))


if __name__ == "__main__":
    main()
