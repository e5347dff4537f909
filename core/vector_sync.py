"""Keeping the derived vector index (and the kept embeddings) in step with the records.

Write order is record first, vectors second: the record store is the truth and the
vector index is derived, so a crash between the two leaves a record that `repair()`
can index, never a vector without a record. A failed index write does not undo the
record: it is logged and the store is flagged (`VECTORS_BEHIND`) for `repair()`. A
process killed with vectors still queued cannot flag anything: the next engine to open
the store finds the records that outnumber their vectors (`find_behind`) and flags it,
and the next maintenance run repairs them first (`heal`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .context import EngineContext
from .erasure import context_of
from .models import Memory
from .ports import Vector, VectorItem

log = logging.getLogger("reverie")

META_EMBEDDER = "embedder"  # store meta: "<embedder name>:<dimension>" its vectors came from
VECTORS_BEHIND = "vectors_behind"  # store meta: "1" while the index may miss writes

_STORED_CHUNK = 1000  # ids per read of stored vectors

def reply_vector(own: Vector, question: Vector, weight: float) -> Vector:
    """A reply's indexed vector: its own plus `weight` of the question it answers, at unit
    length (`Policy.retrieval.reply_context_weight`); its own when the sum is zero."""
    mixed = np.asarray(own, dtype=np.float32) + np.float32(weight) * np.asarray(
        question, dtype=np.float32)
    norm = float(np.linalg.norm(mixed))
    return (mixed / np.float32(norm)).astype(np.float32) if norm > 0 else own


def with_questions(
    ctx: EngineContext, namespace: str, memories: Sequence[Memory], own: Mapping[str, Vector]
) -> dict[str, Vector]:
    """`own` (each memory's vector from its own text, just embedded), with each reply's
    question mixed in again where the question is still held: an import or a re-embedding
    keeps what the write path indexed. The question's own vector is the batch's when it is
    there and no reply itself, else its text is embedded."""
    out = dict(own)
    weight = ctx.policy.retrieval.reply_context_weight
    asked = {m.id: q for m in memories if m.id in own and (q := context_of(m)) is not None}
    if not asked or weight <= 0:
        return out
    replies = {m.id for m in memories if context_of(m) is not None}
    known = {q: own[q] for q in asked.values() if q in own and q not in replies}
    held = ctx.store.get_many(namespace, sorted(set(asked.values()) - set(known)))
    if held:
        ids = sorted(held)
        known.update(zip(ids, ctx.embed([held[i].text for i in ids]), strict=True))
    for mid, q in asked.items():
        if q in known:
            out[mid] = reply_vector(own[mid], known[q], weight)
    return out


def index(
    ctx: EngineContext,
    namespace: str,
    new: Sequence[tuple[Memory, Vector]],
    *,
    behind: bool = False,
) -> None:
    """Index the vectors of memories a committed write created. A vector goes in with no
    metadata: the records are the only truth about a memory (every reader of hits reads
    them), so retiring, restoring or archiving one writes no index call at all (a REM
    cycle at 100k retires some 100,000 members), and Chroma writes a vector without
    metadata in about three quarters of the time it takes with one field. `behind`
    (observe) queues the write for the index writer when `policy.background.index_async`,
    so the caller does not wait for the vector index."""
    if not new:
        return
    if behind and ctx.policy.background.index_async:  # the writer keeps the embeddings too
        ctx.indexer.submit(namespace, [VectorItem(m.id, v) for m, v in new])
        return
    keep_embeddings(ctx, namespace, {m.id: v for m, v in new})
    try:
        ctx.vectors.upsert(namespace, [VectorItem(m.id, v) for m, v in new])
    except Exception as e:  # the record is safe; the index is behind
        log.warning("vector index update failed (%s); run `reverie repair`", e)
        ctx.store.set_meta(VECTORS_BEHIND, "1")


def write_queued(ctx: EngineContext, namespace: str, new: Sequence[VectorItem]) -> None:
    """One merged batch of the index writer (core/indexing.py), applied."""
    if new:
        keep_embeddings(ctx, namespace, {it.id: it.vector for it in new})
        ctx.vectors.upsert(namespace, new)


def queued_write_failed(ctx: EngineContext) -> None:
    """A background index write gave up: flag the index for `repair()`, as a failed
    inline write does."""
    ctx.store.set_meta(VECTORS_BEHIND, "1")


def keep_embeddings(ctx: EngineContext, namespace: str, vectors: Mapping[str, Vector]) -> None:
    """Keep vectors beside their records where the store can (`KeepsEmbeddings`): recall
    then scores lexical-only candidates without a round trip to the vector index. Best
    effort like the index itself: without them recall asks the index, and `repair` fills
    them in."""
    put = ctx.caps.put_embeddings
    if put is None or not vectors:
        return
    try:
        put(namespace, vectors)
    except Exception as e:
        log.warning("keeping embeddings beside the records failed (%s)", e)


def kept_embeddings(ctx: EngineContext, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
    """The embeddings kept beside the records that fit the current embedder."""
    kept = ctx.caps.embeddings
    if kept is None or not ids:
        return {}
    dim = (ctx.embedder.dimension,)
    return {i: v for i, v in kept(namespace, ids).items() if v.shape == dim}


def backfill_embeddings(ctx: EngineContext, namespace: str, ids: Sequence[str]) -> None:
    """Records indexed before embeddings were kept beside them (or whose keeping
    failed) get them from the vector index, which holds the same model output."""
    fetch = ctx.caps.stored_vectors
    if fetch is None or ctx.caps.put_embeddings is None:
        return
    lacking = [i for i in ids if i not in kept_embeddings(ctx, namespace, ids)]
    if lacking:
        keep_embeddings(ctx, namespace, fetch(namespace, lacking))


def _stored(ctx: EngineContext, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
    """The vectors of `ids` kept beside the records, else the index's stored ones where it
    hands them out (`HandsOutVectors`); ids with neither are left out."""
    fetch = ctx.caps.stored_vectors
    dim = (ctx.embedder.dimension,)
    found: dict[str, Vector] = {}
    for s in range(0, len(ids), _STORED_CHUNK):
        part = list(ids[s : s + _STORED_CHUNK])
        found.update(kept_embeddings(ctx, namespace, part))
        rest = [i for i in part if i not in found]
        if fetch is not None and rest:
            found.update({k: v for k, v in fetch(namespace, rest).items() if np.shape(v) == dim})
    return found


def node_vectors(ctx: EngineContext, namespace: str, nodes: Sequence[Memory]) -> Vector:
    """Vectors for new synthesis nodes. An extractive synthesis holds its members' own
    words, so its vector is the normalised mean of its members' vectors, read where they
    are kept: no model time. Embedding each synthesis instead (a long text: a year of
    maintenance embeds four times the tokens of the whole stream) was most of
    maintenance's time, and a text past the model's window loses its later members
    anyway. A model's synthesis (its own words), or a node with a member whose vector is
    not at hand, is embedded."""
    dim = ctx.embedder.dimension
    out = np.zeros((len(nodes), dim), dtype=np.float32)
    wanted = [
        r for r, n in enumerate(nodes)
        if n.derived_from and n.metadata.get("synthesis", {}).get("synthesizer") == "extractive"
    ]
    found = _stored(ctx, namespace, sorted({i for r in wanted for i in nodes[r].derived_from}))
    done: set[int] = set()
    for r in wanted:
        members = [found.get(i) for i in sorted(nodes[r].derived_from)]
        if any(v is None for v in members):
            continue
        mean = np.mean(np.asarray(members, dtype=np.float32), axis=0)
        norm = float(np.linalg.norm(mean))
        if norm > 0.0:
            out[r] = mean / norm
            done.add(r)
    embed = [r for r in range(len(nodes)) if r not in done]
    if embed:
        out[embed] = ctx.embed_memories([nodes[r] for r in embed])
    return out


def stored_or_embedded(ctx: EngineContext, namespace: str, memories: Sequence[Memory]) -> Vector:
    """Vectors for clustering: those kept beside the records, else the index's stored
    ones where it hands them out (`HandsOutVectors`), embedded otherwise: re-embedding
    every flagged memory would cost the cycle far more model time than reading."""
    stored = _stored(ctx, namespace, [m.id for m in memories])
    missing = [m for m in memories if m.id not in stored]
    if missing:
        stored.update(zip((m.id for m in missing), ctx.embed_memories(missing), strict=True))
    if not memories:
        return np.zeros((0, ctx.embedder.dimension), dtype=np.float32)
    return np.stack([stored[m.id] for m in memories]).astype(np.float32)


# ---------------------------------------------------------------------- vectors behind


def missing_vectors(ctx: EngineContext, namespace: str) -> int:
    """How many more records the namespace holds than the vector index has vectors for
    (vectors waiting in a shared outbox count as there). More than 0: records a crash,
    a kill or a failed index write left without their vector, which dense recall cannot
    find until `repair` indexes them. A fact stored with `index=False` counts too."""
    records = ctx.store.count(namespace).get("total", 0)
    have = ctx.vectors.count(namespace)
    queued = ctx.caps.pending(namespace) if ctx.caps.pending is not None else 0
    return max(0, records - have - queued)


def find_behind(ctx: EngineContext, namespaces: Sequence[str] | None = None) -> list[str]:
    """The namespaces (all of them by default) whose records outnumber their vectors; the
    store is flagged (`VECTORS_BEHIND`) when there is any, so the state survives the
    process and every engine on the store reports it."""
    spaces = ctx.store.namespaces() if namespaces is None else namespaces
    suspects = {ns: _unindexed(ctx, ns) for ns in spaces if missing_vectors(ctx, ns) > 0}
    behind = list(suspects)
    settle = ctx.policy.background.vectors_settle_seconds
    if suspects and settle > 0:
        # Another live process commits a record before its vector: what it has in flight
        # lands within moments, so only records still without a vector a moment later
        # (and not deleted meanwhile) are behind.
        time.sleep(settle)
        behind = [ns for ns, ids in suspects.items() if _still_unindexed(ctx, ns, ids)]
    if behind and ctx.store.get_meta(VECTORS_BEHIND) != "1":
        ctx.store.set_meta(VECTORS_BEHIND, "1")
    return behind


def _unindexed(ctx: EngineContext, namespace: str) -> set[str]:
    """The ids of the namespace's records that have no vector (one pass over the ids)."""
    have = ctx.vectors.ids(namespace)
    return {m.id for m in ctx.store.scan(namespace) if m.id not in have}


def _still_unindexed(ctx: EngineContext, namespace: str, ids: set[str]) -> bool:
    have = ctx.vectors.ids(namespace)
    left = [i for i in ids if i not in have]
    return bool(left) and bool(ctx.store.get_many(namespace, left))


def heal(ctx: EngineContext, namespace: str | None, repair: Callable[[str], object]) -> None:
    """Before a maintenance run: when the store is flagged, the namespaces it will work on
    that lack vectors are repaired first, and the flag is cleared once none does."""
    if ctx.store.get_meta(VECTORS_BEHIND) != "1":
        return
    for ns in find_behind(ctx, None if namespace is None else [namespace]):
        log.warning("namespace %r has records without vectors: repairing the index", ns)
        repair(ns)
    if not find_behind(ctx):
        ctx.store.set_meta(VECTORS_BEHIND, "0")
