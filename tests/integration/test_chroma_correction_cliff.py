"""A filtered query whose nearest vectors mostly fail the filter (the newest statement of a
fact corrected many times: its nearest neighbours are the retired versions). What a user
relies on: the exact filtered top-k, found by widening the unfiltered query rather than by
Chroma's own filter, which lists every matching id of the namespace first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex

DIM = 16


def test_retired_neighbours_do_not_send_the_query_to_chromas_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    q = rng.normal(size=DIM).astype(np.float32)
    q /= np.linalg.norm(q)
    # 300 retired versions crowd the query; 200 active memories lie further out
    near = q + 0.05 * rng.normal(size=(300, DIM)).astype(np.float32)
    far = rng.normal(size=(200, DIM)).astype(np.float32)
    vecs = np.vstack([near, far])
    items = [
        VectorItem(f"v{i}", v, {"status": "superseded" if i < 300 else "active"})
        for i, v in enumerate(vecs)
    ]
    index = ChromaIndex.embedded(tmp_path / "vectors")
    index.upsert("ns", items)
    filters: list[Any] = []
    plain = ChromaIndex._query

    def spy(self: ChromaIndex, col: Any, vec: Any, n: int, include: list[str],
            where: Any = None) -> Any:
        filters.append(where)
        return plain(self, col, vec, n, include, where)

    monkeypatch.setattr(ChromaIndex, "_query", spy)
    hits = index.query("ns", q, 10, {"status": "active"})
    normed = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = normed @ q
    exact = sorted(range(300, 500), key=lambda i: -sims[i])[:10]
    assert [h.id for h in hits] == [f"v{i}" for i in exact]
    assert filters and all(f is None for f in filters)  # never Chroma's `where`
    assert len(filters) == 2  # 50 nearest, then 400
    # a filter almost nothing matches still gets its exact answer: here the widening
    # reaches the whole namespace (50, 400, then all 501 of 3,200 asked for)
    index.upsert("ns", [VectorItem("rare", far[0] * 0.9, {"status": "pinned"})])
    filters.clear()
    assert [h.id for h in index.query("ns", q, 3, {"status": "pinned"})] == ["rare"]
    assert filters == [None, None, None]
    index.close()
