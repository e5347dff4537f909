"""SIGKILL at a random point of a random mix of observe, forget, consolidate, sweep, gc
and repair, on SQLite or Redis (each with embedded Chroma), then check the store.

Loading the embedding model is most of a process's start, so one server process
(`python -m tests.integration.crash_matrix serve`, driven by `CrashServer`) loads it once
and forks, for every kill, a worker and then a checker:

- the worker opens the store and runs seeded random operations, writing "begin <op>"
  before each call and "ack <op> <id>" after it returns; the server SIGKILLs it after a
  seeded number of acknowledgements plus a seeded delay, so the kill lands anywhere in
  the next call (or between two);
- the checker opens the store again, as the next process would, and checks: every
  acknowledged observe of a kept text is stored (forget only ever erases texts of its
  own vocabulary, and gc deletes nothing under this policy); every acknowledged forget
  stays forgotten; the store is intact (SQLite's and Chroma's `integrity_check`, or on
  Redis every secondary index agreeing with the records); the repair flag is set exactly
  when records lack vectors (by id, not by count); and the next maintenance run leaves
  none lacking.

A worker or checker that writes nothing for `SILENT_SECONDS` is hung: it prints every
thread's stack to stderr and is killed, and the kill is reported as failed.

The server itself never opens a store, a Chroma client or a thread pool, so each fork
starts from a clean process. test_crash_matrix.py runs a few kills; scripts/crash-soak
runs many.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NS = "crash"
OPS = ["observe"] * 6 + ["forget", "consolidate", "sweep", "gc", "repair"]
KEPT = ["parcel", "flat", "neighbour", "garden", "boiler", "invoice", "piano", "ferry"]
SCRATCH = ["zebra", "quartz", "violin", "tundra", "saffron", "glacier", "cobalt", "lagoon"]
T0 = datetime(2025, 1, 1, tzinfo=UTC)
MAX_ACKS = 30  # a kill comes after 1..MAX_ACKS acknowledged calls
MAX_DELAY = 0.25  # ... and 0..MAX_DELAY seconds into what follows
SILENT_SECONDS = 120.0  # a child silent this long is hung: its stacks go to stderr


def policy() -> Any:
    from reverie.core import Policy

    # gc deletes nothing (no memory decays below 0): a missing record is a lost write
    return Policy(gc_salience=0.0)


def open_at(home: str, url: str, prefix: str, clock: Any, embedder: Any) -> Any:
    from reverie.integrations import open_engine
    from reverie.integrations.redis.store import RedisStore

    store = RedisStore.from_url(url, prefix=prefix) if url != "-" else None
    return open_engine(
        home, store=store, embedder=embedder, namespace=NS, clock=clock, policy=policy()
    )


def worker(home: str, url: str, prefix: str, seed: int, embedder: Any, out: int) -> None:
    """Runs until killed; every line goes to the pipe `out` in one write."""
    from reverie.core import ManualClock

    def say(line: str) -> None:
        os.write(out, (line + "\n").encode())

    rng = random.Random(seed)
    clock = ManualClock(T0)
    engine = open_at(home, url, prefix, clock, embedder)
    scratch: list[str] = []
    say("ready")
    n = 0
    while True:
        op = rng.choice(OPS)
        n += 1
        clock.advance(days=rng.choice([0, 1, 5, 30]))
        if op == "forget" and not scratch:
            continue
        say(f"begin {op}")
        if op == "observe":
            keep = rng.random() < 0.7
            words = KEPT if keep else SCRATCH
            text = f"{' '.join(rng.sample(words, 3))} entry {seed}-{n}"
            m = engine.observe(text)
            if not keep:
                scratch.append(m.id)
            say(f"ack observe {m.id} {'kept' if keep else 'scratch'}")
        elif op == "forget":
            victim = scratch.pop(rng.randrange(len(scratch)))
            engine.forget(victim)
            say(f"ack forget {victim}")
        elif op == "consolidate":
            engine.consolidate()
            say("ack consolidate -")
        elif op == "sweep":
            engine.sweep(NS)
            say("ack sweep -")
        elif op == "gc":
            engine.gc(NS)
            say("ack gc -")
        elif op == "repair":
            engine.repair(namespace=NS)
            say("ack repair -")


@dataclass
class Outcome:
    seed: int
    acks: int = 0  # calls that returned before the kill
    writes: int = 0  # of which observes and forgets (acknowledged writes)
    killed_in: str = "-"  # the call running when the kill landed ("between": none)
    lost: list[str] = field(default_factory=list)  # acknowledged kept observes missing
    unforgotten: list[str] = field(default_factory=list)  # acknowledged forgets undone
    integrity: str = "ok"
    lacking: int = 0  # records without a vector on the next open
    flagged: bool = False  # vector_repair_needed on the next open
    lacking_after_gc: int = 0
    error: str = ""  # the worker or the checker failed on its own


def _integrity(path: Path) -> str:
    """SQLite's own check, on a read-write connection: the first to open a file after a
    kill recovers its WAL, which a read-only one may not do."""
    if not path.exists():
        return "ok"
    conn = sqlite3.connect(path, timeout=30.0)
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    return "ok" if rows == ["ok"] else f"{path.name}: {'; '.join(rows[:3])}"


def _check(
    home: Path,
    url: str,
    prefix: str,
    kept: list[str],
    forgotten: list[str],
    embedder: Any,
    out: Outcome,
) -> None:
    """The next process's view of the store (see the module docstring)."""
    from reverie.core import ManualClock

    found = [_integrity(home / "memory.db")] if url == "-" else []
    found += [_integrity(p) for p in home.rglob("chroma.sqlite3")]
    engine = open_at(str(home), url, prefix, ManualClock(T0), embedder)
    try:
        if url != "-":
            from tests.integration.redis_consistency import index_problems

            found += index_problems(engine.store.client, NS, prefix) or ["ok"]
        out.integrity = "; ".join(p for p in found if p != "ok") or "ok"
        stored = {m.id for m in engine.memories()}
        out.lost = [i for i in kept if i not in stored]
        out.unforgotten = [i for i in forgotten if i in stored]
        out.lacking = len(stored - engine.vectors.ids(NS))
        out.flagged = bool(engine.stats()["vector_repair_needed"])
        engine.gc(NS)
        out.lacking_after_gc = len({m.id for m in engine.memories()} - engine.vectors.ids(NS))
        if url != "-":
            for ns in engine.store.namespaces():
                engine.store.delete_namespace(ns)
    finally:
        engine.close()


