"""reverie as a LangGraph store: `ReverieStore(BaseStore)`.

`create_agent(model, tools, store=ReverieStore(engine))` (or a graph compiled with
`store=`) keeps its long-term memory in reverie, and gets decay-aware ranking,
supersession and consolidation without changing a line of agent code.

How LangGraph's model maps onto reverie's:
- A namespace tuple is one reverie namespace, `lg/<label>/<label>...`; each label keeps
  letters, digits, `_` and `-`, and writes any other byte as `=XX` (hex), so the
  mapping is reversible and stays inside reverie's namespace charset
  (`encode_namespace` / `decode_namespace`). reverie namespaces hold at most 128
  characters, so very deep or long tuples raise `InvalidNamespace`, which says how long
  the encoded name came out (a non-ASCII character takes 3 per UTF-8 byte).
- An item is a semantic unit keyed by its LangGraph key. Putting a new value
  supersedes the previous version (still there for `store.history(namespace, key)` and
  for `recall(as_of=...)`); putting the same value again counts as one more source
  (confidence rises, the decay clock restarts). `value=None` deletes every version
  (real deletion, as LangGraph's delete means).
- The memory's text is what the index fields select (`index={"fields": [...]}` on the
  store, or `index=[...]` per put; default the whole value as JSON, like LangGraph);
  several fields are joined into one text and embedded once (LangGraph embeds each
  field and keeps the best). `index=False` stores the item without a vector.
- `search(query=...)` ranks with reverie's recall (relevance blended with decay) and
  the SearchItem score is reverie's final score, not a raw cosine; items stored with
  `index=False` only fill the page after the ranked ones, score None, as in LangGraph.
  Without a query, items come newest update first. Filters follow LangGraph's
  in-memory store: equality (nested dicts and lists compared whole) and
  `$eq/$ne/$gt/$gte/$lt/$lte`.
- `created_at` is the first version's time and `updated_at` the last write's; both come
  from the engine's clock. TTLs are not supported: reverie forgets by decay instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from reverie.core.errors import InvalidInput, InvalidNamespace, MissingExtra

try:
    from langgraph.store.base import (
        NOT_PROVIDED,
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtra("reverie.adapters.langgraph.store", "langgraph") from e

from reverie.adapters.arguments import check_bool, check_engine
from reverie.core.engine import MemoryEngine
from reverie.core.models import Kind, Memory, Status, parse_kind, validate_namespace

__all__ = [
    "ItemVersion",
    "ReverieStore",
    "StoreNamespaceError",
    "TTLNotSupported",
    "decode_namespace",
    "encode_namespace",
]


class StoreNamespaceError(InvalidNamespace, InvalidNamespaceError):
    """A namespace tuple LangGraph or reverie refuses: catchable as reverie's
    `InvalidNamespace` and as LangGraph's `InvalidNamespaceError` alike."""


class TTLNotSupported(InvalidInput, NotImplementedError):
    """ReverieStore forgets by decay, not by TTL: a put or search with `ttl` is refused
    (also a `NotImplementedError`, as LangGraph's stores without TTL raise)."""

ROOT = "lg"
MAX_NAMESPACE_CHARS = 128  # the longest reverie namespace (`validate_namespace`)
PREDICATE = "langgraph item"
_META = "langgraph"  # metadata entry holding {"key", "value", "indexed"}
_PLAIN = re.compile(r"[A-Za-z0-9_-]")


def encode_namespace(namespace: Sequence[str], root: str = ROOT) -> str:
    """`("users", "a@b.c")` -> `lg/users/a=40b=2Ec`: reversible, within reverie's charset."""
    parts = [root]
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise StoreNamespaceError(
                f"namespace labels must be non-empty strings, got {label!r}"
            )
        parts.append(
            "".join(
                ch if _PLAIN.fullmatch(ch) else "".join(f"={b:02X}" for b in ch.encode())
                for ch in label
            )
        )
    name = "/".join(parts)
    if len(name) > MAX_NAMESPACE_CHARS:
        raise StoreNamespaceError(
            f"namespace {tuple(namespace)!r} encodes to {len(name)} characters "
            f"({name[:40]}...), over reverie's limit of {MAX_NAMESPACE_CHARS}: use fewer or "
            "shorter labels (letters, digits, '_' and '-' take one character each, any "
            "other character 3 per UTF-8 byte, each label one more for its '/')"
        )
    return name


