"""Embeddings kept beside the records (SQLite schema 3): recall scores lexical-only
candidates from them instead of a second vector-index round trip, repair rebuilds the
vector tier from them without the model, and deleting a record deletes its vector."""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reverie.core import InvalidInput, ManualClock, Policy
from reverie.core.ports import WriteBatch
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
TEXTS = (
    "the boiler was serviced in March",
    "the car needs new tyres before winter",
    "the dentist appointment moved to Friday",
    "the cat's vet is Dr. Silva on Rua Augusta",
)


class NoModel:
    """The real model's name and size, but embedding anything fails: proves a step did
    not need the model."""

    def __init__(self, real: LocalEmbedder) -> None:
        self.name, self.dimension = real.name, real.dimension

    def embed(self, texts: Any) -> Any:
        raise AssertionError("the model was called")


def _db(engine: Any) -> Path:
    return Path(engine.store.path)


def test_observed_vectors_are_kept_and_equal_the_indexed_ones(tmp_path: Path) -> None:
    e = open_engine(tmp_path / "h", clock=ManualClock(T0))
    ids = [e.observe(t).id for t in TEXTS]
    e.flush()  # observe writes vectors behind the caller; read the store directly after
    kept = e.store.embeddings("default", ids)
    indexed = e.vectors.stored_vectors("default", ids)
    assert sorted(kept) == sorted(ids)
    for i in ids:
        # kept at half precision (integrations/kept_vectors.py): each value within its
        # 11 significant bits of the indexed one (which Chroma re-normalised, to float32
        # rounding), and the cosine between the two all but 1
        assert kept[i].dtype == np.float32
        np.testing.assert_allclose(kept[i], indexed[i], rtol=2.0**-11, atol=1e-6)
        cos = kept[i] @ indexed[i] / (np.linalg.norm(kept[i]) * np.linalg.norm(indexed[i]))
        assert cos > 1 - 1e-6
    e.close()


