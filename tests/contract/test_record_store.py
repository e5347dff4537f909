"""The RecordStore contract (and the LexicalIndex kept in step with it).

Written once against the ports in core/ports.py and run against every implementation
registered in tests/contract/conftest.py (`RECORD_STORES`). An implementation passes
this file or it does not ship.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any, cast

import pytest

from reverie.core.errors import ConflictError, InvalidInput, LockBusy
from reverie.core.models import Edge, EdgeType, Fact, Kind, Memory, Status, Tier, fact_key
from reverie.core.ports import LexicalIndex, RecordStore, WriteBatch
from reverie.core.text import content_hash
from tests.contract.conftest import T0, make_memory

S = EdgeType.ENTITY


def put(store: RecordStore, *memories: Memory, edges: tuple[Edge, ...] = ()) -> None:
    ns = memories[0].namespace if memories else "ns"
    store.commit(WriteBatch(ns, tuple(memories), edges))


def search_ids(store: RecordStore, query: str, k: int = 10, ns: str = "ns") -> list[str]:
    return [h.id for h in cast(LexicalIndex, store).search(ns, query, k)]


def full_memory(ns: str = "ns", **overrides: Any) -> Memory:
    fields: dict[str, Any] = {
        "id": "full",
        "namespace": ns,
        "kind": Kind.SEMANTIC,
        "tier": Tier.UNIT,
        "text": "Alice prefers green tea over coffee",
        "created_at": T0,
        "status": Status.ACTIVE,
        "fact": Fact("alice", "prefers", "green tea"),
        "key": fact_key(Kind.SEMANTIC, "alice", "prefers"),
        "importance": 0.73,
        "confidence": 0.61,
        "sources": frozenset({"chat:1", "email:2"}),
        "last_accessed_at": T0 + timedelta(days=1, microseconds=17),
        "access_count": 3,
        "recent_accesses": (
            T0 + timedelta(hours=1),
            T0 + timedelta(hours=2, microseconds=1),
            T0 + timedelta(days=1, microseconds=17),
        ),
        "valid_from": T0 - timedelta(days=2),
        "valid_to": T0 + timedelta(days=30),
        "superseded_by": "later",
        "consolidated_into": "synth",
        "derived_from": frozenset({"m-a", "m-b"}),
        "entities": frozenset({"alice"}),
        "pinned": True,
        "retention_exempt": True,
        "user_confirmed": True,
        "metadata": {"origin": "chat", "n": 3, "nested": {"a": [1, 2.5, None]}, "u": "café ☕"},
        "version": 1,
        "updated_at": T0 + timedelta(days=1),
    }
    fields.update(overrides)
    return Memory(**fields)


# --- put / get / CAS ----------------------------------------------------------------------


def test_is_a_record_store(record_store: RecordStore) -> None:
    assert isinstance(record_store, RecordStore)


def test_full_memory_round_trips_exactly(record_store: RecordStore) -> None:
    m = full_memory()
    put(record_store, m)
    got = record_store.get("ns", "full")
    assert got == m
    assert record_store.get_many("ns", ["full"]) == {"full": m}
    assert list(record_store.scan("ns")) == [m]
    assert record_store.find_by_key("ns", m.key or "") == [m]


def test_unknown_ids_are_absent(record_store: RecordStore) -> None:
    a, b = make_memory(id="a"), make_memory(id="b")
    put(record_store, a, b)
    assert record_store.get("ns", "nope") is None
    assert record_store.get_many("ns", ["b", "nope", "a"]) == {"b": b, "a": a}
    assert record_store.get_many("ns", []) == {}


def test_creating_twice_conflicts(record_store: RecordStore) -> None:
    put(record_store, make_memory(id="a", text="first"))
    with pytest.raises(ConflictError):
        put(record_store, make_memory(id="a", text="second"))
    got = record_store.get("ns", "a")
    assert got is not None and got.text == "first"


def test_stale_or_missing_version_conflicts(record_store: RecordStore) -> None:
    v1 = make_memory(id="a")
    put(record_store, v1)
    v2 = v1.evolve(importance=0.9)
    put(record_store, v2)
    with pytest.raises(ConflictError):
        put(record_store, v1.evolve(importance=0.1))  # also version 2: lost the race
    with pytest.raises(ConflictError):
        put(record_store, v2.evolve(version=4))  # skips a version
    with pytest.raises(ConflictError):
        put(record_store, make_memory(id="ghost", version=2))  # update of nothing
    assert record_store.get("ns", "a") == v2
    assert record_store.get("ns", "ghost") is None


def test_a_conflict_anywhere_in_a_batch_applies_nothing(record_store: RecordStore) -> None:
    a = make_memory(id="a", text="anchor memory")
    put(record_store, a)
    before = record_store.count("ns")
    fresh = make_memory(id="fresh", text="xylophone practice on tuesday")
    batch = WriteBatch(
        "ns",
        puts=(fresh, a.evolve(importance=0.9), make_memory(id="a", text="clash")),
        edges=(Edge("fresh", "a", S, 0.5),),
    )
    with pytest.raises(ConflictError):
        record_store.commit(batch)
    assert record_store.get("ns", "fresh") is None
    assert record_store.get("ns", "a") == a
    assert record_store.edges("ns", ["a", "fresh"]) == []
    assert record_store.count("ns") == before
    if isinstance(record_store, LexicalIndex):
        assert search_ids(record_store, "xylophone") == []


def test_a_batch_writes_only_its_namespace(record_store: RecordStore) -> None:
    with pytest.raises(InvalidInput):
        record_store.commit(WriteBatch("ns", (make_memory(namespace="other"),)))
    assert record_store.namespaces() == []


def test_one_active_free_text_memory_per_content_hash(record_store: RecordStore) -> None:
    first = make_memory(id="a", text="I like green tea.")
    put(record_store, first)
    with pytest.raises(ConflictError):  # same normalised text
        put(record_store, make_memory(id="b", text="i like  GREEN tea"))
    assert record_store.get("ns", "b") is None
    # Keyed facts and inactive memories are outside the rule.
    put(record_store, make_memory(id="fact", text="I like green tea", key="episodic|i|like"))
    put(record_store, make_memory(id="old", text="I like green tea", status=Status.ARCHIVED))
    # Retiring the holder and adding the replacement in one batch works in either order.
    put(record_store, make_memory(id="c", text="I like green tea"), first.evolve(
        status=Status.SUPERSEDED, superseded_by="c"))
    found = record_store.find_by_hash("ns", content_hash("i like green tea"))
    assert found is not None and found.id == "c"


def test_one_active_version_per_fact_key(record_store: RecordStore) -> None:
    key = fact_key(Kind.SEMANTIC, "maya", "lives in")
    porto = make_memory(id="porto", text="maya lives in Porto", key=key)
    put(record_store, porto)
    with pytest.raises(ConflictError):  # a second writer creating the "first" unit
        put(record_store, make_memory(id="lisbon", text="maya lives in Lisbon", key=key))
    assert record_store.get("ns", "lisbon") is None
    # Superseding in one batch (new version + retired old one) is the legal path.
    lisbon = make_memory(id="lisbon", text="maya lives in Lisbon", key=key)
    put(record_store, lisbon, porto.evolve(status=Status.SUPERSEDED, superseded_by="lisbon"))
    assert [m.id for m in record_store.find_by_key("ns", key) if m.is_active] == ["lisbon"]
    # Another namespace has its own facts.
    other = make_memory(id="porto2", namespace="other", text="maya lives in Porto", key=key)
    record_store.commit(WriteBatch("other", (other,)))


def test_restore_writes_as_given(record_store: RecordStore) -> None:
    a = make_memory(id="a")
    put(record_store, a)
    restored = a.evolve(version=7, importance=0.2)
    record_store.commit(WriteBatch("ns", (restored, make_memory(id="b", version=3)), restore=True))
    assert record_store.get("ns", "a") == restored
    b = record_store.get("ns", "b")
    assert b is not None and b.version == 3


# --- edges --------------------------------------------------------------------------------


def test_edges_upsert_keeps_max_weight_and_can_be_removed(record_store: RecordStore) -> None:
    a, b, c, d = (make_memory(id=i) for i in "abcd")
    put(record_store, a, b, c, d, edges=(Edge("a", "b", S, 0.5), Edge("c", "a", EdgeType.CAUSAL)))
    record_store.commit(WriteBatch("ns", edges=(Edge("a", "b", S, 0.3),)))
    assert {e.weight for e in record_store.edges("ns", ["b"])} == {0.5}
    record_store.commit(WriteBatch("ns", edges=(Edge("a", "b", S, 0.9),)))
    assert record_store.edges("ns", ["b"]) == [Edge("a", "b", S, 0.9)]
    # Same pair, other type: a separate edge.
    record_store.commit(WriteBatch("ns", edges=(Edge("a", "b", EdgeType.TEMPORAL, 0.1),)))

    edges_of_a = record_store.edges("ns", ["a"])
    assert sorted(edges_of_a, key=lambda e: (e.src, e.dst, e.type)) == [
        Edge("a", "b", S, 0.9),
        Edge("a", "b", EdgeType.TEMPORAL, 0.1),
        Edge("c", "a", EdgeType.CAUSAL, 1.0),
    ]
    # An edge between two requested ids is reported once.
    assert len(record_store.edges("ns", ["a", "b", "c"])) == 3
    assert record_store.edges("ns", ["d"]) == []
    degrees = record_store.degrees("ns", ["a", "b", "c", "d"])
    assert {i: degrees.get(i, 0) for i in "abcd"} == {"a": 3, "b": 2, "c": 1, "d": 0}

    record_store.commit(WriteBatch("ns", remove_edges=(("a", "b", S),)))
    assert sorted(e.type for e in record_store.edges("ns", ["b"])) == [EdgeType.TEMPORAL]
    assert record_store.count("ns")["edges"] == 2


# --- lookups ------------------------------------------------------------------------------


def test_find_by_hash_sees_only_active_free_text(record_store: RecordStore) -> None:
    put(
        record_store,
        make_memory(id="old", text="Berlin is cold", status=Status.SUPERSEDED),
        make_memory(id="fact", text="Paris is lovely", key="semantic|paris|is"),
    )
    assert record_store.find_by_hash("ns", content_hash("Berlin is cold")) is None
    assert record_store.find_by_hash("ns", content_hash("Paris is lovely")) is None
    put(record_store, make_memory(id="now", text="Berlin is cold"))
    found = record_store.find_by_hash("ns", content_hash("berlin IS cold."))
    assert found is not None and found.id == "now"


def test_find_by_key_returns_every_version_oldest_first(record_store: RecordStore) -> None:
    key = fact_key(Kind.SEMANTIC, "alice", "lives in")
    common: dict[str, Any] = {"kind": Kind.SEMANTIC, "tier": Tier.UNIT, "key": key}
    newest = make_memory(id="v3", text="Alice lives in Rome", valid_from=T0 + timedelta(days=20),
                         **common)
    oldest = make_memory(id="v1", text="Alice lives in Oslo", status=Status.SUPERSEDED,
                         valid_from=T0, superseded_by="v2", **common)
    middle = make_memory(id="v2", text="Alice lives in Lima", status=Status.SUPERSEDED,
                         valid_from=T0 + timedelta(days=10), superseded_by="v3", **common)
    put(record_store, newest)  # stored out of order on purpose
    put(record_store, oldest, middle)
    put(record_store, make_memory(id="other", key=fact_key(Kind.SEMANTIC, "bob", "lives in")))
    assert [m.id for m in record_store.find_by_key("ns", key)] == ["v1", "v2", "v3"]
    assert record_store.find_by_key("ns", "semantic|nobody|is") == []


def test_an_update_is_found_by_each_looked_up_value_it_changes(
    record_store: RecordStore,
) -> None:
    """A store may write only the lookup columns an update changes (SQLite does, since
    naming an unchanged indexed column rewrites its index entry): each lookup must then
    follow a change of its own value, and keep finding what did not change."""
    key = fact_key(Kind.SEMANTIC, "alice", "lives in")
    other = fact_key(Kind.SEMANTIC, "alice", "works at")
    m = make_memory(id="m", text="Alice lives in Oslo", kind=Kind.SEMANTIC, key=key)
    put(record_store, m)
    m = m.evolve(importance=0.9)  # the record alone: every lookup still finds it
    put(record_store, m)
    assert [x.id for x in record_store.find_by_key("ns", key)] == ["m"]
    m = m.evolve(text="Alice lives in Rome")
    put(record_store, m)
    free = make_memory(id="free", text="Bob likes tea")
    put(record_store, free)
    free = free.evolve(text="Bob likes coffee")
    put(record_store, free)
    assert record_store.find_by_hash("ns", content_hash("Bob likes tea")) is None
    found = record_store.find_by_hash("ns", content_hash("Bob likes coffee"))
    assert found is not None and found.id == "free"
    m = m.evolve(key=other, valid_from=T0 + timedelta(days=3))
    put(record_store, m)
    assert record_store.find_by_key("ns", key) == []
    assert [x.id for x in record_store.find_by_key("ns", other)] == ["m"]
    created = getattr(record_store, "created_times", None)
    if created is not None:  # a store that reads creation times from a column
        free = free.evolve(created_at=T0 + timedelta(days=9))
        put(record_store, free)
        assert created("ns", ["free"]) == {"free": T0 + timedelta(days=9)}
    put(record_store, free.evolve(status=Status.SUPERSEDED, tier=Tier.UNIT))
    assert record_store.find_by_hash("ns", content_hash("Bob likes coffee")) is None
    counts = record_store.count("ns")
    assert counts.get("status:superseded") == 1 and counts.get("status:active") == 1


def test_find_by_entity_newest_active_first_with_limit(record_store: RecordStore) -> None:
    def mem(i: str, hours: int, **kw: Any) -> Memory:
        return make_memory(id=i, entities={"alice", "x"}, created_at=T0 + timedelta(hours=hours),
                           **kw)

    put(record_store, mem("h2", 2), mem("h1", 1), mem("h3", 3),
        mem("gone", 4, status=Status.CONSOLIDATED), make_memory(id="bob", entities={"bob"}))
    put(record_store, mem("elsewhere", 5, namespace="other"))
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 2)] == ["h3", "h2"]
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 10)] == ["h3", "h2", "h1"]
    assert record_store.find_by_entity("ns", "nobody", 10) == []
    # Entities follow the record: a new version without the entity is no longer found.
    h3 = record_store.get("ns", "h3")
    assert h3 is not None
    put(record_store, h3.evolve(entities=frozenset({"x"})))
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 10)] == ["h2", "h1"]
    # A change of status alone keeps the memory's entities; a new time reorders it.
    h2 = record_store.get("ns", "h2")
    assert h2 is not None
    put(record_store, h2.evolve(status=Status.CONSOLIDATED))
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 10)] == ["h1"]
    h2 = record_store.get("ns", "h2")
    assert h2 is not None
    put(record_store, h2.evolve(status=Status.ACTIVE))
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 10)] == ["h2", "h1"]
    h1 = record_store.get("ns", "h1")
    assert h1 is not None
    put(record_store, h1.evolve(created_at=T0 + timedelta(hours=9),
                                valid_from=T0 + timedelta(hours=9)))
    assert [m.id for m in record_store.find_by_entity("ns", "alice", 10)] == ["h1", "h2"]


def test_find_by_entity_breaks_equal_times_by_insertion_order(record_store: RecordStore) -> None:
    """Memories written at one time (a bulk import, a fixed clock) share an entity: the
    newest by insertion order come first, the limit holds across the group of equal
    times, and one written later still comes first."""
    ids = [f"t{i:04d}" for i in range(1500)]  # more than one ZMSCORE chunk of ties
    batch = [make_memory(id=i, entities={"maya"}, created_at=T0) for i in reversed(ids)]
    for part in range(0, len(batch), 500):  # inserted t1499 first, t0000 last
        put(record_store, *batch[part : part + 500])
    put(record_store, make_memory(id="later", entities={"maya"},
                                  created_at=T0 + timedelta(hours=1)))
    put(record_store, make_memory(id="early", entities={"maya"},
                                  created_at=T0 - timedelta(hours=1)))
    assert [m.id for m in record_store.find_by_entity("ns", "maya", 4)] == [
        "later", "t0000", "t0001", "t0002"]
    assert [m.id for m in record_store.find_by_entity("ns", "maya", 1)] == ["later"]
    everyone = [m.id for m in record_store.find_by_entity("ns", "maya", 2000)]
    assert everyone == ["later", *ids, "early"]


def test_find_by_entity_finds_equal_times_behind_many_newer_memories(
    record_store: RecordStore,
) -> None:
    """A group written at one time long ago, thousands of memories since without its
    entity, and two more of the group written late: the newest of the group by
    insertion order still come first, whether they were written late or long ago."""
    old = [make_memory(id=f"t{i:04d}", entities={"maya"}, created_at=T0) for i in range(1200)]
    for part in range(0, len(old), 400):
        put(record_store, *old[part : part + 400])
    newer = [make_memory(id=f"n{i:04d}", entities={"other"}, created_at=T0 + timedelta(days=1))
             for i in range(2500)]
    for part in range(0, len(newer), 500):
        put(record_store, *newer[part : part + 500])
    assert [m.id for m in record_store.find_by_entity("ns", "maya", 3)] == [
        "t1199", "t1198", "t1197"]
    put(record_store, make_memory(id="late1", entities={"maya"}, created_at=T0))
    put(record_store, make_memory(id="late2", entities={"maya"}, created_at=T0))
    assert [m.id for m in record_store.find_by_entity("ns", "maya", 2)] == ["late2", "late1"]
    assert [m.id for m in record_store.find_by_entity("ns", "maya", 4)] == [
        "late2", "late1", "t1199", "t1198"]


def test_scan_filters_and_pages_in_a_stable_order(record_store: RecordStore) -> None:
    statuses = list(Status)
    tiers = list(Tier)
    memories = [
        make_memory(id=f"s{i:04d}", status=statuses[i % 4], tier=tiers[(i // 4) % 4])
        for i in range(1234)
    ]
    for i in range(0, len(memories), 300):
        put(record_store, *memories[i : i + 300])
    put(record_store, make_memory(namespace="other"))

    first = [m.id for m in record_store.scan("ns", batch_size=100)]
    assert len(first) == 1234 and set(first) == {m.id for m in memories}
    assert [m.id for m in record_store.scan("ns", batch_size=7)] == first
    # Updates do not reorder the scan.
    s0 = record_store.get("ns", "s0000")
    assert s0 is not None
    put(record_store, s0.evolve(importance=0.99))
    assert [m.id for m in record_store.scan("ns", batch_size=100)] == first

    active = list(record_store.scan("ns", statuses=[Status.ACTIVE], batch_size=50))
    assert {m.id for m in active} == {m.id for m in memories if m.status is Status.ACTIVE}
    retired = list(
        record_store.scan("ns", statuses=[Status.ARCHIVED, Status.SUPERSEDED], tiers=[Tier.UNIT])
    )
    expected = {
        m.id for m in memories
        if m.status in (Status.ARCHIVED, Status.SUPERSEDED) and m.tier is Tier.UNIT
    }
    assert {m.id for m in retired} == expected and len(retired) == len(expected)
    assert list(record_store.scan("nobody")) == []


def test_count_keys(record_store: RecordStore) -> None:
    put(
        record_store,
        make_memory(id="a", tier=Tier.TRACE),
        make_memory(id="b", tier=Tier.CRYSTAL),
        make_memory(id="c", tier=Tier.CRYSTAL, status=Status.SUPERSEDED),
        make_memory(id="d", tier=Tier.SYNTHESIS, status=Status.ARCHIVED),
        edges=(Edge("a", "b", S), Edge("b", "c", S)),
    )
    put(record_store, make_memory(namespace="other"))
    counts = record_store.count("ns")
    expected = {f"status:{s.value}": 0 for s in Status} | {f"tier:{t.value}": 0 for t in Tier}
    expected |= {
        "status:active": 2, "status:superseded": 1, "status:archived": 1,
        "tier:trace": 1, "tier:crystal": 1,  # active only
        "total": 4, "edges": 2,
    }
    assert counts == expected
    empty = record_store.count("nobody")
    assert empty["total"] == 0 and empty["edges"] == 0 and empty["status:active"] == 0


def test_counts_follow_every_kind_of_write(record_store: RecordStore) -> None:
    """Counts by status and by active tier equal what the records say after inserts,
    status and tier changes, a refused batch, deletions and a whole namespace going."""

    def truth(ns: str) -> dict[str, int]:
        out = {f"status:{s.value}": 0 for s in Status} | {f"tier:{t.value}": 0 for t in Tier}
        mems = list(record_store.scan(ns, statuses=None))
        for m in mems:
            out[f"status:{m.status.value}"] += 1
            if m.status is Status.ACTIVE:
                out[f"tier:{m.tier.value}"] += 1
        out["total"] = len(mems)

        ids = [m.id for m in mems]
        out["edges"] = len(record_store.edges(ns, ids)) if ids else 0
        return out

    def counted(ns: str) -> dict[str, int]:
        return record_store.count(ns)

    mems = [make_memory(id=f"c{i}") for i in range(6)]
    put(record_store, *mems, edges=(Edge("c0", "c1", S), Edge("c1", "c2", S),
                                   Edge("c2", "c3", S, 0.5), Edge("c2", "c3", S, 0.9)))
    assert counted("ns")["edges"] == 3
    # an edge written again keeps one row (the higher weight); removing one that is not
    # there changes nothing
    record_store.commit(WriteBatch("ns", (), (Edge("c2", "c3", S, 0.7), Edge("c3", "c4", S)),
                                   (("c0", "c1", S.value), ("c4", "c5", S.value))))
    assert counted("ns")["edges"] == 3
    assert [e.weight for e in record_store.edges("ns", ["c3"]) if e.src == "c2"] == [0.9]
    lone = make_memory(namespace="other")
    put(record_store, lone)
    assert counted("ns") == truth("ns") and counted("ns")["total"] == 6
    a, b, c = (record_store.get("ns", i) for i in ("c0", "c1", "c2"))
    assert a is not None and b is not None and c is not None
    put(record_store, a.evolve(tier=Tier.UNIT), b.evolve(status=Status.SUPERSEDED),
        c.evolve(status=Status.ARCHIVED, tier=Tier.CRYSTAL))
    assert counted("ns") == truth("ns")
    assert counted("ns")["tier:unit"] == 1 and counted("ns")["status:superseded"] == 1
    stale = mems[3]  # version 1 was read before: the batch is refused whole
    fresh = record_store.get("ns", "c3")
    assert fresh is not None
    put(record_store, fresh.evolve(status=Status.SUPERSEDED))
    with pytest.raises(ConflictError):
        put(record_store, mems[4].evolve(status=Status.ARCHIVED), stale.evolve(tier=Tier.UNIT))
    assert counted("ns") == truth("ns")
    assert record_store.delete("ns", ["c1", "c4", "nobody"]) == 2
    assert counted("ns") == truth("ns") and counted("ns")["total"] == 4
    assert counted("ns")["edges"] == 1  # c2 -> c3 is left; the others touched c1 or c4
    assert counted("other")["total"] == 1
    record_store.delete_namespace("ns")
    assert counted("ns") == truth("ns") and counted("ns")["total"] == 0
    assert counted("other") == truth("other")
    assert record_store.namespaces() == ["other"]
    # a namespace whose last memory is deleted holds nothing: it is listed no more
    record_store.delete("other", [lone.id])
    assert record_store.namespaces() == [] and counted("other")["total"] == 0


# --- touch --------------------------------------------------------------------------------


def test_touch_reinforces_exactly_and_bounds_the_window(record_store: RecordStore) -> None:
    a = make_memory(id="a")
    b = make_memory(id="b")
    put(record_store, a, b)
    times = [T0 + timedelta(days=d) for d in range(1, 6)]
    for t in times:
        record_store.touch("ns", ["a", "unknown"], t, 3)
    got = record_store.get("ns", "a")
    assert got is not None
    assert got.access_count == 5
    assert got.last_accessed_at == times[-1]
    assert got.recent_accesses == tuple(times[-3:])
    assert got.version == 6
    assert record_store.get("ns", "b") == b
    assert record_store.get("ns", "unknown") is None
    # A touched memory still takes CAS writes from its new version.
    put(record_store, got.evolve(importance=0.8))


def test_concurrent_touches_never_lose_a_count(record_store: RecordStore) -> None:
    put(record_store, make_memory(id="hot"))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(50):
                record_store.touch("ns", ["hot"], T0 + timedelta(minutes=n * 100 + i), 32)
        except BaseException as e:  # surfaced below; a thread's exception is otherwise lost
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    hot = record_store.get("ns", "hot")
    assert hot is not None
    assert hot.access_count == 400 and hot.version == 401
    assert len(hot.recent_accesses) == 32


# --- deletion -----------------------------------------------------------------------------


def test_delete_removes_memories_edges_and_lexical_entries(record_store: RecordStore) -> None:
    a = make_memory(id="a", text="private medical appointment", entities={"clinic"})
    b, c = make_memory(id="b"), make_memory(id="c")
    put(record_store, a, b, c, edges=(Edge("a", "b", S), Edge("c", "a", S), Edge("b", "c", S)))
    put(record_store, make_memory(id="a", namespace="other", text="private medical appointment"))

    assert record_store.delete("ns", ["a", "never-existed"]) == 1
    assert record_store.get("ns", "a") is None
    assert record_store.edges("ns", ["a"]) == []
    assert record_store.edges("ns", ["b", "c"]) == [Edge("b", "c", S)]
    assert record_store.degrees("ns", ["b"]).get("b") == 1
    assert record_store.find_by_entity("ns", "clinic", 5) == []
    assert record_store.find_by_hash("ns", content_hash(a.text)) is None
    assert record_store.count("ns")["total"] == 2
    assert record_store.get("other", "a") is not None  # other namespace untouched
    if isinstance(record_store, LexicalIndex):
        assert search_ids(record_store, "medical appointment") == []
        assert search_ids(record_store, "medical appointment", ns="other") == ["a"]
    # The id is free again.
    put(record_store, make_memory(id="a"))
    assert record_store.delete("ns", []) == 0


def test_delete_namespace(record_store: RecordStore) -> None:
    put(record_store, make_memory(id="a", text="tenant secret"), make_memory(id="b"),
        edges=(Edge("a", "b", S),))
    put(record_store, make_memory(id="a", namespace="keep", text="tenant secret"))
    assert record_store.namespaces() == ["keep", "ns"]
    assert record_store.delete_namespace("ns") == 2
    assert record_store.namespaces() == ["keep"]
    assert list(record_store.scan("ns")) == []
    assert record_store.count("ns")["edges"] == 0
    assert record_store.get("keep", "a") is not None
    if isinstance(record_store, LexicalIndex):
        assert search_ids(record_store, "tenant secret") == []
        assert search_ids(record_store, "tenant secret", ns="keep") == ["a"]
    assert record_store.delete_namespace("ns") == 0


# --- namespaces ---------------------------------------------------------------------------


def test_namespaces_are_isolated(record_store: RecordStore) -> None:
    key = fact_key(Kind.SEMANTIC, "user", "drinks")
    one = make_memory(id="same", namespace="user/one", text="drinks espresso daily",
                      entities={"espresso"}, key=key)
    two = make_memory(id="same", namespace="user/two", text="drinks espresso daily",
                      entities={"espresso"}, key=key, importance=0.9)
    put(record_store, one, edges=(Edge("same", "x", S),))
    put(record_store, two)
    assert record_store.get("user/one", "same") == one
    assert record_store.get("user/two", "same") == two
    assert [m.namespace for m in record_store.scan("user/one")] == ["user/one"]
    assert [m.namespace for m in record_store.find_by_key("user/two", key)] == ["user/two"]
    assert [m.namespace for m in record_store.find_by_entity("user/two", "espresso", 5)] == [
        "user/two"
    ]
    assert record_store.edges("user/two", ["same"]) == []
    assert record_store.count("user/two")["edges"] == 0
    assert record_store.namespaces() == ["user/one", "user/two"]

    # An update in one namespace leaves the other alone.
    put(record_store, two.evolve(status=Status.ARCHIVED))
    assert record_store.get("user/one", "same") == one
    if isinstance(record_store, LexicalIndex):
        assert search_ids(record_store, "espresso", ns="user/one") == ["same"]
        assert search_ids(record_store, "espresso", ns="user/two") == []


# --- lexical search -----------------------------------------------------------------------


def test_search_ranks_rarer_terms_first(lexical_store: RecordStore) -> None:
    put(
        lexical_store,
        make_memory(id="cat", text="the cat sat on the mat"),
        make_memory(id="dog", text="the dog sat on the log"),
        make_memory(id="zebra", text="a zebra sat near the river"),
        make_memory(id="none", text="completely unrelated words here"),
    )
    hits = cast(LexicalIndex, lexical_store).search("ns", "sat zebra", 10)
    assert hits[0].id == "zebra"
    assert {h.id for h in hits} == {"cat", "dog", "zebra"}
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].score > 0


def test_search_sees_only_active_memories_and_follows_updates(lexical_store: RecordStore) -> None:
    old = make_memory(id="old", text="my favourite colour is blue")
    put(lexical_store, old, make_memory(id="arch", text="blue whales", status=Status.ARCHIVED))
    assert search_ids(lexical_store, "blue") == ["old"]
    put(lexical_store, old.evolve(status=Status.SUPERSEDED, superseded_by="new"),
        make_memory(id="new", text="my favourite colour is green"))
    assert search_ids(lexical_store, "blue") == []
    assert search_ids(lexical_store, "favourite colour") == ["new"]
    # Text of a new version replaces the old text in the index.
    new = lexical_store.get("ns", "new")
    assert new is not None
    put(lexical_store, new.evolve(text="my favourite colour is purple"))
    assert search_ids(lexical_store, "green") == []
    assert search_ids(lexical_store, "purple") == ["new"]
    # Touching does not disturb the index.
    lexical_store.touch("ns", ["new"], T0 + timedelta(days=1), 8)
    assert search_ids(lexical_store, "purple") == ["new"]


def test_search_honours_k(lexical_store: RecordStore) -> None:
    put(lexical_store, *(make_memory(text=f"weather report number {i}") for i in range(30)))
    assert len(search_ids(lexical_store, "weather", k=5)) == 5
    assert len(search_ids(lexical_store, "weather", k=100)) == 30
    assert search_ids(lexical_store, "weather", k=0) == []


@pytest.mark.parametrize(
    "query",
    ['"', '""', "*", "tea*", "AND", "tea AND", "OR tea", "NOT tea", "NEAR(tea coffee",
     "-tea", "tea -coffee", "col:tea", "^tea", "+tea", "(tea", "tea)", "{tea}", "'tea'",
     "tea's", "café", "   ", "", "🙂", "tea\x00coffee", "a" * 5000],
)
def test_search_survives_any_query_text(lexical_store: RecordStore, query: str) -> None:
    put(lexical_store, make_memory(id="t", text="green tea and coffee"))
    ids = search_ids(lexical_store, query)
    if "tea" in query:
        assert ids == ["t"]
    if not query.strip() or query in ('"', '""', "*", "🙂"):
        assert ids == []


def test_search_of_an_empty_or_unknown_namespace(lexical_store: RecordStore) -> None:
    assert search_ids(lexical_store, "anything") == []
    put(lexical_store, make_memory(text="something"))
    assert search_ids(lexical_store, "something", ns="nobody") == []


# --- lock, journal, meta ------------------------------------------------------------------


def test_lock_is_exclusive_and_released(record_store: RecordStore) -> None:
    with record_store.lock("ns") as token:
        assert isinstance(token, str) and token
        with pytest.raises(LockBusy), record_store.lock("ns"):
            pass
        with record_store.lock("other"):  # another namespace is independent
            pass
    with record_store.lock("ns") as again:
        assert again != token


def test_expired_lock_is_taken_over_and_only_its_holder_releases(
    record_store: RecordStore,
) -> None:
    stale = record_store.lock("ns", ttl_seconds=0.0)
    stale.__enter__()  # a holder that crashed or overran its lease
    taker = record_store.lock("ns", ttl_seconds=60.0)
    taker.__enter__()
    stale.__exit__(None, None, None)  # the late release must not free the new holder's lock
    with pytest.raises(LockBusy), record_store.lock("ns"):
        pass
    taker.__exit__(None, None, None)
    with record_store.lock("ns"):
        pass


def test_lock_is_released_when_the_body_raises(record_store: RecordStore) -> None:
    with pytest.raises(RuntimeError), record_store.lock("ns"):
        raise RuntimeError("maintenance failed")
    with record_store.lock("ns"):
        pass


def test_journal_round_trip(record_store: RecordStore) -> None:
    assert record_store.journal_get("ns", "fp") is None
    entry = {"step": "synthesized", "members": ["a", "b"], "node": "s1", "n": 2, "ok": True}
    record_store.journal_put("ns", "fp", entry)
    assert dict(record_store.journal_get("ns", "fp") or {}) == entry
    record_store.journal_put("ns", "fp", {**entry, "step": "done"})
    assert (record_store.journal_get("ns", "fp") or {})["step"] == "done"
    assert record_store.journal_get("other", "fp") is None


def test_journal_delete_drops_only_the_given_entries_of_the_namespace(
    record_store: RecordStore,
) -> None:
    for fp in ("a", "b", "c"):
        record_store.journal_put("ns", fp, {"fp": fp})
    record_store.journal_put("other", "a", {"fp": "a"})
    record_store.journal_delete("ns", ["a", "c", "never-written"])
    assert record_store.journal_get("ns", "a") is None
    assert record_store.journal_get("ns", "c") is None
    assert dict(record_store.journal_get("ns", "b") or {}) == {"fp": "b"}
    assert dict(record_store.journal_get("other", "a") or {}) == {"fp": "a"}
    record_store.journal_delete("ns", [])  # nothing to drop is fine
    many = [f"fp-{i}" for i in range(1200)]  # more than one statement's or call's worth
    for fp in many:
        record_store.journal_put("ns", fp, {})
    record_store.journal_delete("ns", many)
    assert all(record_store.journal_get("ns", fp) is None for fp in many[::97])


def test_meta_round_trip(record_store: RecordStore) -> None:
    assert record_store.get_meta("embedder") is None
    record_store.set_meta("embedder", "all-MiniLM-L6-v2/384")
    record_store.set_meta("embedder", "bge-small/384")
    assert record_store.get_meta("embedder") == "bge-small/384"



def test_the_memories_written_around_one_are_its_neighbours_in_write_order(
    record_store: RecordStore,
) -> None:
    store = cast(Any, record_store)
    for i in range(1, 6):
        put(record_store, make_memory(id=f"t{i}"))
        put(record_store, make_memory(id=f"x{i}", namespace="other"))  # interleaved
    t3 = record_store.get("ns", "t3")
    assert t3 is not None
    put(record_store, t3.evolve(status=Status.CONSOLIDATED))  # any status; its place kept
    t2 = record_store.get("ns", "t2")
    assert t2 is not None
    put(record_store, t2.evolve(text="memory two, told again"))  # a new version keeps it too
    assert store.written_around("ns", "t3", 2) == ["t2", "t1", "t4", "t5"]  # nearest first
    assert store.written_around("ns", "t3", 1) == ["t2", "t4"]
    assert store.written_around("ns", "t1", 2) == ["t2", "t3"]
    assert store.written_around("ns", "t5", 3) == ["t4", "t3", "t2"]
    assert store.written_around("other", "x2", 1) == ["x1", "x3"]
    assert store.written_around("ns", "x2", 1) == []  # another namespace's memory
    assert store.written_around("ns", "nobody", 2) == []
    assert store.written_around("ns", "t3", 0) == []
