"""How the Redis store reaches Redis: URLs (plain, TLS, Cluster), clients with timeouts,
and the retry budget of an optimistic write that keeps losing races."""

from __future__ import annotations

import random
import time
from typing import Any

from reverie.core.errors import (
    AuthFailed,
    BackendUnavailable,
    DeadlineExceeded,
    InvalidInput,
    MissingExtra,
    PermissionDenied,
    WrongServerKind,
)
from reverie.core.policy import DEFAULT_POLICY
from reverie.integrations.urls import redact

try:
    import redis
    from redis.exceptions import (
        AuthenticationError,
        NoPermissionError,
        RedisClusterException,
        RedisError,
    )
    from redis.exceptions import TimeoutError as RedisTimeout
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("The Redis store (reverie.integrations.redis)", "redis") from e

__all__ = [
    "LostRaces", "client_from_url", "is_redis_url", "safe_url", "socket_timeout", "translate",
]

# A stopped or unreachable server fails a command with `BackendUnavailable` after these
# (`Policy.deadlines`; `open_engine` passes the engine's own policy's numbers).
_CONNECT_TIMEOUT_S = DEFAULT_POLICY.deadlines.connect_seconds
_SOCKET_TIMEOUT_S = DEFAULT_POLICY.deadlines.store_call_seconds
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
    where = safe_url(url)
    try:
        if url.startswith(("redis+cluster://", "rediss+cluster://")):
            return redis.RedisCluster.from_url(url.replace("+cluster://", "://", 1), **kwargs)
        if not is_redis_url(url):
            raise InvalidInput(
                f"not a Redis URL: {where!r}; use redis://host:port/db, rediss:// (TLS) or "
                "redis+cluster://host:port"
            )
        return redis.Redis.from_url(url, **kwargs)
    except RedisClusterException as e:
        raise _cluster_failure(e, where) from None
    except RedisError as e:
        raise translate(e, f"Redis at {where}", "connecting") from None
    except ValueError as e:
        raise InvalidInput(f"invalid Redis URL {where}: {redact(str(e))}") from None


def _cluster_failure(e: RedisClusterException, where: str) -> Exception:
    """RedisCluster's own exception, typed: a plain server behind a cluster URL, refused
    credentials, or nothing answering."""
    text = redact(str(e))
    if "cluster mode is not enabled" in text.lower() or "cluster_enabled" in text.lower():
        plain = where.replace("+cluster://", "://", 1)
        return WrongServerKind(
            f"{where} is a plain Redis server, not a Redis Cluster (cluster mode is not "
            f"enabled on it); open it as {plain} instead"
        )
    cause = e.__cause__ or e.__context__
    if isinstance(cause, RedisError):
        return translate(cause, f"the Redis Cluster at {where}", "connecting")
    if "auth" in text.lower() or "wrongpass" in text.lower() or "noauth" in text.lower():
        return translate(AuthenticationError(text), f"the Redis Cluster at {where}", "connecting")
    return BackendUnavailable(
        f"cannot connect to the Redis Cluster at {where}: {text}; check the URL and that "
        "the cluster's nodes are up"
    )


def translate(e: BaseException, where: str, doing: str) -> BackendUnavailable:
    """A redis-py failure as a typed reverie error that says what to fix: refused
    credentials (`AuthFailed`), an ACL user lacking a command (`PermissionDenied`), else
    an outage (`BackendUnavailable`). `where` is already redacted; so is redis' text."""
    text = redact(str(e))
    if isinstance(e, AuthenticationError):
        return AuthFailed(
            f"{where} refused the credentials while {doing} ({text}); put the right password "
            "in the URL (redis://:PASSWORD@host:port/db, or redis://USER:PASSWORD@host:port/db "
            "for an ACL user). Nothing was applied."
        )
    if isinstance(e, NoPermissionError):
        return PermissionDenied(
            f"{where}: the Redis user may not do what reverie needs while {doing} ({text}); "
            "grant it reverie's commands and keys (e.g. ACL SETUSER <user> +@all "
            "~rv:* with the default key prefix rv) or connect as another user. Nothing was "
            "applied."
        )
    if isinstance(e, RedisTimeout | TimeoutError):
        return DeadlineExceeded(
            f"{where} did not answer while {doing} within the socket timeout "
            f"(Policy.deadlines): {type(e).__name__}: {text}; the server is stopped, "
            "overloaded or unreachable. A write already sent is applied whole or not at "
            "all if the server resumes; read before retrying it"
        )
    return BackendUnavailable(
        f"{where} failed while {doing}: {type(e).__name__}: {text}; nothing of the failed "
        "operation was applied — check that the server is up and retry"
    )


def socket_timeout(client: Any) -> float | None:
    """The client's socket (read) timeout in seconds, None when it has none: a blocking
    command (BLPOP) must block for less, or it reads as an outage."""
    manager = getattr(client, "nodes_manager", None)
    kwargs = getattr(manager, "connection_kwargs", None)
    if kwargs is None:
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    value = kwargs.get("socket_timeout")
    return float(value) if value is not None else None


def safe_url(url: str) -> str:
    """The URL without its password or token, for messages, repr and logs."""
    return redact(url)
