"""Committing one cluster as a synthesis node: journaled, idempotent, crash-safe.

Crash safety rests on two things here (the cycle's plan, in core/consolidation.py, is
the third):
- Every cluster's commit is journaled under a fingerprint of its member ids, and the
  synthesis node's id is derived from that fingerprint, so a rerun cannot create a
  second node for the same members.
- Each step (insert the node, move the edges, mark the members) is one `WriteBatch`,
  all-or-nothing, and idempotent: a step re-run after it already happened changes nothing.

A contradiction the model resolved (`SynthesisPayload.supersedes`, core/synthesis.py)
changes two steps: the node gets a SUPERSEDES edge to each member a newer member
replaced, and those members are retired as superseded by the node (status,
`superseded_by`, `valid_to` at the time the newer member was observed, the reason under
"reverie_superseded"), so `recall(as_of=...)` and `history` keep working; the others are
consolidated as usual.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .cas import CAS_RETRIES
from .errors import ConflictError, InvalidInput, ReverieError
from .models import Edge, EdgeType, Kind, Memory, Status, Tier
from .policy import Policy
from .ports import RecordStore, WriteBatch
from .synthesis import SynthesisPayload, open_versions

KillHook = Callable[[str], None]  # called after each step, so a test can crash there
SUPERSEDED_KEY = "reverie_superseded"  # as core/writing.py: by which version, and why
REM_REASON = "a newer member replaced it; the REM cycle's synthesis holds the newest value"


def fingerprint(member_ids: Iterable[str]) -> str:
    """The same members give the same fingerprint, in any order."""
    joined = "\n".join(sorted(set(member_ids)))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:32]


def synthesis_id(fp: str) -> str:
    return f"syn-{fp}"


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
                **({"supersedes": sorted(payload.supersedes)} if payload.supersedes else {}),
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
    node, _retired = commit_cluster(
        store, namespace, [m.id for m in members], payload, now, kill_hook, synthesizer
    )
    return node


def commit_cluster(
    store: RecordStore,
    namespace: str,
    member_ids: Iterable[str],
    payload: SynthesisPayload,
    now: datetime,
    kill_hook: KillHook | None,
    synthesizer: str,
    *,
    in_transaction: bool = False,
) -> tuple[Memory, list[Memory]]:
    """`commit_group`, also returning the members as they now stand (for the vector
    index). Every read here is by key and every write touches the cluster only, so a
    cluster costs the same whatever the size of the store: the cycle runs this thousands
    of times.

    `in_transaction`: the caller holds one transaction around this whole commit (the
    store's `together`), so a crash rolls every step back at once and no resume can see
    an intermediate journal state: nothing is journaled (a resume knows the commit
    happened from its node and its retired members), which takes four journal writes off
    every cluster."""
    hook: KillHook = kill_hook or (lambda _step: None)

    def journal(state: str) -> None:
        if in_transaction:
            hook(f"journal:{state}")
        else:
            _journal(store, namespace, fp, state, base, hook)

    ids = sorted(set(member_ids))
    if len(ids) < 2:
        raise InvalidInput("a cluster needs at least two distinct members")
    outside = sorted(set(payload.supersedes) - set(ids))
    if outside:
        raise InvalidInput(
            f"the synthesis would supersede {', '.join(outside)}, not member(s) of the "
            "cluster; nothing written"
        )
    fp = fingerprint(ids)
    sid = synthesis_id(fp)
    base = {"synthesis_id": sid, "members": ids}
    entry = store.journal_get(namespace, fp)
    state = None if entry is None else entry.get("state")
    # the node and the members in one read (the node is only there on a rerun)
    found = store.get_many(namespace, [*ids, sid])
    node = found.pop(sid, None)
    # Done: journaled so, or (no entry, as a transaction's commit leaves none) the node
    # is there and no member is active. "started" is journaled before any node exists,
    # so a node without an entry was written whole; a member active again (restored
    # since an earlier cycle made this node) is retired anew below.
    if node is not None and (
        state == "done" or (state is None and not any(m.is_active for m in found.values()))
    ):
        return node, [found[i] for i in ids if i in found]
    if state is None:
        journal("started")

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
        provenance = tuple(Edge(sid, i, EdgeType.DERIVED_FROM, 1.0) for i in ids) + tuple(
            Edge(sid, i, EdgeType.SUPERSEDES, 1.0) for i in sorted(payload.supersedes)
        )
        if in_transaction and state is None:
            # nothing of this cluster is written yet and the caller's transaction makes
            # the three steps one anyway: one write of the store instead of three
            retired = _one_write(
                store, namespace, ids, node, provenance, now, current,
                frozenset(payload.supersedes), synthesizer, hook,
            )
            journal("done")
            return node, retired
        store.commit(WriteBatch(namespace, (node,), provenance))
        hook("node-inserted")
    if state in (None, "started"):
        journal("node")

    # 2. edges to the outside move onto the node
    _move_edges(store, namespace, ids, sid)
    hook("edges-moved")
    if state in (None, "started", "node"):
        journal("edges")

    # 3. members retired (soft): consolidated into the node, never deleted
    retired = _retire_members(
        store, namespace, ids, sid, now, current, frozenset(payload.supersedes), synthesizer
    )
    hook("members-retired")
    journal("done")
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


def replaced_until(members: Mapping[str, Memory], replaced: frozenset[str], now: datetime) -> (
    dict[str, datetime]
):
    """Pure: when each replaced member stopped holding: when the first newer member the
    write path linked to it as its newer version was observed, else the first newer
    member that was not itself replaced, else `now`."""
    found = open_versions(list(members.values()))
    label_of = {mid: label for label, mid in found.labels.items()} if found else {}
    holding = [m for m in members.values() if m.id not in replaced]
    out: dict[str, datetime] = {}
    for mid in replaced:
        m = members.get(mid)
        if m is None:
            continue
        by = found.replaced_by.get(label_of.get(mid, ""), ()) if found else ()
        later = [members[found.labels[b]].created_at for b in by] if found else []
        if not later:
            later = [
                h.created_at for h in holding if (h.created_at, h.id) > (m.created_at, m.id)
            ]
        out[mid] = min(later) if later else now
    return out


def _one_write(
    store: RecordStore,
    ns: str,
    ids: Sequence[str],
    node: Memory,
    provenance: tuple[Edge, ...],
    now: datetime,
    current: Mapping[str, Memory],
    replaced: frozenset[str],
    synthesizer: str,
    hook: KillHook,
) -> list[Memory]:
    """The three steps of a new cluster as one `WriteBatch`: the node with its
    provenance, the members' outside edges moved onto it, the members retired. Returns
    the members as they now stand. Only inside a transaction the caller holds: no other
    writer can touch a member between the read and this write, so there is no conflict
    to retry."""
    sid = node.id
    moved, removed = inherited_edges(store.edges(ns, ids), ids, sid)
    until = replaced_until(current, replaced, now)
    retired = tuple(_retired(current[i], sid, now, until, synthesizer) for i in ids)
    store.commit(WriteBatch(ns, (node, *retired), (*provenance, *moved), tuple(removed)))
    # the points a crash can hit are the three steps' (the transaction rolls them all back)
    for step in ("node-inserted", "journal:node", "edges-moved", "journal:edges",
                 "members-retired"):
        hook(step)
    return list(retired)


def _retired(
    m: Memory, sid: str, now: datetime, until: Mapping[str, datetime], synthesizer: str
) -> Memory:
    if m.id not in until:
        return m.evolve(status=Status.CONSOLIDATED, consolidated_into=sid, updated_at=now)
    return m.evolve(
        status=Status.SUPERSEDED, superseded_by=sid, valid_to=until[m.id], updated_at=now,
        metadata={**m.metadata, SUPERSEDED_KEY: {
            "by": sid, "reason": REM_REASON, "synthesizer": synthesizer}},
    )


def _retire_members(
    store: RecordStore,
    ns: str,
    ids: Sequence[str],
    sid: str,
    now: datetime,
    known: Mapping[str, Memory] | None = None,
    replaced: frozenset[str] = frozenset(),
    synthesizer: str = "extractive",
) -> list[Memory]:
    """Mark the members consolidated into `sid` (or, those in `replaced`, superseded by
    it); returns every member as it now stands. `known` (the members just read) saves
    the first read; a conflict re-reads."""
    current = dict(known) if known is not None else store.get_many(ns, ids)
    for _ in range(CAS_RETRIES):
        until = replaced_until(current, replaced, now)
        puts = tuple(
            _retired(m, sid, now, until, synthesizer)
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
    raise ConflictError(f"gave up retiring the members of {sid} after {CAS_RETRIES} conflicts")
