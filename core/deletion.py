"""Real deletion: erasure (forget), undoing a consolidation, and garbage collection.

- `forget` is erasure, for privacy (what it reaches: core/erasure.py). The ids, every
  version of them and everything they were made from are deleted for real: records,
  edges, lexical entries, kept embeddings, vectors, and the vectors' entries in the
  index's write log. A synthesis that drew on erased text is rebuilt from its surviving
  members with the extractive synthesizer (deterministic, no LLM: a privacy request never
  waits on a model, and nothing is invented), or dropped when fewer than two survive (a
  lone survivor becomes active again). Afterwards the store's files are cleaned of the
  deleted bytes (SQLite: WAL checkpointed and truncated; Redis with `compact`: AOF
  rewritten). `forget` never restores a forgotten synthesis's members: that is
  `undo_consolidation`, a separate call for a bad merge.
- A forget is journaled before it deletes anything (the ids, never the text, under
  `FORGET_JOURNAL` in the namespace's journal, and the namespace in the store's
  `FORGET_PENDING` meta), so one interrupted by a crash is finished by the next engine
  opened on the store, or by the next `gc`.
- GC deletes, for real, archived memories whose decayed salience is below
  `policy.maintenance.gc_salience`, except `retention_exempt` and pinned ones; and
  consolidated or archived *members* below that floor once their synthesis has stood
  `policy.maintenance.gc_member_grace_days`: the synthesis then keeps each collected
  member's id, sources, time and text hash (compact provenance), not its text. It also
  deletes vectors whose record is gone.

Everything here gets what it needs from the engine explicitly, as `EvictionDeps`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from . import updates
from .cas import retry_conflicts
from .consolidation import PLAN_KEY
from .erasure import (
    CONTEXT_KEY,
    FORGET_JOURNAL,
    FORGET_PENDING,
    MEMBER_STATUSES,
    PROVENANCE_KEY,
    bottom_up,
    context_of,
    derivation,
    holders,
    plan_erasure,
    provenance,
)
from .errors import InvalidInput, NotFound
from .models import Memory, Status, Tier
from .policy import Policy
from .ports import (
    Clock,
    KnowsWriteOrder,
    RecordStore,
    Synthesizer,
    Vector,
    VectorIndex,
    WriteBatch,
)
from .scoring import decay_score, never_decays
from .synthesis import ExtractiveSynthesizer
from .text import content_hash

__all__ = [
    "MEMBER_STATUSES",
    "EvictionDeps",
    "ForgetReport",
    "GcReport",
    "UndoReport",
    "derived_closure",
    "finish_forgets",
    "forget_cascade",
    "forget_matching",
    "gc",
    "gc_candidate",
    "member_collectable",
    "restore_orphans",
    "undo_consolidation",
]

# (namespace, new memories with their vectors): a status change needs no index write
IndexNew = Callable[[str, Sequence[tuple[Memory, Vector]]], None]
# (namespace, ids deleted, compact) -> what was cleaned (index log, store files)
EraseResidue = Callable[[str, Sequence[str], bool], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class EvictionDeps:
    """What forget, GC and the sweep need from the engine, as plain values and callables
    (core does no I/O of its own)."""

    store: RecordStore
    vectors: VectorIndex
    policy: Policy
    clock: Clock
    namespace: Callable[[str | None], str]  # the namespace a call means, writes settled
    index: IndexNew  # index the memories a write created, after the records
    embed_memories: Callable[[Sequence[Memory]], Vector]
    consolidate: Callable[[str], object] | None = None  # the hard cap's merge step
    synthesizer: Synthesizer | None = None  # the sweep's distiller (None: extractive)
    residue: EraseResidue | None = None  # clean deleted bytes out of files and logs
    # (namespace, memories) -> their vectors as already stored (kept beside the records or
    # in the index), the model asked only for the rest; None: embed them all
    stored_vectors: Callable[[str, Sequence[Memory]], Vector] | None = None
    # (namespace, new synthesis nodes) -> their vectors (an extractive one from its
    # members', `vector_sync.node_vectors`); None: embed them
    node_vectors: Callable[[str, Sequence[Memory]], Vector] | None = None


# ---------------------------------------------------------------------------- forget


@dataclass(slots=True)
class ForgetReport:
    """What one erasure did. `erased`: every record deleted for holding forgotten text
    (the ids asked for, their versions, what they were made from); `rebuilt`: syntheses
    rewritten without it; `cascaded`: syntheses dropped (fewer than two members left),
    whose lone survivors are `restored` (or `archived` when an active twin exists).
    `deleted` counts every record removed. `residue`: what was cleaned from the files."""

    requested: tuple[str, ...] = ()
    deleted: int = 0
    erased: tuple[str, ...] = ()
    rebuilt: tuple[str, ...] = ()
    cascaded: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()
    archived: tuple[str, ...] = ()
    residue: dict[str, Any] = field(default_factory=dict)

    def merge(self, other: ForgetReport) -> None:
        self.requested += other.requested
        self.deleted += other.deleted
        self.erased += other.erased
        self.rebuilt = tuple(dict.fromkeys(self.rebuilt + other.rebuilt))
        self.cascaded += other.cascaded
        self.restored += other.restored
        self.archived += other.archived
        self.residue.update(other.residue)


def derived_closure(store: RecordStore, namespace: str, ids: Iterable[str]) -> set[str]:
    """Every synthesis node whose text was made (directly or through other syntheses)
    from any of `ids`."""
    return derivation(store, namespace).above(ids)


def _pending(store: RecordStore) -> list[str]:
    raw = store.get_meta(FORGET_PENDING)
    try:
        names = json.loads(raw) if raw else []
    except ValueError:
        names = []
    return [str(n) for n in names] if isinstance(names, list) else []


def _journaled(store: RecordStore, ns: str) -> bool:
    entry = store.journal_get(ns, FORGET_JOURNAL)
    return bool(entry and entry.get("ids"))


def _journal(
    store: RecordStore,
    ns: str,
    add: Iterable[str],
    drop: Iterable[str],
    rebuild: Iterable[str] = (),
) -> None:
    """Add and remove ids in the namespace's forget journal (with the syntheses to
    rebuild, so a resumed forget rebuilds one whose member it already rebuilt); list the
    namespace as pending (before its first id is added) or not (once it holds none)."""
    entry = store.journal_get(ns, FORGET_JOURNAL) or {}
    dropped = set(drop)
    ids = (set(map(str, entry.get("ids", []))) | set(add)) - dropped
    nodes = set(map(str, entry.get("rebuild", []))) | set(rebuild)
    if not ids:
        nodes = set()
    pending = _pending(store)
    if ids and ns not in pending:
        store.set_meta(FORGET_PENDING, json.dumps(sorted({*pending, ns})))
    store.journal_put(ns, FORGET_JOURNAL, {"ids": sorted(ids), **(
        {"rebuild": sorted(nodes)} if nodes else {})})
    if not ids and ns in pending:
        store.set_meta(FORGET_PENDING, json.dumps(sorted(set(pending) - {ns})))


def forget_cascade(
    deps: EvictionDeps,
    namespace: str,
    ids: Sequence[str],
    *,
    compact: bool = False,
    rebuild: Iterable[str] = (),
) -> ForgetReport:
    """Erase `ids`, their versions and what they were made from; rebuild or drop the
    syntheses above them (and `rebuild`, with every synthesis above it: a resumed forget
    passes the ones its interrupted run had planned). Journaled: a crash part way is
    finished by `finish_forgets`."""
    store = deps.store
    plan = plan_erasure(store, namespace, ids)
    if not plan.erase:
        return ForgetReport(requested=plan.requested)
    again = set(rebuild)
    if again:
        graph = plan.derivation
        nodes = (set(plan.affected) | again | graph.above(again)) - plan.erase
        plan = replace(plan, affected=bottom_up(graph, nodes & set(graph.nodes)))
    erase = sorted(plan.erase)
    held = store.get_many(namespace, erase)
    stored = sorted(held)
    if not stored and not plan.affected and not _journaled(store, namespace):
        return ForgetReport(requested=plan.requested)  # nothing holds these ids
    _journal(store, namespace, erase, (), plan.affected)
    _unmix_replies(deps, namespace, held.values(), plan.erase)  # found by the questions
    deleted = store.delete(namespace, erase)
    deps.vectors.delete(namespace, erase)
    gone = set(plan.erase)
    rebuilt: list[str] = []
    dropped: list[str] = []
    survivors: set[str] = set()
    now = deps.clock.now()
    for node_id in plan.affected:
        outcome, kept = _rebuild_or_drop(deps, namespace, node_id, plan.derivation.members(
            node_id), gone, now)
        if outcome == "rebuilt":
            rebuilt.append(node_id)
        elif outcome == "dropped":
            dropped.append(node_id)
            gone.add(node_id)
            survivors |= kept
    survivors -= gone
    restored, archived = restore_orphans(deps, namespace, survivors) if survivors else ([], [])
    _scrub_plan(store, namespace, gone | set(rebuilt))
    _journal(store, namespace, (), erase)  # erased; cleaning the files is not journaled
    residue = _erase_residue(deps, namespace, [*erase, *dropped], compact)
    return ForgetReport(
        requested=plan.requested,
        deleted=deleted + len(dropped),
        erased=tuple(stored),
        rebuilt=tuple(rebuilt),
        cascaded=tuple(dropped),
        restored=tuple(restored),
        archived=tuple(archived),
        residue=residue,
    )


# records read each side of an erased memory for a reply indexed with it: the reply is
# written right after its question, unless a keyed fact or another writer came between
_REPLY_REACH = 3


def _unmix_replies(
    deps: EvictionDeps, namespace: str, held: Iterable[Memory],
    erased: frozenset[str] | set[str],
) -> None:
    """Re-index by its own vector every surviving reply indexed with an erased question
    (`CONTEXT_KEY`, core/writing.py): its vector carries the question's, and a forgotten
    text must not stay searchable, nor recoverable, through another memory's vector. A
    reply is written just after its question, so the records written around each erased
    question (`held`: the erased records) are read; only a store that knows its write
    order mixes a reply at all. Done before the questions are deleted: a forget resumed
    after a crash finds them again."""
    store = deps.store
    if not isinstance(store, KnowsWriteOrder):
        return
    near: set[str] = set()
    for question in sorted((m for m in held if updates.asks(m.text)), key=lambda m: m.id):
        near.update(store.written_around(namespace, question.id, _REPLY_REACH))
    replies = [
        m for m in store.get_many(namespace, sorted(near - erased)).values()
        if context_of(m) in erased
    ]
    unmixed: list[Memory] = []
    for reply in sorted(replies, key=lambda m: m.id):

        def attempt(reply_id: str = reply.id) -> Memory | None:
            cur = store.get(namespace, reply_id)
            if cur is None or context_of(cur) not in erased:
                return None
            own = cur.evolve(metadata={
                k: v for k, v in cur.metadata.items() if k != CONTEXT_KEY})
            store.commit(WriteBatch(namespace, (own,)))
            return own

        own = retry_conflicts(attempt)
        if own is not None:
            unmixed.append(own)
    if unmixed:  # one embedding call and one index write for them all
        deps.index(namespace, list(zip(unmixed, deps.embed_memories(unmixed), strict=True)))


def _erase_residue(
    deps: EvictionDeps, namespace: str, ids: Sequence[str], compact: bool
) -> dict[str, Any]:
    if deps.residue is None:
        return {}
    return dict(deps.residue(namespace, ids, compact))


def _rebuild_or_drop(
    deps: EvictionDeps,
    ns: str,
    node_id: str,
    known_members: set[str],
    gone: set[str],
    now: datetime,
) -> tuple[str, set[str]]:
    """Rebuild the synthesis from its surviving stored members (at least two), or drop
    it; returns ("rebuilt" | "dropped" | "missing", the survivors of a dropped node)."""
    store = deps.store

    def attempt() -> tuple[str, set[str], Memory | None]:
        cur = store.get(ns, node_id)
        if cur is None:
            return "missing", set(), None
        wanted = (cur.derived_from | known_members) - gone
        kids = store.get_many(ns, sorted(wanted))
        if len(kids) < 2:
            store.delete(ns, [node_id])
            return "dropped", set(kids), None
        prov = {i: p for i, p in provenance(cur).items() if i not in gone}
        members = sorted(kids.values(), key=lambda m: (m.created_at, m.id))
        payload = ExtractiveSynthesizer().synthesize_members(members)
        old = cur.metadata.get("synthesis")
        fp = old.get("fingerprint") if isinstance(old, Mapping) else None
        metadata: dict[str, Any] = {
            "synthesis": {
                "fingerprint": fp,
                "synthesizer": ExtractiveSynthesizer.name,
                "causal_chains": list(payload.causal_chains),
                "temporal_anchors": list(payload.temporal_anchors),
                "key_entities": list(payload.key_entities),
                "rebuilt_after_forget": now.isoformat(),
            }
        }
        if prov:
            metadata[PROVENANCE_KEY] = prov
        sources = frozenset().union(
            *(m.sources for m in members),
            *(map(str, p.get("sources", ())) for p in prov.values()),
        )
        node = cur.evolve(
            text=payload.synthesis,
            derived_from=frozenset(kids) | frozenset(prov),
            sources=sources,
            entities=frozenset().union(*(m.entities for m in members))
            | {e.casefold() for e in payload.key_entities},
            metadata=metadata,
            updated_at=now,
        )
        store.commit(WriteBatch(ns, (node,)))
        return "rebuilt", set(), node

    outcome, kept, node = retry_conflicts(attempt)
    if outcome == "dropped":
        deps.vectors.delete(ns, [node_id])
    elif node is not None:
        deps.index(ns, [(node, deps.embed_memories([node])[0])])
    return outcome, kept


def forget_matching(
    deps: EvictionDeps, namespace: str, text: str, *, compact: bool = False,
    dry_run: bool = False,
) -> ForgetReport:
    """Erase every holder of `text` (a whole text or a part of one, case-insensitive) in
    every status: records whose text, metadata, sources, entities or fact hold it, their
    versions and what they were made from; syntheses that drew on it are rebuilt or
    dropped. Members GC already collected are matched by the hash of their whole text.

    Plain records go first, so a synthesis that held the text only through them is
    rebuilt, keeping its other members; a synthesis still holding it afterwards (an LLM's
    paraphrase of a collected member) is erased whole. Repeated until nothing holds it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("forget_matching needs a non-empty text to search for")
    if dry_run:  # the first pass's plan, nothing written (a synthesis still holding the
        # text once rebuilt would be erased by a later pass)
        found, collected = holders(deps.store, namespace, text)
        plan = plan_erasure(deps.store, namespace, _first_pass(found, collected))
        stored = deps.store.get_many(namespace, sorted(plan.erase))
        return ForgetReport(requested=plan.requested, erased=tuple(sorted(stored)),
                            rebuilt=plan.affected)
    report = ForgetReport()
    for round_ in range(4):
        found, collected = holders(deps.store, namespace, text)
        if not found and not collected:
            break
        ids = _first_pass(found, collected) if round_ == 0 else [m.id for m in found]
        report.merge(forget_cascade(deps, namespace, ids))
    else:
        found, collected = holders(deps.store, namespace, text)
        if found or collected:
            raise InvalidInput(
                f"{len(found)} memories still hold the text after erasing its holders; "
                "forget them by id"
            )
    if compact:  # each erasure above cleaned after itself; the compaction is done once
        report.residue.update(_erase_residue(deps, namespace, [], compact))
    return report


