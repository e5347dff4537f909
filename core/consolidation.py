"""The REM cycle: flag weak memories, cluster them, synthesize each cluster into one node,
and commit each cluster so that a crash at any point, or a second run, converges.

Crash safety rests on three things:
- Every cluster's commit is journaled under a fingerprint of its member ids, and the
  synthesis node's id is derived from that fingerprint, so a rerun cannot create a
  second node for the same members.
- Each step (insert the node, move the edges, mark the members) is one `WriteBatch`,
  all-or-nothing, and idempotent: a step re-run after it already happened changes nothing.
- Before committing, the whole plan (members and validated payloads) is journaled. A
  rerun first rolls any unfinished plan forward with the payloads it holds, so it
  reaches the state the interrupted run would have reached, without asking the LLM again
  and without re-flagging memories whose degree the half-done commit changed.
Records come first and vectors second, like the engine's write path: a crash between
the two leaves records that the plan's roll-forward (or `repair()`) indexes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .clock import utc
from .errors import ConflictError, InvalidInput, ReverieError, SynthesisFailed
from .models import Edge, EdgeType, Kind, Memory, Status, Tier
from .policy import Policy
from .ports import RecordStore, Synthesizer, Vector, VectorIndex, WriteBatch
from .scoring import importance_score
from .synthesis import (
    SYNTHESIS_SCHEMA,
    ExtractiveSynthesizer,
    SynthesisPayload,
    build_prompt,
    retry_prompt,
    validate_payload,
)

KillHook = Callable[[str], None]
Progress = Callable[[str, int, int], None]  # (phase, done, total)
VectorsOf = Callable[[Sequence[Memory]], Vector]
IndexNodes = Callable[[Sequence[Memory], Sequence[Memory]], None]  # (new nodes, retired members)
# (ids, k) -> each indexed id's k nearest indexed ids: the vector index's optional `neighbors`
NeighborsOf = Callable[[Sequence[str], int], Mapping[str, Sequence[str]]]

DEFAULT_STRATEGY = "union-find"  # core/clustering.DEFAULT_STRATEGY; imported lazily there
PLAN_KEY = "rem-cycle-plan"  # the journal entry holding the cycle in progress
_CAS_RETRIES = 50
_DEGREE_CHUNK = 500


def fingerprint(member_ids: Iterable[str]) -> str:
    """The same members give the same fingerprint, in any order."""
    joined = "\n".join(sorted(set(member_ids)))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:32]


def synthesis_id(fp: str) -> str:
    return f"syn-{fp}"


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class GroupSynthesis:
    """What synthesis produced for one cluster, and whether it had to fall back."""

    payload: SynthesisPayload
    synthesizer: str
    attempts: int
    fell_back: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterOutcome:
    fingerprint: str
    synthesis_id: str
    member_ids: tuple[str, ...]
    preview: str  # the synthesis text (what the node will say)
    synthesizer: str
    attempts: int
    fell_back: bool
    reason: str | None  # why it fell back to the extractive synthesizer
    committed: bool
    error: str | None = None  # why the commit did not happen (members changed meanwhile)


@dataclass(slots=True)
class ConsolidationReport:
    namespace: str
    strategy: str
    dry_run: bool
    flagged: int = 0
    clusters: list[ClusterOutcome] = field(default_factory=list)
    resumed: int = 0  # clusters of an interrupted cycle rolled forward first
    nodes_before: int = 0  # active memories before the cycle
    nodes_after: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def fallbacks(self) -> list[ClusterOutcome]:
        return [c for c in self.clusters if c.fell_back]

    @property
    def failed(self) -> list[ClusterOutcome]:
        return [c for c in self.clusters if c.error is not None]

    @property
    def committed(self) -> list[ClusterOutcome]:
        return [c for c in self.clusters if c.committed]

    @property
    def consolidated(self) -> int:
        return sum(len(c.member_ids) for c in self.committed)

    @property
    def compression_ratio(self) -> float:
        """Active nodes before / after (1.0 when nothing changed)."""
        return self.nodes_before / self.nodes_after if self.nodes_after else 1.0


@dataclass(frozen=True, slots=True)
class Trigger:
    """One reason maintenance is due: which signal fired, its value and the threshold."""

    name: str
    value: float
    threshold: float
    reason: str


# ---------------------------------------------------------------------------- flag


def flag(
    store: RecordStore, namespace: str, now: datetime, policy: Policy
) -> list[tuple[Memory, float]]:
    """Active, non-crystal, non-pinned memories whose importance blend is below tau,
    with that importance, in the store's stable order.

    Facts (units with a key) are not flagged: a synthesis has no key, so a later
    correction of the fact could not supersede it, and the old value would live on,
    unsuperseded, inside the summary. Facts stay units; supersession keeps them current.
    """
    candidates = [
        m
        for m in store.scan(namespace, statuses=[Status.ACTIVE])
        if m.tier is not Tier.CRYSTAL and not m.pinned and m.key is None
    ]
    degrees: dict[str, int] = {}
    for i in range(0, len(candidates), _DEGREE_CHUNK):
        degrees.update(store.degrees(namespace, [m.id for m in candidates[i : i + _DEGREE_CHUNK]]))
    out: list[tuple[Memory, float]] = []
    for m in candidates:
        imp = importance_score(m, degrees.get(m.id, 0), now, policy)
        if imp < policy.consolidation_tau:
            out.append((m, imp))
    return out


# ---------------------------------------------------------------------------- cluster


def flagged_neighbors(
    flagged: Sequence[tuple[Memory, float]],
    vectors: Vector,
    neighbors_of: NeighborsOf | None,
    policy: Policy,
) -> list[list[int]] | None:
    """Candidate neighbours (row indices into `flagged`) from the vector index's approximate
    k-NN, restricted to the flagged set; None (the clusterer's exact k-NN) when the index
    has no `neighbors`, the policy turns it off, or fewer memories are flagged than
    `cluster_index_knn_min` (below it the exact k-NN is faster). A flagged memory the index does not
    hold gets its candidates by exact search against the flagged vectors (m x n, not n^2)."""
    want = policy.cluster_knn * policy.cluster_neighbor_overfetch
    if neighbors_of is None or want <= 0 or len(flagged) < max(policy.cluster_index_knn_min, 2):
        return None
    ids = [m.id for m, _ in flagged]
    pos = {i: row for row, i in enumerate(ids)}
    found = neighbors_of(ids, want)
    rows = [[pos[j] for j in found.get(i, ()) if j in pos] for i in ids]
    missing = np.asarray([r for r, i in enumerate(ids) if i not in found], dtype=np.int64)
    if missing.size:
        vecs = np.asarray(vectors, dtype=np.float32)
        take = min(want + 1, len(ids))
        for start in range(0, missing.size, _DEGREE_CHUNK):
            block = missing[start : start + _DEGREE_CHUNK]
            sims = vecs[block] @ vecs.T
            best = np.argpartition(-sims, take - 1, axis=1)[:, :take]
            for r, cand in zip(block, best, strict=True):
                rows[int(r)] = [int(c) for c in cand if int(c) != int(r)]
    return rows


def cluster_groups(
    flagged: Sequence[tuple[Memory, float]],
    vectors: Vector,
    strategy: str,
    policy: Policy,
    neighbors: Sequence[Sequence[int]] | None = None,
) -> list[list[Memory]]:
    """Groups of >= 2 flagged memories, disjoint, as the chosen clusterer finds them
    (on the candidate `neighbors` when given, see `flagged_neighbors`)."""
    from .clustering import ClusterInput, make_clusterer

    if len(flagged) < 2:
        return []
    inp = ClusterInput(
        ids=tuple(m.id for m, _ in flagged),
        vectors=np.asarray(vectors, dtype=np.float32),
        importance=np.asarray([imp for _, imp in flagged], dtype=np.float64),
        entities=tuple(m.entities for m, _ in flagged),
        neighbors=neighbors,
    )
    clusterer = make_clusterer(strategy, policy)
    groups: list[list[Memory]] = []
    used: set[int] = set()
    for group in clusterer(inp, policy):
        idx = [int(i) for i in group if int(i) not in used]
        if len(idx) < 2:
            continue
        used.update(idx)
        groups.append([flagged[i][0] for i in idx])
    return groups


# ---------------------------------------------------------------------------- synthesize


def _describe(e: BaseException) -> str:
    text = str(e) or "no message"
    return text if isinstance(e, SynthesisFailed) else f"{type(e).__name__}: {text}"


def synthesize_group(
    members: Sequence[Memory],
    synthesizer: Synthesizer | ExtractiveSynthesizer | None,
    policy: Policy,
) -> GroupSynthesis:
    """One cluster's payload: the LLM's, validated, with up to `policy.synthesis_retries`
    re-asks that show the model what was wrong; else the extractive synthesis.

    Any failure of the synthesizer (garbage, truncated JSON, a timeout, a bug in a
    user's implementation) counts as a failed attempt: it must never lose the members.
    """
    extractive = ExtractiveSynthesizer()
    if synthesizer is None or isinstance(synthesizer, ExtractiveSynthesizer):
        return GroupSynthesis(extractive.synthesize_members(members), extractive.name, 0)
    name = str(getattr(synthesizer, "name", type(synthesizer).__name__))
    prompt = build_prompt(members)
    asked = prompt
    errors: list[str] = []
    for attempt in range(1, policy.synthesis_retries + 2):
        try:
            raw = synthesizer.synthesize(asked, SYNTHESIS_SCHEMA)
            payload = validate_payload(raw, members, max_chars=policy.max_text_chars)
            return GroupSynthesis(payload, name, attempt)
        except Exception as e:  # every failure is reported; none may lose the members
            errors.append(_describe(e))
            asked = retry_prompt(prompt, errors[-1])
    reason = f"{name} failed {len(errors)} time(s): " + " | ".join(
        f"#{i}: {err[:300]}" for i, err in enumerate(errors, 1)
    )
    return GroupSynthesis(
        extractive.synthesize_members(members), extractive.name, len(errors), True, reason
    )


def synthesize_all(
    groups: Sequence[Sequence[Memory]],
    synthesizer: Synthesizer | ExtractiveSynthesizer | None,
    policy: Policy,
    max_workers: int | None = None,
    progress: Progress | None = None,
) -> list[GroupSynthesis]:
    """Every cluster, concurrently through a bounded pool (an LLM call takes seconds)."""
    total = len(groups)
    if synthesizer is None or isinstance(synthesizer, ExtractiveSynthesizer) or total <= 1:
        out = []
        for i, g in enumerate(groups, 1):
            out.append(synthesize_group(g, synthesizer, policy))
            if progress is not None:
                progress("synthesize", i, total)
        return out
    workers = max(1, min(max_workers or policy.synthesis_max_workers, total))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reverie-synth") as pool:
        futures = [pool.submit(synthesize_group, g, synthesizer, policy) for g in groups]
        results = []
        for i, f in enumerate(futures, 1):
            results.append(f.result())
            if progress is not None:
                progress("synthesize", i, total)
        return results


# ---------------------------------------------------------------------------- commit


class ClusterStale(ReverieError):
    """A member changed (forgotten, superseded, consolidated) between planning and commit;
    the cluster is skipped and its members are left as they are."""


def _node_kind(members: Sequence[Memory]) -> Kind:
    kinds = {m.kind for m in members}
    return kinds.pop() if len(kinds) == 1 else Kind.SEMANTIC


def build_node(
    namespace: str,
    members: Sequence[Memory],
    payload: SynthesisPayload,
    now: datetime,
    synthesizer: str = "extractive",
) -> Memory:
    """The synthesis node: union of sources, highest member importance unless the
    synthesis rates itself higher, a fresh clock, provenance in `derived_from`."""
    fp = fingerprint(m.id for m in members)
    return Memory(
        id=synthesis_id(fp),
        namespace=namespace,
        kind=_node_kind(members),
        tier=Tier.SYNTHESIS,
        text=payload.synthesis,
        created_at=now,
        importance=max(max(m.importance for m in members), payload.importance),
        confidence=max(m.confidence for m in members),
        sources=frozenset().union(*(m.sources for m in members)),
        derived_from=frozenset(m.id for m in members),
        entities=frozenset().union(*(m.entities for m in members))
        | {e.casefold() for e in payload.key_entities},
        metadata={
            "synthesis": {
                "fingerprint": fp,
                "synthesizer": synthesizer,
                "causal_chains": list(payload.causal_chains),
                "temporal_anchors": list(payload.temporal_anchors),
                "key_entities": list(payload.key_entities),
            }
        },
    )


def _journal(
    store: RecordStore, ns: str, fp: str, state: str, base: Mapping[str, Any], hook: KillHook
) -> None:
    store.journal_put(ns, fp, {**base, "state": state})
    hook(f"journal:{state}")


def commit_group(
    store: RecordStore,
    namespace: str,
    members: Sequence[Memory],
    payload: SynthesisPayload,
    now: datetime,
    policy: Policy,
    kill_hook: KillHook | None = None,
    *,
    synthesizer: str = "extractive",
) -> Memory:
    """Insert the synthesis node, move the members' outside edges onto it, retire the
    members: three journaled, idempotent, all-or-nothing steps. Safe to call again
    after a crash at any point, or after it finished (it then changes nothing).
    Raises `ClusterStale` (nothing written) if a member is no longer active."""
    del policy  # every number this step needs is in the payload; kept for a stable signature
    node, _retired = _commit_cluster(
        store, namespace, [m.id for m in members], payload, now, kill_hook, synthesizer
    )
    return node


def _commit_cluster(
    store: RecordStore,
    namespace: str,
    member_ids: Iterable[str],
    payload: SynthesisPayload,
    now: datetime,
    kill_hook: KillHook | None,
    synthesizer: str,
) -> tuple[Memory, list[Memory]]:
    """`commit_group`, also returning the members as they now stand (for the vector
    index). Every read here is by key and every write touches the cluster only, so a
    cluster costs the same whatever the size of the store: the cycle runs this thousands
    of times."""
    hook: KillHook = kill_hook or (lambda _step: None)
    ids = sorted(set(member_ids))
    if len(ids) < 2:
        raise InvalidInput("a cluster needs at least two distinct members")
    fp = fingerprint(ids)
    sid = synthesis_id(fp)
    base = {"synthesis_id": sid, "members": ids}
    entry = store.journal_get(namespace, fp)
    state = None if entry is None else entry.get("state")
    # the node and the members in one read (the node is only there on a rerun)
    found = store.get_many(namespace, [*ids, sid])
    node = found.pop(sid, None)
    if state == "done" and node is not None:
        return node, [found[i] for i in ids if i in found]
    if state is None:
        _journal(store, namespace, fp, "started", base, hook)

    # 1. the node (with its provenance edges), unless a previous run inserted it
    current: dict[str, Memory] | None = None
    if node is None:
        stale = [i for i in ids if i not in found or not found[i].is_active]
        if stale:
            raise ClusterStale(
                f"cluster {fp}: member(s) {', '.join(stale)} are gone or no longer active; "
                "skipped, nothing written"
            )
        current = found
        node = build_node(namespace, [current[i] for i in ids], payload, now, synthesizer)
        provenance = tuple(Edge(sid, i, EdgeType.DERIVED_FROM, 1.0) for i in ids)
        store.commit(WriteBatch(namespace, (node,), provenance))
        hook("node-inserted")
    if state in (None, "started"):
        _journal(store, namespace, fp, "node", base, hook)

    # 2. edges to the outside move onto the node
    _move_edges(store, namespace, ids, sid)
    hook("edges-moved")
    if state in (None, "started", "node"):
        _journal(store, namespace, fp, "edges", base, hook)

    # 3. members retired (soft): consolidated into the node, never deleted
    retired = _retire_members(store, namespace, ids, sid, now, current)
    hook("members-retired")
    _journal(store, namespace, fp, "done", base, hook)
    return node, retired


def inherited_edges(edges: Iterable[Edge], member_ids: Iterable[str], sid: str) -> tuple[
    list[Edge], list[tuple[str, str, EdgeType]]
]:
    """Pure: the edges a cluster's node inherits and the member edges they replace.

    Every edge between a member and a node outside the cluster is re-pointed at the
    synthesis node, keeping its direction and type; duplicates keep the highest weight.
    Edges inside the cluster stay (both ends remain as consolidated records), and so
    does a member's own provenance (DERIVED_FROM from a member that is itself a
    synthesis), so the history of an earlier synthesis is not rewritten.
    """
    members = set(member_ids)
    adds: dict[tuple[str, str, EdgeType], float] = {}
    removes: list[tuple[str, str, EdgeType]] = []
    for e in edges:
        src_in, dst_in = e.src in members, e.dst in members
        if src_in == dst_in or sid in (e.src, e.dst):
            continue  # inside the cluster, outside it, or already the node's
        if e.type is EdgeType.DERIVED_FROM and src_in:
            continue
        removes.append((e.src, e.dst, e.type))
        key = (sid if src_in else e.src, sid if dst_in else e.dst, e.type)
        adds[key] = max(adds.get(key, 0.0), e.weight)
    moved = [Edge(s, d, t, w) for (s, d, t), w in sorted(adds.items())]
    return moved, sorted(set(removes))


def _move_edges(store: RecordStore, ns: str, ids: Sequence[str], sid: str) -> None:
    moved, removed = inherited_edges(store.edges(ns, ids), ids, sid)
    if moved or removed:
        store.commit(WriteBatch(ns, (), tuple(moved), tuple(removed)))


def _retire_members(
    store: RecordStore,
    ns: str,
    ids: Sequence[str],
    sid: str,
    now: datetime,
    known: Mapping[str, Memory] | None = None,
) -> list[Memory]:
    """Mark the members consolidated into `sid`; returns every member as it now stands.
    `known` (the members just read) saves the first read; a conflict re-reads."""
    current = dict(known) if known is not None else store.get_many(ns, ids)
    for _ in range(_CAS_RETRIES):
        puts = tuple(
            m.evolve(status=Status.CONSOLIDATED, consolidated_into=sid, updated_at=now)
            for m in current.values()
            if m.is_active
        )
        if not puts:
            return list(current.values())
        try:
            store.commit(WriteBatch(ns, puts))
        except ConflictError:  # a concurrent recall touched a member: re-read and retry
            current = store.get_many(ns, ids)
            continue
        return [*puts, *(m for m in current.values() if not m.is_active)]
    raise ConflictError(f"gave up retiring the members of {sid} after {_CAS_RETRIES} conflicts")


# ---------------------------------------------------------------------------- the cycle


@dataclass(frozen=True, slots=True)
class CycleDeps:
    """What the cycle needs from the engine, as plain callables (core does no I/O)."""

    store: RecordStore
    policy: Policy
    now: datetime
    vectors_of: VectorsOf  # embeddings of memories, for clustering
    index_nodes: IndexNodes  # bring the vector index in step after the records
    neighbors_of: NeighborsOf | None = None  # the index's approximate k-NN, if it has one


def _outcome(
    fp: str,
    ids: Sequence[str],
    syn: GroupSynthesis,
    committed: bool,
    error: str | None = None,
) -> ClusterOutcome:
    return ClusterOutcome(
        fingerprint=fp,
        synthesis_id=synthesis_id(fp),
        member_ids=tuple(ids),
        preview=syn.payload.synthesis,
        synthesizer=syn.synthesizer,
        attempts=syn.attempts,
        fell_back=syn.fell_back,
        reason=syn.reason,
        committed=committed,
        error=error,
    )


def _plan_cluster(fp: str, ids: Sequence[str], syn: GroupSynthesis) -> dict[str, Any]:
    return {
        "fingerprint": fp,
        "members": list(ids),
        "payload": syn.payload.to_dict(),
        "synthesizer": syn.synthesizer,
        "attempts": syn.attempts,
        "fell_back": syn.fell_back,
        "reason": syn.reason,
    }


def _execute_plan(
    deps: CycleDeps,
    ns: str,
    plan: Mapping[str, Any],
    hook: KillHook,
    progress: Progress | None,
) -> list[ClusterOutcome]:
    """Commit every cluster of a journaled plan, index the new nodes, close the plan.
    Re-running it after a crash finishes what is left and repeats nothing."""
    store = deps.store
    now = utc(datetime.fromisoformat(str(plan["now"])))
    clusters: list[Mapping[str, Any]] = list(plan["clusters"])
    outcomes: list[ClusterOutcome] = []
    nodes: list[Memory] = []
    retired: list[Memory] = []
    for n, c in enumerate(clusters, 1):
        ids = [str(i) for i in c["members"]]
        fp = str(c["fingerprint"])
        payload = validate_payload(c["payload"])
        syn = GroupSynthesis(
            payload,
            str(c["synthesizer"]),
            int(c["attempts"]),
            bool(c["fell_back"]),
            None if c.get("reason") is None else str(c["reason"]),
        )
        try:
            node, members = _commit_cluster(
                store, ns, ids, payload, now, hook, syn.synthesizer
            )
        except ClusterStale as e:
            outcomes.append(_outcome(fp, ids, syn, False, str(e)))
        else:
            nodes.append(node)
            retired.extend(members)
            outcomes.append(_outcome(fp, ids, syn, True))
        if progress is not None:
            progress("commit", n, len(clusters))
    if plan.get("state") != "indexed":
        store.journal_put(ns, PLAN_KEY, {**plan, "state": "indexing"})
        hook("plan:indexing")
        if nodes or retired:
            deps.index_nodes(nodes, retired)
        hook("vectors-indexed")
    store.journal_put(ns, PLAN_KEY, {**plan, "state": "done"})
    hook("plan:done")
    return outcomes


def run_cycle(
    deps: CycleDeps,
    namespace: str,
    *,
    synthesizer: Synthesizer | ExtractiveSynthesizer | None = None,
    strategy: str = DEFAULT_STRATEGY,
    dry_run: bool = False,
    max_workers: int | None = None,
    progress: Progress | None = None,
    kill_hook: KillHook | None = None,
) -> ConsolidationReport:
    """One REM cycle on a namespace, under its maintenance lock (not for a dry run,
    which writes nothing at all: not even the lock)."""
    started = time.perf_counter()
    hook: KillHook = kill_hook or (lambda _step: None)
    store, policy = deps.store, deps.policy
    report = ConsolidationReport(namespace, strategy, dry_run)
    report.nodes_before = store.count(namespace).get("status:active", 0)

    def timed(phase: str, t0: float) -> None:
        report.phases[phase] = report.phases.get(phase, 0.0) + time.perf_counter() - t0

    def cycle() -> None:
        if not dry_run:  # finish an interrupted cycle before looking at the store afresh
            t0 = time.perf_counter()
            pending = store.journal_get(namespace, PLAN_KEY)
            if pending is not None and pending.get("state") != "done":
                report.resumed = len(_execute_plan(deps, namespace, pending, hook, progress))
            timed("resume", t0)
        t0 = time.perf_counter()
        flagged = flag(store, namespace, deps.now, policy)
        report.flagged = len(flagged)
        if progress is not None:
            progress("flag", len(flagged), len(flagged))
        timed("flag", t0)
        t0 = time.perf_counter()
        groups: list[list[Memory]] = []
        if len(flagged) >= 2:
            vectors = deps.vectors_of([m for m, _ in flagged])
            near = flagged_neighbors(flagged, vectors, deps.neighbors_of, policy)
            groups = cluster_groups(flagged, vectors, strategy, policy, near)
        if progress is not None:
            progress("cluster", len(groups), len(groups))
        timed("cluster", t0)
        t0 = time.perf_counter()
        syntheses = synthesize_all(groups, synthesizer, policy, max_workers, progress)
        timed("synthesize", t0)
        planned = [
            (fingerprint(m.id for m in g), sorted(m.id for m in g), s)
            for g, s in zip(groups, syntheses, strict=True)
        ]
        if dry_run or not planned:
            report.clusters = [_outcome(fp, ids, s, False) for fp, ids, s in planned]
            return
        t0 = time.perf_counter()
        plan = {
            "state": "committing",
            "now": deps.now.isoformat(),
            "strategy": strategy,
            "clusters": [_plan_cluster(fp, ids, s) for fp, ids, s in planned],
        }
        store.journal_put(namespace, PLAN_KEY, plan)
        hook("plan:committing")
        report.clusters = _execute_plan(deps, namespace, plan, hook, progress)
        timed("commit", t0)

    if dry_run:
        cycle()
    else:
        with store.lock(namespace, policy.consolidation_lock_seconds):
            cycle()
    report.nodes_after = store.count(namespace).get("status:active", 0)
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------------------- triggers


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
    if active_nodes > policy.trigger_node_count:
        fired.append(Trigger(
            "node_count", float(active_nodes), float(policy.trigger_node_count),
            f"{active_nodes} active memories, above {policy.trigger_node_count}",
        ))
    window = policy.trigger_retrieval_window
    if len(recent_importance) >= window:
        mean = float(np.mean(recent_importance[-window:]))
        if mean < policy.trigger_mean_importance:
            fired.append(Trigger(
                "weak_retrievals", mean, policy.trigger_mean_importance,
                f"mean importance of the last {window} retrieved memories is {mean:.3f}, "
                f"below {policy.trigger_mean_importance}",
            ))
    if idle_hours is not None and idle_hours >= policy.trigger_idle_hours:
        fired.append(Trigger(
            "idle", idle_hours, policy.trigger_idle_hours,
            f"no write for {idle_hours:.1f} h (at least {policy.trigger_idle_hours} h)",
        ))
    total = superseded + facts
    if total:
        ratio = superseded / total
        if ratio > policy.trigger_contradiction_ratio:
            fired.append(Trigger(
                "contradictions", ratio, policy.trigger_contradiction_ratio,
                f"{superseded} of {total} facts were superseded ({ratio:.1%}), above "
                f"{policy.trigger_contradiction_ratio:.0%}",
            ))
    if largest_near_duplicate_group > policy.near_duplicate_trigger:
        fired.append(Trigger(
            "near_duplicates", float(largest_near_duplicate_group),
            float(policy.near_duplicate_trigger),
            f"a memory has {largest_near_duplicate_group} near-duplicates (cosine >= "
            f"{policy.near_duplicate_similarity}), more than {policy.near_duplicate_trigger}",
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


def check_triggers(
    store: RecordStore,
    vectors: VectorIndex,
    namespace: str,
    now: datetime,
    policy: Policy,
    recent_importance: Sequence[float],
    vectors_of: VectorsOf,
) -> list[Trigger]:
    """Gather the signals `due_triggers` judges. One scan of the namespace (for the time
    of the last write) and, for near-duplicates, one vector query for each of the
    `trigger_duplicate_sample` newest active memories: checked here, at maintenance
    time, rather than on every insert, so the write path stays one vector query cheap."""
    counts = store.count(namespace)
    last_write: datetime | None = None
    newest: deque[Memory] = deque(maxlen=policy.trigger_duplicate_sample)
    for m in store.scan(namespace):
        stamp = m.updated_at or m.created_at
        last_write = stamp if last_write is None else max(last_write, stamp)
        if m.is_active:
            newest.append(m)
    idle = None if last_write is None else max(0.0, (now - last_write).total_seconds() / 3600.0)
    largest = 0
    sample = sorted(newest, key=lambda m: (m.created_at, m.id))
    if sample:
        k = policy.near_duplicate_trigger + 2
        for m, vec in zip(sample, vectors_of(sample), strict=True):
            hits = vectors.query(namespace, vec, k, {"status": Status.ACTIVE.value})
            close = [
                h for h in hits if h.id != m.id and h.similarity >= policy.near_duplicate_similarity
            ]
            largest = max(largest, len(close))
    return due_triggers(
        policy,
        active_nodes=counts.get("status:active", 0),
        recent_importance=recent_importance,
        idle_hours=idle,
        superseded=counts.get("status:superseded", 0),
        facts=counts.get("tier:unit", 0) + counts.get("tier:crystal", 0),
        largest_near_duplicate_group=largest,
    )
