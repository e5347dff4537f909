"""The SQLite store's lexical index: an inverted index of the active texts kept in the file,
in the same transaction as the records, and BM25 search that reads only the postings of the
query's terms.

- Postings live in `lexical_postings`, one row per block of up to `BLOCK` documents of one
  (namespace number, term): the documents' record seqs (ascending), their term frequencies
  and their lengths, as packed arrays. A term's postings are a contiguous key range, read
  with a handful of page reads and decoded with numpy; a namespace never sees another's
  postings (the key starts with the namespace's own number, an exact match, not a prefix).
- Each namespace's BM25 statistics (active documents, total length) are kept in
  `namespace_ids`, and each term's document and block counts, largest term frequency and
  shortest document (its score bound) in `lexical_terms`, changed
  by the same transaction as the postings, so every process scores
  with the namespace's own exact statistics and nothing is rebuilt when a process opens.
- Search is exact BM25 top-k (FTS5's formula, `integrations/lexical/bm25.py`) computed
  term at a time, rarest first, with MaxScore pruning: once the terms left could not lift
  an unseen document above the k-th score so far, only the documents already seen that
  could still reach the top k are completed, by looking their postings up block by block.
  A query costs what its terms' postings cost, never the namespace's size.
- Writes are buffered per transaction and applied once per (namespace, term) before the
  commit (`flush`), so a batch of many documents rewrites each touched block once.
"""

from __future__ import annotations

import bisect
import math
import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reverie.core.errors import BackendUnavailable
from reverie.integrations.lexical.bm25 import (
    BM25_B,
    BM25_K1,
    IDF_FLOOR,
    summed,
    term_frequencies,
)
from reverie.integrations.sqlite.database import chunks, marks
from reverie.integrations.sqlite.schema import BLOCK, MAX_NS_NUM

__all__ = ["FullText", "LexicalTop"]

_SEQ = np.dtype("<i8")
_INT = np.dtype("<i4")
# Relative slack on the pruning bounds: partial sums are added in another order than the
# final scores, so they may differ in the last bits; a document within this of the bar is
# kept and scored exactly.
_SLACK = 1e-9
# Postings (summed over the query's terms) up to which a search reads them all instead of
# pruning term by term (`_score_all`): a little below where the two took equal time on a
# 2-core machine (about 5,000 postings, 10k memories); far below it reading all is ~40% faster
_READ_ALL = 4096


@dataclass(slots=True)
class _Pending:
    """One (namespace number, term)'s changes in the open transaction."""

    drops: set[int] = field(default_factory=set)
    adds: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (tf, length)


@dataclass(frozen=True, slots=True)
class LexicalTop:
    """The best documents of one search: record seqs and BM25 scores, best first."""

    seqs: list[int]
    scores: list[float]


