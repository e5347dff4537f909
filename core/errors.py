"""Typed errors. Every message says what went wrong and what to do about it.

All inherit from `ReverieError`, so a caller can catch the family; the subclasses
let callers tell bad input (their bug) from a backend outage (retry) from a
conflict (someone else wrote first).
"""

from __future__ import annotations


class ReverieError(Exception):
    """Base of every error reverie raises on purpose."""


class InvalidInput(ReverieError, ValueError):
    """The caller passed something reverie will not store; nothing was written."""


class EmptyText(InvalidInput):
    pass


class TextTooLong(InvalidInput):
    pass


class InvalidNamespace(InvalidInput):
    pass


class UnknownKind(InvalidInput):
    pass


class InvalidVector(InvalidInput):
    """NaN/inf or a vector of the wrong dimension."""


class InvalidPolicy(InvalidInput):
    pass


class DimensionMismatch(ReverieError):
    """The embedder's dimension differs from the one the store was built with."""


class NotFound(ReverieError, KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else "not found"


class ConflictError(ReverieError):
    """A compare-and-set write lost a race; re-read and retry."""


class StoreCorrupt(ReverieError):
    """The store file is damaged or is not a reverie store."""


class SchemaTooNew(ReverieError):
    """The store was written by a newer reverie; upgrade reverie to open it."""


class BackendUnavailable(ReverieError):
    """A backing service (Redis, a Chroma server) cannot be reached."""


class LockBusy(ReverieError):
    """Another holder has the namespace's maintenance lock."""


class SynthesisFailed(ReverieError):
    """The LLM behind a `Synthesizer` gave no usable answer (unparseable or invalid JSON,
    a timeout, an HTTP error). Consolidation retries with the error shown to the model,
    then falls back to the extractive synthesizer; the cycle's report says which."""


class MissingExtra(ReverieError, ImportError):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(
            f"{what} needs the '{extra}' extra: pip install 'reverie[{extra}]'"
        )
        self.extra = extra


class DeadlineExceeded(BackendUnavailable):
    """A backing service did not answer within its `Policy.deadlines` number (a stopped
    or overloaded server, a lock held elsewhere): nothing was waited for beyond it.
    Retrying at once waits as long again; retry later, or raise the deadline."""


class AuthFailed(BackendUnavailable):
    """A backing service refused the credentials (a wrong or missing Redis password, a
    Chroma token the server rejects). Retrying does not help: fix the password or token."""


class PermissionDenied(BackendUnavailable):
    """A backing service accepted the credentials but the user may not run what reverie
    needs (a Redis ACL user without a command or key pattern): grant it, or use another user."""


class StorageFull(BackendUnavailable):
    """The disk (or the store's size limit) is full: the write was not applied and the
    store stays readable. Free space, then retry."""


class WrongServerKind(InvalidInput):
    """The URL names a kind of server that is not the one answering there (a Redis Cluster
    URL pointed at a plain Redis server); change the URL's scheme."""


class NotSuperseded(InvalidInput):
    """`restore` was asked to bring back a memory that is not a superseded version (it is
    current, consolidated or archived): nothing was written. Restore the superseded
    version itself (see `history(memory_id=...)`)."""
