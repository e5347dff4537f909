"""The shared tier's vector outbox (`integrations/redis/outbox.py`) on a real
`redis-server`, a real Redis Cluster and a real `chroma run` server.

What a team running many workers relies on: every worker's vector writes reach the
index, in the order they were queued, with read-your-writes for the writer; writes
queued by several workers while one drains go to the server together; a worker that dies
holding the drain lease loses nothing and stalls the others only until its lease
expires; a server that is down keeps the writes queued; bad input is refused before it
is queued; namespaces never share an outbox. The vector contract suite also runs against
the outbox (tests/contract, `vector_index[outbox]`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock
from reverie.core.errors import BackendUnavailable, InvalidInput, InvalidVector
from reverie.core.ports import VectorItem
from reverie.integrations import open_engine
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.outbox import OutboxIndex, OutboxSettings, encode_delete, plan
from reverie.integrations.redis.store import RedisStore
from tests.fakes import BagOfWordsEmbedder
from tests.servers import wait_until

DIM = 8
T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


def unit(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    return v


class Counting:
    """The real Chroma index, counting the calls that reach it (and optionally failing
    the first `fail` of them with `error`, as a server that is down or refuses would)."""

    def __init__(self, inner: ChromaIndex, fail: int = 0, error: Exception | None = None) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int]] = []
        self.fail = fail
        self.error = error or BackendUnavailable("the Chroma server is down (injected)")

    def _count(self, what: str, n: int) -> None:
        if self.fail > 0:
            self.fail -= 1
            raise self.error
        self.calls.append((what, n))

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        self._count("upsert", len(items))
        self.inner.upsert(namespace, items)

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        self._count("set_metadata", len(ids))
        self.inner.set_metadata(namespace, ids, metadata)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        self._count("delete", len(ids))
        self.inner.delete(namespace, ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(params=["redis", pytest.param("cluster", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    """The record store whose Redis holds the outbox: one server, or a 3-master Cluster
    (the outbox's keys carry the namespace's hash tag, so its scripts stay on one slot)."""
    url = (
        request.getfixturevalue("redis_url") if request.param == "redis"
        else request.getfixturevalue("redis_cluster").url
    )
    with RedisStore.from_url(url, prefix=f"vq{uuid.uuid4().hex[:8]}") as s:
        yield s


@pytest.fixture
def chroma(chroma_server_url: str) -> Iterator[ChromaIndex]:
    with ChromaIndex.server(chroma_server_url) as index:
        yield index


@pytest.fixture
def ns(chroma: ChromaIndex) -> Iterator[str]:
    name = f"vq-{uuid.uuid4().hex[:10]}"
    yield name
    chroma.drop_namespace(name)


def outbox(
    store: RedisStore, inner: Any, settings: OutboxSettings | None = None
) -> OutboxIndex:
    return OutboxIndex(inner, store.client, prefix=store.prefix, outbox=settings)


def keys(store: RedisStore, namespace: str) -> NamespaceKeys:
    return NamespaceKeys(store.prefix, namespace)


def hold_lease(store: RedisStore, namespace: str, ms: int = 60_000) -> None:
    """Take the namespace's drain lease as another worker would (a token of its own)."""
    assert store.client.set(keys(store, namespace).outbox_lease, "elsewhere", nx=True, px=ms)


class Gated:
    """The real index, whose writes wait for `gate`: a drain that takes a while."""

    def __init__(self, inner: Any, gate: threading.Event) -> None:
        self.inner = inner
        self.gate = gate

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        assert self.gate.wait(timeout=60)
        self.inner.upsert(namespace, items)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def draining(store: RedisStore, inner: Any, namespace: str) -> Iterator[None]:
    """Another worker mid-drain: it holds the lease, writing its own vector ("holder")
    until the block ends; then it lets go as every holder does (waking the waiters)."""
    gate = threading.Event()
    holder = outbox(store, Gated(inner, gate))
    t = threading.Thread(target=holder.upsert, args=(namespace, [VectorItem("holder", unit(7))]))
    t.start()
    wait_for(lambda: store.client.exists(keys(store, namespace).outbox_lease) == 1)
    try:
        yield
    finally:
        gate.set()
        t.join(timeout=30)


def wait_for(cond: Any, timeout: float = 30.0) -> None:
    wait_until(cond, "the outbox to reach the expected state", timeout)


def metadata_of(index: ChromaIndex, namespace: str, ids: list[str]) -> dict[str, Any]:
    col = index._cols.get(namespace)
    got = col.get(ids=ids, include=["metadatas"])
    return dict(zip(got["ids"], got["metadatas"], strict=True))


