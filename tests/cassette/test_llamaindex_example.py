"""examples/llamaindex_agent.py replayed against its recorded answers, so it cannot rot:
session 1 tells the agent a fact, session 2 (a new Memory, a new session id) asks about
it, and the fact reaches the model through the reverie block."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.integrations import open_engine
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llamaindex_agent.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llamaindex_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_agent_remembers_across_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    example = load_example()
    monkeypatch.setenv("OPENAI_BASE_URL", llm_base_url())
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("REVERIE_CHAT_MODEL", LLM_MODEL)
    llm = example.llm_from_env()
    assert llm.api_base == llm_base_url() and llm.model == LLM_MODEL
    llm.max_retries = 0
    llm.timeout = 900.0  # recording shares two loaded cores

    clock = ManualClock(datetime(2025, 3, 3, 9, 0, tzinfo=UTC))

    async def two_sessions(engine: MemoryEngine) -> tuple[str, str, set[str]]:
        # one event loop for both: the LLM's async HTTP client belongs to the loop
        first = await example.chat(engine, llm, "I live in Lisbon and I love green tea.",
                                   "session-1")
        stored = {m.text for m in engine.memories(namespace=example.NAMESPACE)}
        clock.advance(days=3)
        second = await example.chat(engine, llm, "What do I like to drink?", "session-2")
        return first, second, stored

    with open_engine(tmp_path / "home", clock=clock) as engine, use_cassette(
        "llamaindex_example"
    ) as cassette:
        first, second, stored = asyncio.run(two_sessions(engine))

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
