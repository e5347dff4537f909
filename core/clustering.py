"""Clustering the REM cycle's flagged memories: which low-importance memories say the same thing.

One interface, three strategies. A caller builds a `ClusterInput` (ids, unit vectors,
importance, entities: row i of every field is memory i), gets a strategy with
`make_clusterer(name, policy)` and calls it; the answer is a list of groups of row
indices. The contract every strategy keeps, because the cycle relies on it:

- each group has at least 2 members (a singleton has nothing to merge with);
- no index is in two groups; no group is larger than `policy.maintenance.cluster_max_size`;
- each group is sorted, the groups are sorted by their first index;
- the answer depends on the memories, not on the order they were passed in: the input
  is put in a canonical order (by id) before any work, so a permutation of the input
  gives the same groups relabelled.

Strategies:

- ``"union-find"`` (default): k-NN links with similarity >= `cluster_theta`, plus
  shared-entity links between k-NN neighbours at least `cluster_entity_theta` similar
  (an entity alone is weak evidence: two memories naming "Alice" are rarely about the
  same thing). Links are joined strongest first and a join that would exceed the size
  cap is refused; then a chaining guard keeps in a group only the members at least
  `cluster_medoid_theta` similar to its medoid, so single linkage cannot drift across a
  topic. Split-off members are regrouped among themselves by the same rules.
- ``"hdbscan"``: scikit-learn's HDBSCAN (imported lazily), optionally on the top
  `cluster_pca_dims` principal components; noise is left unclustered and oversized
  clusters are cut to the cap around their medoid.
- ``"recombination"``: importance-weighted generalised sequential recombination, the
  jet-clustering family: d_ij = min(w_i^2p, w_j^2p) * dist_ij^2 / R^2 between
  candidates, d_iB = w_i^2p to the "beam"; the smallest distance acts: a pair merges
  (vector = importance-weighted mean, renormalised; weights add), a beam distance
  closes its cluster. p = 0 is Cambridge/Aachen, p = -1 anti-kt, p = 1 kt. dist_ij is
  the chord between unit vectors (sqrt(2 - 2 cos)); pairs with cosine distance above
  `cluster_recomb_cut`, or whose merge would exceed the cap, never merge. Candidates
  come from a k-NN graph and a heap, so the cost is about n k log n after the k-NN.

The input, the k-NN and the other shared pieces are in core/cluster_base.py. The exact
k-NN is the n^2 part of every strategy (benchmarks/results/clustering.md has the costs
and the defaults' quality). A caller with an approximate neighbour graph (the vector
index's HNSW) passes it as `ClusterInput.neighbors`, and union-find and recombination
search only those candidates; a query to the index has a fixed cost, so the cycle does
that only above `policy.maintenance.cluster_index_knn_min` flagged memories
(benchmarks/results/knn_speed.md).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .cluster_base import (
    Clusterer,
    ClusterInput,
    DisjointSet,
    Groups,
    candidate_knn,
    canonical,
    knn,
    medoid,
    nearest,
    split_to_cap,
    unit_rows,
)
from .errors import InvalidInput
from .policy import Policy

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "ClusterInput",
    "Clusterer",
    "Groups",
    "HdbscanClusterer",
    "Merge",
    "RecombinationClusterer",
    "UnionFindClusterer",
    "candidate_knn",
    "knn",
    "make_clusterer",
    "recombination_history",
]



# --------------------------------------------------------------------------- union-find


def _link_edges(items: ClusterInput, policy: Policy) -> list[tuple[float, int, int]]:
    """k-NN links that count: similarity >= theta, or a shared entity and >= entity theta."""
    bar = min(policy.maintenance.cluster_theta, policy.maintenance.cluster_entity_theta)
    idx, sim = nearest(items, items.vectors, policy.maintenance.cluster_knn, bar, policy)
    edges: dict[tuple[int, int], float] = {}
    for i in range(idx.shape[0]):
        ent_i = items.entities[i]
        for j_raw, s_raw in zip(idx[i], sim[i], strict=True):
            j, s = int(j_raw), float(s_raw)
            if j < 0:
                break
            linked = s >= policy.maintenance.cluster_theta or (
                s >= policy.maintenance.cluster_entity_theta and bool(ent_i & items.entities[j])
            )
            if linked:
                edges[(min(i, j), max(i, j))] = s
    return sorted(((s, a, b) for (a, b), s in edges.items()), key=lambda e: (-e[0], e[1], e[2]))


def _components(n_members: Sequence[int], edges: Sequence[tuple[float, int, int]]) -> Groups:
    """Connected components of `n_members` under the edges that stay inside it."""
    pos = {m: k for k, m in enumerate(n_members)}
    ds = DisjointSet(len(n_members))
    for _, a, b in edges:
        if a in pos and b in pos:
            ds.union(pos[a], pos[b])
    comps: dict[int, list[int]] = {}
    for m, k in pos.items():
        comps.setdefault(ds.find(k), []).append(m)
    return [sorted(c) for c in comps.values()]


def _guard(
    vectors: npt.NDArray[np.float32],
    group: list[int],
    edges: Sequence[tuple[float, int, int]],
    medoid_theta: float,
) -> Groups:
    """Keep the members close to the medoid; regroup the rest by their own links."""
    if len(group) < 2:
        return []
    med = medoid(vectors, group)
    g = np.asarray(group, dtype=np.int64)
    close = (vectors[g] @ vectors[med]) >= medoid_theta
    if bool(np.all(close)):
        return [group]
    kept = [int(x) for x in g[close]]
    out: Groups = [kept] if len(kept) >= 2 else []
    rest = [int(x) for x in g[~close]]
    rest_set = set(rest)
    inner = [e for e in edges if e[1] in rest_set and e[2] in rest_set]
    for comp in _components(rest, inner):
        out.extend(_guard(vectors, comp, inner, medoid_theta))
    return out


def _union_find(items: ClusterInput, policy: Policy) -> Groups:
    n = len(items)
    edges = _link_edges(items, policy)
    ds = DisjointSet(n)
    cap = policy.maintenance.cluster_max_size
    for _, a, b in edges:  # strongest links first; a join past the cap is refused
        ra, rb = ds.find(a), ds.find(b)
        if ra != rb and ds.size[ra] + ds.size[rb] <= cap:
            ds.union(ra, rb)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(ds.find(i), []).append(i)
    by_member: dict[int, list[tuple[float, int, int]]] = {}
    for e in edges:
        by_member.setdefault(ds.find(e[1]), []).append(e)
    out: Groups = []
    for root, members in comps.items():
        if len(members) >= 2:
            inner = [e for e in by_member.get(root, []) if ds.find(e[2]) == root]
            medoid_theta = policy.maintenance.cluster_medoid_theta
            out.extend(_guard(items.vectors, members, inner, medoid_theta))
    return out


class UnionFindClusterer:
    name = "union-find"

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups:
        return canonical(items, policy, _union_find)


# --------------------------------------------------------------------------- HDBSCAN


def _pca(vectors: npt.NDArray[np.float32], dims: int) -> npt.NDArray[np.float64]:
    """Projection on the top `dims` principal components (eigh of the covariance: exact and
    deterministic; the sign of a component does not change a distance)."""
    x = vectors.astype(np.float64)
    if dims <= 0 or dims >= x.shape[1]:
        return x
    centred = x - x.mean(axis=0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    return np.asarray(centred @ vecs[:, ::-1][:, :dims], dtype=np.float64)


def _hdbscan(items: ClusterInput, policy: Policy) -> Groups:
    try:
        from sklearn.cluster import HDBSCAN  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - scikit-learn ships with the core extra
        from .errors import MissingExtra

        raise MissingExtra("scikit-learn for the hdbscan clusterer", "local") from exc
    n = len(items)
    if n < policy.maintenance.cluster_hdbscan_min_cluster_size:
        return []
    space = _pca(items.vectors, policy.maintenance.cluster_pca_dims)
    labels = HDBSCAN(
        min_cluster_size=policy.maintenance.cluster_hdbscan_min_cluster_size,
        min_samples=min(policy.maintenance.cluster_hdbscan_min_samples, n),
        metric="euclidean",
        copy=True,
    ).fit_predict(space)
    clusters: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        if lab >= 0:
            clusters.setdefault(int(lab), []).append(i)
    out: Groups = []
    for members in clusters.values():
        out.extend(split_to_cap(items.vectors, members, policy.maintenance.cluster_max_size))
    return out


class HdbscanClusterer:
    name = "hdbscan"

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups:
        return canonical(items, policy, _hdbscan)


# --------------------------------------------------------------------------- recombination


@dataclass(frozen=True, slots=True)
class Merge:
    """One step of the recombination: clusters `a` and `b` (sorted member tuples, `a` the one
    with the lower first member) merged at distance `d`."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    d: float


