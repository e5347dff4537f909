"""Bad arguments to the public API raise `reverie.core.errors` types and store nothing.

Each case is one a hostile or careless caller was seen to pass; before the checks in
core/validation.py most raised a bare Python error or were stored as garbage.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from reverie.core import Policy
from reverie.core.engine import MemoryEngine
from reverie.core.errors import EmptyText, InvalidInput, InvalidNamespace, ReverieError
from reverie.core.writing import Observation
from tests.unit.conftest import make_engine


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(levels):
        cur["a"] = {}
        cur = cur["a"]
    return root


BAD: dict[str, tuple[Callable[[MemoryEngine], object], type[ReverieError]]] = {
    "lone surrogate in text": (lambda e: e.observe("bad \ud800 text"), InvalidInput),
    "lone surrogate in a fact": (lambda e: e.remember("a\udc00", "is", "b"), InvalidInput),
    "lone surrogate in a query": (lambda e: e.recall("x\ud800"), InvalidInput),
    "NUL in text": (lambda e: e.observe("a\x00b"), InvalidInput),
    "at as a string": (lambda e: e.observe("x y", at="2025-01-01"), InvalidInput),  # type: ignore[arg-type]
    "at as epoch seconds": (lambda e: e.observe("x y", at=1_700_000_000), InvalidInput),  # type: ignore[arg-type]
    "at at the end of time": (
        lambda e: e.observe("x y", at=datetime.max.replace(tzinfo=UTC)), InvalidInput),
    "as_of as a string": (lambda e: e.recall("x", as_of="2025"), InvalidInput),  # type: ignore[arg-type]
    "k of 2**63": (lambda e: e.recall("Alice", k=2**63), InvalidInput),
    "k as a float": (lambda e: e.recall("Alice", k=2.0), InvalidInput),  # type: ignore[arg-type]
    "token budget of 2**63": (lambda e: e.recall("Alice", token_budget=2**63), InvalidInput),
    "history of nothing": (lambda e: e.history(None, None), InvalidInput),
    "history of a number": (lambda e: e.history(1, 2), InvalidInput),  # type: ignore[arg-type]
    "entities as numbers": (lambda e: e.observe("foo bar", entities=[1, 2]), InvalidInput),  # type: ignore[list-item]
    "entities as one string": (lambda e: e.observe("ent thing", entities="abc"), InvalidInput),
    "3,000-deep metadata": (lambda e: e.observe("deep", metadata=_deep(3000)), InvalidInput),
    "metadata keys 1 and '1'": (
        lambda e: e.observe("keys", metadata={1: "a", "1": "b"}), InvalidInput),  # type: ignore[dict-item]
    "a 10 MB metadata value": (
        lambda e: e.observe("big", metadata={"x": "a" * 10_000_000}), InvalidInput),
    "NaN in metadata": (lambda e: e.observe("nan", metadata={"x": float("nan")}), InvalidInput),
    "an object in metadata": (lambda e: e.observe("obj", metadata={"x": object()}), InvalidInput),
    "metadata not a mapping": (lambda e: e.observe("m", metadata=[1]), InvalidInput),  # type: ignore[arg-type]
    "observe_many(5)": (lambda e: e.observe_many(5), InvalidInput),  # type: ignore[arg-type]
    "observe_many of one string": (lambda e: e.observe_many("abc"), InvalidInput),
    "observe_many of numbers": (lambda e: e.observe_many(["ok text", 7]), InvalidInput),  # type: ignore[list-item]
    "observe_many batch_size 0": (lambda e: e.observe_many(["a b"], batch_size=0), InvalidInput),
    "import_ of strings": (lambda e: e.import_(["str"]), InvalidInput),  # type: ignore[list-item]
    "import_ of a memory with surrogate text": (
        lambda e: e.import_([{"type": "memory", "record": {"text": "\ud800"}}]), InvalidInput),
    "pinned='no'": (lambda e: e.observe("pinned thing", pinned="no"), InvalidInput),  # type: ignore[arg-type]
    "text of zero-width spaces": (lambda e: e.observe("\u200b\u200b\ufeff\u2060"), EmptyText),
    "forget(None, 123)": (lambda e: e.forget(None, 123), InvalidInput),  # type: ignore[arg-type]
    "get(None)": (lambda e: e.get(None), InvalidInput),  # type: ignore[arg-type]
    "source as a number": (lambda e: e.observe("hi there", source=5), InvalidInput),  # type: ignore[arg-type]
    "namespace as a number": (lambda e: e.observe("hi", namespace=5), InvalidNamespace),  # type: ignore[arg-type]
    "kinds as one string": (lambda e: e.recall("x", kinds="episodic"), InvalidInput),
    "unknown status": (lambda e: list(e.memories(statuses=["bogus"])), InvalidInput),
    "consolidate strategy bogus": (lambda e: e.consolidate(strategy="bogus"), InvalidInput),
    "sweep dry_run='yes'": (lambda e: e.sweep(dry_run="yes"), InvalidInput),  # type: ignore[arg-type]
    "repair batch_size -1": (lambda e: e.repair(batch_size=-1), InvalidInput),
    "extract_facts without a synthesizer": (
        lambda e: e.extract_facts(synthesizer=None), InvalidInput),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_argument_is_a_typed_error_and_stores_nothing(case: str) -> None:
    engine = make_engine()
    engine.observe("Alice lives in Lisbon", source="s0")
    before = [m for m in engine.memories()]
    call, expected = BAD[case]
    with pytest.raises(expected):
        call(engine)
    assert list(engine.memories()) == before


def test_limits_are_policy_numbers() -> None:
    engine = make_engine(Policy(max_recall_k=3, max_metadata_bytes=64, max_entities=2))
    engine.observe("one two", source="s")
    assert len(engine.recall("one", k=3).hits) <= 3
    with pytest.raises(InvalidInput, match="max_recall_k"):
        engine.recall("one", k=4)
    engine.observe("small", metadata={"x": "a" * 40})
    with pytest.raises(InvalidInput, match="max_metadata_bytes"):
        engine.observe("large", metadata={"x": "a" * 60})
    with pytest.raises(InvalidInput, match="max_entities"):
        engine.observe("many", entities=["a", "b", "c"])


def test_good_arguments_are_stored_in_the_form_a_store_returns() -> None:
    """What is accepted comes back as written: tuples as lists, entities casefolded."""
    engine = make_engine()
    m = engine.observe(
        "Bob met Carol", entities=("Bob", "CAROL"), metadata={"t": (1, 2.5, None, True)},
        at=datetime(2025, 2, 1), pinned=True,
    )
    assert m.entities == frozenset({"bob", "carol"})
    assert m.metadata == {"t": [1, 2.5, None, True]}
    assert m.created_at == datetime(2025, 2, 1, tzinfo=UTC)
    assert m.pinned is True
    assert engine.get(m.id) == m


def test_observe_many_checks_every_item_before_writing_any() -> None:
    engine = make_engine()
    with pytest.raises(InvalidInput, match="item 2"):
        engine.observe_many([Observation("fine text"), 3.5])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="pinned"):
        engine.observe_many(["fine text", Observation("other", pinned=1)])  # type: ignore[arg-type]
    assert list(engine.memories()) == []


def test_observe_many_writes_no_chunk_when_an_item_of_a_later_chunk_is_bad() -> None:
    """The first chunk is embedded while the rest is checked; a bad item there still
    leaves the store as it was."""
    engine = make_engine()
    items = [f"fine text number {i}" for i in range(5)] + [Observation("late", pinned=1)]
    with pytest.raises(InvalidInput, match="pinned"):
        engine.observe_many(items, batch_size=2)  # type: ignore[arg-type]
    assert list(engine.memories()) == []
    written = engine.observe_many(items[:5], batch_size=2)
    assert [m.text for m in written] == items[:5]
