"""Bad arguments at every face get reverie's typed errors (`reverie.core.errors`), raised
where the caller wrote them, and write nothing: never a framework's ValidationError, an
AttributeError from deep inside a call, or a value stored under a garbled namespace. The
MCP face answers a bad call with a tool error, never a traceback on the wire.

A real engine (SQLite, embedded Chroma, the real MiniLM model) behind every face.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.core.engine import MemoryEngine
from reverie.core.errors import (
    EmptyText,
    InvalidInput,
    InvalidNamespace,
    ReverieError,
    UnknownKind,
)
from tests.adapters.langchain_support import real_engine

pytestmark = pytest.mark.slow

NS = "user/alice"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryEngine]:
    e = real_engine(tmp_path_factory.mktemp("faces") / "home", namespace=NS)
    e.observe("Alice lives in Lisbon", namespace=NS)
    yield e
    e.close()


def count(engine: MemoryEngine) -> int:
    return sum(1 for ns in engine.namespaces() for _ in engine.memories(namespace=ns))


def refused(
    engine: MemoryEngine, call: Callable[[], Any], error: type[ReverieError], *words: str
) -> str:
    """`call` raises `error` (a reverie type) whose message names `words`; nothing
    was written."""
    before = count(engine)
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for w in words:
        assert w in message, message
    assert count(engine) == before
    return message


# ---------------------------------------------------------------- LangChain


def test_langchain_retriever_arguments(engine: MemoryEngine) -> None:
    from reverie.adapters.langchain import ReverieLangChainRetriever as R

    refused(engine, lambda: R(engine=None), InvalidInput, "MemoryEngine")
    refused(engine, lambda: R(engine=engine, k=0), InvalidInput, "k")
    refused(engine, lambda: R(engine=engine, k=True), InvalidInput, "k")
    refused(engine, lambda: R(engine=engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: R(engine=engine, as_of="yesterday"), InvalidInput, "as_of")
    refused(engine, lambda: R(engine=engine, include_history="yes"), InvalidInput,
            "include_history")  # fmt: skip
    refused(engine, lambda: R(engine=engine, reinforce=1), InvalidInput, "reinforce")
    refused(engine, lambda: R(engine=engine, token_budget=0), InvalidInput, "token_budget")
    # a misspelt option is an error, not silently the default
    refused(engine, lambda: R(engine=engine, nmespace=NS), InvalidInput, "nmespace")

    r = R(engine=engine, namespace=NS, k=2)
    refused(engine, lambda: r.invoke("where?", k="3"), InvalidInput, "k")
    refused(engine, lambda: r.invoke("where?", as_of="2025-01-01"), InvalidInput, "as_of")
    refused(engine, lambda: r.invoke("where?", reinforce="no"), InvalidInput, "reinforce")
    refused(engine, lambda: r.invoke("where?", namespace="other"), InvalidInput, "namespace")
    refused(engine, lambda: r.invoke(""), EmptyText)
    refused(engine, lambda: r.invoke(None), InvalidInput)
    refused(engine, lambda: asyncio.run(r.ainvoke("where?", k=0)), InvalidInput, "k")
    assert [d.page_content for d in r.invoke("where does Alice live?")] == [
        "Alice lives in Lisbon"
    ]


def test_langchain_tools_factory_and_calls(engine: MemoryEngine) -> None:
    from reverie.adapters.langchain import memory_tools

    refused(engine, lambda: memory_tools(None), InvalidInput, "MemoryEngine")  # type: ignore[arg-type]
    refused(engine, lambda: memory_tools(engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: memory_tools(engine, source=""), InvalidInput, "source")
    refused(engine, lambda: memory_tools(engine, k=0), InvalidInput, "k")
    refused(engine, lambda: memory_tools(engine, k=51), InvalidInput, "k", "50")

    tools = {t.name: t for t in memory_tools(engine, namespace=NS, k=2)}
    before = count(engine)
    # the model's bad arguments come back to it as the tool's answer, named as reverie's
    # error and the field, and the run goes on
    assert tools["recall"].invoke({"query": "x", "k": 0}) == (
        "InvalidInput: k: Input should be greater than or equal to 1"
    )
    assert tools["recall"].invoke({}) == "InvalidInput: query: Field required"
    assert tools["remember"].invoke({"text": 5}) == (
        "InvalidInput: text: Input should be a valid string"
    )
    call = {"type": "tool_call", "id": "c1", "name": "recall", "args": {"query": "x", "k": 99}}
    message = tools["recall"].invoke(call)
    assert message.status == "error" and message.content.startswith("InvalidInput: k:")
    assert tools["remember"].invoke({"text": "   "}).startswith("EmptyText:")
    assert count(engine) == before


def test_langchain_legacy_memory_arguments(engine: MemoryEngine) -> None:
    from reverie.adapters.langchain.memory import ReverieMemory as M

    refused(engine, lambda: M(engine=None), InvalidInput, "MemoryEngine")
    refused(engine, lambda: M(engine=engine, k=0), InvalidInput, "k")
    refused(engine, lambda: M(engine=engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: M(engine=engine, token_budget=-5), InvalidInput, "token_budget")
    refused(engine, lambda: M(engine=engine, session_id=""), InvalidInput, "session_id")
    refused(engine, lambda: M(engine=engine, return_messages="sometimes"), InvalidInput,
            "return_messages")  # fmt: skip
    memory = M(engine=engine, namespace=NS, session_id="chat-1")
    refused(engine, lambda: memory.save_context("hello", {"output": "hi"}), InvalidInput,
            "inputs")  # fmt: skip
    refused(engine, lambda: memory.save_context({"input": "a"}, ["hi"]), InvalidInput,
            "outputs")  # fmt: skip
    refused(engine, lambda: memory.save_context({"a": "1", "b": "2"}, {"o": "x"}),
            InvalidInput, "input_key")  # fmt: skip
    keyed = M(engine=engine, namespace=NS, input_key="question")
    refused(engine, lambda: keyed.load_memory_variables({"q": "where?"}), InvalidInput,
            "question")  # fmt: skip


# ---------------------------------------------------------------- LangGraph


def test_langgraph_store_arguments(engine: MemoryEngine) -> None:
    from langgraph.store.base import InvalidNamespaceError

    from reverie.adapters.langgraph import ReverieStore
    from reverie.adapters.langgraph.store import StoreNamespaceError, TTLNotSupported

    refused(engine, lambda: ReverieStore(None), InvalidInput, "MemoryEngine")  # type: ignore[arg-type]
    refused(engine, lambda: ReverieStore(engine, kind="feelings"), UnknownKind)
    refused(engine, lambda: ReverieStore(engine, index=5), InvalidInput, "index")  # type: ignore[arg-type]
    refused(engine, lambda: ReverieStore(engine, index={"fields": "text"}), InvalidInput,
            "fields")  # fmt: skip
    refused(engine, lambda: ReverieStore(engine, root="a/b"), InvalidNamespace, "root")

    store = ReverieStore(engine)
    users = ("users", "alice")
    # namespaces: reverie's InvalidNamespace and LangGraph's InvalidNamespaceError at once
    for bad in ((), ("a.b",), ("langgraph", "x"), ("users", ""), "users", ("users", 5)):
        message = refused(engine, lambda bad=bad: store.put(bad, "k", {"text": "x"}),
                          StoreNamespaceError)  # fmt: skip
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"text": "x"})  # type: ignore[arg-type]
        assert message
    refused(engine, lambda: asyncio.run(store.aput((), "k", {"text": "x"})), InvalidNamespace)
    refused(engine, lambda: store.search("users"), InvalidNamespace, "tuple")  # type: ignore[arg-type]
    refused(engine, lambda: store.get("users", "k"), InvalidNamespace)  # type: ignore[arg-type]
    # keys, values, index fields, ttl
    refused(engine, lambda: store.put(users, "", {"text": "x"}), InvalidInput, "key")
    refused(engine, lambda: store.put(users, "k", ["x"]), InvalidInput, "dict")  # type: ignore[arg-type]
    refused(engine, lambda: store.put(users, "k", {"when": datetime(2025, 1, 1)}),
            InvalidInput, "JSON")  # fmt: skip
    refused(engine, lambda: store.put(users, "k", {"text": "x"}, index="text"),  # type: ignore[arg-type]
            InvalidInput, "index")  # fmt: skip
    with pytest.raises(NotImplementedError):  # what LangGraph's stores without TTL raise
        store.put(users, "k", {"text": "x"}, ttl=5)
    refused(engine, lambda: store.put(users, "k", {"text": "x"}, ttl=5), TTLNotSupported)
    # search and listing
    refused(engine, lambda: store.search(users, limit=-1), InvalidInput, "limit")
    refused(engine, lambda: store.search(users, limit="3"), InvalidInput, "limit")  # type: ignore[arg-type]
    refused(engine, lambda: store.search(users, offset=-2), InvalidInput, "offset")
    refused(engine, lambda: store.search(users, query=5), InvalidInput, "query")  # type: ignore[arg-type]
    refused(engine, lambda: store.search(users, filter=[1]), InvalidInput, "filter")  # type: ignore[arg-type]
    refused(engine, lambda: store.search(users, filter={"n": {"$in": [1]}}), InvalidInput,
            "$in")  # fmt: skip
    refused(engine, lambda: store.list_namespaces(max_depth=0), InvalidInput, "max_depth")
    refused(engine, lambda: store.list_namespaces(limit="x"), InvalidInput, "limit")  # type: ignore[arg-type]
    refused(engine, lambda: store.history(users, 5), InvalidInput, "key")  # type: ignore[arg-type]
    # and the store still works
    store.put(users, "drink", {"text": "Alice likes green tea"})
    assert store.get(users, "drink").value == {"text": "Alice likes green tea"}  # type: ignore[union-attr]


# ---------------------------------------------------------------- LlamaIndex


def test_llamaindex_block_and_retriever_arguments(engine: MemoryEngine) -> None:
    from llama_index.core.base.llms.types import ChatMessage

    from reverie.adapters.llamaindex import ReverieLlamaIndexRetriever, ReverieMemoryBlock

    B = ReverieMemoryBlock
    refused(engine, lambda: B(engine=None), InvalidInput, "MemoryEngine")
    refused(engine, lambda: B(engine=engine, k=0), InvalidInput, "k")
    refused(engine, lambda: B(engine=engine, token_limit=0), InvalidInput, "token_limit")
    refused(engine, lambda: B(engine=engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: B(engine=engine, roles="user"), InvalidInput, "roles")
    refused(engine, lambda: B(engine=engine, header=5), InvalidInput, "header")
    block = B(engine=engine, namespace=NS)
    refused(engine, lambda: asyncio.run(block.aput("I moved to Porto")), InvalidInput,
            "ChatMessage")  # fmt: skip
    refused(engine, lambda: asyncio.run(block.aput(["I moved to Porto"])), InvalidInput,
            "ChatMessage")  # fmt: skip
    refused(engine, lambda: asyncio.run(block.aget(messages="where?")), InvalidInput,
            "ChatMessage")  # fmt: skip
    said = [ChatMessage(role="user", content="Where does Alice live?")]
    assert "Alice lives in Lisbon" in asyncio.run(block.aget(messages=said))

    R = ReverieLlamaIndexRetriever
    refused(engine, lambda: R(None), InvalidInput, "MemoryEngine")  # type: ignore[arg-type]
    refused(engine, lambda: R(engine, k=0), InvalidInput, "k")
    refused(engine, lambda: R(engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: R(engine, kinds=["feelings"]), UnknownKind)
    refused(engine, lambda: R(engine, kinds="semantic"), InvalidInput, "kinds")  # type: ignore[arg-type]
    refused(engine, lambda: R(engine, as_of="yesterday"), InvalidInput, "as_of")  # type: ignore[arg-type]
    refused(engine, lambda: R(engine, reinforce="no"), InvalidInput, "reinforce")  # type: ignore[arg-type]
    retriever = R(engine, namespace=NS, k=1)
    refused(engine, lambda: retriever.retrieve(5), InvalidInput, "query")  # type: ignore[arg-type]
    refused(engine, lambda: retriever.retrieve(None), InvalidInput, "query")  # type: ignore[arg-type]
    refused(engine, lambda: asyncio.run(retriever.aretrieve(5)), InvalidInput, "query")  # type: ignore[arg-type]
    refused(engine, lambda: retriever.retrieve("  "), EmptyText)
    [node] = retriever.retrieve("where does Alice live?")
    assert node.node.get_content() == "Alice lives in Lisbon"


# ---------------------------------------------------------------- MCP


def test_mcp_server_arguments_and_wire_errors(engine: MemoryEngine, tmp_path: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.types import TextContent

    from reverie.adapters.mcp import build_server
    from reverie.adapters.mcp.server import serve

    refused(engine, lambda: build_server(None), InvalidInput, "MemoryEngine")  # type: ignore[arg-type]
    refused(engine, lambda: build_server(engine, namespace="bad ns!"), InvalidNamespace)
    refused(engine, lambda: serve(engine, transport="pigeon"), InvalidInput, "transport")  # type: ignore[arg-type]
    refused(engine, lambda: serve(engine, transport="http", port=70000), InvalidInput, "port")
    refused(engine, lambda: serve(engine, transport="http", port=-1), InvalidInput, "port")

    server = build_server(engine, namespace=NS)
    # hostile types over the wire (the in-memory transport of the SDK's own client): each
    # is a tool error with a message, no traceback, nothing written
    bad_calls = [
        ("recall", {"query": "x", "k": "many"}, "k"),
        ("recall", {"query": ["x"]}, "query"),
        ("recall", {"query": "x", "include_history": "maybe"}, "include_history"),
        ("recall", {"query": "x", "as_of": [2025, 1, 1]}, "as_of"),
        ("observe", {"text": None}, "text"),
        ("observe", {"text": "hi", "namespace": 5}, "namespace"),
        ("observe", {"text": "hi", "source": ""}, "source"),
        ("remember", {"subject": "a", "predicate": "b"}, "object"),
        ("forget", {"memory_ids": "m1"}, "memory_ids"),
        ("confirm", {"memory_id": {"id": "x"}}, "memory_id"),
        ("history", {"subject": 5, "predicate": "likes"}, "subject"),
    ]

    async def scenario() -> None:
        with anyio.fail_after(240):
            await calls()

    async def calls() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            for tool, args, field in bad_calls:
                result = await client.call_tool(tool, args)
                text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
                assert result.is_error, (tool, args, text)
                assert field in text, (tool, args, text)
                assert "Traceback" not in text and 'File "' not in text, text
            ok = await client.call_tool("recall", {"query": "where does Alice live?", "k": 1})
            assert not ok.is_error
            assert ok.structured_content is not None
            assert ok.structured_content["hits"][0]["memory"]["text"] == "Alice lives in Lisbon"

    before = count(engine)
    anyio.run(scenario)
    assert count(engine) == before
