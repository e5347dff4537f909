"""`MemoryEngine`: the one face of the core.

It composes the ports (record store, lexical index, vector index, embedder, clock)
into the lifecycle: observe and remember on the write path, recall on the read
path, and the small operations around them (confirm, pin, history, forget, stats,
export/import, repair). It does no I/O itself; every byte goes through a port.

Write order is record first, vectors second: the record store is the truth and
the vector index is derived, so a crash between the two leaves a record that
`repair()` can index, never a vector without a record.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, ParamSpec, TypeVar

import numpy as np

from . import consolidation, eviction
from .clock import SystemClock, utc
from .codec import FORMAT_VERSION, edge_from_dict, edge_to_dict, memory_from_dict, memory_to_dict
from .errors import (
    ConflictError,
    DimensionMismatch,
    EmptyText,
    InvalidInput,
    InvalidVector,
    NotFound,
    TextTooLong,
)
from .extraction import ExtractionReport, extract_from_traces
from .indexing import IndexWriter
from .models import (
    Edge,
    EdgeType,
    Fact,
    Kind,
    Memory,
    Status,
    Tier,
    check_unit,
    fact_key,
    new_id,
    normalize_phrase,
    parse_kind,
    validate_namespace,
)
from .packing import pack
from .policy import DEFAULT_POLICY, Policy
from .ports import (
    Clock,
    Embedder,
    LexicalHit,
    LexicalIndex,
    RecordStore,
    Synthesizer,
    TokenCounter,
    Vector,
    VectorIndex,
    VectorItem,
    WriteBatch,
)
from .reinforcement import Reinforcer
from .retrieval import (
    Candidate,
    Explanation,
    Ranked,
    best_possible,
    conversation_context,
    cosine_to,
    expand,
    fuse,
    needs_similarity,
    rank,
    unseen_similarity_bound,
)
from .scoring import importance_score, next_confidence, qualifies_as_crystal
from .text import (
    content_hash,
    extract_entities,
    initial_importance,
    is_correction,
    strip_speaker,
)

log = logging.getLogger("reverie")

P = ParamSpec("P")
R = TypeVar("R")

_CAS_RETRIES = 50
_META_EMBEDDER = "embedder"
_META_VECTORS_BEHIND = "vectors_behind"


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float
    explanation: Explanation

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text

    @property
    def sources(self) -> frozenset[str]:
        return self.memory.sources


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Ranked hits, best first; `text()` renders them for a prompt."""

    query: str
    hits: tuple[Hit, ...]
    tokens: int | None = None  # tokens used when packed into a budget

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i: int) -> Hit:
        return self.hits[i]

    @property
    def memories(self) -> list[Memory]:
        return [h.memory for h in self.hits]

    def text(self) -> str:
        return "\n".join(render_hit(h) for h in self.hits)


def render_hit(hit: Hit) -> str:
    return f"- [{hit.memory.created_at:%Y-%m-%d}] {hit.memory.text}"


@dataclass(frozen=True, slots=True)
class Observation:
    """One item for `observe_many`; the fields mirror `observe`'s arguments."""

    text: str
    source: str | None = None
    at: datetime | None = None
    kind: Kind | str = Kind.EPISODIC
    importance: float | None = None
    entities: Iterable[str] | None = None
    metadata: Mapping[str, Any] | None = None
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class _Prepared:
    memory: Memory
    digest: str
    source: str
    when: datetime
    correction: bool


@dataclass(slots=True)
class RepairReport:
    namespaces: int = 0
    indexed: int = 0
    removed: int = 0
    checked: int = 0
    per_namespace: dict[str, dict[str, int]] = field(default_factory=dict)


def _to_thread(fn: Callable[P, R]) -> Callable[P, Any]:
    """The async twin of a sync method: same arguments, run in a worker thread so the
    embedder and the store never block the event loop."""

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    twin.__doc__ = f"Async twin of `{fn.__name__}` (runs in a worker thread)."
    return twin


