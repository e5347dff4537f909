"""The VectorIndex contract, run against embedded Chroma and a real Chroma server.

Vectors are small hand-made ones whose nearest neighbours and cosines are known
exactly, so every assertion is about the index, not about an embedding model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from reverie.core.errors import (
    BackendUnavailable,
    InvalidInput,
    InvalidNamespace,
    InvalidVector,
    StoreCorrupt,
)
from reverie.core.ports import VectorIndex, VectorItem
from reverie.integrations.chroma.index import ChromaIndex, collection_name
from tests.servers import free_port, start_chroma

DIM = 8
NS = Callable[[str], str]


def unit(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def mix(a: int, b: int, wa: float, wb: float) -> np.ndarray:
    v = wa * unit(a) + wb * unit(b)
    return (v / np.linalg.norm(v)).astype(np.float32)


def items(n: int = DIM, **meta: str | int | float | bool) -> list[VectorItem]:
    return [VectorItem(f"m{i}", unit(i), {"slot": i, **meta}) for i in range(n)]


def test_is_a_vector_index(vector_index: ChromaIndex) -> None:
    assert isinstance(vector_index, VectorIndex)


def test_nearest_is_exact_on_known_vectors(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, items())
    # Query between axis 2 (weight 0.9) and axis 5 (0.3): m2, then m5, then the rest at 0.
    hits = vector_index.query(ns, mix(2, 5, 0.9, 0.3), k=3)
    assert [h.id for h in hits[:2]] == ["m2", "m5"]
    assert hits[0].similarity == pytest.approx(0.9 / math.hypot(0.9, 0.3), abs=1e-5)
    assert hits[1].similarity == pytest.approx(0.3 / math.hypot(0.9, 0.3), abs=1e-5)
    assert hits[2].similarity == pytest.approx(0.0, abs=1e-5)
    sims = [h.similarity for h in hits]
    assert sims == sorted(sims, reverse=True)


def test_similarity_identical_orthogonal_opposite(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, [VectorItem("x", unit(0)), VectorItem("y", unit(1))])
    by_id = {h.id: h.similarity for h in vector_index.query(ns, unit(0), k=2)}
    assert by_id["x"] == pytest.approx(1.0, abs=1e-5)
    assert by_id["y"] == pytest.approx(0.0, abs=1e-5)
    opposite = {h.id: h.similarity for h in vector_index.query(ns, -unit(0), k=2)}
    assert opposite["x"] == pytest.approx(-1.0, abs=1e-5)


def test_cosine_ignores_length(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, [VectorItem("long", 7.0 * unit(3))])
    (hit,) = vector_index.query(ns, 0.01 * unit(3), k=1)
    assert hit.similarity == pytest.approx(1.0, abs=1e-5)


def test_k_larger_than_collection_is_clamped(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, items(3))
    hits = vector_index.query(ns, unit(0), k=50)
    assert sorted(h.id for h in hits) == ["m0", "m1", "m2"]
    assert vector_index.query(ns, unit(0), k=0) == []


def test_empty_and_missing_namespace_return_nothing(
    vector_index: ChromaIndex, vector_ns: NS
) -> None:
    ns = vector_ns("never-written")
    assert vector_index.query(ns, unit(0), k=5) == []
    assert vector_index.count(ns) == 0
    assert vector_index.ids(ns) == set()
    vector_index.delete(ns, ["nope"])  # no error
    vector_index.set_metadata(ns, ["nope"], [{"a": 1}])  # no error
    assert vector_index.count(ns) == 0
    # A namespace emptied by delete keeps working.
    other = vector_ns("emptied")
    vector_index.upsert(other, items(2))
    vector_index.delete(other, ["m0", "m1"])
    assert vector_index.query(other, unit(0), k=5) == []
    assert vector_index.count(other) == 0


def test_upsert_replaces_vector_and_metadata(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, [VectorItem("x", unit(0), {"status": "active"})])
    vector_index.upsert(ns, [VectorItem("x", unit(1), {"status": "archived"})])
    assert vector_index.count(ns) == 1
    (hit,) = vector_index.query(ns, unit(1), k=1)
    assert hit.id == "x" and hit.similarity == pytest.approx(1.0, abs=1e-5)
    assert vector_index.query(ns, unit(1), k=1, where={"status": "active"}) == []


def test_where_filter_single_and_multi_key(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(
        ns,
        [
            VectorItem("a1", unit(0), {"status": "active", "kind": "semantic", "pinned": True}),
            VectorItem("a2", mix(0, 1, 0.8, 0.6), {"status": "active", "kind": "episodic"}),
            VectorItem("s1", mix(0, 2, 0.99, 0.1), {"status": "superseded", "kind": "semantic"}),
            VectorItem("n", unit(3), {"status": "active", "kind": "semantic", "n": 3}),
        ],
    )
    active = vector_index.query(ns, unit(0), k=10, where={"status": "active"})
    assert [h.id for h in active] == ["a1", "a2", "n"]
    both = vector_index.query(ns, unit(0), k=10, where={"status": "active", "kind": "semantic"})
    assert [h.id for h in both] == ["a1", "n"]
    assert [h.id for h in vector_index.query(ns, unit(0), k=10, where={"pinned": True})] == ["a1"]
    assert [h.id for h in vector_index.query(ns, unit(0), k=10, where={"n": 3})] == ["n"]
    assert vector_index.query(ns, unit(0), k=10, where={"status": "archived"}) == []
    assert len(vector_index.query(ns, unit(0), k=10, where={})) == 4


def test_filter_keeps_best_first_beyond_k(vector_index: ChromaIndex, vector_ns: NS) -> None:
    """The filter applies before the top-k cut: a filtered query still fills k."""
    ns = vector_ns("a")
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, DIM)).astype(np.float32)
    vector_index.upsert(
        ns,
        [VectorItem(f"v{i}", v, {"even": i % 2 == 0}) for i, v in enumerate(vecs)],
    )
    q = vecs[11]
    hits = vector_index.query(ns, q, k=10, where={"even": True})
    assert len(hits) == 10
    assert all(int(h.id[1:]) % 2 == 0 for h in hits)
    normed = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = normed @ (q / np.linalg.norm(q))
    exact = sorted((i for i in range(300) if i % 2 == 0), key=lambda i: -sims[i])[:10]
    assert {h.id for h in hits} == {f"v{i}" for i in exact}


def test_common_and_rare_filters_agree_with_exact(vector_index: ChromaIndex, vector_ns: NS) -> None:
    """Filters matching most items and filters matching few give the exact filtered top-k."""
    ns = vector_ns("a")
    rng = np.random.default_rng(3)
    n = 400
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    meta = [{"common": i % 10 != 0, "rare": i % 40 == 0} for i in range(n)]
    vector_index.upsert(
        ns, [VectorItem(f"v{i}", v, m) for i, (v, m) in enumerate(zip(vecs, meta, strict=True))]
    )
    normed = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    for qi in (5, 17, 123):
        sims = normed @ normed[qi]
        for key in ("common", "rare"):
            hits = vector_index.query(ns, vecs[qi], k=10, where={key: True})
            want = sorted((i for i in range(n) if meta[i][key]), key=lambda i: -sims[i])[:10]
            assert [h.id for h in hits] == [f"v{i}" for i in want], (qi, key)


@pytest.mark.parametrize("placement", ["nearest", "far"])
@pytest.mark.parametrize(
    ("stored", "wanted", "match"),
    [
        (3, 3, True),
        (3, 3.0, True),  # numbers compare numerically
        (2.5, 2.5, True),
        (True, True, True),
        (True, 1, False),  # a bool is not a number
        (1, True, False),
        ("3", 3, False),  # a string is not a number
        ("x", "x", True),
        ("x", "y", False),
    ],
)
def test_filter_value_semantics(
    vector_index: ChromaIndex,
    vector_ns: NS,
    placement: str,
    stored: str | int | float | bool,
    wanted: str | int | float | bool,
    match: bool,
) -> None:
    """Equality means the same whether the match is among the nearest items or far away."""
    ns = vector_ns("a")
    near = [VectorItem(f"n{i}", mix(0, 1 + i % 6, 1.0, 0.05 * (i + 1))) for i in range(80)]
    target_vec = unit(0) if placement == "nearest" else -unit(0)
    vector_index.upsert(ns, [*near, VectorItem("target", target_vec, {"f": stored})])
    hits = vector_index.query(ns, unit(0), k=1, where={"f": wanted})
    assert [h.id for h in hits] == (["target"] if match else [])


def test_set_metadata_then_filter(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, items(4, status="active"))
    vector_index.set_metadata(
        ns,
        ["m1", "ghost", "m3"],
        [{"status": "superseded"}, {"status": "x"}, {"status": "archived"}],
    )
    active = vector_index.query(ns, unit(1), k=10, where={"status": "active"})
    assert {h.id for h in active} == {"m0", "m2"}
    sup = vector_index.query(ns, unit(1), k=10, where={"status": "superseded"})
    assert [h.id for h in sup] == ["m1"]
    # Merge semantics: keys not named keep their values.
    kept = vector_index.query(ns, unit(1), k=10, where={"status": "superseded", "slot": 1})
    assert [h.id for h in kept] == ["m1"]
    assert "ghost" not in vector_index.ids(ns)
    with pytest.raises(InvalidInput):
        vector_index.set_metadata(ns, ["m0", "m1"], [{"status": "x"}])


def test_delete_and_ids_and_count(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, items())
    assert vector_index.count(ns) == DIM
    assert vector_index.ids(ns) == {f"m{i}" for i in range(DIM)}
    vector_index.delete(ns, ["m0", "m5", "unknown"])
    assert vector_index.count(ns) == DIM - 2
    assert vector_index.ids(ns) == {f"m{i}" for i in range(DIM)} - {"m0", "m5"}
    hits = vector_index.query(ns, unit(0), k=DIM)
    assert "m0" not in {h.id for h in hits}
    vector_index.delete(ns, [])


def test_ids_pages_through_large_namespaces(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("big")
    n = 12_345  # more than one ids() page and more than one Chroma upsert batch
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vector_index.upsert(ns, [VectorItem(f"i{k}", v) for k, v in enumerate(vecs)])
    assert vector_index.count(ns) == n
    assert vector_index.ids(ns) == {f"i{k}" for k in range(n)}


def test_namespace_isolation(vector_index: ChromaIndex, vector_ns: NS) -> None:
    a, b = vector_ns("alice"), vector_ns("bob")
    vector_index.upsert(a, [VectorItem("same", unit(0), {"owner": "alice"})])
    vector_index.upsert(b, [VectorItem("same", unit(1), {"owner": "bob"})])
    vector_index.upsert(b, [VectorItem("only-b", unit(0), {"owner": "bob"})])
    hits_a = vector_index.query(a, unit(0), k=10)
    assert [h.id for h in hits_a] == ["same"]
    assert hits_a[0].similarity == pytest.approx(1.0, abs=1e-5)
    hits_b = vector_index.query(b, unit(0), k=10)
    assert [h.id for h in hits_b] == ["only-b", "same"]
    assert hits_b[1].similarity == pytest.approx(0.0, abs=1e-5)
    assert vector_index.query(a, unit(0), k=10, where={"owner": "bob"}) == []
    vector_index.delete(a, ["same"])
    assert vector_index.ids(b) == {"same", "only-b"}
    assert vector_index.count(a) == 0


def test_namespaces_differing_in_one_char_map_to_distinct_collections(
    vector_index: ChromaIndex, vector_ns: NS
) -> None:
    a, b = vector_ns("user/al"), vector_ns("user-al")
    assert collection_name(a) != collection_name(b)
    vector_index.upsert(a, [VectorItem("x", unit(0))])
    assert vector_index.count(b) == 0


def test_drop_namespace(vector_index: ChromaIndex, vector_ns: NS) -> None:
    a, b = vector_ns("a"), vector_ns("b")
    vector_index.upsert(a, items())
    vector_index.upsert(b, items(2))
    vector_index.drop_namespace(a)
    assert vector_index.count(a) == 0
    assert vector_index.query(a, unit(0), k=3) == []
    assert vector_index.count(b) == 2
    vector_index.drop_namespace(a)  # idempotent
    # A dropped namespace forgets its dimension: a new embedder can start over.
    vector_index.upsert(a, [VectorItem("x", np.ones(3, dtype=np.float32))])
    assert vector_index.dimension(a) == 3


def test_namespace_dropped_by_another_client(
    vector_index: ChromaIndex, vector_index_twin: ChromaIndex, vector_ns: NS
) -> None:
    """A cached collection handle that another client dropped is re-resolved, not fatal."""
    ns = vector_ns("shared")
    vector_index.upsert(ns, items(3))
    assert vector_index_twin.count(ns) == 3
    vector_index_twin.drop_namespace(ns)
    assert vector_index.count(ns) == 0
    assert vector_index.query(ns, unit(0), k=3) == []
    vector_index.upsert(ns, items(2))
    assert vector_index_twin.ids(ns) == {"m0", "m1"}
    vector_index_twin.drop_namespace(ns)
    vector_index.set_metadata(ns, ["m0"], [{"a": 1}])
    vector_index.delete(ns, ["m0"])
    assert vector_index.ids(ns) == set()


def test_similarities_edge_cases(vector_index: ChromaIndex, vector_ns: NS) -> None:
    """Duplicates, more ids than one Chroma batch, and a dimension check before any fetch."""
    ns = vector_ns("a")
    vector_index.upsert(ns, items())
    many = [f"ghost{i}" for i in range(6000)] + ["m1", "m1", "m2"]
    got = vector_index.similarities(ns, mix(1, 2, 0.6, 0.8), many)
    assert got == pytest.approx({"m1": 0.6, "m2": 0.8}, abs=1e-5)
    with pytest.raises(InvalidVector, match="dimension"):
        vector_index.similarities(ns, unit(0, dim=4), ["m1"])
    with pytest.raises(InvalidVector):
        vector_index.similarities(ns, np.zeros(DIM, dtype=np.float32), ["m1"])


def test_nan_or_inf_raises_and_writes_nothing(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    bad = unit(1)
    bad[4] = np.nan
    with pytest.raises(InvalidVector, match="bad-one"):
        vector_index.upsert(ns, [VectorItem("good", unit(0)), VectorItem("bad-one", bad)])
    assert vector_index.count(ns) == 0
    inf = unit(2)
    inf[0] = np.inf
    with pytest.raises(InvalidVector, match="inf-one"):
        vector_index.upsert(ns, [VectorItem("inf-one", inf)])
    # float64 values that overflow float32 are infinite once stored: rejected too.
    with pytest.raises(InvalidVector):
        vector_index.upsert(ns, [VectorItem("huge", np.full(DIM, 1e300))])
    with pytest.raises(InvalidVector, match="zero"):
        vector_index.upsert(ns, [VectorItem("zero", np.zeros(DIM, dtype=np.float32))])
    assert vector_index.count(ns) == 0
    vector_index.upsert(ns, items(2))
    with pytest.raises(InvalidVector):
        vector_index.query(ns, bad, k=3)
    assert vector_index.count(ns) == 2


def test_wrong_dimension_raises_and_writes_nothing(
    vector_index: ChromaIndex, vector_ns: NS
) -> None:
    ns = vector_ns("a")
    with pytest.raises(InvalidVector, match="dimension"):
        vector_index.upsert(ns, [VectorItem("a", unit(0)), VectorItem("b", unit(0, dim=4))])
    assert vector_index.count(ns) == 0
    assert vector_index.dimension(ns) is None
    vector_index.upsert(ns, items(2))
    assert vector_index.dimension(ns) == DIM
    with pytest.raises(InvalidVector, match="8-dimensional"):
        vector_index.upsert(ns, [VectorItem("c", unit(0, dim=4))])
    assert vector_index.ids(ns) == {"m0", "m1"}
    with pytest.raises(InvalidVector, match="dimension"):
        vector_index.query(ns, unit(0, dim=4), k=3)
    with pytest.raises(InvalidVector):
        vector_index.upsert(ns, [VectorItem("m", np.ones((2, 4), dtype=np.float32))])
    assert vector_index.count(ns) == 2


def test_bad_input_is_rejected(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    with pytest.raises(InvalidNamespace):
        vector_index.upsert("bad namespace!", items(1))
    with pytest.raises(InvalidNamespace):
        vector_index.query("", unit(0), k=1)
    with pytest.raises(InvalidInput, match="twice"):
        vector_index.upsert(ns, [VectorItem("d", unit(0)), VectorItem("d", unit(1))])
    with pytest.raises(InvalidInput):
        vector_index.upsert(ns, [VectorItem("m", unit(0), {"nested": {"a": 1}})])  # type: ignore[dict-item]
    with pytest.raises(InvalidInput):
        vector_index.query(ns, unit(0), k=3, where={"$or": "x"})
    assert vector_index.count(ns) == 0


def test_upsert_of_nothing_creates_nothing(vector_index: ChromaIndex, vector_ns: NS) -> None:
    ns = vector_ns("a")
    vector_index.upsert(ns, [])
    assert vector_index.dimension(ns) is None


# --- implementation-specific: persistence, connection failures ------------------------


def test_embedded_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    with ChromaIndex.embedded(path) as index:
        index.upsert("user/alice", items(status="active"))
        index.set_metadata("user/alice", ["m2"], [{"status": "archived"}])
        index.delete("user/alice", ["m7"])
    with ChromaIndex.embedded(path) as again:
        assert again.count("user/alice") == DIM - 1
        assert again.dimension("user/alice") == DIM
        hits = again.query("user/alice", unit(2), k=1, where={"status": "active"})
        assert hits[0].id != "m2"
        assert again.query("user/alice", unit(2), k=1)[0].id == "m2"


def test_foreign_collection_under_our_name_is_never_used(tmp_path: Path) -> None:
    """The collision guard: a collection whose metadata names another namespace."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    client.create_collection(
        collection_name("user/alice"),
        metadata={"reverie_namespace": "user/mallory", "reverie_dimension": DIM},
        embedding_function=None,
    )
    index = ChromaIndex(client)
    with pytest.raises(StoreCorrupt, match="user/mallory"):
        index.query("user/alice", unit(0), k=1)
    with pytest.raises(StoreCorrupt):
        index.upsert("user/alice", items(1))
    with pytest.raises(StoreCorrupt):
        index.drop_namespace("user/alice")
    index.close()  # not ours to close
    assert client.get_collection(collection_name("user/alice"), embedding_function=None)
    client.close()


