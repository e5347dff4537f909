"""What each Redis read asks for and how the answers combine, written once for the sync and
the asyncio store.

A read is a generator: it yields a request (a client method call, a pipelined batch, or a
call of one of the store's Lua scripts), is sent the reply, and returns the result. Each
store drives it with its own I/O (`RedisStore._run` blocks, `AsyncRedisStore._run`
awaits), so the two make the same round trips with the same commands and can never
disagree on what a read means; only the waiting differs. redis-py's sync and asyncio
clients share their command methods and reply parsing, so a request names the method.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from reverie.core.errors import InvalidInput
from reverie.core.models import Edge, Memory, Status, Tier
from reverie.core.ports import LexicalHit
from reverie.core.text import content_hash, query_terms

from . import id_batches
from .id_batches import unique
from .kept_vectors import from_bytes, to_bytes
from .redis_keys import NamespaceKeys
from .redis_lexical import BM25_ARGS
from .redis_plan import load_created_at, load_memory, parse_edge_field

T = TypeVar("T")

CHUNK = 500  # ids per MGET / ZMSCORE / script call, so one reply stays small

Call = tuple[Any, ...]  # ("method", *args) on the client: one command, one round trip


@dataclass(frozen=True, slots=True)
class Pipelined:
    """Several calls in one round trip; `atomic` wraps them in MULTI/EXEC."""

    calls: tuple[Call, ...]
    atomic: bool


@dataclass(frozen=True, slots=True)
class Lua:
    """A call of one of the store's registered scripts ("edges", "degrees", "bm25")."""

    script: str
    keys: list[str]
    args: list[Any]


Request = Call | Pipelined | Lua
Steps = Generator[Request, Any, T]


def chunks(items: Sequence[str], size: int = CHUNK) -> Iterator[Sequence[str]]:
    return id_batches.chunks(items, size)


def check_batch_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInput(f"batch_size must be a positive int, got {batch_size!r}")
    return batch_size


# --- records ------------------------------------------------------------------------------


def _each_record(
    keys: NamespaceKeys, ids: Sequence[str], load: Callable[[str, str], T]
) -> Steps[dict[str, T]]:
    """`load(raw, key name)` of each stored record among `ids`: one MGET per chunk."""
    found: dict[str, T] = {}
    for chunk in chunks(ids):
        names = [keys.record(i) for i in chunk]
        raws = yield ("execute_command", "MGET", *names)
        for memory_id, name, raw in zip(chunk, names, raws, strict=True):
            if raw is not None:
                found[memory_id] = load(raw, name)
    return found


def records(keys: NamespaceKeys, ids: Sequence[str]) -> Steps[dict[str, Memory]]:
    """The stored memories among `ids` (absent ones left out)."""
    return (yield from _each_record(keys, ids, load_memory))


def get(keys: NamespaceKeys, memory_id: str) -> Steps[Memory | None]:
    name = keys.record(memory_id)
    raw = yield ("get", name)
    return None if raw is None else load_memory(raw, name)


def get_many(keys: NamespaceKeys, ids: Iterable[str]) -> Steps[dict[str, Memory]]:
    wanted = unique(ids)
    found = yield from records(keys, wanted)
    return {i: found[i] for i in wanted if i in found}  # in the caller's order


def created_times(keys: NamespaceKeys, ids: Iterable[str]) -> Steps[dict[str, datetime]]:
    """Only `created_at` of each record (no Memory built)."""
    return (yield from _each_record(keys, unique(ids), load_created_at))


def seqs(keys: NamespaceKeys, ids: Sequence[str]) -> Steps[dict[str, int]]:
    """Insertion order of stored ids: the tie-break every lookup shares with SQLite."""
    out: dict[str, int] = {}
    for chunk in chunks(list(ids)):
        scores = yield ("zmscore", keys.all, list(chunk))
        out.update({i: int(s) for i, s in zip(chunk, scores, strict=True) if s is not None})
    return out


# --- lookups ------------------------------------------------------------------------------


