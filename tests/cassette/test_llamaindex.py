"""LlamaIndex's real client stack (OpenAILike -> openai -> httpx) against recorded answers of
the real local LLM server: cluster synthesis through `LlamaIndexSynthesizer`, a malformed
answer handled by core's validate-and-retry, and a full `FunctionAgent` turn with
`ReverieMemoryBlock` inside `Memory.from_defaults`.

Replay needs neither the model nor the server; `scripts/record-cassettes
tests/cassette/test_llamaindex.py` re-records them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.core.consolidation import synthesize_group
from reverie.core.engine import MemoryEngine
from reverie.core.errors import SynthesisFailed
from reverie.core.models import Kind, Memory, Tier
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.synthesis import SYNTHESIS_SCHEMA, build_prompt
from reverie.integrations import open_engine
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SESSION = "li-agent-session-1"


def make_llm(max_tokens: int | None = 300) -> Any:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=LLM_MODEL,
        api_base=llm_base_url(),
        api_key="not-needed",
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=4096,
        temperature=0.0,
        max_tokens=max_tokens,
        max_retries=0,
        timeout=900.0,  # recording shares two loaded cores with other work
    )


def members() -> list[Memory]:
    texts = [
        "Ana moved to Porto in January.",
        "Ana started a job at a bakery in Porto.",
        "Actually Ana works at a cafe now, not the bakery.",
    ]
    return [
        Memory(
            id=f"m{i}",
            namespace="li-synth",
            kind=Kind.EPISODIC,
            tier=Tier.TRACE,
            text=t,
            created_at=T0 + timedelta(days=i),
        )
        for i, t in enumerate(texts)
    ]


def bodies(cassette: Any) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in cassette.requests]


def test_cluster_synthesis_through_openailike_json_mode() -> None:
    from reverie.adapters.llamaindex.ports import LlamaIndexSynthesizer

    synth = LlamaIndexSynthesizer(make_llm())
    group = members()
    with use_cassette("llamaindex_synthesis") as cassette:
        result = synthesize_group(group, synth, DEFAULT_POLICY)

    # the request was JSON mode with the schema (never OpenAI's json_schema format)
    body = bodies(cassette)[0]
    assert body["response_format"] == {"type": "json_object", "schema": SYNTHESIS_SCHEMA}
    assert body["messages"][1]["content"] == build_prompt(group)
    # the real answer parsed and passed core's validation on the first attempt
    assert not result.fell_back and result.attempts == 1
    assert result.synthesizer == f"llamaindex:OpenAILike:{LLM_MODEL}"
    assert "Ana" in result.payload.synthesis  # the 135M model's content is weak; the
    assert 0.0 <= result.payload.importance <= 1.0  # pipeline (ask, parse, validate) is tested
    assert len(cassette.requests) == 1


def test_prose_answer_is_synthesis_failed_and_retry_path_keeps_members() -> None:
    """Without JSON mode the tiny model answers prose: the port raises SynthesisFailed,
    core re-asks with the error shown, and whatever happens the cluster is not lost."""
    from reverie.adapters.llamaindex.ports import LlamaIndexSynthesizer

    synth = LlamaIndexSynthesizer(make_llm(max_tokens=60), json_mode=False)
    with use_cassette("llamaindex_malformed"):
        with pytest.raises(SynthesisFailed, match="not a JSON object"):
            synth.synthesize("Write one short sentence about the sea.", SYNTHESIS_SCHEMA)
        group = members()
        result = synthesize_group(group, synth, DEFAULT_POLICY.replace(synthesis_retries=1))
    # answer 1: JSON cut off at 60 tokens; answer 2 (after the re-ask showing the error):
    # prose. Both refused, so core fell back to the extractive synthesis: nothing lost.
    assert result.attempts == 2 and result.fell_back
    assert result.synthesizer == "extractive"
    assert result.reason is not None
    for attempt in ("#1", "#2"):
        assert f"{attempt}: the model's answer is not a JSON object" in result.reason
    for m in group:
        assert m.text in result.payload.synthesis


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    ns = f"li-{uuid.uuid4().hex[:10]}"
    e = open_engine(tmp_path / "home", clock=ManualClock(T0), namespace=ns)
    yield e
    e.close()


def test_function_agent_turn_with_reverie_memory_block(engine: MemoryEngine) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory as LIMemory

    from reverie.adapters.llamaindex.memory import SESSION_SOURCE_PREFIX, ReverieMemoryBlock

    engine.observe("user: my sister Ana lives in Porto and works at a cafe", source="old-chat")
    engine.observe("user: I am allergic to peanuts", source="old-chat")
    block = ReverieMemoryBlock(engine=engine, token_limit=200)
    earlier = [
        ChatMessage(role="user", content="I'm planning a trip to Portugal in May."),
        ChatMessage(role="assistant", content="Lovely! Lisbon and Porto are great in May."),
        ChatMessage(role="user", content="I want to visit my sister while I'm there."),
        ChatMessage(role="assistant", content="That sounds like a wonderful plan."),
    ]
    memory = LIMemory.from_defaults(
        session_id=SESSION,
        chat_history=earlier,
        token_limit=600,
        chat_history_token_ratio=0.05,  # 30 tokens of history: the earlier turns flush
        token_flush_size=40,
        memory_blocks=[block],
    )

    def days_until(month: int) -> int:
        """Days from 2025-03-03 until the first day of `month` in 2025."""
        return (datetime(2025, month, 1, tzinfo=UTC) - T0).days

    agent = FunctionAgent(
        tools=[days_until],
        llm=make_llm(max_tokens=120),
        system_prompt="You are a helpful travel assistant. Answer in one or two sentences.",
    )

    async def turn() -> str:
        return str(await agent.run("Which city does my sister live in?", memory=memory))

    with use_cassette("llamaindex_function_agent") as cassette:
        answer = asyncio.run(turn())

    assert answer.strip()
    first = bodies(cassette)[0]
    # FunctionAgent sends its system prompt, then Memory's system message with the blocks
    assert first["messages"][0] == {
        "role": "system",
        "content": "You are a helpful travel assistant. Answer in one or two sentences.",
    }
    memory_message = first["messages"][1]
    assert memory_message["role"] == "system"
    text = memory_message["content"]
    # the block's recall reached the model, inside LlamaIndex's memory template
    assert "<ReverieMemories>" in text
    assert "- [2025-03-03] user: my sister Ana lives in Porto and works at a cafe" in text
    # the earlier turns left short-term memory: only the new question is still in the chat
    assert first["messages"][2:] == [
        {"role": "user", "content": "Which city does my sister live in?"}
    ]
    assert first["tools"][0]["function"]["name"] == "days_until"

    # the turns flushed from short-term memory became traces sourced by the session
    flushed = [
        m
        for m in engine.memories()
        if f"{SESSION_SOURCE_PREFIX}{SESSION}" in m.sources
    ]
    texts = {m.text for m in flushed}
    assert "user: I'm planning a trip to Portugal in May." in texts
    assert all(m.tier is Tier.TRACE for m in flushed)
    assert {m.metadata["role"] for m in flushed} == {"user", "assistant"}


def test_rem_cycle_through_a_llamaindex_llm(engine: MemoryEngine) -> None:
    """`engine.consolidate(synthesizer=LlamaIndexSynthesizer(llm))`: the weak, related
    traces become one synthesis node written from the model's JSON."""
    from reverie.adapters.llamaindex.ports import LlamaIndexSynthesizer
    from reverie.core.models import Status

    clock = engine.clock
    assert isinstance(clock, ManualClock)
    for text in [
        # related traces a minute apart (the prompt lists them in time order)
        "user: my sister Ana moved to Porto in January",
        "user: Ana found a flat near the river in Porto",
        "user: Ana started working at a cafe in Porto",
    ]:
        engine.observe(text, source="chat-1")
        clock.advance(seconds=60)
    clock.advance(days=60)  # they fade below the consolidation threshold
    synth = LlamaIndexSynthesizer(make_llm())
    with use_cassette("llamaindex_consolidate") as cassette:
        report = engine.consolidate(synthesizer=synth)

    assert bodies(cassette)[0]["response_format"]["type"] == "json_object"
    (outcome,) = report.clusters
    assert outcome.synthesizer == synth.name and not outcome.fell_back and outcome.committed
    (node,) = engine.memories(tiers=[Tier.SYNTHESIS])
    members = list(engine.memories(statuses=[Status.CONSOLIDATED]))
    assert len(members) >= 2 and all(m.consolidated_into == node.id for m in members)
    assert node.derived_from == {m.id for m in members} == set(outcome.member_ids)
    assert node.sources == {"chat-1"} and "Ana" in node.text
    # recall now finds the synthesis, not the retired members (kept, not deleted)
    found = {h.id for h in engine.recall("Ana in Porto", k=5)}
    assert node.id in found and not found & node.derived_from
