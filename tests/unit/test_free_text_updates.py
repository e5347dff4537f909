"""Free-text updates: which traces are newer versions of which, why, and how recall ranks
them (core/updates.py, core/arbitration.py, the write and recall paths), on in-memory
ports. tests/integration/test_free_text_updates.py runs the same with the real model."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from reverie.core import InvalidInput, InvalidPolicy, Policy, Status, arbitration
from reverie.core.arbitration import (
    arbitrate,
    asks_about_past,
    implicit_links,
    newest,
    replies_below,
    version_links,
)
from reverie.core.engine import MemoryEngine
from reverie.core.models import Edge, EdgeType, Kind, Memory, Tier
from reverie.core.policy import UpdatePolicy
from reverie.core.retrieval import Candidate, Ranked
from reverie.core.updates import (
    Signals,
    Verdict,
    answers_alike,
    introduces,
    is_assistant,
    judge,
    read,
)
from reverie.core.writing import SUPERSEDED_KEY, UPDATE_KEY
from tests.unit.conftest import T0, make_engine


def later(engine: MemoryEngine, **delta: float) -> None:
    clock: Any = engine.clock
    clock.advance(**delta)


def signals(new: str, old: str, similarity: float = 0.8, context: float = 0.0) -> Signals:
    """The write path's judgement of two texts, at the default policy."""
    return judge(read(new), read(old), similarity, context, Policy())


def verdict(new: str, old: str, similarity: float = 0.8, context: float = 0.0) -> Verdict:
    return signals(new, old, similarity, context).verdict


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
    # a name may start lower-case before a capital; that is no sentence start
    assert read("user: My new phone is an iPhone 15.").values["name"] == {"iphone"}
    assert read("user: eBay is where I sell.").values["name"] == {"ebay"}


def test_a_word_of_the_change_phrase_is_no_word_both_texts_speak_of() -> None:
    # "make" tells how the coffee order changed; the omelette shares no subject with it
    new = read("user: Make that an oat latte.")
    assert new.cue and new.cue_words == {"make"}
    s = judge(new, read("user: I'm thinking of making omelette for dinner."), 0.5, 0.0,
              Policy())
    assert s.shared == ()
    # a word of the subject inside the phrase still counts: "car" in "switched my car to"
    s = signals("user: I switched my car to a Tesla.",
                "user: My car is a Honda Civic.", 0.5)
    assert s.shared == ("car",)


def test_a_preference_told_in_its_own_words_borrows_no_subject() -> None:
    # a turn just before lends its subject to an elliptical update only; "my favourite
    # food is ramen" names its own, so the dinner plan before it is no earlier version
    new = read("user: Oh, actually my favourite food is ramen now.")
    old = read("user: I'm thinking of making chili for dinner.")
    s = judge(new, old, 0.45, 0.67, Policy())
    # judged on its own cosine: 0.45 + 0.1 for the change word, nothing from the 0.67
    assert s.context == 0.0 and s.score == pytest.approx(0.55)
    # while a short reply with no subject of its own still takes the intro's
    assert verdict("user: It's paleo now.", "user: I follow a keto diet.", 0.2, 0.6) \
        is Verdict.OUTDATES


def test_a_change_that_names_the_users_own_thing_borrows_no_subject_for_another() -> None:
    # "my commute" names what it speaks of, though no typed value follows: a question
    # about deep sea vents just before it lends it no subject, so the documentary the
    # user mentioned earlier is no earlier version of the commute
    new = read("user: Oh, actually my commute is by tram now.")
    assert new.possessed == frozenset({"commut"})
    old = read("user: I've been watching a documentary about deep sea vents.")
    s = judge(new, old, 0.08, 0.8, Policy())
    assert s.context == 0.0 and s.verdict is Verdict.NONE
    # an older text that speaks of the commute still lends its words to the change
    s = judge(new, read("user: My commute takes forty minutes on the train."), 0.2, 0.7,
              Policy())
    assert s.context == 0.7 and s.verdict is Verdict.OUTDATES
    # "my new one" names no thing
    assert read("user: My new one is a Tesla.").possessed == frozenset()


def test_the_kind_before_a_name_it_introduces_is_part_of_the_value() -> None:
    # "a golden retriever named Bailey": the subject is the family pet, not the retriever
    old = read("user: Our family pet is a golden retriever named Bailey.")
    assert old.subject == frozenset({"family", "pet"})
    # so "We got a tabby cat named Luna." names no subject of its own, and after "Pet
    # news." it borrows the pet: the intro's cosine (0.6) is its score's base
    new = read("user: We got a tabby cat named Luna.")
    assert new.subject == frozenset()
    s = judge(new, old, 0.25, 0.6, Policy())
    assert s.context == 0.6 and s.same_type == "name" and s.verdict is Verdict.OUTDATES


def test_two_texts_that_name_one_thing_of_the_users_are_nearer_versions() -> None:
    # "my usual" and "my usual coffee order": 0.36 + 0.1 (change word) + 0.03 (one shared
    # word) + 0.05 (possessed_bonus) = 0.54 clears cue_only_score (0.5); 0.49 without
    new = read("user: My new usual is a cappuccino.")
    old = read("user: Going forward, from now on my usual coffee order is a flat white.")
    s = judge(new, old, 0.36, 0.0, Policy())
    assert s.score == pytest.approx(0.54) and s.verdict is Verdict.OUTDATES
    s = judge(new, old, 0.36, 0.0, Policy().replace(possessed_bonus=0.0))
    assert s.score == pytest.approx(0.49) and s.verdict is Verdict.NONE
    # "my favourite colour" and "my favourite food" are two things: 0.36 + 0.1 + 0.05 for
    # an outright change word ("from now on") + 0.03 for "favourite", no possessed_bonus
    s = signals("user: From now on my favourite colour is teal.",
                "user: My favourite food is pad thai.", 0.36)
    assert s.score == pytest.approx(0.36 + 0.1 + 0.05 + 0.03)


def test_a_change_before_the_same_subject_replaces_a_value_of_another_shape() -> None:
    # "my gym schedule is" on both sides, a change word: days became a count
    new = "user: My new gym schedule is 3 times a week."
    assert verdict(new, "user: From now on, my gym schedule is lunchtimes on weekdays") \
        is Verdict.OUTDATES
    # without the same subject, a text that replaces none of the old one's typed values
    # speaks of something else
    assert verdict("user: The food bank moved to a warehouse.",
                   "user: I volunteer at the food bank on Wednesdays.") is Verdict.NONE


def test_a_schedule_told_by_its_hour_replaces_one_told_by_its_days() -> None:
    # "at 7" after a schedule's day part is an hour
    assert read("user: My weekly gym routine is every evening at 7.").values["time"] == {"7"}
    assert read("user: Dinner at 8 tonight!").values["time"] == {"8"}
    assert "time" not in read("user: I was at 3 meetings today.").values
    # days and hours are one kind of value, a when, when both repeat: a schedule
    s = signals("user: My weekly gym routine is every evening at 7.",
                "user: My training days at the gym are Monday, Wednesday and Friday.", 0.72)
    assert s.same_type == "time" and s.verdict is Verdict.OUTDATES
    # "My new gym schedule is ..." says the old schedule was replaced: retired
    assert verdict("user: My new gym schedule is every evening at 7.",
                   "user: From now on, my gym schedule is lunchtimes on weekdays") \
        is Verdict.SUPERSEDES
    # a one-off's hour is another part of its when, not a new one
    s = signals("user: The dentist appointment is at 10 AM.",
                "user: I have a dentist appointment on Friday.", 0.84)
    assert s.same_type is None and s.verdict is Verdict.NONE


def test_a_change_whose_subject_the_older_one_names_in_more_words_replaces_its_value() -> None:
    # "my gym days" is "my training days at the gym" in fewer words: the days became a
    # count, though no weekday is named again
    new = read("user: I changed my gym days to 3 per week.")
    old = read("user: My training days at the gym are weekday mornings.")
    s = judge(new, old, 0.78, 0.0, Policy())
    assert s.contrast is None and s.verdict is Verdict.OUTDATES
    # a subject word the older text lacks ("kitchen") still sets the two apart
    s = judge(read("user: I changed my kitchen days to 3 per week."), old, 0.78, 0.0,
              Policy())
    assert s.contrast == "no new date" and s.verdict is Verdict.NONE


