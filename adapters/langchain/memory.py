"""reverie as a legacy LangChain `BaseMemory` (from `langchain-classic`), for old chains.

Deprecated upstream: LangChain's `BaseMemory` and the chains that use it
(`ConversationChain`, `LLMChain(memory=...)`) are deprecated since langchain 0.3 and
live on only in `langchain-classic`. New code should use `create_agent` with
`ReverieStore` (reverie.adapters.langgraph.store) or the memory tools
(reverie.adapters.langchain.tools). This class exists so an old chain gets reverie's
long-term memory without being rewritten.

Each exchange is saved as two traces ("Human: ..." and "AI: ..."), sourced by the
session; before each call the memories most relevant to the new input are recalled,
packed into `token_budget` tokens, and put under `memory_key` in the order they were
said (a reply never precedes its question): as text lines, or as chat messages with
`return_messages=True`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from reverie.core.errors import InvalidInput, MissingExtra

try:
    from langchain_classic.base_memory import BaseMemory
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from pydantic import ConfigDict, Field
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langchain.memory", "classic") from e

from reverie.adapters.arguments import (
    as_invalid_input,
    check_engine,
    check_namespace,
    check_positive_int,
)
from reverie.core.engine import Hit, MemoryEngine, Observation, RecallResult, render_hit

__all__ = ["ReverieMemory"]

# metadata entry on each saved line: {"said": ns timestamp of the save, "seq": position}.
# Two lines saved in one call share the engine's clock time; this keeps them in order.
_ORDER = "langchain_memory"


class ReverieMemory(BaseMemory):
    """Legacy chain memory over a reverie namespace (deprecated upstream; see the module).

    `session_id` is the source of every trace this memory saves (the same line said in
    two sessions gains confidence); `clear()` forgets only the traces its own session said.
    `return_messages=True` gives `memory_key` as `HumanMessage`/`AIMessage`s (lines
    another writer stored become `SystemMessage`s), for chat prompts.
    Needs an engine with a token counter (`open_engine` gives one) for `token_budget`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: MemoryEngine
    namespace: str | None = None
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    k: int = 8
    token_budget: int | None = 1000
    session_id: str = Field(default_factory=lambda: f"session:{uuid.uuid4().hex}")
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    return_messages: bool = False

    def __init__(self, **data: Any) -> None:
        # checked before pydantic sees them, so the caller gets reverie's typed errors
        check_engine(data.get("engine"), "ReverieMemory")
        check_namespace(data.get("namespace"))
        if "k" in data:
            check_positive_int("k", data["k"])
        if data.get("token_budget") is not None:
            check_positive_int("token_budget", data["token_budget"])
        session = data.get("session_id", "-")
        if not isinstance(session, str) or not session.strip():
            raise InvalidInput(f"session_id must be a non-empty string, got {session!r}")
        with as_invalid_input("ReverieMemory"):
            super().__init__(**data)

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    def _input(self, inputs: dict[str, Any]) -> str:
        _check_mapping("inputs", inputs)
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise InvalidInput(f"inputs have no {self.input_key!r} (the input_key)")
            return str(inputs[self.input_key])
        keys = [k for k in inputs if k not in (self.memory_key, "stop")]
        if len(keys) != 1:
            raise InvalidInput(f"one input key expected, got {keys}: set input_key")
        return str(inputs[keys[0]])

    def _output(self, outputs: dict[str, Any]) -> str:
        _check_mapping("outputs", outputs)
        if self.output_key is not None:
            if self.output_key not in outputs:
                raise InvalidInput(f"outputs have no {self.output_key!r} (the output_key)")
            return str(outputs[self.output_key])
        if len(outputs) != 1:
            raise InvalidInput(f"one output key expected, got {list(outputs)}: set output_key")
        return str(next(iter(outputs.values())))

    def _recall_kwargs(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "k": self.k, "token_budget": self.token_budget}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._input(inputs)
        if not query.strip():
            return {self.memory_key: self._render(None)}
        return {self.memory_key: self._render(self.engine.recall(query, **self._recall_kwargs()))}

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._input(inputs)
        if not query.strip():
            return {self.memory_key: self._render(None)}
        result = await self.engine.arecall(query, **self._recall_kwargs())
        return {self.memory_key: self._render(result)}

    def _render(self, result: RecallResult | None) -> str | list[BaseMessage]:
        """What was recalled (by relevance, within the budget), in the order it was said."""
        hits = sorted(result.hits, key=_said) if result is not None else []
        if not self.return_messages:
            return "\n".join(render_hit(h) for h in hits)
        return [self._message(h.memory.text) for h in hits]

    def _message(self, text: str) -> BaseMessage:
        for prefix, cls in ((self.human_prefix, HumanMessage), (self.ai_prefix, AIMessage)):
            if text.startswith(f"{prefix}: "):
                return cls(content=text[len(prefix) + 2 :])
        return SystemMessage(content=text)

    def _exchange(self, inputs: dict[str, Any], outputs: dict[str, str]) -> list[Observation]:
        pairs = [(self.human_prefix, self._input(inputs)), (self.ai_prefix, self._output(outputs))]
        said = time.time_ns()
        return [
            Observation(
                f"{who}: {text}", source=self.session_id,
                metadata={_ORDER: {"said": said, "seq": seq}},
            )
            for seq, (who, text) in enumerate(pairs)
            if text.strip()
        ]

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        self.engine.observe_many(self._exchange(inputs, outputs), namespace=self.namespace)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        await self.engine.aobserve_many(self._exchange(inputs, outputs), namespace=self.namespace)

    def clear(self) -> None:
        """Forget the traces that only its own session said (real deletion); others stay."""
        mine = [
            m.id
            for m in self.engine.memories(namespace=self.namespace)
            if m.sources == frozenset({self.session_id})
        ]
        if mine:
            self.engine.forget(*mine, namespace=self.namespace)


def _check_mapping(name: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{name} must be a dict of the chain's values, got {value!r}")


def _said(hit: Hit) -> tuple[Any, ...]:
    m = hit.memory
    order = m.metadata.get(_ORDER)
    if not isinstance(order, dict):
        order = {}
    return (m.created_at, order.get("said", 0), order.get("seq", 0), m.id)
