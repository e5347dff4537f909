"""The write path's search for the earlier trace a new one updates (core/version_links.py):
which turns lend an elliptical update its subject, which earlier traces are judged, which
one is linked when several qualify, and what the search reads and asks the index (a bulk
import's cost rests on one index call per chunk and no record read for a plain turn)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock, vector_sync
from reverie.core.engine import MemoryEngine, Observation
from reverie.core.erasure import CONTEXT_KEY
from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.policy import Policy
from reverie.core.ports import Vector, VectorHit, WriteBatch
from reverie.core.updates import read
from reverie.core.version_links import _RECENT_NAMESPACES, cosines
from reverie.core.writing import UPDATE_KEY
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex
from tests.unit.conftest import T0, make_engine

OLD = "user: My annual pay is $95,000."
INTRO = "user: About my pay."


def _say(engine: MemoryEngine, *turns: str | float) -> list[Memory]:
    """Observe each text; a number is minutes to wait first."""
    said = []
    for t in turns:
        if isinstance(t, str):
            said.append(engine.observe(t))
        else:
            clock: Any = engine.clock
            clock.advance(seconds=t * 60)
    return said


def _why(engine: MemoryEngine, m: Memory) -> dict[str, Any] | None:
    return engine.get(m.id).metadata.get(UPDATE_KEY)


def test_an_elliptical_update_takes_the_intro_turns_likeness_to_the_old_text() -> None:
    e = make_engine()
    old, intro, new = _say(e, OLD, 60 * 24, INTRO, 1, "user: Raised to $65,000.")
    why = _why(e, new)
    assert why is not None and why["of"] == old.id
    # the context recorded is the cosine of the intro and the old text, not more
    intro_vec, old_vec = e._ctx.embed([intro.text, old.text])
    assert abs(why["context"] - cosines(intro_vec, [old_vec])[0]) < 1e-4
    assert why["context"] > why["similarity"]


def test_an_elliptical_update_of_three_content_words_still_borrows_the_intro() -> None:
    # elliptical_words is 3: "plus bonus and shares" is within it
    e = make_engine()
    old, _intro, new = _say(
        e, OLD, 60 * 24, INTRO, 1, "user: Raised to $65,000, plus bonus and shares."
    )
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] > 0


def test_only_the_last_context_turns_user_turns_can_be_the_intro() -> None:
    # context_turns is 3: an intro four turns back lends nothing
    e = make_engine()
    assert e.policy.updates.context_turns == 3
    old, *_rest, new = _say(
        e,
        OLD,
        60 * 24,
        INTRO,
        1,
        # each states a value, so none of them is an intro itself
        "user: The weather is 20 degrees.",
        1,
        "user: I had lunch at 1 PM.",
        1,
        "user: The cat slept 9 hours.",
        1,
        "user: Raised to $65,000.",
    )
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] == 0.0
    # nor does an assistant's turn, however it is worded
    e = make_engine()
    old, _ack, new = _say(
        e, OLD, 60 * 24, "assistant: About your annual pay.", 1, "user: Raised to $65,000."
    )
    why = _why(e, new)
    assert why is not None and why["context"] == 0.0


def test_context_turns_is_how_many_turns_before_an_update_may_lend_it_a_subject() -> None:
    turns = (OLD, 60 * 24, INTRO, 1, "user: Raised to $65,000.")
    # one: the intro just before the update lends
    e = make_engine(Policy(context_turns=1))
    old, _intro, new = _say(e, *turns)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] > 0
    # none: not even the turn just before (the typed value still links the two)
    e = make_engine(Policy(context_turns=0))
    old, _intro, new = _say(e, *turns)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] == 0.0


def test_an_intro_logged_at_the_updates_own_time_lends_and_one_logged_after_does_not() -> None:
    # turns imported with one timestamp (a day's log at its date) keep their order of
    # arrival: the intro written before the update, at the same time, lends its subject
    e = make_engine()
    old = e.observe(OLD)
    day = T0 + timedelta(days=1)
    e.observe(INTRO, at=day)
    new = e.observe("user: Raised to $65,000.", at=day)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] > 0
    # an intro said after the update (a later turn written first) lends nothing to it
    e = make_engine()
    old = e.observe(OLD)
    e.observe(INTRO, at=T0 + timedelta(days=2))
    new = e.observe("user: Raised to $65,000.", at=T0 + timedelta(days=1))
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["context"] == 0.0


def test_a_statement_logged_at_the_same_time_as_its_update_is_an_earlier_version() -> None:
    # a day's log imported at its date: every turn has one timestamp, in order of arrival
    e = make_engine()
    day = T0 + timedelta(days=1)
    old = e.observe(OLD, at=day)
    new = e.observe("user: Actually my annual pay is $105,000 now.", at=day)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id


def test_an_archived_statement_is_not_what_an_update_outdates() -> None:
    update = "user: Actually my annual pay is $105,000 now."
    e = make_engine()
    (old,) = _say(e, OLD)
    e.store.commit(WriteBatch(old.namespace, (old.evolve(status=Status.ARCHIVED),)))
    (new,) = _say(e, 60 * 24, update)
    why = _why(e, new)
    assert why is None or why["of"] != old.id
    # the same statement left current is the one it outdates
    e = make_engine()
    old, new = _say(e, OLD, 60 * 24, update)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id


def test_an_old_statement_without_a_typed_value_can_be_updated() -> None:
    e = make_engine()
    old, new = _say(
        e,
        "user: I drive to the office every day.",
        60 * 24,
        "user: Heads up, from now on I go to the office by bus every day.",
    )
    why = _why(e, new)
    assert why is not None and why["of"] == old.id and why["verdict"] == "outdates"
    # three content words of its own are a statement, not an intro that names a subject
    e = make_engine()
    old, new = _say(
        e, "user: I drive to work daily.", 60 * 24,
        "user: Heads up, from now on I go to work by bus daily.",
    )
    assert len(read(old.text).words) == 3
    why = _why(e, new)
    assert why is not None and why["of"] == old.id
    # and one that states a value in a word or two ("Rent: $1,200.")
    e = make_engine()
    old, new = _say(e, "user: Rent: $1,200.", 60 * 24, "user: Rent went up to $1,400 now.")
    why = _why(e, new)
    assert why is not None and why["of"] == old.id


def test_no_neighbours_turns_the_search_off() -> None:
    turns = (
        "user: I live in Berlin, close to the big park",
        60 * 24,
        "user: Actually I live in Lisbon now, close to the big park",
    )
    e = make_engine()
    _old, new = _say(e, *turns)
    assert _why(e, new) is not None
    e = make_engine(Policy(neighbours=0))
    _old, new = _say(e, *turns)
    assert _why(e, new) is None


def _stored_days_ago(e: MemoryEngine, olds: list[Memory], days: float) -> None:
    """Earlier memories written straight to the store and the index, then `days` later."""
    e.store.commit(WriteBatch("default", tuple(olds)))
    vecs = e._ctx.embed([m.text for m in olds])
    vector_sync.index(e._ctx, "default", list(zip(olds, vecs, strict=True)))
    clock: Any = e.clock
    clock.advance(days=days)


@pytest.mark.parametrize(("far", "near"), [("a-far", "b-near"), ("b-far", "a-near")])
def test_of_two_earlier_versions_the_best_judged_one_is_linked(far: str, near: str) -> None:
    # the two are judged in the order of their ids: whichever comes first, the one that
    # shares more with the new text is linked
    e = make_engine()
    olds = [
        Memory(
            id=far,
            namespace="default",
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text="user: I live in Paris, near a park",
            created_at=T0,
        ),
        Memory(
            id=near,
            namespace="default",
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text="user: I live in Berlin, close to the big park by the river",
            created_at=T0 + timedelta(hours=1),
        ),
    ]
    _stored_days_ago(e, olds, 40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park by the river")
    why = _why(e, new)
    assert why is not None and why["of"] == near


def test_a_fact_keys_unit_among_the_candidates_does_not_hide_the_trace_behind_it() -> None:
    # "a-unit" (a keyed fact, never outdated by free text) sorts before "b-old"
    e = make_engine()
    olds = [
        Memory(
            id="a-unit",
            namespace="default",
            kind=Kind.SEMANTIC,
            tier=Tier.UNIT,
            text="user lives in Berlin close to the big park",
            key="semantic|user|lives in",
            created_at=T0,
        ),
        Memory(
            id="b-old",
            namespace="default",
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text="user: I live in Berlin, close to the big park",
            created_at=T0,
        ),
    ]
    _stored_days_ago(e, olds, 40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park")
    why = _why(e, new)
    assert why is not None and why["of"] == "b-old"
    assert e.get("a-unit").is_active


def test_an_intro_lends_its_subject_even_when_the_update_reads_nearer_on_its_own() -> None:
    # the update's own words are nearer the older text than the intro is; the intro
    # still names what changed, so the two are versions (the update alone is not: a
    # time and no change word, below typed_similarity)
    e = make_engine()
    meeting = "user: Our weekly sync with the design team is at 9:45 AM on Tuesdays."
    intro = "user: The design sync, one more thing."
    update = "user: It's at 11:15 AM on Tuesdays now."
    old, _intro, new = _say(e, meeting, 60 * 24, intro, 1, update)
    v_new, v_intro, v_old = e._ctx.embed([update, intro, meeting])
    own, lent = cosines(v_old, [v_new, v_intro])
    p = e.policy.updates
    assert p.typed_similarity > own > lent >= p.min_similarity  # what the case is about
    why = _why(e, new)
    assert why is not None and why["of"] == old.id
    assert abs(why["context"] - lent) < 1e-4


def test_retired_versions_nearest_the_update_leave_it_to_the_current_one() -> None:
    # The index is asked without a status filter (its fastest path): the two retired
    # versions read nearer the update than the current one, and their records drop them.
    e = make_engine()
    said = "user: I live in Berlin, close to the big park by the river"

    def trace(mid: str, text: str, hours: int, **retired: Any) -> Memory:
        m = Memory(id=mid, namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
                   text=text, created_at=T0 + timedelta(hours=hours))
        return dataclasses.replace(m, **retired)

    olds = [
        trace("v1", said, 0, status=Status.SUPERSEDED, superseded_by="v2"),
        trace("v2", said.replace("Berlin", "Paris"), 1, status=Status.SUPERSEDED,
              superseded_by="v3"),
        trace("v3", "user: These days I live in Madrid", 2),
    ]
    _stored_days_ago(e, olds, 40)
    update = "user: Actually I live in Lisbon now, close to the big park by the river"
    v_new, *v_olds = e._ctx.embed([update, *(m.text for m in olds)])
    near = cosines(v_new, v_olds)
    assert min(near[:2]) > near[2] >= e.policy.updates.min_similarity  # what the case is about
    new = e.observe(update)
    why = _why(e, new)
    assert why is not None and why["of"] == "v3"
    assert e.get("v1").superseded_by == "v2" and e.get("v2").superseded_by == "v3"


def test_an_intro_lends_its_subject_to_the_update_that_answers_it_not_to_later_turns() -> None:
    # "It's a MacBook Air now." answers the intro; the move said two minutes later is
    # about no laptop, and the answered update is no intro for it either
    e = make_engine()
    laptop, _intro, answer, moved = _say(
        e,
        "user: My work laptop is a ThinkPad X1.",
        60 * 24,
        "user: About my work laptop.",
        1,
        "user: It's a MacBook Air now.",
        2,
        "user: We relocated to Seattle.",
    )
    why = _why(e, answer)
    assert why is not None and why["of"] == laptop.id and why["context"] > 0
    assert _why(e, moved) is None


def test_a_turn_that_only_names_its_subject_is_no_version_and_stays_an_intro() -> None:
    e = make_engine()
    falafel, intro, paella = _say(
        e,
        "user: My favourite food has changed to falafel.",
        60 * 24 * 30,
        "user: About my favourite food.",
        1,
        "user: It's paella now.",
    )
    assert _why(e, intro) is None  # "about" is no word of its own: it states nothing
    why = _why(e, paella)
    assert why is not None and why["of"] == falafel.id and why["context"] > 0


def test_a_change_told_in_two_words_is_a_version_a_later_change_can_update() -> None:
    # "I switched to commuting on foot." has two content words, like the intro "About my
    # pay."; its change word says it states a value, so the next change links to it and
    # the chain stays one
    e = make_engine()
    foot, bike = _say(
        e,
        "user: I switched to commuting on foot.",
        60 * 24,
        "user: These days I am commuting to work on a bike.",
    )
    why = _why(e, bike)
    assert why is not None and why["of"] == foot.id


class _CountingIndex(InMemoryVectorIndex):
    """The in-memory index with a batch query (`QueriesMany`), counting each kind of call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def query(
        self, namespace: str, vector: Vector, k: int, where: Mapping[str, Any] | None = None
    ) -> list[VectorHit]:
        self.calls["query"] += 1
        return super().query(namespace, vector, k, where)

    def query_many(self, namespace: str, vecs: Sequence[Vector], k: int) -> list[list[VectorHit]]:
        self.calls["query_many"] += 1
        return [super(_CountingIndex, self).query(namespace, v, k) for v in vecs]


