"""Real deletion: the forget cascade, restoring orphaned members, and garbage collection.

Two rules hold here (DESIGN.md, "Eviction and GC"):

- `forget` is real deletion for privacy, and a synthesis is made *of* its members'
  text. So forgetting a memory also hard-deletes every synthesis node derived from it,
  transitively (a synthesis of syntheses repeats the text too). The deleted nodes'
  other members are restored (`consolidated`/`archived` -> `active`, `consolidated_into`
  cleared) so a later cycle re-consolidates them without the forgotten text. We drop and
  restore rather than re-synthesize: it needs no LLM, is correct whatever the
  synthesizer wrote, and a re-synthesis happens anyway at the next cycle.
- GC deletes, for real, archived memories whose decayed salience is below
  `policy.maintenance.gc_salience`, except `retention_exempt` ones (a compliance hold). Archived
  memories only: anything still active is first distilled by the sweep
  (core/eviction.py).

Deletion order is privacy first: the store deletes the records, their edges and
lexical entries in one transaction, then members are restored. A crash in between
leaves members pointing at a missing node, which `restore_orphans` (run by every
forget and every GC) repairs; it never leaves the forgotten text behind.

Everything here gets what it needs from the engine explicitly, as `EvictionDeps`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .cas import retry_conflicts
from .consolidation import PLAN_KEY
from .models import Memory, Status, Tier
from .policy import Policy
from .ports import Clock, RecordStore, Synthesizer, Vector, VectorIndex, WriteBatch
from .scoring import decay_score, never_decays
from .text import content_hash

# statuses a member of a synthesis can have; the sweep archives consolidated members
MEMBER_STATUSES = (Status.CONSOLIDATED, Status.ARCHIVED)

# (namespace, new memories with their vectors, memories whose status changed)
IndexChanges = Callable[[str, Sequence[tuple[Memory, Vector]], Sequence[Memory]], None]


@dataclass(frozen=True, slots=True)
class EvictionDeps:
    """What forget, GC and the sweep need from the engine, as plain values and callables
    (core does no I/O of its own)."""

    store: RecordStore
    vectors: VectorIndex
    policy: Policy
    clock: Clock
    namespace: Callable[[str | None], str]  # the namespace a call means, writes settled
    index: IndexChanges  # bring the vector index in step after the records
    embed_memories: Callable[[Sequence[Memory]], Vector]
    consolidate: Callable[[str], object] | None = None  # the hard cap's merge step
    synthesizer: Synthesizer | None = None  # the sweep's distiller (None: extractive)


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
    for m in store.scan(namespace, statuses=MEMBER_STATUSES):
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


def forget_cascade(deps: EvictionDeps, namespace: str, ids: Sequence[str]) -> ForgetReport:
    """Delete `ids` and every synthesis derived from them; restore the other members."""
    store = deps.store
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
    deps.vectors.delete(namespace, sorted(doomed))
    _scrub_plan(store, namespace, doomed)
    restored, archived = restore_orphans(deps, namespace, survivors)
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
    deps: EvictionDeps, namespace: str, candidates: Iterable[str] | None = None
) -> tuple[list[str], list[str]]:
    """Members whose `consolidated_into` names a node that no longer exists become
    active again, so no memory is left consolidated into nothing.

    A member whose text (free text) or fact key (units) now has an active holder is
    archived instead: restoring it would duplicate the text or revive a stale value.
    `candidates=None` checks the whole namespace (GC does, to finish an interrupted
    forget). Returns (restored ids, archived ids)."""
    store = deps.store

    def attempt() -> tuple[list[Memory], list[str], list[str]]:
        if candidates is None:
            members = list(store.scan(namespace, statuses=MEMBER_STATUSES))
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
        now = deps.clock.now()
        taken_hashes: set[str] = set()
        taken_keys: set[str] = set()
        puts: list[Memory] = []
        restored: list[str] = []
        archived: list[str] = []
        for m in orphans:
            if m.status not in MEMBER_STATUSES:
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

    puts, restored, archived = retry_conflicts(attempt)
    if puts:
        deps.index(namespace, [], puts)
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


def gc_candidate(memory: Memory, now: datetime, policy: Policy) -> bool:
    """Archived, decayed below `gc_salience`, not pinned, not a crystal, not exempt."""
    return (
        memory.status is Status.ARCHIVED
        and not memory.retention_exempt
        and not never_decays(memory)
        and decay_score(memory, now, policy) < policy.maintenance.gc_salience
    )


def gc(
    deps: EvictionDeps,
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> GcReport:
    """Delete archived memories that decayed below `policy.maintenance.gc_salience` (0.01).

    An archived synthesis node that still summarizes consolidated members is deleted
    only when it was itself absorbed into a live node: its members are re-pointed to
    that node (which carries the text), so no member is left consolidated into nothing.
    Otherwise it stays (it is the only remaining text of its members)."""
    report = GcReport(dry_run=dry_run)
    spaces = [deps.namespace(namespace)] if namespace is not None else deps.store.namespaces()
    now = deps.clock.now()
    for ns in spaces:
        stats = _gc_namespace(deps, ns, now, dry_run, report, progress)
        report.per_namespace[ns] = stats
        report.namespaces += 1
    return report


def _gc_namespace(
    deps: EvictionDeps,
    ns: str,
    now: datetime,
    dry_run: bool,
    report: GcReport,
    progress: Callable[[int], None] | None,
) -> dict[str, int]:
    store = deps.store
    stats = {"examined": 0, "deleted": 0, "kept_exempt": 0, "repointed": 0, "restored": 0}
    if not dry_run:
        restored, archived = restore_orphans(deps, ns)
        stats["restored"] = len(restored) + len(archived)
    doomed: dict[str, Memory] = {}
    for m in store.scan(ns, statuses=[Status.ARCHIVED]):
        stats["examined"] += 1
        if progress is not None:
            progress(1)
        floor = deps.policy.maintenance.gc_salience
        if decay_score(m, now, deps.policy) >= floor or never_decays(m):
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
            m for m in store.scan(ns, statuses=MEMBER_STATUSES) if m.consolidated_into
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
        deps.vectors.delete(ns, sorted(doomed))
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
