"""Clustering the REM cycle's flagged memories: which low-importance memories say the same thing.

One interface, three strategies. A caller builds a `ClusterInput` (ids, unit vectors,
importance, entities: row i of every field is memory i), gets a strategy with
`make_clusterer(name, policy)` and calls it; the answer is a list of groups of row
indices. The contract every strategy keeps, because the cycle relies on it:

- each group has at least 2 members (a singleton has nothing to merge with);
- no index is in two groups; no group is larger than `policy.cluster_max_size`;
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

The k-NN is exact by default: blocked matrix products (n^2 d flops, fast in BLAS), keeping only the
neighbours above the strategy's similarity bar. That is the n^2 part: on this 2-core machine
under load, union-find took 0.15 s / 6.5 s / 165 s at 1k / 10k / 50k points, HDBSCAN 76 s at
10k (benchmarks/results/clustering.md, where the defaults' quality numbers are too).
A caller that already has an approximate neighbour graph (the vector index's HNSW, see
`VectorIndex.neighbors` in core/ports.py) passes it as `ClusterInput.neighbors`; union-find
and recombination then search only those candidates, about n k dot products instead of n^2.
Through Chroma that path grows ~n^1.04 but costs ~5 ms a query here, so the cycle uses it
only above `policy.cluster_index_knn_min` flagged memories (benchmarks/results/knn_speed.md).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .errors import InvalidInput
from .policy import Policy

Groups = list[list[int]]

# Rows of the similarity matrix computed at once; bounds memory (block x n float32), not results.
_KNN_BLOCK_ROWS = 1024
# Candidate pairs scored at once (rows gathered per block; 2k measured ~7x faster than 64k).
_PAIR_BLOCK = 2048


@dataclass(frozen=True, slots=True)
class ClusterInput:
    """The memories to cluster; row i of every field describes memory i."""

    ids: Sequence[str]
    vectors: npt.NDArray[np.float32]  # n x d, unit-normalised
    importance: npt.NDArray[np.float64]  # n values in [0, 1]
    entities: Sequence[frozenset[str]]
    # Optional candidate neighbours, row i: indices (into this input) of memories near i,
    # e.g. an approximate k-NN from the vector index (HNSW, ~log n per query) instead of
    # the exact n^2 one. Only the candidates are taken from here: similarities are
    # recomputed from `vectors`, so both paths threshold on the same numbers, and the
    # result equals the exact path's whenever each row holds its exact k-NN.
    neighbors: Sequence[Sequence[int]] | None = None

    def __post_init__(self) -> None:
        n = len(self.ids)
        if len(set(self.ids)) != n:
            raise InvalidInput("ClusterInput ids must be unique (they define the canonical order)")
        vec = np.asarray(self.vectors)
        if vec.ndim != 2 or vec.shape[0] != n:
            raise InvalidInput(f"vectors must be an array of {n} rows, got shape {vec.shape}")
        if not np.all(np.isfinite(vec)):
            raise InvalidInput("vectors contain NaN or inf")
        imp = np.asarray(self.importance, dtype=np.float64)
        if imp.shape != (n,):
            raise InvalidInput(f"importance must hold {n} values, got shape {imp.shape}")
        if not np.all(np.isfinite(imp)) or np.any(imp < 0.0) or np.any(imp > 1.0):
            raise InvalidInput("importance values must be finite and within [0, 1]")
        if len(self.entities) != n:
            raise InvalidInput(f"entities must hold {n} sets, got {len(self.entities)}")
        if self.neighbors is not None:
            if len(self.neighbors) != n:
                raise InvalidInput(f"neighbors must hold {n} rows, got {len(self.neighbors)}")
            flat = _flat(self.neighbors)
            if flat is None or (flat.size and (int(flat.min()) < 0 or int(flat.max()) >= n)):
                raise InvalidInput(f"neighbors must hold row indices in [0, {n}) only")

    def __len__(self) -> int:
        return len(self.ids)


def _flat(rows: Sequence[Sequence[int]]) -> npt.NDArray[np.int64] | None:
    """All entries of `rows` in one int64 array; None if any is not an integer (bools
    included: True is not row 1)."""
    flat = [j for row in rows for j in row]
    kinds = set(map(type, flat))
    if bool in kinds or np.bool_ in kinds:
        return None
    arr = np.asarray(flat) if flat else np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        return None
    return arr.astype(np.int64, copy=False)


class Clusterer(Protocol):
    name: str

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups: ...


# --------------------------------------------------------------------------- shared pieces


def _unit(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Rows rescaled to unit length: the contract says unit vectors, this forgives drift."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(v / norms, dtype=np.float32)


def knn(
    vectors: npt.NDArray[np.float32], k: int, min_sim: float | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Exact k nearest neighbours by cosine (rows are unit): indices and similarities, n x k',
    k' = min(k, n - 1), each row best first, ties broken by the lower index.

    With `min_sim`, only neighbours at least that similar are returned (the rest of a row
    is padded with index -1, similarity -inf): the strategies never use a weaker link, and
    a threshold pass over the similarity block is several times cheaper than a partition."""
    n = vectors.shape[0]
    kk = max(min(k, n - 1), 0)
    idx = np.full((n, kk), -1, dtype=np.int64)
    sim = np.full((n, kk), -np.inf, dtype=np.float32)
    if kk == 0:
        return idx, sim
    for start in range(0, n, _KNN_BLOCK_ROWS):
        stop = min(start + _KNN_BLOCK_ROWS, n)
        s = vectors[start:stop] @ vectors.T
        rows = np.arange(stop - start)
        s[rows, rows + start] = -np.inf  # a memory is not its own neighbour
        if min_sim is None:
            part = np.argpartition(s, n - kk, axis=1)[:, n - kk :]
            psim = np.take_along_axis(s, part, axis=1)
            order = np.lexsort((part, -psim), axis=1)  # best first, then lower index
            idx[start:stop] = np.take_along_axis(part, order, axis=1)
            sim[start:stop] = np.take_along_axis(psim, order, axis=1)
            continue
        r, c = np.nonzero(s >= min_sim)
        v = s[r, c]
        order = np.lexsort((c, -v, r))  # by row, best first, then lower index
        r, c, v = r[order], c[order], v[order]
        first = np.searchsorted(r, r, side="left")
        rank = np.arange(r.size) - first
        keep = rank < kk
        idx[start + r[keep], rank[keep]] = c[keep]
        sim[start + r[keep], rank[keep]] = v[keep]
    return idx, sim


