"""The legacy `BaseMemory` (langchain-classic) on real parts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.adapters.langchain.memory import ReverieMemory
from reverie.core import InvalidInput, ManualClock
from reverie.core.engine import MemoryEngine
from tests.adapters.langchain_support import real_engine

pytestmark = pytest.mark.slow


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = real_engine(tmp_path / "home", namespace="chat")
    yield e
    e.close()


def test_saves_exchanges_as_traces_and_loads_relevant_ones(engine: MemoryEngine) -> None:
    mem = ReverieMemory(engine=engine, session_id="s1", k=2)
    mem.save_context({"input": "My cat is called Miso"}, {"output": "Nice name!"})
    mem.save_context({"input": "I work at Globex"}, {"output": "Noted."})
    traces = {m.text: m for m in engine.memories()}
    assert set(traces) == {
        "Human: My cat is called Miso", "AI: Nice name!", "Human: I work at Globex", "AI: Noted.",
    }
    assert all(m.sources == frozenset({"s1"}) for m in traces.values())
    assert mem.memory_variables == ["history"]
    loaded = mem.load_memory_variables({"input": "what is my cat's name?"})["history"]
    assert loaded.splitlines()[0].endswith("Human: My cat is called Miso")


def test_memory_fits_the_token_budget(engine: MemoryEngine) -> None:
    mem = ReverieMemory(engine=engine, k=30, token_budget=40)
    for i in range(15):
        mem.save_context({"input": f"fact {i}: the garden has {i} tomato plants"}, {"output": "ok"})
    text = mem.load_memory_variables({"input": "tomato plants in the garden"})["history"]
    assert engine.token_counter is not None
    assert 0 < engine.token_counter(text) <= 40
    assert len(text.splitlines()) < 15


def test_async_path_and_clear_only_forgets_this_session(engine: MemoryEngine) -> None:
    mine = ReverieMemory(engine=engine, session_id="mine")
    other = ReverieMemory(engine=engine, session_id="other")

    async def run() -> str:
        await mine.asave_context({"question": "I live in Porto"}, {"answer": "Lovely city"})
        return str((await mine.aload_memory_variables({"question": "where do I live"}))["history"])

    assert "Porto" in asyncio.run(run())
    other.save_context({"input": "I like jazz"}, {"output": "Me too"})
    mine.clear()
    assert {m.text for m in engine.memories()} == {"Human: I like jazz", "AI: Me too"}


def test_ambiguous_keys_are_a_clear_error(engine: MemoryEngine) -> None:
    mem = ReverieMemory(engine=engine)
    with pytest.raises(InvalidInput, match="input_key"):
        mem.load_memory_variables({"a": "x", "b": "y"})
    with pytest.raises(InvalidInput, match="output_key"):
        mem.save_context({"input": "x"}, {"a": "1", "b": "2"})
    assert list(engine.memories()) == []


def test_works_in_a_legacy_chain_prompt(engine: MemoryEngine) -> None:
    from langchain_core.prompts import PromptTemplate

    mem = ReverieMemory(engine=engine, input_key="input")
    mem.save_context({"input": "my favourite colour is teal"}, {"output": "teal it is"})
    prompt = PromptTemplate.from_template("Memories:\n{history}\nUser: {input}")
    values = {"input": "what colour do I like?"}
    rendered = prompt.format(**values, **mem.load_memory_variables(values))
    assert "favourite colour is teal" in rendered


def test_a_change_told_in_the_chat_puts_the_new_value_first(engine: MemoryEngine) -> None:
    mem = ReverieMemory(engine=engine, session_id="s1", k=3)
    mem.save_context({"input": "My gym membership costs $45 a month"}, {"output": "Got it."})
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=30)
    mem.save_context(
        {"input": "Heads up, my gym membership went up to $60 a month"},
        {"output": "Actually, that is still cheaper than most gyms."},
    )
    loaded = mem.load_memory_variables({"input": "how much does my gym membership cost?"})
    first = loaded["history"].splitlines()[0]
    assert first.endswith("Human: Heads up, my gym membership went up to $60 a month")
    # the AI's "actually" retired nothing
    assert all(m.is_active for m in engine.memories() if m.text.startswith("Human: Heads"))
