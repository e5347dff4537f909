"""HNSW parameters of new Chroma collections: the defaults, the server's, and why.

Cosine space; the build/search parameters were chosen on real MiniLM embeddings
(benchmarks/hnsw.py, results in benchmarks/results/hnsw.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from reverie.core.errors import InvalidInput

__all__ = ["DEFAULT_HNSW", "SERVER_HNSW", "HnswSettings"]


@dataclass(frozen=True, slots=True)
class HnswSettings:
    """HNSW parameters of a new collection (existing collections keep theirs).

    Higher values buy recall with build time, memory and query latency; see
    benchmarks/results/hnsw.md for the trade-off.
    """

    ef_construction: int = 200
    ef_search: int = 200
    max_neighbors: int = 16
    # Vectors added before Chroma writes the index out (None: Chroma's own, 1000). Not a
    # recall knob: the graph is the same, only how often it is persisted (see SERVER_HNSW).
    sync_threshold: int | None = None

    def __post_init__(self) -> None:
        for name in ("ef_construction", "ef_search", "max_neighbors", "sync_threshold"):
            v = getattr(self, name)
            if v is None and name == "sync_threshold":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise InvalidInput(f"HNSW {name} must be an integer >= 2, got {v!r}")

    def configuration(self) -> dict[str, Any]:
        hnsw: dict[str, Any] = {
            "space": "cosine",
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "max_neighbors": self.max_neighbors,
        }
        if self.sync_threshold is not None:
            hnsw["sync_threshold"] = self.sync_threshold
        return {"hnsw": hnsw}


# Chroma's defaults (M 16, ef 100/100) miss part of the true top-10; ef_construction and
# ef_search 200 reach full recall at the same query latency and disk size, for about twice
# the build time (still far below the embedding cost). A larger M bought nothing more at
# the sizes measured and cost build time and memory (benchmarks/results/hnsw.md).
DEFAULT_HNSW = HnswSettings()
# A Chroma server is written by many worker processes at once. With Chroma's sync threshold
# (1000), concurrent adds to one collection cost its server several times the CPU of the
# same adds made one after another; syncing every 100 vectors takes most of that back, with
# the same query latency and recall@10.
# Collections that exist keep the configuration they were made with.
SERVER_HNSW = replace(DEFAULT_HNSW, sync_threshold=100)
