"""reverie as a LangChain retriever: decay-aware recall behind `BaseRetriever`.

A chain or agent that already takes a retriever gets reverie's ranking (relevance
blended with decay, supersession, graph expansion) without knowing it is there; each
`Document` says in its metadata which memory it is and why it ranked, so a chain can
cite sources or drop faded memories itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.core.errors import InvalidInput, MissingExtra

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langchain.retriever", "langchain") from e

from reverie.adapters.arguments import (
    as_invalid_input,
    check_bool,
    check_datetime,
    check_engine,
    check_namespace,
    check_positive_int,
)
from reverie.adapters.hits import KIND, STATUS, TIER, explanation_dict, iso
from reverie.core.engine import Hit, MemoryEngine, RecallResult

__all__ = ["ReverieLangChainRetriever", "ReverieRetriever", "hit_metadata", "hit_to_document"]

# What a caller may change per call (`retriever.invoke(q, k=1)`, as LangChain's standard
# retriever tests do); anything else is a mistake worth an error, not a silent no-op.
_PER_CALL = frozenset({"k", "as_of", "include_history", "token_budget", "reinforce"})


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """Plain JSON-ready metadata: what the memory is, where it came from, why it ranked."""
    m = hit.memory
    meta: dict[str, Any] = {
        "id": m.id,
        "namespace": m.namespace,
        "kind": KIND[m.kind],
        "tier": TIER[m.tier],
        "status": STATUS[m.status],
        "sources": sorted(m.sources),
        "score": round(hit.score, 6),
        "explanation": explanation_dict(hit.explanation),
        "created_at": iso(m.created_at),
        "confidence": m.confidence,
        "importance": m.importance,
    }
    if m.fact is not None:
        meta["fact"] = {
            "subject": m.fact.subject,
            "predicate": m.fact.predicate,
            "object": m.fact.object,
        }
    if m.valid_to is not None:
        meta["valid_to"] = iso(m.valid_to)
    return meta


def hit_to_document(hit: Hit) -> Document:
    return Document(page_content=hit.memory.text, metadata=hit_metadata(hit), id=hit.memory.id)


class ReverieLangChainRetriever(BaseRetriever):
    """Documents from a reverie namespace, best first.

    `k` and the namespace are checked when the retriever is built, so a bad one fails
    where it is written, not at the first `invoke`. `k`, `as_of`, `include_history`,
    `token_budget` and `reinforce` can also be given per call:
    `retriever.invoke(query, k=1)`. `as_of` answers with what was believed at that time;
    `include_history` also returns superseded memories; `token_budget` packs the results
    (needs an engine with a token counter, which `open_engine` gives). Recall reinforces
    what it returns (the memory's decay clock restarts) unless `reinforce=False`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: MemoryEngine
    namespace: str | None = None
    k: int = 5
    as_of: datetime | None = None
    include_history: bool = False
    token_budget: int | None = None
    reinforce: bool = True

    def __init__(self, **data: Any) -> None:
        # checked before pydantic sees them, so the caller gets reverie's typed errors
        unknown = sorted(set(data) - set(type(self).model_fields))
        if unknown:
            raise InvalidInput(
                f"unknown retriever argument(s) {unknown}: give any of "
                f"{sorted(type(self).model_fields)}"
            )
        check_engine(data.get("engine"), "ReverieLangChainRetriever")
        check_namespace(data.get("namespace"))
        _check_options(data)
        with as_invalid_input("ReverieLangChainRetriever"):
            super().__init__(**data)

    def _recall_kwargs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(overrides) - _PER_CALL)
        if unknown:
            raise InvalidInput(
                f"unknown retriever argument(s) {unknown}: per call, give any of "
                f"{sorted(_PER_CALL)}"
            )
        _check_options(overrides)
        kwargs: dict[str, Any] = {
            "namespace": self.namespace,
            "k": self.k,
            "as_of": self.as_of,
            "include_history": self.include_history,
            "token_budget": self.token_budget,
            "reinforce": self.reinforce,
        }
        kwargs.update(overrides)
        return kwargs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return _documents(self.engine.recall(query, **self._recall_kwargs(kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # the engine's async twin runs recall in a worker thread: the loop never waits
        # on the embedder or the store
        return _documents(await self.engine.arecall(query, **self._recall_kwargs(kwargs)))


ReverieRetriever = ReverieLangChainRetriever
"""The name this retriever had before the LlamaIndex one took the same name; kept so
existing imports work."""


def _check_options(options: dict[str, Any]) -> None:
    """The recall options a caller may set, whether at construction or per call."""
    if "k" in options:
        check_positive_int("k", options["k"])
    if "token_budget" in options and options["token_budget"] is not None:
        check_positive_int("token_budget", options["token_budget"])
    if "as_of" in options:
        check_datetime("as_of", options["as_of"])
    for flag in ("include_history", "reinforce"):
        if flag in options:
            check_bool(flag, options[flag])


def _documents(result: RecallResult) -> list[Document]:
    return [hit_to_document(h) for h in result]
