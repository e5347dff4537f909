"""`consolidation.flagged_neighbors`: the vector index's approximate k-NN turned into
candidate rows of the cluster input, on hand-built vectors (angles in a plane)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from reverie.core import Policy
from reverie.core.consolidation import NeighborsOf, cluster_groups, flagged_neighbors
from reverie.core.models import Kind, Memory, Tier
from tests.unit.conftest import T0


def mem(i: str) -> Memory:
    return Memory(
        id=i, namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text=f"text {i}",
        created_at=T0, importance=0.2, sources=frozenset({f"src-{i}"}),
    )


def at(*degrees: float) -> np.ndarray:
    return np.asarray(
        [[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in degrees],
        dtype=np.float32,
    )


FLAGGED = [(mem(i), 0.2) for i in ("a", "b", "c", "d")]
VECS = at(0, 3, 90, 93)  # a~b, c~d
ON = Policy(cluster_index_knn_min=0)


Calls = list[tuple[list[str], int]]


def index_answer(answer: Mapping[str, Sequence[str]]) -> tuple[Calls, NeighborsOf]:
    calls: Calls = []

    def neighbors_of(ids: Sequence[str], k: int) -> Mapping[str, Sequence[str]]:
        calls.append((list(ids), k))
        return {i: list(answer[i]) for i in ids if i in answer}

    return calls, neighbors_of


def test_index_neighbours_are_filtered_to_the_flagged_rows() -> None:
    # "pin" is indexed but not flagged: dropped; the rows are indices into FLAGGED
    calls, near = index_answer({"a": ["pin", "b"], "b": ["a"], "c": ["d", "pin"], "d": ["c"]})
    rows = flagged_neighbors(FLAGGED, VECS, near, ON)
    assert rows == [[1], [0], [3], [2]]
    want = ON.maintenance.cluster_knn * ON.maintenance.cluster_neighbor_overfetch
    assert calls == [(["a", "b", "c", "d"], want)]
    groups = cluster_groups(FLAGGED, VECS, "union-find", ON, rows)
    assert [[m.id for m in g] for g in groups] == [["a", "b"], ["c", "d"]]


def test_an_id_the_index_lacks_is_searched_exactly_against_the_flagged() -> None:
    _, near = index_answer({"a": ["b"], "b": ["a"], "c": []})  # "d" is not indexed
    rows = flagged_neighbors(FLAGGED, VECS, near, ON)
    assert rows is not None
    assert rows[:3] == [[1], [0], []]
    assert sorted(rows[3]) == [0, 1, 2]  # every other flagged memory (k * 4 > 3), not itself
    groups = cluster_groups(FLAGGED, VECS, "union-find", ON, rows)
    assert [[m.id for m in g] for g in groups] == [["a", "b"], ["c", "d"]]  # d -> c links


def test_exact_knn_when_the_index_has_none_or_the_policy_says_so() -> None:
    calls, near = index_answer({"a": ["b"]})
    assert flagged_neighbors(FLAGGED, VECS, None, ON) is None
    off = Policy(cluster_index_knn_min=0, cluster_neighbor_overfetch=0)
    assert flagged_neighbors(FLAGGED, VECS, near, off) is None
    small = Policy(cluster_index_knn_min=5)  # 4 flagged: below the crossover
    assert flagged_neighbors(FLAGGED, VECS, near, small) is None
    assert calls == []
