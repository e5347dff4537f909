"""A Chroma client's collections as reverie namespaces: one collection per namespace,
opened, checked and cached here, with Chroma's failures turned into reverie's.

- One Chroma collection per reverie namespace. Isolation is structural: a query can only
  ever see its own namespace's vectors, so no forgotten filter can leak another tenant's
  memories. Collection names must be [a-zA-Z0-9._-], 3-512 chars, so the name is
  'rv-' + sha256(namespace)[:24]; the real namespace is kept in the collection metadata
  and checked on every open (a hash collision, or a foreign collection with that name,
  raises `StoreCorrupt` instead of mixing data).
- A namespace's dimension is fixed by its first upsert and kept in the collection
  metadata.
- Collections are opened with `embedding_function=None`: Chroma's default embedding
  function downloads a model.
- A cached collection handle goes stale when another client drops and re-creates the
  namespace; `call` re-resolves it once.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from reverie.core.errors import AuthFailed, BackendUnavailable, DeadlineExceeded, StoreCorrupt
from reverie.integrations.chroma.hnsw import HnswSettings
from reverie.integrations.chroma.http import ChromaRefused, ChromaUnreachable
from reverie.integrations.chroma.scrub import SharedExclusive
from reverie.integrations.urls import redact

__all__ = [
    "NS_KEY", "Collections", "chunks", "collection_name", "is_unreachable", "retry_transient",
]

T = TypeVar("T")

NS_KEY = "reverie_namespace"
_DIM_KEY = "reverie_dimension"
_SCHEMA_KEY = "reverie_index_schema"
_SCHEMA = 1
# A Chroma server that is still persisting a collection's first HNSW segment answers a
# concurrent read with "Error creating hnsw segment reader: Nothing found on disk"
# (chroma-core/chroma#4212), for instance with several worker processes on one namespace.
# It clears within moments, so such reads are retried with backoff before giving up.
_TRANSIENT_MARKERS = ("nothing found on disk", "error creating hnsw segment reader")
_TRANSIENT_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def chunks(n: int, size: int) -> Iterator[slice]:
    """Slices of `n` items, `size` at a time: one client call each."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def collection_name(namespace: str) -> str:
    """The Chroma collection holding `namespace`: stable, and legal for any namespace."""
    return "rv-" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:24]