class FullText:
    """The postings and per-namespace statistics of one store.

    Its methods that take a connection run inside the store's transaction; `begin` must be
    called at the start of every write (transaction or savepoint), then `end` just before it
    commits, or `abort` when it rolls back."""

    def __init__(self, path: Path, *, term_bounds: bool = True) -> None:
        self._path = path
        self._bounds = term_bounds  # keep lexical_terms' max_tf and min_len (schema 8)
        self._pending: dict[tuple[int, str], _Pending] = {}
        self._stats: dict[int, list[int]] = {}  # num -> [documents delta, length delta]
        # the changes of enclosing writes while a savepoint's own are gathered (see
        # `Database.together`): merged into them when it is released, dropped if not
        self._outer: list[tuple[dict[tuple[int, str], _Pending], dict[int, list[int]]]] = []

    def begin(self) -> None:
        """A write transaction (or a savepoint inside one) starts: its changes gather
        apart from any enclosing write's."""
        self._outer.append((self._pending, self._stats))
        self._pending, self._stats = {}, {}

    def abort(self) -> None:
        """The write rolled back: its changes are forgotten, the enclosing write's kept."""
        self._pending, self._stats = self._outer.pop()

    def end(self, conn: sqlite3.Connection) -> None:
        """The write is about to commit: the outermost applies every gathered change, a
        savepoint hands its changes to the write around it."""
        if len(self._outer) > 1:
            inner, inner_stats = self._pending, self._stats
            self._pending, self._stats = self._outer.pop()
            for key, p in inner.items():
                q = self._pending.get(key)
                if q is None:  # nothing gathered for the term before: the changes move over
                    self._pending[key] = p
                    continue
                for seq in p.drops:  # later than every change gathered so far
                    q.adds.pop(seq, None)
                    q.drops.add(seq)
                q.adds.update(p.adds)
            for num, (docs, length) in inner_stats.items():
                st = self._stats.setdefault(num, [0, 0])
                st[0] += docs
                st[1] += length
            return
        try:
            self.flush(conn)
        finally:
            self._pending, self._stats = self._outer.pop()

    # --- namespace numbers ----------------------------------------------------------------

    @staticmethod
    def ns_num(conn: sqlite3.Connection, ns: str) -> int | None:
        """The namespace's number; read inside the caller's transaction, never cached,
        because another process may delete and re-create the namespace."""
        row = conn.execute("SELECT num FROM namespace_ids WHERE name = ?", (ns,)).fetchone()
        return None if row is None else int(row[0])

    def ensure_ns_num(self, conn: sqlite3.Connection, ns: str) -> int:
        existing = self.ns_num(conn, ns)
        if existing is not None:
            return existing
        num = int(conn.execute("SELECT coalesce(max(num), 0) + 1 FROM namespace_ids").fetchone()[0])
        if num > MAX_NS_NUM:
            raise BackendUnavailable(
                f"{self._path} has used up its namespace numbers; export and re-import the "
                "store into a new file"
            )
        conn.execute("INSERT INTO namespace_ids (name, num) VALUES (?, ?)", (ns, num))
        return num

    # --- writes: the postings follow the active set ---------------------------------------

    def index(self, num: int, seq: int, text: str) -> None:
        """Index record `seq`'s text under namespace number `num` (applied at `flush`)."""
        self._add(num, seq, text)

    def _add(self, num: int, seq: int, text: str) -> None:
        counts, length = term_frequencies(text)
        for term, tf in counts.items():
            p = self._gathered((num, term))
            p.adds[seq] = (tf, length)
        st = self._stats.setdefault(num, [0, 0])
        st[0] += 1
        st[1] += length

    def _gathered(self, key: tuple[int, str]) -> _Pending:
        """The open write's changes to one (namespace number, term), made on first use
        (`setdefault` would build one for every term of every document, most of them
        thrown away)."""
        p = self._pending.get(key)
        if p is None:
            p = self._pending[key] = _Pending()
        return p

    def _drop(self, num: int, seq: int, text: str) -> None:
        counts, length = term_frequencies(text)
        for term in counts:
            p = self._gathered((num, term))
            p.adds.pop(seq, None)
            p.drops.add(seq)
        st = self._stats.setdefault(num, [0, 0])
        st[0] -= 1
        st[1] -= length

    def follow(
        self, conn: sqlite3.Connection, ns: str, seq: int, *, old_text: str | None,
        active: bool, text: str,
    ) -> None:
        """Record `seq` was written: index its text while it is active, and only then.
        `old_text` is the text it was indexed under before this write (None when it was
        not indexed: new, or not active)."""
        num = self.ensure_ns_num(conn, ns)
        if old_text is not None and not (active and old_text == text):
            self._drop(num, seq, old_text)
        if active and old_text != text:
            self._add(num, seq, text)

    def remove(self, conn: sqlite3.Connection, num: int, seqs: Sequence[int]) -> None:
        """Records `seqs` of namespace number `num` are being deleted (call before the rows
        go): their postings leave with them."""
        for chunk in chunks(seqs):
            for seq, text in conn.execute(
                f"SELECT seq, json_extract(record, '$.text') FROM memories "
                f"WHERE seq IN ({marks(len(chunk))}) AND status = 'active'",
                tuple(chunk),
            ):
                self._drop(num, int(seq), str(text))

    def drop_namespace(self, conn: sqlite3.Connection, ns: str) -> None:
        """The namespace is being deleted: its postings and its number go."""
        num = self.ns_num(conn, ns)
        if num is not None:
            self._pending = {key: p for key, p in self._pending.items() if key[0] != num}
            self._stats.pop(num, None)
            conn.execute("DELETE FROM lexical_postings WHERE num = ?", (num,))
            conn.execute("DELETE FROM lexical_terms WHERE num = ?", (num,))
            conn.execute("DELETE FROM namespace_ids WHERE name = ?", (ns,))

    def flush(self, conn: sqlite3.Connection) -> None:
        """Apply the transaction's pending changes (just before it commits)."""
        counts: list[tuple[int, str, int, int, int | None, int | None]] = []
        for (num, term), p in sorted(self._pending.items()):
            if p.drops or p.adds:
                df, blocks = _apply(conn, num, term, p.drops, p.adds)
                if df or blocks or p.adds:
                    # what the documents coming in may add to the term's score bound
                    top = max(v[0] for v in p.adds.values()) if p.adds else None
                    least = min(v[1] for v in p.adds.values()) if p.adds else None
                    counts.append((num, term, df, blocks, top, least))
        if self._bounds:
            # max() of SQLite's is NULL when either side is: an unknown bound stays unknown
            conn.executemany(
                "INSERT INTO lexical_terms (num, term, df, blocks, max_tf, min_len) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (num, term) DO UPDATE SET df = df + excluded.df, "
                "blocks = blocks + excluded.blocks, "
                "max_tf = CASE WHEN excluded.max_tf IS NULL THEN max_tf "
                "ELSE max(max_tf, excluded.max_tf) END, "
                "min_len = CASE WHEN excluded.min_len IS NULL THEN min_len "
                "ELSE min(min_len, excluded.min_len) END",
                counts,
            )
        else:
            conn.executemany(
                "INSERT INTO lexical_terms (num, term, df, blocks) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (num, term) DO UPDATE SET df = df + excluded.df, "
                "blocks = blocks + excluded.blocks",
                [c[:4] for c in counts],
            )
        conn.executemany(
            "DELETE FROM lexical_terms WHERE num = ? AND term = ? AND df <= 0",
            [(num, term) for num, term, df, *_ in counts if df < 0],
        )
        for num, (docs, length) in self._stats.items():
            if docs or length:
                conn.execute(
                    "UPDATE namespace_ids SET docs = docs + ?, doc_terms = doc_terms + ? "
                    "WHERE num = ?",
                    (docs, length, num),
                )
        self._pending, self._stats = {}, {}

    # --- search ---------------------------------------------------------------------------

    def top(
        self, conn: sqlite3.Connection, ns: str, terms: Sequence[str], k: int,
        columns: Sequence[str] = (), *, in_write: bool = False,
    ) -> list[tuple[Any, ...]]:
        """(memory id, BM25 score, *`columns` of its row) of the best `k` active texts for
        `terms`, best first; ties by record seq (insertion order), as every tier breaks
        them. The ids come from one read of the hits' rows, so other columns of them cost
        next to nothing more there (recall takes the kept embeddings). `in_write`: `conn`
        is the connection of the caller's own open write (another thread's search reads
        the committed postings through its own connection, and leaves the write's pending
        changes alone)."""
        if in_write and self._outer and (self._pending or self._stats):
            self.flush(conn)  # a search inside `together` sees the writes before it
        row = conn.execute(
            "SELECT num, docs, doc_terms FROM namespace_ids WHERE name = ?", (ns,)
        ).fetchone()
        if row is None or k <= 0:
            return []
        best = search(conn, int(row[0]), int(row[1]), float(row[2]), terms, k)
        if not best.seqs:
            return []
        extra = "".join(f", {c}" for c in columns)
        rows = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT seq, id{extra} FROM memories WHERE seq IN ({marks(len(best.seqs))})",
                tuple(best.seqs),
            )
        }
        return [
            (str(rows[s][0]), sc, *rows[s][1:])
            for s, sc in zip(best.seqs, best.scores, strict=True)
        ]


