"""The SQLite store's tables and their migrations, and how full-text rowids are laid out.

Migration n brings a file from user_version n - 1 to n, inside one transaction together
with the user_version bump, so a crash mid-migration leaves the older, consistent schema.
Append new migrations; never edit a released one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from reverie.core.text import lexical_terms

__all__ = [
    "BLOCK", "GENERATION_KEY", "MARKER_NAME", "MARKER_VALUE", "MIGRATIONS", "SCHEMA_VERSION",
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
# Postings per row of `lexical_postings` (schema 6): 16 bytes each, so a full block (2 KiB)
# stays inside one 4 KiB page; a larger block reads a common term in fewer rows but makes
# every write that appends to it rewrite more bytes.
BLOCK = 128


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


def _migrate_to_6(conn: sqlite3.Connection) -> None:
    """BM25 without a per-process copy of the index (integrations/sqlite/lexical.py): the
    postings of each (namespace number, term) in blocks of `BLOCK` documents (record
    seqs ascending, term frequencies, document lengths, as packed little-endian arrays),
    each term's document and block counts, and each namespace's active-document count and
    total length beside its number, all kept by the same transactions as the records; and
    the time of each namespace's last write, so `maintenance_due()` decodes no record.
    Built here once from the active records, a slice of seqs at a time; FTS5's table and
    the change log that kept the old in-process copies exact go."""
    from reverie.integrations.sqlite.lexical import FullText

    conn.execute("ALTER TABLE namespace_ids ADD COLUMN docs INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE namespace_ids ADD COLUMN doc_terms INTEGER NOT NULL DEFAULT 0")
    # the newest updated_at of the namespace's records: maintenance_due's idle signal
    conn.execute("ALTER TABLE namespace_ids ADD COLUMN last_write INTEGER")
    conn.execute(
        "UPDATE namespace_ids SET last_write = "
        "(SELECT max(updated_at) FROM memories WHERE namespace = namespace_ids.name)"
    )
    conn.execute(
        """
        CREATE TABLE lexical_postings (
            id        INTEGER PRIMARY KEY,
            num       INTEGER NOT NULL,  -- namespace_ids.num
            term      TEXT NOT NULL,     -- one of core.text.lexical_terms
            first_seq INTEGER NOT NULL,  -- lowest record seq in the block
            last_seq  INTEGER NOT NULL,  -- highest
            n         INTEGER NOT NULL,  -- postings in the block
            seqs      BLOB NOT NULL,     -- int64 record seqs, ascending
            tfs       BLOB NOT NULL,     -- int32 term frequencies
            lens      BLOB NOT NULL      -- int32 document lengths (terms)
        )
        """
    )
    conn.execute(
        "CREATE UNIQUE INDEX lexical_postings_by_term ON lexical_postings (num, term, first_seq)"
    )
    # each term's document frequency (BM25's n) and block count, read before any posting
    conn.execute(
        """
        CREATE TABLE lexical_terms (
            num    INTEGER NOT NULL,
            term   TEXT NOT NULL,
            df     INTEGER NOT NULL,
            blocks INTEGER NOT NULL,
            PRIMARY KEY (num, term)
        ) WITHOUT ROWID
        """
    )
    text = FullText(Path("<migration>"), term_bounds=False)  # schema 6 has none
    after = 0
    while True:
        rows = conn.execute(
            """
            SELECT m.seq, n.num, json_extract(m.record, '$.text') FROM memories m
            JOIN namespace_ids n ON n.name = m.namespace
            WHERE m.seq > ? AND m.status = 'active' ORDER BY m.seq LIMIT 20000
            """,
            (after,),
        ).fetchall()
        if not rows:
            break
        text.begin()
        for seq, num, body in rows:
            text.index(int(num), int(seq), str(body))
        text.end(conn)
        after = int(rows[-1][0])
    conn.execute("DROP TABLE memory_fts")
    conn.execute("DROP TABLE lexical_changes")
    conn.execute("DELETE FROM meta WHERE name IN (?, ?)", (GENERATION_KEY, TRIMMED_KEY))
    conn.execute("ALTER TABLE namespace_ids DROP COLUMN lexical_gen")
    conn.execute("ALTER TABLE namespace_ids DROP COLUMN created_gen")


def _migrate_to_7(conn: sqlite3.Connection) -> None:
    """`find_by_entity` orders by creation time, then insertion order (seq), newest first,
    and stops at its limit. With seq only in `memories`, every entity row of one creation
    time had to be read and sorted first: memories written at one time (a bulk import, a
    fixed clock) made each lookup cost all of an entity's rows, which observe does for every
    entity of every new memory. With seq in the entity row, the index answers in order."""
    conn.execute("ALTER TABLE memory_entities ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "UPDATE memory_entities SET seq = coalesce((SELECT m.seq FROM memories m "
        "WHERE m.namespace = memory_entities.namespace AND m.id = memory_entities.memory_id), 0)"
    )
    conn.execute("DROP INDEX IF EXISTS entities_by_time")
    conn.execute(
        "CREATE INDEX entities_by_time ON memory_entities (namespace, entity, created_at, seq)"
    )


def _migrate_to_8(conn: sqlite3.Connection) -> None:
    """Each term's largest term frequency and shortest document length, so a search
    bounds what the term can add to a document's BM25 score by what its postings can
    actually give, not by idf x (k1 + 1): a frequent word's bound falls by a third or more,
    and far more of a query's frequent words are skipped instead of read in full
    (integrations/sqlite/lexical.py). Documents leaving keep the bound valid (only
    looser); documents coming in raise it as needed. Filled here from the blocks."""
    import numpy as np

    conn.execute("ALTER TABLE lexical_terms ADD COLUMN max_tf INTEGER")
    conn.execute("ALTER TABLE lexical_terms ADD COLUMN min_len INTEGER")
    # term by term in index order, written in slices: memory stays flat at any size
    update = "UPDATE lexical_terms SET max_tf = ?, min_len = ? WHERE num = ? AND term = ?"
    done: list[tuple[int, int, int, str]] = []
    key: tuple[int, str] | None = None
    top = least = 0
    for num, term, tfs, lens in conn.execute(
        "SELECT num, term, tfs, lens FROM lexical_postings ORDER BY num, term, first_seq"
    ):
        block_top = int(np.frombuffer(tfs, dtype="<i4").max())
        block_least = int(np.frombuffer(lens, dtype="<i4").min())
        if (num, term) == key:
            top, least = max(top, block_top), min(least, block_least)
            continue
        if key is not None:
            done.append((top, least, *key))
        if len(done) >= 20_000:
            conn.executemany(update, done)
            done.clear()
        key, top, least = (int(num), str(term)), block_top, block_least
    if key is not None:
        done.append((top, least, *key))
    conn.executemany(update, done)


def _migrate_to_9(conn: sqlite3.Connection) -> None:
    """How many memories each namespace holds in each (status, tier), and how many
    edges, kept by the same transactions as the records: counting them by scanning
    indexes cost time in proportion to the namespace (about 0.3 s at a million memories)
    on every engine open, which compares the records with the vector index's count, and
    in `maintenance_due()`.
    Filled here from the records."""
    conn.execute(
        """
        CREATE TABLE memory_counts (
            namespace TEXT NOT NULL,
            status    TEXT NOT NULL,
            tier      TEXT NOT NULL,
            n         INTEGER NOT NULL,
            PRIMARY KEY (namespace, status, tier)
        ) WITHOUT ROWID
        """
    )
    conn.execute(
        "INSERT INTO memory_counts (namespace, status, tier, n) "
        "SELECT namespace, status, tier, count(*) FROM memories GROUP BY namespace, status, tier"
    )
    conn.execute(
        "CREATE TABLE edge_counts (namespace TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID"
    )
    conn.execute(
        "INSERT INTO edge_counts (namespace, n) SELECT namespace, count(*) FROM edges "
        "GROUP BY namespace"
    )


def _migrate_to_10(conn: sqlite3.Connection) -> None:
    """The journal keeps its entries in a rowid table, found through a small unique index.
    As a WITHOUT ROWID table its key and entry shared one b-tree cell, and SQLite reads a
    cell's whole payload, overflow pages included, to compare a key with it: every lookup
    or write of a cluster's entry that passed the REM cycle's plan (one entry holding every
    cluster, megabytes at 100k memories) read the whole plan. Once a batch's clusters
    wrote no entries of their own, nearly every lookup passed it: a cycle over 100k
    memories took 96 s instead of 60 s."""
    conn.execute(
        """
        CREATE TABLE journal_entries (
            namespace   TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            entry       TEXT NOT NULL,
            UNIQUE (namespace, fingerprint)
        )
        """
    )
    conn.execute(
        "INSERT INTO journal_entries (namespace, fingerprint, entry) "
        "SELECT namespace, fingerprint, entry FROM journal"
    )
    conn.execute("DROP TABLE journal")
    conn.execute("ALTER TABLE journal_entries RENAME TO journal")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
    _migrate_to_6,
    _migrate_to_7,
    _migrate_to_8,
    _migrate_to_9,
    _migrate_to_10,
)
SCHEMA_VERSION = len(MIGRATIONS)
