"""A question that names a person ranks what that person said above what others said
about them (`RetrievalPolicy.speaker_weight`): the score closes that share of its
distance to 1, and the explanation shows what it added."""

from __future__ import annotations

import pytest

from reverie.core import Policy
from reverie.core.retrieval import with_speaker
from reverie.core.text import names_asked, speaker_name
from tests.unit.conftest import make_engine

ABOUT = "Caroline: Melanie told me she loves camping with the kids."
OWN = "Melanie: We went camping at the lake with the kids."
QUESTION = "Where does Melanie go camping?"


def test_the_people_a_question_names_and_who_speaks() -> None:
    assert names_asked("What do Melanie's kids like?") == {"melanie"}
    assert names_asked("What do Melanie\u2019s kids like?") == {"melanie"}
    # sentence words and pronouns are no names; a lower-case word is none either
    assert names_asked("What laptop does the user use?") == frozenset()
    named = names_asked("Did Caroline and Melanie meet in Lisbon?")
    assert named == {"caroline", "melanie", "lisbon"}
    assert speaker_name("Melanie: hi") == "melanie"
    assert speaker_name("Dr. Okafor: take two") == "dr. okafor"
    assert speaker_name("Note: buy milk") is None  # a label, not a speaker
    # so is a prefix whose later words start in lower case, as no name is written
    assert speaker_name("Heads up: my flight moved to Friday") is None
    assert speaker_name("New total: 6 interviews.") is None
    assert speaker_name("Mary Jane: see you") == "mary jane"
    assert speaker_name("Ronald McDonald: hi") == "ronald mcdonald"  # its first letter counts
    assert speaker_name("Ludwig van Beethoven: da da da") == "ludwig van beethoven"
    assert speaker_name("no prefix here") is None


def test_the_named_persons_own_words_rank_first_and_the_explanation_says_by_how_much() -> None:
    plain = make_engine(Policy(speaker_weight=0.0))
    for text in (ABOUT, OWN):
        plain.observe(text)
    before = plain.recall(QUESTION, k=2, reinforce=False)
    assert [h.memory.text for h in before] == [ABOUT, OWN]  # what the case is about

    e = make_engine()
    assert e.policy.retrieval.speaker_weight == 0.4
    for text in (ABOUT, OWN):
        e.observe(text)
    hits = e.recall(QUESTION, k=2, reinforce=False)
    assert [h.memory.text for h in hits] == [OWN, ABOUT]
    own, about = hits
    p = e.policy.retrieval
    base = p.alpha * own.explanation.relevance + (1 - p.alpha) * own.explanation.decay
    # by hand: base + 0.4 * (1 - base), e.g. 0.3594 -> 0.3594 + 0.4 * 0.6406 = 0.6156
    assert own.score == pytest.approx(base + 0.4 * (1 - base), abs=1e-12)
    assert own.explanation.speaker == pytest.approx(0.4 * (1 - base), abs=1e-12)
    assert own.explanation.as_dict()["speaker"] == round(0.4 * (1 - base), 4)
    # the other speaker's words keep their score, and the same as without the rule
    assert about.explanation.speaker == 0.0
    assert about.score == pytest.approx(before[0].score, abs=1e-12)


def test_a_question_naming_nobody_leaves_every_score_as_it_was() -> None:
    scores = []
    for weight in (0.0, 0.4):
        e = make_engine(Policy(speaker_weight=weight))
        for text in (ABOUT, OWN):
            e.observe(text)
        hits = e.recall("where do we go camping with the kids?", k=2, reinforce=False)
        scores.append([(h.memory.text, h.score) for h in hits])
        assert all(h.explanation.speaker == 0.0 for h in hits)
    assert scores[0] == scores[1]


def test_a_raised_score_stays_within_one_and_keeps_its_order() -> None:
    assert with_speaker(0.5, 0.4) == pytest.approx(0.7)
    assert with_speaker(1.0, 0.4) == 1.0
    assert with_speaker(0.0, 0.0) == 0.0
    assert with_speaker(0.3, 0.4) < with_speaker(0.31, 0.4)
