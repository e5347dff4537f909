"""The SQLite store's tables and their migrations, and how full-text rowids are laid out.

Migration n brings a file from user_version n - 1 to n, inside one transaction together
with the user_version bump, so a crash mid-migration leaves the older, consistent schema.
Append new migrations; never edit a released one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from reverie.core.text import lexical_terms

__all__ = [
    "GENERATION_KEY", "MARKER_NAME", "MARKER_VALUE", "MIGRATIONS", "SCHEMA_VERSION",
    "SEQ_MASK", "TRIMMED_KEY", "fts_document", "fts_range", "fts_rowid",
]

# The row of `meta` that marks a file as a reverie store (opening refuses any other file).
MARKER_NAME = "reverie.format"
MARKER_VALUE = "reverie-sqlite-store"
# Full-text rowids are 63-bit: 36 bits of record seq (6.9e10 rows), 26 of namespace number.
SEQ_BITS = 36
SEQ_MASK = (1 << SEQ_BITS) - 1
MAX_NS_NUM = (1 << (63 - SEQ_BITS)) - 1
# Rows of `meta` for the lexical change log (`sqlite.lexical`): the last generation taken,
# and the generation below which the log was trimmed.
GENERATION_KEY = "lexical.gen"
TRIMMED_KEY = "lexical.trimmed"


def fts_rowid(ns_num: int, seq: int) -> int:
    """Namespace number in the high bits, record seq in the low: one rowid range per tenant."""
    return (ns_num << SEQ_BITS) | seq


def fts_range(ns_num: int) -> tuple[int, int]:
    return fts_rowid(ns_num, 0), fts_rowid(ns_num, SEQ_MASK)


def fts_document(text: str) -> str:
    """What the full-text table holds for a text: its lexical terms (`core.text`)."""
    return " ".join(lexical_terms(text))


_TABLES_V1: tuple[str, ...] = (
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
    # A small number per namespace: the high bits of its full-text rowids (see fts_rowid).
    """
    CREATE TABLE namespace_ids (
        name TEXT PRIMARY KEY,
        num  INTEGER NOT NULL UNIQUE
    ) WITHOUT ROWID
    """,
    # Rows exist only for ACTIVE memories, rowid = fts_rowid(namespace number, memories.seq).
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
    for statement in _TABLES_V1:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (name, value) VALUES (?, ?)", (MARKER_NAME, MARKER_VALUE))


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
        ((fts_rowid(num, seq), fts_document(text)) for num, seq, text in rows),
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
        "INSERT INTO meta (name, value) VALUES (?, '0')", [(GENERATION_KEY,), (TRIMMED_KEY,)]
    )


def _migrate_to_5(conn: sqlite3.Connection) -> None:
    """Recall looks up when each of its candidates was observed (conversation context);
    an index that holds the time answers from the index alone instead of visiting every
    record's row."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memories_created ON memories (namespace, id, created_at)"
    )


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
)
SCHEMA_VERSION = len(MIGRATIONS)
