"""VectorIndex.similarities, on every implementation: exact cosine for named ids."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from reverie.core.errors import InvalidVector
from reverie.core.ports import VectorItem
from reverie.integrations.chroma.index import ChromaIndex


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_similarities_are_exact_cosines(
    vector_index: ChromaIndex, vector_ns: Callable[[str], str]
) -> None:
    ns = vector_ns("sim")
    a, b, c = unit(1, 0, 0, 0), unit(1, 1, 0, 0), unit(0, 0, 1, 0)
    vector_index.upsert(ns, [VectorItem("a", a), VectorItem("b", b), VectorItem("c", c)])
    q = unit(1, 0, 0, 0)
    got = vector_index.similarities(ns, q, ["a", "b", "c", "missing"])
    # cos(q, b) = 1/sqrt(2) = 0.707107; orthogonal c gives 0
    assert got == pytest.approx({"a": 1.0, "b": 0.707107, "c": 0.0}, abs=1e-5)
    assert vector_index.similarities(ns, q, []) == {}
    assert vector_index.similarities(vector_ns("empty"), q, ["a"]) == {}
    with pytest.raises(InvalidVector):
        vector_index.similarities(ns, unit(1, 0, 0), ["a"])
