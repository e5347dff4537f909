"""The LlamaIndex face on real parts: a SQLite file, embedded Chroma and the real MiniLM model
(loaded once per process), on a manual clock. One test runs the block on the Redis tier."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload, LlamaDebugHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.memory import Memory as LIMemory
from llama_index.core.schema import NodeWithScore, TextNode

from reverie.adapters.llamaindex.memory import (
    DEFAULT_HEADER,
    SESSION_SOURCE_PREFIX,
    ReverieMemoryBlock,
)
from reverie.adapters.llamaindex.ports import (
    LlamaIndexEmbedder,
    ReverieEmbedding,
    parse_json_object,
)
from reverie.adapters.llamaindex.retriever import ReverieRetriever, hit_to_node
from reverie.core import ManualClock
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidNamespace, SynthesisFailed
from reverie.core.models import Status, Tier
from reverie.core.policy import Policy
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
# seconds: a networked store's round trip, for the overlap test; long enough that overlap, not
# the recall's own CPU (which two shared cores cannot overlap), decides the timing
ROUND_TRIP = 0.1


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    e = open_engine(tmp_path / "home", clock=ManualClock(T0), namespace="user/alice")
    yield e
    e.close()


def msg(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=role, content=text)


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- memory block: put


def test_flushed_messages_become_traces_sourced_by_the_session(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine)
    run(
        block.aput(
            [
                msg("system", "You are terse."),
                msg("user", "I moved to Lisbon in March."),
                msg("assistant", "Noted: you live in Lisbon."),
                msg("tool", "42"),
                msg("assistant", ""),  # a tool-call message without text
            ],
            from_short_term_memory=True,
            session_id="chat-1",
        )
    )
    stored = sorted(engine.memories(), key=lambda m: m.text)
    assert [m.text for m in stored] == [
        "assistant: Noted: you live in Lisbon.",
        "user: I moved to Lisbon in March.",
    ]
    for m in stored:
        assert m.sources == {f"{SESSION_SOURCE_PREFIX}chat-1"}
        assert m.tier is Tier.TRACE and m.status is Status.ACTIVE
        assert m.metadata["session_id"] == "chat-1"
    assert {m.metadata["role"] for m in stored} == {"user", "assistant"}


def test_the_same_sentence_in_two_sessions_is_one_memory_with_two_sources(
    engine: MemoryEngine,
) -> None:
    block = ReverieMemoryBlock(engine=engine)
    for session in ("chat-1", "chat-2", "chat-1"):
        run(block.aput([msg("user", "My dog is called Rex.")], session_id=session))
    (only,) = list(engine.memories())
    assert only.sources == {f"{SESSION_SOURCE_PREFIX}chat-1", f"{SESSION_SOURCE_PREFIX}chat-2"}
    # a second independent source raises confidence by one step (0.5 -> 0.65)
    assert only.confidence == pytest.approx(
        engine.policy.funnel.initial_confidence_trace + engine.policy.funnel.confidence_step
    )


def test_block_that_refuses_short_term_flushes_stores_nothing(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine, accept_short_term_memory=False)
    run(block.aput([msg("user", "I like tea.")], from_short_term_memory=True, session_id="s"))
    assert list(engine.memories()) == []


def test_message_longer_than_the_text_limit_is_stored_in_parts(tmp_path: Path) -> None:
    e = open_engine(
        tmp_path / "h",
        clock=ManualClock(T0),
        policy=Policy(max_text_chars=100),
    )
    try:
        block = ReverieMemoryBlock(engine=e)
        text = "abcdefghij" * 25  # 250 characters
        run(block.aput([msg("user", text)], session_id="s"))
        # "user: " + at most 94 characters per part: 94 + 94 + 62, in order
        assert {m.text for m in e.memories()} == {
            "user: " + text[:94],
            "user: " + text[94:188],
            "user: " + text[188:],
        }
    finally:
        e.close()


def test_bad_namespace_is_a_typed_error(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidNamespace, match="invalid namespace"):
        ReverieMemoryBlock(engine=engine, namespace="../etc")
    with pytest.raises(InvalidNamespace):
        ReverieRetriever(engine, namespace="a//b")


# ---------------------------------------------------------------------- memory block: get


def seed(engine: MemoryEngine, namespace: str | None = None) -> None:
    for text in [
        "user: my sister Ana lives in Porto",
        "user: I am allergic to peanuts",
        "user: my favourite band is Radiohead",
        "user: I work as a nurse at the city hospital",
    ]:
        engine.observe(text, source="seed", namespace=namespace)


def test_aget_recalls_for_the_latest_messages_formatted_for_the_system_message(
    engine: MemoryEngine,
) -> None:
    seed(engine)
    block = ReverieMemoryBlock(engine=engine, k=2, retrieval_context_window=1)
    content = run(
        block.aget(
            [msg("user", "what food should I avoid?"), msg("user", "any snack ideas for me?")]
        )
    )
    assert isinstance(content, str)
    lines = content.split("\n")
    assert lines[0] == DEFAULT_HEADER
    assert len(lines) == 3  # header + k memories
    assert lines[1] == "- [2025-03-03] user: I am allergic to peanuts"
    # nothing to ask about: no content (the block stays out of the prompt)
    assert run(block.aget([])) == ""
    assert run(block.aget([msg("system", "be nice")])) == ""


def test_aget_query_uses_the_context_window(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine, retrieval_context_window=2)
    messages = [msg("user", "one"), msg("assistant", "two"), msg("tool", "x"), msg("user", "three")]
    assert block.query_for(messages) == "two\nthree"


def test_namespaces_never_leak_through_the_block(engine: MemoryEngine) -> None:
    seed(engine, namespace="user/bob")
    block = ReverieMemoryBlock(engine=engine, namespace="user/alice")
    assert run(block.aget([msg("user", "where does my sister live?")])) == ""
    bob = ReverieMemoryBlock(engine=engine, namespace="user/bob")
    assert "Porto" in str(run(bob.aget([msg("user", "where does my sister live?")])))


def test_aget_packs_into_the_token_limit(engine: MemoryEngine) -> None:
    for i in range(30):
        engine.observe(f"user: note {i} about the garden: basil and {i} peppers", source="s")
    block = ReverieMemoryBlock(engine=engine, k=30, token_limit=60)
    content = str(run(block.aget([msg("user", "what grows in the garden?")])))
    count = block.tokenizer_fn
    assert len(count(content)) <= 60
    lines = content.split("\n")
    assert 2 <= len(lines) < 31  # some memories, not all 30
    # each memory line is ~20 tokens: header (~17) + 2 lines fit in 60, 3 do not
    assert sum(len(count(line)) + 1 for line in lines) <= 60 + 1


def test_atruncate_drops_the_lowest_ranked_lines_first(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine)
    lines = ["- [2025-03-03] alpha beta", "- [2025-03-03] gamma", "- [2025-03-03] delta epsilon"]
    content = "\n".join([DEFAULT_HEADER, *lines])
    n_last = len(block.tokenizer_fn(lines[2])) + 1
    assert run(block.atruncate(content, n_last)) == "\n".join([DEFAULT_HEADER, *lines[:2]])
    assert run(block.atruncate(content, n_last + 1)) == "\n".join([DEFAULT_HEADER, lines[0]])
    assert run(block.atruncate(content, 10_000)) is None
    assert run(block.atruncate(content, 0)) == content


def test_block_inside_llamaindex_memory_flushes_and_recalls(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine)
    memory = LIMemory.from_defaults(
        session_id="s-42",
        token_limit=400,
        chat_history_token_ratio=0.05,  # 20 tokens of short-term history: older turns flush
        token_flush_size=30,
        memory_blocks=[block],
    )

    async def chat() -> list[ChatMessage]:
        await memory.aput(msg("user", "My cat Miso is grey and loves tuna."))
        await memory.aput(msg("assistant", "Miso sounds lovely."))
        await memory.aput(msg("user", "I also started learning the cello last week."))
        await memory.aput(msg("assistant", "Good luck with the cello!"))
        await memory.aput(msg("user", "What does my cat like to eat?"))
        return await memory.aget()

    messages = asyncio.run(chat())
    flushed = {m.text for m in engine.memories()}
    assert "user: My cat Miso is grey and loves tuna." in flushed
    system = messages[0]
    assert system.role.value == "system"
    text = system.content or ""
    assert "<ReverieMemories>" in text
    assert text.index("Miso is grey and loves tuna") < text.index("</ReverieMemories>")


def test_memory_truncation_calls_the_block_atruncate(engine: MemoryEngine) -> None:
    for i in range(12):
        engine.observe(f"user: fact {i}: the garden has {i} rows of beans and peas", source="s")
    block = ReverieMemoryBlock(engine=engine, k=12, token_limit=400)
    full = str(run(block.aget([msg("user", "what is in the garden?")])))
    memory = LIMemory.from_defaults(
        session_id="s-t", token_limit=150, chat_history_token_ratio=0.5, memory_blocks=[block]
    )

    async def go() -> list[ChatMessage]:
        await memory.aput(msg("user", "what is in the garden?"))
        return await memory.aget()

    text = asyncio.run(go())[0].content or ""
    kept = [line for line in text.split("\n") if line.startswith("- [")]
    assert 0 < len(kept) < len(full.split("\n")) - 1  # truncated, best lines kept
    assert kept[0] == full.split("\n")[1]


# ---------------------------------------------------------------------- async behaviour


def test_twenty_concurrent_agets_overlap_and_the_loop_keeps_ticking(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block's recall runs in worker threads: 20 concurrent `aget`s are in the engine at
    once and the event loop keeps running. The lexical channel gets a 40 ms round trip, as
    with a networked store, so the timing shows overlap rather than the two shared CPU
    cores (CPU-bound work cannot go faster than the cores, async or not)."""
    seed(engine)
    block = ReverieMemoryBlock(engine=engine, k=3)
    queries = [[msg("user", f"question {i}: where does my sister live?")] for i in range(20)]
    run(block.aget(queries[0]))  # warm the model and the store

    lock = threading.Lock()
    inflight = peak = 0

    def networked(real: Any) -> Any:
        def search(*args: object, **kwargs: object) -> object:
            nonlocal inflight, peak
            with lock:
                inflight += 1
                peak = max(peak, inflight)
            try:
                time.sleep(ROUND_TRIP)
                return real(*args, **kwargs)
            finally:
                with lock:
                    inflight -= 1

        return search

    # recall on SQLite searches with the hits' kept embeddings (`search_kept`); either way
    # the lexical channel is what gets the round trip
    for name in ("search", "search_kept"):
        monkeypatch.setattr(engine.lexical, name, networked(getattr(engine.lexical, name)))

    async def serial() -> None:
        for q in queries:
            await block.aget(q)

    run(serial())
    assert peak == 1

    async def concurrent() -> tuple[int, list[str]]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0)
                with lock:
                    ticks += inflight > 0

        tick_task = asyncio.create_task(ticker())
        outs = await asyncio.gather(*(block.aget(q) for q in queries))
        done.set()
        await tick_task
        return ticks, outs

    ticks, outs = run(concurrent())  # type: ignore[misc]
    assert all("Porto" in o for o in outs)
    assert peak >= 4  # several recalls inside the engine at the same moment
    # the loop kept turning while the recalls were in flight (a blocking call would
    # have frozen it for the whole batch: zero ticks in between)
    assert ticks > 0


