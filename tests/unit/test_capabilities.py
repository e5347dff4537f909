"""Optional store and index features are resolved once per engine (core/capabilities.py):
present when the method is really there and callable, whether the object defines it or
forwards it to an object it wraps; absent when missing or None."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reverie.core.capabilities import resolve
from reverie.core.ports import Vector
from tests.fakes import InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import make_engine


class Forwarding:
    """A wrapper that forwards every attribute it lacks to the index it wraps (as the
    shared tier's vector outbox does)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class Bare:
    """An index with none of the optional features."""

    def __init__(self) -> None:
        self.begin_query = None  # declared, but switched off


def test_the_fakes_features_are_found_and_the_rest_are_absent() -> None:
    caps = resolve(InMemoryStore(), InMemoryVectorIndex())
    assert caps.stored_vectors is not None  # InMemoryVectorIndex has it
    assert caps.neighbors is None and caps.begin_query is None and caps.pending is None
    assert caps.recall_reads is None and caps.touch_many is None
    assert caps.written_around is not None  # InMemoryStore keeps its write order
    assert caps.store_remote is False and caps.index_remote is False


def test_a_forwarding_wrapper_has_the_features_of_what_it_wraps() -> None:
    inner = InMemoryVectorIndex()
    inner.remote = True  # type: ignore[attr-defined]
    caps = resolve(InMemoryStore(), Forwarding(inner))  # type: ignore[arg-type]
    assert caps.stored_vectors is not None and caps.index_remote is True
    assert caps.neighbors is None


def test_a_feature_set_to_none_is_absent() -> None:
    caps = resolve(InMemoryStore(), Bare())  # type: ignore[arg-type]
    assert caps.begin_query is None and caps.stored_vectors is None


def test_a_resolved_feature_calls_the_method_as_the_object_has_it_now() -> None:
    index = InMemoryVectorIndex()
    caps = resolve(InMemoryStore(), index)
    calls: list[Sequence[str]] = []

    def spy(namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        calls.append(list(ids))
        return {}

    index.stored_vectors = spy  # type: ignore[method-assign]
    assert caps.stored_vectors is not None
    assert caps.stored_vectors("ns", ["a"]) == {}
    assert calls == [["a"]]


def test_replacing_the_index_resolves_its_features_again() -> None:
    engine = make_engine()
    engine.observe("the blue kettle is in the cupboard")
    engine.vectors = Forwarding(engine.vectors)  # type: ignore[assignment]
    assert [h.text for h in engine.recall("blue kettle", k=1)] == [
        "the blue kettle is in the cupboard"
    ]


class LexicalStore(InMemoryStore):
    """A store that is also the lexical index and hands out its hits' kept rows."""

    def search_kept(self, namespace: str, query: str, k: int) -> Any:
        return None


def test_search_with_kept_rows_counts_only_where_the_store_is_the_lexical_index() -> None:
    store, other = LexicalStore(), LexicalStore()
    assert resolve(store, InMemoryVectorIndex(), store).search_kept is not None  # type: ignore[arg-type]
    # another object's embeddings need not be the store's: recall reads them separately
    assert resolve(store, InMemoryVectorIndex(), other).search_kept is None  # type: ignore[arg-type]
    assert resolve(store, InMemoryVectorIndex()).search_kept is None
    plain = InMemoryStore()
    assert resolve(plain, InMemoryVectorIndex(), plain).search_kept is None  # type: ignore[arg-type]
