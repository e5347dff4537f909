"""The write path's text rules at their edges (core/text.py): Porter stems where `y` is a
vowel or a consonant, where a stem is one or two letters, and where two step-2 suffixes
overlap; and the first importance guess at its bounds and precision."""

from __future__ import annotations

import pytest

from reverie.core import Policy
from reverie.core.text import extract_entities, initial_importance, porter_stem

# Each stem worked by hand from the 1980 rules (m = the measure of a stem, [C](VC)^m[V]).
_EDGES = [
    # y after a consonant is a vowel: "dy" and "cycl" have a vowel, so -ing goes; "cr"
    # has none, so "cry" keeps its y (step 1c needs a vowel before it)
    ("dying", "dy"),
    ("crying", "cry"),
    ("cycling", "cycl"),
    # b-y-s-t-a-n-d: y is a vowel after b, so m = 2 and step 4 drops -er
    ("bystander", "bystand"),
    # y first is a consonant: m("yprit") = 1 and it ends consonant-vowel-consonant, so
    # step 5 keeps the e (a made-up word: English has few y-consonant starts with suffixes)
    ("yprite", "yprite"),
    # "sayy": the second y follows a consonant y, so it is a vowel and "yy" is no double
    # consonant: nothing is dropped in step 1b, and step 1c turns the final y into i
    ("sayyed", "sayi"),
    # a one-letter stem after -ed ("OED" lower-cased) has no double consonant to test
    ("oed", "o"),
    # step 5: m("at") = m("on") = 1 and a two-letter stem is no cvc, so the e goes
    ("ate", "at"),
    ("one", "on"),
    # step 1b: -eed with m("proc") = 1 loses its d; step 5 drops the e (m = 1, no cvc)
    ("proceed", "proce"),
    # step 2 tries the longest suffix: -ational (-> ate), not -tional (-> tion); step 4
    # then drops -ate (m("oper") = 2)
    ("operational", "oper"),
    # y after the vowel o is a consonant: m("joy") = 1, so step 3 drops -ful
    ("joyful", "joy"),
    # step 1c: "boy" has a vowel before its y, so the y becomes i
    ("boys", "boi"),
    # step 1b's *o rule looks at the stem's last three letters: "twin" ends c-v-c, so -ing
    # gives way to an e; "box" ends in x, which the rule excludes; "snowsho" ends in a vowel
    ("twining", "twine"),
    ("boxing", "box"),
    ("snowshoeing", "snowsho"),
    # ... and its first consonant is the one before the vowel: "scream" ends in a vowel
    # pair before its m, so it takes no e
    ("screaming", "scream"),
    # step 1b takes -ed or -ing, never both: "unhinged" keeps the -ing left after its -ed
    ("unhinged", "unhing"),
]


@pytest.mark.parametrize(("word", "stem"), _EDGES)
def test_porter_stems_at_the_rules_edges(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_a_filler_penalty_above_the_base_gives_zero_not_a_negative_importance() -> None:
    p = Policy(base_importance=0.2, filler_penalty=0.5)
    assert initial_importance("ok thanks", p) == 0.0


def test_the_first_importance_is_capped_at_one() -> None:
    # 0.9 + instruction 0.2 + entity 0.1 + date 0.1 + number 0.05 = 1.35, capped
    p = Policy(base_importance=0.9)
    text = "Remember: Dr. Patel moved my appointment to 3 May at 10"
    assert initial_importance(text, p) == 1.0


def test_the_first_importance_is_kept_to_six_decimals() -> None:
    p = Policy(base_importance=0.1234567)
    assert initial_importance("the weather is mild", p) == 0.123457
    # filler: 0.5 - 0.1234567 = 0.3765433
    p = Policy(filler_penalty=0.1234567)
    assert initial_importance("ok thanks", p) == 0.376543


def test_a_single_capital_letter_is_no_entity() -> None:
    # "plan B", "Vitamin D": one letter names nothing to link memories by; two may ("Bo")
    assert extract_entities("We picked plan B with Bo.") == frozenset({"bo"})


def test_given_entities_earn_the_entity_boost_and_none_given_earn_none() -> None:
    p = Policy()
    plain = "the weather is mild"  # no entity of its own, no date, no number
    assert initial_importance(plain, p, frozenset({"lisbon"})) == pytest.approx(
        p.importance.base_importance + p.importance.entity_boost)
    assert initial_importance(plain, p, frozenset()) == p.importance.base_importance
