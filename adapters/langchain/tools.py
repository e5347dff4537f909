"""reverie's memory operations as LangChain tools, for `create_agent` and friends.

`memory_tools(engine, namespace=...)` returns four tools: remember, recall, forget and
confirm. Each has a small, typed argument schema the model sees, and runs on the
engine's async twin when the agent runs async. A reverie error (empty text, unknown id)
comes back to the model as the tool's answer, so it can correct itself instead of
crashing the run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from reverie.core.errors import MissingExtra, ReverieError

try:
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from pydantic import BaseModel, Field, ValidationError, create_model
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langchain.tools", "langchain") from e

from reverie.adapters.arguments import (
    check_engine,
    check_namespace,
    check_positive_int,
    check_source,
    validation_message,
)
from reverie.core.engine import MemoryEngine, RecallResult
from reverie.core.models import Memory

__all__ = ["memory_tools"]


class RememberArgs(BaseModel):
    text: str = Field(description="The thing to remember, as one short sentence.")
    subject: str | None = Field(
        default=None, description="Optional fact subject, e.g. 'user'. Give all three or none."
    )
    predicate: str | None = Field(
        default=None, description="Optional fact predicate, e.g. 'lives in'."
    )
    object: str | None = Field(default=None, description="Optional fact object, e.g. 'Lisbon'.")


MAX_K = 50  # the most memories one recall call may ask for


def _k_description(k: int) -> str:
    return f"How many memories to return (default {k}, at most {MAX_K})."


class RecallArgs(BaseModel):
    query: str = Field(description="What to look up in long-term memory.")
    k: int = Field(default=5, ge=1, le=MAX_K, description=_k_description(5))


def recall_args(k: int) -> type[RecallArgs]:
    """The recall schema with `k` as its default: the schema's default and its
    description are what the model is shown, and the default is what a call without `k`
    gets, so both must say the factory's `k`, not a fixed 5."""
    _check_tool_k(k)
    return create_model(
        "RecallArgs",
        __base__=RecallArgs,
        k=(int, Field(default=k, ge=1, le=MAX_K, description=_k_description(k))),
    )


def _check_tool_k(k: Any) -> int:
    return check_positive_int("k", k, maximum=MAX_K)


def _forgot(n: int, memory_id: str) -> str:
    """What the forget tool tells the model: forgetting a memory also erases its earlier
    versions and what it was made from, so one id can delete several records."""
    if n == 0:
        return f"no memory {memory_id!r} to forget"
    if n == 1:
        return "forgot 1 memory"
    return f"forgot {n} memories (the memory, its other versions and what it was made from)"


class IdArgs(BaseModel):
    memory_id: str = Field(description="The id of a memory, as returned by recall or remember.")


def _recall_text(result: RecallResult) -> str:
    if not result.hits:
        return "No memories found."
    return "\n".join(
        f"[{h.memory.id}] {h.memory.text} ({h.memory.tier.value})"
        for h in result
    )


def _memory_json(m: Memory) -> str:
    return json.dumps(
        {"id": m.id, "text": m.text, "tier": m.tier.value, "status": m.status.value}
    )


def memory_tools(
    engine: MemoryEngine,
    *,
    namespace: str | None = None,
    source: str | None = None,
    k: int = 5,
) -> list[BaseTool]:
    """The four memory tools bound to one namespace.

    `k` is how many memories the recall tool returns when the model does not say
    (1 to 50); the tool's schema shows the model that default.

    `source` names where remembered things come from (a thread or user id): the same
    fact from several independent sources gains confidence and may become a crystal;
    None gives every call its own source.

    Bad arguments here raise reverie's typed errors (`InvalidInput`, `InvalidNamespace`).
    Bad arguments from the model in a tool call (a missing query, k out of range) come
    back to it as the tool's answer, `InvalidInput: <field>: <what is wrong>`, as reverie
    errors do, so the agent can correct itself instead of crashing the run."""

    check_engine(engine, "memory_tools")
    check_namespace(namespace)
    check_source(source)
    recall_schema = recall_args(k)

    def _fact(
        subject: str | None, predicate: str | None, object: str | None
    ) -> tuple[str, str, str] | None:
        parts = (subject, predicate, object)
        if all(p is None for p in parts):
            return None
        if not all(p is not None and p.strip() for p in parts):
            raise ToolException("give subject, predicate and object together, or none")
        return (subject or "", predicate or "", object or "")

    def remember(
        text: str,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
    ) -> str:
        fact = _fact(subject, predicate, object)
        if fact is None:
            return _memory_json(engine.observe(text, namespace=namespace, source=source))
        return _memory_json(
            engine.remember(*fact, namespace=namespace, source=source, text=text)
        )

    async def aremember(
        text: str,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
    ) -> str:
        fact = _fact(subject, predicate, object)
        if fact is None:
            m = await engine.aobserve(text, namespace=namespace, source=source)
        else:
            m = await engine.aremember(*fact, namespace=namespace, source=source, text=text)
        return _memory_json(m)

    def recall(query: str, k: int = k) -> str:
        return _recall_text(engine.recall(query, namespace=namespace, k=k))

    async def arecall(query: str, k: int = k) -> str:
        return _recall_text(await engine.arecall(query, namespace=namespace, k=k))

    def forget(memory_id: str) -> str:
        n = engine.forget(memory_id, namespace=namespace)
        return _forgot(n, memory_id)

    async def aforget(memory_id: str) -> str:
        n = await engine.aforget(memory_id, namespace=namespace)
        return _forgot(n, memory_id)

    def confirm(memory_id: str) -> str:
        return _memory_json(engine.confirm(memory_id, namespace=namespace))

    async def aconfirm(memory_id: str) -> str:
        return _memory_json(await engine.aconfirm(memory_id, namespace=namespace))

    specs: list[tuple[Callable[..., str], Callable[..., Awaitable[str]], str, type[BaseModel], str]]
    specs = [
        (remember, aremember, "remember", RememberArgs,
         "Save something worth keeping in long-term memory (a preference, a fact, a plan). "
         "Returns the stored memory's id."),
        (recall, arecall, "recall", recall_schema,
         f"Search long-term memory. Returns the {k} best matching memories (unless you ask "
         "for another k) with their ids, best first."),
        (forget, aforget, "forget", IdArgs,
         "Permanently delete one memory by id (for example when the user asks to forget it)."),
        (confirm, aconfirm, "confirm", IdArgs,
         "Mark a memory as confirmed by the user, so it is never forgotten."),
    ]
    return [
        StructuredTool.from_function(
            func=_errors_to_tool(fn),
            coroutine=_aerrors_to_tool(afn),
            name=name,
            description=desc,
            args_schema=schema,
            handle_tool_error=True,
            handle_validation_error=_validation_answer,
        )
        for fn, afn, name, schema, desc in specs
    ]


def _validation_answer(error: Any) -> str:
    """What the model reads when its call's arguments fail the tool's schema."""
    if isinstance(error, ValidationError):
        return f"InvalidInput: {validation_message(error)}"
    return f"InvalidInput: {error}"


def _errors_to_tool(fn: Callable[..., str]) -> Callable[..., str]:
    def call(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except ReverieError as e:
            raise ToolException(f"{type(e).__name__}: {e}") from e

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def _aerrors_to_tool(fn: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    async def call(*args: Any, **kwargs: Any) -> str:
        try:
            return await fn(*args, **kwargs)
        except ReverieError as e:
            raise ToolException(f"{type(e).__name__}: {e}") from e

    call.__name__ = fn.__name__
    return call
