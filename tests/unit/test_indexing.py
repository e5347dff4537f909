"""Write-behind vector indexing (core/indexing.py and its use in observe).

A user relies on: observe returns once the record is stored; the same engine's recall
finds what it just observed through the vector index; vectors queued together are
written in few calls, in order; a correction still finds a target whose vector is still
queued, and recall then returns the correction, never the retired text; close() writes
what was queued; a failing index never loses a record and flags the index for repair; a
full queue makes observe wait, never drop."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from reverie.core import ManualClock, Policy
from reverie.core.engine import MemoryEngine
from reverie.core.errors import BackendUnavailable
from reverie.core.indexing import IndexWrite, IndexWriter, merge
from reverie.core.policy import UpdatePolicy
from reverie.core.ports import Vector, VectorHit, VectorItem
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.servers import wait_until
from tests.unit.conftest import T0


class GatedIndex(InMemoryVectorIndex):
    """An index whose writes wait for the test's gate, counted (to hold vectors queued)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.upserts: list[list[str]] = []
        self.fail_next = 0

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        self.gate.wait(timeout=30)
        if self.fail_next > 0:
            self.fail_next -= 1
            raise BackendUnavailable("the vector index went away for a moment")
        self.upserts.append([i.id for i in items])
        super().upsert(namespace, items)


WORDS = ["tea", "kite", "oak", "river", "train", "salt", "rain", "park", "boat", "lamp"]


def engine_with(index: GatedIndex, policy: Policy | None = None) -> MemoryEngine:
    store = InMemoryStore()
    return MemoryEngine(
        store, store, index, BagOfWordsEmbedder(), policy=policy or Policy(),
        clock=ManualClock(T0),
    )


def item(i: str, status: str = "active") -> VectorItem:
    return VectorItem(i, np.ones(4, dtype=np.float32), {"status": status, "kind": "episodic"})


def test_observe_returns_before_the_index_write_and_recall_waits_for_it() -> None:
    index = GatedIndex()
    engine = engine_with(index)
    index.gate.clear()
    m = engine.observe("the red kite nests in the old oak")  # returns: the record is stored
    assert engine.store.get("default", m.id) is not None
    assert index.ids("default") == set()  # its vector is still queued
    threading.Timer(0.2, index.gate.set).start()
    hits = engine.recall("red kite", reinforce=False)  # waits for this engine's vectors
    # without the wait the index would have been empty: no cosine for it (dense 0). With
    # it, bag of words: query (red, kite), text (the x2, red, kite, nests, in, old, oak):
    # dot 2, norms sqrt(2) and sqrt(4 + 6), cosine 2 / sqrt(20) = 0.4472
    assert hits[0].id == m.id
    assert hits[0].explanation.dense == pytest.approx(2 / 20**0.5, abs=1e-6)
    engine.close()


def test_vectors_queued_together_are_written_in_few_calls_in_order() -> None:
    index = GatedIndex()
    engine = engine_with(index)
    index.gate.clear()
    first = engine.observe("alpha apples are crisp")  # its write goes in flight, then waits
    wait_until(lambda: not engine._indexer.backlog, "the writer to take the first vector")
    rest = [engine.observe(f"note number {i} about topic {i}") for i in range(10)]
    index.gate.set()
    engine.flush()
    written = [i for call in index.upserts for i in call]
    assert written == [first.id] + [m.id for m in rest]  # every vector once, in order
    assert len(index.upserts) == 2  # the first alone, the ten queued behind it in one call
    assert engine.stats()["vectors"] == 11
    engine.close()


def test_an_update_finds_a_target_still_queued_and_recall_skips_the_retired_one() -> None:
    index = GatedIndex()
    engine = engine_with(index)
    index.gate.clear()
    old = engine.observe("I live in Berlin, close to the big park")
    threading.Timer(0.2, index.gate.set).start()
    new = engine.observe("Actually I live in Lisbon now, close to the big park")
    assert engine.get(old.id).superseded_by == new.id
    engine.flush()
    # both vectors are indexed; the index keeps no status, the records decide
    assert index.ids("default") == {old.id, new.id}
    hits = engine.recall("I live in Berlin, close to the big park", k=5).hits
    assert [h.memory.id for h in hits] == [new.id]
    engine.close()


def test_an_update_finds_a_target_still_queued_beyond_the_recent_turns() -> None:
    """Which earlier turn an update links to must not hang on how far the writer thread
    has got: with the recent turns kept in memory cut to one, the old statement is found
    only through the index, while its vector is still queued."""
    index = GatedIndex()
    engine = engine_with(index, Policy(updates=UpdatePolicy(recent_turns=1)))
    index.gate.clear()
    old = engine.observe("I live in Berlin, close to the big park")
    for text in ("the soup needs more salt", "trains were late again", "rain all day"):
        engine.observe(text)
    assert index.ids("default") == set()  # nothing written yet
    new = engine.observe("Actually I live in Lisbon now, close to the big park")
    index.gate.set()  # (reads wait for the queue)
    assert engine.get(old.id).superseded_by == new.id
    engine.close()


