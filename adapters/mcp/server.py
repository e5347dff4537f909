"""The MCP server: reverie's memory operations as MCP tools, its stats as a resource.

Tools: `observe` (a trace), `remember` (a keyed fact), `recall` (hits with dates and
explanations), `history` (every version of a fact), `forget` (real deletion),
`confirm` (makes a crystal) and `restore` (undoes a wrong replacement). Resources:
`reverie://stats` (the default namespace) and `reverie://stats/{namespace}`.

Arguments are validated by pydantic from the signatures below, so a client sees the
constraints in each tool's input schema. A bad argument or a reverie error (empty text,
unknown id, bad namespace) comes back as a tool error (`isError`) with a one-line
message the model can act on; anything unexpected comes back as a bare "Error executing
tool", and its traceback stays in the server's log, never on the wire.

The namespace of a call is, first found: the call's `namespace` argument, the HTTP
header `Reverie-Namespace` (streamable HTTP), the server's default (`reverie mcp
--namespace`, else `$REVERIE_NAMESPACE`, else the engine's default). So one server can
serve several clients each in a namespace of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from reverie.core.errors import InvalidInput, MissingExtra, NotFound, ReverieError

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import ToolAnnotations
    from pydantic import BaseModel, Field
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.mcp", "mcp") from e

from reverie.adapters.arguments import check_engine
from reverie.core.clock import utc
from reverie.core.engine import Hit, MemoryEngine
from reverie.core.models import Memory

__all__ = ["ENV_NAMESPACE", "NAMESPACE_HEADER", "TRANSPORTS", "build_server", "serve"]

ENV_NAMESPACE = "REVERIE_NAMESPACE"
NAMESPACE_HEADER = "Reverie-Namespace"
TRANSPORTS = ("stdio", "http")
MAX_K = 50
MAX_IDS = 100

INSTRUCTIONS = (
    "Long-term memory that forgets on purpose. `observe` what the user says, `remember` "
    "facts as subject/predicate/object (a new object for the same subject and predicate "
    "replaces the old one, kept in `history`), `recall` before answering. Memories decay "
    "unless recalled; `confirm` what the user vouches for so it never decays; `forget` "
    "deletes for good."
)

Namespace = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=128,
        description="The namespace (user, agent or session) to work in; omit for the "
        "server's default.",
    ),
]
Source = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Where this comes from (a conversation or user id). The same fact from "
        "several independent sources gains confidence.",
    ),
]
FactKind = Annotated[
    Literal["semantic", "procedural"],
    Field(description="semantic for facts about the world, procedural for how-tos."),
]


# ------------------------------------------------------------------ what the tools return


class Triple(BaseModel):
    subject: str
    predicate: str
    object: str


class MemoryOut(BaseModel):
    """One memory, as a client sees it."""

    id: str
    namespace: str
    text: str
    kind: str
    tier: str = Field(description="trace, unit, crystal (never decays) or synthesis")
    status: str = Field(description="active, superseded, consolidated or archived")
    created_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(
        default=None, description="When a later version replaced it (superseded only)."
    )
    superseded_by: str | None = None
    fact: Triple | None = None
    sources: list[str]
    confidence: float
    importance: float
    pinned: bool
    user_confirmed: bool

    @classmethod
    def of(cls, m: Memory) -> MemoryOut:
        return cls(
            id=m.id,
            namespace=m.namespace,
            text=m.text,
            kind=m.kind.value,
            tier=m.tier.value,
            status=m.status.value,
            created_at=m.created_at,
            valid_from=m.valid_from,
            valid_to=m.valid_to,
            superseded_by=m.superseded_by,
            fact=Triple(subject=m.fact.subject, predicate=m.fact.predicate, object=m.fact.object)
            if m.fact is not None
            else None,
            sources=sorted(m.sources),
            confidence=round(m.confidence, 4),
            importance=round(m.importance, 4),
            pinned=m.pinned,
            user_confirmed=m.user_confirmed,
        )


class Explanation(BaseModel):
    """Why a hit ranked where it did: final = alpha * relevance + (1 - alpha) * decay,
    raised by `speaker` when the question names the memory's speaker."""

    final: float
    relevance: float
    dense: float
    lexical: float
    decay: float
    importance: float
    tier: str
    hops: int
    via: str | None = None
    context: float
    speaker: float = 0.0
    period: float = Field(
        default=0.0,
        description="Relevance taken away: observed outside the period the question names.",
    )
    note: str | None = Field(
        default=None,
        description="A newer version placed above an older one, an older one below its "
        "newer version, or a reply ranked below the statement it answers.",
    )
    lexical_trust: float = Field(
        default=1.0,
        description="Share of the lexical half the question kept: below 1 when its strong "
        "lexical matches were all far from it in meaning.",
    )


