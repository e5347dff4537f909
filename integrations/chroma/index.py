"""`VectorIndex` on Chroma: embedded (PersistentClient) or a Chroma server (HttpClient).

Design choices, and why:

- One Chroma collection per reverie namespace. Isolation is structural: a query
  can only ever see its own namespace's vectors, so no forgotten filter can leak
  another tenant's memories. Collection names must be [a-zA-Z0-9._-], 3-512 chars,
  so the name is 'rv-' + sha256(namespace)[:24]; the real namespace is kept in the
  collection metadata and checked on every open (a hash collision, or a foreign
  collection with that name, raises `StoreCorrupt` instead of mixing data).
- Vectors are always passed in raw, and collections are opened with
  `embedding_function=None`: Chroma's default embedding function downloads a model.
- Cosine space; the HNSW build/search parameters were measured on 10k real
  MiniLM embeddings (benchmarks/hnsw.py, results in benchmarks/results/hnsw.md).
- A namespace's dimension is fixed by its first upsert and kept in the collection
  metadata; a later mismatch is an `InvalidVector` that says how to recover.
- Every vector is checked (1-D, finite, non-zero, right dimension) before anything
  is written, so a bad item fails the whole call with nothing stored.
- The index is derived data: it can always be rebuilt from the record store, so
  a large upsert is split into Chroma-sized batches without cross-batch atomicity.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from reverie.core.errors import (
    BackendUnavailable,
    InvalidInput,
    InvalidVector,
    StoreCorrupt,
)
from reverie.core.models import validate_namespace
from reverie.core.ports import Vector, VectorHit, VectorItem
from reverie.core.retrieval import cosine_to
from reverie.integrations.chroma.http import ChromaUnreachable, PendingQuery, QueryTransport

__all__ = ["DEFAULT_HNSW", "ChromaIndex", "HnswSettings", "collection_name"]

T = TypeVar("T")
Scalar = str | int | float | bool

_NS_KEY = "reverie_namespace"
_DIM_KEY = "reverie_dimension"
_SCHEMA_KEY = "reverie_index_schema"
_SCHEMA = 1
_PAGE = 5000  # ids() page size; below Chroma's max batch size
_I64 = 2**63
# Filtered queries first take the unfiltered top max(5k, 50) and filter them here; see
# `ChromaIndex.query` and the filter columns of benchmarks/results/hnsw.md.
_OVERFETCH = 5
_MIN_FETCH = 50
# `neighbors` fetches and queries this many ids at a time: bounds one request's payload
# (embeddings in, n x (k+1) results out) for a Chroma server.
_NEIGHBOR_BATCH = 1000
# A Chroma server that is still persisting a collection's first HNSW segment answers a
# concurrent read with "Error creating hnsw segment reader: Nothing found on disk"
# (chroma-core/chroma#4212); seen here with 4 worker processes on one namespace. It
# clears within moments, so such reads are retried with backoff before giving up.
_TRANSIENT_MARKERS = ("nothing found on disk", "error creating hnsw segment reader")
_TRANSIENT_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


@dataclass(frozen=True, slots=True)
class HnswSettings:
    """HNSW parameters of a new collection (existing collections keep theirs).

    Higher values buy recall with build time, memory and query latency; see
    benchmarks/results/hnsw.md for the measured trade-off.
    """

    ef_construction: int = 200
    ef_search: int = 200
    max_neighbors: int = 16
    # Vectors added before Chroma writes the index out (None: Chroma's own, 1000). Not a
    # recall knob: the graph is the same, only how often it is persisted (see SERVER_HNSW).
    sync_threshold: int | None = None

    def __post_init__(self) -> None:
        for name in ("ef_construction", "ef_search", "max_neighbors", "sync_threshold"):
            v = getattr(self, name)
            if v is None and name == "sync_threshold":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise InvalidInput(f"HNSW {name} must be an integer >= 2, got {v!r}")

    def configuration(self) -> dict[str, Any]:
        hnsw: dict[str, Any] = {
            "space": "cosine",
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "max_neighbors": self.max_neighbors,
        }
        if self.sync_threshold is not None:
            hnsw["sync_threshold"] = self.sync_threshold
        return {"hnsw": hnsw}


# Chosen from benchmarks/results/hnsw.md (10k and 20k MiniLM vectors, 2 CPU cores):
# Chroma's defaults (M 16, ef 100/100) miss ~0.2 % of the true top-10; ef_construction
# and ef_search 200 reach recall 1.000 at the same query latency and disk size, for about
# twice the build time (still far below the embedding cost). M 32 or 48 bought nothing
# more at these sizes and cost build time and memory.
DEFAULT_HNSW = HnswSettings()
# A Chroma server is written by many worker processes at once. With Chroma's sync threshold
# (1000) concurrent adds to one collection cost its server several times the CPU of the same
# adds made one after another: 4 writers of 40-vector batches 2.1 ms of server CPU per
# vector into a new collection and 11.4 ms into one of 20k, against 0.5 and 1.9 ms for one
# writer. Syncing every 100 vectors took that to 0.66 and 1.3 ms (one writer: 0.53 and
# 2.0), with the same query latency and recall@10 (benchmarks/results/
# latency_tiers_throughput.md). Collections that exist keep the configuration they were
# made with.
SERVER_HNSW = replace(DEFAULT_HNSW, sync_threshold=100)


def collection_name(namespace: str) -> str:
    """The Chroma collection holding `namespace`: stable, and legal for any namespace."""
    return "rv-" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:24]


def _is_unreachable(e: BaseException) -> bool:
    """Connection-level failures of the HTTP client (the server is down or unreachable)."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        return False
    if isinstance(e, httpx.TransportError | ChromaUnreachable):
        return True
    # HttpClient's constructor turns a failed first request into this ValueError.
    return isinstance(e, ValueError) and "Could not connect to a Chroma server" in str(e)


