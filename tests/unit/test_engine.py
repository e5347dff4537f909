"""The lifecycle through the engine, on in-memory ports (the real stores run the same
behaviour in tests/integration)."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from reverie.core import (
    DimensionMismatch,
    EmptyText,
    InvalidInput,
    InvalidNamespace,
    InvalidVector,
    Kind,
    NotFound,
    Policy,
    Status,
    TextTooLong,
    Tier,
    UnknownKind,
)
from reverie.core.engine import MemoryEngine
from reverie.core.ports import VectorItem
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0, make_engine


def clock(engine: MemoryEngine) -> Any:
    return engine.clock


def test_exact_repeat_folds_into_one_memory_and_promotes(engine: MemoryEngine) -> None:
    a = engine.observe("I take my coffee black.", source="s1")
    b = engine.observe("i take my coffee black", source="s2")
    assert b.id == a.id and b.sources == {"s1", "s2"}
    assert b.confidence == pytest.approx(0.65)  # 0.5 + 0.15
    assert b.tier is Tier.TRACE
    same = engine.observe("I take my coffee black.", source="s2")  # same source: no change
    assert same == b
    c = engine.observe("I take my coffee black!", source="s3")
    assert c.tier is Tier.CRYSTAL and c.confidence == pytest.approx(0.8)
    assert engine.stats()["total"] == 1


def test_remember_confidence_promotion_and_supersession(engine: MemoryEngine) -> None:
    u1 = engine.remember("alice", "lives in", "Paris", source="chat-1")
    assert u1.tier is Tier.UNIT and u1.confidence == pytest.approx(0.6)
    u1b = engine.remember("Alice", "lives in", "paris", source="chat-2")
    assert u1b.id == u1.id and u1b.confidence == pytest.approx(0.75)
    clock(engine).advance(days=10)
    u2 = engine.remember("alice", "lives in", "Berlin", source="chat-3")
    assert u2.id != u1.id
    old = engine.get(u1.id)
    assert old.status is Status.SUPERSEDED and old.superseded_by == u2.id
    assert old.valid_to == T0 + timedelta(days=10)
    hist = engine.history("alice", "lives in")
    assert [m.fact.object for m in hist if m.fact] == ["Paris", "Berlin"]
    # recall answers with the current value only...
    now = engine.recall("where does alice live", reinforce=False)
    assert [h.id for h in now if h.memory.key] == [u2.id]
    # ...and with what was believed then, when asked as of a past time
    then = engine.recall("where does alice live", as_of=T0 + timedelta(days=1))
    assert [h.id for h in then] == [u1.id]
    both = engine.recall("where does alice live", include_history=True, reinforce=False)
    assert {h.id for h in both} == {u1.id, u2.id}


def test_three_sources_make_a_crystal_that_never_decays(engine: MemoryEngine) -> None:
    for s in ("a", "b", "c"):
        u = engine.remember("bob", "is allergic to", "peanuts", source=s)
    assert u.tier is Tier.CRYSTAL and u.confidence == pytest.approx(0.9)
    clock(engine).advance(days=3650)
    hits = engine.recall("is bob allergic to anything?")
    assert hits[0].id == u.id and hits[0].explanation.decay == pytest.approx(u.importance)


def test_a_fact_whose_subject_is_only_punctuation_has_no_empty_entity(
    engine: MemoryEngine,
) -> None:
    m = engine.remember("¡", "lives in", "Ana lives in Porto")
    assert m.entities == {"ana", "porto"}
    named = engine.remember("Ana's sister", "lives in", "Lisbon")
    assert "ana s sister" in named.entities  # a subject with words stays an entity


def test_confirm_and_pin(engine: MemoryEngine) -> None:
    m = engine.observe("My locker code is 4512", source="s")
    c = engine.confirm(m.id)
    assert c.user_confirmed and c.tier is Tier.CRYSTAL
    p = engine.pin(engine.observe("the wifi password is hunter2").id)
    assert p.pinned
    with pytest.raises(NotFound):
        engine.confirm("nope")


def test_a_changed_value_told_in_free_text_supersedes(engine: MemoryEngine) -> None:
    old = engine.observe("I live in Berlin, close to the big park")
    clock(engine).advance(days=3)
    new = engine.observe("Actually I live in Lisbon now, close to the big park")
    assert engine.get(old.id).status is Status.SUPERSEDED
    assert engine.get(old.id).superseded_by == new.id
    ids = [h.id for h in engine.recall("where do I live", reinforce=False)]
    assert new.id in ids and old.id not in ids
    # a cue in an unrelated text does not supersede anything
    other = engine.observe("I enjoy hiking in the Alps")
    engine.observe("Actually the meeting is on Tuesday")
    assert engine.get(other.id).is_active


def test_a_changed_plain_word_outdates_without_retiring(engine: MemoryEngine) -> None:
    old = engine.observe("I drink oat milk in my coffee every morning")
    clock(engine).advance(days=3)
    new = engine.observe("I switched to almond milk in my coffee every morning")
    assert engine.get(old.id).is_active  # no typed value changed: outdated, not retired
    hits = engine.recall("what milk do I drink in my coffee", reinforce=False)
    ids = [h.id for h in hits]
    assert ids.index(new.id) < ids.index(old.id)
    assert "newer version of" in (hits[ids.index(new.id)].explanation.note or "")


def test_decay_floor_hides_faded_memories_but_not_pins_or_crystals() -> None:
    engine = make_engine(Policy(floor_bypass_relevance=1.0))  # the seed's hard floor
    faint = engine.observe("lunch was a sandwich", importance=0.2)
    pinned = engine.observe("lunch allergies: sesame", importance=0.2, pinned=True)
    # importance 0.2 decays at twice the rate: 7-day half-life; after 21 days 0.2/8 = 0.025
    clock(engine).advance(days=21)
    ids = [h.id for h in engine.recall("lunch", k=10)]
    assert faint.id not in ids and pinned.id in ids
    # 13 days would still leave 0.2 * 2^(-13/7) = 0.055 > 0.05
    e2 = make_engine(Policy(floor_bypass_relevance=1.0))
    f2 = e2.observe("lunch was a sandwich", importance=0.2)
    clock(e2).advance(days=13)
    assert f2.id in [h.id for h in e2.recall("lunch", k=10)]


def test_a_faded_memory_returns_only_for_a_strong_match(engine: MemoryEngine) -> None:
    faint = engine.observe("lunch was a sandwich", importance=0.2)
    engine.observe("the quarterly report is due on friday")
    clock(engine).advance(days=21)  # decay 0.025, under the 0.05 floor
    strong = {h.id: h for h in engine.recall("lunch sandwich", k=10, reinforce=False)}
    assert strong[faint.id].explanation.decay == pytest.approx(0.025)
    assert strong[faint.id].explanation.relevance >= 0.3
    # a query it barely matches (relevance under 0.3) does not bring it back...
    query = "sandwich quarterly report is due on friday"
    lent = {h.id: h for h in engine.recall(query, k=10, reinforce=False)}
    # ...unless as the turn written next to the best hit, which lends it relevance
    assert lent[faint.id].explanation.context > 0
    engine.policy = engine.policy.replace(neighbour_weight=0.0)
    weak = engine.recall(query, k=10, reinforce=False)
    fresh = make_engine(Policy(decay_floor=0.0, neighbour_weight=0.0))  # its own relevance
    fresh.observe("lunch was a sandwich", importance=0.2)
    fresh.observe("the quarterly report is due on friday")
    unfiltered = {h.text: h for h in fresh.recall(query, k=10)}
    assert unfiltered["lunch was a sandwich"].explanation.relevance < 0.3
    assert faint.id not in [h.id for h in weak]


def test_a_faded_memory_matched_by_meaning_alone_is_a_strong_match() -> None:
    """"When do I fly out?" shares no word with "My flight to Boston leaves Tuesday": its
    lexical half is 0, so its fused relevance is half its cosine. A cosine of at least
    `floor_bypass_relevance` is as strong a match as a fused relevance that high."""
    from reverie.core.models import Kind, Memory, Tier
    from reverie.core.retrieval import Candidate, rank

    old = Memory(id="flight", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
                 text="user: My flight to Boston leaves Tuesday.", created_at=T0)  # fmt: skip
    at = T0 + timedelta(days=120)  # 14-day half-life: decay far under the 0.05 floor
    policy = Policy()

    def kept(dense: float) -> bool:
        cand = Candidate("flight", dense, 0.0, policy.retrieval.dense_weight * dense)
        return bool(rank({"flight": cand}, {"flight": old}, at, policy, lambda m: True))

    assert kept(0.48)  # relevance 0.24, cosine 0.48
    assert kept(0.30) and not kept(0.29)  # the bypass is 0.3


def test_recall_reinforces_unless_told_not_to(engine: MemoryEngine) -> None:
    m = engine.observe("The deploy key lives in the vault")
    clock(engine).advance(days=7)
    engine.recall("deploy key", reinforce=False)
    assert engine.get(m.id).access_count == 0
    engine.recall("deploy key")
    got = engine.get(m.id)
    assert got.access_count == 1 and got.last_access == T0 + timedelta(days=7)
    engine.recall("deploy key", as_of=T0 + timedelta(days=1))  # history is never reinforced
    assert engine.get(m.id).access_count == 1


def test_explanations_carry_every_term(engine: MemoryEngine) -> None:
    engine.observe("Melanie painted a sunrise over the lake", importance=0.5)
    clock(engine).advance(days=14)
    h = engine.recall("Melanie sunrise painting", reinforce=False)[0]
    ex = h.explanation
    assert ex.decay == pytest.approx(0.25)  # one half-life
    # the only, hence best, lexical match: BM25 over max(best BM25, lexical_floor = 1.0)
    raw = engine.lexical.search("default", "Melanie sunrise painting", 1)[0].score
    assert ex.lexical == pytest.approx(raw / max(raw, 1.0))
    assert ex.relevance == pytest.approx(0.5 * ex.dense + 0.5 * ex.lexical)
    assert ex.final == pytest.approx(0.9 * ex.relevance + 0.1 * 0.25) == h.score
    assert ex.tier is Tier.TRACE and ex.hops == 0
    assert ex.lexical_trust == 1.0  # the match is near the question: the half is whole
    assert set(ex.as_dict()) >= {
        "relevance", "lexical", "decay", "importance", "tier", "hops", "lexical_trust"
    }


def test_graph_expansion_reaches_a_memory_sharing_an_entity(engine: MemoryEngine) -> None:
    a = engine.observe("Caroline went to the LGBTQ support group")
    clock(engine).advance(seconds=300)  # not the next turn of one conversation
    b = engine.observe("Caroline adopted a dog named Biscuit")
    hits = engine.recall("support group meeting", k=5, reinforce=False)
    by_id = {h.id: h for h in hits}
    assert by_id[a.id].explanation.hops == 0
    # b shares no word with the query but is linked to a through "caroline"
    assert b.id in by_id
    assert by_id[b.id].explanation.hops == 1 and by_id[b.id].explanation.via == a.id
    assert by_id[b.id].explanation.relevance == pytest.approx(
        by_id[a.id].explanation.relevance * 0.3  # policy.retrieval.hop_decay
    )


def test_token_budget_packs_greedily(engine: MemoryEngine) -> None:
    for i in range(5):
        engine.observe(f"note {i} about the garden " + "word " * (3 * i))
    full = engine.recall("garden note", k=5, reinforce=False)
    packed = engine.recall("garden note", k=5, token_budget=20, reinforce=False)
    assert packed.tokens is not None and packed.tokens <= 20
    assert 0 < len(packed) < len(full)
    assert [h.id for h in packed] == [h.id for h in full if h.id in {p.id for p in packed}]


def test_namespaces_never_leak(engine: MemoryEngine) -> None:
    engine.observe("alice's secret is the blue door", namespace="user/alice")
    assert len(engine.recall("secret blue door", namespace="user/bob")) == 0
    assert len(engine.recall("secret blue door", namespace="user/alice")) == 1
    with pytest.raises(InvalidNamespace):
        engine.recall("x", namespace="user/*")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda e: e.observe("   "), EmptyText),
        (lambda e: e.observe(""), EmptyText),
        (lambda e: e.observe("x" * 8001), TextTooLong),
        (lambda e: e.observe("hello", kind="dream"), UnknownKind),
        (lambda e: e.observe("hello", namespace="a:b"), InvalidNamespace),
        (lambda e: e.observe("hello", importance=1.5), InvalidInput),
        (lambda e: e.remember("a", "", "c"), EmptyText),
        (lambda e: e.remember("a", "b", "c", kind="episodic"), InvalidInput),
        (lambda e: e.recall(""), EmptyText),
        (lambda e: e.recall("x", k=0), InvalidInput),
    ],
)
def test_bad_input_is_typed_and_writes_nothing(call: Any, error: type[Exception]) -> None:
    engine = make_engine()
    engine.observe("an existing memory")
    before = list(engine.export())
    with pytest.raises(error):
        call(engine)
    assert list(engine.export()) == before


class NaNEmbedder(BagOfWordsEmbedder):
    def embed(self, texts: Any) -> Any:
        out = super().embed(texts)
        out[:, 0] = np.nan
        return out


def test_nan_vectors_are_rejected_before_any_write() -> None:
    store = InMemoryStore()
    e = MemoryEngine(store, store, InMemoryVectorIndex(), NaNEmbedder())
    with pytest.raises(InvalidVector):
        e.observe("hello")
    assert store.count("default")["total"] == 0


def test_an_embedder_of_another_dimension_is_refused() -> None:
    store = InMemoryStore()
    MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(256))
    with pytest.raises(DimensionMismatch, match="reembed"):
        MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(128))
    with pytest.raises(DimensionMismatch):
        MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(256, "other"))


def test_forget_is_real_deletion_everywhere(engine: MemoryEngine) -> None:
    a = engine.observe("my passport number is X1234567")
    b = engine.observe("my passport expires in 2030")
    assert engine.forget(a.id) == 1
    assert engine.store.get("default", a.id) is None
    assert a.id not in engine.vectors.ids("default")
    assert all(a.id not in (e.src, e.dst) for e in engine.store.edges("default", [b.id]))
    assert a.id not in [h.id for h in engine.recall("passport number")]
    assert engine.forget_namespace("default") == 1
    assert engine.stats()["total"] == 0 and engine.vectors.count("default") == 0


def test_export_import_round_trip_loses_nothing(engine: MemoryEngine) -> None:
    engine.observe("Jon opened a dance studio", source="s1", namespace="a")
    engine.remember("jon", "works as", "dancer", namespace="a")
    clock(engine).advance(days=2)
    engine.remember("jon", "works as", "studio owner", namespace="a")
    engine.observe("Gina lost her job", namespace="b")
    engine.recall("dance studio", namespace="a")
    dump = list(engine.export())
    fresh = make_engine()
    counts = fresh.import_(dump)
    assert counts["memories"] == 4 and counts["edges"] >= 1
    assert list(fresh.export()) == dump
    assert fresh.vectors.count("a") == 3
    # re-running the import is harmless
    assert fresh.import_(dump)["skipped"] == 4
    with pytest.raises(InvalidInput):
        fresh.import_([{"type": "reverie-export", "format": 99}])


def test_repair_rebuilds_the_vector_index(engine: MemoryEngine) -> None:
    for t in ("red apples", "green pears", "yellow bananas"):
        engine.observe(t)
    before = [h.id for h in engine.recall("green fruit", reinforce=False)]
    engine.vectors.drop_namespace("default")
    engine.vectors.upsert("default", [])  # nothing left
    assert engine.vectors.count("default") == 0
    report = engine.repair()
    assert report.indexed == 3 and report.removed == 0
    assert [h.id for h in engine.recall("green fruit", reinforce=False)] == before


def test_async_twins_run_off_the_event_loop(engine: MemoryEngine) -> None:
    """Each blocking embed waits until all five recalls are inside it at once and the event
    loop has run a coroutine meanwhile: only true overlap off the loop gets past that."""
    engine.observe("the cat sleeps on the sofa")
    n = 5
    inside = 0
    guard = threading.Lock()
    all_inside = threading.Event()
    loop_ran = threading.Event()

    class BlockingEmbedder(BagOfWordsEmbedder):
        def embed(self, texts: Any) -> Any:
            nonlocal inside
            with guard:
                inside += 1
                if inside >= n:
                    all_inside.set()
            # A blocking call, like a real model; on the loop's thread it would deadlock.
            if not (all_inside.wait(timeout=20) and loop_ran.wait(timeout=20)):
                raise AssertionError(f"only {inside} of {n} recalls overlapped off the loop")
            return super().embed(texts)

    engine.embedder = BlockingEmbedder()

    async def tick() -> None:
        while not all_inside.is_set():
            await asyncio.sleep(0.001)
        loop_ran.set()

    async def main() -> None:
        results, _ = await asyncio.gather(
            asyncio.gather(*(engine.arecall("cat sofa") for _ in range(n))), tick()
        )
        assert all(r[0].text == "the cat sleeps on the sofa" for r in results)

    asyncio.run(asyncio.wait_for(main(), timeout=60))


def test_kinds_filter_and_procedural_facts(engine: MemoryEngine) -> None:
    p = engine.remember("deploys", "run with", "make release", kind=Kind.PROCEDURAL)
    engine.observe("we talked about deploys today")
    hits = engine.recall("how do deploys run", kinds=["procedural"], reinforce=False)
    assert [h.id for h in hits] == [p.id]
    assert engine.history("deploys", "run with", kind="procedural")[0].id == p.id


def test_policy_is_respected(engine: MemoryEngine) -> None:
    e = make_engine(Policy(alpha=1.0))
    e.observe("orchids need little water")
    h = e.recall("orchids water")[0]
    assert h.score == pytest.approx(h.explanation.relevance)


def test_observe_many_matches_observe_one_by_one() -> None:
    texts = ["I like tea", "Bo lives in Oslo", "i like tea", "Actually Bo lives in Bergen now"]
    one, many = make_engine(), make_engine()
    singles = [one.observe(t, source=f"s{i}") for i, t in enumerate(texts)]
    from reverie.core.engine import Observation

    batch = many.observe_many([Observation(t, source=f"s{i}") for i, t in enumerate(texts)])
    assert [m.text for m in batch] == [m.text for m in singles]
    assert batch[2].id == batch[0].id and batch[2].sources == {"s0", "s2"}
    assert one.stats()["total"] == many.stats()["total"] == 3
    # a bad item anywhere means nothing at all is written
    e = make_engine()
    with pytest.raises(EmptyText):
        e.observe_many(["fine", "  "])
    assert e.stats()["total"] == 0


def test_replaying_facts_changes_nothing(engine: MemoryEngine) -> None:
    engine.remember("ana", "lives in", "Oslo", source="f:1")
    engine.remember("ana", "lives in", "Bergen", source="f:2")
    before = list(engine.export())
    engine.remember("ana", "lives in", "Oslo", source="f:1")  # the same file ingested again
    engine.remember("ana", "lives in", "Bergen", source="f:2")
    assert list(engine.export()) == before
    assert [v.fact.object for v in engine.history("ana", "lives in") if v.fact] == [
        "Oslo", "Bergen"
    ]


def test_filler_repeated_never_becomes_a_crystal(engine: MemoryEngine) -> None:
    for s in ("a", "b", "c", "d"):
        m = engine.observe("user: ok thanks", source=s)
    assert m.importance == pytest.approx(0.2) and m.tier is Tier.TRACE


def test_reembed_after_a_model_change() -> None:
    store = InMemoryStore()
    vectors = InMemoryVectorIndex()
    old = MemoryEngine(store, store, vectors, BagOfWordsEmbedder(256))
    m = old.observe("the red kite nests in the oak")
    old.flush()  # its vector is written behind the caller; another engine re-embeds next
    new_model = BagOfWordsEmbedder(128, "new-model")
    with pytest.raises(DimensionMismatch):
        MemoryEngine(store, store, vectors, new_model)
    fixer = MemoryEngine(store, store, vectors, new_model, check_embedder=False)
    assert fixer.repair(reembed=True).indexed == 1
    again = MemoryEngine(store, store, vectors, new_model)  # opens normally now
    assert again.recall("red kite", reinforce=False)[0].id == m.id


def test_lexical_only_candidates_get_their_true_cosine() -> None:
    e = make_engine(Policy(candidate_pool=1))
    e.observe("zebra crossing near the school")
    target = e.observe("the school zebra mascot, a zebra named Zed")
    hits = {h.id: h for h in e.recall("zebra", k=2, reinforce=False)}
    q = e.embedder.embed(["zebra"])[0]
    v = e.embedder.embed([target.text])[0]
    assert hits[target.id].explanation.dense == pytest.approx(float(q @ v), abs=1e-6)


class _SentEarly(InMemoryVectorIndex):
    """A vector index that, like a Chroma server, sends the query before recall's lexical
    side (`begin_query`); it records what became of each sent query."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[str] = []

    def begin_query(self, namespace: str, vector: Any, k: int) -> Any:
        index, outcomes = self, self.outcomes
        hits = InMemoryVectorIndex.query(self, namespace, vector, k)

        class Sent:
            def result(self) -> Any:
                outcomes.append("read")
                return hits

            def cancel(self) -> None:
                outcomes.append("cancelled")

        assert index is self
        return Sent()

    def query(self, namespace: str, vector: Any, k: int, where: Any = None) -> Any:
        self.outcomes.append("query")  # recall must not query a second time
        return super().query(namespace, vector, k, where)


def test_a_query_sent_early_answers_recall_alike_and_is_cancelled_on_failure() -> None:
    store = InMemoryStore()
    plain = MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(),
                         clock=make_engine().clock)
    early_index = _SentEarly()
    early = MemoryEngine(store, store, early_index, BagOfWordsEmbedder(), clock=plain.clock)
    for text in ("the cat sat on the mat", "dogs chase cats", "tea with milk",
                 "the mat is red", "coffee black, no sugar"):
        m = plain.observe(text)
        vec = BagOfWordsEmbedder().embed([text])[0]
        early_index.upsert(m.namespace, [VectorItem(m.id, vec)])
    early_index.outcomes.clear()
    for q in ("cat on a mat", "what does the user drink", "red"):
        want = plain.recall(q, k=3, reinforce=False)
        got = early.recall(q, k=3, reinforce=False)
        assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]
    assert early_index.outcomes == ["read"] * 3

    def broken(*args: Any) -> Any:
        raise RuntimeError("lexical side failed")

    early.lexical = type("Broken", (), {"search": staticmethod(broken)})()
    with pytest.raises(RuntimeError, match="lexical side failed"):
        early.recall("cat", k=3)
    assert early_index.outcomes[-1] == "cancelled"  # its connection is not left half-read