def decode_namespace(name: str, root: str = ROOT) -> tuple[str, ...] | None:
    """The tuple `encode_namespace` made `name` from; None for other reverie namespaces."""
    if name != root and not name.startswith(root + "/"):
        return None
    if name == root:
        return ()
    return tuple(_unescape(label) for label in name[len(root) + 1 :].split("/"))


def _unescape(label: str) -> str:
    out = bytearray()
    i = 0
    while i < len(label):
        if label[i] == "=":
            out.append(int(label[i + 1 : i + 3], 16))
            i += 3
        else:
            out += label[i].encode()
            i += 1
    return out.decode()


@dataclass(frozen=True, slots=True)
class ItemVersion:
    """One version of a store item: its value, when it was written, and until when it
    held (`valid_to` None while it is the current value)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    written_at: datetime
    valid_to: datetime | None
    current: bool
    memory_id: str


def _subject(key: str) -> str:
    # fact keys are case- and punctuation-folded; hex keeps distinct LangGraph keys distinct
    return "k" + key.encode().hex()


class ReverieStore(BaseStore):
    """A LangGraph `BaseStore` over a reverie `MemoryEngine`.

    `index`: LangGraph's index config; only `fields` is used. The engine's embedder
    embeds, so an `embed` is refused (open the engine with
    `LangChainEmbedder(your_embeddings)` instead), as is a `dims` that disagrees with it.
    `history(namespace, key)` gives every value an item has had, oldest first.
    `kind`: the memory kind items are stored as (semantic: 90-day half-life;
    procedural: 180 days). `reinforce`: a
    search restarts the decay clock of what it returns, as any reverie recall does.
    """

    supports_ttl = False

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        index: Mapping[str, Any] | None = None,
        kind: Kind | str = Kind.SEMANTIC,
        root: str = ROOT,
        reinforce: bool = True,
    ) -> None:
        self.engine = check_engine(engine, "ReverieStore")
        self.kind = parse_kind(kind.value if isinstance(kind, Kind) else kind)
        if self.kind is Kind.EPISODIC:
            raise InvalidInput("store items are facts: use kind 'semantic' or 'procedural'")
        if not isinstance(root, str) or "/" in root:
            raise InvalidNamespace(f"root must be one namespace label, got {root!r}")
        self.root = validate_namespace(root)
        self.reinforce = check_bool("reinforce", reinforce)
        if index is not None and not isinstance(index, Mapping):
            raise InvalidInput(f"index must be a dict like {{'fields': ['text']}}, got {index!r}")
        index = dict(index or {})
        if index.get("embed") is not None:
            raise InvalidInput(
                "ReverieStore embeds with its engine's embedder, so index['embed'] would "
                "be ignored: drop it, or open the engine on those embeddings "
                "(open_engine(..., embedder=LangChainEmbedder(embeddings)))"
            )
        dims = index.get("dims")
        if dims is not None and dims != engine.embedder.dimension:
            raise InvalidInput(
                f"index dims {dims} differ from the engine's embedder "
                f"({engine.embedder.name}, {engine.embedder.dimension} dimensions)"
            )
        self.fields: list[str] = _index_fields(index.get("fields") or ["$"], "index['fields']")
        self._ns_cache: dict[tuple[str, ...], str] = {}

    # ------------------------------------------------------------------ mapping

    def _ns(self, namespace: tuple[str, ...]) -> str:
        name = self._ns_cache.get(namespace)
        if name is None:
            name = encode_namespace(namespace, self.root)
            self._ns_cache[namespace] = name
        return name

    def _versions(self, namespace: tuple[str, ...], key: str) -> list[Memory]:
        return self.engine.history(
            _subject(key), PREDICATE, namespace=self._ns(namespace), kind=self.kind
        )

    def _item(self, namespace: tuple[str, ...], m: Memory) -> Item:
        meta = m.metadata[_META]
        return Item(
            value=meta["value"], key=meta["key"], namespace=namespace,
            created_at=_created(m), updated_at=m.updated_at or m.created_at,
        )

    def _text(self, value: Mapping[str, Any], index: Any) -> tuple[str, bool]:
        if index is False:
            return json.dumps(value, sort_keys=True, ensure_ascii=False), False
        paths = self.fields if index is None else list(index)
        texts: list[str] = []
        for path in paths:
            texts += get_text_at_path(value, path if path == "$" else tokenize_path(path))
        text = "\n".join(t for t in texts if t.strip())
        if not text:  # nothing at the index paths: keep it, findable by key and filter only
            return json.dumps(value, sort_keys=True, ensure_ascii=False), False
        return text, True

    # ------------------------------------------------------------------ history

    def history(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Every value the item has had, oldest first (an update supersedes, it does not
        overwrite); [] for an item never put or deleted (deletion removes every version)."""
        _check_namespace(namespace)
        _check_key(key)
        return [
            ItemVersion(
                namespace=tuple(namespace), key=m.metadata[_META]["key"],
                value=m.metadata[_META]["value"], written_at=m.created_at,
                valid_to=m.valid_to, current=m.status is Status.ACTIVE, memory_id=m.id,
            )
            for m in self._versions(tuple(namespace), key)
            if _META in m.metadata
        ]

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """`history` in a worker thread, off the event loop."""
        return await asyncio.to_thread(self.history, namespace, key)

    # ------------------------------------------------------------------ ops

    def _get(self, op: GetOp) -> Item | None:
        _check_namespace(op.namespace)
        _check_key(op.key)
        versions = self._versions(op.namespace, op.key)
        active = [v for v in versions if v.status is Status.ACTIVE and _META in v.metadata]
        if not active:
            return None
        return self._item(op.namespace, active[-1])

    def _put(self, op: PutOp) -> None:
        _check_namespace(op.namespace, writing=True)
        _check_key(op.key)
        if op.index is not None and op.index is not False:
            _index_fields(op.index, "index")
        if op.value is None:
            ids = [m.id for m in self._versions(op.namespace, op.key)]
            if ids:
                self.engine.forget(*ids, namespace=self._ns(op.namespace))
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInput(f"a store value must be a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        try:
            json.dumps(value)
        except (TypeError, ValueError) as e:
            raise InvalidInput(f"a store value must be JSON-serializable: {e}") from e
        text, indexed = self._text(value, op.index)
        limit = self.engine.policy.funnel.max_text_chars
        text = text[:limit]  # the value itself is kept whole in the metadata
        digest = hashlib.sha256(
            json.dumps([value, text, indexed], sort_keys=True, default=str).encode()
        ).hexdigest()
        versions = self._versions(op.namespace, op.key)
        # the item's created_at is its first version's: kept on each version so a search
        # page needs no extra lookups
        first = versions[0].created_at.isoformat() if versions else None
        self.engine.remember(
            _subject(op.key), PREDICATE, digest,
            namespace=self._ns(op.namespace), kind=self.kind, text=text,
            metadata={
                _META: {"key": op.key, "value": value, "indexed": indexed, "created_at": first}
            },
            index=indexed,
        )

    def _namespaces(self, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
        out = []
        for name in self.engine.namespaces():
            ns = decode_namespace(name, self.root)
            if ns and ns[: len(prefix)] == prefix:
                out.append((ns, name))
        return out

    def _listing(self, op: SearchOp) -> list[tuple[Memory, tuple[str, ...]]]:
        found = []
        for ns, name in self._namespaces(op.namespace_prefix):
            for m in self.engine.memories(namespace=name, statuses=[Status.ACTIVE]):
                if _META in m.metadata and _matches(m.metadata[_META]["value"], op.filter):
                    found.append((m, ns))
        return found

    def _search(self, op: SearchOp) -> list[SearchItem]:
        _check_namespace(op.namespace_prefix, prefix=True)
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidInput(f"query must be a string or None, got {op.query!r}")
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise InvalidInput(f"filter must be a dict or None, got {op.filter!r}")
        _check_filter(op.filter)
        if not op.query:
            rows = self._listing(op)
            rows.sort(key=lambda r: (r[0].updated_at or r[0].created_at, r[0].id), reverse=True)
            page = rows[op.offset : op.offset + op.limit]
            return [_search_item(ns, m, None) for m, ns in page]
        spaces = self._namespaces(op.namespace_prefix)
        want = op.offset + op.limit
        ranked: list[tuple[float, Memory, tuple[str, ...]]] = []
        # one embedding of the query for every namespace under the prefix
        vector = self.engine.embedder.embed([op.query])[0] if len(spaces) > 1 else None
        for ns, name in spaces:
            k = max(want, 1)
            while True:
                hits = self.engine.recall(
                    op.query, namespace=name, k=k, reinforce=self.reinforce,
                    query_vector=vector,
                )
                kept = [
                    (h.score, h.memory, ns)
                    for h in hits
                    if _META in h.memory.metadata
                    and h.memory.metadata[_META]["indexed"]
                    and _matches(h.memory.metadata[_META]["value"], op.filter)
                ]
                if len(kept) >= want or len(hits) < k:
                    break
                k *= 2
            ranked += kept
        ranked.sort(key=lambda r: (-r[0], r[1].id))
        page = ranked[op.offset : op.offset + op.limit]
        out = [_search_item(ns, m, score) for score, m, ns in page]
        if len(out) < op.limit:  # as LangGraph: unembedded items fill the rest, unscored
            seen = {m.id for _, m, _ in ranked}
            rest = [
                (m, ns)
                for m, ns in self._listing(op)
                if not m.metadata[_META]["indexed"] and m.id not in seen
            ]
            out += [_search_item(ns, m, None) for m, ns in rest[: op.limit - len(out)]]
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int)
            or op.max_depth < 1
        ):
            raise InvalidInput(
                f"max_depth must be a positive integer or None, got {op.max_depth!r}"
            )
        spaces = [ns for ns, _ in self._namespaces(())]
        if op.match_conditions:
            spaces = [
                ns for ns in spaces if all(_does_match(c, ns) for c in op.match_conditions)
            ]
        if op.max_depth is not None:
            spaces = sorted({ns[: op.max_depth] for ns in spaces})
        else:
            spaces = sorted(spaces)
        return spaces[op.offset : op.offset + op.limit]

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInput(f"unknown store operation {type(op).__name__}")

    # ------------------------------------------------------------------ BaseStore

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | Any | None = NOT_PROVIDED,
    ) -> None:
        """LangGraph's `put`, with reverie's typed errors for a bad namespace, key, value
        or index (namespace errors are also LangGraph's `InvalidNamespaceError`)."""
        _check_ttl(ttl)
        _check_namespace(namespace, writing=True)
        super().put(namespace, key, value, index)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | Any | None = NOT_PROVIDED,
    ) -> None:
        """`put` off the event loop, with the same checks."""
        _check_ttl(ttl)
        _check_namespace(namespace, writing=True)
        await super().aput(namespace, key, value, index)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads see the store as it was before the batch (as LangGraph's stores do);
        then the puts apply in order, the last put of a key winning."""
        ops = list(ops)
        results: list[Result] = [None if isinstance(op, PutOp) else self._read(op) for op in ops]
        for op in _last_puts(ops):
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` off the event loop: each read runs in a worker thread (the engine's
        async twins do the same), concurrently; then the puts, in order."""
        ops = list(ops)

        async def none() -> None:
            return None

        results = list(
            await asyncio.gather(
                *(
                    none() if isinstance(op, PutOp) else asyncio.to_thread(self._read, op)
                    for op in ops
                )
            )
        )
        for op in _last_puts(ops):
            await asyncio.to_thread(self._put, op)
        return results


def _check_namespace(
    namespace: Any, *, writing: bool = False, prefix: bool = False
) -> tuple[str, ...]:
    """LangGraph's rules for a namespace tuple (its stores refuse the same), raised as
    `StoreNamespaceError`: a tuple of non-empty strings; to write, at least one label,
    none with a '.', the first not 'langgraph'."""
    if not isinstance(namespace, tuple):
        raise StoreNamespaceError(
            f"a namespace is a tuple of strings, like ('users', 'alice'), got {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise StoreNamespaceError(
                f"namespace labels must be non-empty strings, got {label!r} in {namespace!r}"
            )
    if writing:
        if not namespace:
            raise StoreNamespaceError("a namespace to write in cannot be empty")
        if any("." in label for label in namespace):
            raise StoreNamespaceError(
                f"namespace labels cannot contain periods ('.'), got {namespace!r}"
            )
        if namespace[0] == "langgraph":
            raise StoreNamespaceError(f"the root label 'langgraph' is reserved: {namespace!r}")
    elif not prefix and not namespace:
        raise StoreNamespaceError("a namespace cannot be empty")
    return namespace


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"a store key must be a non-empty string, got {key!r}")
    return key


