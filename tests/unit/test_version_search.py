"""The write path's search for the earlier trace a new one updates (core/version_links.py):
which turns lend an elliptical update its subject, which earlier traces are judged, and
which one is linked when several qualify."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from reverie.core import vector_sync
from reverie.core.engine import MemoryEngine
from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.policy import Policy
from reverie.core.ports import WriteBatch
from reverie.core.version_links import cosines
from reverie.core.writing import UPDATE_KEY
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


def test_of_two_earlier_versions_the_best_judged_one_is_linked() -> None:
    # "a-far" sorts first but shares less with the new text than "b-near"
    e = make_engine()
    olds = [
        Memory(
            id="a-far",
            namespace="default",
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text="user: I live in Paris, near a park",
            created_at=T0,
        ),
        Memory(
            id="b-near",
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
    assert why is not None and why["of"] == "b-near"


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
