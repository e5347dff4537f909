"""How the Redis store reaches Redis: URLs (plain, TLS, Cluster), clients with timeouts,
and the retry budget of an optimistic write that keeps losing races."""

from __future__ import annotations

import random
import time
from typing import Any

from reverie.core.errors import BackendUnavailable, InvalidInput, MissingExtra

try:
    import redis
    from redis.exceptions import RedisError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("The Redis store (reverie.integrations.redis)", "redis") from e

__all__ = ["LostRaces", "client_from_url", "is_redis_url", "safe_url"]

_CONNECT_TIMEOUT_S = 5.0
_SOCKET_TIMEOUT_S = 30.0
# Optimistic writes retry while others win the race; each round has a winner, so this only
# runs out under pathological contention, which is then reported rather than spun on.
_WRITE_DEADLINE_S = 30.0
_BACKOFF_MAX_S = 0.02


class LostRaces:
    """The retry budget of one optimistic write: each lost
    race gives a short random backoff, growing to `_BACKOFF_MAX_S`, until the write has
    lost for `_WRITE_DEADLINE_S`; then `BackendUnavailable` says the namespace is too
    contended."""

    def __init__(self, store: str, what: str = "a write") -> None:
        self._store, self._what = store, what
        self._deadline = time.monotonic() + _WRITE_DEADLINE_S
        self._attempt = 0

    def lost(self) -> float:
        """Seconds to wait before trying again, or `BackendUnavailable` past the budget."""
        self._attempt += 1
        if time.monotonic() > self._deadline:
            raise BackendUnavailable(
                f"Redis at {self._store}: {self._what} lost {self._attempt} races in a row "
                f"over {_WRITE_DEADLINE_S:.0f} s; the namespace is too contended, retry later"
            )
        return random.uniform(0, min(_BACKOFF_MAX_S, 0.001 * self._attempt))


_URL_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")


def is_redis_url(text: str) -> bool:
    return text.startswith(_URL_SCHEMES)


def client_from_url(url: str, **options: Any) -> Any:
    """A redis-py client (RedisCluster for `redis+cluster://`), strings decoded."""
    kwargs: dict[str, Any] = {
        "decode_responses": True,
        "socket_connect_timeout": _CONNECT_TIMEOUT_S,
        "socket_timeout": _SOCKET_TIMEOUT_S,
        **options,
    }
    try:
        if url.startswith(("redis+cluster://", "rediss+cluster://")):
            return redis.RedisCluster.from_url(url.replace("+cluster://", "://", 1), **kwargs)
        if not is_redis_url(url):
            raise InvalidInput(
                f"not a Redis URL: {url!r}; use redis://host:port/db, rediss:// (TLS) or "
                "redis+cluster://host:port"
            )
        return redis.Redis.from_url(url, **kwargs)
    except RedisError as e:
        raise BackendUnavailable(f"cannot connect to Redis at {safe_url(url)}: {e}") from None
    except ValueError as e:
        raise InvalidInput(f"invalid Redis URL {safe_url(url)}: {e}") from None


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
