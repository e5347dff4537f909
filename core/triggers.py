"""When maintenance is due: the five trigger signals, and the recent-retrievals window.

Checked at maintenance time (`MemoryEngine.maintenance_due`), not on every write, so
the write path stays one vector query cheap.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .models import Memory
from .policy import Policy
from .ports import RecordStore, Vector, VectorIndex

VectorsOf = Callable[[Sequence[Memory]], Vector]


@dataclass(frozen=True, slots=True)
class Trigger:
    """One reason maintenance is due: which signal fired, its value and the threshold."""

    name: str
    value: float
    threshold: float
    reason: str


def due_triggers(
    policy: Policy,
    *,
    active_nodes: int,
    recent_importance: Sequence[float],
    idle_hours: float | None,
    superseded: int,
    facts: int,
    largest_near_duplicate_group: int,
) -> list[Trigger]:
    """Which maintenance signals fire, each with its value, threshold and a sentence.

    - node count: active memories above `trigger_node_count`;
    - weak retrievals: the mean importance of the recent top-k hits (a full window of
      `trigger_retrieval_window`) below `trigger_mean_importance`;
    - idle: hours since the last write at least `trigger_idle_hours` (a quiet moment);
    - contradictions: superseded / (superseded + active units and crystals) above
      `trigger_contradiction_ratio`;
    - near-duplicates: some memory has more than `near_duplicate_trigger` neighbours
      at cosine >= `near_duplicate_similarity`.
    """
    fired: list[Trigger] = []
    if active_nodes > policy.maintenance.trigger_node_count:
        fired.append(Trigger(
            "node_count", float(active_nodes), float(policy.maintenance.trigger_node_count),
            f"{active_nodes} active memories, above {policy.maintenance.trigger_node_count}",
        ))
    window = policy.maintenance.trigger_retrieval_window
    if len(recent_importance) >= window:
        mean = float(np.mean(recent_importance[-window:]))
        if mean < policy.maintenance.trigger_mean_importance:
            fired.append(Trigger(
                "weak_retrievals", mean, policy.maintenance.trigger_mean_importance,
                f"mean importance of the last {window} retrieved memories is {mean:.3f}, "
                f"below {policy.maintenance.trigger_mean_importance}",
            ))
    if idle_hours is not None and idle_hours >= policy.maintenance.trigger_idle_hours:
        fired.append(Trigger(
            "idle", idle_hours, policy.maintenance.trigger_idle_hours,
            f"no write for {idle_hours:.1f} h (at least {policy.maintenance.trigger_idle_hours} h)",
        ))
    total = superseded + facts
    if total:
        ratio = superseded / total
        if ratio > policy.maintenance.trigger_contradiction_ratio:
            fired.append(Trigger(
                "contradictions", ratio, policy.maintenance.trigger_contradiction_ratio,
                f"{superseded} of {total} facts were superseded ({ratio:.1%}), above "
                f"{policy.maintenance.trigger_contradiction_ratio:.0%}",
            ))
    if largest_near_duplicate_group > policy.maintenance.near_duplicate_trigger:
        fired.append(Trigger(
            "near_duplicates", float(largest_near_duplicate_group),
            float(policy.maintenance.near_duplicate_trigger),
            f"a memory has {largest_near_duplicate_group} near-duplicates (cosine >= "
            f"{policy.maintenance.near_duplicate_similarity}), more than "
            f"{policy.maintenance.near_duplicate_trigger}",
        ))
    return fired


class RetrievalLog:
    """The importance of recently retrieved memories, per namespace, in a bounded window:
    the engine notes every recall's top-k here, the weak-retrievals trigger reads it.
    In-process only (a restarted process starts with an empty window, so the trigger
    cannot fire on stale evidence)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._by_ns: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def note(self, namespace: str, importances: Iterable[float]) -> None:
        with self._lock:
            window = self._by_ns.setdefault(namespace, deque(maxlen=self._size))
            window.extend(importances)

    def recent(self, namespace: str) -> list[float]:
        with self._lock:
            return list(self._by_ns.get(namespace, ()))


LastWrite = Callable[[str], datetime | None]
NewestActive = Callable[[str, int], list[Memory]]


def _recent_by_scan(
    store: RecordStore, namespace: str, limit: int
) -> tuple[datetime | None, list[Memory]]:
    """The time of the last write and the `limit` newest active memories, by one streamed
    scan of the namespace (a store that cannot answer them directly)."""
    last_write: datetime | None = None
    newest: deque[Memory] = deque(maxlen=limit)
    for m in store.scan(namespace):
        stamp = m.updated_at or m.created_at
        last_write = stamp if last_write is None else max(last_write, stamp)
        if m.is_active:
            newest.append(m)
    return last_write, list(newest)


_NEAR_GROWTH = 4  # how much wider each further look for active near-duplicates reaches
_NEAR_MAX_FETCH = 512  # the widest look: near-duplicates past it are not counted


def _active_near(
    store: RecordStore, vectors: VectorIndex, namespace: str, mid: str, vec: Vector, k: int,
    bar: float,
) -> int:
    """How many active memories other than `mid` lie within cosine `bar` of `vec`, up to
    `k - 1`. The index keeps no status, so its nearest are read against the records; when
    all of them are that near and too few are active (a cluster consolidated around a
    newer text), the look widens."""
    fetch = k
    while True:
        hits = vectors.query(namespace, vec, fetch)
        close = [h.id for h in hits if h.id != mid and h.similarity >= bar]
        live = sum(1 for r in store.get_many(namespace, close).values() if r.is_active)
        if (
            live >= k - 1 or len(hits) < fetch or hits[-1].similarity < bar
            or fetch >= _NEAR_MAX_FETCH
        ):
            return min(live, k - 1)
        fetch = min(fetch * _NEAR_GROWTH, _NEAR_MAX_FETCH)


def check_triggers(
    store: RecordStore,
    vectors: VectorIndex,
    namespace: str,
    now: datetime,
    policy: Policy,
    recent_importance: Sequence[float],
    vectors_of: VectorsOf,
    last_write: LastWrite | None = None,
    newest_active: NewestActive | None = None,
) -> list[Trigger]:
    """Gather the signals `due_triggers` judges: the store's counts, the time of the last
    write and the `trigger_duplicate_sample` newest active memories (asked of the store
    directly where it can answer, `KnowsRecentWrites`; else one streamed scan), and, for
    near-duplicates, one vector query for each of those memories: checked here, at
    maintenance time, rather than on every insert, so the write path stays one vector
    query cheap."""
    counts = store.count(namespace)
    limit = policy.maintenance.trigger_duplicate_sample
    if last_write is not None and newest_active is not None:
        latest, newest = last_write(namespace), newest_active(namespace, limit)
    else:
        latest, newest = _recent_by_scan(store, namespace, limit)
    idle = None if latest is None else max(0.0, (now - latest).total_seconds() / 3600.0)
    largest = 0
    sample = sorted(newest, key=lambda m: (m.created_at, m.id))
    if sample:
        k = policy.maintenance.near_duplicate_trigger + 2
        bar = policy.maintenance.near_duplicate_similarity
        for m, vec in zip(sample, vectors_of(sample), strict=True):
            largest = max(largest, _active_near(store, vectors, namespace, m.id, vec, k, bar))
    return due_triggers(
        policy,
        active_nodes=counts.get("status:active", 0),
        recent_importance=recent_importance,
        idle_hours=idle,
        superseded=counts.get("status:superseded", 0),
        facts=counts.get("tier:unit", 0) + counts.get("tier:crystal", 0),
        largest_near_duplicate_group=largest,
    )
