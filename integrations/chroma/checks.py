"""What a Chroma index accepts, checked before anything is written: vectors (1-D, finite,
non-zero, one dimension per call), metadata Chroma can store, ids, and equality filters.

A bad item fails the whole call with nothing stored; the checks are also what a queue in
front of the index (`redis.outbox`) runs before it queues a write.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reverie.core.errors import InvalidInput, InvalidVector
from reverie.core.ports import Vector, VectorItem

__all__ = [
    "Scalar", "check_ids", "check_items", "check_metadata", "check_vector", "matches",
    "where_clause",
]

Scalar = str | int | float | bool

_I64 = 2**63


def check_vector(item_id: str, vector: object, namespace: str) -> Vector:
    """A finite, non-zero, 1-D float32 copy of `vector`, or `InvalidVector` naming the id."""
    try:
        arr = np.asarray(vector)
    except Exception as e:
        raise InvalidVector(f"vector of {item_id!r} is not an array: {e}") from None
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise InvalidVector(f"vector of {item_id!r} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidVector(
            f"vector of {item_id!r} must be 1-D and non-empty, got shape {arr.shape}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        out = arr.astype(np.float32)
    if not np.isfinite(out).all():
        raise InvalidVector(
            f"vector of {item_id!r} in namespace {namespace!r} has NaN or infinite values "
            "(in float32); nothing was written"
        )
    if not np.any(out):
        raise InvalidVector(f"vector of {item_id!r} is all zeros: cosine similarity is undefined")
    return out


def check_metadata(item_id: str, metadata: Mapping[str, Any]) -> dict[str, Scalar] | None:
    """Chroma-storable metadata (flat str/int/float/bool), or None for an empty mapping."""
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata of {item_id!r} must be a mapping, got {type(metadata)}")
    out: dict[str, Scalar] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key or key[0] in "$#":
            raise InvalidInput(
                f"metadata key {key!r} of {item_id!r}: keys are non-empty strings not "
                "starting with '$' or '#' (reserved by Chroma)"
            )
        if isinstance(value, bool | str):
            pass
        elif isinstance(value, int):
            if not -_I64 <= value < _I64:
                raise InvalidInput(f"metadata {key!r} of {item_id!r} does not fit in 64 bits")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInput(f"metadata {key!r} of {item_id!r} must be finite")
        else:
            raise InvalidInput(
                f"metadata {key!r} of {item_id!r} is {type(value).__name__}: "
                "use str, int, float or bool"
            )
        out[key] = value
    return out or None


def check_items(
    namespace: str, items: Sequence[VectorItem]
) -> tuple[list[str], list[Vector], list[dict[str, Scalar] | None]]:
    """Ids, float32 vectors and metadata of an upsert, all checked before anything is
    written: unique non-empty ids, valid vectors of one dimension, storable metadata."""
    ids: list[str] = []
    vectors: list[Vector] = []
    metadatas: list[dict[str, Scalar] | None] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item.id, str) or not item.id:
            raise InvalidInput(f"vector ids must be non-empty strings, got {item.id!r}")
        if item.id in seen:
            raise InvalidInput(f"id {item.id!r} appears twice in one upsert")
        seen.add(item.id)
        vectors.append(check_vector(item.id, item.vector, namespace))
        metadatas.append(check_metadata(item.id, item.metadata))
        ids.append(item.id)
    if ids:
        dim = vectors[0].shape[0]
        for item_id, vec in zip(ids, vectors, strict=True):
            if vec.shape[0] != dim:
                raise InvalidVector(
                    f"vector of {item_id!r} has dimension {vec.shape[0]}, but {ids[0]!r} in "
                    f"the same upsert has {dim}; nothing was written"
                )
    return ids, vectors, metadatas



def where_clause(where: Mapping[str, Scalar] | None) -> dict[str, Any] | None:
    """A plain equality filter {"status": "active", ...} in Chroma's where syntax."""
    if not where:
        return None
    clauses: list[dict[str, Any]] = []
    for key, value in where.items():
        if not isinstance(key, str) or not key or key[0] in "$#":
            raise InvalidInput(f"filter key {key!r}: use a plain metadata field name")
        if not isinstance(value, str | int | float | bool):
            raise InvalidInput(
                f"filter {key!r} = {value!r}: only equality on str, int, float or bool"
            )
        clauses.append({key: {"$eq": value}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}



def matches(meta: Mapping[str, Any] | None, where: Mapping[str, Scalar]) -> bool:
    """Chroma's `$eq`, client-side: bools match bools, strings strings, numbers numerically."""
    if meta is None:
        return False
    for key, want in where.items():
        have = meta.get(key)
        if have is None:
            return False
        if isinstance(want, bool) or isinstance(have, bool):
            if not (isinstance(want, bool) and isinstance(have, bool) and want == have):
                return False
        elif isinstance(want, str) or isinstance(have, str):
            if not (isinstance(want, str) and isinstance(have, str) and want == have):
                return False
        elif want != have:
            return False
    return True


def check_ids(ids: Sequence[str], what: str) -> list[str]:
    if isinstance(ids, str):
        raise InvalidInput(f"{what} takes a sequence of ids, not a single string")
    out = list(ids)
    for i in out:
        if not isinstance(i, str) or not i:
            raise InvalidInput(f"{what}: ids must be non-empty strings, got {i!r}")
    return out

