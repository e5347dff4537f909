"""Fixtures of the contract suites: every implementation of a port runs one suite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from reverie.integrations.chroma_index import ChromaIndex

# --- VectorIndex -------------------------------------------------------------------------


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.slow)])
def vector_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChromaIndex]:
    """Each VectorIndex implementation: embedded Chroma (fresh directory) and a real
    Chroma server (shared by the session, so tests take namespaces from `vector_ns`)."""
    if request.param == "embedded":
        index = ChromaIndex.embedded(tmp_path / "chroma")
    else:
        index = ChromaIndex.server(request.getfixturevalue("chroma_server_url"))
    try:
        yield index
    finally:
        index.close()


@pytest.fixture
def vector_ns(vector_index: ChromaIndex) -> Iterator[Callable[[str], str]]:
    """`vector_ns("a")` -> a namespace no other test uses; dropped after the test."""
    made: list[str] = []
    run = uuid.uuid4().hex[:10]

    def make(name: str = "ns") -> str:
        ns = f"t-{run}/{name}"
        made.append(ns)
        return ns

    yield make
    if not getattr(vector_index, "_closed", False):
        for ns in made:
            vector_index.drop_namespace(ns)
