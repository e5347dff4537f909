"""A stopped server never hangs a call. SIGSTOP freezes a real redis-server or `chroma
run` process mid-use: it keeps its port and the kernel still accepts connections, but
nothing answers, as with a hung, swapped-out or paused server. Every public call must
then return within its `Policy.deadlines` (a typed `BackendUnavailable`, or an answer
where one can be given without the stopped server), and work again after SIGCONT.

What proves the deadline fired is the error's type (`DeadlineExceeded`), not a
measured time. Each call runs on a thread joined with a generous bound (a few deadlines
plus a margin for a loaded machine) only so that a hang fails this test with a message
instead of running into the suite's timeout."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reverie.core.errors import BackendUnavailable, DeadlineExceeded
from reverie.core.policy import Policy
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from tests.servers import ServerProcess, outcome_within, start_chroma, start_redis

pytestmark = pytest.mark.slow

POLICY = Policy(connect_seconds=2.0, store_call_seconds=2.0, index_call_seconds=3.0)
# A public call makes a few backend calls in a row, each bounded by its deadline (recall
# first waits for the vectors this engine queued, then queries); one still running after
# three of the longer deadline and a margin for a loaded machine hangs.
BOUND_S = 3 * POLICY.deadlines.index_call_seconds + 20.0

TEXTS = [
    "my sister Ana is getting married in Porto next June",
    "I adopted a grey cat called Miso",
    "the quarterly budget review moved to Thursday",
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def outcome(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """(`call()`'s result, None) or (None, the error it raised); fails the test when the
    call is still running after `BOUND_S`: it hangs."""
    return outcome_within(call, BOUND_S)


def fails_typed(call: Callable[[], Any]) -> BackendUnavailable:
    value, error = outcome(call)
    assert error is not None, f"expected BackendUnavailable, got {value!r}"
    assert isinstance(error, BackendUnavailable), f"{type(error).__name__}: {error}"
    return error


@contextmanager
def stopped(server: ServerProcess) -> Iterator[None]:
    assert server.proc is not None
    pid = server.proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_stopped_redis_fails_every_call_in_bounded_time(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    server, url = start_redis(tmp_path / "redis")
    ns = f"stop-{uuid.uuid4().hex[:8]}"
    try:
        engine = open_engine(
            tmp_path / "home",
            store=url,
            vectors=tmp_path / "vectors",
            embedder=embedder,
            namespace=ns,
            policy=POLICY,
        )
        try:
            ids = [engine.observe(t).id for t in TEXTS]
            assert (
                engine.recall("who is getting married?", k=1, reinforce=False)[0].memory.id
                == ids[0]
            )
            with stopped(server):
                for call in (
                    lambda: engine.observe("the office moved to the fourth floor"),
                    lambda: engine.recall("grey cat", k=2, reinforce=False),
                    lambda: engine.stats(),
                    lambda: engine.forget(ids[2]),
                ):
                    error = fails_typed(call)
                    assert isinstance(error, DeadlineExceeded), f"{type(error).__name__}: {error}"
            # the server answers again: so does every call
            new = engine.observe("we booked the venue in Porto for the wedding").id
            hits = engine.recall("grey cat", k=1, reinforce=False)
            assert hits[0].memory.id == ids[1]
            assert engine.stats()["total"] >= 3
            assert engine.forget(new) >= 1
        finally:
            outcome(engine.close)
    finally:
        server.stop()


def test_a_stopped_chroma_server_never_hangs_and_recall_answers_lexically(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    """A SQLite store with a Chroma server as its vector index: while the server is
    stopped, observe of a plain statement is acknowledged (its record is committed, its
    vector fails and is flagged for repair), recall answers from the lexical index, and
    the calls that need the index fail typed: observe of a text with a change word (its
    update check reads the nearest traces), stats' vector count, forget's vector
    deletes. After SIGCONT, repair indexes what was missed and dense recall finds it."""
    server, url = start_chroma(tmp_path / "chroma" / "data")
    ns = f"stop-{uuid.uuid4().hex[:8]}"
    try:
        engine = open_engine(
            tmp_path / "home",
            store=tmp_path / "memory.db",
            vectors=url,
            embedder=embedder,
            namespace=ns,
            policy=POLICY,
        )
        try:
            ids = [engine.observe(t).id for t in TEXTS]
            assert (
                engine.recall("who is getting married?", k=1, reinforce=False)[0].memory.id
                == ids[0]
            )
            with stopped(server):
                observed, error = outcome(lambda: engine.observe("Miso the cat likes tuna"))
                assert error is None, f"{type(error).__name__}: {error}"
                result, error = outcome(lambda: engine.recall("Miso tuna", k=2, reinforce=False))
                assert error is None, f"{type(error).__name__}: {error}"
                assert result[0].memory.id == observed.id  # by its words: lexically
                error = fails_typed(lambda: engine.observe("we moved the budget review to Friday"))
                assert isinstance(error, DeadlineExceeded), f"{type(error).__name__}: {error}"
                fails_typed(engine.stats)
                fails_typed(lambda: engine.forget(ids[2]))
            stats = engine.stats()
            assert stats["vector_repair_needed"] is True  # the vector observe could not write
            # the forget that failed on the index had erased the record (journaled first)
            assert ids[2] not in {m.id for m in engine.memories()}
            engine.repair()
            assert engine.stats()["vector_repair_needed"] is False
            assert ids[2] not in engine.vectors.ids(ns)  # and its vector is gone now
            vec = embedder.embed(["Miso the cat likes tuna"])[0]
            assert observed.id in {h.id for h in engine.vectors.query(ns, vec, 3)}
            assert (
                engine.recall("who is getting married?", k=1, reinforce=False)[0].memory.id
                == ids[0]
            )
        finally:
            outcome(engine.close)
    finally:
        server.stop()
