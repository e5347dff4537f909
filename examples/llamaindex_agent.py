"""A LlamaIndex FunctionAgent whose memory has a long-term reverie block.

    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=not-needed \
    REVERIE_CHAT_MODEL=smollm2-135m python examples/llamaindex_agent.py "I love green tea."
    ... python examples/llamaindex_agent.py "What do I like to drink?"

Works with any OpenAI-compatible endpoint (llama.cpp, Ollama, vLLM, a hosted API).
REVERIE_HOME says where the memory lives (default: the per-user data directory).

LlamaIndex's `Memory` keeps the recent chat; the `ReverieMemoryBlock` puts what reverie
recalls for the latest messages into the system message, and stores the messages that
leave short-term memory as traces. Each run here is one chat session, so at its end the
session's messages are handed to the block too: the next run remembers them.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory

from reverie import MemoryEngine, open_engine
from reverie.adapters.llamaindex import ReverieMemoryBlock

SYSTEM = "You are a helpful assistant with a long-term memory. Answer in one short sentence."
NAMESPACE = "user/me"


def llm_from_env() -> Any:
    """An OpenAI-compatible chat model from OPENAI_BASE_URL, OPENAI_API_KEY and
    REVERIE_CHAT_MODEL."""
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=os.environ.get("REVERIE_CHAT_MODEL", "gpt-4o-mini"),
        api_base=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=4096,
        temperature=0.0,
        max_tokens=120,
    )


async def chat(engine: MemoryEngine, llm: Any, question: str, session_id: str) -> str:
    """One session of one turn: the agent answers with reverie's recall in its system
    message; then the session's messages go to long-term memory."""
    block = ReverieMemoryBlock(engine=engine, namespace=NAMESPACE, k=5)
    memory = Memory.from_defaults(session_id=session_id, token_limit=3000, memory_blocks=[block])
    agent = FunctionAgent(tools=[], llm=llm, system_prompt=SYSTEM)
    answer = await agent.run(question, memory=memory)
    # end of session: what is still in short-term memory becomes long-term memory
    await block.aput(await memory.aget_all(), session_id=session_id)
    return str(answer)


def main(question: str) -> None:
    with open_engine() as engine:
        print(asyncio.run(chat(engine, llm_from_env(), question, f"cli-{uuid.uuid4().hex[:8]}")))


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "I live in Lisbon and I love green tea.")
