"""`MemoryEngine`: the one face of the core, a thin facade over its parts.

It composes the ports (record store, lexical index, vector index, embedder, clock)
into the lifecycle and holds the public API in one place; each call is handed to the
part that does the work, all of them sharing one `EngineContext` (core/context.py):

- the write path, core/writing.py: observe, observe_many, remember, confirm, pin,
  extract_facts;
- recall, core/recall.py (results in core/results.py);
- maintenance, core/maintenance.py: consolidate, maintenance_due, sweep, gc, forget;
- administration, core/admin.py: get, history, stats, namespaces, memories, export,
  import_, repair;
- undo of a supersession, core/restore.py: restore.

It does no I/O itself; every byte goes through a port. Optional store and index
features are resolved once, here (core/capabilities.py).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any, Generic, ParamSpec, TypeVar, overload

from . import arbitration, capabilities, updates, validation, vector_sync
from . import text as text_rules
from .admin import Admin, RepairReport
from .clock import SystemClock
from .consolidation import ConsolidationReport
from .context import EngineContext
from .deletion import ForgetReport, GcReport, UndoReport
from .errors import InvalidInput
from .eviction import SweepReport
from .extraction import ExtractionReport
from .indexing import IndexWriter
from .maintenance import Maintenance
from .models import Kind, Memory, Status, Tier, new_id, parse_kind, validate_namespace
from .policy import DEFAULT_POLICY, Policy
from .ports import (
    Clock,
    Embedder,
    LexicalIndex,
    RecordStore,
    Synthesizer,
    TokenCounter,
    VectorIndex,
    VectorItem,
)
from .recall import RecallPath
from .reinforcement import Reinforcer
from .restore import restore_version
from .results import Hit, RecallResult, render_hit
from .triggers import RetrievalLog, Trigger
from .writing import Observation, WritePath

__all__ = [
    "Hit",
    "MemoryEngine",
    "Observation",
    "RecallResult",
    "RepairReport",
    "render_hit",
]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class _Shared(Generic[T]):
    """An engine attribute that is its context's field of the same name."""

    def __init__(self, read: Callable[[EngineContext], T]) -> None:
        self.read = read
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, engine: None, owner: type) -> _Shared[T]: ...

    @overload
    def __get__(self, engine: MemoryEngine, owner: type | None = None) -> T: ...

    def __get__(
        self, engine: MemoryEngine | None, owner: type | None = None
    ) -> T | _Shared[T]:
        if engine is None:  # on the class: the descriptor itself
            return self
        return self.read(engine._ctx)

    def __set__(self, engine: MemoryEngine, value: T) -> None:
        engine._replace(**{self.name: value})


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
        caps = capabilities.resolve(store, vectors, lexical)
        # the REM cycle's LLM (None: the extractive synthesizer, no LLM)
        self.synthesizer = synthesizer
        # recall's access reinforcement, written behind the caller when
        # policy.background.reinforce_async (core/reinforcement.py); its thread starts on first use
        self._reinforcer = Reinforcer(
            self._touch, capacity=policy.background.reinforce_queue,
            retries=policy.background.reinforce_retries,
            linger=(
                policy.background.reinforce_linger_shared_seconds if caps.store_remote
                else policy.background.reinforce_linger_seconds
            ),
            apply_many=self._touch_many if caps.touch_many is not None else None,
        )
        # observe's new vectors, written behind the caller in batches when
        # policy.background.index_async (core/indexing.py); its thread starts on first use
        self._indexer = IndexWriter(
            self._write_queued, capacity=policy.background.index_queue,
            retries=policy.background.index_retries,
            on_failure=self._queued_write_failed,
        )
        self._wire(EngineContext(
            store=store,
            lexical=lexical,
            vectors=vectors,
            embedder=embedder,
            policy=policy,
            clock=clock or SystemClock(),
            caps=caps,
            default_namespace=validate_namespace(default_namespace),
            token_counter=token_counter,
            new_id=id_factory,
            reinforcer=self._reinforcer,
            indexer=self._indexer,
            pool=ThreadPoolExecutor(max_workers=2, thread_name_prefix="reverie-recall"),
            retrievals=RetrievalLog(policy.maintenance.trigger_retrieval_window),
        ))
        if check_embedder:  # off only to re-embed a store after a model change
            self._admin.check_embedder()
            if policy.background.check_vectors_on_open:
                # a process killed with vectors queued left records without them: flag it
                vector_sync.find_behind(self._ctx)
        self._maintenance.finish_forgets()  # a forget a crash interrupted is finished now

    def _wire(self, ctx: EngineContext) -> None:
        """Build the parts around one context (again when the policy or embedder changes)."""
        self._ctx = ctx
        self._writes = WritePath(ctx)
        self._recall = RecallPath(ctx)
        self._maintenance = Maintenance(ctx)
        self._admin = Admin(ctx)

    # The ports, policy and clock are the context's (`_Shared` below); replacing one (a
    # test swaps the embedder, a benchmark the policy) builds a new context and new parts.
    store = _Shared[RecordStore](lambda ctx: ctx.store)
    lexical = _Shared[LexicalIndex](lambda ctx: ctx.lexical)
    vectors = _Shared[VectorIndex](lambda ctx: ctx.vectors)
    embedder = _Shared[Embedder](lambda ctx: ctx.embedder)
    policy = _Shared[Policy](lambda ctx: ctx.policy)
    clock = _Shared[Clock](lambda ctx: ctx.clock)
    default_namespace = _Shared[str](lambda ctx: ctx.default_namespace)
    token_counter = _Shared[TokenCounter | None](lambda ctx: ctx.token_counter)

    def _replace(self, **changes: Any) -> None:
        ctx = replace(self._ctx, **changes)
        if changes.keys() & {"store", "vectors", "lexical"}:
            ctx = replace(ctx, caps=capabilities.resolve(ctx.store, ctx.vectors, ctx.lexical))
        self._wire(ctx)

    # the background workers' callbacks: they read the engine's context as it is now
    def _touch(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        self._ctx.touch(namespace, ids, at)

    def _touch_many(
        self, namespace: str, events: Sequence[tuple[Sequence[str], datetime]]
    ) -> None:
        self._ctx.touch_many(namespace, events)

    def _write_queued(self, namespace: str, new: Sequence[VectorItem]) -> None:
        vector_sync.write_queued(self._ctx, namespace, new)

    def _queued_write_failed(
        self, namespace: str, ids: Sequence[str], error: BaseException
    ) -> None:
        vector_sync.queued_write_failed(self._ctx)

    def flush_reinforcement(self) -> None:
        """Wait until every recall's access reinforcement and every vector observe queued
        is written. Engine methods that read or write do this themselves; call it before
        reading `engine.store` or `engine.vectors` directly, or from another engine on the
        same store."""
        self._reinforcer.flush()
        self._indexer.flush()

    flush = flush_reinforcement

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
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> list[Memory]:
        """`observe` for many texts at once, embedding them in batches (bulk ingest is
        several times faster). Every item is validated before anything is written, and
        each item is then its own atomic write, in order.

        `batch_size` texts go to the embedder in one call and are written in one
        transaction. 256 rather than 64: a local model pads each of its batches to the
        longest text and sorts what it is handed by length, so a larger call wastes less
        on padding (MiniLM embeds LoCoMo's turns 1.6x faster at 256 than at 64), and
        the store rewrites each touched block of postings once per call. The price: a
        chunk's writes hold the store's write lock together, so other writers wait for
        a larger chunk longer."""
        items = validation.items(items, "items")
        validation.positive_int(batch_size, "batch_size")
        validation.callback(progress, "progress")
        return self._writes.observe_many(items, namespace, batch_size, progress)

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
        return self._writes.remember(
            subject, predicate, object, namespace=namespace, source=source, kind=kind,
            at=at, importance=importance, confidence=confidence, text=text,
            metadata=metadata, index=index,
        )

    def confirm(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """The user vouches for this memory: it becomes a crystal (never decays or evicts)."""
        validation.identifier(memory_id, "memory_id", self.policy)
        return self._writes.confirm(memory_id, namespace)

    def pin(
        self, memory_id: str, *, namespace: str | None = None, pinned: bool = True
    ) -> Memory:
        """'Always remember': a pinned memory never decays out of recall."""
        validation.identifier(memory_id, "memory_id", self.policy)
        validation.flag(pinned, "pinned")
        return self._writes.pin(memory_id, namespace, pinned)

    def extract_facts(
        self,
        *,
        synthesizer: Synthesizer,
        namespace: str | None = None,
        since: datetime | None = None,
    ) -> ExtractionReport:
        """Facts from the namespace's active traces (created at or after `since`), asked
        of an LLM in batches of `policy.funnel.extraction_batch_size` and written with
        `remember(..., source=<trace id>)` at the trace's time. Off the hot path; a re-run
        changes nothing (a source that already said a fact is a replay). See
        core/extraction.py for the prompt, the validation and the retries."""
        _check_synthesizer(synthesizer, required=True)
        since = validation.when(since, "since")
        return self._writes.extract_facts(synthesizer, namespace, since)

    # ------------------------------------------------------------------ read path

    def get(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        validation.identifier(memory_id, "memory_id", self.policy)
        return self._admin.get(memory_id, namespace)

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
        query_vector: Iterable[float] | None = None,
    ) -> RecallResult:
        """The k most useful memories for `query`, best first, each with its explanation.

        `as_of` answers with what was believed at that time (superseded versions valid
        then included, decay measured then, nothing reinforced). `include_history`
        also returns superseded and consolidated memories. Recalled memories are
        reinforced (their decay clock restarts) unless `reinforce=False`. `query_vector`
        is `query`'s embedding by this engine's embedder, when the caller already has it:
        searching many namespaces for one query then embeds it once."""
        policy = self.policy
        validation.text(query, "query", policy)
        validation.positive_int(
            k, "k", policy.retrieval.max_recall_k, "Policy.retrieval.max_recall_k"
        )
        as_of = validation.when(as_of, "as_of")
        validation.flag(include_history, "include_history")
        validation.flag(reinforce, "reinforce")
        if token_budget is not None:
            validation.positive_int(
                token_budget, "token_budget", policy.retrieval.max_token_budget,
                "Policy.retrieval.max_token_budget",
            )
        validated_kinds = validation.kinds(kinds)
        ns = self._ctx.namespace(namespace, flush=False)
        request = self._recall.request(
            query, k=k, as_of=as_of, include_history=include_history,
            token_budget=token_budget, reinforce=reinforce, kinds=validated_kinds,
            query_vector=query_vector,
        )
        return self._recall.recall(ns, request)

    def history(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        *,
        memory_id: str | None = None,
        namespace: str | None = None,
        kind: Kind | str = Kind.SEMANTIC,
    ) -> list[Memory]:
        """Every version of a fact, oldest first: what was believed, and from when to when.
        A keyed fact is named by `subject` and `predicate`; a free-text memory by
        `memory_id` (its versions are the traces linked to it as older or newer ones, each
        newer one carrying in its metadata why it was judged one, under "reverie_update",
        and each retired one why, under "reverie_superseded")."""
        parse_kind(kind)
        if memory_id is not None:
            validation.identifier(memory_id, "memory_id", self.policy)
            if subject is not None or predicate is not None:
                raise InvalidInput("pass either subject and predicate, or memory_id")
            return self._admin.versions(memory_id, namespace)
        if subject is None or predicate is None:
            raise InvalidInput("history needs a subject and a predicate, or a memory_id")
        validation.text(subject, "subject", self.policy)
        validation.text(predicate, "predicate", self.policy)
        return self._admin.history(subject, predicate, namespace, kind)

    def restore(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """Undo a supersession: the superseded version `memory_id` becomes current again,
        and the version that replaced it is superseded by it (a REM synthesis is unlinked
        instead, since it holds other memories too). One atomic write; the reason is kept
        in both records' metadata ("reverie_restored", "reverie_superseded") and shows in
        `history(memory_id=...)` and in recall's explanation (core/restore.py). Raises
        `NotFound` for an id this namespace does not hold and `NotSuperseded` for a
        version that is not superseded; nothing is written then."""
        restored = restore_version(self._ctx, memory_id, namespace)
        self._writes.versions.forget_recent(restored.namespace)
        return restored

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
    ) -> ConsolidationReport:
        """One REM cycle (core/consolidation.py): weak memories are clustered and each
        cluster becomes one synthesis node; members are retired, never deleted. Holds the
        namespace's maintenance lock; crash-safe and idempotent. `synthesizer` overrides
        the engine's (None for both: the extractive synthesizer, no LLM). `dry_run`
        returns the clusters and previews and writes nothing."""
        _check_synthesizer(synthesizer)
        if strategy is not None:
            from .clustering import STRATEGIES

            if strategy not in STRATEGIES:
                raise InvalidInput(
                    f"unknown clustering strategy {strategy!r}; choose one of "
                    + ", ".join(STRATEGIES)
                )
        validation.flag(dry_run, "dry_run")
        if max_workers is not None:
            validation.positive_int(max_workers, "max_workers")
        validation.callback(progress, "progress")
        validation.callback(kill_hook, "kill_hook")
        self._heal(self._ctx.namespace(namespace, flush=False, index=False), dry_run)
        return self._maintenance.consolidate(
            namespace,
            synthesizer=synthesizer if synthesizer is not None else self.synthesizer,
            strategy=strategy,
            dry_run=dry_run,
            max_workers=max_workers,
            progress=progress,
            kill_hook=kill_hook,
        )

    def maintenance_due(self, namespace: str | None = None) -> list[Trigger]:
        """The maintenance triggers that fire now, each saying which and why (empty: none).
        See `triggers.due_triggers` for the five signals."""
        return self._maintenance.due(namespace)

    # ------------------------------------------------------------------ deletion

    def forget(
        self, *memory_ids: str, namespace: str | None = None, compact: bool = False
    ) -> int:
        """Erasure, for privacy: each memory, every version of it (its superseded history,
        both ways) and everything it was made from (a synthesis's members) are deleted
        for real: records, edges, lexical entries, vectors and the index's write log. A
        synthesis that drew on them is rebuilt from its other members, or dropped when
        fewer than two remain. The store's files are cleaned (SQLite's WAL truncated);
        `compact=True` also rewrites a Redis AOF. Journaled: a crash part way is finished
        by the next open or `gc` (core/deletion.py). Returns the records deleted. To undo
        a bad consolidation instead, use `undo_consolidation`."""
        memory_ids = validation.identifiers(memory_ids, "each memory id", self.policy)
        report = self._maintenance.forget(memory_ids, namespace, compact=compact)
        self._forgot()
        return report.deleted

    def forget_matching(
        self, text: str, *, namespace: str | None = None, compact: bool = False,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Erase every memory that holds `text` (case-insensitive, a whole text or a part
        of one) in any status: active, consolidated, archived, superseded, syntheses, in
        the text, metadata, sources, entities or fact; with the same reach as `forget`.
        Members GC already collected are found by their whole text only (a synthesis keeps
        their text's hash). Returns what was erased, rebuilt and dropped; `dry_run=True`
        returns what would be erased (`erased`) and the syntheses that would be rebuilt or
        dropped (`rebuilt`), and changes nothing."""
        report = self._maintenance.forget_matching(
            text, namespace, compact=compact, dry_run=dry_run
        )
        self._forgot()
        return report

    def undo_consolidation(
        self, synthesis_id: str, *, namespace: str | None = None
    ) -> UndoReport:
        """Undo a bad consolidation: the synthesis is deleted and its members are active
        again. Not erasure (the members keep their text); `forget` erases."""
        return self._maintenance.undo_consolidation(synthesis_id, namespace)

    def purge_residue(
        self, *, namespace: str | None = None, compact: bool = True
    ) -> dict[str, Any]:
        """Clean deleted bytes out of the store's files: SQLite's WAL is checkpointed and
        truncated (and with `compact` the file vacuumed); on Redis, with `compact`, the AOF
        is rewritten and an RDB snapshot retaken, waiting until done (docs/durability.md)."""
        return dict(self._maintenance.purge_residue(namespace, compact))

    def gc(
        self,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> GcReport:
        """Delete archived memories decayed below `policy.maintenance.gc_salience`, and
        consolidated or archived members below it whose synthesis has stood
        `gc_member_grace_days` (the synthesis keeps their ids, sources, times and text
        hashes); never retention-exempt or pinned ones. Also finishes interrupted forgets
        and deletes vectors whose record is gone (core/deletion.py). `namespace=None`:
        every namespace."""
        _check_namespace(namespace)
        validation.flag(dry_run, "dry_run")
        validation.callback(progress, "progress")
        self._heal(namespace, dry_run)
        return self._maintenance.gc(namespace, dry_run, progress)

    def sweep(
        self,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
        synthesizer: Synthesizer | None = None,
    ) -> SweepReport:
        """Distil, then archive, memories decayed below `evict_salience`; over the
        hard cap, merge first and archive the lowest scores (core/eviction.py).
        `namespace=None`: every namespace."""
        _check_namespace(namespace)
        validation.flag(dry_run, "dry_run")
        validation.callback(progress, "progress")
        _check_synthesizer(synthesizer)
        self._heal(namespace, dry_run)
        return self._maintenance.sweep(
            namespace, dry_run=dry_run, progress=progress, synthesizer=synthesizer,
            default_synthesizer=self.synthesizer, consolidate=self.consolidate,
        )

    def forget_namespace(self, namespace: str) -> int:
        """Delete everything a namespace holds (a user's right to erasure)."""
        validate_namespace(namespace)
        deleted = self._maintenance.forget_namespace(namespace)
        self._forgot()
        return deleted

    def _forgot(self) -> None:
        """No forgotten text stays in this process: not in the write path's recent turns,
        nor among the texts whose readings and hashes are remembered for speed."""
        self._writes.versions.forget_recent()
        for module in (arbitration, updates, text_rules):
            module.forget_cached_texts()

    # ------------------------------------------------------------------ inspection

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        """Counts of a namespace's memories by status and tier, its vectors, and whether
        the vector index needs `repair` (`vector_repair_needed`: the store is flagged, or
        this namespace has records without vectors)."""
        out = self._admin.stats(namespace)
        if not out.get("vector_repair_needed"):
            out["vector_repair_needed"] = (
                vector_sync.missing_vectors(self._ctx, out["namespace"]) > 0
            )
        return out

    def _heal(self, namespace: str | None, dry_run: bool) -> None:
        """A maintenance run first repairs the vectors a crash left behind (a dry run
        changes nothing)."""
        if not dry_run:
            vector_sync.heal(self._ctx, namespace, lambda ns: self.repair(namespace=ns))

    def namespaces(self) -> list[str]:
        return self._admin.namespaces()

    def memories(
        self,
        *,
        namespace: str | None = None,
        statuses: Iterable[Status | str] | None = None,
        tiers: Iterable[Tier | str] | None = None,
    ) -> Iterator[Memory]:
        """Every memory of a namespace (optionally by status and tier), in a stable order,
        streamed from the store so a large namespace is never loaded at once."""
        return self._admin.memories(
            namespace, validation.statuses(statuses), validation.tiers(tiers)
        )

    # ------------------------------------------------------------------ export / import

    def export(self, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """JSON-ready records: a header, then every memory (all statuses) and edge.
        `namespace=None` exports every namespace."""
        _check_namespace(namespace)
        return self._admin.export(namespace)

    def import_(
        self, records: Iterable[Mapping[str, Any]], *, batch_size: int = 256
    ) -> dict[str, int]:
        """Restore an export. Each batch is validated whole before it is written, and
        memories already present at the same or a newer version are left alone, so an
        import can be re-run after an interruption."""
        validation.positive_int(batch_size, "batch_size")
        return self._admin.import_(
            validation.import_records(records, self.policy), batch_size
        )

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
        drop what has no record, keep beside each record the vector it lacks.
        `reembed=True` re-embeds everything with the current embedder (after a model
        change)."""
        _check_namespace(namespace)
        validation.flag(reembed, "reembed")
        validation.positive_int(batch_size, "batch_size")
        validation.callback(progress, "progress")
        return self._admin.repair(namespace, reembed, batch_size, progress)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._ctx.pool.shutdown(wait=True)
        self._reinforcer.close()  # drain: queued touches are written, not dropped
        self._indexer.close()  # drain: queued vectors are written before the index closes
        self.vectors.close()
        self.store.close()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # async twins: the same calls, off the event loop (the same checks, in the worker)
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
    arestore = _to_thread(restore)
    aforget = _to_thread(forget)
    aforget_namespace = _to_thread(forget_namespace)
    aforget_matching = _to_thread(forget_matching)
    aundo_consolidation = _to_thread(undo_consolidation)
    apurge_residue = _to_thread(purge_residue)
    agc = _to_thread(gc)
    asweep = _to_thread(sweep)
    astats = _to_thread(stats)
    arepair = _to_thread(repair)


def _check_namespace(namespace: object) -> None:
    """None (every namespace, or the default) or a valid namespace name."""
    if namespace is not None:
        validate_namespace(namespace)


def _check_synthesizer(synthesizer: object, *, required: bool = False) -> None:
    if synthesizer is None and not required:
        return
    if not callable(getattr(synthesizer, "synthesize", None)):
        raise InvalidInput(
            "synthesizer must be a Synthesizer (an object with synthesize(prompt, schema)), "
            f"got {type(synthesizer).__name__}"
        )
