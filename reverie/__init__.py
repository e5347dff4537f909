"""reverie: long-term memory for LLM agents that forgets on purpose.

The names a user needs to get going live here: `open_engine()` opens an engine on the
embedded default (SQLite, embedded Chroma, a local embedding model), `MemoryEngine` is the
one facade over the memory lifecycle, and `Policy` holds every tunable number. Importing
this package is cheap: backends, the embedding model and the framework faces load only when
used (`reverie.adapters.langchain`, `reverie.adapters.langgraph`,
`reverie.adapters.llamaindex`, `reverie.adapters.mcp`).

Python imports this module before any subpackage, so it must stay as light as
`reverie.core` itself (numpy only): `open_engine` and `default_data_dir` load
`reverie.integrations` on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reverie.core import (
    DEFAULT_POLICY,
    BackendUnavailable,
    ConflictError,
    DimensionMismatch,
    Edge,
    EdgeType,
    EmptyText,
    Fact,
    InvalidInput,
    InvalidNamespace,
    InvalidPolicy,
    InvalidVector,
    Kind,
    LockBusy,
    ManualClock,
    Memory,
    MissingExtra,
    NotFound,
    Policy,
    ReverieError,
    SchemaTooNew,
    Status,
    StoreCorrupt,
    SynthesisFailed,
    SystemClock,
    TextTooLong,
    Tier,
    UnknownKind,
)
from reverie.core.engine import Hit, MemoryEngine, Observation, RecallResult
from reverie.core.errors import (
    AuthFailed,
    DeadlineExceeded,
    NotSuperseded,
    PermissionDenied,
    StorageFull,
    WrongServerKind,
)

__all__ = [
    "DEFAULT_POLICY",
    "AuthFailed",
    "BackendUnavailable",
    "ConflictError",
    "DeadlineExceeded",
    "DimensionMismatch",
    "Edge",
    "EdgeType",
    "EmptyText",
    "Fact",
    "Hit",
    "InvalidInput",
    "InvalidNamespace",
    "InvalidPolicy",
    "InvalidVector",
    "Kind",
    "LockBusy",
    "ManualClock",
    "Memory",
    "MemoryEngine",
    "MissingExtra",
    "NotFound",
    "NotSuperseded",
    "Observation",
    "PermissionDenied",
    "Policy",
    "RecallResult",
    "ReverieError",
    "SchemaTooNew",
    "Status",
    "StorageFull",
    "StoreCorrupt",
    "SynthesisFailed",
    "SystemClock",
    "TextTooLong",
    "Tier",
    "UnknownKind",
    "WrongServerKind",
    "default_data_dir",
    "open_engine",
]


if TYPE_CHECKING:  # mypy sees the real names; at run time they load on first use
    from reverie.integrations.factory import default_data_dir, open_engine

    __version__: str
else:

    def __getattr__(name: str) -> Any:
        if name in ("default_data_dir", "open_engine"):
            return getattr(importlib.import_module("reverie.integrations.factory"), name)
        if name == "__version__":  # the installed distribution's, so it has one home
            from importlib.metadata import version

            return version("reverie")
        raise AttributeError(f"module 'reverie' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(__all__)