def _check_vector(item_id: str, vector: object, namespace: str) -> Vector:
    """A finite, non-zero, 1-D float32 copy of `vector`, or `InvalidVector` naming the id."""
    try:
        arr = np.asarray(vector)
    except Exception as e:
        raise InvalidVector(f"vector of {item_id!r} is not an array: {e}") from None
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise InvalidVector(f"vector of {item_id!r} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidVector(
            f"vector of {item_id!r} must be 1-D and non-empty, got shape {arr.shape}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        out = arr.astype(np.float32)
    if not np.isfinite(out).all():
        raise InvalidVector(
            f"vector of {item_id!r} in namespace {namespace!r} has NaN or infinite values "
            "(in float32); nothing was written"
        )
    if not np.any(out):
        raise InvalidVector(f"vector of {item_id!r} is all zeros: cosine similarity is undefined")
    return out


def _check_metadata(item_id: str, metadata: Mapping[str, Any]) -> dict[str, Scalar] | None:
    """Chroma-storable metadata (flat str/int/float/bool), or None for an empty mapping."""
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata of {item_id!r} must be a mapping, got {type(metadata)}")
    out: dict[str, Scalar] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key or key[0] in "$#":
            raise InvalidInput(
                f"metadata key {key!r} of {item_id!r}: keys are non-empty strings not "
                "starting with '$' or '#' (reserved by Chroma)"
            )
        if isinstance(value, bool | str):
            pass
        elif isinstance(value, int):
            if not -_I64 <= value < _I64:
                raise InvalidInput(f"metadata {key!r} of {item_id!r} does not fit in 64 bits")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInput(f"metadata {key!r} of {item_id!r} must be finite")
        else:
            raise InvalidInput(
                f"metadata {key!r} of {item_id!r} is {type(value).__name__}: "
                "use str, int, float or bool"
            )
        out[key] = value
    return out or None


def _checked_items(
    namespace: str, items: Sequence[VectorItem]
) -> tuple[list[str], list[Vector], list[dict[str, Scalar] | None]]:
    """Ids, float32 vectors and metadata of an upsert, all checked before anything is
    written: unique non-empty ids, valid vectors of one dimension, storable metadata."""
    ids: list[str] = []
    vectors: list[Vector] = []
    metadatas: list[dict[str, Scalar] | None] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item.id, str) or not item.id:
            raise InvalidInput(f"vector ids must be non-empty strings, got {item.id!r}")
        if item.id in seen:
            raise InvalidInput(f"id {item.id!r} appears twice in one upsert")
        seen.add(item.id)
        vectors.append(_check_vector(item.id, item.vector, namespace))
        metadatas.append(_check_metadata(item.id, item.metadata))
        ids.append(item.id)
    if ids:
        dim = vectors[0].shape[0]
        for item_id, vec in zip(ids, vectors, strict=True):
            if vec.shape[0] != dim:
                raise InvalidVector(
                    f"vector of {item_id!r} has dimension {vec.shape[0]}, but {ids[0]!r} in "
                    f"the same upsert has {dim}; nothing was written"
                )
    return ids, vectors, metadatas