def test_a_name_that_qualifies_a_shared_word_is_a_value_a_plain_word_change_replaces() -> None:
    # "Mediterranean" is capitalised, yet it says which diet, as "keto" would
    old = read("user: I follow a Mediterranean diet for health reasons.")
    s = judge(read("user: For the record, my diet is gluten-free."), old, 0.46, 0.0, Policy())
    # 0.46 + 0.1 for the change word + 0.03 for "diet": above cue_only_score (0.5)
    assert s.contrast is None and s.verdict is Verdict.OUTDATES
    assert s.score == pytest.approx(0.59)
    s = signals("user: My new eating plan is low-carb.",
                "user: I've been eating Mediterranean since the doctor's advice.", 0.46)
    assert s.contrast is None and s.verdict is Verdict.OUTDATES
    # a name beside a word the change does not hold names another thing ("a Dutch oven")
    s = signals("user: Heads up, my diet is paleo now.",
                "user: I bought a Dutch oven for the diet recipes.", 0.46)
    assert s.contrast == "no new name" and s.verdict is Verdict.NONE
    # ...and so does a name a word apart from the shared one ("work at Google")
    s = signals("user: Heads up, my work schedule changed to part-time.",
                "user: I work at Google.", 0.46)
    assert s.contrast == "no new name" and s.verdict is Verdict.NONE
    # without a change word, a plain word beside the name is no new value of it
    s = judge(read("user: My diet is gluten-free."), old, 0.46, 0.0, Policy())
    assert s.verdict is Verdict.NONE


def test_change_words_of_everyday_english_are_read() -> None:
    # an announcement, and verbs that move a value somewhere else
    for text in ("user: FYI my manager is Aiko Sato.", "user: Prod was migrated to Python 3.10.",
                 "user: The budget was cut to $40k.", "user: My new route to work is on foot.",
                 # a hyphenated word is one word: "my new go-to dish is" as "my new dish is"
                 "user: My new go-to dish is tacos.", "user: Our new co-founder is Ana Lima.",
                 # a value of up to three words before a closing "now", its own
                 # punctuation inside its words
                 "user: It's paleo now.", "user: It's a double espresso now.",
                 "user: It's Python 3.10 now.", "user: It's 4:30 PM now.",
                 "user: It's $1,500 a month now.", "user: Down to $1,200 now."):
        assert read(text).cue, text
    assert not read("user: It's a really big deal for me now.").cue
    # those that say outright that the old value was replaced
    for text in ("user: We relocated to Osaka for good.", "user: I swapped my bike for a scooter."):
        r = read(text)
        assert r.cue and r.strong_cue, text
    # the words alone, with no "to" or "for" after them, announce nothing
    assert not read("user: I cut the grass and migrated the birds' feeder.").cue


def test_a_product_name_that_starts_lower_case_replaces_the_old_one() -> None:
    # with "iPhone" unread, the new text held no name and "Moto G" was left unreplaced
    assert verdict("user: My new phone is an iPhone 15.", "user: I changed phones to a Moto G.",
                   0.63) is Verdict.SUPERSEDES


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


def test_a_change_that_negates_a_value_speaks_of_the_text_that_holds_it() -> None:
    r = read("user: My language course is no longer Dutch; it's Japanese.")
    assert r.negated == {"dutch"} and r.negated_typed
    assert read("user: My diet isn't Mediterranean anymore, it's paleo.").negated == {
        "mediterranean"}
    r = read("user: My doctor is no longer Dr. Patel. Now it's Dr. Lindqvist.")
    assert r.negated == {"patel"} and r.negated_typed  # "Dr." ends no clause
    assert read("user: My rent is no longer $1,640, it is $1,750 now.").negated == {"$1640"}
    assert read("user: We switched to Catan instead of Monopoly.").negated == {"monopoly"}
    r = read("user: I switched from the bus to cycling.")
    assert r.negated == {"bus", "bu"} and not r.negated_typed
    assert read("user: My diet is paleo now.").negated == frozenset()
    # the older text names the negated value again: no "same named thing" contrast
    assert verdict("user: My diet isn't Mediterranean anymore, it's paleo.",
                   "user: I've been eating Mediterranean since the doctor's advice.",
                   0.73) is Verdict.OUTDATES
    # a value negated that the older text does not hold, of a subject it does not name
    assert verdict("user: For game night we switched to Catan instead of Monopoly.",
                   "user: My language course is no longer Dutch; it's Japanese.",
                   0.35) is Verdict.NONE
    # ...while one subject named by both is a version with an unsaid one between them
    assert verdict("user: My employer isn't Pied Piper anymore, it's Cyberdyne.",
                   "user: My employer is Hooli.", 0.6) is not Verdict.NONE
    # at recall too, the value named to be negated is no named thing both speak of
    assert answers_alike(read("user: My diet isn't Mediterranean anymore, it's paleo."),
                         read("user: My diet is Mediterranean, for my heart."),
                         read("What diet am I on?").words, Policy()) == "words"


def test_numbered_look_alikes_are_two_of_a_kind_not_two_versions() -> None:
    # a number right after the same word names which one: another project, another day
    assert verdict("The meeting about project 22 went well.",
                   "The meeting about project 7 went well.", 0.95) is Verdict.NONE
    assert verdict("It rained in Paris on day 2.", "It rained in Paris on day 1.", 0.95) is (
        Verdict.NONE
    )
    # a number after a verb or a preposition is the value: restated, it still outdates
    assert verdict("My rent is $1,350 a month.", "My rent is $1,200 a month.", 0.9) is not (
        Verdict.NONE
    )
    # and an outright change word says one replaced the other
    assert verdict("We switched to plan 3 for the team.", "We use plan 2 for the team.",
                   0.9) is not Verdict.NONE


def test_an_elliptical_update_borrows_its_subject_from_the_turn_before() -> None:
    old = "My dentist appointment is on Monday at 9 AM."
    new = "It's Thursday at 2 PM now."
    assert verdict(new, old, similarity=0.2, context=0.0) is Verdict.NONE
    assert verdict(new, old, similarity=0.2, context=0.7) is not Verdict.NONE
    # a text that names its own subject is judged by its own words, not the context
    assert judge(read("My gym is open on Thursday at 2 PM."), read(old), 0.2, 0.7,
                 Policy()).context == 0.0

    # a name it switches to replaces a name: a text near the turn before that states no
    # name ("I burnt the chili again" after "I burnt the curry again") is no earlier version
    okafor = "user: I switched to Dr. Okafor."
    assert verdict(okafor, "user: I burnt the chili again, sigh.", 0.38, 0.7) is Verdict.NONE
    assert verdict(okafor, "user: I see Dr. Brennan for my checkups.", 0.38, 0.7) is not (
        Verdict.NONE
    )
    # a longer sentence with few content words tells something of its own
    camp = "user: Actually, Lake Tahoe gets crowded, so we book the campsite in January."
    assert verdict(camp, "user: Oh, actually my doctor is Dr. Costa now.", 0.1, 0.36) is (
        Verdict.NONE
    )
    assert verdict("user: Actually, it's Dr. Costa.", "user: I see Dr. Alvarez.", 0.1, 0.36) is (
        Verdict.OUTDATES
    )
    # a plain-word value with a change word still borrows its subject
    assert verdict("user: It's paleo now.", "user: I eat keto most days.", 0.2, 0.7) is not (
        Verdict.NONE
    )


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


