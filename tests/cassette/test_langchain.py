"""LangChain's real client stack (ChatOpenAI -> openai -> httpx) against recorded answers
of the real local LLM server (SmolLM2-135M via llama.cpp): cluster synthesis through
`ChatModelSynthesizer` (JSON mode and function calling), a whole REM cycle with it, fact
extraction from traces, a malformed (truncated) answer handled by the retry path, and the
two examples (a `create_agent` turn with the memory tools; a LangGraph agent on
`ReverieStore`).

The model is tiny: the tests check the pipeline on its real output (requests sent,
parsing, validation, retries, what was written), not its wisdom. Replay needs neither the
model nor the server; `scripts/record-cassettes tests/cassette/test_langchain.py`
re-records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reverie.adapters.langchain.ports import ChatModelSynthesizer
from reverie.core.consolidation import synthesize_group
from reverie.core.engine import MemoryEngine
from reverie.core.extraction import EXTRACTION_SCHEMA
from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.synthesis import SYNTHESIS_SCHEMA, build_prompt
from tests.adapters.langchain_support import T0, clock, deterministic_engine
from tests.cassette import example_runs
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def make_model(max_tokens: int | None = 300, **kwargs: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        **kwargs,
        model=LLM_MODEL,
        base_url=llm_base_url(),
        api_key="not-needed",
        temperature=0,
        max_tokens=max_tokens,
        max_retries=0,
        timeout=900.0,
    )


def bodies(cassette: Any) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in cassette.requests]


def load_example(name: str) -> ModuleType:
    return example_runs.load_example(name, EXAMPLES)


def example_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an example's docstring tells a user to set: the example builds its own model."""
    monkeypatch.setenv("OPENAI_BASE_URL", llm_base_url())
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("REVERIE_CHAT_MODEL", LLM_MODEL)


def members() -> list[Memory]:
    texts = [
        "Ana moved to Porto in January.",
        "Ana started a job at a bakery in Porto.",
        "Actually Ana works at a cafe now, not the bakery.",
    ]
    return [
        Memory(id=f"m{i}", namespace="lc-synth", kind=Kind.EPISODIC, tier=Tier.TRACE, text=t,
               created_at=T0 + timedelta(days=i))
        for i, t in enumerate(texts)
    ]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = deterministic_engine(tmp_path / "home", namespace="user/me")
    yield e
    e.close()


# ---------------------------------------------------------------- synthesis


def test_cluster_synthesis_through_chatopenai_json_mode() -> None:
    synth = ChatModelSynthesizer(make_model())
    group = members()
    with use_cassette("langchain_synthesis") as cassette:
        result = synthesize_group(group, synth, DEFAULT_POLICY)
    body = bodies(cassette)[0]
    # JSON mode with the schema, never OpenAI's json_schema format (llama.cpp: HTTP 500)
    assert body["response_format"] == {"type": "json_object", "schema": SYNTHESIS_SCHEMA}
    assert body["messages"][1]["content"] == build_prompt(group)
    assert synth.name == f"langchain:ChatOpenAI:{LLM_MODEL}"
    assert result.synthesizer == synth.name
    assert not result.fell_back and result.attempts == 1
    assert 0.0 <= result.payload.importance <= 1.0
    assert "Ana" in result.payload.synthesis


