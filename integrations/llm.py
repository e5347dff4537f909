"""`OpenAISynthesizer`: the `Synthesizer` port on any OpenAI-compatible endpoint
(OpenAI, llama.cpp's server, vLLM, Ollama's /v1) through the official `openai` client.

It asks for JSON mode with the schema attached (`response_format={"type":
"json_object", "schema": ...}`): llama.cpp turns the schema into a grammar, OpenAI
ignores the extra key, and neither rejects it, unlike the `json_schema` format that
local servers answer with HTTP 500. The client never retries on its own
(`max_retries=0`): core's consolidation retries with the validation error shown to the
model, so a retry is a better-informed question rather than the same one again.
Anything unusable (an HTTP error, a timeout, an answer cut off at `max_tokens`, text
that is not one JSON object) raises `SynthesisFailed`; checking the object against the
schema is core's job (`reverie.core.synthesis.validate_payload`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from reverie.core.errors import InvalidInput, MissingExtra, SynthesisFailed
from reverie.core.synthesis import parse_json_object

__all__ = ["OpenAISynthesizer", "parse_json_object"]

_SYSTEM = (
    "You answer with exactly one JSON object and nothing else: no prose, no code fences. "
    "It must match this JSON schema:\n{schema}"
)


class OpenAISynthesizer:
    """An OpenAI-compatible chat endpoint as reverie's LLM port.

    `api_key` defaults to $OPENAI_API_KEY, or a placeholder for local servers that
    need none. `timeout` is seconds per request; a slow answer is a failed attempt.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> None:
        try:
            import openai
        except ImportError as e:
            raise MissingExtra("OpenAISynthesizer", "openai") from e
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("model must name the model to ask, e.g. 'gpt-4o-mini'")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidInput(f"timeout must be a positive number of seconds, got {timeout!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInput(f"max_tokens must be a positive integer, got {max_tokens!r}")
        self.model = model
        self.timeout = float(timeout)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.name = f"openai:{model}"
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=self.timeout,
            max_retries=0,
        )

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        openai = self._openai
        system = _SYSTEM.format(schema=json.dumps(schema, sort_keys=True))
        messages: list[Any] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        response_format: Any = {"type": "json_object", "schema": dict(schema)}
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                response_format=response_format,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except openai.APITimeoutError as e:
            raise SynthesisFailed(
                f"the LLM did not answer within {self.timeout:g} s ({e})"
            ) from e
        except openai.OpenAIError as e:
            raise SynthesisFailed(f"the LLM call failed: {type(e).__name__}: {e}") from e
        if not response.choices:
            raise SynthesisFailed("the LLM returned no choices")
        choice = response.choices[0]
        content = choice.message.content or ""
        if choice.finish_reason == "length":
            raise SynthesisFailed(
                f"the answer was cut off at max_tokens={self.max_tokens} (truncated JSON): "
                f"{content[:200]!r}"
            )
        return parse_json_object(content)

    def __repr__(self) -> str:
        return f"OpenAISynthesizer(model={self.model!r}, base_url={str(self._client.base_url)!r})"
