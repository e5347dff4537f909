"""The SQLite store's coordination rows: the per-namespace maintenance lease, the
consolidation journal, and the user's meta values.

The lease is not a mutex: it expires, so a crashed holder cannot wedge maintenance; its
holder renews it while working (a heartbeat), and a holder process that is gone loses it
at once (`store_values.holder_dead`). It runs on wall-clock time because it is shared
between processes (and machines, for a networked file system), which share no monotonic
clock.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from reverie.core.errors import InvalidInput, LockBusy
from reverie.integrations.sqlite.database import Database, chunks, marks
from reverie.integrations.store_values import Heartbeat, dumps, holder_dead, lease_holder

__all__ = ["get_meta", "journal_delete", "journal_get", "journal_put", "lease", "set_meta"]

_USER_META_PREFIX = "user."  # user meta keys cannot collide with the store's own rows


def get_meta(db: Database, name: str) -> str | None:
    with db.read() as conn:
        row = conn.execute(
            "SELECT value FROM meta WHERE name = ?", (_USER_META_PREFIX + name,)
        ).fetchone()
    return None if row is None else str(row[0])


def set_meta(db: Database, name: str, value: str) -> None:
    if not isinstance(name, str) or not isinstance(value, str):
        raise InvalidInput("meta names and values must be text")
    with db.write() as conn:
        conn.execute(
            "INSERT INTO meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (_USER_META_PREFIX + name, value),
        )


def journal_get(db: Database, ns: str, fingerprint: str) -> Mapping[str, Any] | None:
    with db.read() as conn:
        row = conn.execute(
            "SELECT entry FROM journal WHERE namespace = ? AND fingerprint = ?",
            (ns, fingerprint),
        ).fetchone()
    if row is None:
        return None
    entry = json.loads(row[0])
    if not isinstance(entry, dict):
        raise db.corrupt("holds a journal entry that is not a JSON object")
    return entry


def journal_put(db: Database, ns: str, fingerprint: str, entry: Mapping[str, Any]) -> None:
    payload = dumps(dict(entry), "a journal entry")
    with db.write() as conn:
        conn.execute(
            "INSERT INTO journal (namespace, fingerprint, entry) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, fingerprint) DO UPDATE SET entry = excluded.entry",
            (ns, fingerprint, payload),
        )


def journal_delete(db: Database, ns: str, fingerprints: Sequence[str]) -> None:
    with db.write() as conn:
        for keys in chunks(fingerprints):
            conn.execute(
                f"DELETE FROM journal WHERE namespace = ? AND fingerprint IN ({marks(len(keys))})",
                (ns, *keys),
            )


@contextmanager
def lease(db: Database, ns: str, ttl: float) -> Iterator[str]:
    """Hold the namespace's maintenance lease for the block; yields the lease's token.

    The lease lasts `ttl` seconds and a heartbeat renews it every third of that while
    the block runs, so it outlives no holder by more than `ttl`. Another live holder's
    lease gives `LockBusy`; one whose holder process is gone (on this host) is taken over
    at once, however long it had left."""
    token = secrets.token_hex(16)
    holder = lease_holder()
    with db.write() as conn:
        now = time.time()
        row = conn.execute(
            "SELECT holder, expires_at FROM locks WHERE namespace = ?", (ns,)
        ).fetchone()
        if row is not None and row[1] > now and not holder_dead(str(row[0])):
            until = datetime.fromtimestamp(row[1], UTC).isoformat(timespec="seconds")
            raise LockBusy(
                f"namespace {ns!r} is locked for maintenance by {row[0]} until {until} "
                f"(in {row[1] - now:.1f} s, renewed while it works); wait for it to "
                "finish, or retry after that"
            )
        conn.execute(
            "INSERT INTO locks (namespace, token, holder, expires_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (namespace) DO UPDATE SET token = excluded.token, "
            "holder = excluded.holder, expires_at = excluded.expires_at",
            (ns, token, holder, now + ttl),
        )

    def renew() -> bool:
        if not db.is_open:
            return False
        with db.write() as conn:
            cur = conn.execute(
                "UPDATE locks SET expires_at = ? WHERE namespace = ? AND token = ?",
                (time.time() + ttl, ns, token),
            )
            return cur.rowcount == 1

    beat = Heartbeat(renew, ttl / 3, f"namespace {ns!r}")
    try:
        yield token
    finally:
        beat.stop()
        if db.is_open:
            # Only our own lease: if it expired and someone took over, theirs stays.
            with db.write() as conn:
                conn.execute("DELETE FROM locks WHERE namespace = ? AND token = ?", (ns, token))