def _counting_engine(policy: Policy | None = None) -> tuple[MemoryEngine, _CountingIndex]:
    store = InMemoryStore()
    index = _CountingIndex()
    e = MemoryEngine(store, store, index, BagOfWordsEmbedder(), policy=policy or Policy(),
                     clock=ManualClock(T0), token_counter=lambda s: len(s.split()))
    return e, index


def test_a_bulk_chunk_asks_the_index_once_for_its_updates_and_their_intros() -> None:
    # The statement, then an intro observed alone, then a chunk holding an elliptical
    # update a minute after the intro and a change told with a change word: the vectors
    # of the intro (said before the chunk), the update and the change are asked in one
    # call, and the search while writing asks nothing more.
    e, index = _counting_engine()
    old = e.observe(OLD)
    home = e.observe("user: I live in Berlin, close to the big park by the river")
    clock: Any = e.clock
    clock.advance(days=1)
    e.observe(INTRO)
    index.calls.clear()
    later = clock.now() + timedelta(minutes=1)
    update, moved = e.observe_many([
        Observation("user: Raised to $65,000.", at=later),
        Observation("user: Actually I live in Lisbon now, close to the big park by the river",
                    at=later + timedelta(minutes=1)),
    ])
    assert index.calls == {"query_many": 1}
    why = _why(e, update)
    assert why is not None and why["of"] == old.id and why["context"] > 0
    why = _why(e, moved)
    assert why is not None and why["of"] == home.id
    # with the search turned off, a chunk asks the index nothing
    e, index = _counting_engine(Policy(neighbours=0))
    e.observe(OLD)
    clock = e.clock
    clock.advance(days=1)
    e.observe(INTRO)
    index.calls.clear()
    e.observe_many([Observation("user: Raised to $65,000.", at=clock.now() + timedelta(minutes=1))])
    assert not index.calls


