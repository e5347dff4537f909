"""Namespace isolation on every read path of every RecordStore.

Run against each implementation in tests/contract/conftest.py, so a store added later
inherits the checks. Sibling namespaces (`user/one`, `user/two`) do not catch a store that
matches by prefix (`LIKE ns || '%'`, a Redis `SCAN user/one*`, a Chroma name prefix); a
prefix pair does, in both directions. Names that differ only in case or in a character
that pattern matching treats specially (`.`, `_`) catch case-folding and wildcard matches.
Keys, entities and texts that only look alike (NFC vs NFD, Latin vs Cyrillic) must stay
distinct: a store that folds them hands one user's fact to another lookup.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from reverie.core.errors import InvalidNamespace
from reverie.core.models import Edge, EdgeType, Kind, Memory, Status, fact_key
from reverie.core.ports import (
    KeepsEmbeddings,
    KnowsCreatedTimes,
    LexicalIndex,
    ReadsForRecall,
    RecordStore,
    WriteBatch,
)
from reverie.core.text import content_hash
from tests.contract.conftest import T0, make_memory

PAIRS = [
    pytest.param("user/one", "user/one/x", id="prefix-then-child"),
    pytest.param("user/one/x", "user/one", id="child-then-prefix"),
    pytest.param("user/one", "user/onex", id="prefix-without-slash"),
    pytest.param("user/one", "User/one", id="case"),
    pytest.param("user.one", "user-one", id="dot-vs-dash"),
    pytest.param("a", "ab", id="one-letter-prefix"),
    pytest.param("user_1", "userx1", id="underscore-wildcard"),
]

KEY = fact_key(Kind.SEMANTIC, "user", "drinks")
TEXT = "drinks espresso daily"


def _records(ns: str, tag: str) -> tuple[Memory, Memory, Memory]:
    """The same ids, key, text and entity in every namespace; the tag tells them apart."""
    free = make_memory(id="free", namespace=ns, text=f"{TEXT}", entities={"espresso"},
                       metadata={"tag": tag})
    fact = make_memory(id="fact", namespace=ns, text=f"user drinks espresso {tag}",
                       kind=Kind.SEMANTIC, key=KEY, entities={"espresso"},
                       valid_from=T0, metadata={"tag": tag})
    own = make_memory(id=f"own-{tag}", namespace=ns, text=f"zebra {tag} only here",
                      key=fact_key(Kind.SEMANTIC, "user", f"owns {tag}"), kind=Kind.SEMANTIC,
                      entities={f"thing-{tag}"}, metadata={"tag": tag})
    return free, fact, own


def _fill(store: RecordStore, ns: str, tag: str) -> tuple[Memory, Memory, Memory]:
    free, fact, own = _records(ns, tag)
    store.commit(WriteBatch(ns, (free, fact, own), (Edge("free", "fact", EdgeType.ENTITY),
                                                     Edge("fact", f"own-{tag}", EdgeType.CAUSAL))))
    if isinstance(store, KeepsEmbeddings):
        store.put_embeddings(ns, {"free": np.full(4, 1.0 if tag == "A" else -1.0, np.float32)})
    store.journal_put(ns, "fp", {"tag": tag})
    return free, fact, own


def _tags(memories: object) -> set[str]:
    return {m.metadata["tag"] for m in memories}  # type: ignore[attr-defined]


def _assert_sees_only(store: RecordStore, ns: str, tag: str, other: str) -> None:
    """Every read path of `ns` returns its own records and nothing of the other's."""
    got = store.get(ns, "free")
    assert got is not None and got.metadata["tag"] == tag
    assert store.get(ns, f"own-{other}") is None
    many = store.get_many(ns, ["free", "fact", f"own-{tag}", f"own-{other}"])
    assert sorted(many) == sorted(["free", "fact", f"own-{tag}"])
    assert _tags(many.values()) == {tag}
    found = store.find_by_hash(ns, content_hash(TEXT))
    assert found is not None and found.metadata["tag"] == tag
    assert store.find_by_hash(ns, content_hash(f"zebra {other} only here")) is None
    versions = store.find_by_key(ns, KEY)
    assert [(m.id, m.metadata["tag"]) for m in versions] == [("fact", tag)]
    assert store.find_by_key(ns, fact_key(Kind.SEMANTIC, "user", f"owns {other}")) == []
    assert _tags(store.find_by_entity(ns, "espresso", 10)) == {tag}
    assert len(store.find_by_entity(ns, "espresso", 10)) == 2
    assert store.find_by_entity(ns, f"thing-{other}", 10) == []
    scanned = list(store.scan(ns))
    assert sorted(m.id for m in scanned) == sorted(["free", "fact", f"own-{tag}"])
    assert _tags(scanned) == {tag}
    counts = store.count(ns)
    assert (counts["total"], counts["edges"]) == (3, 2)
    assert sorted((e.src, e.dst) for e in store.edges(ns, ["fact"])) == [
        ("fact", f"own-{tag}"), ("free", "fact")
    ]
    assert store.edges(ns, [f"own-{other}"]) == []
    degrees = store.degrees(ns, ["free", "fact", f"own-{other}"])
    assert {i: degrees.get(i, 0) for i in ("free", "fact", f"own-{other}")} == {
        "free": 1, "fact": 2, f"own-{other}": 0
    }
    assert dict(store.journal_get(ns, "fp") or {}) == {"tag": tag}
    if isinstance(store, LexicalIndex):
        hits = [h.id for h in store.search(ns, "zebra only here", 10)]
        assert hits == [f"own-{tag}"]
    if isinstance(store, KeepsEmbeddings):
        kept = store.embeddings(ns, ["free", f"own-{other}"])
        assert list(kept) == ["free"]
        assert float(kept["free"][0]) == (1.0 if tag == "A" else -1.0)
    if isinstance(store, ReadsForRecall):
        reads = store.recall_reads(ns, ["free", "fact", f"own-{other}"], embeddings=True,
                                   degrees=True)
        assert sorted(reads.memories) == ["fact", "free"]
        assert _tags(reads.memories.values()) == {tag}
        assert set(reads.embeddings) <= {"free"}
        assert reads.degrees.get(f"own-{other}", 0) == 0
    if isinstance(store, KnowsCreatedTimes):
        times = store.created_times(ns, ["free", f"own-{tag}", f"own-{other}"])
        assert sorted(times) == sorted(["free", f"own-{tag}"])


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_every_read_path_is_isolated(record_store: RecordStore, a: str, b: str) -> None:
    _fill(record_store, a, "A")
    _fill(record_store, b, "B")
    assert sorted(record_store.namespaces()) == sorted([a, b])
    _assert_sees_only(record_store, a, "A", "B")
    _assert_sees_only(record_store, b, "B", "A")


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_writes_and_deletes_stay_in_their_namespace(
    record_store: RecordStore, a: str, b: str
) -> None:
    _fill(record_store, a, "A")
    _, fact_b, _ = _fill(record_store, b, "B")
    record_store.touch(a, ["free", "fact"], T0 + timedelta(days=1), 5)
    assert {m.access_count for m in record_store.get_many(b, ["free", "fact"]).values()} == {0}
    record_store.commit(WriteBatch(a, remove_edges=(("free", "fact", EdgeType.ENTITY),)))
    assert record_store.count(b)["edges"] == 2
    assert record_store.delete(a, ["fact"]) == 1
    assert record_store.get(b, "fact") == fact_b
    assert record_store.count(b)["edges"] == 2
    assert record_store.delete_namespace(a) == 2
    assert record_store.namespaces() == [b]
    _assert_sees_only(record_store, b, "B", "A")
    assert list(record_store.scan(a)) == []
    assert record_store.find_by_key(a, KEY) == []


