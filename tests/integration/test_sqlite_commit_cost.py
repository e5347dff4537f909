"""The REM commit costs the same per cluster whatever the size of the SQLite store.

Time is a poor witness on a shared machine, so these tests count SQLite's virtual-machine
instructions (a progress handler called on every instruction) for the same work in a
small and in a large store: a read by key grows with the B-tree's depth (a few percent
here), a scan grows with the store (10x here). Before the fix, `edges()` answered
`dst IN (...)` by scanning every edge of the namespace, so each cluster of a cycle cost
more than the last; a cycle over 50k memories grew like n^1.9.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reverie.core import Kind, Memory, Status, Tier
from reverie.core.consolidation import commit_group
from reverie.core.models import Edge, EdgeType
from reverie.core.policy import Policy
from reverie.core.ports import WriteBatch
from reverie.core.synthesis import SynthesisPayload
from reverie.integrations.sqlite.store import SQLiteStore

NS = "cost"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
SMALL, LARGE = 300, 3000
# B-tree depth may add a level between the two sizes; a scan would multiply by 10
ALLOWED_GROWTH = 1.5


@contextmanager
def counting(store: SQLiteStore) -> Iterator[Callable[[], int]]:
    """Counts the SQLite VM instructions executed inside the block."""
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0  # 0: carry on

    conn = store._db.connection()  # the test measures this store's own connection
    conn.set_progress_handler(tick, 1)
    try:
        yield lambda: steps
    finally:
        conn.set_progress_handler(None, 1)


def filled(path: Path, n: int) -> SQLiteStore:
    """n memories in a chain of ENTITY edges (i -> i+1), like a long conversation."""
    store = SQLiteStore(path)
    mems = tuple(
        Memory(
            id=f"m{i:05d}",
            namespace=NS,
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text=f"note {i}: the user mentioned item {i} at the office",
            created_at=T0 + timedelta(minutes=i),
            importance=0.2,
            sources=frozenset({f"s{i}"}),
        )
        for i in range(n)
    )
    edges = tuple(
        Edge(f"m{i:05d}", f"m{i + 1:05d}", EdgeType.ENTITY, 0.5) for i in range(n - 1)
    )
    store.commit(WriteBatch(NS, mems, edges))
    return store


def test_edges_by_id_read_does_not_scan_the_namespace(tmp_path: Path) -> None:
    counts = {}
    for n in (SMALL, LARGE):
        store = filled(tmp_path / f"{n}.db", n)
        try:
            with counting(store) as steps:
                found = store.edges(NS, ["m00100", "m00101"])
            counts[n] = steps()
        finally:
            store.close()
        assert {(e.src, e.dst) for e in found} == {
            ("m00099", "m00100"), ("m00100", "m00101"), ("m00101", "m00102")
        }  # both directions, each edge once
    assert counts[LARGE] <= ALLOWED_GROWTH * counts[SMALL], counts


def test_commit_group_cost_does_not_grow_with_the_store(tmp_path: Path) -> None:
    counts = {}
    for n in (SMALL, LARGE):
        store = filled(tmp_path / f"{n}.db", n)
        try:
            ids = ["m00100", "m00101", "m00102"]
            members = list(store.get_many(NS, ids).values())
            payload = SynthesisPayload(
                "the user mentioned items 100 to 102 at the office", (), (), (), 0.2
            )
            with counting(store) as steps:
                node = commit_group(store, NS, members, payload, T0, Policy())
            counts[n] = steps()
            # the work itself, so the count is of a real commit: node in, edges moved
            assert node.is_active and node.derived_from == set(ids)
            outside = {(e.src, e.dst) for e in store.edges(NS, [node.id])}
            assert ("m00099", node.id) in outside and (node.id, "m00103") in outside
            retired = store.get_many(NS, ids)
            assert all(m.status is Status.CONSOLIDATED for m in retired.values())
        finally:
            store.close()
    assert counts[LARGE] <= ALLOWED_GROWTH * counts[SMALL], counts