def _first_pass(found: Sequence[Memory], collected: Iterable[str]) -> list[str]:
    """Plain holders and collected members first (their syntheses are rebuilt); the
    syntheses themselves only when nothing else holds the text."""
    plain = [m.id for m in found if m.tier is not Tier.SYNTHESIS]
    return [*plain, *sorted(collected)] or [m.id for m in found]


def finish_forgets(deps: EvictionDeps, namespaces: Iterable[str] | None = None) -> int:
    """Finish every forget a crash interrupted, in `namespaces` (None: every namespace
    listed as pending); returns how many namespaces had one."""
    store = deps.store
    spaces = list(namespaces) if namespaces is not None else _pending(store)
    finished = 0
    for ns in spaces:
        entry = store.journal_get(ns, FORGET_JOURNAL) or {}
        ids = [str(i) for i in entry.get("ids", [])]
        if ids:
            forget_cascade(deps, ns, ids, rebuild=[str(i) for i in entry.get("rebuild", [])])
            finished += 1
        elif ns in _pending(store):
            _journal(store, ns, (), ())
    return finished


def _scrub_plan(store: RecordStore, namespace: str, doomed: set[str]) -> None:
    """The cycle journals each planned cluster with its synthesis text (to roll an
    interrupted cycle forward). A cluster that drew on a deleted or rebuilt memory leaves
    the plan: its text must not survive there, nor be written back by a resumed cycle."""
    plan = store.journal_get(namespace, PLAN_KEY)
    if plan is None:
        return
    clusters = list(plan.get("clusters", []))
    kept = [c for c in clusters if not doomed.intersection(map(str, c.get("members", [])))]
    if len(kept) != len(clusters):
        store.journal_put(namespace, PLAN_KEY, {**plan, "clusters": kept})


