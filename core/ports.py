"""The ports core needs from the outside world, as Protocols.

Integrations implement them (SQLite, Redis, Chroma, embedders, LLMs); core never
imports an implementation. The contract tests in tests/contract run one suite
against every implementation, so the semantics written here are the real spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .errors import InvalidInput
from .models import Edge, EdgeType, Memory, Status, Tier, validate_namespace

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class WriteBatch:
    """Everything one logical change writes, applied atomically or not at all.

    Each memory in `puts` is a compare-and-set: version 1 means "must not exist yet";
    version n means "the stored version must be n - 1". A mismatch raises
    `ConflictError` and nothing in the batch is applied.
    A namespace holds at most one *active free-text* memory (key None) per content hash:
    a put that would create a second raises `ConflictError`, so two processes observing
    the same text at once cannot both create it (the loser folds into the winner).
    Likewise at most one *active* version per fact key: two writers creating the first
    unit of a key at once cannot both succeed (the loser re-reads and supersedes or folds).
    `edges` are upserted (an existing (src, dst, type) keeps the higher weight).
    `restore=True` (import only) writes the puts as given, without the version check.
    """

    namespace: str
    puts: tuple[Memory, ...] = ()
    edges: tuple[Edge, ...] = ()
    remove_edges: tuple[tuple[str, str, EdgeType], ...] = ()
    restore: bool = False

    def checked(self) -> tuple[str, tuple[tuple[str, str, str], ...]]:
        """The shape checks every store makes before any I/O: a valid namespace, puts
        that are memories of that namespace, edges that are `Edge`s, known removal
        types. Returns the namespace and the removals with their types as plain text."""
        ns = validate_namespace(self.namespace)
        for m in self.puts:
            if not isinstance(m, Memory):
                raise InvalidInput(f"batch puts must be Memory objects, got {m!r}")
            if m.namespace != ns:
                raise InvalidInput(
                    f"memory {m.id!r} belongs to namespace {m.namespace!r} but the batch is "
                    f"for {ns!r}; a batch writes one namespace only"
                )
        for e in self.edges:
            if not isinstance(e, Edge):
                raise InvalidInput(f"batch edges must be Edge objects, got {e!r}")
        try:
            removals = tuple((src, dst, EdgeType(t).value) for src, dst, t in self.remove_edges)
        except ValueError as e:
            raise InvalidInput(f"remove_edges holds an unknown edge type: {e}") from None
        return ns, removals


@dataclass(frozen=True, slots=True)
class LexicalHit:
    id: str
    score: float  # BM25, higher is better (sign already flipped where the backend is negative)


@dataclass(frozen=True, slots=True)
class VectorHit:
    id: str
    similarity: float  # cosine similarity in [-1, 1]


@dataclass(frozen=True, slots=True)
class VectorItem:
    id: str
    vector: Vector
    metadata: Mapping[str, str | int | float | bool] = field(default_factory=dict)


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime: ...


@runtime_checkable
class RecordStore(Protocol):
    """System of record for memories and edges, partitioned by namespace.

    A store may also have optional capabilities, each declared below as its own small
    Protocol (`TouchesMany`, `KeepsEmbeddings`, `ReadsForRecall`, `KnowsCreatedTimes`,
    `Networked`); core resolves them once per engine (core/capabilities.py) and falls
    back when they are absent.
    """

    def commit(self, batch: WriteBatch) -> None: ...

    def get(self, namespace: str, memory_id: str) -> Memory | None: ...

    def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]: ...

    def find_by_hash(self, namespace: str, content_hash: str) -> Memory | None:
        """The active free-text memory (key None) whose normalised text hashes to
        `content_hash` (`core.text.content_hash`), if any."""
        ...

    def find_by_key(self, namespace: str, key: str) -> list[Memory]:
        """Every version of a fact key (any status), oldest `valid_from` first."""
        ...

    def find_by_entity(self, namespace: str, entity: str, limit: int) -> list[Memory]:
        """The most recent active memories that name `entity`, newest first."""
        ...

    def scan(
        self,
        namespace: str,
        *,
        statuses: Iterable[Status] | None = None,
        tiers: Iterable[Tier] | None = None,
        batch_size: int = 500,
    ) -> Iterator[Memory]:
        """Every memory of a namespace (optionally filtered), in a stable order."""
        ...

    def count(self, namespace: str) -> dict[str, int]:
        """Counts keyed 'status:<status>', 'tier:<tier>' (active only), 'total', 'edges'."""
        ...

    def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        """Atomic access reinforcement: last_accessed_at = at, access_count += 1, append `at`
        to the recent-access window (keeping the newest `window`), version += 1. Concurrent
        touches never lose a count. Unknown ids are ignored."""
        ...

    def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        """Every edge with `src` or `dst` among `ids`."""
        ...

    def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]: ...

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        """Hard delete (privacy): the memories, their edges and their lexical entries."""
        ...

    def delete_namespace(self, namespace: str) -> int: ...

    def namespaces(self) -> list[str]: ...

    def get_meta(self, name: str) -> str | None: ...

    def set_meta(self, name: str, value: str) -> None: ...

    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> AbstractContextManager[str]:
        """Maintenance lock of a namespace; raises `LockBusy` when held by someone else."""
        ...

    def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None: ...

    def journal_put(self, namespace: str, fingerprint: str, entry: Mapping[str, Any]) -> None: ...

    def journal_delete(self, namespace: str, fingerprints: Iterable[str]) -> None:
        """Drop entries that finished their job (unknown ones are fine): a journal that
        kept every finished cycle's entries would grow for as long as the store lives."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over the active texts of a namespace; kept in step with the record store."""

    def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Derived data: it can always be rebuilt from the record store (`reverie repair`).

    An index may also have optional capabilities, each declared below as its own small
    Protocol (`HandsOutVectors`, `FindsNeighbors`, `SendsQueries`, `QueriesMany`,
    `QueuesWrites`, `Networked`); core resolves them once per engine
    (core/capabilities.py) and falls back when they are absent.
    """

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None: ...

    def query(
        self,
        namespace: str,
        vector: Vector,
        k: int,
        where: Mapping[str, str | int | float | bool] | None = None,
    ) -> list[VectorHit]: ...

    def similarities(self, namespace: str, vector: Vector, ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of `vector` to each of `ids` that is indexed (others absent):
        lexical candidates outside the dense top-k still get their true similarity."""
        ...

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None: ...

    def ids(self, namespace: str) -> set[str]: ...

    def count(self, namespace: str) -> int: ...

    def drop_namespace(self, namespace: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vector: ...


@runtime_checkable
class Synthesizer(Protocol):
    """The LLM port: a prompt and a JSON schema in, parsed JSON out.

    Implementations ask their model for JSON (JSON mode or function calling, never
    OpenAI's `json_schema` response format, which local servers reject) and return the
    parsed object. Anything unusable (not JSON, truncated, an HTTP error, a timeout)
    raises `SynthesisFailed`; checking the payload against the schema and retrying with
    the error shown to the model is the caller's job (core consolidation), so every
    implementation gets the same validation and retry."""

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]: ...


