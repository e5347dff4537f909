"""How a store keeps a memory's embedding beside its record: one validation and one byte
encoding for every tier, so the SQLite and Redis tiers hand recall the same vectors.

A kept vector is stored at half precision: it is the largest part of a record row (384
float32 values are 1.5 KB, more than the record itself), and half precision moves a
cosine between unit vectors by less than 1e-4 (4.8e-5 at most over MiniLM's embeddings
of a mixed set of texts), far below any gap recall's ranking turns on. The vector index
keeps the full-precision vector. A vector whose values half precision cannot hold
(beyond ±65,504) is kept as float32.

The two forms are told apart without a format column: the half-precision form starts with
the four bytes of a float32 NaN, which no float32 form can start with, since a kept vector
is checked finite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from reverie.core.errors import InvalidInput

__all__ = ["from_bytes", "from_bytes_many", "to_bytes"]

_HALF = np.float32(np.nan).astype("<f4").tobytes()  # marks the half-precision form
_HALF_MAX = float(np.finfo(np.float16).max)


def to_bytes(memory_id: str, vector: Any) -> bytes:
    """A non-empty finite 1-D vector as bytes; anything else is the caller's bug."""
    try:
        v = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidInput(f"embedding of {memory_id!r} is not a vector of numbers") from None
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
        raise InvalidInput(f"embedding of {memory_id!r} must be a non-empty finite 1-D vector")
    if float(np.abs(v).max()) <= _HALF_MAX:
        return _HALF + v.astype("<f2").tobytes()
    return v.astype("<f4").tobytes()


def from_bytes(blob: bytes) -> NDArray[np.float32]:
    """The vector of `to_bytes`'s bytes, as float32, in either form."""
    if blob[:4] == _HALF:
        return np.frombuffer(blob, dtype="<f2", offset=4).astype(np.float32)
    return np.frombuffer(blob, dtype="<f4")


def from_bytes_many(blobs: Sequence[bytes]) -> list[NDArray[np.float32]]:
    """`from_bytes` of each blob, converted in one array operation where all are of the
    half-precision form and one length (recall reads some 50 a query; converting each on
    its own costs more than reading them)."""
    if not blobs:
        return []
    size = len(blobs[0])
    if size <= len(_HALF) or any(len(b) != size or b[:4] != _HALF for b in blobs):
        return [from_bytes(b) for b in blobs]
    joined = b"".join(b[4:] for b in blobs)
    rows = np.frombuffer(joined, dtype="<f2").reshape(len(blobs), -1).astype(np.float32)
    return list(rows)
