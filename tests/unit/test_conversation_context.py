"""Conversation context: a memory observed next to a strong match is lifted by a fixed
share of that match's relevance (numbers checked by hand)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import Policy
from reverie.core.models import Memory
from reverie.core.retrieval import Candidate, conversation_context
from tests.unit.conftest import T0, make_engine


def mem(i: str, seconds: float, status: str = "active") -> Memory:
    return Memory(id=i, namespace="default", kind="episodic", tier="trace", text=i,
                  created_at=T0 + timedelta(seconds=seconds), status=status)


def test_neighbours_in_time_gain_a_share_of_each_seed() -> None:
    p = Policy(context_weight=0.1, context_window_seconds=120, context_seeds=2)
    cands = {
        "q": Candidate("q", 0.8, 0.8, 0.8),  # seed
        "s": Candidate("s", 0.6, 0.6, 0.6),  # seed
        "a": Candidate("a", 0.1, 0.0, 0.05),  # 30 s after q, 90 s after s
        "far": Candidate("far", 0.2, 0.0, 0.1),  # an hour later: no context
    }
    mems = {"q": mem("q", 0), "s": mem("s", -60), "a": mem("a", 30), "far": mem("far", 3600)}
    times = {i: m.created_at for i, m in mems.items()}
    seeds = [cands["q"], cands["s"]]
    out = conversation_context(cands, seeds, times, p)
    assert out["a"].relevance == pytest.approx(0.05 + 0.1 * (0.8 + 0.6))
    assert out["a"].context == pytest.approx(0.14)
    assert out["q"].relevance == pytest.approx(0.8 + 0.1 * 0.6)  # not from itself
    assert out["s"].relevance == pytest.approx(0.6 + 0.1 * 0.8)
    assert out["far"] == cands["far"]
    off = conversation_context(cands, seeds, times, p.replace(context_weight=0.0))
    assert off == cands


def test_only_admissible_seeds_lend() -> None:
    e = make_engine(Policy(context_weight=0.5, context_seeds=1))
    old = e.remember("pottery workshop", "is on", "Friday")
    e.clock.advance(seconds=20)  # type: ignore[attr-defined]
    e.remember("pottery workshop", "is on", "Saturday")  # supersedes `old`
    e.clock.advance(seconds=20)  # type: ignore[attr-defined]
    reply = e.observe("bring an apron and old clothes")
    assert e.get(old.id).status.value == "superseded"
    cands = {
        old.id: Candidate(old.id, 0.9, 0.9, 0.9),
        reply.id: Candidate(reply.id, 0.1, 0.0, 0.05),
    }
    seeds, _ = e._recall.reads.context_seeds("default", cands, lambda m: m.is_active)
    assert [s.id for s in seeds] == [reply.id]  # the superseded memory is no seed
    times = e._recall.reads.created_times("default", cands, {})
    assert times[old.id] == old.created_at and times[reply.id] == reply.created_at


def _pottery_chat(policy: Policy) -> tuple[str, list[str]]:
    e = make_engine(policy)
    e.observe("Melanie: how was the pottery workshop last weekend?")
    e.clock.advance(seconds=30)  # type: ignore[attr-defined]
    answer = e.observe("Caroline: amazing, I made a blue bowl and a vase")
    e.clock.advance(days=2)  # type: ignore[attr-defined]
    for i in range(6):
        e.observe(f"Caroline: the bowl I made for soup number {i} was chipped")
        e.clock.advance(hours=5)  # type: ignore[attr-defined]
    hits = e.recall("what did Caroline make at the pottery workshop?", k=3, reinforce=False)
    lifted = {h.id for h in hits if h.explanation.context > 0}
    assert lifted <= {answer.id} | {h.id for h in hits if "pottery" in h.memory.text}
    return answer.id, [h.id for h in hits]


def test_the_reply_to_a_matching_question_is_recalled() -> None:
    answer, top = _pottery_chat(Policy(context_weight=0.2, neighbour_weight=0.0))
    assert answer in top
    # the same chat without context, by time or by the order turns were written
    answer, top = _pottery_chat(Policy(context_weight=0.0, neighbour_weight=0.0))
    assert answer not in top
    # the next turn alone lifts it (unbounded by the best hits: only 3 are asked for)
    answer, top = _pottery_chat(Policy(context_weight=0.0, neighbour_below=0))
    assert answer in top


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.integers(0, 400), st.floats(0, 1)), min_size=1, max_size=30),
    st.integers(1, 10),
    st.sampled_from([0.0, 1.0, 60.0, 120.0]),
)
def test_context_equals_the_definition(
    items: list[tuple[int, float]], n_seeds: int, window: float
) -> None:
    """Every candidate gains weight x the summed relevance of the other seeds observed
    within the window (checked against the definition, pair by pair, including many
    memories observed in the same second, as after an import)."""
    p = Policy(context_weight=0.1, context_window_seconds=window, context_seeds=n_seeds)
    cands = {f"m{i}": Candidate(f"m{i}", 0.0, 0.0, rel) for i, (_, rel) in enumerate(items)}
    times = {f"m{i}": T0 + timedelta(seconds=s) for i, (s, _) in enumerate(items)}
    seeds = sorted(cands.values(), key=lambda c: -c.relevance)[:n_seeds]
    out = conversation_context(cands, seeds, times, p)
    for cid, cand in cands.items():
        lent = 0.1 * sum(
            s.relevance for s in seeds
            if s.id != cid and abs((times[s.id] - times[cid]).total_seconds()) <= window
        )
        assert out[cid].context == pytest.approx(lent, abs=1e-9)
        assert out[cid].relevance == pytest.approx(cand.relevance + lent, abs=1e-9)