# --------------------------------------------------------------------------- blocks


def _blocks(rows: Iterable[tuple[bytes, bytes, bytes]]) -> tuple[np.ndarray, ...]:
    """(seqs, tfs, lengths) of the given block rows, concatenated, the seqs ascending and
    each once. Blocks are written in seq order and never overlap, so they already are; a
    file written otherwise is put in order here, once, so every reader after this may
    merge and bisect."""
    parts = list(rows)
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    seqs = np.concatenate([np.frombuffer(s, dtype=_SEQ) for s, _, _ in parts])
    tfs = np.concatenate([np.frombuffer(t, dtype=_INT) for _, t, _ in parts])
    lens = np.concatenate([np.frombuffer(n, dtype=_INT) for _, _, n in parts])
    if len(seqs) > 1 and not (seqs[1:] > seqs[:-1]).all():
        seqs, first = np.unique(seqs, return_index=True)
        tfs, lens = tfs[first], lens[first]
    return seqs, tfs, lens


def _term(conn: sqlite3.Connection, num: int, term: str) -> tuple[np.ndarray, ...]:
    """(seqs, tfs, lengths) of every posting of `term`, in one row: SQLite joins the
    blocks' arrays itself, where a row and three array views per block cost more than the
    scoring of a common term (its postings span dozens of blocks). The three joins step
    through the same rows in the same order, so the arrays stay aligned; the blocks come in
    seq order as the subquery lists them (`_blocks` still puts a file written otherwise in
    order)."""
    row = conn.execute(
        "SELECT CAST(group_concat(seqs, '') AS BLOB), CAST(group_concat(tfs, '') AS BLOB), "
        "CAST(group_concat(lens, '') AS BLOB) FROM (SELECT seqs, tfs, lens "
        "FROM lexical_postings WHERE num = ? AND term = ? ORDER BY first_seq)",
        (num, term),
    ).fetchone()
    return _blocks([] if row is None or row[0] is None else [row])


