"""Maintenance wiring: the REM cycle, triggers, sweep, GC and forget, given explicit deps.

Each operation gets its dependencies explicitly from the engine's context.

The algorithms live elsewhere (core/consolidation.py, core/triggers.py,
core/eviction.py, core/deletion.py) and take plain values and callables; this module
builds those from the engine's ports, so none of them knows the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import vector_sync
from .consolidation import DEFAULT_STRATEGY, ConsolidationReport, CycleDeps, run_cycle
from .context import EngineContext
from .deletion import (
    EvictionDeps,
    ForgetReport,
    GcReport,
    UndoReport,
    finish_forgets,
    forget_cascade,
    forget_matching,
    gc,
    undo_consolidation,
)
from .errors import InvalidInput, ReverieError
from .eviction import SweepReport, sweep
from .models import Memory, validate_namespace
from .ports import Synthesizer, Vector
from .triggers import Trigger, check_triggers

log = logging.getLogger("reverie.maintenance")


class Maintenance:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    def _index_new(self, namespace: str, new: Sequence[tuple[Memory, Vector]]) -> None:
        vector_sync.index(self.ctx, namespace, new)

    def eviction_deps(
        self,
        synthesizer: Synthesizer | None = None,
        consolidate: Callable[[str], object] | None = None,
    ) -> EvictionDeps:
        ctx = self.ctx
        return EvictionDeps(
            store=ctx.store,
            vectors=ctx.vectors,
            policy=ctx.policy,
            clock=ctx.clock,
            namespace=ctx.namespace,
            index=self._index_new,
            embed_memories=ctx.embed_memories,
            consolidate=consolidate,
            synthesizer=synthesizer,
            residue=self.erase_residue,
            stored_vectors=lambda ns, ms: vector_sync.stored_or_embedded(ctx, ns, ms),
            node_vectors=lambda ns, ms: vector_sync.node_vectors(ctx, ns, ms),
        )

    def erase_residue(
        self, namespace: str, ids: Sequence[str], compact: bool
    ) -> Mapping[str, Any]:
        """After a deletion: the deleted vectors' entries leave the index's write log,
        and the store's files are cleaned (core/ports.py `PurgesLog`, `ErasesResidue`). An
        index left holding mostly deleted vectors is rebuilt from its live ones
        (`CompactsIndex`), after the purge so the rebuild copies no erased vector."""
        caps = self.ctx.caps
        done: dict[str, Any] = {}
        if ids and caps.purge_log is not None:
            done["index_log_entries"] = caps.purge_log(namespace, ids)
        if ids and caps.compact_index is not None:
            limit = self.ctx.policy.maintenance.index_compact_deleted_fraction
            freed = caps.compact_index(namespace, limit)
            if freed:
                done["index_slots_freed"] = freed
        if caps.erase_residue is not None:
            done.update(caps.erase_residue(compact))
        return done

    def consolidate(
        self,
        namespace: str | None,
        *,
        synthesizer: Synthesizer | None,
        strategy: str | None,
        dry_run: bool,
        max_workers: int | None,
        progress: Callable[[str, int, int], None] | None,
        kill_hook: Callable[[str], None] | None,
    ) -> ConsolidationReport:
        ctx = self.ctx
        ns = ctx.namespace(namespace)

        def index_nodes(nodes: Sequence[Memory]) -> None:
            vecs = vector_sync.node_vectors(ctx, ns, nodes)
            vector_sync.index(ctx, ns, list(zip(nodes, vecs, strict=True)))

        near = ctx.caps.neighbors  # the index's approximate k-NN (`FindsNeighbors`)

        def neighbors_of(ids: Sequence[str], k: int) -> dict[str, list[str]]:
            assert near is not None
            return {q: [h.id for h in hits] for q, hits in near(ns, ids, k).items()}

        deps = CycleDeps(
            ctx.store,
            ctx.policy,
            ctx.clock.now(),
            lambda ms: vector_sync.stored_or_embedded(ctx, ns, ms),
            index_nodes,
            neighbors_of if near is not None else None,
            ctx.caps.together,
        )
        return run_cycle(
            deps,
            ns,
            synthesizer=synthesizer,
            strategy=strategy or DEFAULT_STRATEGY,
            dry_run=dry_run,
            max_workers=max_workers,
            progress=progress,
            kill_hook=kill_hook,
        )

    def due(self, namespace: str | None) -> list[Trigger]:
        ctx = self.ctx
        ns = ctx.namespace(namespace)
        return check_triggers(
            ctx.store, ctx.vectors, ns, ctx.clock.now(), ctx.policy,
            ctx.retrievals.recent(ns), lambda ms: vector_sync.stored_or_embedded(ctx, ns, ms),
            ctx.caps.last_write, ctx.caps.newest_active,
        )

    def forget(
        self, memory_ids: Sequence[str], namespace: str | None, *, compact: bool = False
    ) -> ForgetReport:
        ns = self.ctx.namespace(namespace)
        bad = [i for i in memory_ids if not isinstance(i, str) or not i]
        if bad:
            raise InvalidInput(f"memory ids must be non-empty text, got {bad[0]!r}")
        if not memory_ids:
            return ForgetReport()
        return forget_cascade(self.eviction_deps(), ns, list(memory_ids), compact=compact)

    def forget_matching(
        self, text: str, namespace: str | None, *, compact: bool = False, dry_run: bool = False
    ) -> ForgetReport:
        ns = self.ctx.namespace(namespace)
        return forget_matching(self.eviction_deps(), ns, text, compact=compact, dry_run=dry_run)

    def undo_consolidation(self, synthesis_id: str, namespace: str | None) -> UndoReport:
        if not isinstance(synthesis_id, str) or not synthesis_id:
            raise InvalidInput(f"a synthesis id must be non-empty text, got {synthesis_id!r}")
        ns = self.ctx.namespace(namespace)
        return undo_consolidation(self.eviction_deps(), ns, synthesis_id)

    def finish_forgets(self) -> int:
        """Finish forgets a crash interrupted (on open). An index or store that is down
        leaves them journaled for the next open or `gc`, with a warning."""
        try:
            return finish_forgets(self.eviction_deps())
        except ReverieError as e:
            log.warning("an interrupted forget could not be finished yet (%s); the next "
                        "open or gc retries it", e)
            return 0

    def purge_residue(self, namespace: str | None, compact: bool) -> Mapping[str, Any]:
        self.ctx.reinforcer.flush()
        self.ctx.indexer.flush()
        ns = self.ctx.namespace(namespace) if namespace is not None else ""
        return self.erase_residue(ns, [], compact)

    def gc(
        self, namespace: str | None, dry_run: bool, progress: Callable[[int], None] | None
    ) -> GcReport:
        self.ctx.reinforcer.flush()
        self.ctx.indexer.flush()
        return gc(self.eviction_deps(), namespace, dry_run=dry_run, progress=progress)

    def sweep(
        self,
        namespace: str | None,
        *,
        dry_run: bool,
        progress: Callable[[int], None] | None,
        synthesizer: Synthesizer | None,
        default_synthesizer: Synthesizer | None,
        consolidate: Callable[[str], object],
    ) -> SweepReport:
        self.ctx.reinforcer.flush()
        self.ctx.indexer.flush()
        deps = self.eviction_deps(default_synthesizer, consolidate)
        return sweep(deps, namespace, dry_run=dry_run, progress=progress, synthesizer=synthesizer)

    def forget_namespace(self, namespace: str) -> int:
        ns = validate_namespace(namespace)
        self.ctx.reinforcer.flush()
        self.ctx.indexer.flush()
        n = self.ctx.store.delete_namespace(ns)
        self.ctx.vectors.drop_namespace(ns)
        self.erase_residue(ns, [], False)  # SQLite's WAL truncated: no page of it stays there
        return n
