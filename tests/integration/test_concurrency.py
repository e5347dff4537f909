"""Many worker processes on one namespace: the store's atomicity, not retrieval quality.

Four real OS processes (spawned, so no state is shared but the backends) each run 500
mixed operations through their own `MemoryEngine` against one record store (a SQLite
file, or a real `redis-server`) and one real `chroma run` server:

- `observe` of a small set of texts, so the same text is observed concurrently from many
  sources (dedup by content hash must hold across processes);
- `remember` with conflicting objects for a few keys (supersession races);
- `recall` that reinforces (concurrent access-count increments).

Every operation uses a unique source id and every worker reports what it did, so the
final state can be checked exactly: access counts sum to the number of hits the
reinforcing recalls returned; every key has one active unit and one linear supersession
chain; every text has exactly one active trace; every source landed exactly once.

The embedder is `tests.fakes.BagOfWordsEmbedder` (deterministic hashing), not the real
MiniLM model: loading a 90 MB model in four processes on two cores would dominate the
test, and nothing here is about retrieval quality, only about what the store does when
writers race. The real model is exercised in test_engine_real.py and the fault tests.

The consolidation lock is tested the same way: real processes race for `store.lock(ns)`.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import random
import signal
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.core.errors import ConflictError, LockBusy
from reverie.core.models import Kind, Memory, Status, fact_key
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.ports import RecordStore
from reverie.core.text import content_hash
from reverie.integrations.factory import open_store, shared_outbox
from tests.servers import wait_until

pytestmark = pytest.mark.slow

WORKERS = 4
OPS = 500
T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)

# No correction words ("moved to", "actually", ...): a trace must never supersede another
# here, so "one active trace per text" is exact.
TEXTS = [
    "Ana drinks green tea every morning",
    "the build server lives in rack four",
    "Miso the cat sleeps on the red sofa",
    "the quarterly review is on Thursday",
    "Porto has the best custard tarts",
    "the backup job runs every night at two",
]
KEYS = [("alice", "favourite colour"), ("bob", "team"), ("carol", "home city")]
OBJECTS = ["red", "blue", "green"]
QUERIES = ["green tea morning", "cat on the sofa", "backup job at night", "alice colour"]


# --- backends -------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where every process opens the one shared store: a SQLite file, a Redis URL, or a
    local 3-master Redis Cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "shared.db")
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        return url
    return str(request.getfixturevalue("redis_cluster").url)


@pytest.fixture
def namespace(store_spec: str) -> Iterator[str]:
    ns = f"conc-{uuid.uuid4().hex[:10]}"
    yield ns
    store = open_store(store_spec, Path("/nonexistent"))
    try:
        store.delete_namespace(ns)
    finally:
        store.close()


def _open_engine(store_spec: str, chroma_url: str, clock: ManualClock) -> Any:
    from reverie.core.engine import MemoryEngine
    from reverie.integrations.chroma.index import ChromaIndex
    from tests.fakes import BagOfWordsEmbedder

    store = open_store(store_spec, Path("/nonexistent"))
    # on Redis the vectors go through the shared outbox, as open_engine sends them
    vectors = shared_outbox(store, ChromaIndex.server(chroma_url))
    # check_embedder=False: the session's Redis is shared with tests using other embedders,
    # and the store-wide embedder mark is not what this test is about
    return MemoryEngine(
        store, store, vectors, BagOfWordsEmbedder(), clock=clock,  # type: ignore[arg-type]
        check_embedder=False,
    )


# --- the worker -----------------------------------------------------------------------------


def _mixed_worker(
    wid: int, store_spec: str, chroma_url: str, ns: str, barrier: Any, out: Any
) -> None:
    """500 seeded random operations; reports every source it used and every touch."""
    report: dict[str, Any] = {
        "wid": wid, "observed": [], "remembered": [], "touches": 0, "recalls": 0,
        "gave_up": [], "error": None,
    }
    try:
        clock = ManualClock(T0)
        engine = _open_engine(store_spec, chroma_url, clock)
        rng = random.Random(1000 + wid)
        barrier.wait(timeout=120)
        for i in range(OPS):
            clock.advance(seconds=1)
            src = f"w{wid}-op{i}"
            roll = rng.random()
            try:
                if roll < 0.4:
                    text = rng.choice(TEXTS)
                    m = engine.observe(text, namespace=ns, source=src)
                    report["observed"].append((text, src, m.id))
                elif roll < 0.7:
                    subject, predicate = rng.choice(KEYS)
                    obj = rng.choice(OBJECTS)
                    m = engine.remember(subject, predicate, obj, namespace=ns, source=src)
                    report["remembered"].append((subject, predicate, obj, src, m.id))
                else:
                    res = engine.recall(rng.choice(QUERIES), namespace=ns, k=3)
                    report["touches"] += len(res.hits)
                    report["recalls"] += 1
            except ConflictError:
                # the engine gave up after its CAS retries: this op must have written nothing
                report["gave_up"].append(src)
        engine.close()
    except BaseException:
        report["error"] = traceback.format_exc()
    out.put(report)


def _run_workers(target: Any, args: tuple[Any, ...], n: int, timeout: float) -> list[Any]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(w, *args, barrier, out)) for w in range(n)]
    for p in procs:
        p.start()
    reports = []
    try:
        deadline = time.monotonic() + timeout
        for _ in procs:
            reports.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r["error"] for r in reports if r.get("error")]
    assert not errors, "a worker failed:\n" + "\n".join(errors)
    return reports


# --- the test -------------------------------------------------------------------------------


def test_four_processes_mixed_operations_keep_every_invariant(
    store_spec: str, namespace: str, chroma_server_url: str
) -> None:
    reports = _run_workers(
        _mixed_worker, (store_spec, chroma_server_url, namespace), WORKERS, timeout=900
    )
    assert sum(r["recalls"] for r in reports) > 0.2 * WORKERS * OPS  # the mix really ran
    gave_up = {s for r in reports for s in r["gave_up"]}

    store = open_store(store_spec, Path("/nonexistent"))
    try:
        everything = list(store.scan(namespace))
        _check_access_counts(everything, reports)
        _check_traces(store, namespace, everything, reports)
        _check_facts(store, namespace, reports, gave_up)
        assert all(s not in m.sources for m in everything for s in gave_up)
        # every memory's vector reached the Chroma server (through the outbox on Redis)
        from reverie.integrations.chroma.index import ChromaIndex

        with ChromaIndex.server(chroma_server_url) as index:
            assert index.ids(namespace) == {m.id for m in everything}
        counts = store.count(namespace)
        assert counts["total"] == len(everything)
        by_status = Counter(m.status.value for m in everything)
        for status, n in by_status.items():
            assert counts[f"status:{status}"] == n
    finally:
        store.close()


def _check_access_counts(everything: list[Memory], reports: list[dict[str, Any]]) -> None:
    touches = sum(r["touches"] for r in reports)
    assert touches > 0
    # a lost increment (read-modify-write race) would make the left side smaller
    assert sum(m.access_count for m in everything) == touches
    for m in everything:
        assert len(m.recent_accesses) == min(m.access_count, DEFAULT_POLICY.decay.access_window)


def _check_traces(
    store: RecordStore, ns: str, everything: list[Memory], reports: list[dict[str, Any]]
) -> None:
    traces = [m for m in everything if m.key is None]
    active = [m for m in traces if m.status is Status.ACTIVE]
    per_hash = Counter(content_hash(m.text) for m in active)
    assert max(per_hash.values()) == 1, f"duplicate active traces: {per_hash.most_common(3)}"
    # nothing superseded or lost: exactly one trace per observed text, ever
    assert len(traces) == len(active) == len({t for r in reports for t, _, _ in r["observed"]})

    want: dict[str, set[str]] = defaultdict(set)
    for r in reports:
        for text, src, _ in r["observed"]:
            want[text].add(src)
    for text, sources in want.items():
        found = store.find_by_hash(ns, content_hash(text))
        assert found is not None and found.text == text
        # every source folded in, none lost to a concurrent fold
        assert found.sources == frozenset(sources), text
    # every observe returned the one memory its text lives in
    ids = {content_hash(t): store.find_by_hash(ns, content_hash(t)).id for t in want}  # type: ignore[union-attr]
    for r in reports:
        for text, _, mid in r["observed"]:
            assert mid == ids[content_hash(text)]


def _check_facts(
    store: RecordStore, ns: str, reports: list[dict[str, Any]], gave_up: set[str]
) -> None:
    for subject, predicate in KEYS:
        versions = store.find_by_key(ns, fact_key(Kind.SEMANTIC, subject, predicate))
        ops = [
            (obj, src, mid)
            for r in reports
            for s, p, obj, src, mid in r["remembered"]
            if (s, p) == (subject, predicate)
        ]
        if not ops:
            continue
        by_id = {v.id: v for v in versions}
        assert len(by_id) == len(versions)
        active = [v for v in versions if v.status is Status.ACTIVE]
        assert len(active) == 1, f"{subject} {predicate}: {len(active)} active units"
        # linear chain: every older version points to a distinct successor in the key, and
        # following the pointers from the oldest visits every version and ends at the active
        successors = [v.superseded_by for v in versions if v.status is Status.SUPERSEDED]
        assert len(successors) == len(versions) - 1
        assert all(s in by_id for s in successors)
        assert len(set(successors)) == len(successors), "fork: two versions share a successor"
        heads = set(by_id) - set(successors)
        assert len(heads) == 1
        (cur,) = heads
        seen = [cur]
        while by_id[cur].superseded_by is not None:
            cur = by_id[cur].superseded_by  # type: ignore[assignment]
            assert cur not in seen, "cycle in a supersession chain"
            seen.append(cur)
        assert len(seen) == len(versions) and by_id[cur].status is Status.ACTIVE
        # consecutive versions disagree (a same-object remember folds instead) and their
        # validity intervals join up
        for a, b in itertools.pairwise(seen):
            va, vb = by_id[a], by_id[b]
            assert va.fact is not None and vb.fact is not None
            assert va.fact.object != vb.fact.object
            assert va.valid_to == vb.valid_since
        # every source landed in exactly one version, the one with the object it stated
        holder: dict[str, Memory] = {}
        for v in versions:
            for s in v.sources:
                assert s not in holder, f"source {s} in two versions"
                holder[s] = v
        for obj, src, mid in ops:
            assert src in holder, f"source {src} lost"
            assert holder[src].fact.object == obj  # type: ignore[union-attr]
            assert holder[src].id == mid
        assert set(holder) == {src for _, src, _ in ops} - gave_up


# --- the maintenance lock ---------------------------------------------------------------------


def _lock_worker(
    wid: int, store_spec: str, ns: str, rounds: int, holders: Any, barrier: Any, out: Any
) -> None:
    """Race for the lock; while holding it, check nobody else does (a shared counter)."""
    report: dict[str, Any] = {"wid": wid, "held": 0, "busy": 0, "overlap": 0, "error": None}
    try:
        store = open_store(store_spec, Path("/nonexistent"))
        barrier.wait(timeout=120)
        for _ in range(rounds):
            try:
                with store.lock(ns, ttl_seconds=30):
                    with holders.get_lock():
                        holders.value += 1
                        if holders.value > 1:
                            report["overlap"] += 1
                    time.sleep(0.002)  # hold it across a scheduling point
                    with holders.get_lock():
                        holders.value -= 1
                    report["held"] += 1
            except LockBusy:
                report["busy"] += 1
        store.close()
    except BaseException:
        report["error"] = traceback.format_exc()
    out.put(report)


def assert_busy(store: RecordStore, ns: str) -> None:
    with pytest.raises(LockBusy), store.lock(ns):
        pass


def test_lock_is_never_held_twice(store_spec: str, namespace: str) -> None:
    ctx = mp.get_context("spawn")
    holders = ctx.Value("i", 0)
    reports = _run_workers(
        _lock_worker, (store_spec, namespace, 200, holders), WORKERS, timeout=300
    )
    assert sum(r["overlap"] for r in reports) == 0
    assert sum(r["held"] for r in reports) > 0
    assert sum(r["busy"] for r in reports) > 0, "the processes never actually raced"
    assert sum(r["held"] + r["busy"] for r in reports) == WORKERS * 200


def _hold_and_die(store_spec: str, ns: str, ttl: float, ready: Any) -> None:
    store = open_store(store_spec, Path("/nonexistent"))
    ctx = store.lock(ns, ttl_seconds=ttl)
    ctx.__enter__()
    ready.set()
    time.sleep(600)  # killed long before


def test_a_dead_holders_lock_is_taken_over_at_once(store_spec: str, namespace: str) -> None:
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    ttl = 900.0
    p = ctx.Process(target=_hold_and_die, args=(store_spec, namespace, ttl, ready))
    p.start()
    store = open_store(store_spec, Path("/nonexistent"))
    try:
        assert ready.wait(timeout=120), "the holder never took the lock"
        assert p.pid is not None
        assert_busy(store, namespace)  # alive: its lease holds
        os.kill(p.pid, signal.SIGKILL)  # no finally, no release
        p.join(timeout=30)
        # the holder process is gone: its lease (900 s left) is taken over now
        with store.lock(namespace, ttl_seconds=30) as token:
            assert token
    finally:
        if p.is_alive():
            p.kill()
        store.close()


def test_only_the_token_holder_releases(store_spec: str, namespace: str) -> None:
    """A holder whose lease expired and was taken over must not release the new lease."""
    first = open_store(store_spec, Path("/nonexistent"))
    second = open_store(store_spec, Path("/nonexistent"))
    try:
        # a live holder whose lease lapsed (its heartbeat could not renew it in time)
        stale = first.lock(namespace, ttl_seconds=0.0)
        token_a = stale.__enter__()
        taken: list[tuple[Any, str]] = []

        def take() -> bool:
            ctx = second.lock(namespace, ttl_seconds=60)
            try:
                taken.append((ctx, ctx.__enter__()))
            except LockBusy:
                return False
            return True

        wait_until(take, "the stale lease to expire", timeout=30, interval=0.05)
        fresh, token_b = taken[0]
        assert token_b != token_a
        stale.__exit__(None, None, None)  # the old holder finishes late and "releases"
        assert_busy(first, namespace)  # ... but the lock is still the second holder's
        fresh.__exit__(None, None, None)
        with first.lock(namespace) as token_c:  # the real holder's release frees it
            assert token_c not in (token_a, token_b)
    finally:
        first.close()
        second.close()



def test_two_writers_cannot_both_create_the_first_unit_of_a_key(
    store_spec: str, namespace: str
) -> None:
    """The race behind two active units per key, made deterministic: two engines read
    "no current unit" for a new key, then both commit a version-1 unit. The store must
    refuse the second (as it refuses a second active memory per text hash), so the loser's
    CAS retry sees the winner and supersedes or folds into it."""
    from reverie.core.models import Fact, Tier
    from reverie.core.ports import WriteBatch

    key = fact_key(Kind.SEMANTIC, "dana", "home city")

    def unit(obj: str) -> Memory:
        return Memory(
            id=uuid.uuid4().hex, namespace=namespace, kind=Kind.SEMANTIC, tier=Tier.UNIT,
            text=f"dana home city {obj}", fact=Fact("dana", "home city", obj), key=key,
            created_at=T0, sources=frozenset({obj}),
        )

    first = open_store(store_spec, Path("/nonexistent"))
    second = open_store(store_spec, Path("/nonexistent"))
    try:
        assert first.find_by_key(namespace, key) == second.find_by_key(namespace, key) == []
        first.commit(WriteBatch(namespace, (unit("Lisbon"),)))
        with pytest.raises(ConflictError):
            second.commit(WriteBatch(namespace, (unit("Oslo"),)))
        versions = first.find_by_key(namespace, key)
        assert sum(v.status is Status.ACTIVE for v in versions) == 1
    finally:
        first.close()
        second.close()