@runtime_checkable
class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


# ---------------------------------------------------------------------------- capabilities
# Optional features of a store or an index. None is required: the engine checks each once,
# when it is built, and takes a slower path without it (core/capabilities.py).


@runtime_checkable
class Networked(Protocol):
    """`remote = True`: calls cross a network (RedisStore; ChromaIndex on a server). A
    remote store makes the background reinforcement linger
    (`Policy.background.reinforce_linger_shared_seconds`) to batch more touches; a remote index
    makes recall read records while its query is on the wire."""

    remote: bool


@runtime_checkable
class TouchesMany(Protocol):
    """`touch` of each event in order, all in one atomic write (SQLiteStore): the
    background reinforcement writes a burst of recalls' touches together."""

    def touch_many(
        self, namespace: str, events: Sequence[tuple[Sequence[str], datetime]], window: int
    ) -> None: ...


@runtime_checkable
class KeepsEmbeddings(Protocol):
    """The embedding kept beside each record (only while the record exists, deleted with
    it), so recall scores lexical-only candidates and `repair` rebuilds the vector tier
    without asking the index or the model. A store may have either method alone."""

    def put_embeddings(self, namespace: str, items: Mapping[str, Vector]) -> int: ...

    def embeddings(self, namespace: str, ids: Iterable[str]) -> dict[str, Vector]: ...


class RecallReadsResult(Protocol):
    """What `ReadsForRecall.recall_reads` returns."""

    @property
    def memories(self) -> Mapping[str, Memory]: ...

    @property
    def embeddings(self) -> Mapping[str, Vector]: ...

    @property
    def degrees(self) -> Mapping[str, int]: ...


@runtime_checkable
class ReadsForRecall(Protocol):
    """`get_many`, and if asked the kept `embeddings` and the `degrees`, in one round
    trip (RedisStore): recall on a networked store reads its candidates once, not thrice."""

    def recall_reads(
        self,
        namespace: str,
        ids: Sequence[str],
        *,
        embeddings: bool = False,
        degrees: bool = False,
    ) -> RecallReadsResult: ...


class KeptSearch(NamedTuple):
    """A lexical search's hits, with their kept embeddings (a hit without one absent)."""

    hits: list[LexicalHit]
    embeddings: dict[str, Vector]