# ---------------------------------------------------------------------- retriever


def test_retriever_nodes_carry_id_score_and_lifecycle_metadata(engine: MemoryEngine) -> None:
    old = engine.remember("user", "lives in", "Lisbon", source="s1")
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    clock.advance(days=10)
    new = engine.remember("user", "lives in", "Porto", source="s2")
    engine.observe("user: I play the cello", source="s3")

    retriever = ReverieRetriever(engine, k=3, reinforce=False)
    expected = engine.recall("where does the user live?", k=3, reinforce=False)
    nodes = retriever.retrieve("where does the user live?")
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [n.node.id_ for n in nodes] == [h.id for h in expected]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in expected])
    top = nodes[0]
    assert top.node.id_ == new.id and "Porto" in top.node.get_content()
    md = top.node.metadata
    assert md["memory_id"] == new.id
    assert md["tier"] == new.tier.value and md["status"] == "active"
    assert md["sources"] == ["s2"]
    assert md["explanation"]["final"] == pytest.approx(top.score, abs=1e-4)
    assert set(md["explanation"]) >= {"relevance", "decay", "importance", "tier", "hops"}
    # the LLM sees the text and the date only, not the bookkeeping
    llm_view = top.node.get_content(metadata_mode="llm")
    assert "created_at" in llm_view and "explanation" not in llm_view
    assert old.id not in [n.node.id_ for n in nodes]  # superseded: not returned by default

    history = ReverieRetriever(engine, k=5, include_history=True, reinforce=False)
    by_id = {n.node.id_: n for n in history.retrieve("where does the user live?")}
    assert by_id[old.id].node.metadata["status"] == "superseded"
    assert by_id[old.id].node.metadata["superseded_by"] == new.id

    as_of = ReverieRetriever(engine, k=1, as_of=T0)
    assert as_of.retrieve("where does the user live?")[0].node.id_ == old.id