def test_closed_index_refuses_work(tmp_path: Path) -> None:
    index = ChromaIndex.embedded(tmp_path / "chroma")
    index.close()
    index.close()  # idempotent
    with pytest.raises(BackendUnavailable, match="closed"):
        index.count("a")


def test_unreachable_server_is_backend_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable, match=url.replace(".", r"\.")):
        ChromaIndex.server(url)


def test_bad_url_is_rejected() -> None:
    with pytest.raises(InvalidInput):
        ChromaIndex.server("127.0.0.1:8000")


@pytest.mark.slow
def test_server_going_away_is_backend_unavailable(tmp_path: Path) -> None:
    server, url = start_chroma(tmp_path / "data")
    try:
        index = ChromaIndex.server(url)
        index.upsert("a", items(2))
        assert index.count("a") == 2
    finally:
        server.stop()
    with pytest.raises(BackendUnavailable, match=url.replace(".", r"\.")):
        index.query("a", unit(0), k=1)
    with pytest.raises(BackendUnavailable):
        index.upsert("b", items(1))


# ------------------------------------------------------------------ neighbors (optional capability)


def test_neighbors_of_known_vectors_exclude_the_id_itself(
    vector_index: ChromaIndex, vector_ns: NS
) -> None:
    ns = vector_ns("a")
    # a at axis 0; b 0.9/0.3 towards axis 1 (cos to a 0.949); c on axis 1; d on axis 2
    vector_index.upsert(
        ns,
        [
            VectorItem("a", unit(0)),
            VectorItem("b", mix(0, 1, 0.9, 0.3)),
            VectorItem("c", unit(1)),
            VectorItem("d", unit(2)),
        ],
    )
    got = vector_index.neighbors(ns, ["a", "c", "nope"], k=2)
    assert set(got) == {"a", "c"}  # an unknown id is absent, not an error
    assert [h.id for h in got["a"]] == ["b", "c"] or [h.id for h in got["a"]] == ["b", "d"]
    assert got["a"][0].similarity == pytest.approx(0.9 / math.hypot(0.9, 0.3), abs=1e-5)
    assert got["a"][1].similarity == pytest.approx(0.0, abs=1e-5)
    assert got["c"][0].id == "b"
    assert got["c"][0].similarity == pytest.approx(0.3 / math.hypot(0.9, 0.3), abs=1e-5)
    for hits in got.values():
        assert len(hits) == 2
    assert "a" not in [h.id for h in got["a"]]
    assert vector_index.neighbors(ns, ["a"], k=0) == {}
    assert vector_index.neighbors(ns, [], k=3) == {}
    # k past the collection: every other id, no padding
    assert sorted(h.id for h in vector_index.neighbors(ns, ["d"], k=10)["d"]) == ["a", "b", "c"]
    with pytest.raises(InvalidInput):
        vector_index.neighbors(ns, "a", k=2)
    with pytest.raises(InvalidInput):
        vector_index.neighbors(ns, ["a"], k=1.5)  # type: ignore[arg-type]


