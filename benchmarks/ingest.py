"""Bulk ingest against the bare embedder: `observe_many` of LoCoMo conversations with the
real MiniLM model, against `embed()` alone on the same texts in the same batches, measured
in one run. Two ways to ingest:
- one call: the whole history in one `observe_many` call (a bulk import), the vectors
  written behind while the next chunk is embedded, all of them written before the clock
  stops; bare and engine alternate their order round by round, so the machine's drift
  falls on both alike;
- batch by batch: one call per batch, each waiting until its vectors are written,
  alternated with the bare model on the same batch (the slowest way to feed it).
The ratio is what the rest of the write path (validation, duplicate and version checks,
the SQLite commit, the Chroma write) costs on top of the model.
Also: the one-call ingest with a free embedder (precomputed vectors), memories per second,
and with an embedder that answers each call after a fixed wait (as an embedding API does;
the vectors precomputed), against the waits alone: the next chunk is embedded while one
is written, so the write path hides behind the wait.

Run: python benchmarks/ingest.py [--conversations 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo_data import load

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
BATCH = 256  # observe_many's default batch, and the bare embedder's
SMALL_BATCH = 64  # the bare embedder at a quarter of it, for scale
API_WAIT = 0.1  # seconds an embedding API takes to answer one call


class ApiLike:
    """Precomputed vectors, each call answered after `API_WAIT` seconds: the shape of an
    embedding API's cost (a round trip a call), without a network."""

    def __init__(self, memo: MemoEmbedder) -> None:
        self.memo = memo
        self.name = memo.name
        self.dimension = memo.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(API_WAIT)
        return self.memo.embed(texts)


def alternating(model: Any, turns: Sequence[Any], home: Path) -> tuple[float, float]:
    """(bare seconds, engine seconds) over the same batches, timed one batch after the
    other; the engine's time per batch includes writing that batch's vectors."""
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine

    clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
    engine = open_engine(home, embedder=model, clock=clock)
    bare_s = engine_s = 0.0
    for i in range(0, len(turns), BATCH):
        batch = turns[i : i + BATCH]
        t0 = time.perf_counter()
        model.embed([t.text for t in batch])
        t1 = time.perf_counter()
        engine.observe_many([Observation(t.text, source=t.dia_id, at=t.at) for t in batch],
                            namespace="ingest", batch_size=BATCH)
        engine.flush()
        t2 = time.perf_counter()
        bare_s += t1 - t0
        engine_s += t2 - t1
    engine.close()
    return bare_s, engine_s


def bare(model: Any, texts: Sequence[str], batch: int = BATCH) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        model.embed(list(texts[i : i + batch]))
    return time.perf_counter() - t0


def one_call(model: Any, turns: Sequence[Any], home: Path, engine_first: bool
             ) -> tuple[float, float]:
    """(bare seconds, engine seconds) of the whole history, the engine in one call."""
    texts = [t.text for t in turns]
    if engine_first:
        e = engine_ingest(model, turns, home)
        return bare(model, texts), e
    b = bare(model, texts)
    return b, engine_ingest(model, turns, home)