class HitOut(BaseModel):
    memory: MemoryOut
    score: float
    explanation: Explanation

    @classmethod
    def of(cls, h: Hit) -> HitOut:
        return cls(
            memory=MemoryOut.of(h.memory),
            score=round(h.score, 6),
            explanation=Explanation.model_validate(h.explanation.as_dict()),
        )


class RecallOut(BaseModel):
    query: str
    namespace: str
    hits: list[HitOut] = Field(description="Best first.")
    tokens: int | None = Field(default=None, description="Tokens used, given a token_budget.")


class RememberOut(BaseModel):
    memory: MemoryOut
    outcome: Literal["new", "confirmed", "unchanged", "superseded"]
    superseded: MemoryOut | None = Field(
        default=None, description="The version this one replaced."
    )


class HistoryOut(BaseModel):
    subject: str
    predicate: str
    namespace: str
    versions: list[MemoryOut] = Field(description="Oldest first.")


class ForgetOut(BaseModel):
    namespace: str
    deleted: int = Field(description="Records deleted, syntheses made from them included.")
    not_found: list[str]


# ------------------------------------------------------------------ the server


def _header_namespace(ctx: Context | None) -> str | None:
    """The namespace an HTTP client set once in its configuration, as a header."""
    if ctx is None:
        return None
    try:
        request = ctx.request_context.request
    except ValueError:  # outside a request
        return None
    headers = getattr(request, "headers", None)
    if headers is None:  # stdio: no HTTP request
        return None
    value = headers.get(NAMESPACE_HEADER)
    return value.strip() or None if isinstance(value, str) else None


def _aware(when: datetime | None) -> datetime | None:
    return None if when is None else utc(when)


