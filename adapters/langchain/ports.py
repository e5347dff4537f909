"""reverie's ports from LangChain objects: any `Embeddings` as the embedder, any
`BaseChatModel` as the synthesizer (the LLM port).

The synthesizer asks for JSON the way local servers accept it: JSON mode
(`response_format={"type": "json_object", "schema": ...}`) or function calling. It does
not use `with_structured_output()`'s default (OpenAI's `json_schema` format), which
llama.cpp answers with HTTP 500. It only parses; checking the payload against the schema
and retrying with the error shown is core's job, so every LLM gets the same validation.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from reverie.core.errors import InvalidInput, InvalidVector, MissingExtra, SynthesisFailed

try:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langchain.ports", "langchain") from e

from reverie.core.ports import Vector

__all__ = ["ChatModelSynthesizer", "LangChainEmbedder"]

DEFAULT_SYSTEM = (
    "You are a careful memory assistant. Answer with one JSON object only, "
    "matching the requested schema. No prose, no code fences."
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_TOOL_NAME = "answer"


class LangChainEmbedder:
    """Any LangChain `Embeddings` as reverie's `Embedder`.

    The dimension is declared (or probed once with a short text) and every batch is
    checked against it, so a model swap cannot silently mix vector spaces; rows are
    unit-normalised because the vector index compares by cosine. `aembed` uses the
    model's own async path, so an async caller's loop is not blocked by a remote API.
    """

    def __init__(
        self, embeddings: Embeddings, *, dimension: int | None = None, name: str | None = None
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            raise InvalidInput(f"expected a LangChain Embeddings, got {type(embeddings).__name__}")
        self._embeddings = embeddings
        self._name = name or _model_name(embeddings)
        if dimension is None:
            dimension = len(embeddings.embed_query("dimension probe"))
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInput(f"dimension must be a positive integer, got {dimension!r}")
        self._dimension = dimension

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        batch = _texts(texts)
        if not batch:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return self._check(self._embeddings.embed_documents(batch), len(batch))

    async def aembed(self, texts: Sequence[str]) -> Vector:
        batch = _texts(texts)
        if not batch:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return self._check(await self._embeddings.aembed_documents(batch), len(batch))

    def _check(self, rows: Sequence[Sequence[float]], n: int) -> Vector:
        arr = np.asarray(rows, dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (n, self._dimension):
            raise InvalidVector(
                f"embeddings {self._name!r} returned shape {arr.shape}, expected "
                f"({n}, {self._dimension}); is the dimension right for this model?"
            )
        if not np.isfinite(arr).all():
            raise InvalidVector(f"embeddings {self._name!r} returned NaN or infinite values")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return np.ascontiguousarray(arr / norms, dtype=np.float32)

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self._name!r}, dimension={self._dimension})"


class ChatModelSynthesizer:
    """Any LangChain chat model as reverie's `Synthesizer`.

    `method="json_mode"` binds `response_format={"type": "json_object", "schema": schema}`
    (OpenAI-compatible servers such as llama.cpp constrain the output to the schema);
    `method="function_calling"` forces a tool call whose parameters are the schema. The
    answer is parsed into a dict; anything else (an HTTP error, prose, truncated JSON, a
    list) raises `SynthesisFailed` so core's retry can show the model what went wrong.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        method: Literal["json_mode", "function_calling"] = "json_mode",
        system: str = DEFAULT_SYSTEM,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInput(f"expected a LangChain BaseChatModel, got {type(model).__name__}")
        if method not in ("json_mode", "function_calling"):
            raise InvalidInput(f"method must be 'json_mode' or 'function_calling', not {method!r}")
        self.model = model
        self.method = method
        self.system = system

    @property
    def name(self) -> str:
        """Shown in consolidation reports: which model wrote a synthesis."""
        model = getattr(self.model, "model_name", None) or getattr(self.model, "model", None)
        return f"langchain:{type(self.model).__name__}" + (f":{model}" if model else "")

    def _runnable(self, schema: Mapping[str, Any]) -> Any:
        if self.method == "json_mode":
            return self.model.bind(
                response_format={"type": "json_object", "schema": dict(schema)}
            )
        tool = {
            "type": "function",
            "function": {
                "name": _TOOL_NAME,
                "description": "Give the answer as structured arguments.",
                "parameters": dict(schema),
            },
        }
        return self.model.bind_tools([tool], tool_choice=_TOOL_NAME)

    def _messages(self, prompt: str) -> list[BaseMessage]:
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInput("prompt is empty")
        return [SystemMessage(self.system), HumanMessage(prompt)]

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        messages = self._messages(prompt)
        try:
            reply = self._runnable(schema).invoke(messages)
        except Exception as e:  # any transport or server error is an unusable answer
            raise SynthesisFailed(f"the chat model call failed: {type(e).__name__}: {e}") from e
        return self._parse(reply)

    async def asynthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        messages = self._messages(prompt)
        try:
            reply = await self._runnable(schema).ainvoke(messages)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise SynthesisFailed(f"the chat model call failed: {type(e).__name__}: {e}") from e
        return self._parse(reply)

    def _parse(self, reply: Any) -> Mapping[str, Any]:
        if not isinstance(reply, AIMessage):
            raise SynthesisFailed(f"expected an AI message, got {type(reply).__name__}")
        if self.method == "function_calling":
            calls = reply.tool_calls
            if calls:
                return dict(calls[0]["args"])
            if reply.invalid_tool_calls:
                bad = reply.invalid_tool_calls[0]
                raise SynthesisFailed(
                    f"the tool call's arguments are not valid JSON: {bad.get('error')}: "
                    f"{str(bad.get('args'))[:200]!r}"
                )
            # some servers answer in plain content even when a tool is forced
        return parse_json_object(_content_text(reply))


def parse_json_object(text: str) -> dict[str, Any]:
    """One JSON object from a model's answer (code fences tolerated), else SynthesisFailed."""
    if not text.strip():
        raise SynthesisFailed("the model's answer is empty")
    m = _FENCE.match(text)
    body = m.group(1) if m else text.strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as e:
        raise SynthesisFailed(
            f"the model's answer is not valid JSON ({e.msg} at char {e.pos}): {body[:200]!r}"
        ) from e
    if not isinstance(value, dict):
        raise SynthesisFailed(f"expected a JSON object, got {type(value).__name__}")
    return value


def _content_text(msg: AIMessage) -> str:
    if isinstance(msg.content, str):
        return msg.content
    parts = [
        p if isinstance(p, str) else str(p.get("text", ""))
        for p in msg.content
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
    ]
    return "".join(parts)


def _texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInput("embed() takes a sequence of texts, not a single string")
    batch = list(texts)
    for i, t in enumerate(batch):
        if not isinstance(t, str):
            raise InvalidInput(f"text {i} is {type(t).__name__}, not str")
    return batch


def _model_name(embeddings: Embeddings) -> str:
    for attr in ("model", "model_name", "model_id"):
        v = getattr(embeddings, attr, None)
        if isinstance(v, str) and v:
            return f"langchain:{v}"
    return f"langchain:{type(embeddings).__name__}"
