"""What a Redis write does, computed from what was read: pure functions, no I/O.

A write runs as optimistic concurrency: WATCH the keys whose contents decide the outcome
(the records being replaced, the text-hash sets the duplicate rule reads, the edge hash),
read them, compute here the full list of commands (record, every secondary index, the
lexical postings and statistics, edges), then run the list inside MULTI/EXEC. If any
watched key changed in between, EXEC does nothing and the write is recomputed from a fresh
read; a compare-and-set that then fails raises `ConflictError`. Either every command of a
write is applied or none is, so record and indexes always agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reverie.core.clock import utc
from reverie.core.codec import DecodedRecords, memory_to_dict
from reverie.core.errors import ConflictError, InvalidInput, StoreCorrupt
from reverie.core.models import Edge, EdgeType, Memory, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.core.scoring import reinforce
from reverie.core.text import content_hash
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.lexical import term_frequencies
from reverie.integrations.store_values import check_version, dumps, micros

Command = tuple[str | int | float, ...]

_DEL_CHUNK = 500  # keys per DEL, so no one command is huge


# One per process, shared by every Redis store and reader: keyed by the
# exact record bytes, which name their namespace, so sharing cannot mix stores up.
DECODED = DecodedRecords()


def load_memory(raw: str | bytes, where: str) -> Memory:
    try:
        return DECODED.decode(raw)
    except (ValueError, InvalidInput) as e:
        raise StoreCorrupt(
            f"Redis key {where} holds an unreadable memory record ({e}); reverie did not "
            "modify it"
        ) from None


_CREATED = '"created_at":"'


def load_created_at(raw: str | bytes, where: str) -> datetime:
    """Only `created_at` of a record: recall's time lookup builds no Memory, and parses no
    JSON. Records are written by `dumps` (compact separators) with `created_at` before any
    field that could hold a user's key, and inside a JSON string a quote is always escaped,
    so the first bare `"created_at":"` is the record's own; anything else is parsed."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    at = text.find(_CREATED)
    if at >= 0:
        start = at + len(_CREATED)
        end = text.find('"', start)
        try:
            return utc(datetime.fromisoformat(text[start:end]))
        except ValueError:
            pass  # not what `dumps` writes: read it the long way
    try:
        return utc(datetime.fromisoformat(json.loads(raw)["created_at"]))
    except (ValueError, KeyError, TypeError) as e:
        raise StoreCorrupt(
            f"Redis key {where} holds an unreadable memory record ({e}); reverie did not "
            "modify it"
        ) from None


def load_journal_entry(raw: str | bytes, where: str) -> dict[str, Any]:
    """A journal entry is a JSON object; anything else is damage, reported, not guessed
    (consolidation would otherwise resume from a made-up step)."""
    try:
        entry = json.loads(raw)
    except ValueError as e:
        entry = e
    if not isinstance(entry, dict):
        raise StoreCorrupt(
            f"Redis hash {where} holds a consolidation journal entry that is not a JSON "
            "object; reverie did not modify it"
        )
    return entry


def edge_field(src: str, dst: str, type_: str) -> str:
    return json.dumps([src, dst, type_], ensure_ascii=False, separators=(",", ":"))


def parse_edge_field(name: str, weight: str | float) -> Edge:
    src, dst, type_ = json.loads(name)
    return Edge(src, dst, EdgeType(type_), float(weight))


def is_free_text(m: Memory) -> bool:
    return m.is_active and m.key is None


@dataclass(frozen=True, slots=True)
class CheckedBatch:
    """A batch validated before any I/O, with the keys its write must watch."""

    namespace: str
    keys: NamespaceKeys
    puts: tuple[tuple[Memory, str], ...]  # (memory, encoded record)
    edges: tuple[Edge, ...]
    removals: tuple[tuple[str, str, str], ...]
    restore: bool
    ids: tuple[str, ...]  # distinct ids of the puts, in batch order
    new_digests: tuple[str, ...]  # text hashes the duplicate rule must check
    fact_keys: tuple[str, ...] = ()  # fact keys the one-active-version rule must check
    # ids whose record the batch expects to create (first put at version 1; every id of a
    # restore): the write draws their seqs in the same round trip as its reads
    fresh: tuple[str, ...] = ()
    # id -> text hash of its final state, for ids whose final state is active free text
    # (hashed once here; the plan needs the same digests)
    digest_of: Mapping[str, str] = field(default_factory=dict)

    def watch_keys(self) -> list[str]:
        keys = [self.keys.record(i) for i in self.ids]
        keys += [self.keys.text_hash(d) for d in self.new_digests]
        # every new version of a fact joins its key's set, so a concurrent first unit
        # of the same key changes a watched key and this write re-reads
        keys += [self.keys.fact_key(f) for f in self.fact_keys]
        if self.edges:
            keys.append(self.keys.edges)
        return keys


