"""examples/llamaindex_agent.py replayed against its recorded answers, so it cannot rot:
session 1 tells the agent a fact, session 2 (a new Memory, a new session id) asks about
it, and the fact reaches the model through the reverie block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reverie.core import ManualClock
from reverie.integrations import open_engine
from tests.cassette import example_runs
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow

def test_example_agent_remembers_across_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = example_runs.load_example("llamaindex_agent")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_base_url())
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("REVERIE_CHAT_MODEL", LLM_MODEL)
    llm = example.llm_from_env()
    assert llm.api_base == llm_base_url() and llm.model == LLM_MODEL

    clock = ManualClock(example_runs.T0)
    with open_engine(tmp_path / "home", clock=clock) as engine, use_cassette(
        "llamaindex_example"
    ) as cassette:
        first, second, stored = example_runs.llamaindex_sessions(example, engine, clock)

    # the end of session 1 stored its messages as long-term memory
    assert "user: I live in Lisbon and I love green tea." in stored
    assert first.strip() and second.strip()
    requests = [json.loads(r.body) for r in cassette.requests]
    assert len(requests) == 2
    assert all(m["role"] != "system" or "<memory>" not in m["content"]
               for m in requests[0]["messages"])  # nothing remembered yet in session 1
    memory_message = requests[1]["messages"][1]
    assert memory_message["role"] == "system"
    assert "- [2025-03-03] user: I live in Lisbon and I love green tea." in memory_message[
        "content"
    ]
    assert requests[1]["messages"][-1] == {"role": "user", "content": "What do I like to drink?"}