def _where(where: Mapping[str, Scalar] | None) -> dict[str, Any] | None:
    """A plain equality filter {"status": "active", ...} in Chroma's where syntax."""
    if not where:
        return None
    clauses: list[dict[str, Any]] = []
    for key, value in where.items():
        if not isinstance(key, str) or not key or key[0] in "$#":
            raise InvalidInput(f"filter key {key!r}: use a plain metadata field name")
        if not isinstance(value, str | int | float | bool):
            raise InvalidInput(
                f"filter {key!r} = {value!r}: only equality on str, int, float or bool"
            )
        clauses.append({key: {"$eq": value}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _pairs(result: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(id, cosine distance) of the first query of a Chroma query result. Chroma computes
    distances in float32; in process they arrive as float32, from a server as the JSON
    text of that float32 (the shortest decimal, e.g. 0.4925936), which read as a float64
    is a different number. Rounding both to float32 gives the same exact value, so a
    server scores recall exactly as the embedded index does (tests/integration/
    test_tier_parity.py)."""
    if not result["ids"]:
        return []
    dists = np.asarray(result["distances"][0], dtype=np.float32).tolist()
    return list(zip(result["ids"][0], dists, strict=True))


def _matches(meta: Mapping[str, Any] | None, where: Mapping[str, Scalar]) -> bool:
    """Chroma's `$eq`, client-side: bools match bools, strings strings, numbers numerically."""
    if meta is None:
        return False
    for key, want in where.items():
        have = meta.get(key)
        if have is None:
            return False
        if isinstance(want, bool) or isinstance(have, bool):
            if not (isinstance(want, bool) and isinstance(have, bool) and want == have):
                return False
        elif isinstance(want, str) or isinstance(have, str):
            if not (isinstance(want, str) and isinstance(have, str) and want == have):
                return False
        elif want != have:
            return False
    return True


def _check_ids(ids: Sequence[str], what: str) -> list[str]:
    if isinstance(ids, str):
        raise InvalidInput(f"{what} takes a sequence of ids, not a single string")
    out = list(ids)
    for i in out:
        if not isinstance(i, str) or not i:
            raise InvalidInput(f"{what}: ids must be non-empty strings, got {i!r}")
    return out


def _chunks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


class ChromaIndex:
    """A `VectorIndex` over a Chroma client; one collection per namespace.

    Use `ChromaIndex.embedded(path)` for the local default, `ChromaIndex.server(url)`
    for a Chroma server, or `ChromaIndex(client)` to wrap a client you made (which
    `close()` then leaves open unless `owns_client=True`).
    """

    def __init__(
        self,
        client: Any,
        *,
        hnsw: HnswSettings = DEFAULT_HNSW,
        location: str | None = None,
        owns_client: bool = False,
        remote: bool = False,
        transport: QueryTransport | None = None,
    ) -> None:
        self._client = client
        self._hnsw = hnsw
        self._location = location or type(client).__name__
        self._owns_client = owns_client
        self._collections: dict[str, Any] = {}
        # A query waits on the network: recall then overlaps its own reads with it (a hint
        # the engine reads with getattr; an embedded client computes in process, where
        # extra reads would only compete with the query for the GIL)
        self.remote = remote
        self._transport = transport
        self._lock = threading.Lock()
        self._max_batch: int | None = None
        self._closed = False

    # ------------------------------------------------------------------ factories

    @classmethod
    def embedded(
        cls, path: str | os.PathLike[str], *, hnsw: HnswSettings = DEFAULT_HNSW
    ) -> ChromaIndex:
        """A Chroma database in the directory `path` (created if missing), in-process."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        return cls(client, hnsw=hnsw, location=f"embedded Chroma at {path}", owns_client=True)

    @classmethod
    def server(
        cls,
        url: str,
        *,
        hnsw: HnswSettings = SERVER_HNSW,
        headers: Mapping[str, str] | None = None,
    ) -> ChromaIndex:
        """A Chroma server at `url` (e.g. http://127.0.0.1:8000, started by `chroma run`).

        Raises `BackendUnavailable` when nothing answers there.
        """
        import chromadb
        from chromadb.config import Settings

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(f"Chroma URL {url!r} must look like http://host:port")
        if parts.path not in ("", "/"):
            raise InvalidInput(f"Chroma URL {url!r} must not have a path")
        ssl = parts.scheme == "https"
        port = parts.port or (443 if ssl else 8000)
        try:
            client = chromadb.HttpClient(
                host=parts.hostname,
                port=port,
                ssl=ssl,
                headers=dict(headers or {}),
                settings=Settings(anonymized_telemetry=False),
            )
        except Exception as e:
            if _is_unreachable(e):
                raise BackendUnavailable(
                    f"cannot reach the Chroma server at {url} ({e}); start it with "
                    "`chroma run --path <dir> --port <port>` or check the URL"
                ) from e
            raise
        transport = QueryTransport(parts.hostname, port, tls=ssl, headers=headers)
        return cls(client, hnsw=hnsw, location=f"Chroma server at {url}", owns_client=True,
                   remote=True, transport=transport)

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turns connection failures into `BackendUnavailable` naming the server."""
        if self._closed:
            raise BackendUnavailable(f"the vector index ({self._location}) is closed")
        try:
            yield
        except Exception as e:
            if _is_unreachable(e):
                raise BackendUnavailable(
                    f"cannot reach the {self._location}: {type(e).__name__}: {e}"
                ) from e
            raise

    def _batch_size(self) -> int:
        if self._max_batch is None:
            self._max_batch = max(1, int(self._client.get_max_batch_size()))
        return self._max_batch

    def _verified(self, namespace: str, collection: Any) -> Any:
        meta = collection.metadata or {}
        if meta.get(_NS_KEY) != namespace:
            raise StoreCorrupt(
                f"Chroma collection {collection.name!r} ({self._location}) belongs to "
                f"namespace {meta.get(_NS_KEY)!r}, not {namespace!r}: a hash collision or a "
                "collection reverie did not make. Drop that collection, then rebuild the "
                "index from the record store (`reverie repair`)."
            )
        dim = meta.get(_DIM_KEY)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise StoreCorrupt(
                f"Chroma collection {collection.name!r} of namespace {namespace!r} has no "
                f"valid '{_DIM_KEY}' in its metadata; drop it and rebuild the index."
            )
        return collection

    def _collection(self, namespace: str, create_dim: int | None = None) -> Any | None:
        """The namespace's collection; created with `create_dim` if given and missing."""
        from chromadb.errors import NotFoundError

        with self._lock:
            cached = self._collections.get(namespace)
        if cached is not None:
            return cached
        name = collection_name(namespace)
        if create_dim is None:
            try:
                col = self._client.get_collection(name=name, embedding_function=None)
            except NotFoundError:
                return None
        else:
            # get_or_create: two writers creating the namespace at once both succeed;
            # the loser's metadata is ignored, and the dimension check below still holds.
            col = self._client.get_or_create_collection(
                name=name,
                configuration=self._hnsw.configuration(),
                metadata={_NS_KEY: namespace, _DIM_KEY: create_dim, _SCHEMA_KEY: _SCHEMA},
                embedding_function=None,
            )
        self._verified(namespace, col)
        with self._lock:
            self._collections[namespace] = col
        return col

    def _call(
        self, namespace: str, fn: Callable[[Any], T], create_dim: int | None = None
    ) -> T | None:
        """Run `fn(collection)`; None when the namespace has no collection.

        A cached collection handle goes stale when another client drops and recreates
        the namespace; Chroma then says NotFound, and we re-resolve once.
        """
        from chromadb.errors import NotFoundError

        for attempt in (0, 1):
            col = self._collection(namespace, create_dim)
            if col is None:
                return None
            try:
                return _retry_transient(namespace, functools.partial(fn, col))
            except NotFoundError:
                with self._lock:
                    self._collections.pop(namespace, None)
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _dimension(collection: Any) -> int:
        return int(collection.metadata[_DIM_KEY])

    # ------------------------------------------------------------------ VectorIndex

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        """Insert or replace `items`; all-or-nothing validation before any write."""
        validate_namespace(namespace)
        ids, vectors, metadatas = _checked_items(namespace, items)
        if not ids:
            return
        dim = vectors[0].shape[0]
        matrix = np.stack(vectors)

        with self._guard():
            col = self._collection(namespace, create_dim=dim)
            assert col is not None
            self._check_dimension(namespace, self._dimension(col), dim)
            size = self._batch_size()

            def write(c: Any) -> None:
                for s in _chunks(len(ids), size):
                    c.upsert(ids=ids[s], embeddings=matrix[s], metadatas=metadatas[s])

            self._call(namespace, write, create_dim=dim)

    def _check_dimension(self, namespace: str, stored: int, dim: int) -> None:
        if stored != dim:
            raise InvalidVector(
                f"namespace {namespace!r} holds {stored}-dimensional vectors but this "
                f"upsert has {dim}-dimensional ones (a different embedder?); nothing was "
                "written. To switch embedders, drop the namespace's vector index and "
                "rebuild it from the record store."
            )

    def checked_items(self, namespace: str, items: Sequence[VectorItem]) -> list[VectorItem]:
        """`items` as `upsert` would take them (float32 vectors, Chroma metadata), or the
        error `upsert` would raise, without writing: a queue in front of the index
        (`redis.outbox`) refuses bad input before it queues it, not when it drains."""
        validate_namespace(namespace)
        ids, vectors, metadatas = _checked_items(namespace, items)
        if ids:
            stored = self.dimension(namespace)
            if stored is not None:
                self._check_dimension(namespace, stored, vectors[0].shape[0])
        return [
            VectorItem(i, v, m or {}) for i, v, m in zip(ids, vectors, metadatas, strict=True)
        ]

    def checked_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> list[tuple[str, dict[str, Scalar]]]:
        """(id, metadata) pairs as `set_metadata` would write them (empty ones dropped),
        or the error it would raise, without writing."""
        validate_namespace(namespace)
        id_list = _check_ids(ids, "set_metadata")
        metas = list(metadata)
        if len(metas) != len(id_list):
            raise InvalidInput(
                f"set_metadata got {len(id_list)} ids but {len(metas)} metadata mappings"
            )
        return [
            (i, m)
            for i, raw in zip(id_list, metas, strict=True)
            if (m := _check_metadata(i, raw)) is not None
        ]

    def checked_ids(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """`ids` as `delete` would take them, or the error it would raise."""
        validate_namespace(namespace)
        return _check_ids(ids, "delete")

    def query(
        self,
        namespace: str,
        vector: Vector,
        k: int,
        where: Mapping[str, Scalar] | None = None,
    ) -> list[VectorHit]:
        """The `k` nearest by cosine, best first; fewer when the namespace is smaller."""
        validate_namespace(namespace)
        if isinstance(k, bool) or not isinstance(k, int):
            raise InvalidInput(f"k must be an integer, got {k!r}")
        q = _check_vector("<query>", vector, namespace)
        flt = _where(where)
        if k <= 0:
            return []
        with self._guard():
            col = self._collection(namespace)
            if col is None:
                return []
            stored = self._dimension(col)
            if q.shape[0] != stored:
                raise InvalidVector(
                    f"query vector has dimension {q.shape[0]}, but namespace {namespace!r} "
                    f"holds {stored}-dimensional vectors"
                )

            def run(c: Any) -> list[tuple[str, float]]:
                if flt is None:
                    return _pairs(self._query(c, q, k, ["distances"]))
                # Chroma evaluates a `where` by listing every matching id first, which costs
                # ~20x an unfiltered query when most items match (`status = active`). So
                # filter the unfiltered top candidates here, and only fall back to Chroma's
                # filter when too few of them match (a selective filter).
                fetch = max(k * _OVERFETCH, _MIN_FETCH)
                r = self._query(c, q, fetch, ["distances", "metadatas"])
                got = r["ids"][0] if r["ids"] else []
                metas = r["metadatas"][0] if r.get("metadatas") else [None] * len(got)
                kept = [
                    pair
                    for pair, meta in zip(_pairs(r), metas, strict=True)
                    if _matches(meta, where)
                ]
                if len(kept) >= k or len(got) < fetch:  # enough, or the whole namespace seen
                    return kept[:k]
                return _pairs(self._query(c, q, k, ["distances"], flt))

            pairs = self._call(namespace, run)
        return _hits(pairs or [])

    def begin_query(self, namespace: str, vector: Vector, k: int) -> SentQuery | None:
        """Send an unfiltered `query` to the server now and read its answer later
        (`SentQuery.result`), so the caller overlaps its own work with the server's
        without a thread (an optional capability, see `core.ports.VectorIndex`). None
        when there is nothing to send early (in process, or no collection yet): the
        caller then calls `query`."""
        if self._transport is None:
            return None
        validate_namespace(namespace)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            return None  # `query` answers (or rejects) it
        q = _check_vector("<query>", vector, namespace)
        with self._guard():
            col = self._collection(namespace)
            if col is None or self._dimension(col) != q.shape[0]:
                return None
            body = {"query_embeddings": q[None, :], "n_results": k, "include": ["distances"]}
            sent = self._transport.send(col.tenant, col.database, str(col.id), body)
        return SentQuery(self, namespace, q, k, sent)

    def _query(
        self,
        collection: Any,
        q: Vector,
        n: int,
        include: list[str],
        where: dict[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """One nearest-neighbour query: on a server through the lean transport (see
        `chroma.http`), in process through the client."""
        if self._transport is None:
            return collection.query(  # type: ignore[no-any-return]
                query_embeddings=q[None, :], n_results=n, where=where, include=include
            )
        body: dict[str, Any] = {
            "query_embeddings": q[None, :], "n_results": n, "include": include
        }
        if where is not None:
            body["where"] = where
        return self._transport.query(
            collection.tenant, collection.database, str(collection.id), body
        )

    def similarities(self, namespace: str, vector: Vector, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of `vector` to each stored id (unknown ids absent): one `get` of the
        stored embeddings, so lexical candidates outside the dense top-k are scored on the
        same scale as the dense hits."""
        validate_namespace(namespace)
        id_list = _check_ids(ids, "similarities")
        q = _check_vector("<query>", vector, namespace)
        if not id_list:
            return {}
        wanted = list(dict.fromkeys(id_list))  # Chroma rejects duplicate ids in one get
        with self._guard():
            col = self._collection(namespace)
            if col is None:
                return {}
            stored = self._dimension(col)
            if q.shape[0] != stored:
                raise InvalidVector(
                    f"query vector has dimension {q.shape[0]}, but namespace {namespace!r} "
                    f"holds {stored}-dimensional vectors"
                )
            size = self._batch_size()

            def fetch(c: Any) -> tuple[list[str], list[Any]]:
                got: list[str] = []
                embs: list[Any] = []
                for s in _chunks(len(wanted), size):
                    r = c.get(ids=wanted[s], include=["embeddings"])
                    if len(r["ids"]):
                        got.extend(r["ids"])
                        embs.append(np.asarray(r["embeddings"], dtype=np.float32))
                return got, embs

            res = self._call(namespace, fetch)
        if not res or not res[0]:
            return {}
        got, embs = res
        return dict(zip(got, cosine_to(q, np.concatenate(embs, axis=0)), strict=True))

    def stored_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        """The stored embeddings of `ids` (unknown ids absent). Not part of the
        `VectorIndex` port, an optional capability: the REM cycle clusters with the
        vectors already stored instead of re-embedding every flagged memory (and falls
        back to embedding where an index lacks it)."""
        validate_namespace(namespace)
        wanted = list(dict.fromkeys(_check_ids(ids, "stored_vectors")))
        if not wanted:
            return {}
        with self._guard():
            col = self._collection(namespace)
            if col is None:
                return {}
            size = self._batch_size()

            def fetch(c: Any) -> dict[str, Vector]:
                out: dict[str, Vector] = {}
                for s in _chunks(len(wanted), size):
                    r = c.get(ids=wanted[s], include=["embeddings"])
                    for i, v in zip(r["ids"], r["embeddings"], strict=True):
                        out[i] = np.asarray(v, dtype=np.float32)
                return out

            got = self._call(namespace, fetch)
        return got or {}

    def neighbors(
        self, namespace: str, ids: Sequence[str], k: int
    ) -> dict[str, list[VectorHit]]:
        """The `k` nearest indexed neighbours of each indexed id in `ids`, itself excluded,
        best first (unknown ids absent). Not part of the `VectorIndex` port, an optional
        capability: the REM cycle clusters on this approximate k-NN (HNSW, ~log n per
        query) instead of an exact n^2 one. The stored embeddings are fetched in batches
        and queried in batches, k + 1 results each (the id itself is normally the first)."""
        validate_namespace(namespace)
        wanted = list(dict.fromkeys(_check_ids(ids, "neighbors")))
        if isinstance(k, bool) or not isinstance(k, int):
            raise InvalidInput(f"k must be an integer, got {k!r}")
        if k <= 0 or not wanted:
            return {}
        with self._guard():
            col = self._collection(namespace)
            if col is None:
                return {}
            size = min(self._batch_size(), _NEIGHBOR_BATCH)

            def run(c: Any) -> dict[str, list[tuple[str, float]]]:
                out: dict[str, list[tuple[str, float]]] = {}
                for s in _chunks(len(wanted), size):
                    got = c.get(ids=wanted[s], include=["embeddings"])
                    if not len(got["ids"]):
                        continue
                    embs = np.asarray(got["embeddings"], dtype=np.float32)
                    r = c.query(query_embeddings=embs, n_results=k + 1, include=["distances"])
                    for qid, hit_ids, dists in zip(
                        got["ids"], r["ids"], r["distances"], strict=True
                    ):
                        pairs = [(i, float(d)) for i, d in zip(hit_ids, dists, strict=True)]
                        out[qid] = [p for p in pairs if p[0] != qid][:k]
                return out

            found = self._call(namespace, run) or {}
        return {
            qid: sorted(
                (VectorHit(id=i, similarity=min(1.0, max(-1.0, 1.0 - d))) for i, d in pairs),
                key=lambda h: (-h.similarity, h.id),
            )
            for qid, pairs in found.items()
        }

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        """Merge `metadata[i]` into the metadata of `ids[i]` (keys given are overwritten,
        others kept). Unknown ids are ignored."""
        pairs = self.checked_metadata(namespace, ids, metadata)
        if not pairs:
            return
        with self._guard():
            size = self._batch_size()

            def write(c: Any) -> None:
                for s in _chunks(len(pairs), size):
                    part = pairs[s]
                    c.update(ids=[p[0] for p in part], metadatas=[p[1] for p in part])

            self._call(namespace, write)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Remove `ids` from the namespace; unknown ids are fine."""
        id_list = self.checked_ids(namespace, ids)
        if not id_list:
            return
        with self._guard():
            size = self._batch_size()

            def remove(c: Any) -> None:
                for s in _chunks(len(id_list), size):
                    c.delete(ids=id_list[s])

            self._call(namespace, remove)

    def ids(self, namespace: str) -> set[str]:
        """Every id in the namespace (paged, so large namespaces do not hit size limits)."""
        validate_namespace(namespace)
        with self._guard():

            def collect(c: Any) -> set[str]:
                out: set[str] = set()
                offset = 0
                while True:
                    page = c.get(include=[], limit=_PAGE, offset=offset)["ids"]
                    out.update(page)
                    if len(page) < _PAGE:
                        return out
                    offset += len(page)

            return self._call(namespace, collect) or set()

    def count(self, namespace: str) -> int:
        validate_namespace(namespace)
        with self._guard():
            n = self._call(namespace, lambda c: int(c.count()))
        return n or 0

    def dimension(self, namespace: str) -> int | None:
        """The namespace's fixed dimension, or None before its first upsert."""
        validate_namespace(namespace)
        with self._guard():
            col = self._collection(namespace)
        return None if col is None else self._dimension(col)

    def drop_namespace(self, namespace: str) -> None:
        """Delete the namespace's collection (vectors and fixed dimension); idempotent."""
        from chromadb.errors import NotFoundError

        validate_namespace(namespace)
        with self._guard():
            with self._lock:
                self._collections.pop(namespace, None)
            name = collection_name(namespace)
            try:
                col = self._client.get_collection(name=name, embedding_function=None)
            except NotFoundError:
                return
            owner = (col.metadata or {}).get(_NS_KEY)
            if owner != namespace:  # never drop a collection that is not this namespace's
                raise StoreCorrupt(
                    f"Chroma collection {name!r} ({self._location}) belongs to namespace "
                    f"{owner!r}, not {namespace!r}; not dropping it"
                )
            with suppress(NotFoundError):
                self._client.delete_collection(name=name)

    def close(self) -> None:
        """Release the client if this index made it; later calls raise BackendUnavailable."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            self._collections.clear()
        if self._transport is not None:
            self._transport.close()
        if self._owns_client:
            closer = getattr(self._client, "close", None)
            if closer is not None:
                closer()

    def __enter__(self) -> ChromaIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChromaIndex({self._location})"


def _hits(pairs: Sequence[tuple[str, float]]) -> list[VectorHit]:
    hits = [VectorHit(id=i, similarity=min(1.0, max(-1.0, 1.0 - d))) for i, d in pairs]
    hits.sort(key=lambda h: -h.similarity)  # Chroma already orders; make it a promise
    return hits


class SentQuery:
    """A query `ChromaIndex.begin_query` has sent; `result()` reads its answer once."""

    __slots__ = ("_index", "_k", "_namespace", "_q", "_sent")

    def __init__(
        self, index: ChromaIndex, namespace: str, q: Vector, k: int, sent: PendingQuery
    ) -> None:
        self._index = index
        self._namespace = namespace
        self._q = q
        self._k = k
        self._sent = sent

    def result(self) -> list[VectorHit]:
        """The hits, as `query` gives them. Anything but an unreachable server (the
        collection dropped and made again by another client, a segment Chroma is still
        writing) is answered by `query` itself, which re-resolves and retries."""
        try:
            with self._index._guard():
                answer = self._sent.receive()
        except BackendUnavailable:
            raise
        except Exception:
            return self._index.query(self._namespace, self._q, self._k)
        return _hits(_pairs(answer))

    def cancel(self) -> None:
        """Give up on the answer (the caller failed before reading it)."""
        self._sent.cancel()


def _retry_transient(namespace: str, call: Callable[[], T]) -> T:
    """`call()`, retried while Chroma reports a segment it has not persisted yet."""
    for delay in (*_TRANSIENT_DELAYS, None):
        try:
            return call()
        except Exception as e:
            if not any(m in str(e).lower() for m in _TRANSIENT_MARKERS):
                raise
            if delay is None:
                raise BackendUnavailable(
                    f"the Chroma collection of namespace {namespace!r} is still not readable "
                    f"after {sum(_TRANSIENT_DELAYS):.1f} s ({e}); retry, or run "
                    "`reverie repair` if it persists"
                ) from e
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