def check_batch(batch: WriteBatch, prefix: str) -> CheckedBatch:
    ns, removals = batch.checked()
    puts = [(m, dumps(memory_to_dict(m), f"memory {m.id!r}")) for m in batch.puts]
    ids = tuple(dict.fromkeys(m.id for m in batch.puts))
    final = {m.id: m for m in batch.puts}
    digest_of = {i: content_hash(m.text) for i, m in final.items() if is_free_text(m)}
    fact_keys = tuple(
        sorted({m.key for m in final.values() if m.is_active and m.key is not None})
    )
    first_version: dict[str, int] = {}
    for m in batch.puts:
        first_version.setdefault(m.id, m.version)
    fresh = ids if batch.restore else tuple(i for i in ids if first_version[i] == 1)
    return CheckedBatch(
        ns, NamespaceKeys(prefix, ns), tuple(puts), tuple(batch.edges), removals,
        batch.restore, ids, tuple(sorted(set(digest_of.values()))), fact_keys, fresh,
        digest_of,
    )


@dataclass(slots=True)
class Stored:
    """What a write read under WATCH."""

    records: dict[str, Memory]  # id -> stored memory (absent ids missing)
    seqs: dict[str, int]  # id -> seq for stored ids
    docs: dict[str, tuple[int, list[str]]]  # id -> (length, terms), for indexed (active) ids
    hash_members: dict[str, set[str]] = field(default_factory=dict)  # digest -> ids
    edge_weights: dict[str, float] = field(default_factory=dict)  # field -> weight
    key_active: dict[str, set[str]] = field(default_factory=dict)  # fact key -> active ids


