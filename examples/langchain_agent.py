"""A LangChain agent with reverie's memory tools (remember, recall, forget, confirm).

    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=not-needed \
    REVERIE_CHAT_MODEL=smollm2-135m python examples/langchain_agent.py "I live in Lisbon."

Works with any OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM, a hosted API).
REVERIE_HOME says where the memory lives (default: the per-user data directory).

The system prompt carries what `ReverieRetriever` recalls for the user's message, so
even a model that never calls a tool answers from memory; a model that does call tools
can remember, look up, confirm and forget memories itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from langchain.agents import create_agent

from reverie import MemoryEngine, open_engine
from reverie.adapters.langchain import ReverieRetriever, memory_tools

SYSTEM = (
    "You are a helpful assistant with a long-term memory. When the user tells you a "
    "fact about themselves, call the remember tool with it. Answer in one short "
    "sentence.\nWhat you remember:\n{memories}"
)
NAMESPACE = "user/me"


def ask(model: Any, engine: MemoryEngine, question: str) -> dict[str, Any]:
    """One agent turn: recall into the prompt, let the agent run, return its state."""
    retriever = ReverieRetriever(engine=engine, namespace=NAMESPACE, k=3)
    memories = "\n".join(f"- {d.page_content}" for d in retriever.invoke(question))
    agent = create_agent(
        model,
        tools=memory_tools(engine, namespace=NAMESPACE, source="example-chat"),
        system_prompt=SYSTEM.format(memories=memories or "- (nothing yet)"),
    )
    return agent.invoke({"messages": [{"role": "user", "content": question}]})


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
        state = ask(chat_model(), engine, question)
        print(state["messages"][-1].content)


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "I live in Lisbon and I love green tea.")
