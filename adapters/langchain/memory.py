"""reverie as a legacy LangChain `BaseMemory` (from `langchain-classic`), for old chains.

Deprecated upstream: LangChain's `BaseMemory` and the chains that use it
(`ConversationChain`, `LLMChain(memory=...)`) are deprecated since langchain 0.3 and
live on only in `langchain-classic`. New code should use `create_agent` with
`ReverieStore` (reverie.adapters.langgraph.store) or the memory tools
(reverie.adapters.langchain.tools). This class exists so an old chain gets reverie's
long-term memory without being rewritten.

Each exchange is saved as two traces ("Human: ..." and "AI: ..."), sourced by the
session; before each call the memories most relevant to the new input are recalled
and packed into `token_budget` tokens under `memory_key`.
"""

from __future__ import annotations

import uuid
from typing import Any

from reverie.core.errors import InvalidInput, MissingExtra

try:
    from langchain_classic.base_memory import BaseMemory
    from pydantic import ConfigDict, Field
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langchain.memory", "classic") from e

from reverie.core.engine import MemoryEngine, Observation, RecallResult

__all__ = ["ReverieMemory"]


class ReverieMemory(BaseMemory):
    """Legacy chain memory over a reverie namespace (deprecated upstream; see the module).

    `session_id` is the source of every trace this memory saves (the same line said in
    two sessions gains confidence); `clear()` forgets only the traces its own session said.
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

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    def _input(self, inputs: dict[str, Any]) -> str:
        if self.input_key is not None:
            return str(inputs[self.input_key])
        keys = [k for k in inputs if k not in (self.memory_key, "stop")]
        if len(keys) != 1:
            raise InvalidInput(f"one input key expected, got {keys}: set input_key")
        return str(inputs[keys[0]])

    def _output(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            return str(outputs[self.output_key])
        if len(outputs) != 1:
            raise InvalidInput(f"one output key expected, got {list(outputs)}: set output_key")
        return str(next(iter(outputs.values())))

    def _recall_kwargs(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "k": self.k, "token_budget": self.token_budget}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._input(inputs)
        if not query.strip():
            return {self.memory_key: ""}
        return {self.memory_key: _render(self.engine.recall(query, **self._recall_kwargs()))}

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        query = self._input(inputs)
        if not query.strip():
            return {self.memory_key: ""}
        result = await self.engine.arecall(query, **self._recall_kwargs())
        return {self.memory_key: _render(result)}

    def _exchange(self, inputs: dict[str, Any], outputs: dict[str, str]) -> list[Observation]:
        pairs = [(self.human_prefix, self._input(inputs)), (self.ai_prefix, self._output(outputs))]
        return [
            Observation(f"{who}: {text}", source=self.session_id)
            for who, text in pairs
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


def _render(result: RecallResult) -> str:
    return result.text()