def test_aretrieve_matches_retrieve_and_namespaces_stay_apart(engine: MemoryEngine) -> None:
    seed(engine)
    seed(engine, namespace="user/bob")
    alice = ReverieRetriever(engine, k=2, reinforce=False)
    sync = alice.retrieve("peanuts")
    asyn = asyncio.run(alice.aretrieve("peanuts"))
    assert [n.node.id_ for n in sync] == [n.node.id_ for n in asyn]
    assert {n.node.metadata["namespace"] for n in sync} == {"user/alice"}
    bob_ids = {m.id for m in engine.memories(namespace="user/bob")}
    assert not bob_ids & {n.node.id_ for n in sync}


def test_nodes_equal_what_llamaindex_validation_builds(engine: MemoryEngine) -> None:
    """The retriever builds its nodes without re-validating its own values; a user must get
    exactly the objects `TextNode(...)` / `NodeWithScore(...)` would have given."""
    seed(engine)
    engine.remember("user", "lives in", "Porto", source="s2")
    hits = engine.recall("where does the user's sister live?", k=5, reinforce=False).hits
    nodes = [hit_to_node(h) for h in hits]
    for hit, got in zip(hits, nodes, strict=True):
        node = got.node
        want = NodeWithScore(
            node=TextNode(
                id_=node.id_,
                text=node.text,
                metadata=dict(node.metadata),
                excluded_embed_metadata_keys=list(node.excluded_embed_metadata_keys),
                excluded_llm_metadata_keys=list(node.excluded_llm_metadata_keys),
            ),
            score=hit.score,
        )
        assert got == want and node == want.node
        assert got.model_fields_set == want.model_fields_set
        assert node.model_fields_set == want.node.model_fields_set
        assert got.model_dump() == want.model_dump() and repr(got) == repr(want)
        assert node.hash == want.node.hash
        assert node.get_content(metadata_mode="llm") == want.node.get_content(metadata_mode="llm")
        assert type(got.score) is float and node.id_ == hit.id and node.text == hit.memory.text
        # still a validated model for whoever changes it afterwards
        node.text = "edited"
        assert node.text == "edited" and "text" in node.model_fields_set
    # nothing shared between two nodes that a user could change on one and see on the other
    a, b = nodes[0].node, nodes[1].node
    for field in ("metadata", "relationships", "excluded_embed_metadata_keys",
                  "excluded_llm_metadata_keys"):  # fmt: skip
        assert getattr(a, field) is not getattr(b, field)
    assert a.model_fields_set is not b.model_fields_set
    a.excluded_llm_metadata_keys.remove("tier")
    assert "tier" in b.excluded_llm_metadata_keys


