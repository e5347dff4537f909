"""Which optional store and index features an engine has, resolved once when it is built.

The ports (core/ports.py) declare each optional feature as a small Protocol. Probing
for them on every call would scatter `getattr` over the hot paths and hide which
features a deployment really uses; here they are looked up once and held as bound
functions (or None), so a part of the engine asks `caps.recall_reads is not None`.

A feature counts as present when the attribute is really there and callable, not by
`isinstance` on the object: a wrapper that forwards to another index (the shared
tier's vector outbox) has exactly the features of what it wraps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast

from .models import Memory
from .ports import (
    BatchesWrites,
    CompactsIndex,
    ErasesResidue,
    FindsNeighbors,
    HandsOutVectors,
    KeepsEmbeddings,
    KeptSearch,
    KnowsCreatedTimes,
    KnowsHashes,
    KnowsRecentWrites,
    KnowsWriteOrder,
    LexicalIndex,
    PurgesLog,
    QueriesMany,
    QueuesWrites,
    ReadsForRecall,
    RecallReadsResult,
    RecordStore,
    SearchesWithKept,
    SendsQueries,
    SentQuery,
    TouchesMany,
    Vector,
    VectorHit,
    VectorIndex,
)

TouchMany = Callable[[str, Sequence[tuple[Sequence[str], datetime]], int], None]
PutEmbeddings = Callable[[str, Mapping[str, Vector]], int]
GetEmbeddings = Callable[[str, Iterable[str]], dict[str, Vector]]


class RecallReads(Protocol):
    def __call__(
        self, namespace: str, ids: Sequence[str], *, embeddings: bool = False,
        degrees: bool = False,
    ) -> RecallReadsResult: ...


CreatedTimes = Callable[[str, Iterable[str]], dict[str, datetime]]
StoredVectors = Callable[[str, Sequence[str]], dict[str, Vector]]
Neighbors = Callable[[str, Sequence[str], int], Mapping[str, Sequence[VectorHit]]]
BeginQuery = Callable[[str, Vector, int], SentQuery | None]
QueryMany = Callable[[str, Sequence[Vector], int], list[list[VectorHit]]]
Pending = Callable[[str], int]
EraseResidue = Callable[[bool], Mapping[str, object]]
PurgeLog = Callable[[str, Sequence[str]], int]
CompactIndex = Callable[[str, float], int]
LastWrite = Callable[[str], datetime | None]
Together = Callable[[], AbstractContextManager[None]]
StoredHashes = Callable[[str, Iterable[str]], set[str]]
NewestActive = Callable[[str, int], list[Memory]]
SearchKept = Callable[[str, str, int], KeptSearch]
WrittenAround = Callable[[str, str, int], list[str]]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The optional features of one store and one vector index (None: absent)."""

    store_remote: bool = False  # `Networked` store: writes cross a network
    index_remote: bool = False  # `Networked` index: a query waits on a server
    touch_many: TouchMany | None = None  # TouchesMany
    put_embeddings: PutEmbeddings | None = None  # KeepsEmbeddings
    embeddings: GetEmbeddings | None = None  # KeepsEmbeddings
    recall_reads: RecallReads | None = None  # ReadsForRecall
    created_times: CreatedTimes | None = None  # KnowsCreatedTimes
    stored_vectors: StoredVectors | None = None  # HandsOutVectors
    neighbors: Neighbors | None = None  # FindsNeighbors
    begin_query: BeginQuery | None = None  # SendsQueries
    query_many: QueryMany | None = None  # QueriesMany
    pending: Pending | None = None  # QueuesWrites
    erase_residue: EraseResidue | None = None  # ErasesResidue (store)
    purge_log: PurgeLog | None = None  # PurgesLog (index)
    compact_index: CompactIndex | None = None  # CompactsIndex (index)
    last_write: LastWrite | None = None  # KnowsRecentWrites (store)
    newest_active: NewestActive | None = None  # KnowsRecentWrites (store)
    together: Together | None = None  # BatchesWrites (store)
    stored_hashes: StoredHashes | None = None  # KnowsHashes (store)
    search_kept: SearchKept | None = None  # SearchesWithKept (the store as lexical index)
    written_around: WrittenAround | None = None  # KnowsWriteOrder (store)


def _has(obj: object, name: str) -> bool:
    """`obj.name` is there and callable (a forwarding wrapper answers for what it wraps)."""
    return callable(getattr(obj, name, None))