def _check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _check_ttl(ttl: Any) -> None:
    if ttl is not NOT_PROVIDED and ttl is not None:
        raise TTLNotSupported(
            "ReverieStore has no TTL: reverie forgets by decay instead. Drop ttl (or pass "
            "None), or use a store with TTL support"
        )


def _index_fields(fields: Any, name: str) -> list[str]:
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not all(
        isinstance(f, str) and f for f in fields
    ):
        raise InvalidInput(f"{name} must be a list of field paths like ['text'], got {fields!r}")
    return list(fields)


_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def _check_filter(filt: Any) -> None:
    """Every operator in a filter is one `_operator` knows, checked before any item is
    compared (an empty namespace would otherwise accept any filter)."""
    if isinstance(filt, Mapping):
        for key, want in filt.items():
            if isinstance(key, str) and key.startswith("$") and key not in _OPERATORS:
                raise InvalidInput(
                    f"unsupported filter operator {key!r}: use $eq $ne $gt $gte $lt $lte"
                )
            _check_filter(want)
    elif isinstance(filt, list | tuple):
        for want in filt:
            _check_filter(want)


def _last_puts(ops: Sequence[Op]) -> list[PutOp]:
    last: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if isinstance(op, PutOp):
            last.pop((op.namespace, op.key), None)
            last[(op.namespace, op.key)] = op
    return list(last.values())