def plan_commit(batch: CheckedBatch, stored: Stored, first_seq: int) -> list[Command]:
    """The commands of one batch, or `ConflictError` (nothing to apply).

    New records take seqs first_seq, first_seq + 1, ... in batch order.
    """
    k = batch.keys
    ns = batch.namespace
    staged: dict[str, Memory] = dict(stored.records)
    for m, _ in batch.puts:
        cur = staged.get(m.id)
        if not batch.restore:
            check_version(m, None if cur is None else cur.version)
        staged[m.id] = m
    encoded = {m.id: record for m, record in batch.puts}  # the last put of an id wins

    # The uniqueness rules, on the batch's final state (each text hashed once: a
    # 1000-memory import batch hashed a million texts when this was inside the loop).
    final_digest = batch.digest_of  # staged[i] is the batch's last put of i
    for digest in batch.new_digests:
        _refuse_second_holder(
            stored.hash_members.get(digest, set()),
            {i for i in batch.ids if final_digest.get(i) == digest},
            batch.ids,
            f"namespace {ns!r} would hold two active memories with the same text",
            "fold the new source into the existing one (find_by_hash) instead",
        )
    for fact in batch.fact_keys:
        _refuse_second_holder(
            stored.key_active.get(fact, set()),
            {i for i in batch.ids if staged[i].key == fact and staged[i].is_active},
            batch.ids,
            f"namespace {ns!r} would hold two active versions of fact {fact!r}",
            "re-read the fact (find_by_key) and supersede or fold into the current version",
        )

    cmds: list[Command] = []
    registry: set[str] = set()
    docs_delta = 0
    terms_delta = 0
    next_seq = first_seq
    for memory_id in batch.ids:
        m = staged[memory_id]
        old = stored.records.get(memory_id)
        if old is None:
            seq = next_seq
            next_seq += 1
        else:
            seq = stored.seqs.get(memory_id, 0)
        cmds.append(("SET", k.record(memory_id), encoded[memory_id]))
        cmds.append(("ZADD", k.all, seq, memory_id))
        if old is not None and old.status is not m.status:
            cmds.append(("ZREM", k.status(old.status.value), memory_id))
        cmds.append(("ZADD", k.status(m.status.value), seq, memory_id))
        if old is not None and old.is_active and (not m.is_active or old.tier is not m.tier):
            cmds.append(("ZREM", k.tier(old.tier.value), memory_id))
        if m.is_active:
            cmds.append(("ZADD", k.tier(m.tier.value), seq, memory_id))
        # text hash (active free text only)
        old_digest = content_hash(old.text) if old is not None and is_free_text(old) else None
        new_digest = final_digest.get(memory_id)
        if old_digest is not None and old_digest != new_digest:
            cmds.append(("SREM", k.text_hash(old_digest), memory_id))
        if new_digest is not None:
            key = k.text_hash(new_digest)
            cmds.append(("SADD", key, memory_id))
            registry.add(key)
        # fact key (every version)
        if old is not None and old.key is not None and old.key != m.key:
            cmds.append(("SREM", k.fact_key(old.key), memory_id))
        if m.key is not None:
            key = k.fact_key(m.key)
            cmds.append(("SADD", key, memory_id))
            registry.add(key)
        # entities (active only)
        old_entities = old.entities if old is not None and old.is_active else frozenset()
        new_entities = m.entities if m.is_active else frozenset()
        for entity in sorted(old_entities - new_entities):
            cmds.append(("ZREM", k.entity(entity), memory_id))
        for entity in sorted(new_entities):
            key = k.entity(entity)
            cmds.append(("ZADD", key, micros(m.created_at), memory_id))
            registry.add(key)
        # lexical postings follow the active set
        doc = stored.docs.get(memory_id)
        was_indexed = doc is not None
        same_text = old is not None and old.text == m.text
        if doc is not None and not (m.is_active and same_text):
            for term in doc[1]:
                cmds.append(("HDEL", k.term(term), memory_id))
            cmds.append(("HDEL", k.doclen, memory_id))
            cmds.append(("HDEL", k.doc, memory_id))
            cmds.append(log_entry(k, memory_id))
            docs_delta -= 1
            terms_delta -= doc[0]
        if m.is_active and not (was_indexed and same_text):
            tf, length = term_frequencies(m.text)
            for term, count in sorted(tf.items()):
                key = k.term(term)
                cmds.append(("HSET", key, memory_id, count))
                registry.add(key)
            cmds.append(("HSET", k.doclen, memory_id, length))
            cmds.append(("HSET", k.doc, memory_id, dumps([length, sorted(tf)], "terms")))
            cmds.append(log_entry(k, memory_id))
            docs_delta += 1
            terms_delta += length

    # Edges: removals first, so a batch that removes and re-adds an edge ends with it added.
    removed: set[str] = set()
    for src, dst, type_ in batch.removals:
        name = edge_field(src, dst, type_)
        removed.add(name)
        cmds.append(("HDEL", k.edges, name))
        cmds.append(("SREM", k.adjacency(src), name))
        cmds.append(("SREM", k.adjacency(dst), name))
    weights: dict[str, float] = {}
    for e in batch.edges:
        name = edge_field(e.src, e.dst, e.type.value)
        previous = weights.get(name)
        if previous is None and name not in removed:
            previous = stored.edge_weights.get(name)
        weights[name] = float(e.weight) if previous is None else max(previous, float(e.weight))
        for end in (e.src, e.dst):
            key = k.adjacency(end)
            cmds.append(("SADD", key, name))
            registry.add(key)
    for name, weight in weights.items():
        cmds.append(("HSET", k.edges, name, repr(weight)))

    if docs_delta:
        cmds.append(("HINCRBY", k.stats, "docs", docs_delta))
    if terms_delta:
        cmds.append(("HINCRBY", k.stats, "terms", terms_delta))
    if registry:
        cmds.append(("SADD", k.registry, *sorted(registry)))
    if batch.puts:  # only ever forward: an older restore leaves it
        newest = max(micros(m.updated_at or m.created_at) for m, _ in batch.puts)
        cmds.append(("ZADD", k.wrote, "GT", newest, LAST_WRITE))
    return cmds


LAST_WRITE = "last"  # the one member of `{ns}:wrote`


# Lexical change-log entries kept per namespace (approximately: MAXLEN ~). A worker whose
# mirror fell further behind rebuilds it from the records; 20k entries of ~40 bytes keep a
# namespace's log under a megabyte of Redis memory however long it lives.
LOG_MAX = 20_000


def log_entry(keys: NamespaceKeys, memory_id: str) -> Command:
    """Appended to a write's MULTI/EXEC when `memory_id`'s postings change: the change log
    workers' BM25 mirrors replay (integrations/redis/lexical_mirror.py)."""
    return ("XADD", keys.lexlog, "MAXLEN", "~", str(LOG_MAX), "*", "id", memory_id)


def parse_doc(raw: str | None) -> tuple[int, list[str]] | None:
    if raw is None:
        return None
    length, terms = json.loads(raw)
    return int(length), [str(t) for t in terms]


