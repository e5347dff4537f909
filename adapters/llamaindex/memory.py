"""reverie as a LlamaIndex memory block: long-term memory for `llama_index.core.memory.Memory`.

LlamaIndex's `Memory` keeps a short-term FIFO of chat messages; when it overflows,
the oldest messages are flushed to every memory block (`aput`), and on every turn
each block is asked for content for the system message (`aget`). This block turns
flushed messages into reverie traces (the chat session is their source, so the same
sentence said in two sessions counts as two independent sources) and answers `aget`
with reverie's decay-aware recall for the latest messages, packed into the block's
token budget. Superseded facts, decay, promotion and consolidation all happen in the
engine; the block only translates.

    from llama_index.core.memory import Memory
    from reverie.adapters.llamaindex.memory import ReverieMemoryBlock
    from reverie.integrations import open_engine

    memory = Memory.from_defaults(
        session_id="chat-42",
        token_limit=4000,
        memory_blocks=[ReverieMemoryBlock(engine=open_engine(), namespace="user/alice")],
    )

Every engine call goes through its async twin (a worker thread), so the embedder
never blocks the agent's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reverie.adapters.arguments import as_invalid_input, check_engine, check_namespace
from reverie.core.engine import MemoryEngine, Observation, RecallResult, render_hit
from reverie.core.errors import InvalidInput, MissingExtra
from reverie.core.packing import pack

try:
    from llama_index.core.base.llms.types import ChatMessage, TextBlock
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.utils import get_tokenizer
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.llamaindex.memory", "llamaindex") from e

__all__ = ["SESSION_SOURCE_PREFIX", "ReverieMemoryBlock"]

# Framework-face defaults (per block, set on the instance; the lifecycle's numbers are
# in reverie.core.policy.Policy). k and the budget are sized for a system-message block
# next to a chat history, like VectorMemoryBlock's similarity_top_k and context window.
DEFAULT_K = 8
DEFAULT_TOKEN_LIMIT = 600
DEFAULT_CONTEXT_WINDOW = 3
DEFAULT_PRIORITY = 1  # 0 would mean "never truncate"; long-term memory may yield to history
DEFAULT_HEADER = "Long-term memories, most relevant first (date = when it was learned):"
SESSION_SOURCE_PREFIX = "llamaindex-session:"
_SESSION_KEY = "session_id"  # what BaseMemoryBlock.aput writes into additional_kwargs


def message_text(message: ChatMessage) -> str:
    """The text of a message (text blocks only: images and tool calls are not memories)."""
    return "".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def _messages(messages: Any) -> Sequence[ChatMessage]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not all(
        isinstance(m, ChatMessage) for m in messages
    ):
        raise InvalidInput(
            f"messages must be a list of LlamaIndex ChatMessage, got {type(messages).__name__}"
        )
    return messages


def _role(message: ChatMessage) -> str:
    role = message.role
    return str(getattr(role, "value", role))


class ReverieMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory with a lifecycle, as one block of LlamaIndex's `Memory`.

    `aput` (messages flushed from short-term memory): each user/assistant message with
    text becomes a trace `"<role>: <text>"` in `namespace`, with source
    `llamaindex-session:<session id>`. `aget`: recall for the last
    `retrieval_context_window` messages, at most `k` memories packed into
    `token_limit` tokens, rendered one per line under a short header.
    `atruncate` drops the lowest-ranked lines first when `Memory` is over its limit.
    """

    name: str = Field(default="ReverieMemories", description="The name of the memory block.")
    engine: MemoryEngine = Field(description="The reverie engine that holds the memories.")
    namespace: str | None = Field(
        default=None,
        description="reverie namespace (user or agent scope); None = the engine's default.",
    )
    k: int = Field(default=DEFAULT_K, ge=1, description="Most memories to recall per turn.")
    token_limit: int = Field(
        default=DEFAULT_TOKEN_LIMIT, ge=1, description="Token budget of the block's content."
    )
    retrieval_context_window: int = Field(
        default=DEFAULT_CONTEXT_WINDOW,
        ge=1,
        description="How many of the latest user/assistant messages form the recall query.",
    )
    roles: tuple[str, ...] = Field(
        default=("user", "assistant"),
        description="Message roles stored as traces and used for the query.",
    )
    priority: int = Field(default=DEFAULT_PRIORITY, description=BaseMemoryBlock.model_fields[
        "priority"
    ].description)
    header: str = Field(default=DEFAULT_HEADER, description="First line of the block content.")
    reinforce: bool = Field(
        default=True,
        description="Recalled memories restart their decay clock (False: read-only block).",
    )
    tokenizer_fn: Callable[[str], Sequence[Any]] = Field(
        default_factory=get_tokenizer,
        exclude=True,
        description="Token counter for packing and truncation (Memory's default tokenizer).",
    )

    def __init__(self, **data: Any) -> None:
        # checked before pydantic, so a bad namespace is reverie's typed InvalidNamespace
        # (pydantic would wrap it into a ValidationError)
        check_engine(data.get("engine"), "ReverieMemoryBlock")
        check_namespace(data.get("namespace"))
        if isinstance(data.get("roles"), str):  # pydantic would split "user" into letters
            raise InvalidInput(f"roles must be a tuple of role names, got {data['roles']!r}")
        with as_invalid_input("ReverieMemoryBlock"):
            super().__init__(**data)

    # ------------------------------------------------------------------ read

    def query_for(self, messages: Sequence[ChatMessage] | None) -> str:
        """The recall query: the latest messages' text, newest last, within the engine's
        text limit (the newest words are kept when it has to cut)."""
        texts = [
            message_text(m) for m in _messages(messages or []) if _role(m) in self.roles
        ]
        texts = [t for t in texts if t][-self.retrieval_context_window :]
        query = "\n".join(texts)
        limit = self.engine.policy.funnel.max_text_chars
        return query[-limit:] if len(query) > limit else query

    def _count(self, text: str) -> int:
        return len(self.tokenizer_fn(text))

    async def arecall(self, messages: Sequence[ChatMessage] | None) -> RecallResult | None:
        """The packed recall behind `aget` (None when there is nothing to ask)."""
        query = self.query_for(messages)
        if not query.strip():
            return None
        budget = self.token_limit - self._count(self.header) - 1
        if budget < 1:
            return None
        if self.engine.token_counter is not None:
            return await self.engine.arecall(
                query,
                namespace=self.namespace,
                k=self.k,
                token_budget=budget,
                reinforce=self.reinforce,
            )
        # An engine built without a token counter: pack here with Memory's tokenizer (the
        # memories cut by the budget are reinforced too: the price of no counter).
        result = await self.engine.arecall(
            query, namespace=self.namespace, k=self.k, reinforce=self.reinforce
        )
        hits, used = pack(list(result.hits), budget, render_hit, self._count)
        return RecallResult(result.query, tuple(hits), used)

    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        result = await self.arecall(messages)
        if result is None or not result.hits:
            return ""
        return f"{self.header}\n{result.text()}"

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop memories from the bottom (lowest ranked) until `tokens_to_truncate` are
        freed; None once no memory line is left (the header alone says nothing)."""
        if not content or tokens_to_truncate <= 0:
            return content or None
        head, _, body = content.partition("\n")
        lines = body.split("\n") if body else []
        freed = 0
        while lines and freed < tokens_to_truncate:
            freed += self._count(lines.pop()) + 1
        if not lines:
            return None
        return "\n".join([head, *lines])

    # ------------------------------------------------------------------ write

    def observations(self, messages: Sequence[ChatMessage]) -> list[Observation]:
        """What `aput` stores: one trace per user/assistant message with text; a message
        longer than the engine's text limit is stored in consecutive parts."""
        limit = self.engine.policy.funnel.max_text_chars
        out: list[Observation] = []
        for m in _messages(messages):
            role = _role(m)
            text = message_text(m)
            if role not in self.roles or not text:
                continue
            session = m.additional_kwargs.get(_SESSION_KEY)
            source = f"{SESSION_SOURCE_PREFIX}{session}" if session else None
            metadata = {"role": role, "via": "llamaindex"}
            if session:
                metadata[_SESSION_KEY] = str(session)
            prefix = f"{role}: "
            step = limit - len(prefix)
            if step < 1:
                raise InvalidInput(
                    f"Policy.funnel.max_text_chars ({limit}) is too small for a message"
                )
            for i in range(0, len(text), step):
                out.append(
                    Observation(prefix + text[i : i + step], source=source, metadata=metadata)
                )
        return out

    async def _aput(self, messages: list[ChatMessage]) -> None:
        items = self.observations(messages)
        if items:
            await self.engine.aobserve_many(items, namespace=self.namespace)
