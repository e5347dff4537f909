"""Free-text updates on real parts: a SQLite file, embedded Chroma and the real
all-MiniLM-L6-v2 model. The newer value ranks first when a fact changes in plain words,
look-alikes and incidental change words retire nothing, and the past keeps its value."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.core import ManualClock, Status
from reverie.core.engine import MemoryEngine
from reverie.core.writing import SUPERSEDED_KEY, UPDATE_KEY
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
T0 = datetime(2025, 9, 1, 18, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = open_engine(tmp_path / "home", clock=ManualClock(T0))
    yield e
    e.close()


def say(e: MemoryEngine, text: str, ns: str, days: float = 0, seconds: float = 0) -> str:
    clock = e.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=days, seconds=seconds)
    return e.observe(text, namespace=ns).id


def top(e: MemoryEngine, question: str, ns: str) -> list[str]:
    return [h.text for h in e.recall(question, namespace=ns, k=5, reinforce=False)]


def test_a_move_told_in_free_text_puts_the_new_city_first(engine: MemoryEngine) -> None:
    ns = "moves"
    old = say(engine, "user: I live in Berlin, near Tempelhofer Feld.", ns)
    say(engine, "assistant: Berlin sounds lovely, enjoy the park!", ns, seconds=30)
    say(engine, "user: Any tips for a rainy Sunday?", ns, days=3)
    new = say(engine, "user: We finally moved to Lisbon last month, the flat is in Alfama.",
              ns, days=120)
    say(engine, "assistant: Actually, Alfama is one of the oldest districts of Lisbon.", ns,
        seconds=40)
    hits = engine.recall("Which city do I live in near the park?", namespace=ns, k=5,
                         reinforce=False)
    assert hits[0].id == new
    assert "newer version of" in (hits[0].explanation.note or "")
    # the two texts share few words (cosine ~0.34): the old one is marked possibly
    # outdated, not retired, and the reasons are kept on the newer one
    assert engine.get(old, namespace=ns).is_active
    why = engine.get(new, namespace=ns).metadata[UPDATE_KEY]
    assert why["of"] == old and why["verdict"] == "outdates"
    assert why["same_type"] == "name" and why["cue"] is True
    assert [m.id for m in engine.history(memory_id=new, namespace=ns)] == [old, new]
    # the assistant's "actually" retired nothing
    assert engine.get(new, namespace=ns).is_active
    # the past still answers with the old value
    past = engine.recall("Which city do I live in?", namespace=ns, k=3,
                         as_of=T0 + timedelta(days=10), reinforce=False)
    assert past[0].id == old


def test_a_confident_update_supersedes_and_says_why(engine: MemoryEngine) -> None:
    ns = "gym"
    old = say(engine, "user: My gym membership costs $45 a month.", ns)
    new = say(engine, "user: Heads up, my gym membership went up to $60 a month.", ns,
              days=30)
    retired = engine.get(old, namespace=ns)
    assert retired.status is Status.SUPERSEDED and retired.superseded_by == new
    assert retired.valid_to == engine.get(new, namespace=ns).created_at
    why = retired.metadata[SUPERSEDED_KEY]
    assert why["by"] == new and why["same_type"] == "money" and why["cue"] is True
    assert top(engine, "How much does my gym membership cost a month?", ns)[0].endswith(
        "$60 a month."
    )
    past = engine.recall("How much does my gym membership cost?", namespace=ns, k=3,
                         as_of=T0 + timedelta(days=2), reinforce=False)
    assert past[0].id == old


@pytest.mark.parametrize(
    ("before", "intro", "update", "question"),
    [
        ("user: My dentist check-up is on Tuesday at 9:15 AM.",
         "user: About the dentist.", "user: It's Friday at 4:30 PM now.",
         "When is my dentist check-up on Tuesday?"),
        ("user: The studio rent for the band is $640 a month.",
         "user: Band studio news.", "user: Raised to $720.",
         "How much is the studio rent for the band?"),
    ],
)
def test_elliptical_updates_rank_the_new_value_first(
    engine: MemoryEngine, before: str, intro: str, update: str, question: str
) -> None:
    ns = "elliptical"
    old = say(engine, before, ns)
    say(engine, "user: I watched a documentary about glaciers.", ns, days=1)
    say(engine, intro, ns, days=20)
    new = say(engine, update, ns, seconds=45)
    assert engine.get(new, namespace=ns).metadata[UPDATE_KEY]["of"] == old
    hits = engine.recall(question, namespace=ns, k=5, reinforce=False)
    ids = [h.id for h in hits]
    assert ids[0] == new
    assert "newer version of" in (hits[0].explanation.note or "")


def test_look_alikes_and_incidental_cues_retire_nothing(engine: MemoryEngine) -> None:
    ns = "lookalikes"
    texts = [
        "user: My sister lives in Porto.",
        "user: The staging deadline is May 3.",
        "user: My brother lives in Lisbon.",
        "user: Actually, the production deadline is June 1.",
        "user: The lab offers color correction for old slides.",
        "user: I use Ethernet instead of Wi-Fi for my desktop.",
        "assistant: Actually, you no longer need Wi-Fi then; Ethernet is faster.",
    ]
    ids = [say(engine, t, ns, days=2) for t in texts]
    assert all(engine.get(i, namespace=ns).is_active for i in ids)
    assert "Porto" in top(engine, "Where does my sister live?", ns)[0]
    assert "Lisbon" in top(engine, "Where does my brother live?", ns)[0]
    assert "May 3" in top(engine, "When is the staging deadline?", ns)[0]
    assert "June 1" in top(engine, "When is the production deadline?", ns)[0]


def test_two_facts_changed_on_one_day_keep_their_own_newest_versions(
    engine: MemoryEngine,
) -> None:
    """A meeting moved and a flight rescheduled: each update is linked to its own fact on
    write. At recall the two chains' texts look alike (a weekday and a time each), but
    they are not joined into one, so the flight's new time never answers for the meeting."""
    ns = "two-chains"
    meeting = say(engine, "user: The sync with design happens every Tuesday at 8:30 AM.", ns)
    say(engine, "assistant: Thanks for the update, that helps.", ns, seconds=60)
    flight = say(engine, "user: My flight to Boston leaves Tuesday at 11:40 AM from gate B12.",
                 ns, seconds=300)
    moved = say(engine, "user: The new meeting time is 9:00 AM.", ns, seconds=600)
    rescheduled = say(engine, "user: The flight was rescheduled to Wednesday at 2:05 PM.", ns,
                      seconds=900)
    assert engine.get(moved, namespace=ns).metadata[UPDATE_KEY]["of"] == meeting
    assert engine.get(rescheduled, namespace=ns).metadata[UPDATE_KEY]["of"] == flight
    engine.clock.advance(hours=1)  # type: ignore[attr-defined]
    meeting_hits = top(engine, "When does the sync with design happen every Tuesday?", ns)
    assert meeting_hits[0] == "user: The new meeting time is 9:00 AM."
    flight_hits = top(engine, "What time is my trip to Boston?", ns)
    assert flight_hits[0] == "user: The flight was rescheduled to Wednesday at 2:05 PM."