def plan_touches(
    keys: NamespaceKeys,
    current: Mapping[str, Memory],
    steps: Sequence[tuple[Sequence[str], datetime]],
    window: int,
) -> tuple[list[Command], list[tuple[str, Memory]]]:
    """The SETs that apply `steps` (ids, at) in order to the records read in `current`
    (ids not in it are skipped: absent, or in another chunk), and each written record with
    its text, which the caller remembers decoded once the write has committed."""
    now = dict(current)
    changed: dict[str, Memory] = {}
    for ids, when in steps:
        for i in ids:
            if i in now:
                now[i] = changed[i] = reinforce(now[i], when, window)
    written = [(dumps(memory_to_dict(m), "memory"), m) for m in changed.values()]
    return [("SET", keys.record(m.id), raw) for raw, m in written], written


def plan_delete(
    keys: NamespaceKeys,
    records: Mapping[str, Memory],
    docs: Mapping[str, tuple[int, list[str]]],
    adjacency: Mapping[str, set[str]],
    requested: Sequence[str],
) -> list[Command]:
    """Real deletion: the records, every index entry, their edges and postings."""
    cmds: list[Command] = []
    docs_delta = 0
    terms_delta = 0
    for memory_id, m in records.items():
        cmds.append(("DEL", keys.record(memory_id)))
        cmds.append(("HDEL", keys.emb, memory_id))
        cmds.append(("ZREM", keys.all, memory_id))
        cmds.append(("ZREM", keys.status(m.status.value), memory_id))
        if m.is_active:
            cmds.append(("ZREM", keys.tier(m.tier.value), memory_id))
            for entity in sorted(m.entities):
                cmds.append(("ZREM", keys.entity(entity), memory_id))
        if is_free_text(m):
            cmds.append(("SREM", keys.text_hash(content_hash(m.text)), memory_id))
        if m.key is not None:
            cmds.append(("SREM", keys.fact_key(m.key), memory_id))
        doc = docs.get(memory_id)
        if doc is not None:
            length, terms = doc
            for term in terms:
                cmds.append(("HDEL", keys.term(term), memory_id))
            cmds.append(("HDEL", keys.doclen, memory_id))
            cmds.append(("HDEL", keys.doc, memory_id))
            cmds.append(log_entry(keys, memory_id))
            docs_delta -= 1
            terms_delta -= length
    # Edges of every requested id (stored or not: an edge may name an id never stored).
    for memory_id in requested:
        for name in sorted(adjacency.get(memory_id, set())):
            src, dst, _ = json.loads(name)
            cmds.append(("HDEL", keys.edges, name))
            for end in (src, dst):
                if end != memory_id:
                    cmds.append(("SREM", keys.adjacency(end), name))
        cmds.append(("DEL", keys.adjacency(memory_id)))
    if docs_delta:
        cmds.append(("HINCRBY", keys.stats, "docs", docs_delta))
    if terms_delta:
        cmds.append(("HINCRBY", keys.stats, "terms", terms_delta))
    return cmds


def plan_drop_namespace(
    keys: NamespaceKeys, ids: Sequence[str], registry: Sequence[str]
) -> list[Command]:
    """Every key of a namespace (journal and vector outbox included, the locks left to
    expire): the fixed
    keys, the per-item keys its registry lists and the records of `ids` (read under
    WATCH of `all` and the registry, so a concurrent writer forces a re-read)."""
    names = [keys.seq, keys.all, keys.edges, keys.doclen, keys.doc, keys.stats,
             keys.emb, keys.lexlog, keys.journal, keys.wrote, keys.registry, keys.outbox,
             keys.outbox_pushed, keys.outbox_done]
    names += [keys.status(s.value) for s in Status] + [keys.tier(t.value) for t in Tier]
    names += sorted(registry) + [keys.record(i) for i in ids]
    return [("DEL", *names[i : i + _DEL_CHUNK]) for i in range(0, len(names), _DEL_CHUNK)]


def _refuse_second_holder(
    stored: set[str], final_holders: set[str], batch_ids: tuple[str, ...], what: str, do: str
) -> None:
    """At most one holder after the batch: the stored holders the batch does not touch,
    plus the batch's ids that hold it in their final state."""
    holders = (set(stored) - set(batch_ids)) | final_holders
    if len(holders) > 1:
        a, b = sorted(holders)[:2]
        raise ConflictError(f"{what} ({a!r} and {b!r}); {do}")
