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


def test_history_keeps_the_order_the_lines_were_said(engine: MemoryEngine) -> None:
    mem = ReverieMemory(engine=engine, k=6, token_budget=None)
    turns = [
        ("I planted tomatoes in the garden", "Tomatoes love sun."),
        ("The garden also has basil", "Basil goes well with tomatoes."),
        ("Tomato plants need staking in the garden", "Yes, stake them early."),
    ]
    for said, reply in turns:
        mem.save_context({"input": said}, {"output": reply})
    # same clock instant for every line: the order still follows the conversation
    lines = mem.load_memory_variables({"input": "tomato garden"})["history"].splitlines()
    texts = [line.split("] ", 1)[1] for line in lines]
    spoken = [t for pair in turns for t in (f"Human: {pair[0]}", f"AI: {pair[1]}")]
    assert texts == [t for t in spoken if t in texts]
    assert len(texts) == 6


def test_return_messages_gives_chat_messages_in_order(engine: MemoryEngine) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    engine.observe("the user's cat is called Miso", source="import")
    mem = ReverieMemory(engine=engine, return_messages=True, k=3, token_budget=None)
    mem.save_context({"input": "my cat Miso is grey"}, {"output": "A grey cat, lovely."})
    got = mem.load_memory_variables({"input": "what colour is my cat Miso?"})["history"]
    assert [type(m) for m in got] == [SystemMessage, HumanMessage, AIMessage]
    assert [m.content for m in got[1:]] == ["my cat Miso is grey", "A grey cat, lovely."]
    assert mem.load_memory_variables({"input": "  "})["history"] == []
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
    )
    values = {"input": "and its name?"}
    rendered = prompt.invoke({**values, **mem.load_memory_variables(values)}).to_messages()
    assert isinstance(rendered[-1], HumanMessage) and len(rendered) > 1

    async def aload() -> list[object]:
        loaded = await mem.aload_memory_variables({"input": "what colour is my cat?"})
        return list(loaded["history"])

    assert [type(m) for m in asyncio.run(aload())] == [SystemMessage, HumanMessage, AIMessage]


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
    question = "how much does my gym membership cost?"
    # recall ranks the newer version first; the transcript keeps the order it was said in,
    # so the newer value is the last word on it
    assert engine.recall(question, k=3, reinforce=False)[0].text.startswith("Human: Heads up")
    lines = mem.load_memory_variables({"input": question})["history"].splitlines()
    new = [i for i, line in enumerate(lines) if line.endswith("went up to $60 a month")]
    old = [i for i, line in enumerate(lines) if line.endswith("costs $45 a month")]
    assert new and all(i < new[0] for i in old)
    # the AI's "actually" retired nothing
    assert all(m.is_active for m in engine.memories() if m.text.startswith("Human: Heads"))
