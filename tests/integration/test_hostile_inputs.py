"""The public API driven with generated hostile arguments on real stores.

A Hypothesis state machine calls every public `MemoryEngine` method with arguments drawn
from what a careless or hostile caller passes: lone surrogates, zero-width and NUL text,
strings for times and numbers, huge and negative integers, NaN, one string where a list
belongs, non-text keys and ids, nested and oversized metadata, bytes, arbitrary objects,
times at the ends of the calendar; mixed with valid calls that use the ids the store gave
back. Every call must either succeed or raise a `ReverieError`; after each run the store
must still be valid: every memory readable, its fields of the types the API promises
(visible UTF-8 text, JSON metadata within the limits, text entities, a real `pinned`
flag), the export JSON-encodable, and (SQLite) `PRAGMA integrity_check` ok.

Runs on SQLite with embedded Chroma and on Redis with embedded Chroma, with the real
embedding model. In CI the examples are derandomized (tests/conftest.py), so the count
of calls is the same on every run; the test asserts it.
"""

from __future__ import annotations

import json
import math
import sqlite3
import unicodedata
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from reverie.core import ManualClock, Policy
from reverie.core.engine import MemoryEngine
from reverie.core.errors import ReverieError
from reverie.core.writing import Observation
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.redis.store import RedisStore

pytestmark = pytest.mark.slow

NAMESPACES = ("h1", "h2/sub")
POLICY = Policy(max_metadata_bytes=4096, max_metadata_depth=8, max_text_chars=400)
T0 = datetime(2025, 3, 1, tzinfo=UTC)

# ---------------------------------------------------------------------- hostile values

invisible = st.text(st.sampled_from("\u200b\u200c\u200d\u2060\ufeff \t\n\u00a0\u3000"),
                    max_size=6)
any_chars = st.characters(exclude_categories=())  # surrogates and controls included
words = st.sampled_from(
    ["Ana lives in Porto", "the boiler was fixed", "Tomas likes tea", "meeting at 3pm",
     "Pixel the cat", "moved to Lisbon", "Ana", "tea", "Ana actually lives in Braga now"]
)
good_text = st.one_of(words, words, st.text(min_size=1, max_size=30))
bad_text = st.one_of(
    st.text(any_chars, min_size=1, max_size=30),
    invisible,
    st.builds(lambda w, c: w + c, words, st.sampled_from(["\ud800", "\udfff", "\x00"])),
    st.text(min_size=390, max_size=420),  # around POLICY.funnel.max_text_chars
    st.sampled_from([None, 5, b"bytes", ["a list"]]),
)
good_time = st.one_of(st.none(), st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1),
                                              timezones=st.sampled_from([UTC, None])))
bad_time = st.one_of(
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=14)),
                                            timezone(timedelta(hours=-12))])),
    st.datetimes(),  # naive, any year
    st.sampled_from([datetime.min, datetime.max, datetime.min.replace(tzinfo=UTC),
                     datetime.max.replace(tzinfo=UTC)]),
    st.sampled_from(["2025-01-01", 1_700_000_000, 0, -1.5, b"2025"]),
)
bad_number = st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**63, True, "5", 1.5, None]),
)
good_unit = st.one_of(st.none(), st.floats(0.0, 1.0))
good_count = st.integers(1, 20)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                      st.floats(), st.text(any_chars, max_size=20))


def _nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(levels):
        cur["k"] = {}
        cur = cur["k"]
    return root


good_meta = st.one_of(st.none(), st.dictionaries(st.text(max_size=5), st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=20),
    st.lists(st.integers(-1000, 1000), max_size=3)), max_size=3))
bad_meta = st.one_of(
    st.recursive(json_leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(any_chars, max_size=8), st.integers(0, 3)),
                        inner, max_size=3),
    ), max_leaves=12).map(lambda v: {"v": v}),
    st.sampled_from([{1: "a", "1": "b"}, {"x": "a" * 5000}, {"s": {1, 2}}, {"b": b"x"},
                     {"t": (1, 2)}, {"o": object()}, [1, 2], "meta"]),
    st.integers(1, 40).map(_nested),
)
good_entities = st.one_of(st.none(), st.lists(words, max_size=3))
bad_entities = st.one_of(
    st.just("abc"),
    st.lists(st.one_of(st.integers(), st.none(), st.text(any_chars, max_size=6)), max_size=4),
    st.sampled_from([[1, 2], b"ab", {"a": 1}, 7]),
)
good_flag = st.booleans()
bad_flag = st.sampled_from(["no", "yes", 0, 1, None, "True"])
good_ns = st.sampled_from([*NAMESPACES, None])
bad_ns = st.sampled_from(["", "a//b", "ns/", 5, "x" * 200, "\ud800", "/root", b"h1"])
good_kind = st.sampled_from(["episodic", "semantic", "procedural"])
bad_kind = st.sampled_from(["bogus", 3, None, "SEMANTIC", ["semantic"]])
hostile = st.one_of(bad_text, bad_number, bad_meta, bad_time,
                    st.sampled_from([object(), b"bytes", [1], {"a": 1}]))