def _apply(
    conn: sqlite3.Connection, num: int, term: str, drops: set[int],
    adds: dict[int, tuple[int, int]],
) -> tuple[int, int]:
    """Apply one (num, term)'s changes: the documents newer than every posting are
    appended (the common write: a new memory), the rest rewrite only the blocks that hold
    them, found one index seek each. Dropping documents spread over a long postings list
    (a REM cycle retiring many members, the members' words shared by thousands of texts)
    thus costs the blocks they sit in, not the list between the first and the last.
    Returns how the term's document and block counts changed."""
    if not adds:  # documents leaving only (a REM cycle's members): no append to plan
        return _rewrite(conn, num, term, drops, {}) if drops else (0, 0)
    head = _last_block(conn, num, term)
    end = -1 if head is None else int(head[1])
    tail = sorted((seq, v) for seq, v in adds.items() if seq > end)
    inner = {seq: v for seq, v in adds.items() if seq <= end}
    docs = blocks = 0
    if drops or inner:
        docs, blocks = _rewrite(conn, num, term, drops, inner)
        if tail:
            head = _last_block(conn, num, term)  # the rewrite may have changed it
    if tail:
        more_docs, more_blocks = _append(conn, num, term, head, tail)
        docs, blocks = docs + more_docs, blocks + more_blocks
    return docs, blocks


def _last_block(conn: sqlite3.Connection, num: int, term: str) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = conn.execute(
        "SELECT first_seq, last_seq, n, id, seqs, tfs, lens FROM lexical_postings "
        "WHERE num = ? AND term = ? ORDER BY first_seq DESC LIMIT 1",
        (num, term),
    ).fetchone()
    return row


def _holding(
    conn: sqlite3.Connection, num: int, term: str, seqs: Iterable[int]
) -> dict[int, tuple[Any, ...]]:
    """first seq -> (row id, seqs, tfs, lens) of the blocks that hold, or would hold, the
    ascending `seqs`: for each, the block with the greatest first seq at or below it, one
    index seek per block (a seq below every block has none here)."""
    found: dict[int, tuple[Any, ...]] = {}
    covered = -1  # the last seq the blocks found so far may hold
    for seq in seqs:
        if seq <= covered:
            continue
        row = conn.execute(
            "SELECT first_seq, last_seq, id, seqs, tfs, lens FROM lexical_postings "
            "WHERE num = ? AND term = ? AND first_seq <= ? ORDER BY first_seq DESC LIMIT 1",
            (num, term, seq),
        ).fetchone()
        if row is None:
            continue
        found.setdefault(int(row[0]), row[2:])
        covered = max(covered, int(row[1]))
    return found


