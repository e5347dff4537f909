"""Maintenance wiring: the REM cycle, triggers, sweep, GC and forget, given explicit deps.

Each operation gets its dependencies explicitly from the engine's context.

The algorithms live elsewhere (core/consolidation.py, core/triggers.py,
core/eviction.py, core/deletion.py) and take plain values and callables; this module
builds those from the engine's ports, so none of them knows the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from . import vector_sync
from .consolidation import DEFAULT_STRATEGY, ConsolidationReport, CycleDeps, run_cycle
from .context import EngineContext
from .deletion import EvictionDeps, GcReport, forget_cascade, gc
from .eviction import SweepReport, sweep
from .models import Memory, validate_namespace
from .ports import Synthesizer, Vector
from .triggers import Trigger, check_triggers


class Maintenance:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    def _index_changes(
        self, namespace: str, new: Sequence[tuple[Memory, Vector]], restatus: Sequence[Memory]
    ) -> None:
        vector_sync.index(self.ctx, namespace, new, restatus)

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
            index=self._index_changes,
            embed_memories=ctx.embed_memories,
            consolidate=consolidate,
            synthesizer=synthesizer,
        )

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

        def index_nodes(nodes: Sequence[Memory], retired: Sequence[Memory]) -> None:
            vecs = ctx.embed_memories(nodes)
            vector_sync.index(ctx, ns, list(zip(nodes, vecs, strict=True)), retired)

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
            ctx.retrievals.recent(ns), ctx.embed_memories,
        )

    def forget(self, memory_ids: Sequence[str], namespace: str | None) -> int:
        ns = self.ctx.namespace(namespace)
        ids = [i for i in memory_ids if isinstance(i, str) and i]
        if not ids:
            return 0
        return forget_cascade(self.eviction_deps(), ns, ids).deleted

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
        return n