def build_server(
    engine: MemoryEngine,
    *,
    namespace: str | None = None,
    name: str = "reverie",
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer[Any]:
    """An `MCPServer` over `engine`. `namespace` is the default for calls that name none
    (None: the engine's default). The engine stays the caller's to close."""
    check_engine(engine, "the MCP server")
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise InvalidInput(f"unknown log level {log_level!r}")
    default_ns = namespace or engine.default_namespace
    engine.stats(namespace=default_ns)  # a bad default namespace fails now, not per call
    server: MCPServer[Any] = MCPServer(
        name, instructions=INSTRUCTIONS, log_level=log_level, version=_version()
    )

    def ns_of(given: str | None, ctx: Context | None) -> str:
        return given or _header_namespace(ctx) or default_ns

    async def run(call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await call(*args, **kwargs)
        except ReverieError as e:
            raise ToolError(" ".join(str(e).split()) or type(e).__name__) from None

    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

    @server.tool(annotations=writes)
    async def observe(
        text: Annotated[
            str, Field(min_length=1, description="What was said or happened, in words.")
        ],
        source: Source = None,
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> MemoryOut:
        """Store something the user said or did as a memory trace. A repeat of the same
        sentence adds a source instead of a copy; traces decay unless recalled."""
        m = await run(engine.aobserve, text, source=source, namespace=ns_of(namespace, ctx))
        return MemoryOut.of(m)

    @server.tool(annotations=writes)
    async def remember(
        subject: Annotated[str, Field(min_length=1, description="Who or what, e.g. 'user'.")],
        predicate: Annotated[
            str, Field(min_length=1, description="The attribute, e.g. 'lives in'.")
        ],
        object: Annotated[str, Field(min_length=1, description="The value, e.g. 'Lisbon'.")],
        source: Source = None,
        kind: FactKind = "semantic",
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> RememberOut:
        """Store a fact keyed by subject and predicate. The same object again adds a
        source (three make it permanent); a different object replaces the current one,
        which stays in `history`."""
        ns = ns_of(namespace, ctx)
        before = await run(engine.ahistory, subject, predicate, namespace=ns, kind=kind)
        current = next((v for v in reversed(before) if v.is_active), None)
        unit = await run(
            engine.aremember, subject, predicate, object, source=source, kind=kind,
            namespace=ns,
        )
        if current is None:
            return RememberOut(memory=MemoryOut.of(unit), outcome="new")
        if current.id == unit.id:
            if unit.version == current.version:
                return RememberOut(memory=MemoryOut.of(unit), outcome="unchanged")
            return RememberOut(memory=MemoryOut.of(unit), outcome="confirmed")
        old = await run(engine.aget, current.id, namespace=ns)
        return RememberOut(
            memory=MemoryOut.of(unit), outcome="superseded", superseded=MemoryOut.of(old)
        )

    # Not read-only: a recalled memory is reinforced (its decay clock restarts).
    @server.tool(annotations=writes)
    async def recall(
        query: Annotated[str, Field(min_length=1, description="What to look up.")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many memories.")] = 5,
        as_of: Annotated[
            datetime | None,
            Field(description="Answer with what was believed then (ISO 8601)."),
        ] = None,
        include_history: Annotated[
            bool, Field(description="Also return replaced and consolidated memories.")
        ] = False,
        token_budget: Annotated[
            int | None, Field(ge=1, description="Pack the hits into this many tokens.")
        ] = None,
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> RecallOut:
        """The memories most useful for `query`, best first, each with its dates and an
        explanation of its score (relevance blended with decay). Replaced facts are left
        out unless `include_history` or `as_of` asks for them."""
        ns = ns_of(namespace, ctx)
        result = await run(
            engine.arecall, query, namespace=ns, k=k, as_of=_aware(as_of),
            include_history=include_history, token_budget=token_budget,
        )
        return RecallOut(
            query=result.query, namespace=ns, hits=[HitOut.of(h) for h in result],
            tokens=result.tokens,
        )

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    async def history(
        subject: Annotated[str, Field(min_length=1, description="Who or what, e.g. 'user'.")],
        predicate: Annotated[
            str, Field(min_length=1, description="The attribute, e.g. 'lives in'.")
        ],
        kind: FactKind = "semantic",
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> HistoryOut:
        """Every version of a fact, oldest first, with when each was believed
        (valid_from, valid_to)."""
        ns = ns_of(namespace, ctx)
        versions = await run(engine.ahistory, subject, predicate, namespace=ns, kind=kind)
        if not versions:
            raise ToolError(f"no fact {subject!r} {predicate!r} ({kind}) in namespace {ns!r}")
        return HistoryOut(
            subject=subject, predicate=predicate, namespace=ns,
            versions=[MemoryOut.of(v) for v in versions],
        )

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
        )
    )
    async def forget(
        memory_ids: Annotated[
            list[Annotated[str, Field(min_length=1)]],
            Field(min_length=1, max_length=MAX_IDS, description="Ids from recall or remember."),
        ],
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> ForgetOut:
        """Delete memories for good (privacy requests), with their edges, index entries
        and any summary made from them. Cannot be undone."""
        ns = ns_of(namespace, ctx)
        found: list[str] = []
        missing: list[str] = []
        for i in dict.fromkeys(memory_ids):
            try:
                found.append((await engine.aget(i, namespace=ns)).id)
            except NotFound:
                missing.append(i)
            except ReverieError as e:
                raise ToolError(" ".join(str(e).split())) from None
        if not found:
            raise ToolError(f"none of the given ids is in namespace {ns!r}; nothing deleted")
        deleted = await run(engine.aforget, *found, namespace=ns)
        return ForgetOut(namespace=ns, deleted=deleted, not_found=missing)

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        )
    )
    async def confirm(
        memory_id: Annotated[
            str, Field(min_length=1, description="The id, from recall or remember.")
        ],
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> MemoryOut:
        """The user vouches for this memory: it becomes a crystal, which never decays and
        is never evicted."""
        m = await run(engine.aconfirm, memory_id, namespace=ns_of(namespace, ctx))
        return MemoryOut.of(m)

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
        )
    )
    async def restore(
        memory_id: Annotated[
            str,
            Field(min_length=1, description="The replaced version's id, from `history` or "
                  "`recall` with include_history."),
        ],
        namespace: Namespace = None,
        ctx: Context | None = None,
    ) -> MemoryOut:
        """Undo a wrong replacement: the replaced (superseded) version becomes current
        again, and the version that replaced it is superseded by it. Both keep the reason."""
        m = await run(engine.arestore, memory_id, namespace=ns_of(namespace, ctx))
        return MemoryOut.of(m)

    async def stats_of(ns: str) -> dict[str, Any]:
        try:
            st = await engine.astats(namespace=ns)
        except ReverieError as e:
            raise ResourceError(" ".join(str(e).split())) from None
        return {"namespace": ns, **st}

    @server.resource(
        "reverie://stats",
        name="stats",
        description="Counts per status and tier, edges, vectors and the embedder, for the "
        "server's default namespace.",
        mime_type="application/json",
    )
    async def default_stats() -> dict[str, Any]:
        return await stats_of(default_ns)

    @server.resource(
        "reverie://stats/{+namespace}",
        name="namespace-stats",
        description="The same counts for any namespace.",
        mime_type="application/json",
    )
    async def namespace_stats(namespace: str) -> dict[str, Any]:
        return await stats_of(namespace)

    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reverie")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return ""


def serve(
    engine: MemoryEngine,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    namespace: str | None = None,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> None:
    """Run the server until the client hangs up (stdio) or the process is interrupted
    (http, at http://host:port/mcp)."""
    if transport not in TRANSPORTS:
        raise InvalidInput(f"unknown transport {transport!r}; use one of {', '.join(TRANSPORTS)}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidInput(f"port must be an integer from 0 to 65535, got {port!r}")
    if not isinstance(host, str) or not host:
        raise InvalidInput(f"host must be a host name or address, got {host!r}")
    server = build_server(engine, namespace=namespace, log_level=log_level)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:  # pragma: no cover - refused above
        raise InvalidInput(f"unknown transport {transport!r}; use one of {', '.join(TRANSPORTS)}")
