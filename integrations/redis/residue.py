"""Erasure that reaches Redis's files: rewrite the AOF (and retake an RDB snapshot) after
a forget, so no deleted value stays in the server's persistence.

Redis appends every write to its append-only file; a deleted record's text stays in the
AOF (in the `HSET` that wrote it) until the file is rewritten from the live dataset
(`BGREWRITEAOF`), and in an RDB snapshot until the next one is taken (`BGSAVE`). Neither
happens on reverie's schedule, so `purge` asks for them and waits until they finished:
a rewrite already running when it is called started from a dataset that may still hold
the deleted values, so it waits that one out and starts its own. On a cluster, every
primary is rewritten. A user without the rights (an ACL without `bgrewriteaof`,
`bgsave` or `info`) gets a typed `PermissionDenied`; a rewrite Redis reports as failed,
or one that does not finish within `timeout`, a `BackendUnavailable`.
"""

from __future__ import annotations

import time
from typing import Any

from reverie.core.errors import BackendUnavailable, PermissionDenied

__all__ = ["primaries", "purge"]

_POLL_SECONDS = 0.05


def primaries(client: Any) -> list[Any]:
    """One plain client per primary (a cluster's primaries, or the client itself)."""
    get_primaries = getattr(client, "get_primaries", None)
    if get_primaries is None:
        return [client]
    return [client.get_redis_connection(node) for node in get_primaries()]


def _persistence(node: Any) -> dict[str, Any]:
    return dict(node.info("persistence"))


def _wait(node: Any, busy: tuple[str, ...], what: str, deadline: float) -> dict[str, Any]:
    while True:
        info = _persistence(node)
        if not any(int(info.get(flag, 0)) for flag in busy):
            return info
        if time.monotonic() >= deadline:
            raise BackendUnavailable(
                f"Redis did not finish {what} in time; the deleted values may still be in its "
                "files: run `reverie purge` (engine.purge_residue()) again"
            )
        time.sleep(_POLL_SECONDS)


_AOF_BUSY = ("aof_rewrite_in_progress", "aof_rewrite_scheduled")
_RDB_BUSY = ("rdb_bgsave_in_progress",)


def _rewrite_aof(node: Any, deadline: float) -> bool:
    info = _wait(node, _AOF_BUSY, "a running AOF rewrite", deadline)
    if not int(info.get("aof_enabled", 0)):
        return False
    before = int(info.get("aof_rewrites", 0)) if "aof_rewrites" in info else None
    node.bgrewriteaof()
    info = _wait(node, _AOF_BUSY, "the AOF rewrite", deadline)
    if before is not None and int(info.get("aof_rewrites", 0)) <= before:
        raise BackendUnavailable("Redis did not run the AOF rewrite it was asked for")
    if str(info.get("aof_last_bgrewrite_status", "ok")) != "ok":
        raise BackendUnavailable(
            "Redis reported the AOF rewrite as failed (aof_last_bgrewrite_status "
            f"{info.get('aof_last_bgrewrite_status')!r}); check its log and disk space"
        )
    return True


def _snapshot(node: Any, deadline: float) -> bool:
    """Retake the RDB snapshot when the server keeps one (`save` configured, or a
    snapshot taken since it started): an older snapshot holds the deleted values."""
    info = _persistence(node)
    try:
        save = str(node.config_get("save").get("save", "")).strip()
    except Exception:  # CONFIG may be refused to this user: judge by the saves alone
        save = ""
    if not save and int(info.get("rdb_saves", 0)) == 0:
        return False
    _wait(node, _RDB_BUSY, "a running RDB snapshot", deadline)
    node.bgsave()
    info = _wait(node, _RDB_BUSY, "the RDB snapshot", deadline)
    if str(info.get("rdb_last_bgsave_status", "ok")) != "ok":
        raise BackendUnavailable("Redis reported the RDB snapshot as failed; check its log")
    return True


def purge(client: Any, *, timeout: float, where: str) -> dict[str, Any]:
    """Rewrite every primary's AOF (when AOF is on) and retake its RDB snapshot (when it
    keeps one); returns how many of each were done."""
    from redis.exceptions import NoPermissionError, ResponseError

    deadline = time.monotonic() + timeout
    done = {"store": "redis", "aof_rewritten": 0, "rdb_saved": 0, "primaries": 0}
    try:
        for node in primaries(client):
            done["primaries"] += 1
            done["aof_rewritten"] += int(_rewrite_aof(node, deadline))
            done["rdb_saved"] += int(_snapshot(node, deadline))
    except NoPermissionError as e:
        raise PermissionDenied(
            f"the Redis user at {where} may not rewrite the server's files ({e}): deleted "
            "records are gone from Redis, but its AOF keeps them until a rewrite; grant the "
            "user `+bgrewriteaof +bgsave +info`, or run BGREWRITEAOF as an administrator"
        ) from None
    except ResponseError as e:
        if "NOPERM" in str(e) or "no permissions" in str(e).lower():
            raise PermissionDenied(
                f"the Redis user at {where} may not rewrite the server's files ({e})"
            ) from None
        raise
    return done
