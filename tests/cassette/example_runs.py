"""The three examples in `examples/`, each driven through one recorded scenario.

The same scenario runs two ways, against the same cassette:
- in the test process, where vcrpy replays the cassette (tests/cassette/test_langchain.py,
  tests/cassette/test_llamaindex_example.py check what reached the model);
- as a script, in a fresh venv that holds only `reverie[local,<face>]`
  (tests/cassette/test_examples_installed.py), against a loopback server that replays the
  cassette: the example runs exactly as a user who installed that extra runs it.

So this module imports nothing but the standard library, reverie and the example itself,
and each example builds its own chat model from OPENAI_BASE_URL, OPENAI_API_KEY and
REVERIE_CHAT_MODEL, as its docstring tells a user to.

    python example_runs.py <langchain_agent|langgraph_agent|llamaindex_agent> HOME
prints one JSON line: the answers and what the memory holds afterwards.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from reverie import ManualClock, MemoryEngine, open_engine

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

LANGCHAIN_QUESTION = "I live in Lisbon. What do I like to drink?"
LANGGRAPH_QUESTION = "What do I like to drink?"
LLAMAINDEX_TURNS = ("I live in Lisbon and I love green tea.", "What do I like to drink?")


def load_example(name: str, examples: Path = EXAMPLES) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", examples / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deterministic_engine(home: Path, namespace: str = "default") -> MemoryEngine:
    """A real engine (SQLite, embedded Chroma, MiniLM) on a manual clock whose ids count up
    (m0001, m0002, ...): tool answers that carry memory ids then replay byte for byte
    inside recorded LLM requests."""
    from reverie.integrations.chroma.index import ChromaIndex
    from reverie.integrations.embedders import LocalEmbedder
    from reverie.integrations.sqlite.store import SQLiteStore
    from reverie.integrations.tokens import tiktoken_counter

    counter = itertools.count(1)
    home.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(home / "memory.db")
    return MemoryEngine(
        store, store, ChromaIndex.embedded(home / "vectors"), LocalEmbedder(),
        clock=ManualClock(T0), default_namespace=namespace,
        token_counter=tiktoken_counter(), id_factory=lambda: f"m{next(counter):04d}",
    )


def langchain_turn(example: ModuleType, engine: MemoryEngine) -> dict[str, Any]:
    """A remembered drink, then one `create_agent` turn with the memory tools."""
    engine.observe("The user's favourite drink is green tea", namespace=example.NAMESPACE)
    state: dict[str, Any] = example.ask(example.chat_model(), engine, LANGCHAIN_QUESTION)
    return state


def langgraph_turn(example: ModuleType, engine: MemoryEngine) -> dict[str, Any]:
    """Two items in the user's store namespace, then one agent turn on `ReverieStore`."""
    from reverie.adapters.langgraph import ReverieStore

    agent = example.build_agent(example.chat_model(), engine)
    seed = ReverieStore(engine)
    seed.put(example.USER, "drink", {"text": "The user likes green tea"})
    seed.put(example.USER, "job", {"text": "The user works as a nurse"})
    state: dict[str, Any] = agent.invoke(
        {"messages": [{"role": "user", "content": LANGGRAPH_QUESTION}]}
    )
    return state


def llamaindex_sessions(
    example: ModuleType, engine: MemoryEngine, clock: ManualClock
) -> tuple[str, str, set[str]]:
    """Session 1 tells the agent a fact; three days later session 2 (a new Memory, a new
    session id) asks about it. Returns both answers and the texts stored after session 1."""
    llm = example.llm_from_env()
    llm.max_retries = 0  # a request missing from the cassette fails at once
    llm.timeout = 900.0  # recording shares two loaded cores

    async def two_sessions() -> tuple[str, str, set[str]]:
        # one event loop for both: the LLM's async HTTP client belongs to the loop
        first = await example.chat(engine, llm, LLAMAINDEX_TURNS[0], "session-1")
        stored = {m.text for m in engine.memories(namespace=example.NAMESPACE)}
        clock.advance(days=3)
        second = await example.chat(engine, llm, LLAMAINDEX_TURNS[1], "session-2")
        return str(first), str(second), stored

    return asyncio.run(two_sessions())


def _agent_summary(state: dict[str, Any]) -> dict[str, Any]:
    messages = state["messages"]
    return {
        "answer": str(messages[-1].content),
        "tool_calls": [
            c["name"] for m in messages for c in (getattr(m, "tool_calls", None) or [])
        ],
    }


def run(name: str, home: Path) -> dict[str, Any]:
    example = load_example(name)
    if name == "llamaindex_agent":
        clock = ManualClock(T0)
        with open_engine(home, clock=clock) as engine:
            first, second, stored = llamaindex_sessions(example, engine, clock)
            return {"answers": [first, second], "stored": sorted(stored)}
    engine = deterministic_engine(home, namespace="user/me")
    try:
        if name == "langchain_agent":
            out = _agent_summary(langchain_turn(example, engine))
            out["stored"] = sorted(m.text for m in engine.memories(namespace=example.NAMESPACE))
            return out
        if name == "langgraph_agent":
            from reverie.adapters.langgraph import ReverieStore

            out = _agent_summary(langgraph_turn(example, engine))
            hits = ReverieStore(engine, reinforce=False).search(
                example.USER, query=LANGGRAPH_QUESTION, limit=5
            )
            out["stored"] = sorted(h.value["text"] for h in hits)
            return out
    finally:
        engine.close()
    raise SystemExit(f"unknown example {name!r}")


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], Path(sys.argv[2]))))
