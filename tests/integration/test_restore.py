"""Undoing a wrong supersession on real parts: a SQLite file or a real redis-server as the
record store, embedded Chroma, the real all-MiniLM-L6-v2 model; then the `reverie
restore` command and the MCP `restore` tool.

A restored version is current again, the version that replaced it is superseded by it,
both say why, `history` keeps every version, recall ranks the restored one first and says
so, and a restore that cannot be done (unknown id, another namespace's id, a version that
is not superseded) writes nothing at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from reverie.core import ManualClock, Status
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput, NotFound, NotSuperseded
from reverie.core.restore import RESTORED_KEY
from reverie.core.writing import SUPERSEDED_KEY
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.redis.store import RedisStore

pytestmark = pytest.mark.slow
T0 = datetime(2025, 9, 1, 18, 0, tzinfo=UTC)
OLD = "user: My gym membership costs $45 a month."
NEW = "user: Heads up, my gym membership went up to $60 a month."
QUESTION = "How much does my gym membership cost a month?"


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder().load()


@pytest.fixture(params=["sqlite", "redis"])
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalEmbedder
) -> Iterator[MemoryEngine]:
    clock = ManualClock(T0)
    if request.param == "sqlite":
        e = open_engine(tmp_path / "home", embedder=embedder, clock=clock)
        yield e
        e.close()
        return
    redis_url = request.getfixturevalue("redis_url")
    store = RedisStore.from_url(redis_url, prefix=f"t{uuid.uuid4().hex[:8]}")
    e = open_engine(tmp_path / "home", store=store, vectors=tmp_path / "vectors",
                    embedder=embedder, clock=clock)
    try:
        yield e
    finally:
        for ns in store.namespaces():
            store.delete_namespace(ns)
        e.close()


def advance(e: MemoryEngine, days: float) -> None:
    clock = e.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=days)


def superseded_pair(e: MemoryEngine, ns: str) -> tuple[str, str]:
    """A price told, then a confident change of it in free text: the old one is retired."""
    old = e.observe(OLD, namespace=ns).id
    advance(e, 30)
    new = e.observe(NEW, namespace=ns).id
    retired = e.get(old, namespace=ns)
    assert retired.status is Status.SUPERSEDED and retired.superseded_by == new
    return old, new


def snapshot(e: MemoryEngine) -> list[dict[str, Any]]:
    """Every record and edge of every namespace, as export writes them."""
    return list(e.export())


def test_restore_brings_back_the_older_version_and_keeps_why(engine: MemoryEngine) -> None:
    ns = "gym"
    old, new = superseded_pair(engine, ns)
    advance(engine, 2)
    when = engine.clock.now()

    restored = engine.restore(old, namespace=ns)

    assert restored.id == old and restored.status is Status.ACTIVE
    assert restored.superseded_by is None and restored.valid_to is None
    displaced = engine.get(new, namespace=ns)
    assert displaced.status is Status.SUPERSEDED and displaced.superseded_by == old
    assert displaced.valid_to == when
    # why, on both: the restore on the restored one, with the supersession it undid
    record = engine.get(old, namespace=ns).metadata[RESTORED_KEY]
    assert record["over"] == new and record["reason"] == "restored by the user"
    assert record["at"] == when.isoformat()
    assert record["undid"]["by"] == new and record["undid"]["same_type"] == "money"
    assert SUPERSEDED_KEY not in engine.get(old, namespace=ns).metadata
    assert displaced.metadata[SUPERSEDED_KEY] == {
        "by": old, "reason": "restored by the user", "at": when.isoformat(),
    }
    # history still holds both versions, oldest first, with their statuses now
    versions = engine.history(memory_id=old, namespace=ns)
    assert [(m.id, m.status) for m in versions] == [
        (old, Status.ACTIVE), (new, Status.SUPERSEDED),
    ]
    assert [m.id for m in engine.history(memory_id=new, namespace=ns)] == [old, new]
    # BM25 covers current texts only: the restored one is back in, the displaced one out
    engine.flush()
    lexical = [h.id for h in engine.lexical.search(ns, "gym membership month", 5)]
    assert old in lexical and new not in lexical
    # recall answers with the restored value, and says why it is current
    hits = engine.recall(QUESTION, namespace=ns, k=3, reinforce=False)
    assert [h.id for h in hits] == [old]
    assert hits[0].explanation.note == f"restored by the user on 2025-10-03, over {new}"

    # reversible: restoring the other one flips it back, and both records keep the trail
    advance(engine, 1)
    again = engine.restore(new, namespace=ns)
    assert again.status is Status.ACTIVE and again.metadata[RESTORED_KEY]["over"] == old
    assert engine.get(old, namespace=ns).superseded_by == new
    assert [h.id for h in engine.recall(QUESTION, namespace=ns, k=3, reinforce=False)] == [new]
    assert engine.get(old, namespace=ns).metadata[RESTORED_KEY]["over"] == new


def test_restore_a_keyed_fact(engine: MemoryEngine) -> None:
    ns = "facts"
    berlin = engine.remember("user", "lives in", "Berlin", namespace=ns)
    advance(engine, 10)
    lisbon = engine.remember("user", "lives in", "Lisbon", namespace=ns)
    advance(engine, 1)

    engine.restore(berlin.id, namespace=ns)

    assert [(m.fact.object if m.fact else None, m.status) for m in engine.history(
        "user", "lives in", namespace=ns)] == [
        ("Berlin", Status.ACTIVE), ("Lisbon", Status.SUPERSEDED),
    ]
    assert engine.get(lisbon.id, namespace=ns).superseded_by == berlin.id
    hits = engine.recall("Where does the user live?", namespace=ns, k=3, reinforce=False)
    assert hits[0].id == berlin.id
    # the key keeps one current version: the next value supersedes the restored one
    advance(engine, 1)
    porto = engine.remember("user", "lives in", "Porto", namespace=ns)
    statuses = {m.fact.object: m.status for m in engine.history("user", "lives in", namespace=ns)
                if m.fact is not None}
    assert statuses == {
        "Berlin": Status.SUPERSEDED, "Lisbon": Status.SUPERSEDED, "Porto": Status.ACTIVE,
    }
    assert engine.get(berlin.id, namespace=ns).superseded_by == porto.id


def test_a_restore_that_cannot_be_done_writes_nothing(engine: MemoryEngine) -> None:
    old, new = superseded_pair(engine, "user/a")
    engine.observe("user: I like green tea.", namespace="user/b")
    before = snapshot(engine)

    with pytest.raises(NotFound, match="no memory 'nope' in namespace 'user/a'"):
        engine.restore("nope", namespace="user/a")
    # an id of another namespace is unknown here, and its own namespace is untouched
    with pytest.raises(NotFound, match="in namespace 'user/b'"):
        engine.restore(old, namespace="user/b")
    with pytest.raises(NotSuperseded, match="is active, not superseded"):
        engine.restore(new, namespace="user/a")
    with pytest.raises(InvalidInput, match="memory_id must be non-empty text"):
        engine.restore("  ", namespace="user/a")

    assert snapshot(engine) == before
    # and the real one still works afterwards
    assert engine.restore(old, namespace="user/a").is_active
    with pytest.raises(NotSuperseded):  # restoring twice: it is current already
        engine.restore(old, namespace="user/a")


# ------------------------------------------------------------------ the faces


def build_home(home: Path, embedder: LocalEmbedder) -> tuple[str, str]:
    e = open_engine(home, embedder=embedder, clock=ManualClock(T0))
    try:
        return superseded_pair(e, "default")
    finally:
        e.close()


def test_cli_restore(tmp_path: Path, embedder: LocalEmbedder) -> None:
    from reverie.adapters.cli.app import app

    home = tmp_path / "home"
    old, new = build_home(home, embedder)
    runner = CliRunner()

    done = runner.invoke(app, ["--home", str(home), "restore", old])
    assert done.exit_code == 0, done.output
    assert "restored" in done.stdout and new in done.stdout

    again = runner.invoke(app, ["--home", str(home), "restore", old])
    assert again.exit_code == 2 and "not superseded" in again.stderr
    unknown = runner.invoke(app, ["--home", str(home), "restore", "nope"])
    assert unknown.exit_code == 2 and "no memory 'nope'" in unknown.stderr
    elsewhere = runner.invoke(app, ["--home", str(home), "-n", "other", "restore", new])
    assert elsewhere.exit_code == 2 and "in namespace 'other'" in elsewhere.stderr

    e = open_engine(home, embedder=embedder)
    try:
        assert e.get(old).is_active
        assert e.get(new).status is Status.SUPERSEDED and e.get(new).superseded_by == old
    finally:
        e.close()


def test_mcp_restore_tool(tmp_path: Path, embedder: LocalEmbedder) -> None:
    from mcp import Client

    from reverie.adapters.mcp import build_server

    home = tmp_path / "home"
    old, new = build_home(home, embedder)
    e = open_engine(home, embedder=embedder)

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with Client(build_server(e)) as client:
                result = await client.call_tool("restore", {"memory_id": old})
                assert not result.is_error
                assert result.structured_content is not None
                assert result.structured_content["status"] == "active"
                refused = await client.call_tool("restore", {"memory_id": old})
                assert refused.is_error

    try:
        anyio.run(scenario)
        assert e.get(new).superseded_by == old
    finally:
        e.close()