# ---------------------------------------------------------------------------- undo


@dataclass(frozen=True, slots=True)
class UndoReport:
    """What `undo_consolidation` did: the synthesis deleted, its members `restored` to
    active (or `archived` when an active twin exists), and the `lost` ones GC had
    already collected (their content was only in the synthesis)."""

    synthesis: str
    restored: tuple[str, ...]
    archived: tuple[str, ...]
    lost: tuple[str, ...]


def undo_consolidation(deps: EvictionDeps, namespace: str, synthesis_id: str) -> UndoReport:
    """Undo a bad consolidation: the synthesis goes, its members come back as they were
    (active again, `consolidated_into` cleared). Edges the synthesis inherited from its
    members go with it. Not a privacy call: the members' text stays (`forget` erases)."""
    store = deps.store
    node = store.get(namespace, synthesis_id)
    if node is None:
        raise NotFound(f"no memory {synthesis_id!r} in namespace {namespace!r}")
    if node.tier is not Tier.SYNTHESIS:
        raise InvalidInput(f"{synthesis_id!r} is a {node.tier.value}, not a synthesis")
    members = derivation(store, namespace).members(synthesis_id) | node.derived_from
    stored = store.get_many(namespace, sorted(members))
    store.delete(namespace, [synthesis_id])
    deps.vectors.delete(namespace, [synthesis_id])
    _scrub_plan(store, namespace, {synthesis_id})
    restored, archived = restore_orphans(deps, namespace, stored)
    return UndoReport(
        synthesis=synthesis_id,
        restored=tuple(restored),
        archived=tuple(archived),
        lost=tuple(sorted(members - set(stored))),
    )


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

    def attempt() -> tuple[list[str], list[str]]:
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
            return [], []
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
        return restored, archived

    return retry_conflicts(attempt)


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
    members_collected: int = 0  # members whose synthesis now keeps only their provenance
    orphan_vectors: int = 0  # vectors whose record was gone, deleted
    forgets_finished: int = 0  # interrupted forgets finished first
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


