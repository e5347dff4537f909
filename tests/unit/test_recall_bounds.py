"""Recall skips work by exact bounds (stored vectors of lexical-only candidates, graph
neighbours that cannot reach the top k). The answer must be exactly what the full
computation gives: checked against a reference that fetches and expands everything."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from reverie.core import Policy
from reverie.core.engine import MemoryEngine
from reverie.core.models import Memory
from reverie.core.ports import VectorHit
from reverie.core.retrieval import (
    Candidate,
    Ranked,
    expand,
    fuse,
    needs_similarity,
    rank,
    unseen_similarity_bound,
)
from reverie.core.text import names_asked
from tests.unit.conftest import make_engine

_WORD_TEXT = (
    "lake sunrise painting dog school zebra guitar concert beach hiking camera pottery "
    "garden recipe soup marathon library novel chess violin bakery museum kayak"
)
WORDS = _WORD_TEXT.split()
NAMES = ["Caroline", "Melanie", "Oscar", "Priya"]


def full_recall(e: MemoryEngine, query: str, k: int) -> list[tuple[str, float]]:
    """The unoptimised pipeline: every cosine fetched, every neighbour read."""
    ns, p = "default", e.policy
    q = e._ctx.embed([query])[0]
    pool = max(k, p.retrieval.candidate_pool)
    dense = e.vectors.query(ns, q, pool)
    lexical = e.lexical.search(ns, query, pool)
    seen = {h.id for h in dense}
    extra = e.vectors.similarities(ns, q, [h.id for h in lexical if h.id not in seen])
    cands = fuse(dense, lexical, p, extra)
    now = e.clock.now()
    mems: dict[str, Memory] = dict(e.store.get_many(ns, list(cands)))
    names = names_asked(query)
    ranked = rank(cands, mems, now, p, lambda m: m.is_active, names)
    known = dict(cands)
    frontier = [r.candidate for r in ranked[: p.retrieval.expansion_seeds]]
    for hop in range(1, p.retrieval.max_hops + 1):
        if not frontier:
            break
        found = expand(frontier, e.store.edges(ns, [c.id for c in frontier]), known, p, hop)
        known.update(found)
        frontier = list(found.values())
    mems.update(e.store.get_many(ns, [i for i in known if i not in mems]))
    ranked = rank(known, mems, now, p, lambda m: m.is_active, names)
    return [(r.memory.id, r.score) for r in ranked[:k]]


@pytest.mark.parametrize(
    "policy",
    [
        # context off: the bounded path (context reads every candidate by design);
        # arbitration off: it reorders versions after ranking (tests/unit/test_free_text_
        # updates.py), and the numbered texts here read as versions of one another
        Policy(candidate_pool=6, context_weight=0.0, arbitration_hops=0),
        Policy(candidate_pool=6, alpha=0.7, hop_decay=0.9, max_hops=2, context_weight=0.0,
               arbitration_hops=0),
        Policy(candidate_pool=10, dense_weight=0.8, expansion_seeds=2, context_weight=0.0,
               arbitration_hops=0),
        # the lexical half scaled down for most queries: the strong lexical-only matches'
        # cosines are read before anything is bounded
        Policy(candidate_pool=6, context_weight=0.0, arbitration_hops=0,
               lexical_trust_low=0.6, lexical_trust_high=0.9),
    ],
)
def test_bounded_recall_equals_the_full_computation(policy: Policy) -> None:
    rng = random.Random(7)
    e = make_engine(policy)
    for i in range(80):
        words = rng.sample(WORDS, rng.randint(2, 6))
        text = f"{rng.choice(NAMES)} talked about {' '.join(words)} ({i})"
        e.observe(text, importance=rng.uniform(0.1, 1.0))
        e.clock.advance(hours=rng.randint(1, 200))  # type: ignore[attr-defined]
    fetched: list[int] = []
    inner = e.vectors.similarities

    def counting(ns: str, v: object, ids: list[str]) -> dict[str, float]:
        fetched.append(len(ids))
        return inner(ns, v, ids)  # type: ignore[arg-type]

    e.vectors.similarities = counting  # type: ignore[method-assign]
    for _ in range(25):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        for k in (1, 3, 10):
            got = [(h.id, h.score) for h in e.recall(query, k=k, reinforce=False)]
            want = full_recall(e, query, k)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-12)
    assert fetched, "some lexical-only cosines were needed"


@pytest.mark.parametrize("weight", [0.2, 0.6])
def test_bounded_recall_with_a_named_speaker_equals_the_full_computation(weight: float) -> None:
    # what a named speaker adds is counted by every bound that stops reading: a weak
    # match spoken by the person asked about can still climb into the top k
    policy = Policy(candidate_pool=8, context_weight=0.0, arbitration_hops=0,
                    speaker_weight=weight)
    rng = random.Random(11)
    e = make_engine(policy)
    for i in range(80):
        words = rng.sample(WORDS, rng.randint(2, 6))
        e.observe(f"{rng.choice(NAMES)}: I talked about {' '.join(words)} ({i})",
                  importance=rng.uniform(0.1, 1.0))
        e.clock.advance(hours=rng.randint(1, 200))  # type: ignore[attr-defined]
    lifted = 0
    for _ in range(25):
        query = f"What did {rng.choice(NAMES)} say about {' '.join(rng.sample(WORDS, 2))}?"
        for k in (1, 3, 10):
            hits = e.recall(query, k=k, reinforce=False)
            want = full_recall(e, query, k)
            assert [h.id for h in hits] == [i for i, _ in want]
            assert [h.score for h in hits] == pytest.approx([s for _, s in want], abs=1e-12)
            lifted += sum(h.explanation.speaker > 0 for h in hits)
    assert lifted, "some hits were spoken by the person asked about"


def test_the_unseen_bound_is_the_last_dense_hit_or_nothing() -> None:
    hits = [VectorHit("a", 0.9), VectorHit("b", 0.4)]
    assert unseen_similarity_bound(hits, 2) == 0.4
    assert unseen_similarity_bound(hits, 5) == 0.0  # the whole namespace came back
    assert unseen_similarity_bound([VectorHit("a", -0.2)], 1) == 0.0


def test_only_candidates_that_could_reach_the_top_need_a_cosine() -> None:
    # alpha 0.9, dense_weight 0.5: best possible = 0.9 * (0.5 * 0.4 + 0.5 * lexical) + 0.1
    p = Policy()
    cands = {
        "strong": Candidate("strong", 0.0, 0.9, 0.45),  # at most 0.9 * 0.65 + 0.1 = 0.685
        "weak": Candidate("weak", 0.0, 0.2, 0.10),  # at most 0.9 * 0.30 + 0.1 = 0.37
    }
    m = Memory(id="x", namespace="default", kind="episodic", tier="trace", text="x",
               created_at=make_engine().clock.now() - timedelta(days=1))
    top = [Ranked(m, Candidate("x", 0.8, 0.8, 0.8), 0.5, 0.5)]
    assert needs_similarity(["strong", "weak"], cands, 0.4, top, 1, p) == ["strong"]
    # fewer ranked than places: nothing can be ruled out
    assert needs_similarity(["strong", "weak"], cands, 0.4, top, 2, p) == ["strong", "weak"]
