"""The in-process BM25 mirror gives exactly the reference formula's ranking and scores
(redis_lexical.bm25_top, itself checked by hand against FTS5's definition), through adds,
removals and re-adds."""

from __future__ import annotations

import math
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.integrations.lexical import bm25 as bm25_module
from reverie.integrations.lexical.mirror import Bm25Mirror
from reverie.integrations.redis.lexical import bm25_top

VOCAB = ["tea", "cat", "lisbon", "paint", "run", "sea", "jazz", "bike"]
docs = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8).map(" ".join)


def reference(live: dict[int, str], terms: list[str], k: int) -> list[tuple[str, float]]:
    postings = {t: {f"m{s}": d.split().count(t) for s, d in live.items() if t in d.split()}
                for t in terms}
    lengths = {f"m{s}": len(d.split()) for s, d in live.items()}
    order = {f"m{s}": s for s in live}
    return bm25_top(postings, lengths, len(live), sum(lengths.values()), k, order)


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.none() | docs), min_size=1, max_size=60),
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4, unique=True),
    st.integers(1, 12),
)
def test_mirror_equals_the_reference_through_any_changes(
    changes: list[tuple[int, str | None]], terms: list[str], k: int
) -> None:
    mirror = Bm25Mirror((1, 0), 0)
    live: dict[int, str] = {}
    for seq, doc in changes:  # None removes, text adds or replaces
        if doc is None:
            mirror.remove(seq)
            live.pop(seq, None)
        else:
            mirror.add(seq, f"m{seq}", doc)
            live[seq] = doc
    assert len(mirror) == len(live)
    want = reference(live, terms, k)
    # summed over the matched documents only, and over every slot (many postings)
    for share in (0, 10**9):
        with patch.object(bm25_module, "DENSE_SHARE", share):
            got = mirror.top(terms, k)
        assert [d for d, _ in got] == [d for d, _ in want], share
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert a == b  # the same operations in the same order: bit for bit


def test_by_hand_and_dead_slots() -> None:
    m = Bm25Mirror((1, 0), 0)
    m.add(1, "a", "tea tea cat lisbon sea jazz")  # length 6, tf(tea) = 2
    m.add(2, "b", "cat run")
    m.add(3, "c", "bike sea paint run")
    # N = 3, total 12 (avg 4), 'tea' in one document
    idf = math.log((3 - 1 + 0.5) / (1 + 0.5))
    expected = idf * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 6 / 4))
    assert m.top(["tea"], 5) == [("a", pytest.approx(expected, rel=1e-12))]
    m.remove(1)
    assert m.top(["tea"], 5) == [] and len(m) == 2
    assert m.dead_fraction == pytest.approx(1 / 3)
    # a term in more than half the live documents: idf floored at 1e-6; ties by seq
    top = m.top(["run"], 5)
    assert [d for d, _ in top] == ["b", "c"]
    assert top[0][1] == pytest.approx(1e-6 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3)))
    assert m.top(["run"], 0) == [] and Bm25Mirror((1, 0), 0).top(["run"], 3) == []
