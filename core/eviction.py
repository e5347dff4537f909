"""The sweep: distil, then archive, memories that decayed out of use; the hard cap.

Memories whose decayed salience fell below `policy.maintenance.evict_salience` are summarised
first and archived after (distil, not delete; DESIGN.md, "Eviction and GC"): each
group becomes one synthesis node through the REM cycle's own journaled commit, and
its members are archived, keeping `consolidated_into` so the forget cascade and GC
(core/deletion.py) can follow them. A namespace over its hard cap is merged first and
then trimmed by lowest salience.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from .cas import retry_conflicts
from .clustering import DEFAULT_STRATEGY, ClusterInput, make_clusterer
from .commit import ClusterStale, commit_group
from .consolidation import synthesize_all
from .deletion import (
    MEMBER_STATUSES,
    EvictionDeps,
    ForgetReport,
    GcReport,
    derived_closure,
    forget_cascade,
    gc,
    gc_candidate,
    restore_orphans,
)
from .models import Memory, Status, Tier
from .policy import Policy
from .ports import Synthesizer, Vector, WriteBatch
from .scoring import decay_score, never_decays

__all__ = [
    "MEMBER_STATUSES",
    "EvictionDeps",
    "ForgetReport",
    "GcReport",
    "SweepReport",
    "derived_closure",
    "forget_cascade",
    "gc",
    "gc_candidate",
    "group_candidates",
    "restore_orphans",
    "sweep",
    "sweep_candidate",
    "time_runs",
]


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


def sweep_candidate(memory: Memory, now: datetime, policy: Policy) -> bool:
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
        and decay_score(memory, now, policy) < policy.maintenance.evict_salience
    )


def group_candidates(
    policy: Policy, candidates: Sequence[Memory], vectors: Vector | None
) -> tuple[list[list[Memory]], list[Memory]]:
    """Groups to distil: first by meaning (the cycle's default clusterer over the
    candidates' vectors); the rest become time-ordered digests of at most
    `policy.maintenance.sweep_digest_size`, the important ones (importance above
    `policy.decay.high_importance`) apart from the rest so a vital fact is not buried among
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
        for g in make_clusterer(DEFAULT_STRATEGY)(items, policy):
            groups.append(sorted((candidates[i] for i in g), key=lambda m: (m.created_at, m.id)))
    grouped = {m.id for g in groups for m in g}
    ordered = sorted(
        (m for m in candidates if m.id not in grouped), key=lambda m: (m.created_at, m.id)
    )
    high = policy.decay.high_importance
    lone: list[Memory] = []
    for band in (
        [m for m in ordered if m.importance > high],
        [m for m in ordered if m.importance <= high],
    ):
        digests = time_runs(band, policy.maintenance.sweep_digest_size)
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
    deps: EvictionDeps,
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
    synthesizer: Synthesizer | None = None,
) -> SweepReport:
    """Distil, then archive, memories whose decayed salience fell below
    `policy.maintenance.evict_salience` (0.15); crystals and pinned memories are never swept.

    Each group is synthesized and written as one synthesis node with the cycle's own
    journaled `commit_group`, then its members are archived (they keep
    `consolidated_into`, so the forget cascade and GC can follow them). A namespace over
    `policy.maintenance.hard_cap_per_namespace` active memories is then merged first (one
    consolidation cycle) and, if still over, its lowest-salience memories are archived
    as they are until it fits."""
    report = SweepReport(dry_run=dry_run)
    spaces = [deps.namespace(namespace)] if namespace is not None else deps.store.namespaces()
    for ns in spaces:
        report.per_namespace[ns] = _sweep_namespace(
            deps, ns, dry_run, progress, synthesizer, report
        )
        report.namespaces += 1
    return report