def test_a_fact_said_in_three_sessions_is_outdated_by_a_change_never_retired() -> None:
    # three sources make the statement a crystal; a change still ranks above it, and the
    # crystal stays current (the same texts as traces would supersede, as above)
    e = make_engine()
    for n in range(3):
        old = e.observe("user: I live in Berlin, close to the big park", source=f"s{n}")
        later(e, days=5)
    assert e.get(old.id).tier is Tier.CRYSTAL
    later(e, days=40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park")
    kept = e.get(old.id)
    assert kept.is_active and kept.superseded_by is None
    why = e.get(new.id).metadata[UPDATE_KEY]
    assert why["of"] == old.id and why["verdict"] == "outdates"
    assert why["cue"] is True and why["score"] >= e.policy.updates.supersede_score
    hits = e.recall("where do I live", reinforce=False)
    assert [h.id for h in hits][:2] == [new.id, old.id]


def test_a_confirmed_item_is_outdated_by_a_new_item_under_another_key() -> None:
    # a store item (a unit with its own words, as the LangGraph store writes it) that the
    # user confirmed is a crystal; a change written as a new item still ranks above it,
    # and the confirmed item stays current under its own key
    e = make_engine()
    old = e.remember(
        "item:m-1", "value", "d1", text="user: I live in Berlin, close to the big park"
    )
    old = e.confirm(old.id)
    assert old.tier is Tier.CRYSTAL
    later(e, days=40)
    new = e.remember(
        "item:m-2", "value", "d2", text="user: Actually I live in Lisbon now, close to the big park"
    )
    why = new.metadata[UPDATE_KEY]
    assert why["of"] == old.id and why["verdict"] == "outdates"
    assert e.get(old.id).is_active
    hits = e.recall("where do I live", reinforce=False)
    assert [h.id for h in hits][:2] == [new.id, old.id]


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


def test_an_update_pointed_at_a_retired_version_outdates_the_current_one() -> None:
    # the intro names the subject in the first version's words; the version that
    # replaced it shares none of them, yet it is the fact's current value
    e = make_engine()
    first = e.observe("user: I report to Omar Haddad, who runs the platform group.")
    later(e, days=2)
    second = e.observe("user: The platform group's Omar Haddad is no longer my boss; "
                       "it's Aiko Sato.")
    assert e.get(first.id).status is Status.SUPERSEDED
    later(e, days=2)
    e.observe("user: About who I report to.")
    later(e, seconds=60)
    third = e.observe("user: It's Chloe Martin from now.")
    link = e.get(third.id).metadata[UPDATE_KEY]
    assert (link["of"], link["through"], link["verdict"]) == (second.id, first.id, "outdates")
    assert e.get(second.id).is_active  # judged on the retired text: outdated, not retired
    ids = [h.id for h in e.recall("Who do I report to?", reinforce=False)]
    assert ids.index(third.id) < ids.index(second.id)


def test_no_update_reaches_past_a_retired_version_when_chain_hops_is_zero() -> None:
    e = make_engine(Policy(updates=UpdatePolicy(chain_hops=0)))
    e.observe("user: I report to Omar Haddad, who runs the platform group.")
    later(e, days=2)
    e.observe("user: The platform group's Omar Haddad is no longer my boss; it's Aiko Sato.")
    later(e, days=2)
    e.observe("user: About who I report to.")
    later(e, seconds=60)
    third = e.observe("user: It's Chloe Martin from now.")
    assert UPDATE_KEY not in e.get(third.id).metadata


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
    # its score is relevance and decay alone, so its explanation shows no speaker term
    assert out.ranked[0].speaker == 0.0
    assert "newer version of a" in out.notes["c"] and "older version" in out.notes["a"]
    # a version not admitted (asked about the past) is not pulled in
    past = arbitrate(ranked, {"a": cand}, memories, links, T0 + timedelta(days=1), Policy(),
                     lambda m: m.created_at <= T0 + timedelta(days=1))
    assert [r.memory.id for r in past.ranked] == ["a"] and not past.notes


def test_an_older_version_is_looked_past_only_through_a_link_that_shares_more_than_a_type(
) -> None:
    """A pet's chain and a manager's chain joined by one weak link ("The person I report
    to changed to Tom Becker." outdated "Our new pet is a parrot named Kiwi." on a name
    and a change word alone): the newest pet is no newer version of the manager. A link
    that retired the older one, or shares a word with it, is followed back to find a
    newer version beside the start."""
    def why(of: str, verdict: str = "outdates", shared: tuple[str, ...] = (),
            context: float = 0.0) -> dict[str, Any]:
        return {UPDATE_KEY: {"of": of, "verdict": verdict, "shared": list(shared),
                             "context": context}}

    kiwi = _mem("kiwi", 0)
    tom = _mem("tom", 2, metadata=why("kiwi"))
    sam = _mem("sam", 4, metadata=why("tom", shared=()))
    peanut = _mem("peanut", 6, metadata=why("kiwi", shared=("pet",)))
    memories = {m.id: m for m in (kiwi, tom, sam, peanut)}
    links = version_links([Edge("tom", "kiwi", EdgeType.UPDATES),
                           Edge("sam", "tom", EdgeType.UPDATES),
                           Edge("peanut", "kiwi", EdgeType.UPDATES)], memories)
    assert newest("sam", links, memories, lambda m: True, hops=6) is None
    found = newest("tom", links, memories, lambda m: True, hops=6)
    assert found is not None and found[0].id == "sam"
    assert newest("kiwi", links, memories, lambda m: True, hops=6)[0].id == "peanut"  # type: ignore[index]
    # two newer versions of one band: back through a shared word, then on to the newest
    arctic = _mem("arctic", 0, superseded_by="daft", status=Status.SUPERSEDED)
    portishead = _mem("portishead", 2, metadata=why("arctic", shared=("band",)))
    daft = _mem("daft", 4, metadata=why("arctic", verdict="supersedes"))
    bands = {m.id: m for m in (arctic, portishead, daft)}
    links = version_links([Edge("portishead", "arctic", EdgeType.UPDATES),
                           Edge("daft", "arctic", EdgeType.SUPERSEDES)], bands)
    assert newest("portishead", links, bands, lambda m: True, hops=6)[0].id == "daft"  # type: ignore[index]
    # an intro the update borrowed its subject from is as firm as a shared word
    bands["portishead"] = _mem("portishead", 2, metadata=why("arctic", context=0.5))
    assert newest("portishead", links, bands, lambda m: True, hops=6)[0].id == "daft"  # type: ignore[index]
    bands["portishead"] = _mem("portishead", 2, metadata=why("arctic"))
    assert newest("portishead", links, bands, lambda m: True, hops=6) is None


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


# ----------------------------------------------------------------------------- case by case


def test_an_update_of_two_groups_of_versions_of_one_fact_is_the_newest_of_both() -> None:
    # "workout days" and "gym days" qualify "days" apart, so the write path kept two
    # groups of versions; an update that replaces the days of both is linked to the one
    # it reads most like and outdates the other, and recall puts it above both
    e = make_engine()
    e.observe("user: My workout days are Sundays.")
    e.observe("user: My gym days are Wednesdays.")
    later(e, days=1)
    workout = e.observe("user: Actually my workout days are Tuesdays and Thursdays now.")
    later(e, days=1)
    gym = e.observe("user: Actually my gym days are Mondays and Fridays now.")
    assert UPDATE_KEY in e.get(workout.id).metadata and UPDATE_KEY in e.get(gym.id).metadata
    later(e, days=3)
    new = e.observe("user: From now on, my gym and workout days are Saturdays.")
    why = e.get(new.id).metadata[UPDATE_KEY]
    assert {why["of"], *why["also"]} == {workout.id, gym.id}
    other = (set(why["also"]) - {why["of"]}).pop()
    assert e.get(other).is_active  # outdated, never retired
    later(e, days=1)
    for question in ("what are my gym days", "what are my workout days"):
        assert e.recall(question, k=2, reinforce=False)[0].id == new.id


def test_a_value_restated_without_a_change_word_outdates_but_never_retires() -> None:
    old = "user: My annual salary is $95,000."
    new = "user: My annual salary is $104,000."
    assert verdict(new, old, similarity=0.85) is Verdict.OUTDATES
    # an announcement ("FYI", "heads up") tells news: then the older is retired
    assert verdict("user: FYI my annual salary is $104,000.", old,
                   similarity=0.85) is Verdict.SUPERSEDES
    # below the typed similarity it is no link: the two may speak of different things
    assert verdict(new, old, similarity=0.45) is Verdict.NONE
    # told as a past event, a new number is a second event, not a new version
    assert verdict("The bowl I made for soup number 2 was chipped.",
                   "The bowl I made for soup number 1 was chipped.", 0.95) is Verdict.NONE


def test_look_alikes_that_differ_in_what_they_name_before_the_value() -> None:
    # "my dentist" and "my dermatologist": each names a subject the other does not
    s = signals("user: My dermatologist is Dr. Nguyen.",
                "user: My dentist is Dr. Okafor.", 0.56)
    assert s.verdict is Verdict.NONE and s.contrast == "dentist/dermatologist"
    # amounts an order of magnitude apart are two quantities: a rent is no salary
    s = signals("user: I pay $1,350 a month for my apartment.",
                "user: My annual pay is $95,000.", 0.64)
    assert s.same_type is None and s.verdict is Verdict.NONE
    # "I live in Berlin with my partner" speaks of the speaker, as "we" does
    assert verdict("user: We moved to Seattle.", "user: I live in Berlin with my partner.",
                   0.5) is not Verdict.NONE


@pytest.mark.parametrize(
    ("new", "old", "similarity", "contrast"),
    [
        # "I always order" qualifies the order as "my usual coffee order" does: one order
        ("user: These days my usual coffee order is a cold brew.",
         "user: At the cafe I always order a double espresso.", 0.56, None),
        # "an oat latte" and "a chai latte" are two values of one order, not two lattes
        ("user: Actually, my usual order at the cafe is an oat latte.",
         "user: My morning coffee is a chai latte from the corner shop.", 0.62, None),
        # qualifiers of two senses are two things
        ("user: Our marketing budget is now $5,000.",
         "user: Our travel budget is $3,000.", 0.66, "travel/marketing budget"),
        # before "is", the qualifier names the subject: two deadlines
        ("user: Actually, the production deadline is June 1.",
         "user: The staging deadline is May 3.", 0.9, "staging/production deadline"),
    ],
    ids=["always-is-usual", "qualified-value", "two-budgets", "two-deadlines"],
)
def test_a_qualifier_tells_two_things_apart_only_when_it_names_the_subject(
    new: str, old: str, similarity: float, contrast: str | None
) -> None:
    s = signals(new, old, similarity)
    assert s.contrast == contrast
    assert s.verdict is (Verdict.OUTDATES if contrast is None else Verdict.NONE)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        # the new text names the old one's thing again and states no new value of it
        ("user: Actually, the Dune movie was better than I expected.",
         "user: We watched the new Dune movie last night."),
        # the old one states a day; the new one says something else about the place
        ("user: The food bank moved to a warehouse with more storage space.",
         "user: I volunteer at the food bank on Wednesdays."),
    ],
)
def test_a_change_word_about_the_same_thing_is_no_new_value(new: str, old: str) -> None:
    assert verdict(new, old, similarity=0.8) is Verdict.NONE


