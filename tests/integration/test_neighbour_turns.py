"""The turns written just before and after the best hit rank at least at a share of its
relevance (`Policy.retrieval.neighbour_turns` / `neighbour_weight`): the answer to what
the best hit tells of is often the speaker's next turn, which shares no word with the
question. Real SQLite, real Chroma, the real MiniLM model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.core import ManualClock
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
T0 = datetime(2025, 5, 1, 19, 0, tzinfo=UTC)
CHAT = (
    "Caroline: I finally finished the painting for the art show next month.",
    "Melanie: Last night was amazing! We celebrated my daughter's birthday with a concert.",
    "Caroline: That sounds lovely, who played?",
    "Melanie: It was Matt Patterson, he is so talented! His voice gave me chills.",
    "Caroline: I'm going hiking this weekend with my brother and his dog.",
    "Melanie: Enjoy it! The weather should stay dry until Sunday.",
)
QUESTION = "Who performed at the concert for the daughter's birthday?"
ANSWER = CHAT[3]


def _chat(tmp_path: Path, gap: timedelta, **policy: float) -> tuple[object, list[str]]:
    e = open_engine(tmp_path / "h", clock=ManualClock(T0 + timedelta(days=1)))
    # the answer is not indexed with the question before it ("who played?"): the lift
    # alone is measured
    e.policy = e.policy.replace(reply_context_weight=0.0, **policy)
    ids = [e.observe(t, at=T0 + n * gap).id for n, t in enumerate(CHAT)]
    return e, ids


def test_the_next_turn_of_the_best_hit_closes_its_share_of_the_distance_to_it(
    tmp_path: Path,
) -> None:
    # no conversation context, so a relevance is its two channels' alone; no bound by
    # the best hits (in a chat of six turns, the third best is the answer itself)
    e, ids = _chat(tmp_path, timedelta(seconds=20), context_weight=0.0, neighbour_below=0)
    hits = e.recall(QUESTION, k=2, reinforce=False).hits  # type: ignore[attr-defined]
    assert hits[0].memory.id == ids[1]  # the birthday concert turn matches best
    assert hits[1].memory.id == ids[3], [h.text for h in hits]
    best, lifted = hits[0].explanation, hits[1].explanation
    own = 0.5 * lifted.dense + 0.5 * lifted.lexical  # dense_weight 0.5
    # neighbour_weight 0.7 of the distance from its own relevance to the best hit's
    assert lifted.relevance == pytest.approx(own + 0.7 * (best.relevance - own), abs=1e-3)
    assert lifted.context == pytest.approx(0.7 * (best.relevance - own), abs=1e-3)
    e.close()  # type: ignore[attr-defined]


def test_without_neighbour_turns_the_answer_falls_out_of_the_top(tmp_path: Path) -> None:
    e, ids = _chat(tmp_path, timedelta(seconds=20), neighbour_weight=0.0)
    hits = e.recall(QUESTION, k=2, reinforce=False).hits  # type: ignore[attr-defined]
    assert ids[3] not in [h.memory.id for h in hits]
    e.close()  # type: ignore[attr-defined]


def test_a_turn_written_next_but_observed_outside_the_window_is_not_lifted(
    tmp_path: Path,
) -> None:
    # 5 minutes apart: beyond 120 s
    e, ids = _chat(tmp_path, timedelta(minutes=5), neighbour_below=0)
    hits = e.recall(QUESTION, k=2, reinforce=False).hits  # type: ignore[attr-defined]
    assert ids[3] not in [h.memory.id for h in hits]
    e.close()  # type: ignore[attr-defined]


def test_a_lifted_turn_stays_below_the_best_three_hits(tmp_path: Path) -> None:
    e, _ = _chat(tmp_path, timedelta(seconds=20), neighbour_weight=0.0)
    plain = e.recall(QUESTION, k=6, reinforce=False).hits  # type: ignore[attr-defined]
    e.close()  # type: ignore[attr-defined]
    e, _ = _chat(tmp_path / "again", timedelta(seconds=20))  # neighbour_below = 3
    hits = e.recall(QUESTION, k=6, reinforce=False).hits  # type: ignore[attr-defined]
    assert [h.memory.text for h in hits[:3]] == [h.memory.text for h in plain[:3]]
    third = hits[2].explanation.relevance
    before = {h.memory.text: h.explanation.relevance for h in plain}
    lifted = [h for h in hits[3:] if h.explanation.relevance > before[h.memory.text]]
    assert [h.memory.text for h in lifted] == [CHAT[0]]  # two turns before the best hit
    assert before[CHAT[0]] < lifted[0].explanation.relevance < third
    e.close()  # type: ignore[attr-defined]
