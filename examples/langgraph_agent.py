"""A LangGraph agent whose long-term memory is reverie, through `ReverieStore`.

    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=not-needed \
    REVERIE_CHAT_MODEL=smollm2-135m python examples/langgraph_agent.py "What do I like to drink?"

Works with any OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM, a hosted API).
REVERIE_HOME says where the memory lives (default: the per-user data directory).

Before each model call the store is searched for memories about the user's message and
they go into the system prompt; after the turn the user's message is stored. The agent
can also save and search memories itself with two tools that use the same store.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import after_agent, dynamic_prompt
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import HumanMessage

from reverie import MemoryEngine, open_engine
from reverie.adapters.langgraph import ReverieStore

SYSTEM = (
    "You are a helpful assistant with a long-term memory. Use the memories below when "
    "they answer the question. Answer in one short sentence.\nMemories:\n{memories}"
)
USER = ("users", "me")  # one namespace per user


def _last_user_text(messages: list[Any]) -> str:
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return str(m.content)
    return ""


@dynamic_prompt
def recall_into_prompt(request: Any) -> str:
    store = request.runtime.store
    query = _last_user_text(request.messages)
    hits = store.search(USER, query=query, limit=3) if query else []
    memories = "\n".join(f"- {h.value['text']}" for h in hits) or "- (none yet)"
    return SYSTEM.format(memories=memories)


@after_agent
def store_user_message(state: Any, runtime: Any) -> None:
    text = _last_user_text(state["messages"])
    if text:
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        runtime.store.put(USER, key, {"text": f"The user said: {text}"})


@tool
def save_memory(text: str, runtime: ToolRuntime) -> str:
    """Save one short fact about the user to long-term memory."""
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    runtime.store.put(USER, key, {"text": text})
    return f"saved {key}"


@tool
def search_memory(query: str, runtime: ToolRuntime) -> str:
    """Search long-term memory for facts about the user."""
    hits = runtime.store.search(USER, query=query, limit=3)
    return "\n".join(h.value["text"] for h in hits) or "nothing found"


def build_agent(model: Any, engine: MemoryEngine) -> Any:
    return create_agent(
        model,
        tools=[save_memory, search_memory],
        middleware=[recall_into_prompt, store_user_message],
        store=ReverieStore(engine),
    )


def chat_model() -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=os.environ.get("REVERIE_CHAT_MODEL", "gpt-4o-mini"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
        temperature=0,
    )


def main(question: str) -> None:
    with open_engine() as engine:
        agent = build_agent(chat_model(), engine)
        result = agent.invoke({"messages": [{"role": "user", "content": question}]})
        print(result["messages"][-1].content)


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "What do I like to drink?")
