"""`ChromaIndex.stored_vectors` (embedded and a real server): the REM cycle clusters with
the vectors the index already holds instead of re-embedding every flagged memory."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_stored_vectors_returns_what_was_upserted(
    vector_index: ChromaIndex, vector_ns: Callable[[str], str]
) -> None:
    ns, other = vector_ns("a"), vector_ns("b")
    vecs = {f"m{i}": unit(i) for i in range(5)}
    vector_index.upsert(ns, [VectorItem(i, v, {"status": "active"}) for i, v in vecs.items()])
    vector_index.upsert(other, [VectorItem("m0", unit(99), {"status": "active"})])
    got = vector_index.stored_vectors(ns, ["m3", "m0", "missing", "m3"])
    assert set(got) == {"m0", "m3"}  # unknown ids absent, duplicates harmless
    for i, v in got.items():
        assert v.dtype == np.float32 and v.shape == (8,)
        np.testing.assert_allclose(v, vecs[i], rtol=0, atol=1e-6)
    assert vector_index.stored_vectors(ns, []) == {}
    assert vector_index.stored_vectors(vector_ns("never-written"), ["m0"]) == {}
    np.testing.assert_allclose(  # namespaces never leak
        vector_index.stored_vectors(other, ["m0"])["m0"], unit(99), atol=1e-6
    )