def test_an_acknowledgement_never_outranks_the_statement_it_acknowledges(
    engine: MemoryEngine,
) -> None:
    """'Okay, your usual coffee order is noted.' repeats the question's words better than
    the user's own update does; it holds no value, so it ranks below what it answers."""
    ns = "acks"
    say(engine, "user: At the cafe I always order a mocha.", ns)
    say(engine, "assistant: Lovely, enjoy it!", ns, seconds=30)
    say(engine, "user: Any ideas for a rainy Sunday?", ns, days=2)
    new = say(engine, "user: I changed my order to a double espresso.", ns, days=20)
    ack = say(engine, "assistant: Okay, your usual coffee order is noted. Want a reminder?", ns,
              seconds=30)
    engine.clock.advance(days=1)  # type: ignore[attr-defined]
    hits = engine.recall("What's my usual drink?", namespace=ns, k=5, reinforce=False)
    ids = [h.id for h in hits]
    assert ids[0] == new
    assert ids.index(ack) > ids.index(new)
    note = hits[ids.index(ack)].explanation.note or ""
    assert note.startswith(f"a reply to {new} ")


def test_an_update_naming_its_subject_links_to_it_not_to_a_neighbour_of_the_turn_before(
    engine: MemoryEngine,
) -> None:
    """'Just so you know, the Boston flight is Monday at 5:55 AM.' is short enough to be
    read as an elliptical update of whatever the turn before it is near, but it names its
    flight, and the flight it replaces is a confident version by its own words."""
    ns = "named-subject"
    say(engine, "user: I keep meaning to try gardening this weekend.", ns)
    flight = say(engine, "user: My flight to Boston leaves Friday at 8:15 PM from gate B12.",
                 ns, seconds=120)
    say(engine, "user: My phone is a Galaxy Z Flip with a cracked screen.", ns, seconds=120)
    say(engine, "user: I'm thinking of making chili for dinner.", ns, days=3)
    new = say(engine, "user: Just so you know, the Boston flight is Monday at 5:55 AM.", ns,
              seconds=90)
    why = engine.get(new, namespace=ns).metadata[UPDATE_KEY]
    assert why["of"] == flight and why["verdict"] == "supersedes"


def test_an_elliptical_update_is_linked_to_the_version_nearest_its_intro(
    engine: MemoryEngine,
) -> None:
    """"Make that $90,000." reads more like the pay's amount (cosine 0.69) than the
    budget's (0.43), but the intro just before it ("Quick note on the migration money.")
    is the budget's (0.68 against 0.48 for the pay): the intro names what the update
    speaks of, and nothing else is outdated through the update's own few words."""
    ns = "intro-nearest"
    pay = say(engine, "user: My yearly pay is $104,000 these days.", ns)
    budget = say(engine, "user: The migration project has a budget of $48,000.", ns,
                 seconds=300)
    say(engine, "user: Quick note on the migration money.", ns, days=30)
    new = say(engine, "user: Make that $90,000.", ns, seconds=240)
    why = engine.get(new, namespace=ns).metadata[UPDATE_KEY]
    assert why["of"] == budget and why["verdict"] == "outdates"
    assert "also" not in why
    assert engine.get(pay, namespace=ns).is_active
    assert top(engine, "What budget does the migration project have?", ns)[0] == \
        "user: Make that $90,000."


def test_an_elliptical_update_is_linked_to_the_version_that_holds_a_word_of_its_intro(
    engine: MemoryEngine,
) -> None:
    """"About what I eat." reads more like a craving (cosine 0.57) than like the diet
    (0.48), but only the diet holds its word ("eat"): the intro names what "Going vegan
    now." speaks of."""
    ns = "intro-word"
    diet = say(engine, "user: I've been eating keto since the doctor's advice.", ns)
    say(engine, "user: I'm craving pizza tonight.", ns, seconds=300)
    say(engine, "user: About what I eat.", ns, days=60)
    new = say(engine, "user: Going vegan now.", ns, seconds=60)
    why = engine.get(new, namespace=ns).metadata[UPDATE_KEY]
    assert why["of"] == diet and why["verdict"] == "outdates"
