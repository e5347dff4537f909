"""What erasing a forgotten vector from embedded Chroma's HNSW files costs a forget.

A namespace of 10,000 memories (the hashed bag-of-words embedder of benchmarks/common.py,
so building it costs no model time; Chroma's graph is persisted every 1,000 writes, so
its file holds the vectors) on the embedded default (SQLite + embedded Chroma). Then
forgets, alternating in one run:

- scrubbed (the default): the forgotten vector is overwritten by a decoy before its
  delete, and the file's copy and the bytes past its last element are rewritten after
  (integrations/chroma/scrub.py);
- baseline: the same forget with both steps turned off (what a forget did before).

Each trial forgets one memory (`forget(id)`), or 100 at once; the median times and their
ratio are printed and written to benchmarks/results/forget_scrub.{md,json}. The run also
checks the file: no forgotten vector left in it after the scrubbed forgets.

Run: python benchmarks/forget_scrub.py [--memories 10000] [--trials 15]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from common import HashEmbedder  # noqa: E402

import reverie.integrations.chroma.scrub as scrub  # noqa: E402
from reverie.integrations import open_engine  # noqa: E402

NS = "bench"
WORDS = [
    "parcel",
    "flat",
    "garden",
    "boiler",
    "invoice",
    "piano",
    "ferry",
    "zebra",
    "quartz",
    "violin",
    "tundra",
    "saffron",
    "glacier",
    "cobalt",
    "lagoon",
    "river",
    "window",
    "ladder",
    "lantern",
    "market",
    "orchard",
    "harbour",
]


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{' '.join(rng.choice(WORDS, 5))} note {i}" for i in range(n)]


def vectors_in_file(home: Path, wanted: np.ndarray) -> int:
    """Elements of the namespace's data_level0.bin within cosine 0.999 of `wanted`."""
    hits = 0
    for header in glob.glob(str(home / "vectors" / "*" / "header.bin")):
        with open(header, "rb") as f:
            _, _, _, count, size, label_at, data_at = struct.unpack("<I6Q", f.read(52))
        raw = np.fromfile(header.replace("header.bin", "data_level0.bin"), dtype=np.uint8)
        block = raw[: count * size].reshape(count, size)
        floats = block[:, data_at:label_at].copy().view(np.float32)
        hits += int((np.nan_to_num(floats @ wanted.T) > 0.999).sum())
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    embedder = HashEmbedder()
    real_blank, real_scrub = scrub.blank, scrub.scrub_collection

    def turned(on: bool) -> None:
        scrub.blank = real_blank if on else (lambda *a, **k: None)  # type: ignore[assignment]
        scrub.scrub_collection = real_scrub if on else (lambda *a, **k: {})  # type: ignore[assignment]

    times: dict[str, list[float]] = {
        "one scrubbed": [],
        "one baseline": [],
        "100 scrubbed": [],
        "100 baseline": [],
    }
    with tempfile.TemporaryDirectory(prefix="forget-scrub-") as tmp:
        home = Path(tmp) / "home"
        engine = open_engine(home, embedder=embedder, namespace=NS)
        began = time.perf_counter()
        ids = [m.id for m in engine.observe_many(texts(args.memories, 7))]
        engine.flush()
        build = time.perf_counter() - began
        pool = iter(ids[::-1])
        scrubbed_ids: list[str] = []
        for trial in range(args.trials):
            for on in (True, False) if trial % 2 == 0 else (False, True):
                turned(on)
                victim = next(pool)
                t = time.perf_counter()
                engine.forget(victim)
                times[f"one {'scrubbed' if on else 'baseline'}"].append(time.perf_counter() - t)
                if on:
                    scrubbed_ids.append(victim)
        for trial in range(max(2, args.trials // 5)):
            for on in (True, False) if trial % 2 == 0 else (False, True):
                turned(on)
                batch = [next(pool) for _ in range(100)]
                t = time.perf_counter()
                engine.forget(*batch)
                times[f"100 {'scrubbed' if on else 'baseline'}"].append(time.perf_counter() - t)
                if on:
                    scrubbed_ids.extend(batch)
        turned(True)
        wanted = embedder.embed(
            [t for t, i in zip(texts(args.memories, 7), ids, strict=True) if i in set(scrubbed_ids)]
        )
        engine.close()
        left = vectors_in_file(home, wanted)
    med = {k: statistics.median(v) for k, v in times.items()}
    result: dict[str, Any] = {
        "memories": args.memories,
        "trials": {k: len(v) for k, v in times.items()},
        "median_seconds": {k: round(v, 4) for k, v in med.items()},
        "ratio_one": round(med["one scrubbed"] / med["one baseline"], 2),
        "ratio_100": round(med["100 scrubbed"] / med["100 baseline"], 2),
        "build_seconds": round(build, 1),
        "forgotten_vectors_left_in_file": left,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared and loaded",
    }
    out = ROOT / "benchmarks" / "results"
    (out / "forget_scrub.json").write_text(json.dumps(result, indent=2) + "\n")
    s = result["median_seconds"]
    (out / "forget_scrub.md").write_text(
        "# Forget with the HNSW files scrubbed\n\n"
        f"{args.memories:,} memories in one namespace, embedded default (SQLite + embedded "
        "Chroma, graph persisted every 1,000 writes), hashed bag-of-words embedder; "
        "scrubbed forgets (a decoy written over each forgotten vector before its delete, "
        "the file's copies and its bytes past the last element rewritten after) and "
        "baseline forgets (both steps turned off) alternate in one run "
        "(`benchmarks/forget_scrub.py`)."
        f" Machine: {result['machine']}; absolute times are inflated by load, the ratios "
        "are the result.\n\n"
        "| forget | scrubbed (median s) | baseline (median s) | ratio |\n|---|---|---|---|\n"
        f"| one memory | {s['one scrubbed']} | {s['one baseline']} | {result['ratio_one']}x |\n"
        f"| 100 memories at once | {s['100 scrubbed']} | {s['100 baseline']} | "
        f"{result['ratio_100']}x |\n\n"
        f"Forgotten vectors left in `data_level0.bin` after the scrubbed forgets: {left} "
        f"(of {len(scrubbed_ids)}).\n"
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
