"""`observe_many` on both tiers with the real MiniLM model, chunk by chunk. What
a user relies on: a repeat folds into the memory that holds its text wherever it falls
(the same chunk, a later one, or a call before), a text already held is not embedded
again, and an embedder that fails on a later chunk keeps the chunks written before it,
as one-by-one writes would."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.core import InvalidVector, ManualClock
from reverie.core.engine import Observation
from reverie.core.ports import Vector
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


class Recording:
    """The real model, with every text it was asked to embed kept (and a call that
    fails on demand)."""

    def __init__(self, model: LocalEmbedder, fail_on_call: int | None = None) -> None:
        self.model = model
        self.asked: list[str] = []
        self.calls = 0
        self.fail_on_call = fail_on_call
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        with self._lock:
            self.calls += 1
            call = self.calls
            self.asked += texts
        vecs = self.model.embed(texts)
        if call == self.fail_on_call:
            vecs[0][0] = float("nan")  # the engine checks every vector it is given
        return vecs


@pytest.fixture(scope="module")
def model() -> LocalEmbedder:
    return LocalEmbedder().load()


@pytest.mark.parametrize("tier", ["embedded", "shared"])
def test_repeats_fold_across_and_within_chunks(
    tier: str, model: LocalEmbedder, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    emb = Recording(model)
    servers = (
        {"store": request.getfixturevalue("redis_url"),
         "vectors": request.getfixturevalue("chroma_server_url")}
        if tier == "shared" else {}
    )
    engine = open_engine(tmp_path / "home", embedder=emb, clock=ManualClock(T0),
                         namespace=f"bulk-{uuid.uuid4().hex[:10]}", **servers)
    held = engine.observe("I like green tea", source="before")
    emb.asked.clear()
    texts = [
        "I like green tea",  # held before the call
        "Bo lives in Oslo",
        "We adopted a grey cat",
        "bo lives in oslo",  # the chunk before holds it
        "The garden needs rain",
        "The garden needs rain.",  # the same chunk holds it
    ]
    out = engine.observe_many(
        [Observation(t, source=f"s{i}") for i, t in enumerate(texts)], batch_size=2
    )
    engine.flush()
    assert out[0].id == held.id and out[0].sources == {"before", "s0"}
    assert out[3].id == out[1].id and out[3].sources == {"s1", "s3"}
    assert out[5].id == out[4].id and out[5].sources == {"s4", "s5"}
    assert engine.stats()["total"] == 4
    assert engine.vectors.count(engine.default_namespace) == 4
    # held before the call, or by a chunk written before: not embedded again; a second
    # copy in one chunk is looked up before the chunk is written: embedded, unused
    assert sorted(emb.asked) == sorted([texts[1], texts[2], texts[4], texts[5]])
    hit = engine.recall("where does Bo live?", k=1)[0]
    assert hit.id == out[1].id
    engine.forget_namespace(engine.default_namespace)
    engine.close()


def test_an_embedder_failing_on_a_later_chunk_keeps_the_chunks_before(
    model: LocalEmbedder, tmp_path: Path
) -> None:
    emb = Recording(model, fail_on_call=2)
    engine = open_engine(tmp_path / "home", embedder=emb, clock=ManualClock(T0))
    texts = ["the ferry leaves at nine", "Mia plays the cello", "rain all week", "a new bike"]
    with pytest.raises(InvalidVector):
        engine.observe_many([Observation(t) for t in texts], batch_size=2)
    engine.flush()
    ns = engine.default_namespace
    kept = [m.text for m in engine.store.newest_active(ns, 10)]
    assert sorted(kept) == sorted(texts[:2])
    assert engine.stats()["total"] == 2
    assert engine.vectors.count(engine.default_namespace) == 2
    engine.close()


class SignalsTheSecondCall(Recording):
    """The real model; `second` is set when the second call begins."""

    def __init__(self, model: LocalEmbedder) -> None:
        super().__init__(model)
        self.second = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vector:
        if self.calls == 1:
            self.second.set()
        return super().embed(texts)


def test_the_next_chunk_is_embedded_while_a_chunk_is_written(
    model: LocalEmbedder, tmp_path: Path
) -> None:
    """The embedder is asked for the next chunk while the write path stores this one, so
    an embedder that waits for its answer (an API) costs its waits, not waits plus writes.
    The first write of the first chunk waits until the second chunk is asked for; written
    one after the other, it would never be, and the import would fail here."""
    emb = SignalsTheSecondCall(model)
    engine = open_engine(tmp_path / "home", embedder=emb, clock=ManualClock(T0))
    texts = ["the ferry leaves at nine", "Mia plays the cello", "rain all week", "a new bike"]
    overlapped: list[bool] = []

    def progress(_: int) -> None:
        if not overlapped:
            overlapped.append(emb.second.wait(timeout=30))

    out = engine.observe_many([Observation(t) for t in texts], batch_size=2, progress=progress)
    assert overlapped == [True]
    assert [m.text for m in out] == texts and emb.calls == 2
    engine.flush()
    assert engine.vectors.count(engine.default_namespace) == 4
    engine.close()


FILLER = [  # more turns than the engine keeps in memory: the versions are found by the index
    f"user: {t}" for t in (
        "The bakery on the corner sells rye bread.", "I watched a documentary on owls.",
        "My nephew plays the violin.", "The printer jammed again.",
        "We had pasta for dinner.", "The train was full this morning.",
        "I repotted the basil.", "The museum opens a new wing.",
        "My shoes got soaked in the rain.", "I finished the crossword.",
        "The neighbours painted their fence.", "I lost my umbrella on the bus.",
        "The cinema shows old westerns on Sundays.", "I bought a new kettle.",
        "The river was high after the storm.", "My sister sent a postcard from Rome.",
        "The library extended its hours.", "I tried a new running route.",
    )
]
CONVERSATION = [
    "user: My dentist appointment is on Friday at 3 PM.",
    "assistant: Noted, Friday at 3 PM.",
    "user: I live in Berlin, near Tempelhofer Feld.",
    "user: Our team standup is at 9:30 every morning.",
    *FILLER,
    "user: About the dentist.",
    "user: It's 4:30 PM now.",  # elliptical: its subject is the turn before
    "user: We finally moved to Lisbon, the flat is in Alfama.",
    "user: Actually, the standup moved to 10:15.",
    "user: The garden needs rain.",
]


def _links(engine: object, ns: str) -> set[tuple[str, str, str]]:
    from reverie.core.writing import UPDATE_KEY

    mems = {m.id: m for m in engine.memories(namespace=ns)}  # type: ignore[attr-defined]
    out = set()
    for m in mems.values():
        link = m.metadata.get(UPDATE_KEY)
        if link:
            old = mems[link["of"]]
            out.add((min(m.sources), min(old.sources), old.status.value))
    return out


@pytest.mark.parametrize("tier", ["embedded", "shared"])
def test_bulk_ingest_links_the_versions_one_write_at_a_time_would(
    tier: str, model: LocalEmbedder, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A bulk import asks the vector index for a whole chunk's version candidates at
    once: the versions it links are those `observe` links turn by turn, wherever the
    chunk boundaries fall."""
    servers = (
        {"store": request.getfixturevalue("redis_url"),
         "vectors": request.getfixturevalue("chroma_server_url")}
        if tier == "shared" else {}
    )
    engine = open_engine(tmp_path / "home", embedder=model, clock=ManualClock(T0), **servers)
    tag = uuid.uuid4().hex[:8]
    at = [T0 + timedelta(minutes=i) for i in range(len(CONVERSATION))]
    one = f"one-{tag}"
    for i, text in enumerate(CONVERSATION):
        engine.observe(text, namespace=one, source=f"t{i}", at=at[i])
    expected = _links(engine, one)
    # the elliptical update, the move and the standup's new time are each linked
    f = len(FILLER)
    assert {(n, o) for n, o, _ in expected} >= {
        (f"t{f + 5}", "t0"), (f"t{f + 6}", "t2"), (f"t{f + 7}", "t3")}
    for size in (2, 5, 64):
        ns = f"bulk{size}-{tag}"
        engine.observe_many(
            [Observation(t, source=f"t{i}", at=at[i]) for i, t in enumerate(CONVERSATION)],
            namespace=ns, batch_size=size,
        )
        assert _links(engine, ns) == expected, (size, _links(engine, ns))
        engine.forget_namespace(ns)
    engine.forget_namespace(one)
    engine.close()