def test_superseded_versions_stay_in_their_namespace(record_store: RecordStore) -> None:
    """History (every version of a key) is per namespace, both ways of a prefix pair."""
    for ns, n in (("user/one", 2), ("user/one/x", 3)):
        old = None
        for v in range(n):
            m = make_memory(id=f"{ns}-v{v}", namespace=ns, text=f"lives in city {v}",
                            kind=Kind.SEMANTIC, key=KEY, valid_from=T0 + timedelta(days=v))
            batch = [m]
            if old is not None:
                batch.append(old.evolve(status=Status.SUPERSEDED, superseded_by=m.id))
            record_store.commit(WriteBatch(ns, tuple(batch)))
            old = m
    for ns, n in (("user/one", 2), ("user/one/x", 3)):
        versions = record_store.find_by_key(ns, KEY)
        assert [m.id for m in versions] == [f"{ns}-v{v}" for v in range(n)]
        statuses = [m.status for m in versions]
        assert statuses == [Status.SUPERSEDED] * (n - 1) + [Status.ACTIVE]


LOOK_ALIKES = [
    pytest.param("caf\u00e9", "cafe\u0301", id="nfc-vs-nfd"),
    pytest.param("alice", "\u0430lice", id="latin-vs-cyrillic-a"),
]


@pytest.mark.parametrize(("x", "y"), LOOK_ALIKES)
def test_look_alike_keys_and_entities_stay_distinct(
    record_store: RecordStore, x: str, y: str
) -> None:
    kx, ky = fact_key(Kind.SEMANTIC, x, "likes"), fact_key(Kind.SEMANTIC, y, "likes")
    if kx == ky:
        pytest.fail(f"fact_key folds {x!r} and {y!r} together; the store check is moot")
    mx = make_memory(id="x", text=f"{x} likes tea", kind=Kind.SEMANTIC, key=kx, entities={x})
    my = make_memory(id="y", text=f"{y} likes tea", kind=Kind.SEMANTIC, key=ky, entities={y})
    record_store.commit(WriteBatch("ns", (mx, my)))
    assert [m.id for m in record_store.find_by_key("ns", kx)] == ["x"]
    assert [m.id for m in record_store.find_by_key("ns", ky)] == ["y"]
    assert [m.id for m in record_store.find_by_entity("ns", x, 5)] == ["x"]
    assert [m.id for m in record_store.find_by_entity("ns", y, 5)] == ["y"]


@pytest.mark.parametrize("ns", ["user/\u043ene", "us\u0435r/one", "user/one%", "user/*",
                                "user/one/", "user/o%", "User/ONE"])
def test_look_alike_or_pattern_namespaces_never_alias(record_store: RecordStore, ns: str) -> None:
    """A namespace outside the ASCII alphabet, holding a pattern character or differing in
    case is refused or empty on every read: it never reaches another namespace's records."""
    _fill(record_store, "user/one", "A")
    reads = {
        "get": lambda: record_store.get(ns, "free"),
        "get_many": lambda: record_store.get_many(ns, ["free", "fact"]),
        "find_by_key": lambda: record_store.find_by_key(ns, KEY),
        "find_by_hash": lambda: record_store.find_by_hash(ns, content_hash(TEXT)),
        "find_by_entity": lambda: record_store.find_by_entity(ns, "espresso", 5),
        "scan": lambda: list(record_store.scan(ns)),
        "edges": lambda: record_store.edges(ns, ["free", "fact"]),
    }
    if isinstance(record_store, LexicalIndex):
        lexical = record_store
        reads["search"] = lambda: lexical.search(ns, "espresso", 5)
    for name, read in reads.items():
        try:
            got = read()
        except InvalidNamespace:
            continue
        assert not got, f"{name} of {ns!r} returned {got!r}"
