"""Administration: inspecting a namespace, export and import, repairing the vector index.

Reading a namespace whole (get, history, stats, listing), moving it out and back in
(export, import), and rebuilding the derived vector index from the records (repair).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import vector_sync
from .arbitration import version_links
from .codec import FORMAT_VERSION, edge_from_dict, edge_to_dict, memory_from_dict, memory_to_dict
from .context import EngineContext
from .errors import DimensionMismatch, InvalidInput, NotFound
from .models import Edge, Kind, Memory, Status, Tier, fact_key, parse_kind, validate_namespace
from .ports import VectorItem, WriteBatch

_EDGE_CHUNK = 500  # ids per edge read when exporting


@dataclass(slots=True)
class RepairReport:
    namespaces: int = 0
    indexed: int = 0
    removed: int = 0
    checked: int = 0
    per_namespace: dict[str, dict[str, int]] = field(default_factory=dict)


class Admin:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    def flush(self) -> None:
        self.ctx.reinforcer.flush()
        self.ctx.indexer.flush()

    def _embedder_tag(self) -> str:
        return f"{self.ctx.embedder.name}:{self.ctx.embedder.dimension}"

    def check_embedder(self) -> None:
        """A store's vectors are only comparable with the model that made them."""
        embedder = self.ctx.embedder
        stored = self.ctx.store.get_meta(vector_sync.META_EMBEDDER)
        if stored is None:
            self.ctx.store.set_meta(vector_sync.META_EMBEDDER, self._embedder_tag())
            return
        if stored != self._embedder_tag():
            name, _, dim = stored.rpartition(":")
            raise DimensionMismatch(
                f"this store was built with embedder {name!r} ({dim} dimensions) but the "
                f"engine was given {embedder.name!r} ({embedder.dimension} "
                "dimensions); open it with the same embedder, or re-embed everything "
                "with `reverie repair --reembed` (open_engine(..., check_embedder=False)"
                ".repair(reembed=True))"
            )

    # ------------------------------------------------------------------ inspection

    def get(self, memory_id: str, namespace: str | None) -> Memory:
        ns = self.ctx.namespace(namespace)
        m = self.ctx.store.get(ns, memory_id)
        if m is None:
            raise NotFound(f"no memory {memory_id!r} in namespace {ns!r}")
        return m

    def history(
        self, subject: str, predicate: str, namespace: str | None, kind: Kind | str
    ) -> list[Memory]:
        ns = self.ctx.namespace(namespace)
        return self.ctx.store.find_by_key(ns, fact_key(parse_kind(kind), subject, predicate))

    def versions(self, memory_id: str, namespace: str | None) -> list[Memory]:
        """The versions of a free-text memory, oldest first: every memory reachable from
        it over version links (supersessions and "updates" edges), either way."""
        ns = self.ctx.namespace(namespace)
        start = self.get(memory_id, ns)
        found = {start.id: start}
        frontier = [start.id]
        while frontier:
            links = version_links(self.ctx.store.edges(ns, frontier),
                                  {i: found[i] for i in frontier})
            new = sorted({n for i in frontier for n in links.get(i, ())} - found.keys())
            if not new:
                break
            found.update(self.ctx.store.get_many(ns, new))
            frontier = [i for i in new if i in found]
        return sorted(found.values(), key=lambda m: (m.created_at, m.id))

    def stats(self, namespace: str | None) -> dict[str, Any]:
        ctx = self.ctx
        ns = ctx.namespace(namespace)
        counts = ctx.store.count(ns)
        # a shared queue in front of the index (the vector outbox) says what waits in it
        pending = ctx.caps.pending
        return {
            "namespace": ns,
            **counts,
            "vectors": ctx.vectors.count(ns),
            **({"vectors_queued": pending(ns)} if pending is not None else {}),
            "embedder": f"{ctx.embedder.name} ({ctx.embedder.dimension}d)",
            "vector_repair_needed": ctx.store.get_meta(vector_sync.VECTORS_BEHIND) == "1",
        }

    def namespaces(self) -> list[str]:
        self.flush()
        return self.ctx.store.namespaces()

    def memories(
        self,
        namespace: str | None,
        statuses: Iterable[Status | str] | None,
        tiers: Iterable[Tier | str] | None,
    ) -> Iterator[Memory]:
        return self.ctx.store.scan(
            self.ctx.namespace(namespace),
            statuses=None if statuses is None else [Status(s) for s in statuses],
            tiers=None if tiers is None else [Tier(t) for t in tiers],
        )

    # ------------------------------------------------------------------ export / import

    def export(self, namespace: str | None) -> Iterator[dict[str, Any]]:
        ctx = self.ctx
        self.flush()
        spaces = [ctx.namespace(namespace)] if namespace is not None else ctx.store.namespaces()
        yield {"type": "reverie-export", "format": FORMAT_VERSION}
        for ns in spaces:
            ids: list[str] = []
            for m in ctx.store.scan(ns):
                ids.append(m.id)
                yield {"type": "memory", "record": memory_to_dict(m)}
            seen: set[tuple[str, str, str]] = set()
            for i in range(0, len(ids), _EDGE_CHUNK):
                for e in ctx.store.edges(ns, ids[i : i + _EDGE_CHUNK]):
                    key = (e.src, e.dst, e.type.value)
                    if key not in seen:
                        seen.add(key)
                        yield {"type": "edge", "namespace": ns, "record": edge_to_dict(e)}

    def import_(self, records: Iterable[Mapping[str, Any]], batch_size: int) -> dict[str, int]:
        ctx = self.ctx
        self.flush()
        counts = {"memories": 0, "edges": 0, "skipped": 0}
        memories: list[Memory] = []
        edges: list[tuple[str, Edge]] = []

        def flush() -> None:
            by_ns: dict[str, list[Memory]] = {}
            for m in memories:
                by_ns.setdefault(m.namespace, []).append(m)
            for ns, ms in by_ns.items():
                have = ctx.store.get_many(ns, [m.id for m in ms])
                fresh = [m for m in ms if m.id not in have or have[m.id].version < m.version]
                counts["skipped"] += len(ms) - len(fresh)
                if fresh:
                    ctx.store.commit(WriteBatch(ns, tuple(fresh), restore=True))
                    own = dict(zip((m.id for m in fresh), ctx.embed([m.text for m in fresh]),
                                   strict=True))
                    vecs = vector_sync.with_questions(ctx, ns, fresh, own)
                    vector_sync.index(ctx, ns, [(m, vecs[m.id]) for m in fresh])
                    counts["memories"] += len(fresh)
            memories.clear()
            by_edge: dict[str, list[Edge]] = {}
            for ns, e in edges:
                by_edge.setdefault(ns, []).append(e)
            for ns, es in by_edge.items():
                ctx.store.commit(WriteBatch(ns, (), tuple(es)))
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
        namespace: str | None,
        reembed: bool,
        batch_size: int,
        progress: Callable[[int], None] | None,
    ) -> RepairReport:
        ctx = self.ctx
        self.flush()
        report = RepairReport()
        spaces = [ctx.namespace(namespace)] if namespace is not None else ctx.store.namespaces()
        for ns in spaces:
            stats = self._repair_namespace(ns, reembed, batch_size, progress)
            report.per_namespace[ns] = stats
            report.namespaces += 1
            report.indexed += stats["indexed"]
            report.removed += stats["removed"]
            report.checked += stats["checked"]
        if reembed and namespace is None:  # only once every namespace has the new vectors
            ctx.store.set_meta(vector_sync.META_EMBEDDER, self._embedder_tag())
        if namespace is None:
            ctx.store.set_meta(vector_sync.VECTORS_BEHIND, "0")
        return report

    def _repair_namespace(
        self,
        ns: str,
        reembed: bool,
        batch_size: int,
        progress: Callable[[int], None] | None,
    ) -> dict[str, int]:
        ctx = self.ctx
        if reembed:
            ctx.vectors.drop_namespace(ns)
        indexed = ctx.vectors.ids(ns)
        seen: set[str] = set()
        todo: list[Memory] = []
        held: list[str] = []  # indexed already: only their kept embeddings may be missing
        stats = {"indexed": 0, "removed": 0, "checked": 0}

        def flush() -> None:
            if todo:
                # the vectors kept beside the records are the model's own output: reuse
                # them unless re-embedding, and keep what had to be embedded
                vecs = (
                    {} if reembed else vector_sync.kept_embeddings(ctx, ns, [m.id for m in todo])
                )
                fresh = [m for m in todo if m.id not in vecs]
                if fresh:
                    made = ctx.embed([m.text for m in fresh])
                    vecs.update(vector_sync.with_questions(
                        ctx, ns, fresh, dict(zip((m.id for m in fresh), made, strict=True))))
                    vector_sync.keep_embeddings(ctx, ns, {m.id: vecs[m.id] for m in fresh})
                ctx.vectors.upsert(ns, [VectorItem(m.id, vecs[m.id]) for m in todo])
                stats["indexed"] += len(todo)
                todo.clear()
            if held:
                vector_sync.backfill_embeddings(ctx, ns, held)
                held.clear()

        for m in ctx.store.scan(ns):
            seen.add(m.id)
            stats["checked"] += 1
            if m.id in indexed:
                held.append(m.id)
            else:
                todo.append(m)
            if len(todo) >= batch_size or len(held) >= 4 * batch_size:
                flush()
            if progress is not None:
                progress(1)
        flush()
        orphans = sorted(indexed - seen)
        if orphans:
            ctx.vectors.delete(ns, orphans)
        stats["removed"] = len(orphans)
        return stats
