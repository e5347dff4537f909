"""Reads of the embeddings a Chroma index stores: their cosine to a query, the vectors
themselves, and each one's nearest stored neighbours (HNSW). `ChromaIndex` offers them as
`similarities` and its optional capabilities `stored_vectors` and `neighbors`
(`core.ports.VectorIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from reverie.core.errors import InvalidInput, InvalidVector
from reverie.core.models import validate_namespace
from reverie.core.ports import Vector, VectorHit
from reverie.core.retrieval import cosine_to
from reverie.integrations.chroma.checks import check_ids, check_vector
from reverie.integrations.chroma.collections import Collections, chunks

__all__ = ["neighbors", "similarities", "stored_vectors"]

# `neighbors` fetches and queries this many ids at a time: bounds one request's payload
# (embeddings in, n x (k+1) results out) for a Chroma server.
_NEIGHBOR_BATCH = 1000


def similarities(
    cols: Collections, namespace: str, vector: Vector, ids: Sequence[str]
) -> dict[str, float]:
    """Cosine of `vector` to each stored id (unknown ids absent): one `get` of the
    stored embeddings, so lexical candidates outside the dense top-k are scored on the
    same scale as the dense hits."""
    validate_namespace(namespace)
    id_list = check_ids(ids, "similarities")
    q = check_vector("<query>", vector, namespace)
    if not id_list:
        return {}
    wanted = list(dict.fromkeys(id_list))  # Chroma rejects duplicate ids in one get
    with cols.guard():
        col = cols.get(namespace)
        if col is None:
            return {}
        stored = cols.dimension(col)
        if q.shape[0] != stored:
            raise InvalidVector(
                f"query vector has dimension {q.shape[0]}, but namespace {namespace!r} "
                f"holds {stored}-dimensional vectors"
            )
        size = cols.batch_size()

        def fetch(c: Any) -> tuple[list[str], list[Any]]:
            got: list[str] = []
            embs: list[Any] = []
            for s in chunks(len(wanted), size):
                r = c.get(ids=wanted[s], include=["embeddings"])
                if len(r["ids"]):
                    got.extend(r["ids"])
                    embs.append(np.asarray(r["embeddings"], dtype=np.float32))
            return got, embs

        res = cols.call(namespace, fetch)
    if not res or not res[0]:
        return {}
    got, embs = res
    return dict(zip(got, cosine_to(q, np.concatenate(embs, axis=0)), strict=True))


def stored_vectors(cols: Collections, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
    """The stored embeddings of `ids` (unknown ids absent). Not part of the
    `VectorIndex` port, an optional capability: the REM cycle clusters with the
    vectors already stored instead of re-embedding every flagged memory (and falls
    back to embedding where an index lacks it)."""
    validate_namespace(namespace)
    wanted = list(dict.fromkeys(check_ids(ids, "stored_vectors")))
    if not wanted:
        return {}
    with cols.guard():
        col = cols.get(namespace)
        if col is None:
            return {}
        size = cols.batch_size()

        def fetch(c: Any) -> dict[str, Vector]:
            out: dict[str, Vector] = {}
            for s in chunks(len(wanted), size):
                r = c.get(ids=wanted[s], include=["embeddings"])
                for i, v in zip(r["ids"], r["embeddings"], strict=True):
                    out[i] = np.asarray(v, dtype=np.float32)
            return out

        got = cols.call(namespace, fetch)
    return got or {}


def neighbors(
    cols: Collections, namespace: str, ids: Sequence[str], k: int
) -> dict[str, list[VectorHit]]:
    """The `k` nearest indexed neighbours of each indexed id in `ids`, itself excluded,
    best first (unknown ids absent). Not part of the `VectorIndex` port, an optional
    capability: the REM cycle clusters on this approximate k-NN (HNSW, ~log n per
    query) instead of an exact n^2 one. The stored embeddings are fetched in batches
    and queried in batches, k + 1 results each (the id itself is normally the first)."""
    validate_namespace(namespace)
    wanted = list(dict.fromkeys(check_ids(ids, "neighbors")))
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"k must be an integer, got {k!r}")
    if k <= 0 or not wanted:
        return {}
    with cols.guard():
        col = cols.get(namespace)
        if col is None:
            return {}
        size = min(cols.batch_size(), _NEIGHBOR_BATCH)

        def run(c: Any) -> dict[str, list[tuple[str, float]]]:
            out: dict[str, list[tuple[str, float]]] = {}
            for s in chunks(len(wanted), size):
                got = c.get(ids=wanted[s], include=["embeddings"])
                if not len(got["ids"]):
                    continue
                embs = np.asarray(got["embeddings"], dtype=np.float32)
                r = c.query(query_embeddings=embs, n_results=k + 1, include=["distances"])
                for qid, hit_ids, dists in zip(
                    got["ids"], r["ids"], r["distances"], strict=True
                ):
                    pairs = [(i, float(d)) for i, d in zip(hit_ids, dists, strict=True)]
                    out[qid] = [p for p in pairs if p[0] != qid][:k]
            return out

        found = cols.call(namespace, run) or {}
    return {
        qid: sorted(
            (VectorHit(id=i, similarity=min(1.0, max(-1.0, 1.0 - d))) for i, d in pairs),
            key=lambda h: (-h.similarity, h.id),
        )
        for qid, pairs in found.items()
    }
