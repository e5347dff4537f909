"""`reverie.integrations.redis`: the shared tier's record store on Redis / Redis Cluster.

The implementation lives in `redis.store` (the store), `redis.connection` (URLs, clients),
`redis.keys` (the key layout), `redis.plan` (what a write does), `redis.reads` (what a read
asks), `redis.lexical` (BM25) and `redis.outbox` (the vector outbox and its
`OutboxSettings`); this module is the short import path.
"""

from __future__ import annotations

from reverie.integrations.redis.connection import client_from_url, is_redis_url
from reverie.integrations.redis.outbox import OutboxIndex, OutboxSettings
from reverie.integrations.redis.store import RedisStore

__all__ = [
    "OutboxIndex", "OutboxSettings", "RedisStore", "client_from_url", "is_redis_url",
]
