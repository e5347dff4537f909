"""What an erasure must reach: versions, members, the syntheses above, and who holds a text.

`forget` is erasure (core/deletion.py carries it out; this module only reads). Forgetting
a memory erases:

- every version of it: all units of its fact key, and every memory joined to it by a
  version link (supersession either way, `superseded_by`, an "updates" edge), since an
  older value is the same fact the user asked to forget;
- everything it was made from: a synthesis's members, recursively (the members' versions
  too), since the synthesis repeats their text and they repeat its content.

A reply indexed with an erased memory's vector (`CONTEXT_KEY`) is re-indexed by its own
vector before the memory is deleted (core/deletion.py); the reply stays.

The syntheses that drew on an erased memory (directly, or through another synthesis) are
*affected*: each is rebuilt from its surviving members, or dropped when fewer than two
survive (core/deletion.py). A synthesis's members are read both ways: its `derived_from`,
the members whose `consolidated_into` names it, and the compact provenance GC leaves
behind for members it collected (`PROVENANCE_KEY` in the synthesis's metadata: id,
sources, time and a hash of each collected member's text, never the text).

`holders` finds every record that holds a text, in every status, for
`forget_matching`: a case-insensitive substring of the text, the metadata, the sources,
the entities or the fact; and, for members GC already collected, an exact match of the
text's hash against the provenance a synthesis keeps. A substring can only match what is
still stored: a collected member is found by the whole text (its hash), not by a part of
it (docs/durability.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .arbitration import version_links
from .models import Memory, Status, Tier
from .ports import RecordStore
from .text import content_hash, normalize_text

__all__ = [
    "CONTEXT_KEY",
    "FORGET_JOURNAL",
    "FORGET_PENDING",
    "MEMBER_STATUSES",
    "PROVENANCE_KEY",
    "Derivation",
    "ErasurePlan",
    "bottom_up",
    "context_of",
    "derivation",
    "holders",
    "plan_erasure",
    "provenance",
]

# statuses a member of a synthesis can have; the sweep archives consolidated members
MEMBER_STATUSES = (Status.CONSOLIDATED, Status.ARCHIVED)
# the synthesis metadata key holding its collected members' compact provenance
PROVENANCE_KEY = "reverie_provenance"
# the metadata of a reply indexed with the question before it (core/writing.py): which
# memory's vector its indexed vector carries; forgetting that memory re-indexes the reply
CONTEXT_KEY = "reverie_context"


def context_of(m: Memory) -> str | None:
    """The id of the question whose vector this memory's indexed vector carries, if any."""
    entry = m.metadata.get(CONTEXT_KEY)
    return str(entry.get("of")) if isinstance(entry, Mapping) else None


# the journal entry (per namespace) listing the ids a forget is erasing, until it finished
FORGET_JOURNAL = "forget"
# store meta: "1" while some namespace may hold an unfinished forget (checked on open)
FORGET_PENDING = "forget_pending"


def provenance(node: Memory) -> dict[str, dict[str, Any]]:
    """The compact provenance a synthesis keeps of its collected members, by member id."""
    raw = node.metadata.get(PROVENANCE_KEY)
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): dict(v) for k, v in raw.items() if isinstance(v, Mapping)}


@dataclass(frozen=True, slots=True)
class Derivation:
    """Who was made from whom in one namespace: synthesis nodes by id, each node's
    members (`children`), and each memory's nodes (`parents`)."""

    nodes: dict[str, Memory]
    children: dict[str, set[str]]
    parents: dict[str, set[str]]

    def members(self, node_id: str) -> set[str]:
        return set(self.children.get(node_id, ()))

    def above(self, ids: Iterable[str]) -> set[str]:
        """Every synthesis made (directly or through other syntheses) from any of `ids`."""
        start = set(ids)
        found: set[str] = set()
        frontier = list(start)
        while frontier:
            for p in self.parents.get(frontier.pop(), ()):
                if p not in found and p not in start:
                    found.add(p)
                    frontier.append(p)
        return found


