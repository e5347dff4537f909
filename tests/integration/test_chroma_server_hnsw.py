"""A Chroma server's collections are made to be written by many worker processes at once:
they sync every 100 vectors (SERVER_HNSW; concurrent adds cost the server several times
the CPU with Chroma's 1000, latency_tiers_throughput.md), with the same recall parameters as
the embedded default, which keeps Chroma's own sync threshold."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import (
    DEFAULT_HNSW,
    SERVER_HNSW,
    ChromaIndex,
    collection_name,
)


def _hnsw_of(index: ChromaIndex, ns: str) -> dict[str, object]:
    index.upsert(ns, [VectorItem("a", np.ones(4, dtype=np.float32), {"status": "active"})])
    col = index._cols.client.get_collection(collection_name(ns))
    return dict(col.configuration["hnsw"])


def test_server_collections_sync_often_with_the_same_recall_parameters(
    chroma_server_url: str, tmp_path: Path
) -> None:
    ns = f"hnsw-{uuid.uuid4().hex[:8]}"
    server = ChromaIndex.server(chroma_server_url)
    embedded = ChromaIndex.embedded(tmp_path / "chroma")
    try:
        remote, local = _hnsw_of(server, ns), _hnsw_of(embedded, ns)
    finally:
        server.close()
        embedded.close()
    assert SERVER_HNSW.sync_threshold == 100
    assert remote["sync_threshold"] == 100
    assert local["sync_threshold"] == 1000  # Chroma's own
    for name in ("ef_construction", "ef_search", "max_neighbors"):
        assert remote[name] == local[name] == getattr(DEFAULT_HNSW, name)
        assert getattr(SERVER_HNSW, name) == getattr(DEFAULT_HNSW, name)
    assert remote["space"] == local["space"] == "cosine"
