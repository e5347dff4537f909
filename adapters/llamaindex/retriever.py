"""reverie as a LlamaIndex retriever: decay-aware recall as `NodeWithScore`s.

Drop-in wherever LlamaIndex takes a `BaseRetriever` (query engines, `RetrieverTool`,
routers). Each node is one memory: its id is the memory id, its score reverie's
final score, and its metadata carries what a caller needs to trust or act on it
(tier, status, sources, the score explanation). Those bookkeeping keys are hidden
from the LLM and the embedder, which see only the memory's text and date.

    from reverie.adapters.llamaindex import ReverieLlamaIndexRetriever
    retriever = ReverieLlamaIndexRetriever(open_engine(), namespace="user/alice", k=5)
    for n in retriever.retrieve("where does Alice live?"):
        print(n.score, n.node.get_content(), n.node.metadata["tier"])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from reverie.adapters.arguments import (
    check_bool,
    check_datetime,
    check_engine,
    check_namespace,
    check_positive_int,
)
from reverie.adapters.hits import KIND, STATUS, TIER, explanation_dict, iso
from reverie.core.engine import Hit, MemoryEngine, RecallResult
from reverie.core.errors import InvalidInput, MissingExtra
from reverie.core.models import Kind, parse_kind

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index_instrumentation.dispatcher import DISPATCHER_SPAN_DECORATED_ATTR
    from pydantic import BaseModel
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.llamaindex.retriever", "llamaindex") from e

__all__ = ["ReverieLlamaIndexRetriever", "ReverieRetriever", "hit_to_node"]

DEFAULT_K = 5  # framework-face default, per retriever (LlamaIndex's own default is 2)

# What the LLM sees besides the text: only when the memory was learned.
_LLM_VISIBLE = frozenset({"created_at"})


# the metadata keys of every node, in order; all but _LLM_VISIBLE hidden from the LLM,
# all hidden from the embedder
_KEYS = ("memory_id", "namespace", "kind", "tier", "status", "sources", "confidence",
         "created_at", "superseded_by", "explanation")  # fmt: skip
_HIDDEN_FROM_LLM = tuple(k for k in _KEYS if k not in _LLM_VISIBLE)


_M = TypeVar("_M", bound=BaseModel)

# Immutable defaults can be shared by every instance, as pydantic itself shares them.
_IMMUTABLE = (str, int, float, bool, type(None), tuple, frozenset)


def _trusted(model: type[_M], given: tuple[str, ...]) -> Callable[[dict[str, Any]], _M]:
    """A constructor for `model` from values the caller built with the fields' own types
    (a fresh dict, keys in the model's field order), producing exactly what
    `model(**values)` produces (same fields, defaults and `model_fields_set`; tests hold
    them equal) without re-validating them.

    Why: a retriever turns every hit of every recall into a `TextNode` and a
    `NodeWithScore`, and pydantic's validation of values this module has just built was
    most of what the LlamaIndex face added to `engine.recall`
    (benchmarks/face_overhead.py). `model_construct` skips validation too, but its
    per-field Python loop costs more than the validation it skips. Models whose
    construction does more than fill fields (validators, post-init hooks, private
    attributes, extra fields, defaults computed from other fields or mutable shared
    defaults) keep the validated constructor."""
    info = model.__pydantic_decorators__
    plain = (
        model.__pydantic_post_init__ is None
        and not model.__private_attributes__
        and not model.__pydantic_root_model__
        and model.model_config.get("extra") != "allow"
        and not (info.validators or info.field_validators or info.root_validators
                 or info.model_validators)
        and set(given) <= set(model.model_fields)
    )  # fmt: skip
    template: dict[str, Any] = {}  # every field, in declaration order, as validation orders them
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, field in model.model_fields.items():
        template[name] = field.default
        if name in given:
            continue
        factory = field.default_factory
        if factory is not None and not getattr(
            field, "default_factory_takes_validated_data", False
        ):
            factories.append((name, factory))  # type: ignore[arg-type]
        elif (
            factory is not None or field.is_required() or not isinstance(field.default, _IMMUTABLE)
        ):
            plain = False
    if not plain:
        return lambda values: model(**values)
    fields_set = set(given)
    complete = not factories and len(given) == len(template)
    new, set_attr = object.__new__, object.__setattr__

    def build(values: dict[str, Any]) -> _M:
        if complete:  # every field given: the caller's fresh dict is the state
            state = values
        else:
            state = template.copy()
            state.update(values)
            for name, factory in factories:
                state[name] = factory()
        obj = new(model)
        set_attr(obj, "__dict__", state)
        set_attr(obj, "__pydantic_fields_set__", fields_set.copy())
        set_attr(obj, "__pydantic_extra__", None)
        set_attr(obj, "__pydantic_private__", None)
        return obj

    return build


_text_node = _trusted(TextNode, ("id_", "text", "metadata", "excluded_embed_metadata_keys",
                                  "excluded_llm_metadata_keys"))  # fmt: skip
_node_with_score = _trusted(NodeWithScore, ("node", "score"))


def hit_to_node(hit: Hit) -> NodeWithScore:
    """One recalled memory as a LlamaIndex node, scored by reverie's final score."""
    m = hit.memory
    node = _text_node(
        {
            "id_": m.id,
            "text": m.text,
            "metadata": {
                "memory_id": m.id,
                "namespace": m.namespace,
                "kind": KIND[m.kind],
                "tier": TIER[m.tier],
                "status": STATUS[m.status],
                "sources": sorted(m.sources),
                "confidence": m.confidence,
                "created_at": iso(m.created_at),
                "superseded_by": m.superseded_by,
                "explanation": explanation_dict(hit.explanation),
            },
            "excluded_embed_metadata_keys": list(_KEYS),
            "excluded_llm_metadata_keys": list(_HIDDEN_FROM_LLM),
        }
    )
    return _node_with_score({"node": node, "score": float(hit.score)})


def _one_span(method: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a method so LlamaIndex does not wrap it in a span of its own.

    LlamaIndex wraps every override of a traced or abstract `BaseRetriever` method in a
    span. Here `retrieve` / `aretrieve` only check the query and call the base method,
    which opens the call's span, and `_retrieve` runs inside that span; wrapped, a
    synchronous retrieval showed three spans (the async one two) for one recall, each
    paying for a signature binding and a uuid. Marked, each retrieval is one span with
    LlamaIndex's start and end events and callback events, sync and async alike."""
    setattr(method, DISPATCHER_SPAN_DECORATED_ATTR, True)
    return method


class ReverieLlamaIndexRetriever(BaseRetriever):
    """A `BaseRetriever` over one reverie namespace.

    `as_of` answers with what was believed then (superseded versions valid at that
    time included, nothing reinforced); `include_history` also returns superseded and
    consolidated memories; `reinforce=False` reads without restarting decay clocks.
    `_aretrieve` runs recall in a worker thread, so it never blocks the event loop.
    """

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        namespace: str | None = None,
        k: int = DEFAULT_K,
        as_of: datetime | None = None,
        include_history: bool = False,
        reinforce: bool = True,
        kinds: Iterable[Kind | str] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.engine = check_engine(engine, "ReverieLlamaIndexRetriever")
        self.namespace = check_namespace(namespace)
        self.k = check_positive_int("k", k)
        self.as_of = check_datetime("as_of", as_of)
        self.include_history = check_bool("include_history", include_history)
        self.reinforce = check_bool("reinforce", reinforce)
        if isinstance(kinds, str):
            raise InvalidInput(f"kinds must be a list of kinds, got {kinds!r}")
        self.kinds = (
            None if kinds is None
            else [parse_kind(x.value if isinstance(x, Kind) else x) for x in kinds]
        )  # fmt: skip
        if callback_manager is not None and not isinstance(callback_manager, CallbackManager):
            raise InvalidInput(
                f"callback_manager must be a CallbackManager, got {callback_manager!r}"
            )
        super().__init__(callback_manager=callback_manager, verbose=check_bool("verbose", verbose))

    @_one_span
    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        """LlamaIndex's `retrieve`, with a query that is not text refused as reverie's
        `InvalidInput` before LlamaIndex's instrumentation sees it."""
        return super().retrieve(_query(str_or_query_bundle))

    @_one_span
    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        return await super().aretrieve(_query(str_or_query_bundle))

    def _options(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "k": self.k,
            "as_of": self.as_of,
            "include_history": self.include_history,
            "reinforce": self.reinforce,
            "kinds": self.kinds,
        }

    @staticmethod
    def _nodes(result: RecallResult) -> list[NodeWithScore]:
        return [hit_to_node(h) for h in result.hits]

    @_one_span
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.engine.recall(query_bundle.query_str, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self.engine.arecall(query_bundle.query_str, **self._options()))

    def _handle_recursive_retrieval(
        self, query_bundle: QueryBundle, nodes: list[NodeWithScore]
    ) -> list[NodeWithScore]:
        """The base class follows `IndexNode`s to other retrievers and drops repeated
        node ids; a recall returns neither (text nodes, one per memory id), so the
        nodes pass as they are."""
        return nodes

    async def _ahandle_recursive_retrieval(
        self, query_bundle: QueryBundle, nodes: list[NodeWithScore]
    ) -> list[NodeWithScore]:
        return nodes


def _query(query: Any) -> str | QueryBundle:
    if not isinstance(query, str | QueryBundle):
        raise InvalidInput(f"the query must be a string or a QueryBundle, got {query!r}")
    return query


ReverieRetriever = ReverieLlamaIndexRetriever
"""The name this retriever had when it shared it with the LangChain one; kept so existing
imports work."""