def test_a_change_word_with_a_plain_word_value_outdates() -> None:
    # no typed value ("by bus" is a plain word), a change word and similar texts
    assert verdict("user: Heads up, my commute got changed to going by bus.",
                   "user: I commute to the office by car, about forty minutes.", 0.62) is (
        Verdict.OUTDATES
    )


def test_which_turns_introduce_the_subject_of_an_elliptical_update() -> None:
    p = Policy()
    assert introduces(read("user: About my pay."), p)
    assert introduces(read("user: Travel update for Boston."), p)
    assert introduces(read("user: You know the car I was complaining about?"), p)
    # a fact of its own lends no subject
    assert not introduces(read("user: My GP is Dr. Nguyen at the Elm Street clinic."), p)
    assert not introduces(read("user: About the sync on Tuesday at 4 PM."), p)
    # an elliptical update borrows a typed value's subject, or a plain word's with a
    # change word, and never retires on it
    s = judge(read("user: Raised to $65,000."), read("user: My annual pay is $95,000."),
              0.2, 0.7, p)
    assert s.verdict is Verdict.OUTDATES and s.context == 0.7
    s = judge(read("user: It's an americano now."),
              read("user: At the cafe I always order a cold brew."), 0.2, 0.7, p)
    assert s.verdict is Verdict.OUTDATES
    s = judge(read("user: An americano, I think."),
              read("user: At the cafe I always order a cold brew."), 0.2, 0.7, p)
    assert s.verdict is Verdict.NONE
    # a plain-word value replaces one that reads as a name only by its capital, when an
    # intro named the subject; without one, the name left unreplaced is a contrast
    old = read("user: I've been eating Mediterranean since the doctor's advice.")
    s = judge(read("user: It's paleo now."), old, 0.37, 0.56, p)
    assert s.verdict is Verdict.OUTDATES and s.contrast is None
    s = judge(read("user: It's paleo now."), old, 0.37, 0.0, p)
    assert s.verdict is Verdict.NONE and s.contrast == "no new name"
    # ...and so it is after an intro less near the older text than typed_similarity (0.5)
    s = judge(read("user: It's paleo now."), old, 0.37, 0.45, p)
    assert s.verdict is Verdict.NONE and s.contrast == "no new name"
    # ...and an elliptical update that leaves a time unreplaced speaks of something else
    s = judge(read("user: It's in a warehouse now."),
              read("user: I volunteer at the food bank at 6 PM."), 0.37, 0.56, p)
    assert s.verdict is Verdict.NONE and s.contrast == "no new time"


def test_questions_about_the_past() -> None:
    assert asks_about_past("Where did I live before Lisbon?")
    assert asks_about_past("What car did I use to drive?")
    assert asks_about_past("Who was my previous manager?")
    assert not asks_about_past("Which city do I live in now?")
    assert not asks_about_past("When is the quarterly report due?")
    assert not asks_about_past("When do I hit the gym before work?")


# ----------------------------------------------------------------------------- recall-time links


def _vec(*xs: float) -> Any:
    import numpy as np

    return np.asarray(xs, dtype=np.float32)


def _said(mid: str, minutes: float, text: str, **kw: Any) -> Memory:
    return Memory(id=mid, namespace="default", kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
                  created_at=T0 + timedelta(minutes=minutes), **kw)


def test_two_hits_that_read_as_versions_are_linked_at_recall() -> None:
    old = _said("old", 0, "user: The prod containers run Python 3.12.")
    new = _said("new", 60 * 24 * 30, "user: The prod containers run Python 3.13.")
    ack = _said("ack", 1, "assistant: Noted, the prod containers run Python 3.12.")
    ranked = [Ranked(old, Candidate("old", 0.9, 1.0, 0.9), 0.1, 0.82),
              Ranked(ack, Candidate("ack", 0.8, 0.9, 0.8), 0.1, 0.73),
              Ranked(new, Candidate("new", 0.5, 0.2, 0.4), 0.5, 0.41)]
    vectors = {"old": _vec(1, 0.2), "new": _vec(1, 0.3), "ack": _vec(1, 0.2)}
    links = implicit_links(ranked, vectors, Policy())
    assert links == {"new": {"old"}}  # an assistant's words are never a version
    # not similar enough: no link
    assert implicit_links(ranked, {**vectors, "new": _vec(0, 1)}, Policy()) == {}
    both = {"old": {"new"}, "new": {"old"}}
    memories = {m.id: m for m in (old, new, ack)}
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, both, T0 + timedelta(days=31), Policy(),
                    lambda m: True)
    # the newer version first, above the assistant's echo of the old one too
    assert out.ranked[0].memory.id == "new"
    assert out.ranked[0].score > max(r.score for r in out.ranked[1:])


def test_an_intro_and_an_assistant_reply_rank_below_the_newest_version() -> None:
    old = _said("old", 0, "user: My annual pay is $95,000.")
    intro = _said("intro", 60 * 24 * 20, "user: About my pay.")
    new = _said("new", 60 * 24 * 20 + 2, "user: Raised to $118,000.")
    other = _said("other", 60 * 24 * 10, "user: What's the capital of Japan?")
    ranked = [Ranked(intro, Candidate("intro", 0.7, 1.0, 0.73), 0.3, 0.70),
              Ranked(old, Candidate("old", 0.6, 0.8, 0.65), 0.1, 0.60),
              Ranked(other, Candidate("other", 0.6, 0.8, 0.62), 0.1, 0.59),
              Ranked(new, Candidate("new", 0.3, 0.0, 0.3), 0.3, 0.30)]
    memories = {m.id: m for m in (old, new, intro, other)}
    links = version_links([Edge("new", "old", EdgeType.UPDATES)], memories)
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=21), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked] == ["new", "intro", "old", "other"]


def _after_retired_version(minutes: float) -> list[str]:
    """The order of the newest version and the assistant's "That's really helpful to know
    about your manager.", said `minutes` after the older version, which was retired (a
    candidate, not a hit)."""
    old = _said("old", 0, "user: From now on the person I report to is Omar Haddad.",
                status=Status.SUPERSEDED, superseded_by="new")
    reply = _said("reply", minutes,
                  "assistant: That's really helpful to know about your manager.")
    new = _said("new", 60 * 24 * 30,
                "user: My manager isn't Omar Haddad anymore, it's Luis Ortega.")
    ranked = [Ranked(reply, Candidate("reply", 0.5, 1.0, 0.76), 0.01, 0.68),
              Ranked(new, Candidate("new", 0.4, 0.96, 0.68), 0.6, 0.67)]
    memories = {m.id: m for m in (old, reply, new)}
    links = version_links([Edge("new", "old", EdgeType.SUPERSEDES)], memories)
    cands = {"old": Candidate("old", 0.6, 0.0, 0.6),
             **{r.memory.id: r.candidate for r in ranked}}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=31), Policy(),
                    lambda m: m.status is Status.ACTIVE)
    return [r.memory.id for r in out.ranked]


def test_a_reply_to_a_retired_version_ranks_below_the_newest_version() -> None:
    # the reply repeats the question's words and would answer first
    assert _after_retired_version(3) == ["new", "reply"]
    # a reply counts as one to a version only after it, within context_seconds (600 s)
    assert _after_retired_version(10) == ["new", "reply"]  # exactly 600 s after it
    assert _after_retired_version(10.5) == ["reply", "new"]  # later: replies to nothing of it
    assert _after_retired_version(-5) == ["reply", "new"]  # said before the fact was told


