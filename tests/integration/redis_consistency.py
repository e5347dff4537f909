"""Does every Redis secondary index agree with the records? Read straight from the keys.

The key layout is the one documented in `reverie.integrations.redis.keys`. This walks a
namespace's keys (its `{ns}` hash tag only, through `SCAN MATCH`, which is fine in a
test) and returns every disagreement as a readable line, so a test can assert the list
is empty and show what broke. A memory half written by an interrupted write would show
here as a record missing from an index, or an index entry without its record.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from reverie.core.codec import memory_from_dict
from reverie.core.models import Memory, Status
from reverie.core.text import content_hash, lexical_terms
from reverie.integrations.redis.keys import DEFAULT_PREFIX, NamespaceKeys


def index_problems(client: Any, namespace: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    k = NamespaceKeys(prefix, namespace)
    problems: list[str] = []

    def text(v: Any) -> str:
        return v.decode() if isinstance(v, bytes) else str(v)

    keys = sorted(text(x) for x in client.scan_iter(match=k.base + "*", count=1000))
    records: dict[str, Memory] = {}
    for key in keys:
        if key.startswith(k.base + "m:"):
            raw = client.get(key)
            m = memory_from_dict(json.loads(raw))
            records[m.id] = m
            if key != k.record(m.id) or m.namespace != namespace:
                problems.append(f"{key} holds memory {m.id} of {m.namespace}")
    active = {i for i, m in records.items() if m.status is Status.ACTIVE}

    def zmembers(key: str) -> set[str]:
        return {text(x) for x in client.zrange(key, 0, -1)}

    every = zmembers(k.all)
    if every != set(records):
        problems.append(
            f"scan order {k.all}: without record {sorted(every - set(records))[:5]}, "
            f"records missing from it {sorted(set(records) - every)[:5]}"
        )
    for status in Status:
        members = zmembers(k.status(status.value))
        want = {i for i, m in records.items() if m.status is status}
        if members != want:
            problems.append(
                f"status index {status.value}: extra {sorted(members - want)[:5]}, "
                f"missing {sorted(want - members)[:5]}"
            )
    tiers: dict[str, set[str]] = defaultdict(set)
    for i in active:
        tiers[records[i].tier.value].add(i)
    for tier in {m.tier.value for m in records.values()} | set(tiers):
        members = zmembers(k.tier(tier))
        if members != tiers[tier]:
            problems.append(
                f"tier index {tier}: extra {sorted(members - tiers[tier])[:5]}, "
                f"missing {sorted(tiers[tier] - members)[:5]}"
            )

    hash_sets = {key for key in keys if key.startswith(k.base + "hash:")}
    free = {i for i in active if records[i].key is None}
    indexed_free: set[str] = set()
    for key in hash_sets:
        digest = key.removeprefix(k.base + "hash:")
        members = {text(x) for x in client.smembers(key)}
        if len(members) > 1:
            problems.append(f"{key}: {len(members)} active memories share one text hash")
        for i in members:
            m = records.get(i)
            if m is None or i not in free or content_hash(m.text) != digest:
                problems.append(f"{key}: member {i} is not an active free text with that hash")
        indexed_free |= members
    if indexed_free != free:
        missing = sorted(free - indexed_free)[:5]
        problems.append(f"text-hash index misses active free texts {missing}")

    by_key: dict[str, set[str]] = defaultdict(set)
    for i, m in records.items():
        if m.key is not None:
            by_key[m.key].add(i)
    for fact_key, ids in by_key.items():
        members = {text(x) for x in client.smembers(k.fact_key(fact_key))}
        if members != ids:
            problems.append(f"fact-key index {fact_key}: {sorted(members)} != {sorted(ids)}")
    for key in keys:
        if key.startswith(k.base + "key:"):
            fk = key.removeprefix(k.base + "key:")
            if fk not in by_key:
                problems.append(f"{key}: a fact-key index without any record")

    # lexical postings: exactly the active memories, with their terms and lengths
    lengths = {text(f): int(v) for f, v in client.hgetall(k.doclen).items()}
    docs = {text(f) for f in client.hkeys(k.doc)}
    if set(lengths) != active or docs != active:
        problems.append(
            f"lexical documents: extra {sorted(set(lengths) - active)[:5]}, missing "
            f"{sorted(active - set(lengths))[:5]} (doc list extra {sorted(docs - active)[:5]})"
        )
    for i in active & set(lengths):
        want_len = len(lexical_terms(records[i].text))
        if lengths[i] != want_len:
            problems.append(f"lexical length of {i}: {lengths[i]} != {want_len}")
    postings: dict[str, set[str]] = defaultdict(set)  # id -> terms it is posted under
    for key in keys:
        if key.startswith(k.base + "lex:t:"):
            for f in client.hkeys(key):
                postings[text(f)].add(key.removeprefix(k.base + "lex:t:"))
                if text(f) not in active:
                    problems.append(f"{key}: posting for {text(f)}, not an active memory")
    for i in active:
        want_terms = set(lexical_terms(records[i].text))
        if postings.get(i, set()) != want_terms:
            problems.append(f"postings of {i}: {sorted(postings.get(i, set()))[:8]} != "
                            f"{sorted(want_terms)[:8]}")
    stats = {text(f): int(v) for f, v in client.hgetall(k.stats).items()}
    if active and stats.get("docs", 0) != len(active):
        problems.append(f"lexical stats docs {stats.get('docs')} != {len(active)} active")
    if active and stats.get("terms", 0) != sum(lengths.get(i, 0) for i in active):
        problems.append("lexical stats total length disagrees with the document lengths")

    # entities: only active memories; edges: both ends are records
    for key in keys:
        if key.startswith(k.base + "ent:"):
            for i in zmembers(key):
                if i not in active:
                    problems.append(f"{key}: {i} is not an active memory")
    for f in client.hkeys(k.edges):
        src, dst, _ = json.loads(text(f))
        if src not in records or dst not in records:
            problems.append(f"edge {text(f)} has an end without a record")
    return problems