def _rewrite(
    conn: sqlite3.Connection, num: int, term: str, drops: set[int],
    adds: dict[int, tuple[int, int]],
) -> tuple[int, int]:
    """Rewrite the blocks that hold (or, for an add, would hold) a changed document: the
    block of a seq is the one with the greatest first seq at or below it (the first block
    for a seq below them all). A block left empty goes; one grown past `BLOCK` splits."""
    keys = sorted(drops | adds.keys())
    found = _holding(conn, num, term, keys)
    if not found or keys[0] < min(found):  # below every block: the first one takes it
        row = conn.execute(
            "SELECT first_seq, id, seqs, tfs, lens FROM lexical_postings "
            "WHERE num = ? AND term = ? ORDER BY first_seq LIMIT 1",
            (num, term),
        ).fetchone()
        if row is None:
            return 0, 0
        found[int(row[0])] = row[1:]
    firsts = sorted(found)
    mine: dict[int, list[int]] = {f: [] for f in firsts}
    for seq in keys:
        at = bisect.bisect_right(firsts, seq) - 1
        mine[firsts[max(at, 0)]].append(seq)
    docs = 0
    gone: list[tuple[int]] = []
    made: list[tuple[Any, ...]] = []
    for first in firsts:
        rid, s_raw, t_raw, n_raw = found[first]
        seqs, tfs, lens = _blocks([(s_raw, t_raw, n_raw)])
        changed = set(mine[first])
        keep = np.fromiter((q not in changed for q in seqs.tolist()), dtype=bool, count=len(seqs))
        new = [(seq, adds[seq]) for seq in mine[first] if seq in adds]
        seqs = np.concatenate([seqs[keep], np.asarray([q for q, _ in new], dtype=np.int64)])
        tfs = np.concatenate([tfs[keep], np.asarray([v[0] for _, v in new], dtype=np.int64)])
        lens = np.concatenate([lens[keep], np.asarray([v[1] for _, v in new], dtype=np.int64)])
        order = np.argsort(seqs, kind="stable")
        seqs, tfs, lens = seqs[order], tfs[order], lens[order]
        docs += len(seqs) - len(keep)
        gone.append((rid,))
        for i in range(0, len(seqs), BLOCK):
            j = min(i + BLOCK, len(seqs))
            made.append((
                num, term, int(seqs[i]), int(seqs[j - 1]), j - i,
                seqs[i:j].astype(_SEQ).tobytes(), tfs[i:j].astype(_INT).tobytes(),
                lens[i:j].astype(_INT).tobytes(),
            ))
    conn.executemany("DELETE FROM lexical_postings WHERE id = ?", gone)
    conn.executemany(
        "INSERT INTO lexical_postings (num, term, first_seq, last_seq, n, seqs, tfs, lens) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        made,
    )
    return docs, len(made) - len(gone)


def _append(
    conn: sqlite3.Connection, num: int, term: str, head: tuple[Any, ...] | None,
    new: list[tuple[int, tuple[int, int]]],
) -> tuple[int, int]:
    """The common write: documents newer than every posting of the term. The last block
    takes what fits (its arrays extended as bytes), new blocks take the rest."""
    at = 0
    if head is not None and head[2] < BLOCK:
        at = min(BLOCK - int(head[2]), len(new))
        part = new[:at]
        conn.execute(
            "UPDATE lexical_postings SET last_seq = ?, n = ?, seqs = ?, tfs = ?, lens = ? "
            "WHERE id = ?",
            (part[-1][0], int(head[2]) + at,
             head[4] + _pack("q", (s for s, _ in part)),
             head[5] + _pack("i", (v[0] for _, v in part)),
             head[6] + _pack("i", (v[1] for _, v in part)), head[3]),
        )
    rest = new[at:]
    blocks = [rest[i : i + BLOCK] for i in range(0, len(rest), BLOCK)]
    conn.executemany(
        "INSERT INTO lexical_postings (num, term, first_seq, last_seq, n, seqs, tfs, lens) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (num, term, b[0][0], b[-1][0], len(b), _pack("q", (s for s, _ in b)),
             _pack("i", (v[0] for _, v in b)), _pack("i", (v[1] for _, v in b)))
            for b in blocks
        ],
    )
    return len(new), len(blocks)


def _pack(code: str, values: Iterable[int]) -> bytes:
    """Little-endian int64 ("q") or int32 ("i") array bytes, as the blocks store them."""
    arr = array(code, values)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


# --------------------------------------------------------------------------- BM25


