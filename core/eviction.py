"""The end of the lifecycle: the forget cascade, garbage collection and the sweep.

Three rules hold here (DESIGN.md, "Eviction and GC"):

- `forget` is real deletion for privacy, and a synthesis is made *of* its members'
  text. So forgetting a memory also hard-deletes every synthesis node derived from it,
  transitively (a synthesis of syntheses repeats the text too). The deleted nodes'
  other members are restored (`consolidated`/`archived` -> `active`, `consolidated_into`
  cleared) so a later cycle re-consolidates them without the forgotten text. We drop and
  restore rather than re-synthesize: it needs no LLM, is correct whatever the
  synthesizer wrote, and a re-synthesis happens anyway at the next cycle.
- GC deletes, for real, archived memories whose decayed salience is below
  `policy.gc_salience`, except `retention_exempt` ones (a compliance hold). Archived
  memories only: anything still active is first distilled by the sweep.
- The sweep distils before it archives (see `sweep`).

Deletion order is privacy first: the store deletes the records, their edges and
lexical entries in one transaction, then members are restored. A crash in between
leaves members pointing at a missing node, which `restore_orphans` (run by every
forget and every GC) repairs; it never leaves the forgotten text behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from .clustering import DEFAULT_STRATEGY, ClusterInput, make_clusterer
from .consolidation import PLAN_KEY, ClusterStale, commit_group, synthesize_all
from .models import Memory, Status, Tier
from .ports import RecordStore, Synthesizer, Vector, WriteBatch
from .scoring import decay_score, never_decays
from .text import content_hash

if TYPE_CHECKING:
    from .engine import MemoryEngine

# statuses a member of a synthesis can have; the sweep archives consolidated members
_MEMBER_STATUSES = (Status.CONSOLIDATED, Status.ARCHIVED)


# ---------------------------------------------------------------------------- forget


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What one `forget` did. `deleted` counts every record removed, cascade included."""

    requested: tuple[str, ...]
    deleted: int
    cascaded: tuple[str, ...]  # synthesis nodes deleted because they held forgotten text
    restored: tuple[str, ...]  # their surviving members, active again
    archived: tuple[str, ...]  # surviving members archived instead (an active twin exists)


def _derivation_index(
    store: RecordStore, namespace: str
) -> tuple[dict[str, Memory], dict[str, set[str]]]:
    """Synthesis nodes by id, and for each memory the synthesis nodes built from it.

    Both directions are read: a node's `derived_from` and a member's `consolidated_into`
    (GC may re-point a member to the node that absorbed its own synthesis)."""
    nodes = {m.id: m for m in store.scan(namespace, tiers=[Tier.SYNTHESIS])}
    parents: dict[str, set[str]] = {}
    for node in nodes.values():
        for member in node.derived_from:
            parents.setdefault(member, set()).add(node.id)
    for m in store.scan(namespace, statuses=_MEMBER_STATUSES):
        if m.consolidated_into is not None:
            parents.setdefault(m.id, set()).add(m.consolidated_into)
    return nodes, parents


def derived_closure(store: RecordStore, namespace: str, ids: Iterable[str]) -> set[str]:
    """Every synthesis node whose text was made (directly or through other syntheses)
    from any of `ids`."""
    _, parents = _derivation_index(store, namespace)
    return _closure(parents, set(ids))


def _closure(parents: dict[str, set[str]], start: set[str]) -> set[str]:
    found: set[str] = set()
    frontier = list(start)
    while frontier:
        for p in parents.get(frontier.pop(), ()):
            if p not in found and p not in start:
                found.add(p)
                frontier.append(p)
    return found


def forget_cascade(engine: MemoryEngine, namespace: str, ids: Sequence[str]) -> ForgetReport:
    """Delete `ids` and every synthesis derived from them; restore the other members."""
    store = engine.store
    wanted = list(dict.fromkeys(ids))
    nodes, parents = _derivation_index(store, namespace)
    doomed_nodes = _closure(parents, set(wanted))
    doomed = set(wanted) | doomed_nodes
    # members of the deleted nodes that survive: the node's list and the back-pointers
    survivors: set[str] = set()
    for n in doomed_nodes:
        node = nodes.get(n)
        if node is not None:
            survivors |= node.derived_from
    survivors |= {m for m, ps in parents.items() if ps & doomed_nodes}
    survivors -= doomed
    deleted = store.delete(namespace, sorted(doomed))
    engine.vectors.delete(namespace, sorted(doomed))
    _scrub_plan(store, namespace, doomed)
    restored, archived = restore_orphans(engine, namespace, survivors)
    return ForgetReport(
        requested=tuple(wanted),
        deleted=deleted,
        cascaded=tuple(sorted(doomed_nodes)),
        restored=tuple(restored),
        archived=tuple(archived),
    )


