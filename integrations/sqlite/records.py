"""The rows of one memory in the SQLite store: the record (JSON) with the columns lookups
need, its entity rows, and the rules a commit checks (versions, one active copy of a text,
one active version of a fact).

The full record is stored as JSON (the one encoding in ``core.codec``); the few fields that
lookups need are copied into indexed columns. Adding a field to ``Memory`` then needs no
migration, only a new lookup does.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from reverie.core.errors import BackendUnavailable, ConflictError
from reverie.core.models import Memory, Status
from reverie.core.text import content_hash
from reverie.integrations.sqlite.database import marks
from reverie.integrations.sqlite.lexical import FullText
from reverie.integrations.sqlite.schema import SEQ_MASK
from reverie.integrations.store_values import check_version, micros

__all__ = [
    "Row", "check_unique_key", "check_unique_text", "delete", "put", "recount", "recount_edges",
    "stored",
]

class Row:
    """What commit needs to know about the stored version of a memory."""

    __slots__ = (
        "active", "created", "digest", "entities", "key", "seq", "status", "text", "tier",
        "valid_from", "version",
    )

    def __init__(
        self, seq: int, version: int, status: str, text: str, created: int,
        entities: str | None, digest: str, tier: str, key: str | None, valid_from: int,
    ) -> None:
        self.seq = seq
        self.version = version
        self.status = status
        self.tier = tier  # with status: the count the record is in (`memory_counts`)
        self.active = status == Status.ACTIVE.value
        self.text = text
        self.created = created  # the time its entity rows carry
        self.entities = entities  # the record's entity list as JSON text (None: no list)
        self.digest = digest  # content_hash of `text`
        self.key = key  # with valid_from: the columns of `memories_by_key`
        self.valid_from = valid_from


def stored(conn: sqlite3.Connection, ns: str, memory_id: str) -> Row | None:
    row = conn.execute(
        "SELECT seq, version, status, json_extract(record, '$.text'), created_at, "
        "json_extract(record, '$.entities'), content_hash, tier, key, valid_from FROM memories "
        "WHERE namespace = ? AND id = ?",
        (ns, memory_id),
    ).fetchone()
    return None if row is None else Row(*row)


def _two_active(conn: sqlite3.Connection, ns: str, where: str, value: str) -> list[str]:
    """Up to two ids of active memories matching `where` (one `?`, bound to `value`)."""
    return [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM memories WHERE namespace = ? AND {where} "
            "AND status = 'active' ORDER BY seq LIMIT 2",
            (ns, value),
        )
    ]


def check_unique_text(conn: sqlite3.Connection, ns: str, digest: str) -> None:
    ids = _two_active(conn, ns, "content_hash = ? AND key IS NULL", digest)
    if len(ids) > 1:
        raise ConflictError(
            f"namespace {ns!r} would hold two active memories with the same text "
            f"({ids[0]!r} and {ids[1]!r}); fold the new source into the existing one "
            "(find_by_hash) instead"
        )


def check_unique_key(conn: sqlite3.Connection, ns: str, key: str) -> None:
    ids = _two_active(conn, ns, "key = ?", key)
    if len(ids) > 1:
        raise ConflictError(
            f"namespace {ns!r} would hold two active versions of fact {key!r} "
            f"({ids[0]!r} and {ids[1]!r}); re-read the fact (find_by_key) and supersede "
            "or fold into the current version"
        )


def put(
    conn: sqlite3.Connection, m: Memory, record: str, *, restore: bool,
    fulltext: FullText, path: Path, counts: Counter[tuple[str, str]],
) -> None:
    """Write one memory's rows (record, lookup columns, full-text row, entities), checking
    its version against the stored one unless it is a `restore` (an import: the record is
    written as given). How the namespace's (status, tier) counts move is added to
    `counts`, for the caller to apply once per batch (`recount`)."""
    ns = m.namespace
    old = stored(conn, ns, m.id)
    if not restore:
        check_version(m, None if old is None else old.version)
    # a change of status or scores keeps the text: its hash is the stored one (a REM cycle
    # retires thousands of members, and normalising each text again is a tenth of a write)
    same_text = old is not None and old.text == m.text
    digest = old.digest if old is not None and same_text else content_hash(m.text)
    created, valid_from = micros(m.created_at), micros(m.valid_since)
    valid_to = None if m.valid_to is None else micros(m.valid_to)
    updated = micros(m.updated_at or m.created_at)
    # the (status, tier) count the record leaves, if it moves to another
    left = None if old is None or (old.status, old.tier) == (m.status.value, m.tier.value) else (
        old.status, old.tier)
    if old is None:
        cur = conn.execute(
            """
            INSERT INTO memories (version, status, tier, kind, key, content_hash,
                created_at, valid_from, valid_to, updated_at, record, namespace, id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            (m.version, m.status.value, m.tier.value, m.kind.value, m.key, digest, created,
             valid_from, valid_to, updated, record, ns, m.id),
        )
        seq = cur.lastrowid
        assert seq is not None
    else:
        seq = old.seq
        # Only the indexed columns that change are set: SQLite rewrites an index's entry
        # for every column an UPDATE names, changed or not, so naming them all dirtied a
        # page of the hash and creation-time indexes per retired member, at random places
        # (ids are random): a fifth of a REM cycle's writes to the file at 20k memories.
        sets = ["version = ?", "kind = ?", "valid_to = ?", "updated_at = ?", "record = ?"]
        args: list[object] = [m.version, m.kind.value, valid_to, updated, record]
        if left is not None:
            sets += ["status = ?", "tier = ?"]
            args += [m.status.value, m.tier.value]
        if (old.key, old.valid_from) != (m.key, valid_from):
            sets += ["key = ?", "valid_from = ?"]
            args += [m.key, valid_from]
        if old.digest != digest:
            sets.append("content_hash = ?")
            args.append(digest)
        if old.created != created:
            sets.append("created_at = ?")
            args.append(created)
        conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE seq = ?", (*args, seq))
    if seq > SEQ_MASK:
        raise BackendUnavailable(f"{path} holds more records than reverie supports")
    if old is None or left is not None:
        counts[(m.status.value, m.tier.value)] += 1
        if left is not None:
            counts[left] -= 1
    # The lexical index follows the active set.
    fulltext.follow(
        conn, ns, seq,
        old_text=old.text if old is not None and old.active else None,
        active=m.is_active,
        text=m.text,
    )
    entities = sorted(m.entities)
    if (
        old is not None and old.created == created and old.entities is not None
        and json.loads(old.entities) == entities
    ):
        return  # a change of status or of the record alone: the entity rows still hold
    conn.execute(
        "DELETE FROM memory_entities WHERE namespace = ? AND memory_id = ?", (ns, m.id)
    )
    conn.executemany(
        "INSERT INTO memory_entities (namespace, entity, memory_id, created_at, seq) "
        "VALUES (?, ?, ?, ?, ?)",
        [(ns, entity, m.id, created, seq) for entity in entities],
    )


