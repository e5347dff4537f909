"""Values both record stores (SQLite and Redis) write or check alike: records and journal
entries as JSON text, times as exact integer microseconds, a write's version against the
stored one, a lease's time to live and holder, and the window of recent accesses a touch
keeps."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reverie.core.clock import utc
from reverie.core.errors import ConflictError, InvalidInput
from reverie.core.models import Memory

__all__ = [
    "Heartbeat", "check_ttl", "check_version", "check_window", "dumps", "from_micros",
    "holder_dead", "lease_holder", "micros",
]

log = logging.getLogger("reverie")

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
    """Who takes a maintenance lease, as `LockBusy` names them to the next caller: the host,
    the process id, the process's start token (its start time since boot, so a recycled
    pid is not mistaken for the holder) and the thread. `holder_dead` reads it back."""
    pid = os.getpid()
    return (
        f"{socket.gethostname()} pid {pid} start {_start_token(pid) or '-'} "
        f"thread {threading.get_ident()}"
    )


_HOLDER = re.compile(r"^(?P<host>.+) pid (?P<pid>\d+) start (?P<start>\S+) thread \d+$")


def _start_token(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux /proc), with the boot's
    id; None where the process does not exist or /proc is not there."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
    return f"{boot}.{fields[19]}" if len(fields) > 19 else None


def holder_dead(holder: str) -> bool:
    """True when the lease's holder is a process of this host that no longer runs (or
    whose pid now belongs to another process): its lease can be taken over at once. A
    holder on another host, or one this cannot tell, is alive until its lease lapses."""
    m = _HOLDER.match(holder)
    if m is None or m["host"] != socket.gethostname():
        return False
    pid = int(m["pid"])
    if pid == os.getpid():
        return m["start"] != (_start_token(pid) or "-")
    if m["start"] != "-":
        return _start_token(pid) != m["start"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, another user's
        return False
    return False


class Heartbeat:
    """Renews a held lease every `interval` seconds from a daemon thread, so a lease can be
    short (a holder that dies stops renewing and loses it soon) while the work under it
    runs as long as it needs. `renew()` returns False once the lease is no longer ours;
    the beat then stops."""

    def __init__(self, renew: Callable[[], bool], interval: float, what: str) -> None:
        self._renew = renew
        self._interval = interval
        self._what = what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reverie-lease", daemon=True)
        if interval > 0:
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._renew():
                    log.warning("lost the maintenance lease of %s to another holder", self._what)
                    return
            except Exception as e:  # a store outage: the next beat retries
                log.warning("renewing the maintenance lease of %s failed (%s)", self._what, e)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
