"""SIGKILL at a random point of a random mix of observe, forget, consolidate, sweep, gc
and repair, on SQLite or Redis (each with embedded Chroma), then check the store.

`python -m tests.integration.crash_matrix worker ...` is the process that gets killed: it
prints "ack <op> <id>" after each call returns. `kill_once` runs one, kills it after a
seeded number of acknowledgements and checks: every acknowledged observe is stored
(forget only ever erases texts of its own vocabulary, and gc deletes nothing under this
policy), SQLite's integrity check passes, the repair flag is set exactly when records
lack vectors (by id, not by count), and the next maintenance run leaves none lacking.
The test (test_crash_matrix.py) runs a few kills; scripts/crash-soak runs many.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NS = "crash"
OPS = ["observe"] * 6 + ["forget", "consolidate", "sweep", "gc", "repair"]
KEPT = ["parcel", "flat", "neighbour", "garden", "boiler", "invoice", "piano", "ferry"]
SCRATCH = ["zebra", "quartz", "violin", "tundra", "saffron", "glacier", "cobalt", "lagoon"]
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def policy() -> Any:
    from reverie.core import Policy

    # gc deletes nothing (no memory decays below 0): a missing record is a lost write
    return Policy(gc_salience=0.0)


def open_at(home: str, url: str, prefix: str, clock: Any, embedder: Any = None) -> Any:
    from reverie.integrations import open_engine
    from reverie.integrations.redis.store import RedisStore

    store = RedisStore.from_url(url, prefix=prefix) if url != "-" else None
    return open_engine(home, store=store, embedder=embedder, namespace=NS, clock=clock,
                       policy=policy())


def worker(home: str, url: str, prefix: str, seed: int) -> None:
    from reverie.core import ManualClock

    rng = random.Random(seed)
    clock = ManualClock(T0)
    engine = open_at(home, url, prefix, clock)
    scratch: list[str] = []
    print("ready", flush=True)
    n = 0
    while True:
        op = rng.choice(OPS)
        n += 1
        clock.advance(days=rng.choice([0, 1, 5, 30]))
        if op == "observe":
            keep = rng.random() < 0.7
            words = KEPT if keep else SCRATCH
            text = f"{' '.join(rng.sample(words, 3))} entry {seed}-{n}"
            m = engine.observe(text)
            if not keep:
                scratch.append(m.id)
            print(f"ack observe {m.id} {'kept' if keep else 'scratch'}", flush=True)
        elif op == "forget" and scratch:
            victim = scratch.pop(rng.randrange(len(scratch)))
            engine.forget(victim)
            print(f"ack forget {victim}", flush=True)
        elif op == "consolidate":
            engine.consolidate()
            print("ack consolidate -", flush=True)
        elif op == "sweep":
            engine.sweep(NS)
            print("ack sweep -", flush=True)
        elif op == "gc":
            engine.gc(NS)
            print("ack gc -", flush=True)
        elif op == "repair":
            engine.repair(namespace=NS)
            print("ack repair -", flush=True)


@dataclass
class Outcome:
    acks: int
    last_op: str
    lost: list[str] = field(default_factory=list)
    integrity: str = "ok"
    lacking: int = 0
    flagged: bool = False
    lacking_after_gc: int = 0


def kill_once(home: Path, url: str, prefix: str, seed: int, embedder: Any) -> Outcome:
    """One kill at a seeded point, then the checks (see the module docstring)."""
    from reverie.core import ManualClock

    rng = random.Random(seed * 7919)
    stop_after = rng.randint(2, 30)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.crash_matrix", "worker", str(home), url,
         prefix, str(seed)],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    kept: list[str] = []
    acks = 0
    last = "-"
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", "the worker did not start"
        for line in proc.stdout:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "ack":
                acks += 1
                last = parts[1]
                if parts[1] == "observe" and parts[3] == "kept":
                    kept.append(parts[2])
            if acks >= stop_after:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    out = Outcome(acks=acks, last_op=last)
    if url == "-":
        with sqlite3.connect(f"file:{home / 'memory.db'}?mode=ro", uri=True) as conn:
            out.integrity = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    engine = open_at(str(home), url, prefix, ManualClock(T0), embedder)
    try:
        stored = {m.id for m in engine.memories()}
        out.lost = [i for i in kept if i not in stored]
        out.lacking = len(stored - engine.vectors.ids(NS))
        out.flagged = bool(engine.stats()["vector_repair_needed"])
        engine.gc(NS)
        out.lacking_after_gc = len({m.id for m in engine.memories()} - engine.vectors.ids(NS))
    finally:
        engine.close()
    return out


def check(outcome: Outcome) -> list[str]:
    """What is wrong with one kill's outcome, one sentence each."""
    problems = []
    if outcome.lost:
        problems.append(f"{len(outcome.lost)} acknowledged observes lost")
    if outcome.integrity != "ok":
        problems.append(f"integrity check: {outcome.integrity}")
    if outcome.flagged != (outcome.lacking > 0):
        problems.append(f"repair flag {outcome.flagged} with {outcome.lacking} records lacking")
    if outcome.lacking_after_gc:
        problems.append(f"{outcome.lacking_after_gc} records still lack vectors after gc")
    return problems


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