def is_unreachable(e: BaseException) -> bool:
    """Connection-level failures of the HTTP client (the server is down or unreachable)."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        return False
    if isinstance(e, httpx.TransportError | ChromaUnreachable):
        return True
    # HttpClient's constructor turns a failed first request into this ValueError.
    return isinstance(e, ValueError) and "Could not connect to a Chroma server" in str(e)


def is_timeout(e: BaseException) -> bool:
    """A connection that was made but not answered in time (httpx's timeouts, or the
    query transport's socket timeout)."""
    import httpx

    if isinstance(e, httpx.TimeoutException):
        return True
    return isinstance(e, ChromaUnreachable) and isinstance(e.__cause__, TimeoutError)


def is_refused(e: BaseException) -> bool:
    """The server (or a proxy in front of it) refused the credentials: 401 or 403."""
    if isinstance(e, ChromaRefused):
        return True
    try:
        import httpx
        from chromadb.errors import AuthorizationError
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        return False
    if isinstance(e, AuthorizationError):
        return True
    return isinstance(e, httpx.HTTPStatusError) and e.response.status_code in (401, 403)


def refused(location: str, e: BaseException, secrets: tuple[str, ...] = ()) -> AuthFailed:
    """`AuthFailed` for a refused token, saying how to give the right one."""
    return AuthFailed(
        f"the {location} refused the credentials ({redact(f'{type(e).__name__}: {e}', secrets)});"
        " give the server's token as http://:TOKEN@host:port, in $REVERIE_CHROMA_TOKEN, or "
        "as open_engine(vectors_token=...)"
    )


def retry_transient(namespace: str, call: Callable[[], T]) -> T:
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


class Collections:
    """The namespaces' collections on one Chroma client, resolved once and cached."""

    def __init__(
        self, client: Any, hnsw: HnswSettings, location: str, secrets: tuple[str, ...] = ()
    ) -> None:
        self.client = client
        self.secrets = secrets  # masked in every message, with any URL password
        self.location = redact(location, secrets)  # for messages: "Chroma server at http://..."
        self.hnsw = hnsw
        self._cache: dict[str, Any] = {}
        # run once per namespace before it is first resolved, outside any call: finishes
        # or undoes a rebuild a kill interrupted (embedded only, `chroma.compact.settle`)
        self.settle: Callable[[str], None] | None = None
        self.settled: set[str] = set()
        self._lock = threading.Lock()
        self._max_batch: int | None = None
        # fewer items per call than the client takes, so each call stays well inside a
        # deadline (`chroma.index`, embedded behind `deadline.Bounded`)
        self.batch_cap: int | None = None
        self.closed = False
        # every call holds it shared; rewriting the HNSW files holds it alone (chroma.scrub)
        self.files = SharedExclusive()
        # run after each call, outside its shared hold, with the collection and its
        # dimension: zeroes what Chroma wrote past the HNSW block's last element
        # (embedded only, `chroma.scrub.Tails`)
        self.after_call: Callable[[Any, int], None] | None = None

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turns connection failures into `BackendUnavailable` naming the server."""
        if self.closed:
            raise BackendUnavailable(f"the vector index ({self.location}) is closed")
        try:
            yield
        except Exception as e:
            if is_refused(e):
                raise refused(self.location, e, self.secrets) from None
            if is_unreachable(e):
                what = redact(f"{type(e).__name__}: {e}", self.secrets)
                if is_timeout(e):
                    raise DeadlineExceeded(
                        f"the {self.location} did not answer within its deadline "
                        f"(Policy.deadlines.index_call_seconds): {what}; it is stopped or "
                        "overloaded. Retry later"
                    ) from e
                raise BackendUnavailable(f"cannot reach the {self.location}: {what}") from e
            raise

    def batch_size(self) -> int:
        """The most items the client takes in one call."""
        if self._max_batch is None:
            self._max_batch = max(1, int(self.client.get_max_batch_size()))
        if self.batch_cap is not None:
            return max(1, min(self._max_batch, self.batch_cap))
        return self._max_batch

    def _verified(self, namespace: str, collection: Any) -> Any:
        meta = collection.metadata or {}
        if meta.get(NS_KEY) != namespace:
            raise StoreCorrupt(
                f"Chroma collection {collection.name!r} ({self.location}) belongs to "
                f"namespace {meta.get(NS_KEY)!r}, not {namespace!r}: a hash collision or a "
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

    def get(self, namespace: str, create_dim: int | None = None) -> Any | None:
        """The namespace's collection; created with `create_dim` if given and missing."""
        from chromadb.errors import NotFoundError

        with self._lock:
            cached = self._cache.get(namespace)
        if cached is not None:
            return cached
        if self.settle is not None and namespace not in self.settled:
            self.settle(namespace)
            self.settled.add(namespace)
        name = collection_name(namespace)
        if create_dim is None:
            try:
                col = self.client.get_collection(name=name, embedding_function=None)
            except NotFoundError:
                return None
        else:
            # get_or_create: two writers creating the namespace at once both succeed;
            # the loser's metadata is ignored, and the dimension check below still holds.
            col = self.client.get_or_create_collection(
                name=name,
                configuration=self.hnsw.configuration(),
                metadata={NS_KEY: namespace, _DIM_KEY: create_dim, _SCHEMA_KEY: _SCHEMA},
                embedding_function=None,
            )
        self._verified(namespace, col)
        with self._lock:
            self._cache[namespace] = col
        return col

    def call(
        self, namespace: str, fn: Callable[[Any], T], create_dim: int | None = None
    ) -> T | None:
        """Run `fn(collection)`; None when the namespace has no collection.

        A cached collection handle goes stale when another client drops and recreates
        the namespace; Chroma then says NotFound, and we re-resolve once.
        """
        from chromadb.errors import NotFoundError

        for attempt in (0, 1):
            col = self.get(namespace, create_dim)
            if col is None:
                return None
            try:
                with self.files.shared():
                    out = retry_transient(namespace, functools.partial(fn, col))
            except NotFoundError:
                self.forget(namespace)
                if attempt:
                    raise
                continue
            if self.after_call is not None:
                self.after_call(col, self.dimension(col))
            return out
        raise AssertionError("unreachable")  # pragma: no cover

    def forget(self, namespace: str) -> None:
        """Drop the cached handle (the collection is being dropped, or went stale)."""
        with self._lock:
            self._cache.pop(namespace, None)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    @staticmethod
    def dimension(collection: Any) -> int:
        """The dimension fixed by the collection's first upsert."""
        return int(collection.metadata[_DIM_KEY])