def member_collectable(member: Memory, node: Memory, now: datetime, policy: Policy) -> bool:
    """A consolidated or archived member of `node` that GC may collect: the synthesis has
    stood `gc_member_grace_days` since it was made, the member decayed below
    `gc_salience`, and it is not pinned, a crystal or retention-exempt. A synthesis member
    is collected like any other: its lineage (its own provenance, and its stored members,
    re-pointed) moves up to the node that holds its text now."""
    grace = timedelta(days=policy.maintenance.gc_member_grace_days)
    return (
        member.status in MEMBER_STATUSES
        and member.consolidated_into == node.id
        and not member.retention_exempt
        and not never_decays(member)
        and now - node.created_at >= grace
        and decay_score(member, now, policy) < policy.maintenance.gc_salience
    )


def provenance_entry(member: Memory, now: datetime) -> dict[str, Any]:
    """What a synthesis keeps of a member GC collects: enough to audit it and for an
    exact-text forget to find it, never its text."""
    return {
        "sources": sorted(member.sources),
        "created_at": member.created_at.isoformat(),
        "kind": member.kind.value,
        "text_hash": content_hash(member.text),
        "collected_at": now.isoformat(),
    }


def gc(
    deps: EvictionDeps,
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> GcReport:
    """Collect what decayed out of use, in one namespace or all of them:

    - archived memories below `policy.maintenance.gc_salience` (0.01);
    - consolidated and archived members below it whose synthesis has stood
      `gc_member_grace_days`, their compact provenance written into the synthesis first;
    - vectors whose record is gone.

    Pinned, crystal and retention-exempt memories are never collected. An archived
    synthesis node that still summarizes members is deleted only when it was itself
    absorbed into a live node: its members (and provenance) move to that node. A forget
    interrupted by a crash is finished first."""
    report = GcReport(dry_run=dry_run)
    if namespace is not None:
        spaces = [deps.namespace(namespace)]
    else:
        spaces = sorted({*deps.store.namespaces(), *_pending(deps.store)})
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
    policy = deps.policy
    stats = {"examined": 0, "deleted": 0, "kept_exempt": 0, "repointed": 0, "restored": 0,
             "collected": 0, "orphan_vectors": 0, "forgets_finished": 0}
    if not dry_run:
        stats["forgets_finished"] = finish_forgets(deps, [ns])
        restored, archived = restore_orphans(deps, ns)
        stats["restored"] = len(restored) + len(archived)
    doomed: dict[str, Memory] = {}
    members: list[Memory] = []
    for m in store.scan(ns, statuses=MEMBER_STATUSES):
        if m.status is Status.ARCHIVED:
            stats["examined"] += 1
        if progress is not None:
            progress(1)
        if m.consolidated_into is not None and (
            m.tier is not Tier.SYNTHESIS or m.status is Status.CONSOLIDATED
        ):
            members.append(m)
            continue
        if m.status is not Status.ARCHIVED:
            continue
        if decay_score(m, now, policy) >= policy.maintenance.gc_salience or never_decays(m):
            continue
        if m.retention_exempt:
            stats["kept_exempt"] += 1
            continue
        doomed[m.id] = m
    # members: collected once their synthesis has stood the grace period
    targets = {m.consolidated_into for m in members if m.consolidated_into is not None}
    nodes = store.get_many(ns, sorted(targets))
    collect: dict[str, list[Memory]] = {}
    for m in members:
        node = nodes.get(m.consolidated_into or "")
        if node is None or node.id in doomed:
            continue
        if member_collectable(m, node, now, policy):
            collect.setdefault(node.id, []).append(m)
        elif (m.retention_exempt and not never_decays(m)
              and decay_score(m, now, policy) < policy.maintenance.gc_salience):
            stats["kept_exempt"] += 1
    # a collected synthesis hands its stored members to the nearest node GC keeps above it
    lifted = _lift_members(members, collect, now)
    taken = {m.id: m for ms in collect.values() for m in ms}
    # a synthesis among the doomed: its members must have somewhere to point. Keep any
    # node with a surviving member and no live node above it, until nothing changes.
    repoint: list[Memory] = []
    heirs: dict[str, str] = {}
    if any(m.tier is Tier.SYNTHESIS for m in doomed.values()):
        pointing = [
            m for m in store.scan(ns, statuses=MEMBER_STATUSES) if m.consolidated_into
        ]
        collected_ids = {m.id for ms in collect.values() for m in ms}
        changed = True
        while changed:
            changed = False
            for m in pointing:
                target = m.consolidated_into
                if m.id in doomed or m.id in collected_ids or target not in doomed:
                    continue
                if _live_heir(doomed, target, store, ns) is None:
                    del doomed[target]
                    changed = True
        for m in pointing:
            if m.id not in doomed and m.id not in collected_ids and m.consolidated_into in doomed:
                heir = _live_heir(doomed, m.consolidated_into, store, ns)
                if heir is not None:
                    heir = _kept_above(heir, taken)
                repoint.append(m.evolve(consolidated_into=heir, updated_at=now))
        for node in doomed.values():
            if node.tier is Tier.SYNTHESIS and provenance(node):
                heir = _live_heir(doomed, node.id, store, ns)
                if heir is not None:
                    heirs[node.id] = _kept_above(heir, taken)
    stats["collected"] = sum(len(ms) for ms in collect.values())
    stats["deleted"] = len(doomed) + stats["collected"]
    stats["repointed"] = len({m.id for m in repoint} | set(lifted))
    gone = sorted({*doomed, *(m.id for ms in collect.values() for m in ms)})
    if not dry_run:
        _write_provenance(deps, ns, collect, doomed, heirs, now)
        repoint = [m for m in repoint if m.id not in lifted] + list(lifted.values())
        if repoint:
            store.commit(WriteBatch(ns, tuple(repoint)))
        if gone:
            store.delete(ns, gone)
            deps.vectors.delete(ns, gone)
            _erase_residue(deps, ns, gone, False)
        stats["orphan_vectors"] = _delete_orphan_vectors(deps, ns)
    report.archived_examined += stats["examined"]
    report.deleted += stats["deleted"]
    report.kept_exempt += stats["kept_exempt"]
    report.repointed += stats["repointed"]
    report.orphans_restored += stats["restored"]
    report.members_collected += stats["collected"]
    report.orphan_vectors += stats["orphan_vectors"]
    report.forgets_finished += stats["forgets_finished"]
    report.deleted_ids.extend(gone)
    return stats


def _write_provenance(
    deps: EvictionDeps,
    ns: str,
    collect: Mapping[str, Sequence[Memory]],
    doomed: Mapping[str, Memory],
    heirs: Mapping[str, str],
    now: datetime,
) -> None:
    """Before members are deleted, their synthesis records their compact provenance; a
    synthesis GC deletes hands its own provenance to the node that absorbed it."""
    adds: dict[str, dict[str, dict[str, Any]]] = {}
    collected = {m.id: m for ms in collect.values() for m in ms}
    for node_id, ms in collect.items():
        heir = _kept_above(node_id, collected)
        for m in ms:
            entries = adds.setdefault(heir, {})
            entries[m.id] = provenance_entry(m, now)
            if m.tier is Tier.SYNTHESIS:  # its own collected members go up with it
                entries.update(provenance(m))
    for lower, heir in heirs.items():
        adds.setdefault(heir, {}).update(provenance(doomed[lower]))
    store = deps.store
    for node_id, entries in sorted(adds.items()):

        def attempt(node_id: str = node_id, entries: dict[str, Any] = entries) -> None:
            node = store.get(ns, node_id)
            if node is None:
                return
            merged = {**provenance(node), **entries}
            store.commit(WriteBatch(ns, (node.evolve(
                metadata={**node.metadata, PROVENANCE_KEY: merged}, updated_at=now,
            ),)))

        retry_conflicts(attempt)


def _kept_above(node_id: str, collected: Mapping[str, Memory]) -> str:
    """The node a member's lineage belongs to after this GC: `node_id`, or, when GC
    collects that node too, the first node up its `consolidated_into` chain it keeps."""
    seen: set[str] = set()
    while node_id in collected and node_id not in seen:
        seen.add(node_id)
        node_id = collected[node_id].consolidated_into or node_id
    return node_id


def _lift_members(
    members: Sequence[Memory], collect: Mapping[str, Sequence[Memory]], now: datetime
) -> dict[str, Memory]:
    """Members that stay while the synthesis they point to is collected, re-pointed to
    the node GC keeps above it (so forget, undo and a later GC still reach them)."""
    collected = {m.id: m for ms in collect.values() for m in ms}
    out: dict[str, Memory] = {}
    for m in members:
        target = m.consolidated_into
        if m.id in collected or target is None or target not in collected:
            continue
        out[m.id] = m.evolve(consolidated_into=_kept_above(target, collected), updated_at=now)
    return out


def _delete_orphan_vectors(deps: EvictionDeps, ns: str) -> int:
    """Vectors whose record is gone (a crash between a deletion's two halves). The index
    is read first: a record is always committed before its vector, so a vector seen then
    whose record is missing after is an orphan, not a write in flight."""
    indexed = deps.vectors.ids(ns)
    if not indexed:
        return 0
    ids = sorted(indexed)
    present: set[str] = set()
    for i in range(0, len(ids), 1000):
        present.update(deps.store.get_many(ns, ids[i : i + 1000]))
    orphans = sorted(indexed - present)
    if orphans:
        deps.vectors.delete(ns, orphans)
        if deps.residue is not None:
            deps.residue(ns, orphans, False)
    return len(orphans)


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