def test_one_span_and_llamaindex_events_per_retrieval(engine: MemoryEngine) -> None:
    """Tracing a retrieval shows one span, LlamaIndex's start and end events and the
    callback manager's retrieve event with the nodes, sync and async alike."""
    seed(engine)
    spans = SimpleSpanHandler()
    seen: list[BaseEvent] = []

    class Events(BaseEventHandler):
        def handle(self, event: BaseEvent, **kwargs: object) -> None:
            seen.append(event)

    debug = LlamaDebugHandler()
    root = get_dispatcher()
    events = Events()
    root.add_span_handler(spans)
    root.add_event_handler(events)
    try:
        retriever = ReverieRetriever(
            engine, k=2, reinforce=False, callback_manager=CallbackManager([debug])
        )
        for call in ("retrieve", "aretrieve"):
            spans.completed_spans.clear()
            seen.clear()
            debug.flush_event_logs()
            if call == "retrieve":
                nodes = retriever.retrieve("peanuts")
            else:
                nodes = asyncio.run(retriever.aretrieve("peanuts"))
            assert [s.id_.rsplit("-", 5)[0] for s in spans.completed_spans] == [
                f"ReverieLlamaIndexRetriever.{call}"
            ]
            mine = [e for e in seen if isinstance(e, RetrievalStartEvent | RetrievalEndEvent)]
            assert [type(e) for e in mine] == [RetrievalStartEvent, RetrievalEndEvent]
            assert mine[1].nodes == nodes and "peanuts" in nodes[0].node.text
            [(start, end)] = debug.get_event_pairs(CBEventType.RETRIEVE)
            assert start.payload[EventPayload.QUERY_STR] == "peanuts"
            assert end.payload[EventPayload.NODES] == nodes
    finally:
        root.span_handlers.remove(spans)
        root.event_handlers.remove(events)


