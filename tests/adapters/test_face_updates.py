"""Every face puts the newer value first after a change told in free text.

The same story through each face, on a real engine (SQLite file, embedded Chroma, the
real MiniLM model, a manual clock): the user says where they live, four months pass, and
they say they moved, in words that share little with the first statement; a day later
the question reuses the *old* statement's words. Through the LangGraph store (the change
written as a new item under a new key, as LangMem-style tools write it), the LangChain
retriever and legacy memory, and the LlamaIndex memory block, the current city comes
before the old one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reverie.core.engine import MemoryEngine
from tests.adapters.langchain_support import clock, real_engine

pytestmark = pytest.mark.slow

BEFORE = "I live in Berlin, near Tempelhofer Feld."
SMALL_TALK = "Any tips for a rainy Sunday afternoon?"
AFTER = "We finally moved to Lisbon last month, the new flat is in Alfama."
QUESTION = "Which city do I live in, near the park?"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = real_engine(tmp_path / "home")
    yield e
    e.close()


def position(texts: list[str], word: str) -> int:
    found = [i for i, t in enumerate(texts) if word in t]
    assert found, f"{word!r} is in none of {texts}"
    return found[0]


def test_langgraph_store_a_change_put_as_a_new_item_ranks_first(engine: MemoryEngine) -> None:
    from reverie.adapters.langgraph.store import ReverieStore, encode_namespace

    store = ReverieStore(engine)
    ns = ("memories", "user-1")
    store.put(ns, "m-1", {"content": BEFORE})
    clock(engine).advance(days=3)
    store.put(ns, "m-2", {"content": SMALL_TALK})
    clock(engine).advance(days=120)
    store.put(ns, "m-3", {"content": AFTER})
    clock(engine).advance(days=1)

    found = store.search(ns, query=QUESTION, limit=5)
    texts = [item.value["content"] for item in found]
    assert texts[0] == AFTER, texts
    # why: the new item was judged a newer version of the old one (another key), which
    # stays an item of its own: a newer item outranks it, it does not delete it
    (old,) = store.history(ns, "m-1")
    (new,) = store.history(ns, "m-3")
    why = engine.get(new.memory_id, namespace=encode_namespace(ns)).metadata["reverie_update"]
    assert why["of"] == old.memory_id and why["verdict"] == "outdates"
    item = store.get(ns, "m-1")
    assert item is not None and item.value["content"] == BEFORE


def test_langchain_retriever_puts_the_new_city_first(engine: MemoryEngine) -> None:
    from reverie.adapters.langchain.retriever import ReverieLangChainRetriever

    engine.observe(f"user: {BEFORE}", source="chat-1")
    clock(engine).advance(days=3)
    engine.observe(f"user: {SMALL_TALK}", source="chat-2")
    clock(engine).advance(days=120)
    engine.observe(f"user: {AFTER}", source="chat-9")
    clock(engine).advance(days=1)

    retriever = ReverieLangChainRetriever(engine=engine, k=3)
    docs = retriever.invoke(QUESTION)
    assert AFTER in docs[0].page_content
    texts = [d.page_content for d in docs]
    if any("Berlin" in t for t in texts):
        assert position(texts, "Lisbon") < position(texts, "Berlin")
    # the async path ranks the same
    again = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.page_content for d in again][:1] == texts[:1]


def test_langchain_memory_gives_the_chain_the_new_city(engine: MemoryEngine) -> None:
    from reverie.adapters.langchain.memory import ReverieMemory

    memory = ReverieMemory(engine=engine, k=1, session_id="session-1")
    memory.save_context({"input": BEFORE}, {"output": "Berlin is lovely."})
    clock(engine).advance(days=3)
    memory.save_context({"input": SMALL_TALK}, {"output": "A museum, perhaps."})
    clock(engine).advance(days=120)
    memory.save_context({"input": AFTER}, {"output": "Congratulations on the move!"})
    clock(engine).advance(days=1)

    # one line of room: the chain gets the current city, not the old one
    history = memory.load_memory_variables({"input": QUESTION})["history"]
    assert "Lisbon" in history and "Berlin" not in history, history


def test_llamaindex_block_puts_the_new_city_first(engine: MemoryEngine) -> None:
    from llama_index.core.base.llms.types import ChatMessage

    from reverie.adapters.llamaindex.memory import ReverieMemoryBlock

    def said(text: str) -> list[ChatMessage]:
        return [ChatMessage(role="user", content=text)]

    block = ReverieMemoryBlock(engine=engine, k=3)

    async def story() -> str:
        await block.aput(said(BEFORE), session_id="chat-1")
        clock(engine).advance(days=3)
        await block.aput(said(SMALL_TALK), session_id="chat-2")
        clock(engine).advance(days=120)
        await block.aput(said(AFTER), session_id="chat-9")
        clock(engine).advance(days=1)
        got: Any = await block.aget(said(QUESTION))
        return str(got)

    content = asyncio.run(story())
    lines = content.splitlines()[1:]  # the header first
    assert AFTER in lines[0], content
    if "Berlin" in content:
        assert position(lines, "Lisbon") < position(lines, "Berlin")