def _scrub_plan(store: RecordStore, namespace: str, doomed: set[str]) -> None:
    """The cycle journals each planned cluster with its synthesis text (to roll an
    interrupted cycle forward). A cluster that drew on a deleted memory leaves the plan:
    its text must not survive there, nor be written back by a resumed cycle."""
    plan = store.journal_get(namespace, PLAN_KEY)
    if plan is None:
        return
    clusters = list(plan.get("clusters", []))
    kept = [c for c in clusters if not doomed.intersection(map(str, c.get("members", [])))]
    if len(kept) != len(clusters):
        store.journal_put(namespace, PLAN_KEY, {**plan, "clusters": kept})


def restore_orphans(
    engine: MemoryEngine, namespace: str, candidates: Iterable[str] | None = None
) -> tuple[list[str], list[str]]:
    """Members whose `consolidated_into` names a node that no longer exists become
    active again, so no memory is left consolidated into nothing.

    A member whose text (free text) or fact key (units) now has an active holder is
    archived instead: restoring it would duplicate the text or revive a stale value.
    `candidates=None` checks the whole namespace (GC does, to finish an interrupted
    forget). Returns (restored ids, archived ids)."""
    store = engine.store

    def attempt() -> tuple[list[Memory], list[str], list[str]]:
        if candidates is None:
            members = list(store.scan(namespace, statuses=_MEMBER_STATUSES))
        else:
            members = list(store.get_many(namespace, sorted(set(candidates))).values())
        members = [m for m in members if m.consolidated_into is not None]
        targets = {m.consolidated_into for m in members if m.consolidated_into}
        alive = set(store.get_many(namespace, sorted(targets)))
        orphans = sorted(
            (m for m in members if m.consolidated_into not in alive),
            key=lambda m: (m.created_at, m.id),
        )
        if not orphans:
            return [], [], []
        now = engine.clock.now()
        taken_hashes: set[str] = set()
        taken_keys: set[str] = set()
        puts: list[Memory] = []
        restored: list[str] = []
        archived: list[str] = []
        for m in orphans:
            if m.status not in _MEMBER_STATUSES:
                puts.append(m.evolve(consolidated_into=None, updated_at=now))
                continue
            if m.key is None:
                digest = content_hash(m.text)
                twin = store.find_by_hash(namespace, digest)
                clash = (twin is not None and twin.id != m.id) or digest in taken_hashes
                taken_hashes.add(digest)
            else:
                holders = [v for v in store.find_by_key(namespace, m.key) if v.is_active]
                clash = any(v.id != m.id for v in holders) or m.key in taken_keys
                taken_keys.add(m.key)
            status = Status.ARCHIVED if clash else Status.ACTIVE
            puts.append(m.evolve(status=status, consolidated_into=None, updated_at=now))
            (archived if clash else restored).append(m.id)
        store.commit(WriteBatch(namespace, tuple(puts)))
        return puts, restored, archived

    puts, restored, archived = engine._retrying(attempt)
    if puts:
        engine._index(namespace, [], puts)
    return restored, archived


# ---------------------------------------------------------------------------- GC


@dataclass(slots=True)
class GcReport:
    """What a GC pass found and (unless `dry_run`) deleted."""

    dry_run: bool
    namespaces: int = 0
    archived_examined: int = 0
    deleted: int = 0
    kept_exempt: int = 0  # below the threshold but under a retention hold
    repointed: int = 0  # members moved from a deleted synthesis to the node that absorbed it
    orphans_restored: int = 0
    deleted_ids: list[str] = field(default_factory=list)
    per_namespace: dict[str, dict[str, int]] = field(default_factory=dict)


