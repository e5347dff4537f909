"""Shared parts for the LangChain / LangGraph adapter tests: a real engine (SQLite file,
embedded Chroma, the real MiniLM model loaded once per process) on a manual clock."""

from __future__ import annotations

import itertools
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.integrations import open_engine

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def real_engine(home: Path, namespace: str = "default", **kwargs: object) -> MemoryEngine:
    return open_engine(home, clock=ManualClock(T0), namespace=namespace, **kwargs)  # type: ignore[arg-type]


def deterministic_engine(home: Path, namespace: str = "default") -> MemoryEngine:
    """A real engine whose ids count up (m0001, m0002, ...): tool answers that carry
    memory ids then replay byte for byte inside recorded LLM requests."""
    from reverie.integrations.chroma.index import ChromaIndex
    from reverie.integrations.embedders import LocalEmbedder
    from reverie.integrations.sqlite.store import SQLiteStore
    from reverie.integrations.tokens import tiktoken_counter

    counter = itertools.count(1)
    home.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(home / "memory.db")
    return MemoryEngine(
        store, store, ChromaIndex.embedded(home / "vectors"), LocalEmbedder(),
        clock=ManualClock(T0), default_namespace=namespace,
        token_counter=tiktoken_counter(), id_factory=lambda: f"m{next(counter):04d}",
    )


def clock(engine: MemoryEngine) -> ManualClock:
    assert isinstance(engine.clock, ManualClock)
    return engine.clock


def import_without(module: str, blocked: str) -> subprocess.CompletedProcess[str]:
    """Import `module` in a fresh interpreter where `blocked` cannot be imported."""
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "from reverie.core.errors import MissingExtra\n"
        "try:\n"
        f"    import {module}\n"
        "except MissingExtra as e:\n"
        "    print('MissingExtra', e.extra, e)\n"
        "else:\n"
        "    print('imported')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )


class InFlight:
    """Wraps an engine method to record, per call, when it ran (worker-thread side):
    calls that overlap in time show async callers really run concurrently, whatever the
    machine's load (wall-clock speed-ups on 2 shared cores are not a stable signal)."""

    def __init__(self, engine: object, method: str = "recall") -> None:
        import threading
        import time

        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._running = 0
        inner = getattr(engine, method)

        def wrapped(*args: object, **kwargs: object) -> object:
            t0 = time.perf_counter()
            with self._lock:
                self._running += 1
            try:
                return inner(*args, **kwargs)
            finally:
                with self._lock:
                    self._running -= 1
                    self.spans.append((t0, time.perf_counter()))

        setattr(engine, method, wrapped)

    def in_flight(self) -> int:
        """Calls running now."""
        with self._lock:
            return self._running

    def max_concurrent(self) -> int:
        events = sorted([(s, 1) for s, _ in self.spans] + [(e, -1) for _, e in self.spans])
        best = cur = 0
        for _, d in events:
            cur += d
            best = max(best, cur)
        return best

    def busy_sum(self) -> float:
        return sum(e - s for s, e in self.spans)
