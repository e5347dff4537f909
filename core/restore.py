"""Undo a supersession: the user brings a superseded version back as the current one.

A supersession can be wrong (an update misread on the write path, a contradiction the
REM cycle resolved the wrong way), and a memory hidden by a wrong supersession is, to
the user, a lost memory. `restore` makes the named version current again, in one atomic
write:

- the restored version becomes active: `superseded_by` and `valid_to` cleared, and in its
  metadata, under "reverie_restored", when, over which version, and the supersession it
  undoes (the "reverie_superseded" record it carried moves there, so its history stays);
- the version that was current in its place (the newest end of the `superseded_by`
  chain, or for a keyed fact the key's active unit) is superseded by the restored one,
  with the reason under "reverie_superseded" ({"by": ..., "reason": "restored by the
  user", ...}); a synthesis of the REM cycle is not superseded, since it also holds its
  other members' content: the link between the two is dismissed instead (the restored
  version stands on its own and the synthesis stays current);
- the version edge turns round: "restored supersedes current" replaces "current
  supersedes restored", so `history(memory_id=...)` still finds every version.

Nothing is half-written: every change is one compare-and-set `WriteBatch`, retried on a
concurrent write and never partly applied. Pure planning (`plan_restore`) is separate
from the reads and the write (`restore`), so the rules are testable without a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .cas import retry_conflicts
from .context import EngineContext
from .errors import InvalidInput, NotFound, NotSuperseded
from .models import Edge, EdgeType, Memory, Status, Tier
from .ports import RecordStore, WriteBatch
from .text import content_hash
from .writing import SUPERSEDED_KEY

RESTORED_KEY = "reverie_restored"  # metadata of a restored version: when, over which, why
DISMISSED_KEY = "reverie_dismissed"  # metadata of a synthesis a restore unlinked from
RESTORE_REASON = "restored by the user"
_CHAIN_LIMIT = 64  # superseded_by links followed to find the current version


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What one restore writes: the memories (restored first), the edges it adds and the
    edges it removes; `displaced` is the version that was current in its place (None
    when the chain ends in a forgotten memory), `dismissed` whether that one stays
    current (a synthesis) instead of being superseded."""

    restored: Memory
    displaced: Memory | None
    dismissed: bool
    puts: tuple[Memory, ...]
    edges: tuple[Edge, ...]
    remove_edges: tuple[tuple[str, str, EdgeType], ...]


def plan_restore(
    target: Memory, chain: list[Memory], current: Memory | None, now: datetime
) -> RestorePlan:
    """The write that makes `target` (a superseded version) current again.

    `chain` holds the versions met following `superseded_by` from `target` (its direct
    successor first); `current` is the version current in its place, or None. Raises
    `NotSuperseded` when `target` is not a superseded version."""
    if target.status is not Status.SUPERSEDED:
        raise NotSuperseded(
            f"memory {target.id!r} is {target.status.value}, not superseded: only a "
            "superseded version can be restored (history(memory_id=...) lists the versions)"
        )
    stamp = now.isoformat()
    successor = chain[0] if chain else None
    record: dict[str, Any] = {
        "at": stamp,
        "reason": RESTORE_REASON,
        "was_superseded_by": target.superseded_by,
        "over": current.id if current is not None else None,
    }
    undone = target.metadata.get(SUPERSEDED_KEY)
    if undone is not None:
        record["undid"] = undone
    meta = {k: v for k, v in target.metadata.items() if k != SUPERSEDED_KEY}
    history = list(_as_list(meta.get(RESTORED_KEY)))
    meta[RESTORED_KEY] = record if not history else [*history, record]
    restored = target.evolve(
        status=Status.ACTIVE, superseded_by=None, valid_to=None, updated_at=now,
        metadata=meta,
    )
    puts: list[Memory] = [restored]
    edges: list[Edge] = []
    removals: list[tuple[str, str, EdgeType]] = []
    if successor is not None:  # "successor supersedes target" no longer holds
        removals.append((successor.id, target.id, EdgeType.SUPERSEDES))
    dismissed = False
    if current is not None:
        if current.tier is Tier.SYNTHESIS:
            dismissed = True
            note = {"at": stamp, "reason": RESTORE_REASON, "restored": target.id}
            puts.append(current.evolve(
                updated_at=now,
                metadata={**current.metadata, DISMISSED_KEY: [
                    *_as_list(current.metadata.get(DISMISSED_KEY)), note]},
            ))
        else:
            puts.append(current.evolve(
                status=Status.SUPERSEDED, superseded_by=target.id, valid_to=now,
                updated_at=now,
                metadata={**current.metadata, SUPERSEDED_KEY: {
                    "by": target.id, "reason": RESTORE_REASON, "at": stamp}},
            ))
            edges.append(Edge(target.id, current.id, EdgeType.SUPERSEDES, 1.0))
    return RestorePlan(
        restored, current, dismissed, tuple(puts), tuple(edges), tuple(removals)
    )


