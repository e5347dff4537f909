"""SQLiteStore against real files: foreign and damaged files are refused untouched, data
survives reopening, several processes share one file without losing a write, and a failed
write leaves the file as it was."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core.errors import (
    BackendUnavailable,
    ConflictError,
    InvalidInput,
    LockBusy,
    SchemaTooNew,
    StoreCorrupt,
)
from reverie.core.models import Edge, EdgeType, Kind, Memory, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite.store import SCHEMA_VERSION, SQLiteStore

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def make_memory(memory_id: str, text: str | None = None, **overrides: Any) -> Memory:
    fields: dict[str, Any] = {
        "id": memory_id,
        "namespace": "ns",
        "kind": Kind.EPISODIC,
        "tier": Tier.TRACE,
        "text": text or f"the memory called {memory_id}",
        "created_at": T0,
    }
    fields.update(overrides)
    return Memory(**fields)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read with plain sqlite3 (not through the store)."""
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"'), key=repr) for t in tables}
    finally:
        conn.close()


# --- files that are not (usable) reverie stores -------------------------------------------


def test_random_bytes_are_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"\x00not sqlite\xff" + os.urandom(8192))
    before = digest(path)
    with pytest.raises(StoreCorrupt, match=r"backup|another path"):
        SQLiteStore(path)
    assert digest(path) == before


def test_a_truncated_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    good = tmp_path / "good.db"
    with SQLiteStore(good) as store:
        store.commit(WriteBatch("ns", (make_memory("a"),)))
    path = tmp_path / "broken.db"
    path.write_bytes(good.read_bytes()[:150] + os.urandom(3000))
    before = digest(path)
    with pytest.raises(StoreCorrupt):
        SQLiteStore(path)
    assert digest(path) == before


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
        "CREATE TABLE meta (key TEXT, val TEXT)",  # a `meta` table, but not ours
        "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)",  # ours in shape, no marker
    ],
)
def test_another_applications_database_is_refused_untouched(tmp_path: Path, schema: str) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute(schema)
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreCorrupt, match="another application"):
        SQLiteStore(path)
    assert digest(path) == before
    assert not Path(f"{path}-wal").exists()


def test_a_store_from_a_newer_reverie_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", (make_memory("a"),)))
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(SchemaTooNew, match=r"[Uu]pgrade reverie"):
        SQLiteStore(path)
    assert digest(path) == before


def test_a_directory_is_not_a_store_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="directory"):
        SQLiteStore(tmp_path)


# --- files that are --------------------------------------------------------------------