class MemoryEngine:
    def __init__(
        self,
        store: RecordStore,
        lexical: LexicalIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        *,
        policy: Policy = DEFAULT_POLICY,
        clock: Clock | None = None,
        default_namespace: str = "default",
        token_counter: TokenCounter | None = None,
        id_factory: Callable[[], str] = new_id,
        check_embedder: bool = True,
        synthesizer: Synthesizer | None = None,
    ) -> None:
        self.store = store
        self.lexical = lexical
        self.vectors = vectors
        self.embedder = embedder
        self.policy = policy
        self.clock: Clock = clock or SystemClock()
        self.default_namespace = validate_namespace(default_namespace)
        self.token_counter = token_counter
        self._new_id = id_factory
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reverie-recall")
        # the REM cycle: the LLM behind synthesis (None: the extractive synthesizer), and
        # the importance of recent retrievals that the weak-retrievals trigger watches
        self.synthesizer = synthesizer
        self._retrievals = consolidation.RetrievalLog(policy.trigger_retrieval_window)
        # recall's access reinforcement, written behind the caller when
        # policy.reinforce_async (core/reinforcement.py); its thread starts on first use
        self._reinforcer = Reinforcer(
            self._touch, capacity=policy.reinforce_queue, retries=policy.reinforce_retries,
            linger=(
                policy.reinforce_linger_shared_seconds if getattr(store, "remote", False)
                else policy.reinforce_linger_seconds
            ),
            apply_many=self._touch_many if hasattr(store, "touch_many") else None,
        )
        # observe's new vectors, written behind the caller in batches when
        # policy.index_async (core/indexing.py); its thread starts on first use
        self._indexer = IndexWriter(
            self._write_vectors, capacity=policy.index_queue, retries=policy.index_retries,
            on_failure=self._vectors_failed,
        )
        if check_embedder:  # off only to re-embed a store after a model change
            self._check_embedder()

    # ------------------------------------------------------------------ plumbing

    def _check_embedder(self) -> None:
        """A store's vectors are only comparable with the model that made them."""
        current = f"{self.embedder.name}:{self.embedder.dimension}"
        stored = self.store.get_meta(_META_EMBEDDER)
        if stored is None:
            self.store.set_meta(_META_EMBEDDER, current)
            return
        if stored != current:
            name, _, dim = stored.rpartition(":")
            raise DimensionMismatch(
                f"this store was built with embedder {name!r} ({dim} dimensions) but the "
                f"engine was given {self.embedder.name!r} ({self.embedder.dimension} "
                "dimensions); open it with the same embedder, or re-embed everything "
                "with `reverie repair --reembed` (open_engine(..., check_embedder=False)"
                ".repair(reembed=True))"
            )

    def _touch(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        self.store.touch(namespace, ids, at, self.policy.access_window)

    def _touch_many(
        self, namespace: str, events: Sequence[tuple[Sequence[str], datetime]]
    ) -> None:
        self.store.touch_many(  # type: ignore[attr-defined]  # optional capability
            namespace, events, self.policy.access_window
        )

    def flush_reinforcement(self) -> None:
        """Wait until every recall's access reinforcement and every vector observe queued
        is written. Engine methods that read or write do this themselves; call it before
        reading `engine.store` or `engine.vectors` directly, or from another engine on the
        same store."""
        self._reinforcer.flush()
        self._indexer.flush()

    flush = flush_reinforcement

    def _write_vectors(
        self,
        namespace: str,
        new: Sequence[VectorItem],
        restatus: Sequence[tuple[str, Mapping[str, str | int | float | bool]]],
    ) -> None:
        if new:
            self._keep_embeddings(namespace, {it.id: it.vector for it in new})
            self.vectors.upsert(namespace, new)
        if restatus:
            self.vectors.set_metadata(namespace, [i for i, _ in restatus], [m for _, m in restatus])

    def _vectors_failed(self, namespace: str, ids: Sequence[str], error: BaseException) -> None:
        """A background index write gave up: flag the index for `repair()`, as a failed
        inline write does."""
        self.store.set_meta(_META_VECTORS_BEHIND, "1")

    def _read(self, namespace: str, ids: Sequence[str]) -> dict[str, Memory]:
        """Records for recall, with every touch already queued for them applied."""
        self._reinforcer.settle(namespace, ids)
        return self.store.get_many(namespace, ids)

    def _ns(self, namespace: str | None, *, flush: bool = True, index: bool = True) -> str:
        """The namespace to use; first, every queued reinforcement is written, so reads
        see all earlier recalls' touches (recall itself waits only for its records'), and
        this engine's queued vectors of the namespace (observe, a writer, skips that)."""
        if flush:
            self._reinforcer.flush()
        ns = validate_namespace(self.default_namespace if namespace is None else namespace)
        if index:  # read-your-writes: this engine's queued vectors land first
            self._indexer.flush(ns)
        return ns

    def _now(self, at: datetime | None) -> datetime:
        return utc(at) if at is not None else self.clock.now()

    def _check_text(self, text: object, what: str = "text") -> str:
        if not isinstance(text, str) or not text.strip():
            raise EmptyText(f"{what} is empty: pass the words to remember")
        if len(text) > self.policy.max_text_chars:
            raise TextTooLong(
                f"{what} has {len(text)} characters, over the limit of "
                f"{self.policy.max_text_chars}: split it, or raise Policy.max_text_chars"
            )
        return text

    def _embed(self, texts: Sequence[str]) -> Vector:
        vecs = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        want = (len(texts), self.embedder.dimension)
        if vecs.shape != want:
            raise InvalidVector(
                f"embedder {self.embedder.name!r} returned shape {vecs.shape}, expected {want}"
            )
        if not np.isfinite(vecs).all():
            raise InvalidVector(
                f"embedder {self.embedder.name!r} returned NaN or infinite values; "
                "nothing was written"
            )
        return vecs

    def _index(
        self,
        namespace: str,
        new: Sequence[tuple[Memory, Vector]],
        restatus: Sequence[Memory],
        *,
        behind: bool = False,
    ) -> None:
        """Bring the derived vector index in step after a committed write. A failure
        here does not undo the write: it is logged and flagged for `repair()`.
        `behind` (observe) queues the write for the index writer when
        `policy.index_async`, so the caller does not wait for the vector index."""
        if behind and self.policy.index_async:  # the writer keeps the embeddings too
            self._indexer.submit(
                namespace,
                [VectorItem(m.id, v, _vector_meta(m)) for m, v in new],
                [(m.id, _vector_meta(m)) for m in restatus],
            )
            return
        if new:
            self._keep_embeddings(namespace, {m.id: v for m, v in new})
        try:
            if new:
                self.vectors.upsert(
                    namespace,
                    [VectorItem(m.id, v, _vector_meta(m)) for m, v in new],
                )
            if restatus:
                self.vectors.set_metadata(
                    namespace, [m.id for m in restatus], [_vector_meta(m) for m in restatus]
                )
        except Exception as e:  # the record is safe; the index is behind
            log.warning("vector index update failed (%s); run `reverie repair`", e)
            self.store.set_meta(_META_VECTORS_BEHIND, "1")

    def _keep_embeddings(self, namespace: str, vectors: Mapping[str, Vector]) -> None:
        """Keep vectors beside their records where the store can (an optional capability,
        `put_embeddings`): recall then scores lexical-only candidates without a round trip
        to the vector index. Best effort like the index itself: without them recall asks
        the index, and `repair` fills them in."""
        put = getattr(self.store, "put_embeddings", None)
        if put is None or not vectors:
            return
        try:
            put(namespace, vectors)
        except Exception as e:
            log.warning("keeping embeddings beside the records failed (%s)", e)

    def _kept_embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        """The embeddings kept beside the records that fit the current embedder."""
        kept = getattr(self.store, "embeddings", None)
        if kept is None or not ids:
            return {}
        dim = (self.embedder.dimension,)
        return {i: v for i, v in kept(namespace, ids).items() if v.shape == dim}

    def _backfill_embeddings(self, namespace: str, ids: Sequence[str]) -> None:
        """Records indexed before embeddings were kept beside them (or whose keeping
        failed) get them from the vector index, which holds the same model output."""
        fetch = getattr(self.vectors, "stored_vectors", None)
        if fetch is None or getattr(self.store, "put_embeddings", None) is None:
            return
        lacking = [i for i in ids if i not in self._kept_embeddings(namespace, ids)]
        if lacking:
            self._keep_embeddings(namespace, fetch(namespace, lacking))

    def _similarities(
        self,
        namespace: str,
        qvec: Vector,
        ids: Sequence[str],
        known: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """Cosine of the query to each id: `known` (cosines computed already, see
        `_kept_cosines`), then the embeddings kept beside the records where the store has
        them, then the vector index for the rest. The same formula as the index's, on the
        same float32 vectors, so every source agrees."""
        if known is None:
            kept = getattr(self.store, "embeddings", None)
            fetched = kept(namespace, ids) if kept is not None and ids else {}
            known = self._kept_cosines(qvec, fetched)
        out = {i: known[i] for i in ids if i in known}
        rest = [i for i in ids if i not in out]
        if rest:
            out.update(self.vectors.similarities(namespace, qvec, rest))
        return out

    @staticmethod
    def _kept_cosines(qvec: Vector, vectors: Mapping[str, Vector]) -> dict[str, float]:
        """Cosine of the query to each kept vector of the query's shape (one of another
        model's shape is left out, to be asked of the index)."""
        fit = {i: v for i, v in vectors.items() if v.shape == qvec.shape}
        if not fit:
            return {}
        return dict(zip(fit, cosine_to(qvec, np.stack(list(fit.values()))), strict=True))

    def _retrying(self, attempt: Callable[[], R]) -> R:
        for _ in range(_CAS_RETRIES):
            try:
                return attempt()
            except ConflictError:
                continue
        raise ConflictError(f"gave up after {_CAS_RETRIES} concurrent-write conflicts; retry")

    def _with_source(self, m: Memory, source: str, when: datetime) -> Memory:
        """One more independent source: a confidence step, a fresh clock, maybe a crystal."""
        return self._promote(
            m.evolve(
                sources=m.sources | {source},
                confidence=next_confidence(m.confidence, self.policy),
                last_accessed_at=max(m.last_access, when),
                updated_at=when,
            )
        )

    def _promote(self, m: Memory) -> Memory:
        if m.tier in (Tier.TRACE, Tier.UNIT) and qualifies_as_crystal(m, self.policy):
            return m.evolve(tier=Tier.CRYSTAL, version=m.version)
        return m

    def _entity_edges(self, namespace: str, memory: Memory) -> list[Edge]:
        limit = self.policy.entity_link_limit
        if limit <= 0:
            return []
        linked: dict[str, Edge] = {}
        for entity in sorted(memory.entities)[:8]:
            for other in self.store.find_by_entity(namespace, entity, limit):
                if other.id != memory.id and other.id not in linked:
                    linked[other.id] = Edge(memory.id, other.id, EdgeType.ENTITY, 1.0)
        return list(linked.values())

    # ------------------------------------------------------------------ write path

    def observe(
        self,
        text: str,
        *,
        namespace: str | None = None,
        source: str | None = None,
        at: datetime | None = None,
        kind: Kind | str = Kind.EPISODIC,
        importance: float | None = None,
        entities: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        pinned: bool = False,
    ) -> Memory:
        """Store a trace. An exact repeat (same normalised text) in the namespace adds
        `source` to the existing memory instead of a copy; a correction ("actually",
        "no longer", "switched to", ...) supersedes the most similar earlier trace."""
        item = Observation(text, source, at, kind, importance, entities, metadata, pinned)
        return self.observe_many([item], namespace=namespace)[0]

    def observe_many(
        self,
        items: Iterable[Observation | str],
        *,
        namespace: str | None = None,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> list[Memory]:
        """`observe` for many texts at once, embedding them in batches (bulk ingest is
        several times faster). Every item is validated before anything is written, and
        each item is then its own atomic write, in order."""
        ns = self._ns(namespace, index=False)  # a write: its vectors may stay queued
        prepared = [
            self._prepare(ns, it if isinstance(it, Observation) else Observation(it))
            for it in items
        ]
        out: list[Memory] = []
        for i in range(0, len(prepared), batch_size):
            chunk = prepared[i : i + batch_size]
            fresh = [p for p in chunk if self.store.find_by_hash(ns, p.digest) is None]
            embedded: Sequence[Vector] | Vector = (
                self._embed([p.memory.text for p in fresh]) if fresh else []
            )
            vecs = {id(p): v for p, v in zip(fresh, embedded, strict=True)}
            pending: list[tuple[Memory, Vector]] = []
            restatus: list[Memory] = []
            for p in chunk:
                vec = vecs.get(id(p))
                existing = self.store.find_by_hash(ns, p.digest) if vec is None else None
                if existing is not None:
                    out.append(self._fold(ns, existing.id, p.source, p.when))
                else:
                    if vec is None:  # its twin was forgotten since the chunk began
                        vec = self._embed([p.memory.text])[0]
                    if p.correction:  # the target may be in this very chunk, or queued
                        self._indexer.flush(ns)
                        self._index(ns, pending, restatus)
                        pending, restatus = [], []
                    stored, superseded, created = self._write_trace(ns, p, vec)
                    out.append(stored)
                    if created:
                        pending.append((stored, vec))
                    if superseded is not None:
                        restatus.append(superseded)
                if progress is not None:
                    progress(1)
            self._index(ns, pending, restatus, behind=True)
        return out

    def _prepare(self, ns: str, item: Observation) -> _Prepared:
        text = self._check_text(item.text)
        when = self._now(item.at)
        src = item.source if item.source is not None else f"observe:{self._new_id()}"
        if not isinstance(src, str) or not src.strip():
            raise InvalidInput("source must be non-empty text")
        if item.importance is not None:
            check_unit("importance", item.importance)
        # a speaker prefix ("Caroline: ...") names who spoke, not what it is about: as an
        # entity it would tie every line of a speaker into one meaningless hub
        ents = (
            frozenset(e.casefold() for e in item.entities)
            if item.entities is not None
            else extract_entities(strip_speaker(text))
        )
        memory = Memory(
            id=self._new_id(),
            namespace=ns,
            kind=parse_kind(item.kind),
            tier=Tier.TRACE,
            text=text,
            created_at=when,
            importance=item.importance
            if item.importance is not None
            else initial_importance(text, self.policy, ents),
            confidence=self.policy.initial_confidence_trace,
            sources=frozenset({src}),
            entities=ents,
            metadata=dict(item.metadata or {}),
            pinned=item.pinned,
        )
        return _Prepared(memory, content_hash(text), src, when, is_correction(text))

    def _write_trace(
        self, ns: str, p: _Prepared, vec: Vector
    ) -> tuple[Memory, Memory | None, bool]:
        memory = p.memory
        edges = self._entity_edges(ns, memory)

        def attempt() -> tuple[Memory, Memory | None, bool]:
            old = self._correction_target(ns, memory.text, vec, p.when) if p.correction else None
            puts = [memory]
            batch_edges = list(edges)
            superseded = None
            if old is not None:
                superseded = old.evolve(
                    status=Status.SUPERSEDED, superseded_by=memory.id, valid_to=p.when,
                    updated_at=p.when,
                )
                puts.append(superseded)
                batch_edges.append(Edge(memory.id, old.id, EdgeType.SUPERSEDES, 1.0))
            self.store.commit(WriteBatch(ns, tuple(puts), tuple(batch_edges)))
            return memory, superseded, True

        try:
            return self._retrying(attempt)
        except ConflictError:
            # Someone stored the same text between our lookup and our write: fold into it.
            again = self.store.find_by_hash(ns, p.digest)
            if again is None:
                raise
            return self._fold(ns, again.id, p.source, p.when), None, False

    def _fold(self, namespace: str, memory_id: str, source: str, when: datetime) -> Memory:
        """A repeat from another source: one more source, more confidence, a fresh clock."""

        def attempt() -> Memory:
            cur = self.store.get(namespace, memory_id)
            if cur is None:
                raise NotFound(f"memory {memory_id} vanished while folding a repeat")
            if source in cur.sources:
                return cur
            nxt = self._with_source(cur, source, when)
            self.store.commit(WriteBatch(namespace, (nxt,)))
            return nxt

        return self._retrying(attempt)

    def _correction_target(
        self, namespace: str, text: str, vec: Vector, when: datetime
    ) -> Memory | None:
        """The free-text memory a correction replaces: the most similar earlier active
        trace without a fact key, if it is similar enough to be about the same thing."""
        hits = self.vectors.query(namespace, vec, 5, {"status": Status.ACTIVE.value})
        close = [h for h in hits if h.similarity >= self.policy.correction_similarity]
        if not close:
            return None
        found = self.store.get_many(namespace, [h.id for h in close])
        for h in close:
            m = found.get(h.id)
            if (
                m is not None
                and m.is_active
                and m.key is None
                and m.created_at <= when
                and content_hash(m.text) != content_hash(text)
            ):
                return m
        return None

    def remember(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        namespace: str | None = None,
        source: str | None = None,
        kind: Kind | str = Kind.SEMANTIC,
        at: datetime | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        index: bool = True,
    ) -> Memory:
        """Store a fact as a unit keyed by (kind, subject, predicate).

        The same object from a new source raises confidence one step (cap 0.95); a
        different object supersedes the current unit, which stays queryable through
        `history()` and `recall(as_of=...)`. `index=False` stores it without a vector
        (found by key and by words, never by meaning: LangGraph's `put(index=False)`)."""
        ns = self._ns(namespace)
        k = parse_kind(kind)
        if k is Kind.EPISODIC:
            raise InvalidInput("facts are semantic or procedural; use observe() for episodes")
        fact = Fact(
            self._check_text(subject, "subject"),
            self._check_text(predicate, "predicate"),
            self._check_text(object, "object"),
        )
        body = self._check_text(text if text is not None else f"{subject} {predicate} {object}")
        when = self._now(at)
        src = source if source is not None else f"remember:{self._new_id()}"
        key = fact_key(k, subject, predicate)
        for name, v in (("importance", importance), ("confidence", confidence)):
            if v is not None:
                check_unit(name, v)
        vec: Vector | None = None

        def attempt() -> tuple[Memory, Memory | None, bool]:
            nonlocal vec
            versions = self.store.find_by_key(ns, key)
            current = next((v for v in reversed(versions) if v.is_active), None)
            wanted = normalize_phrase(object)
            for v in versions:  # a replay (this source already said this) changes nothing
                if v.fact is not None and src in v.sources and (
                    normalize_phrase(v.fact.object) == wanted
                ):
                    return v, None, False
            if current is not None and current.fact is not None and (
                normalize_phrase(current.fact.object) == wanted
            ):
                nxt = self._with_source(current, src, when)
                self.store.commit(WriteBatch(ns, (nxt,)))
                return nxt, None, False
            if vec is None and index:
                vec = self._embed([body])[0]
            start = max(when, current.valid_since) if current is not None else when
            unit = self._promote(
                Memory(
                    id=self._new_id(),
                    namespace=ns,
                    kind=k,
                    tier=Tier.UNIT,
                    text=body,
                    fact=fact,
                    key=key,
                    created_at=start,
                    importance=importance
                    if importance is not None
                    else initial_importance(body, self.policy),
                    confidence=confidence
                    if confidence is not None
                    else self.policy.initial_confidence_unit,
                    sources=frozenset({src}),
                    entities=extract_entities(f"{subject} {object}")
                    | {normalize_phrase(subject)},
                    metadata=dict(metadata or {}),
                )
            )
            puts = [unit]
            edges = self._entity_edges(ns, unit)
            old = None
            if current is not None:
                old = current.evolve(
                    status=Status.SUPERSEDED, superseded_by=unit.id, valid_to=start,
                    updated_at=start,
                )
                puts.append(old)
                edges.append(Edge(unit.id, current.id, EdgeType.SUPERSEDES, 1.0))
            self.store.commit(WriteBatch(ns, tuple(puts), tuple(edges)))
            return unit, old, True

        stored, superseded, created = self._retrying(attempt)
        if created:
            self._index(
                ns,
                [(stored, vec)] if vec is not None else [],
                [superseded] if superseded else [],
            )
        return stored

    def _update(
        self, memory_id: str, namespace: str | None, change: Callable[[Memory], Memory]
    ) -> Memory:
        ns = self._ns(namespace)

        def attempt() -> Memory:
            cur = self.store.get(ns, memory_id)
            if cur is None:
                raise NotFound(f"no memory {memory_id!r} in namespace {ns!r}")
            nxt = change(cur)
            if nxt is not cur:
                self.store.commit(WriteBatch(ns, (nxt,)))
            return nxt

        return self._retrying(attempt)

    def confirm(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """The user vouches for this memory: it becomes a crystal (never decays or evicts)."""
        now = self.clock.now()
        return self._update(
            memory_id,
            namespace,
            lambda m: m
            if m.user_confirmed
            else self._promote(m.evolve(user_confirmed=True, updated_at=now)),
        )

    def pin(
        self, memory_id: str, *, namespace: str | None = None, pinned: bool = True
    ) -> Memory:
        """'Always remember': a pinned memory never decays out of recall."""
        now = self.clock.now()
        return self._update(
            memory_id,
            namespace,
            lambda m: m if m.pinned == pinned else m.evolve(pinned=pinned, updated_at=now),
        )

    def get(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        ns = self._ns(namespace)
        m = self.store.get(ns, memory_id)
        if m is None:
            raise NotFound(f"no memory {memory_id!r} in namespace {ns!r}")
        return m

    # ------------------------------------------------------------------ read path

    def recall(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int = 5,
        as_of: datetime | None = None,
        include_history: bool = False,
        token_budget: int | None = None,
        reinforce: bool = True,
        kinds: Iterable[Kind | str] | None = None,
    ) -> RecallResult:
        """The k most useful memories for `query`, best first, each with its explanation.

        `as_of` answers with what was believed at that time (superseded versions valid
        then included, decay measured then, nothing reinforced). `include_history`
        also returns superseded and consolidated memories. Recalled memories are
        reinforced (their decay clock restarts) unless `reinforce=False`."""
        ns = self._ns(namespace, flush=False)
        self._check_text(query, "query")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive integer, got {k!r}")
        if token_budget is not None and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int)
            or token_budget < 1
        ):
            raise InvalidInput(f"token_budget must be a positive integer, got {token_budget!r}")
        if token_budget is not None and self.token_counter is None:
            raise InvalidInput("token_budget needs an engine opened with a token_counter")
        now = self.clock.now()
        when = utc(as_of) if as_of is not None else now
        kind_set = {parse_kind(x) for x in kinds} if kinds is not None else None
        historical = as_of is not None or include_history

        def admit(m: Memory) -> bool:
            if kind_set is not None and m.kind not in kind_set:
                return False
            if as_of is not None:
                return m.status is not Status.ARCHIVED and m.valid_at(when)
            return include_history or m.is_active

        qvec = self._embed([query])[0]
        pool = max(k, self.policy.candidate_pool)
        # No status filter in the vector tier: the records are the truth and `admit`
        # checks them, and an unfiltered query is Chroma's fastest path.
        # the two channels are independent I/O (both release the GIL): overlap them
        asked = pool * (2 if historical else 1)
        context = self.policy.context_weight > 0 and self.policy.context_seeds > 0
        # A server query is sent first and its answer read after the lexical side, with
        # no thread between (`begin_query`); an in-process query runs on the pool.
        begin = getattr(self.vectors, "begin_query", None)
        sent = begin(ns, qvec, asked) if begin is not None else None
        dense_future = (
            self._pool.submit(self.vectors.query, ns, qvec, asked) if sent is None else None
        )
        try:
            side = self._lexical_side(ns, query, qvec, pool, context)
        except BaseException:
            if sent is not None:
                sent.cancel()
            raise
        lexical, fetched, early, known_degrees = side.hits, side.cosines, side.early, side.degrees
        if sent is not None:
            dense = sent.result()
        else:
            assert dense_future is not None
            dense = dense_future.result()
        in_dense = {h.id for h in dense}
        lexical_only = [h.id for h in lexical if h.id not in in_dense]
        # Lexical-only candidates enter with dense = 0; the stored vectors are fetched only
        # for those an exact bound cannot rule out of the top (and the expansion seeds).
        places = max(k, self.policy.expansion_seeds)
        if context:
            # context needs every candidate's true relevance (to pick the seeds) and time
            extra = (
                self._similarities(ns, qvec, lexical_only, fetched) if lexical_only else {}
            )
            candidates = fuse(dense, lexical, self.policy, extra)
            if getattr(self.vectors, "remote", False):
                # The lexical hits' records are here already; reading the dense hits' in
                # one round trip too gives every time, seed and score, where reading by
                # need would take two or three more round trips to the shared store.
                read = early | self._read_candidates(
                    ns, [h.id for h in dense if h.id not in early], known_degrees
                )
                seeds, read = self._context_seeds(ns, candidates, admit, read)
                times = {i: m.created_at for i, m in read.items()}
            else:
                seeds, read = self._context_seeds(ns, candidates, admit, early)
                times = self._created_times(ns, candidates, read, side.times)
            candidates = conversation_context(candidates, seeds, times, self.policy)
            memories, ranked = self._fetch_ranked(ns, candidates, places, when, admit, read)
        else:
            candidates = fuse(dense, lexical, self.policy)
            memories, ranked = self._fetch_ranked(ns, candidates, places, when, admit, early)
            need = needs_similarity(
                lexical_only,
                candidates,
                unseen_similarity_bound(dense, asked),
                ranked,
                places,
                self.policy,
            )
            extra = self._similarities(ns, qvec, need, fetched) if need else {}
            if extra:
                candidates = fuse(dense, lexical, self.policy, extra)
                memories, ranked = self._fetch_ranked(
                    ns, candidates, places, when, admit, memories
                )
        ranked = self._expand(ns, ranked, candidates, memories, when, admit, k)

        top = ranked[: max(k, 1)]
        unknown = [r.memory.id for r in top if r.memory.id not in known_degrees]
        degrees = known_degrees | (self.store.degrees(ns, unknown) if unknown else {})
        hits = [
            Hit(
                r.memory,
                r.score,
                Explanation(
                    final=r.score,
                    relevance=r.candidate.relevance,
                    dense=r.candidate.dense,
                    lexical=r.candidate.lexical,
                    decay=r.decay,
                    importance=importance_score(
                        r.memory, degrees.get(r.memory.id, 0), when, self.policy
                    ),
                    tier=r.memory.tier,
                    hops=r.candidate.hops,
                    via=r.candidate.via,
                    context=r.candidate.context,
                ),
            )
            for r in top
        ]
        tokens = None
        if token_budget is not None:
            assert self.token_counter is not None
            hits, tokens = pack(hits, token_budget, render_hit, self.token_counter)
        if as_of is None and hits:
            self._retrievals.note(ns, [h.explanation.importance for h in hits])
        if reinforce and as_of is None and hits:
            if self.policy.reinforce_async:
                self._reinforcer.submit(ns, [h.id for h in hits], now)
            else:
                self._touch(ns, [h.id for h in hits], now)
        return RecallResult(query, tuple(hits), tokens)

    def _lexical_side(
        self, ns: str, query: str, qvec: Vector, pool: int, context: bool
    ) -> _LexicalSide:
        """The lexical channel and what its hits alone decide, done while the dense query
        runs: the hits; their cosines from the embeddings kept beside the records (a
        lexical-only candidate needs its cosine); for conversation context, when they were
        observed, or, when the dense query waits on a server (the shared tier: an HTTP
        round trip), their whole records, most of which are read later anyway. A store
        with `recall_reads` gives records, embeddings and degrees in one round trip."""
        lexical = list(self.lexical.search(ns, query, pool))
        lexical_ids = [h.id for h in lexical]
        side = _LexicalSide(lexical, {}, {}, {}, {})
        if not lexical_ids:
            return side
        remote = getattr(self.vectors, "remote", False)
        together = getattr(self.store, "recall_reads", None) if remote else None
        if together is not None:
            self._reinforcer.settle(ns, lexical_ids)
            got = together(ns, lexical_ids, embeddings=True, degrees=True)
            side.cosines.update(self._kept_cosines(qvec, got.embeddings))
            side.early.update(got.memories)
            side.degrees.update(got.degrees)
            return side
        kept = getattr(self.store, "embeddings", None)
        if kept is not None:
            side.cosines.update(self._kept_cosines(qvec, kept(ns, lexical_ids)))
        if context:
            if remote:
                side.early.update(self._read(ns, lexical_ids))
            else:
                side.times.update(self._created_times(ns, lexical_ids, {}))
        return side

    def _read_candidates(
        self, ns: str, ids: Sequence[str], degrees: dict[str, int]
    ) -> dict[str, Memory]:
        """Records for recall; where the store has `recall_reads`, their degrees come in
        the same round trip (into `degrees`), so the top hits need no read of their own."""
        together = getattr(self.store, "recall_reads", None)
        if together is None or not ids:
            return self._read(ns, ids)
        self._reinforcer.settle(ns, ids)
        got = together(ns, ids, degrees=True)
        degrees.update(got.degrees)
        return dict(got.memories)

    def _fetch_ranked(
        self,
        namespace: str,
        candidates: Mapping[str, Candidate],
        k: int,
        when: datetime,
        admit: Callable[[Memory], bool],
        read: dict[str, Memory] | None = None,
    ) -> tuple[dict[str, Memory], list[Ranked]]:
        """Read candidate records best-relevance first, and stop as soon as no unread
        candidate can reach the k-th score: decay is at most 1, so a candidate of
        relevance r scores at most alpha * r + (1 - alpha). Exact, and most queries
        read a fraction of the pool. Records in `read` are not read again."""
        order = sorted(candidates.values(), key=lambda c: (-c.relevance, c.id))
        step = max(2 * k, 10)
        memories: dict[str, Memory] = dict(read or {})
        ranked: list[Ranked] = []
        alpha = self.policy.alpha
        for start in range(0, len(order), step):
            batch = order[start : start + step]
            unread = [c.id for c in batch if c.id not in memories]
            if unread:
                memories.update(self._read(namespace, unread))
            # each candidate's score is its own, so ranking a step's batch and merging
            # equals ranking everything fetched so far, without scoring anyone twice
            ranked += rank({c.id: c for c in batch}, memories, when, self.policy, admit)
            ranked.sort(key=lambda r: (-r.score, r.memory.id))
            rest = order[start + step : start + step + 1]
            if len(ranked) >= k and (
                not rest or alpha * rest[0].relevance + (1.0 - alpha) < ranked[k - 1].score
            ):
                break
        return memories, ranked

    def _context_seeds(
        self,
        namespace: str,
        candidates: Mapping[str, Candidate],
        admit: Callable[[Memory], bool],
        read: Mapping[str, Memory] | None = None,
    ) -> tuple[list[Candidate], dict[str, Memory]]:
        """The most relevant admissible candidates (reading records only as far as needed;
        those in `read` are not read again). Returns them and every record read."""
        want = self.policy.context_seeds
        order = sorted(candidates.values(), key=lambda c: (-c.relevance, c.id))
        known = dict(read or {})
        seeds: list[Candidate] = []
        for start in range(0, len(order), want):
            chunk = order[start : start + want]
            missing = [c.id for c in chunk if c.id not in known]
            if missing:
                known.update(self._read(namespace, missing))
            seeds.extend(c for c in chunk if c.id in known and admit(known[c.id]))
            if len(seeds) >= want:
                break
        return seeds[:want], known

    def _created_times(
        self,
        namespace: str,
        candidates: Iterable[str],
        read: Mapping[str, Memory],
        known: Mapping[str, datetime] | None = None,
    ) -> dict[str, datetime]:
        """When each candidate was observed: from `known` and records already read, and the
        rest from the store's light `created_times` where it has one (else full records)."""
        times = dict(known or {})
        times.update((i, m.created_at) for i, m in read.items())
        rest = [i for i in candidates if i not in times]
        if rest:
            light = getattr(self.store, "created_times", None)
            if callable(light):
                times.update(light(namespace, rest))
            else:
                full = self.store.get_many(namespace, rest)
                times.update((i, m.created_at) for i, m in full.items())
        return times

    def _expand(
        self,
        namespace: str,
        ranked: list[Ranked],
        candidates: dict[str, Candidate],
        memories: dict[str, Memory],
        when: datetime,
        admit: Callable[[Memory], bool],
        k: int,
    ) -> list[Ranked]:
        """Graph expansion: neighbours of the best hits join with decayed relevance.

        A neighbour scores at most alpha * relevance + (1 - alpha) (decay is at most 1), so
        once k memories are ranked, neighbours that cannot beat the k-th are neither read
        nor expanded further, and when even the best seed cannot lift one that high the
        edges are not read at all. Exact: the top k is what full expansion would give."""
        frontier = [r.candidate for r in ranked[: self.policy.expansion_seeds]]
        cut = ranked[k - 1].score if len(ranked) >= k else None
        known = dict(candidates)
        added: dict[str, Candidate] = {}
        for hop in range(1, self.policy.max_hops + 1):
            if cut is not None:
                frontier = [
                    c for c in frontier
                    if best_possible(c.relevance * self.policy.hop_decay, self.policy) >= cut
                ]
            if not frontier:
                break
            edges = self.store.edges(namespace, [c.id for c in frontier])
            found = expand(frontier, edges, known, self.policy, hop)
            if cut is not None:
                found = {
                    i: c for i, c in found.items()
                    if best_possible(c.relevance, self.policy) >= cut
                }
            if not found:
                break
            known.update(found)
            added.update(found)
            frontier = list(found.values())
        if not added:
            return ranked
        missing = [i for i in added if i not in memories]
        memories.update(self._read(namespace, missing))
        return rank(known, memories, when, self.policy, admit)

    def history(
        self,
        subject: str,
        predicate: str,
        *,
        namespace: str | None = None,
        kind: Kind | str = Kind.SEMANTIC,
    ) -> list[Memory]:
        """Every version of a fact, oldest first: what was believed, and from when to when."""
        ns = self._ns(namespace)
        return self.store.find_by_key(ns, fact_key(parse_kind(kind), subject, predicate))

    def extract_facts(
        self,
        *,
        synthesizer: Synthesizer,
        namespace: str | None = None,
        since: datetime | None = None,
    ) -> ExtractionReport:
        """Facts from the namespace's active traces (created at or after `since`), asked
        of an LLM in batches of `policy.extraction_batch_size` and written with
        `remember(..., source=<trace id>)` at the trace's time. Off the hot path; a re-run
        changes nothing (a source that already said a fact is a replay). See
        core/extraction.py for the prompt, the validation and the retries."""
        ns = self._ns(namespace)
        start = utc(since) if since is not None else None
        traces = [
            m
            for m in self.store.scan(ns, statuses=[Status.ACTIVE], tiers=[Tier.TRACE])
            if start is None or m.created_at >= start
        ]
        traces.sort(key=lambda m: (m.created_at, m.id))
        report = ExtractionReport(traces=len(traces))
        size = self.policy.extraction_batch_size
        for i in range(0, len(traces), size):
            chunk = traces[i : i + size]
            batch = extract_from_traces(chunk, synthesizer, self.policy)
            report.add(batch)
            when = {t.id: t.created_at for t in chunk}
            for f in batch.facts:
                report.memories.append(
                    self.remember(
                        f.subject, f.predicate, f.object,
                        namespace=ns, source=f.trace_id, at=when[f.trace_id],
                    )
                )
        return report

    # ------------------------------------------------------------------ consolidation (REM)

    def consolidate(
        self,
        namespace: str | None = None,
        *,
        synthesizer: Synthesizer | None = None,
        strategy: str | None = None,
        dry_run: bool = False,
        max_workers: int | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        kill_hook: Callable[[str], None] | None = None,
    ) -> consolidation.ConsolidationReport:
        """One REM cycle (core/consolidation.py): weak memories are clustered and each
        cluster becomes one synthesis node; members are retired, never deleted. Holds the
        namespace's maintenance lock; crash-safe and idempotent. `synthesizer` overrides
        the engine's (None for both: the extractive synthesizer, no LLM). `dry_run`
        returns the clusters and previews and writes nothing."""
        ns = self._ns(namespace)

        def index_nodes(nodes: Sequence[Memory], retired: Sequence[Memory]) -> None:
            vecs = self._embed_memories(nodes)
            self._index(ns, list(zip(nodes, vecs, strict=True)), retired)

        near = getattr(self.vectors, "neighbors", None)  # optional: HNSW k-NN (core/ports.py)

        def neighbors_of(ids: Sequence[str], k: int) -> dict[str, list[str]]:
            assert near is not None
            return {q: [h.id for h in hits] for q, hits in near(ns, ids, k).items()}

        deps = consolidation.CycleDeps(
            self.store,
            self.policy,
            self.clock.now(),
            lambda ms: self._stored_or_embedded(ns, ms),
            index_nodes,
            neighbors_of if near is not None else None,
        )
        return consolidation.run_cycle(
            deps,
            ns,
            synthesizer=synthesizer if synthesizer is not None else self.synthesizer,
            strategy=strategy or consolidation.DEFAULT_STRATEGY,
            dry_run=dry_run,
            max_workers=max_workers,
            progress=progress,
            kill_hook=kill_hook,
        )

    def maintenance_due(self, namespace: str | None = None) -> list[consolidation.Trigger]:
        """The maintenance triggers that fire now, each saying which and why (empty: none).
        See `consolidation.due_triggers` for the five signals."""
        ns = self._ns(namespace)
        return consolidation.check_triggers(
            self.store, self.vectors, ns, self.clock.now(), self.policy,
            self._retrievals.recent(ns), self._embed_memories,
        )

    def _stored_or_embedded(self, namespace: str, memories: Sequence[Memory]) -> Vector:
        """Vectors for clustering: those kept beside the records, else the index's stored
        ones where it can hand them out (ChromaIndex.stored_vectors, an optional
        capability), embedded otherwise. Re-
        embedding 10k flagged memories would cost the cycle a minute of model time."""
        fetch = getattr(self.vectors, "stored_vectors", None)
        stored: dict[str, Vector] = {}
        dim = self.embedder.dimension
        for i in range(0, len(memories), 1000):
            ids = [m.id for m in memories[i : i + 1000]]
            stored.update(self._kept_embeddings(namespace, ids))
            rest = [j for j in ids if j not in stored]
            if fetch is not None and rest:
                got = fetch(namespace, rest)
                stored.update({k: v for k, v in got.items() if np.shape(v) == (dim,)})
        missing = [m for m in memories if m.id not in stored]
        if missing:
            stored.update(zip((m.id for m in missing), self._embed_memories(missing), strict=True))
        if not memories:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([stored[m.id] for m in memories]).astype(np.float32)

    def _embed_memories(self, memories: Sequence[Memory]) -> Vector:
        texts = [m.text for m in memories]
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.concatenate([self._embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])

    # ------------------------------------------------------------------ deletion

    def forget(self, *memory_ids: str, namespace: str | None = None) -> int:
        """Real deletion, for privacy: the records, their edges, lexical entries and vectors,
        and every synthesis derived from them (its other members become active again;
        core/eviction.py). Returns the number of records deleted, cascade included."""
        ns = self._ns(namespace)
        ids = [i for i in memory_ids if isinstance(i, str) and i]
        if not ids:
            return 0
        return eviction.forget_cascade(self, ns, ids).deleted

    def gc(
        self,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> eviction.GcReport:
        """Delete archived memories decayed below `policy.gc_salience`, except
        retention-exempt ones (core/eviction.py). `namespace=None`: every namespace."""
        self.flush_reinforcement()
        return eviction.gc(self, namespace, dry_run=dry_run, progress=progress)

    def sweep(
        self,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
        synthesizer: Synthesizer | None = None,
    ) -> eviction.SweepReport:
        """Distil, then archive, memories decayed below `policy.evict_salience`; over the
        hard cap, merge first and archive the lowest scores (core/eviction.py).
        `namespace=None`: every namespace."""
        self.flush_reinforcement()
        return eviction.sweep(
            self, namespace, dry_run=dry_run, progress=progress, synthesizer=synthesizer
        )

    def forget_namespace(self, namespace: str) -> int:
        """Delete everything a namespace holds (a user's right to erasure)."""
        ns = validate_namespace(namespace)
        self.flush_reinforcement()
        n = self.store.delete_namespace(ns)
        self.vectors.drop_namespace(ns)
        return n

    # ------------------------------------------------------------------ inspection

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        ns = self._ns(namespace)
        counts = self.store.count(ns)
        # a shared queue in front of the index (the vector outbox) says what waits in it
        pending = getattr(self.vectors, "pending", None)
        return {
            "namespace": ns,
            **counts,
            "vectors": self.vectors.count(ns),
            **({"vectors_queued": pending(ns)} if pending is not None else {}),
            "embedder": f"{self.embedder.name} ({self.embedder.dimension}d)",
            "vector_repair_needed": self.store.get_meta(_META_VECTORS_BEHIND) == "1",
        }

    def namespaces(self) -> list[str]:
        self.flush_reinforcement()
        return self.store.namespaces()

    def memories(
        self,
        *,
        namespace: str | None = None,
        statuses: Iterable[Status | str] | None = None,
        tiers: Iterable[Tier | str] | None = None,
    ) -> Iterator[Memory]:
        """Every memory of a namespace (optionally by status and tier), in a stable order,
        streamed from the store so a large namespace is never loaded at once."""
        return self.store.scan(
            self._ns(namespace),
            statuses=None if statuses is None else [Status(s) for s in statuses],
            tiers=None if tiers is None else [Tier(t) for t in tiers],
        )

    # ------------------------------------------------------------------ export / import

    def export(self, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """JSON-ready records: a header, then every memory (all statuses) and edge.
        `namespace=None` exports every namespace."""
        self.flush_reinforcement()
        spaces = [self._ns(namespace)] if namespace is not None else self.store.namespaces()
        yield {"type": "reverie-export", "format": FORMAT_VERSION}
        for ns in spaces:
            ids: list[str] = []
            for m in self.store.scan(ns):
                ids.append(m.id)
                yield {"type": "memory", "record": memory_to_dict(m)}
            seen: set[tuple[str, str, str]] = set()
            for i in range(0, len(ids), 500):
                for e in self.store.edges(ns, ids[i : i + 500]):
                    key = (e.src, e.dst, e.type.value)
                    if key not in seen:
                        seen.add(key)
                        yield {"type": "edge", "namespace": ns, "record": edge_to_dict(e)}

    def import_(
        self, records: Iterable[Mapping[str, Any]], *, batch_size: int = 256
    ) -> dict[str, int]:
        """Restore an export. Each batch is validated whole before it is written, and
        memories already present at the same or a newer version are left alone, so an
        import can be re-run after an interruption."""
        self.flush_reinforcement()
        counts = {"memories": 0, "edges": 0, "skipped": 0}
        memories: list[Memory] = []
        edges: list[tuple[str, Edge]] = []

        def flush() -> None:
            by_ns: dict[str, list[Memory]] = {}
            for m in memories:
                by_ns.setdefault(m.namespace, []).append(m)
            for ns, ms in by_ns.items():
                have = self.store.get_many(ns, [m.id for m in ms])
                fresh = [m for m in ms if m.id not in have or have[m.id].version < m.version]
                counts["skipped"] += len(ms) - len(fresh)
                if fresh:
                    self.store.commit(WriteBatch(ns, tuple(fresh), restore=True))
                    vecs = self._embed([m.text for m in fresh])
                    self._index(ns, list(zip(fresh, vecs, strict=True)), [])
                    counts["memories"] += len(fresh)
            memories.clear()
            by_edge: dict[str, list[Edge]] = {}
            for ns, e in edges:
                by_edge.setdefault(ns, []).append(e)
            for ns, es in by_edge.items():
                self.store.commit(WriteBatch(ns, (), tuple(es)))
                counts["edges"] += len(es)
            edges.clear()

        for n, rec in enumerate(records, 1):
            kind = rec.get("type")
            if kind == "reverie-export":
                if rec.get("format") != FORMAT_VERSION:
                    raise InvalidInput(
                        f"export format {rec.get('format')!r} is not supported "
                        f"(this reverie reads format {FORMAT_VERSION})"
                    )
            elif kind == "memory":
                memories.append(memory_from_dict(rec["record"]))
            elif kind == "edge":
                edges.append((validate_namespace(rec["namespace"]), edge_from_dict(rec["record"])))
            else:
                raise InvalidInput(f"record {n}: unknown type {kind!r}")
            if len(memories) + len(edges) >= batch_size:
                flush()
        flush()
        return counts

    # ------------------------------------------------------------------ repair

    def repair(
        self,
        *,
        namespace: str | None = None,
        reembed: bool = False,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> RepairReport:
        """Rebuild the derived vector index from the records: index what is missing,
        drop what has no record, refresh statuses. `reembed=True` re-embeds everything
        with the current embedder (after a model change)."""
        self.flush_reinforcement()
        report = RepairReport()
        spaces = [self._ns(namespace)] if namespace is not None else self.store.namespaces()
        for ns in spaces:
            stats = self._repair_namespace(ns, reembed, batch_size, progress)
            report.per_namespace[ns] = stats
            report.namespaces += 1
            report.indexed += stats["indexed"]
            report.removed += stats["removed"]
            report.checked += stats["checked"]
        if reembed and namespace is None:  # only once every namespace has the new vectors
            self.store.set_meta(_META_EMBEDDER, f"{self.embedder.name}:{self.embedder.dimension}")
        if namespace is None:
            self.store.set_meta(_META_VECTORS_BEHIND, "0")
        return report

    def _repair_namespace(
        self,
        ns: str,
        reembed: bool,
        batch_size: int,
        progress: Callable[[int], None] | None,
    ) -> dict[str, int]:
        if reembed:
            self.vectors.drop_namespace(ns)
        indexed = self.vectors.ids(ns)
        seen: set[str] = set()
        todo: list[Memory] = []
        restatus: list[Memory] = []
        stats = {"indexed": 0, "removed": 0, "checked": 0}

        def flush() -> None:
            if todo:
                # the vectors kept beside the records are the model's own output: reuse
                # them unless re-embedding, and keep what had to be embedded
                vecs = {} if reembed else self._kept_embeddings(ns, [m.id for m in todo])
                fresh = [m for m in todo if m.id not in vecs]
                if fresh:
                    made = self._embed([m.text for m in fresh])
                    vecs.update(zip((m.id for m in fresh), made, strict=True))
                    self._keep_embeddings(ns, {m.id: vecs[m.id] for m in fresh})
                self.vectors.upsert(
                    ns, [VectorItem(m.id, vecs[m.id], _vector_meta(m)) for m in todo]
                )
                stats["indexed"] += len(todo)
                todo.clear()
            if restatus:
                self.vectors.set_metadata(
                    ns, [m.id for m in restatus], [_vector_meta(m) for m in restatus]
                )
                self._backfill_embeddings(ns, [m.id for m in restatus])
                restatus.clear()

        for m in self.store.scan(ns):
            seen.add(m.id)
            stats["checked"] += 1
            (restatus if m.id in indexed else todo).append(m)
            if len(todo) >= batch_size or len(restatus) >= 4 * batch_size:
                flush()
            if progress is not None:
                progress(1)
        flush()
        orphans = sorted(indexed - seen)
        if orphans:
            self.vectors.delete(ns, orphans)
        stats["removed"] = len(orphans)
        return stats

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._reinforcer.close()  # drain: queued touches are written, not dropped
        self._indexer.close()  # drain: queued vectors are written before the index closes
        self.vectors.close()
        self.store.close()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # async twins: the same calls, off the event loop
    aobserve = _to_thread(observe)
    aobserve_many = _to_thread(observe_many)
    aremember = _to_thread(remember)
    aextract_facts = _to_thread(extract_facts)
    aconfirm = _to_thread(confirm)
    apin = _to_thread(pin)
    aget = _to_thread(get)
    arecall = _to_thread(recall)
    aconsolidate = _to_thread(consolidate)
    amaintenance_due = _to_thread(maintenance_due)
    ahistory = _to_thread(history)
    aforget = _to_thread(forget)
    aforget_namespace = _to_thread(forget_namespace)
    agc = _to_thread(gc)
    asweep = _to_thread(sweep)
    astats = _to_thread(stats)
    arepair = _to_thread(repair)


class _LexicalSide(NamedTuple):
    """What `MemoryEngine._lexical_side` learnt while the dense query ran."""

    hits: list[LexicalHit]
    cosines: dict[str, float]  # query cosine of hits whose embedding is kept
    early: dict[str, Memory]  # records already read
    times: dict[str, datetime]  # created_at of hits, where records were not read
    degrees: dict[str, int]  # degrees already read


def _vector_meta(m: Memory) -> dict[str, str | int | float | bool]:
    return {"status": m.status.value, "kind": m.kind.value}

