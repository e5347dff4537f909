"""Shared by the benchmark scripts."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np


class MemoEmbedder:
    """The real model, remembering every vector it made: each text is embedded once per
    run however many variants ask, and `warm()` lets a timed section exclude embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def warm(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self.cache[t] = np.asarray(v, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.warm(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


HASH_DIM = 384
HASH_BUCKETS = 4096


class HashEmbedder:
    """Deterministic, model-free: each lexical term picks one of `HASH_BUCKETS` fixed random
    directions; a text is the normalised sum of its terms' directions. Texts sharing words
    are near, as with a real model, at a few microseconds per text."""

    name = "hash-bow-384"
    dimension = HASH_DIM

    def __init__(self) -> None:
        rng = np.random.default_rng(20240601)
        table = rng.standard_normal((HASH_BUCKETS, HASH_DIM)).astype(np.float32)
        self.table = table / np.linalg.norm(table, axis=1, keepdims=True)
        self._bucket: dict[str, int] = {}

    def _buckets(self, text: str) -> list[int]:
        out = []
        for w in text.lower().split():
            w = w.strip(".,;:!?()\"'")
            if not w:
                continue
            b = self._bucket.get(w)
            if b is None:
                b = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
                b = self._bucket[w] = b % HASH_BUCKETS
            out.append(b)
        return out or [0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, HASH_DIM), dtype=np.float32)
        rows = [self._buckets(t) for t in texts]
        flat = np.fromiter((b for r in rows for b in r), dtype=np.int64)
        starts = np.cumsum([0] + [len(r) for r in rows[:-1]])
        out = np.add.reduceat(self.table[flat], starts, axis=0)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)
