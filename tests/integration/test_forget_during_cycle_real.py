"""Forgetting a memory while a REM cycle is half done, on a real SQLite file and a real
redis-server (embedded Chroma beside each).

The cycle journals its plan, with each planned synthesis's text, before it commits
anything, so that a cycle killed half way rolls forward when it next runs. A memory
forgotten in between must leave that plan (`core/deletion.py`, the plan scrub): else the
text the user erased stays in the store's journal, and the resumed cycle writes it back
inside a synthesis. Checked where a user would look: every record, the journal, and the
bytes of the store itself (the SQLite file, every Redis value).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.core.consolidation import PLAN_KEY, fingerprint, synthesis_id
from reverie.core.engine import MemoryEngine
from reverie.core.models import Status
from reverie.core.policy import Policy
from reverie.core.ports import RecordStore
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.store import RedisStore
from reverie.integrations.sqlite.store import SQLiteStore
from tests.fakes import BagOfWordsEmbedder
from tests.integration.test_erasure_real import _files_holding, _redis_values

NS = "default"
T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


class Crash(Exception):
    """The cycle's process dying at a chosen journal step."""


def crash_at(step: str) -> Callable[[str], None]:
    def hook(at: str) -> None:
        if at == step:
            raise Crash(at)

    return hook


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """How to open the store again (a new process would), and where to look for bytes."""
    made: list[Any] = []
    if request.param == "sqlite":

        def store() -> RecordStore:
            opened = SQLiteStore(tmp_path / "store" / "reverie.db")
            made.append(opened)
            return opened

    else:
        url, prefix = request.getfixturevalue("redis_url"), f"fc{uuid.uuid4().hex[:8]}"

        def store() -> RecordStore:
            opened = RedisStore.from_url(url, prefix=prefix)
            made.append(opened)
            return opened

    state = {"name": request.param, "store": store, "home": tmp_path}
    yield state
    if request.param == "redis":
        with RedisStore.from_url(url, prefix=prefix) as cleanup:
            for ns in cleanup.namespaces():
                cleanup.delete_namespace(ns)


def open_engine(backend: dict[str, Any], clock: ManualClock) -> MemoryEngine:
    store = backend["store"]()
    return MemoryEngine(
        store,
        store,
        ChromaIndex.embedded(backend["home"] / "chroma"),
        BagOfWordsEmbedder(),
        policy=Policy(),
        clock=clock,
        token_counter=lambda s: len(s.split()),
    )


def stored_anywhere(backend: dict[str, Any], engine: MemoryEngine, text: str) -> list[str]:
    """Where the store's own bytes still hold `text` (the engine closed for SQLite, so
    its WAL is checkpointed into the file as any reader would find it)."""
    if backend["name"] == "sqlite":
        engine.close()
        return _files_holding(backend["home"] / "store", text)
    store = engine.store
    assert isinstance(store, RedisStore)
    found = ["redis"] if text.lower() in _redis_values(store.client, store.prefix).lower() else []
    engine.close()
    return found


def test_a_memory_forgotten_mid_cycle_is_not_written_back_when_the_cycle_resumes(
    backend: dict[str, Any],
) -> None:
    clock = ManualClock(T0)
    engine = open_engine(backend, clock)
    for i in range(4):
        engine.observe(f"ok the weather in paris was rainy again {i}", at=T0, source=f"w{i}")
        engine.observe(f"ok lunch was a cheese sandwich again {i}", at=T0, source=f"l{i}")
    engine.observe("Remember: my passport number is X123", at=T0, source="p", pinned=True)
    clock.advance(days=120)  # the chatter is old and weak now: the cycle merges it
    with pytest.raises(Crash):
        engine.consolidate(kill_hook=crash_at("plan:committing"))
    plan = engine.store.journal_get(NS, PLAN_KEY)
    assert plan is not None and plan["state"] == "committing" and len(plan["clusters"]) == 2
    weather = next(c for c in plan["clusters"] if "paris" in json.dumps(c["payload"]))
    lunch = next(c for c in plan["clusters"] if c is not weather)
    victim = weather["members"][0]
    erased = engine.store.get(NS, victim)
    assert erased is not None and erased.text in json.dumps(weather["payload"])

    engine.forget(victim)

    scrubbed = engine.store.journal_get(NS, PLAN_KEY)
    assert scrubbed is not None
    assert victim not in json.dumps(dict(scrubbed))
    assert [c["fingerprint"] for c in scrubbed["clusters"]] == [lunch["fingerprint"]]
    assert stored_anywhere(backend, engine, erased.text) == []

    engine = open_engine(backend, clock)  # the cycle's next run, in a new process
    try:
        report = engine.consolidate()
        assert report.resumed == 1
        records = list(engine.store.scan(NS))
        assert victim not in {m.id for m in records}
        assert synthesis_id(fingerprint(weather["members"])) not in {m.id for m in records}
        assert all(victim not in m.derived_from for m in records)
        assert all(erased.text not in m.text for m in records)
        lunch_node = engine.store.get(NS, synthesis_id(fingerprint(lunch["members"])))
        assert lunch_node is not None and lunch_node.status is Status.ACTIVE
    finally:
        found = stored_anywhere(backend, engine, erased.text)
    assert found == []
