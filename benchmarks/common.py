"""Shared by the benchmark scripts."""

from __future__ import annotations

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
