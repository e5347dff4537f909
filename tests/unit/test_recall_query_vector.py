"""A recall given the query's embedding answers as one that embeds it, without embedding."""

from __future__ import annotations

import numpy as np
import pytest

from reverie.core import InvalidVector
from reverie.core.engine import MemoryEngine
from tests.fakes import BagOfWordsEmbedder


class CountingEmbedder(BagOfWordsEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)


def test_a_given_query_vector_replaces_the_embedding(engine: MemoryEngine) -> None:
    for ns in ("a", "b"):
        engine.observe(f"the {ns} team ships on fridays", namespace=ns)
        engine.observe(f"lunch in {ns} is at noon", namespace=ns)
    counting = CountingEmbedder()
    engine.embedder = counting
    query = "when does the team ship?"
    expected = {ns: [h.id for h in engine.recall(query, namespace=ns, reinforce=False)]
                for ns in ("a", "b")}
    assert counting.texts == [query, query]
    vector = counting.embed([query])[0]
    counting.texts.clear()
    got = {ns: [h.id for h in engine.recall(query, namespace=ns, reinforce=False,
                                            query_vector=vector)]
           for ns in ("a", "b")}
    assert got == expected and counting.texts == []


@pytest.mark.parametrize(
    "bad", [np.zeros(3), np.full(256, np.nan), [[0.0] * 256], ["x"] * 256]
)
def test_a_query_vector_of_the_wrong_shape_or_values_is_refused(
    engine: MemoryEngine, bad: object
) -> None:
    engine.observe("the team ships on fridays")
    with pytest.raises(InvalidVector):
        engine.recall("ship?", query_vector=bad)  # type: ignore[arg-type]