Spec = dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]]

# ---------------------------------------------------------------------- the machine


class HostileCaller(RuleBasedStateMachine):
    engine: MemoryEngine
    clock: ManualClock
    calls = 0  # every public call made, over all runs
    hostile_calls = 0  # calls with a hostile argument
    typed = 0  # calls refused with a ReverieError
    stored = 0  # memories the calls returned (observe, observe_many, remember)

    ids = Bundle("ids")
    hostile = False  # the arguments of the call being made hold a hostile value

    def args(self, data: st.DataObject, spec: Spec) -> dict[str, Any]:
        """One call's arguments: all valid now and then (they build the state the hostile
        calls meet), otherwise one of them hostile (a hostile value must be
        refused on its own, not hidden behind another)."""
        names = list(spec)
        bad = data.draw(st.sampled_from([*names, None]), label="hostile")
        self.hostile = bad is not None
        return {n: data.draw(b if n == bad else g, label=n) for n, (g, b) in spec.items()}

    def call(self, fn: Callable[[], Any]) -> Any:
        type(self).calls += 1
        type(self).hostile_calls += self.hostile
        try:
            return fn()
        except ReverieError:
            type(self).typed += 1
            return None

    def kept(self, memories: list[Any]) -> Any:
        type(self).stored += len(memories)
        return multiple(*(m.id for m in memories))

    @rule(target=ids, data=st.data())
    def observe(self, data: st.DataObject) -> Any:
        a = self.args(data, {
            "text": (good_text, bad_text), "namespace": (good_ns, bad_ns),
            "at": (good_time, bad_time), "kind": (good_kind, bad_kind),
            "importance": (good_unit, bad_number), "entities": (good_entities, bad_entities),
            "metadata": (good_meta, bad_meta), "pinned": (good_flag, bad_flag),
            "source": (st.one_of(st.none(), words), st.one_of(bad_number, invisible)),
        })
        text = a.pop("text")
        m = self.call(lambda: self.engine.observe(text, **a))
        return self.kept([m] if m is not None else [])

    @rule(target=ids, data=st.data())
    def observe_many(self, data: st.DataObject) -> Any:
        a = self.args(data, {
            "items": (st.lists(st.one_of(good_text, st.builds(Observation, good_text)),
                               max_size=4),
                      st.one_of(st.lists(st.one_of(bad_text, bad_number, st.builds(
                          Observation, bad_text)), min_size=1, max_size=3), bad_text,
                          bad_number)),
            "namespace": (good_ns, bad_ns), "batch_size": (good_count, bad_number),
        })
        items = a.pop("items")
        out = self.call(lambda: self.engine.observe_many(items, **a))
        return self.kept(out or [])

    @rule(target=ids, data=st.data())
    def remember(self, data: st.DataObject) -> Any:
        a = self.args(data, {
            "subject": (st.sampled_from(["Ana", "Tomas"]), bad_text),
            "predicate": (st.sampled_from(["lives in", "likes"]), bad_text),
            "object": (good_text, bad_text), "namespace": (good_ns, bad_ns),
            "kind": (st.sampled_from(["semantic", "procedural"]), bad_kind),
            "at": (good_time, bad_time), "confidence": (good_unit, bad_number),
            "metadata": (good_meta, bad_meta), "index": (good_flag, bad_flag),
            "text": (st.one_of(st.none(), good_text), bad_text),
        })
        fact = (a.pop("subject"), a.pop("predicate"), a.pop("object"))
        m = self.call(lambda: self.engine.remember(*fact, **a))
        return self.kept([m] if m is not None else [])

    @rule(data=st.data())
    def recall(self, data: st.DataObject) -> None:
        a = self.args(data, {
            "query": (good_text, bad_text), "namespace": (good_ns, bad_ns),
            "k": (good_count, bad_number), "as_of": (good_time, bad_time),
            "include_history": (good_flag, bad_flag),
            "token_budget": (st.one_of(st.none(), good_count), bad_number),
            "kinds": (st.one_of(st.none(), st.lists(good_kind, max_size=2)),
                      st.one_of(bad_kind, st.lists(bad_kind, min_size=1, max_size=2))),
        })
        query = a.pop("query")
        self.call(lambda: self.engine.recall(query, **a))

    @rule(data=st.data(), known=st.one_of(st.none(), ids))
    def history(self, data: st.DataObject, known: Any) -> None:
        a = self.args(data, {
            "subject": (st.sampled_from(["Ana", "Tomas", None]), bad_text),
            "predicate": (st.sampled_from(["lives in", None]), bad_text),
            "memory_id": (st.just(known), hostile), "namespace": (good_ns, bad_ns),
            "kind": (good_kind, bad_kind),
        })
        self.call(lambda: self.engine.history(a.pop("subject"), a.pop("predicate"), **a))

    @rule(data=st.data(), known=ids)
    def small_updates(self, data: st.DataObject, known: str) -> None:
        a = self.args(data, {"mid": (st.just(known), hostile), "namespace": (good_ns, bad_ns),
                             "pinned": (good_flag, bad_flag)})
        mid, ns = a["mid"], a["namespace"]
        self.call(lambda: self.engine.get(mid, namespace=ns))
        self.call(lambda: self.engine.pin(mid, namespace=ns, pinned=a["pinned"]))
        self.call(lambda: self.engine.confirm(mid, namespace=ns))

    @rule(data=st.data(), mids=st.lists(consumes(ids), max_size=2))
    def forget(self, data: st.DataObject, mids: list[str]) -> None:
        a = self.args(data, {"extra": (st.just([]), st.lists(hostile, min_size=1, max_size=2)),
                             "namespace": (good_ns, bad_ns)})
        self.call(lambda: self.engine.forget(*mids, *a["extra"], namespace=a["namespace"]))

    @rule(data=st.data())
    def import_(self, data: st.DataObject) -> None:
        exported = [r for ns in NAMESPACES for r in self.engine.export(ns)][:6]
        a = self.args(data, {
            "records": (st.just(exported), st.one_of(hostile, st.lists(st.one_of(
                hostile, st.fixed_dictionaries({
                    "type": st.sampled_from(["memory", "edge", "reverie-export", "x"]),
                    "record": st.one_of(hostile, st.fixed_dictionaries({
                        "id": st.one_of(words, hostile), "namespace": bad_ns,
                        "text": bad_text, "kind": bad_kind,
                        "tier": st.sampled_from(["trace", "unit", "nope"]),
                        "status": st.sampled_from(["active", "archived", "x"]),
                        "created_at": st.one_of(st.just("2025-01-01T00:00:00+00:00"),
                                                hostile),
                        "importance": bad_number, "confidence": bad_number,
                        "metadata": bad_meta, "entities": bad_entities,
                        "sources": bad_entities, "pinned": bad_flag,
                    }))})), min_size=1, max_size=3))),
            "batch_size": (good_count, bad_number),
        })
        self.call(lambda: self.engine.import_(a["records"], batch_size=a["batch_size"]))

    @rule(data=st.data())
    def inspect(self, data: st.DataObject) -> None:
        a = self.args(data, {
            "namespace": (good_ns, bad_ns),
            "statuses": (st.one_of(st.none(), st.lists(st.sampled_from(
                ["active", "archived", "superseded"]), max_size=2)),
                st.one_of(st.just("active"), st.lists(st.sampled_from(["bogus", 1]),
                                                      min_size=1))),
            "tiers": (st.one_of(st.none(), st.lists(st.sampled_from(["trace", "unit"]))),
                      st.one_of(st.just("trace"), st.just([None]))),
        })
        ns = a["namespace"]
        self.call(lambda: list(self.engine.memories(**a)))
        self.call(lambda: self.engine.stats(namespace=ns))
        self.call(lambda: list(self.engine.export(ns)))
        self.call(lambda: self.engine.maintenance_due(ns))

    @rule(data=st.data(), days=st.integers(0, 400))
    def maintenance(self, data: st.DataObject, days: int) -> None:
        a = self.args(data, {
            "namespace": (st.sampled_from(NAMESPACES), bad_ns),
            "strategy": (st.sampled_from([None, "union-find"]),
                         st.sampled_from(["bogus", 3, ""])),
            "dry_run": (good_flag, bad_flag),
            "max_workers": (st.one_of(st.none(), good_count), bad_number),
        })
        self.clock.advance(days=days)
        ns, dry = a["namespace"], a["dry_run"]
        self.call(lambda: self.engine.consolidate(ns, strategy=a["strategy"], dry_run=dry,
                                                  max_workers=a["max_workers"]))
        self.call(lambda: self.engine.sweep(ns, dry_run=dry))
        self.call(lambda: self.engine.gc(ns, dry_run=dry))

    @rule(data=st.data())
    def repair(self, data: st.DataObject) -> None:
        a = self.args(data, {"namespace": (good_ns, bad_ns),
                             "batch_size": (good_count, bad_number),
                             "reembed": (st.just(False), bad_flag)})
        self.call(lambda: self.engine.repair(**a))

    def teardown(self) -> None:
        """Each run starts from empty namespaces, so a run's cost does not grow with the
        ones before it (the erasure is itself a call that must succeed)."""
        for ns in NAMESPACES:
            self.engine.forget_namespace(ns)

    @invariant()
    def the_store_is_valid(self) -> None:
        # cheap enough to run after every step on the namespaces the machine writes
        for ns in NAMESPACES:
            for m in self.engine.memories(namespace=ns):
                assert_valid(m)


