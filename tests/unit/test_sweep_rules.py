"""The sweep's rules one at a time (core/eviction.py): what is a candidate, how candidates
are grouped (by meaning first, then in time runs per importance band), and the hard cap's
arithmetic, each with the numbers worked by hand."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np

from reverie.core import Memory, Status, Tier
from reverie.core.engine import MemoryEngine
from reverie.core.eviction import group_candidates, sweep_candidate, time_runs
from reverie.core.models import Kind
from tests.unit.conftest import T0, make_engine


def _later(engine: MemoryEngine, days: float) -> None:
    clock: Any = engine.clock
    clock.advance(days=days)


def _pairs(engine: MemoryEngine) -> list[Memory]:
    """Two topics, each said once as a vital fact (importance 0.9) and once in passing."""
    return [
        engine.observe("the cat sat on the warm mat", importance=0.9),
        engine.observe("a ship sailed across the sea", importance=0.9),
        engine.observe("the cat sat on the warm mat today", importance=0.5),
        engine.observe("a ship sailed across the open sea", importance=0.5),
    ]


def _groups(ids: list[list[str]]) -> set[frozenset[str]]:
    return {frozenset(g) for g in ids}


def test_a_decayed_synthesis_is_never_a_sweep_candidate() -> None:
    engine = make_engine()
    p = engine.policy
    later = T0 + timedelta(days=365)
    trace = Memory(
        id="t",
        namespace="default",
        kind=Kind.EPISODIC,
        tier=Tier.TRACE,
        text="an old remark",
        created_at=T0,
    )
    node = Memory(
        id="s",
        namespace="default",
        kind=Kind.SEMANTIC,
        tier=Tier.SYNTHESIS,
        text="an old digest",
        created_at=T0,
    )
    assert sweep_candidate(trace, later, p)
    assert not sweep_candidate(node, later, p)


def test_candidates_are_grouped_by_meaning_across_importance_bands() -> None:
    engine = make_engine()
    cat, ship, cat2, ship2 = _pairs(engine)
    _later(engine, 200)
    report = engine.sweep(dry_run=True)
    # by time and band alone it would be {cat, ship} and {cat2, ship2}
    assert report.candidates == 4
    assert _groups(report.groups) == {frozenset({cat.id, cat2.id}), frozenset({ship.id, ship2.id})}
    # two candidates are grouped by meaning too: one vital, one not, same topic
    engine = make_engine()
    cat = engine.observe("the cat sat on the warm mat", importance=0.9)
    cat2 = engine.observe("the cat sat on the warm mat today", importance=0.5)
    _later(engine, 200)
    report = engine.sweep(dry_run=True)
    assert _groups(report.groups) == {frozenset({cat.id, cat2.id})} and report.kept_lone == 0
    vectors = np.asarray(engine._ctx.embed([cat.text, cat2.text]))
    groups, lone = group_candidates(engine.policy, [cat, cat2], vectors)
    assert _groups([[m.id for m in g] for g in groups]) == {frozenset({cat.id, cat2.id})}
    assert lone == []


def test_importance_exactly_at_high_importance_is_in_the_ordinary_band_once() -> None:
    # high_importance is 0.8: "above" it is the vital band, 0.8 itself is not
    engine = make_engine()
    assert engine.policy.decay.high_importance == 0.8
    mems = [
        engine.observe(f"remark {w}", importance=imp, at=T0 + timedelta(minutes=i))
        for i, (w, imp) in enumerate((("alpha", 0.8), ("bravo", 0.5), ("charlie", 0.5)))
    ]
    groups, lone = group_candidates(engine.policy, mems, None)
    assert lone == []
    assert [[m.id for m in g] for g in groups] == [[m.id for m in mems]]


def test_time_runs_are_at_least_two_long_and_no_more_than_needed() -> None:
    engine = make_engine()
    mems = [engine.observe(f"remark {w}", importance=0.5) for w in ("a1", "b2", "c3", "d4")]
    # 4 in runs of at most 2: ceil(4 / 2) = 2 runs of 2
    assert [len(r) for r in time_runs(mems, 2)] == [2, 2]
    # a cap of 1 counts as 2: a run of one is no digest
    assert [len(r) for r in time_runs(mems, 1)] == [2, 2]


def test_the_report_counts_namespaces_and_no_fallbacks() -> None:
    engine = make_engine()
    for ns in ("one", "two"):
        engine.observe("an old remark about tea", namespace=ns, importance=0.5)
        engine.observe("another old remark about tea", namespace=ns, importance=0.5)
    _later(engine, 200)
    report = engine.sweep(namespace="one")
    assert report.namespaces == 1 and report.syntheses == 1
    # the extractive synthesizer never falls back
    assert report.fallbacks == 0 and report.per_namespace["one"]["fallbacks"] == 0
    report = engine.sweep()
    assert report.namespaces == 2 and report.fallbacks == 0


def test_a_sweep_under_the_hard_cap_runs_no_consolidation() -> None:
    engine = make_engine()
    engine.observe("an old remark about tea", importance=0.5)
    engine.observe("another old remark about tea", importance=0.5)
    _later(engine, 200)
    report = engine.sweep()
    assert report.syntheses == 1 and not report.cap_consolidated and report.evicted_by_cap == 0


def test_the_hard_cap_counts_what_the_sweep_leaves_active() -> None:
    # 2 decayed memories become 1 digest; 5 fresh ones stay: 7 active - 2 archived + 1
    # digest = 6 left, over a cap of 4 by 2 (a dry run counts, without writing)
    engine = make_engine()
    engine.observe("the cat sat on the warm mat", importance=0.5)
    engine.observe("the cat sat on the warm mat today", importance=0.5)
    _later(engine, 200)
    for w in ("one", "two", "three", "four", "five"):
        engine.observe(f"distinct topic number {w}", importance=0.5)
    engine.policy = engine.policy.replace(hard_cap_per_namespace=4)
    report = engine.sweep(dry_run=True)
    assert (report.archived, report.syntheses) == (2, 1)
    assert report.evicted_by_cap == 2


def test_one_memory_over_the_hard_cap_is_archived() -> None:
    engine = make_engine()
    engine.policy = engine.policy.replace(hard_cap_per_namespace=3)
    mems = [
        engine.observe(f"distinct topic number {w}", importance=imp)
        for w, imp in (("one", 0.35), ("two", 0.5), ("three", 0.6), ("four", 0.7))
    ]
    _later(engine, 1)  # nothing decayed below 0.15: only the cap acts
    assert engine.sweep(dry_run=True).evicted_by_cap == 1
    report = engine.sweep()
    assert report.evicted_by_cap == 1
    assert engine.get(mems[0].id).status is Status.ARCHIVED  # the lowest decay score
    assert all(engine.get(m.id).is_active for m in mems[1:])


def test_a_namespace_exactly_at_the_hard_cap_is_left_alone() -> None:
    # the cap is a ceiling: at it, no merging cycle runs and nothing is archived
    engine = make_engine()
    engine.policy = engine.policy.replace(hard_cap_per_namespace=3)
    mems = [engine.observe(f"distinct topic number {w}", importance=0.5)
            for w in ("one", "two", "three")]
    _later(engine, 1)
    report = engine.sweep()
    assert not report.cap_consolidated and report.evicted_by_cap == 0
    assert all(engine.get(m.id).is_active for m in mems)


def test_a_namespace_twice_over_the_hard_cap_is_brought_down_to_it() -> None:
    # 5 distinct memories (nothing to merge) and a cap of 2: 3 go, the lowest scores
    engine = make_engine()
    engine.policy = engine.policy.replace(hard_cap_per_namespace=2)
    mems = [
        engine.observe(f"distinct topic number {w}", importance=imp)
        for w, imp in (("one", 0.35), ("two", 0.4), ("three", 0.5), ("four", 0.6),
                       ("five", 0.7))
    ]
    _later(engine, 1)
    report = engine.sweep()
    assert report.evicted_by_cap == 3
    assert [engine.get(m.id).is_active for m in mems] == [False, False, False, True, True]