def find_by_hash(keys: NamespaceKeys, digest: str) -> Steps[Memory | None]:
    ids = sorted((yield ("smembers", keys.text_hash(digest))))
    if not ids:
        return None
    found = yield from get_many(keys, ids)
    hits = [
        m for m in found.values()
        if m.is_active and m.key is None and content_hash(m.text) == digest
    ]
    if not hits:
        return None
    order = yield from seqs(keys, [m.id for m in hits])
    return min(hits, key=lambda m: order.get(m.id, 0))


def find_by_key(keys: NamespaceKeys, key: str) -> Steps[list[Memory]]:
    ids = sorted((yield ("smembers", keys.fact_key(key))))
    found = yield from get_many(keys, ids)
    versions = [m for m in found.values() if m.key == key]
    order = yield from seqs(keys, [m.id for m in versions])
    return sorted(versions, key=lambda m: (m.valid_since, order.get(m.id, 0)))


def find_by_entity(keys: NamespaceKeys, entity: str, limit: int) -> Steps[list[Memory]]:
    """Newest first; equal creation times by insertion order, newest first (as SQLite)."""
    if limit <= 0:
        return []
    name = keys.entity(entity)
    top = yield ("zrevrange", name, 0, int(limit) - 1, True)
    if not top:
        return []
    # Members tied with the last score may sort either way by name; take them all.
    last = top[-1][1]
    ties = yield ("zrangebyscore", name, last, last)
    ids = list(dict.fromkeys([i for i, _ in top] + list(ties)))
    found = yield from get_many(keys, ids)
    active = [m for m in found.values() if m.is_active]
    order = yield from seqs(keys, [m.id for m in active])
    ranked = sorted(active, key=lambda m: (m.created_at, order.get(m.id, 0)), reverse=True)
    return ranked[: int(limit)]


# --- scan ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scan:
    """Pages in insertion order (seq), merged over the wanted status sets."""

    keys: NamespaceKeys
    sources: list[str]  # the zsets walked: one per wanted status, else the whole order
    statuses: set[str] | None
    tiers: set[str] | None
    size: int

    def page(self, after: float) -> Steps[tuple[list[Memory], float | None]]:
        """The memories of the page after seq `after`, and where the next page starts
        (None: this was the last)."""
        page: list[tuple[float, str]] = []
        for source in self.sources:
            rows = yield ("zrangebyscore", source, f"({after}", "+inf", 0, self.size, True)
            page.extend((score, member) for member, score in rows)
        if not page:
            return [], None
        page.sort()
        page = page[: self.size]
        ids = [member for _, member in page]
        found = yield from records(self.keys, ids)
        kept = [
            m for m in (found.get(i) for i in ids)
            if m is not None
            and (self.statuses is None or m.status.value in self.statuses)
            and (self.tiers is None or m.tier.value in self.tiers)
        ]
        return kept, (page[-1][0] if len(page) == self.size else None)


def scan(
    keys: NamespaceKeys,
    statuses: Iterable[Status] | None,
    tiers: Iterable[Tier] | None,
    batch_size: int,
) -> Scan | None:
    """The scan to page through, or None when the filters admit nothing."""
    size = check_batch_size(batch_size)
    if statuses is None:
        sources, wanted = [keys.all], None
    else:
        wanted = {Status(s).value for s in statuses}
        sources = [keys.status(s) for s in sorted(wanted)]
    wanted_tiers = None if tiers is None else {Tier(t).value for t in tiers}
    if not sources or (wanted_tiers is not None and not wanted_tiers):
        return None
    return Scan(keys, sources, wanted, wanted_tiers, size)


# --- counts, edges, namespaces, search ----------------------------------------------------


