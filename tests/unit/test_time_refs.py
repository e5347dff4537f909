"""The calendar period a question names, and how recall weighs what was observed outside
it (numbers checked by hand)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core import Policy
from reverie.core.retrieval import Candidate, period_focus
from reverie.core.time_refs import Period, named_period


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did Maria share on 7 July, 2023?", day(2023, 7, 7), day(2023, 7, 8)),
        ("Who did she have dinner with on May 3, 2023?", day(2023, 5, 3), day(2023, 5, 4)),
        ("the 1st of March 2024", day(2024, 3, 1), day(2024, 3, 2)),
        ("What did he donate in December 2023?", day(2023, 12, 1), day(2024, 1, 1)),
        ("trips in Sept 2023", day(2023, 9, 1), day(2023, 10, 1)),
        ("What changed during 2022?", day(2022, 1, 1), day(2023, 1, 1)),
        ("between May 2023 and July 2023", day(2023, 5, 1), day(2023, 8, 1)),
        # no such day: the month it names
        ("on 31 February 2023", day(2023, 2, 1), day(2023, 3, 1)),
    ],
)
def test_a_dated_question_names_its_period(text: str, start: datetime, end: datetime) -> None:
    assert named_period(text) == Period(start, end)


@pytest.mark.parametrize(
    "text",
    [
        "May I ask what my favourite colour is?",  # "May" the verb, no year
        "What did I do in July?",  # no year: any July
        "We march on",
        "My PIN is 2023",  # a number, not a year someone is asked about
        "What is 2023 minus 7?",
    ],
)
def test_no_period_without_a_dated_reference(text: str) -> None:
    assert named_period(text) is None


def test_slack_is_a_share_of_the_period_but_never_below_the_minimum() -> None:
    month = Period(day(2023, 12, 1), day(2024, 1, 1))  # 31 days
    wide = month.widened(timedelta(days=3), 0.25)
    assert wide == Period(day(2023, 12, 1) - timedelta(days=7.75),
                          day(2024, 1, 1) + timedelta(days=7.75))
    one_day = Period(day(2023, 7, 7), day(2023, 7, 8))
    assert one_day.widened(timedelta(days=3), 0.25) == Period(day(2023, 7, 4), day(2023, 7, 11))


def test_outside_the_widened_period_keeps_one_minus_the_weight() -> None:
    p = Policy(period_weight=0.5, period_min_slack_days=3.0, period_slack=0.25)
    period = Period(day(2023, 7, 7), day(2023, 7, 8))  # widened: [Jul 4, Jul 11)
    cands = {
        "told next day": Candidate("told next day", 0.4, 0.2, 0.3),
        "edge inside": Candidate("edge inside", 0.5, 0.5, 0.5),
        "edge outside": Candidate("edge outside", 0.5, 0.5, 0.5),
        "months later": Candidate("months later", 0.9, 0.7, 0.8),
        "no time": Candidate("no time", 0.6, 0.6, 0.6),
    }
    times = {
        "told next day": day(2023, 7, 8) + timedelta(hours=15),
        "edge inside": day(2023, 7, 11) - timedelta(microseconds=1),
        "edge outside": day(2023, 7, 11),
        "months later": day(2023, 11, 2),
    }
    out = period_focus(cands, times, period, p)
    assert out["told next day"] == cands["told next day"]
    assert out["edge inside"] == cands["edge inside"]
    assert out["edge outside"].relevance == pytest.approx(0.25)
    assert out["months later"].relevance == pytest.approx(0.4)  # 0.8 * (1 - 0.5)
    assert out["months later"].period == pytest.approx(0.4)  # what it lost, for the explanation
    assert out["months later"].dense == 0.9  # the channels' own scores stay as they were
    assert out["no time"] == cands["no time"]
    # at 0.7 the memory observed then outranks the better match of months later
    strong = period_focus(cands, times, period, p.replace(period_weight=0.7))
    assert strong["months later"].relevance == pytest.approx(0.24)
    assert strong["told next day"].relevance > strong["months later"].relevance
    assert period_focus(cands, times, period, p.replace(period_weight=0.0)) == cands


def test_a_period_no_candidate_was_observed_in_changes_nothing() -> None:
    """"Where did I live in 2015?", asked of memories told since 2023: the answer was
    told later, so the date cannot tell the right memory from the others."""
    p = Policy(period_weight=0.5)
    cands = {
        "told in 2023": Candidate("told in 2023", 0.6, 0.8, 0.7),
        "told in 2024": Candidate("told in 2024", 0.5, 0.1, 0.3),
    }
    times = {"told in 2023": day(2023, 3, 1), "told in 2024": day(2024, 5, 2)}
    assert period_focus(cands, times, Period(day(2015, 1, 1), day(2016, 1, 1)), p) == cands
    # one of them observed in the period asked about: the other keeps half
    moved = period_focus(cands, times, Period(day(2024, 1, 1), day(2025, 1, 1)), p)
    assert moved["told in 2023"].relevance == pytest.approx(0.35)
    assert moved["told in 2024"] == cands["told in 2024"]


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2099, 12, 31)))
def test_every_written_form_of_a_day_names_that_day(d: date) -> None:
    month = d.strftime("%B")
    want = Period(day(d.year, d.month, d.day), day(d.year, d.month, d.day) + timedelta(days=1))
    for text in (f"on {d.day} {month}, {d.year}?", f"on {month} {d.day}, {d.year}",
                 f"the {d.day}th of {month.lower()} {d.year}", f"on {month[:3]} {d.day} {d.year}"):
        assert named_period(text) == want, text
    whole = named_period(f"what happened in {month} {d.year}")
    assert whole is not None and whole.start == day(d.year, d.month, 1)
    assert whole.start <= want.start and want.end <= whole.end
