"""Forget cascade and GC on in-memory ports, with numbers computed by hand.

Decay at importance 0.5 (between the 0.3 and 0.8 thresholds, so lambda is not scaled),
episodic half-life 14 d: S(t) = 0.5 * 2^(-t / 14). It crosses
- evict_salience 0.15 at t = 14 * log2(0.5 / 0.15) = 14 * 1.736966 = 24.3175 d,
- gc_salience 0.01 at t = 14 * log2(0.5 / 0.01) = 14 * 5.643856 = 79.0140 d.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from reverie.core import Memory, Status, Tier, vector_sync
from reverie.core.engine import MemoryEngine
from reverie.core.eviction import derived_closure
from reverie.core.models import Edge, EdgeType, Kind, new_id
from reverie.core.ports import WriteBatch
from reverie.core.scoring import decay_score
from tests.unit.conftest import T0

EVICT_DAYS = 14 * math.log2(0.5 / 0.15)
GC_DAYS = 14 * math.log2(0.5 / 0.01)


def clock(engine: MemoryEngine) -> Any:
    return engine.clock


def synthesize_by_hand(
    engine: MemoryEngine, members: Sequence[Memory], *, archive_members: bool = False
) -> Memory:
    """A synthesis node as the cycle writes one: union of sources, derived_from, members
    consolidated into it (the cycle's own tests cover how it gets there)."""
    ns = engine.default_namespace
    node = Memory(
        id=new_id(),
        namespace=ns,
        kind=Kind.SEMANTIC,
        tier=Tier.SYNTHESIS,
        text=" / ".join(m.text for m in members),
        created_at=engine.clock.now(),
        importance=max(m.importance for m in members),
        sources=frozenset().union(*(m.sources for m in members)),
        derived_from=frozenset(m.id for m in members),
    )
    status = Status.ARCHIVED if archive_members else Status.CONSOLIDATED
    fresh = [engine.get(m.id) for m in members]
    puts = (node, *(m.evolve(status=status, consolidated_into=node.id) for m in fresh))
    engine.store.commit(
        WriteBatch(ns, puts, (Edge(node.id, fresh[0].id, EdgeType.DERIVED_FROM, 1.0),))
    )
    vector_sync.index(engine._ctx, ns, [(node, engine._ctx.embed([node.text])[0])])
    return node


def test_decay_crosses_the_thresholds_at_the_hand_computed_days(engine: MemoryEngine) -> None:
    m = engine.observe("an episode", importance=0.5)
    at = T0 + timedelta(days=24.3175)
    assert decay_score(m, at, engine.policy) == pytest.approx(0.15, abs=1e-6)
    at = T0 + timedelta(days=79.0140)
    assert decay_score(m, at, engine.policy) == pytest.approx(0.01, abs=1e-6)


def test_forget_a_member_rebuilds_the_synthesis_from_the_others(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("my passport number is X1234567", importance=0.5)
    b = engine.observe("we walked along the river in Lisbon", importance=0.5)
    c = engine.observe("the office was slow today", importance=0.5)
    node = synthesize_by_hand(engine, [a, b, c])
    assert {h.id for h in engine.recall("passport number", k=5)} == {node.id}
    assert engine.history(memory_id=a.id) == [engine.get(a.id)]  # no other version

    n = engine.forget(a.id)

    assert n == 1  # the memory; the synthesis is rewritten without it, not deleted
    ids = {m.id for m in engine.memories()}
    assert ids == {node.id, b.id, c.id}
    rebuilt = engine.get(node.id)
    assert rebuilt.derived_from == {b.id, c.id}
    assert "X1234567" not in rebuilt.text
    assert "Lisbon" in rebuilt.text and "office was slow" in rebuilt.text
    for m in (engine.get(b.id), engine.get(c.id)):
        assert m.status is Status.CONSOLIDATED and m.consolidated_into == node.id
    assert engine.store.edges(engine.default_namespace, [a.id]) == []
    found = engine.recall("passport number X1234567", k=5, include_history=True)
    assert found and all("X1234567" not in h.text for h in found)
    assert all("X1234567" not in str(rec) for rec in engine.export())


def test_forget_cascades_through_a_synthesis_of_syntheses(engine: MemoryEngine) -> None:
    a = engine.observe("alpha secret one")
    b = engine.observe("beta public two")
    c = engine.observe("gamma public three")
    d = engine.observe("delta public four")
    low = synthesize_by_hand(engine, [a, b])
    other = synthesize_by_hand(engine, [c, d])
    top = synthesize_by_hand(engine, [engine.get(low.id), engine.get(other.id)])
    assert derived_closure(engine.store, engine.default_namespace, [a.id]) == {low.id, top.id}

    engine.forget(a.id)

    left = {m.id: m for m in engine.memories()}
    assert set(left) == {b.id, c.id, d.id, other.id}
    assert left[b.id].status is Status.ACTIVE  # member of the deleted low node
    assert left[other.id].status is Status.ACTIVE  # member of the deleted top node
    assert left[c.id].consolidated_into == other.id  # untouched: its node survives
    assert all("secret" not in m.text for m in left.values())


def test_forget_an_archived_member_restores_archived_siblings_to_active(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("the door code is 4711")
    b = engine.observe("the door is painted green")
    synthesize_by_hand(engine, [a, b], archive_members=True)
    engine.forget(a.id)
    assert engine.get(b.id).status is Status.ACTIVE


def test_restored_member_with_an_active_twin_is_archived_not_duplicated(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("secret thing")
    b = engine.observe("I like tea")
    synthesize_by_hand(engine, [a, b])
    twin = engine.observe("I like tea")  # said again after b was consolidated
    assert twin.id != b.id
    engine.forget(a.id)
    assert engine.get(b.id).status is Status.ARCHIVED
    assert engine.get(b.id).consolidated_into is None
    assert engine.get(twin.id).status is Status.ACTIVE


@pytest.mark.parametrize("twin_id", ["0" * 32, "f" * 32], ids=["sorts-first", "sorts-last"])
def test_a_twin_archives_the_restored_member_whichever_way_their_ids_sort(
    engine: MemoryEngine, twin_id: str
) -> None:
    """The twin is found by its text; which of the two ids sorts first says nothing."""
    a = engine.observe("secret thing")
    b = engine.observe("I like tea")
    synthesize_by_hand(engine, [a, b])
    twin = Memory(id=twin_id, namespace=engine.default_namespace, kind=Kind.EPISODIC,
                  tier=Tier.TRACE, text="I like tea", created_at=T0 + timedelta(days=1))
    engine.store.commit(WriteBatch(engine.default_namespace, (twin,)))
    engine.forget(a.id)
    assert engine.get(b.id).status is Status.ARCHIVED
    assert engine.get(twin_id).status is Status.ACTIVE


def test_a_restored_fact_whose_key_has_a_newer_holder_is_archived(
    engine: MemoryEngine,
) -> None:
    """A unit restored from a dropped synthesis would make its fact key hold two current
    values; the value told since holds it, so the restored one is archived."""
    a = engine.observe("secret thing")
    city = engine.remember("user", "lives in", "Berlin")
    synthesize_by_hand(engine, [a, city])
    now = engine.remember("user", "lives in", "Lisbon")  # the key's holder had left it
    assert now.id != city.id and now.is_active
    engine.forget(a.id)
    assert engine.get(city.id).status is Status.ARCHIVED
    assert engine.get(now.id).status is Status.ACTIVE
    assert [m.text for m in engine.memories() if m.key == now.key and m.is_active] == [
        now.text]


def test_forget_without_syntheses_is_plain_deletion(engine: MemoryEngine) -> None:
    a = engine.observe("one thing")
    b = engine.observe("another thing")
    assert engine.forget(a.id, "no-such-id") == 1
    assert [m.id for m in engine.memories()] == [b.id]


def test_forget_in_one_namespace_leaves_another_alone(engine: MemoryEngine) -> None:
    a = engine.observe("shared words here")
    b = engine.observe("more shared words")
    node = synthesize_by_hand(engine, [a, b])
    other = engine.observe("shared words here", namespace="other")
    assert engine.forget(a.id, namespace="other") == 0
    assert engine.get(node.id).tier is Tier.SYNTHESIS
    assert engine.get(other.id, namespace="other").is_active


# ---------------------------------------------------------------------------- GC


def _archive(engine: MemoryEngine, m: Memory, **changes: Any) -> Memory:
    cur = engine.get(m.id)
    nxt = cur.evolve(status=Status.ARCHIVED, **changes)
    engine.store.commit(WriteBatch(engine.default_namespace, (nxt,)))
    return nxt


def test_gc_deletes_archived_memories_exactly_when_they_cross_0_01(
    engine: MemoryEngine,
) -> None:
    old = _archive(engine, engine.observe("a faded episode", importance=0.5))
    exempt = _archive(
        engine, engine.observe("a compliance record", importance=0.5), retention_exempt=True
    )
    live = engine.observe("an active episode", importance=0.5)  # decayed, but not archived

    clock(engine).set(T0 + timedelta(days=GC_DAYS - 0.01))
    assert decay_score(engine.get(old.id), engine.clock.now(), engine.policy) > 0.01
    early = engine.gc()
    assert early.deleted == 0 and early.kept_exempt == 0

    clock(engine).advance(days=0.02)
    assert decay_score(engine.get(old.id), engine.clock.now(), engine.policy) < 0.01
    preview = engine.gc(dry_run=True)
    assert preview.deleted == 1 and preview.deleted_ids == [old.id]
    assert engine.get(old.id).status is Status.ARCHIVED  # a dry run writes nothing

    report = engine.gc()
    assert report.deleted == 1 and report.kept_exempt == 1
    assert {m.id for m in engine.memories()} == {exempt.id, live.id}
    assert old.id not in engine.vectors.ids(engine.default_namespace)


def test_gc_repoints_members_of_a_deleted_synthesis_to_the_node_above(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("apples are red", importance=0.5)
    b = engine.observe("apples are sweet", importance=0.5)
    c = engine.observe("pears are green", importance=0.5)
    low = synthesize_by_hand(engine, [a, b])
    top = synthesize_by_hand(engine, [engine.get(low.id), c], archive_members=True)
    lone = synthesize_by_hand(engine, [engine.observe("x y"), engine.observe("z w")])
    _archive(engine, lone)
    clock(engine).advance(days=10 * GC_DAYS)  # semantic, 90 d half-life: far below 0.01

    report = engine.gc()

    assert low.id in report.deleted_ids
    assert lone.id not in report.deleted_ids  # its members' only text: kept
    assert engine.get(a.id).consolidated_into == top.id
    assert engine.get(b.id).consolidated_into == top.id
    # forgetting a re-pointed member still removes the node that holds its text
    engine.forget(a.id)
    assert engine.store.get(engine.default_namespace, top.id) is None


def test_gc_finishes_an_interrupted_forget(engine: MemoryEngine) -> None:
    a = engine.observe("first")
    b = engine.observe("second")
    node = synthesize_by_hand(engine, [a, b])
    engine.store.delete(engine.default_namespace, [node.id])  # crash after the delete
    assert engine.get(a.id).status is Status.CONSOLIDATED
    report = engine.gc()
    assert report.orphans_restored == 2
    assert engine.get(a.id).status is Status.ACTIVE and engine.get(a.id).consolidated_into is None


# ---------------------------------------------------------------------------- sweep


def _active(engine: MemoryEngine) -> set[str]:
    return {m.id for m in engine.memories(statuses=[Status.ACTIVE])}


def test_sweep_distils_exactly_when_salience_crosses_0_15(engine: MemoryEngine) -> None:
    a = engine.observe("we talked about the weather in Oslo", importance=0.5)
    b = engine.observe("the user had soup for lunch", importance=0.5)
    c = engine.observe("the meeting moved to Thursday", importance=0.5)
    crystal = engine.confirm(engine.observe("my name is Dana", importance=0.5).id)
    pinned = engine.pin(engine.observe("call me by my first name", importance=0.5).id)

    clock(engine).set(T0 + timedelta(days=EVICT_DAYS - 0.01))
    assert engine.sweep().candidates == 0

    clock(engine).set(T0 + timedelta(days=EVICT_DAYS + 0.01))
    report = engine.sweep()

    assert report.candidates == 3 and report.syntheses == 1 and report.archived == 3
    assert report.kept_lone == 0 and report.evicted_by_cap == 0
    (node,) = engine.memories(tiers=[Tier.SYNTHESIS])
    assert node.derived_from == {a.id, b.id, c.id}
    assert node.sources == a.sources | b.sources | c.sources
    for m in (a, b, c):
        swept = engine.get(m.id)
        assert swept.status is Status.ARCHIVED and swept.consolidated_into == node.id
        assert m.text in node.text  # extractive: distilled, nothing lost
    assert _active(engine) == {node.id, crystal.id, pinned.id}
    assert [sorted(g) for g in report.groups] == [sorted([a.id, b.id, c.id])]
    # recall finds the content through the synthesis
    assert engine.recall("soup for lunch", k=1)[0].id == node.id
    # a second sweep right away changes nothing (the node is fresh; syntheses are not swept)
    again = engine.sweep()
    assert again.candidates == 0 and again.syntheses == 0


def test_sweep_dry_run_writes_nothing(engine: MemoryEngine) -> None:
    for text in ("first faded thing", "second faded thing", "third faded thing"):
        engine.observe(text, importance=0.5)
    clock(engine).advance(days=30)
    before = list(engine.export())
    preview = engine.sweep(dry_run=True)
    assert preview.dry_run and preview.syntheses == 1 and preview.archived == 3
    assert list(engine.export()) == before
    assert engine.gc(dry_run=True).deleted == 0
    assert list(engine.export()) == before


def test_a_lone_decayed_memory_stays_active_until_it_has_company(engine: MemoryEngine) -> None:
    lone = engine.observe("a single old remark", importance=0.5)
    clock(engine).advance(days=30)
    fresh = engine.observe("a newer remark", importance=0.5)
    report = engine.sweep()
    assert report.candidates == 1 and report.kept_lone == 1 and report.syntheses == 0
    assert _active(engine) == {lone.id, fresh.id}
    clock(engine).advance(days=30)
    report = engine.sweep()
    assert report.syntheses == 1 and engine.get(lone.id).status is Status.ARCHIVED


def test_retention_exempt_is_archived_by_sweep_but_never_deleted_by_gc(
    engine: MemoryEngine,
) -> None:
    held = engine.observe("invoice 42 was paid", importance=0.5)
    engine.store.commit(
        WriteBatch(engine.default_namespace, (engine.get(held.id).evolve(retention_exempt=True),))
    )
    other = engine.observe("the printer jammed", importance=0.5)
    clock(engine).advance(days=30)
    engine.sweep()
    assert engine.get(held.id).status is Status.ARCHIVED
    clock(engine).advance(days=365)
    report = engine.gc()
    assert report.deleted_ids == [other.id] and report.kept_exempt == 1
    assert engine.get(held.id).status is Status.ARCHIVED


def test_hard_cap_merges_first_then_archives_the_lowest_scores(engine: MemoryEngine) -> None:
    engine.policy = engine.policy.replace(hard_cap_per_namespace=3)
    mems = [
        engine.observe(f"distinct topic number {w}", importance=imp)
        for w, imp in (("one", 0.35), ("two", 0.4), ("three", 0.5), ("four", 0.6), ("five", 0.7))
    ]
    clock(engine).advance(days=1)  # nothing is below 0.15 yet: only the cap acts
    preview = engine.sweep(dry_run=True)
    assert preview.candidates == 0 and preview.evicted_by_cap == 2
    report = engine.sweep()
    assert report.cap_consolidated and report.evicted_by_cap == 2
    assert _active(engine) == {m.id for m in mems[2:]}
    assert {engine.get(m.id).status for m in mems[:2]} == {Status.ARCHIVED}


def test_forget_a_swept_member_drops_the_digest_and_revives_its_siblings(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("my bank PIN is 9182", importance=0.5)
    b = engine.observe("the bank opens at nine", importance=0.5)
    clock(engine).advance(days=30)
    engine.sweep()
    (node,) = engine.memories(tiers=[Tier.SYNTHESIS])
    engine.forget(a.id)
    assert engine.store.get(engine.default_namespace, node.id) is None
    assert engine.get(b.id).status is Status.ACTIVE
    # the words, not the digits alone: random hex ids and sources can hold any 4 digits
    assert all("PIN is 9182" not in str(r) for r in engine.export())


def test_digests_are_near_equal_time_runs_and_keep_important_memories_apart(
    engine: MemoryEngine,
) -> None:
    from reverie.core.eviction import group_candidates, time_runs

    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
    small = [
        engine.observe(f"unrelated remark {w}", importance=0.5, at=T0 + timedelta(minutes=i))
        for i, w in enumerate(words)
    ]
    vital = [
        engine.observe(f"vital fact {w}", importance=0.9, at=T0 + timedelta(minutes=i))
        for i, w in enumerate(("kilo", "lima"))
    ]
    assert [len(r) for r in time_runs(small, 4)] == [3, 3, 3]  # ceil(9/4) = 3 runs
    assert [len(r) for r in time_runs(small[:5], 4)] == [3, 2]
    groups, lone = group_candidates(engine.policy, [*small, *vital], None)  # no vectors: time only
    assert lone == []
    assert [[m.id for m in g] for g in groups] == [
        [m.id for m in vital], *([m.id for m in r] for r in time_runs(small, 4))
    ]
    groups, lone = group_candidates(engine.policy, [*small[:3], vital[0]], None)
    assert [m.id for m in lone] == [vital[0].id]  # alone in its band: stays active
