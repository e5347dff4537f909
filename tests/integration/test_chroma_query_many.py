"""`ChromaIndex.query_many` (embedded and on a real server): several queries in one call,
each answered exactly as `query` answers it alone, so a bulk ingest that asks for a whole
chunk's version candidates at once links the same versions as one write at a time."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reverie.core.errors import InvalidInput, InvalidVector
from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex

DIM = 16


@pytest.fixture(params=["embedded", "server"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChromaIndex]:
    made = (
        ChromaIndex.server(request.getfixturevalue("chroma_server_url"))
        if request.param == "server" else ChromaIndex.embedded(tmp_path / "vectors")
    )
    try:
        yield made
    finally:
        made.close()


def test_each_answer_is_the_single_querys(index: ChromaIndex) -> None:
    ns = f"m-{uuid.uuid4().hex[:10]}"
    rng = np.random.default_rng(11)
    vecs = rng.standard_normal((200, DIM)).astype(np.float32)
    index.upsert(ns, [VectorItem(f"v{i}", vecs[i], {"kind": "episodic"}) for i in range(200)])
    queries = list(rng.standard_normal((7, DIM)).astype(np.float32))
    many = index.query_many(ns, queries, 8)
    assert len(many) == 7
    for q, hits in zip(queries, many, strict=True):
        alone = index.query(ns, q, 8)
        assert [h.id for h in hits] == [h.id for h in alone]
        np.testing.assert_allclose([h.similarity for h in hits],
                                   [h.similarity for h in alone], rtol=0, atol=1e-6)
    # a stored vector asked for finds itself first
    assert index.query_many(ns, [vecs[5]], 1)[0][0].id == "v5"
    index.drop_namespace(ns)


def test_nothing_to_find_and_bad_input(index: ChromaIndex) -> None:
    ns = f"m-{uuid.uuid4().hex[:10]}"
    q = np.ones(DIM, dtype=np.float32)
    assert index.query_many(ns, [q, q], 5) == [[], []]  # no collection yet
    assert index.query_many(ns, [], 5) == []
    index.upsert(ns, [VectorItem("a", q, {"kind": "episodic"})])
    assert index.query_many(ns, [q], 0) == [[]]
    with pytest.raises(InvalidVector, match="dimension"):
        index.query_many(ns, [q, np.ones(DIM + 1, dtype=np.float32)], 3)
    with pytest.raises(InvalidVector, match="NaN"):
        index.query_many(ns, [np.full(DIM, np.nan, dtype=np.float32)], 3)
    with pytest.raises(InvalidInput, match="integer"):
        index.query_many(ns, [q], True)
    index.drop_namespace(ns)