def test_a_reply_that_speaks_of_the_newest_version_ranks_below_it() -> None:
    # the assistant's acknowledgement repeats the question's words ("usual", "order") and
    # holds the relevance the newest version, told in other words, lacks; a turn said
    # just after the acknowledgement (lent its relevance by closeness) must not pass it
    old = _said("old", 0, "user: At the cafe I always order a mocha.")
    new = _said("new", 20, "user: I changed my order to a double espresso.")
    ack = _said("ack", 21, "assistant: Okay, your usual coffee order is noted.")
    other = _said("other", 22, "user: Is Chile nice to visit in autumn?")
    ranked = [Ranked(ack, Candidate("ack", 0.4, 1.0, 0.7), 0.56, 0.62),
              Ranked(other, Candidate("other", 0.27, 0.0, 0.2), 0.56, 0.238),
              Ranked(old, Candidate("old", 0.34, 0.0, 0.18), 0.75, 0.234),
              Ranked(new, Candidate("new", 0.38, 0.0, 0.19), 0.47, 0.233)]
    memories = {m.id: m for m in (old, new, ack, other)}
    links = version_links([Edge("new", "old", EdgeType.UPDATES)], memories)
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(hours=1), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked][:2] == ["new", "ack"]
    assert out.notes["ack"] == "a reply to new stating nothing of its own, ranked below it"
    # a reply to the newest version that speaks of something else lifts nothing
    aside = _said("ack", 21, "assistant: Happy to help! For Egypt, a short book is good.")
    memories["ack"] = aside
    ranked[0] = Ranked(aside, ranked[0].candidate, 0.56, 0.62)
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(hours=1), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked][:2] == ["ack", "other"]


def test_a_reply_to_another_statement_said_after_a_version_is_no_echo_of_it() -> None:
    # "Thanks, I'll remember your yearly pay." follows the pay statement, said after the
    # interview count: it answers the pay, so the newest interview count is not lifted
    # above it (it would then outrank the pay's own newest version)
    interviews = _said("interviews", 0, "user: I have 8 interviews lined up for next week.")
    pay = _said("pay", 4, "user: My annual pay is $95,000.")
    reply = _said("reply", 6, "assistant: Thanks, I'll remember your yearly pay.")
    newer = _said("newer", 90, "user: I secured 3 interviews.")
    ranked = [Ranked(reply, Candidate("reply", 0.8, 0.9, 0.8), 0.5, 0.786),
              Ranked(pay, Candidate("pay", 0.6, 0.8, 0.65), 0.5, 0.64),
              Ranked(newer, Candidate("newer", 0.1, 0.0, 0.1), 0.5, 0.14),
              Ranked(interviews, Candidate("interviews", 0.1, 0.0, 0.1), 0.5, 0.13)]
    memories = {m.id: m for m in (interviews, pay, reply, newer)}
    links = version_links([Edge("newer", "interviews", EdgeType.UPDATES)], memories)
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=1), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked] == ["reply", "pay", "newer", "interviews"]
    # the same reply with no other statement between: it answers the interview count
    memories.pop("pay")
    ranked = [r for r in ranked if r.memory.id != "pay"]
    cands.pop("pay")
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=1), Policy(),
                    lambda m: True)
    assert [r.memory.id for r in out.ranked] == ["newer", "reply", "interviews"]


def test_versions_placed_at_one_score_are_ordered_by_relevance_not_by_id() -> None:
    # both newer versions are placed just above the intro said before them, so their
    # scores tie exactly; the one whose older version the question matches better is
    # first, whatever the (random) ids say
    pay_old = _said("z-pay-old", 0, "user: My annual pay is $95,000.")
    rent_old = _said("a-rent-old", 1, "user: My monthly rent is $1,200.")
    intro = _said("intro", 60 * 24, "user: About my money.")
    pay_new = _said("z-pay-new", 60 * 24 + 1, "user: Raised to $118,000.")
    rent_new = _said("a-rent-new", 60 * 24 + 2, "user: Went up to $1,400.")
    ranked = [Ranked(intro, Candidate("intro", 0.7, 1.0, 0.8), 0.5, 0.75),
              Ranked(pay_old, Candidate("z-pay-old", 0.7, 0.6, 0.66), 0.1, 0.6),
              Ranked(rent_old, Candidate("a-rent-old", 0.5, 0.2, 0.4), 0.1, 0.37)]
    memories = {m.id: m for m in (pay_old, rent_old, intro, pay_new, rent_new)}
    links = version_links([Edge("z-pay-new", "z-pay-old", EdgeType.UPDATES),
                           Edge("a-rent-new", "a-rent-old", EdgeType.UPDATES)], memories)
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=2), Policy(),
                    lambda m: True)
    first, second = out.ranked[:2]
    assert first.score == second.score
    assert [first.memory.id, second.memory.id] == ["z-pay-new", "a-rent-new"]


def test_a_question_about_the_past_gets_the_retired_version() -> None:
    e = make_engine()
    old = e.observe("user: I live in Berlin, close to the big park")
    later(e, days=40)
    new = e.observe("user: Actually I live in Lisbon now, close to the big park")
    assert e.get(old.id).status is Status.SUPERSEDED
    now = [h.id for h in e.recall("where do I live close to the big park", reinforce=False)]
    assert now[0] == new.id and old.id not in now
    past = [h.id for h in e.recall("where did I live before, close to the big park",
                                   reinforce=False)]
    assert old.id in past


def test_a_restated_value_is_linked_through_the_recent_turns_without_an_index_query() -> None:
    e = make_engine()
    old = e.observe("user: My annual salary is $95,000 before tax.")
    later(e, hours=3)
    asked: list[str] = []
    index = e._writes.ctx.vectors
    query = index.query

    def counting(*args: Any, **kw: Any) -> Any:
        asked.append("query")
        return query(*args, **kw)

    index.query = counting  # type: ignore[method-assign]
    new = e.observe("user: My annual salary is $104,000 before tax.")
    assert asked == []  # no change word: compared with the recent turns only
    why = e.get(new.id).metadata[UPDATE_KEY]
    assert why["of"] == old.id and why["verdict"] == "outdates" and why["same_type"] == "money"
    assert e.get(old.id).is_active  # a restated value never retires the older
    res = e.recall("what is my annual salary before tax", reinforce=False)
    assert res[0].id == new.id


def test_a_weak_change_word_retires_nothing_that_names_another_subject() -> None:
    s = signals("user: Actually, my dermatologist is Dr. Brennan.",
                "user: My dentist is Dr. Cohen.", 0.75)
    assert s.verdict is not Verdict.SUPERSEDES
    # a long chat turn is no statement a restated value replaces
    long_old = ("Tim: Nope, but it's my first time going to the convention this year with "
                "my cousins from Ohio. I'm super stoked for the Harry Potter stuff, can't wait!")
    assert verdict("Tim: Harry Potter is my favorite book.", long_old, 0.64) is Verdict.NONE


# ------------------------------------------------------------- two answers to one question


def alike(new: str, old: str, question: str) -> str | None:
    return answers_alike(read(new), read(old), read(question).words, Policy())


def test_two_answers_of_one_type_to_the_question_are_versions() -> None:
    # no change word, and the newer text never names "the board review" as its subject
    assert alike("user: See everyone at 4:30 PM on Monday for the board review.",
                 "user: The board review happens at 3 PM on Mondays.",
                 "When is the board review?") == "time"
    # plain-word values, when both texts hold a word of the question
    assert alike("user: My breakfast drink lately is kombucha.",
                 "user: My breakfast drink is matcha.",
                 "What is my breakfast drink?") == "words"
    # "no longer X; it's Y" names the old value to negate it: Y still replaces X
    assert alike("user: The ferry is no longer at 7:10 AM, it's 7:40 AM.",
                 "user: My ferry leaves at 7:10 AM.",
                 "When does my ferry leave?") == "time"
    # the newer text words its subject apart ("my flight to Boston"), but the older text
    # speaks of it too: one flight, though the question asks with the older words
    assert alike("user: FYI my flight to Boston is Wednesday at 2:05 PM.",
                 "user: I'm booked on the Boston flight departing Friday at 8:15 PM.",
                 "When is the Boston flight I'm booked on departing?") == "time"
    # the newer text leaves out the subject the question names and words the rest its
    # own way: not the older text with another subject, so a new value of it
    assert alike("user: Negotiated hard and landed $104,000.",
                 "user: My annual pay is $95,000.", "What is my annual pay?") == "money"
    assert alike("user: The company I work for is Initech.",
                 "user: I'm employed by Globex on a full-time contract.",
                 "Who employs me full-time?") == "name"


