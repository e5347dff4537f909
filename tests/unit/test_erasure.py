"""Erasure on in-memory ports: what `forget` reaches, `forget_matching`, undoing a
consolidation, journaled forgets finished after a crash, and GC collecting members.

Numbers for GC, computed by hand: importance 0.5 sits between the 0.3 and 0.8
thresholds, so lambda is not scaled; episodic half-life 14 d, so S(t) = 0.5 * 2^(-t/14)
crosses gc_salience 0.01 at t = 14 * log2(50) = 14 * 5.643856 = 79.0140 d after the last
access. The grace period is 30 d after the synthesis was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from reverie.core import Memory, Policy, Status, Tier, vector_sync
from reverie.core.deletion import member_collectable
from reverie.core.engine import MemoryEngine
from reverie.core.erasure import FORGET_JOURNAL, FORGET_PENDING, PROVENANCE_KEY
from reverie.core.errors import InvalidInput, NotFound
from reverie.core.models import Edge, EdgeType, Kind, new_id
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0

NS = "default"
SECRET = "zebra-4471-kumquat"
GC_DAYS = 14 * 5.643856  # 79.0140 d: 0.5 * 2^(-t/14) = 0.01


def consolidate_by_hand(
    engine: MemoryEngine,
    members: Sequence[Memory],
    *,
    text: str | None = None,
    archived: bool = False,
) -> Memory:
    """A synthesis node as the cycle writes one (members consolidated into it)."""
    node = Memory(
        id=new_id(),
        namespace=NS,
        kind=Kind.SEMANTIC,
        tier=Tier.SYNTHESIS,
        text=text or " / ".join(m.text for m in members),
        created_at=engine.clock.now(),
        importance=max(m.importance for m in members),
        sources=frozenset().union(*(m.sources for m in members)),
        derived_from=frozenset(m.id for m in members),
    )
    status = Status.ARCHIVED if archived else Status.CONSOLIDATED
    fresh = [engine.get(m.id) for m in members]
    puts = (node, *(m.evolve(status=status, consolidated_into=node.id) for m in fresh))
    engine.store.commit(WriteBatch(NS, puts))
    vector_sync.index(engine._ctx, NS, [(node, engine._ctx.embed([node.text])[0])])
    return node


def holding(engine: MemoryEngine, needle: str, namespace: str = NS) -> list[str]:
    """Ids of every stored record (any status) whose serialised form holds `needle`."""
    return sorted(
        rec["record"]["id"]
        for rec in engine.export(namespace=namespace)
        if rec["type"] == "memory" and needle.casefold() in str(rec).casefold()
    )


# ---------------------------------------------------------------------------- forget


def test_forgetting_a_synthesis_erases_its_members_and_gc_does_not_bring_them_back(
    engine: MemoryEngine,
) -> None:
    members = [
        engine.observe(f"the vault code is {SECRET}", source="s1"),
        engine.observe(f"remember {SECRET} for the vault", source="s2"),
        engine.observe(f"vault: {SECRET}, do not share", source="s3"),
    ]
    bystander = engine.observe("the garden needs water")
    node = consolidate_by_hand(engine, members)
    hits = engine.recall("vault code", k=1)
    assert [h.id for h in hits] == [node.id]

    deleted = engine.forget(*[h.id for h in hits])

    assert deleted == 4
    assert holding(engine, SECRET) == []
    engine.clock.advance(days=400)  # type: ignore[attr-defined]
    report = engine.gc()
    assert report.orphans_restored == 0
    assert holding(engine, SECRET) == []
    assert [m.id for m in engine.memories()] == [bystander.id]
    assert all(SECRET not in h.text for h in engine.recall("vault code", include_history=True))


def test_forgetting_the_current_value_erases_every_version(engine: MemoryEngine) -> None:
    old = engine.remember("alice", "password", SECRET, at=T0)
    mid = engine.remember("alice", "password", "swordfish", at=T0 + timedelta(days=1))
    new = engine.remember("alice", "password", "tr0ub4dor", at=T0 + timedelta(days=2))
    assert engine.get(old.id).status is Status.SUPERSEDED
    assert len(engine.history("alice", "password")) == 3

    assert engine.forget(new.id) == 3

    assert engine.history("alice", "password") == []
    assert holding(engine, SECRET) == []
    as_of = engine.recall("alice password", as_of=T0 + timedelta(hours=1))
    assert all(h.id not in {old.id, mid.id} for h in as_of)


def test_forgetting_an_old_version_erases_the_newer_ones_too(engine: MemoryEngine) -> None:
    old = engine.remember("bob", "lives in", "Paris", at=T0)
    new = engine.remember("bob", "lives in", "Berlin", at=T0 + timedelta(days=3))
    other = engine.remember("bob", "works at", "a bakery", at=T0)
    assert engine.forget(old.id) == 2
    assert {m.id for m in engine.memories()} == {other.id}
    with pytest.raises(NotFound):
        engine.get(new.id)


def test_free_text_versions_joined_by_an_updates_edge_go_together(engine: MemoryEngine) -> None:
    before = engine.observe(f"my locker combination is {SECRET}")
    after = engine.observe("my locker combination is now 11-22-33")
    unrelated = engine.observe("my locker is on the second floor")
    engine.store.commit(WriteBatch(NS, (), (Edge(after.id, before.id, EdgeType.UPDATES),)))
    assert {m.id for m in engine.history(memory_id=after.id)} == {before.id, after.id}

    assert engine.forget(after.id) == 2

    assert {m.id for m in engine.memories()} == {unrelated.id}


def test_forget_rejects_ids_that_are_not_text(engine: MemoryEngine) -> None:
    engine.observe("something")
    with pytest.raises(InvalidInput):
        engine.forget(None)  # type: ignore[arg-type]
    assert engine.forget() == 0


# ---------------------------------------------------------------------------- forget_matching


def test_forget_matching_finds_every_holder_in_every_status(engine: MemoryEngine) -> None:
    a = engine.observe(f"the alarm code is {SECRET}")
    b = engine.observe("the alarm is in the hall")
    c = engine.observe("the hall light is broken")
    node = consolidate_by_hand(engine, [a, b, c])
    fact = engine.remember("house", "alarm code", SECRET, at=T0)
    engine.remember("house", "alarm code", "0000", at=T0 + timedelta(days=1))
    in_meta = engine.observe("a note about the door", metadata={"where": f"from {SECRET}"})
    in_source = engine.observe("a note about the roof", source=f"mail:{SECRET}")
    archived = engine.observe(f"{SECRET.upper()} once, long ago")
    engine.store.commit(
        WriteBatch(NS, (engine.get(archived.id).evolve(status=Status.ARCHIVED),))
    )
    keep = engine.observe("the alarm company is called Acme")
    elsewhere = engine.observe(f"another tenant's {SECRET}", namespace="other")
    assert engine.get(fact.id).status is Status.SUPERSEDED
    assert len(holding(engine, SECRET)) == 6

    report = engine.forget_matching(SECRET.upper())

    assert holding(engine, SECRET) == []
    assert set(report.erased) >= {a.id, fact.id, in_meta.id, in_source.id, archived.id}
    assert report.rebuilt == (node.id,)  # b and c survive, so the synthesis is rebuilt
    rebuilt = engine.get(node.id)
    assert rebuilt.derived_from == {b.id, c.id} and SECRET not in rebuilt.text
    assert engine.get(keep.id).is_active
    assert engine.get(elsewhere.id, namespace="other").is_active  # another namespace
    assert engine.history("house", "alarm code") == []  # every version of the fact


def test_forget_matching_needs_text(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidInput):
        engine.forget_matching("   ")


# ---------------------------------------------------------------------------- undo


def test_undo_consolidation_restores_members_and_keeps_their_text(engine: MemoryEngine) -> None:
    a = engine.observe("cats sleep a lot")
    b = engine.observe("dogs bark at night")
    node = consolidate_by_hand(engine, [a, b])
    report = engine.undo_consolidation(node.id)
    assert set(report.restored) == {a.id, b.id} and report.lost == ()
    assert {m.id for m in engine.memories()} == {a.id, b.id}
    assert all(engine.get(i).is_active and engine.get(i).consolidated_into is None
               for i in (a.id, b.id))
    with pytest.raises(InvalidInput):
        engine.undo_consolidation(a.id)  # not a synthesis
    with pytest.raises(NotFound):
        engine.undo_consolidation(node.id)


# ---------------------------------------------------------------------------- crashes


class Crash(Exception):
    """The process dying between the records' deletion and the vectors'."""


class CrashingIndex(InMemoryVectorIndex):
    def __init__(self) -> None:
        super().__init__()
        self.crash = False

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        if self.crash:
            raise Crash(namespace)
        super().delete(namespace, ids)


def _engine(store: InMemoryStore, index: InMemoryVectorIndex) -> MemoryEngine:
    from reverie.core import ManualClock

    return MemoryEngine(store, store, index, BagOfWordsEmbedder(), clock=ManualClock(T0))


@pytest.mark.parametrize("finisher", ["open", "gc"])
def test_a_forget_cut_short_is_finished_by_the_next_open_or_gc(finisher: str) -> None:
    store, index = InMemoryStore(), CrashingIndex()
    engine = _engine(store, index)
    members = [engine.observe(f"{SECRET} number {i}") for i in range(3)]
    node = consolidate_by_hand(engine, members)
    engine.flush()
    index.crash = True
    with pytest.raises(Crash):
        engine.forget(node.id)
    index.crash = False
    # the records went, the vectors did not: the journal says what was under way
    assert store.get(NS, node.id) is None
    assert {m.id for m in members} <= index.ids(NS)
    entry = store.journal_get(NS, FORGET_JOURNAL)
    assert entry is not None and set(entry["ids"]) == {node.id, *(m.id for m in members)}
    assert store.get_meta(FORGET_PENDING) == f'["{NS}"]'

    if finisher == "open":
        _engine(store, index)
    else:
        assert engine.gc().forgets_finished == 1

    assert index.ids(NS) == set()
    assert store.journal_get(NS, FORGET_JOURNAL) == {"ids": []}
    assert store.get_meta(FORGET_PENDING) == "[]"


def test_gc_deletes_vectors_whose_record_is_gone(engine: MemoryEngine) -> None:
    keep = engine.observe("a memory that stays")
    ghost = engine.observe("a memory whose record vanished")
    engine.flush()
    engine.store.delete(NS, [ghost.id])  # a crash between a deletion's two halves
    assert ghost.id in engine.vectors.ids(NS)
    assert engine.gc(dry_run=True).orphan_vectors == 0  # a dry run deletes nothing
    report = engine.gc()
    assert report.orphan_vectors == 1
    assert engine.vectors.ids(NS) == {keep.id}
    assert engine.gc().orphan_vectors == 0


# ---------------------------------------------------------------------------- GC of members


def _member(**changes: Any) -> Memory:
    fields: dict[str, Any] = {
        "id": new_id(), "namespace": NS, "kind": Kind.EPISODIC, "tier": Tier.TRACE,
        "text": "a fragment", "created_at": T0, "importance": 0.5,
        "status": Status.CONSOLIDATED, "consolidated_into": "syn",
    }
    return Memory(**{**fields, **changes})


def _node(made_days: float) -> Memory:
    return Memory(
        id="syn", namespace=NS, kind=Kind.SEMANTIC, tier=Tier.SYNTHESIS, text="a synthesis",
        created_at=T0 + timedelta(days=made_days), derived_from=frozenset({"m"}),
    )


def test_member_collectable_at_the_hand_computed_days() -> None:
    policy = Policy()
    m = _member()
    early = _node(made_days=10)
    # below the floor only after 79.0140 d of decay
    assert not member_collectable(m, early, T0 + timedelta(days=GC_DAYS - 0.01), policy)
    assert member_collectable(m, early, T0 + timedelta(days=GC_DAYS + 0.01), policy)
    # the synthesis made at day 60 stands 30 d at day 90: below the floor since 79 d,
    # but collected only from day 90
    late = _node(made_days=60)
    assert not member_collectable(m, late, T0 + timedelta(days=89.99), policy)
    assert member_collectable(m, late, T0 + timedelta(days=90), policy)
    at = T0 + timedelta(days=400)
    assert not member_collectable(_member(pinned=True), early, at, policy)
    assert not member_collectable(_member(retention_exempt=True), early, at, policy)
    assert not member_collectable(_member(consolidated_into="other"), early, at, policy)
    assert member_collectable(_member(status=Status.ARCHIVED), early, at, policy)
    shorter = Policy(gc_member_grace_days=5)
    assert member_collectable(m, late, T0 + timedelta(days=80), shorter)


def test_gc_collects_members_and_the_synthesis_keeps_their_provenance(
    engine: MemoryEngine,
) -> None:
    a = engine.observe("we planted tomatoes", source="chat-1", importance=0.5)
    b = engine.observe("the tomatoes need sun", source="chat-2", importance=0.5)
    held = engine.observe("the greenhouse key is under the pot", importance=0.5)
    node = consolidate_by_hand(engine, [a, b, held])
    exempt = engine.get(held.id).evolve(retention_exempt=True)
    engine.store.commit(WriteBatch(NS, (exempt,)))

    engine.clock.advance(days=GC_DAYS - 0.01)  # type: ignore[attr-defined]
    assert engine.gc().members_collected == 0
    engine.clock.advance(days=0.02)  # type: ignore[attr-defined]
    report = engine.gc()

    assert report.members_collected == 2 and report.kept_exempt == 1
    assert {m.id for m in engine.memories()} == {node.id, held.id}
    kept = engine.get(node.id)
    assert kept.derived_from == {a.id, b.id, held.id}  # the ids stay
    prov = kept.metadata[PROVENANCE_KEY]
    assert set(prov) == {a.id, b.id}
    assert prov[a.id]["sources"] == ["chat-1"]
    assert prov[a.id]["text_hash"] == content_hash(a.text)
    assert prov[a.id]["created_at"] == a.created_at.isoformat()
    assert "tomatoes" not in str(prov)  # a hash, never the text
    assert a.id not in engine.vectors.ids(NS)


def _collected(engine: MemoryEngine, paraphrase: str) -> tuple[Memory, Memory, Memory, Memory]:
    a = engine.observe(f"the safe opens with {SECRET}", importance=0.5)
    b = engine.observe("the safe is behind the painting", importance=0.5)
    c = engine.observe("the painting is a landscape", importance=0.5)
    node = consolidate_by_hand(engine, [a, b, c], text=paraphrase)
    engine.clock.advance(days=GC_DAYS + 1)  # type: ignore[attr-defined]
    assert engine.gc().members_collected == 3
    return a, b, c, node


def test_an_exact_text_forget_reaches_a_collected_member_through_its_hash(
    engine: MemoryEngine,
) -> None:
    _a, _b, _c, node = _collected(engine, "A safe with a code, hidden by a landscape.")
    # a part of the text cannot match what is no longer stored (documented)
    missed = engine.forget_matching(SECRET)
    assert missed.erased == () and missed.cascaded == ()
    assert engine.get(node.id).tier is Tier.SYNTHESIS

    report = engine.forget_matching(f"The safe opens with {SECRET}.")

    # the synthesis drew on it; no member is left to rebuild it from: it goes
    assert report.cascaded == (node.id,)
    assert list(engine.memories()) == []


def test_forgetting_a_collected_member_by_id_reaches_its_synthesis(
    engine: MemoryEngine,
) -> None:
    a, _b, _c, node = _collected(engine, f"The safe ({SECRET}) is behind a landscape.")
    assert engine.forget(a.id) == 1
    with pytest.raises(NotFound):
        engine.get(node.id)  # the synthesis, dropped: nothing stored to rebuild from
    assert holding(engine, SECRET) == []


def test_decoded_records_of_a_forgotten_memory_leave_the_process() -> None:
    import json

    from reverie.core.codec import DecodedRecords, memory_to_dict

    cache = DecodedRecords(16)
    a, b = _member(text=f"held {SECRET}"), _member(text="kept")
    other = _member(namespace="other", text=f"other {SECRET}")
    for m in (a, b, other):
        cache.decode(json.dumps(memory_to_dict(m)))
    assert len(cache) == 3
    cache.forget(NS, [a.id])
    assert len(cache) == 2
    cache.forget(NS)
    assert len(cache) == 1  # another namespace's records stay


def test_forget_matching_dry_run_says_what_would_go_and_changes_nothing(
    engine: MemoryEngine,
) -> None:
    a = engine.observe(f"the alarm code is {SECRET}")
    b = engine.observe("the alarm is in the hall")
    c = engine.observe("the hall light is broken")
    node = consolidate_by_hand(engine, [a, b, c])
    before = list(engine.export())
    plan = engine.forget_matching(SECRET, dry_run=True)
    assert plan.erased == (a.id,) and plan.rebuilt == (node.id,)
    assert list(engine.export()) == before
    done = engine.forget_matching(SECRET)
    assert done.erased == plan.erased and done.rebuilt == plan.rebuilt
    del b, c


class Killed(BaseException):
    """The process killed (not an error the index write's handler would log and absorb)."""


class CrashOnUpsert(InMemoryVectorIndex):
    """Dies when the vector of one chosen memory is written."""

    def __init__(self) -> None:
        super().__init__()
        self.fatal: str | None = None

    def upsert(self, namespace: str, items: Sequence[Any]) -> None:
        if any(item.id == self.fatal for item in items):
            raise Killed(namespace)
        super().upsert(namespace, items)


def test_a_resumed_forget_rebuilds_the_synthesis_above_one_it_had_rebuilt() -> None:
    store, index = InMemoryStore(), CrashOnUpsert()
    engine = _engine(store, index)
    a = engine.observe(f"the boat key code is {SECRET}")
    b = engine.observe("the boat is moored at pier four")
    d = engine.observe("the boat needs new paint")
    c = engine.observe("the harbour closes at nine")
    low = consolidate_by_hand(engine, [a, b, d])
    top = consolidate_by_hand(engine, [engine.get(low.id), c])
    assert SECRET in engine.get(top.id).text
    index.fatal = low.id  # dies after the low synthesis is rebuilt, before the top one
    with pytest.raises(Killed):
        engine.forget(a.id)
    assert SECRET not in store.get(NS, low.id).text  # type: ignore[union-attr]
    assert SECRET in store.get(NS, top.id).text  # type: ignore[union-attr]
    index.fatal = None

    reopened = _engine(store, index)

    assert holding(reopened, SECRET) == []
    assert reopened.get(top.id).derived_from == {low.id, c.id}
    assert store.journal_get(NS, FORGET_JOURNAL) == {"ids": []}
