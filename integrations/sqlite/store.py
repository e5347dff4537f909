"""The embedded default store: memories, edges, a lexical index, locks and a journal in one
SQLite file.

Every public write is exactly one transaction (``sqlite.database``): a failure at any point
rolls back, so the file is either as it was or fully updated; that is what lets the engine
retry freely. The parts, each in its module:

- ``sqlite.schema``: the tables and their migrations;
- ``sqlite.database``: opening the file (a foreign file is refused, never modified), WAL,
  transactions on one shared connection;
- ``sqlite.records``: the rows of one memory (the JSON record and its lookup columns) and
  the rules a commit checks;
- ``sqlite.lexical``: the postings of the active texts and BM25 over them;
- ``sqlite.leases``: the maintenance lease, the consolidation journal, the user's meta.

This module is the `SQLiteStore` itself: the RecordStore and LexicalIndex ports over them.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from reverie.core.clock import utc
from reverie.core.codec import DECODED_RECORDS, DecodedRecords, memory_to_dict
from reverie.core.errors import InvalidInput
from reverie.core.models import Edge, EdgeType, Memory, Status, Tier, validate_namespace
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.ports import KeptSearch, LexicalHit, WriteBatch
from reverie.core.scoring import reinforce
from reverie.core.text import content_hash, query_terms
from reverie.integrations.id_batches import unique as _unique
from reverie.integrations.kept_vectors import from_bytes_many, to_bytes
from reverie.integrations.sqlite import leases, records
from reverie.integrations.sqlite.database import Database, chunks, fits_one_list, marks
from reverie.integrations.sqlite.lexical import FullText
from reverie.integrations.sqlite.schema import SCHEMA_VERSION
from reverie.integrations.store_values import check_ttl, check_window, dumps, from_micros, micros

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]


class SQLiteStore:
    """RecordStore and LexicalIndex over one SQLite file (see the module docstring).

    Thread-safe and process-safe as `sqlite.database.Database` is: one connection under a
    re-entrant lock, WAL plus ``BEGIN IMMEDIATE`` with a busy timeout.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        decoded_records: int = DECODED_RECORDS,
        synchronous: str = "NORMAL",
        busy_seconds: float = DEFAULT_POLICY.deadlines.store_call_seconds,
    ) -> None:
        """`decoded_records`: how many decoded records to keep for re-reads (about 2 KB
        each; 0 turns it off), see core.codec.DecodedRecords. `synchronous`: "NORMAL", or
        "FULL" for commits that survive a power loss (`sqlite.database.Database`).
        `busy_seconds`: the longest wait for another process's lock
        (`Policy.deadlines.store_call_seconds`)."""
        self._db = Database(path, synchronous=synchronous, busy_seconds=busy_seconds)
        self._text = FullText(self._db.path)
        self._decoded = DecodedRecords(decoded_records)  # recall re-reads the same records

    @property
    def path(self) -> Path:
        return self._db.path

    # --- transactions ---------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction; its lexical changes are applied just before the
        commit, each touched block of postings rewritten once."""
        with self._db.write() as conn:
            self._text.begin()
            try:
                yield conn
            except BaseException:
                self._text.abort()
                raise
            self._text.end(conn)

    def together(self) -> AbstractContextManager[None]:
        """Every write of the body in one transaction, each write still all-or-nothing on
        its own (a savepoint); reads in the body see the writes before them. The engine's
        bulk ingest writes a chunk this way: one commit, and each block of postings
        rewritten once, instead of per memory (`BatchesWrites`). When the body raises, the
        writes that completed before it are committed (as they would have been one by
        one) and the error is raised. Other writers wait for the whole body."""
        return self._together()

    @contextmanager
    def _together(self) -> Iterator[None]:
        failed: BaseException | None = None
        with self._db.together(), self._write():
            try:
                yield
            except BaseException as e:  # the completed writes still commit
                failed = e
        if failed is not None:
            raise failed

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.read()

    def _reading(self, ids: int) -> AbstractContextManager[sqlite3.Connection]:
        """A read of `ids` ids by `IN` lists: one statement needs no transaction around
        it (`Database.single`), several share one snapshot."""
        return self._db.single() if fits_one_list(ids) else self._db.read()

    def _load(self, record: str) -> Memory:
        try:
            return self._decoded.decode(record)
        except (ValueError, InvalidInput) as e:
            raise self._db.corrupt(f"holds an unreadable memory record ({e})") from None

    # --- RecordStore: writes --------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        """Apply a batch as one transaction; any conflict rolls back all of it.

        The duplicate-text rule is checked on the batch's final state, not row by row, so
        the order of puts inside a batch does not matter (a batch may activate a memory
        before it retires another with the same text).
        """
        ns, removals = batch.checked()
        encoded = [(m, dumps(memory_to_dict(m), f"memory {m.id!r}")) for m in batch.puts]

        free_text = {content_hash(m.text) for m in batch.puts if m.is_active and m.key is None}
        fact_keys = {m.key for m in batch.puts if m.is_active and m.key is not None}
        with self._write() as conn:
            moved: Counter[tuple[str, str]] = Counter()
            for m, record in encoded:
                records.put(conn, m, record, restore=batch.restore,
                            fulltext=self._text, path=self._db.path, counts=moved)
            records.recount(conn, ns, ((s, t, n) for (s, t), n in moved.items()))
            for digest in free_text:
                records.check_unique_text(conn, ns, digest)
            for key in fact_keys:
                records.check_unique_key(conn, ns, key)
            if batch.puts:
                conn.execute(
                    "UPDATE namespace_ids SET last_write = max(coalesce(last_write, 0), ?) "
                    "WHERE name = ?",
                    (max(micros(m.updated_at or m.created_at) for m in batch.puts), ns),
                )
            # Removals first, so a batch that removes and re-adds one edge ends with it added.
            gone = conn.executemany(
                "DELETE FROM edges WHERE namespace = ? AND src = ? AND dst = ? AND type = ?",
                [(ns, *r) for r in removals],
            ).rowcount if removals else 0
            added = 0
            if batch.edges:
                rows = [(ns, e.src, e.dst, e.type.value, float(e.weight)) for e in batch.edges]
                # new edges, counted; an edge already there keeps the higher weight
                added = conn.executemany(
                    "INSERT INTO edges (namespace, src, dst, type, weight) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, src, dst, type) DO NOTHING",
                    rows,
                ).rowcount
                if added < len(rows):
                    conn.executemany(
                        "UPDATE edges SET weight = max(weight, ?5) WHERE namespace = ?1 "
                        "AND src = ?2 AND dst = ?3 AND type = ?4",
                        rows,
                    )
            records.recount_edges(conn, ns, added - gone)
        for m, record in encoded:  # committed: recall will read the active ones back
            if m.is_active:  # (a REM cycle's retired members would only push them out)
                self._decoded.remember(record, m)

    def touch_many(
        self,
        namespace: str,
        events: Sequence[tuple[Sequence[str], datetime]],
        window: int,
    ) -> None:
        """`touch` of each (ids, at) in order, in one transaction: each record is read and
        written once however many of the events reinforce it. Not part of the RecordStore
        port: the background reinforcement writes a burst of recalls' touches with it."""
        ns = validate_namespace(namespace)
        check_window(window)
        steps = [(_unique(ids), utc(at)) for ids, at in events]
        wanted = _unique(i for ids, _ in steps for i in ids)
        if not wanted:
            return
        with self._write() as conn:
            current: dict[str, tuple[int, Memory]] = {}
            for chunk in chunks(wanted):
                for seq, record in conn.execute(
                    f"SELECT seq, record FROM memories WHERE namespace = ? "
                    f"AND id IN ({marks(len(chunk))})",
                    (ns, *chunk),
                ):
                    m = self._load(record)
                    current[m.id] = (seq, m)
            changed: dict[str, tuple[int, Memory]] = {}
            for ids, when in steps:
                for i in ids:
                    if i in current:
                        seq, m = current[i]
                        current[i] = changed[i] = (seq, reinforce(m, when, window))
            written = [
                (m, dumps(memory_to_dict(m), f"memory {m.id!r}"), seq)
                for seq, m in changed.values()
            ]
            conn.executemany(
                "UPDATE memories SET version = ?, updated_at = ?, record = ? WHERE seq = ?",
                [(m.version, micros(m.updated_at or m.created_at), rec, seq)
                 for m, rec, seq in written],
            )
        for m, rec, _ in written:  # committed: the next recall reads these back
            self._decoded.remember(rec, m)

    def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        """Read-reinforce-write under the write lock, so concurrent touches all count.

        Only the record changes: status and text do not, so the lexical index is untouched.
        An id listed twice is reinforced once (one retrieval is one access).
        """
        self.touch_many(namespace, [(ids, at)], window)

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        """Real deletion for privacy: no row anywhere keeps the text or the links."""
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        deleted = 0
        if not wanted:
            return 0
        with self._write() as conn:
            num = self._text.ns_num(conn, ns)
            for chunk in chunks(wanted):
                if num is not None:
                    seqs = [seq for (seq,) in conn.execute(
                        f"SELECT seq FROM memories WHERE namespace = ? "
                        f"AND id IN ({marks(len(chunk))})",
                        (ns, *chunk),
                    )]
                    self._text.remove(conn, num, seqs)
                deleted += records.delete(conn, ns, chunk)
        self._decoded.forget(ns, wanted)  # no deleted text stays decoded in this process
        return deleted

    def delete_namespace(self, namespace: str) -> int:
        """Everything of a tenant, journal included; locks are left to expire or be released."""
        ns = validate_namespace(namespace)
        with self._write() as conn:
            self._text.drop_namespace(conn, ns)
            deleted = conn.execute("DELETE FROM memories WHERE namespace = ?", (ns,)).rowcount
            for table in ("memory_entities", "edges", "journal", "memory_counts",
                          "edge_counts"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = ?", (ns,))
        self._decoded.forget(ns)
        return int(deleted)

    # --- RecordStore: reads ---------------------------------------------------------------

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        ns = validate_namespace(namespace)
        with self._read() as conn:
            row = conn.execute(
                "SELECT record FROM memories WHERE namespace = ? AND id = ?", (ns, memory_id)
            ).fetchone()
        return None if row is None else self._load(row[0])

    def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        records: list[str] = []
        with self._reading(len(wanted)) as conn:
            for chunk in chunks(wanted):
                records.extend(
                    r[0]
                    for r in conn.execute(
                        f"SELECT record FROM memories WHERE namespace = ? "
                        f"AND id IN ({marks(len(chunk))})",
                        (ns, *chunk),
                    )
                )
        found = {m.id: m for m in map(self._load, records)}
        return {i: found[i] for i in wanted if i in found}  # in the caller's order

    def put_embeddings(self, namespace: str, items: Mapping[str, Any]) -> int:
        """Keep each memory's embedding beside its record (one transaction); ids with no
        record are ignored, so a memory deleted meanwhile leaves nothing behind. Returns how
        many rows took a vector. Not part of the RecordStore port: an optional capability
        the engine uses where a store has it (see `embeddings`)."""
        ns = validate_namespace(namespace)
        rows = [(to_bytes(i, v), ns, i) for i, v in items.items()]  # all checked first
        if not rows:
            return 0
        with self._write() as conn:
            return sum(
                conn.execute(
                    "UPDATE memories SET embedding = ? WHERE namespace = ? AND id = ?", row
                ).rowcount
                for row in rows
            )

    def embeddings(self, namespace: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The embeddings kept beside the records (ids without one are absent)."""
        rows = self._column_of(namespace, ids, "embedding", "AND embedding IS NOT NULL")
        return dict(zip((i for i, _ in rows), from_bytes_many([b for _, b in rows]), strict=True))

    def created_times(self, namespace: str, ids: Iterable[str]) -> dict[str, datetime]:
        """When each memory was created, from the indexed column (no record decoded). Not
        part of the RecordStore port: recall uses it, where a store has it, to place
        candidates in time for conversation context."""
        rows = self._column_of(namespace, ids, "created_at")
        return {memory_id: from_micros(n) for memory_id, n in rows}

    def _column_of(
        self, namespace: str, ids: Iterable[str], column: str, extra: str = ""
    ) -> list[tuple[str, Any]]:
        """(id, `column`) of the stored ids among `ids`, in one read snapshot."""
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        out: list[tuple[str, Any]] = []
        with self._reading(len(wanted)) as conn:
            for chunk in chunks(wanted):
                out.extend(conn.execute(
                    f"SELECT id, {column} FROM memories WHERE namespace = ? "
                    f"AND id IN ({marks(len(chunk))}) {extra}",
                    (ns, *chunk),
                ))
        return out

    def last_write(self, namespace: str) -> datetime | None:
        """When a record of the namespace was last written (its newest `updated_at`),
        from one stored value, no record decoded (`KnowsRecentWrites`)."""
        ns = validate_namespace(namespace)
        with self._read() as conn:
            row = conn.execute(
                "SELECT last_write FROM namespace_ids WHERE name = ?", (ns,)
            ).fetchone()
        return None if row is None or row[0] is None else from_micros(int(row[0]))

    def written_around(self, namespace: str, memory_id: str, n: int) -> list[str]:
        """The ids of up to `n` memories written before `memory_id` in its namespace and
        `n` after it, any status, nearest first each way (`KnowsWriteOrder`): records keep
        their first write's seq. None for an unknown id."""
        ns = validate_namespace(namespace)
        if n <= 0:
            return []
        with self._read() as conn:
            row = conn.execute(
                "SELECT seq FROM memories WHERE namespace = ? AND id = ?", (ns, memory_id)
            ).fetchone()
            if row is None:
                return []
            before = conn.execute(
                "SELECT id FROM memories WHERE namespace = ? AND seq < ? "
                "ORDER BY seq DESC LIMIT ?", (ns, row[0], int(n)),
            ).fetchall()
            after = conn.execute(
                "SELECT id FROM memories WHERE namespace = ? AND seq > ? "
                "ORDER BY seq LIMIT ?", (ns, row[0], int(n)),
            ).fetchall()
        return [str(r[0]) for r in (*before, *after)]

    def newest_active(self, namespace: str, limit: int) -> list[Memory]:
        """The `limit` most recently inserted active memories, oldest first, read from
        the end of the namespace (`KnowsRecentWrites`)."""
        ns = validate_namespace(namespace)
        if limit <= 0:
            return []
        with self._read() as conn:
            rows = conn.execute(
                "SELECT record FROM memories INDEXED BY memories_by_seq WHERE namespace = ? "
                "AND status = 'active' ORDER BY seq DESC LIMIT ?",
                (ns, int(limit)),
            ).fetchall()
        return [self._load(r[0]) for r in reversed(rows)]

    def find_by_hash(self, namespace: str, content_hash: str) -> Memory | None:
        ns = validate_namespace(namespace)
        with self._read() as conn:
            row = conn.execute(
                "SELECT record FROM memories WHERE namespace = ? AND content_hash = ? "
                "AND status = 'active' AND key IS NULL ORDER BY seq LIMIT 1",
                (ns, content_hash),
            ).fetchone()
        return None if row is None else self._load(row[0])

    def stored_hashes(self, namespace: str, digests: Iterable[str]) -> set[str]:
        """The digests among `digests` that an active free-text memory holds (what
        `find_by_hash` finds), in one read snapshot and without decoding a record. Not
        part of the RecordStore port: bulk ingest asks it once per chunk (`KnowsHashes`)."""
        ns = validate_namespace(namespace)
        wanted = _unique(digests)
        found: set[str] = set()
        with self._reading(len(wanted)) as conn:
            for chunk in chunks(wanted):
                found.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT content_hash FROM memories WHERE namespace = ? "
                        f"AND content_hash IN ({marks(len(chunk))}) AND status = 'active' "
                        "AND key IS NULL",
                        (ns, *chunk),
                    )
                )
        return found

    def find_by_key(self, namespace: str, key: str) -> list[Memory]:
        ns = validate_namespace(namespace)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT record FROM memories WHERE namespace = ? AND key = ? "
                "ORDER BY valid_from, seq",
                (ns, key),
            ).fetchall()
        return [self._load(r[0]) for r in rows]

    def find_by_entity(self, namespace: str, entity: str, limit: int) -> list[Memory]:
        ns = validate_namespace(namespace)
        if limit <= 0:
            return []
        with self._read() as conn:
            rows = conn.execute(
                """
                SELECT m.record FROM memory_entities e
                JOIN memories m ON m.namespace = e.namespace AND m.id = e.memory_id
                WHERE e.namespace = ? AND e.entity = ? AND m.status = 'active'
                ORDER BY e.created_at DESC, e.seq DESC
                LIMIT ?
                """,
                (ns, entity, int(limit)),
            ).fetchall()
        return [self._load(r[0]) for r in rows]

    def scan(
        self,
        namespace: str,
        *,
        statuses: Iterable[Status] | None = None,
        tiers: Iterable[Tier] | None = None,
        batch_size: int = 500,
    ) -> Iterator[Memory]:
        """Keyset pagination by `seq` (insertion order, unchanged by updates).

        The store lock is held per page, never across a `yield`: a caller that stops
        iterating half-way, or works slowly, must not block other threads.
        """
        ns = validate_namespace(namespace)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive int, got {batch_size!r}")
        where = ["namespace = ?", "seq > ?"]
        filters: list[str] = []
        if statuses is not None:
            values = sorted({Status(s).value for s in statuses})
            if not values:
                return
            where.append(f"status IN ({marks(len(values))})")
            filters.extend(values)
        if tiers is not None:
            values = sorted({Tier(t).value for t in tiers})
            if not values:
                return
            where.append(f"tier IN ({marks(len(values))})")
            filters.extend(values)
        # INDEXED BY: with an IN filter the planner may prefer memories_by_status and sort
        # the whole namespace for every page; walking seq order costs about batch_size /
        # selectivity rows per page, so a full scan stays linear.
        sql = (
            f"SELECT seq, record FROM memories INDEXED BY memories_by_seq "
            f"WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?"
        )
        after = 0
        while True:
            with self._read() as conn:
                rows = conn.execute(sql, (ns, after, *filters, batch_size)).fetchall()
            if not rows:
                return
            for _, record in rows:
                yield self._load(record)
            if len(rows) < batch_size:
                return
            after = rows[-1][0]

    def count(self, namespace: str) -> dict[str, int]:
        ns = validate_namespace(namespace)
        counts = {f"status:{s.value}": 0 for s in Status}
        counts.update({f"tier:{t.value}": 0 for t in Tier})
        with self._read() as conn:
            # kept by every write (`memory_counts`): a read of a few rows, whatever the
            # size of the namespace
            for status, tier, n in conn.execute(
                "SELECT status, tier, n FROM memory_counts WHERE namespace = ?", (ns,)
            ):
                counts[f"status:{status}"] += n
                if status == Status.ACTIVE.value:
                    counts[f"tier:{tier}"] += n
            row = conn.execute(
                "SELECT n FROM edge_counts WHERE namespace = ?", (ns,)
            ).fetchone()
            counts["edges"] = 0 if row is None else int(row[0])
        counts["total"] = sum(counts[f"status:{s.value}"] for s in Status)
        return counts

    def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        seen: dict[tuple[str, str, str], float] = {}
        with self._reading(len(wanted)) as conn:
            for chunk in chunks(wanted):
                in_list = marks(len(chunk))
                # Without the hint SQLite answers `dst IN` from the primary key's
                # `namespace` prefix, a scan of every edge of the namespace per call: the
                # REM commit then slowed down as the store grew (weight is not in the
                # index, so the planner undervalues it). Both ends in one statement.
                for src, dst, type_, weight in conn.execute(
                    f"SELECT src, dst, type, weight FROM edges "
                    f"WHERE namespace = ? AND src IN ({in_list}) UNION ALL "
                    f"SELECT src, dst, type, weight FROM edges INDEXED BY edges_by_dst "
                    f"WHERE namespace = ? AND dst IN ({in_list})",
                    (ns, *chunk, ns, *chunk),
                ):
                    seen[(src, dst, type_)] = weight
        return [Edge(src, dst, EdgeType(t), w) for (src, dst, t), w in seen.items()]

    def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]:
        """Edges in plus out, for every requested id (0 when it has none)."""
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        result = dict.fromkeys(wanted, 0)
        with self._read() as conn:
            for chunk in chunks(wanted):
                in_list = marks(len(chunk))
                for column in ("src", "dst"):
                    for memory_id, n in conn.execute(
                        f"SELECT {column}, count(*) FROM edges "
                        f"WHERE namespace = ? AND {column} IN ({in_list}) GROUP BY {column}",
                        (ns, *chunk),
                    ):
                        result[memory_id] += n
        return result

    def namespaces(self) -> list[str]:
        """The namespaces that hold a memory, from the kept counts (a count that reaches
        0 is removed): a few rows per namespace, where a distinct scan of the records
        read an index as large as the store (60 ms at a million memories, on every
        engine open)."""
        with self._read() as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT namespace FROM memory_counts WHERE n > 0 ORDER BY namespace"
                )
            ]

    # --- LexicalIndex ---------------------------------------------------------------------

    def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]:
        """BM25 over the namespace's active texts, with the namespace's own statistics,
        exact top-k from the postings of the query's terms alone, in one read snapshot
        (`sqlite.lexical`): nothing is held in this process between searches, so another
        process's writes are seen at once."""
        ns = validate_namespace(namespace)
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        with self._read() as conn:
            top = self._text.top(conn, ns, terms, int(k), in_write=self._db.writing_here())
        return [LexicalHit(memory_id, score) for memory_id, score in top]

    def search_kept(self, namespace: str, query: str, k: int) -> KeptSearch:
        """`search`, with the hits' kept embeddings read from the rows the hits' ids come
        from (`SearchesWithKept`): recall needs them for every lexical hit, and a second
        read of the same rows costs more than the search."""
        ns = validate_namespace(namespace)
        terms = query_terms(query)
        if not terms or k <= 0:
            return KeptSearch([], {})
        with self._read() as conn:
            top = self._text.top(
                conn, ns, terms, int(k), ("embedding",), in_write=self._db.writing_here())
        kept = [(memory_id, blob) for memory_id, _, blob in top if blob is not None]
        return KeptSearch(
            [LexicalHit(memory_id, score) for memory_id, score, _ in top],
            dict(zip((i for i, _ in kept), from_bytes_many([b for _, b in kept]), strict=True)),
        )

    # --- meta, journal, lock (sqlite.leases) ----------------------------------------------

    def get_meta(self, name: str) -> str | None:
        return leases.get_meta(self._db, name)

    def set_meta(self, name: str, value: str) -> None:
        leases.set_meta(self._db, name, value)

    def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None:
        return leases.journal_get(self._db, validate_namespace(namespace), fingerprint)

    def journal_put(self, namespace: str, fingerprint: str, entry: Mapping[str, Any]) -> None:
        leases.journal_put(self._db, validate_namespace(namespace), fingerprint, entry)

    def journal_delete(self, namespace: str, fingerprints: Iterable[str]) -> None:
        keys = sorted(set(fingerprints))
        if keys:
            leases.journal_delete(self._db, validate_namespace(namespace), keys)

    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> AbstractContextManager[str]:
        """A lease, not a mutex: it expires, so a crashed holder cannot wedge maintenance."""
        ns = validate_namespace(namespace)
        return leases.lease(self._db, ns, check_ttl(ttl_seconds))

    # --- erasure --------------------------------------------------------------------------

    def erase_residue(self, *, compact: bool = False) -> dict[str, Any]:
        """After a deletion: the freed pages go back to the file system, and the WAL is
        checkpointed and truncated, so no copy of a deleted row's page stays in
        `<file>-wal`; `secure_delete` already zeroed the freed bytes of the main file.
        `compact` also runs VACUUM (a defragmented file; a file made before pages were
        freed this way takes the mode then)."""
        freed = self._db.free_pages()
        done: dict[str, Any] = {"store": "sqlite", "pages_freed": freed, **self._db.checkpoint()}
        if compact:
            self._db.vacuum()
            done.update({"vacuumed": True, **self._db.checkpoint()})
        return done

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        with self._db.lock:
            self._db.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({os.fspath(self._db.path)!r})"
