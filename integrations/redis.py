"""`reverie.integrations.redis`: the shared tier's record store on Redis / Redis Cluster.

The implementation lives in `redis_store` (sync), `redis_async` (asyncio), `redis_keys`
(the key layout), `redis_plan` (what a write does) and `redis_lexical` (BM25); this module
is the short import path.
"""

from __future__ import annotations

from .redis_async import AsyncRedisStore
from .redis_store import RedisStore, client_from_url, is_redis_url

__all__ = ["AsyncRedisStore", "RedisStore", "client_from_url", "is_redis_url"]