# --- the pure plan of one drained batch -----------------------------------------------------


def test_plan_merges_writes_between_deletes_in_order() -> None:
    from reverie.integrations.redis.outbox import decode, encode_metadata, encode_upsert

    ops = [
        ("u", "a", VectorItem("a", unit(0), {"status": "active"})),
        ("u", "b", VectorItem("b", unit(1), {"status": "active"})),
        ("m", "a", {"status": "superseded"}),  # lands on top of a's upsert
        ("m", "b", {"status": "archived"}),
        ("u", "b", VectorItem("b", unit(2), {"status": "active"})),  # drops b's update
        ("d", "a", None),
        ("d", "a", None),
        ("u", "a", VectorItem("a", unit(3), {"kind": "semantic"})),
    ]
    encoders = {"u": encode_upsert, "m": encode_metadata, "d": encode_delete}
    # as queued in Redis and read back by a drainer
    calls = plan([decode(encoders[op[0]](op).decode()) for op in ops])
    assert [c for c, _ in calls] == ["upsert", "set_metadata", "delete", "upsert"]
    first = calls[0][1]
    assert [i.id for i in first] == ["a", "b"]
    assert np.array_equal(first[1].vector, unit(2))  # b's later upsert won
    assert calls[1][1] == [("a", {"status": "superseded"})]  # b's update was dropped
    assert calls[2][1] == ["a"]  # one delete, once
    assert calls[3][1][0].id == "a" and np.array_equal(calls[3][1][0].vector, unit(3))


def test_plan_merges_updates_of_one_id_key_by_key() -> None:
    from reverie.integrations.redis.outbox import decode, encode_metadata

    ops = [("m", "a", {"status": "x", "kind": "k"}), ("m", "a", {"status": "y"})]
    calls = plan([decode(encode_metadata(op).decode()) for op in ops])
    assert calls == [("set_metadata", [("a", {"status": "y", "kind": "k"})])]


# --- the outbox on real servers -------------------------------------------------------------


