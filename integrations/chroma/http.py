"""The nearest-neighbour query to a Chroma server, sent without the chromadb client.

Why: recall on the shared tier waits on one `query` per call, and chromadb's HTTP client
(httpx, plus its own request validation and tracing) spends several times more of the
worker's CPU per query before the request leaves than the same JSON body sent on a
kept-alive `http.client` connection (benchmarks/results/latency_tiers.md has the recall
numbers). That CPU is taken from the lexical work recall overlaps with the query, so the
whole recall pays for it.

Only `query` goes this way: it is the one call on every recall's path, and its request
and answer are plain JSON of the server's v2 REST API (the same body chromadb sends).
Everything else (collections, upserts, gets) stays on the chromadb client. Errors keep
chromadb's types (the server names them: `NotFoundError` and the rest, mapped through
`chromadb.errors.error_types`), and a server that cannot be reached raises
`ChromaUnreachable`, which the index turns into `BackendUnavailable` as for the client.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

__all__ = ["ChromaRefused", "ChromaUnreachable", "PendingQuery", "QueryTransport", "check_access"]

_TIMEOUT = 60.0  # seconds for connect and each read, unless the index gives its own


class ChromaUnreachable(ConnectionError):
    """The Chroma server did not answer (refused, reset, or timed out)."""


class ChromaRefused(PermissionError):
    """The Chroma server (or the proxy in front of it) answered 401 or 403: the token is
    missing, wrong, or lacks the permission."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status = status


def check_access(
    host: str, port: int, *, tls: bool, headers: Mapping[str, str], timeout: float = 10.0
) -> None:
    """Ask the server who we are before anything else, so a refused token is reported as
    such (`ChromaRefused`) instead of the client's generic connection error. A server that
    refuses the connection is left to the client, which reports it as unreachable; one
    that accepts it but does not answer within `timeout` (a stopped process) is
    `ChromaUnreachable` here, since the client's first request has no timeout."""
    context = ssl.create_default_context() if tls else None
    conn = (
        http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        if context is not None
        else http.client.HTTPConnection(host, port, timeout=timeout)
    )
    try:
        conn.request("GET", "/api/v2/auth/identity", headers=dict(headers))
        resp = conn.getresponse()
        status, data = resp.status, resp.read()
    except TimeoutError as e:  # connected, but no answer: the client would wait forever
        raise ChromaUnreachable(
            f"no answer within {timeout:g} s from {host}:{port} ({type(e).__name__})"
        ) from e
    except (OSError, http.client.HTTPException):
        return
    finally:
        conn.close()
    if status in (401, 403):
        raise ChromaRefused(status, data.decode("utf-8", "replace"))


class QueryTransport:
    """POSTs `query` to one Chroma server on a kept-alive connection per thread.

    A connection is used by one thread at a time (http.client is not thread-safe), so
    each thread that queries has its own; `close()` closes them all.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        headers: Mapping[str, str] | None = None,
        timeout: float = _TIMEOUT,
    ) -> None:
        self._host = host
        self._timeout = timeout
        self._port = port
        self._tls = ssl.create_default_context() if tls else None
        self._headers = {**dict(headers or {}), "Content-Type": "application/json"}
        self._local = threading.local()
        self._lock = threading.Lock()
        # weak: a connection of a thread that has ended goes with its thread's locals
        self._open: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self._closed = False

    def _new_connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._tls is not None:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._timeout, context=self._tls
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        with self._lock:
            if self._closed:
                raise ChromaUnreachable("the query transport is closed")
            self._open.add(conn)
        return conn

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        return conn if conn is not None else self._new_connection()

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        if getattr(self._local, "conn", None) is None:
            self._local.conn = conn
        else:  # this thread opened another meanwhile: keep one
            self._discard(conn)

    def _discard(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        with self._lock:
            self._open.discard(conn)

    def query(
        self, tenant: str, database: str, collection_id: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The server's answer to a query `body` (query_embeddings may be a numpy array)."""
        return self.send(tenant, database, collection_id, body).receive()

    def send(
        self, tenant: str, database: str, collection_id: str, body: Mapping[str, Any]
    ) -> PendingQuery:
        """Send a query now and read its answer later (`PendingQuery.receive`): the caller
        does its own work while the server computes, with no thread to hand the answer
        over. The connection is the pending query's until then; a query sent meanwhile
        on this thread opens another."""
        path = quote(
            f"/api/v2/tenants/{tenant}/databases/{database}/collections/{collection_id}/query",
            safe="/",
        )
        payload = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        for attempt in (0, 1):
            conn = self._connection()
            reused = conn.sock is not None
            self._local.conn = None  # taken until the answer is read
            try:
                conn.request("POST", path, payload, self._headers)
            except (OSError, http.client.HTTPException) as e:
                self._discard(conn)
                if attempt == 0 and reused:
                    continue  # a kept-alive connection the server closed: a fresh one
                raise self._unreachable(e) from e
            return PendingQuery(self, conn, path, payload, reused)
        raise AssertionError("unreachable")  # pragma: no cover

    def _finish(self, pending: PendingQuery) -> dict[str, Any]:
        conn = pending.conn
        try:
            resp = conn.getresponse()
            status, data = resp.status, resp.read()
        except (OSError, http.client.HTTPException) as e:
            self._discard(conn)
            if pending.reused and not isinstance(e, TimeoutError):
                # the server had closed it while idle: the query only reads, so sending
                # it again is safe (not after a timeout: that server is not answering)
                return self._fresh(pending)
            raise self._unreachable(e) from e
        if resp.will_close:
            self._discard(conn)
        else:
            self._give_back(conn)
        if status == 200:
            answer: dict[str, Any] = orjson.loads(data)
            return answer
        if status in (401, 403):
            raise ChromaRefused(status, data.decode("utf-8", "replace"))
        raise _error(status, data)

    def _fresh(self, pending: PendingQuery) -> dict[str, Any]:
        conn = self._new_connection()
        try:
            conn.request("POST", pending.path, pending.payload, self._headers)
        except (OSError, http.client.HTTPException) as e:
            self._discard(conn)
            raise self._unreachable(e) from e
        return self._finish(PendingQuery(self, conn, pending.path, pending.payload, False))

    def _unreachable(self, e: BaseException) -> ChromaUnreachable:
        return ChromaUnreachable(f"{type(e).__name__}: {e} ({self._host}:{self._port})")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            conn.close()


class PendingQuery:
    """A query on its way: `receive()` reads the answer (once); `cancel()` gives up on it
    and closes its connection, whose unread answer would otherwise confuse the next."""

    __slots__ = ("_done", "_transport", "conn", "path", "payload", "reused")

    def __init__(
        self,
        transport: QueryTransport,
        conn: http.client.HTTPConnection,
        path: str,
        payload: bytes,
        reused: bool,
    ) -> None:
        self._transport = transport
        self.conn = conn
        self.path = path
        self.payload = payload
        self.reused = reused
        self._done = False

    def receive(self) -> dict[str, Any]:
        if self._done:
            raise RuntimeError("this query's answer was already read")
        self._done = True
        return self._transport._finish(self)

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            self._transport._discard(self.conn)


def _error(status: int, data: bytes) -> Exception:
    """The chromadb error the server named, or a plain one with its status and text."""
    from chromadb import errors

    text = data.decode("utf-8", "replace")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("error") in errors.error_types:
        return errors.error_types[body["error"]](str(body.get("message", "")))
    return Exception(f"Chroma server answered {status}: {text[:500]}")
