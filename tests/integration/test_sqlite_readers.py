"""Reads beside a write, on the SQLite store and through an engine on it: a recall in one
thread must not wait for another thread's write (a bulk ingest's chunk, a REM cycle's
batch), and must see what was committed, never a write still open. The thread inside the
write sees its own writes.

The threads are ordered by events, not by time; a wait that never ends (a read that
waits for the write) fails the test after `HANG` seconds instead of hanging the suite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reverie.core import BackendUnavailable
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory

HANG = 30.0  # seconds: far beyond any read here; only a read blocked by the write reaches it


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Event, list[Any]]:
    """Run `fn` on a thread of its own; the event is set when it returned or raised."""
    done, out = threading.Event(), []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:  # handed to the test
            out.append(e)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, out


def test_a_read_in_another_thread_does_not_wait_for_an_open_write(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        old = make_memory(namespace="ns", text="green tea in Lisbon")
        store.commit(WriteBatch("ns", (old,)))
        new = make_memory(namespace="ns", text="black tea in Porto")
        inside, release = threading.Event(), threading.Event()
        own: list[list[str]] = []

        def writer() -> None:
            with store.together():
                store.commit(WriteBatch("ns", (new,)))
                inside.set()
                release.wait(HANG)
                own.append([h.id for h in store.search("ns", "tea", 5)])

        done_writing, failed = _in_thread(writer)
        assert inside.wait(HANG)
        try:
            done, seen = _in_thread(lambda: (
                store.get("ns", new.id),
                sorted(store.get_many("ns", [old.id, new.id])),
                [h.id for h in store.search("ns", "tea", 5)],
                store.count("ns")["total"],
            ))
            assert done.wait(HANG), "a read waited for another thread's open write"
        finally:
            release.set()
        # what was committed, and nothing of the write still open
        assert seen == [(None, [old.id], [old.id], 1)]
        assert done_writing.wait(HANG) and failed == [None]
        assert sorted(own[0]) == sorted([old.id, new.id])  # the writer saw its own write
        assert store.get("ns", new.id) == new  # committed: every reader sees it
        assert sorted(h.id for h in store.search("ns", "tea", 5)) == sorted([old.id, new.id])


def test_a_search_elsewhere_leaves_the_open_writes_postings_to_it(tmp_path: Path) -> None:
    """The lexical index gathers a write's changes until it commits; another thread's
    search must neither apply them through its own connection nor drop them."""
    with SQLiteStore(tmp_path / "m.db") as store:
        gathered, release = threading.Event(), threading.Event()
        batch = [make_memory(namespace="ns", text=f"jazz night number {i}") for i in range(5)]

        def writer() -> None:
            with store.together():
                for m in batch:
                    store.commit(WriteBatch("ns", (m,)))
                gathered.set()
                release.wait(HANG)

        done_writing, failed = _in_thread(writer)
        assert gathered.wait(HANG)
        try:
            done, seen = _in_thread(lambda: store.search("ns", "jazz", 10))
            assert done.wait(HANG), "a search waited for another thread's open write"
        finally:
            release.set()
        assert seen == [[]]
        assert done_writing.wait(HANG) and failed == [None]
        hits = store.search("ns", "jazz", 10)
        assert sorted(h.id for h in hits) == sorted(m.id for m in batch)
        # scored with the statistics of all five: equal texts but the number, equal scores
        assert len({round(h.score, 12) for h in hits}) == 1


def test_a_closed_store_refuses_reads_from_every_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    m = make_memory(namespace="ns", text="a walk by the river")
    store.commit(WriteBatch("ns", (m,)))
    done, seen = _in_thread(lambda: store.get("ns", m.id))  # a reader connection opens
    assert done.wait(HANG) and seen == [m]
    store.close()
    with pytest.raises(BackendUnavailable):
        store.get("ns", m.id)
    done, seen = _in_thread(lambda: store.search("ns", "river", 5))
    assert done.wait(HANG) and isinstance(seen[0], BackendUnavailable)


def test_an_engine_recalls_while_another_thread_is_inside_a_bulk_write(tmp_path: Path) -> None:
    """What a user shares an engine between threads for: an agent answering while a history
    is imported. The import is held inside its chunk's transaction (by its progress
    callback); a recall on another thread answers from what was committed before."""
    from datetime import UTC, datetime

    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    engine = open_engine(tmp_path / "home", embedder=LocalEmbedder(),
                         clock=ManualClock(datetime(2025, 3, 3, 9, 0, tzinfo=UTC)))
    try:
        engine.observe("Alice: I adopted a grey cat called Miso.", namespace="ns")
        engine.flush()
        held, release = threading.Event(), threading.Event()
        seen = 0

        def progress(_n: int) -> None:
            nonlocal seen
            seen += 1
            if seen == 3:  # the chunk's third write is done and not yet committed
                held.set()
                release.wait(HANG)

        history = [Observation(f"Bob: the {w} train to Porto leaves at nine", source=f"s{i}")
                   for i, w in enumerate(["early", "slow", "night", "last"])]
        done_importing, failed = _in_thread(
            lambda: engine.observe_many(history, namespace="ns", progress=progress))
        assert held.wait(HANG)
        try:
            done, got = _in_thread(lambda: [
                h.memory.text for h in engine.recall("What pet does Alice have?",
                                                     namespace="ns", k=5, reinforce=False)])
            assert done.wait(HANG), "a recall waited for another thread's bulk write"
        finally:
            release.set()
        assert got == [["Alice: I adopted a grey cat called Miso."]]  # nothing uncommitted
        assert done_importing.wait(HANG) and not isinstance(failed[0], BaseException)
        after = engine.recall("train to Porto", namespace="ns", k=5, reinforce=False)
        assert len([h for h in after if "Porto" in h.memory.text]) == 4
    finally:
        engine.close()
