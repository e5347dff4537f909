"""Keyed facts on real parts (a SQLite file, embedded Chroma, the real all-MiniLM-L6-v2
model): a fact remembered with the user's own words is found by what it is about.

The cause pinned here, found in the simulated year (benchmarks/longitudinal.py): the
user's words state the value ("I now work at Globex Labs", "my home is in Berlin") but
not what it is the value of, while the question names it ("Where does the user
work?"). An agent's own notes that share one of the question's words ("the user asked
for help with ...", repeated until they are crystals) then take every place in the top
5, and the current value is not there at all. The fact's statement is now part of the
text both channels read.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reverie.core import ManualClock, Status
from reverie.core.engine import MemoryEngine
from reverie.core.models import Fact
from reverie.core.writing import with_statement
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NS = "user/keyed"
TOPICS = (
    "the garden", "a podcast", "the kitchen renovation", "the new laptop", "a job interview",
    "the team offsite", "a hiking route", "the holiday trip", "moving boxes", "meal prep",
    "learning Spanish", "the electricity bill",
)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = open_engine(tmp_path / "home", clock=ManualClock(T0), namespace=NS)
    yield e
    e.close()


def agent_notes(e: MemoryEngine) -> None:
    """The agent's notes on what it helped with, each said on three days: crystals."""
    clock = e.clock
    assert isinstance(clock, ManualClock)
    for day in range(3):
        for i, topic in enumerate(TOPICS):
            e.observe(f"the user asked for help with {topic}", source=f"note-{day}-{i}")
        clock.advance(days=1)


def top5(e: MemoryEngine, question: str) -> list[str]:
    return [h.text for h in e.recall(question, k=5, reinforce=False)]


def test_the_new_employer_carries_its_fact_and_outranks_the_old(engine: MemoryEngine) -> None:
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    old = engine.remember("user", "works at", "Acme Robotics", source="s1",
                          text="my employer is Acme Robotics")
    agent_notes(engine)
    new = engine.remember("user", "works at", "Globex Labs", source="s2",
                          text="actually, I switched jobs, I now work at Globex Labs")
    for i in range(3):  # said again in other words: the unit keeps its first text
        clock.advance(days=2)
        engine.remember("user", "works at", "Globex Labs", source=f"s3-{i}",
                        text="Globex Labs is my company")
    clock.advance(days=30)

    hits = top5(engine, "Where does the user work?")
    assert any("Globex Labs" in t for t in hits), hits
    assert not any("Acme" in t for t in hits), hits
    assert engine.get(old.id).status is Status.SUPERSEDED
    assert new.text == ("actually, I switched jobs, I now work at Globex Labs "
                        "(user works at Globex Labs)")


def test_a_home_said_without_the_verb_is_found_by_the_question(engine: MemoryEngine) -> None:
    agent_notes(engine)
    engine.remember("user", "lives in", "Berlin", source="s1", text="my home is in Berlin")
    hits = top5(engine, "Which city does the user live in?")
    assert any("Berlin" in t for t in hits), hits


def test_the_statement_is_added_only_to_words_that_state_the_value() -> None:
    berlin = Fact("user", "lives in", "Berlin")
    # the words name the value, not the fact: the fact follows them
    assert with_statement("my home is in Berlin", berlin, 500) == (
        "my home is in Berlin (user lives in Berlin)"
    )
    # the words already say the whole fact: left as they are
    assert with_statement("The user lives in Berlin!", berlin, 500) == "The user lives in Berlin!"
    # words that do not name the value (an item stored under a digest): left as they are
    digest = Fact("item:prefs", "is", "9f2c4e")
    assert with_statement("likes dark mode", digest, 500) == "likes dark mode"
    # a value found only inside a longer word is not named ("Sam" in "same")
    assert with_statement("the same as ever", Fact("user", "partner is", "Sam"), 500) == (
        "the same as ever"
    )
    # too long with the statement: the words alone (len 20 + 24 > 40)
    assert with_statement("my home is in Berlin", berlin, 40) == "my home is in Berlin"