@runtime_checkable
class SearchesWithKept(Protocol):
    """A lexical index inside the record store (SQLiteStore): the rows its hits' ids are
    read from hold their kept embeddings too, so recall gets them in the same read
    instead of a second one."""

    def search_kept(self, namespace: str, query: str, k: int) -> KeptSearch: ...


@runtime_checkable
class KnowsWriteOrder(Protocol):
    """The memories written just before and after one in its namespace (any status), in
    the order they were first written: a conversation's neighbouring turns (both tiers
    number every new record of a namespace in order)."""

    def written_around(self, namespace: str, memory_id: str, n: int) -> list[str]: ...


@runtime_checkable
class KnowsCreatedTimes(Protocol):
    """When each record was created, without decoding records (conversation context)."""

    def created_times(self, namespace: str, ids: Iterable[str]) -> dict[str, datetime]: ...


@runtime_checkable
class KnowsHashes(Protocol):
    """Which of many texts are held already, in one read: bulk ingest embeds only the
    others, without one round trip per text (SQLiteStore)."""

    def stored_hashes(self, namespace: str, digests: Iterable[str]) -> set[str]: ...


@runtime_checkable
class BatchesWrites(Protocol):
    """Writes grouped in one transaction, each still atomic on its own (a savepoint), reads
    seeing the writes before them: bulk ingest commits a chunk once (SQLiteStore)."""

    def together(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class KnowsRecentWrites(Protocol):
    """When the namespace was last written, and its newest active memories, without a
    scan: what `maintenance_due()` needs (the idle and near-duplicate triggers)."""

    def last_write(self, namespace: str) -> datetime | None: ...

    def newest_active(self, namespace: str, limit: int) -> list[Memory]: ...


@runtime_checkable
class HandsOutVectors(Protocol):
    """The index's stored embeddings, so the REM cycle need not re-embed what it
    clusters, and `repair` can fill in the embeddings kept beside the records."""

    def stored_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vector]: ...


@runtime_checkable
class FindsNeighbors(Protocol):
    """The k nearest indexed neighbours of each indexed id (itself excluded, best first,
    unknown ids absent), approximate (HNSW, ~log n each), so clustering is not an exact
    n^2 k-NN."""

    def neighbors(
        self, namespace: str, ids: Sequence[str], k: int
    ) -> Mapping[str, Sequence[VectorHit]]: ...


class SentQuery(Protocol):
    """A query already on the wire: `result()` reads its hits (as `query` gives them)
    once; `cancel()` abandons it without leaving a connection half-read."""

    def result(self) -> list[VectorHit]: ...

    def cancel(self) -> None: ...


@runtime_checkable
class SendsQueries(Protocol):
    """Send a query now and read its answer later, so recall does its lexical side while
    the server computes, with no thread between (ChromaIndex on a server). None means
    "call `query`"."""

    def begin_query(self, namespace: str, vector: Vector, k: int) -> SentQuery | None: ...


class QueriesMany(Protocol):
    """Several unfiltered queries in one call, each answered as `query` answers it. A
    call into the index has a fixed cost well above one more query in it (embedded
    Chroma: ~2 ms for one query at 10k, ~0.6 ms each for 50 in one call), so a bulk
    ingest asks for a whole chunk's version candidates at once."""

    def query_many(
        self, namespace: str, vectors: Sequence[Vector], k: int
    ) -> list[list[VectorHit]]: ...


@runtime_checkable
class QueuesWrites(Protocol):
    """Writes queued in front of the index, not yet in it (the shared tier's vector
    outbox), shown by `stats`."""

    def pending(self, namespace: str) -> int: ...


@runtime_checkable
class ErasesResidue(Protocol):
    """Deleted bytes leave the store's own files and logs too (SQLiteStore: the WAL is
    checkpointed and truncated; RedisStore: with `compact`, the AOF is rewritten and an
    RDB snapshot retaken). Returns what was done, for the caller's report."""

    def erase_residue(self, *, compact: bool = False) -> Mapping[str, Any]: ...


@runtime_checkable
class PurgesLog(Protocol):
    """Deleted vectors leave the index's write log too (embedded Chroma keeps every
    write in its `embeddings_queue` until its segments persist). Returns the number of
    log entries removed."""

    def purge_log(self, namespace: str, ids: Sequence[str]) -> int: ...


@runtime_checkable
class CompactsIndex(Protocol):
    """An index whose files keep room for deleted vectors (embedded Chroma's HNSW slots)
    rebuilds a namespace from its live vectors once at least `min_deleted_fraction` of
    that room is for deleted ones, without losing a vector to a crash midway. Returns
    the slots given back (0: nothing rebuilt)."""

    def compact(self, namespace: str, min_deleted_fraction: float) -> int: ...
