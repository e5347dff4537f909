"""The asyncio twin of `RedisStore`, on `redis.asyncio`, for an event loop that must not
block on the record store (an async agent server, `MemoryEngine`'s async paths).

It shares everything that decides *what* is written or read with the sync store —
validation and the write plan (`redis.plan`), every read (`redis.reads`, generators each
store drives with its own I/O), the key layout (`redis.keys`), the Lua scripts (BM25,
edges, degrees, the lease) — so the two can run side by side on one Redis and agree; only
the I/O differs. Same URLs as the sync store: redis://, rediss:// (TLS), redis+cluster://.

It has every operation of `RedisStore` with the same semantics and atomicity (the contract
suite runs against both, tests/contract/test_record_store_async.py); the lifecycle is the
asyncio one: `await AsyncRedisStore.open(url)` for `from_url`, `await aclose()` (or
`async with`) for `close()`, `async with store.lock(ns)` and `async for m in store.scan(ns)`.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from datetime import datetime
from typing import Any, TypeVar, cast

import numpy as np

from reverie.core.clock import utc
from reverie.core.errors import BackendUnavailable, InvalidInput, MissingExtra, ReverieError
from reverie.core.models import Edge, Memory, Status, Tier, validate_namespace
from reverie.core.ports import LexicalHit, WriteBatch

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError, WatchError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise MissingExtra(
        "The async Redis store (reverie.integrations.redis.async_store)", "redis"
    ) from e

import reverie.integrations.redis.reads as reads
from reverie.integrations.redis.keys import (
    DEFAULT_PREFIX,
    NamespaceKeys,
    global_keys,
    validate_prefix,
)
from reverie.integrations.redis.lexical import BM25_SCRIPT
from reverie.integrations.redis.lexical_mirror import MirrorSet, mirrored_search
from reverie.integrations.redis.plan import (
    DECODED,
    CheckedBatch,
    Command,
    check_batch,
    dumps,
    load_journal_entry,
    parse_doc,
    plan_commit,
    plan_delete,
    plan_drop_namespace,
)
from reverie.integrations.redis.reads import Lua, Pipelined, Request, Steps, chunks, unique
from reverie.integrations.redis.store import (
    _ACQUIRE,
    _DEGREES,
    _EDGES,
    _RELEASE,
    LostRaces,
    _check_ttl,
    _check_window,
    _safe,
    holder_name,
    lock_busy,
    open_client,
)

__all__ = ["AsyncRedisStore"]

T = TypeVar("T")


def async_client_from_url(url: str, **options: Any) -> Any:
    """The `redis.asyncio` twin of `client_from_url` (same URLs, options and errors)."""
    return open_client(url, aioredis.Redis, aioredis.RedisCluster, options)


class AsyncRedisStore:
    """Async RecordStore operations on Redis / Redis Cluster; see `RedisStore`.

    Build with `await AsyncRedisStore.open(url)` (it pings the server, so a wrong URL
    fails at once with `BackendUnavailable`), close with `await store.aclose()`.
    """

    remote = True  # as RedisStore's

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, name: str = "redis") -> None:
        self._client = client
        self._prefix = validate_prefix(prefix)
        self._name = name
        self._namespaces_key, self._meta_key = global_keys(self._prefix)
        self._closed = False
        self._cluster = isinstance(client, aioredis.RedisCluster)
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._degrees = client.register_script(_DEGREES)
        self._edges = client.register_script(_EDGES)
        self._bm25 = client.register_script(BM25_SCRIPT)
        self._scripts = {
            "edges": self._edges, "degrees": self._degrees, "bm25": self._bm25,
            "keep": client.register_script(reads.KEEP_SCRIPT),
            "entity_top": client.register_script(reads.ENTITY_TOP_SCRIPT),
            "touch": client.register_script(reads.TOUCH_SCRIPT),
        }
        self._mirrors = MirrorSet()  # BM25 mirrors of the namespaces this store searches

    @classmethod
    async def open(
        cls, url: str, *, prefix: str = DEFAULT_PREFIX, **options: Any
    ) -> AsyncRedisStore:
        client = async_client_from_url(url, **options)
        store = cls(client, prefix=prefix, name=_safe(url))
        try:
            await store._guard(client.ping())
        except BaseException:
            await store.aclose()
            raise
        return store

    @property
    def client(self) -> Any:
        return self._client

    @property
    def prefix(self) -> str:
        return self._prefix

    def _keys(self, namespace: str) -> NamespaceKeys:
        return NamespaceKeys(self._prefix, namespace)

    async def _guard(self, aw: Awaitable[T]) -> T:
        if self._closed:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise BackendUnavailable(f"the Redis store at {self._name} is closed")
        try:
            return await aw
        except ReverieError:
            raise
        except RedisError as e:
            raise BackendUnavailable(
                f"Redis at {self._name} failed: {type(e).__name__}: {e}; nothing of the "
                "failed operation was applied — check that the server is up and retry"
            ) from None

    async def _transact(
        self, watch: Sequence[str], body: Callable[[Any], Awaitable[list[Command]]]
    ) -> None:
        races = LostRaces(self._name)
        while True:
            async with self._client.pipeline(transaction=True) as pipe:
                try:
                    if watch:
                        await pipe.watch(*watch)
                    cmds = await body(pipe)
                    if not cmds:
                        await pipe.reset()
                        return
                    pipe.multi()
                    for cmd in cmds:
                        pipe.execute_command(*cmd)
                    await pipe.execute()
                    return
                except WatchError:
                    pass
            await asyncio.sleep(races.lost())

    async def _run(self, steps: Steps[T], conn: Any = None) -> T:
        """Drive a shared read (`redis.reads`) on `conn` (the client, or a pipeline under
        WATCH), awaiting each request: the sync store's reads, request for request."""
        reply: Any = None
        while True:
            try:
                request = steps.send(reply)
            except StopIteration as done:
                return cast(T, done.value)
            reply = await self._ask(self._client if conn is None else conn, request)

    async def _ask(self, conn: Any, request: Request) -> Any:
        if isinstance(request, Lua):
            return await self._scripts[request.script](keys=request.keys, args=request.args)
        if isinstance(request, Pipelined):
            async with conn.pipeline(transaction=request.atomic) as pipe:
                for method, *args in request.calls:
                    getattr(pipe, method)(*args)
                return await pipe.execute()
        method, *args = request
        return await getattr(conn, method)(*args)

    async def _read_records(
        self, conn: Any, keys: NamespaceKeys, ids: Sequence[str]
    ) -> dict[str, Memory]:
        return await self._run(reads.records(keys, ids), conn)

    # --- writes ---------------------------------------------------------------------------

    async def commit(self, batch: WriteBatch) -> None:
        checked = check_batch(batch, self._prefix)
        if not checked.ids and not checked.edges and not checked.removals:
            return
        register: list[Command] = []
        if checked.ids:
            if self._cluster:  # another slot: before the write (see RedisStore.commit)
                await self._guard(self._client.sadd(self._namespaces_key, checked.namespace))
            else:
                register.append(("SADD", self._namespaces_key, checked.namespace))

        async def body(pipe: Any) -> list[Command]:
            return await self._plan(checked) + register

        await self._guard(self._transact(checked.watch_keys(), body))

    async def _plan(self, batch: CheckedBatch) -> list[Command]:
        """See `RedisStore._plan`: the same reads, one pipelined round trip."""
        stored, first_seq = await self._run(reads.write_state(batch))
        return plan_commit(batch, stored, first_seq)

    async def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        await self.touch_many(namespace, [(ids, at)], window)

    async def touch_many(
        self,
        namespace: str,
        events: Sequence[tuple[Sequence[str], datetime]],
        window: int,
    ) -> None:
        """See `RedisStore.touch_many`."""
        keys = self._keys(namespace)
        _check_window(window)
        steps = [(unique(ids), utc(at)) for ids, at in events]
        wanted = unique(i for ids, _ in steps for i in ids)
        for chunk in chunks(wanted):
            races = LostRaces(self._name, "a touch")
            while True:
                done, written = await self._guard(
                    self._run(reads.touch_chunk(keys, chunk, steps, window))
                )
                if done:
                    break
                await asyncio.sleep(races.lost())  # another writer changed one: read again
            for raw, m in written:  # committed: the next recall reads these back
                DECODED.remember(raw, m)

    async def delete(self, namespace: str, ids: Iterable[str]) -> int:
        keys = self._keys(namespace)
        wanted = unique(ids)
        deleted = 0
        for chunk in chunks(wanted):
            found = [0]

            async def body(
                pipe: Any, chunk: Sequence[str] = chunk, found: list[int] = found
            ) -> list[Command]:
                records = await self._read_records(pipe, keys, chunk)
                docs: dict[str, tuple[int, list[str]]] = {}
                if records:
                    present = list(records)
                    for memory_id, raw in zip(present, await pipe.hmget(keys.doc, present),
                                              strict=True):
                        doc = parse_doc(raw)
                        if doc is not None:
                            docs[memory_id] = doc
                adjacency = {i: set(await pipe.smembers(keys.adjacency(i))) for i in chunk}
                found[0] = len(records)
                return plan_delete(keys, records, docs, adjacency, chunk)

            watch = [keys.record(i) for i in chunk] + [keys.adjacency(i) for i in chunk]
            await self._guard(self._transact(watch, body))
            deleted += found[0]
            self._mirrors.forget(keys.namespace, chunk)
        return deleted

    async def delete_namespace(self, namespace: str) -> int:
        """Everything of a tenant, journal included; a held lock is left to expire (see
        `RedisStore.delete_namespace`: the same plan, the same WATCH)."""
        keys = self._keys(namespace)
        ns = validate_namespace(namespace)
        count = [0]

        async def body(pipe: Any) -> list[Command]:
            ids = await pipe.zrange(keys.all, 0, -1)
            count[0] = len(ids)
            cmds = plan_drop_namespace(keys, ids, list(await pipe.smembers(keys.registry)))
            if not self._cluster:
                cmds.append(("SREM", self._namespaces_key, ns))
            return cmds

        await self._guard(self._transact([keys.all, keys.registry], body))
        self._mirrors.drop(ns)
        if self._cluster:  # the name set is on another slot: unlist, then re-list if a
            # writer re-created the namespace meanwhile
            await self._guard(self._client.srem(self._namespaces_key, ns))
            if await self._guard(self._client.zcard(keys.all)):
                await self._guard(self._client.sadd(self._namespaces_key, ns))
        return count[0]

    # --- reads ----------------------------------------------------------------------------

    async def get(self, namespace: str, memory_id: str) -> Memory | None:
        return await self._guard(self._run(reads.get(self._keys(namespace), memory_id)))

    async def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        return await self._guard(self._run(reads.get_many(self._keys(namespace), ids)))

    async def recall_reads(
        self,
        namespace: str,
        ids: Iterable[str],
        *,
        embeddings: bool = False,
        degrees: bool = False,
    ) -> reads.RecallReads:
        """See `RedisStore.recall_reads`."""
        return await self._guard(self._run(reads.recall_reads(
            self._keys(namespace), ids, embeddings=embeddings, degrees=degrees
        )))

    async def put_embeddings(self, namespace: str, items: Mapping[str, Any]) -> int:
        """See `RedisStore.put_embeddings`."""
        return await self._guard(self._run(reads.put_embeddings(self._keys(namespace), items)))

    async def embeddings(self, namespace: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """See `RedisStore.embeddings`."""
        return await self._guard(self._run(reads.embeddings(self._keys(namespace), ids)))

    async def created_times(self, namespace: str, ids: Iterable[str]) -> dict[str, datetime]:
        """When each memory was created, reading only `created_at` (one MGET per chunk);
        see `RedisStore.created_times`."""
        return await self._guard(self._run(reads.created_times(self._keys(namespace), ids)))

    async def find_by_hash(self, namespace: str, content_hash_: str) -> Memory | None:
        keys = self._keys(namespace)
        return await self._guard(self._run(reads.find_by_hash(keys, content_hash_)))

    async def find_by_key(self, namespace: str, key: str) -> list[Memory]:
        return await self._guard(self._run(reads.find_by_key(self._keys(namespace), key)))

    async def find_by_entity(self, namespace: str, entity: str, limit: int) -> list[Memory]:
        keys = self._keys(namespace)
        return await self._guard(self._run(reads.find_by_entity(keys, entity, limit)))

    async def scan(
        self,
        namespace: str,
        *,
        statuses: Iterable[Status] | None = None,
        tiers: Iterable[Tier] | None = None,
        batch_size: int = 500,
    ) -> AsyncIterator[Memory]:
        pages = reads.scan(self._keys(namespace), statuses, tiers, batch_size)
        after = None if pages is None else 0.0
        while pages is not None and after is not None:
            found, after = await self._guard(self._run(pages.page(after)))
            for m in found:
                yield m

    async def count(self, namespace: str) -> dict[str, int]:
        return await self._guard(self._run(reads.count(self._keys(namespace))))

    async def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        return await self._guard(self._run(reads.edges(self._keys(namespace), ids)))

    async def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]:
        return await self._guard(self._run(reads.degrees(self._keys(namespace), ids)))

    async def namespaces(self) -> list[str]:
        return await self._guard(self._run(reads.namespaces(self._prefix, self._namespaces_key)))

    async def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]:
        """See `RedisStore.search`: this store's own mirrors, the Lua script before a log."""
        keys = self._keys(namespace)
        hits = await self._guard(
            self._run(mirrored_search(self._mirrors, keys, keys.namespace, query, k))
        )
        if hits is None:
            hits = await self._guard(self._run(reads.search(keys, query, k)))
        return hits

    # --- meta, journal, lock --------------------------------------------------------------

    async def get_meta(self, name: str) -> str | None:
        value = await self._guard(self._client.hget(self._meta_key, name))
        return None if value is None else str(value)

    async def set_meta(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidInput("meta names and values must be text")
        await self._guard(self._client.hset(self._meta_key, name, value))

    async def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None:
        keys = self._keys(namespace)
        raw = await self._guard(self._client.hget(keys.journal, fingerprint))
        return None if raw is None else load_journal_entry(raw, keys.journal)

    async def journal_put(
        self, namespace: str, fingerprint: str, entry: Mapping[str, Any]
    ) -> None:
        keys = self._keys(namespace)
        payload = dumps(dict(entry), "a journal entry")
        await self._guard(self._client.hset(keys.journal, fingerprint, payload))

    def lock(
        self, namespace: str, ttl_seconds: float = 60.0
    ) -> AbstractAsyncContextManager[str]:
        """The same lease as `RedisStore.lock` (a sync and an async holder exclude each
        other); raises `LockBusy` when someone else holds it. A bad namespace or ttl is
        refused here, before `async with`, as the sync store refuses it."""
        keys = self._keys(namespace)
        return self._lease(namespace, keys.lock, _check_ttl(ttl_seconds))

    @asynccontextmanager
    async def _lease(self, ns: str, key: str, ttl: float) -> AsyncIterator[str]:
        token = secrets.token_hex(16)
        ok, current, now = await self._guard(self._acquire(
            keys=[key], args=[token, str(int(ttl * 1000)), holder_name()]))
        if not int(ok):
            raise lock_busy(ns, str(current), int(now))
        try:
            yield token
        finally:
            if not self._closed:
                await self._guard(self._release(keys=[key], args=[token]))

    # --- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        self._mirrors.clear()
        if not self._closed:
            self._closed = True
            with suppress(RedisError):
                await self._client.aclose()

    async def __aenter__(self) -> AsyncRedisStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncRedisStore({self._name!r}, prefix={self._prefix!r})"