class Hung(Exception):
    """A child wrote nothing for `SILENT_SECONDS`."""


def _lines(fd: int, pid: int) -> Iterator[str]:
    """Lines read from `fd` until its writer is gone. A child that stays silent for
    `SILENT_SECONDS` is hung: it is made to print every thread's stack (see `_fork`),
    killed, and `Hung` is raised, so a hang is reported with where it hung instead of
    stalling the run."""
    buf = b""
    while True:
        ready, _, _ = select.select([fd], [], [], SILENT_SECONDS)
        if not ready:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
                time.sleep(1.0)
                os.kill(pid, signal.SIGKILL)
            raise Hung(f"silent for {SILENT_SECONDS:g} s (its stacks are on stderr)")
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        buf += chunk
        *done, buf = buf.split(b"\n")
        yield from (d.decode() for d in done)


def _fork(body: Any) -> tuple[int, int]:
    """(pid, read end) of a child running `body(write end)`; the child never returns."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        _private_progress_lock()
        code = 0
        try:
            body(w)
        except BaseException as e:
            os.write(w, f"error {type(e).__name__}: {e}\n".replace("\n", " ").encode() + b"\n")
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _private_progress_lock() -> None:
    """Every SentenceTransformer.encode builds a (hidden) tqdm bar, which takes tqdm's
    lock; by default that lock includes a semaphore shared by every process forked after
    it was made. A worker killed while holding it would leave every later fork (the
    checker, the next workers) waiting on it forever. Each process gets its own lock,
    as separately started processes would have."""
    from tqdm import std

    std.tqdm.monitor_interval = 0  # no monitor thread to hold the lock across a fork
    std.tqdm.set_lock(threading.RLock())


def kill_once(home: Path, url: str, prefix: str, seed: int, embedder: Any) -> Outcome:
    """One worker killed at a seeded point, then the checks; called in the server."""
    rng = random.Random(seed * 7919)
    stop_after = rng.randint(1, MAX_ACKS)
    delay = rng.uniform(0.0, MAX_DELAY)
    out = Outcome(seed=seed)
    kept: list[str] = []
    forgotten: list[str] = []
    last = ""

    def read(line: str) -> None:
        nonlocal last
        parts = line.split()
        if not parts:
            return
        if parts[0] == "error":
            out.error = line
        elif parts[0] == "ack":
            out.acks += 1
            if parts[1] == "observe":
                out.writes += 1
                if parts[3] == "kept":
                    kept.append(parts[2])
            elif parts[1] == "forget":
                out.writes += 1
                forgotten.append(parts[2])
        if parts[0] in ("begin", "ack"):
            last = line

    pid, r = _fork(lambda w: worker(str(home), url, prefix, seed, embedder, w))
    lines = _lines(r, pid)
    try:
        for line in lines:
            read(line)
            if out.acks >= stop_after or out.error:
                break
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for line in lines:  # what it wrote before it died was acknowledged too
            read(line)
    except Hung as e:
        with contextlib.suppress(ChildProcessError):  # (reaped already if killed above)
            os.waitpid(pid, 0)
        out.error = f"the worker hung after {last!r}: {e}"
    finally:
        os.close(r)
    out.killed_in = last.split()[1] if last.startswith("begin") else "between"
    if out.error:
        return out

    def checker(w: int) -> None:
        _check(home, url, prefix, kept, forgotten, embedder, out)
        os.write(w, (json.dumps(asdict(out)) + "\n").encode())

    pid, r = _fork(checker)
    try:
        said = list(_lines(r, pid))
    except Hung as e:
        said = [f"the checker hung: {e}"]
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    for line in said:
        if line.startswith("{"):
            return Outcome(**json.loads(line))
    out.error = " ".join(said) or "the checker died without a word"
    return out


def check(outcome: Outcome) -> list[str]:
    """What is wrong with one kill's outcome, one sentence each."""
    problems = []
    if outcome.error:
        problems.append(outcome.error)
    if outcome.lost:
        problems.append(f"{len(outcome.lost)} acknowledged observes lost")
    if outcome.unforgotten:
        problems.append(f"{len(outcome.unforgotten)} acknowledged forgets undone")
    if outcome.integrity != "ok":
        problems.append(f"integrity check: {outcome.integrity}")
    if outcome.flagged != (outcome.lacking > 0):
        problems.append(f"repair flag {outcome.flagged} with {outcome.lacking} records lacking")
    if outcome.lacking_after_gc:
        problems.append(f"{outcome.lacking_after_gc} records still lack vectors after gc")
    return problems


