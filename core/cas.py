"""Compare-and-set writes: re-run an attempt that lost a race to a concurrent writer.

Every store write of a memory is a compare-and-set on its version (`WriteBatch`), so a
concurrent writer (another process, the background reinforcement) can make an attempt
fail with `ConflictError`. An attempt re-reads what it changes, so running it again is
always safe; after `CAS_RETRIES` losses in a row the caller is told to retry later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .errors import ConflictError

R = TypeVar("R")

CAS_RETRIES = 50


def retry_conflicts(attempt: Callable[[], R]) -> R:
    """`attempt()`, re-run after each concurrent-write conflict, up to `CAS_RETRIES` times."""
    for _ in range(CAS_RETRIES):
        try:
            return attempt()
        except ConflictError:
            continue
    raise ConflictError(f"gave up after {CAS_RETRIES} concurrent-write conflicts; retry")