def recombination_history(items: ClusterInput, policy: Policy) -> tuple[Groups, list[Merge]]:
    """The recombination on `items` as given (no canonical reordering): its groups and the
    merges in the order they happened. `RecombinationClusterer` is the public face; this
    is here so the merge order can be checked against hand-computed distances."""
    n = len(items)
    if n < 2:
        return [], []
    vecs = unit_rows(np.asarray(items.vectors))
    p2 = 2.0 * policy.maintenance.cluster_recomb_p
    log_r2 = 2.0 * math.log(policy.maintenance.cluster_recomb_radius)
    max_dist = policy.maintenance.cluster_recomb_cut
    cap = policy.maintenance.cluster_max_size
    floor = policy.maintenance.cluster_recomb_weight_floor
    w0 = np.maximum(np.asarray(items.importance, dtype=np.float64), floor)

    # live clusters: id -> (unit vector, weight, members); ids grow, so ties resolve by age
    vec: dict[int, npt.NDArray[np.float64]] = {i: vecs[i].astype(np.float64) for i in range(n)}
    weight: dict[int, float] = {i: float(w0[i]) for i in range(n)}
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    adj: dict[int, set[int]] = {i: set() for i in range(n)}
    idx, sim = nearest(items, vecs, policy.maintenance.cluster_knn, 1.0 - max_dist, policy)
    for i in range(n):
        for j_raw, s in zip(idx[i], sim[i], strict=True):
            j = int(j_raw)
            if j >= 0 and 1.0 - float(s) <= max_dist:
                adj[i].add(j)
                adj[j].add(i)

    # Work in log space: log d is monotone in d and never overflows for large |p|.
    def log_pair(a: int, b: int) -> float | None:
        cos = float(np.clip(vec[a] @ vec[b], -1.0, 1.0))
        if 1.0 - cos > max_dist or len(members[a]) + len(members[b]) > cap:
            return None
        chord2 = max(2.0 - 2.0 * cos, 0.0)
        if chord2 == 0.0:
            return -math.inf
        return min(p2 * math.log(weight[a]), p2 * math.log(weight[b])) + math.log(chord2) - log_r2

    heap: list[tuple[float, int, int, int]] = []  # (log d, kind 0 pair / 1 beam, a, b)

    def push_all(a: int) -> None:
        heapq.heappush(heap, (p2 * math.log(weight[a]), 1, a, a))
        for b in adj[a]:
            d = log_pair(a, b)
            if d is not None:
                heapq.heappush(heap, (d, 0, min(a, b), max(a, b)))

    for i in range(n):
        heapq.heappush(heap, (p2 * math.log(weight[i]), 1, i, i))
        for j in adj[i]:
            if j > i:
                d = log_pair(i, j)
                if d is not None:
                    heapq.heappush(heap, (d, 0, i, j))

    merges: list[Merge] = []
    final: Groups = []
    next_id = n
    while heap:
        d, kind, a, b = heapq.heappop(heap)
        if a not in vec or b not in vec:
            continue  # an entry for a cluster that has since merged or closed
        if kind == 1:  # the beam is closest: this cluster is done
            final.append(sorted(members[a]))
            for nb in adj.pop(a):
                adj[nb].discard(a)
            del vec[a], weight[a], members[a]
            continue
        c = next_id
        next_id += 1
        wa, wb = weight[a], weight[b]
        merged = wa * vec[a] + wb * vec[b]
        norm = float(np.linalg.norm(merged))
        vec[c] = merged / norm if norm > 0.0 else vec[a]
        weight[c] = wa + wb
        members[c] = members[a] + members[b]
        first, second = sorted((tuple(sorted(members[a])), tuple(sorted(members[b]))))
        merges.append(Merge(first, second, math.exp(d)))
        neighbours = (adj.pop(a) | adj.pop(b)) - {a, b}
        for nb in neighbours:
            adj[nb].discard(a)
            adj[nb].discard(b)
            adj[nb].add(c)
        adj[c] = neighbours
        for x in (a, b):
            del vec[x], weight[x], members[x]
        push_all(c)
    groups = [g for g in final if len(g) >= 2]
    return sorted(groups, key=lambda g: g[0]), merges


def _recombination(items: ClusterInput, policy: Policy) -> Groups:
    return recombination_history(items, policy)[0]


class RecombinationClusterer:
    name = "recombination"

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups:
        return canonical(items, policy, _recombination)


# --------------------------------------------------------------------------- factory

_STRATEGIES: dict[str, Callable[[], Clusterer]] = {
    "union-find": UnionFindClusterer,
    "hdbscan": HdbscanClusterer,
    "recombination": RecombinationClusterer,
}
STRATEGIES: tuple[str, ...] = tuple(_STRATEGIES)
DEFAULT_STRATEGY = "union-find"


def make_clusterer(name: str, policy: Policy | None = None) -> Clusterer:
    """The strategy called `name` ("union-find", "hdbscan", "recombination").

    `policy` is accepted so a caller can pass it where it has one; the numbers are read
    from the policy given at call time."""
    del policy
    try:
        return _STRATEGIES[name]()
    except KeyError:
        raise InvalidInput(
            f"unknown clustering strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        ) from None
