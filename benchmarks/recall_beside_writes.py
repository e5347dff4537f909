"""Recall latency while another thread writes, on the embedded default (SQLite + embedded
Chroma): an agent answering on one thread while a bulk import or a REM cycle runs on
another. Measured against recall with nothing beside it, in the same run.

Data: the turns of LoCoMo's ten conversations, every vector computed by all-MiniLM-L6-v2
before any timing (the embedding model's time is excluded on both sides, so the writer
runs flat out: the hardest case for the reader). The first half is ingested as setup; the
questions of the same conversations are the queries, embedded beforehand too
(`query_vector`), `reinforce=False` so the reader itself writes nothing.

Per round, one after the other:
- quiet: each question recalled once, nothing else running;
- beside an ingest: the other half observed in one `observe_many` call on another thread,
  the questions recalled in a loop until it has written everything;
- beside a REM cycle: the clock moved two years on, one `consolidate()` on another thread
  (extractive synthesizer), the questions recalled in a loop until it ends.
Also raw Chroma (`collection.query`, k=10, the same vectors) quiet and beside the ingest:
what the vector search alone pays for sharing the process.

Run: python benchmarks/recall_beside_writes.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo_data import load

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
K = 10


def percentiles(ms: Sequence[float]) -> dict[str, float]:
    xs = sorted(ms)
    if not xs:
        return {"n": 0}
    at = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {"n": len(xs), "p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": xs[-1]}


def loop_until(stop: threading.Event, calls: Sequence[Callable[[], Any]]) -> list[float]:
    """Time the calls one after another, round and round, until `stop` is set."""
    out: list[float] = []
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        calls[i % len(calls)]()
        out.append((time.perf_counter() - t0) * 1000)
        i += 1
    return out


def beside(
    work: Callable[[], Any], calls: Sequence[Callable[[], Any]]
) -> tuple[list[float], float]:
    """Run `work` on another thread and time `calls` until it ends; (latencies, its seconds)."""
    stop = threading.Event()
    took: list[float] = []
    failed: list[BaseException] = []

    def run() -> None:
        t0 = time.perf_counter()
        try:
            work()
        except BaseException as e:  # reported below, after the reader stops
            failed.append(e)
        finally:
            took.append(time.perf_counter() - t0)
            stop.set()

    th = threading.Thread(target=run)
    th.start()
    lat = loop_until(stop, calls)
    th.join()
    if failed:
        raise failed[0]
    return lat, took[0]


def one_round(memo: MemoEmbedder, turns: list[Any], questions: list[str], home: Path
              ) -> dict[str, Any]:
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine

    clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
    engine = open_engine(home, embedder=memo, clock=clock, namespace="bench")
    obs = [Observation(t.text, source=t.dia_id, at=t.at) for t in turns]
    half = len(obs) // 2
    engine.observe_many(obs[:half], namespace="bench")
    engine.flush()
    qvecs = memo.embed(questions)
    col = engine.vectors.collection("bench")  # the same collection, queried raw

    def recall(i: int) -> Callable[[], Any]:
        return lambda: engine.recall(questions[i], namespace="bench", k=K,
                                     query_vector=qvecs[i], reinforce=False)

    def raw(i: int) -> Callable[[], Any]:
        return lambda: col.query(query_embeddings=qvecs[i : i + 1], n_results=K,
                                 include=["distances"])

    recalls = [recall(i) for i in range(len(questions))]
    raws = [raw(i) for i in range(len(questions))]
    for c in recalls[:20]:  # warm
        c()

    def timed(calls: Sequence[Callable[[], Any]]) -> list[float]:
        out = []
        for c in calls:
            t0 = time.perf_counter()
            c()
            out.append((time.perf_counter() - t0) * 1000)
        return out

    row: dict[str, Any] = {"quiet": percentiles(timed(recalls)),
                           "raw_quiet": percentiles(timed(raws))}

    def ingest() -> None:
        engine.observe_many(obs[half:], namespace="bench")
        engine.flush()

    # recall and raw queries take turns beside the one ingest
    mixed = [c for pair in zip(recalls, raws, strict=True) for c in pair]
    lat, secs = beside(ingest, mixed)
    row["beside_ingest"] = percentiles(lat[0::2])
    row["raw_beside_ingest"] = percentiles(lat[1::2])
    row["ingest_seconds"] = secs
    row["ingested"] = len(obs) - half
    clock.advance(days=730)
    report: list[Any] = []
    lat, secs = beside(lambda: report.append(engine.consolidate("bench")), recalls)
    row["beside_rem"] = percentiles(lat)
    row["rem_seconds"] = secs
    row["rem_committed"] = len(report[0].committed)
    engine.close()
    return row


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    from reverie.integrations.embedders import LocalEmbedder

    convs = load(DATA)
    turns = [t for _, ts, _ in convs for t in ts]
    questions = [q.text for _, _, qs in convs for q in qs]
    memo = MemoEmbedder(LocalEmbedder())
    print(f"embedding {len(turns)} turns and {len(questions)} questions ...", flush=True)
    memo.warm([t.text for t in turns] + questions)
    load_start = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            row = one_round(memo, turns, questions, Path(tmp) / f"r{r}")
            rows.append(row)
            print(f"round {r + 1}: " + json.dumps({k: v for k, v in row.items()}), flush=True)

    def med(key: str, stat: str) -> float:
        return float(statistics.median(r[key][stat] for r in rows))

    modes = [("quiet", "recall, nothing beside it"),
             ("beside_ingest", "recall beside a bulk ingest"),
             ("beside_rem", "recall beside a REM cycle"),
             ("raw_quiet", "raw Chroma query, nothing beside it"),
             ("raw_beside_ingest", "raw Chroma query beside a bulk ingest")]
    meta = {"machine": f"{os.cpu_count()} cores, CPU only", "rounds": args.rounds,
            "turns_setup": len(turns) // 2, "turns_ingested": rows[0]["ingested"],
            "questions": len(questions), "k": K, "loadavg_start": load_start,
            "loadavg_end": os.getloadavg()[0]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "recall_beside_writes.json").write_text(
        json.dumps({"meta": meta, "rounds": rows}, indent=2) + "\n")
    lines = [
        "# Recall beside writes (embedded default)",
        "",
        f"Machine: {meta['machine']}. LoCoMo's ten conversations: {meta['turns_setup']:,} "
        f"turns ingested as setup, then {meta['turns_ingested']:,} more in one "
        f"`observe_many` call on another thread; {meta['questions']:,} questions as "
        f"queries, k={K}, `reinforce=False`, every vector computed before timing "
        "(all-MiniLM-L6-v2, so the writer runs without model time: the hardest case for "
        "the reader). Beside a REM cycle: the clock two years on, one `consolidate()` on "
        f"another thread. Medians over {args.rounds} rounds of each round's percentile. "
        f"Load average (1 min) at start {meta['loadavg_start']:.2f}, end "
        f"{meta['loadavg_end']:.2f}.",
        "",
        "| mode | calls per round | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in modes:
        lines.append(
            f"| {label} | {int(med(key, 'n')):,} | {med(key, 'p50'):.1f} | "
            f"{med(key, 'p95'):.1f} | {med(key, 'p99'):.1f} | {med(key, 'max'):.1f} |"
        )
    ing = statistics.median(r["ingest_seconds"] for r in rows)
    rem = statistics.median(r["rem_seconds"] for r in rows)
    lines += [
        "",
        f"The ingest beside the reader took {ing:.1f} s ({meta['turns_ingested'] / ing:,.0f} "
        f"memories/s); the REM cycle {rem:.1f} s, committing "
        f"{statistics.median(r['rem_committed'] for r in rows):,.0f} clusters.",
    ]
    (args.out / "recall_beside_writes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