def assert_valid(m: Any) -> None:
    assert isinstance(m.text, str) and m.text.encode("utf-8")
    assert "\x00" not in m.text
    assert any(unicodedata.category(c)[0] not in "CZ" for c in m.text), repr(m.text)
    assert all(isinstance(e, str) and e for e in m.entities), m.entities
    assert all(isinstance(s, str) and s for s in m.sources), m.sources
    assert isinstance(m.pinned, bool)
    assert 0.0 <= m.importance <= 1.0 and math.isfinite(m.importance)
    encoded = json.dumps(dict(m.metadata), ensure_ascii=False, allow_nan=False)
    assert json.loads(encoded) == m.metadata  # JSON in, the same JSON out
    assert len(encoded.encode("utf-8")) <= POLICY.funnel.max_metadata_bytes


@pytest.fixture(params=["sqlite", "redis"])
def tier(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def hostile_engine(tier: str, tmp_path: Path, request: pytest.FixtureRequest,
                   ) -> Iterator[tuple[MemoryEngine, ManualClock]]:
    clock = ManualClock(T0)
    store: RedisStore | None = None
    if tier == "redis":
        store = RedisStore.from_url(request.getfixturevalue("redis_url"),
                                    prefix=request.getfixturevalue("redis_prefix"))
    engine = open_engine(tmp_path, store=store, embedder=LocalEmbedder(), policy=POLICY,
                         clock=clock, namespace=NAMESPACES[0])
    try:
        yield engine, clock
    finally:
        if tier == "redis":
            for ns in engine.namespaces():
                engine.forget_namespace(ns)
        engine.close()


# calls with a hostile argument each tier's run must make: the SQLite run is the long one
MIN_HOSTILE = {"sqlite": 1000, "redis": 250}
RUNS = {"sqlite": settings(max_examples=60, stateful_step_count=20),
        "redis": settings(max_examples=15, stateful_step_count=20)}


def test_hostile_calls_succeed_or_raise_typed_errors(
    tier: str, hostile_engine: tuple[MemoryEngine, ManualClock], tmp_path: Path,
) -> None:
    engine, clock = hostile_engine
    HostileCaller.engine, HostileCaller.clock = engine, clock
    HostileCaller.calls = HostileCaller.hostile_calls = HostileCaller.typed = 0
    run_state_machine_as_test(HostileCaller, settings=settings(
        RUNS[tier], deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    ))
    engine.flush()
    for ns in engine.namespaces():  # every namespace written, valid or refused
        for m in engine.memories(namespace=ns):
            assert_valid(m)
    json.dumps(list(engine.export()), ensure_ascii=False, allow_nan=False)
    if tier == "sqlite":
        path = Path(engine.store.path)
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    print(f"{tier}: {HostileCaller.calls} calls, {HostileCaller.hostile_calls} with a hostile "
          f"argument, {HostileCaller.typed} refused with a typed error, "
          f"{HostileCaller.stored} memories stored")
    assert HostileCaller.hostile_calls >= MIN_HOSTILE[tier]
    assert 0 < HostileCaller.typed < HostileCaller.calls  # both kinds of outcome were drawn
