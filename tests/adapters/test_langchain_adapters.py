"""LangChain face on real parts: the retriever, the memory tools and the ports, over a
SQLite file, embedded Chroma and the real MiniLM model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from reverie.adapters.langchain.ports import (
    ChatModelSynthesizer,
    LangChainEmbedder,
    parse_json_object,
)
from reverie.adapters.langchain.retriever import ReverieLangChainRetriever, ReverieRetriever
from reverie.adapters.langchain.tools import memory_tools
from reverie.core import (
    InvalidInput,
    InvalidNamespace,
    InvalidVector,
    Status,
    SynthesisFailed,
    Tier,
)
from reverie.core.engine import MemoryEngine
from reverie.integrations.embedders import LocalEmbedder
from tests.adapters.langchain_support import (
    T0,
    InFlight,
    clock,
    import_without,
    real_engine,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = real_engine(tmp_path / "home", namespace="user/alice")
    yield e
    e.close()


# ---------------------------------------------------------------- retriever


def test_retriever_documents_carry_id_tier_status_sources_and_explanation(
    engine: MemoryEngine,
) -> None:
    cat = engine.observe("user: I adopted a grey cat called Miso", source="chat-1")
    engine.observe("user: my sister Ana is getting married in Porto", source="chat-1")
    docs = ReverieRetriever(engine=engine, k=2).invoke("tell me about the user's pet")
    assert docs[0].page_content == cat.text
    meta = docs[0].metadata
    assert meta["id"] == cat.id and docs[0].id == cat.id
    assert meta["tier"] == "trace" and meta["status"] == "active"
    assert meta["sources"] == ["chat-1"] and meta["namespace"] == "user/alice"
    exp = meta["explanation"]
    assert exp["final"] == pytest.approx(meta["score"], abs=1e-4)
    assert exp["dense"] > 0.3 and exp["hops"] == 0
    # the score is the policy's blend of the terms it explains
    alpha = engine.policy.retrieval.alpha
    assert meta["score"] == pytest.approx(
        alpha * exp["relevance"] + (1 - alpha) * exp["decay"], abs=1e-3
    )


def test_retriever_as_of_sees_superseded_facts_and_namespaces_do_not_leak(
    engine: MemoryEngine,
) -> None:
    engine.remember("user", "works at", "Acme", source="s1")
    clock(engine).advance(days=30)
    engine.remember("user", "works at", "Globex", source="s2")
    engine.observe("bob works at Initech", namespace="user/bob")

    now = ReverieRetriever(engine=engine, k=3).invoke("where does the user work?")
    assert "Globex" in now[0].page_content
    assert all("Acme" not in d.page_content for d in now)
    assert all("Initech" not in d.page_content for d in now)

    then = ReverieRetriever(engine=engine, k=3, as_of=T0.replace(day=10)).invoke(
        "where does the user work?"
    )
    assert "Acme" in then[0].page_content
    assert then[0].metadata["status"] == "superseded"
    assert all("Globex" not in d.page_content for d in then)

    bob = ReverieRetriever(engine=engine, namespace="user/bob").invoke("where does bob work")
    assert [d.page_content for d in bob] == ["bob works at Initech"]


def test_retriever_async_matches_sync_and_twenty_calls_overlap(engine: MemoryEngine) -> None:
    engine.observe_many([f"note {i}: the meeting about topic {i} went well" for i in range(40)])
    r = ReverieRetriever(engine=engine, k=3, reinforce=False)
    sync_ids = [d.metadata["id"] for d in r.invoke("meeting about topic 7")]
    # arecall runs the class's recall in a worker thread; each recall embeds its query once
    probe = InFlight(engine.embedder, "embed")  # type: ignore[arg-type]

    async def run() -> tuple[list[str], int]:
        first = await r.ainvoke("meeting about topic 7")
        probe.spans.clear()
        beats_during_recall = 0
        done = asyncio.Event()

        async def heartbeat() -> None:  # the loop must keep ticking while recalls run
            nonlocal beats_during_recall
            while not done.is_set():
                await asyncio.sleep(0)
                if probe.in_flight():
                    beats_during_recall += 1

        beat = asyncio.create_task(heartbeat())
        await asyncio.gather(*(r.ainvoke(f"meeting about topic {i}") for i in range(20)))
        done.set()
        await beat
        return [d.metadata["id"] for d in first], beats_during_recall

    async_ids, beats = asyncio.run(run())
    assert async_ids == sync_ids
    assert len(probe.spans) == 20
    assert probe.max_concurrent() >= 4, probe.max_concurrent()
    assert beats > 0  # the event loop ran while a recall was in a worker thread


def test_retriever_takes_recall_options_per_call(engine: MemoryEngine) -> None:
    engine.remember("user", "works at", "Acme", source="s1")
    clock(engine).advance(days=30)
    engine.remember("user", "works at", "Globex", source="s2")
    for line in ("user: I adopted a cat", "user: I live in Lisbon", "user: I like tea"):
        engine.observe(line, source="chat-1")
    retriever = ReverieLangChainRetriever(engine=engine, k=4)
    assert len(retriever.invoke("where does the user work?", k=1)) == 1
    assert len(asyncio.run(retriever.ainvoke("where does the user work?", k=2))) == 2
    assert len(retriever.invoke("where does the user work?")) == 4  # its own k again
    then = retriever.invoke("where does the user work?", k=1, as_of=T0.replace(day=10))
    assert "Acme" in then[0].page_content
    with_history = retriever.invoke("where does the user work?", k=5, include_history=True)
    assert {d.metadata["status"] for d in with_history} >= {"active", "superseded"}
    packed = retriever.invoke("where does the user work?", token_budget=40)
    assert 1 <= len(packed) < 4
    with pytest.raises(InvalidInput, match="unknown retriever argument"):
        retriever.invoke("where does the user work?", top_k=1)
    with pytest.raises(InvalidInput, match="k must be"):
        retriever.invoke("where does the user work?", k=0)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"k": 0}, InvalidInput),
        ({"k": True}, InvalidInput),
        ({"token_budget": 0}, InvalidInput),
        ({"namespace": "not a namespace"}, InvalidNamespace),
        ({"namespace": "user/"}, InvalidNamespace),
    ],
)
def test_retriever_checks_its_options_when_built(
    engine: MemoryEngine, options: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        ReverieLangChainRetriever(engine=engine, **options)


def test_the_two_retrievers_have_distinct_names_and_the_old_names_still_import() -> None:
    from reverie.adapters import langchain as lc_face
    from reverie.adapters import llamaindex as li_face

    assert lc_face.ReverieLangChainRetriever.__name__ == "ReverieLangChainRetriever"
    assert li_face.ReverieLlamaIndexRetriever.__name__ == "ReverieLlamaIndexRetriever"
    assert lc_face.ReverieRetriever is lc_face.ReverieLangChainRetriever
    assert li_face.ReverieRetriever is li_face.ReverieLlamaIndexRetriever
    assert ReverieRetriever is ReverieLangChainRetriever


# ---------------------------------------------------------------- tools


def test_memory_tools_have_clear_schemas(engine: MemoryEngine) -> None:
    tools = {t.name: t for t in memory_tools(engine)}
    assert set(tools) == {"remember", "recall", "forget", "confirm"}
    assert tools["remember"].args["text"]["type"] == "string"
    assert set(tools["remember"].args) == {"text", "subject", "predicate", "object"}
    assert tools["recall"].args["k"]["default"] == 5
    assert set(tools["forget"].args) == {"memory_id"}
    for t in tools.values():
        assert t.description


@pytest.mark.parametrize("k", [1, 2, 12])
def test_memory_tools_recall_default_follows_the_factory_k(engine: MemoryEngine, k: int) -> None:
    for i in range(15):
        engine.observe(f"user: note number {i} about the garden", source="chat-1")
    recall = {t.name: t for t in memory_tools(engine, k=k)}["recall"]
    assert recall.args["k"]["default"] == k
    assert recall.tool_call_schema.model_json_schema()["properties"]["k"]["default"] == k
    answer = recall.invoke({"query": "the garden"})
    assert len(answer.splitlines()) == k
    assert len(recall.invoke({"query": "the garden", "k": 3}).splitlines()) == 3
    assert len(asyncio.run(recall.ainvoke({"query": "the garden"})).splitlines()) == k


@pytest.mark.parametrize("k", [0, 51, True])
def test_memory_tools_refuse_a_k_out_of_range(engine: MemoryEngine, k: int) -> None:
    with pytest.raises(InvalidInput, match="k must be"):
        memory_tools(engine, k=k)


def test_memory_tools_remember_recall_confirm_forget(engine: MemoryEngine) -> None:
    import json

    tools = {t.name: t for t in memory_tools(engine, namespace="user/alice", source="thread-1")}
    stored = json.loads(
        tools["remember"].invoke(
            {"text": "The user lives in Lisbon", "subject": "user", "predicate": "lives in",
             "object": "Lisbon"}
        )
    )
    assert stored["tier"] == "unit"
    unit = engine.get(stored["id"])
    assert unit.fact is not None and unit.fact.object == "Lisbon"
    assert unit.sources == frozenset({"thread-1"})

    trace = json.loads(tools["remember"].invoke({"text": "User prefers green tea"}))
    assert trace["tier"] == "trace"

    found = tools["recall"].invoke({"query": "where does the user live?", "k": 1})
    assert stored["id"] in found and "Lisbon" in found

    confirmed = json.loads(tools["confirm"].invoke({"memory_id": stored["id"]}))
    assert confirmed["tier"] == "crystal"
    assert engine.get(stored["id"]).user_confirmed

    assert tools["forget"].invoke({"memory_id": trace["id"]}) == "forgot 1 memory"
    assert trace["id"] not in {m.id for m in engine.memories()}


def test_memory_tools_report_errors_to_the_model_and_write_nothing(
    engine: MemoryEngine,
) -> None:
    tools = {t.name: t for t in memory_tools(engine)}
    before = engine.stats()["total"]
    msg = tools["remember"].invoke({"text": "x", "subject": "user", "predicate": "likes"})
    assert "subject, predicate and object together" in msg
    msg = tools["remember"].invoke({"text": "   "})
    assert msg.startswith("EmptyText")
    msg = tools["confirm"].invoke({"memory_id": "nope"})
    assert msg.startswith("NotFound") and "nope" in msg
    assert engine.stats()["total"] == before


def test_memory_tools_async_path(engine: MemoryEngine) -> None:
    import json

    tools = {t.name: t for t in memory_tools(engine)}

    async def run() -> tuple[str, str]:
        stored = await tools["remember"].ainvoke({"text": "The user's dog is named Rex"})
        found = await tools["recall"].ainvoke({"query": "what is the dog called"})
        return stored, found

    stored, found = asyncio.run(run())
    assert json.loads(stored)["id"] in found


# ---------------------------------------------------------------- ports


class MiniLMEmbeddings(Embeddings):
    """A real LangChain `Embeddings` over the real MiniLM model (no fake vectors)."""

    def __init__(self, scale: float = 1.0, dims: int | None = None) -> None:
        self.inner = LocalEmbedder()
        self.scale = scale
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        v = self.inner.embed(texts) * self.scale
        return (v[:, : self.dims] if self.dims else v).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_langchain_embedder_normalises_checks_dimension_and_has_an_async_path() -> None:
    local = LocalEmbedder()
    emb = LangChainEmbedder(MiniLMEmbeddings(scale=3.0))
    assert emb.dimension == 384  # probed
    texts = ["the cat sat on the mat", "stock markets fell"]
    v = emb.embed(texts)
    assert v.dtype == np.float32 and v.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(v, local.embed(texts), atol=1e-5)
    np.testing.assert_allclose(asyncio.run(emb.aembed(texts)), v, atol=1e-6)
    assert emb.embed([]).shape == (0, 384)
    with pytest.raises(InvalidInput):
        emb.embed("a bare string")

    wrong = LangChainEmbedder(MiniLMEmbeddings(dims=100), dimension=384)
    with pytest.raises(InvalidVector, match=r"\(2, 100\)"):
        wrong.embed(texts)


def test_engine_runs_on_a_langchain_embedder(tmp_path: Path) -> None:
    e = real_engine(tmp_path / "h", embedder=LangChainEmbedder(MiniLMEmbeddings()))
    try:
        e.observe("user: I adopted a grey cat called Miso")
        e.observe("user: the quarterly report is due Friday")
        assert "Miso" in e.recall("the user's pet", k=1)[0].text
        assert e.stats()["embedder"].startswith("langchain:MiniLMEmbeddings")
    finally:
        e.close()


def test_json_answers_parse_and_garbage_is_synthesis_failed() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    for bad, why in [
        ("", "empty"),
        ("Sure! Here is the summary.", "not valid JSON"),
        ('{"a": 1', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
    ]:
        with pytest.raises(SynthesisFailed, match=why):
            parse_json_object(bad)


def test_synthesizer_refuses_what_is_not_a_chat_model() -> None:
    with pytest.raises(InvalidInput):
        ChatModelSynthesizer("gpt")  # type: ignore[arg-type]


# ---------------------------------------------------------------- extras


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("reverie.adapters.langchain.retriever", "langchain_core", "langchain"),
        ("reverie.adapters.langchain.tools", "langchain_core", "langchain"),
        ("reverie.adapters.langchain.ports", "langchain_core", "langchain"),
        ("reverie.adapters.langgraph.store", "langgraph", "langgraph"),
        ("reverie.adapters.langchain.memory", "langchain_classic", "classic"),
    ],
)
def test_import_without_the_extra_names_it(module: str, blocked: str, extra: str) -> None:
    out = import_without(module, blocked)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"MissingExtra {extra} "), out.stdout
    assert f"pip install 'reverie[{extra}]'" in out.stdout


def test_core_and_integrations_import_without_any_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for m in ('langchain_core','langchain','langgraph','langchain_classic','llama_index'):\n"
        "    sys.modules[m] = None\n"
        "import reverie.core, reverie.integrations, reverie.core.extraction\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_status_and_tier_values_are_plain_strings_in_metadata(engine: MemoryEngine) -> None:
    m = engine.observe("user: remember that my passport expires in 2031")
    doc = ReverieRetriever(engine=engine, k=1).invoke("passport expiry")[0]
    assert doc.metadata["tier"] == Tier.TRACE.value == "trace"
    assert doc.metadata["status"] == Status.ACTIVE.value
    assert doc.metadata["id"] == m.id
