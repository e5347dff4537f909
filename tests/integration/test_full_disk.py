"""A full disk: writes fail with `StorageFull`, nothing hangs, and the store stays
readable. The embedded default (SQLite and embedded Chroma) on a real 5 MB tmpfs
filesystem (mounted here; tests run as root), written until it is full; recall must
then return. After a write fails on a full disk, embedded Chroma can keep its own
SQLite lock and block every later call for its 1000 s busy timeout; reverie bounds each
call into it (`Policy.deadlines.index_call_seconds`), so recall answers from the lexical
index and the index's other calls fail with `StorageFull` rather than hang."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reverie.core.errors import ReverieError, StorageFull
from reverie.core.policy import Policy
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from tests.servers import outcome_within, small_tmpfs

pytestmark = pytest.mark.slow

POLICY = Policy(index_call_seconds=10.0, store_call_seconds=10.0)
# A public call makes a few backend calls in a row (recall first waits for the vectors
# queued by this engine's writes, then queries), each bounded by its deadline; a call
# still running after three deadlines and a margin for a loaded machine is hung.
DEADLINE_S = 3 * POLICY.deadlines.index_call_seconds + 30.0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk") as mount:
        yield mount


def returns(call: Any) -> Any:
    """`call()`'s result, or the error it raised; fails if it is still running after
    `DEADLINE_S` (a hang)."""
    value, error = outcome_within(call, DEADLINE_S)
    if error is not None:
        raise error
    return value


def test_a_full_disk_is_storage_full_and_recall_still_answers(small_disk: Path) -> None:
    engine = open_engine(
        small_disk / "home", embedder=LocalEmbedder(), namespace="d", policy=POLICY
    )
    stored: list[str] = []
    try:
        error: ReverieError | None = None
        for i in range(400):  # 5 MB fills long before
            text = f"note {i} " + " ".join(f"w{i}x{j}" for j in range(700))
            try:
                stored.append(returns(lambda t=text: engine.observe(t)).id)
            except ReverieError as e:
                error = e
                break
        assert isinstance(error, StorageFull), f"writes did not fail as StorageFull: {error!r}"
        assert len(stored) > 0
        hits = returns(lambda: engine.recall("note 3 w3x5", k=3, reinforce=False)).hits
        assert hits, "recall on a full disk found nothing"
        assert hits[0].memory.text.startswith("note 3 ")  # its words, found lexically
        got = {m.id for m in returns(lambda: list(engine.memories()))}
        assert set(stored) <= got  # every acknowledged write is readable
        try:
            stats = returns(lambda: engine.stats())
        except StorageFull:
            pass  # embedded Chroma kept its lock: the count is refused, not waited for
        else:
            assert stats["vector_repair_needed"] is (stats["total"] > stats["vectors"])
    finally:
        returns(engine.close)