def test_look_alikes_are_no_two_answers_to_one_question() -> None:
    # the question names the older text's subject; the newer names a subject of its own
    assert alike("user: My lawyer is Ms. Quinn.", "user: My accountant is Dr. Harper.",
                 "Who is my accountant?") is None
    assert alike("user: By the way, my dermatologist is Dr. Okafor.",
                 "user: My dentist is Dr. Patel.", "Who is my dentist?") is None
    # other people
    assert alike("user: My aunt lives in Bergen.", "user: My uncle lives in Oslo.",
                 "Where does my uncle live?") is None
    # a shared word qualified apart
    assert alike("user: The winter rota starts at 6 AM.",
                 "user: The summer rota starts at 8 AM.",
                 "When does the summer rota start?") is None
    # the same named thing again, said of something else
    assert alike("user: Casablanca at the cinema was wonderful.",
                 "user: We watched Casablanca at the cinema.",
                 "What did we watch at the cinema?") is None
    # plain words need a word of the question in both texts
    assert alike("user: I repainted the fence.", "user: My breakfast drink is matcha.",
                 "What is my breakfast drink?") is None
    # a question states no value, and one speaker's words are no version of another's
    assert alike("user: Is the board review at 4 PM?",
                 "user: The board review happens at 3 PM.", "When is the board review?") is None
    assert alike("Ana: The board review is at 4 PM.", "Ben: The board review is at 3 PM.",
                 "When is the board review?") is None


def test_two_answers_to_the_question_are_ordered_newest_first_at_recall() -> None:
    old = _said("old", 0, "user: The board review happens at 3 PM on Mondays.")
    new = _said("new", 60 * 24 * 9, "user: See everyone at 4:30 PM on Monday for the board review.")
    other = _said("other", 60, "user: The garden centre opens at 9 AM on Mondays.")
    ranked = [Ranked(old, Candidate("old", 0.8, 1.0, 0.9), 0.1, 0.82),
              Ranked(other, Candidate("other", 0.3, 0.1, 0.2), 0.1, 0.19),
              Ranked(new, Candidate("new", 0.35, 0.2, 0.3), 0.4, 0.18)]
    # cosine of old and new: 0.6; of other and new: 0.2 (below answer_similarity)
    vectors = {"old": _vec(0.6, 0.8), "new": _vec(1, 0), "other": _vec(0.2, 0.98)}
    q = "When is the board review?"
    assert implicit_links(ranked, vectors, Policy(), q) == {"new": {"old"}}
    # without the question only the write path's judgement links, and it needs more
    assert implicit_links(ranked, vectors, Policy()) == {}
    # a newer hit below the answer window (the third hit, a window of 2) is not reached
    assert implicit_links(ranked, vectors, Policy(answer_window=2), q) == {}
    # a newer hit that barely speaks of the question is no answer to it
    far = [*ranked[:2], Ranked(new, Candidate("new", 0.05, 0.0, 0.05), 0.4, 0.06)]
    assert implicit_links(far, vectors, Policy(), q) == {}
    links = {"old": {"new"}, "new": {"old"}}
    memories = {m.id: m for m in (old, new, other)}
    out = arbitrate(ranked, {r.memory.id: r.candidate for r in ranked}, memories, links,
                    T0 + timedelta(days=10), Policy(), lambda m: True)
    assert [r.memory.id for r in out.ranked] == ["new", "old", "other"]


def test_a_typed_value_alone_in_an_unrelated_text_is_no_newer_answer() -> None:
    q = "Where am I based?"
    old = _said("old", 0, "user: These days the city I live in is Prague.")
    new = _said("new", 30, "user: I'm training for the Berlin marathon in September.")
    moved = _said("moved", 30, "user: We moved to Berlin for good.")

    def links(newer: Memory, cosine: float) -> dict[str, set[str]]:
        ranked = [Ranked(old, Candidate("old", 0.4, 1.0, 0.7), 0.1, 0.64),
                  Ranked(newer, Candidate(newer.id, 0.2, 0.0, 0.1), 0.5, 0.14)]
        sine = (1 - cosine**2) ** 0.5
        return implicit_links(ranked, {"old": _vec(1, 0), newer.id: _vec(cosine, sine)},
                              Policy(), q)

    # a city for a city, but no word of the older text or the question, no change word,
    # and the two texts far apart (cosine 0.3, below loose_similarity 0.35)
    assert links(new, 0.3) == {}
    # the same text nearer the older one (cosine 0.4) reads as an answer again
    assert links(new, 0.4) == {"new": {"old"}}
    # a change word is evidence enough at the lower cosine
    assert links(moved, 0.3) == {"moved": {"old"}}
    # the bar is inclusive: a cosine exactly at loose_similarity, as recall computes it
    v_old, v_new = _vec(1, 0), _vec(0.4, (1 - 0.4**2) ** 0.5)
    at = float(arbitration._unit(v_new) @ arbitration._unit(v_old))
    ranked = [Ranked(old, Candidate("old", 0.4, 1.0, 0.7), 0.1, 0.64),
              Ranked(new, Candidate("new", 0.2, 0.0, 0.1), 0.5, 0.14)]
    vectors = {"old": v_old, "new": v_new}
    assert implicit_links(ranked, vectors, Policy(loose_similarity=at), q) == {"new": {"old"}}


def test_a_turn_linked_to_nothing_takes_over_a_written_chain_only_when_near_it() -> None:
    q = "What do I drive to work every day?"
    old = _said("old", 0, "user: These days it's a Subaru Outback for my car.")
    cat = _said("cat", 30, "user: Our cat Miso sleeps on the radiator all day.")

    def links(cosine: float, dense: float, versioned: frozenset[str]) -> dict[str, set[str]]:
        ranked = [Ranked(old, Candidate("old", 0.27, 0.0, 0.27), 0.1, 0.3),
                  Ranked(cat, Candidate("cat", dense, 0.2, dense), 0.5, 0.25)]
        sine = (1 - cosine**2) ** 0.5
        return implicit_links(ranked, {"old": _vec(1, 0), "cat": _vec(cosine, sine)},
                              Policy(), q, versioned)

    # a name for a name, and "day" shared with the question: an answer to it when the
    # older hit has no version linked on write
    assert links(0.26, 0.19, frozenset()) == {"cat": {"old"}}
    # the older hit heads a chain the write path built: 0.26 + 0.19 = 0.45 falls short
    # of chain_answer_closeness (0.5), so the stray turn does not take the chain over
    assert links(0.26, 0.19, frozenset({"old"})) == {}
    # a turn near the chain and the question (0.30 + 0.21 = 0.51) still extends it
    assert links(0.30, 0.21, frozenset({"old"})) == {"cat": {"old"}}
    # and one the write path linked too is judged as before
    assert links(0.26, 0.19, frozenset({"old", "cat"})) == {"cat": {"old"}}


def test_links_found_at_recall_never_carry_one_written_group_into_another() -> None:
    # written on write: the pets (p2 newer than p1) and the cities (c2 newer than c1)
    def written() -> dict[str, set[str]]:
        return {"p1": {"p2"}, "p2": {"p1"}, "c1": {"c2"}, "c2": {"c1"}}

    def joined(implicit: dict[str, set[str]], vectors: dict[str, Any]) -> dict[str, set[str]]:
        links = written()
        arbitration.join_links(links, implicit, vectors)
        return links

    near_pets = {"h": _vec(1, 0), "p2": _vec(0.8, 0.6), "c2": _vec(0.3, 0.9539)}
    # a hit in no group, read as newer than both: it joins the group it is likest to
    # (cosine 0.8 to the pets, 0.3 to the cities), and the other link is left out
    links = joined({"h": {"p2", "c2"}}, near_pets)
    assert links["h"] == {"p2"} and links["c2"] == {"c1"}
    near_cities = {"h": _vec(1, 0), "p2": _vec(0.3, 0.9539), "c2": _vec(0.8, 0.6)}
    links = joined({"h": {"p2", "c2"}}, near_cities)
    assert links["h"] == {"c2"} and links["p2"] == {"p1"}
    # the same through two links in two entries: a city update read as newer than the
    # pets' newest hit carries nothing once that hit joined the pets
    vectors = {"h": _vec(1, 0), "p2": _vec(0.8, 0.6), "c3": _vec(0.5, 0.866)}
    links = {"p1": {"p2"}, "p2": {"p1"}, "c1": {"c3"}, "c3": {"c1"}}
    arbitration.join_links(links, {"h": {"p2"}, "c3": {"h"}}, vectors)
    assert links["h"] == {"p2"} and links["c3"] == {"c1"}
    # and the other way round: the city's newest version read as newer than a hit in no
    # group takes that hit into the cities first (cosine 0.9), so it joins no pet (0.19)
    vectors = {"c2": _vec(1, 0), "h": _vec(0.9, 0.4359), "p2": _vec(0.6, -0.8)}
    links = joined({"c2": {"h"}, "h": {"p2"}}, vectors)
    assert links["h"] == {"c2"} and links["p2"] == {"p1"}
    # two written groups are never joined directly
    assert joined({"c2": {"p2"}}, near_pets) == written()
    # a link inside one group, and links among hits in no group, are kept
    links = joined({"p2": {"p1"}, "x": {"y"}, "y": {"p1"}}, {})
    assert links["x"] == {"y"} and links["y"] == {"x", "p1"} and "y" in links["p1"]