def resolve(
    store: RecordStore, vectors: VectorIndex, lexical: LexicalIndex | None = None
) -> Capabilities:
    """Look each optional feature up once (see core/ports.py for what each one means).
    `search_kept` counts only where the lexical index is the store itself: the
    embeddings it hands out must be the store's.

    Each present feature is held as a function that calls the method on the object as
    usual, so the object keeps the last word on what runs (a wrapper forwarding to the
    index it wraps, a method replaced on the instance)."""
    kept = cast(KeepsEmbeddings, store)
    reads = cast(ReadsForRecall, store)
    index_vectors = cast(HandsOutVectors, vectors)
    near = cast(FindsNeighbors, vectors)
    sender = cast(SendsQueries, vectors)
    queue = cast(QueuesWrites, vectors)

    def touch_many(
        namespace: str, events: Sequence[tuple[Sequence[str], datetime]], window: int
    ) -> None:
        cast(TouchesMany, store).touch_many(namespace, events, window)

    def put_embeddings(namespace: str, items: Mapping[str, Vector]) -> int:
        return kept.put_embeddings(namespace, items)

    def embeddings(namespace: str, ids: Iterable[str]) -> dict[str, Vector]:
        return kept.embeddings(namespace, ids)

    def recall_reads(
        namespace: str, ids: Sequence[str], *, embeddings: bool = False, degrees: bool = False
    ) -> RecallReadsResult:
        return reads.recall_reads(namespace, ids, embeddings=embeddings, degrees=degrees)

    def created_times(namespace: str, ids: Iterable[str]) -> dict[str, datetime]:
        return cast(KnowsCreatedTimes, store).created_times(namespace, ids)

    def stored_vectors(namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        return index_vectors.stored_vectors(namespace, ids)

    def neighbors(namespace: str, ids: Sequence[str], k: int) -> Mapping[str, Sequence[VectorHit]]:
        return near.neighbors(namespace, ids, k)

    def begin_query(namespace: str, vector: Vector, k: int) -> SentQuery | None:
        return sender.begin_query(namespace, vector, k)

    def query_many(namespace: str, vecs: Sequence[Vector], k: int) -> list[list[VectorHit]]:
        return cast(QueriesMany, vectors).query_many(namespace, vecs, k)

    def pending(namespace: str) -> int:
        return queue.pending(namespace)

    def erase_residue(compact: bool) -> Mapping[str, object]:
        return cast(ErasesResidue, store).erase_residue(compact=compact)

    def purge_log(namespace: str, ids: Sequence[str]) -> int:
        return cast(PurgesLog, vectors).purge_log(namespace, ids)

    def compact_index(namespace: str, min_deleted_fraction: float) -> int:
        return cast(CompactsIndex, vectors).compact(namespace, min_deleted_fraction)

    def last_write(namespace: str) -> datetime | None:
        return cast(KnowsRecentWrites, store).last_write(namespace)

    def newest_active(namespace: str, limit: int) -> list[Memory]:
        return cast(KnowsRecentWrites, store).newest_active(namespace, limit)

    recent = _has(store, "last_write") and _has(store, "newest_active")

    def together() -> AbstractContextManager[None]:
        return cast(BatchesWrites, store).together()

    def stored_hashes(namespace: str, digests: Iterable[str]) -> set[str]:
        return cast(KnowsHashes, store).stored_hashes(namespace, digests)

    def search_kept(namespace: str, query: str, k: int) -> KeptSearch:
        return cast(SearchesWithKept, store).search_kept(namespace, query, k)

    def written_around(namespace: str, memory_id: str, n: int) -> list[str]:
        return cast(KnowsWriteOrder, store).written_around(namespace, memory_id, n)

    in_store = lexical is not None and lexical is cast(object, store)
    return Capabilities(
        store_remote=bool(getattr(store, "remote", False)),
        index_remote=bool(getattr(vectors, "remote", False)),
        touch_many=touch_many if _has(store, "touch_many") else None,
        put_embeddings=put_embeddings if _has(store, "put_embeddings") else None,
        embeddings=embeddings if _has(store, "embeddings") else None,
        recall_reads=recall_reads if _has(store, "recall_reads") else None,
        created_times=created_times if _has(store, "created_times") else None,
        stored_vectors=stored_vectors if _has(vectors, "stored_vectors") else None,
        neighbors=neighbors if _has(vectors, "neighbors") else None,
        begin_query=begin_query if _has(vectors, "begin_query") else None,
        query_many=query_many if _has(vectors, "query_many") else None,
        pending=pending if _has(vectors, "pending") else None,
        erase_residue=erase_residue if _has(store, "erase_residue") else None,
        purge_log=purge_log if _has(vectors, "purge_log") else None,
        compact_index=compact_index if _has(vectors, "compact") else None,
        last_write=last_write if recent else None,
        newest_active=newest_active if recent else None,
        together=together if _has(store, "together") else None,
        stored_hashes=stored_hashes if _has(store, "stored_hashes") else None,
        search_kept=search_kept if in_store and _has(store, "search_kept") else None,
        written_around=written_around if _has(store, "written_around") else None,
    )
