"""The embedded default store: memories, edges, a lexical index, locks and a journal in one
SQLite file.

Why it looks the way it does:

- One file, WAL, ``BEGIN IMMEDIATE`` for every write. WAL lets readers run while a writer
  commits; taking the write lock at ``BEGIN`` (not at the first write) means a
  read-modify-write such as a compare-and-set or an access count cannot interleave with
  another process's, so no update is lost and no deadlock-by-upgrade happens.
- Every public write is exactly one transaction. A failure at any point rolls back, so the
  file is either as it was or fully updated; that is what lets the engine retry freely.
- The full record is stored as JSON (the one encoding in ``core.codec``); the few fields that
  lookups need are copied into indexed columns. Adding a field to ``Memory`` then needs no
  migration, only a new lookup does.
- The FTS5 index holds a row only while a memory is active, maintained in the same
  transaction as the record. Searching therefore never sees superseded, consolidated or
  archived text, and never needs a join back to the records.
- Opening never modifies a file that is not already a reverie store (or empty): a user who
  points reverie at the wrong path keeps their data.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from reverie.core.clock import utc
from reverie.core.codec import DECODED_RECORDS, DecodedRecords, memory_to_dict
from reverie.core.errors import (
    BackendUnavailable,
    ConflictError,
    InvalidInput,
    LockBusy,
    SchemaTooNew,
    StoreCorrupt,
)
from reverie.core.models import Edge, EdgeType, Memory, Status, Tier, validate_namespace
from reverie.core.ports import LexicalHit, WriteBatch
from reverie.core.scoring import reinforce
from reverie.core.text import content_hash, lexical_terms, query_terms
from reverie.integrations.id_batches import chunks
from reverie.integrations.id_batches import unique as _unique
from reverie.integrations.kept_vectors import from_bytes, to_bytes
from reverie.integrations.lexical.mirror import Bm25Mirror

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_MARKER_NAME = "reverie.format"
_MARKER_VALUE = "reverie-sqlite-store"
_USER_META_PREFIX = "user."  # user meta keys cannot collide with the store's own rows
_BUSY_TIMEOUT_MS = 10_000
# Well under SQLite's bound-parameter limit (999 on old builds), so IN (...) lists are safe.
_CHUNK = 400
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Full-text rowids are 63-bit: 36 bits of record seq (6.9e10 rows), 26 of namespace number.
_SEQ_BITS = 36
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_MAX_NS_NUM = (1 << (63 - _SEQ_BITS)) - 1
_MICROSECOND = timedelta(microseconds=1)
# Lexical change log (see _lexical_change_log): generations kept, how often to trim, and
# how many namespaces' BM25 mirrors one store keeps in memory (least recently used go).
_LEX_GEN = "lexical.gen"
_LEX_TRIMMED = "lexical.trimmed"
_LEX_KEEP = 50_000
_LEX_TRIM_EVERY = 1_000
_LEX_MIRRORS = 64


# --- schema and migrations ----------------------------------------------------------------
#
# Migration n brings a file from user_version n - 1 to n, inside one transaction together
# with the user_version bump, so a crash mid-migration leaves the older, consistent schema.
# Append new migrations; never edit a released one.

_SCHEMA_V1: tuple[str, ...] = (
    """
    CREATE TABLE meta (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID
    """,
    # `seq` is an explicit INTEGER PRIMARY KEY (not the implicit rowid) because VACUUM may
    # renumber implicit rowids, and the FTS index and scan pagination rely on it being stable.
    # UNIQUE (namespace, id) is the logical primary key.
    """
    CREATE TABLE memories (
        seq          INTEGER PRIMARY KEY,
        namespace    TEXT NOT NULL,
        id           TEXT NOT NULL,
        version      INTEGER NOT NULL,
        status       TEXT NOT NULL,
        tier         TEXT NOT NULL,
        kind         TEXT NOT NULL,
        key          TEXT,
        content_hash TEXT NOT NULL,
        created_at   INTEGER NOT NULL,  -- microseconds since the Unix epoch, UTC
        valid_from   INTEGER NOT NULL,
        valid_to     INTEGER,
        updated_at   INTEGER NOT NULL,
        record       TEXT NOT NULL,     -- core.codec.memory_to_dict as JSON
        UNIQUE (namespace, id)
    )
    """,
    # Scan pages walk this in seq order: no sort, and each page starts where the last ended.
    "CREATE INDEX memories_by_seq ON memories (namespace, seq)",
    "CREATE INDEX memories_by_status ON memories (namespace, status, tier)",
    # Active free-text memories only: the set find_by_hash searches and the commit keeps
    # free of duplicate texts.
    """
    CREATE INDEX memories_by_hash ON memories (namespace, content_hash)
    WHERE status = 'active' AND key IS NULL
    """,
    """
    CREATE INDEX memories_by_key ON memories (namespace, key, valid_from)
    WHERE key IS NOT NULL
    """,
    """
    CREATE TABLE edges (
        namespace TEXT NOT NULL,
        src       TEXT NOT NULL,
        dst       TEXT NOT NULL,
        type      TEXT NOT NULL,
        weight    REAL NOT NULL,
        PRIMARY KEY (namespace, src, dst, type)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX edges_by_dst ON edges (namespace, dst)",
    """
    CREATE TABLE memory_entities (
        namespace  TEXT NOT NULL,
        entity     TEXT NOT NULL,
        memory_id  TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, entity, memory_id)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX entities_by_time ON memory_entities (namespace, entity, created_at)",
    "CREATE INDEX entities_by_memory ON memory_entities (namespace, memory_id)",
    """
    CREATE TABLE locks (
        namespace  TEXT PRIMARY KEY,
        token      TEXT NOT NULL,
        holder     TEXT NOT NULL,
        expires_at REAL NOT NULL  -- wall clock (time.time()), shared by every process
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE journal (
        namespace   TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        entry       TEXT NOT NULL,
        PRIMARY KEY (namespace, fingerprint)
    ) WITHOUT ROWID
    """,
    # A small number per namespace: the high bits of its full-text rowids (see _fts_rowid).
    """
    CREATE TABLE namespace_ids (
        name TEXT PRIMARY KEY,
        num  INTEGER NOT NULL UNIQUE
    ) WITHOUT ROWID
    """,
    # Rows exist only for ACTIVE memories, rowid = _fts_rowid(namespace number, memories.seq).
    # Each namespace owns one contiguous rowid range, which FTS5 seeks to directly, so a search
    # costs what its own namespace matches, not what every tenant matches.
    """
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        text,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
    """,
)


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (name, value) VALUES (?, ?)", (_MARKER_NAME, _MARKER_VALUE))


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    """The lexical index holds `core.text.lexical_terms` (folded, Porter-stemmed in Python)
    under FTS5's `ascii` tokenizer, which keeps each of those terms one token: the text rules
    then live in one pure function that every tier's BM25 shares, instead of inside SQLite.
    Rebuilt from the records, so files written before keep searching (with the new rules)."""
    conn.execute("DROP TABLE memory_fts")
    conn.execute("CREATE VIRTUAL TABLE memory_fts USING fts5(text, tokenize = 'ascii')")
    rows = conn.execute(
        """
        SELECT n.num, m.seq, json_extract(m.record, '$.text') FROM memories m
        JOIN namespace_ids n ON n.name = m.namespace WHERE m.status = 'active'
        """
    )
    conn.executemany(
        "INSERT INTO memory_fts (rowid, text) VALUES (?, ?)",
        ((_fts_rowid(num, seq), _fts_document(text)) for num, seq, text in rows),
    )


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    """Each record row may carry its embedding (float32 bytes), written beside the record
    when the vector tier is. Recall scores lexical-only candidates against these instead of
    fetching the vectors back from the vector index (a Chroma `get` with embeddings costs
    about as much as the dense query itself), and `repair` can rebuild the vector tier
    without the model. NULL until written: older rows fall back to the vector index, and
    `reverie repair` fills them. The blob lives in the record's row, so every deletion of
    the record (forget, gc, namespace deletion; secure_delete on) deletes it too."""
    conn.execute("ALTER TABLE memories ADD COLUMN embedding BLOB")


def _migrate_to_4(conn: sqlite3.Connection) -> None:
    """What in-process BM25 mirrors (integrations/lexical/mirror.py) need to stay exact while
    other processes write the same file: every change of a namespace's full-text rows takes
    a store-wide generation number (one per write transaction, `lexical.gen` in meta) and
    logs (gen, namespace number, seq). A mirror at generation g replays the seqs logged
    after g; a namespace re-created under a reused number is told apart by `created_gen`.
    The log holds no text, and is trimmed below `lexical.trimmed`."""
    conn.execute("ALTER TABLE namespace_ids ADD COLUMN lexical_gen INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE namespace_ids ADD COLUMN created_gen INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        """
        CREATE TABLE lexical_changes (
            gen INTEGER NOT NULL,
            num INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (gen, num, seq)
        ) WITHOUT ROWID
        """
    )
    conn.executemany(
        "INSERT INTO meta (name, value) VALUES (?, '0')", [(_LEX_GEN,), (_LEX_TRIMMED,)]
    )


def _migrate_to_5(conn: sqlite3.Connection) -> None:
    """Recall looks up when each of its ~80 candidates was observed (conversation
    context); an index that holds the time answers from the index alone instead of
    visiting every record's row (50 ids: 0.15 -> 0.055 ms at 10k)."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memories_created ON memories (namespace, id, created_at)"
    )


_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
)
SCHEMA_VERSION = len(_MIGRATIONS)


# --- helpers ------------------------------------------------------------------------------


def _us(ts: datetime) -> int:
    """Exact integer microseconds: floats would blur ordering of close timestamps."""
    return int((utc(ts) - _EPOCH) // _MICROSECOND)


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    return chunks(items, size)


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"{what} must be JSON-serialisable (plain str/number/bool/list/dict): "
                           f"{e}") from None


def _fts_rowid(ns_num: int, seq: int) -> int:
    """Namespace number in the high bits, record seq in the low: one rowid range per tenant."""
    return (ns_num << _SEQ_BITS) | seq


def _fts_range(ns_num: int) -> tuple[int, int]:
    return _fts_rowid(ns_num, 0), _fts_rowid(ns_num, _SEQ_MASK)


def _fts_document(text: str) -> str:
    return " ".join(lexical_terms(text))


class _Row:
    """What commit needs to know about the stored version of a memory."""

    __slots__ = ("active", "seq", "text", "version")

    def __init__(self, seq: int, version: int, status: str, text: str) -> None:
        self.seq = seq
        self.version = version
        self.active = status == Status.ACTIVE.value
        self.text = text


def _check_window(window: int) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InvalidInput(f"window must be a positive int, got {window!r}")


class SQLiteStore:
    """RecordStore and LexicalIndex over one SQLite file (see the module docstring).

    Thread-safe: one connection shared under a re-entrant lock, because sqlite3 connections
    must not run two statements at once and the engine's async methods call in from worker
    threads. Process-safe: WAL plus ``BEGIN IMMEDIATE`` with a busy timeout.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, decoded_records: int = DECODED_RECORDS
    ) -> None:
        """`decoded_records`: how many decoded records to keep for re-reads (about 2 KB
        each; 0 turns it off), see core.codec.DecodedRecords."""
        self._memory = os.fspath(path) == ":memory:"
        self._path = Path(os.fspath(path))
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._mirrors: OrderedDict[str, Bm25Mirror] = OrderedDict()
        self._tx_gen: int | None = None  # the lexical generation of the open write, if any
        self._decoded = DecodedRecords(decoded_records)  # recall re-reads the same records
        if not self._memory:
            self._check_file()
            self._path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(
                os.fspath(path),
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,
            )
        except sqlite3.Error as e:
            raise BackendUnavailable(
                f"cannot open the reverie store at {self._path}: {e}; check the path and "
                "its permissions"
            ) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            self._validate(conn)  # before anything that writes
            if not self._memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise BackendUnavailable(
                        f"SQLite refused WAL mode for {self._path} (got {mode!r}); put the "
                        "store on a local file system"
                    )
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # forget is for privacy: freed bytes are zeroed, not left readable in the file
            conn.execute("PRAGMA secure_delete = ON")
            self._conn = conn
            self._migrate()
        except BaseException:
            self._conn = None
            conn.close()
            raise

    # --- opening --------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    def _corrupt(self, why: str) -> StoreCorrupt:
        return StoreCorrupt(
            f"{self._path} {why}. reverie did not modify it. Point reverie at another path "
            "(a new file is created there), or restore the store from a backup."
        )

    def _check_file(self) -> None:
        """Reject a foreign file by its header before SQLite gets a chance to touch it."""
        if self._path.is_dir():
            raise InvalidInput(
                f"{self._path} is a directory; pass a file path such as {self._path / 'reverie.db'}"
            )
        if not self._path.exists():
            return
        with self._path.open("rb") as f:
            header = f.read(len(_SQLITE_HEADER))
        if header and header != _SQLITE_HEADER:
            raise self._corrupt("is not a SQLite database")

    def _validate(self, conn: sqlite3.Connection) -> None:
        """Read-only checks: empty file, reverie store of a known version, or refuse."""
        try:
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            }
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if not tables and version == 0:
                return  # a new (or empty) file: migration 1 will create the schema
            marker = None
            if "meta" in tables:
                try:
                    row = conn.execute(
                        "SELECT value FROM meta WHERE name = ?", (_MARKER_NAME,)
                    ).fetchone()
                except sqlite3.OperationalError:  # someone else's `meta` table
                    row = None
                marker = row[0] if row else None
        except sqlite3.DatabaseError as e:
            raise self._corrupt(f"cannot be read as a SQLite database ({e})") from None
        if marker != _MARKER_VALUE:
            raise self._corrupt("is a SQLite database of another application, not a reverie store")
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self._path} has store schema version {version}, but this reverie knows "
                f"versions up to {SCHEMA_VERSION}: it was written by a newer reverie. Upgrade "
                "reverie (pip install -U reverie) to open it; the file was not modified."
            )
        if version < 1:
            raise self._corrupt("has a reverie marker but no schema version")

    def _migrate(self) -> None:
        with self._write() as conn:
            # Re-read inside the write lock: another process may have migrated meanwhile.
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self._path} was upgraded by a newer reverie to schema version "
                    f"{version} while opening; upgrade reverie to open it"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                _MIGRATIONS[target - 1](conn)
                conn.execute(f"PRAGMA user_version = {target}")

    # --- transactions ---------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BackendUnavailable(
                f"the reverie store at {self._path} is closed; open a new SQLiteStore"
            )
        return self._conn

    def _translate(self, e: sqlite3.Error) -> Exception:
        msg = str(e)
        translated: Exception = e
        if isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
            translated = BackendUnavailable(
                f"the reverie store at {self._path} stayed locked by another writer for more "
                f"than {_BUSY_TIMEOUT_MS // 1000} s ({msg}); retry later"
            )
        elif "malformed" in msg or "not a database" in msg:
            translated = self._corrupt(f"is damaged ({msg})")
        return translated

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: all of the body or none of it."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise self._translate(e) from None
            self._tx_gen = None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc) from None
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read snapshot, so multi-statement reads (count, get_many) agree with themselves."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")
            except sqlite3.Error as e:
                raise self._translate(e) from None

    def _load(self, record: str) -> Memory:
        try:
            return self._decoded.decode(record)
        except (ValueError, InvalidInput) as e:
            raise self._corrupt(f"holds an unreadable memory record ({e})") from None

    # --- RecordStore: writes --------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        """Apply a batch as one transaction; any conflict rolls back all of it.

        The duplicate-text rule is checked on the batch's final state, not row by row, so
        the order of puts inside a batch does not matter (a batch may activate a memory
        before it retires another with the same text).
        """
        ns, removals = batch.checked()
        encoded = [(m, _dumps(memory_to_dict(m), f"memory {m.id!r}")) for m in batch.puts]

        free_text = {content_hash(m.text) for m in batch.puts if m.is_active and m.key is None}
        fact_keys = {m.key for m in batch.puts if m.is_active and m.key is not None}
        with self._write() as conn:
            for m, record in encoded:
                self._put(conn, m, record, check_version=not batch.restore)
            for digest in free_text:
                self._check_unique_text(conn, ns, digest)
            for key in fact_keys:
                self._check_unique_key(conn, ns, key)
            # Removals first, so a batch that removes and re-adds one edge ends with it added.
            conn.executemany(
                "DELETE FROM edges WHERE namespace = ? AND src = ? AND dst = ? AND type = ?",
                [(ns, *r) for r in removals],
            )
            conn.executemany(
                """
                INSERT INTO edges (namespace, src, dst, type, weight) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, src, dst, type)
                DO UPDATE SET weight = max(weight, excluded.weight)
                """,
                [(ns, e.src, e.dst, e.type.value, float(e.weight)) for e in batch.edges],
            )
        for m, record in encoded:  # committed: recall will read these back
            self._decoded.remember(record, m)

    def _stored(self, conn: sqlite3.Connection, ns: str, memory_id: str) -> _Row | None:
        row = conn.execute(
            "SELECT seq, version, status, json_extract(record, '$.text') FROM memories "
            "WHERE namespace = ? AND id = ?",
            (ns, memory_id),
        ).fetchone()
        return None if row is None else _Row(*row)

    def _ns_num(self, conn: sqlite3.Connection, ns: str) -> int | None:
        """The namespace's number; read inside the caller's transaction, never cached,
        because another process may delete and re-create the namespace."""
        row = conn.execute("SELECT num FROM namespace_ids WHERE name = ?", (ns,)).fetchone()
        return None if row is None else int(row[0])

    def _ensure_ns_num(self, conn: sqlite3.Connection, ns: str) -> int:
        existing = self._ns_num(conn, ns)
        if existing is not None:
            return existing
        num = int(conn.execute("SELECT coalesce(max(num), 0) + 1 FROM namespace_ids").fetchone()[0])
        if num > _MAX_NS_NUM:
            raise BackendUnavailable(
                f"{self._path} has used up its namespace numbers; export and re-import the "
                "store into a new file"
            )
        gen = self._lexical_gen(conn)  # this incarnation of the namespace
        conn.execute(
            "INSERT INTO namespace_ids (name, num, lexical_gen, created_gen) VALUES (?, ?, ?, ?)",
            (ns, num, gen, gen),
        )
        return num

    def _lexical_gen(self, conn: sqlite3.Connection) -> int:
        """The open write transaction's lexical generation (taken on first use)."""
        if self._tx_gen is None:
            gen = int(
                conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = ? "
                    "RETURNING value",
                    (_LEX_GEN,),
                ).fetchone()[0]
            )
            if gen % _LEX_TRIM_EVERY == 0 and gen > _LEX_KEEP:
                conn.execute("DELETE FROM lexical_changes WHERE gen < ?", (gen - _LEX_KEEP,))
                conn.execute(
                    "UPDATE meta SET value = ? WHERE name = ?", (str(gen - _LEX_KEEP), _LEX_TRIMMED)
                )
            self._tx_gen = gen
        return self._tx_gen

    def _lexical_changed(self, conn: sqlite3.Connection, num: int, seq: int) -> None:
        gen = self._lexical_gen(conn)
        conn.execute("UPDATE namespace_ids SET lexical_gen = ? WHERE num = ?", (gen, num))
        conn.execute(
            "INSERT OR IGNORE INTO lexical_changes (gen, num, seq) VALUES (?, ?, ?)",
            (gen, num, seq),
        )

    def _check_unique_text(self, conn: sqlite3.Connection, ns: str, digest: str) -> None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memories WHERE namespace = ? AND content_hash = ? "
                "AND status = 'active' AND key IS NULL ORDER BY seq LIMIT 2",
                (ns, digest),
            )
        ]
        if len(ids) > 1:
            raise ConflictError(
                f"namespace {ns!r} would hold two active memories with the same text "
                f"({ids[0]!r} and {ids[1]!r}); fold the new source into the existing one "
                "(find_by_hash) instead"
            )

    def _check_unique_key(self, conn: sqlite3.Connection, ns: str, key: str) -> None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memories WHERE namespace = ? AND key = ? "
                "AND status = 'active' ORDER BY seq LIMIT 2",
                (ns, key),
            )
        ]
        if len(ids) > 1:
            raise ConflictError(
                f"namespace {ns!r} would hold two active versions of fact {key!r} "
                f"({ids[0]!r} and {ids[1]!r}); re-read the fact (find_by_key) and supersede "
                "or fold into the current version"
            )

    def _put(
        self, conn: sqlite3.Connection, m: Memory, record: str, *, check_version: bool
    ) -> None:
        ns = m.namespace
        old = self._stored(conn, ns, m.id)
        if not check_version:
            pass  # restore (import): the record is written as given
        elif old is None and m.version != 1:
            raise ConflictError(
                f"memory {m.id!r} in {ns!r}: writing version {m.version} but it is not stored "
                "(was it deleted?); re-read and retry"
            )
        elif old is not None and m.version != old.version + 1:
            raise ConflictError(
                f"memory {m.id!r} in {ns!r}: writing version {m.version} but version "
                f"{old.version} is stored (expected {m.version - 1}); someone else wrote "
                "first, re-read and retry"
            )
        columns = (
            m.version,
            m.status.value,
            m.tier.value,
            m.kind.value,
            m.key,
            content_hash(m.text),
            _us(m.created_at),
            _us(m.valid_since),
            None if m.valid_to is None else _us(m.valid_to),
            _us(m.updated_at or m.created_at),
            record,
        )
        if old is None:
            cur = conn.execute(
                """
                INSERT INTO memories (version, status, tier, kind, key, content_hash,
                    created_at, valid_from, valid_to, updated_at, record, namespace, id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (*columns, ns, m.id),
            )
            seq = cur.lastrowid
            assert seq is not None
        else:
            seq = old.seq
            conn.execute(
                """
                UPDATE memories SET version = ?, status = ?, tier = ?, kind = ?, key = ?,
                    content_hash = ?, created_at = ?, valid_from = ?, valid_to = ?,
                    updated_at = ?, record = ?
                WHERE seq = ?
                """,
                (*columns, seq),
            )
        if seq > _SEQ_MASK:
            raise BackendUnavailable(f"{self._path} holds more records than reverie supports")
        # The lexical index follows the active set.
        num = self._ensure_ns_num(conn, ns)
        fts_rowid = _fts_rowid(num, seq)
        was_indexed = old is not None and old.active
        same_text = old is not None and old.text == m.text
        if was_indexed and not (m.is_active and same_text):
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (fts_rowid,))
            self._lexical_changed(conn, num, seq)
        if m.is_active and not (was_indexed and same_text):
            conn.execute(
                "INSERT INTO memory_fts (rowid, text) VALUES (?, ?)",
                (fts_rowid, _fts_document(m.text)),
            )
            self._lexical_changed(conn, num, seq)
        conn.execute(
            "DELETE FROM memory_entities WHERE namespace = ? AND memory_id = ?", (ns, m.id)
        )
        created = _us(m.created_at)
        conn.executemany(
            "INSERT INTO memory_entities (namespace, entity, memory_id, created_at) "
            "VALUES (?, ?, ?, ?)",
            [(ns, entity, m.id, created) for entity in sorted(m.entities)],
        )

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
        _check_window(window)
        steps = [(_unique(ids), utc(at)) for ids, at in events]
        wanted = _unique(i for ids, _ in steps for i in ids)
        if not wanted:
            return
        with self._write() as conn:
            current: dict[str, tuple[int, Memory]] = {}
            for chunk in _chunks(wanted):
                for seq, record in conn.execute(
                    f"SELECT seq, record FROM memories WHERE namespace = ? "
                    f"AND id IN ({_marks(len(chunk))})",
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
                (m, _dumps(memory_to_dict(m), f"memory {m.id!r}"), seq)
                for seq, m in changed.values()
            ]
            conn.executemany(
                "UPDATE memories SET version = ?, updated_at = ?, record = ? WHERE seq = ?",
                [(m.version, _us(m.updated_at or m.created_at), rec, seq)
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
        removed: list[int] = []
        with self._write() as conn:
            num = self._ns_num(conn, ns)
            for chunk in _chunks(wanted):
                marks = _marks(len(chunk))
                if num is not None:
                    seqs = conn.execute(
                        f"SELECT seq FROM memories WHERE namespace = ? AND id IN ({marks})",
                        (ns, *chunk),
                    ).fetchall()
                    conn.executemany(
                        "DELETE FROM memory_fts WHERE rowid = ?",
                        [(_fts_rowid(num, seq),) for (seq,) in seqs],
                    )
                    for (seq,) in seqs:
                        self._lexical_changed(conn, num, seq)
                        removed.append(seq)
                deleted += conn.execute(
                    f"DELETE FROM memories WHERE namespace = ? AND id IN ({marks})", (ns, *chunk)
                ).rowcount
                conn.execute(
                    f"DELETE FROM memory_entities WHERE namespace = ? AND memory_id IN ({marks})",
                    (ns, *chunk),
                )
                conn.execute(
                    f"DELETE FROM edges WHERE namespace = ? AND src IN ({marks})", (ns, *chunk)
                )
                conn.execute(
                    f"DELETE FROM edges WHERE namespace = ? AND dst IN ({marks})", (ns, *chunk)
                )
            if deleted:  # FTS5 only marks deletions; merging the segments drops the old terms
                conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        self._forget_in_mirror(ns, removed)
        return deleted

    def _forget_in_mirror(self, ns: str, seqs: Sequence[int] | None) -> None:
        """Deleted text leaves this process's memory at once, not at the next search (after
        the commit: a rolled-back delete must not drop a document the log will not bring
        back). `None` drops the namespace's whole mirror."""
        with self._lock:
            mirror = self._mirrors.get(ns)
            if mirror is None:
                return
            if seqs is None:
                del self._mirrors[ns]
                return
            for seq in seqs:
                mirror.remove(seq)

    def delete_namespace(self, namespace: str) -> int:
        """Everything of a tenant, journal included; locks are left to expire or be released."""
        ns = validate_namespace(namespace)
        with self._write() as conn:
            num = self._ns_num(conn, ns)
            if num is not None:
                conn.execute(
                    "DELETE FROM memory_fts WHERE rowid BETWEEN ? AND ?", _fts_range(num)
                )
                conn.execute("DELETE FROM namespace_ids WHERE name = ?", (ns,))
            deleted = conn.execute("DELETE FROM memories WHERE namespace = ?", (ns,)).rowcount
            for table in ("memory_entities", "edges", "journal"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = ?", (ns,))
            if deleted:
                conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        self._forget_in_mirror(ns, None)
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
        with self._read() as conn:
            for chunk in _chunks(wanted):
                records.extend(
                    r[0]
                    for r in conn.execute(
                        f"SELECT record FROM memories WHERE namespace = ? "
                        f"AND id IN ({_marks(len(chunk))})",
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
        return {memory_id: from_bytes(blob) for memory_id, blob in rows}

    def created_times(self, namespace: str, ids: Iterable[str]) -> dict[str, datetime]:
        """When each memory was created, from the indexed column (no record decoded). Not
        part of the RecordStore port: recall uses it, where a store has it, to place
        candidates in time for conversation context."""
        rows = self._column_of(namespace, ids, "created_at")
        return {memory_id: _EPOCH + us * _MICROSECOND for memory_id, us in rows}

    def _column_of(
        self, namespace: str, ids: Iterable[str], column: str, extra: str = ""
    ) -> list[tuple[str, Any]]:
        """(id, `column`) of the stored ids among `ids`, in one read snapshot."""
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        out: list[tuple[str, Any]] = []
        with self._read() as conn:
            for chunk in _chunks(wanted):
                out.extend(conn.execute(
                    f"SELECT id, {column} FROM memories WHERE namespace = ? "
                    f"AND id IN ({_marks(len(chunk))}) {extra}",
                    (ns, *chunk),
                ))
        return out

    def find_by_hash(self, namespace: str, content_hash: str) -> Memory | None:
        ns = validate_namespace(namespace)
        with self._read() as conn:
            row = conn.execute(
                "SELECT record FROM memories WHERE namespace = ? AND content_hash = ? "
                "AND status = 'active' AND key IS NULL ORDER BY seq LIMIT 1",
                (ns, content_hash),
            ).fetchone()
        return None if row is None else self._load(row[0])

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
                ORDER BY e.created_at DESC, m.seq DESC
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
            where.append(f"status IN ({_marks(len(values))})")
            filters.extend(values)
        if tiers is not None:
            values = sorted({Tier(t).value for t in tiers})
            if not values:
                return
            where.append(f"tier IN ({_marks(len(values))})")
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
            for status, n in conn.execute(
                "SELECT status, count(*) FROM memories WHERE namespace = ? GROUP BY status",
                (ns,),
            ):
                counts[f"status:{status}"] = n
            for tier, n in conn.execute(
                "SELECT tier, count(*) FROM memories WHERE namespace = ? AND status = 'active' "
                "GROUP BY tier",
                (ns,),
            ):
                counts[f"tier:{tier}"] = n
            counts["edges"] = conn.execute(
                "SELECT count(*) FROM edges WHERE namespace = ?", (ns,)
            ).fetchone()[0]
        counts["total"] = sum(counts[f"status:{s.value}"] for s in Status)
        return counts

    def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        seen: dict[tuple[str, str, str], float] = {}
        with self._read() as conn:
            for chunk in _chunks(wanted):
                marks = _marks(len(chunk))
                # Without the hint SQLite answers `dst IN` from the primary key's
                # `namespace` prefix, a scan of every edge of the namespace per call: the
                # REM commit then slowed down as the store grew (weight is not in the
                # index, so the planner undervalues it).
                for column, index in (("src", ""), ("dst", " INDEXED BY edges_by_dst")):
                    for src, dst, type_, weight in conn.execute(
                        f"SELECT src, dst, type, weight FROM edges{index} "
                        f"WHERE namespace = ? AND {column} IN ({marks})",
                        (ns, *chunk),
                    ):
                        seen[(src, dst, type_)] = weight
        return [Edge(src, dst, EdgeType(t), w) for (src, dst, t), w in seen.items()]

    def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]:
        """Edges in plus out, for every requested id (0 when it has none)."""
        ns = validate_namespace(namespace)
        wanted = _unique(ids)
        result = dict.fromkeys(wanted, 0)
        with self._read() as conn:
            for chunk in _chunks(wanted):
                marks = _marks(len(chunk))
                for column in ("src", "dst"):
                    for memory_id, n in conn.execute(
                        f"SELECT {column}, count(*) FROM edges "
                        f"WHERE namespace = ? AND {column} IN ({marks}) GROUP BY {column}",
                        (ns, *chunk),
                    ):
                        result[memory_id] += n
        return result

    def namespaces(self) -> list[str]:
        with self._read() as conn:
            return [
                r[0]
                for r in conn.execute("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
            ]

    # --- LexicalIndex ---------------------------------------------------------------------

    def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]:
        """BM25 over the namespace's active texts, with the namespace's own statistics.

        Scored in this process by the namespace's `Bm25Mirror`, brought up to date inside the
        same read snapshot: replayed from the change log when other writers (this process's
        or another's) moved it on, rebuilt from the FTS5 rows when it cannot be. The FTS5
        table stays the persisted lexical index the mirrors are built from."""
        ns = validate_namespace(namespace)
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        with self._read() as conn:
            row = conn.execute(
                "SELECT num, lexical_gen, created_gen FROM namespace_ids WHERE name = ?", (ns,)
            ).fetchone()
            if row is None:  # never written, or deleted (by any process): drop any copy
                self._mirrors.pop(ns, None)
                return []
            mirror = self._current_mirror(conn, ns, int(row[0]), int(row[1]), int(row[2]))
            top = mirror.top(terms, int(k))
        return [LexicalHit(memory_id, score) for memory_id, score in top]

    def _current_mirror(
        self, conn: sqlite3.Connection, ns: str, num: int, gen: int, created: int
    ) -> Bm25Mirror:
        mirror = self._mirrors.get(ns)
        if mirror is not None and mirror.identity == (num, created):
            self._mirrors.move_to_end(ns)
            if mirror.generation == gen:
                return mirror
            trimmed = int(
                conn.execute("SELECT value FROM meta WHERE name = ?", (_LEX_TRIMMED,)).fetchone()[0]
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
                for chunk in _chunks(changed):
                    mirror.add_many(self._fts_documents(
                        conn,
                        f"f.rowid IN ({_marks(len(chunk))})",
                        [_fts_rowid(num, seq) for seq in chunk],
                    ))
                mirror.generation = gen
                return mirror
        mirror = Bm25Mirror((num, created), gen)
        mirror.add_many(self._fts_documents(conn, "f.rowid BETWEEN ? AND ?", _fts_range(num)))
        self._mirrors[ns] = mirror
        self._mirrors.move_to_end(ns)
        while len(self._mirrors) > _LEX_MIRRORS:
            self._mirrors.popitem(last=False)
        return mirror

    @staticmethod
    def _fts_documents(
        conn: sqlite3.Connection, where: str, params: Sequence[int]
    ) -> Iterator[tuple[int, str, str]]:
        """(seq, memory id, stored FTS text) of the full-text rows selected by `where`."""
        for rowid, memory_id, text in conn.execute(
            f"SELECT f.rowid, m.id, f.text FROM memory_fts f "
            f"JOIN memories m ON m.seq = (f.rowid & {_SEQ_MASK}) WHERE {where}",
            tuple(params),
        ):
            yield int(rowid) & _SEQ_MASK, str(memory_id), str(text)

    # --- meta, journal, lock --------------------------------------------------------------

    def get_meta(self, name: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT value FROM meta WHERE name = ?", (_USER_META_PREFIX + name,)
            ).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidInput("meta names and values must be text")
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (_USER_META_PREFIX + name, value),
            )

    def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None:
        ns = validate_namespace(namespace)
        with self._read() as conn:
            row = conn.execute(
                "SELECT entry FROM journal WHERE namespace = ? AND fingerprint = ?",
                (ns, fingerprint),
            ).fetchone()
        if row is None:
            return None
        entry = json.loads(row[0])
        if not isinstance(entry, dict):
            raise self._corrupt("holds a journal entry that is not a JSON object")
        return entry

    def journal_put(self, namespace: str, fingerprint: str, entry: Mapping[str, Any]) -> None:
        ns = validate_namespace(namespace)
        payload = _dumps(dict(entry), "a journal entry")
        with self._write() as conn:
            conn.execute(
                "INSERT INTO journal (namespace, fingerprint, entry) VALUES (?, ?, ?) "
                "ON CONFLICT (namespace, fingerprint) DO UPDATE SET entry = excluded.entry",
                (ns, fingerprint, payload),
            )

    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> AbstractContextManager[str]:
        """A lease, not a mutex: it expires, so a crashed holder cannot wedge maintenance.

        Wall-clock time, because the lease is shared between processes (and machines, for a
        networked store), which share no monotonic clock.
        """
        ns = validate_namespace(namespace)
        if (
            isinstance(ttl_seconds, bool)
            or not isinstance(ttl_seconds, int | float)
            or not math.isfinite(ttl_seconds)
            or ttl_seconds < 0
        ):
            raise InvalidInput(f"ttl_seconds must be a finite number >= 0, got {ttl_seconds!r}")
        return self._lease(ns, float(ttl_seconds))

    @contextmanager
    def _lease(self, ns: str, ttl: float) -> Iterator[str]:
        token = secrets.token_hex(16)
        holder = f"{socket.gethostname()} pid {os.getpid()} thread {threading.get_ident()}"
        with self._write() as conn:
            now = time.time()
            row = conn.execute(
                "SELECT holder, expires_at FROM locks WHERE namespace = ?", (ns,)
            ).fetchone()
            if row is not None and row[1] > now:
                until = datetime.fromtimestamp(row[1], UTC).isoformat(timespec="seconds")
                raise LockBusy(
                    f"namespace {ns!r} is locked for maintenance by {row[0]} until {until} "
                    f"(in {row[1] - now:.1f} s); wait for it to finish, or retry after that"
                )
            conn.execute(
                "INSERT INTO locks (namespace, token, holder, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace) DO UPDATE SET token = excluded.token, "
                "holder = excluded.holder, expires_at = excluded.expires_at",
                (ns, token, holder, now + ttl),
            )
        try:
            yield token
        finally:
            if self._conn is not None:
                # Only our own lease: if it expired and someone took over, theirs stays.
                with self._write() as conn:
                    conn.execute(
                        "DELETE FROM locks WHERE namespace = ? AND token = ?", (ns, token)
                    )

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._mirrors.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

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
        return f"SQLiteStore({os.fspath(self._path)!r})"
