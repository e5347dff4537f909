"""A question that names a date finds what was observed then, on real parts (a SQLite
file, embedded Chroma, the real MiniLM model): the turn that told it says "yesterday",
and a later memory shares more of the question's words."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reverie.core import ManualClock, Policy
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow


def at(y: int, m: int, d: int, h: int = 18) -> datetime:
    return datetime(y, m, d, h, tzinfo=UTC)


def test_the_memory_observed_at_the_named_date_ranks_first(tmp_path: Path) -> None:
    clock = ManualClock(at(2024, 3, 1))
    engine = open_engine(tmp_path / "home", clock=clock)
    try:
        engine.observe("user: yesterday I went kayaking on the lake with my cousins",
                       at=at(2023, 7, 8))
        engine.observe("user: the weather was lovely today", at=at(2023, 7, 8, 19))
        engine.observe("user: I went hiking with my cousins in the mountains",
                       at=at(2024, 2, 10))
        for question in ("What did I do with my cousins on 7 July, 2023?",
                         "What did I do with my cousins in July 2023?"):
            hits = engine.recall(question, k=3, reinforce=False).hits
            assert "kayaking" in hits[0].text, question
            # the explanation says what the later hike lost for its date, and the
            # kayaking turn lost nothing
            assert hits[0].explanation.period == 0.0
            hike = next(h for h in hits if "hiking" in h.text)
            assert hike.explanation.period > 0.0
            assert hike.explanation.as_dict()["period"] > 0.0
        # without the date's weight the words win: the later hike ranks first
        engine.policy = Policy(period_weight=0.0)
        top = engine.recall("What did I do with my cousins on 7 July, 2023?", k=3,
                            reinforce=False).hits[0]
        assert "hiking" in top.text
    finally:
        engine.close()
