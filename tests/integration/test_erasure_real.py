"""Erasure on real parts, as a hostile user probes it: a SQLite file or an AOF-persisted
redis-server, embedded Chroma and the real all-MiniLM-L6-v2 model.

The scenario: a secret said four times and folded by the REM cycle into a synthesis,
and once as a fact value later superseded. The agent does what the tools let it do:
recall the secret, forget the ids recall returned. Afterwards no record holds it
(any status, `history`, `as_of`, `include_history`, `export`), a routine `gc` does not
bring it back, and no byte of it is left in any file reverie wrote (the SQLite file,
its -wal and -shm, the Chroma directory, hnswlib's block included), in any Redis key, or
in the AOF once the documented rewrite (`forget(..., compact=True)`) returned; nor are
the forgotten embeddings' floats (the HNSW graph is persisted every two writes here, so
its file held them before the forget).
"""

from __future__ import annotations

import re
import sqlite3
import struct
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import ManualClock, Status, Tier, updates
from reverie.core.engine import MemoryEngine
from reverie.core.text import content_hash
from reverie.integrations import open_engine
from reverie.integrations.chroma.hnsw import HnswSettings
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.store import RedisStore
from tests.servers import start_redis

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SECRET = "kumquat-4471"
NS = "user-a"
SAID = [
    f"my bank PIN is {SECRET}",
    f"the PIN for my bank card is {SECRET}",
    f"note to self: bank card PIN {SECRET}",
    f"my bank card PIN code is {SECRET}",
]


