"""A drainer of the vector outbox that loses its lease mid-drain, on a real redis-server
and a real Chroma server.

The drain lease is a Redis key with a real expiry. A worker whose index call outlasts
it (a slow server, a pause) is still writing when another worker takes the lease over
and drains the same queued entries. What the team relies on: the old holder notices its
lease is gone when it acknowledges (`_ACK` checks the token), so it trims nothing and
counts nothing a second time; it neither frees the new holder's lease nor returns
before its writes are applied; every queued write reaches the index; and the queue's
counters still agree (`done + LLEN == pushed`), so later writers are not told their
writes were applied when they were not.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.outbox import OutboxIndex, OutboxSettings
from reverie.integrations.redis.store import RedisStore
from tests.servers import wait_until

DIM = 8


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


class Held:
    """The real index; an upsert says it has started (`entered`) and then waits for
    `go` before writing: a drain that takes longer than its lease."""

    def __init__(self, inner: ChromaIndex) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.go = threading.Event()
        self.upserts: list[list[str]] = []

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        self.entered.set()
        assert self.go.wait(timeout=60), "the test never let the drain finish"
        self.upserts.append([i.id for i in items])
        self.inner.upsert(namespace, items)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Worker:
    """One worker's `upsert` on a thread of its own, its error (if any) kept."""

    def __init__(self, index: OutboxIndex, namespace: str, items: list[VectorItem]) -> None:
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(index, namespace, items))
        self.thread.start()

    def _run(self, index: OutboxIndex, namespace: str, items: list[VectorItem]) -> None:
        try:
            index.upsert(namespace, items)
        except BaseException as e:  # reported by finished()
            self.errors.append(e)

    def finished(self) -> bool:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the writer never returned"
        assert not self.errors, self.errors
        return True


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:
    with RedisStore.from_url(redis_url, prefix=f"vl{uuid.uuid4().hex[:8]}") as s:
        yield s


@pytest.fixture
def chroma(chroma_server_url: str) -> Iterator[ChromaIndex]:
    with ChromaIndex.server(chroma_server_url) as index:
        yield index


@pytest.fixture
def ns(chroma: ChromaIndex) -> Iterator[str]:
    name = f"vl-{uuid.uuid4().hex[:10]}"
    yield name
    chroma.drop_namespace(name)


def outbox(store: RedisStore, inner: Any, lease_seconds: float = 10.0) -> OutboxIndex:
    return OutboxIndex(
        inner, store.client, prefix=store.prefix, outbox=OutboxSettings(lease_seconds=lease_seconds)
    )


def counters(store: RedisStore, ns: str) -> tuple[int, int, int]:
    """(pushed, done, queued) of the namespace's outbox."""
    k = NamespaceKeys(store.prefix, ns)
    c = store.client
    return int(c.get(k.outbox_pushed) or 0), int(c.get(k.outbox_done) or 0), int(c.llen(k.outbox))


def lease_lapses(store: RedisStore, ns: str) -> None:
    """Wait for Redis itself to expire the lease key (no clock of ours decides it)."""
    lease = NamespaceKeys(store.prefix, ns).outbox_lease
    wait_until(lambda: store.client.exists(lease) == 0, "the drain lease to expire in Redis")


def test_a_holder_whose_lease_was_taken_over_and_drained_counts_nothing_twice(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    slow = Held(chroma)
    old = Worker(
        outbox(store, slow, lease_seconds=0.3),
        ns,
        [VectorItem("old-0", unit(0)), VectorItem("old-1", unit(1))],
    )
    assert slow.entered.wait(timeout=60), "the first worker never started its drain"
    lease_lapses(store, ns)

    # Another worker finds the lease free, takes it and drains everything queued: the
    # old holder's two entries (still at the head of the queue) and its own.
    quick = Held(chroma)
    quick.go.set()
    outbox(store, quick).upsert(ns, [VectorItem("new-0", unit(2))])
    assert [sorted(ids) for ids in quick.upserts] == [["new-0", "old-0", "old-1"]]
    assert counters(store, ns) == (3, 3, 0)

    slow.go.set()  # the old holder's index call returns; its acknowledgement is refused
    assert old.finished()
    assert counters(store, ns) == (3, 3, 0)  # nothing trimmed or counted a second time
    assert store.client.exists(NamespaceKeys(store.prefix, ns).outbox_lease) == 0
    assert chroma.ids(ns) == {"old-0", "old-1", "new-0"}
    sims = chroma.similarities(ns, unit(1), ["old-1", "new-0"])
    assert sims["old-1"] == pytest.approx(1.0) and sims["new-0"] == pytest.approx(0.0)

    # A later writer is told its write is done only once it is in the index.
    outbox(store, chroma).upsert(ns, [VectorItem("later", unit(3))])
    assert "later" in chroma.ids(ns)
    assert counters(store, ns) == (4, 4, 0)


def test_a_holder_whose_lease_is_held_by_another_waits_and_leaves_that_lease_alone(
    store: RedisStore, chroma: ChromaIndex, ns: str
) -> None:
    k = NamespaceKeys(store.prefix, ns)
    slow = Held(chroma)
    old = Worker(outbox(store, slow, lease_seconds=0.3), ns, [VectorItem("old-0", unit(0))])
    assert slow.entered.wait(timeout=60), "the first worker never started its drain"
    lease_lapses(store, ns)

    # The new holder takes the lease and is itself mid-drain when the old one returns.
    busy = Held(chroma)
    new = Worker(outbox(store, busy, lease_seconds=60.0), ns, [VectorItem("new-0", unit(2))])
    assert busy.entered.wait(timeout=60), "the second worker never started its drain"
    new_token = store.client.get(k.outbox_lease)
    assert new_token is not None

    slow.go.set()
    # The old holder's acknowledgement finds another token: it queues behind the new
    # holder as a waiter instead of trimming the queue or deleting that lease.
    wait_until(
        lambda: store.client.scard(k.outbox_waiters) == 1,
        "the old holder to wait behind the new one",
    )
    assert store.client.get(k.outbox_lease) == new_token
    assert counters(store, ns) == (2, 0, 2)
    assert old.thread.is_alive()  # not finished: its write is applied only by the new holder

    busy.go.set()
    assert new.finished() and old.finished()
    assert counters(store, ns) == (2, 2, 0)
    assert store.client.exists(k.outbox_lease) == 0
    assert chroma.ids(ns) == {"old-0", "new-0"}
