"""What a user writes against reverie's public API, type-checked with `mypy --strict`.

tests/test_packaging.py checks this file against reverie installed the way a user gets it
(a wheel in site-packages), so it fails if the package stops shipping `py.typed` or the
public names lose their types. It is never run, only checked.
"""

from __future__ import annotations

from datetime import datetime

from reverie import (
    DEFAULT_POLICY,
    Hit,
    Kind,
    ManualClock,
    Memory,
    MemoryEngine,
    NotFound,
    Observation,
    Policy,
    RecallResult,
    ReverieError,
    Status,
    Tier,
    open_engine,
)
from reverie.adapters.langchain import ReverieRetriever, memory_tools
from reverie.adapters.langgraph import ReverieStore
from reverie.adapters.llamaindex import ReverieMemoryBlock


def prompt_context(engine: MemoryEngine, question: str) -> str:
    result: RecallResult = engine.recall(question, k=3, token_budget=200)
    best: list[Hit] = [hit for hit in result if hit.score > 0.1]
    return result.text() if best else ""


def main(home: str) -> None:
    policy = Policy()
    assert policy == DEFAULT_POLICY
    clock = ManualClock(datetime(2026, 1, 1))
    with open_engine(home, policy=policy, clock=clock, namespace="user/alice") as engine:
        trace: Memory = engine.observe("I moved to Lisbon in March.", source="chat-1")
        engine.observe_many([Observation("I love green tea.", source="chat-2")])
        fact: Memory = engine.remember("alice", "lives in", "Lisbon", source="chat-1")
        assert fact.kind is Kind.SEMANTIC and fact.tier in (Tier.UNIT, Tier.CRYSTAL)
        versions: list[Memory] = engine.history("alice", "lives in")
        current = [m for m in versions if m.status is Status.ACTIVE]
        print(trace.id, len(current), prompt_context(engine, "Where does Alice live?"))
        try:
            engine.forget("no-such-id")
        except NotFound:
            pass
        except ReverieError as e:
            print(e)
        retriever = ReverieRetriever(engine=engine, k=4)
        tools = memory_tools(engine, source="agent")
        store = ReverieStore(engine)
        block = ReverieMemoryBlock(engine=engine)
        print(retriever, len(tools), store, block)
