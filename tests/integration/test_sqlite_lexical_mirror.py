"""SQLite BM25 search over the postings kept in the file: per-namespace statistics, exact
top-k against the reference formula through every kind of change, costs that follow the
query's postings, and exact results while other store handles (other processes, in effect:
separate connections) write the same file."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import ConflictError, Status
from reverie.core.models import Memory
from reverie.core.ports import WriteBatch
from reverie.core.text import lexical_terms, query_terms
from reverie.integrations.redis.lexical import bm25_top
from reverie.integrations.sqlite import lexical
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
    check(reader, "ns")
    # the writer changes a text, retires one, deletes one, adds one
    writer.commit(WriteBatch("ns", (
        ms[0].evolve(text="Maya now drinks black coffee in Porto"),
        ms[1].evolve(status=Status.SUPERSEDED),
        make_memory(namespace="ns", text="tea with the cat by the sea"),
    )))
    writer.delete("ns", [ms[2].id])
    check(reader, "ns")
    assert ms[1].id not in {h.id for h in reader.search("ns", "cat sea", 20)}
    # the namespace is deleted and re-created (it may get the same number back)
    writer.delete_namespace("ns")
    assert reader.search("ns", "tea", 5) == []
    writer.commit(WriteBatch("ns", (make_memory(namespace="ns", text="only jazz now"),)))
    check(reader, "ns")
    assert [h.id for h in reader.search("ns", "tea cat jazz", 5)] == [
        h.id for h in SQLiteStore(path).search("ns", "tea cat jazz", 5)]
    reader.close()
    writer.close()


WORDS = ("tea", "cat", "sea", "jazz", "bike", "lisbon", "hill", "tram", "porto", "coffee",
         "night", "road", "green", "black", "paint", "fence")


@pytest.mark.parametrize("read_all", [0, 10**9], ids=["pruned", "every-posting"])
def test_many_blocks_and_every_kind_of_change_rank_as_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_all: int
) -> None:
    """Thousands of documents (many blocks per term), changed in every way a store
    changes them, in batches and one by one: search equals BM25 over the active texts,
    for small k (where pruning skips most postings) and large, bit for bit, both where
    a search prunes term by term and where it reads every posting of its terms."""
    monkeypatch.setattr(lexical, "_READ_ALL", read_all)
    rng = random.Random(3)
    serial = iter(range(10**6))

    def text() -> str:
        # a skewed vocabulary: the first words are in most documents, the last in few
        n = rng.randint(1, 9)
        words = " ".join(WORDS[min(int(rng.expovariate(0.35)), len(WORDS) - 1)]
                         for _ in range(n))
        return f"{words} w{rng.randint(0, 400)} n{next(serial)}"

    with SQLiteStore(tmp_path / "m.db") as store:
        live: list[Memory] = []
        for _ in range(6):
            batch = [make_memory(namespace="ns", text=text()) for _ in range(450)]
            store.commit(WriteBatch("ns", tuple(batch)))
            live.extend(batch)
        for _ in range(40):  # single writes: appends, re-texts, retirements, returns
            store.commit(WriteBatch("ns", (make_memory(namespace="ns", text=text()),)))
        changed = []
        for m in rng.sample(live, 300):
            roll = rng.random()
            if roll < 0.4:
                changed.append(m.evolve(text=text()))
            elif roll < 0.8:
                changed.append(m.evolve(status=Status.SUPERSEDED))
            else:
                changed.append(m.evolve(status=Status.ARCHIVED))
        store.commit(WriteBatch("ns", tuple(changed)))
        back = [m.evolve(status=Status.ACTIVE) for m in changed[:50]
                if m.status is not Status.ACTIVE]
        store.commit(WriteBatch("ns", tuple(back)))
        store.delete("ns", [m.id for m in rng.sample(live, 200)])
        for q in ("tea", "tea cat", "fence paint", "porto coffee night w7", "w12 tea sea",
                  "hill tram road green black", "w399"):
            for k in (1, 3, 10, 60):
                got = [(h.id, h.score) for h in store.search("ns", q, k)]
                want = expected(store, "ns", q, k)
                assert [i for i, _ in got] == [i for i, _ in want], (q, k)
                assert [s for _, s in got] == [s for _, s in want], (q, k)
        _bounds_hold(store)


def _tea_blocks(store: SQLiteStore) -> dict[int, tuple[int, int, int]]:
    """Block row id -> (first seq, last seq, documents) of the term "tea", and the term's
    counted documents and blocks must agree with the rows."""
    conn = sqlite3.connect(store.path)
    rows = conn.execute(
        "SELECT id, first_seq, last_seq, n FROM lexical_postings WHERE term = 'tea'"
    ).fetchall()
    df, blocks = conn.execute("SELECT df, blocks FROM lexical_terms WHERE term = 'tea'").fetchone()
    conn.close()
    assert (df, blocks) == (sum(r[3] for r in rows), len(rows))
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_retiring_documents_spread_over_a_long_list_rewrites_only_their_blocks(
    tmp_path: Path,
) -> None:
    """A REM cycle retires members scattered over a frequent word's postings and adds
    its node at the end, in one transaction: the blocks holding no retired member are
    left as they were (the same rows), and search still equals the reference."""
    with SQLiteStore(tmp_path / "m.db") as store:
        live = [make_memory(namespace="ns", text=f"tea note {i}") for i in range(2000)]
        store.commit(WriteBatch("ns", tuple(live)))
        before = _tea_blocks(store)
        assert len(before) == 16  # 2,000 documents in blocks of 128
        retired = [live[i] for i in (5, 700, 701, 1500)]  # in three blocks
        node = make_memory(namespace="ns", text="tea summary of the notes")
        store.commit(WriteBatch("ns", (node, *(m.evolve(status=Status.CONSOLIDATED)
                                               for m in retired))))
        after = _tea_blocks(store)
        kept = {i: b for i, b in before.items() if i in after}
        assert len(kept) == 16 - 3  # the three that held a retired one were rewritten
        last = max(kept, key=lambda i: kept[i][0])  # ...and the last took the node
        assert after[last][2] == kept[last][2] + 1
        assert all(after[i] == b for i, b in kept.items() if i != last)
        assert sum(n for _, _, n in after.values()) == 2000 - 4 + 1
        for q, k in (("tea", 10), ("tea summary", 3), ("note", 60)):
            got = [(h.id, h.score) for h in store.search("ns", q, k)]
            assert got == expected(store, "ns", q, k)
        # and back: the retired return, each into the block it left
        store.commit(WriteBatch("ns", tuple(
            store.get("ns", m.id).evolve(status=Status.ACTIVE) for m in retired)))
        assert sum(n for _, _, n in _tea_blocks(store).values()) == 2000 + 1
        assert [h.id for h in store.search("ns", "tea note 700", 1)] == [live[700].id]


def _steps(store: SQLiteStore, query: str, k: int = 5) -> int:
    """SQLite virtual-machine steps one search takes (a count, not a time)."""
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    # the search runs on the write connection while this thread holds the store's lock
    # (other threads read through connections of their own), so its steps are counted here
    conn = store._db.connection()
    conn.set_progress_handler(tick, 1)
    try:
        with store._db.lock:
            store.search("ns", query, k)
    finally:
        conn.set_progress_handler(None, 1)
    assert steps > 0  # the search ran where it was counted
    return steps


def test_a_search_reads_its_terms_postings_not_the_namespace(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        rare = [make_memory(namespace="ns", text=f"zebra crossing number {n}") for n in range(3)]
        store.commit(WriteBatch("ns", tuple(rare)))

        def grow(n: int) -> None:
            crowd = [make_memory(namespace="ns", text=f"a street scene with cars {i} {n}")
                     for i in range(n)]
            store.commit(WriteBatch("ns", tuple(crowd)))

        grow(1000)
        small = _steps(store, "zebra crossing")
        pruned_small = _steps(store, "zebra street", k=2)
        common_small = _steps(store, "street scene")
        grow(9000)
        assert [h.id for h in store.search("ns", "zebra crossing", 5)] == [m.id for m in rare]
        # ten times the documents: the rare terms' search reads the same postings
        assert _steps(store, "zebra crossing") <= small * 1.2
        # a common term beside a rare one, k below the rare term's matches: the common
        # term cannot lift an unseen document into the top k, so only the rare term's
        # documents are looked up in it
        assert [h.id for h in store.search("ns", "zebra street", 2)] == [m.id for m in rare[:2]]
        assert _steps(store, "zebra street", k=2) <= pruned_small * 1.2
        # a term in every document costs its postings: it grows with them
        assert _steps(store, "street scene") > common_small * 2


def test_frequent_words_that_cannot_lift_a_document_are_looked_up_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each term's score bound comes from its largest frequency in its shortest document.
    Here every text has 6 terms and every frequency is 1, so a word in 2,000 of the 8,003
    texts adds at most its idf, ln(6003.5 / 2000.5) = 1.099, to a score, not
    idf x (k1 + 1) = 2.417. After "zebra" (idf ln(8000.5 / 3.5) = 7.734, the 2nd best
    score so far at k = 2), the four frequent words can add 4.40 at most: no unseen text
    can reach the top 2, so they are looked up for the zebra texts only. With the loose
    bound they could add 9.67: the first of them ("bu", alphabetically first of four equal
    bounds) is read in full, which leaves 7.25 < 7.73, and the next ("car") is looked up
    for all 2,003 texts seen so far, more than its 16 blocks, so it is read in full too;
    then a text with neither zebra nor car can gain at most 4.83 more and only the three
    zebra texts are left to look up."""
    words = ("red", "car", "street", "bus")
    with SQLiteStore(tmp_path / "m.db") as store:
        zebras = [make_memory(namespace="ns", text=f"zebra crossing z{n} a{n} b{n} c{n}")
                  for n in range(3)]
        crowd = [make_memory(namespace="ns", text=f"{w} f{i} g{i} h{i} j{i} k{i}")
                 for w in words for i in range(2000)]
        store.commit(WriteBatch("ns", (*zebras, *crowd)))
        read: list[str] = []
        real_term = lexical._term

        def spy(conn: sqlite3.Connection, num: int, term: str) -> tuple[object, ...]:
            read.append(term)
            return real_term(conn, num, term)

        monkeypatch.setattr(lexical, "_term", spy)
        query = "zebra red car street bus"
        want = expected(store, "ns", query, 2)
        assert [h.id for h in store.search("ns", query, 2)] == [i for i, _ in want]
        assert [i for i, _ in want] == [m.id for m in zebras[:2]]
        assert read == ["zebra"]
        read.clear()
        monkeypatch.setattr(
            lexical, "_bound", lambda idf, most, avg: idf * (lexical.BM25_K1 + 1.0)
        )
        assert [h.id for h in store.search("ns", query, 2)] == [i for i, _ in want]
        assert read == ["zebra", "bu", "car"]


