"""How a store keeps a memory's embedding beside its record: one validation and one byte
encoding for every tier (little-endian float32), so the SQLite and Redis tiers hand recall
the same vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from reverie.core.errors import InvalidInput

__all__ = ["from_bytes", "to_bytes"]


def to_bytes(memory_id: str, vector: Any) -> bytes:
    """A non-empty finite 1-D vector as float32 bytes; anything else is the caller's bug."""
    try:
        v = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidInput(f"embedding of {memory_id!r} is not a vector of numbers") from None
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
        raise InvalidInput(f"embedding of {memory_id!r} must be a non-empty finite 1-D vector")
    return v.astype("<f4").tobytes()


def from_bytes(blob: bytes) -> NDArray[np.float32]:
    return np.frombuffer(blob, dtype="<f4")
