"""The REM cycle resolves a contradiction the write path left open, against recorded
answers of the real local LLM (SmolLM2-135M behind llama.cpp, through `OpenAISynthesizer`).

The story, on a real engine (SQLite file, embedded Chroma, the real MiniLM model): the
user states their rent, later a different rent in the same words. Without a change word
the write path does not dare retire the first statement: it links the two as versions
("outdates": the newer ranks first, the older stays current). Two months on both have
faded and the REM cycle clusters them; the model is asked which fragment was replaced.

- A valid answer: the synthesis states the newest rent, the older statement is superseded
  by the synthesis (status, `superseded_by`, `valid_to` when the new rent was told), so
  `recall(as_of=...)` answers each past date with what was believed then, `history`
  lists every version, and `restore` can still undo it.
- A malformed answer (cut off at `max_tokens`): refused, re-asked with the reason, and
  in the end nothing is superseded; the cluster is consolidated by the extractive
  synthesis, as without an LLM, keeping both statements with their dates.

Replay needs neither the model nor the server; `scripts/record-cassettes
tests/cassette/test_rem_contradictions.py` re-records both cassettes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core.engine import MemoryEngine
from reverie.core.models import Memory, Status, Tier
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.restore import DISMISSED_KEY
from reverie.core.synthesis import build_prompt, synthesis_schema
from reverie.core.writing import SUPERSEDED_KEY, UPDATE_KEY
from reverie.integrations.llm import OpenAISynthesizer
from tests.adapters.langchain_support import T0, clock, deterministic_engine
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow

NS = "user/rent"
OLD = "user: My current rent is $900 a month for the flat in Alfama."
ASIDE = "user: The landlord of my flat in Alfama is Mr Costa."
NEW = "user: My current rent is $1,100 a month for the flat in Alfama."
QUESTION = "How much is my rent for the flat in Alfama?"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = deterministic_engine(tmp_path / "home", namespace=NS)
    yield e
    e.close()


def tell_the_story(e: MemoryEngine) -> tuple[Memory, Memory]:
    old = e.observe(OLD, source="chat-1")
    clock(e).advance(days=20)
    e.observe(ASIDE, source="chat-2")
    clock(e).advance(days=20)
    new = e.observe(NEW, source="chat-3")
    # no change word: the write path links the two as versions without retiring the old
    link = new.metadata[UPDATE_KEY]
    assert link["of"] == old.id and link["verdict"] == "outdates"
    assert e.get(old.id).is_active
    clock(e).advance(days=60)  # both fade below the consolidation threshold
    return old, new


def synth(max_tokens: int = 300) -> OpenAISynthesizer:
    # a generous timeout: recording shares two loaded cores with other work
    return OpenAISynthesizer(llm_base_url(), LLM_MODEL, timeout=900.0, max_tokens=max_tokens)


def bodies(cassette: Any) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in cassette.requests]


@pytest.mark.timeout(2400)  # recording only: the live model on a shared machine is slow
def test_the_rem_cycle_supersedes_the_replaced_rent(engine: MemoryEngine) -> None:
    old, new = tell_the_story(engine)
    with use_cassette("rem_contradiction") as cassette:
        report = engine.consolidate(synthesizer=synth())
    print(report)
    [outcome] = report.committed
    assert set(outcome.member_ids) == {old.id, new.id}
    members = [engine.get(old.id), engine.get(new.id)]
    sent = bodies(cassette)
    assert len(sent) == outcome.attempts
    first = sent[0]
    # the prompt labels the fragments and offers the pair the write path left open
    prompt = first["messages"][1]["content"]
    assert prompt == build_prompt(members)
    assert "F1 [2025-03-03] user: My current rent is $900" in prompt
    assert "- F1 may be replaced by F2, which says: user: My current rent is $1,100" in prompt
    assert first["response_format"] == {"type": "json_object",
                                        "schema": synthesis_schema(members)}
    assert not outcome.fell_back, outcome.reason
    assert outcome.synthesizer == f"openai:{LLM_MODEL}"

    node = engine.get(outcome.synthesis_id)
    assert node.tier is Tier.SYNTHESIS and node.is_active
    assert "$1,100" in node.text  # the newest value (validation holds the model to it)
    assert node.metadata["synthesis"]["supersedes"] == [old.id]
    retired = engine.get(old.id)
    assert retired.status is Status.SUPERSEDED and retired.superseded_by == node.id
    assert retired.valid_to == new.created_at  # it held until the new rent was told
    assert retired.metadata[SUPERSEDED_KEY]["by"] == node.id
    kept = engine.get(new.id)
    assert kept.status is Status.CONSOLIDATED and kept.consolidated_into == node.id

    # history and the past keep working
    assert [m.id for m in engine.history(memory_id=old.id)] == [old.id, new.id, node.id]
    then = engine.recall(QUESTION, as_of=T0 + timedelta(days=10), k=3, reinforce=False)
    assert then[0].id == old.id
    later = engine.recall(QUESTION, as_of=T0 + timedelta(days=50), k=3, reinforce=False)
    assert later[0].id == new.id and old.id not in [h.id for h in later]
    now = engine.recall(QUESTION, k=3, reinforce=False)
    assert now[0].id == node.id and old.id not in [h.id for h in now]

    # the user can undo it: the old statement stands again, the synthesis is unlinked
    back = engine.restore(old.id)
    assert back.is_active and back.superseded_by is None and back.valid_to is None
    unlinked = engine.get(node.id)
    assert unlinked.is_active and unlinked.metadata[DISMISSED_KEY][0]["restored"] == old.id
    assert node.id not in [m.id for m in engine.history(memory_id=old.id)]


@pytest.mark.timeout(1200)
def test_a_malformed_answer_supersedes_nothing(engine: MemoryEngine) -> None:
    old, new = tell_the_story(engine)
    with use_cassette("rem_contradiction_malformed") as cassette:
        report = engine.consolidate(synthesizer=synth(max_tokens=12))
    sent = bodies(cassette)
    retries = DEFAULT_POLICY.maintenance.synthesis_retries
    assert len(sent) == 1 + retries  # the first answer and every re-ask were cut off
    for later in sent[1:]:
        assert "rejected: the answer was cut off at max_tokens=12" in (
            later["messages"][1]["content"]
        )
    [outcome] = report.committed
    assert outcome.fell_back and outcome.synthesizer == "extractive"
    node = engine.get(outcome.synthesis_id)
    assert "supersedes" not in node.metadata["synthesis"]
    for m in (old, new):  # consolidated as without an LLM: nothing superseded, nothing lost
        stored = engine.get(m.id)
        assert stored.status is Status.CONSOLIDATED and stored.superseded_by is None
        assert stored.valid_to is None and m.text.removeprefix("user: ") in node.text
    assert [m.status for m in engine.memories(statuses=[Status.SUPERSEDED])] == []