def test_writes_reach_the_index_in_order_and_the_outbox_empties(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    counting = Counting(chroma)
    index = outbox(store, counting)
    index.upsert(ns, [VectorItem(f"m{i}", unit(i), {"status": "active"}) for i in range(4)])
    index.set_metadata(ns, ["m1"], [{"status": "superseded"}])
    index.delete(ns, ["m2"])
    index.upsert(ns, [VectorItem("m3", unit(5), {"status": "active"})])  # replaces m3
    # every write had returned only once it was in the index: read without waiting
    assert chroma.ids(ns) == {"m0", "m1", "m3"}
    assert metadata_of(chroma, ns, ["m1"])["m1"]["status"] == "superseded"
    assert chroma.similarities(ns, unit(5), ["m3"])["m3"] == pytest.approx(1.0)
    assert index.pending(ns) == 0
    k = keys(store, ns)
    assert store.client.get(k.outbox_pushed) == store.client.get(k.outbox_done) == "7"
    assert store.client.exists(k.outbox_lease) == 0  # released
    # uncontended, each write is its own drain
    assert counting.calls == [("upsert", 4), ("set_metadata", 1), ("delete", 1), ("upsert", 1)]
    # reads are the index's
    assert index.query(ns, unit(0), k=1)[0].id == "m0"
    assert index.remote is True and index.count(ns) == 3


def test_writes_queued_by_several_workers_go_to_the_server_in_one_call(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    """While one worker drains, the others' writes queue up; when it lets go, the next
    holder applies all of them in one merged upsert, in queue order, and every writer
    returns once its own writes are in."""
    counting = Counting(chroma)
    workers = [outbox(store, counting) for _ in range(4)]  # four engines' views
    writes: list[tuple[OutboxIndex, str, list[Any]]] = [
        (workers[0], "upsert", [VectorItem(f"w0-{i}", unit(i), {"n": 0}) for i in range(5)]),
        (workers[1], "upsert", [VectorItem("shared", unit(1), {"n": 1})]),
        (workers[2], "upsert", [VectorItem(f"w2-{i}", unit(i), {"n": 2}) for i in range(5)]),
        (workers[3], "upsert", [VectorItem("shared", unit(6), {"n": 3})]),  # later: wins
        (workers[1], "set_metadata", [["w0-0"], [{"n": 9}]]),
    ]
    errors: list[BaseException] = []
    threads = []
    with draining(store, counting, ns):
        queued = 1  # the holder's own entry, still at the head while it writes it
        for worker, op, args in writes:
            def run(worker: OutboxIndex = worker, op: str = op, args: list[Any] = args) -> None:
                try:
                    if op == "upsert":
                        worker.upsert(ns, args)
                    else:
                        worker.set_metadata(ns, *args)
                except BaseException as e:
                    errors.append(e)

            t = threading.Thread(target=run)
            t.start()
            threads.append(t)
            queued += len(args) if op == "upsert" else 1
            wait_for(lambda q=queued: workers[0].pending(ns) == q)  # queued in this order
        assert counting.calls == []  # nobody else wrote while the lease was held
    for t in threads:
        t.join(timeout=30)
    assert not errors
    # the holder's own write, then one drain for everyone else's 13 writes
    assert counting.calls == [("upsert", 1), ("upsert", 11), ("set_metadata", 1)]
    assert sum(w.drains for w in workers) == 1
    assert chroma.count(ns) == 12
    assert chroma.similarities(ns, unit(6), ["shared"])["shared"] == pytest.approx(1.0)
    meta = metadata_of(chroma, ns, ["shared", "w0-0", "w0-1"])
    assert meta["shared"]["n"] == 3 and meta["w0-0"]["n"] == 9 and meta["w0-1"]["n"] == 0
    assert workers[0].pending(ns) == 0


def test_a_drainer_lingers_for_busy_workers_but_never_for_a_lone_writer(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    """With others writing (their entries queued beside its own), a drainer waits
    `OutboxSettings.linger_seconds` so writes arriving meanwhile join its upsert; a writer
    alone in the queue writes at once."""
    slow = OutboxSettings(linger_seconds=1.0)
    counting = Counting(chroma)
    # A lone writer with an hour's linger: it finishes only if it does not linger at all.
    lone = outbox(store, counting, OutboxSettings(linger_seconds=3600.0))
    writer = threading.Thread(target=lone.upsert, args=(ns, [VectorItem("lone", unit(0))]))
    writer.start()
    writer.join(timeout=60)
    assert not writer.is_alive(), "a lone writer lingered: nobody else was writing"
    a, b = outbox(store, counting, slow), outbox(store, counting, slow)
    threads = [threading.Thread(target=a.upsert, args=(ns, [VectorItem("a", unit(1))]))]
    with draining(store, counting, ns):
        threads[0].start()
        wait_for(lambda: a.pending(ns) == 2)  # the holder's entry and a's
    # the holder let go and woke `a`, which now holds the lease and lingers
    wait_for(lambda: store.client.exists(keys(store, ns).outbox_lease) == 1)
    threads.append(threading.Thread(target=b.upsert, args=(ns, [VectorItem("b", unit(2))])))
    threads[1].start()
    for t in threads:
        t.join(timeout=30)
    # lone; the holder's own; then a's and b's together, b having joined during the linger
    assert counting.calls == [("upsert", 1), ("upsert", 1), ("upsert", 2)]
    assert chroma.ids(ns) == {"lone", "holder", "a", "b"}


def test_a_delete_queued_after_an_upsert_wins_and_the_reverse(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    a, b = outbox(store, chroma), outbox(store, chroma)
    a.upsert(ns, [VectorItem("gone", unit(0)), VectorItem("back", unit(1))])
    done = []
    steps = [
        (a, lambda w: w.upsert(ns, [VectorItem("gone", unit(2))])),
        (b, lambda w: w.delete(ns, ["gone", "back"])),
        (a, lambda w: w.upsert(ns, [VectorItem("back", unit(3))])),
    ]
    threads = []
    with draining(store, chroma, ns):
        for n, (w, step) in enumerate(steps, start=1):
            t = threading.Thread(target=lambda w=w, step=step: done.append(step(w)))
            t.start()
            threads.append(t)
            wait_for(lambda n=n: a.pending(ns) == 1 + [1, 3, 4][n - 1])
    for t in threads:
        t.join(timeout=30)
    assert len(done) == 3
    assert chroma.ids(ns) == {"back", "holder"}
    assert chroma.similarities(ns, unit(3), ["back"])["back"] == pytest.approx(1.0)


def test_a_writer_waits_for_a_held_lease_then_reports_unavailable(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    slow = outbox(store, chroma, OutboxSettings(wait_seconds=0.3))
    hold_lease(store, ns)
    with pytest.raises(BackendUnavailable, match=r"not drained within 0\.3 s"):
        slow.upsert(ns, [VectorItem("x", unit(0))])
    assert slow.pending(ns) == 1  # still queued, for whoever drains next
    # A writer with time to spare waits for the lease: it queues its write, does not give
    # up while the lease is held, and drains once the holder lets go.
    patient = outbox(store, chroma, OutboxSettings(wait_seconds=120.0))
    errors: list[BaseException] = []

    def write() -> None:
        try:
            patient.upsert(ns, [VectorItem("y", unit(1))])
        except BaseException as e:  # reported below
            errors.append(e)

    writer = threading.Thread(target=write)
    writer.start()
    wait_for(lambda: patient.pending(ns) == 2)
    assert writer.is_alive() and not errors, f"gave up under a held lease: {errors}"
    store.client.delete(keys(store, ns).outbox_lease)
    writer.join(timeout=60)
    assert not writer.is_alive() and not errors, errors
    assert chroma.ids(ns) == {"x", "y"}


def test_a_server_that_is_down_keeps_the_writes_queued(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    down = Counting(chroma, fail=1)
    index = outbox(store, down)
    with pytest.raises(BackendUnavailable, match="down"):
        index.upsert(ns, [VectorItem("a", unit(0))])
    assert index.pending(ns) == 1
    assert store.client.exists(keys(store, ns).outbox_lease) == 0  # given back at once
    assert chroma.count(ns) == 0
    index.upsert(ns, [VectorItem("b", unit(1))])  # the server is back: both land
    assert chroma.ids(ns) == {"a", "b"}
    assert down.calls == [("upsert", 2)]
    assert index.pending(ns) == 0


def test_a_batch_the_index_refuses_is_dropped_not_left_to_wedge_everyone(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    refusing = Counting(chroma, fail=1, error=InvalidInput("refused (injected)"))
    index = outbox(store, refusing)
    with pytest.raises(InvalidInput, match="refused"):
        index.upsert(ns, [VectorItem("a", unit(0))])
    assert index.pending(ns) == 0
    assert store.client.exists(keys(store, ns).outbox_lease) == 0
    index.upsert(ns, [VectorItem("b", unit(1))])
    assert chroma.ids(ns) == {"b"}


def test_bad_input_is_refused_before_it_is_queued(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    index = outbox(store, chroma)
    index.upsert(ns, [VectorItem("a", unit(0))])
    k = keys(store, ns)
    pushed = store.client.get(k.outbox_pushed)
    bad: list[Any] = [
        lambda: index.upsert(ns, [VectorItem("b", np.ones(DIM + 1, dtype=np.float32))]),
        lambda: index.upsert(ns, [VectorItem("b", np.full(DIM, np.nan))]),
        lambda: index.upsert(ns, [VectorItem("b", unit(0)), VectorItem("b", unit(1))]),
        lambda: index.upsert(ns, [VectorItem("b", unit(0), {"x": [1]})]),  # type: ignore[dict-item]
        lambda: index.set_metadata(ns, ["a", "b"], [{"x": 1}]),
        lambda: index.delete(ns, "a"),  # type: ignore[arg-type]
        lambda: index.upsert("bad namespace*", [VectorItem("b", unit(0))]),
    ]
    for call in bad:
        with pytest.raises((InvalidInput, InvalidVector)):
            call()
    assert store.client.get(k.outbox_pushed) == pushed
    assert index.pending(ns) == 0
    assert chroma.ids(ns) == {"a"}


def test_namespaces_have_outboxes_of_their_own(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    other = ns + "-other"
    index = outbox(store, chroma)
    try:
        hold_lease(store, ns)  # ns is busy; other is not held up by it
        index.upsert(other, [VectorItem("o", unit(0))])
        assert chroma.ids(other) == {"o"} and chroma.count(ns) == 0
        assert index.pending(other) == 0
        k, ko = keys(store, ns), keys(store, other)
        assert store.client.exists(k.outbox_pushed) == 0  # nothing of other's in ns's keys
        assert {k.outbox, k.outbox_lease}.isdisjoint({ko.outbox, ko.outbox_lease})
    finally:
        chroma.drop_namespace(other)


def test_drop_namespace_clears_the_outbox_and_frees_its_waiters(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    index = outbox(store, chroma)
    index.upsert(ns, [VectorItem("a", unit(0))])
    hold_lease(store, ns)
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(index.upsert(ns, [VectorItem("b", unit(1))])))
    t.start()
    wait_for(lambda: index.pending(ns) == 1)
    index.drop_namespace(ns)
    t.join(timeout=10)
    assert result == [None]  # returned: its write went with the namespace
    k = keys(store, ns)
    assert store.client.exists(k.outbox, k.outbox_pushed, k.outbox_done, k.outbox_lease) == 0
    assert chroma.count(ns) == 0


# --- a worker that dies holding the lease ----------------------------------------------------


class Stuck:
    """The real index, whose upsert never returns: a worker frozen mid-drain."""

    def __init__(self, inner: ChromaIndex, claimed: Any) -> None:
        self.inner = inner
        self.claimed = claimed

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        self.claimed.set()
        time.sleep(3600)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _die_while_draining(redis_url: str, chroma_url: str, prefix: str, ns: str, claimed: Any,
                        out: Any) -> None:
    try:
        store = RedisStore.from_url(redis_url, prefix=prefix)
        index = OutboxIndex(
            Stuck(ChromaIndex.server(chroma_url), claimed), store.client, prefix=prefix,
            outbox=OutboxSettings(lease_seconds=1.0),
        )
        index.upsert(ns, [VectorItem(f"dead-{i}", unit(i)) for i in range(3)])
    except BaseException:
        out.put(traceback.format_exc())


def test_a_worker_killed_mid_drain_loses_nothing_and_stalls_others_only_for_its_lease(
    redis_url: str, chroma_server_url: str, chroma: ChromaIndex, ns: str
) -> None:
    prefix = f"vq{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    claimed, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_die_while_draining,
                       args=(redis_url, chroma_server_url, prefix, ns, claimed, out))
    proc.start()
    try:
        assert claimed.wait(timeout=60), "the worker never claimed its batch"
        assert out.empty()
        os.kill(proc.pid, signal.SIGKILL)  # dies holding the lease, its writes at the head
        proc.join(timeout=10)
        with RedisStore.from_url(redis_url, prefix=prefix) as store:
            index = outbox(store, chroma)
            assert index.pending(ns) == 3
            # Its own bound (raising BackendUnavailable past it) proves the wait was the
            # dead worker's 1 s lease, not forever.
            index = outbox(store, chroma, OutboxSettings(wait_seconds=10.0))
            index.upsert(ns, [VectorItem("alive", unit(4))])
            assert chroma.ids(ns) == {"dead-0", "dead-1", "dead-2", "alive"}
            assert index.pending(ns) == 0
    finally:
        if proc.is_alive():
            proc.kill()


# --- what open_engine gives, with several worker processes ----------------------------------


def _observer(wid: int, redis_url: str, chroma_url: str, home: str, prefix: str, ns: str,
              out: Any) -> None:
    try:
        engine = open_engine(
            home, store=RedisStore.from_url(redis_url, prefix=prefix), vectors=chroma_url,
            embedder=BagOfWordsEmbedder(), clock=ManualClock(T0),
        )
        ids = [engine.observe(f"worker {wid} files note {i} on topic{wid}x{i}",
                              namespace=ns).id for i in range(40)]
        engine.close()
        out.put({"wid": wid, "ids": ids, "drains": engine.vectors.drains})
    except BaseException:
        out.put({"wid": wid, "error": traceback.format_exc()})


def test_open_engine_puts_the_shared_tier_behind_the_outbox(
    redis_url: str, chroma_server_url: str, tmp_path: Path, ns: str
) -> None:
    prefix = f"vq{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_observer, args=(w, redis_url, chroma_server_url,
                                                 str(tmp_path / f"w{w}"), prefix, ns, out))
             for w in range(3)]
    for p in procs:
        p.start()
    reports = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert not [r["error"] for r in reports if "error" in r]
    store = RedisStore.from_url(redis_url, prefix=prefix)
    engine = open_engine(tmp_path / "reader", store=store, vectors=chroma_server_url,
                         embedder=BagOfWordsEmbedder(), clock=ManualClock(T0))
    try:
        assert isinstance(engine.vectors, OutboxIndex)
        every = {i for r in reports for i in r["ids"]}
        assert engine.vectors.ids(ns) == every  # all 120 vectors, from three workers
        assert sum(r["drains"] for r in reports) <= 120
        stats = engine.stats(namespace=ns)
        assert stats["total"] == stats["vectors"] == 120 and not stats["vector_repair_needed"]
        hit = engine.recall("topic1x7", namespace=ns, reinforce=False)[0]
        assert hit.memory.text == "worker 1 files note 7 on topic1x7"
        # found by meaning too: its vector is there (the exact cosine of the two texts)
        q, t = engine.embedder.embed(["topic1x7", hit.memory.text])
        assert hit.explanation.dense == pytest.approx(float(np.dot(q, t)), abs=1e-4)
        assert hit.explanation.dense > 0.3
        assert engine.vectors.pending(ns) == 0
    finally:
        engine.forget_namespace(ns)
        engine.close()


def test_open_engine_leaves_other_tiers_and_the_switch_alone(
    redis_url: str, chroma_server_url: str, tmp_path: Path
) -> None:
    def vectors_of(**kw: Any) -> Any:
        if kw.get("store") == redis_url:  # a key prefix of this test's own
            kw["store"] = RedisStore.from_url(redis_url, prefix=f"vq{uuid.uuid4().hex[:8]}")
        engine = open_engine(tmp_path / uuid.uuid4().hex, embedder=BagOfWordsEmbedder(), **kw)
        try:
            return engine.vectors
        finally:
            engine.close()

    off = OutboxSettings(enabled=False)
    assert isinstance(vectors_of(store=redis_url, vectors=chroma_server_url), OutboxIndex)
    assert isinstance(
        vectors_of(store=redis_url, vectors=chroma_server_url, outbox=off), ChromaIndex
    )
    # an embedded index is each process's own: nothing to share
    assert isinstance(vectors_of(store=redis_url, vectors=tmp_path / "vec"), ChromaIndex)
    # SQLite with a Chroma server: no Redis to queue in
    assert isinstance(
        vectors_of(store=tmp_path / "m.db", vectors=chroma_server_url), ChromaIndex
    )


def test_stats_show_what_waits_in_the_outbox(
    redis_url: str, chroma_server_url: str, tmp_path: Path, ns: str
) -> None:
    store = RedisStore.from_url(redis_url, prefix=f"vq{uuid.uuid4().hex[:8]}")
    engine = open_engine(tmp_path, store=store, vectors=chroma_server_url,
                         embedder=BagOfWordsEmbedder(), clock=ManualClock(T0))
    try:
        assert engine.stats(namespace=ns)["vectors_queued"] == 0
        hold_lease(store, ns, ms=1000)  # another worker is draining (and will die)
        vec = engine.embedder.embed(["queued"])[0]
        t = threading.Thread(target=engine.vectors.upsert, args=(ns, [VectorItem("q", vec)]))
        t.start()
        wait_for(lambda: engine.vectors.pending(ns) == 1)
        assert engine.stats(namespace=ns)["vectors_queued"] == 1
        t.join(timeout=30)  # the waiter outwaits the dead holder's lease, then drains
        assert engine.stats(namespace=ns)["vectors_queued"] == 0
        assert engine.stats(namespace=ns)["vectors"] == 1
    finally:
        engine.close()


def test_settings_are_checked_on_construction() -> None:
    assert OutboxSettings() == OutboxSettings(
        enabled=True, batch=512, lease_seconds=10.0, linger_seconds=0.02, wait_seconds=120.0
    )
    OutboxSettings(linger_seconds=0.0)  # drains never wait for more: allowed
    for bad in (
        {"enabled": 1}, {"batch": 0}, {"batch": 2.5}, {"batch": True}, {"lease_seconds": 0},
        {"wait_seconds": -1.0}, {"linger_seconds": -0.01}, {"lease_seconds": float("nan")},
        {"wait_seconds": "60"},
    ):
        with pytest.raises(InvalidInput, match="invalid outbox settings"):
            OutboxSettings(**bad)  # type: ignore[arg-type]


class Bare:
    """A vector index with none of the optional capabilities."""

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None: ...

    def query(self, namespace: str, vector: Any, k: int, where: Any = None) -> list[Any]:
        return []

    def similarities(self, namespace: str, vector: Any, ids: Sequence[str]) -> dict[str, float]:
        return {}

    def set_metadata(self, namespace: str, ids: Sequence[str], metadata: Any) -> None: ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None: ...


def test_the_outbox_offers_exactly_the_capabilities_of_its_index(
    store: RedisStore, chroma: ChromaIndex
) -> None:
    assert not hasattr(OutboxIndex, "__getattr__")
    full = outbox(store, chroma)
    assert full.remote is True
    for name in ("begin_query", "stored_vectors", "neighbors", "dimension"):
        assert getattr(full, name) == getattr(chroma, name)
    bare = outbox(store, Bare())
    assert bare.remote is False
    for name in ("begin_query", "stored_vectors", "neighbors", "dimension"):
        assert getattr(bare, name) is None