def test_a_bulk_chunk_finds_its_own_earlier_turn_however_many_turns_lie_between() -> None:
    # One chunk: the statement, more unrelated turns than the engine keeps as recent,
    # then the change a day later. The statement is in neither the index nor the recent
    # turns when the change is written: only the chunk's own written turns hold it.
    e = make_engine()
    fillers = [f"user: Note {n}: the {w} shelf holds {n} jars."
               for n, w in enumerate(["red", "green", "blue", "grey", "pink", "teal", "gold",
                                      "navy", "lime", "plum", "rust", "sand", "mint", "jade",
                                      "ruby", "onyx", "opal", "ivory", "amber", "coral"], 1)]
    assert len(fillers) > e.policy.updates.recent_turns
    turns = [Observation(OLD, at=T0)]
    turns += [Observation(t, at=T0 + timedelta(minutes=n)) for n, t in enumerate(fillers, 1)]
    turns.append(Observation("user: Actually my annual pay is $105,000 now.",
                             at=T0 + timedelta(days=1)))
    written = e.observe_many(turns, batch_size=len(turns))
    why = _why(e, written[-1])
    assert why is not None and why["of"] == written[0].id


def test_a_turn_that_only_names_its_subject_is_judged_as_no_earlier_version() -> None:
    # "About my annual pay." has two content words and no value: it states nothing, so a
    # change said after it has no earlier version to replace...
    change = "user: My annual pay was raised to $105,000 this year."
    e = make_engine()
    _intro, new = _say(e, "user: About my annual pay.", 60 * 24, change)
    assert _why(e, new) is None
    # ...and where it sorts before the statement that holds the value, the statement is
    # still judged and replaced
    e = make_engine()
    olds = [
        Memory(id="a-intro", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
               text="user: About my annual pay.", created_at=T0 + timedelta(hours=1)),
        Memory(id="b-pay", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
               text=OLD, created_at=T0),
    ]
    _stored_days_ago(e, olds, 40)
    why = _why(e, e.observe(change))
    assert why is not None and why["of"] == "b-pay"