def _candidate_knn(
    vectors: npt.NDArray[np.float32],
    candidates: Sequence[Sequence[int]],
    k: int,
    min_sim: float | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """`knn`'s answer, but searched only among each row's candidates (same shape, order,
    tie-break and padding). With each row's exact k-NN among its candidates, the answer
    is exactly `knn`'s; the cost is one dot product per candidate, not per pair."""
    n = vectors.shape[0]
    kk = max(min(k, n - 1), 0)
    idx = np.full((n, kk), -1, dtype=np.int64)
    sim = np.full((n, kk), -np.inf, dtype=np.float32)
    lengths = np.fromiter((len(row) for row in candidates), dtype=np.int64, count=n)
    c_all = _flat(candidates)
    if kk == 0 or c_all is None or c_all.size == 0:
        return idx, sim
    r = np.repeat(np.arange(n, dtype=np.int64), lengths)
    c = c_all
    keep = r != c  # a memory is not its own neighbour
    r, c = r[keep], c[keep]
    v = np.empty(r.size, dtype=np.float32)
    for start in range(0, r.size, _PAIR_BLOCK):  # small blocks: the gathered rows stay in cache
        stop = min(start + _PAIR_BLOCK, r.size)
        v[start:stop] = np.einsum("ij,ij->i", vectors[r[start:stop]], vectors[c[start:stop]])
    if min_sim is not None:
        keep = v >= min_sim
        r, c, v = r[keep], c[keep], v[keep]
    order = np.lexsort((c, -v, r))  # by row, best first, then lower index
    r, c, v = r[order], c[order], v[order]
    once = np.ones(r.size, dtype=bool)  # a candidate listed twice is adjacent to itself now
    once[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    r, c, v = r[once], c[once], v[once]
    first = np.searchsorted(r, r, side="left")
    rank = np.arange(r.size) - first
    keep = rank < kk
    idx[r[keep], rank[keep]] = c[keep]
    sim[r[keep], rank[keep]] = v[keep]
    return idx, sim


def _neighbours(
    items: ClusterInput,
    vectors: npt.NDArray[np.float32],
    k: int,
    min_sim: float | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The k-NN the strategies link on: among the given candidates when the input has
    them, else exact."""
    if items.neighbors is None:
        return knn(vectors, k, min_sim=min_sim)
    return _candidate_knn(vectors, items.neighbors, k, min_sim=min_sim)


def _medoid(vectors: npt.NDArray[np.float32], members: Sequence[int]) -> int:
    """The member most similar, in sum, to the others (lowest index on a tie)."""
    m = np.asarray(members, dtype=np.int64)
    sub = vectors[m]
    scores = (sub @ sub.T).sum(axis=1)
    return int(m[int(np.argmax(scores))])


def _split_to_cap(vectors: npt.NDArray[np.float32], members: Sequence[int], cap: int) -> Groups:
    """Cut an oversized group: the medoid and its cap-1 most similar members, then the rest."""
    out: Groups = []
    rest = sorted(members)
    while len(rest) > cap:
        med = _medoid(vectors, rest)
        r = np.asarray(rest, dtype=np.int64)
        sims = vectors[r] @ vectors[med]
        order = np.lexsort((r, -sims))  # most similar first, lower index on ties
        take = sorted(int(x) for x in r[order[:cap]])
        out.append(take)
        taken = set(take)
        rest = [x for x in rest if x not in taken]
    if len(rest) >= 2:
        out.append(rest)
    return out


class _DisjointSet:
    """Union-Find with path compression and union by rank; tracks each root's size."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.rank = [0] * n
        self.size = [1] * n

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.rank[ra] < self.rank[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        if self.rank[ra] == self.rank[rb]:
            self.rank[ra] += 1
        return ra


def _canonical(
    items: ClusterInput, policy: Policy, run: Callable[[ClusterInput, Policy], Groups]
) -> Groups:
    """Run `run` on the input sorted by id, then map the groups back to the caller's rows."""
    n = len(items)
    if n < 2:
        return []
    order = sorted(range(n), key=lambda i: items.ids[i])
    perm = np.asarray(order, dtype=np.int64)
    neighbors: list[list[int]] | None = None
    if items.neighbors is not None:
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n, dtype=np.int64)
        lengths = [len(row) for row in items.neighbors]
        flat = _flat(items.neighbors)
        assert flat is not None  # checked by ClusterInput
        rows = np.split(inv[flat], np.cumsum(lengths)[:-1]) if n else []
        neighbors = [rows[i].tolist() for i in order]
    canon = ClusterInput(
        ids=[items.ids[i] for i in order],
        vectors=_unit(np.asarray(items.vectors)[perm]),
        importance=np.asarray(items.importance, dtype=np.float64)[perm],
        entities=[frozenset(items.entities[i]) for i in order],
        neighbors=neighbors,
    )
    groups = run(canon, policy)
    mapped = [sorted(order[i] for i in g) for g in groups if len(g) >= 2]
    return sorted(mapped, key=lambda g: g[0])


# --------------------------------------------------------------------------- union-find


def _link_edges(items: ClusterInput, policy: Policy) -> list[tuple[float, int, int]]:
    """k-NN links that count: similarity >= theta, or a shared entity and >= entity theta."""
    bar = min(policy.cluster_theta, policy.cluster_entity_theta)
    idx, sim = _neighbours(items, items.vectors, policy.cluster_knn, min_sim=bar)
    edges: dict[tuple[int, int], float] = {}
    for i in range(idx.shape[0]):
        ent_i = items.entities[i]
        for j_raw, s_raw in zip(idx[i], sim[i], strict=True):
            j, s = int(j_raw), float(s_raw)
            if j < 0:
                break
            linked = s >= policy.cluster_theta or (
                s >= policy.cluster_entity_theta and bool(ent_i & items.entities[j])
            )
            if linked:
                edges[(min(i, j), max(i, j))] = s
    return sorted(((s, a, b) for (a, b), s in edges.items()), key=lambda e: (-e[0], e[1], e[2]))


def _components(n_members: Sequence[int], edges: Sequence[tuple[float, int, int]]) -> Groups:
    """Connected components of `n_members` under the edges that stay inside it."""
    pos = {m: k for k, m in enumerate(n_members)}
    ds = _DisjointSet(len(n_members))
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
    med = _medoid(vectors, group)
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
    ds = _DisjointSet(n)
    cap = policy.cluster_max_size
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
            out.extend(_guard(items.vectors, members, inner, policy.cluster_medoid_theta))
    return out


class UnionFindClusterer:
    name = "union-find"

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups:
        return _canonical(items, policy, _union_find)


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
    if n < policy.cluster_hdbscan_min_cluster_size:
        return []
    space = _pca(items.vectors, policy.cluster_pca_dims)
    labels = HDBSCAN(
        min_cluster_size=policy.cluster_hdbscan_min_cluster_size,
        min_samples=min(policy.cluster_hdbscan_min_samples, n),
        metric="euclidean",
        copy=True,
    ).fit_predict(space)
    clusters: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        if lab >= 0:
            clusters.setdefault(int(lab), []).append(i)
    out: Groups = []
    for members in clusters.values():
        out.extend(_split_to_cap(items.vectors, members, policy.cluster_max_size))
    return out


class HdbscanClusterer:
    name = "hdbscan"

    def __call__(self, items: ClusterInput, policy: Policy) -> Groups:
        return _canonical(items, policy, _hdbscan)


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
    vecs = _unit(np.asarray(items.vectors))
    p2 = 2.0 * policy.cluster_recomb_p
    log_r2 = 2.0 * math.log(policy.cluster_recomb_radius)
    max_dist = policy.cluster_recomb_cut
    cap = policy.cluster_max_size
    floor = policy.cluster_recomb_weight_floor
    w0 = np.maximum(np.asarray(items.importance, dtype=np.float64), floor)

    # live clusters: id -> (unit vector, weight, members); ids grow, so ties resolve by age
    vec: dict[int, npt.NDArray[np.float64]] = {i: vecs[i].astype(np.float64) for i in range(n)}
    weight: dict[int, float] = {i: float(w0[i]) for i in range(n)}
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    adj: dict[int, set[int]] = {i: set() for i in range(n)}
    idx, sim = _neighbours(items, vecs, policy.cluster_knn, min_sim=1.0 - max_dist)
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
        return _canonical(items, policy, _recombination)


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