def _contrib(idf: float, tf: np.ndarray, length: np.ndarray, avg: float) -> np.ndarray:
    """One term's BM25 contribution, in the reference's operation order (bit-identical to
    `integrations/lexical/bm25.py` and the Redis tier)."""
    tf = tf.astype(np.float64)
    denom = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * length.astype(np.float64) / avg)
    out: np.ndarray = idf * (tf * (BM25_K1 + 1.0)) / denom
    return out


def _bound(idf: float, most: tuple[int, int] | None, avg: float) -> float:
    """The most one term can add to a document's score. A contribution grows with the
    term's frequency and shrinks with the document's length, so the term's largest
    frequency in its shortest document bounds every posting it has; without those, only
    idf * (k1 + 1) (tf -> inf, length -> 0) does. Pruning on the tighter bound skips
    frequent words that the loose one would read in full: at the scale benchmark's
    million memories, a search's p95 fell from 34.6 to 27.2 ms on this bound alone."""
    if most is None:
        return idf * (BM25_K1 + 1.0)
    top, least = most
    return float(_contrib(idf, np.asarray([top]), np.asarray([least]), avg)[0])


def _lookup(
    conn: sqlite3.Connection, num: int, term: str, want: np.ndarray, blocks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of `term` for the documents `want` (sorted seqs): the whole term when
    that reads fewer blocks, else the one block that may hold each document."""
    if len(want) >= blocks:
        seqs, tfs, lens = _term(conn, num, term)
    else:
        held = _holding(conn, num, term, want.tolist())
        seqs, tfs, lens = _blocks(row[1:] for row in held.values())
    # both ascend (`_blocks`, `want` sorted): each wanted document is looked up by
    # bisection, where a set test would hash every posting of the term
    if not len(seqs):
        return seqs, tfs, lens
    at = np.minimum(np.searchsorted(seqs, want), len(seqs) - 1)
    hit = at[seqs[at] == want]
    return seqs[hit], tfs[hit], lens[hit]


def _merge(
    seen: np.ndarray, partial: np.ndarray, seqs: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Add one term's contributions `c` (documents `seqs`) to the partial sums of the
    documents `seen` (ascending): the documents met before gain, the new ones are put in
    order. Both arrays ascend, so a stable sort of the two joined is one linear merge of
    two runs (numpy's stable sort of 64-bit ints is a timsort); bisecting each posting
    into `seen` cost twice as much: at the scale benchmark's million memories, a search's
    CPU p50 fell from 7.1 to 5.7 ms (p95 14.8 to 12.6 ms) on this and the bisection of the
    final scoring turned around (`search`). `seqs` ascends, each once, as `_blocks`
    gives every term's postings."""
    if not len(seen):
        return seqs, c
    joined = np.concatenate([seen, seqs])
    sums = np.concatenate([partial, c])
    order = np.argsort(joined, kind="stable")
    joined, sums = joined[order], sums[order]
    met = np.flatnonzero(joined[1:] == joined[:-1])  # a document seen before, then this term's
    if len(met):
        sums[met] += sums[met + 1]
        keep = np.ones(len(joined), dtype=bool)
        keep[met + 1] = False
        joined, sums = joined[keep], sums[keep]
    return joined, sums


def search(
    conn: sqlite3.Connection, num: int, docs: int, total: float, terms: Sequence[str], k: int
) -> LexicalTop:
    """Exact BM25 top-k over namespace `num` (see the module docstring) for the distinct
    `terms` (`core.text.query_terms`; a repeat counts once)."""
    if k <= 0 or docs <= 0 or not terms:
        return LexicalTop([], [])
    avg = total / docs if total > 0 else 1.0
    distinct = list(dict.fromkeys(terms))
    stats: dict[str, tuple[int, int]] = {}
    most: dict[str, tuple[int, int]] = {}  # term -> (largest tf, shortest document)
    for chunk in chunks(distinct):
        for term, df, blocks, top, least in conn.execute(
            f"SELECT term, df, blocks, max_tf, min_len FROM lexical_terms WHERE num = ? "
            f"AND term IN ({marks(len(chunk))})",
            (num, *chunk),
        ):
            stats[str(term)] = (int(df), int(blocks))
            if top is not None and least is not None:
                most[str(term)] = (int(top), int(least))
    idf: dict[str, float] = {}
    for term, (df, _) in stats.items():
        value = math.log((docs - df + 0.5) / (df + 0.5))
        idf[term] = IDF_FLOOR if value <= 0.0 else value
    if not idf:
        return LexicalTop([], [])
    if sum(stats[t][0] for t in idf) <= _READ_ALL:
        return _score_all(conn, num, [t for t in distinct if t in idf], idf, avg, k)
    bound = {t: _bound(idf[t], most.get(t), avg) for t in idf}
    order = sorted(idf, key=lambda t: (-bound[t], t))  # the strongest terms first
    left = sum(bound.values())
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (seqs, contributions)
    seen = np.zeros(0, dtype=np.int64)
    partial = np.zeros(0, dtype=np.float64)
    bar = 0.0
    rest: list[str] = []
    for i, term in enumerate(order):
        if len(partial) >= k and left < bar * (1.0 - _SLACK):
            rest = order[i:]  # no unseen document can reach the k-th score any more
            break
        seqs, tfs, lens = _term(conn, num, term)
        c = _contrib(idf[term], tfs, lens, avg)
        found[term] = (seqs, c)
        left -= bound[term]
        seen, partial = _merge(seen, partial, seqs, c)
        if len(partial) >= k:
            bar = _kth_best(partial, k)
    candidates = seen
    if rest:
        # only documents already seen can make the top k; keep those that still might,
        # and after each term looked up for them, those that still might with what is
        # left: the bar rises and what is left falls, so each term after the first is
        # looked up for fewer documents (block by block once they are few)
        keep = partial + left >= bar * (1.0 - _SLACK)
        candidates, sums = seen[keep], partial[keep]
        for term in rest:
            seqs, tfs, lens = _lookup(conn, num, term, candidates, stats[term][1])
            c = _contrib(idf[term], tfs, lens, avg)
            found[term] = (seqs, c)
            left -= bound[term]
            sums[np.searchsorted(candidates, seqs)] += c  # looked up among them only
            if len(sums) > k:
                bar = max(bar, _kth_best(sums, k))
                keep = sums + left >= bar * (1.0 - _SLACK)
                candidates, sums = candidates[keep], sums[keep]
    # the exact scores, summed term by term in query order as the reference does; each
    # candidate is found in a term's postings by bisection, not each posting among the
    # candidates: pruned, they are far fewer than a common word's postings (~100k at 1M)
    scores = np.zeros(len(candidates), dtype=np.float64)
    for term in distinct:
        if term not in found:
            continue
        seqs, c = found[term]
        if not len(seqs):
            continue
        at = np.minimum(np.searchsorted(seqs, candidates), len(seqs) - 1)
        hit = seqs[at] == candidates
        scores[hit] += c[at[hit]]
    return _best(candidates, scores, k)


def _score_all(
    conn: sqlite3.Connection, num: int, terms: Sequence[str], idf: dict[str, float],
    avg: float, k: int,
) -> LexicalTop:
    """Exact BM25 top-k by reading every posting of `terms` (in query order): where the
    postings are few, a handful of array operations cost less than pruning's steps per
    term. Each document's contributions are summed in query order (`bm25.summed`), so
    the scores are bit-identical to the reference's."""
    seqs: list[np.ndarray] = []
    contribs: list[np.ndarray] = []
    for term in terms:
        s, tfs, lens = _term(conn, num, term)
        seqs.append(s)
        contribs.append(_contrib(idf[term], tfs, lens, avg))
    docs, scores = summed(seqs, contribs)
    return _best(docs, scores, k)


def _kth_best(scores: np.ndarray, k: int) -> float:
    """The k-th highest of `scores` (at least k of them), in linear time."""
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def _best(candidates: np.ndarray, scores: np.ndarray, k: int) -> LexicalTop:
    """The `k` best of `candidates` (ascending seqs) by score, ties by seq."""
    hit = np.flatnonzero(scores)
    if hit.size == 0:
        return LexicalTop([], [])
    if hit.size > k:
        # only what can be in the top k is sorted: every score above the k-th best, and
        # every score equal to it (ties go by seq), found in linear time
        hit = hit[scores[hit] >= _kth_best(scores[hit], k)]
    best = hit[np.lexsort((candidates[hit], -scores[hit]))][:k]
    return LexicalTop([int(s) for s in candidates[best]], [float(x) for x in scores[best]])
