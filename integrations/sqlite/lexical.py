"""The SQLite store's lexical index: FTS5 rows of the active texts, the change log that
keeps other processes' BM25 mirrors exact, and BM25 search through this process's mirrors.

- The FTS5 table holds a row only while a memory is active, maintained in the same
  transaction as the record. Searching therefore never sees superseded, consolidated or
  archived text, and never needs a join back to the records.
- Each namespace has a small number (`namespace_ids`), the high bits of its full-text
  rowids (`schema.fts_rowid`): one contiguous rowid range per tenant, which FTS5 seeks to
  directly, so a search costs what its own namespace matches, not what every tenant
  matches.
- Scoring is BM25 in this process, by a `Bm25Mirror` per namespace (integrations/lexical/),
  the same ranking the Redis tier gives. A mirror is kept exact across processes by the
  change log (the migration to schema 4 says how): every write transaction that changes a
  namespace's full-text rows takes a store-wide generation and logs the seqs it changed; a
  mirror behind replays them, or is rebuilt from the FTS5 rows when it cannot.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

from reverie.core.errors import BackendUnavailable
from reverie.integrations.lexical.mirror import Bm25Mirror
from reverie.integrations.sqlite.database import chunks, marks
from reverie.integrations.sqlite.schema import (
    GENERATION_KEY,
    MAX_NS_NUM,
    SEQ_MASK,
    TRIMMED_KEY,
    fts_document,
    fts_range,
    fts_rowid,
)

__all__ = ["FullText"]

# Generations of the change log kept, and how often (in generations) it is trimmed.
LOG_KEEP = 50_000
LOG_TRIM_EVERY = 1_000
# How many namespaces' BM25 mirrors one store keeps in memory (least recently used go).
MIRRORS_KEPT = 64


class FullText:
    """The full-text rows, change log and BM25 mirrors of one store.

    Its methods that take a connection run inside the store's transaction; `begin` must be
    called at the start of every write transaction (the generation is taken per
    transaction, on first use)."""

    def __init__(self, path: Path, lock: threading.RLock) -> None:
        self._path = path
        self._lock = lock  # the store's: mirrors are read and changed under it
        self.mirrors: OrderedDict[str, Bm25Mirror] = OrderedDict()
        self._tx_gen: int | None = None  # the lexical generation of the open write, if any

    def begin(self) -> None:
        """A write transaction starts: it takes a new generation when it changes a row."""
        self._tx_gen = None

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
        gen = self._generation(conn)  # this incarnation of the namespace
        conn.execute(
            "INSERT INTO namespace_ids (name, num, lexical_gen, created_gen) VALUES (?, ?, ?, ?)",
            (ns, num, gen, gen),
        )
        return num

    # --- the change log -------------------------------------------------------------------

    def _generation(self, conn: sqlite3.Connection) -> int:
        """The open write transaction's lexical generation (taken on first use)."""
        if self._tx_gen is None:
            gen = int(
                conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = ? "
                    "RETURNING value",
                    (GENERATION_KEY,),
                ).fetchone()[0]
            )
            if gen % LOG_TRIM_EVERY == 0 and gen > LOG_KEEP:
                conn.execute("DELETE FROM lexical_changes WHERE gen < ?", (gen - LOG_KEEP,))
                conn.execute(
                    "UPDATE meta SET value = ? WHERE name = ?", (str(gen - LOG_KEEP), TRIMMED_KEY)
                )
            self._tx_gen = gen
        return self._tx_gen

    def _changed(self, conn: sqlite3.Connection, num: int, seq: int) -> None:
        gen = self._generation(conn)
        conn.execute("UPDATE namespace_ids SET lexical_gen = ? WHERE num = ?", (gen, num))
        conn.execute(
            "INSERT OR IGNORE INTO lexical_changes (gen, num, seq) VALUES (?, ?, ?)",
            (gen, num, seq),
        )

    # --- writes: the rows follow the active set -------------------------------------------

    def follow(
        self, conn: sqlite3.Connection, ns: str, seq: int, *, was_indexed: bool,
        same_text: bool, active: bool, text: str,
    ) -> None:
        """Record `seq` was written: index its text while it is active, and only then."""
        num = self.ensure_ns_num(conn, ns)
        rowid = fts_rowid(num, seq)
        if was_indexed and not (active and same_text):
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
            self._changed(conn, num, seq)
        if active and not (was_indexed and same_text):
            conn.execute(
                "INSERT INTO memory_fts (rowid, text) VALUES (?, ?)", (rowid, fts_document(text))
            )
            self._changed(conn, num, seq)

    def remove(self, conn: sqlite3.Connection, num: int, seqs: Sequence[int]) -> None:
        """Records `seqs` of namespace number `num` are being deleted."""
        conn.executemany(
            "DELETE FROM memory_fts WHERE rowid = ?", [(fts_rowid(num, seq),) for seq in seqs]
        )
        for seq in seqs:
            self._changed(conn, num, seq)

    def drop_namespace(self, conn: sqlite3.Connection, ns: str) -> None:
        """The namespace is being deleted: its rows and its number go."""
        num = self.ns_num(conn, ns)
        if num is not None:
            conn.execute("DELETE FROM memory_fts WHERE rowid BETWEEN ? AND ?", fts_range(num))
            conn.execute("DELETE FROM namespace_ids WHERE name = ?", (ns,))

    @staticmethod
    def optimize(conn: sqlite3.Connection) -> None:
        """FTS5 only marks deletions; merging the segments drops the deleted terms."""
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")

    def forget(self, ns: str, seqs: Sequence[int] | None) -> None:
        """Deleted text leaves this process's memory at once, not at the next search (after
        the commit: a rolled-back delete must not drop a document the log will not bring
        back). `None` drops the namespace's whole mirror."""
        with self._lock:
            mirror = self.mirrors.get(ns)
            if mirror is None:
                return
            if seqs is None:
                del self.mirrors[ns]
                return
            for seq in seqs:
                mirror.remove(seq)

    def clear(self) -> None:
        with self._lock:
            self.mirrors.clear()

    # --- search ---------------------------------------------------------------------------

    def top(
        self, conn: sqlite3.Connection, ns: str, terms: Sequence[str], k: int
    ) -> list[tuple[str, float]]:
        """(memory id, BM25 score) of the best `k` active texts for `terms`, best first,
        from the namespace's mirror brought up to date inside the caller's read snapshot."""
        row = conn.execute(
            "SELECT num, lexical_gen, created_gen FROM namespace_ids WHERE name = ?", (ns,)
        ).fetchone()
        if row is None:  # never written, or deleted (by any process): drop any copy
            self.mirrors.pop(ns, None)
            return []
        mirror = self._current_mirror(conn, ns, int(row[0]), int(row[1]), int(row[2]))
        return mirror.top(terms, k)

    def _current_mirror(
        self, conn: sqlite3.Connection, ns: str, num: int, gen: int, created: int
    ) -> Bm25Mirror:
        mirror = self.mirrors.get(ns)
        if mirror is not None and mirror.identity == (num, created):
            self.mirrors.move_to_end(ns)
            if mirror.generation == gen:
                return mirror
            trimmed = int(
                conn.execute("SELECT value FROM meta WHERE name = ?", (TRIMMED_KEY,)).fetchone()[0]
            )
            if mirror.generation >= trimmed and mirror.dead_fraction <= 0.5:
                changed = [
                    seq for (seq,) in conn.execute(
                        "SELECT DISTINCT seq FROM lexical_changes WHERE gen > ? AND num = ?",
                        (mirror.generation, num),
                    )
                ]
                for seq in changed:
                    mirror.remove(seq)
                for chunk in chunks(changed):
                    mirror.add_many(self._documents(
                        conn,
                        f"f.rowid IN ({marks(len(chunk))})",
                        [fts_rowid(num, seq) for seq in chunk],
                    ))
                mirror.generation = gen
                return mirror
        mirror = Bm25Mirror((num, created), gen)
        mirror.add_many(self._documents(conn, "f.rowid BETWEEN ? AND ?", fts_range(num)))
        self.mirrors[ns] = mirror
        self.mirrors.move_to_end(ns)
        while len(self.mirrors) > MIRRORS_KEPT:
            self.mirrors.popitem(last=False)
        return mirror

    @staticmethod
    def _documents(
        conn: sqlite3.Connection, where: str, params: Sequence[int]
    ) -> Iterator[tuple[int, str, str]]:
        """(seq, memory id, stored FTS text) of the full-text rows selected by `where`."""
        for rowid, memory_id, text in conn.execute(
            f"SELECT f.rowid, m.id, f.text FROM memory_fts f "
            f"JOIN memories m ON m.seq = (f.rowid & {SEQ_MASK}) WHERE {where}",
            tuple(params),
        ):
            yield int(rowid) & SEQ_MASK, str(memory_id), str(text)