def _bounds_hold(store: SQLiteStore) -> None:
    """Every term's kept bound covers each of its postings: largest frequency at least
    theirs, shortest length at most theirs."""
    import numpy as np

    conn = sqlite3.connect(store.path)
    most = {(n, t): (tf, ln) for n, t, tf, ln in conn.execute(
        "SELECT num, term, max_tf, min_len FROM lexical_terms")}
    for num, term, tfs, lens in conn.execute(
        "SELECT num, term, tfs, lens FROM lexical_postings"
    ):
        top, least = most[(num, term)]
        assert np.frombuffer(tfs, dtype="<i4").max() <= top, term
        assert np.frombuffer(lens, dtype="<i4").min() >= least, term
    conn.close()


def test_namespaces_are_matched_exactly_not_by_prefix(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        for ns in ("user", "user/1", "user1", "use"):
            store.commit(WriteBatch(ns, (make_memory(namespace=ns, text=f"tea in {ns}"),)))
        for ns in ("user", "user/1", "user1", "use"):
            hits = store.search(ns, "tea", 10)
            assert len(hits) == 1 and store.get(ns, hits[0].id) is not None
            check(store, ns)


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


@settings(max_examples=200)
@given(
    st.dictionaries(st.integers(0, 60), st.floats(0.01, 9.0), max_size=40),
    st.dictionaries(st.integers(0, 60), st.floats(0.01, 9.0), max_size=40),
)
def test_merging_a_terms_postings_adds_to_the_documents_seen_and_puts_new_ones_in_order(
    seen: dict[int, float], term: dict[int, float]
) -> None:
    """The partial sums after one more term: every document of either side once,
    ascending, a document on both sides with the two added."""
    import numpy as np

    s = np.asarray(sorted(seen), dtype=np.int64)
    p = np.asarray([seen[d] for d in sorted(seen)], dtype=np.float64)
    docs = sorted(term)
    got_docs, got_sums = lexical._merge(
        s, p, np.asarray(docs, dtype=np.int64), np.asarray([term[d] for d in docs])
    )
    want = {d: seen.get(d, 0.0) + term[d] if d in seen and d in term else seen.get(d, term.get(d))
            for d in seen.keys() | term.keys()}
    assert got_docs.tolist() == sorted(want)
    assert got_sums.tolist() == [want[d] for d in sorted(want)]


@given(st.lists(st.integers(0, 300), min_size=1, max_size=40), st.integers(1, 5))
def test_postings_of_a_file_written_out_of_order_are_read_ascending_and_once(
    seqs: list[int], blocks: int
) -> None:
    """Every reader merges and bisects a term's postings, so the blocks' arrays are put in
    order as they are read, each posting with its own frequency and length."""
    import numpy as np

    rows = []
    for part in np.array_split(np.asarray(seqs, dtype="<i8"), blocks):
        rows.append((part.tobytes(), (part % 7).astype("<i4").tobytes(),
                     (part % 11).astype("<i4").tobytes()))
    got, tfs, lens = lexical._blocks(rows)
    assert got.tolist() == sorted(set(seqs))
    assert tfs.tolist() == [q % 7 for q in got.tolist()]
    assert lens.tolist() == [q % 11 for q in got.tolist()]
