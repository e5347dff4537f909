"""SQLite search through the in-process BM25 mirror: per-namespace statistics, and exact
results while other store handles (other processes, in effect: separate connections and
mirrors) write the same file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import reverie.integrations.sqlite.lexical as sqlite_lexical
from reverie.core import ConflictError, Status
from reverie.core.models import Memory
from reverie.core.ports import WriteBatch
from reverie.core.text import lexical_terms, query_terms
from reverie.integrations.redis.lexical import bm25_top
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory

QUERIES = ("tea in lisbon", "the cat paints", "jazz by the sea", "bike", "tea cat sea")
TEXTS = (
    "Maya drinks green tea in Lisbon", "the cat sleeps by the sea", "Tom paints the cat",
    "jazz night by the sea in Lisbon", "a new bike for the sea road", "tea and jazz, tea again",
    "the cat and the bike", "Lisbon trams climb the hill",
)


def expected(store: SQLiteStore, ns: str, query: str, k: int) -> list[tuple[str, float]]:
    """BM25 by the reference formula over the namespace's active texts only."""
    conn = sqlite3.connect(store.path)
    rows = conn.execute(
        "SELECT seq, id, json_extract(record, '$.text') FROM memories "
        "WHERE namespace = ? AND status = 'active'", (ns,)
    ).fetchall()
    conn.close()
    docs = {i: lexical_terms(t) for _, i, t in rows}
    terms = query_terms(query)
    postings = {t: {i: d.count(t) for i, d in docs.items() if t in d} for t in terms}
    lengths = {i: len(d) for i, d in docs.items()}
    return bm25_top(postings, lengths, len(docs), sum(lengths.values()), k,
                    {i: s for s, i, _ in rows})


def check(store: SQLiteStore, ns: str, k: int = 5) -> None:
    for q in QUERIES:
        got = [(h.id, h.score) for h in store.search(ns, q, k)]
        want = expected(store, ns, q, k)
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12), q


def memories(ns: str) -> list[Memory]:
    return [make_memory(namespace=ns, text=t) for t in TEXTS]


def test_one_namespace_does_not_move_anothers_scores(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        store.commit(WriteBatch("a", tuple(memories("a"))))
        before = {q: [(h.id, h.score) for h in store.search("a", q, 5)] for q in QUERIES}
        check(store, "a")
        # another tenant writes many documents full of the same words
        crowd = [make_memory(namespace="b", text=f"tea cat sea lisbon jazz bike {n}")
                 for n in range(200)]
        store.commit(WriteBatch("b", tuple(crowd)))
        after = {q: [(h.id, h.score) for h in store.search("a", q, 5)] for q in QUERIES}
        assert after == before
        check(store, "b")


def test_another_writer_on_the_file_is_seen_exactly(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    ms = memories("ns")
    writer.commit(WriteBatch("ns", tuple(ms)))
    check(reader, "ns")  # builds the reader's mirror
    # the writer changes a text, retires one, deletes one, adds one
    writer.commit(WriteBatch("ns", (
        ms[0].evolve(text="Maya now drinks black coffee in Porto"),
        ms[1].evolve(status=Status.SUPERSEDED),
        make_memory(namespace="ns", text="tea with the cat by the sea"),
    )))
    writer.delete("ns", [ms[2].id])
    check(reader, "ns")  # replayed from the change log
    assert ms[1].id not in {h.id for h in reader.search("ns", "cat sea", 20)}
    # the namespace is deleted and re-created (it may get the same number back)
    writer.delete_namespace("ns")
    assert reader.search("ns", "tea", 5) == []
    assert "ns" not in reader._text.mirrors  # the deleted texts' terms left the reader too
    writer.commit(WriteBatch("ns", (make_memory(namespace="ns", text="only jazz now"),)))
    check(reader, "ns")
    assert [h.id for h in reader.search("ns", "tea cat jazz", 5)] == [
        h.id for h in SQLiteStore(path).search("ns", "tea cat jazz", 5)
    ]
    reader.close()
    writer.close()


def test_a_mirror_behind_the_trimmed_log_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_lexical, "LOG_KEEP", 3)
    monkeypatch.setattr(sqlite_lexical, "LOG_TRIM_EVERY", 1)
    path = tmp_path / "m.db"
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    writer.commit(WriteBatch("ns", tuple(memories("ns"))))
    check(reader, "ns")
    for n in range(10):  # ten write transactions: the reader's position is trimmed away
        writer.commit(WriteBatch("ns", (make_memory(namespace="ns", text=f"tea number {n}"),)))
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(DISTINCT gen) FROM lexical_changes").fetchone()[0] <= 4
    conn.close()
    check(reader, "ns")
    reader.close()
    writer.close()


def test_forget_drops_the_text_from_this_processes_mirror_at_once(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        ms = memories("ns")
        store.commit(WriteBatch("ns", tuple(ms)))
        store.search("ns", "tea", 5)
        mirror = store._text.mirrors["ns"]
        assert len(mirror) == len(TEXTS)
        store.delete("ns", [ms[0].id])
        assert len(mirror) == len(TEXTS) - 1  # before any search
        check(store, "ns")
        store.delete_namespace("ns")
        assert "ns" not in store._text.mirrors


def test_a_refused_write_changes_no_search(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        ms = memories("ns")
        store.commit(WriteBatch("ns", tuple(ms)))
        before = [(h.id, h.score) for h in store.search("ns", "tea cat", 8)]
        stale = ms[0].evolve(text="tea tea tea cat cat", version=5)  # wrong version
        with pytest.raises(ConflictError):
            store.commit(WriteBatch("ns", (make_memory(namespace="ns", text="cat tea"), stale)))
        assert [(h.id, h.score) for h in store.search("ns", "tea cat", 8)] == before
        check(store, "ns")
