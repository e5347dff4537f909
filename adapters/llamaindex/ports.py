"""reverie's ports from LlamaIndex objects, and the reverse for the embedder.

- `LlamaIndexEmbedder(embed_model)`: any LlamaIndex `BaseEmbedding` as reverie's
  `Embedder` port (unit-normalised float32 rows).
- `ReverieEmbedding(embedder)`: a reverie `Embedder` (e.g. the offline MiniLM
  `LocalEmbedder`) as a LlamaIndex `BaseEmbedding`, so a LlamaIndex index and reverie
  can share one model; its async methods run in a worker thread.
- `LlamaIndexSynthesizer(llm)`: any LlamaIndex `LLM` as reverie's `Synthesizer` port for
  consolidation. It asks for JSON mode (`response_format={"type": "json_object",
  "schema": ...}`, which llama.cpp, Ollama, vLLM and OpenAI accept; OpenAI's
  `json_schema` format is not used because llama.cpp rejects it with HTTP 500), parses
  the answer, and raises `SynthesisFailed` for anything unusable; checking the payload
  against the schema and retrying is core consolidation's job.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reverie.core.errors import InvalidInput, InvalidVector, MissingExtra, SynthesisFailed
from reverie.core.ports import Embedder, Vector
from reverie.core.synthesis import parse_json_object

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.llms import LLM
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.llamaindex.ports", "llamaindex") from e

__all__ = ["LlamaIndexEmbedder", "LlamaIndexSynthesizer", "ReverieEmbedding", "parse_json_object"]

_PROBE = "dimension probe"
_SYSTEM = (
    "You answer with exactly one JSON object and nothing else: no prose, no code fences. "
    "It must match this JSON schema:\n{schema}"
)


def _normalised(rows: Sequence[Sequence[float]], name: str, dim: int | None) -> Vector:
    arr = np.asarray(rows, dtype=np.float32)
    if arr.ndim != 2 or (dim is not None and arr.shape[1] != dim):
        raise InvalidVector(f"embedding model {name!r} returned shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InvalidVector(f"embedding model {name!r} returned NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InvalidVector(f"embedding model {name!r} returned an all-zero vector")
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


class LlamaIndexEmbedder:
    """A LlamaIndex `BaseEmbedding` as reverie's `Embedder` port.

    reverie stores the embedder's name and dimension with the data and refuses to mix
    models, so `name` is `llamaindex:<class>:<model_name>`. The dimension is probed with
    one embedding call on first use unless given.
    """

    def __init__(self, embed_model: BaseEmbedding, *, dimension: int | None = None) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise InvalidInput(
                f"expected a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        if dimension is not None and (isinstance(dimension, bool) or dimension < 1):
            raise InvalidInput(f"dimension must be a positive integer, got {dimension!r}")
        self._model = embed_model
        self._dimension = dimension

    @property
    def name(self) -> str:
        return f"llamaindex:{type(self._model).__name__}:{self._model.model_name}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self._model.get_text_embedding(_PROBE))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        if isinstance(texts, str):
            raise InvalidInput("embed() takes a sequence of texts, not a single string")
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = self._model.get_text_embedding_batch(batch)
        return _normalised(rows, self.name, self.dimension)

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.name!r})"


class ReverieEmbedding(BaseEmbedding):
    """A reverie `Embedder` as a LlamaIndex `BaseEmbedding` (queries and texts alike:
    the symmetric sentence models reverie defaults to have no query instruction)."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", embedder.name)
        super().__init__(**kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "ReverieEmbedding"

    def _one(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder.embed([text])[0]]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._one(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._one(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._one, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._one, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


class LlamaIndexSynthesizer:
    """A LlamaIndex `LLM` as reverie's `Synthesizer` port.

    `json_mode=True` (default) sends `response_format={"type": "json_object",
    "schema": schema}` with the chat call; OpenAI-compatible LLM classes
    (`OpenAI`, `OpenAILike`) forward it to the server. Set `json_mode=False` for an LLM
    class that rejects unknown keyword arguments: the schema is then only in the
    system message and the answer is still parsed and validated.
    """

    def __init__(self, llm: LLM, *, json_mode: bool = True) -> None:
        if not isinstance(llm, LLM):
            raise InvalidInput(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm
        self.json_mode = json_mode

    @property
    def name(self) -> str:
        """Shown in consolidation reports and stored on synthesis nodes."""
        model = getattr(self.llm, "model", None) or self.llm.metadata.model_name
        return f"llamaindex:{type(self.llm).__name__}:{model}"

    def _request(
        self, prompt: str, schema: Mapping[str, Any]
    ) -> tuple[list[ChatMessage], dict[str, Any]]:
        system = _SYSTEM.format(schema=json.dumps(schema, sort_keys=True))
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=system),
            ChatMessage(role=MessageRole.USER, content=prompt),
        ]
        kwargs: dict[str, Any] = {}
        if self.json_mode:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(schema)}
        return messages, kwargs

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        messages, kwargs = self._request(prompt, schema)
        try:
            response = self.llm.chat(messages, **kwargs)
        except Exception as e:  # HTTP errors, timeouts, refused connections: all unusable
            raise SynthesisFailed(f"the LLM call failed: {type(e).__name__}: {e}") from e
        return parse_json_object(response.message.content or "")

    async def asynthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """`synthesize` through the LLM's own async client (no thread needed)."""
        messages, kwargs = self._request(prompt, schema)
        try:
            response = await self.llm.achat(messages, **kwargs)
        except Exception as e:
            raise SynthesisFailed(f"the LLM call failed: {type(e).__name__}: {e}") from e
        return parse_json_object(response.message.content or "")

    def __repr__(self) -> str:
        return f"LlamaIndexSynthesizer({type(self.llm).__name__})"