def count(keys: NamespaceKeys) -> Steps[dict[str, int]]:
    """One MULTI/EXEC of set sizes, so the counts are of one moment."""
    names = [f"status:{s.value}" for s in Status] + [f"tier:{t.value}" for t in Tier]
    calls = [("zcard", keys.status(s.value)) for s in Status]
    calls += [("zcard", keys.tier(t.value)) for t in Tier]
    values = yield Pipelined((*calls, ("hlen", keys.edges)), atomic=True)
    counts = {n: int(v) for n, v in zip(names, values, strict=False)}
    counts["edges"] = int(values[-1])
    counts["total"] = sum(counts[f"status:{s.value}"] for s in Status)
    return counts


def edges(keys: NamespaceKeys, ids: Iterable[str]) -> Steps[list[Edge]]:
    seen: dict[str, float] = {}
    for chunk in chunks(unique(ids)):
        flat = yield Lua("edges", [keys.edges, *(keys.adjacency(i) for i in chunk)], [])
        for name, weight in zip(flat[::2], flat[1::2], strict=True):
            seen[name] = float(weight)
    return [parse_edge_field(name, w) for name, w in seen.items()]


def degrees(keys: NamespaceKeys, ids: Iterable[str]) -> Steps[dict[str, int]]:
    """Edges in plus out, for every requested id (0 when it has none)."""
    result: dict[str, int] = {}
    for chunk in chunks(unique(ids)):
        counts = yield Lua("degrees", [keys.adjacency(i) for i in chunk], [])
        result.update({i: int(n) for i, n in zip(chunk, counts, strict=True)})
    return result


def namespaces(prefix: str, names_key: str) -> Steps[list[str]]:
    """Names from the namespace set that still hold a memory (one pipelined round trip
    for their sizes); never a SCAN."""
    names = sorted((yield ("smembers", names_key)))
    if not names:
        return []
    calls = tuple(("zcard", NamespaceKeys(prefix, ns).all) for ns in names)
    sizes = yield Pipelined(calls, atomic=False)
    return [ns for ns, n in zip(names, sizes, strict=True) if int(n) > 0]


# Keep each embedding only while its record exists (checked beside the write, atomically),
# so a memory deleted meanwhile leaves no vector behind. KEYS: the embedding hash, then
# one record key per id; ARGV: id, base64 vector, id, base64 vector, ...
KEEP_SCRIPT = """
local n = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HSET', KEYS[1], ARGV[2 * i - 3], ARGV[2 * i - 2])
    n = n + 1
  end
end
return n
"""


def put_embeddings(keys: NamespaceKeys, items: Mapping[str, Any]) -> Steps[int]:
    """Keep embeddings beside the records (see SQLiteStore.put_embeddings): every vector is
    checked before anything is sent. Returns how many records took one."""
    encoded = [(i, base64.b64encode(to_bytes(i, v)).decode("ascii")) for i, v in items.items()]
    kept = 0
    for start in range(0, len(encoded), CHUNK):
        part = encoded[start : start + CHUNK]
        kept += int((yield Lua(
            "keep", [keys.emb, *(keys.record(i) for i, _ in part)],
            [x for pair in part for x in pair],
        )))
    return kept


def embeddings(keys: NamespaceKeys, ids: Iterable[str]) -> Steps[dict[str, np.ndarray]]:
    """The embeddings kept beside the records (ids without one are absent)."""
    out: dict[str, np.ndarray] = {}
    for part in chunks(unique(ids)):
        values = yield ("hmget", keys.emb, list(part))
        for memory_id, raw in zip(part, values, strict=True):
            if raw is not None:
                out[memory_id] = from_bytes(base64.b64decode(raw))
    return out


def search(keys: NamespaceKeys, query: str, k: int) -> Steps[list[LexicalHit]]:
    """BM25 over the namespace's active texts, scored by a Lua script beside the postings
    (`redis_lexical` says why): one round trip, only the k winners come back."""
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    flat = yield Lua(
        "bm25",
        [keys.stats, keys.doclen, keys.all, *(keys.term(t) for t in terms)],
        [int(k), *(repr(x) for x in BM25_ARGS)],
    )
    return [LexicalHit(i, float(s)) for i, s in zip(flat[::2], flat[1::2], strict=True)]