def test_neighbors_match_exact_cosine_on_a_small_set(
    vector_index: ChromaIndex, vector_ns: NS
) -> None:
    ns = vector_ns("a")
    rng = np.random.default_rng(17)
    x = rng.normal(size=(200, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"v{i:03d}" for i in range(len(x))]
    vector_index.upsert(ns, [VectorItem(i, v) for i, v in zip(ids, x, strict=True)])
    k = 5
    got = vector_index.neighbors(ns, ids, k)
    assert set(got) == set(ids)
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    for row, qid in enumerate(ids):
        exact = np.argsort(-sims[row])[:k]
        hits = got[qid]
        assert [h.id for h in hits] == [ids[j] for j in exact]  # 200 points: HNSW is exact here
        assert [h.similarity for h in hits] == pytest.approx(sims[row, exact].tolist(), abs=1e-4)


def test_neighbors_stay_inside_the_namespace(vector_index: ChromaIndex, vector_ns: NS) -> None:
    a, b = vector_ns("a"), vector_ns("b")
    vector_index.upsert(a, [VectorItem("x", unit(0)), VectorItem("y", unit(1))])
    vector_index.upsert(b, [VectorItem("z", unit(0)), VectorItem("x", unit(0))])
    got = vector_index.neighbors(a, ["x"], k=5)
    assert [h.id for h in got["x"]] == ["y"]
    assert vector_index.neighbors(vector_ns("empty"), ["x"], k=5) == {}