@pytest.mark.parametrize("tier", ["embedded", "shared"])
def test_lexical_only_candidates_are_scored_from_kept_vectors(
    tier: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """On SQLite + embedded Chroma and on Redis + a Chroma server alike."""
    if tier == "embedded":
        e = open_engine(tmp_path / "h", clock=ManualClock(T0))
    else:
        e = open_engine(
            tmp_path / "h", store=str(request.getfixturevalue("redis_url")),
            vectors=str(request.getfixturevalue("chroma_server_url")), clock=ManualClock(T0),
            namespace=f"t-{uuid.uuid4().hex[:10]}",
        )
    for t in TEXTS:
        e.observe(t)
    asked: list[list[str]] = []
    real = e.vectors.similarities

    def spy(ns: str, vector: Any, ids: Any) -> dict[str, float]:
        asked.append(list(ids))
        return real(ns, vector, ids)

    e.vectors.similarities = spy  # type: ignore[method-assign]
    # a pool of 1: the dense channel returns one memory, so a word match elsewhere is a
    # lexical-only candidate whose cosine must come from somewhere
    e.policy = Policy(candidate_pool=1)
    query = "who is the vet for the cat and the dentist"
    hits = e.recall(query, k=4, reinforce=False)
    assert asked == []  # never asked the index
    model = LocalEmbedder()
    q, docs = model.embed([query]), model.embed([h.text for h in hits])
    for h, d in zip(hits, docs, strict=True):
        cos = float(d @ q[0] / (np.linalg.norm(d) * np.linalg.norm(q[0])))
        # the kept vector is half precision: its cosine within 1e-4 of the model's
        assert h.explanation.dense == pytest.approx(max(0.0, cos), abs=1e-4)
    e.forget_namespace(e.default_namespace)
    e.close()


def test_repair_rebuilds_the_vector_tier_from_kept_vectors_without_the_model(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h"
    e = open_engine(home, clock=ManualClock(T0))
    for t in TEXTS:
        e.observe(t)
    before = e.recall("when is the dentist?", k=3, reinforce=False)
    e.close()
    shutil.rmtree(home / "vectors")
    e = open_engine(home, embedder=NoModel(LocalEmbedder()), clock=ManualClock(T0))
    assert e.repair().indexed == 4
    e.close()
    e = open_engine(home, clock=ManualClock(T0))
    after = e.recall("when is the dentist?", k=3, reinforce=False)
    # the same hits in the same order; the rebuilt index holds the kept half-precision
    # vectors, so a score may move in its fifth decimal
    assert [h.id for h in after] == [h.id for h in before]
    for a, b in zip(after, before, strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-4)
    e.close()


def test_repair_fills_in_vectors_missing_beside_records(tmp_path: Path) -> None:
    """Records written before schema 3 carry no vector; repair copies the index's."""
    home = tmp_path / "h"
    e = open_engine(home, clock=ManualClock(T0))
    ids = [e.observe(t).id for t in TEXTS]
    e.close()
    conn = sqlite3.connect(next(home.glob("*.db")))
    conn.execute("UPDATE memories SET embedding = NULL")
    conn.commit()
    conn.close()
    e = open_engine(home, embedder=NoModel(LocalEmbedder()), clock=ManualClock(T0))
    assert e.store.embeddings("default", ids) == {}
    report = e.repair()
    assert report.indexed == 0 and report.checked == 4
    kept, indexed = e.store.embeddings("default", ids), e.vectors.stored_vectors("default", ids)
    for i in ids:
        np.testing.assert_allclose(kept[i], indexed[i], rtol=2.0**-11, atol=1e-6)
    e.close()


def test_forget_erases_the_kept_vector_from_the_file(tmp_path: Path) -> None:
    home = tmp_path / "h"
    e = open_engine(home, clock=ManualClock(T0))
    m = e.observe("user: my card PIN is 9931")
    e.observe("the car needs new tyres")
    e.flush()
    blob = e.store.embeddings("default", [m.id])[m.id].astype("<f4").tobytes()
    e.forget(m.id)
    assert e.store.embeddings("default", [m.id]) == {}
    db = _db(e)
    e.close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert blob[:64] not in db.read_bytes()  # secure_delete zeroed the freed cells


def test_store_keeps_vectors_per_namespace_and_refuses_bad_ones(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        store.commit(WriteBatch("a", (make_memory(id="x", namespace="a"),)))
        store.commit(WriteBatch("b", (make_memory(id="x", namespace="b"),)))
        va, vb = np.array([1.0, 0.0, 0.5], np.float32), np.array([0.0, 2.0, 0.0], np.float32)
        assert store.put_embeddings("a", {"x": va, "ghost": vb}) == 1  # no record, no vector
        assert store.put_embeddings("b", {"x": vb}) == 1
        assert np.array_equal(store.embeddings("a", ["x", "ghost"])["x"], va)
        assert list(store.embeddings("a", ["x", "ghost"])) == ["x"]
        assert np.array_equal(store.embeddings("b", ["x"])["x"], vb)
        for bad in (np.array([np.nan, 1.0]), np.zeros((2, 2)), np.array([])):
            with pytest.raises(InvalidInput):
                store.put_embeddings("a", {"x": va, "y": bad})
        # a refused call wrote nothing, not even its valid part
        assert np.array_equal(store.embeddings("a", ["x"])["x"], va)
        with pytest.raises(InvalidInput):
            store.put_embeddings("a", {"x": np.array([np.inf, 1.0])})
        assert np.array_equal(store.embeddings("a", ["x"])["x"], va)


def test_a_search_with_kept_rows_gives_the_hits_and_embeddings_of_separate_reads(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        texts = ["the boiler in the basement", "the boiler was serviced", "a boiler quote",
                 "new tyres for the car", "the boiler pressure is low again"]
        mems = [make_memory(id=f"b{i}", namespace="a", text=t) for i, t in enumerate(texts)]
        mems.append(make_memory(id="other", namespace="z", text="the boiler next door"))
        for m in mems:
            store.commit(WriteBatch(m.namespace, (m,)))
        rng = np.random.default_rng(5)
        store.put_embeddings("a", {
            m.id: rng.standard_normal(6).astype(np.float32) for m in mems[:4]  # b4: none
        })
        store.put_embeddings("z", {"other": rng.standard_normal(6).astype(np.float32)})
        found = store.search_kept("a", "boiler", 10)
        hits = store.search("a", "boiler", 10)
        assert found.hits == hits and {h.id for h in hits} == {"b0", "b1", "b2", "b4"}
        kept = store.embeddings("a", [h.id for h in hits])
        assert sorted(found.embeddings) == sorted(kept) == ["b0", "b1", "b2"]
        for i, v in kept.items():
            assert found.embeddings[i].dtype == np.float32
            assert np.array_equal(found.embeddings[i], v)
        assert store.search_kept("a", "?!", 10) == ([], {})  # no query terms
        assert store.search_kept("a", "boiler", 0) == ([], {})
