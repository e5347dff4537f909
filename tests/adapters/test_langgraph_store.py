"""ReverieStore against LangGraph's own expectations for a store.

The behavioural tests are parametrised over ReverieStore (real SQLite file, embedded
Chroma, the real MiniLM model) and LangGraph's InMemoryStore with an embedding index on
the same model, as the reference: where both pass, reverie behaves as LangGraph users
expect. The expectations are ported from LangGraph's store tests (batch order, namespace
listing with prefix/suffix/wildcards/max_depth/pagination, filters with operators, vector
search with filters and pagination, per-put index fields, index=False). Ordering of a
search without a query is store-defined (InMemoryStore: insertion; reverie: newest
update first), so those tests compare sets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from reverie.adapters.langgraph.store import (
    MAX_NAMESPACE_CHARS,
    ReverieStore,
    decode_namespace,
    encode_namespace,
)
from reverie.core import InvalidInput, InvalidNamespace, Status
from reverie.core.engine import MemoryEngine
from reverie.integrations.embedders import LocalEmbedder
from tests.adapters.langchain_support import T0, InFlight, clock, real_engine

pytestmark = pytest.mark.slow


class MiniLM(Embeddings):
    def __init__(self) -> None:
        self.inner = LocalEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = real_engine(tmp_path / "home")
    yield e
    e.close()


@pytest.fixture(params=["reverie", "langgraph-inmemory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    index = {"dims": 384, "fields": ["text"]}
    if request.param == "reverie":
        e = real_engine(tmp_path / "home")
        yield ReverieStore(e, index=index)
        e.close()
    else:
        yield InMemoryStore(index={**index, "embed": MiniLM()})  # type: ignore[typeddict-item]


def keys(items: list) -> set[str]:  # type: ignore[type-arg]
    return {i.key for i in items}


# ---------------------------------------------------------------- basics


def test_put_get_update_delete(store: BaseStore) -> None:
    ns = ("users", "alice")
    store.put(ns, "prefs", {"text": "likes dark mode", "theme": "dark"})
    item = store.get(ns, "prefs")
    assert item is not None
    assert item.value == {"text": "likes dark mode", "theme": "dark"}
    assert item.key == "prefs" and item.namespace == ns
    assert item.updated_at >= item.created_at

    store.put(ns, "prefs", {"text": "likes light mode", "theme": "light"})
    item = store.get(ns, "prefs")
    assert item is not None and item.value["theme"] == "light"
    assert len(store.search(ns)) == 1  # an update is not a second item

    store.delete(ns, "prefs")
    assert store.get(ns, "prefs") is None
    assert store.search(ns) == []
    assert store.get(("users", "bob"), "prefs") is None


def test_batch_order_reads_see_the_store_before_the_batch(store: BaseStore) -> None:
    store.put(("test", "foo"), "key1", {"text": "first", "data": "value1"})
    store.put(("test", "bar"), "key2", {"text": "second", "data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key3", {"text": "third", "data": "value3"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test", "bar"), "key3"),
        ]
    )
    assert len(results) == 5
    first = results[0]
    assert first is not None and first.value["data"] == "value1"  # type: ignore[union-attr]
    assert results[1] is None
    assert keys(results[2]) == {"key1"}  # type: ignore[arg-type]
    assert set(results[3]) == {("test", "foo"), ("test", "bar")}  # type: ignore[arg-type]
    assert results[4] is None  # the put in this batch is not visible to its reads
    third = store.get(("test", "bar"), "key3")
    assert third is not None and third.value["data"] == "value3"


def test_last_put_of_a_key_in_a_batch_wins(store: BaseStore) -> None:
    store.batch(
        [
            PutOp(("a",), "k", {"text": "one"}),
            PutOp(("a",), "k", {"text": "two"}),
        ]
    )
    item = store.get(("a",), "k")
    assert item is not None and item.value == {"text": "two"}
    store.batch([PutOp(("a",), "k", {"text": "three"}), PutOp(("a",), "k", None)])
    assert store.get(("a",), "k") is None


# ---------------------------------------------------------------- namespaces


@pytest.fixture
def populated(store: BaseStore) -> BaseStore:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:
        store.put(ns, "key", {"text": "x"})
    return store


def test_list_namespaces_prefix_suffix_wildcards(populated: BaseStore) -> None:
    s = populated
    assert s.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
    ]
    assert s.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert s.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert s.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert s.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f"),
    ]
    assert s.list_namespaces(prefix=("users",)) == [("users", "123"), ("users", "456", "settings")]
    assert s.list_namespaces(prefix=("nope",)) == []


def test_list_namespaces_max_depth_and_pagination(populated: BaseStore) -> None:
    s = populated
    assert s.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f"),
    ]
    assert s.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    everything = s.list_namespaces(limit=100)
    assert len(everything) == 9 and everything == sorted(everything)
    assert s.list_namespaces(limit=3) == everything[:3]
    assert s.list_namespaces(limit=3, offset=3) == everything[3:6]
    assert s.list_namespaces(offset=8) == everything[8:]


def test_list_namespaces_lists_only_namespaces_with_items(store: BaseStore) -> None:
    assert store.list_namespaces() == []
    store.put(("x", "y"), "k", {"text": "t"})
    assert store.list_namespaces(prefix=("x",)) == [("x", "y")]
    assert store.list_namespaces(prefix=("x", "y", "z")) == []


# ---------------------------------------------------------------- search and filters


@pytest.fixture
def catalog(store: BaseStore) -> BaseStore:
    docs = {
        "d1": {"text": "red apples are sweet", "color": "red", "score": 4.5, "size": 10,
               "meta": {"kind": "fruit", "tags": ["a", "b"]}},
        "d2": {"text": "blue whales live in the ocean", "color": "blue", "score": 3.0,
               "size": 200, "meta": {"kind": "animal", "tags": ["c"]}},
        "d3": {"text": "green tea has caffeine", "color": "green", "score": 4.0, "size": 1,
               "meta": {"kind": "drink", "tags": ["a", "b"]}},
        "d4": {"text": "red fire trucks are loud", "color": "red", "score": 2.5, "size": 500,
               "meta": {"kind": "vehicle", "tags": []}},
    }
    for k, v in docs.items():
        store.put(("docs", "shelf"), k, v)
    store.put(("other",), "o1", {"text": "red apples in another shelf", "color": "red"})
    return store


@pytest.mark.parametrize(
    ("filt", "expected"),
    [
        ({"color": "red"}, {"d1", "d4"}),
        ({"color": {"$eq": "red"}}, {"d1", "d4"}),
        ({"color": {"$ne": "red"}}, {"d2", "d3"}),
        ({"score": {"$gt": 4.0}}, {"d1"}),
        ({"score": {"$gte": 4.0}}, {"d1", "d3"}),
        ({"score": {"$lt": 3.0}}, {"d4"}),
        ({"score": {"$lte": 3.0}}, {"d2", "d4"}),
        ({"score": {"$gte": 3.0, "$lt": 4.5}}, {"d2", "d3"}),
        ({"color": "red", "size": {"$gt": 100}}, {"d4"}),
        ({"meta": {"kind": "fruit"}}, {"d1"}),
        ({"meta": {"tags": ["a", "b"]}}, {"d1", "d3"}),
        ({"meta": {"tags": ["b", "a"]}}, set()),
        ({"color": "purple"}, set()),
    ],
)
def test_search_filters_match_langgraph(
    catalog: BaseStore, filt: dict, expected: set[str]  # type: ignore[type-arg]
) -> None:
    assert keys(catalog.search(("docs",), filter=filt, limit=10)) == expected


def test_search_without_query_is_scoped_and_paged(catalog: BaseStore) -> None:
    every = catalog.search(("docs",), limit=10)
    assert keys(every) == {"d1", "d2", "d3", "d4"}
    assert all(i.score is None for i in every)
    assert all(i.namespace == ("docs", "shelf") for i in every)
    pages = catalog.search(("docs",), limit=2) + catalog.search(("docs",), limit=2, offset=2)
    assert [i.key for i in pages] == [i.key for i in every]
    assert keys(catalog.search((), limit=10)) == {"d1", "d2", "d3", "d4", "o1"}
    assert keys(catalog.search(("docs", "shelf", "deeper"), limit=10)) == set()


def test_vector_search_ranks_by_meaning_with_filters_and_pages(catalog: BaseStore) -> None:
    hits = catalog.search(("docs",), query="which drink contains caffeine?", limit=4)
    assert hits[0].key == "d3"
    assert all(h.score is not None for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]

    red = catalog.search(("docs",), query="sweet fruit", filter={"color": "red"}, limit=5)
    assert red[0].key == "d1" and keys(red) == {"d1", "d4"}

    full = catalog.search(("docs",), query="animals in the sea", limit=4)
    assert full[0].key == "d2"
    p1 = catalog.search(("docs",), query="animals in the sea", limit=2)
    p2 = catalog.search(("docs",), query="animals in the sea", limit=2, offset=2)
    assert [h.key for h in p1 + p2] == [h.key for h in full]


def test_index_fields_per_put_and_index_false(store: BaseStore) -> None:
    ns = ("notes",)
    # only the title is embedded: the body (about cooking) must not make it match cooking
    store.put(ns, "n1", {"title": "quarterly tax filing deadline", "body": "pasta recipes"},
              index=["title"])
    store.put(ns, "n2", {"text": "how to cook fresh pasta at home"})
    store.put(ns, "n3", {"text": "secret not indexed"}, index=False)
    taxes = store.search(ns, query="paying taxes on time", limit=1)
    assert [h.key for h in taxes] == ["n1"]
    cooking = store.search(ns, query="cooking pasta", limit=2)
    assert cooking[0].key == "n2"
    # the unembedded item is still stored and listed, and only fills a page, unscored
    assert store.get(ns, "n3") is not None
    filled = store.search(ns, query="secret not indexed", limit=10)
    assert filled[-1].key == "n3" and filled[-1].score is None
    assert all(h.score is not None for h in filled[:-1])


def test_default_index_embeds_the_whole_value(tmp_path: Path) -> None:
    e = real_engine(tmp_path / "h")
    try:
        s = ReverieStore(e)
        s.put(("u",), "food", {"food_preference": "I like pizza"})
        s.put(("u",), "job", {"job": "software engineer at a bank"})
        assert s.search(("u",), query="what does the user like to eat", limit=1)[0].key == "food"
    finally:
        e.close()


# ---------------------------------------------------------------- reverie's own semantics


def test_namespace_encoding_is_reversible_and_within_reverie_charset() -> None:
    for ns in [("users", "alice@example.com"), ("a b", "c=d", "é😀"), ("x",), ("A_b-9",)]:
        name = encode_namespace(ns)
        assert name.startswith("lg/")
        assert decode_namespace(name) == ns
        from reverie.core.models import validate_namespace

        assert validate_namespace(name) == name
    assert decode_namespace("user/alice") is None
    assert encode_namespace(("a", "b")) != encode_namespace(("a/b",))
    with pytest.raises(InvalidNamespace):  # over reverie's 128 characters
        validate_namespace(encode_namespace(("x" * 200,)))


def test_updates_supersede_keep_created_at_and_history(engine: MemoryEngine) -> None:
    s = ReverieStore(engine)
    ns = ("users", "alice")
    s.put(ns, "employer", {"text": "works at Acme"})
    first = s.get(ns, "employer")
    clock(engine).advance(days=10)
    s.put(ns, "employer", {"text": "works at Globex"})
    item = s.get(ns, "employer")
    assert item is not None and first is not None
    assert item.value == {"text": "works at Globex"}
    assert item.created_at == first.created_at == T0
    assert (item.updated_at - T0).days == 10
    for found in (s.search(ns, query="where does alice work?")[0], s.search(ns)[0]):
        assert found.created_at == T0 and (found.updated_at - T0).days == 10

    name = encode_namespace(ns)
    versions = list(engine.memories(namespace=name))
    assert sorted(m.status for m in versions) == [Status.ACTIVE, Status.SUPERSEDED]
    then = engine.recall("employer", namespace=name, as_of=T0.replace(hour=10), k=1)
    assert "Acme" in then[0].text
    # re-putting the same value is one more source, not a new version
    s.put(ns, "employer", {"text": "works at Globex"})
    again = [m for m in engine.memories(namespace=name) if m.is_active]
    assert len(again) == 1 and len(again[0].sources) == 2

    s.delete(ns, "employer")  # deletion is real: every version goes
    assert list(engine.memories(namespace=name)) == []
    assert s.history(ns, "employer") == []


def test_history_shows_every_value_an_item_has_had(engine: MemoryEngine) -> None:
    s = ReverieStore(engine)
    ns = ("users", "alice")
    assert s.history(ns, "employer") == []
    s.put(ns, "employer", {"text": "works at Acme"})
    clock(engine).advance(days=10)
    s.put(ns, "employer", {"text": "works at Globex"})
    s.put(ns, "city", {"text": "lives in Lisbon"})
    versions = s.history(ns, "employer")
    assert [v.value for v in versions] == [{"text": "works at Acme"}, {"text": "works at Globex"}]
    assert [v.current for v in versions] == [False, True]
    assert versions[0].written_at == T0 and (versions[1].written_at - T0).days == 10
    assert versions[0].valid_to == versions[1].written_at and versions[1].valid_to is None
    assert all(v.namespace == ns and v.key == "employer" for v in versions)
    active = [m for m in engine.memories(namespace=encode_namespace(ns)) if m.is_active]
    assert versions[1].memory_id in {m.id for m in active}
    assert asyncio.run(s.ahistory(ns, "employer")) == versions
    assert [v.value for v in s.history(ns, "city")] == [{"text": "lives in Lisbon"}]
    assert s.history(("users", "bob"), "employer") == []


def test_an_embed_in_the_index_config_is_refused_with_the_way_to_use_it(
    engine: MemoryEngine,
) -> None:
    with pytest.raises(InvalidInput, match="LangChainEmbedder"):
        ReverieStore(engine, index={"embed": MiniLM(), "dims": 384})
    with pytest.raises(InvalidInput, match="LangChainEmbedder"):
        ReverieStore(engine, index={"embed": "openai:text-embedding-3-small"})
    ReverieStore(engine, index={"dims": 384, "fields": ["text"]})  # what it does use


def test_a_namespace_too_long_once_encoded_says_how_long_and_the_limit(
    engine: MemoryEngine,
) -> None:
    s = ReverieStore(engine)
    longest = ("x" * (MAX_NAMESPACE_CHARS - len("lg/")),)
    s.put(longest, "k", {"text": "fits exactly"})
    assert s.get(longest, "k") is not None
    with pytest.raises(InvalidNamespace, match=r"encodes to 129 characters.*limit of 128"):
        s.put(("x" * (MAX_NAMESPACE_CHARS - 2),), "k", {"text": "one too many"})
    # 40 non-ASCII letters: 40 characters in the tuple, 3 * 2 bytes each once encoded
    with pytest.raises(InvalidNamespace, match=r"encodes to 243 characters"):
        s.put(("ç" * 40,), "k", {"text": "t"})
    assert s.search(("ç" * 40,), query="t") == []  # a prefix only selects: nothing there
    assert s.list_namespaces() == [longest]


def test_search_score_is_reverie_decay_aware_score(engine: MemoryEngine) -> None:
    s = ReverieStore(engine, reinforce=False)
    ns = ("m",)
    s.put(ns, "old", {"text": "the user enjoys hiking in the mountains"})
    clock(engine).advance(days=120)
    s.put(ns, "new", {"text": "the user enjoys hiking in the hills"})
    hits = s.search(ns, query="does the user like hiking?", limit=2)
    assert [h.key for h in hits] == ["new", "old"]
    direct = engine.recall(
        "does the user like hiking?", namespace=encode_namespace(ns), k=2, reinforce=False
    )
    assert [h.score for h in hits] == pytest.approx([h.score for h in direct])
    assert direct[1].explanation.decay < direct[0].explanation.decay


def test_store_rejects_bad_input_and_writes_nothing(engine: MemoryEngine) -> None:
    s = ReverieStore(engine)
    with pytest.raises(InvalidInput):
        ReverieStore(engine, index={"dims": 1536})
    with pytest.raises(InvalidInput):
        ReverieStore(engine, kind="episodic")
    with pytest.raises(InvalidInput, match="operator"):
        s.put(("a",), "k", {"text": "t", "n": 1})
        s.search(("a",), filter={"n": {"$in": [1]}})
    assert [i.key for i in s.search(("a",))] == ["k"]
    with pytest.raises(InvalidNamespace):
        s.put(("x" * 200,), "k", {"text": "t"})
    assert s.list_namespaces() == [("a",)]


def test_twenty_concurrent_abatch_calls_overlap_and_never_block_the_loop(
    engine: MemoryEngine,
) -> None:
    s = ReverieStore(engine, reinforce=False)
    for i in range(30):
        s.put(("docs",), f"d{i}", {"text": f"note {i}: the meeting about project {i} went well"})
    queries = [f"meeting about project {i}" for i in range(20)]
    probe = InFlight(engine)  # installed on the engine the store calls

    async def run() -> tuple[int, list[str]]:
        beats_during_search = 0
        done = asyncio.Event()

        async def heartbeat() -> None:  # the loop must keep ticking while searches run
            nonlocal beats_during_search
            while not done.is_set():
                await asyncio.sleep(0)
                if probe.in_flight():
                    beats_during_search += 1

        beat = asyncio.create_task(heartbeat())
        results = await asyncio.gather(
            *(s.abatch([SearchOp(("docs",), query=q, limit=3)]) for q in queries)
        )
        done.set()
        await beat
        return beats_during_search, [r[0][0].key for r in results]  # type: ignore[index]

    beats, tops = asyncio.run(run())
    assert tops[7] == "d7"
    assert len(probe.spans) == 20
    # the 20 recalls overlapped: several in flight at once
    assert probe.max_concurrent() >= 4, probe.max_concurrent()
    # and the event loop kept running while a recall was in a worker thread
    assert beats > 0


def test_async_api_matches_sync(engine: MemoryEngine) -> None:
    s = ReverieStore(engine)

    async def run() -> None:
        await s.aput(("a",), "k1", {"text": "the cat sleeps on the sofa"})
        await s.aput(("a",), "k2", {"text": "stock prices went up"})
        item = await s.aget(("a",), "k1")
        assert item is not None and item.value["text"].startswith("the cat")
        hits = await s.asearch(("a",), query="where does the cat nap", limit=1)
        assert hits[0].key == "k1"
        assert await s.alist_namespaces() == [("a",)]
        await s.adelete(("a",), "k1")
        assert await s.aget(("a",), "k1") is None

    asyncio.run(run())


def test_store_wiring_on_the_redis_tier(redis_url: str, tmp_path: Path) -> None:
    """The same store over Redis records (a real redis-server): put, update, search, list,
    delete. The server is shared by the session, so everything sits under a unique label."""
    import uuid

    from reverie.core import ManualClock
    from reverie.integrations import open_engine

    e = open_engine(tmp_path / "home", store=redis_url, clock=ManualClock(T0))
    top = f"t-{uuid.uuid4().hex[:10]}"
    try:
        s = ReverieStore(e)
        s.put((top, "alice"), "drink", {"text": "Alice likes green tea"})
        s.put((top, "alice"), "job", {"text": "Alice is a nurse at the city hospital"})
        s.put((top, "bob"), "drink", {"text": "Bob drinks espresso"})
        s.put((top, "alice"), "drink", {"text": "Alice switched to coffee"})
        item = s.get((top, "alice"), "drink")
        assert item is not None and item.value["text"] == "Alice switched to coffee"
        hits = s.search((top, "alice"), query="what does Alice drink?", limit=2)
        assert hits[0].key == "drink" and hits[0].value["text"].endswith("coffee")
        assert s.list_namespaces(prefix=(top,)) == [(top, "alice"), (top, "bob")]
        s.delete((top, "bob"), "drink")
        assert s.list_namespaces(prefix=(top,)) == [(top, "alice")]
        history = e.memories(namespace=encode_namespace((top, "alice")))
        assert sorted(m.status.value for m in history) == ["active", "active", "superseded"]
    finally:
        for ns in e.namespaces():
            decoded = decode_namespace(ns)
            if decoded and decoded[0] == top:
                e.forget_namespace(ns)
        e.close()


def test_a_prefix_search_embeds_the_query_once(engine: MemoryEngine) -> None:
    """Searching a prefix that spans many namespaces embeds the query once, and finds
    what a search of each namespace alone finds."""
    real = engine.embedder
    asked: list[str] = []

    class Counting:
        name, dimension = real.name, real.dimension

        def embed(self, texts: list[str]):  # type: ignore[no-untyped-def]
            asked.extend(texts)
            return real.embed(texts)

    s = ReverieStore(engine, index={"fields": ["text"]})
    for user in range(6):
        s.put(("users", f"u{user}"), "drink", {"text": f"user {user} drinks green tea"})
        s.put(("users", f"u{user}"), "city", {"text": f"user {user} lives in Porto"})
    alone = {
        item.namespace: item.key
        for user in range(6)
        for item in s.search(("users", f"u{user}"), query="what tea do they drink?", limit=1)
    }
    engine.embedder = Counting()  # type: ignore[assignment]
    found = s.search(("users",), query="what tea do they drink?", limit=12)
    assert asked == ["what tea do they drink?"]
    assert {i.namespace: i.key for i in found if i.key == "drink"} == alone
