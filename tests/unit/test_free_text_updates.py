"""Free-text updates: which traces are newer versions of which, why, and how recall ranks
them (core/updates.py, core/arbitration.py, the write and recall paths), on in-memory
ports. tests/integration/test_free_text_updates.py runs the same with the real model."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from reverie.core import InvalidInput, InvalidPolicy, Policy, Status
from reverie.core.arbitration import arbitrate, newest, version_links
from reverie.core.engine import MemoryEngine
from reverie.core.models import Edge, EdgeType, Kind, Memory, Tier
from reverie.core.policy import UpdatePolicy
from reverie.core.retrieval import Candidate, Ranked
from reverie.core.updates import Verdict, is_assistant, judge, read
from reverie.core.writing import SUPERSEDED_KEY, UPDATE_KEY
from tests.unit.conftest import T0, make_engine


def later(engine: MemoryEngine, **delta: float) -> None:
    clock: Any = engine.clock
    clock.advance(**delta)


def verdict(new: str, old: str, similarity: float = 0.8, context: float = 0.0) -> Verdict:
    return judge(read(new), read(old), similarity, context, Policy()).verdict


# ----------------------------------------------------------------------------- the signals


def test_values_are_read_by_type() -> None:
    r = read("user: Our rent went up to $2,150 on 3 March; the viewing is at 4:30 PM in Porto.")
    assert r.values["money"] == {"$2150"}
    assert r.values["date"] == {"3 march"}
    assert r.values["time"] == {"4:30 pm"}
    assert r.values["name"] == {"porto"}
    assert r.cue and r.speaker == "user" and not r.question
    v = read("The staging cluster runs Node 22.4 and the logo is teal.")
    assert v.values["version"] == {"22.4"} and v.values["colour"] == {"teal"}
    # who is spoken to is not a value; a sentence's first word is not a name
    assert "name" not in read("Thanks, Priya! Sounds lovely.").values
    assert read("Finally the roof is fixed.").values == {}


@pytest.mark.parametrize(
    "text",
    [
        "The lab ordered a colour correction filter for the scanner.",
        "I use Ethernet instead of Wi-Fi for the console.",
        "I've actually never been to a live opera.",
        "The sneakers I no longer wear are in the attic.",
    ],
)
def test_incidental_change_words_alone_are_no_update(text: str) -> None:
    old = "My console keeps losing the Wi-Fi connection in the evening."
    assert verdict(text, old, similarity=0.9) in (Verdict.NONE, Verdict.OUTDATES)
    assert verdict(text, old, similarity=0.9) is not Verdict.SUPERSEDES


def test_a_same_type_value_replaced_with_a_cue_supersedes() -> None:
    old = "user: I live in Berlin, near Tempelhofer Feld."
    assert verdict("user: We finally moved to Lisbon last month.", old, 0.72) is (
        Verdict.SUPERSEDES
    )
    # the same value changed without a change word (or an intro turn before it) may be a
    # second event as well as a new version: no link
    assert verdict("user: Home is Lisbon, by the river.", old, 0.72) is Verdict.NONE
    # and at a low similarity nothing at all
    assert verdict("user: We finally moved to Lisbon last month.", old, 0.2) is Verdict.NONE


def test_look_alike_facts_are_not_versions_of_each_other() -> None:
    assert verdict("My brother lives in Lisbon.", "My sister lives in Porto.", 0.9) is (
        Verdict.NONE
    )
    assert verdict(
        "Actually, the production deadline is June 1.", "The staging deadline is May 3.", 0.9
    ) is Verdict.NONE
    # one speaker's words are no newer version of another's
    assert verdict("Maya: I moved to Oslo.", "Tom: I live in Bergen.", 0.9) is Verdict.NONE
    # a question states nothing
    assert verdict("Did you move to Oslo?", "I live in Bergen.", 0.9) is Verdict.NONE


def test_an_elliptical_update_borrows_its_subject_from_the_turn_before() -> None:
    old = "My dentist appointment is on Monday at 9 AM."
    new = "It's Thursday at 2 PM now."
    assert verdict(new, old, similarity=0.2, context=0.0) is Verdict.NONE
    assert verdict(new, old, similarity=0.2, context=0.7) is not Verdict.NONE
    # a text that names its own subject is judged by its own words, not the context
    assert judge(read("My gym is open on Thursday at 2 PM."), read(old), 0.2, 0.7,
                 Policy()).context == 0.0


def test_who_spoke() -> None:
    assert is_assistant("assistant: Actually, you live in Lisbon.")
    assert is_assistant("AI: Noted, Lisbon it is.")
    assert is_assistant("Noted.", {"role": "assistant"})
    assert not is_assistant("Human: I moved to Lisbon.")
    assert not is_assistant("user: I moved to Lisbon.", {"role": "user"})
    assert not is_assistant("Note: the AI said hello")


def test_every_update_number_is_in_the_policy() -> None:
    p = Policy(outdate_score=0.5)
    assert p.updates.outdate_score == 0.5 and isinstance(p.updates, UpdatePolicy)
    with pytest.raises(InvalidPolicy, match="outdate_score must not exceed supersede_score"):
        Policy(outdate_score=0.95)
    with pytest.raises(InvalidPolicy, match=r"Policy\.updates"):
        Policy(correction_similarity=0.5)


# ----------------------------------------------------------------------------- write path


def test_a_supersession_records_why_and_history_shows_the_chain() -> None:
    e = make_engine()
    old = e.observe("user: I live in Berlin, close to the big park")
    later(e, days=40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park")
    retired = e.get(old.id)
    assert retired.status is Status.SUPERSEDED and retired.superseded_by == new.id
    assert retired.valid_to == new.created_at
    why = retired.metadata[SUPERSEDED_KEY]
    assert why["by"] == new.id and why["verdict"] == "supersedes"
    assert why["same_type"] == "name" and why["cue"] is True and why["similarity"] > 0.4
    assert e.get(new.id).metadata[UPDATE_KEY]["of"] == old.id
    assert [m.id for m in e.history(memory_id=new.id)] == [old.id, new.id]
    assert [m.id for m in e.history(memory_id=old.id)] == [old.id, new.id]
    with pytest.raises(InvalidInput):
        e.history("user", memory_id=new.id)
    # the past still answers with the old value
    past = e.recall("where do I live", as_of=T0 + timedelta(days=1), reinforce=False)
    assert [h.id for h in past][:1] == [old.id]


def test_assistant_words_never_retire_a_users_statement() -> None:
    e = make_engine()
    old = e.observe("user: I live in Berlin, close to the big park")
    later(e, seconds=120)
    e.observe("assistant: Actually, Lisbon is close to the big park too")
    e.observe("AI: Actually I live in Lisbon now, close to the big park")
    e.observe("Actually I live in Lisbon now, close to the big park", metadata={"role": "ai"})
    assert e.get(old.id).is_active
    assert all(UPDATE_KEY not in m.metadata for m in e.memories())


def test_incidental_cues_retire_nothing() -> None:
    e = make_engine()
    keep = [
        e.observe("The photo lab does colour grading for the wedding pictures"),
        e.observe("My desktop keeps dropping the Wi-Fi connection when I game"),
    ]
    later(e, hours=1)
    e.observe("The photo lab offers colour correction for the wedding pictures")
    e.observe("I use Ethernet instead of Wi-Fi for my desktop when I game")
    assert all(e.get(m.id).is_active for m in keep)


def test_look_alikes_both_stay_current() -> None:
    e = make_engine()
    sister = e.observe("My sister lives in Porto")
    staging = e.observe("The staging deadline is May 3")
    later(e, days=2)
    brother = e.observe("My brother lives in Lisbon")
    production = e.observe("Actually, the production deadline is June 1")
    for m in (sister, staging, brother, production):
        assert e.get(m.id).is_active
    assert e.recall("where does my sister live", k=1, reinforce=False)[0].id == sister.id
    top = e.recall("when is the staging deadline", k=1, reinforce=False)[0]
    assert top.id == staging.id


def test_detection_can_be_turned_off() -> None:
    e = make_engine(Policy(detect_updates=False))
    old = e.observe("I live in Berlin, close to the big park")
    e.observe("Actually I live in Lisbon now, close to the big park")
    assert e.get(old.id).is_active


# ----------------------------------------------------------------------------- recall


def test_the_newer_version_ranks_first_even_when_the_question_matches_the_old() -> None:
    e = make_engine()
    old = e.observe("user: My tennis lesson with coach Ana is on Saturday at 10 AM")
    later(e, days=9)
    e.observe("user: About the tennis lesson.")
    later(e, seconds=60)
    new = e.observe("user: It's Sunday at 5 PM now.")
    assert e.get(new.id).metadata[UPDATE_KEY]["of"] == old.id
    res = e.recall("when is my tennis lesson with coach Ana on Saturday", reinforce=False)
    ids = [h.id for h in res]
    assert new.id in ids and (old.id not in ids or ids.index(new.id) < ids.index(old.id))
    note = res[ids.index(new.id)].explanation.note or ""
    assert "newer version of" in note
    assert f"observed {new.created_at:%Y-%m-%d}" in note
    assert res[ids.index(new.id)].explanation.as_dict()["note"] == note
    assert f"[{new.created_at:%Y-%m-%d}]" in res.text()  # each hit's date, for the reader


def test_include_history_shows_the_versions_oldest_first() -> None:
    e = make_engine()
    old = e.observe("user: I live in Berlin, close to the big park")
    later(e, days=30)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park")
    res = e.recall("where do I live close to the big park", include_history=True,
                   reinforce=False)
    ids = [h.id for h in res]
    assert ids.index(new.id) < ids.index(old.id)
    note = res[ids.index(new.id)].explanation.note or ""
    assert note.index("Berlin") < note.index("Lisbon")


# ----------------------------------------------------------------------------- arbitration


def _mem(mid: str, days: int, **kw: Any) -> Memory:
    return Memory(id=mid, namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE,
                  text=f"text {mid}", created_at=T0 + timedelta(days=days), **kw)


def test_arbitration_follows_a_chain_to_the_newest_version() -> None:
    a, b, c = _mem("a", 0), _mem("b", 5), _mem("c", 9)
    memories = {m.id: m for m in (a, b, c)}
    links = version_links([Edge("b", "a", EdgeType.UPDATES), Edge("c", "b", EdgeType.UPDATES)],
                          memories)
    found = newest("a", links, memories, lambda m: True, hops=3)
    assert found is not None and found[0].id == "c"
    assert [m.id for m in found[1]] == ["a", "b", "c"]
    assert newest("c", links, memories, lambda m: True, hops=3) is None  # nothing newer
    assert newest("a", links, memories, lambda m: True, hops=1)[0].id == "b"  # type: ignore[index]
    # the newest is pulled in above the older with at least its relevance
    cand = Candidate("a", 0.9, 0.9, 0.9)
    ranked = [Ranked(a, cand, 0.1, 0.82)]
    out = arbitrate(ranked, {"a": cand}, memories, links, T0 + timedelta(days=10), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked] == ["c", "a"]
    assert out.ranked[0].score > out.ranked[1].score
    assert "newer version of a" in out.notes["c"] and "older version" in out.notes["a"]
    # a version not admitted (asked about the past) is not pulled in
    past = arbitrate(ranked, {"a": cand}, memories, links, T0 + timedelta(days=1), Policy(),
                     lambda m: m.created_at <= T0 + timedelta(days=1))
    assert [r.memory.id for r in past.ranked] == ["a"] and not past.notes


def test_a_preference_restated_with_a_new_value_is_a_new_version() -> None:
    assert verdict("White is my favourite colour.", "My favourite colour is purple.", 0.8) is (
        Verdict.OUTDATES
    )
    # a repeated event with another number is not (no change word, no preference)
    assert verdict("The bowl I made for soup number 2 was chipped.",
                   "The bowl I made for soup number 1 was chipped.", 0.95) is Verdict.NONE


def test_a_long_chat_turn_is_no_newer_version() -> None:
    old = "I live in Berlin, near the park."
    long_turn = (
        "Actually we moved to Lisbon, and honestly the whole week was a blur of boxes, "
        "paperwork, late trains, new neighbours, strange noises and far too much coffee."
    )
    assert verdict(long_turn, old, 0.8) is Verdict.NONE
    assert verdict("Actually we moved to Lisbon.", old, 0.8) is not Verdict.NONE


def test_forget_leaves_no_text_in_the_recent_turns_kept_for_updates(engine: MemoryEngine) -> None:
    """The write path keeps recent turns (with their text) to judge the next update; a
    forgotten memory must not stay there."""
    kept = engine.observe("user: my locker code is 4471")
    engine.observe("user: the gym opens at six")
    engine.forget(kept.id)
    recent = [r.memory.id for q in engine._writes.versions._recent.values() for r in q]
    assert kept.id not in recent
    other = engine.observe("user: my bike lock code is 9920", namespace="ns2")
    engine.forget_namespace("ns2")
    recent = [r.memory.id for q in engine._writes.versions._recent.values() for r in q]
    assert other.id not in recent
