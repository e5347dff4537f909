"""Forget and GC rules one at a time (core/deletion.py): a forget resumed after a crash
still rebuilds the synthesis it had planned, a rebuilt synthesis keeps its members'
entities, and GC's report counts exactly what it deleted and held."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pytest

from reverie.core import ManualClock, Memory, Status, Tier
from reverie.core.deletion import gc_candidate
from reverie.core.engine import MemoryEngine
from reverie.core.erasure import CONTEXT_KEY, context_of
from reverie.core.errors import NotFound
from reverie.core.models import Kind
from reverie.core.ports import WriteBatch
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0, make_engine
from tests.unit.test_erasure import GC_DAYS, NS, SECRET, consolidate_by_hand, holding


class Died(Exception):
    """The process dying right after the forget journaled its plan."""


class DiesOnDelete(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.die = False

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        if self.die:
            raise Died(namespace)
        return super().delete(namespace, ids)


def _open(store: InMemoryStore, index: InMemoryVectorIndex) -> MemoryEngine:
    return MemoryEngine(store, store, index, BagOfWordsEmbedder(), clock=ManualClock(T0))


def test_a_forget_cut_short_before_deleting_rebuilds_the_synthesis_when_resumed() -> None:
    store, index = DiesOnDelete(), InMemoryVectorIndex()
    engine = _open(store, index)
    a = engine.observe(f"the boat key code is {SECRET}")
    b = engine.observe("the boat is moored at pier four")
    c = engine.observe("the boat needs new paint")
    node = consolidate_by_hand(engine, [a, b, c])
    store.die = True
    with pytest.raises(Died):
        engine.forget(a.id)
    store.die = False
    # nothing was deleted yet: the journal holds the plan, the synthesis to rebuild too
    assert SECRET in store.get(NS, node.id).text  # type: ignore[union-attr]

    reopened = _open(store, index)  # finishes the forget

    assert holding(reopened, SECRET) == []
    rebuilt = reopened.get(node.id)
    assert rebuilt.derived_from == {b.id, c.id}


def test_a_rebuilt_synthesis_keeps_its_surviving_members_entities() -> None:
    engine = make_engine()
    a = engine.observe(f"Melanie keeps the code {SECRET}")
    b = engine.observe("Melanie moved to Boston")
    c = engine.observe("Boston is cold in January")
    node = consolidate_by_hand(engine, [a, b, c])
    report = engine.forget(a.id)
    assert report == 1
    rebuilt = engine.get(node.id)
    assert engine.get(b.id).entities | engine.get(c.id).entities <= rebuilt.entities
    assert {"melanie", "boston"} <= rebuilt.entities


def test_gc_candidate_is_an_archived_memory_below_gc_salience() -> None:
    p = make_engine().policy
    old = Memory(
        id="m",
        namespace=NS,
        kind=Kind.EPISODIC,
        tier=Tier.TRACE,
        text="an old remark",
        created_at=T0,
        status=Status.ARCHIVED,
        importance=0.5,
    )
    # importance 0.5, half-life 14 days: below 0.01 after 14 * log2(50) = 79.01 days
    assert not gc_candidate(old, T0 + timedelta(days=GC_DAYS - 0.01), p)
    assert gc_candidate(old, T0 + timedelta(days=GC_DAYS + 0.01), p)
    assert not gc_candidate(old.evolve(status=Status.ACTIVE), T0 + timedelta(days=365), p)


def test_gc_counts_every_record_it_deletes_and_repoints_nothing_it_did_not() -> None:
    engine = make_engine()
    members = [
        engine.observe(f"we planted tomatoes in row {w}", importance=0.5)
        for w in ("one", "two", "three")
    ]
    node = consolidate_by_hand(engine, members)
    stray = engine.observe("a stray remark about the weather", importance=0.5)
    engine.store.commit(WriteBatch(NS, (engine.get(stray.id).evolve(status=Status.ARCHIVED),)))
    engine.clock.advance(days=GC_DAYS + 1)  # type: ignore[attr-defined]
    report = engine.gc()
    # the stray archived memory and the three collected members: 1 + 3 records
    assert report.members_collected == 3 and report.deleted == 4
    assert report.archived_examined == 1  # the stray: the members are consolidated, not archived
    assert sorted(report.deleted_ids) == sorted([stray.id, *(m.id for m in members)])
    assert report.repointed == 0 and report.kept_exempt == 0
    assert engine.get(node.id).tier is Tier.SYNTHESIS


def test_gc_holds_count_only_exempt_members_that_decayed() -> None:
    engine = make_engine()
    a = engine.observe("we planted tomatoes", importance=0.5)
    held = engine.observe("the greenhouse key is under the pot", importance=0.5)
    consolidate_by_hand(engine, [a, held])
    engine.store.commit(WriteBatch(NS, (engine.get(held.id).evolve(retention_exempt=True),)))
    # within the grace period and not decayed: nothing is collected, nothing is "held"
    engine.clock.advance(days=1)  # type: ignore[attr-defined]
    report = engine.gc()
    assert report.members_collected == 0 and report.kept_exempt == 0


# ------------------------------------------------------------- replies of a forgotten question


def test_forgetting_a_question_takes_its_meaning_out_of_the_reply() -> None:
    """A reply to another speaker's question is indexed with the question's vector mixed
    in (core/writing.py) and names the question in its metadata; forgetting the question
    re-indexes the reply by its own vector and drops only that name from its metadata, so
    nothing of the question stays recoverable from the reply."""
    store, index, embedder = InMemoryStore(), InMemoryVectorIndex(), BagOfWordsEmbedder()
    engine = MemoryEngine(store, store, index, embedder, clock=ManualClock(T0))
    question = engine.observe("Caroline: Which band played at the birthday concert?",
                              namespace=NS, at=T0)
    text = "Melanie: It was Matt Patterson, he is so talented!"
    reply = engine.observe(text, namespace=NS, at=T0 + timedelta(seconds=30),
                           metadata={"channel": "chat", "topic": "music"})
    elsewhere = engine.observe("Caroline: Which band played at the birthday concert?",
                               namespace="other", at=T0)  # another namespace's question
    engine.flush()
    assert context_of(engine.get(reply.id, namespace=NS)) == question.id
    own = embedder.embed([text])[0]
    assert not np.allclose(index.stored_vectors(NS, [reply.id])[reply.id], own)

    engine.forget(question.id, namespace=NS)
    engine.flush()
    kept = engine.get(reply.id, namespace=NS)
    # the other keys stay, whichever side of the marker's name they sort on
    assert kept.metadata == {"channel": "chat", "topic": "music"}
    assert context_of(kept) is None
    np.testing.assert_allclose(index.stored_vectors(NS, [reply.id])[reply.id], own, atol=1e-6)
    with pytest.raises(NotFound):
        engine.get(question.id, namespace=NS)
    assert engine.get(elsewhere.id, namespace="other").text == elsewhere.text


def test_context_of_reads_the_question_a_reply_was_mixed_with() -> None:
    m = make_memory_with({CONTEXT_KEY: {"of": "q1"}})
    assert context_of(m) == "q1"
    assert context_of(make_memory_with({CONTEXT_KEY: "q1"})) is None  # not the marker's shape
    assert context_of(make_memory_with({})) is None


def make_memory_with(metadata: dict[str, object]) -> Memory:
    return Memory(id="m1", namespace=NS, kind=Kind.EPISODIC, tier=Tier.TRACE,
                  text="Melanie: Yes!", created_at=T0, metadata=metadata)


class CleansFiles(InMemoryStore):
    """A store whose files need cleaning after a deletion (`ErasesResidue`): records when
    it was asked to."""

    def __init__(self) -> None:
        super().__init__()
        self.cleaned: list[bool] = []

    def erase_residue(self, *, compact: bool = False) -> dict[str, object]:
        self.cleaned.append(compact)
        return {"wal": "truncated"}


def test_forget_matching_cleans_the_files_once_and_compacts_only_when_asked() -> None:
    store = CleansFiles()
    engine = MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(),
                          clock=ManualClock(T0))
    engine.observe(f"the alarm code is {SECRET}", namespace=NS)
    nothing = engine.forget_matching("no memory says this", namespace=NS)
    assert nothing.erased == () and nothing.residue == {} and store.cleaned == []
    found = engine.forget_matching(SECRET, namespace=NS)
    assert len(found.erased) == 1 and found.residue == {"wal": "truncated"}
    assert store.cleaned == [False]
    engine.forget_matching("no memory says this", namespace=NS, compact=True)
    assert store.cleaned == [False, True]


def test_gc_cleans_the_files_of_what_it_deleted_without_compacting() -> None:
    # a routine pass: the deleted bytes leave the store's files, but no costly rewrite
    # (a Redis AOF) runs unasked
    store = CleansFiles()
    engine = make_engine(store=store)
    stray = engine.observe("a stray remark about the weather", importance=0.5)
    engine.store.commit(WriteBatch(NS, (engine.get(stray.id).evolve(status=Status.ARCHIVED),)))
    engine.clock.advance(days=GC_DAYS + 1)  # type: ignore[attr-defined]
    assert engine.gc().deleted == 1
    assert store.cleaned == [False]


def test_gc_counts_a_member_lifted_to_the_node_above_as_repointed() -> None:
    """A kept member (retention-exempt) of a synthesis that GC collects moves up to the
    synthesis that absorbed it, and the report counts that move. Decay by hand: a trace
    of 0.5 (14 d half-life) falls below 0.01 at 79.0 d; a semantic synthesis of 0.5 (90 d)
    at 507.9 d."""
    engine = make_engine()
    a = engine.observe("the greenhouse door sticks in the rain", importance=0.5)
    b = engine.observe("the greenhouse needs a new hinge", importance=0.5)
    d = engine.observe("the greenhouse was built in 2019", importance=0.5)
    engine.store.commit(WriteBatch(NS, (engine.get(d.id).evolve(retention_exempt=True),)))
    low = consolidate_by_hand(engine, [a, b, d])
    engine.clock.advance(days=7)  # type: ignore[attr-defined]
    c = engine.observe("bought a hinge for the greenhouse door", importance=0.5)
    top = consolidate_by_hand(engine, [engine.get(low.id), c])
    engine.clock.advance(days=90 * 5.643856 - 8)  # type: ignore[attr-defined]
    assert engine.gc().members_collected == 3  # the traces; low is still above 0.01
    engine.clock.advance(days=2)  # type: ignore[attr-defined]
    report = engine.gc()
    assert report.members_collected == 1 and report.repointed == 1
    assert engine.get(d.id).consolidated_into == top.id