class LandsDuringQuery(GatedIndex):
    """The queued write lands while a search's query is running: the query answers from
    the index as it was, and the write is out of the queue by the time it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.engine: MemoryEngine | None = None
        self.armed = False

    def query(
        self, namespace: str, vector: Vector, k: int,
        where: Mapping[str, str | int | float | bool] | None = None,
    ) -> list[VectorHit]:
        hits = super().query(namespace, vector, k, where)
        if self.armed:
            self.armed = False
            self.gate.set()
            assert self.engine is not None
            writer = self.engine._ctx.indexer
            wait_until(lambda: not writer.unwritten(namespace), "the write to land",
                       interval=0.01)
        return hits


def test_an_update_finds_a_target_whose_write_lands_during_the_search() -> None:
    """A write that lands while the search's query runs is in neither the query's answer
    nor, afterwards, the queue: the queue is read before the query, so it is found."""
    index = LandsDuringQuery()
    engine = engine_with(index, Policy(updates=UpdatePolicy(recent_turns=1)))
    index.engine = engine
    index.gate.clear()
    old = engine.observe("I live in Berlin, close to the big park")
    engine.observe("the soup needs more salt")  # the old turn leaves the recent ones
    index.armed = True
    new = engine.observe("Actually I live in Lisbon now, close to the big park")
    assert not index.armed  # the search asked the index
    assert engine.get(old.id).superseded_by == new.id
    engine.close()


def test_a_writes_search_finds_the_same_neighbours_queued_or_written() -> None:
    """The index's top k plus the unwritten vectors, cut to k, is the drained index's top
    k: the same neighbours (and cosines) whichever part of the queue has been written."""
    rng = np.random.default_rng(7)
    index = GatedIndex()
    engine = engine_with(index)
    texts = [f"note {i} " + " ".join(rng.choice(WORDS, size=4)) for i in range(40)]
    for t in texts[:25]:
        engine.observe(t)
    engine.flush()  # 25 in the index
    index.gate.clear()
    for t in texts[25:]:
        engine.observe(t)  # 15 queued or in flight
    versions = engine._writes.versions
    queries = [engine._ctx.embed([" ".join(rng.choice(WORDS, size=3))])[0] for _ in range(20)]
    queued = [versions.near("default", q, (), (), ask=True, floor=0.0) for q in queries]
    index.gate.set()
    engine.flush()
    drained = [versions.near("default", q, (), (), ask=True, floor=0.0) for q in queries]
    for a, b in zip(queued, drained, strict=True):
        # the same k cosines; which of two tied texts fills the last place may differ
        assert sorted(a.values()) == pytest.approx(sorted(b.values()), abs=1e-5)
        last = min(b.values())
        assert {k for k, v in a.items() if v > last + 1e-5} == {
            k for k, v in b.items() if v > last + 1e-5
        }
    assert sum(len(x) for x in drained) == 8 * len(queries)  # k = 8 found each time
    engine.close()


def test_unwritten_lists_the_queued_and_in_flight_vectors_of_a_namespace() -> None:
    gate = threading.Event()
    started = threading.Event()

    def apply(ns: str, ups: Sequence[VectorItem]) -> None:
        started.set()
        gate.wait(timeout=30)

    writer = IndexWriter(apply, capacity=100, retries=0)
    writer.submit("a", [item("x")])
    assert started.wait(timeout=10)  # x is in flight, held there
    writer.submit("a", [item("y"), item("z")])
    writer.submit("b", [item("w")])
    def ids(ns: str) -> list[str]:
        return sorted(i.id for w in writer.unwritten(ns) for i in w.upserts)

    assert ids("a") == ["x", "y", "z"]
    assert ids("b") == ["w"]
    assert ids("c") == []
    # each write's vectors as unit rows, for the search: (1, 1, 1, 1) / 2
    assert np.allclose(np.vstack([w.units for w in writer.unwritten("a")]), 0.5)
    gate.set()
    writer.flush()
    assert writer.unwritten("a") == writer.unwritten("b") == []
    writer.close()


def test_close_writes_what_was_queued() -> None:
    index = GatedIndex()
    engine = engine_with(index)
    index.gate.clear()
    ids = [engine.observe(f"queued memory {i} of many").id for i in range(5)]
    threading.Timer(0.2, index.gate.set).start()
    engine.close()
    assert index.ids("default") == set(ids)


def test_a_failing_index_keeps_the_record_and_flags_repair() -> None:
    index = GatedIndex()
    engine = engine_with(index, Policy(index_retries=1))
    index.fail_next = 2  # the first try and its one retry
    m = engine.observe("the quarterly review moved to Thursday")
    stats = engine.stats()  # waits for the writer, which gave up
    assert stats["total"] == 1 and stats["vectors"] == 0
    assert stats["vector_repair_needed"] is True
    assert len(engine._indexer.failed) == 1
    assert engine.repair().indexed == 1
    assert engine.recall("quarterly review", reinforce=False)[0].id == m.id
    engine.close()


def test_a_transient_failure_is_retried() -> None:
    index = GatedIndex()
    engine = engine_with(index, Policy(index_retries=2))
    index.fail_next = 1
    engine.observe("the office wifi password rotates monthly")
    stats = engine.stats()
    assert stats["vectors"] == 1 and stats["vector_repair_needed"] is False
    engine.close()


def test_sync_policy_writes_before_observe_returns() -> None:
    index = GatedIndex()
    engine = engine_with(index, Policy(index_async=False))
    m = engine.observe("Bruno prefers window seats")
    assert index.ids("default") == {m.id}  # read directly, no flush
    assert engine._indexer.calls == 0
    engine.close()


def test_a_full_queue_makes_the_caller_wait_and_nothing_is_lost() -> None:
    applied: list[list[str]] = []
    gate = threading.Event()

    def apply(ns: str, ups: Sequence[VectorItem]) -> None:
        gate.wait(timeout=30)
        applied.append([i.id for i in ups])

    writer = IndexWriter(apply, capacity=2, retries=0)
    writer.submit("ns", [item("a")])  # taken by the thread, waits at the gate
    writer.submit("ns", [item("b"), item("c")])  # fills the queue
    done = threading.Event()

    def third() -> None:
        writer.submit("ns", [item("d")])
        done.set()

    t = threading.Thread(target=third)
    t.start()
    assert not done.wait(0.2)  # blocked: the queue holds 2 of capacity 2
    gate.set()
    t.join(timeout=30)
    writer.flush()
    assert [i for call in applied for i in call] == ["a", "b", "c", "d"]
    writer.close()


def test_flush_of_one_namespace_does_not_wait_for_another() -> None:
    gate = threading.Event()

    def apply(ns: str, ups: Sequence[VectorItem]) -> None:
        if ns == "slow":
            gate.wait(timeout=30)

    writer = IndexWriter(apply, capacity=100, retries=0)
    writer.submit("slow", [item("a")])
    writer.flush("other")  # nothing queued there: returns at once
    gate.set()
    writer.flush("slow")
    assert writer.backlog == 0
    writer.close()


def test_merge_keeps_the_last_vector_per_id_in_its_last_place() -> None:
    first = IndexWrite("ns", (item("a"), item("b")))
    b_again = IndexWrite("ns", (item("b", "archived"), item("c")))
    a_again = IndexWrite("ns", (item("a", "superseded"),))
    m = merge([first, b_again, a_again])
    assert m.namespace == "ns"
    assert [i.id for i in m.upserts] == ["b", "c", "a"]
    assert m.upserts[0].metadata["status"] == "archived"
    assert m.upserts[2].metadata["status"] == "superseded"
    assert m.size == 3 and m.ids == ["b", "c", "a"]


def _flush_in_child(writer: IndexWriter) -> None:
    assert writer.unwritten("ns") == []  # the parent's queue is the parent's to write
    writer.flush()  # the child inherited a queue, not the thread: must not hang
    writer.submit("ns", [item("child")])  # a write of its own gets its own thread
    writer.flush()


def test_a_forked_child_does_not_wait_for_the_parents_queue() -> None:
    import multiprocessing

    gate = threading.Event()
    applied: list[str] = []

    def apply(ns: str, ups: Sequence[VectorItem]) -> None:
        if ups and ups[0].id != "child":
            gate.wait(timeout=30)
        applied.extend(i.id for i in ups)

    writer = IndexWriter(apply, capacity=10, retries=0)
    writer.submit("ns", [item("a")])  # in flight, held at the gate
    writer.submit("ns", [item("b")])  # queued
    child = multiprocessing.get_context("fork").Process(target=_flush_in_child, args=(writer,))
    child.start()
    child.join(timeout=20)
    hung = child.is_alive()
    if hung:
        child.kill()
    gate.set()
    writer.close()
    assert not hung and child.exitcode == 0
    assert applied == ["a", "b"]  # the parent wrote its own queue; the child's was its own
