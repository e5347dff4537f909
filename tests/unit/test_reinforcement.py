"""Write-behind access reinforcement (core/reinforcement.py and its use in recall).

A user relies on: every recall counts once per recalled memory, exactly, however many
threads recall; what the engine returns afterwards already shows those counts; close()
writes what was queued; a full queue or a failing store never drops a touch silently."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from reverie.core import Policy
from reverie.core.engine import MemoryEngine
from reverie.core.errors import BackendUnavailable, InvalidInput
from reverie.core.reinforcement import Reinforcer
from tests.fakes import InMemoryStore
from tests.unit.conftest import T0, make_engine


class GatedStore(InMemoryStore):
    """A store whose touch blocks until the test opens the gate (to hold touches queued)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # a touch has reached the store
        self.touches = 0
        self.fail_next = 0

    def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        self.entered.set()
        self.gate.wait(timeout=30)
        if self.fail_next > 0:
            self.fail_next -= 1
            raise BackendUnavailable("store went away for a moment")
        self.touches += 1
        super().touch(namespace, ids, at, window)


def _seed(engine_store: GatedStore, policy: Policy) -> tuple[MemoryEngine, list[str]]:
    engine = make_engine(policy, store=engine_store)
    ids = [
        engine.observe(t, namespace="ns").id
        for t in ("alpha apples", "beta bananas", "gamma grapes")
    ]
    return engine, ids


def test_counts_exact_after_many_recalls_from_several_threads() -> None:
    store = GatedStore()
    engine = make_engine(Policy(), store=store)
    a = engine.observe("alpha apples", namespace="ns").id
    b = engine.observe("beta bananas", namespace="ns").id
    per_thread, threads = 25, 4

    def work() -> None:
        for _ in range(per_thread):
            engine.recall("alpha apples", namespace="ns", k=1)
            engine.recall("beta bananas", namespace="ns", k=1)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    # get() flushes first: every retrieval is there, none twice
    assert engine.get(a, namespace="ns").access_count == per_thread * threads
    assert engine.get(b, namespace="ns").access_count == per_thread * threads
    engine.close()


def test_reads_wait_for_queued_touches() -> None:
    store = GatedStore()
    engine, (a, _, _) = _seed(store, Policy())
    store.gate.clear()  # the worker blocks inside touch: the touch stays queued
    hit = engine.recall("alpha apples", namespace="ns", k=1)
    assert hit[0].id == a  # recall returned while its touch is still pending
    assert engine._reinforcer.backlog == 1
    threading.Timer(0.2, store.gate.set).start()  # open the gate from elsewhere
    assert engine.get(a, namespace="ns").access_count == 1  # get waited for the write
    engine.close()


def test_recall_sees_earlier_touches_of_the_records_it_reads() -> None:
    store = GatedStore()
    engine, (a, _, _) = _seed(store, Policy())
    engine.clock.advance(days=30)
    first = engine.recall("alpha apples", namespace="ns", k=1)[0]
    second = engine.recall("alpha apples", namespace="ns", k=1)[0]
    assert first.id == second.id == a
    # the second recall read the record after the first's touch restarted its decay clock
    assert first.explanation.decay < second.explanation.decay
    assert second.memory.last_access == T0 + timedelta(days=30)
    assert second.memory.access_count == 1
    engine.close()


def _one_per_namespace(store: GatedStore, policy: Policy, n: int) -> tuple[MemoryEngine, list[str]]:
    """A recall reads every candidate's record, and a read waits for that record's queued
    touches; memories in separate namespaces let touches pile up without waiting."""
    engine = make_engine(policy, store=store)
    return engine, [engine.observe("alpha apples", namespace=f"n{i}").id for i in range(n)]


def test_close_drains_the_queue() -> None:
    store = GatedStore()
    engine, ids = _one_per_namespace(store, Policy(), 6)
    store.gate.clear()
    for i in range(6):
        engine.recall("alpha apples", namespace=f"n{i}", k=1)
    assert engine._reinforcer.backlog == 6
    threading.Timer(0.2, store.gate.set).start()
    engine.close()  # returns once all six touches are written
    assert store.touches == 6
    assert [store.get(f"n{i}", m).access_count for i, m in enumerate(ids)] == [1] * 6  # type: ignore[union-attr]