def engine_ingest(embedder: Any, turns: Sequence[Any], home: Path) -> float:
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine

    clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
    engine = open_engine(home, embedder=embedder, clock=clock)
    obs = [Observation(t.text, source=t.dia_id, at=t.at) for t in turns]
    t0 = time.perf_counter()
    engine.observe_many(obs, namespace="ingest", batch_size=BATCH)
    engine.flush()  # the vectors written behind are part of the ingest
    took = time.perf_counter() - t0
    engine.close()
    return took


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    from reverie.integrations.embedders import LocalEmbedder

    model = LocalEmbedder()
    convs = load(DATA)[: args.conversations]
    turns = [t for _, ts, _ in convs for t in ts]
    texts = [t.text for t in turns]
    model.embed(texts[:BATCH])  # load the model before any timing
    load_start = os.getloadavg()[0]
    bare_s: list[float] = []
    engine_s: list[float] = []
    whole_bare_s: list[float] = []
    whole_engine_s: list[float] = []
    free_s: list[float] = []
    api_s: list[float] = []
    small_s: list[float] = []
    memo = MemoEmbedder(model)
    memo.warm(texts)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            b, e = one_call(model, turns, Path(tmp) / f"whole{r}", engine_first=r % 2 == 1)
            whole_bare_s.append(b)
            whole_engine_s.append(e)
            small_s.append(bare(model, texts, SMALL_BATCH))
            b, e = alternating(model, turns, Path(tmp) / f"minilm{r}")
            bare_s.append(b)
            engine_s.append(e)
            free_s.append(engine_ingest(memo, turns, Path(tmp) / f"free{r}"))
            api_s.append(engine_ingest(ApiLike(memo), turns, Path(tmp) / f"api{r}"))
    n = len(texts)
    row: dict[str, Any] = {
        "memories": n,
        "conversations": args.conversations,
        "rounds": args.rounds,
        "one_call_bare_embedder_per_s": [n / s for s in whole_bare_s],
        "one_call_observe_many_per_s": [n / s for s in whole_engine_s],
        "bare_embedder_small_batch_per_s": [n / s for s in small_s],
        "small_batch": SMALL_BATCH,
        "one_call_ratio_per_round": [
            b / e for b, e in zip(whole_bare_s, whole_engine_s, strict=True)],
        "bare_embedder_per_s": [n / s for s in bare_s],
        "observe_many_per_s": [n / s for s in engine_s],
        "ratio_per_round": [b / e for b, e in zip(bare_s, engine_s, strict=True)],
        "free_embedder_observe_many_per_s": [n / s for s in free_s],
        "api_wait_s": API_WAIT,
        "api_waits_alone_s": API_WAIT * len(range(0, n, BATCH)),
        "api_observe_many_s": api_s,
    }
    row["api_ratio_per_round"] = [row["api_waits_alone_s"] / s for s in api_s]
    row["ratio_median"] = float(np.median(row["ratio_per_round"]))
    row["one_call_ratio_median"] = float(np.median(row["one_call_ratio_per_round"]))
    meta = {
        "machine": f"{os.cpu_count()} cores, CPU only",
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg()[0],
    }
    md = "\n".join([
        "# Bulk ingest against the bare embedder",
        "",
        f"Machine: {meta['machine']}. {n:,} turns of {args.conversations} LoCoMo "
        f"conversations, each observed at its session's time; all-MiniLM-L6-v2 on CPU, "
        f"batches of {BATCH}. Bare = `embed()` alone on the same texts and batches; "
        "observe_many = a fresh embedded engine (SQLite + embedded Chroma) ingesting them, "
        "timed until every vector is written. One call = the whole history in one "
        "`observe_many` call (a bulk import; bare and engine take turns going first, round "
        "by round); batch by batch = one call per batch, each waiting for its vectors, "
        "alternated with the bare model on the same batch. Free embedder = the one-call "
        "ingest with every vector computed beforehand (the write path alone). API-like = "
        f"the same vectors, each call answered after {API_WAIT * 1000:.0f} ms, as an "
        "embedding API answers: the one-call ingest's seconds against the waits alone "
        f"({row['api_waits_alone_s']:.1f} s: one wait a call of {BATCH}). "
        f"Load average (1 min) at start {meta['loadavg_start']:.2f}, "
        f"end {meta['loadavg_end']:.2f}.",
        "",
        "| round | one call: bare /s | observe_many /s | observe_many / bare | "
        "batch by batch: bare /s | observe_many /s | observe_many / bare | "
        "one call, free embedder /s | one call, API-like: observe_many s |",
        "|---|---|---|---|---|---|---|---|---|",
        *[
            f"| {i + 1} | {wb:,.0f} | {we:,.0f} | {wr:.2f}x | {b:,.0f} | {e:,.0f} | "
            f"{r:.2f}x | {f:,.0f} | {a:.2f} |"
            for i, (wb, we, wr, b, e, r, f, a) in enumerate(zip(
                row["one_call_bare_embedder_per_s"], row["one_call_observe_many_per_s"],
                row["one_call_ratio_per_round"],
                row["bare_embedder_per_s"], row["observe_many_per_s"], row["ratio_per_round"],
                row["free_embedder_observe_many_per_s"], row["api_observe_many_s"],
                strict=True))
        ],
        "",
        f"Median ratio: one call {row['one_call_ratio_median']:.2f}x, batch by batch "
        f"{row['ratio_median']:.2f}x; API-like: the waits are "
        f"{float(np.median(row['api_ratio_per_round'])):.2f}x of the ingest.",
        "",
        f"The bare model at {SMALL_BATCH} texts a call, the same texts: "
        + ", ".join(f"{x:,.0f}" for x in row["bare_embedder_small_batch_per_s"])
        + f"/s by round. A call of {BATCH} wastes less on padding: the model sorts what "
        "it is handed by length before it batches it.",
        "",
    ])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest.json").write_text(json.dumps({"meta": meta, "row": row}, indent=2))
    (args.out / "ingest.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
