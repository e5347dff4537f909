"""`reverie.integrations.redis`: the shared tier's record store on Redis / Redis Cluster.

The implementation lives in `redis.store` (sync), `redis.async_store` (asyncio), `redis.keys`
(the key layout), `redis.plan` (what a write does) and `redis.lexical` (BM25); this module
is the short import path.
"""

from __future__ import annotations

from reverie.integrations.redis.async_store import AsyncRedisStore
from reverie.integrations.redis.store import RedisStore, client_from_url, is_redis_url

__all__ = ["AsyncRedisStore", "RedisStore", "client_from_url", "is_redis_url"]