def test_full_queue_touches_inline_and_loses_nothing() -> None:
    store = GatedStore()
    engine, ids = _one_per_namespace(store, Policy(reinforce_queue=2), 4)
    reinforcer = engine._reinforcer
    assert reinforcer is not None
    store.gate.clear()
    done = threading.Event()

    def recall_four() -> None:
        for i in range(4):
            engine.recall("alpha apples", namespace=f"n{i}", k=1)
            if i == 0:
                assert store.entered.wait(timeout=10)
        done.set()

    # the worker holds the first touch (blocked in the store) and the queue holds two, so
    # one recall finds the queue full and applies its touch itself (blocking like the worker)
    t = threading.Thread(target=recall_four)
    t.start()
    assert not done.wait(timeout=0.5)
    assert reinforcer.inline == 1
    store.gate.set()
    t.join()
    engine.flush_reinforcement()
    assert [store.get(f"n{i}", m).access_count for i, m in enumerate(ids)] == [1] * 4  # type: ignore[union-attr]
    assert store.touches == 4
    engine.close()


def test_synchronous_policy_touches_before_returning() -> None:
    store = GatedStore()
    engine, (a, _, _) = _seed(store, Policy(reinforce_async=False))
    engine.recall("alpha apples", namespace="ns", k=1)
    assert store.get("ns", a).access_count == 1  # type: ignore[union-attr]
    assert engine._reinforcer._thread is None  # never used
    engine.close()


def test_failing_touch_is_retried_then_applied() -> None:
    store = GatedStore()
    engine, (a, _, _) = _seed(store, Policy(reinforce_retries=3))
    store.fail_next = 2  # two failures, then the store is back
    engine.recall("alpha apples", namespace="ns", k=1)
    assert engine.get(a, namespace="ns").access_count == 1
    assert engine._reinforcer.failed == []
    engine.close()


def test_touch_failing_past_the_retries_is_logged_and_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = GatedStore()
    engine, (a, _, _) = _seed(store, Policy(reinforce_retries=1))
    store.fail_next = 2  # one try and one retry, both fail
    with caplog.at_level(logging.WARNING, logger="reverie"):
        engine.recall("alpha apples", namespace="ns", k=1)
        engine.flush_reinforcement()
    assert engine.get(a, namespace="ns").access_count == 0
    reinforcer = engine._reinforcer
    assert reinforcer is not None and len(reinforcer.failed) == 1
    event, error = reinforcer.failed[0]
    assert event.ids == (a,) and event.namespace == "ns" and event.at == T0
    assert isinstance(error, BackendUnavailable)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "after 2 attempts" in errors[0].getMessage()
    # the worker survived: the next recall's touch is written
    engine.recall("alpha apples", namespace="ns", k=1)
    assert engine.get(a, namespace="ns").access_count == 1
    engine.close()


def test_reinforcer_applies_events_in_order() -> None:
    seen: list[tuple[str, tuple[str, ...]]] = []
    r = Reinforcer(lambda ns, ids, at: seen.append((ns, tuple(ids))), capacity=100, retries=0)
    for n in range(50):
        r.submit("ns", [f"m{n}"], T0)
    r.submit("ns", [], T0)  # nothing to reinforce: not queued
    r.close()
    assert seen == [("ns", (f"m{n}",)) for n in range(50)]
    r.submit("ns", ["late"], T0)  # after close: applied inline
    assert seen[-1] == ("ns", ("late",))


def _flush_in_child(r: Reinforcer) -> None:
    r.flush()  # the parent's touch is still queued there; the child must not wait for it


def test_a_forked_child_does_not_wait_for_the_parents_queue() -> None:
    import multiprocessing

    gate = threading.Event()
    applied: list[tuple[str, ...]] = []

    def apply(ns: str, ids: Sequence[str], at: datetime) -> None:
        gate.wait(timeout=30)
        applied.append(tuple(ids))

    r = Reinforcer(apply, capacity=10, retries=0)
    r.submit("ns", ["a"], T0)  # the worker blocks in apply
    r.submit("ns", ["b"], T0)  # queued
    child = multiprocessing.get_context("fork").Process(target=_flush_in_child, args=(r,))
    child.start()
    child.join(timeout=20)
    hung = child.is_alive()
    if hung:
        child.kill()
    gate.set()
    r.close()
    assert not hung and child.exitcode == 0
    assert applied == [("a",), ("b",)]  # the parent still applied its own touches