def test_plain_word_answers_are_linked_when_a_change_word_or_two_preferences_say_so() -> None:
    def linked(old_text: str, new_text: str, q: str) -> bool:
        old = _said("old", 0, old_text)
        new = _said("new", 60 * 24 * 30, new_text)
        ranked = [Ranked(old, Candidate("old", 0.7, 1.0, 0.8), 0.1, 0.73),
                  Ranked(new, Candidate("new", 0.4, 0.3, 0.4), 0.5, 0.41)]
        vectors = {"old": _vec(1, 0), "new": _vec(0.6, 0.8)}  # cosine 0.6
        return implicit_links(ranked, vectors, Policy(), q) == {"new": {"old"}}

    # neither text states a typed value: the answer is in plain words
    assert linked("user: I follow a keto diet for health reasons.",
                  "user: These days it's paleo for my diet.", "What diet do I follow?")
    assert linked("user: My favourite meal is tacos.", "user: My favourite food is biryani.",
                  "What is my favourite meal?")
    # two plain events about one thing, with no change word: two things, both current
    assert not linked("user: I'm editing my cousin's wedding video this week.",
                      "user: The colour grading on the wedding video took all evening.",
                      "What video am I editing this week?")


def test_a_change_told_in_other_words_than_the_question_is_a_guess_that_yields() -> None:
    q = "What is my favourite meal?"  # the newer text shares no word with it
    old = _said("old", 0, "user: My favourite meal is pad thai.")
    new = _said("new", 60 * 24 * 30, "user: Sorry, actually the dish I like best is pho.")
    plain = _said("plain", 60 * 24 * 30, "user: The dish I like best is pho.")
    vectors = {"old": _vec(1, 0), "new": _vec(0.4, 0.9165), "plain": _vec(0.4, 0.9165)}

    def links(newer: Memory, dense: float = 0.35, versioned: frozenset[str] = frozenset(),
              policy: Policy | None = None) -> dict[str, set[str]]:
        ranked = [Ranked(old, Candidate("old", 0.6, 1.0, 0.7), 0.1, 0.64),
                  Ranked(newer, Candidate(newer.id, dense, 0.0, dense), 0.5, 0.37)]
        return implicit_links(ranked, vectors, policy or Policy(), q, versioned)

    # cosine 0.4 >= loose_similarity 0.35; both hits >= loose_relevance 0.3 to the question
    assert links(new) == {"new": {"old"}}
    assert links(new, dense=0.29) == {}  # the newer barely speaks of the question
    assert links(new, policy=Policy(loose_similarity=0.41)) == {}
    assert links(plain) == {}  # no change word: two statements, not a change
    # the older one already has a version linked on write: a guess never joins two groups
    assert links(new, versioned=frozenset({"old"})) == {}


def test_a_guess_never_reaches_a_hit_that_is_a_version_by_the_questions_words() -> None:
    q = "What is my favourite meal?"
    old = _said("old", 0, "user: My favourite meal is pad thai.")
    strict = _said("strict", 60 * 24 * 10, "user: My favourite meal is ramen now.")
    guess = _said("guess", 60 * 24 * 30, "user: Sorry, actually the dish I like best is pho.")
    ranked = [Ranked(old, Candidate("old", 0.6, 1.0, 0.7), 0.1, 0.64),
              Ranked(strict, Candidate("strict", 0.5, 0.8, 0.6), 0.3, 0.57),
              Ranked(guess, Candidate("guess", 0.35, 0.0, 0.35), 0.5, 0.37)]
    vectors = {"old": _vec(1, 0), "strict": _vec(0.9, 0.4359), "guess": _vec(0.4, 0.9165)}
    out = implicit_links(ranked, vectors, Policy(), q)
    assert out == {"strict": {"old"}}  # the guess on "old" (and on "strict") yields


def test_a_verb_and_its_agent_noun_are_one_subject() -> None:
    # Porter stems "employed" to "emploi" but "employer" to "employ"
    assert alike("user: My employer isn't Pied Piper anymore, it's Cyberdyne.",
                 "user: I'm employed by Hooli on a full-time contract.",
                 "Who employs me full-time?") == "name"


def test_an_intro_naming_a_value_a_version_holds_ranks_below_the_newest() -> None:
    old = _said("old", 0, "user: Choir practice is at 6 PM on Thursdays.")
    intro = _said("intro", 60 * 24 * 5, "user: About Thursday choir.")
    new = _said("new", 60 * 24 * 5 + 2, "user: Moved to 7:15 PM.")
    ranked = [Ranked(intro, Candidate("intro", 0.7, 1.0, 0.8), 0.3, 0.75),
              Ranked(old, Candidate("old", 0.6, 0.7, 0.65), 0.1, 0.60),
              Ranked(new, Candidate("new", 0.2, 0.0, 0.1), 0.3, 0.12)]
    assert _arbitrated(ranked, days=6) == ["new", "intro", "old"]
    # an intro that names a value of its own ("Friday") states something: left where it is
    friday = _said("intro", 60 * 24 * 5, "user: About Friday choir.")
    ranked[0] = Ranked(friday, ranked[0].candidate, 0.3, 0.75)
    assert _arbitrated(ranked, days=6) == ["intro", "new", "old"]


def test_an_elliptical_plain_word_update_needs_a_change_word() -> None:
    old = "user: My afternoon tea is jasmine."
    # the intro before it lends the subject (context 0.6); "now" says the value changed
    assert verdict("user: It's oolong now.", old, similarity=0.2, context=0.6) is (
        Verdict.OUTDATES
    )
    # a plain word with no change word may be anything said after the intro
    assert verdict("user: Oolong, probably.", old, similarity=0.2, context=0.6) is (
        Verdict.NONE
    )


def test_a_value_named_to_be_negated_does_not_hide_the_new_one() -> None:
    old = "user: My pottery class is at 6 PM."
    new = "user: My pottery class is no longer at 6 PM; it's at 7:30 PM."
    s = judge(read(new), read(old), 0.85, 0.0, Policy())
    assert s.same_type == "time" and s.verdict is Verdict.SUPERSEDES
    # without a word saying the value was replaced, a text that repeats the old value
    # beside another adds one; it replaces nothing of that type
    assert judge(read("user: My pottery class is at 6 PM and 7:30 PM."), read(old), 0.85,
                 0.0, Policy()).same_type is None


def _hit(m: Memory, score: float) -> Ranked:
    return Ranked(m, Candidate(m.id, score, 0.0, score), 0.1, score)


def test_a_reply_that_states_nothing_ranks_below_the_statement_it_answers() -> None:
    old = _said("old", 0, "user: At home we have a hamster named Peanut.")
    new = _said("new", 60 * 24, "user: We adopted a corgi named Biscuit.")
    ack = _said("ack", 60 * 24 + 1, "assistant: Thanks, I'll remember your pet. Anything else?")
    echo = _said("echo", 2, "assistant: Noted: Peanut.")  # names only what was said
    ranked = [_hit(ack, 0.73), _hit(echo, 0.70), _hit(old, 0.67), _hit(new, 0.24)]
    out = replies_below(ranked, 10, Policy())
    assert [r.memory.id for r in out.ranked] == ["old", "echo", "new", "ack"]
    # each placed just below what it replies to, and the explanation says so
    assert out.ranked[1].score == pytest.approx(0.67) and out.ranked[1].score < 0.67
    assert out.ranked[3].score == pytest.approx(0.24) and out.ranked[3].score < 0.24
    assert out.notes["ack"].startswith("a reply to new ")
    assert set(out.notes) == {"ack", "echo"}
    # only the first `window` hits are looked at
    first = replies_below(ranked, 1, Policy())
    assert [r.memory.id for r in first.ranked] == ["echo", "old", "new", "ack"]


def test_a_reply_with_something_of_its_own_keeps_its_place() -> None:
    ask = _said("ask", 0, "user: What should I cook tonight?")
    answer = _said("answer", 1, "assistant: Try a mushroom risotto.")  # answers a question
    said = _said("said", 30, "user: My vet is on Elm Street.")
    named = _said("named", 31, "assistant: Noted, and Dr. Park there is great.")  # a new name
    late = _said("late", 60, "assistant: Got it.")  # 30 minutes after: replies to nothing
    ranked = [_hit(answer, 0.8), _hit(named, 0.7), _hit(late, 0.65), _hit(ask, 0.6),
              _hit(said, 0.5)]  # fmt: skip
    out = replies_below(ranked, 10, Policy())
    assert out.ranked == ranked and out.notes == {}
    # with a wider window "Got it." replies to "My vet is on Elm Street." and goes below it
    wide = replies_below(ranked, 10, Policy(context_seconds=3600))
    assert [r.memory.id for r in wide.ranked] == ["answer", "named", "ask", "said", "late"]


