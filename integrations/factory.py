"""Open a `MemoryEngine` on real backends from plain settings (paths and URLs).

This is where the embedded default lives: with no arguments, one SQLite file and an
embedded Chroma directory under a per-user data directory, and the offline local
embedding model. `REVERIE_HOME` moves that directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from reverie.core.clock import SystemClock
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput
from reverie.core.policy import DEFAULT_POLICY, DeadlinePolicy, Policy
from reverie.core.ports import Clock, Embedder, LexicalIndex, RecordStore, VectorIndex
from reverie.integrations.urls import redact

if TYPE_CHECKING:
    from reverie.integrations.redis.outbox import OutboxSettings

ENV_HOME = "REVERIE_HOME"
ENV_STORE = "REVERIE_STORE"
ENV_VECTORS = "REVERIE_VECTORS"
ENV_CHROMA_TOKEN = "REVERIE_CHROMA_TOKEN"


def default_data_dir() -> Path:
    """$REVERIE_HOME, else the platform's per-user data directory (~/.local/share/reverie)."""
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("reverie", appauthor=False))


def open_store(
    spec: str | os.PathLike[str] | None,
    home: Path,
    deadlines: DeadlinePolicy = DEFAULT_POLICY.deadlines,
) -> RecordStore:
    """A record store from a path or URL: a file path or sqlite:///path is SQLite;
    redis://[:password@]host:port/db (rediss:// for TLS) is Redis, and
    redis+cluster://host:port (rediss+cluster:// for TLS) a Redis Cluster. Every call
    into it gives up after `deadlines.store_call_seconds` (SQLite's busy timeout, Redis'
    socket timeout)."""
    from reverie.integrations.sqlite.store import SQLiteStore

    busy = deadlines.store_call_seconds
    if spec is None:
        return SQLiteStore(home / "memory.db", busy_seconds=busy)
    text = os.fspath(spec)
    if text.startswith("sqlite:///"):
        return SQLiteStore(text.removeprefix("sqlite:///") or home / "memory.db", busy_seconds=busy)
    if text.startswith(("redis://", "rediss://", "unix://", "redis+cluster://",
                        "rediss+cluster://")):
        from reverie.integrations.redis.store import RedisStore

        return RedisStore.from_url(
            text, socket_timeout=busy, socket_connect_timeout=deadlines.connect_seconds
        )
    if "://" in text:
        raise InvalidInput(
            f"unsupported store URL {redact(text)!r}: use a file path, sqlite:///path, "
            "redis://host:port/db, rediss://... (TLS) or redis+cluster://host:port"
        )
    return SQLiteStore(Path(text).expanduser(), busy_seconds=busy)


def open_vectors(
    spec: str | os.PathLike[str] | None,
    home: Path,
    token: str | None = None,
    deadlines: DeadlinePolicy = DEFAULT_POLICY.deadlines,
) -> VectorIndex:
    """A vector index: http(s)://host:port is a Chroma server, anything else a directory
    for embedded Chroma. A server behind a token gets `token`, else the URL's password
    (http://:TOKEN@host:port), else $REVERIE_CHROMA_TOKEN. Every call into it gives up
    after `deadlines.index_call_seconds`."""
    from reverie.integrations.chroma.index import ChromaIndex

    call = deadlines.index_call_seconds
    if spec is None:
        return ChromaIndex.embedded(home / "vectors", call_seconds=call)
    text = os.fspath(spec)
    if text.startswith(("http://", "https://")):
        if token is None and "@" not in text.split("://", 1)[1].split("/", 1)[0]:
            token = os.environ.get(ENV_CHROMA_TOKEN) or None
        return ChromaIndex.server(
            text, token=token, call_seconds=call, connect_seconds=deadlines.connect_seconds
        )
    if "://" in text:
        raise InvalidInput(
            f"unsupported vector index URL {redact(text, (token,))!r}: use a directory for "
            "embedded Chroma, or http(s)://host:port for a Chroma server"
        )
    return ChromaIndex.embedded(Path(text).expanduser(), call_seconds=call)