@pytest.fixture(scope="module")
def aof_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A redis-server of this module alone, AOF on with fsync always."""
    data = tmp_path_factory.mktemp("erasure-redis") / "data"
    server, url = start_redis(data, appendonly=True)
    try:
        yield {"url": url, "dir": data}
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def tier(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    home = tmp_path / "home"
    state: dict[str, Any] = {"name": request.param, "home": home}
    if request.param == "redis":
        redis_info = request.getfixturevalue("aof_redis")
        prefix = f"t{uuid.uuid4().hex[:8]}"
        state.update(redis_info, prefix=prefix)
        state["store"] = lambda: RedisStore.from_url(redis_info["url"], prefix=prefix)
    else:
        state["store"] = lambda: None
    yield state


def _open(tier: dict[str, Any], when: datetime, sync_every: int | None = None) -> MemoryEngine:
    """`sync_every`: Chroma persists its HNSW graph every that many writes (its own
    default, 1,000, would keep a small test's vectors out of the file)."""
    vectors = None
    if sync_every is not None:
        hnsw = HnswSettings(sync_threshold=sync_every)
        vectors = ChromaIndex.embedded(tier["home"] / "vectors", hnsw=hnsw)
    return open_engine(
        tier["home"], store=tier["store"](), vectors=vectors, clock=ManualClock(when),
        namespace=NS,
    )


def _plant(engine: MemoryEngine) -> tuple[list[str], str]:
    """The secret in four traces (consolidated into one synthesis) and one fact value
    later superseded; returns the traces' ids and the synthesis id."""
    traces = [
        engine.observe(text, source=f"chat-{i}", importance=0.2, at=T0 + timedelta(minutes=i))
        for i, text in enumerate(SAID)
    ]
    engine.remember("user", "bank pin", SECRET, at=T0, source="form-1")
    engine.remember("user", "bank pin", "9090", at=T0 + timedelta(days=2), source="form-2")
    engine.observe("I walked the dog in the park", importance=0.6)
    engine.clock.advance(days=60)  # type: ignore[attr-defined]
    report = engine.consolidate()
    (cluster,) = [c for c in report.clusters if set(c.member_ids) == {t.id for t in traces}]
    assert engine.get(cluster.synthesis_id).tier is Tier.SYNTHESIS
    assert {engine.get(t.id).status for t in traces} == {Status.CONSOLIDATED}
    return [t.id for t in traces], cluster.synthesis_id


def _holders(engine: MemoryEngine) -> list[str]:
    """Every record, in any status, whose exported form holds the secret."""
    return [
        rec["record"]["id"] for rec in engine.export(namespace=NS)
        if rec["type"] == "memory" and SECRET in str(rec)
    ]


def _files_holding(root: Path, needle: str) -> list[str]:
    low = needle.lower().encode()
    return sorted(
        _where(p, root, low) for p in root.rglob("*")
        if p.is_file() and low in p.read_bytes().lower()
    )


def _header(block: Path) -> tuple[int, ...]:
    """hnswlib's header of an HNSW block (after Chroma's 4-byte version): offset of level
    0, max elements, element count, element size, label offset, data offset."""
    return struct.unpack("<I6Q", (block.parent / "header.bin").read_bytes()[:52])[1:]


def _where(p: Path, root: Path, low: bytes) -> str:
    """The file, and for an HNSW block where in it the text stands: in an element (below
    count x size) or in the block's tail past the last element, so a failure tells which
    write left it."""
    name = str(p.relative_to(root))
    head = p.parent / "header.bin"
    if p.name != "data_level0.bin" or not head.exists():
        return name
    _, _, count, size, _, _ = _header(p)
    raw = p.read_bytes().lower()
    at = [m.start() for m in re.finditer(re.escape(low), raw)]
    return f"{name} (at {at}; {count} elements of {size} bytes, {len(raw)} bytes in all)"


def _files_holding_vectors(root: Path, vectors: Sequence[np.ndarray]) -> list[str]:
    """Files holding one of `vectors`: its first eight floats as given or unit-normalised
    (as hnswlib keeps a cosine space's vectors), or, in an HNSW block (hnswlib's layout:
    a header after a 4-byte version, elements of links, floats and label), an element
    within cosine 0.999 of it."""
    rows = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    units = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    needles = [r[:8].astype("<f4").tobytes() for r in (*rows, *units)]
    found = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        raw = p.read_bytes()
        hit = any(n in raw for n in needles)
        if p.name == "data_level0.bin":
            _, _, _, size, label_at, data_at = _header(p)
            whole = len(raw) // size
            block = np.frombuffer(raw[: whole * size], dtype=np.uint8).reshape(whole, size)
            floats = block[:, data_at:label_at].copy().view("<f4")
            hit = hit or bool((np.nan_to_num(floats @ units.T) > 0.999).any())
        if hit:
            found.append(str(p.relative_to(root)))
    return found


def _redis_values(client: Any, prefix: str) -> str:
    """Every value under the prefix, read by type (DUMP may compress strings)."""
    out: list[str] = []
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        kind = client.type(key)
        if kind == "string":
            out.append(str(client.get(key)))
        elif kind == "hash":
            out.append(str(client.hgetall(key)))
        elif kind == "set":
            out.append(str(client.smembers(key)))
        elif kind == "zset":
            out.append(str(client.zrange(key, 0, -1, withscores=True)))
        elif kind == "list":
            out.append(str(client.lrange(key, 0, -1)))
        elif kind == "stream":
            out.append(str(client.xrange(key)))
        out.append(str(key))
    return "\n".join(out)


def test_forgetting_what_recall_returned_erases_every_holder(tier: dict[str, Any]) -> None:
    engine = _open(tier, T0)
    traces, synthesis = _plant(engine)
    assert len(_holders(engine)) == 6  # four traces, the synthesis, the superseded fact

    hits = engine.recall("what is my bank PIN?", k=5)
    returned = [h.id for h in hits]
    assert synthesis in returned  # the agent sees the synthesis and the current fact
    deleted = engine.forget(*returned, compact=tier["name"] == "redis")

    assert deleted >= 7  # the synthesis, its four members, both versions of the fact
    assert _holders(engine) == []
    assert engine.history("user", "bank pin") == []
    assert all(SECRET not in h.text for h in engine.recall(
        f"bank PIN {SECRET}", k=20, include_history=True))
    assert all(SECRET not in h.text for h in engine.recall(
        f"bank PIN {SECRET}", k=20, as_of=T0 + timedelta(days=1)))
    for i in (*traces, synthesis):
        assert i not in engine.vectors.ids(NS)

    engine.clock.advance(days=365)  # type: ignore[attr-defined]
    report = engine.gc()
    assert report.orphans_restored == 0
    assert _holders(engine) == []
    assert all(SECRET not in h.text for h in engine.recall("what is my bank PIN?", k=10))
    engine.close()

    # reopened: still nothing, and no forget left unfinished
    again = _open(tier, T0 + timedelta(days=430))
    assert _holders(again) == []
    assert again.store.get_meta("forget_pending") == "[]"
    again.close()


def _remembered(cached: Any, *args: Any) -> bool:
    """Did `cached` (an lru_cache) hold its answer for `args`? Asking counts a hit if so."""
    before = cached.cache_info().hits
    cached(*args)
    return bool(cached.cache_info().hits > before)


def test_no_forgotten_text_stays_remembered_in_the_process(tmp_path: Path) -> None:
    """Texts are read for update signals and hashed on every write and recall, and those
    readings are remembered per text for speed; a forget drops them, as it drops the
    write path's recent turns, so the forgotten text is not kept in the process."""
    engine = open_engine(tmp_path / "home", clock=ManualClock(T0), namespace=NS)
    secret = engine.observe(SAID[0], source="chat-0")
    engine.observe("I walked the dog in the park")
    assert secret.id in [h.id for h in engine.recall("what is my bank PIN?", k=5)]
    # the write hashed the text and the recall read it: both are remembered now
    assert _remembered(content_hash, SAID[0])
    assert _remembered(updates.reading, SAID[0])

    engine.forget(secret.id)

    assert not _remembered(content_hash, SAID[0])
    assert not _remembered(updates.reading, SAID[0])
    engine.close()


def test_no_byte_of_a_forgotten_text_is_left_where_reverie_wrote(tier: dict[str, Any]) -> None:
    engine = _open(tier, T0, sync_every=2)
    traces, synthesis = _plant(engine)
    engine.flush()
    home: Path = tier["home"]
    holders = _holders(engine)
    kept = engine.vectors.stored_vectors(NS, holders)  # type: ignore[attr-defined]
    assert set(kept) == set(holders)
    held = list(kept.values())
    assert any(f.endswith("data_level0.bin") for f in _files_holding_vectors(home, held))
    redis = tier["name"] == "redis"
    if redis:
        client = engine.store.client  # type: ignore[attr-defined]
        assert SECRET in _redis_values(client, tier["prefix"])
        assert _files_holding(tier["dir"], SECRET) != []  # the AOF has it: the test can fail
    else:
        assert _files_holding(home, SECRET) != []

    report = engine.forget_matching(SECRET, compact=redis)

    assert set(report.erased) >= set(traces)
    assert report.cascaded == (synthesis,)  # no member left to rebuild it from
    assert _holders(engine) == []
    if redis:
        assert report.residue["aof_rewritten"] == 1
        assert SECRET not in _redis_values(client, tier["prefix"])
    else:
        assert report.residue["complete"] is True
        for wal in home.rglob("*.db-wal"):  # checkpointed and truncated
            assert wal.stat().st_size == 0
    # Chroma's write log keeps no entry that wrote an erased vector
    chroma_db = next(home.rglob("chroma.sqlite3"))
    erased = [*report.erased, *report.cascaded]
    with sqlite3.connect(chroma_db) as log:
        rows = log.execute(
            f"SELECT count(*) FROM embeddings_queue WHERE operation != 3 AND id IN "
            f"({','.join('?' * len(erased))})", erased,
        ).fetchone()[0]
    assert rows == 0
    assert _files_holding(home, SECRET) == []
    assert _files_holding_vectors(home, held) == []
    # later writes persist the graph again: the forgotten floats do not come back
    for i in range(6):
        engine.observe(f"the tram to the market leaves at {i} past the hour")
    engine.flush()
    engine.close()
    assert _files_holding(home, SECRET) == []
    assert _files_holding_vectors(home, held) == []
    if redis:
        assert _files_holding(tier["dir"], SECRET) == []


def test_a_later_write_of_the_hnsw_block_keeps_no_byte_past_its_last_element(
    tmp_path: Path,
) -> None:
    """hnswlib allocates its block without clearing it, and Chroma writes the whole block
    of a namespace that has persisted no element yet, on each client's first call into
    it: memory the process freed, a forgotten text among it, can land past the block's
    last element, in the vectors' file and in the norms' file beside it. No real write
    lands it there on demand, so the test puts the text where such a write would; the next
    call finds the file changed and zeroes both tails."""
    home = tmp_path / "home"
    engine = open_engine(home, clock=ManualClock(T0), namespace=NS)
    secret = engine.observe(SAID[0])
    engine.observe("I walked the dog in the park")
    engine.forget(secret.id)
    assert engine.recall("where did I walk the dog?", k=3)
    (data,) = home.rglob("data_level0.bin")
    _, _, count, size, _, _ = _header(data)
    assert data.stat().st_size >= count * size + 4096  # below the first persist: all tail
    lengths = data.parent / "length.bin"  # a float per slot, from a block alike
    assert lengths.stat().st_size >= count * 4 + 64
    for path, at in ((data, count * size + 1000), (lengths, count * 4 + 8)):
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(f"{SECRET}".encode())
    assert len(_files_holding(home, SECRET)) == 2

    assert engine.recall("where did I walk the dog?", k=3)

    assert _files_holding(home, SECRET) == []
    assert not any(data.read_bytes()[count * size:])
    assert not any(lengths.read_bytes()[count * 4:])
    engine.close()


def test_the_cli_erases_a_text_and_takes_a_consolidation_apart(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from reverie.adapters.cli.app import app

    home = tmp_path / "home"
    with open_engine(home, clock=ManualClock(T0), namespace=NS) as engine:
        traces, synthesis = _plant(engine)
        kept = [engine.observe(t, importance=0.2) for t in (
            "the gym opens at six on weekdays", "the gym opens at six every weekday")]
    runner = CliRunner()

    def cli(*args: str) -> str:
        result = runner.invoke(app, ["--home", str(home), "-n", NS, *args])
        assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
        return result.output

    declined = runner.invoke(app, ["--home", str(home), "-n", NS, "forget-matching", SECRET],
                             input="n\n")
    # four traces and both versions of the fact
    assert declined.exit_code == 1 and "Erase 6 memories" in declined.output
    assert all(t in declined.output for t in traces)  # shown before the question
    said = cli("forget-matching", SECRET, "--yes")
    assert "erased 6 memories" in said and "dropped 1 synthesis" in said
    assert "complete=True" in cli("purge")
    assert _files_holding(home, SECRET) == []
    assert all(t in said for t in traces)

    with open_engine(home, clock=ManualClock(T0 + timedelta(days=90)), namespace=NS) as engine:
        report = engine.consolidate()
        node = next(c.synthesis_id for c in report.clusters
                    if set(c.member_ids) == {m.id for m in kept})
    assert "restored 2 member(s)" in cli("undo-consolidation", node)
    with open_engine(home, namespace=NS) as engine:
        assert all(engine.get(m.id).is_active for m in kept)
        assert synthesis not in {m.id for m in engine.memories()}


def test_a_redis_user_who_may_not_rewrite_the_aof_is_told_so(
    aof_redis: dict[str, Any], tmp_path: Path
) -> None:
    import redis

    from reverie.core.errors import PermissionDenied

    admin = redis.Redis.from_url(aof_redis["url"], decode_responses=True)
    user = f"u{uuid.uuid4().hex[:6]}"
    admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all",
                          "-bgrewriteaof", "-bgsave")
    host_port = aof_redis["url"].split("//", 1)[1]
    store = RedisStore.from_url(f"redis://{user}:pw@{host_port}", prefix="perm")
    engine = open_engine(tmp_path / "home", store=store, namespace=NS)
    try:
        m = engine.observe(f"a note with {SECRET}")
        with pytest.raises(PermissionDenied, match="bgrewriteaof"):
            engine.forget(m.id, compact=True)
        # the records went before the rewrite was refused: only the file is left to clean
        assert _holders(engine) == []
        assert engine.store.get_meta("forget_pending") == "[]"
    finally:
        engine.close()
        admin.execute_command("ACL", "DELUSER", user)
        admin.close()


def test_gc_removes_vectors_whose_records_a_killed_gc_deleted(tmp_path: Path) -> None:
    from tests.fakes import BagOfWordsEmbedder

    home = tmp_path / "home"
    with open_engine(home, embedder=BagOfWordsEmbedder(), namespace=NS) as engine:
        made = engine.observe_many([f"archived note {i} about topic {i % 7}" for i in range(600)])
        engine.flush()
        # a GC killed after its record transaction and before the vector deletes
        engine.store.delete(NS, [m.id for m in made[:500]])
    with open_engine(home, embedder=BagOfWordsEmbedder(), namespace=NS) as engine:
        assert engine.vectors.count(NS) == 600
        report = engine.gc()
        assert report.orphan_vectors == 500
        assert engine.vectors.ids(NS) == {m.id for m in made[500:]}
        assert engine.gc().orphan_vectors == 0