def test_a_value_the_question_names_is_not_a_replys_own() -> None:
    said = _said("said", 0, "user: Rebooked, boarding pass says Wednesday at 2:05 PM.")
    ack = _said("ack", 2, "assistant: Okay, the Boston flight is noted. Want a reminder?")
    ranked = [_hit(ack, 0.77), _hit(said, 0.19)]
    # "Boston" is the reply's own beside the statement alone: it keeps its place
    assert replies_below(ranked, 10, Policy()).ranked == ranked
    assert replies_below(ranked, 10, Policy(), "What time is my flight?").ranked == ranked
    # the question names Boston itself, so the reply tells it nothing new
    out = replies_below(ranked, 10, Policy(), "What time is my trip to Boston?")
    assert [r.memory.id for r in out.ranked] == ["said", "ack"]
    # a value beyond the question's is still the reply's own
    told = _said("ack", 2, "assistant: Okay, the Boston flight is at 9:10 PM now.")
    ranked = [_hit(told, 0.77), _hit(said, 0.19)]
    assert replies_below(ranked, 10, Policy(), "What time is my trip to Boston?").ranked == ranked


def test_a_reply_longer_than_a_statement_keeps_its_place() -> None:
    said = _said("said", 0, "user: My vet is on Elm Street.")
    words = " ".join(["noted"] * 26)  # 26 words: longer than max_words (25)
    long = _said("long", 1, f"assistant: {words}.")
    ranked = [_hit(long, 0.7), _hit(said, 0.5)]
    assert replies_below(ranked, 10, Policy()).ranked == ranked
    # at 25 words it is a reply that states nothing, placed below the statement
    short = _said("long", 1, "assistant: " + " ".join(["noted"] * 25) + ".")
    out = replies_below([_hit(short, 0.7), _hit(said, 0.5)], 10, Policy())
    assert [r.memory.id for r in out.ranked] == ["said", "long"]


def _arbitrated(
    ranked: list[Ranked], days: float, extra: Mapping[str, set[str]] | None = None
) -> list[str]:
    """The order arbitration gives `ranked` at T0 + `days`, "new" written on write as
    the newer version of "old" (and any `extra` links), every memory admitted."""
    memories = {r.memory.id: r.memory for r in ranked}
    links = version_links([Edge("new", "old", EdgeType.UPDATES)], memories)
    for k, v in (extra or {}).items():
        links.setdefault(k, set()).update(v)
    cands = {r.memory.id: r.candidate for r in ranked}
    out = arbitrate(ranked, cands, memories, links, T0 + timedelta(days=days), Policy(),
                    lambda m: True)
    return [r.memory.id for r in out.ranked]


def _pay_versions(intro: Memory) -> list[str]:
    """The order arbitration gives an intro-like user turn beside the pay's two versions
    (the newer told twenty days later, the older ranked first on the question's words)."""
    old = _said("old", 0, "user: My annual pay is $95,000.")
    new = _said("new", 60 * 24 * 20 + 2, "user: Raised to $118,000.")
    return _arbitrated([Ranked(intro, Candidate("intro", 0.7, 1.0, 0.73), 0.3, 0.70),
                        Ranked(old, Candidate("old", 0.6, 0.8, 0.65), 0.1, 0.60),
                        Ranked(new, Candidate("new", 0.3, 0.0, 0.3), 0.3, 0.30)], days=21)


def test_only_a_short_intro_just_before_a_newer_version_ranks_below_it() -> None:
    just_before_new = 60 * 24 * 20
    # "About my pay." two minutes before the newer version: an intro, placed below it
    assert _pay_versions(_said("intro", just_before_new, "user: About my pay.")) == [
        "new", "intro", "old"]
    # the same words said just before the older version introduce no newer one
    assert _pay_versions(_said("intro", -2, "user: About my pay.")) == ["intro", "new", "old"]
    # a change word, or more words than echo_words (8), tell something of their own
    assert _pay_versions(_said("intro", just_before_new, "user: Actually, about my pay.")) == [
        "intro", "new", "old"]
    long = "user: About my pay and the bonus we talked about at lunch."
    assert _pay_versions(_said("intro", just_before_new, long)) == ["intro", "new", "old"]


def test_a_link_to_a_memory_not_read_is_left_out_of_the_versions() -> None:
    old = _said("old", 0, "user: My annual pay is $95,000.")
    new = _said("new", 60 * 24 * 20, "user: Raised to $118,000.")
    ranked = [Ranked(old, Candidate("old", 0.6, 0.8, 0.65), 0.1, 0.60),
              Ranked(new, Candidate("new", 0.3, 0.0, 0.3), 0.3, 0.30)]
    # "gone": a version forgotten since its link was read
    assert _arbitrated(ranked, days=21, extra={"new": {"gone"}, "gone": {"new"}}) == [
        "new", "old"]


def test_a_preference_told_after_a_plain_event_is_no_newer_answer() -> None:
    # the older text states no value and the newer names no change: only two texts that
    # both state a preference are two answers in plain words
    q = "What video am I editing this week?"
    old = _said("old", 0, "user: I'm editing my cousin's wedding video this week.")
    new = _said("new", 60 * 24, "user: My favourite video this week is the wedding one.")
    ranked = [Ranked(old, Candidate("old", 0.7, 1.0, 0.8), 0.1, 0.73),
              Ranked(new, Candidate("new", 0.4, 0.3, 0.4), 0.5, 0.41)]
    vectors = {"old": _vec(1, 0), "new": _vec(0.6, 0.8)}  # cosine 0.6
    assert implicit_links(ranked, vectors, Policy(), q) == {}


def test_the_explanation_quotes_a_long_older_version_cut_to_sixty_characters() -> None:
    text = "user: My annual pay is $95,000, before the bonus and the shares, as of March."
    old = _said("old", 0, text)
    new = _said("new", 60 * 24 * 20, "user: Raised to $118,000.")
    ranked = [Ranked(old, Candidate("old", 0.6, 0.8, 0.65), 0.1, 0.60),
              Ranked(new, Candidate("new", 0.3, 0.0, 0.3), 0.3, 0.30)]
    memories = {m.id: m for m in (old, new)}
    links = version_links([Edge("new", "old", EdgeType.UPDATES)], memories)
    out = arbitrate(ranked, {r.memory.id: r.candidate for r in ranked}, memories, links,
                    T0 + timedelta(days=21), Policy(), lambda m: True)
    quoted = text[:59] + "…"  # 59 characters and the ellipsis: 60 in all
    assert out.notes["new"] == f'newer version of old ("{quoted}"), observed 2025-03-21'


def test_a_change_told_under_a_label_is_a_version_whatever_the_label() -> None:
    # "Heads up:" and "Quick update:" label what follows; neither is a speaker, so the
    # second flight time is a newer version of the first, not another person's words
    e = make_engine()
    old = e.observe("Heads up: my flight to Boston leaves Friday at 7:45 AM.")
    later(e, days=3)
    new = e.observe("Quick update: my flight to Boston was moved to Sunday at 9:20 PM.")
    why = e.get(new.id).metadata.get(UPDATE_KEY)
    assert why is not None and why["of"] == old.id




def test_an_intro_that_is_the_best_hit_gives_its_place_to_the_update_it_announced() -> None:
    # "Raised to $81,000." shares no word with the question, nor does the older value,
    # which ranks below turns of small talk; the intro the update borrowed its subject
    # from is the best match, and the write path recorded which intro that was
    e = make_engine()
    old = e.observe("user: The hospital gives me $72,000 a year.")
    for topic in ("a good book", "the best tea", "my favourite film", "a fun hobby",
                  "my dog's name", "the weather", "my next trip", "a quick dinner"):
        e.observe(f"user: I talked about {topic} with my friend.")
    later(e, days=30)
    intro = e.observe("user: About my pay at the hospital.")
    e.observe("assistant: Sure, what changed?")
    e.observe("user: How long should I boil eggs?")
    new = e.observe("user: Raised to $81,000.")
    assert e.get(new.id).metadata[UPDATE_KEY]["intro"] == intro.id
    assert e.get(new.id).metadata[UPDATE_KEY]["of"] == old.id
    later(e, days=1)
    hits = e.recall("what is my pay", k=3, reinforce=False)
    assert [h.id for h in hits][:2] == [new.id, intro.id]
    # it takes the intro's relevance, lent as context
    assert hits[0].explanation.relevance == pytest.approx(hits[1].explanation.relevance)
    assert hits[0].explanation.context > 0.5
    # a question about the past is answered by relevance alone
    past = e.recall("what was my pay before", k=3, reinforce=False)
    assert new.id not in [h.id for h in past][:1]
    # an update that names its own subject borrowed from no intro
    own = e.observe("user: Actually the hospital gives me $90,000 a year now.")
    assert "intro" not in e.get(own.id).metadata[UPDATE_KEY]