def open_engine(
    home: str | os.PathLike[str] | None = None,
    *,
    store: RecordStore | str | os.PathLike[str] | None = None,
    vectors: VectorIndex | str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    policy: Policy | None = None,
    clock: Clock | None = None,
    namespace: str = "default",
    check_embedder: bool = True,
    outbox: OutboxSettings | None = None,
    vectors_token: str | None = None,
) -> MemoryEngine:
    """The engine on real backends. Every argument is optional: `open_engine()` is the
    embedded default. `store` and `vectors` also come from $REVERIE_STORE and
    $REVERIE_VECTORS. `check_embedder=False` opens a store built with another embedding
    model, only so that `repair(reembed=True)` can re-embed it. `outbox` tunes (or, with
    `enabled=False`, turns off) the vector outbox a Redis store and a Chroma server share
    (`shared_outbox`). `vectors_token` is the token of a Chroma server behind one (also
    from the URL, http://:TOKEN@host:port, or $REVERIE_CHROMA_TOKEN); it is never shown.
    With no `policy`, the default one, with the numbers the local embedding model wants
    (`LocalEmbedder.policy_changes`) when that is the embedder; a given policy is used as
    it is."""
    base = Path(home).expanduser() if home is not None else default_data_dir()
    store = store if store is not None else os.environ.get(ENV_STORE)
    vectors = vectors if vectors is not None else os.environ.get(ENV_VECTORS)
    deadlines = (
        DEFAULT_POLICY.deadlines if policy is None
        else getattr(policy, "deadlines", DEFAULT_POLICY.deadlines)  # engine checks policy
    )
    rs = store if _is_store(store) else open_store(store, base, deadlines)  # type: ignore[arg-type]
    if not isinstance(rs, LexicalIndex):
        raise InvalidInput(f"{type(rs).__name__} has no lexical index (BM25) to recall with")
    try:
        vi = (
            vectors if _is_vectors(vectors)
            else open_vectors(vectors, base, vectors_token, deadlines)  # type: ignore[arg-type]
        )
        vi = shared_outbox(rs, vi, outbox)
        from reverie.integrations.embedders import LocalEmbedder

        if embedder is None:
            embedder = LocalEmbedder()
        if policy is None:
            policy = DEFAULT_POLICY
            if isinstance(embedder, LocalEmbedder):
                policy = policy.replace(**embedder.policy_changes)
        from reverie.integrations.tokens import LazyCounter

        return MemoryEngine(
            rs,
            rs,
            vi,
            embedder,
            policy=policy,
            clock=clock or SystemClock(),
            default_namespace=namespace,
            token_counter=LazyCounter(),
            check_embedder=check_embedder,
        )
    except BaseException:
        rs.close()
        raise


def shared_outbox(
    store: RecordStore, vectors: VectorIndex, outbox: OutboxSettings | None = None
) -> VectorIndex:
    """A vector server shared through a Redis store gets the vector outbox
    (`redis.outbox`): every worker's writes to a namespace go to the server as one stream
    of large upserts. Not for an in-process index (each process has its own), not for
    another store, and not when `outbox.enabled` is False."""
    if outbox is not None and not outbox.enabled:
        return vectors
    if not getattr(vectors, "remote", False):
        return vectors
    if not getattr(store, "remote", False):
        return vectors
    from reverie.integrations.redis.outbox import OutboxIndex
    from reverie.integrations.redis.store import RedisStore

    if not isinstance(store, RedisStore) or isinstance(vectors, OutboxIndex):
        return vectors
    return OutboxIndex(vectors, store.client, prefix=store.prefix, outbox=outbox)


def _is_store(x: object) -> bool:
    return x is not None and not isinstance(x, str | os.PathLike) and isinstance(x, RecordStore)


def _is_vectors(x: object) -> bool:
    return x is not None and not isinstance(x, str | os.PathLike) and isinstance(x, VectorIndex)
