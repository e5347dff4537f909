"""reverie.core: the memory lifecycle, with no I/O and no framework imports (numpy only)."""

from .clock import ManualClock, SystemClock
from .errors import (
    BackendUnavailable,
    ConflictError,
    DimensionMismatch,
    EmptyText,
    InvalidInput,
    InvalidNamespace,
    InvalidPolicy,
    InvalidVector,
    LockBusy,
    MissingExtra,
    NotFound,
    ReverieError,
    SchemaTooNew,
    StoreCorrupt,
    TextTooLong,
    UnknownKind,
)
from .models import Edge, EdgeType, Fact, Kind, Memory, Status, Tier
from .policy import DEFAULT_POLICY, Policy

__all__ = [
    "DEFAULT_POLICY",
    "BackendUnavailable",
    "ConflictError",
    "DimensionMismatch",
    "Edge",
    "EdgeType",
    "EmptyText",
    "Fact",
    "InvalidInput",
    "InvalidNamespace",
    "InvalidPolicy",
    "InvalidVector",
    "Kind",
    "LockBusy",
    "ManualClock",
    "Memory",
    "MissingExtra",
    "NotFound",
    "Policy",
    "ReverieError",
    "SchemaTooNew",
    "Status",
    "StoreCorrupt",
    "SystemClock",
    "TextTooLong",
    "Tier",
    "UnknownKind",
]