def _as_list(value: object) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, Mapping)]
    return [value] if isinstance(value, Mapping) else []


def _successors(store: RecordStore, ns: str, target: Memory) -> list[Memory]:
    """The versions met following `superseded_by` from `target`, nearest first (a
    forgotten successor ends the chain; a cycle cannot loop)."""
    chain: list[Memory] = []
    seen = {target.id}
    nxt = target.superseded_by
    while nxt is not None and nxt not in seen and len(chain) < _CHAIN_LIMIT:
        m = store.get(ns, nxt)
        if m is None:
            break
        chain.append(m)
        seen.add(m.id)
        nxt = m.superseded_by if m.status is Status.SUPERSEDED else None
    return chain


def _current_of(store: RecordStore, ns: str, target: Memory, chain: list[Memory]) -> Memory | None:
    """The version current in `target`'s place: for a keyed fact, the key's active unit
    (at most one per key); else the newest end of the chain, when it is active."""
    if target.key is not None:
        return next(
            (v for v in reversed(store.find_by_key(ns, target.key))
             if v.is_active and v.id != target.id),
            None,
        )
    if chain and chain[-1].is_active:
        return chain[-1]
    return None


def restore(store: RecordStore, ns: str, memory_id: str, now: datetime) -> RestorePlan:
    """Make the superseded version `memory_id` of namespace `ns` current again (see the
    module docstring); returns what was written. `NotFound` for an id the namespace does
    not hold (a memory of another namespace included), `NotSuperseded` for a version
    that is not superseded; either way nothing is written."""

    def attempt() -> RestorePlan:
        target = store.get(ns, memory_id)
        if target is None:
            raise NotFound(f"no memory {memory_id!r} in namespace {ns!r}; nothing restored")
        if target.status is not Status.SUPERSEDED:
            plan_restore(target, [], None, now)  # raises NotSuperseded
        chain = _successors(store, ns, target)
        current = _current_of(store, ns, target, chain)
        if target.key is None:
            twin = store.find_by_hash(ns, content_hash(target.text))
            if twin is not None and twin.id != target.id and (
                current is None or twin.id != current.id
            ):
                raise NotSuperseded(
                    f"memory {target.id!r} says the same as {twin.id!r}, which is current: "
                    "nothing to restore"
                )
        plan = plan_restore(target, chain, current, now)
        store.commit(WriteBatch(ns, plan.puts, plan.edges, plan.remove_edges))
        return plan

    return retry_conflicts(attempt)


def restore_version(ctx: EngineContext, memory_id: str, namespace: str | None) -> Memory:
    """`MemoryEngine.restore`: the records in one write (the vector index keeps no
    status, so it has nothing to change)."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInput(f"memory_id must be non-empty text, got {memory_id!r}")
    ns = ctx.namespace(namespace)
    return restore(ctx.store, ns, memory_id, ctx.clock.now()).restored


def restored_note(m: Memory) -> str | None:
    """The explanation line of a restored version ("restored as current by the user on
    2026-01-05, over <id>"), or None for a memory never restored."""
    records = _as_list(m.metadata.get(RESTORED_KEY))
    if not records:
        return None
    last = records[-1]
    at = str(last.get("at", ""))[:10]
    over = last.get("over")
    return f"{RESTORE_REASON} on {at}" + (f", over {over}" if over else "")
