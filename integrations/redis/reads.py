"""What each Redis read asks for and how the answers combine, apart from the I/O.

A read is a generator: it yields a request (a client method call, a pipelined batch, or a
call of one of the store's Lua scripts), is sent the reply, and returns the result. The
store drives it (`RedisStore._run` sends each request and feeds back the reply), so what
a read means, and how many round trips it makes, is written here without a socket in
sight and can be tested with canned replies. A request names the client method, so any
driver with redis-py's command methods can serve it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np

import reverie.integrations.id_batches as id_batches
from reverie.core.errors import InvalidInput
from reverie.core.models import Edge, Memory, Status, Tier
from reverie.core.ports import LexicalHit
from reverie.core.text import content_hash, query_terms
from reverie.integrations.id_batches import unique
from reverie.integrations.kept_vectors import from_bytes, to_bytes
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.lexical import BM25_ARGS
from reverie.integrations.redis.plan import (
    LAST_WRITE,
    CheckedBatch,
    Stored,
    edge_field,
    load_created_at,
    load_memory,
    parse_doc,
    parse_edge_field,
    plan_touches,
)

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


def records_in_order(
    keys: NamespaceKeys, ids: Sequence[str]
) -> Steps[tuple[dict[str, Memory], dict[str, int]]]:
    """The stored memories among `ids` (in that order) and their insertion order: the
    records and their seqs in one pipelined round trip, since neither depends on the
    other (a lookup then orders the hits it keeps)."""
    parts = list(chunks(ids))
    calls: list[Call] = [("execute_command", "MGET", *(keys.record(i) for i in c)) for c in parts]
    calls += [("zmscore", keys.all, list(c)) for c in parts]
    replies = yield Pipelined(tuple(calls), atomic=False)
    found: dict[str, Memory] = {}
    order: dict[str, int] = {}
    for c, raws, scores in zip(parts, replies[: len(parts)], replies[len(parts) :], strict=True):
        for memory_id, raw, score in zip(c, raws, scores, strict=True):
            if raw is not None:
                found[memory_id] = load_memory(raw, keys.record(memory_id))
            if score is not None:
                order[memory_id] = int(score)
    return found, order


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
    found, order = yield from records_in_order(keys, ids)
    hits = [
        m for m in found.values()
        if m.is_active and m.key is None and content_hash(m.text) == digest
    ]
    if not hits:
        return None
    return min(hits, key=lambda m: order.get(m.id, 0))


def find_by_key(keys: NamespaceKeys, key: str) -> Steps[list[Memory]]:
    ids = sorted((yield ("smembers", keys.fact_key(key))))
    if not ids:
        return []
    found, order = yield from records_in_order(keys, ids)
    versions = [m for m in found.values() if m.key == key]
    return sorted(versions, key=lambda m: (m.valid_since, order.get(m.id, 0)))


# KEYS: an entity's zset, the `all` zset; ARGV: limit. The newest ARGV[1] ids of an entity:
# by creation time (the zset's score), equal times by insertion order (seq, from `all`),
# newest first, as SQLite orders them. Only the ids that reach the limit leave the server.
# Memories written at one time (a bulk import, a fixed clock) can share a time by the
# thousand, and a write looks its entities up: ranking every tied id by its seq made each
# lookup cost the whole group (35 ms for a word of one text in twenty, at 200k memories).
# The tied ids wanted are the newest in insertion order, so the namespace's ids are read
# newest first, a page at a time, keeping those of the entity at the tied time: a page or
# two when the entity is common. Only while that has read fewer ids than the ties number,
# and only when the ties, spread evenly, would be found so; else (the entity is rare, or
# its ties are old) the ties are ranked by seq, so a lookup costs at most about twice the
# cheaper of the two.
ENTITY_TOP_SCRIPT = """
local limit = tonumber(ARGV[1])
local top = redis.call('ZREVRANGE', KEYS[1], 0, limit - 1, 'WITHSCORES')
if #top == 0 then return {} end
local edge = top[#top]
local out = {}
for i = 1, #top, 2 do
  if top[i + 1] ~= edge then out[#out + 1] = top[i] end
end
local room = limit - #out
local ties = redis.call('ZCOUNT', KEYS[1], edge, edge)
if ties <= room then
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], edge, edge)) do
    out[#out + 1] = id
  end
  return out
end
local at = tonumber(edge)
local found = {}
-- the ids to read if the ties were spread evenly over the namespace's order
local want = math.ceil(room * redis.call('ZCARD', KEYS[2]) / ties)
local read, page = 0, math.min(math.max(want, 16), 1000)
while read < ties and want < ties do
  local ids = redis.call('ZREVRANGE', KEYS[2], read, read + page - 1)
  if #ids == 0 then break end
  local scores = redis.call('ZMSCORE', KEYS[1], unpack(ids))
  for j, id in ipairs(ids) do
    if scores[j] and tonumber(scores[j]) == at then
      found[#found + 1] = id
      if #found == room then
        for _, f in ipairs(found) do out[#out + 1] = f end
        return out
      end
    end
  end
  read = read + #ids
  page = math.min(page * 2, 1000)
end
local tied = redis.call('ZRANGEBYSCORE', KEYS[1], edge, edge)
local ranked = {}
for i = 1, #tied, 1000 do
  local part = {}
  for j = i, math.min(i + 999, #tied) do part[#part + 1] = tied[j] end
  local seqs = redis.call('ZMSCORE', KEYS[2], unpack(part))
  for j, id in ipairs(part) do
    ranked[#ranked + 1] = {tonumber(seqs[j]) or 0, id}
  end
end
table.sort(ranked, function(a, b) return a[1] > b[1] end)
for i = 1, room do out[#out + 1] = ranked[i][2] end
return out
"""


def find_by_entity(keys: NamespaceKeys, entity: str, limit: int) -> Steps[list[Memory]]:
    """Newest first; equal creation times by insertion order, newest first (as SQLite).
    Two round trips: observe looks up each entity of every new memory."""
    if limit <= 0:
        return []
    ids = yield Lua("entity_top", [keys.entity(entity), keys.all], [int(limit)])
    if not ids:
        return []
    found, order = yield from records_in_order(keys, list(ids))
    active = [m for m in found.values() if m.is_active]
    ranked = sorted(active, key=lambda m: (m.created_at, order.get(m.id, 0)), reverse=True)
    return ranked[: int(limit)]


def last_write(keys: NamespaceKeys) -> Steps[int | None]:
    """The newest updated_at (microseconds) the namespace's writes recorded, if any."""
    score = yield ("zscore", keys.wrote, LAST_WRITE)
    return None if score is None else int(score)


def newest_active(keys: NamespaceKeys, limit: int) -> Steps[list[Memory]]:
    """The `limit` most recently inserted active memories, oldest first: the end of the
    active set (ordered by seq), as SQLite reads the end of its seq index."""
    if limit <= 0:
        return []
    ids = list((yield ("zrevrange", keys.status(Status.ACTIVE.value), 0, int(limit) - 1)))
    found = yield from records(keys, ids)
    return [found[i] for i in reversed(ids) if i in found and found[i].is_active]


# The memory's place in the seq order and its neighbours, in one round trip (recall asks
# for them on every call): the span's ids, led by the memory's own index in the span.
AROUND_SCRIPT = """
local at = redis.call('ZRANK', KEYS[1], ARGV[1])
if not at then return false end
local lo = math.max(0, at - tonumber(ARGV[2]))
local span = redis.call('ZRANGE', KEYS[1], lo, at + tonumber(ARGV[2]))
table.insert(span, 1, at - lo)
return span
"""


def written_around(keys: NamespaceKeys, memory_id: str, n: int) -> Steps[list[str]]:
    """Up to `n` ids written before `memory_id` and `n` after it, nearest first each way:
    its neighbours in the namespace's seq order (`all`: every memory, any status), as
    SQLite reads its seq index. Nothing for an unknown id."""
    if n <= 0:
        return []
    got = yield Lua("around", [keys.all], [memory_id, int(n)])
    if not got:
        return []
    at, span = int(got[0]), [str(i) for i in got[1:]]
    return [*reversed(span[:at]), *span[at + 1 :]]


# --- what a write reads ------------------------------------------------------------------


def write_state(batch: CheckedBatch) -> Steps[tuple[Stored, int]]:
    """What a write's plan depends on (`redis.plan.plan_commit`), read after its WATCH, and
    the first seq of its new records.

    Everything is asked in one pipelined round trip: the records; the seqs and lexical
    documents of those that may exist already (updates, restores); the text-hash and
    fact-key sets the uniqueness rules check; the edge weights; and the seqs of the records
    the batch expects to create (INCRBY is not watched: an attempt that aborts leaves a gap,
    as it always did, and seqs only promise order). One more round trip each only for a
    record the batch did not expect to exist, for the other versions of a fact key, or for
    more new records than it expected. Observe's write is this one round trip between its
    WATCH and its MULTI/EXEC; one read after another cost four."""
    k = batch.keys
    ids = list(batch.ids)
    fresh = set(batch.fresh)
    maybe = ids if batch.restore else [i for i in ids if i not in fresh]
    edge_names = list(dict.fromkeys(edge_field(e.src, e.dst, e.type.value) for e in batch.edges))
    drawn = len(batch.fresh)
    parts, maybe_parts = list(chunks(ids)), list(chunks(maybe))
    calls: list[Call] = [("execute_command", "MGET", *(k.record(i) for i in c)) for c in parts]
    for c in maybe_parts:
        calls += [("zmscore", k.all, list(c)), ("hmget", k.doc, list(c))]
    calls += [("smembers", k.text_hash(d)) for d in batch.new_digests]
    if edge_names:
        calls.append(("hmget", k.edges, edge_names))
    calls += [("smembers", k.fact_key(f)) for f in batch.fact_keys]
    if drawn:
        calls.append(("incrby", k.seq, drawn))
    replies = iter((yield Pipelined(tuple(calls), atomic=False)) if calls else ())

    records: dict[str, Memory] = {}
    for c in parts:
        for memory_id, raw in zip(c, next(replies), strict=True):
            if raw is not None:
                records[memory_id] = load_memory(raw, k.record(memory_id))
    seqs: dict[str, int] = {}
    docs: dict[str, tuple[int, list[str]]] = {}

    def keep(part: Sequence[str], scores: list[Any], raws: list[Any]) -> None:
        for memory_id, score, raw in zip(part, scores, raws, strict=True):
            if memory_id not in records:
                continue
            if score is not None:
                seqs[memory_id] = int(score)
            doc = parse_doc(raw)
            if doc is not None:
                docs[memory_id] = doc

    for c in maybe_parts:
        keep(c, next(replies), next(replies))
    hash_members = {d: set(next(replies)) for d in batch.new_digests}
    edge_weights: dict[str, float] = {}
    if edge_names:
        for name, weight in zip(edge_names, next(replies), strict=True):
            if weight is not None:
                edge_weights[name] = float(weight)
    fact_members = {f: set(next(replies)) - set(ids) for f in batch.fact_keys}
    top = int(next(replies)) if drawn else 0

    expected = set(maybe)
    late = [i for i in ids if i in records and i not in expected]
    for c in chunks(late):  # stored, though the batch expected to create it
        scores, raws = yield Pipelined(
            (("zmscore", k.all, list(c)), ("hmget", k.doc, list(c))), atomic=False
        )
        keep(c, scores, raws)
    key_active: dict[str, set[str]] = {}
    others = sorted(set().union(*fact_members.values())) if fact_members else []
    versions = (yield from _each_record(k, others, load_memory)) if others else {}
    for fact, members in fact_members.items():
        key_active[fact] = {i for i in members if i in versions and versions[i].is_active}
    new = sum(1 for i in ids if i not in records)
    if new > drawn:
        top, drawn = int((yield ("incrby", k.seq, new))), new
    first_seq = top - drawn + 1 if new else 0
    return Stored(records, seqs, docs, hash_members, edge_weights, key_active), first_seq


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


# KEYS: adjacency sets. The degree of each (edges in plus out).
DEGREES_SCRIPT = """
local out = {}
for i = 1, #KEYS do out[i] = redis.call('SCARD', KEYS[i]) end
return out
"""


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


# Compare-and-set of records: KEYS are record keys; ARGV the text each must still hold,
# then its new text, per key. All are set, or none when any changed since it was read.
TOUCH_SCRIPT = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[2 * i - 1] then return 0 end
end
for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[2 * i]) end
return 1
"""


def touch_chunk(
    keys: NamespaceKeys,
    chunk: Sequence[str],
    steps: Sequence[tuple[Sequence[str], datetime]],
    window: int,
) -> Steps[tuple[bool, list[tuple[str, Memory]]]]:
    """Reinforce the records of `chunk` by `steps` in two round trips: read them, then
    set them only if none changed meanwhile (`TOUCH_SCRIPT`). WATCH/MULTI/EXEC needs three
    and redis-py's transaction work besides; touches run behind every recall, beside the
    next one. Returns (written, the new texts with their memories); not written means
    another writer got there first, and the caller reads again."""
    names = [keys.record(i) for i in chunk]
    raws = yield ("execute_command", "MGET", *names)
    old = {i: raw for i, raw in zip(chunk, raws, strict=True) if raw is not None}
    current = {i: load_memory(raw, keys.record(i)) for i, raw in old.items()}
    _, written = plan_touches(keys, current, steps, window)
    if not written:
        return True, []
    done = yield Lua(
        "touch",
        [keys.record(m.id) for _, m in written],
        [text for raw, m in written for text in (old[m.id], raw)],
    )
    return bool(done), written


class RecallReads(NamedTuple):
    """What recall reads of its candidates: records, kept embeddings, degrees."""

    memories: dict[str, Memory]
    embeddings: dict[str, np.ndarray]
    degrees: dict[str, int]


def recall_reads(
    keys: NamespaceKeys, ids: Iterable[str], *, embeddings: bool, degrees: bool
) -> Steps[RecallReads]:
    """The records of `ids` and, if asked, their kept embeddings and degrees, in one
    pipelined round trip per chunk: on the shared tier every round trip is a wait and
    redis-py's fixed cost per call, and recall would otherwise make three. The degrees go
    as one EVAL (not a SCARD per id: redis-py's per-command cost is the larger part here);
    its keys share the namespace's hash tag, so a cluster runs it on one node."""
    out = RecallReads({}, {}, {})
    for chunk in chunks(unique(ids)):
        names = [keys.record(i) for i in chunk]
        calls: list[Call] = [("execute_command", "MGET", *names)]
        if embeddings:
            calls.append(("hmget", keys.emb, list(chunk)))
        if degrees:
            calls.append(
                (
                    "execute_command", "EVAL", DEGREES_SCRIPT, len(chunk),
                    *(keys.adjacency(i) for i in chunk),
                )
            )
        replies = iter((yield Pipelined(tuple(calls), atomic=False)))
        for memory_id, name, raw in zip(chunk, names, next(replies), strict=True):
            if raw is not None:
                out.memories[memory_id] = load_memory(raw, name)
        if embeddings:
            for memory_id, raw in zip(chunk, next(replies), strict=True):
                if raw is not None:
                    out.embeddings[memory_id] = from_bytes(base64.b64decode(raw))
        if degrees:
            out.degrees.update(
                (i, int(n)) for i, n in zip(chunk, next(replies), strict=True)
            )
    return out


def search(
    keys: NamespaceKeys, query: str, k: int, postings: int = 0
) -> Steps[list[LexicalHit]]:
    """BM25 over the namespace's active texts, scored by a Lua script beside the postings
    (`redis.lexical` says why): one round trip, only the k winners come back. `postings`:
    at most that many postings are read, the rarest terms first (0: every one;
    `lexical.SCRIPT_POSTINGS` says why)."""
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    flat = yield Lua(
        "bm25",
        [keys.stats, keys.doclen, keys.all, *(keys.term(t) for t in terms)],
        [int(k), *(repr(x) for x in BM25_ARGS), int(postings)],
    )
    return [LexicalHit(i, float(s)) for i, s in zip(flat[::2], flat[1::2], strict=True)]
