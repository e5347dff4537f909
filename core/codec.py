"""Memory and Edge <-> JSON-safe dicts: one encoding for every store, export and import.

Times are ISO-8601 UTC strings so an export is readable and a round trip is exact
(microsecond precision is kept).
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .clock import utc
from .errors import InvalidInput
from .models import Edge, EdgeType, Fact, Kind, Memory, Status, Tier

FORMAT_VERSION = 1


@functools.lru_cache(maxsize=16_384)
def _iso(ts: datetime) -> str:
    """A time's UTC ISO text, memoised: a record's times are mostly the same from one write
    to the next (a touch re-encodes up to `access_window` recent accesses that did not
    change), and `isoformat` was a third of a Redis touch's CPU. Equal aware datetimes
    are the same instant, so they share one text; about 3 MB when full."""
    return utc(ts).isoformat()


def _t(ts: datetime | None) -> str | None:
    return None if ts is None else _iso(ts)


def _parse_t(v: Any) -> datetime | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise InvalidInput(f"expected an ISO-8601 time, got {v!r}")
    try:
        return utc(datetime.fromisoformat(v))
    except ValueError:
        raise InvalidInput(f"expected an ISO-8601 time, got {v!r}") from None


def memory_to_dict(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "namespace": m.namespace,
        "kind": m.kind.value,
        "tier": m.tier.value,
        "status": m.status.value,
        "text": m.text,
        "fact": None if m.fact is None else [m.fact.subject, m.fact.predicate, m.fact.object],
        "key": m.key,
        "importance": m.importance,
        "confidence": m.confidence,
        "sources": sorted(m.sources),
        "created_at": _t(m.created_at),
        "last_accessed_at": _t(m.last_accessed_at),
        "access_count": m.access_count,
        "recent_accesses": [_t(t) for t in m.recent_accesses],
        "valid_from": _t(m.valid_from),
        "valid_to": _t(m.valid_to),
        "superseded_by": m.superseded_by,
        "consolidated_into": m.consolidated_into,
        "derived_from": sorted(m.derived_from),
        "entities": sorted(m.entities),
        "pinned": m.pinned,
        "retention_exempt": m.retention_exempt,
        "user_confirmed": m.user_confirmed,
        "metadata": dict(m.metadata),
        "version": m.version,
        "updated_at": _t(m.updated_at),
    }


def memory_from_dict(d: Mapping[str, Any]) -> Memory:
    try:
        fact = d.get("fact")
        created = _parse_t(d["created_at"])
        assert created is not None
        return Memory(
            id=d["id"],
            namespace=d["namespace"],
            kind=Kind(d["kind"]),
            tier=Tier(d["tier"]),
            status=Status(d["status"]),
            text=d["text"],
            fact=None if fact is None else Fact(*fact),
            key=d.get("key"),
            importance=float(d["importance"]),
            confidence=float(d["confidence"]),
            sources=frozenset(d.get("sources", ())),
            created_at=created,
            last_accessed_at=_parse_t(d.get("last_accessed_at")),
            access_count=int(d.get("access_count", 0)),
            recent_accesses=tuple(
                t for t in (_parse_t(x) for x in d.get("recent_accesses", ())) if t is not None
            ),
            valid_from=_parse_t(d.get("valid_from")),
            valid_to=_parse_t(d.get("valid_to")),
            superseded_by=d.get("superseded_by"),
            consolidated_into=d.get("consolidated_into"),
            derived_from=frozenset(d.get("derived_from", ())),
            entities=frozenset(d.get("entities", ())),
            pinned=bool(d.get("pinned", False)),
            retention_exempt=bool(d.get("retention_exempt", False)),
            user_confirmed=bool(d.get("user_confirmed", False)),
            metadata=dict(d.get("metadata") or {}),
            version=int(d.get("version", 1)),
            updated_at=_parse_t(d.get("updated_at")),
        )
    except (KeyError, TypeError, ValueError, AssertionError) as e:
        if isinstance(e, InvalidInput):
            raise
        raise InvalidInput(f"not a valid memory record ({type(e).__name__}: {e})") from None


_KINDS = {k.value: k for k in Kind}
_TIERS = {t.value: t for t in Tier}
_STATUSES = {s.value: s for s in Status}
_SET = object.__setattr__


def _stored_t(v: str) -> datetime:
    t = datetime.fromisoformat(v)
    return t if t.tzinfo is UTC else utc(t)


def stored_memory(d: Mapping[str, Any]) -> Memory:
    """Decode a record a store wrote itself: `memory_to_dict` of a Memory that was validated
    when it was built. Recall decodes dozens of records per query and re-validating every
    field was most of that cost, so this builds the Memory directly; it equals what
    `memory_from_dict` gives for every such record (a property test holds the two together).
    A record that does not decode still raises InvalidInput. Input from outside the stores
    (import) goes through `memory_from_dict`, which validates everything."""
    try:
        created = _stored_t(d["created_at"])
        fact = d.get("fact")
        last = d.get("last_accessed_at")
        valid_from = d.get("valid_from")
        valid_to = d.get("valid_to")
        updated = d.get("updated_at")
        values = (
            ("id", d["id"]),
            ("namespace", d["namespace"]),
            ("kind", _KINDS[d["kind"]]),
            ("tier", _TIERS[d["tier"]]),
            ("text", d["text"]),
            ("created_at", created),
            ("status", _STATUSES[d["status"]]),
            ("fact", None if fact is None else Fact(*fact)),
            ("key", d.get("key")),
            ("importance", float(d["importance"])),
            ("confidence", float(d["confidence"])),
            ("sources", frozenset(d.get("sources", ()))),
            ("last_accessed_at", created if last is None else _stored_t(last)),
            ("access_count", int(d.get("access_count", 0))),
            ("recent_accesses", tuple(_stored_t(t) for t in d.get("recent_accesses", ()))),
            ("valid_from", created if valid_from is None else _stored_t(valid_from)),
            ("valid_to", None if valid_to is None else _stored_t(valid_to)),
            ("superseded_by", d.get("superseded_by")),
            ("consolidated_into", d.get("consolidated_into")),
            ("derived_from", frozenset(d.get("derived_from", ()))),
            ("entities", frozenset(d.get("entities", ()))),
            ("pinned", bool(d.get("pinned", False))),
            ("retention_exempt", bool(d.get("retention_exempt", False))),
            ("user_confirmed", bool(d.get("user_confirmed", False))),
            ("metadata", dict(d.get("metadata") or {})),
            ("version", int(d.get("version", 1))),
            ("updated_at", created if updated is None else _stored_t(updated)),
        )
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, InvalidInput):
            raise
        raise InvalidInput(f"not a valid memory record ({type(e).__name__}: {e})") from None
    m = object.__new__(Memory)
    for name, value in values:
        _SET(m, name, value)
    return m


# Records a store keeps decoded by default: a few KB each with the record text, so tens of
# MB for 10,000, enough for a 10k-memory agent's hot set.
DECODED_RECORDS = 10_000


class DecodedRecords:
    """Stored record text -> Memory, remembering the last `size` decodes.

    Recall reads dozens of records per query and decoding them (JSON, times, the Memory)
    was its largest cost after the vector search; an agent keeps recalling much the same
    memories, so the same record texts come back again and again. Keyed by the exact
    text a store returned: a record that changed in any way (a touch, a status change,
    another process's write, a restore) is a different text and is decoded afresh, so a
    hit can never be stale and nothing has to be invalidated. The store still reads the
    record on every call; only the decode is saved. Memories are immutable except their
    metadata mapping, which a caller could mutate, so a record with metadata is decoded
    every time (each caller gets its own copy, as before). Oldest entries leave first."""

    def __init__(self, size: int = DECODED_RECORDS) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidInput(f"decoded-record cache size must be an int >= 0, got {size!r}")
        self.size = size
        # an OrderedDict drops its oldest entry in O(1); a dict's next(iter()) walks over
        # the slots its earlier deletions left at its front (at 10,000 entries an insert
        # cost 3.3 us that way, 0.4 us this way)
        self._memo: OrderedDict[str | bytes, Memory] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._memo)

    def decode(self, raw: str | bytes) -> Memory:
        """The Memory `raw` encodes; raises InvalidInput (from JSON too) when it does not
        decode, as `stored_memory` does."""
        hit = self._memo.get(raw)
        if hit is not None:
            return hit
        try:
            m = stored_memory(json.loads(raw))
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
            if isinstance(e, InvalidInput):
                raise
            raise InvalidInput(f"not a valid memory record ({e})") from None
        self.remember(raw, m)
        return m

    def remember(self, raw: str | bytes, m: Memory) -> None:
        """Note that `raw` decodes to `m` (`raw` is `m` as a store encoded it): a store that
        has just written a record keeps it decoded, so its first recall is a hit too."""
        if self.size and not m.metadata:
            with self._lock:
                memo = self._memo
                memo[raw] = m
                while len(memo) > self.size:
                    memo.popitem(last=False)

    def forget(self, namespace: str, ids: Iterable[str] | None = None) -> None:
        """Drop the decoded records of `ids` (None: every record) of `namespace`, so a
        deleted memory's text does not stay in this process until the cache turns over."""
        wanted = None if ids is None else set(ids)
        with self._lock:
            gone = [
                raw for raw, m in self._memo.items()
                if m.namespace == namespace and (wanted is None or m.id in wanted)
            ]
            for raw in gone:
                del self._memo[raw]

    def clear(self) -> None:
        with self._lock:
            self._memo.clear()


def edge_to_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "type": e.type.value, "weight": e.weight}


def edge_from_dict(d: Mapping[str, Any]) -> Edge:
    try:
        return Edge(d["src"], d["dst"], EdgeType(d["type"]), float(d.get("weight", 1.0)))
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, InvalidInput):
            raise
        raise InvalidInput(f"not a valid edge record ({type(e).__name__}: {e})") from None
