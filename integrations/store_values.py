"""Values both record stores (SQLite and Redis) write or check alike: records and journal
entries as JSON text, times as exact integer microseconds, a write's version against the
stored one, a lease's time to live and holder, and the window of recent accesses a touch
keeps."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.core.clock import utc
from reverie.core.errors import ConflictError, InvalidInput
from reverie.core.models import Memory

__all__ = [
    "check_ttl", "check_version", "check_window", "dumps", "from_micros", "lease_holder",
    "micros",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(ts: datetime) -> int:
    """Exact integer microseconds since the Unix epoch: floats would blur the order of close
    timestamps (a Redis score, a double, holds these exactly until the year 2255)."""
    return int((utc(ts) - _EPOCH) // _MICROSECOND)


def from_micros(n: int) -> datetime:
    """The UTC time `micros` made `n` of."""
    return _EPOCH + n * _MICROSECOND


def dumps(value: Any, what: str) -> str:
    """Compact JSON text of `value`, or `InvalidInput` naming `what` could not be stored."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInput(
            f"{what} must be JSON-serialisable (plain str/number/bool/list/dict): {e}"
        ) from None


def check_version(m: Memory, stored_version: int | None) -> None:
    """A write of `m` must follow the stored version (`None`: not stored) by one, else
    `ConflictError`: someone else wrote first, or the memory was deleted."""
    ns = m.namespace
    if stored_version is None and m.version != 1:
        raise ConflictError(
            f"memory {m.id!r} in {ns!r}: writing version {m.version} but it is not stored "
            "(was it deleted?); re-read and retry"
        )
    if stored_version is not None and m.version != stored_version + 1:
        raise ConflictError(
            f"memory {m.id!r} in {ns!r}: writing version {m.version} but version "
            f"{stored_version} is stored (expected {m.version - 1}); someone else wrote "
            "first, re-read and retry"
        )


def check_ttl(ttl_seconds: float) -> float:
    if (
        isinstance(ttl_seconds, bool)
        or not isinstance(ttl_seconds, int | float)
        or not math.isfinite(ttl_seconds)
        or ttl_seconds < 0
    ):
        raise InvalidInput(f"ttl_seconds must be a finite number >= 0, got {ttl_seconds!r}")
    return float(ttl_seconds)


def check_window(window: int) -> int:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InvalidInput(f"window must be a positive int, got {window!r}")
    return window


def lease_holder() -> str:
    """Who takes a maintenance lease, as `LockBusy` names them to the next caller."""
    return f"{socket.gethostname()} pid {os.getpid()} thread {threading.get_ident()}"