def derivation(store: RecordStore, namespace: str) -> Derivation:
    nodes = {m.id: m for m in store.scan(namespace, tiers=[Tier.SYNTHESIS])}
    children: dict[str, set[str]] = {}
    for node in nodes.values():
        children.setdefault(node.id, set()).update(node.derived_from, provenance(node))
    for m in store.scan(namespace, statuses=MEMBER_STATUSES):
        if m.consolidated_into is not None:
            children.setdefault(m.consolidated_into, set()).add(m.id)
    parents: dict[str, set[str]] = {}
    for node_id, kids in children.items():
        for kid in kids:
            parents.setdefault(kid, set()).add(node_id)
    return Derivation(nodes, children, parents)


@dataclass(frozen=True, slots=True)
class ErasurePlan:
    """`erase`: every id to delete (stored or not: an id GC collected still reaches the
    syntheses that list it); `affected`: the syntheses above them, members first."""

    requested: tuple[str, ...]
    erase: frozenset[str]
    affected: tuple[str, ...]
    derivation: Derivation


def plan_erasure(store: RecordStore, namespace: str, ids: Iterable[str]) -> ErasurePlan:
    requested = tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i))
    graph = derivation(store, namespace)
    erase: set[str] = set()
    frontier = list(requested)
    while frontier:
        batch = [i for i in dict.fromkeys(frontier) if i not in erase]
        if not batch:
            break
        erase.update(batch)
        found = store.get_many(namespace, batch)
        reach: set[str] = set()
        for i in batch:
            reach |= graph.members(i)
        for m in found.values():
            if m.key is not None:
                reach.update(v.id for v in store.find_by_key(namespace, m.key))
            if m.superseded_by is not None:
                reach.add(m.superseded_by)
        links = version_links(store.edges(namespace, list(found)), found)
        for i in found:
            reach |= links.get(i, set())
        frontier = sorted(reach - erase)
    affected = graph.above(erase) - erase
    return ErasurePlan(requested, frozenset(erase), bottom_up(graph, affected), graph)


def bottom_up(graph: Derivation, nodes: Iterable[str]) -> tuple[str, ...]:
    """`nodes` ordered so that a synthesis comes after every synthesis among its members
    (a rebuilt member is read by the node above it)."""
    wanted = set(nodes)
    depth: dict[str, int] = {}

    def level(n: str, seen: frozenset[str]) -> int:
        if n in depth:
            return depth[n]
        below = [level(k, seen | {n}) for k in graph.members(n) if k in wanted and k not in seen]
        depth[n] = 1 + max(below, default=0)
        return depth[n]

    for n in wanted:
        level(n, frozenset())
    return tuple(sorted(wanted, key=lambda n: (depth[n], n)))


def _searchable(m: Memory) -> str:
    parts = [m.text, *sorted(m.sources), *sorted(m.entities), m.key or ""]
    if m.fact is not None:
        parts += [m.fact.subject, m.fact.predicate, m.fact.object]
    if m.metadata:
        parts.append(json.dumps(m.metadata, ensure_ascii=False, sort_keys=True, default=str))
    return "\n".join(parts).casefold()


def holders(store: RecordStore, namespace: str, needle: str) -> tuple[list[Memory], set[str]]:
    """Every stored memory (any status, any tier) holding `needle`, and the ids of
    collected members whose text hashed to `needle`'s (found in a synthesis's provenance).

    A memory holds the text when `needle`, case-folded, is a substring of its text, its
    metadata (as JSON), a source, an entity or its fact; whitespace runs count as one
    space in the text."""
    folded = needle.casefold()
    spaced = normalize_text(needle)
    digest = content_hash(needle)
    found: list[Memory] = []
    collected: set[str] = set()
    for m in store.scan(namespace):
        hay = _searchable(m)
        if folded in hay or (spaced and spaced in normalize_text(m.text)):
            found.append(m)
        if m.tier is Tier.SYNTHESIS:
            collected.update(
                i for i, p in provenance(m).items() if p.get("text_hash") == digest
            )
    return found, collected