def _sweep_namespace(
    deps: EvictionDeps,
    ns: str,
    dry_run: bool,
    progress: Callable[[int], None] | None,
    synthesizer: Synthesizer | None,
    report: SweepReport,
) -> dict[str, int]:
    store = deps.store
    now = deps.clock.now()
    stats = {"examined": 0, "candidates": 0, "syntheses": 0, "archived": 0, "kept_lone": 0,
             "evicted_by_cap": 0, "fallbacks": 0}
    active = list(store.scan(ns, statuses=[Status.ACTIVE]))
    stats["examined"] = len(active)
    candidates = [m for m in active if sweep_candidate(m, now, deps.policy)]
    stats["candidates"] = len(candidates)
    # grouping reads the vectors the candidates were stored with: they are what the model
    # gave for these texts, so asking it again would only repeat its work
    vectors = None
    if len(candidates) >= 2:
        vectors = (
            deps.embed_memories(candidates)
            if deps.stored_vectors is None
            else deps.stored_vectors(ns, candidates)
        )
    groups, lone = group_candidates(deps.policy, candidates, vectors)
    stats["kept_lone"] = len(lone)
    report.groups.extend([m.id for m in g] for g in groups)
    if dry_run:
        stats["syntheses"] = len(groups)
        stats["archived"] = sum(len(g) for g in groups)
    elif groups:
        syn = synthesizer if synthesizer is not None else deps.synthesizer
        results = synthesize_all(groups, syn, deps.policy)
        nodes: list[Memory] = []
        with store.lock(ns, deps.policy.maintenance.consolidation_lock_seconds):
            for g, result in zip(groups, results, strict=True):
                try:
                    node = commit_group(
                        store, ns, g, result.payload, deps.clock.now(), deps.policy,
                        synthesizer=result.synthesizer,
                    )
                except ClusterStale:  # a member changed meanwhile: leave the group alone
                    continue
                archived = _archive_members(deps, ns, node)
                nodes.append(node)
                stats["syntheses"] += 1
                stats["archived"] += len(archived)
                stats["fallbacks"] += int(result.fell_back)
                if progress is not None:
                    progress(len(g))
            # records first, vectors second (as the REM cycle does): every digest of the
            # sweep in one model call and one index write, not one of each per digest
            if nodes:
                vecs = (
                    deps.embed_memories(nodes) if deps.node_vectors is None
                    else deps.node_vectors(ns, nodes)
                )
                deps.index(ns, list(zip(nodes, vecs, strict=True)))
    active_left = len(active) - stats["archived"] + stats["syntheses"]
    if active_left > deps.policy.maintenance.hard_cap_per_namespace:
        stats["evicted_by_cap"] = _enforce_cap(deps, ns, dry_run, active_left, report)
    for k, v in stats.items():
        setattr(report, k, getattr(report, k) + v)
    return stats


def _archive_members(deps: EvictionDeps, ns: str, node: Memory) -> list[Memory]:
    """The members the node now stands for leave the active set as `archived`, keeping
    `consolidated_into` (so forget and GC can follow them to the node)."""
    store = deps.store

    def attempt() -> list[Memory]:
        cur = store.get_many(ns, sorted(node.derived_from))
        puts = tuple(
            m.evolve(status=Status.ARCHIVED, updated_at=deps.clock.now())
            for m in cur.values()
            if m.status is Status.CONSOLIDATED and m.consolidated_into == node.id
        )
        if puts:
            store.commit(WriteBatch(ns, puts))
        return list(puts)

    return retry_conflicts(attempt)


def _enforce_cap(
    deps: EvictionDeps, ns: str, dry_run: bool, active: int, report: SweepReport
) -> int:
    """Merge first (a consolidation cycle), then archive the lowest decay scores."""
    cap = deps.policy.maintenance.hard_cap_per_namespace
    if not dry_run and deps.consolidate is not None:
        deps.consolidate(ns)
        report.cap_consolidated = True
    now = deps.clock.now()
    active_now = list(deps.store.scan(ns, statuses=[Status.ACTIVE]))
    over = len(active_now) - cap if not dry_run else active - cap
    if over <= 0:
        return 0
    evictable = sorted(
        (m for m in active_now if not never_decays(m)),
        key=lambda m: (decay_score(m, now, deps.policy), m.created_at, m.id),
    )[:over]
    if dry_run or not evictable:
        return len(evictable)

    def archive() -> list[Memory]:
        cur = deps.store.get_many(ns, [m.id for m in evictable])
        puts = tuple(
            m.evolve(status=Status.ARCHIVED, updated_at=now)
            for m in cur.values() if m.is_active
        )
        deps.store.commit(WriteBatch(ns, puts))
        return list(puts)

    return len(retry_conflicts(archive))
