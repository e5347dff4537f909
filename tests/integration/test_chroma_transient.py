"""Chroma's transient "segment not persisted yet" read error is retried, not surfaced.

Seen in the 4-process concurrency test against a real Chroma server: a read racing the
server's first persist of a collection fails with "Error creating hnsw segment reader:
Nothing found on disk" (chroma-core/chroma#4212) and succeeds moments later. The race
itself cannot be produced on demand, so the retry rule is checked on its helper.
"""

from __future__ import annotations

import pytest

from reverie.core.errors import BackendUnavailable
from reverie.integrations.chroma import collections as chroma_collections

TRANSIENT = (
    "Error executing plan: Internal error: Error creating hnsw segment reader: "
    "Nothing found on disk"
)


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chroma_collections, "_TRANSIENT_DELAYS", (0.0, 0.0, 0.0))


def test_a_transient_read_error_is_retried_until_it_clears() -> None:
    attempts: list[int] = []

    def read() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError(TRANSIENT)
        return "hits"

    assert chroma_collections.retry_transient("ns", read) == "hits"
    assert len(attempts) == 3


def test_a_persistent_transient_error_becomes_backend_unavailable() -> None:
    attempts: list[int] = []

    def read() -> str:
        attempts.append(1)
        raise RuntimeError(TRANSIENT)

    with pytest.raises(BackendUnavailable, match="still not readable"):
        chroma_collections.retry_transient("ns", read)
    assert len(attempts) == 4  # the first try and one per delay


def test_other_errors_are_not_retried() -> None:
    attempts: list[int] = []

    def read() -> str:
        attempts.append(1)
        raise ValueError("dimension mismatch")

    with pytest.raises(ValueError):
        chroma_collections.retry_transient("ns", read)
    assert len(attempts) == 1
