"""What every clustering strategy shares: the input, k-NN, medoids, union-find, canonical order.

The k-NN is exact or searched among given candidates; the canonical order makes a
strategy's answer independent of the order of its input.

The k-NN is exact for a small input: blocked matrix products (n^2 d flops, fast in BLAS),
keeping only the neighbours above the strategy's similarity bar. For a large one it is
searched by k-means cells (`cell_knn`), about n * probe * cell size flops. A caller that already
has an approximate neighbour graph (the vector index's HNSW, `FindsNeighbors` in
core/ports.py) passes it as `ClusterInput.neighbors`; the strategies then search only
those candidates, about n k dot products instead of n^2.
"""

from __future__ import annotations

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
# Candidate pairs scored at once: few enough that the rows gathered for a block stay in cache.
_PAIR_BLOCK = 2048
# `cell_knn`'s centres come from this many sampled rows per cell, in this many rounds.
_CELL_SAMPLE = 32
_CELL_ROUNDS = 6


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
            flat = flat_indices(self.neighbors)
            if flat is None or (flat.size and (int(flat.min()) < 0 or int(flat.max()) >= n)):
                raise InvalidInput(f"neighbors must hold row indices in [0, {n}) only")

    def __len__(self) -> int:
        return len(self.ids)


def flat_indices(rows: Sequence[Sequence[int]]) -> npt.NDArray[np.int64] | None:
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