class BatchingStore(InMemoryStore):
    """A store with the optional `touch_many`: records each batch it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[tuple[tuple[str, ...], datetime]]] = []

    def touch_many(
        self, namespace: str, events: Sequence[tuple[Sequence[str], datetime]], window: int
    ) -> None:
        self.batches.append([(tuple(ids), at) for ids, at in events])
        for ids, at in events:
            super().touch(namespace, ids, at, window)


def test_touches_queued_during_the_linger_are_written_in_one_batch_per_namespace_run() -> None:
    """A long linger proves the batching (close() ends it early); a namespace change
    starts a new batch, and a run of one goes through the plain `apply`."""
    single: list[tuple[str, tuple[str, ...]]] = []
    batches: list[tuple[str, list[tuple[tuple[str, ...], datetime]]]] = []
    r = Reinforcer(
        lambda ns, ids, at: single.append((ns, tuple(ids))),
        capacity=100, retries=0, linger=30.0,
        apply_many=lambda ns, events: batches.append(
            (ns, [(tuple(ids), at) for ids, at in events])
        ),
    )
    for i in range(4):
        r.submit("a", [f"m{i}"], T0 + timedelta(seconds=i))
    r.submit("b", ["x"], T0)
    r.submit("a", ["m0"], T0)
    r.close()
    assert batches == [("a", [((f"m{i}",), T0 + timedelta(seconds=i)) for i in range(4)])]
    assert single == [("b", ("x",)), ("a", ("m0",))]


def test_a_read_needing_a_queued_touch_does_not_wait_out_the_linger() -> None:
    store = BatchingStore()
    engine = make_engine(Policy(reinforce_linger_seconds=30.0), store=store)
    a = engine.observe("alpha apples", namespace="ns").id
    engine.recall("alpha apples", namespace="ns", k=1)
    result: list[int] = []
    reader = threading.Thread(
        target=lambda: result.append(engine.recall("alpha apples", namespace="ns", k=1)[0]
                                     .memory.access_count)
    )
    reader.start()
    reader.join(timeout=10)  # a 30 s linger would hold it far longer
    assert not reader.is_alive() and result == [1]
    engine.flush_reinforcement()  # also cuts the linger: the second touch is written
    assert store.get("ns", a).access_count == 2  # type: ignore[union-attr]
    engine.close()


def test_a_failing_batch_is_retried_whole_then_reported_per_touch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def broken(namespace: str, events: Sequence[tuple[Sequence[str], datetime]]) -> None:
        calls.append(len(events))
        raise BackendUnavailable("store went away")

    r = Reinforcer(lambda ns, ids, at: None, capacity=100, retries=1, linger=30.0,
                   apply_many=broken)
    for i in range(3):
        r.submit("ns", [f"m{i}"], T0)
    with caplog.at_level(logging.ERROR, logger="reverie"):
        r.close()
    assert calls == [3, 3]  # the batch, then its one retry: a failed batch wrote nothing
    assert [e.ids for e, _ in r.failed] == [("m0",), ("m1",), ("m2",)]
    assert caplog.text.count("failed after 2 attempts") == 3


def test_a_networked_store_gets_the_shared_linger() -> None:
    """A store that says its writes cross a network (`remote`, as RedisStore does) batches
    background touches for `reinforce_linger_shared_seconds`; a local one for
    `reinforce_linger_seconds`."""
    policy = Policy(reinforce_linger_seconds=0.01, reinforce_linger_shared_seconds=0.07)
    local = make_engine(policy, store=BatchingStore())
    networked_store = BatchingStore()
    networked_store.remote = True  # type: ignore[attr-defined]
    networked = make_engine(policy, store=networked_store)
    assert local._reinforcer._linger == 0.01
    assert networked._reinforcer._linger == 0.07
    assert Policy().background.reinforce_linger_shared_seconds == 0.05
    with pytest.raises(InvalidInput):
        Policy(reinforce_linger_shared_seconds=-1.0)