def gc_candidate(memory: Memory, now: datetime, engine: MemoryEngine) -> bool:
    """Archived, decayed below `gc_salience`, not pinned, not a crystal, not exempt."""
    return (
        memory.status is Status.ARCHIVED
        and not memory.retention_exempt
        and not never_decays(memory)
        and decay_score(memory, now, engine.policy) < engine.policy.gc_salience
    )


def gc(
    engine: MemoryEngine,
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> GcReport:
    """Delete archived memories that decayed below `policy.gc_salience` (0.01).

    An archived synthesis node that still summarizes consolidated members is deleted
    only when it was itself absorbed into a live node: its members are re-pointed to
    that node (which carries the text), so no member is left consolidated into nothing.
    Otherwise it stays (it is the only remaining text of its members)."""
    report = GcReport(dry_run=dry_run)
    spaces = [engine._ns(namespace)] if namespace is not None else engine.store.namespaces()
    now = engine.clock.now()
    for ns in spaces:
        stats = _gc_namespace(engine, ns, now, dry_run, report, progress)
        report.per_namespace[ns] = stats
        report.namespaces += 1
    return report


def _gc_namespace(
    engine: MemoryEngine,
    ns: str,
    now: datetime,
    dry_run: bool,
    report: GcReport,
    progress: Callable[[int], None] | None,
) -> dict[str, int]:
    store = engine.store
    stats = {"examined": 0, "deleted": 0, "kept_exempt": 0, "repointed": 0, "restored": 0}
    if not dry_run:
        restored, archived = restore_orphans(engine, ns)
        stats["restored"] = len(restored) + len(archived)
    doomed: dict[str, Memory] = {}
    for m in store.scan(ns, statuses=[Status.ARCHIVED]):
        stats["examined"] += 1
        if progress is not None:
            progress(1)
        if decay_score(m, now, engine.policy) >= engine.policy.gc_salience or never_decays(m):
            continue
        if m.retention_exempt:
            stats["kept_exempt"] += 1
            continue
        doomed[m.id] = m
    # a synthesis among them: its members must have somewhere to point. Keep any node
    # with a surviving member and no live node above it, until nothing changes.
    repoint: list[Memory] = []
    if any(m.tier is Tier.SYNTHESIS for m in doomed.values()):
        pointing = [
            m for m in store.scan(ns, statuses=_MEMBER_STATUSES) if m.consolidated_into
        ]
        changed = True
        while changed:
            changed = False
            for m in pointing:
                target = m.consolidated_into
                if m.id in doomed or target not in doomed:
                    continue
                if _live_heir(doomed, target, store, ns) is None:
                    del doomed[target]
                    changed = True
        for m in pointing:
            if m.id not in doomed and m.consolidated_into in doomed:
                heir = _live_heir(doomed, m.consolidated_into, store, ns)
                repoint.append(m.evolve(consolidated_into=heir, updated_at=now))
    stats["deleted"] = len(doomed)
    stats["repointed"] = len(repoint)
    if not dry_run and doomed:
        if repoint:
            store.commit(WriteBatch(ns, tuple(repoint)))
        store.delete(ns, sorted(doomed))
        engine.vectors.delete(ns, sorted(doomed))
    report.archived_examined += stats["examined"]
    report.deleted += stats["deleted"]
    report.kept_exempt += stats["kept_exempt"]
    report.repointed += stats["repointed"]
    report.orphans_restored += stats["restored"]
    report.deleted_ids.extend(sorted(doomed))
    return stats


def _live_heir(
    doomed: dict[str, Memory], node_id: str, store: RecordStore, ns: str
) -> str | None:
    """The nearest node up the `consolidated_into` chain that GC keeps."""
    seen: set[str] = set()
    cur: str | None = node_id
    while cur is not None and cur not in seen:
        seen.add(cur)
        m = doomed.get(cur) or store.get(ns, cur)
        if m is None:
            return None
        if cur != node_id and cur not in doomed:
            return cur
        cur = m.consolidated_into
    return None


# ---------------------------------------------------------------------------- sweep


@dataclass(slots=True)
class SweepReport:
    """What a sweep found and (unless `dry_run`) did.

    `groups` lists the member ids of each synthesis written (or, in a dry run, that
    would be written); `kept_lone` are candidates left active because nothing decayed
    near them to distil them with (they wait for the next sweep)."""

    dry_run: bool
    namespaces: int = 0
    examined: int = 0
    candidates: int = 0
    syntheses: int = 0
    archived: int = 0
    kept_lone: int = 0
    evicted_by_cap: int = 0
    cap_consolidated: bool = False
    fallbacks: int = 0
    groups: list[list[str]] = field(default_factory=list)
    per_namespace: dict[str, dict[str, int]] = field(default_factory=dict)


def sweep_candidate(memory: Memory, now: datetime, engine: MemoryEngine) -> bool:
    """Active, decays (not a crystal, not pinned), not a synthesis, decayed below
    `evict_salience`. Retention-exempt memories are swept like any other: archiving
    keeps them (and GC never deletes them); the hold is on deletion, not on leaving the
    active set. A synthesis is already the distilled form: archiving it would take its
    members' only active text out of recall, so it stays (the hard cap can still evict
    it)."""
    return (
        memory.is_active
        and memory.tier is not Tier.SYNTHESIS
        and not never_decays(memory)
        and decay_score(memory, now, engine.policy) < engine.policy.evict_salience
    )


def group_candidates(
    engine: MemoryEngine, candidates: Sequence[Memory], vectors: Vector | None
) -> tuple[list[list[Memory]], list[Memory]]:
    """Groups to distil: first by meaning (the cycle's default clusterer over the
    candidates' vectors); the rest become time-ordered digests of at most
    `policy.sweep_digest_size`, the important ones (importance above
    `policy.high_importance`) apart from the rest so a vital fact is not buried among
    small talk. A band with a single leftover keeps it active, alone."""
    if not candidates:
        return [], []
    groups: list[list[Memory]] = []
    if len(candidates) >= 2 and vectors is not None:
        items = ClusterInput(
            ids=[m.id for m in candidates],
            vectors=vectors,
            importance=np.array([m.importance for m in candidates], dtype=np.float64),
            entities=[m.entities for m in candidates],
        )
        for g in make_clusterer(DEFAULT_STRATEGY)(items, engine.policy):
            groups.append(sorted((candidates[i] for i in g), key=lambda m: (m.created_at, m.id)))
    grouped = {m.id for g in groups for m in g}
    ordered = sorted(
        (m for m in candidates if m.id not in grouped), key=lambda m: (m.created_at, m.id)
    )
    high = engine.policy.high_importance
    lone: list[Memory] = []
    for band in (
        [m for m in ordered if m.importance > high],
        [m for m in ordered if m.importance <= high],
    ):
        digests = time_runs(band, engine.policy.sweep_digest_size)
        groups.extend(d for d in digests if len(d) >= 2)
        lone.extend(m for d in digests if len(d) < 2 for m in d)
    return groups, lone


def time_runs(ordered: Sequence[Memory], cap: int) -> list[list[Memory]]:
    """`ordered` cut into the fewest runs of at most `cap` (at least 2), sizes as equal
    as possible, so no run is a leftover of one when two or more remain."""
    cap = max(2, cap)
    if not ordered:
        return []
    runs = -(-len(ordered) // cap)  # ceil
    size, extra = divmod(len(ordered), runs)
    out: list[list[Memory]] = []
    start = 0
    for r in range(runs):
        end = start + size + (1 if r < extra else 0)
        out.append(list(ordered[start:end]))
        start = end
    return out


def sweep(
    engine: MemoryEngine,
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
    synthesizer: Synthesizer | None = None,
) -> SweepReport:
    """Distil, then archive, memories whose decayed salience fell below
    `policy.evict_salience` (0.15); crystals and pinned memories are never swept.

    Each group is synthesized and written as one synthesis node with the cycle's own
    journaled `commit_group`, then its members are archived (they keep
    `consolidated_into`, so the forget cascade and GC can follow them). A namespace over
    `policy.hard_cap_per_namespace` active memories is then merged first (one
    consolidation cycle) and, if still over, its lowest-salience memories are archived
    as they are until it fits."""
    report = SweepReport(dry_run=dry_run)
    spaces = [engine._ns(namespace)] if namespace is not None else engine.store.namespaces()
    for ns in spaces:
        report.per_namespace[ns] = _sweep_namespace(
            engine, ns, dry_run, progress, synthesizer, report
        )
        report.namespaces += 1
    return report


def _sweep_namespace(
    engine: MemoryEngine,
    ns: str,
    dry_run: bool,
    progress: Callable[[int], None] | None,
    synthesizer: Synthesizer | None,
    report: SweepReport,
) -> dict[str, int]:
    store = engine.store
    now = engine.clock.now()
    stats = {"examined": 0, "candidates": 0, "syntheses": 0, "archived": 0, "kept_lone": 0,
             "evicted_by_cap": 0, "fallbacks": 0}
    active = list(store.scan(ns, statuses=[Status.ACTIVE]))
    stats["examined"] = len(active)
    candidates = [m for m in active if sweep_candidate(m, now, engine)]
    stats["candidates"] = len(candidates)
    vectors = engine._embed_memories(candidates) if len(candidates) >= 2 else None
    groups, lone = group_candidates(engine, candidates, vectors)
    stats["kept_lone"] = len(lone)
    report.groups.extend([m.id for m in g] for g in groups)
    if dry_run:
        stats["syntheses"] = len(groups)
        stats["archived"] = sum(len(g) for g in groups)
    elif groups:
        syn = synthesizer if synthesizer is not None else getattr(engine, "synthesizer", None)
        results = synthesize_all(groups, syn, engine.policy)
        with store.lock(ns, engine.policy.consolidation_lock_seconds):
            for g, result in zip(groups, results, strict=True):
                try:
                    node = commit_group(
                        store, ns, g, result.payload, engine.clock.now(), engine.policy,
                        synthesizer=result.synthesizer,
                    )
                except ClusterStale:  # a member changed meanwhile: leave the group alone
                    continue
                archived = _archive_members(engine, ns, node)
                engine._index(ns, [(node, engine._embed_memories([node])[0])], archived)
                stats["syntheses"] += 1
                stats["archived"] += len(archived)
                stats["fallbacks"] += int(result.fell_back)
                if progress is not None:
                    progress(len(g))
    active_left = len(active) - stats["archived"] + stats["syntheses"]
    if active_left > engine.policy.hard_cap_per_namespace:
        stats["evicted_by_cap"] = _enforce_cap(engine, ns, dry_run, active_left, report)
    for k, v in stats.items():
        setattr(report, k, getattr(report, k) + v)
    return stats


def _archive_members(engine: MemoryEngine, ns: str, node: Memory) -> list[Memory]:
    """The members the node now stands for leave the active set as `archived`, keeping
    `consolidated_into` (so forget and GC can follow them to the node)."""
    store = engine.store

    def attempt() -> list[Memory]:
        cur = store.get_many(ns, sorted(node.derived_from))
        puts = tuple(
            m.evolve(status=Status.ARCHIVED, updated_at=engine.clock.now())
            for m in cur.values()
            if m.status is Status.CONSOLIDATED and m.consolidated_into == node.id
        )
        if puts:
            store.commit(WriteBatch(ns, puts))
        return list(puts)

    return engine._retrying(attempt)


def _enforce_cap(
    engine: MemoryEngine, ns: str, dry_run: bool, active: int, report: SweepReport
) -> int:
    """Merge first (a consolidation cycle), then archive the lowest decay scores."""
    cap = engine.policy.hard_cap_per_namespace
    consolidate = getattr(engine, "consolidate", None)
    if not dry_run and consolidate is not None:
        consolidate(ns)
        report.cap_consolidated = True
    now = engine.clock.now()
    active_now = list(engine.store.scan(ns, statuses=[Status.ACTIVE]))
    over = len(active_now) - cap if not dry_run else active - cap
    if over <= 0:
        return 0
    evictable = sorted(
        (m for m in active_now if not never_decays(m)),
        key=lambda m: (decay_score(m, now, engine.policy), m.created_at, m.id),
    )[:over]
    if dry_run or not evictable:
        return len(evictable)

    def archive() -> list[Memory]:
        cur = engine.store.get_many(ns, [m.id for m in evictable])
        puts = tuple(
            m.evolve(status=Status.ARCHIVED, updated_at=now)
            for m in cur.values() if m.is_active
        )
        engine.store.commit(WriteBatch(ns, puts))
        return list(puts)

    done = engine._retrying(archive)
    engine._index(ns, [], done)
    return len(done)
