"""The domain records: `Memory` and `Edge`, immutable; a change is a new version.

Records validate themselves so that no store, adapter or import path can hold a
memory that breaks the invariants the scoring and lifecycle rely on.
"""

from __future__ import annotations

import dataclasses
import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .clock import utc
from .errors import InvalidInput, InvalidNamespace, UnknownKind


class Kind(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class Tier(StrEnum):
    TRACE = "trace"
    UNIT = "unit"
    CRYSTAL = "crystal"
    SYNTHESIS = "synthesis"


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    CONSOLIDATED = "consolidated"
    ARCHIVED = "archived"


class EdgeType(StrEnum):
    ENTITY = "entity"
    CAUSAL = "causal"
    TEMPORAL = "temporal"
    DERIVED_FROM = "derived_from"
    SUPERSEDES = "supersedes"
    UPDATES = "updates"  # src is a newer version of dst, which stays current but outranked


# Namespaces become key prefixes (SQLite rows, Redis hash tags, Chroma collections):
# letters, digits and `._-@+=/` only, so no namespace can forge another's prefix.
_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=/-]{0,127}$")


def validate_namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE_RE.match(namespace) or "//" in namespace:
        raise InvalidNamespace(
            f"invalid namespace {namespace!r}: use 1-128 characters from letters, digits and "
            "'._-@+=/', starting with a letter or digit (e.g. 'user/alice' or 'agent-7')"
        )
    if namespace.endswith("/"):
        raise InvalidNamespace(f"invalid namespace {namespace!r}: it must not end with '/'")
    return namespace


def parse_kind(kind: object) -> Kind:
    if isinstance(kind, str) and kind in Kind._value2member_map_:
        return Kind(kind)
    raise UnknownKind(f"unknown kind {kind!r}: use one of {', '.join(k.value for k in Kind)}")


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class Fact:
    subject: str
    predicate: str
    object: str

    def __post_init__(self) -> None:
        for name in ("subject", "predicate", "object"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise InvalidInput(f"fact {name} must be non-empty text, got {v!r}")


def check_unit(name: str, v: object) -> float:
    """A score must be a finite number in [0, 1]; anything else is the caller's bug."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise InvalidInput(f"{name} must be a number in [0, 1], got {v!r}")
    if not 0.0 <= v <= 1.0:
        raise InvalidInput(f"{name} must be within [0, 1], got {v!r}")
    return float(v)


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory, one version. `version` starts at 1 and grows by one per write (CAS)."""

    id: str
    namespace: str
    kind: Kind
    tier: Tier
    text: str
    created_at: datetime
    status: Status = Status.ACTIVE
    fact: Fact | None = None
    key: str | None = None
    importance: float = 0.5
    confidence: float = 0.5
    sources: frozenset[str] = frozenset()
    last_accessed_at: datetime | None = None
    access_count: int = 0
    recent_accesses: tuple[datetime, ...] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    consolidated_into: str | None = None
    derived_from: frozenset[str] = frozenset()
    entities: frozenset[str] = frozenset()
    pinned: bool = False
    retention_exempt: bool = False
    user_confirmed: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    version: int = 1
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        validate_namespace(self.namespace)
        if not isinstance(self.id, str) or not self.id:
            raise InvalidInput("memory id must be non-empty text")
        set_(self, "kind", parse_kind(self.kind))
        try:
            set_(self, "tier", Tier(self.tier))
            set_(self, "status", Status(self.status))
        except ValueError as e:
            raise InvalidInput(str(e)) from None
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidInput("memory text must be non-empty")
        check_unit("importance", self.importance)
        check_unit("confidence", self.confidence)
        if self.access_count < 0 or self.version < 1:
            raise InvalidInput("access_count must be >= 0 and version >= 1")
        created = utc(self.created_at)
        set_(self, "created_at", created)
        set_(self, "last_accessed_at", utc(self.last_accessed_at or created))
        set_(self, "valid_from", utc(self.valid_from or created))
        set_(self, "updated_at", utc(self.updated_at or created))
        if self.valid_to is not None:
            set_(self, "valid_to", utc(self.valid_to))
        set_(self, "recent_accesses", tuple(utc(t) for t in self.recent_accesses))
        set_(self, "sources", frozenset(self.sources))
        set_(self, "derived_from", frozenset(self.derived_from))
        set_(self, "entities", frozenset(self.entities))
        set_(self, "metadata", dict(self.metadata))

    # The validated fields are never None after __post_init__; these give typed access.
    @property
    def last_access(self) -> datetime:
        assert self.last_accessed_at is not None
        return self.last_accessed_at

    @property
    def valid_since(self) -> datetime:
        assert self.valid_from is not None
        return self.valid_from

    @property
    def is_active(self) -> bool:
        return self.status is Status.ACTIVE

    def evolve(self, **changes: Any) -> Memory:
        """The next version of this memory (version + 1), validated again."""
        changes.setdefault("version", self.version + 1)
        return dataclasses.replace(self, **changes)

    def reinforced(self, at: datetime, window: int) -> Memory:
        """The next version with one more access at `at` (kept among the last `window`).

        Every recall reinforces its hits, so this runs for each of them: it copies the
        fields instead of re-validating them through `evolve`, which only the three
        changed fields would need (and they are valid by construction)."""
        at = utc(at)
        new = object.__new__(Memory)
        for name in _FIELD_NAMES:
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "last_accessed_at", max(self.last_access, at))
        object.__setattr__(new, "access_count", self.access_count + 1)
        object.__setattr__(new, "recent_accesses", (*self.recent_accesses, at)[-window:])
        object.__setattr__(new, "version", self.version + 1)
        object.__setattr__(new, "metadata", dict(self.metadata))  # never shared, as evolve
        return new

    def valid_at(self, when: datetime) -> bool:
        """Was this memory what was believed at `when`?"""
        return self.created_at <= when and (self.valid_to is None or when < self.valid_to)


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Memory))


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    type: EdgeType
    weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", EdgeType(self.type))
        if self.src == self.dst:
            raise InvalidInput("an edge must join two different memories")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise InvalidInput(f"edge weight must be finite and >= 0, got {self.weight!r}")


def fact_key(kind: Kind, subject: str, predicate: str) -> str:
    """The stable key of a fact: case, spacing and punctuation do not split a fact in two."""
    return f"{kind.value}|{normalize_phrase(subject)}|{normalize_phrase(predicate)}"


def normalize_phrase(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.casefold()).split())