def _created(m: Memory) -> datetime:
    first = m.metadata[_META].get("created_at")
    return datetime.fromisoformat(first) if first else m.created_at


def _search_item(ns: tuple[str, ...], m: Memory, score: float | None) -> SearchItem:
    meta = m.metadata[_META]
    return SearchItem(
        namespace=ns, key=meta["key"], value=meta["value"],
        created_at=_created(m), updated_at=m.updated_at or m.created_at, score=score,
    )


def _does_match(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    if cond.match_type == "prefix":
        pairs = zip(ns, path, strict=False)
    elif cond.match_type == "suffix":
        pairs = zip(reversed(ns), reversed(path), strict=False)
    else:
        raise InvalidInput(f"unsupported match type {cond.match_type!r}")
    return all(p == "*" or k == p for k, p in pairs)


def _matches(value: Mapping[str, Any], filt: Mapping[str, Any] | None) -> bool:
    if not filt:
        return True
    return all(_compare(value.get(k), v) for k, v in filt.items())


def _compare(item: Any, want: Any) -> bool:
    """LangGraph's filter semantics (its in-memory store, which follows Postgres JSONB)."""
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(item, op, v) for op, v in want.items())
        if not isinstance(item, dict):
            return False
        return all(_compare(item.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(item, list | tuple)
            and len(item) == len(want)
            and all(_compare(i, w) for i, w in zip(item, want, strict=True))
        )
    return bool(item == want)


def _operator(value: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(value == want)
    if op == "$ne":
        return bool(value != want)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(want)
        except (TypeError, ValueError):
            return False  # a missing or non-numeric field never satisfies a range
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidInput(f"unsupported filter operator {op!r}: use $eq $ne $gt $gte $lt $lte")