def test_an_archived_replaced_statement_is_no_evidence_of_what_an_update_speaks_of() -> None:
    # "v1" was replaced by "v2", then the sweep archived it: it no longer stands for the
    # fact "v2" holds, so an update near "v1" and far from "v2" is linked to nothing
    e = make_engine()
    said = "user: I live in Berlin, close to the big park by the river"
    olds = [
        Memory(id="v1", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE, text=said,
               created_at=T0, status=Status.ARCHIVED, superseded_by="v2"),
        Memory(id="v2", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
               text="user: These days home is Madrid", created_at=T0 + timedelta(hours=1)),
    ]
    _stored_days_ago(e, olds, 40)
    update = "user: Actually I live in Lisbon now, close to the big park by the river"
    v_new, v1, v2 = e._ctx.embed([update, said, olds[1].text])
    near, far = cosines(v_new, [v1, v2])
    assert near >= e.policy.updates.min_similarity > far  # what the case is about
    new = e.observe(update)
    assert _why(e, new) is None
    assert e.get("v2").is_active and e.get("v2").metadata == {}
    # the same statement retired as superseded (not archived) speaks for "v2"
    e = make_engine()
    _stored_days_ago(e, [dataclasses.replace(olds[0], status=Status.SUPERSEDED), olds[1]], 40)
    why = _why(e, e.observe(update))
    assert why is not None and why["of"] == "v2" and why["through"] == "v1"


