"""The REM cycle: flag weak memories, cluster them, synthesize each cluster into one node,
and commit each cluster so that a crash at any point, or a second run, converges.

Crash safety rests on three things. Two are each cluster's commit (core/commit.py):
it is journaled under a fingerprint of its member ids that also names the synthesis
node, and each of its steps is one idempotent, all-or-nothing `WriteBatch`. The third
is here: before committing, the whole plan (members and validated payloads) is
journaled. A rerun first rolls any unfinished plan forward with the payloads it holds,
so it reaches the state the interrupted run would have reached, without asking the LLM
again and without re-flagging memories whose degree the half-done commit changed.
Records come first and vectors second, like the engine's write path: a crash between
the two leaves records that the plan's roll-forward (or `repair()`) indexes. A closed
plan leaves nothing behind in the journal but its state, so the journal stays as small
after a year of cycles as after one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .capabilities import Together
from .clock import utc
from .commit import (
    ClusterStale,
    KillHook,
    build_node,
    commit_cluster,
    commit_group,
    fingerprint,
    inherited_edges,
    synthesis_id,
)
from .errors import SynthesisFailed
from .models import Memory, Status, Tier
from .policy import Policy
from .ports import RecordStore, Synthesizer, Vector
from .scoring import importance_score
from .synthesis import (
    ExtractiveSynthesizer,
    SynthesisPayload,
    build_prompt,
    retry_prompt,
    synthesis_schema,
    validate_payload,
)
from .triggers import RetrievalLog, Trigger, VectorsOf, check_triggers, due_triggers

__all__ = [  # the cycle's own names, and those of its commit and triggers, importable here
    "DEFAULT_STRATEGY",
    "PLAN_KEY",
    "ClusterOutcome",
    "ClusterStale",
    "ConsolidationReport",
    "CycleDeps",
    "GroupSynthesis",
    "KillHook",
    "NeighborsOf",
    "RetrievalLog",
    "Trigger",
    "build_node",
    "check_triggers",
    "cluster_groups",
    "commit_group",
    "due_triggers",
    "fingerprint",
    "flag",
    "flagged_neighbors",
    "inherited_edges",
    "run_cycle",
    "synthesis_id",
    "synthesize_all",
    "synthesize_group",
]

Progress = Callable[[str, int, int], None]  # (phase, done, total)
IndexNodes = Callable[[Sequence[Memory]], None]  # the new nodes (members keep their vectors)
# (ids, k) -> each indexed id's k nearest indexed ids: the vector index's optional `neighbors`
NeighborsOf = Callable[[Sequence[str], int], Mapping[str, Sequence[str]]]

DEFAULT_STRATEGY = "union-find"  # core/clustering.DEFAULT_STRATEGY; imported lazily there
PLAN_KEY = "rem-cycle-plan"  # the journal entry holding the cycle in progress
_DEGREE_CHUNK = 500


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
    out: list[tuple[Memory, float]] = []

    def judge(chunk: list[Memory]) -> None:
        degrees = store.degrees(namespace, [m.id for m in chunk])
        for m in chunk:
            imp = importance_score(m, degrees.get(m.id, 0), now, policy)
            if imp < policy.maintenance.consolidation_tau:
                out.append((m, imp))

    # streamed: only a chunk of candidates and the flagged ones are held at a time
    chunk: list[Memory] = []
    for m in store.scan(namespace, statuses=[Status.ACTIVE]):
        if m.tier is not Tier.CRYSTAL and not m.pinned and m.key is None:
            chunk.append(m)
            if len(chunk) >= _DEGREE_CHUNK:
                judge(chunk)
                chunk = []
    if chunk:
        judge(chunk)
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
    want = policy.maintenance.cluster_knn * policy.maintenance.cluster_neighbor_overfetch
    index_min = max(policy.maintenance.cluster_index_knn_min, 2)
    if neighbors_of is None or want <= 0 or len(flagged) < index_min:
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
    """One cluster's payload: the LLM's, validated, with up to `synthesis_retries`
    re-asks that show the model what was wrong; else the extractive synthesis.

    Any failure of the synthesizer (garbage, truncated JSON, a timeout, a bug in a
    user's implementation) counts as a failed attempt: it must never lose the members.
    """
    extractive = ExtractiveSynthesizer()
    if synthesizer is None or isinstance(synthesizer, ExtractiveSynthesizer):
        return GroupSynthesis(extractive.synthesize_members(members), extractive.name, 0)
    name = str(getattr(synthesizer, "name", type(synthesizer).__name__))
    prompt = build_prompt(members)
    schema = synthesis_schema(members)  # with "outdated" for a cluster of open versions
    asked = prompt
    errors: list[str] = []
    for attempt in range(1, policy.maintenance.synthesis_retries + 2):
        try:
            raw = synthesizer.synthesize(asked, schema)
            payload = validate_payload(raw, members, max_chars=policy.funnel.max_text_chars)
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
    workers = max(1, min(max_workers or policy.maintenance.synthesis_max_workers, total))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reverie-synth") as pool:
        futures = [pool.submit(synthesize_group, g, synthesizer, policy) for g in groups]
        results = []
        for i, f in enumerate(futures, 1):
            results.append(f.result())
            if progress is not None:
                progress("synthesize", i, total)
        return results


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
    together: Together | None = None  # the store's grouped writes (`BatchesWrites`), if any


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
    step = deps.policy.maintenance.commit_batch_clusters if deps.together is not None else 1
    for start in range(0, len(clusters), step):
        # a batch in one transaction where the store groups writes; a crash inside it
        # rolls the batch back whole, journal entries included, and resume redoes it
        with deps.together() if deps.together is not None else nullcontext():
            for n, c in enumerate(clusters[start : start + step], start + 1):
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
                    node, _members = commit_cluster(
                        store, ns, ids, payload, now, hook, syn.synthesizer,
                        in_transaction=deps.together is not None,
                    )
                except ClusterStale as e:
                    outcomes.append(_outcome(fp, ids, syn, False, str(e)))
                else:
                    nodes.append(node)
                    outcomes.append(_outcome(fp, ids, syn, True))
                if progress is not None:
                    progress("commit", n, len(clusters))
    if plan.get("state") != "indexed":
        store.journal_put(ns, PLAN_KEY, {**plan, "state": "indexing"})
        hook("plan:indexing")
        if nodes:
            deps.index_nodes(nodes)
        hook("vectors-indexed")
    # The plan is carried out: its clusters' entries go, and the closed plan keeps no
    # cluster (no synthesis text lingers in the journal). A crash before the plan closes
    # finds clusters without entries; their commit is idempotent without one.
    store.journal_delete(ns, [str(c["fingerprint"]) for c in clusters])
    hook("journal:cleared")
    store.journal_put(ns, PLAN_KEY, {**plan, "state": "done", "clusters": []})
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
        with store.lock(namespace, policy.maintenance.consolidation_lock_seconds):
            cycle()
    report.nodes_after = store.count(namespace).get("status:active", 0)
    report.seconds = time.perf_counter() - started
    return report