def test_cluster_synthesis_through_function_calling() -> None:
    synth = ChatModelSynthesizer(make_model(), method="function_calling")
    with use_cassette("langchain_synthesis_tools") as cassette:
        result = synthesize_group(members(), synth, DEFAULT_POLICY)
    body = bodies(cassette)[0]
    assert "response_format" not in body
    assert body["tools"][0]["function"]["parameters"] == SYNTHESIS_SCHEMA
    assert body["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    assert not result.fell_back
    assert result.payload.synthesis.strip()


def test_rem_cycle_with_a_langchain_chat_model(engine: MemoryEngine) -> None:
    for text in [
        "user: my sister Ana moved to Porto in January",
        "user: Ana started a job at a bakery in Porto",
        "user: Ana in Porto works at a bakery near the river",
    ]:
        engine.observe(text, source="chat-1")
    clock(engine).advance(days=60)  # they fade below the consolidation threshold
    synth = ChatModelSynthesizer(make_model())
    with use_cassette("langchain_consolidate") as cassette:
        report = engine.consolidate(synthesizer=synth)
    print(report)
    n_calls = len(cassette.requests)
    syntheses = list(engine.memories(tiers=[Tier.SYNTHESIS]))
    consolidated = list(engine.memories(statuses=[Status.CONSOLIDATED]))
    assert n_calls >= 1 and len(syntheses) >= 1
    node = syntheses[0]
    assert node.derived_from == {m.id for m in consolidated if m.consolidated_into == node.id}
    assert "chat-1" in node.sources
    assert "Ana" in node.text and report.clusters[0].synthesizer == synth.name
    assert not report.clusters[0].fell_back
    assert bodies(cassette)[0]["response_format"]["type"] == "json_object"


# ---------------------------------------------------------------- fact extraction


TRACES = [
    "user: I moved to Lisbon last year",
    "user: my dog is called Rex",
    "user: lol ok",
    "user: I work as a nurse at the city hospital",
]


def test_fact_extraction_from_traces(engine: MemoryEngine) -> None:
    traces = [engine.observe(t, source="chat-1") for t in TRACES]
    synth = ChatModelSynthesizer(make_model())
    with use_cassette("langchain_extraction") as cassette:
        report = engine.extract_facts(synthesizer=synth)
    print(report)
    body = bodies(cassette)[0]
    assert body["response_format"] == {"type": "json_object", "schema": EXTRACTION_SCHEMA}
    prompt = body["messages"][1]["content"]
    assert all(t in prompt for t in TRACES)
    assert report.traces == 4 and report.batches == 1 and not report.failed_batches
    # what the recorded model did: one real fact, and the worked example's "Ana plays
    # cello" copied in, which the grounding check refused (it is in no trace)
    assert report.facts == 1
    assert report.rejected == ["fact 2: object 'cello' does not occur in trace 2"]
    units = [m for m in engine.memories(tiers=[Tier.UNIT, Tier.CRYSTAL])]
    assert len(units) >= 1 and report.facts >= len(units)
    by_id = {t.id: t for t in traces}
    for u in units:  # every fact cites the trace it came from and is grounded in it
        (src,) = u.sources
        assert src in by_id and u.fact is not None
        assert u.fact.object.lower() in by_id[src].text.lower()
        assert u.created_at == by_id[src].created_at

    # a second run asks again but writes nothing new: the same source said the same fact
    before = {(m.id, m.version) for m in engine.memories()}
    with use_cassette("langchain_extraction_again"):
        engine.extract_facts(synthesizer=synth)
    assert {(m.id, m.version) for m in engine.memories()} == before


def test_truncated_answer_is_retried_with_the_error_then_given_up(engine: MemoryEngine) -> None:
    for t in TRACES:
        engine.observe(t, source="chat-1")
    # llama.cpp ignores the `max_completion_tokens` ChatOpenAI sends; `max_tokens` in the
    # body cuts the answer mid-JSON
    synth = ChatModelSynthesizer(make_model(extra_body={"max_tokens": 12}))
    with use_cassette("langchain_extraction_malformed") as cassette:
        report = engine.extract_facts(synthesizer=synth)
    sent = bodies(cassette)
    assert len(sent) == 1 + DEFAULT_POLICY.maintenance.synthesis_retries
    assert "previous answer was unusable" not in sent[0]["messages"][1]["content"]
    # the answer stops mid-JSON (finish_reason "length"); openai's parser refuses it, the
    # port turns that into SynthesisFailed, and each retry shows the model the error
    for later in sent[1:]:
        assert (
            "previous answer was unusable: the chat model call failed: LengthFinishReasonError"
        ) in later["messages"][1]["content"]
    assert report.attempts == len(sent) and len(report.failed_batches) == 1
    assert report.facts == 0
    assert [m.tier for m in engine.memories()] == [Tier.TRACE] * 4  # nothing half-written


# ---------------------------------------------------------------- agents (the examples)


def test_langchain_agent_example_turn(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    example = load_example("langchain_agent")
    example_env(monkeypatch)
    with use_cassette("langchain_agent_example") as cassette:
        state = example_runs.langchain_turn(example, engine)
    sent = bodies(cassette)
    # the retriever's recall reached the model in the system prompt, and the tools' schemas
    assert "green tea" in sent[0]["messages"][0]["content"]
    tools = {t["function"]["name"]: t["function"] for t in sent[0]["tools"]}
    assert set(tools) == {"remember", "recall", "forget", "confirm"}
    # the model is told the recall tool's default k, the factory's (5 in the example)
    k = tools["recall"]["parameters"]["properties"]["k"]
    assert k["default"] == 5 and "default 5" in k["description"]
    messages = state["messages"]
    assert isinstance(messages[-1], AIMessage)
    # whatever the model chose to do, each tool call it made happened in reverie
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    print([(c["name"], c["args"]) for c in calls], messages[-1].content)
    for c in calls:
        assert c["id"] in results
        if c["name"] == "remember" and results[c["id"]].status == "success":
            stored = json.loads(str(results[c["id"]].content))
            assert engine.get(stored["id"], namespace=example.NAMESPACE).text == c["args"]["text"]
    assert len(sent) == 1 + sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
    # recorded: the tiny model answered from the recalled memory
    assert "green tea" in str(messages[-1].content)


def test_langgraph_agent_example_with_reverie_store(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.messages import AIMessage

    from reverie.adapters.langgraph.store import ReverieStore

    example = load_example("langgraph_agent")
    example_env(monkeypatch)
    with use_cassette("langgraph_agent_example") as cassette:
        state = example_runs.langgraph_turn(example, engine)
    sent = bodies(cassette)
    system = sent[0]["messages"][0]
    assert system["role"] == "system"
    # the store's decay-aware search put the right memory first in the prompt
    memories = system["content"].split("Memories:\n", 1)[1].splitlines()
    assert memories[0] == "- The user likes green tea"
    assert isinstance(state["messages"][-1], AIMessage)
    assert "green tea" in str(state["messages"][-1].content)  # recorded answer
    print(state["messages"][-1].content)
    # after the turn the user's message is in the store, under the user's namespace
    said = ReverieStore(engine).search(example.USER, query="What do I like to drink?", limit=5)
    assert "The user said: What do I like to drink?" in [h.value["text"] for h in said]