def unit_rows(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
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
        r, c = _at_least(s, min_sim)
        _best_per_row(idx, sim, start + r, c, s[r, c])
    return idx, sim


def _best_per_row(
    idx: npt.NDArray[np.int64],
    sim: npt.NDArray[np.float32],
    r: npt.NDArray[np.int64],
    c: npt.NDArray[np.int64],
    v: npt.NDArray[np.float32],
) -> None:
    """Fill each row r of `idx`/`sim` with its best columns among the (r, c, v) triples:
    best first, the lower index on a tie, as many as a row holds; a triple listed twice
    counts once."""
    order = np.lexsort((c, -v, r))
    r, c, v = r[order], c[order], v[order]
    once = np.ones(r.size, dtype=bool)  # a triple listed twice is adjacent to itself now
    once[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    r, c, v = r[once], c[once], v[once]
    rank = np.arange(r.size) - np.searchsorted(r, r, side="left")
    keep = rank < idx.shape[1]
    idx[r[keep], rank[keep]] = c[keep]
    sim[r[keep], rank[keep]] = v[keep]


def candidate_knn(
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
    c_all = flat_indices(candidates)
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
    _best_per_row(idx, sim, r, c, v)
    return idx, sim


def cell_knn(
    vectors: npt.NDArray[np.float32],
    k: int,
    min_sim: float | None,
    cells: int,
    probe: int,
    seed: int = 0,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """`knn`'s answer searched near each row only: `cells` k-means centres; each row is
    listed in the `probe` cells whose centres are nearest it, and compared with the rows
    listed in its own cell (its nearest centre). Two near rows are compared unless the
    first's nearest centre is not among the second's `probe` nearest, which for a
    neighbour above a high similarity bar is rare. About n * n * probe / cells dot
    products instead of n^2. Same shape, order, tie-break and padding as `knn`;
    deterministic for a given input order and seed."""
    n = vectors.shape[0]
    kk = max(min(k, n - 1), 0)
    idx = np.full((n, kk), -1, dtype=np.int64)
    sim = np.full((n, kk), -np.inf, dtype=np.float32)
    cells = max(1, min(cells, n))
    if kk == 0:
        return idx, sim
    rng = np.random.default_rng(seed)
    sample = vectors[np.sort(rng.choice(n, min(n, cells * _CELL_SAMPLE), replace=False))]
    centres = sample[np.sort(rng.choice(len(sample), cells, replace=False))].copy()
    for _ in range(_CELL_ROUNDS):  # Lloyd's rounds on the sample, spherical (unit) centres
        near = np.argmax(sample @ centres.T, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, near, sample)
        norms = np.linalg.norm(sums, axis=1)
        filled = norms > 0
        centres[filled] = sums[filled] / norms[filled, None]
    # each row's own cell (the nearest centre) and the `probe` cells it is listed in
    cell = np.empty(n, dtype=np.int64)
    listed = np.empty((n, min(max(probe, 1), cells)), dtype=np.int64)
    for start in range(0, n, _KNN_BLOCK_ROWS):
        part = vectors[start : start + _KNN_BLOCK_ROWS] @ centres.T
        top = _best_columns(part, listed.shape[1])
        listed[start : start + _KNN_BLOCK_ROWS] = top
        cell[start : start + _KNN_BLOCK_ROWS] = top[:, 0]
    own = _by_cell(cell, cells)
    holds = _by_cell(listed.ravel(), cells, listed.shape[1])
    floor = -np.inf if min_sim is None else min_sim
    for c in range(cells):
        rows, cand = own[c], holds[c]
        if rows.size == 0:
            continue
        s = vectors[rows] @ vectors[cand].T
        s[rows[:, None] == cand[None, :]] = -np.inf  # a memory is not its own neighbour
        r, col = _at_least(s, floor)
        _best_per_row(idx, sim, rows[r], cand[col], s[r, col])
    return idx, sim


def _at_least(
    s: npt.NDArray[np.float32], floor: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(rows, columns) of the entries of `s` at or above `floor`, row-major: what
    `np.nonzero(s >= floor)` gives, at a fifth of its cost (the flat positions are found
    in one pass and split, where `nonzero` walks the mask once per axis)."""
    flat = np.flatnonzero(s >= floor)
    r, c = np.divmod(flat, s.shape[1])
    return r, c


def _best_columns(s: npt.NDArray[np.float32], m: int) -> npt.NDArray[np.int64]:
    """Each row's `m` best columns, best first, the lower column on a tie: the first `m`
    of a stable descending argsort, found by a partition first (a full sort of every
    row cost more than the k-means it serves)."""
    if m >= s.shape[1]:
        return np.argsort(-s, axis=1, kind="stable")
    part = np.argpartition(-s, m - 1, axis=1)[:, :m]
    vals = np.take_along_axis(s, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    part, vals = np.take_along_axis(part, order, axis=1), np.take_along_axis(vals, order, axis=1)
    # a value tied across the cut: the partition may have kept a higher column than the
    # sort would; such rows (rare: two equally near centres) are sorted in full
    edge = vals[:, -1:]
    split = (s == edge).sum(axis=1) > (vals == edge).sum(axis=1)
    if split.any():
        part[split] = np.argsort(-s[split], axis=1, kind="stable")[:, :m]
    return part


def _by_cell(cell: npt.NDArray[np.int64], cells: int, per_row: int = 1) -> list[
    npt.NDArray[np.int64]
]:
    """Row indices per cell, ascending (`cell` lists `per_row` cells per row, row-major)."""
    order = np.argsort(cell, kind="stable")
    bounds = np.searchsorted(cell[order], np.arange(cells + 1))
    rows = order // per_row
    return [rows[bounds[c] : bounds[c + 1]] for c in range(cells)]


def policy_cell_knn(
    vectors: npt.NDArray[np.float32], k: int, min_sim: float | None, policy: Policy,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """`cell_knn` with the policy's cell size and probes."""
    m = policy.maintenance
    cells = max(1, len(vectors) // m.cluster_cell_size)
    return cell_knn(vectors, k, min_sim, cells, m.cluster_cell_probe)


def nearest(
    items: ClusterInput,
    vectors: npt.NDArray[np.float32],
    k: int,
    min_sim: float | None,
    policy: Policy,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The k-NN the strategies link on: among the given candidates when the input has
    them; else near each row only from `cluster_cells_min` rows on (`cell_knn`), else
    exact."""
    if items.neighbors is not None:
        return candidate_knn(vectors, items.neighbors, k, min_sim=min_sim)
    if 0 < policy.maintenance.cluster_cells_min <= len(vectors):
        return policy_cell_knn(vectors, k, min_sim, policy)
    return knn(vectors, k, min_sim=min_sim)


def medoid(vectors: npt.NDArray[np.float32], members: Sequence[int]) -> int:
    """The member most similar, in sum, to the others (lowest index on a tie)."""
    m = np.asarray(members, dtype=np.int64)
    sub = vectors[m]
    scores = (sub @ sub.T).sum(axis=1)
    return int(m[int(np.argmax(scores))])


def split_to_cap(vectors: npt.NDArray[np.float32], members: Sequence[int], cap: int) -> Groups:
    """Cut an oversized group: the medoid and its cap-1 most similar members, then the rest."""
    out: Groups = []
    rest = sorted(members)
    while len(rest) > cap:
        med = medoid(vectors, rest)
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


class DisjointSet:
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


def canonical(
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
        flat = flat_indices(items.neighbors)
        assert flat is not None  # checked by ClusterInput
        rows = np.split(inv[flat], np.cumsum(lengths)[:-1]) if n else []
        neighbors = [rows[i].tolist() for i in order]
    canon = ClusterInput(
        ids=[items.ids[i] for i in order],
        vectors=unit_rows(np.asarray(items.vectors)[perm]),
        importance=np.asarray(items.importance, dtype=np.float64)[perm],
        entities=[frozenset(items.entities[i]) for i in order],
        neighbors=neighbors,
    )
    groups = run(canon, policy)
    mapped = [sorted(order[i] for i in g) for g in groups if len(g) >= 2]
    return sorted(mapped, key=lambda g: g[0])
