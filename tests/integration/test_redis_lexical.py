"""The Redis tier's BM25 ranks exactly like the SQLite tier's FTS5 bm25() on real text.

Both tiers index `core.text.lexical_terms`; the Redis one computes FTS5's formula in
Python over postings kept in Redis. On one namespace (where FTS5's table-wide statistics
are the namespace's), every query must return the same ids in the same order with the
same scores — that is what keeps recall on Redis within reach of the embedded default.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.integrations.redis.lexical import bm25_top, term_frequencies
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore

DEMO = Path(__file__).resolve().parents[2] / "adapters" / "cli" / "data" / "demo_sessions.jsonl"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

QUERIES = [
    "Where does Maya live?",
    "What is her job at Tidewater Logistics?",
    "Lisbon flat Alfama",
    "painting painted paints",
    "What did she say about running a marathon?",
    "coffee tea allergy",
    "the and of",  # stop words only: searched as they are
    "Café résumé naïve",
    "data analyst work project deadline",
    "sister brother family visit",
]


def demo_texts() -> list[str]:
    texts: list[str] = []
    for line in DEMO.read_text().splitlines():
        row = json.loads(line)
        text = row.get("text")
        if isinstance(text, str) and text.strip() and text not in texts:
            texts.append(text)
    assert len(texts) > 50, "the demo transcript should give a real corpus"
    return texts


@pytest.fixture
def tiers(redis_url: str, tmp_path: Path) -> Iterator[tuple[SQLiteStore, RedisStore]]:
    sqlite = SQLiteStore(tmp_path / "lexical.db")
    redis_store = RedisStore.from_url(redis_url, prefix=f"lex{uuid.uuid4().hex[:10]}")
    try:
        yield sqlite, redis_store
    finally:
        for ns in redis_store.namespaces():
            redis_store.delete_namespace(ns)
        redis_store.close()
        sqlite.close()


def corpus(ns: str) -> list[Memory]:
    out = []
    for i, text in enumerate(demo_texts()):
        status = Status.ARCHIVED if i % 11 == 5 else Status.ACTIVE
        out.append(Memory(id=f"d{i:03d}", namespace=ns, kind=Kind.EPISODIC, tier=Tier.TRACE,
                          text=text, created_at=T0, status=status))
    return out


def test_redis_bm25_equals_sqlite_fts5_bm25(tiers: tuple[SQLiteStore, RedisStore]) -> None:
    sqlite, redis_store = tiers
    memories = corpus("demo")
    for store in (sqlite, redis_store):
        store.commit(WriteBatch("demo", tuple(memories)))
    # An update that changes text and one that retires a memory: postings must follow.
    changed = memories[3].evolve(text="Maya now paints watercolours in Lisbon on Sundays")
    retired = memories[4].evolve(status=Status.SUPERSEDED, superseded_by=changed.id)
    for store in (sqlite, redis_store):
        store.commit(WriteBatch("demo", (changed, retired)))

    compared = 0
    for query in QUERIES:
        want = sqlite.search("demo", query, 20)
        got = redis_store.search("demo", query, 20)
        assert [h.id for h in got] == [h.id for h in want], query
        for a, b in zip(got, want, strict=True):
            assert a.score == pytest.approx(b.score, rel=1e-9, abs=1e-12), (query, a.id)
        compared += len(want)
    assert compared > 30  # the queries really matched something
    # The retired memory's own text no longer finds it, on either tier.
    for store in (sqlite, redis_store):
        assert retired.id not in {h.id for h in store.search("demo", retired.text, 50)}


def test_bm25_by_hand() -> None:
    """Two documents, one query term in one of them: FTS5's formula, computed by hand."""
    # N = 3 docs, total length 12 (avg 4); term in doc "a" (tf 2, length 6) only.
    idf = math.log((3 - 1 + 0.5) / (1 + 0.5))
    expected = idf * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 6 / 4))
    [(doc, score)] = bm25_top({"t": {"a": 2}}, {"a": 6}, 3, 12, 5)
    assert doc == "a" and score == pytest.approx(expected, rel=1e-12)
    # A term in more than half the documents has its idf floored at 1e-6, not negative.
    top = bm25_top({"t": {"a": 1, "b": 1}}, {"a": 4, "b": 4}, 3, 12, 5, order={"a": 2, "b": 1})
    assert [d for d, _ in top] == ["b", "a"]  # tie: insertion order
    assert top[0][1] == pytest.approx(1e-6 * 2.2 / (1 + 1.2), rel=1e-9)
    assert bm25_top({"t": {"a": 1}}, {"a": 1}, 1, 1, 0) == []


def test_the_server_reads_the_rarest_words_first_within_its_budget(redis_url: str) -> None:
    """Before a worker's mirror is filled the Redis server scores a search, and serves no
    one else meanwhile: past `script_postings` postings it keeps the rarest words and
    leaves out the commonest. Within the budget, every word counts as before."""
    texts = [f"coffee with milk at the office, cup {i}" for i in range(30)]
    texts += ["lisbon coffee near the river", "a lisbon coffee at dawn", "the lisbon tram"]
    prefix = f"lex{uuid.uuid4().hex[:10]}"
    memories = tuple(
        Memory(id=f"b{i:03d}", namespace="budget", kind=Kind.EPISODIC, tier=Tier.TRACE,
               text=t, created_at=T0)
        for i, t in enumerate(texts)
    )
    postings: dict[str, dict[str, int]] = {}
    lengths: dict[str, int] = {}
    for m in memories:
        counts, lengths[m.id] = term_frequencies(m.text)
        for term, tf in counts.items():
            postings.setdefault(term, {})[m.id] = tf
    total = sum(lengths.values())
    order = {m.id: i for i, m in enumerate(memories)}
    # "lisbon" is in 3 texts, "coffee" in 32 (the stemmed terms the query reads)
    assert len(postings["lisbon"]) == 3 and len(postings["coffe"]) == 32

    def first_search(budget: int) -> list[tuple[str, float]]:
        # a fresh store has no mirror: its first search is scored on the server
        with RedisStore.from_url(redis_url, prefix=prefix) as store:
            store.script_postings = budget
            return [(h.id, h.score) for h in store.search("budget", "Lisbon coffee", 5)]

    with RedisStore.from_url(redis_url, prefix=prefix) as writer:
        writer.commit(WriteBatch("budget", memories))
        try:
            both = bm25_top({t: postings[t] for t in ("lisbon", "coffe")}, lengths,
                            len(texts), total, 5, order=order)
            rare = bm25_top({"lisbon": postings["lisbon"]}, lengths, len(texts), total, 5,
                            order=order)
            for budget, want in ((0, both), (35, both), (34, rare), (3, rare), (2, [])):
                got = first_search(budget)
                assert [d for d, _ in got] == [d for d, _ in want], budget
                for (_, a), (_, b) in zip(got, want, strict=True):
                    assert a == pytest.approx(b, rel=1e-9), budget
        finally:
            writer.delete_namespace("budget")
