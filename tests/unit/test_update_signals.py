"""The signals of free-text update detection one rule at a time (core/updates.py): which
values a text states, whose fact it is, and which two values can be one value changed.
Each case pins a rule a user relies on: a look-alike fact is never retired, and a
change of one value is found whatever else the texts say."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core import Policy, updates
from reverie.core.updates import Verdict, answers_alike, introduces, judge, may_update, read


def verdict(
    new: str, old: str, similarity: float, context: float = 0.0, policy: Policy | None = None
) -> Verdict:
    return judge(read(new), read(old), similarity, context, policy or Policy()).verdict


def test_a_name_called_out_with_an_exclamation_is_who_is_spoken_to() -> None:
    # "..., Mel!" addresses Mel; "..., Mel." names Mel as a value
    assert "name" not in read("That was great, Mel!").values
    assert "name" not in read("That was great, Priya!").values
    assert read("That was great, Mel.").values["name"] == {"mel"}


def test_a_name_that_starts_a_sentence_keeps_all_its_words_but_the_first() -> None:
    # the first word of a sentence is capitalised anyway: "Grandma" is not part of the name
    assert read("user: Grandma Rosa moved to Porto.").values["name"] == {"rosa", "porto"}
    assert read("user: Visiting New York City was fun.").values["name"] == {"new york city"}
    # the words before the first value are the subject: here the value is "Anna Berg" at
    # the start of the second sentence, so the subject is the first sentence's words
    r = read("user: My old landlord sold the flat. Now Anna Berg owns it.")
    assert r.values["name"] == {"anna berg"}
    assert r.subject == {"landlord", "sold", "flat"}
    # and the name's own words are never part of it, wherever the name ends
    assert read("user: The old shop closed. Now Ana runs it.").subject == {"shop", "close"}
    assert read("user: The old bakery closed last year. Now Tom owns it.").subject == {
        "bakery", "close", "last", "year"}


def test_a_word_of_a_name_is_a_content_word_where_the_name_is_not() -> None:
    # "Nothing Phone" is the value; the phone before it is what the text speaks of
    r = read("user: The phone I use is a Nothing Phone.")
    assert r.values["name"] == {"nothing phone"}
    assert "phone" in r.words and "phone" in r.subject
    # so it answers alike with an older phone the question asks about, though the question
    # names the phone and the newer text names it only in other words than a name
    old = read("user: My phone is an iPhone 13 mini with a cracked screen.")
    asked = read("What phone with the cracked screen do I have?").words
    assert answers_alike(r, old, asked, Policy()) == "name"
    # where only the name holds the word, it is no content word
    assert "phone" not in read("user: I bought a Nothing Phone.").words


def test_the_speaker_is_read_whatever_the_length_of_what_they_said() -> None:
    assert read("Caroline: Sure.").speaker == "caroline"
    assert read("Caroline: I moved to Porto last spring with the kids.").speaker == "caroline"
    assert read("No speaker here.").speaker is None


def test_an_intro_states_no_value_of_any_type() -> None:
    p = Policy()
    assert introduces(read("user: About my pay."), p)
    for fact in (
        "user: About my pay of $95,000.",
        "user: About the launch on May 3.",
        "user: About the blue car.",
        "user: About the 7:30 train.",
    ):
        assert not introduces(read(fact), p), fact


def test_someone_elses_new_value_never_retires_the_speakers_own() -> None:
    # "my wife" is the subject of the new text, "I" of the old: two people's facts
    s = judge(
        read("user: My wife switched to a Mazda."),
        read("user: I drive a Tesla."),
        0.8,
        0.0,
        Policy(),
    )
    assert s.verdict is Verdict.NONE and s.contrast == "self/wife"
    # the same change said of the speaker is a new version
    s = judge(
        read("user: I switched to a Mazda."), read("user: I drive a Tesla."), 0.8, 0.0, Policy()
    )
    assert s.verdict is Verdict.SUPERSEDES and s.same_type == "name"


def test_a_participants_name_is_dropped_but_the_other_values_stay() -> None:
    # "Jon" is one of the people talking, not a value; the times still changed
    s = judge(
        read("user: The flight with Jon is now at 6 PM."),
        read("user: The flight with Jon is at 4 PM."),
        0.8,
        0.0,
        Policy(),
        frozenset({"jon"}),
    )
    assert s.same_type == "time" and s.verdict is Verdict.SUPERSEDES


def test_amounts_more_than_max_value_ratio_apart_are_two_quantities() -> None:
    # max_value_ratio is 10: $1,000 -> $10,000 is one amount changed (ratio exactly 10)
    p = Policy()
    assert p.updates.max_value_ratio == 10.0
    s = judge(read("My rent went up to $10,000."), read("My rent is $1,000."), 0.8, 0.0, p)
    assert s.same_type == "money" and s.verdict is Verdict.SUPERSEDES
    # $1,000 -> $10,500 (ratio 10.5) is not: no typed value replaced, so nothing is
    # retired; the change word and the texts' likeness still mark the old one outdated
    s = judge(read("My rent went up to $10,500."), read("My rent is $1,000."), 0.8, 0.0, p)
    assert s.same_type is None and s.verdict is Verdict.OUTDATES


def test_a_number_after_a_verb_does_not_hide_a_numbered_one_of_a_kind_after_it() -> None:
    # "spent 3" is a value; "project 22" and "project 7" are two projects
    assert (
        verdict("I spent 3 hours on project 22.", "I spent 2 hours on project 7.", 0.95)
        is Verdict.NONE
    )


def test_a_day_of_a_month_is_a_date_not_a_numbered_one_of_a_kind() -> None:
    # "May 20" after "May 3" is the same deadline moved, where "project 22" after
    # "project 7" is another project: the month is no label
    assert read("The report deadline is May 20.").labels == {}
    assert read("I'm on project 7 this week.").labels == {"project": {"7"}}
    s = judge(read("The report deadline moved to May 20."),
              read("The report deadline is May 3."), 0.8, 0.0, Policy())
    assert s.same_type == "date" and s.contrast is None and s.verdict is Verdict.SUPERSEDES


def test_a_qualifier_said_in_other_words_is_the_same_fact_but_two_periods_are_two() -> None:
    # "my yearly pay" is "my annual pay": a new amount of it is its newer version ...
    s = judge(read("My yearly pay is $104,000."), read("My annual pay is $118,000."),
              0.8, 0.0, Policy())
    assert s.contrast is None and s.same_type == "money"
    # ... while a monthly and an annual budget are two budgets, never one changed
    s = judge(read("My monthly budget is $5,000."), read("My annual budget is $6,000."),
              0.9, 0.0, Policy())
    assert s.contrast == "annual/monthly budget" and s.verdict is Verdict.NONE


def test_an_intro_turns_likeness_counts_from_min_similarity_inclusive() -> None:
    # an elliptical update after an intro turn whose cosine to the old text is exactly
    # min_similarity: score 0.5 + same_type_bonus 0.15 = 0.65 >= outdate_score 0.6
    # (no change word in the new text, so the intro turn is the only evidence)
    p = Policy(min_similarity=0.5)
    assert (
        verdict("user: $65,000 a year.", "user: My annual pay is $95,000.", 0.2, 0.5, p)
        is Verdict.OUTDATES
    )
    assert (
        verdict("user: $65,000 a year.", "user: My annual pay is $95,000.", 0.2, 0.49, p)
        is Verdict.NONE
    )


def test_an_elliptical_update_is_not_held_to_the_restated_value_rules() -> None:
    # "The pay is $65,000." names "pay", the old text "annual salary": as a restated value
    # the subjects would differ, but an intro turn just before lent the subject
    s = judge(
        read("user: The pay is $65,000."),
        read("user: My annual salary is $95,000."),
        0.55,
        0.7,
        Policy(),
    )
    assert s.verdict is Verdict.OUTDATES and s.context == 0.7


def test_a_preference_with_a_new_value_is_a_version_below_the_restated_similarity() -> None:
    # similarity 0.45 is under typed_similarity (0.5), so only the preference on both
    # sides makes it a version: 0.45 + same_type 0.15 + 2 shared words * 0.03 + 0.05 for
    # one thing of the user's named on both sides ("my favourite colour") = 0.71
    s = judge(
        read("White is my favourite colour."),
        read("My favourite colour is purple."),
        0.45,
        0.0,
        Policy(),
    )
    assert s.verdict is Verdict.OUTDATES and abs(s.score - 0.71) < 1e-9
    # without a preference on both sides, the same likeness is no link
    assert verdict("White is the colour.", "My favourite colour is purple.", 0.45) is (Verdict.NONE)


def test_a_preference_restated_with_a_plain_word_value_is_a_version() -> None:
    # no typed value and no change word: both state one preference ("favourite food")
    # in the same words: 0.55 + 2 shared words * 0.03 + possessed_bonus 0.05 (both name
    # "my favourite food") = 0.66, and 0.61 without the bonus, still above outdate_score 0.6
    s = judge(
        read("My favourite food is falafel."),
        read("From now on, my favourite food is dumplings."),
        0.55,
        0.0,
        Policy(),
    )
    assert s.verdict is Verdict.OUTDATES and abs(s.score - 0.66) < 1e-9
    s = judge(read("My favourite food is falafel."),
              read("From now on, my favourite food is dumplings."), 0.55, 0.0,
              Policy().replace(possessed_bonus=0.0))
    assert s.verdict is Verdict.OUTDATES and abs(s.score - 0.61) < 1e-9
    # a preference of another thing shares one word only: two facts
    assert verdict("My favourite drink is chai.", "My favourite food is dumplings.", 0.55) is (
        Verdict.NONE
    )
    # below typed_similarity (0.5) the two are not read as one preference
    assert verdict("My favourite food is falafel.", "My favourite food is dumplings.", 0.49) is (
        Verdict.NONE
    )
    # the same words without a preference are two statements, not a new value of one
    assert verdict("My lunch today is falafel.", "My lunch today is dumplings.", 0.55) is (
        Verdict.NONE
    )
    # told as past events, they are two events
    assert verdict("My favourite food was falafel.", "My favourite food is dumplings.", 0.55) is (
        Verdict.NONE
    )

def test_a_score_exactly_at_outdate_score_outdates() -> None:
    # no shared content word, no change word: 0.45 + same_type_bonus 0.15 = 0.6
    s = judge(read("Currently blue."), read("Red, usually."), 0.45, 0.0, Policy())
    assert s.score == 0.45 + 0.15 == Policy().updates.outdate_score
    assert s.verdict is Verdict.OUTDATES


def test_a_change_told_in_other_words_outdates_from_cue_only_score() -> None:
    # "from now on" is a change word that says a value was replaced: 0.1 + 0.05; the two
    # texts share no content word ("way", "work", "ferry" / "commut", "tram")
    new, old = "From now on my way to work will be by ferry.", "My commute changed to by tram."
    s = judge(read(new), read(old), 0.36, 0.0, Policy())
    assert s.same_type is None and s.shared == () and s.contrast is None
    assert s.score == 0.36 + 0.1 + 0.05 > Policy().updates.cue_only_score  # 0.51 > 0.5
    assert s.verdict is Verdict.OUTDATES  # a weak link: nothing is retired
    assert verdict(new, old, 0.34) is Verdict.NONE  # 0.49
    # on a higher bar the same pair is no version
    assert verdict(new, old, 0.36, policy=Policy(cue_only_score=0.65)) is Verdict.NONE


def test_a_typed_value_beside_a_text_with_none_and_no_shared_word_replaces_nothing() -> None:
    s = judge(read("I switched to Dr. Okafor."), read("I burnt the chili again, sigh."), 0.6,
              0.0, Policy())
    assert s.contrast == "no value replaced" and s.verdict is Verdict.NONE
    # with a word in common the older text may be the thing the value is about
    assert verdict("My diet is no longer Mediterranean, it's paleo now.",
                   "I follow a keto diet.", 0.5) is Verdict.OUTDATES


def test_a_request_to_the_assistant_asks_and_states_no_value() -> None:
    for text in ("user: Tell me a fun fact about volcanoes.",
                 "user: Please recommend a thriller for tonight.",
                 "user: Can you explain how tides work.",
                 "user: I need a gift idea for someone who loves chess.",
                 "user: I'd like some tips for a picnic in the park."):
        assert read(text).question, text
    # a need, a liking or a telling that asks for nothing is a statement
    for text in ("user: I need a new laptop for work.",
                 "user: I'd like a new bike for my birthday.",
                 "user: My sister told me about the move.", "user: Tell-tale signs, all of them."):
        assert not read(text).question, text
    # so a change turn near a request is no newer version of it, however near the
    # request is to the turns just before the change (which lend it their subject)
    new, old = "user: I moved to going by train.", "user: Tell me a fun fact about volcanoes."
    s = judge(read(new), read(old), 0.19, 0.40, Policy())
    assert not s.new_value and s.verdict is Verdict.NONE
    # the same change beside a statement is one (elliptical: the turns before lend 0.40)
    assert verdict(new, "user: Getting to work means going by ferry.", 0.19, 0.40) is (
        Verdict.OUTDATES)


def test_a_short_reply_ending_in_now_says_its_value_changed() -> None:
    # "Going by tram now." after "About my commute.": a change word, so an elliptical
    # update with a plain-word value; "for now" means for the time being
    assert read("user: Going by tram now.").cue
    assert read("user: Paleo now!").cue
    assert not read("user: Bye for now!").cue
    assert not read("user: I'm heading to the station right now.").cue  # a longer sentence
    new, old = "user: Going by tram now.", "user: My new route to work is on foot."
    # the intro before it lends 0.45: 0.45 + 0.1 (the change word) = 0.55 >= 0.5
    s = judge(read(new), read(old), 0.3, 0.45, Policy())
    assert s.context == 0.45 and s.score == 0.55 and s.verdict is Verdict.OUTDATES
    # on its own cosine alone (0.3 + 0.1 = 0.4) it is no version
    assert verdict(new, old, 0.3) is Verdict.NONE


def test_a_shared_word_qualified_apart_is_found_after_words_the_other_text_lacks() -> None:
    # "office party" names nothing in the old text; "travel budget" / "marketing budget"
    # are two budgets all the same
    s = judge(
        read("The office party travel budget is $900."),
        read("The marketing budget is $2,000."),
        0.8,
        0.0,
        Policy(),
    )
    assert s.verdict is Verdict.NONE and s.contrast == "marketing/travel budget"


def test_short_qualifiers_still_tell_two_things_apart() -> None:
    # a three-letter qualifier ("car insurance") and a three-letter head ("work car")
    s = judge(
        read("My car insurance is $900."), read("My home insurance is $1,200."), 0.8, 0.0, Policy()
    )
    assert s.verdict is Verdict.NONE and s.contrast == "home/car insurance"
    s = judge(
        read("My work car is a Tesla."), read("My family car is a Volvo."), 0.8, 0.0, Policy()
    )
    assert s.verdict is Verdict.NONE and s.contrast == "family/work car"


def test_an_elliptical_update_has_at_most_elliptical_words_content_words() -> None:
    # elliptical_words is 3: "plus bonus and shares" (3) borrows the intro's likeness,
    # score 0.7 + same_type 0.15 + cue 0.1 = 0.95; one word more and it names its own
    # subject, judged at its own similarity 0.2 (below min_similarity 0.3): no link
    old = "user: My annual pay is $95,000."
    s = judge(
        read("user: Raised to $65,000, plus bonus and shares."), read(old), 0.2, 0.7, Policy()
    )
    assert s.context == 0.7 and s.verdict is Verdict.OUTDATES
    assert abs(s.score - 0.95) < 1e-9
    s = judge(
        read("user: Raised to $65,000, plus bonus, shares and car."), read(old), 0.2, 0.7, Policy()
    )
    assert s.context == 0.0 and s.verdict is Verdict.NONE


def test_an_amount_that_drops_to_zero_is_one_amount_changed() -> None:
    # $0 has no ratio to $250, and is still the balance's new value
    s = judge(read("My balance is now $0."), read("My balance is $250."), 0.8, 0.0, Policy())
    assert s.same_type == "money" and s.verdict is Verdict.SUPERSEDES


def test_a_participants_full_name_is_theirs_too() -> None:
    # Jon is talking; "Jon Berg" is Jon, not a named thing both texts are about
    s = judge(
        read("user: Tomorrow Jon Berg moved the yoga class to the big hall."),
        read("user: Every week Jon Berg teaches the yoga class in the small hall."),
        0.8,
        0.0,
        Policy(),
        frozenset({"jon"}),
    )
    assert s.contrast is None and s.verdict is Verdict.OUTDATES


def test_what_may_update_anything_on_its_own_words() -> None:
    p = Policy()
    assert may_update(read("user: We moved to Oslo."), p)  # a change word
    assert may_update(read("user: My favourite tea is oolong."), p)  # a preference
    assert may_update(read("user: The rent is $1,400."), p)  # a typed value
    assert not may_update(read("user: The weather is nice."), p)
    # a question asks; a long chat turn (more than max_words, 25) mixes several things
    assert not may_update(read("user: Did you move to Oslo?"), p)
    long_turn = "user: We moved to Oslo " + "and then we walked around a lot " * 3 + "today."
    assert len(read(long_turn).sequence) > p.updates.max_words
    assert not may_update(read(long_turn), p)


def test_a_long_old_turn_lends_no_subject_to_an_elliptical_update() -> None:
    # the old text is a 27-word chat turn (max_words 25): the intro's likeness is not
    # used, and at its own similarity 0.2 the update links to nothing
    old = (
        "user: My annual pay is $95,000, and honestly the commute, the meetings, the open "
        "office and the endless email make every single week feel longer than it really is."
    )
    assert len(read(old).sequence) == 27
    s = judge(read("user: Raised to $65,000."), read(old), 0.2, 0.7, Policy())
    assert s.context == 0.0 and s.verdict is Verdict.NONE


def test_a_three_letter_head_is_a_word_like_any_other() -> None:
    # "bed" ends in -ed but is no participle: "sofa bed" and "bunk bed" are two beds
    s = judge(read("My sofa bed costs $300."), read("My bunk bed costs $150."), 0.8, 0.0, Policy())
    assert s.verdict is Verdict.NONE and s.contrast == "bunk/sofa bed"


def test_a_single_letter_is_no_content_word() -> None:
    assert read("user: Plan b costs $50.").words == {"plan", "cost"}
    # so "plan b" and "option b" share no subject word, and stay two things
    s = judge(
        read("user: Plan b costs $50 now."), read("user: Option b costs $40."), 0.6, 0.0, Policy()
    )
    assert s.verdict is Verdict.NONE and s.contrast == "option/plan"


def test_an_object_pronoun_or_until_does_not_make_an_elliptical_update_name_a_subject() -> None:
    # "They gave us until September 9." after "About the quarterly report.": its subject
    # is the intro's, so the intro's likeness (0.7) carries it over its own (0.3)
    new = read("user: They gave us until September 9.")
    assert new.subject == {"gave"}
    s = judge(new, read("user: The due date for the quarterly report is November 12."),
              0.3, 0.7, Policy())
    assert s.context == 0.7 and s.same_type == "date" and s.verdict is Verdict.OUTDATES


def test_an_update_naming_its_own_thing_borrows_no_subject_for_another_thing() -> None:
    # "FYI my car is a Nissan Leaf." said a few turns after an unrelated short turn
    # whose likeness to "My new GP is Dr. Alvarez." is 0.36: the car is not the GP
    new = read("user: FYI my car is a Nissan Leaf.")
    assert new.owned and new.subject == {"car"}
    s = judge(new, read("user: My new GP is Dr. Alvarez."), 0.15, 0.36, Policy())
    assert s.context == 0.0 and s.verdict is Verdict.NONE
    # the same update after an intro about the car takes the intro's likeness to an
    # older text that speaks of the car
    s = judge(new, read("user: My car is a Honda Civic, bought used."), 0.2, 0.7, Policy())
    assert s.context == 0.7 and s.verdict is Verdict.OUTDATES
    # "my new one", "my pick": a possessive before no thing of its own names nothing
    assert not read("user: My new one is a Kia Niro.").owned
    assert not read("user: My pick is Lisbon.").owned
    s = judge(read("user: My pick is Lisbon."), read("user: Our apartment is in Porto."),
              0.2, 0.7, Policy())
    assert s.context == 0.7 and s.verdict is Verdict.OUTDATES


_CASE_WORDS = [
    "Hey", "MOVED", "to", "Berlin", "Now", "it's", "$5K", "5k", "10:30", "PM", "May", "20th",
    "TUESDAYS", "v2.3", "Red", "no", "LONGER", "Actually", ",", ".", "!", "project", "7",
    "Favourite", "WAS", "Thanks,", "noon", "Midnight", "These", "days", "my", "NEW", "is",
    "Dr.", "eBay", "USD", "1/2/2024", "Mornings", "FYI", "Instead", "of", "Went", "up",
    "GREEN", "navy", "redwood", "TELL", "me", "I", "NEED", "a", "Tips", "can", "YOU",
    "for", "NOW", "Going", "BY", "tram",
    # the words the patterns' hints look for, and look-alikes that hold them
    "isn't", "ANYMORE", "any", "more", "CUT", "cute", "with", "down", "just", "So", "know",
    "snow", "Scratch", "that", "wrong", "meant", "Sorry,", "the", "Record", "heads",
    "forward", "as", "today", "Traded", "it", "in", "news", "Dollars", "EUROS", "am", "pm",
    "Weekend", "Friday", "NIGHT", "lunchtimes", "3.14", "from", "on", "Make", "usual",
    "preferred", "Currently", "were", "had", "did", "#12", "room",
]


@given(st.lists(st.sampled_from(_CASE_WORDS), min_size=1, max_size=14), st.booleans())
def test_the_lower_case_patterns_match_as_the_case_insensitive_ones(
    words: list[str], spaced: bool
) -> None:
    # ASCII text is matched case-sensitively over its lower case (the cheap way), and
    # not at all when it holds none of the pattern's hints; every pattern must find the
    # same spans there as its case-insensitive form on the text
    text = (" " if spaced else "").join(words)
    folded = [p for _, p in updates._VALUE_TYPES if isinstance(p, updates._Folded)]
    for pattern in (updates.CUE, updates.STRONG_CUE, updates.STATE, updates._PAST,
                    updates._LABEL, updates._WORD_TIMES, updates._VOCATIVE_BEFORE,
                    updates._REQUEST, *folded):
        cheap = [m.span() for m in pattern.finditer(text, text.lower())]
        assert cheap == [m.span() for m in pattern.any_case.finditer(text)]
    colours = dict(updates._VALUE_TYPES)["colour"]
    cheap = [m.span() for m in colours.finditer(text, text.lower())]
    assert cheap == [m.span() for m in colours.finditer(text, None)]


# one text per alternative of the change-word pattern, in its words
_CHANGE_WORDS = [
    "Actually, it's tea.", "Oh actually it's tea.", "It's no longer tea.", "Not anymore.",
    "It isn't tea any more.", "I switched to tea.", "I changed my order to tea.",
    "We moved to Lisbon.", "I upgraded to a Pixel.", "Rent was raised to $900.",
    "It increased to 5.", "The deadline was extended to May 3.",
    "It's rescheduled to 4 PM.", "I downgraded to basic.", "It decreased to 4.",
    "It was lowered to 3.", "It was shortened to May 2.", "It adjusted to 5.",
    "It improved to 9.", "It was reduced to 2.", "It was bumped to 7.", "It was pushed to June.",
    "We updated to 3.12.", "It went up to $60.", "It went down to $40.",
    "I traded it in for a Kia.", "We relocated to Porto.", "We migrated to Postgres.",
    "I transferred to Boston.", "It was postponed to June.", "It's delayed to May.",
    "The budget was cut to 3.", "It dropped to 2.", "I swapped it for tea.", "Now it's tea.",
    "It's now tea.", "From now on, tea.", "These days it's tea.", "The new plan is tea.",
    "My new car is a Kia.", "Our new dog is Rex.", "I was wrong, it's tea.",
    "Scratch that, tea.", "Sorry, I meant tea.", "My order got changed.",
    "The plan has changed.", "The times have changed.", "I went with tea.",
    "For the record, tea.", "Just so you know, tea.", "Heads up, tea.", "Make that tea.",
    "Going forward, tea.", "As of now, tea.", "As of today, tea.", "FYI tea.",
    "It's French now.", "Going by tram now.",
]


@pytest.mark.parametrize("text", _CHANGE_WORDS)
def test_every_change_word_is_found_past_the_hints(text: str) -> None:
    # the hints only skip text that cannot match: a hint missing for an alternative
    # would hide that change word on ASCII text
    assert updates.CUE.any_case.search(text) is not None
    assert updates.CUE.search(text, text.lower()) is not None


def test_text_beyond_ascii_folds_case_as_unicode_does() -> None:
    # "ſ" (long s) and "K" (Kelvin) fold to "s" and "k"; lower-casing keeps them
    assert read("I ſwitched to tea").cue
    assert read("My salary is $90\u212a now").values["money"] == {"$90k"}


def test_a_turn_names_its_speaker_by_role_else_by_prefix() -> None:
    assert updates.speaker_of("Caroline: Did you go camping?") == "caroline"
    assert updates.speaker_of("AI: Sure, here it is.") == "assistant"
    assert updates.speaker_of("assistant: Sure.") == "assistant"
    # the metadata's role wins over a prefix, and any assistant name is one speaker
    assert updates.speaker_of("Caroline: hi", {"role": "Bot"}) == "assistant"
    assert updates.speaker_of("I moved to Lisbon.", {"role": "user"}) == "user"
    # a note is no speaker, nor is a bare text
    assert updates.speaker_of("Remember: the boiler is serviced in March.") is None
    assert updates.speaker_of("I moved to Lisbon.") is None


def test_a_time_told_in_words_is_a_time_value() -> None:
    # most turns hold no digit, and the patterns that need one are skipped for them; a
    # time in words needs none
    assert read("user: The standup is at noon now.").values["time"] == {"noon"}


def test_amounts_read_thousands_and_millions() -> None:
    # "$95k" is a salary's size, not 95: a rent of $1,350 is no earlier value of it
    assert updates._amount("$95k") == 95_000
    assert updates._amount("$1,350") == 1_350
    assert updates._amount("2.5m") == 2_500_000


def test_only_a_short_statement_may_update() -> None:
    # `max_words` words (25) in all may still state a new value; one more is a chat turn
    filler = " ".join(["really"] * 20)
    fits = read(f"user: My rent is $1,500 a month {filler}.")
    assert len(fits.sequence) == Policy().updates.max_words
    assert may_update(fits, Policy())
    assert not may_update(read(f"user: My rent is $1,500 a month {filler} now."), Policy())


def test_a_newer_text_that_adds_words_but_drops_none_answers_nothing_new() -> None:
    # every word of the older text is in the newer one: no value of it was replaced
    asked = read("What is my breakfast drink?").words
    assert answers_alike(read("user: My breakfast drink is matcha with oat milk."),
                         read("user: My breakfast drink is matcha."), asked, Policy()) is None


def test_a_score_at_the_bar_supersedes() -> None:
    new = read("user: Actually, my rent changed to $1,600 a month.")
    old = read("user: My rent is $1,500 a month.")
    score = judge(new, old, 0.5, 0.0, Policy()).score
    at_bar = Policy().replace(supersede_score=score)
    assert judge(new, old, 0.5, 0.0, at_bar).verdict is Verdict.SUPERSEDES
    above = Policy().replace(supersede_score=score + 1e-6)
    assert judge(new, old, 0.5, 0.0, above).verdict is Verdict.OUTDATES


def test_signals_are_shown_to_four_decimals() -> None:
    s = judge(read("user: Actually, my rent changed to $1,600 a month."),
              read("user: My rent is $1,500 a month."), 0.7123456, 0.0, Policy())
    shown = s.as_dict()
    assert shown["similarity"] == 0.7123
    assert shown["score"] == round(s.score, 4) and shown["score"] != round(s.score, 5)
    assert judge(read("user: It's paleo now."), read("user: My diet is keto."), 0.2,
                 0.7654321, Policy()).as_dict()["context"] == 0.7654


def test_readings_and_signals_cannot_change_once_made() -> None:
    # a reading is shared by every caller through the cache (`reading`), and signals are
    # what a memory's metadata records: neither may be changed in place
    r = updates.reading("user: My rent is $1,500 a month.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.cue = True  # type: ignore[misc]
    s = judge(r, r, 0.9, 0.0, Policy())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.score = 1.0  # type: ignore[misc]


def test_the_turn_before_counts_only_for_a_typed_value_or_a_change_word() -> None:
    # "It's paleo." after an intro: plain words and no change word say nothing changed, so
    # the intro's closeness is not counted; with a change word it is
    old = read("user: My diet is keto.")
    plain = judge(read("user: It's paleo."), old, 0.2, 0.8, Policy())
    assert plain.context == 0.0 and plain.verdict is Verdict.NONE
    assert judge(read("user: It's paleo now."), old, 0.2, 0.8, Policy()).context == 0.8


def test_two_numbered_ones_of_a_kind_are_no_two_answers_to_one_question() -> None:
    asked = read("When is the project deadline?").words
    p7 = read("user: The project 7 deadline is May 20.")
    assert answers_alike(read("user: The project 8 deadline is June 3."), p7, asked,
                         Policy()) is None


def test_a_long_chat_turn_on_either_side_is_no_answer_to_compare() -> None:
    # `max_words` (25) words still compare; one more on either side does not
    asked = read("When is the board review?").words
    filler = " ".join(["really"] * 17)
    short = read("user: The board review happens at 3 PM on Mondays.")
    fits = read(f"user: See everyone at 4:30 PM on Monday for the board review {filler}.")
    over = read(f"user: See everyone at 4:30 PM on Monday for the board review {filler} ok.")
    assert len(fits.sequence) == Policy().updates.max_words
    assert answers_alike(fits, short, asked, Policy()) == "time"
    assert answers_alike(short, fits, asked, Policy()) == "time"
    assert answers_alike(over, short, asked, Policy()) is None
    assert answers_alike(short, over, asked, Policy()) is None


def test_a_participle_is_no_head_what_precedes_it_is_a_value() -> None:
    # "a corgi named Biscuit" and "a hamster named Peanut": two pets named, not two
    # kinds of "named" thing told apart by a qualifier
    s = judge(read("user: Our new pet is a corgi named Biscuit."),
              read("user: Our pet is a hamster named Peanut."), 0.7, 0.0, Policy())
    assert s.contrast is None


def test_only_the_older_texts_subject_words_of_the_question_tell_a_look_alike() -> None:
    # the question's other words ("town") the newer text may share: it still names
    # another subject than the dentist the question and the older text name
    asked = read("Who is my dentist in town?").words
    assert answers_alike(read("user: My dermatologist in town is Dr. Okafor."),
                         read("user: My dentist is Dr. Patel."), asked, Policy()) is None


def test_an_intro_of_exactly_intro_words_words_may_name_someone() -> None:
    # a turn that names someone is an intro up to intro_words words, inclusive; a longer
    # one is a fact of its own ("My GP is Dr. Nguyen")
    p = Policy()
    at_bar = read("About my dentist Dr. Lee.")
    assert len(at_bar.sequence) == p.updates.intro_words and "name" in at_bar.values
    assert introduces(at_bar, p)
    assert not introduces(read("About my new dentist Dr. Lee."), p)


def test_a_name_of_who_is_spoken_to_leaves_the_other_names_as_values() -> None:
    # "Mel" is who the user talks to, "Dr. Nguyen" the new value: the dentist changed
    p = Policy()
    old = read("user: My dentist is Dr. Smith.")
    new = read("user: Thanks Mel, my dentist is Dr. Nguyen.")
    s = judge(new, old, 0.7, 0.0, p, frozenset({"mel"}))
    assert s.same_type == "name" and s.verdict is not Verdict.NONE


def test_a_preference_restated_in_three_shared_words_has_a_new_value() -> None:
    # no typed value: the standing state ("my favourite street food") named in the same
    # words, at least two of them, makes the new plain word its new value
    p = Policy()
    old = read("user: My favourite street food is dumplings.")
    new = read("user: My favourite street food is falafel.")
    s = judge(new, old, 0.8, 0.0, p)
    assert len(s.shared) == 3 and s.same_type is None and not s.cue
    assert s.new_value and s.verdict is Verdict.OUTDATES


def test_two_texts_share_a_type_only_in_a_strong_type_both_state() -> None:
    def shared(a: str, b: str) -> bool:
        return updates.shares_a_type(read(a), read(b))

    assert shared("user: The rent is $1,400.", "user: The rent is $1,200.")
    assert not shared("user: The rent is $1,400.", "user: The rent is due on Monday.")
    # a time of day is too weak a value to say two texts speak of one thing
    assert not shared("user: I run in the morning.", "user: I run in the evening.")


def test_a_word_before_a_value_does_not_qualify_the_word_after_it() -> None:
    # "booked 3 interviews" has no "booked interviews": a new total of interviews is a
    # newer count of the same ones, not another kind of interview
    s = judge(
        # (with its speaker: "New total: ..." alone reads as said by "New total")
        read("user: New total: 6 interviews."),
        read("user: So far I've booked 3 interviews with tech companies."),
        0.66,
        0.0,
        Policy(),
    )
    assert s.contrast is None and s.same_type == "number"
    assert s.verdict is Verdict.OUTDATES
    # a name stays where it stands: "our Berlin office" and "our Madrid office" are two
    s = judge(
        read("Our Madrid office has 4 people."), read("Our Berlin office has 12 people."),
        0.65, 0.0, Policy(),
    )
    assert s.verdict is Verdict.NONE and s.contrast == "berlin/madrid office"


def test_two_values_of_one_type_are_masked_where_each_stands() -> None:
    # each value is blanked to its own length, so the second time of the type is masked
    # where it is and none of its digits is read again as a number
    r = read("user: The meeting moved from 9:00 AM to 10:30 AM.")
    assert dict(r.values) == {"time": frozenset({"9:00 am", "10:30 am"})}


def test_a_function_word_qualifies_nothing() -> None:
    # "the budget" and "our budget" are one budget: a function word before a word is no
    # qualifier that tells two things apart
    s = judge(read("user: Our budget is $5,000 now."), read("user: The budget is $3,000."),
              0.8, 0.0, Policy())
    assert s.contrast is None and s.same_type == "money"


def test_a_value_restated_counts_from_typed_similarity_inclusive_and_never_of_the_past() -> None:
    p = Policy()
    bar = p.updates.typed_similarity
    new, old = read("user: My salary is $104,000."), read("user: My annual salary is $95,000.")
    assert judge(new, old, bar, 0.0, p).verdict is Verdict.OUTDATES
    assert judge(new, old, bar - 0.01, 0.0, p).verdict is Verdict.NONE
    # a value told as past on either side is what was, not a newer version of it
    was = read("user: My salary was $104,000.")
    assert was.past and not old.past
    assert judge(was, old, 0.9, 0.0, p).verdict is Verdict.NONE


def test_an_older_texts_colour_does_not_set_a_change_apart() -> None:
    # "a flat white" names a colour word, yet the colour only describes: a change of the
    # order that names no colour still speaks of the same order
    s = judge(
        read("user: Going forward, from now on my usual order at the cafe is a macchiato."),
        read("user: At the cafe I always order a flat white."),
        0.45, 0.0, Policy(),
    )
    assert s.contrast is None and s.verdict is Verdict.OUTDATES
    # ... and at recall the two answer the question alike
    asked = read("What do I always order at the cafe?").words
    new = read("user: These days it's a cold brew for my usual order at the cafe.")
    assert answers_alike(new, read("user: At the cafe I always order a flat white."),
                         asked, Policy()) == "words"
    # a typed value of another kind left unnamed still does ("The food bank moved ...")
    s = judge(
        read("user: Heads up, the food bank moved to a warehouse."),
        read("user: I volunteer at the food bank on Wednesdays."),
        0.6, 0.0, Policy(),
    )
    assert s.contrast == "no new date" and s.verdict is Verdict.NONE


def test_a_name_called_out_mid_text_is_who_is_spoken_to() -> None:
    # "Mel!" followed by more text is a call, like "Mel!" at the end
    assert "name" not in read("user: Good luck Mel! See you soon.").values


def test_the_runs_between_values_start_at_the_texts_first_word() -> None:
    assert read("user: Travel budget is $3,000.").phrases == (("travel", "budget", "is"),)


def test_a_word_before_the_newer_texts_value_qualifies_nothing_either() -> None:
    # the newer text's runs are read as the older one's are: "booked 6 interviews" holds
    # no "booked interviews" to set it apart from "total interviews"
    s = judge(read("user: I've booked 6 interviews now."),
              read("user: My total interviews count is 3."), 0.7, 0.0, Policy())
    assert s.contrast is None and s.verdict is Verdict.OUTDATES


def test_a_value_named_only_to_negate_it_replaces_nothing() -> None:
    # "no longer $1,200" repeats the old amount and states no new one
    r = read("user: My rent is no longer $1,200.")
    assert r.strong_cue
    assert judge(r, read("user: My rent is $1,200."), 0.8, 0.0, Policy()).same_type is None


def test_a_newer_text_with_no_words_of_its_own_answers_nothing_new() -> None:
    asked = read("What coffee do I drink?").words
    assert answers_alike(read("user: I drink coffee."),
                         read("user: I drink coffee with oat milk."), asked, Policy()) is None


def test_without_a_change_word_an_older_texts_typed_value_left_unnamed_sets_a_text_apart() -> None:
    # neither names a subject before a value, and no change word says the subject took a
    # value of another shape: the food bank's place is not the day one volunteers
    s = judge(read("user: The food bank is in a warehouse."),
              read("user: Wednesdays I volunteer at the food bank."), 0.7, 0.0, Policy())
    assert s.contrast == "no new date" and s.verdict is Verdict.NONE


def test_a_preference_restated_with_a_change_word_is_held_to_cue_only_score() -> None:
    # with no bonus for the change word or the shared words, the score is the cosine:
    # 0.55 clears cue_only_score (0.5), the bar of a change told with a change word, though
    # not outdate_score (0.6), the bar of a preference restated without one
    p = Policy().replace(cue_bonus=0.0, strong_cue_bonus=0.0, shared_word_bonus=0.0,
                         possessed_bonus=0.0)
    s = judge(read("user: Actually my favourite food is falafel now."),
              read("user: My favourite food is dumplings."), 0.55, 0.0, p)
    assert s.score == pytest.approx(0.55) and s.verdict is Verdict.OUTDATES