def test_cosines_of_a_zero_vector_are_zero_not_nan() -> None:
    zero, one = np.zeros(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    assert cosines(zero, [one, zero]) == [0.0, 0.0]
    assert cosines(one, [zero, one]) == [0.0, pytest.approx(1.0)]


class _CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        self.reads += 1
        return super().get_many(namespace, ids)


def test_a_plain_statement_reads_no_earlier_record_unless_one_is_typed_similarity_near() -> None:
    # A value stated with no change word, preference or intro can only restate a value,
    # which needs typed_similarity: the turns below it are not read (most turns are such
    # statements, and each read is a store round trip)
    store = _CountingStore()
    e = MemoryEngine(store, store, InMemoryVectorIndex(), BagOfWordsEmbedder(),
                     clock=ManualClock(T0), token_counter=lambda s: len(s.split()))
    e.observe(OLD)
    clock: Any = e.clock
    clock.advance(days=1)
    fee = "user: My gym fee is $40 monthly."
    v_old, v_fee = e._ctx.embed([OLD, fee])
    p = e.policy.updates
    assert p.min_similarity <= cosines(v_fee, [v_old])[0] < p.typed_similarity
    store.reads = 0
    assert _why(e, e.observe(fee)) is None
    assert store.reads == 0
    # the same pay restated with a new value is near enough: read, and linked
    new = e.observe("user: My annual pay is $105,000.")
    assert store.reads == 1
    why = _why(e, new)
    assert why is not None and why["verdict"] != "none"


def test_a_restated_value_exactly_typed_similarity_near_is_a_version() -> None:
    # the bars are inclusive: a plain restatement at exactly typed_similarity to a recent
    # turn is linked (both sides computed by the one cosine of this module)
    e = make_engine()
    restated = "user: My annual pay is $105,000."
    v_old, v_new = e._ctx.embed([OLD, restated])
    at = cosines(v_new, [v_old])[0]
    e.policy = e.policy.replace(typed_similarity=at)
    old, new = _say(e, OLD, 60 * 24, restated)
    why = _why(e, new)
    assert why is not None and why["of"] == old.id


def test_an_indexed_turn_exactly_min_similarity_near_is_a_candidate() -> None:
    # the index's answer is kept from min_similarity on, inclusive: in the bulk path and
    # in the search a keyed item's own words start (`near` asking the index itself)
    e = make_engine()
    old = e.observe(OLD)
    e.flush()
    clock: Any = e.clock
    clock.advance(days=1)
    update = "user: Actually my annual pay is $105,000 now."
    (hit,) = e.vectors.query("default", e._ctx.embed([update])[0], 1)
    assert hit.id == old.id
    e.policy = e.policy.replace(min_similarity=hit.similarity)
    e._writes.versions.forget_recent()  # found through the index alone, not a recent turn
    vec = e._ctx.embed([update])[0]
    assert e._writes.versions.near("default", vec, [], ()) == {old.id: hit.similarity}
    (new,) = e.observe_many([update])
    why = _why(e, new)
    assert why is not None and why["of"] == old.id


def test_a_reply_is_indexed_with_the_question_just_before_it_not_an_earlier_turn() -> None:
    # the turn just before the reply is the question it answers; the turns before that
    # are not (the reply's record names the question its vector carries)
    e = make_engine()
    _first, question, reply = _say(
        e, "Mel: I went hiking on Sunday.", 1, "Caroline: Did you go camping too?", 1,
        "Mel: Yes, with the kids!",
    )
    assert e.get(reply.id).metadata.get(CONTEXT_KEY) == {"of": question.id}


def test_the_recent_turns_of_as_many_namespaces_as_kept_are_all_kept() -> None:
    # the recent turns of the 1,024 namespaces used last are kept; only a namespace
    # beyond that many drops the one used least recently
    e = make_engine()
    versions = e._writes.versions
    for n in range(_RECENT_NAMESPACES):
        e.observe(f"user: Note number {n} for the log.", namespace=f"ns{n}")
    assert versions.last("ns0") is not None
    e.observe("user: One namespace more.", namespace="one-more")
    assert versions.last("ns0") is None and versions.last("ns1") is not None


def test_cosines_divide_by_both_lengths() -> None:
    # vectors an embedder did not normalise: the cosine is still the angle's
    assert cosines([2.0, 0.0], [[3.0, 0.0], [0.0, 5.0]]) == pytest.approx([1.0, 0.0])
    assert cosines([3.0, 4.0], [[6.0, 8.0]]) == pytest.approx([1.0])


@pytest.mark.parametrize("bulk", [False, True])
def test_a_turn_about_someone_else_lends_no_subject_to_the_speakers_own_update(
    bulk: bool,
) -> None:
    # "My neighbour got a pay rise." names a pay, but the neighbour's: the user's
    # "Raised to $65,000." after it is not thereby about the user's own pay. The same
    # turn about the user lends (the control), one at a time and in one bulk call alike.
    def update_after(intro: str) -> dict[str, Any] | None:
        e = make_engine()
        old = e.observe(OLD)
        clock: Any = e.clock
        clock.advance(seconds=60 * 60 * 24)
        if bulk:
            texts = [intro, "user: Raised to $65,000."]
            said = e.observe_many([Observation(t) for t in texts])
            new = said[-1]
        else:
            e.observe(intro)
            clock.advance(seconds=60)
            new = e.observe("user: Raised to $65,000.")
        why = _why(e, new)
        assert why is None or why["of"] == old.id
        return why

    mine = update_after("user: My pay got a rise.")
    assert mine is not None and mine["context"] > 0
    theirs = update_after("user: My neighbour got a pay rise.")
    assert theirs is None or theirs["context"] == 0


def test_a_retired_version_with_no_current_one_left_does_not_end_the_search() -> None:
    # "a-retired" is judged first (ids in order) and read as a version, but the memory
    # that replaced it is gone, so it leads to no current version: the search goes on to
    # "b-current", the fact's current version
    e = make_engine()
    text = "user: I live in Berlin, close to the big park by the river"
    olds = [
        Memory(
            id="a-retired", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
            text="user: I live in Porto, close to the big park by the river", created_at=T0,
            status=Status.SUPERSEDED, superseded_by="gone", valid_to=T0 + timedelta(hours=1),
        ),
        Memory(
            id="b-current", namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
            text=text, created_at=T0 + timedelta(hours=1),
        ),
    ]
    _stored_days_ago(e, olds, 40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park by the river")
    why = _why(e, new)
    assert why is not None and why["of"] == "b-current"
