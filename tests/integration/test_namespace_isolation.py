"""Namespaces are tenants: nothing crosses from one to another, on real backends.

- A hypothesis test drives random operations (observe, remember, recall with and
  without history, history, forget, listing) over several namespaces of one store, some
  of them prefixes of others ('t-x', 't-x/alice', 't-x.b': the shapes a careless key
  pattern or LIKE clause would mix up), and checks every read against a model of what
  each namespace holds. The same texts and facts are written to several namespaces on
  purpose, so a deduplication or a supersession that crossed namespaces would show.
- Namespaces with `*`, `:`, `{`, `}`, spaces or 10 KB of text are rejected with
  `InvalidNamespace` by the engine and by the store itself (the store is public API).
- With Redis `MONITOR` on a dedicated server, listing one namespace (scan, count,
  recall, history, lexical search) never sends a command naming another namespace's
  keys, and every key it touches carries the namespace's hash tag `{ns}`.

Records go to a real SQLite file or a real redis-server, vectors to embedded Chroma. The
embedder is the deterministic hashing `BagOfWordsEmbedder`: these tests are about where
data lives, not about ranking quality.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidNamespace, NotFound
from reverie.core.models import Kind, fact_key
from reverie.core.ports import LexicalIndex
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.factory import open_store
from tests.fakes import BagOfWordsEmbedder
from tests.servers import start_redis

pytestmark = pytest.mark.slow
T0 = datetime(2025, 2, 1, 8, 0, tzinfo=UTC)

TEXTS = [
    "Ana drinks green tea every morning",
    "the build server lives in rack four",
    "Miso the cat sleeps on the red sofa",
    "Porto has the best custard tarts",
]
SUBJECTS = ["alice", "bob"]
OBJECTS = ["red", "blue", "green"]
QUERIES = ["green tea", "cat sofa", "alice colour", "custard tarts Porto"]
SUFFIXES = ["", "/alice", ".b", "-2"]  # 'p', 'p/alice', 'p.b', 'p-2': prefixes of each other

BAD_NAMESPACES = [
    "a*b", "*", "a:b", "ns:*", "{a}", "a{b", "a}b", "a b", " a", "a\tb", "a\nb", "",
    "x" * 10_240, "a//b", "../etc", "/a", "a/",
]


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryEngine]:
    tmp = tmp_path_factory.mktemp("isolation")
    spec = str(tmp / "iso.db") if request.param == "sqlite" else request.getfixturevalue(
        "redis_url"
    )
    store = open_store(spec, tmp)
    assert isinstance(store, LexicalIndex)
    e = MemoryEngine(
        store, store, ChromaIndex.embedded(tmp / "chroma"), BagOfWordsEmbedder(),
        clock=ManualClock(T0),
        check_embedder=False,  # the session's Redis is shared with other embedders' tests
    )
    yield e
    e.close()


op = st.one_of(
    st.tuples(st.just("observe"), st.integers(0, 3), st.sampled_from(TEXTS)),
    st.tuples(
        st.just("remember"), st.integers(0, 3), st.sampled_from(SUBJECTS),
        st.sampled_from(OBJECTS),
    ),
    st.tuples(st.just("recall"), st.integers(0, 3), st.sampled_from(QUERIES), st.booleans()),
    st.tuples(st.just("history"), st.integers(0, 3), st.sampled_from(SUBJECTS)),
    st.tuples(st.just("forget"), st.integers(0, 3), st.integers(0, 3), st.integers(0, 50)),
    st.tuples(st.just("list"), st.integers(0, 3)),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(ops=st.lists(op, min_size=1, max_size=30))
def test_no_read_ever_returns_another_namespaces_memory(
    engine: MemoryEngine, ops: list[tuple[Any, ...]]
) -> None:
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    spaces = [prefix + s for s in SUFFIXES]
    alive: dict[str, dict[str, str]] = {ns: {} for ns in spaces}  # ns -> id -> text
    clock = engine.clock
    assert isinstance(clock, ManualClock)

    def owner(mid: str) -> str | None:
        return next((ns for ns, ids in alive.items() if mid in ids), None)

    try:
        for n, step in enumerate(ops):
            clock.advance(seconds=10)
            kind, i = step[0], step[1]
            ns = spaces[i]
            if kind == "observe":
                m = engine.observe(step[2], namespace=ns, source=f"s{n}")
                assert m.namespace == ns
                assert owner(m.id) in (None, ns), "a repeat folded into another namespace"
                alive[ns][m.id] = m.text
            elif kind == "remember":
                m = engine.remember(step[2], "favourite colour", step[3], namespace=ns,
                                    source=f"s{n}")
                assert m.namespace == ns and owner(m.id) in (None, ns)
                alive[ns][m.id] = m.text
                versions = engine.history(step[2], "favourite colour", namespace=ns)
                # supersession stayed inside the namespace: every version is ours
                assert {v.id for v in versions} <= set(alive[ns])
                assert sum(v.is_active for v in versions) == 1
            elif kind == "recall":
                res = engine.recall(step[2], namespace=ns, k=10, include_history=step[3])
                for h in res:
                    assert h.memory.namespace == ns and h.id in alive[ns], (
                        f"recall in {ns} returned {h.id} of {owner(h.id)}"
                    )
            elif kind == "history":
                for v in engine.history(step[2], "favourite colour", namespace=ns):
                    assert v.namespace == ns and v.id in alive[ns]
            elif kind == "forget":
                src = spaces[step[2]]
                ids = sorted(alive[src])
                if not ids:
                    continue
                mid = ids[step[3] % len(ids)]
                n_deleted = engine.forget(mid, namespace=ns)
                if src == ns:
                    assert n_deleted == 1
                    del alive[ns][mid]
                else:  # naming another tenant's id deletes nothing, reads nothing
                    assert n_deleted == 0
                    assert engine.get(mid, namespace=src).id == mid
                    with pytest.raises(NotFound):
                        engine.get(mid, namespace=ns)
            else:
                listed = {m.id: m for m in engine.memories(namespace=ns)}
                assert set(listed) == set(alive[ns])
                assert all(m.namespace == ns for m in listed.values())
                assert engine.stats(namespace=ns)["total"] == len(alive[ns])
        # the end state, namespace by namespace, through every listing read
        for ns in spaces:
            assert {m.id for m in engine.memories(namespace=ns)} == set(alive[ns])
            for subject in SUBJECTS:
                key = fact_key(Kind.SEMANTIC, subject, "favourite colour")
                assert {m.id for m in engine.store.find_by_key(ns, key)} <= set(alive[ns])
            for q in QUERIES:
                for hit in engine.lexical.search(ns, q, 20):
                    assert hit.id in alive[ns]
    finally:
        for ns in spaces:
            engine.forget_namespace(ns)


# --- hostile namespaces ------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_NAMESPACES, ids=lambda b: repr(b[:12]))
def test_hostile_namespaces_are_rejected_by_engine_and_store(
    engine: MemoryEngine, bad: str
) -> None:
    store = engine.store
    before = engine.namespaces()
    with pytest.raises(InvalidNamespace):
        engine.observe("hello there", namespace=bad)
    with pytest.raises(InvalidNamespace):
        engine.remember("alice", "likes", "tea", namespace=bad)
    with pytest.raises(InvalidNamespace):
        engine.recall("hello", namespace=bad)
    calls = [
        lambda: store.get(bad, "x"),
        lambda: store.get_many(bad, ["x"]),
        lambda: list(store.scan(bad)),
        lambda: store.count(bad),
        lambda: store.find_by_hash(bad, "0" * 64),
        lambda: store.find_by_key(bad, "semantic|alice|likes"),
        lambda: store.delete(bad, ["x"]),
        lambda: store.delete_namespace(bad),
        lambda: store.lock(bad).__enter__(),
        lambda: engine.lexical.search(bad, "hello", 5),
    ]
    for call in calls:
        with pytest.raises(InvalidNamespace):
            call()
    assert engine.namespaces() == before


# --- listing one namespace never touches another's keys (Redis MONITOR) --------------------

_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')


def test_listing_one_namespace_never_scans_anothers_keys(tmp_path: Path) -> None:

    server, url = start_redis(tmp_path / "redis")
    try:
        store = open_store(url, tmp_path)
        assert isinstance(store, LexicalIndex)
        engine = MemoryEngine(
            store, store, ChromaIndex.embedded(tmp_path / "chroma"), BagOfWordsEmbedder(),
            clock=ManualClock(T0),
        )
        target = "team-a"
        others = ["team-a/alice", "team-a.b", "team-b", "team"]
        for ns in [target, *others]:
            for t in TEXTS:
                engine.observe(f"{t} ({ns})", namespace=ns)
            for s in SUBJECTS:
                engine.remember(s, "favourite colour", "red", namespace=ns)
                engine.remember(s, "favourite colour", "blue", namespace=ns)

        commands = _monitor(url, lambda: _list_everything(engine, target))
        assert len(commands) > 5, "MONITOR saw nothing: the check would be vacuous"
        own = "rv:{" + target + "}:"
        foreign = ["{" + ns + "}" for ns in others]
        for args in commands:
            cmd = " ".join(args)
            name = args[0].upper() if args else ""
            assert name not in ("KEYS", "FLUSHDB", "FLUSHALL"), cmd
            if name == "SCAN":
                pattern = args[args.index("MATCH") + 1] if "MATCH" in args else "*"
                assert pattern.startswith(own), f"scan beyond the namespace: {cmd}"
            for arg in args[1:]:
                # a key of reverie's is the namespace's own, or one of the two global keys
                if arg.startswith("rv:"):
                    assert arg.startswith(own) or arg in ("rv:namespaces", "rv:meta"), cmd
                assert not any(tag in arg for tag in foreign), f"touches another tenant: {cmd}"
        engine.close()
    finally:
        server.stop()


def _list_everything(engine: MemoryEngine, ns: str) -> None:
    list(engine.memories(namespace=ns))
    list(engine.memories(namespace=ns, statuses=["superseded"]))
    engine.store.count(ns)
    for s in SUBJECTS:
        engine.history(s, "favourite colour", namespace=ns)
    for q in QUERIES:
        engine.lexical.search(ns, q, 10)
        engine.recall(q, namespace=ns, k=5, include_history=True)


def _monitor(url: str, action: Any) -> list[list[str]]:
    """Run `action` while a MONITOR connection records every command the server runs
    (Lua scripts' inner `redis.call`s included); returns each command's arguments, as
    MONITOR quoted them, between two sentinel ECHOs."""
    import redis

    sentinel = f"reverie-monitor-{uuid.uuid4().hex}"
    seen: list[list[str]] = []
    errors: list[BaseException] = []
    client = redis.Redis.from_url(url)
    conn = client.connection_pool.get_connection()
    conn.send_command("MONITOR")
    assert conn.read_response() in (b"OK", "OK")

    def listen() -> None:
        try:
            recording = False
            while True:
                raw = conn.read_response()
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
                body = line.split("] ", 1)[1] if "] " in line else line
                args = [_unescape(a) for a in _ARG.findall(body)]
                if sentinel in args:
                    if recording:
                        return
                    recording = True
                elif recording:
                    seen.append(args)
        except BaseException as e:  # surfaced below
            errors.append(e)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    pinger = redis.Redis.from_url(url)
    pinger.echo(sentinel)
    action()
    pinger.echo(sentinel)
    thread.join(timeout=30)
    alive = thread.is_alive()
    conn.disconnect()
    pinger.close()
    client.close()
    assert not errors, errors
    assert not alive, "MONITOR never saw the closing sentinel"
    return seen


def _unescape(arg: str) -> str:
    return re.sub(r"\\(.)", r"\1", arg)
