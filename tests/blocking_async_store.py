"""A blocking face over `AsyncRedisStore`, for tests: the sync suites' assertions run
unchanged against the asyncio store instead of being copied into `async def` twins.

Every call is a coroutine of the real async store run on one event loop that lives in a
thread of its own (redis.asyncio's connections belong to the loop that opened them), so
callers on several threads at once (the concurrency tests) become concurrent coroutines
on that loop, as in an async server. Nothing here decides anything: each method hands its
arguments to the async method of the same name and returns what it returns.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from reverie.integrations.redis.async_store import AsyncRedisStore

T = TypeVar("T")

# The RecordStore / LexicalIndex operations that are plain coroutines on the async store.
_COROUTINES = (
    "commit", "get", "get_many", "created_times", "find_by_hash", "find_by_key",
    "find_by_entity", "count", "touch", "edges", "degrees", "delete", "delete_namespace",
    "namespaces", "get_meta", "set_meta", "journal_get", "journal_put", "search",
    "put_embeddings", "embeddings", "touch_many", "recall_reads",
)


class BlockingAsyncStore:
    """`RedisStore`'s interface, every operation served by an `AsyncRedisStore`."""

    def __init__(self, url: str, *, prefix: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="async-store-loop", daemon=True
        )
        self._thread.start()
        try:
            opening = AsyncRedisStore.open(url, prefix=prefix, **options)
            self.inner: AsyncRedisStore = self.run(opening)
        except BaseException:
            self._stop()
            raise

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def scan(self, namespace: str, **options: Any) -> Iterator[Any]:
        pages = self.inner.scan(namespace, **options)
        try:
            while True:
                try:
                    yield self.run(pages.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self.run(pages.aclose())

    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> Any:
        lease = self.inner.lock(namespace, ttl_seconds)  # bad input refused here, as sync

        @contextmanager
        def held() -> Iterator[str]:
            token = self.run(lease.__aenter__())
            try:
                yield token
            except BaseException as e:
                if not self.run(lease.__aexit__(type(e), e, e.__traceback__)):
                    raise
            else:
                self.run(lease.__aexit__(None, None, None))

        return held()

    def close(self) -> None:
        if self._thread.is_alive():
            try:
                self.run(self.inner.aclose())
            finally:
                self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> BlockingAsyncStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _blocking(name: str) -> Any:
    def call(self: BlockingAsyncStore, *args: Any, **kwargs: Any) -> Any:
        return self.run(getattr(self.inner, name)(*args, **kwargs))

    call.__name__ = call.__qualname__ = name
    return call


for _name in _COROUTINES:
    setattr(BlockingAsyncStore, _name, _blocking(_name))