# ---------------------------------------------------------------------- ports


def test_embedding_ports_round_trip_the_local_model() -> None:
    local = LocalEmbedder()
    as_llamaindex = ReverieEmbedding(local)
    back = LlamaIndexEmbedder(as_llamaindex)
    texts = ["my cat is grey", "the stock market fell"]
    want = local.embed(texts)
    got = back.embed(texts)
    assert back.dimension == 384 and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.allclose(got, want, atol=1e-5)
    assert back.name == "llamaindex:ReverieEmbedding:all-MiniLM-L6-v2"
    q = asyncio.run(as_llamaindex.aget_query_embedding("my cat is grey"))
    assert np.allclose(q, want[0], atol=1e-5)
    assert back.embed([]).shape == (0, 384)


def test_engine_runs_on_an_embedder_from_llamaindex(tmp_path: Path) -> None:
    embedder = LlamaIndexEmbedder(ReverieEmbedding(LocalEmbedder()))
    e = open_engine(tmp_path / "h", clock=ManualClock(T0), embedder=embedder)
    try:
        e.observe("user: my sister Ana lives in Porto", source="s")
        e.observe("user: I am allergic to peanuts", source="s")
        assert "Porto" in e.recall("where does my sister live?", k=1)[0].text
    finally:
        e.close()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here it is: {"a": "x"} Hope it helps.', {"a": "x"}),
    ],
)
def test_parse_json_object_accepts_what_models_write(answer: str, expected: dict) -> None:
    assert parse_json_object(answer) == expected


@pytest.mark.parametrize("answer", ["", "The sea is blue.", "[1, 2]", '{"a": 1', "null"])
def test_parse_json_object_refuses_garbage(answer: str) -> None:
    with pytest.raises(SynthesisFailed):
        parse_json_object(answer)


# ---------------------------------------------------------------------- extras and tiers


@pytest.mark.parametrize(
    "module",
    [
        "reverie.adapters.llamaindex.memory",
        "reverie.adapters.llamaindex.retriever",
        "reverie.adapters.llamaindex.ports",
    ],
)
def test_import_without_llama_index_names_the_extra(module: str) -> None:
    code = (
        "import sys\n"
        "sys.modules['llama_index'] = None\n"
        "import reverie.core, reverie.integrations\n"
        "from reverie.core.errors import MissingExtra\n"
        "try:\n"
        f"    import {module}\n"
        "except MissingExtra as e:\n"
        "    print('MissingExtra', e.extra, e)\n"
        "else:\n"
        "    print('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MissingExtra llamaindex "), out.stdout
    assert "pip install 'reverie[llamaindex]'" in out.stdout


def test_block_on_the_redis_tier(redis_url: str, tmp_path: Path) -> None:
    ns = f"li-{uuid.uuid4().hex[:10]}"
    e = open_engine(tmp_path / "h", store=redis_url, clock=ManualClock(T0), namespace=ns)
    try:
        block = ReverieMemoryBlock(engine=e)
        run(block.aput([msg("user", "My cat Miso loves tuna.")], session_id="r1"))
        (m,) = list(e.memories())
        assert m.sources == {f"{SESSION_SOURCE_PREFIX}r1"}
        content = str(run(block.aget([msg("user", "what does my cat eat?")])))
        assert "user: My cat Miso loves tuna." in content
    finally:
        e.forget_namespace(ns)
        e.close()


def test_a_change_told_in_the_chat_puts_the_new_value_first(engine: MemoryEngine) -> None:
    block = ReverieMemoryBlock(engine=engine, k=2)
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    run(
        block.aput(
            [
                msg("user", "My dentist check-up is on Tuesday at 9:15 AM."),
                msg("assistant", "Noted, Tuesday at 9:15 AM."),
            ]
        )
    )
    clock.advance(days=12)
    run(block.aput([msg("user", "About the dentist."), msg("assistant", "Sure, tell me.")]))
    clock.advance(seconds=40)
    run(
        block.aput(
            [
                msg("user", "It's Friday at 4:30 PM now."),
                msg("assistant", "Actually, Friday afternoons are busy; go early."),
            ]
        )
    )
    content = run(block.aget([msg("user", "When is my dentist check-up on Tuesday?")]))
    assert isinstance(content, str)
    assert content.split("\n")[1].endswith("user: It's Friday at 4:30 PM now.")
