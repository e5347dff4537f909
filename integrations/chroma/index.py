"""`VectorIndex` on Chroma: embedded (PersistentClient) or a Chroma server (HttpClient).

Design choices, and why:

- One Chroma collection per reverie namespace (`chroma.collections`): isolation is
  structural, so no forgotten filter can leak another tenant's memories.
- Vectors are always passed in raw: Chroma's default embedding function downloads a model.
- Cosine space, with HNSW parameters chosen on real embeddings (`chroma.hnsw`).
- A namespace's dimension is fixed by its first upsert; a later mismatch is an
  `InvalidVector` that says how to recover.
- Every vector is checked (`chroma.checks`: 1-D, finite, non-zero, right dimension) before
  anything is written, so a bad item fails the whole call with nothing stored.
- On a server, queries go through a lean HTTP transport (`chroma.http`), and
  `begin_query` sends one before the caller needs its answer.
- The index is derived data: it can always be rebuilt from the record store, so
  a large upsert is split into Chroma-sized batches without cross-batch atomicity.
- Every call has a deadline (`Policy.deadlines.index_call_seconds`, one Chroma call or
  batch): a server's requests time out, and embedded Chroma, which has no timeout, runs
  behind `chroma.bounded` (`BackendUnavailable`, or `StorageFull` after a full disk).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import suppress
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from reverie.core.errors import BackendUnavailable, InvalidInput, InvalidVector, StoreCorrupt
from reverie.core.models import validate_namespace
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.ports import Vector, VectorHit, VectorItem
from reverie.integrations.chroma import compact, embeddings, scrub
from reverie.integrations.chroma.bounded import BoundedClient
from reverie.integrations.chroma.checks import (
    Scalar,
    check_ids,
    check_items,
    check_metadata,
    check_vector,
    matches,
    where_clause,
)
from reverie.integrations.chroma.collections import (
    NS_KEY,
    Collections,
    chunks,
    collection_name,
    is_refused,
    is_unreachable,
    refused,
)
from reverie.integrations.chroma.hnsw import DEFAULT_HNSW, SERVER_HNSW, HnswSettings
from reverie.integrations.chroma.http import PendingQuery, QueryTransport, check_access
from reverie.integrations.deadline import Bounded
from reverie.integrations.urls import redact

__all__ = [
    "DEFAULT_HNSW", "SERVER_HNSW", "ChromaIndex", "HnswSettings", "SentQuery", "collection_name",
]

_PAGE = 5000  # ids() page size; below Chroma's max batch size
# Filtered queries first take the unfiltered top max(5k, 50) and filter them here; see
# `ChromaIndex.query` and the filter columns of benchmarks/results/hnsw.md.
_OVERFETCH = 5
_MIN_FETCH = 50
# When too few of those match (the newest of a long chain of corrections: its nearest
# vectors are the retired versions), the unfiltered fetch grows by this factor up to
# `_MAX_FETCH` before Chroma's own filter is asked: that filter lists every matching id
# first, which at 100k active memories costs a hundred times a query for 3,200.
_FETCH_GROWTH = 8
_MAX_FETCH = 3200
# Chroma's operation code for a delete in its write log (chromadb.types.Operation.DELETE)
_LOG_DELETE = 3
_DEADLINES = DEFAULT_POLICY.deadlines
# Items per call into embedded Chroma behind a deadline: Chroma's own limit (5,461)
# takes 42-53 s to upsert on a loaded 2-core machine, past the 30 s default deadline;
# 500 take a tenth of that. Larger calls cost fewer round trips, smaller ones stay
# inside a shorter `index_call_seconds`.
_BOUNDED_BATCH = 500

log = logging.getLogger("reverie")


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
        secrets: tuple[str, ...] = (),
    ) -> None:
        self._cols = Collections(client, hnsw, location or type(client).__name__, secrets)
        self._owns_client = owns_client
        # A query waits on the network: recall then overlaps its own reads with it (a hint
        # the engine reads with getattr; an embedded client computes in process, where
        # extra reads would only compete with the query for the GIL)
        self.remote = remote
        self._transport = transport
        # embedded only: the SQLite file holding Chroma's write log (`purge_log`)
        self._log_file: str | None = None
        self._call_seconds = _DEADLINES.index_call_seconds

    def collection(self, namespace: str) -> Any | None:
        """The namespace's chromadb collection, or None before its first vector: for
        measurements against Chroma itself and for inspection, never for writes (the index
        keeps its own checks and caches in step). Embedded, the raw collection, without
        the deadline's worker thread."""
        col = self._cols.get(validate_namespace(namespace))
        return getattr(col, "_target", col)

    # ------------------------------------------------------------------ factories

    @classmethod
    def embedded(
        cls,
        path: str | os.PathLike[str],
        *,
        hnsw: HnswSettings = DEFAULT_HNSW,
        call_seconds: float = _DEADLINES.index_call_seconds,
    ) -> ChromaIndex:
        """A Chroma database in the directory `path` (created if missing), in-process.
        Each call into it (one batch) runs on a worker thread and is waited for at most
        `call_seconds` (`deadline.Bounded`); 0 calls it directly, with no deadline."""
        import chromadb
        from chromadb.config import Settings

        location = f"embedded Chroma at {path}"

        def make() -> Any:
            return chromadb.PersistentClient(
                path=str(path), settings=Settings(anonymized_telemetry=False)
            )

        client: Any
        if call_seconds > 0:
            bounded = Bounded(call_seconds, location)
            client = BoundedClient(bounded.call(make), bounded)
        else:
            client = make()
        index = cls(client, hnsw=hnsw, location=location, owns_client=True)
        index._log_file = os.path.join(os.fspath(path), "chroma.sqlite3")
        index._call_seconds = call_seconds
        index._cols.settle = index._settle
        index._cols.after_call = scrub.Tails(index._log_file, index._cols.files).check
        if call_seconds > 0:
            index._cols.batch_cap = _BOUNDED_BATCH
        return index

    @classmethod
    def server(
        cls,
        url: str,
        *,
        hnsw: HnswSettings = SERVER_HNSW,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        call_seconds: float = _DEADLINES.index_call_seconds,
        connect_seconds: float = _DEADLINES.connect_seconds,
    ) -> ChromaIndex:
        """A Chroma server at `url` (e.g. http://127.0.0.1:8000, started by `chroma run`).

        A server behind a token: `token=`, or the URL's password (http://:TOKEN@host:port);
        it is sent as `Authorization: Bearer TOKEN` (chromadb's token header) and never
        shown (`urls.redact`). Raises `AuthFailed` when the server refuses it and
        `BackendUnavailable` when nothing answers there. Every request gives up after
        `connect_seconds` to connect and `call_seconds` to answer (chromadb's own HTTP
        client waits forever on a server that accepts but does not answer).
        """
        import chromadb
        from chromadb.config import Settings

        where = redact(url, (token,))
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(f"Chroma URL {where!r} must look like http://host:port")
        if parts.path not in ("", "/"):
            raise InvalidInput(f"Chroma URL {where!r} must not have a path")
        if parts.username:
            raise InvalidInput(
                f"Chroma URL {where!r} has a user name; a token goes in the password: "
                "http://:TOKEN@host:port"
            )
        token = token or (unquote(parts.password) if parts.password else None)
        secrets = tuple(s for s in (token, parts.password) if s)
        sent = {**dict(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
        ssl = parts.scheme == "https"
        port = parts.port or (443 if ssl else 8000)
        location = f"Chroma server at {where}"
        try:
            check_access(parts.hostname, port, tls=ssl, headers=sent, timeout=call_seconds)
            client = chromadb.HttpClient(
                host=parts.hostname,
                port=port,
                ssl=ssl,
                headers=sent,
                settings=Settings(anonymized_telemetry=False),
            )
            _set_http_timeout(client, connect_seconds, call_seconds)
        except Exception as e:
            if is_refused(e):
                raise refused(location, e, secrets) from None
            if is_unreachable(e):
                raise BackendUnavailable(
                    f"cannot reach the {location} ({redact(str(e), secrets)}); start it with "
                    "`chroma run --path <dir> --port <port>` or check the URL"
                ) from e
            raise
        transport = QueryTransport(
            parts.hostname, port, tls=ssl, headers=sent, timeout=call_seconds
        )
        return cls(client, hnsw=hnsw, location=location, owns_client=True,
                   remote=True, transport=transport, secrets=secrets)

    # ------------------------------------------------------------------ plumbing
    # ------------------------------------------------------------------ VectorIndex

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        """Insert or replace `items`; all-or-nothing validation before any write."""
        validate_namespace(namespace)
        ids, vectors, metadatas = check_items(namespace, items)
        if not ids:
            return
        dim = vectors[0].shape[0]
        matrix = np.stack(vectors)

        with self._cols.guard():
            col = self._cols.get(namespace, create_dim=dim)
            assert col is not None
            self._check_dimension(namespace, self._cols.dimension(col), dim)
            size = self._cols.batch_size()
            for s in chunks(len(ids), size):  # one call (and deadline) per batch

                def write(c: Any, s: slice = s) -> None:
                    c.upsert(ids=ids[s], embeddings=matrix[s], metadatas=metadatas[s])

                self._cols.call(namespace, write, create_dim=dim)

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
        ids, vectors, metadatas = check_items(namespace, items)
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
        id_list = check_ids(ids, "set_metadata")
        metas = list(metadata)
        if len(metas) != len(id_list):
            raise InvalidInput(
                f"set_metadata got {len(id_list)} ids but {len(metas)} metadata mappings"
            )
        return [
            (i, m)
            for i, raw in zip(id_list, metas, strict=True)
            if (m := check_metadata(i, raw)) is not None
        ]

    def checked_ids(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """`ids` as `delete` would take them, or the error it would raise."""
        validate_namespace(namespace)
        return check_ids(ids, "delete")

    def query(
        self,
        namespace: str,
        vector: Vector,
        k: int,
        where: Mapping[str, Scalar] | None = None,
    ) -> list[VectorHit]:
        """The `k` nearest by cosine, best first; fewer when the namespace is smaller."""
        _check_k(namespace, k)
        q = check_vector("<query>", vector, namespace)
        flt = where_clause(where)
        if k <= 0:
            return []
        with self._cols.guard():
            col = self._cols.get(namespace)
            if col is None:
                return []
            _check_dimension(q, self._cols.dimension(col), namespace)

            def run(c: Any) -> list[tuple[str, float]]:
                if flt is None:
                    return _pairs(self._query(c, q, k, ["distances"]))
                # Chroma evaluates a `where` by listing every matching id first, which costs
                # far more than an unfiltered query when most items match (`status =
                # active`). So
                # filter the unfiltered top candidates here, and only fall back to Chroma's
                # filter when too few of them match (a selective filter).
                fetch = max(k * _OVERFETCH, _MIN_FETCH)
                while True:
                    r = self._query(c, q, fetch, ["distances", "metadatas"])
                    got = r["ids"][0] if r["ids"] else []
                    metas = r["metadatas"][0] if r.get("metadatas") else [None] * len(got)
                    kept = [
                        pair
                        for pair, meta in zip(_pairs(r), metas, strict=True)
                        if matches(meta, where)
                    ]
                    if len(kept) >= k or len(got) < fetch:  # enough, or all of it seen
                        return kept[:k]
                    if fetch >= max(_MAX_FETCH, k * _OVERFETCH):
                        break
                    fetch = min(fetch * _FETCH_GROWTH, max(_MAX_FETCH, k * _OVERFETCH))
                # a selective filter: few of even the nearest thousands match
                return _pairs(self._query(c, q, k, ["distances"], flt))

            pairs = self._cols.call(namespace, run)
        return _hits(pairs or [])

    def query_many(
        self, namespace: str, vectors: Sequence[Vector], k: int
    ) -> list[list[VectorHit]]:
        """The `k` nearest of each vector, unfiltered, in one call per batch (a call costs
        far more than one more query in it): an optional capability (`QueriesMany`)."""
        _check_k(namespace, k)
        rows = [check_vector("<query>", v, namespace) for v in vectors]
        if k <= 0 or not rows:
            return [[] for _ in rows]
        with self._cols.guard():
            col = self._cols.get(namespace)
            if col is None:
                return [[] for _ in rows]
            stored = self._cols.dimension(col)
            for q in rows:
                _check_dimension(q, stored, namespace)
            out: list[list[VectorHit]] = []
            size = self._cols.batch_size()
            for s in chunks(len(rows), size):
                batch = np.stack(rows[s])

                def run(c: Any, batch: np.ndarray = batch) -> list[list[tuple[str, float]]]:
                    r = self._query(c, batch, k, ["distances"])
                    ids = r["ids"] or []
                    dists = r["distances"] or []
                    return [
                        list(zip(i, np.asarray(d, dtype=np.float32).tolist(), strict=True))
                        for i, d in zip(ids, dists, strict=True)
                    ]

                got = self._cols.call(namespace, run) or []
                out += [_hits(pairs) for pairs in got]
                out += [[] for _ in range(len(batch) - len(got))]
        return out

    def begin_query(self, namespace: str, vector: Vector, k: int) -> SentQuery | None:
        """Send an unfiltered `query` to the server now and read its answer later
        (`SentQuery.result`), so the caller overlaps its own work with the server's
        without a thread (an optional capability, see `core.ports.VectorIndex`).
        Embedded behind a deadline, the query starts on the deadline's worker the same
        way, so no second thread waits on the first. None when there is nothing to
        start early (in process with no deadline, or no collection yet): the caller
        then calls `query`."""
        bounded = self._cols.client.bounded if self._embedded_bounded() else None
        if self._transport is None and bounded is None:
            return None
        validate_namespace(namespace)
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            return None  # `query` answers (or rejects) it
        q = check_vector("<query>", vector, namespace)
        with self._cols.guard():
            col = self._cols.get(namespace)
            if col is None or self._cols.dimension(col) != q.shape[0]:
                return None
            sent: PendingQuery | _Started
            if bounded is not None:
                raw = getattr(col, "_target", col)  # already on the deadline's worker
                sent = _Started(bounded, bounded.submit(lambda: self._in_process(raw, q, k)))
            else:
                assert self._transport is not None
                body = {"query_embeddings": q[None, :], "n_results": k, "include": ["distances"]}
                sent = self._transport.send(col.tenant, col.database, str(col.id), body)
        return SentQuery(self, namespace, q, k, sent)

    def _embedded_bounded(self) -> bool:
        return self._transport is None and isinstance(self._cols.client, BoundedClient)

    def _in_process(self, raw: Any, q: Vector, k: int) -> Mapping[str, Any]:
        """An unfiltered query of the raw collection, run on the deadline's worker, with
        the segment files held as `Collections.call` holds them."""
        with self._cols.files.shared():
            out: Mapping[str, Any] = raw.query(
                query_embeddings=q[None, :], n_results=k, include=["distances"]
            )
        if self._cols.after_call is not None:
            self._cols.after_call(raw, self._cols.dimension(raw))
        return out

    def _query(
        self,
        collection: Any,
        q: Vector,
        n: int,
        include: list[str],
        where: dict[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """One nearest-neighbour query (several: `q` holds one vector per row): on a
        server through the lean transport (see `chroma.http`), in process through the
        client."""
        rows = q[None, :] if q.ndim == 1 else q
        if self._transport is None:
            return collection.query(  # type: ignore[no-any-return]
                query_embeddings=rows, n_results=n, where=where, include=include
            )
        body: dict[str, Any] = {
            "query_embeddings": rows, "n_results": n, "include": include
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
        return embeddings.similarities(self._cols, namespace, vector, ids)

    def stored_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        """The stored embeddings of `ids` (unknown ids absent): an optional capability
        (`chroma.embeddings.stored_vectors`)."""
        return embeddings.stored_vectors(self._cols, namespace, ids)

    def neighbors(self, namespace: str, ids: Sequence[str], k: int) -> dict[str, list[VectorHit]]:
        """The `k` nearest indexed neighbours of each indexed id in `ids`, itself excluded,
        best first: an optional capability (`chroma.embeddings.neighbors`)."""
        return embeddings.neighbors(self._cols, namespace, ids, k)

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        """Merge `metadata[i]` into the metadata of `ids[i]` (keys given are overwritten,
        others kept). Unknown ids are ignored."""
        pairs = self.checked_metadata(namespace, ids, metadata)
        if not pairs:
            return
        with self._cols.guard():
            size = self._cols.batch_size()
            for s in chunks(len(pairs), size):
                part = pairs[s]

                def write(c: Any, part: list[tuple[str, dict[str, Scalar]]] = part) -> None:
                    c.update(ids=[p[0] for p in part], metadatas=[p[1] for p in part])

                self._cols.call(namespace, write)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Remove `ids` from the namespace; unknown ids are fine."""
        id_list = self.checked_ids(namespace, ids)
        if not id_list:
            return
        with self._cols.guard():
            size = self._cols.batch_size()
            for s in chunks(len(id_list), size):

                def remove(c: Any, s: slice = s) -> None:
                    if self._log_file is not None:  # embedded: the floats go too (scrub)
                        scrub.blank(c, id_list[s], self._cols.dimension(c))
                    c.delete(ids=id_list[s])

                self._cols.call(namespace, remove)

    def purge_log(self, namespace: str, ids: Sequence[str]) -> int:
        """Remove the writes of `ids` from embedded Chroma's write log; returns how many
        log entries went (0 on a Chroma server, whose log is the server's own).

        Chroma (1.x, in process) appends every add, upsert and update, with its embedding,
        to the `embeddings_queue` table of `chroma.sqlite3`, and deletes them only once
        its HNSW segment has persisted past them (every `sync_threshold` writes), so a
        deleted vector's embedding stays in that file until then, even after `close()`.
        Chroma has no call to purge one collection's log on demand (its Python
        `purge_log` belongs to the queue its Rust core no longer uses), so this removes
        the rows itself: the writes of `ids` only, never their deletes. Replaying the
        log on the next open then gives the same state: a delete of an id the segment
        never held is a no-op, and one the segment persisted is still applied. The file
        runs with `secure_delete`, so the freed pages are zeroed, and the log is written
        afresh (`scrub.rewrite_queue`) for what Chroma's own deletes left. The HNSW segment's
        files are scrubbed too (`chroma.scrub`: `delete` left decoys in place of the
        floats, written here over the file's copies, and bytes past its last element
        zeroed)."""
        import sqlite3

        id_list = self.checked_ids(namespace, ids)
        if not id_list or self._log_file is None or not os.path.exists(self._log_file):
            return 0
        with self._cols.guard():
            col = self._cols.get(namespace)
        if col is None:
            return 0
        removed = 0
        # Chroma's own connections may hold this file's lock (after a full disk, for
        # good): wait for it no longer than any other call into the index
        conn = sqlite3.connect(self._log_file, timeout=self._call_seconds or 30.0)
        try:
            conn.execute("PRAGMA secure_delete = ON")
            with conn:
                for s in chunks(len(id_list), 400):
                    part = id_list[s]
                    removed += conn.execute(
                        f"DELETE FROM embeddings_queue WHERE topic LIKE ? AND operation != ? "
                        f"AND id IN ({','.join('?' * len(part))})",
                        (f"%/{col.id}", _LOG_DELETE, *part),
                    ).rowcount
                scrub.rewrite_queue(conn)
        except sqlite3.Error as e:
            raise BackendUnavailable(
                f"cannot purge the write log of the {self._cols.location}: {e}"
            ) from None
        finally:
            conn.close()
        dim = self._cols.dimension(col)
        scrub.scrub_collection(self._log_file, str(col.id), id_list, dim, self._cols.files)
        return removed

    def compact(self, namespace: str, min_deleted_fraction: float) -> int:
        """Rebuild the namespace's HNSW graph from its live vectors when at least
        `min_deleted_fraction` of its slots hold deleted ones, so its files shrink to what
        is live (`chroma.compact`); returns the slots given back. Embedded only: a Chroma
        server's files are the server's own (0)."""
        validate_namespace(namespace)
        if self._log_file is None or not os.path.exists(self._log_file):
            return 0
        with self._cols.guard():
            return compact.rebuild(self._cols, self._log_file, namespace, min_deleted_fraction)

    def _settle(self, namespace: str) -> None:
        assert self._log_file is not None
        if os.path.exists(self._log_file):
            with self._cols.files.exclusive():
                compact.settle(self._cols, self._log_file, namespace)

    def ids(self, namespace: str) -> set[str]:
        """Every id in the namespace (paged, so large namespaces do not hit size limits)."""
        validate_namespace(namespace)
        with self._cols.guard():

            def collect(c: Any) -> set[str]:
                out: set[str] = set()
                offset = 0
                while True:
                    page = c.get(include=[], limit=_PAGE, offset=offset)["ids"]
                    out.update(page)
                    if len(page) < _PAGE:
                        return out
                    offset += len(page)

            return self._cols.call(namespace, collect) or set()

    def count(self, namespace: str) -> int:
        validate_namespace(namespace)
        with self._cols.guard():
            n = self._cols.call(namespace, lambda c: int(c.count()))
        return n or 0

    def dimension(self, namespace: str) -> int | None:
        """The namespace's fixed dimension, or None before its first upsert."""
        validate_namespace(namespace)
        with self._cols.guard():
            col = self._cols.get(namespace)
        return None if col is None else self._cols.dimension(col)

    def drop_namespace(self, namespace: str) -> None:
        """Delete the namespace's collection (vectors and fixed dimension); idempotent."""
        from chromadb.errors import NotFoundError

        validate_namespace(namespace)
        with self._cols.guard():
            self._cols.forget(namespace)
            name = collection_name(namespace)
            try:
                col = self._cols.client.get_collection(name=name, embedding_function=None)
            except NotFoundError:
                return
            owner = (col.metadata or {}).get(NS_KEY)
            if owner != namespace:  # never drop a collection that is not this namespace's
                raise StoreCorrupt(
                    f"Chroma collection {name!r} ({self._cols.location}) belongs to namespace "
                    f"{owner!r}, not {namespace!r}; not dropping it"
                )
            with suppress(NotFoundError):
                self._cols.client.delete_collection(name=name)

    def close(self) -> None:
        """Release the client if this index made it; later calls raise BackendUnavailable."""
        if self._cols.closed:
            return
        self._cols.closed = True
        self._cols.clear()
        if self._transport is not None:
            self._transport.close()
        if self._owns_client:
            closer = getattr(self._cols.client, "close", None)
            if closer is not None:
                try:
                    closer()
                except BackendUnavailable as e:  # embedded Chroma stuck past its deadline
                    log.warning(
                        "the %s was left open: %s; its files are released when this "
                        "process ends", self._cols.location, e,
                    )
            bounded = getattr(self._cols.client, "bounded", None)
            if isinstance(bounded, Bounded):
                bounded.close()  # its worker threads end with the index

    def __enter__(self) -> ChromaIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChromaIndex({self._cols.location})"


def _set_http_timeout(client: Any, connect_seconds: float, call_seconds: float) -> None:
    """Give chromadb's HTTP session (httpx, made with no timeout) connect and read
    timeouts. The session is the client's private `_server._session`; a chromadb that
    moved it fails here, loudly, rather than leaving the calls unbounded."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        raise RuntimeError(
            "this chromadb's HTTP client has no `_server._session` to give a timeout; "
            "reverie needs chromadb 1.x"
        )
    session.timeout = httpx.Timeout(call_seconds, connect=connect_seconds)


def _check_k(namespace: str, k: object) -> None:
    validate_namespace(namespace)
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"k must be an integer, got {k!r}")


def _check_dimension(q: Vector, stored: int, namespace: str) -> None:
    if q.shape[0] != stored:
        raise InvalidVector(
            f"query vector has dimension {q.shape[0]}, but namespace {namespace!r} holds "
            f"{stored}-dimensional vectors"
        )


def _hits(pairs: Sequence[tuple[str, float]]) -> list[VectorHit]:
    hits = [VectorHit(id=i, similarity=min(1.0, max(-1.0, 1.0 - d))) for i, d in pairs]
    hits.sort(key=lambda h: -h.similarity)  # Chroma already orders; make it a promise
    return hits


class SentQuery:
    """A query `ChromaIndex.begin_query` has sent; `result()` reads its answer once."""

    __slots__ = ("_index", "_k", "_namespace", "_q", "_sent")

    def __init__(
        self, index: ChromaIndex, namespace: str, q: Vector, k: int,
        sent: PendingQuery | _Started,
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
            with self._index._cols.guard():
                answer = self._sent.receive()
        except BackendUnavailable:
            raise
        except Exception:
            return self._index.query(self._namespace, self._q, self._k)
        return _hits(_pairs(answer))

    def cancel(self) -> None:
        """Give up on the answer (the caller failed before reading it)."""
        self._sent.cancel()


class _Started:
    """An embedded query started on the deadline's worker (`Bounded.submit`)."""

    __slots__ = ("_bounded", "_future")

    def __init__(self, bounded: Bounded, future: Future[Mapping[str, Any]]) -> None:
        self._bounded = bounded
        self._future = future

    def receive(self) -> Mapping[str, Any]:
        return self._bounded.wait(self._future)

    def cancel(self) -> None:
        self._future.cancel()  # not started yet: dropped; running: left to finish
