"""The REM clustering strategies on hand-built inputs with known answers.

Vectors are built from angles in a plane so every similarity below is cos(angle
difference), computable by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core.clustering import (
    STRATEGIES,
    ClusterInput,
    knn,
    make_clusterer,
    recombination_history,
)
from reverie.core.errors import InvalidInput, InvalidPolicy
from reverie.core.policy import Policy


def at(*degrees: float) -> np.ndarray:
    return np.asarray(
        [[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in degrees],
        dtype=np.float32,
    )


def items(
    vectors: np.ndarray,
    importance: list[float] | None = None,
    entities: list[frozenset[str]] | None = None,
) -> ClusterInput:
    n = len(vectors)
    return ClusterInput(
        ids=[f"m{i:03d}" for i in range(n)],
        vectors=np.asarray(vectors, dtype=np.float32),
        importance=np.asarray(importance if importance is not None else [0.2] * n),
        entities=entities if entities is not None else [frozenset()] * n,
    )


def blobs(n_blobs: int, per: int, dim: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_blobs, dim))
    x = np.repeat(centres / np.linalg.norm(centres, axis=1, keepdims=True), per, axis=0)
    x = x + noise * rng.normal(size=x.shape)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


UF = make_clusterer("union-find", Policy())


# ------------------------------------------------------------------ union-find


def test_union_find_joins_close_pairs_and_leaves_far_points_alone() -> None:
    # pairs 5 degrees apart (cos 0.996), the pairs 90 degrees apart, one point alone at 200
    policy = Policy(cluster_theta=0.9, cluster_medoid_theta=0.0)
    got = UF(items(at(0, 5, 90, 95, 200)), policy)
    assert got == [[0, 1], [2, 3]]


def test_entity_link_needs_the_lower_similarity_bar_not_just_the_entity() -> None:
    # cos(45 deg) = 0.707: under theta 0.78, over the entity bar 0.6
    policy = Policy(cluster_theta=0.78, cluster_entity_theta=0.6, cluster_medoid_theta=0.0)
    alice = frozenset({"alice"})
    assert UF(items(at(0, 45), entities=[alice, alice]), policy) == [[0, 1]]
    assert UF(items(at(0, 45), entities=[alice, frozenset({"bob"})]), policy) == []
    # cos(60 deg) = 0.5: the shared entity alone does not link them
    assert UF(items(at(0, 60), entities=[alice, alice]), policy) == []


def test_chaining_guard_splits_a_topic_drift_at_the_medoid() -> None:
    # 0-20-40-60-80 degrees: neighbours cos 0.940 >= theta 0.9, so single linkage chains all
    # five. The medoid is the 40-degree point; the ends are cos 0.766 from it.
    chain = items(at(0, 20, 40, 60, 80))
    unguarded = Policy(cluster_theta=0.9, cluster_medoid_theta=0.0)
    guarded = Policy(cluster_theta=0.9, cluster_medoid_theta=0.9)
    assert UF(chain, unguarded) == [[0, 1, 2, 3, 4]]
    # the ends split off; they are cos(80 deg) = 0.17 apart, so they stay alone
    assert UF(chain, guarded) == [[1, 2, 3]]


def test_chaining_guard_regroups_what_it_split_off() -> None:
    # two tight pairs bridged by a middle point; the guard cuts around the medoid and the
    # split-off pair, still linked to each other, comes back as its own group
    pts = at(0, 4, 12, 20, 24)  # neighbours 4 or 8 degrees apart: cos >= 0.990
    policy = Policy(cluster_theta=0.99, cluster_medoid_theta=0.995, cluster_knn=2)
    got = UF(items(pts), policy)
    # medoid is the 12-degree point; cos(8 deg) = 0.9903 < 0.995 keeps only itself, so the
    # pairs {0, 1} and {3, 4} (4 degrees apart, cos 0.9976) are regrouped on their own links
    assert got == [[0, 1], [3, 4]]


def test_size_cap_refuses_the_join_that_would_exceed_it() -> None:
    # gaps 1, 2, 3, 4 degrees: strongest links first join {0, 1, 2}; joining 3 would make 4
    # members (cap 3), so 3 pairs with 4 instead
    policy = Policy(cluster_theta=0.9, cluster_medoid_theta=0.0, cluster_max_size=3)
    assert UF(items(at(0, 1, 3, 6, 10)), policy) == [[0, 1, 2], [3, 4]]


def test_union_find_on_blobs_finds_each_blob() -> None:
    x = blobs(4, 5, 32, 0.05, seed=1)
    got = UF(items(x), Policy())
    assert got == [list(range(b * 5, b * 5 + 5)) for b in range(4)]


def test_knn_is_exact_and_the_threshold_only_drops_weaker_neighbours() -> None:
    # 2-D points at known angles: the neighbours of the 0-degree point are 10, 30, 70 degrees
    pts = at(0, 10, 30, 70, 180)
    idx, sim = knn(pts, 3)
    assert idx[0].tolist() == [1, 2, 3]
    assert sim[0] == pytest.approx([math.cos(math.radians(a)) for a in (10, 30, 70)], abs=1e-6)
    # a bar of cos 45 keeps the first two, pads the rest
    idx_bar, sim_bar = knn(pts, 3, min_sim=math.cos(math.radians(45)))
    assert idx_bar[0].tolist() == [1, 2, -1]
    assert sim_bar[0][2] == -np.inf
    # on random data, the thresholded rows are the full rows with the weak tail cut
    x = blobs(40, 5, 16, 0.3, seed=9)
    full_idx, full_sim = knn(x, 8)
    cut_idx, _ = knn(x, 8, min_sim=0.8)
    strong = full_sim >= 0.8
    assert 0 < strong.sum() < strong.size
    assert np.array_equal(cut_idx[strong], full_idx[strong])
    assert np.all(cut_idx[~strong] == -1)


# ------------------------------------------------------------------ recombination

# A at 0 degrees (importance 0.9), B at 40 and C at 60 (importance 0.2 each).
# chord^2 = 2 - 2 cos: AB 0.467911, BC 0.120615, AC 1.0.
ABC = items(at(0, 40, 60), importance=[0.9, 0.2, 0.2])


def recomb(p: float, radius: float = 1.0, cut: float = 2.0) -> Policy:
    return Policy(
        cluster_recomb_p=p,
        cluster_recomb_radius=radius,
        cluster_recomb_cut=cut,
    )


def test_recombination_p0_is_cambridge_aachen_closest_angle_first() -> None:
    # p = 0: d_ij = chord^2 / R^2, beam d_iB = 1. BC (0.1206) merges first; BC sits at 50
    # degrees (equal weights), so d(A, BC) = 2 - 2 cos 50 = 0.7144 < 1: A joins.
    groups, merges = recombination_history(ABC, recomb(0.0))
    assert [(m.a, m.b) for m in merges] == [((1,), (2,)), ((0,), (1, 2))]
    assert merges[0].d == pytest.approx(0.120615, abs=1e-5)
    assert merges[1].d == pytest.approx(0.714425, abs=1e-5)
    assert groups == [[0, 1, 2]]


def test_recombination_p_minus_1_is_anti_kt_important_point_grabs_first() -> None:
    # p = -1: d_ij = chord^2 / max(w)^2. d_AB = 0.467911 / 0.81 = 0.577668,
    # d_BC = 0.120615 / 0.04 = 3.0154, d_AC = 1 / 0.81 = 1.2346; beams 1/0.81 and 25.
    # AB merges first; its vector 0.9 A + 0.2 B points at 6.96 degrees, weight 1.1:
    # d(AB, C) = (2 - 2 cos 53.04) / 1.21 = 0.797506 / 1.21 = 0.659096 < beam 1/1.21 = 0.8264.
    groups, merges = recombination_history(ABC, recomb(-1.0))
    assert [(m.a, m.b) for m in merges] == [((0,), (1,)), ((0, 1), (2,))]
    assert merges[0].d == pytest.approx(0.577668, abs=1e-5)
    assert merges[1].d == pytest.approx(0.659096, abs=1e-5)
    assert groups == [[0, 1, 2]]


def test_recombination_radius_and_cut_stop_merging() -> None:
    # R = 0.5: d_BC = 0.1206 / 0.25 = 0.48 < 1 merges; d(A, BC) = 0.7144 / 0.25 = 2.86 > 1,
    # so A's beam distance wins and A stays alone
    assert recombination_history(ABC, recomb(0.0, radius=0.5))[0] == [[1, 2]]
    # cut 0.1 (cosine distance): BC is 1 - cos 20 = 0.060 apart, A-BC 1 - cos 50 = 0.357
    assert recombination_history(ABC, recomb(0.0, cut=0.1))[0] == [[1, 2]]


def test_recombination_respects_the_cap() -> None:
    policy = recomb(0.0).replace(cluster_max_size=2)
    groups, merges = recombination_history(ABC, policy)
    assert groups == [[1, 2]] and len(merges) == 1


# ------------------------------------------------------------------ hdbscan


def test_hdbscan_finds_separated_blobs() -> None:
    x = blobs(3, 6, 16, 0.03, seed=2)
    got = make_clusterer("hdbscan", Policy())(items(x), Policy())
    assert got == [list(range(b * 6, b * 6 + 6)) for b in range(3)]


def test_hdbscan_cuts_an_oversized_cluster_to_the_cap() -> None:
    # two blobs of 10; each is cut around its medoid into 4 + 4 + 2
    x = blobs(2, 10, 16, 0.03, seed=3)
    policy = Policy(cluster_max_size=4)
    got = make_clusterer("hdbscan", policy)(items(x), policy)
    assert sorted(len(g) for g in got) == [2, 2, 4, 4, 4, 4]
    for g in got:  # no piece mixes the blobs
        assert len({i // 10 for i in g}) == 1


# ------------------------------------------------------------------ all strategies


@pytest.mark.parametrize("name", STRATEGIES)
def test_same_groups_whatever_the_input_order(name: str) -> None:
    x = blobs(6, 5, 24, 0.12, seed=4)
    rng = np.random.default_rng(5)
    imp = rng.random(len(x))
    base = items(x, importance=list(imp))
    policy = Policy()
    expected = {
        frozenset(base.ids[i] for i in g) for g in make_clusterer(name, policy)(base, policy)
    }
    assert expected  # the blobs are there to be found
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(len(x))
        shuffled = ClusterInput(
            ids=[base.ids[i] for i in perm],
            vectors=x[perm],
            importance=imp[perm],
            entities=[base.entities[i] for i in perm],
        )
        got = make_clusterer(name, policy)(shuffled, policy)
        assert {frozenset(shuffled.ids[i] for i in g) for g in got} == expected


def test_unknown_strategy_is_a_typed_error() -> None:
    with pytest.raises(InvalidInput, match="union-find"):
        make_clusterer("kmeans", Policy())


@pytest.mark.parametrize(
    "bad",
    [
        dict(ids=["a", "a"]),
        dict(vectors=np.asarray([[1.0, 0.0], [np.nan, 0.0]], dtype=np.float32)),
        dict(importance=np.asarray([0.5, 1.5])),
        dict(entities=[frozenset()]),
        dict(vectors=np.zeros((3, 2), dtype=np.float32)),
    ],
)
def test_bad_input_is_rejected(bad: dict[str, object]) -> None:
    good: dict[str, object] = dict(
        ids=["a", "b"],
        vectors=at(0, 10),
        importance=np.asarray([0.1, 0.2]),
        entities=[frozenset(), frozenset()],
    )
    with pytest.raises(InvalidInput):
        ClusterInput(**{**good, **bad})  # type: ignore[arg-type]


def test_tiny_inputs_give_no_groups() -> None:
    for name in STRATEGIES:
        assert make_clusterer(name, Policy())(items(at(0)), Policy()) == []
        assert make_clusterer(name, Policy())(items(at()[:0].reshape(0, 2)), Policy()) == []


def test_policy_accepts_negative_p_only() -> None:
    assert Policy(cluster_recomb_p=-1.0).maintenance.cluster_recomb_p == -1.0
    for bad in (
        dict(cluster_recomb_radius=0.0),
        dict(cluster_recomb_cut=2.5),
        dict(cluster_medoid_theta=1.2),
        dict(cluster_entity_theta=-0.1),
        dict(cluster_hdbscan_min_cluster_size=1),
    ):
        with pytest.raises(InvalidPolicy):
            Policy(**bad)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=30),
    cap=st.integers(min_value=2, max_value=5),
    seed=st.integers(min_value=0, max_value=10_000),
    name=st.sampled_from(STRATEGIES),
)
def test_every_index_in_at_most_one_group_and_no_group_over_the_cap(
    n: int, cap: int, seed: int, name: str
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-6)
    words = ["alice", "bob", "paris"]
    ents = [frozenset(w for w in words if rng.random() < 0.3) for _ in range(n)]
    policy = Policy(
        cluster_max_size=cap,
        cluster_theta=0.8,
        cluster_recomb_cut=0.5,
        cluster_recomb_p=float(rng.choice([-1.0, 0.0, 1.0])),
    )
    got = make_clusterer(name, policy)(
        ClusterInput([f"i{i}" for i in range(n)], x, rng.random(n), ents), policy
    )
    flat = [i for g in got for i in g]
    assert len(flat) == len(set(flat))
    assert all(0 <= i < n for i in flat)
    assert all(2 <= len(g) <= cap and g == sorted(g) for g in got)
    assert [g[0] for g in got] == sorted(g[0] for g in got)


# ------------------------------------------------------------------ given neighbours


def with_neighbors(base: ClusterInput, neighbors: list[list[int]]) -> ClusterInput:
    return ClusterInput(base.ids, base.vectors, base.importance, base.entities, neighbors)


def test_given_neighbours_on_a_hand_built_case_match_the_exact_knn() -> None:
    # the size-cap case: gaps 1, 2, 3, 4 degrees; groups [0, 1, 2], [3, 4] (see above)
    policy = Policy(cluster_theta=0.9, cluster_medoid_theta=0.0, cluster_max_size=3)
    base = items(at(0, 1, 3, 6, 10))
    # every other point as a candidate, scrambled, with a self entry and a repeat
    cands = [[4, 2, i, 3, 1, 0, 2] for i in range(5)]
    assert UF(with_neighbors(base, cands), policy) == UF(base, policy) == [[0, 1, 2], [3, 4]]
    # only the chain's adjacent points as candidates: same links above theta, same groups
    chain = [[1], [0, 2], [1, 3], [2, 4], [3]]
    assert UF(with_neighbors(base, chain), policy) == [[0, 1, 2], [3, 4]]
    # no candidate for point 4 and none pointing at it: 3 and 4 are never linked
    cut = [[1], [0, 2], [1, 3], [2], []]
    assert UF(with_neighbors(base, cut), policy) == [[0, 1, 2]]


@pytest.mark.parametrize("name", ["union-find", "recombination"])
def test_exact_neighbours_passed_in_give_the_built_in_knn_groups(name: str) -> None:
    x = blobs(12, 6, 24, 0.15, seed=11)
    rng = np.random.default_rng(3)
    base = items(x, importance=list(rng.random(len(x))))
    policy = Policy()
    idx, _ = knn(x, 3 * policy.maintenance.cluster_knn)  # a superset of each row's k-NN
    given_rows = [[int(j) for j in row[::-1]] for row in idx]  # worst first: order is irrelevant
    expected = make_clusterer(name, policy)(base, policy)
    assert expected
    assert make_clusterer(name, policy)(with_neighbors(base, given_rows), policy) == expected


def test_given_neighbours_are_permuted_with_the_input() -> None:
    x = blobs(6, 5, 24, 0.12, seed=4)
    base = items(x)
    idx, _ = knn(x, 8)
    rows = [[int(j) for j in r] for r in idx]
    policy = Policy()
    expected = {frozenset(base.ids[i] for i in g) for g in UF(with_neighbors(base, rows), policy)}
    assert expected
    perm = np.random.default_rng(1).permutation(len(x))
    inv = np.argsort(perm)
    shuffled = ClusterInput(
        ids=[base.ids[i] for i in perm],
        vectors=x[perm],
        importance=np.asarray(base.importance)[perm],
        entities=[base.entities[i] for i in perm],
        neighbors=[[int(inv[j]) for j in rows[i]] for i in perm],
    )
    got = UF(shuffled, policy)
    assert {frozenset(shuffled.ids[i] for i in g) for g in got} == expected


@pytest.mark.parametrize("bad", [[[1], [2]], [[1], [0], [0]], [[-1], [0]], [[True], [0]]])
def test_bad_neighbours_are_rejected(bad: list[list[int]]) -> None:
    with pytest.raises(InvalidInput, match="neighbors"):
        ClusterInput(["a", "b"], at(0, 10), np.asarray([0.1, 0.2]), [frozenset()] * 2, bad)


# ------------------------------------------------------------------ k-NN by cells


def test_the_search_by_cells_is_the_exact_knn_when_every_cell_is_probed() -> None:
    from reverie.core.cluster_base import cell_knn

    x = blobs(30, 8, 24, 0.3, seed=5)
    for bar in (None, 0.8):
        exact_idx, exact_sim = knn(x, 8, min_sim=bar)
        idx, sim = cell_knn(x, 8, bar, cells=6, probe=6)  # each row listed in every cell
        assert np.array_equal(idx, exact_idx)
        assert np.allclose(sim, exact_sim)


def test_the_search_by_cells_finds_the_near_neighbours_of_grouped_points() -> None:
    from reverie.core.cluster_base import cell_knn

    x = blobs(200, 6, 32, 0.08, seed=8)  # 1,200 points around 200 centres
    exact_idx, _ = knn(x, 8, min_sim=0.7)
    idx, _ = cell_knn(x, 8, 0.7, cells=24, probe=4)  # a sixth of the cells searched
    exact = {(r, int(j)) for r in range(len(x)) for j in exact_idx[r] if j >= 0}
    found = {(r, int(j)) for r in range(len(x)) for j in idx[r] if j >= 0}
    assert exact and len(exact & found) / len(exact) >= 0.95
    # a found neighbour is a true one: the same similarity bar, nothing invented
    assert all(float(x[r] @ x[j]) >= 0.7 - 1e-6 for r, j in found)
    assert cell_knn(x, 8, 0.7, cells=24, probe=4)[0].tolist() == idx.tolist()  # repeatable


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12), st.integers(1, 30), st.integers(1, 32), st.integers(0, 2**32 - 1),
    st.integers(0, 4),
)
def test_the_cells_a_point_is_listed_in_are_a_stable_sort_s_even_on_ties(
    rows: int, cols: int, m: int, seed: int, floor: int
) -> None:
    """Few distinct values, so ties cross the cut often: the partition's answer must be
    the stable sort's, the lower column first, and the threshold's the mask's."""
    from reverie.core.cluster_base import _at_least, _best_columns

    s = np.random.default_rng(seed).integers(0, 5, (rows, cols)).astype(np.float32)
    want = np.argsort(-s, axis=1, kind="stable")[:, :m]
    assert np.array_equal(_best_columns(s, m), want)
    r, c = _at_least(s, float(floor))
    want_r, want_c = np.nonzero(s >= floor)
    assert np.array_equal(r, want_r) and np.array_equal(c, want_c)


def test_the_clusterer_searches_by_cells_from_cluster_cells_min_memories() -> None:
    x = blobs(40, 6, 24, 0.15, seed=12)
    base = items(x)
    exact = make_clusterer("union-find", Policy(cluster_cells_min=0))(base, Policy())
    assert exact
    # from 100 memories on, by cells; every cell probed, so the same groups
    cells = Policy(cluster_cells_min=100, cluster_cell_size=40, cluster_cell_probe=6)
    assert make_clusterer("union-find", cells)(base, cells) == exact
    # one probe of six cells: some links are lost, and the groups can only split
    lossy = Policy(cluster_cells_min=100, cluster_cell_size=40, cluster_cell_probe=1)
    got = make_clusterer("union-find", lossy)(base, lossy)
    assert all(any(set(g) <= set(e) for e in exact) for g in got)