def recount(conn: sqlite3.Connection, ns: str, changes: Iterable[tuple[str, str, int]]) -> None:
    """Move the namespace's counts by (status, tier, change); a count that reaches 0 goes."""
    changes = [c for c in changes if c[2]]
    if not changes:
        return
    conn.executemany(
        "INSERT INTO memory_counts (namespace, status, tier, n) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (namespace, status, tier) DO UPDATE SET n = n + excluded.n",
        [(ns, status, tier, n) for status, tier, n in changes],
    )
    fallen = [(ns, status, tier) for status, tier, n in changes if n < 0]
    if fallen:
        conn.executemany(
            "DELETE FROM memory_counts WHERE namespace = ? AND status = ? AND tier = ? "
            "AND n <= 0",
            fallen,
        )


def recount_edges(conn: sqlite3.Connection, ns: str, change: int) -> None:
    """Move the namespace's edge count by `change` (edges added, or removed if negative)."""
    if change:
        conn.execute(
            "INSERT INTO edge_counts (namespace, n) VALUES (?, ?) "
            "ON CONFLICT (namespace) DO UPDATE SET n = n + excluded.n",
            (ns, change),
        )


def delete(conn: sqlite3.Connection, ns: str, ids: Sequence[str]) -> int:
    """Delete the records `ids` (one `IN` list's worth), their entity rows and every edge
    touching them; the postings are the caller's (`FullText.remove`). Returns how
    many records were deleted."""
    in_list = marks(len(ids))
    recount(conn, ns, [
        (str(status), str(tier), -int(n)) for status, tier, n in conn.execute(
            f"SELECT status, tier, count(*) FROM memories WHERE namespace = ? "
            f"AND id IN ({in_list}) GROUP BY status, tier",
            (ns, *ids),
        )
    ])
    deleted = conn.execute(
        f"DELETE FROM memories WHERE namespace = ? AND id IN ({in_list})", (ns, *ids)
    ).rowcount
    conn.execute(
        f"DELETE FROM memory_entities WHERE namespace = ? AND memory_id IN ({in_list})",
        (ns, *ids),
    )
    gone = conn.execute(
        f"DELETE FROM edges WHERE namespace = ? AND src IN ({in_list})", (ns, *ids)
    ).rowcount
    gone += conn.execute(
        f"DELETE FROM edges WHERE namespace = ? AND dst IN ({in_list})", (ns, *ids)
    ).rowcount
    recount_edges(conn, ns, -gone)
    return int(deleted)
