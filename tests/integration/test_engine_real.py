"""The lifecycle end to end on real parts: a SQLite file, Chroma (embedded and a real
server process) and the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reverie.core import (
    DimensionMismatch,
    EmptyText,
    ManualClock,
    Status,
    Tier,
)
from reverie.core.engine import MemoryEngine
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["embedded-chroma", "chroma-server"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    vectors = (
        request.getfixturevalue("chroma_server_url")
        if request.param == "chroma-server"
        else None
    )
    ns = f"t-{uuid.uuid4().hex[:12]}"  # the server is shared by the session
    e = open_engine(tmp_path / "home", vectors=vectors, clock=ManualClock(T0), namespace=ns)
    yield e
    e.forget_namespace(ns)
    e.close()


def clock(e: MemoryEngine) -> ManualClock:
    assert isinstance(e.clock, ManualClock)
    return e.clock


def test_paraphrase_recall_supersession_and_promotion(engine: MemoryEngine) -> None:
    engine.observe("user: my sister Ana is getting married in Porto next June")
    engine.observe("user: I adopted a grey cat called Miso")
    engine.observe("user: lol ok")
    # a paraphrase with no shared content word still finds the right memory (dense channel)
    top = engine.recall("tell me about the user's pet", k=1)[0]
    assert "Miso" in top.text and top.explanation.dense > 0.3

    old = engine.remember("user", "works at", "Acme", source="s1")
    clock(engine).advance(days=20)
    new = engine.remember("user", "works at", "Globex", source="s2")
    hits = engine.recall("where does the user work?", k=3)
    texts = [h.text for h in hits]
    assert "user works at Globex" in texts and "user works at Acme" not in texts
    assert engine.get(old.id).status is Status.SUPERSEDED
    past = engine.recall("where does the user work?", k=3, as_of=T0 + timedelta(days=1))
    assert "user works at Acme" in [h.text for h in past]
    assert [v.id for v in engine.history("user", "works at")] == [old.id, new.id]

    for s in ("s3", "s4"):
        crystal = engine.remember("user", "works at", "Globex", source=s)
    assert crystal.tier is Tier.CRYSTAL


def test_a_change_in_free_text_ranks_first_on_real_embeddings(engine: MemoryEngine) -> None:
    before = engine.observe("user: I drink oat milk in my coffee")
    engine.observe("user: my favourite band is Radiohead")
    clock(engine).advance(days=2)
    after = engine.observe("user: actually I switched to almond milk in my coffee")
    # a plain-word value changed with a change word: possibly outdated, not retired
    assert engine.get(before.id).is_active
    ids = [h.id for h in engine.recall("what milk does the user take?", k=5)]
    assert ids[0] == after.id and before.id in ids
    # a typed value (a city) replaced with a change word retires the older statement
    home = engine.observe("user: I live in Leeds, near the canal")
    clock(engine).advance(days=30)
    moved = engine.observe("user: Actually I live in York now, near the canal")
    assert engine.get(home.id).status is Status.SUPERSEDED
    assert engine.get(home.id).superseded_by == moved.id
    ids = [h.id for h in engine.recall("where does the user live?", k=5)]
    assert moved.id in ids and home.id not in ids


def test_a_word_shared_by_accident_does_not_outrank_the_answer(engine: MemoryEngine) -> None:
    # In a young namespace one rare word is the best lexical match, so it counts as a
    # perfect one: "lovely" has the stem of "love", and outranked the answer, which says
    # it in other words. A question's true lexical matches are near it in meaning.
    answer = "user: Nothing beats a bowl of pho on a cold evening."
    lovely = "assistant: Portugal is lovely in spring: mild weather and fewer tourists."
    applied = "user: I finally sent the application for the museum job."
    for text in [
        answer,
        "assistant: Pho is a great pick for cold weather.",
        "user: Do you think Portugal is worth a visit in spring?",
        lovely,
        "user: My sister started learning the cello.",
        "assistant: For a stew, keep the heat low and taste as you go.",
        "user: I have a dentist appointment next Thursday.",
        applied,
    ]:
        clock(engine).advance(seconds=90)
        engine.observe(text)
    hits = engine.recall("What food do I love most?", k=10, reinforce=False)
    assert hits[0].text == answer
    stem_only = next(h for h in hits if h.text == lovely).explanation
    assert stem_only.dense < 0.2  # policy.retrieval.lexical_trust_low
    assert stem_only.lexical == 0.0  # its cosine alone, and what the turns around it lend
    assert stem_only.relevance == pytest.approx(0.5 * stem_only.dense + stem_only.context)
    # every hit of the question says the lexical half was dropped, and why it can be
    assert {h.explanation.lexical_trust for h in hits} == {0.0}
    assert stem_only.as_dict()["lexical_trust"] == 0.0
    # a match near the question in meaning keeps the lexical half whole
    hit = engine.recall("How is my museum job application going?", k=3, reinforce=False)[0]
    assert hit.text == applied
    assert hit.explanation.dense >= 0.35 and hit.explanation.lexical == pytest.approx(1.0)
    assert hit.explanation.lexical_trust == 1.0


def test_decay_over_weeks_and_reinforcement(engine: MemoryEngine) -> None:
    trivial = engine.observe("user: ok cool", source="a")
    normal = engine.observe("user: the team offsite is at the lake house", source="b")
    clock(engine).advance(days=28)
    hits = {h.id: h for h in engine.recall("team offsite lake house", k=5)}
    # S0 0.5 at two half-lives: 0.125; recall then reinforces it
    assert hits[normal.id].explanation.decay == pytest.approx(0.125, rel=1e-3)
    assert engine.get(normal.id).access_count == 1
    assert engine.get(trivial.id).importance == pytest.approx(0.2)


def test_bad_input_leaves_the_real_store_unchanged(engine: MemoryEngine) -> None:
    engine.observe("user: keep this")
    before = list(engine.export(engine.default_namespace))
    with pytest.raises(EmptyText):
        engine.observe_many(["a fine line", "   "])
    assert list(engine.export(engine.default_namespace)) == before
    assert engine.vectors.count(engine.default_namespace) == 1


def test_forget_removes_the_text_from_every_tier(engine: MemoryEngine) -> None:
    m = engine.observe("user: my card PIN is 9931")
    ns = engine.default_namespace
    engine.forget(m.id)
    assert engine.store.get(ns, m.id) is None
    assert m.id not in engine.vectors.ids(ns)
    assert engine.lexical.search(ns, "PIN 9931", 5) == []


def test_the_vector_index_holds_vectors_alone(engine: MemoryEngine) -> None:
    # what a memory is (its kind, its status) lives in the records only, so a vector
    # costs Chroma no metadata to write or to keep
    engine.observe("user: I live in Berlin")
    engine.observe_many(["user: my bike is blue", "user: the gym opens at 6"])
    engine.remember("user", "lives in", "Lisbon", source="s1")
    engine.flush()
    ns = engine.default_namespace
    got = engine.vectors.collection(ns).get(include=["metadatas"])
    assert len(got["ids"]) == 4
    assert got["metadatas"] == [None] * 4


def test_repair_after_losing_the_chroma_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    e = open_engine(home, clock=ManualClock(T0))
    for t in ("the boiler was serviced in March", "the car needs new tyres",
              "the dentist appointment moved to Friday", "the cat's vet is Dr. Silva"):
        e.observe(t)
    before = [h.id for h in e.recall("when is the dentist?", k=3, reinforce=False)]
    e.close()
    shutil.rmtree(home / "vectors")
    e = open_engine(home, clock=ManualClock(T0))
    assert e.vectors.count("default") == 0
    report = e.repair()
    assert report.indexed == 4
    assert [h.id for h in e.recall("when is the dentist?", k=3, reinforce=False)] == before
    e.close()


def test_another_embedder_is_refused_by_an_existing_store(tmp_path: Path) -> None:
    class Wider:
        name = "wider-model"
        dimension = 512

        def embed(self, texts: list[str]) -> None:  # never reached
            raise AssertionError

    open_engine(tmp_path / "h", embedder=LocalEmbedder()).close()
    with pytest.raises(DimensionMismatch, match="384"):
        open_engine(tmp_path / "h", embedder=Wider())  # type: ignore[arg-type]


def test_closing_an_engine_ends_its_threads(tmp_path: Path) -> None:
    """An application that opens and closes engines (one per tenant, one per job) keeps
    no thread of a closed one: embedded Chroma's call workers end with the engine."""
    import threading

    before = set(threading.enumerate())
    for i in range(3):
        e = open_engine(tmp_path / f"home{i}", clock=ManualClock(T0))
        e.observe_many([f"user: note number {n} about the garden" for n in range(20)])
        e.recall("garden", k=3)
        e.close()
    from tests.servers import wait_until

    def left() -> set[threading.Thread]:
        # the model's progress-bar monitor (tqdm) is one per process, not per engine
        return {t for t in threading.enumerate() if t.name != "tqdm_monitor"} - before

    wait_until(lambda: not left(), "the closed engines' threads to end", interval=0.05)