class CrashServer:
    """The forking server as a context manager: `kill_once` sends it one kill's
    parameters and returns its `Outcome`. `nice` lowers its priority (a soak shares
    the machine)."""

    def __init__(self, nice: int = 0) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.crash_matrix", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
            preexec_fn=(lambda: os.nice(nice)) if nice else None,
        )

    def kill_once(self, home: Path, url: str, prefix: str, seed: int) -> Outcome:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request = {"home": str(home), "url": url, "prefix": prefix, "seed": seed}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        for line in self._proc.stdout:
            if line.startswith("outcome "):
                return Outcome(**json.loads(line[len("outcome ") :]))
        raise RuntimeError(f"the crash server exited with {self._proc.wait()}")

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=60)

    def __enter__(self) -> CrashServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self._proc.poll() is None:
            self._proc.kill()
        self.close()


def serve() -> None:
    """Load the model once (one torch thread and no tqdm monitor: forked children
    inherit no pool and no lock held by another thread), then answer one request line
    with one outcome line until stdin closes."""
    import torch

    from reverie.integrations.embedders import LocalEmbedder

    torch.set_num_threads(1)
    _private_progress_lock()
    embedder = LocalEmbedder().load()
    embedder.embed(["warm"])
    for line in sys.stdin:
        req = json.loads(line)
        home = Path(req["home"])
        home.mkdir(parents=True, exist_ok=True)
        out = kill_once(home, req["url"], req["prefix"], int(req["seed"]), embedder)
        print("outcome " + json.dumps(asdict(out)), flush=True)


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve()