def test_new_file_in_new_directories_and_an_empty_file(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "memory.db"
    with SQLiteStore(nested) as store:
        assert store.namespaces() == []
    empty = tmp_path / "empty.db"
    empty.touch()
    with SQLiteStore(empty) as store:
        store.commit(WriteBatch("ns", (make_memory("a"),)))
    conn = sqlite3.connect(empty)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    a = make_memory("a", "Alice moved to Lisbon in May", entities={"alice", "lisbon"})
    b = make_memory("b", "Bob likes chess")
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", (a, b), (Edge("a", "b", EdgeType.ENTITY, 0.7),)))
        store.touch("ns", ["a"], T0 + timedelta(days=1), 8)
        store.set_meta("embedder", "test/8")
        store.journal_put("ns", "fp", {"step": "done"})
    with SQLiteStore(path) as store:
        got = store.get("ns", "a")
        assert got is not None and got.access_count == 1 and got.version == 2
        assert store.get("ns", "b") == b
        assert store.edges("ns", ["a"]) == [Edge("a", "b", EdgeType.ENTITY, 0.7)]
        assert [m.id for m in store.find_by_entity("ns", "lisbon", 5)] == ["a"]
        assert [h.id for h in store.search("ns", "where does alice live? lisbon", 5)] == ["a"]
        assert store.get_meta("embedder") == "test/8"
        assert store.journal_get("ns", "fp") == {"step": "done"}


def test_a_failed_write_leaves_the_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    a, b = make_memory("a"), make_memory("b")
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", (a, b), (Edge("a", "b", EdgeType.ENTITY),)))
    before = dump(path)
    with SQLiteStore(path) as store:
        # First put is valid and gets written inside the transaction; the second conflicts.
        bad = WriteBatch(
            "ns",
            (a.evolve(text="rewritten text"), make_memory("c", "new words"), b.evolve(version=5)),
            (Edge("c", "a", EdgeType.CAUSAL),),
            remove_edges=(("a", "b", EdgeType.ENTITY),),
        )
        with pytest.raises(ConflictError):
            store.commit(bad)
        with pytest.raises(InvalidInput):  # not JSON: refused before anything is written
            store.commit(WriteBatch("ns", (make_memory("d", metadata={"x": object()}),)))
        assert store.get("ns", "a") == a
        assert [h.id for h in store.search("ns", "rewritten new words", 5)] == []
    assert dump(path) == before


def test_two_handles_on_one_file_share_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as one, SQLiteStore(path) as two:
        with one.lock("ns"), pytest.raises(LockBusy, match="locked"), two.lock("ns"):
            pass
        one.commit(WriteBatch("ns", (make_memory("a"),)))
        assert two.get("ns", "a") is not None


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    store.close()
    store.close()  # idempotent
    with pytest.raises(BackendUnavailable, match="closed"):
        store.get("ns", "a")


# --- several processes ---------------------------------------------------------------------


def _touch_worker(path: str, worker: int, n: int) -> None:
    store = SQLiteStore(path)
    try:
        for i in range(n):
            store.touch("ns", ["shared"], T0 + timedelta(minutes=worker * 1000 + i), 16)
    finally:
        store.close()


def test_four_processes_touching_one_memory_lose_no_count(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", (make_memory("shared"),)))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_touch_worker, args=(str(path), w, 100)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with SQLiteStore(path) as store:
        shared = store.get("ns", "shared")
        assert shared is not None
        assert shared.access_count == 400 and shared.version == 401
        assert len(shared.recent_accesses) == 16


def _forget_and_shrink_worker(path: str, ids: list[str]) -> None:
    store = SQLiteStore(path)
    try:
        store.delete("ns", ids)
        store.erase_residue()  # the freed pages back to the file system: the file shrinks
    finally:
        store.close()


def test_a_store_reading_through_its_map_survives_another_process_shrinking_the_file(
    tmp_path: Path,
) -> None:
    """The store reads its file through a memory map: when another process deletes most
    rows and hands the pages back, the file shrinks under the map, and this process must
    go on reading the rows left (no crash on a page past the new end, no deleted text)."""
    path = tmp_path / "memory.db"
    words = ["boiler", "gauge", "cellar", "shelf", "valve", "hinge", "ladder", "lantern",
             "kettle", "barrel"]
    with SQLiteStore(path) as store:
        mems = [
            make_memory(f"m{i:04d}", f"note {i}: the {words[i % 10]} by the door " + "x" * 900)
            for i in range(1200)
        ]
        for n in range(0, len(mems), 200):
            store.commit(WriteBatch("ns", tuple(mems[n : n + 200])))
        store.erase_residue()  # the WAL into the file
        size = os.path.getsize(path)
        # every page read once through the map
        assert len(store.get_many("ns", [m.id for m in mems])) == 1200
        assert len(store.search("ns", "kettle", 500)) == 120
        gone = [m.id for m in mems if int(m.id[1:]) % 10 != 7]  # all but the lanterns
        worker = multiprocessing.get_context("spawn").Process(
            target=_forget_and_shrink_worker, args=(str(path), gone)
        )
        worker.start()
        worker.join(timeout=180)
        assert worker.exitcode == 0
        assert os.path.getsize(path) < size / 4

        left = store.get_many("ns", [m.id for m in mems])
        assert sorted(left) == [f"m{i:04d}" for i in range(7, 1200, 10)]
        assert all(m.text.startswith(f"note {m.id[1:].lstrip('0')}: the lantern") for m in
                   left.values())
        assert store.search("ns", "kettle", 500) == []
        assert {h.id for h in store.search("ns", "lantern", 500)} == set(left)
        store.commit(WriteBatch("ns", (make_memory("fresh", "a kettle on the stove"),)))
        assert [h.id for h in store.search("ns", "kettle", 5)] == ["fresh"]


def _as_version_1(path: Path) -> None:
    """Turn a file into what schema version 1 wrote: raw text under FTS5's own porter."""
    conn = sqlite3.connect(path)
    # undo schemas 3 to 9: kept embeddings, the created-time index, the stored postings
    # (with their term bounds), the entity rows' seq, the kept counts
    conn.execute("DROP TABLE memory_counts")
    conn.execute("DROP TABLE edge_counts")
    conn.execute("DROP INDEX entities_by_time")
    conn.execute("ALTER TABLE memory_entities DROP COLUMN seq")
    conn.execute(
        "CREATE INDEX entities_by_time ON memory_entities (namespace, entity, created_at)")
    conn.execute("ALTER TABLE memories DROP COLUMN embedding")
    conn.execute("DROP INDEX memories_created")
    conn.execute("DROP TABLE lexical_postings")
    conn.execute("DROP TABLE lexical_terms")
    conn.execute("ALTER TABLE namespace_ids DROP COLUMN docs")
    conn.execute("ALTER TABLE namespace_ids DROP COLUMN doc_terms")
    conn.execute("ALTER TABLE namespace_ids DROP COLUMN last_write")
    conn.execute(
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        "text, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute(
        "INSERT INTO memory_fts (rowid, text) SELECT (n.num << 36) | m.seq, "
        "json_extract(m.record, '$.text') FROM memories m "
        "JOIN namespace_ids n ON n.name = m.namespace WHERE m.status = 'active'"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_a_version_1_file_is_migrated_and_searches_with_the_shared_rules(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    painted = make_memory("a", "Melanie PAINTED a sunrise over the lake at the café",
                          entities=frozenset({"melanie"}))
    old = make_memory("b", "Melanie painted the old fence", status=Status.SUPERSEDED,
                      entities=frozenset({"melanie"}))
    other = make_memory("c", "Melanie painted a sunrise", namespace="other")
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", (painted, old), (Edge("a", "b", EdgeType.ENTITY),)))
        store.commit(WriteBatch("other", (other,)))
    _as_version_1(path)
    conn = sqlite3.connect(path)
    assert "porter" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_fts'"
                                    ).fetchone()[0]
    conn.close()
    with SQLiteStore(path) as store:
        # stemming and folding now come from core.text: 'paintings' finds 'PAINTED', 'cafe'
        # finds 'café'; superseded text and other namespaces stay out of the index
        assert [h.id for h in store.search("ns", "paintings", 5)] == ["a"]
        assert [h.id for h in store.search("ns", "cafe", 5)] == ["a"]
        assert [h.id for h in store.search("ns", "fence", 5)] == []
        assert [h.id for h in store.search("other", "sunrise", 5)] == ["c"]
        assert store.get("ns", "a") == painted
        # the time of the last write, kept since schema 6, was filled from the records
        assert store.last_write("ns") == max(painted.created_at, old.created_at)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    # the kept counts were filled from the records: "ns" holds one active and one
    # superseded trace, "other" one active
    assert sorted(conn.execute("SELECT namespace, status, tier, n FROM memory_counts")) == [
        ("ns", "active", "trace", 1), ("ns", "superseded", "trace", 1),
        ("other", "active", "trace", 1)]
    assert list(conn.execute("SELECT namespace, n FROM edge_counts")) == [("ns", 1)]
    # each term's score bound was filled from its postings: the exact largest frequency
    # and shortest length ("paint" once, in the namespace's one active text, of 10 terms)
    assert conn.execute(
        "SELECT t.max_tf, t.min_len FROM lexical_terms t JOIN namespace_ids n "
        "ON n.num = t.num WHERE n.name = 'ns' AND t.term = 'paint'"
    ).fetchone() == (1, 10)
    # each entity row carries its memory's seq, so a lookup by entity reads in order
    assert conn.execute(
        "SELECT count(*) FROM memory_entities e JOIN memories m "
        "ON m.namespace = e.namespace AND m.id = e.memory_id WHERE e.seq != m.seq"
    ).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM memory_entities").fetchone()[0] > 0
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT id, created_at FROM memories "
        "WHERE namespace = 'ns' AND id IN ('a', 'b')"
    ).fetchall()
    assert "COVERING INDEX memories_created" in str(plan)  # created_times reads no row
    # the postings were built once from the active records, under the shared text rules;
    # FTS5's table is gone
    assert conn.execute(
        "SELECT n.name, t.term, t.df FROM lexical_terms t JOIN namespace_ids n ON n.num = t.num "
        "WHERE t.term IN ('paint', 'cafe', 'fenc') ORDER BY n.name, t.term"
    ).fetchall() == [("ns", "cafe", 1), ("ns", "paint", 1), ("other", "paint", 1)]
    assert conn.execute("SELECT name, docs, doc_terms FROM namespace_ids ORDER BY name"
                        ).fetchall() == [("ns", 1, 10), ("other", 1, 4)]
    assert conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name IN ('memory_fts', 'lexical_changes')"
    ).fetchone()[0] == 0
    conn.close()


def test_created_times_come_from_the_column_without_decoding(tmp_path: Path) -> None:
    a = make_memory("a", created_at=T0 + timedelta(seconds=30, microseconds=7))
    b = make_memory("b", created_at=T0 + timedelta(days=3))
    elsewhere = make_memory("a", namespace="other", created_at=T0 + timedelta(days=9))
    with SQLiteStore(tmp_path / "memory.db") as store:
        store.commit(WriteBatch("ns", (a, b)))
        store.commit(WriteBatch("other", (elsewhere,)))
        got = store.created_times("ns", ["b", "a", "unknown"])
        assert got == {"a": a.created_at, "b": b.created_at}
        assert store.created_times("other", ["a"]) == {"a": elsewhere.created_at}


def test_find_by_entity_reads_only_its_limit_among_memories_of_one_time(tmp_path: Path) -> None:
    """Many memories observed at one time (a bulk import, a fixed clock) share an entity:
    the lookup takes the newest by insertion order from the index and stops at its limit,
    instead of sorting every row of that time."""
    path = tmp_path / "memory.db"
    ms = [make_memory(f"m{i:03d}", f"Melanie note {i}", entities=frozenset({"melanie"}))
          for i in range(300)]
    assert len({m.created_at for m in ms}) == 1 and all("melanie" in m.entities for m in ms)
    with SQLiteStore(path) as store:
        store.commit(WriteBatch("ns", tuple(ms)))
        store.commit(WriteBatch("ns", (ms[-1].evolve(status=Status.SUPERSEDED),)))
        assert [m.id for m in store.find_by_entity("ns", "melanie", 3)] == [
            "m298", "m297", "m296"]
    conn = sqlite3.connect(path)
    plan = str(conn.execute(
        "EXPLAIN QUERY PLAN SELECT m.record FROM memory_entities e JOIN memories m "
        "ON m.namespace = e.namespace AND m.id = e.memory_id WHERE e.namespace = 'ns' "
        "AND e.entity = 'melanie' AND m.status = 'active' "
        "ORDER BY e.created_at DESC, e.seq DESC LIMIT 3"
    ).fetchall())
    conn.close()
    assert "entities_by_time" in plan and "TEMP B-TREE" not in plan


def test_a_schema_7_file_gains_exact_term_bounds(tmp_path: Path) -> None:
    """Migration 8 fills each term's largest frequency and shortest document from its
    blocks, across many blocks per term and many terms: each equals what the postings
    hold."""
    import numpy as np

    path = tmp_path / "memory.db"
    words = ["tea", "cat", "sea", "road"]
    with SQLiteStore(path) as store:
        mems = [
            make_memory(f"m{i}", " ".join(
                [words[i % 4]] * (1 + i % 3) + ["x"] * (i % 7) + [f"n{i}"]))
            for i in range(900)
        ]
        store.commit(WriteBatch("ns", tuple(mems)))
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE lexical_terms DROP COLUMN max_tf")
    conn.execute("ALTER TABLE lexical_terms DROP COLUMN min_len")
    conn.execute("DROP TABLE memory_counts")
    conn.execute("DROP TABLE edge_counts")
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    with SQLiteStore(path):
        pass
    conn = sqlite3.connect(path)
    want: dict[str, tuple[int, int]] = {}
    for term, tfs, lens in conn.execute("SELECT term, tfs, lens FROM lexical_postings"):
        top, least = int(np.frombuffer(tfs, "<i4").max()), int(np.frombuffer(lens, "<i4").min())
        was = want.get(term, (0, 10**9))
        want[term] = (max(was[0], top), min(was[1], least))
    got = {t: (tf, ln) for t, tf, ln in conn.execute(
        "SELECT term, max_tf, min_len FROM lexical_terms")}
    conn.close()
    assert got == want
    # "tea" three times at most (i % 3 == 2), in "tea n0" at shortest (2 terms); "x" six
    # times at most (i % 7 == 6), in "road x n15" at shortest (3 terms)
    assert got["tea"] == (3, 2) and got["x"] == (6, 3)


def test_a_schema_9_journal_moves_to_a_rowid_table_with_its_entries(tmp_path: Path) -> None:
    """An interrupted REM cycle's plan and a cluster's entry, written by a release whose
    journal was a WITHOUT ROWID table, are still there to resume from after the upgrade;
    the entries then live apart from their keys, so looking a key up never reads another
    entry's overflow pages (a plan of every cluster is megabytes)."""
    path = tmp_path / "memory.db"
    plan = {"state": "committing", "clusters": [{"members": [f"m{i}" for i in range(4000)]}]}
    with SQLiteStore(path) as store:
        store.journal_put("ns", "plan", plan)
        store.journal_put("ns", "fp1", {"state": "node", "members": ["a", "b"]})
    conn = sqlite3.connect(path)
    rows = list(conn.execute("SELECT namespace, fingerprint, entry FROM journal"))
    conn.execute("DROP TABLE journal")
    conn.execute(
        "CREATE TABLE journal (namespace TEXT NOT NULL, fingerprint TEXT NOT NULL, "
        "entry TEXT NOT NULL, PRIMARY KEY (namespace, fingerprint)) WITHOUT ROWID"
    )
    conn.executemany("INSERT INTO journal VALUES (?, ?, ?)", rows)
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        assert store.journal_get("ns", "plan") == plan
        assert store.journal_get("ns", "fp1") == {"state": "node", "members": ["a", "b"]}
        assert store.journal_get("other", "plan") is None
        store.journal_put("ns", "fp1", {"state": "edges", "members": ["a", "b"]})
        assert store.journal_get("ns", "fp1") == {"state": "edges", "members": ["a", "b"]}
        store.journal_delete("ns", ["plan"])
        assert store.journal_get("ns", "plan") is None
    conn = sqlite3.connect(path)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'journal'").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert "WITHOUT ROWID" not in sql.upper() and version == SCHEMA_VERSION
