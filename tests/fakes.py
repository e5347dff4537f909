"""In-memory stand-ins for the ports, for pure core unit tests ONLY.

They live under tests/ and are not shipped: a user never gets a fake where a real
store belongs. The in-memory store also runs the RecordStore contract suite, so it
cannot drift from the semantics the real stores are held to.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from reverie.core.errors import ConflictError, InvalidInput, InvalidVector, LockBusy
from reverie.core.models import Edge, EdgeType, Memory, Status, Tier
from reverie.core.ports import LexicalHit, Vector, VectorHit, VectorItem, WriteBatch
from reverie.core.scoring import reinforce
from reverie.core.text import content_hash

_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return [t.casefold() for t in _TOKEN.findall(text)]


class InMemoryStore:
    """RecordStore + LexicalIndex held in dicts, guarded by one lock."""

    def __init__(self) -> None:
        self._mem: dict[tuple[str, str], Memory] = {}
        self._edges: dict[tuple[str, str, str, EdgeType], float] = {}
        self._meta: dict[str, str] = {}
        self._journal: dict[tuple[str, str], dict[str, Any]] = {}
        self._locks: dict[str, tuple[str, float]] = {}
        self._order: dict[tuple[str, str], int] = {}
        self._seq = 0
        self._lock = threading.RLock()

    # -- writes
    def commit(self, batch: WriteBatch) -> None:
        with self._lock:
            staged = dict(self._mem)
            for m in batch.puts:
                if m.namespace != batch.namespace:
                    raise InvalidInput("a batch writes one namespace")
                cur = staged.get((m.namespace, m.id))
                if not batch.restore:
                    if m.version == 1 and cur is not None:
                        raise ConflictError(f"{m.id} already exists")
                    if m.version > 1 and (cur is None or cur.version != m.version - 1):
                        raise ConflictError(f"{m.id} changed since it was read")
                staged[(m.namespace, m.id)] = m
            active_hashes: Counter[str] = Counter(
                content_hash(m.text)
                for (ns, _), m in staged.items()
                if ns == batch.namespace and m.is_active and m.key is None
            )
            if any(n > 1 for n in active_hashes.values()):
                raise ConflictError("an active memory with the same text exists")
            active_keys: Counter[str] = Counter(
                m.key
                for (ns, _), m in staged.items()
                if ns == batch.namespace and m.is_active and m.key is not None
            )
            if any(n > 1 for n in active_keys.values()):
                raise ConflictError("an active version of the same fact exists")
            for m in batch.puts:
                if (m.namespace, m.id) not in self._order:
                    self._seq += 1
                    self._order[(m.namespace, m.id)] = self._seq
            self._mem = staged
            ns = batch.namespace
            for e in batch.edges:
                k = (ns, e.src, e.dst, e.type)
                self._edges[k] = max(self._edges.get(k, e.weight), e.weight)
            for src, dst, t in batch.remove_edges:
                self._edges.pop((ns, src, dst, EdgeType(t)), None)

    def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        with self._lock:
            for i in ids:
                m = self._mem.get((namespace, i))
                if m is not None:
                    self._mem[(namespace, i)] = reinforce(m, at, window)

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        with self._lock:
            gone = {i for i in ids if self._mem.pop((namespace, i), None) is not None}
            doomed = [k for k in self._edges if k[0] == namespace and {k[1], k[2]} & gone]
            for k in doomed:
                del self._edges[k]
            return len(gone)

    def delete_namespace(self, namespace: str) -> int:
        with self._lock:
            ids = [i for (ns, i) in self._mem if ns == namespace]
            return self.delete(namespace, ids)

    # -- reads
    def get(self, namespace: str, memory_id: str) -> Memory | None:
        return self._mem.get((namespace, memory_id))

    def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        return {i: m for i in ids if (m := self._mem.get((namespace, i))) is not None}

    def _ns(self, namespace: str) -> list[Memory]:
        with self._lock:
            items = [(self._order.get(k, 0), m) for k, m in self._mem.items() if k[0] == namespace]
        return [m for _, m in sorted(items, key=lambda x: x[0])]

    def find_by_hash(self, namespace: str, digest: str) -> Memory | None:
        for m in self._ns(namespace):
            if m.is_active and m.key is None and content_hash(m.text) == digest:
                return m
        return None

    def find_by_key(self, namespace: str, key: str) -> list[Memory]:
        found = [m for m in self._ns(namespace) if m.key == key]
        return sorted(found, key=lambda m: (m.valid_since, m.created_at))

    def find_by_entity(self, namespace: str, entity: str, limit: int) -> list[Memory]:
        found = [(m.created_at, n, m) for n, m in enumerate(self._ns(namespace))
                 if m.is_active and entity in m.entities]
        found.sort(key=lambda t: (t[0], t[1]), reverse=True)  # equal times: newest insert
        return [m for _, _, m in found[:limit]]

    def scan(
        self,
        namespace: str,
        *,
        statuses: Iterable[Status] | None = None,
        tiers: Iterable[Tier] | None = None,
        batch_size: int = 500,
    ) -> Iterator[Memory]:
        st = set(statuses) if statuses is not None else None
        ti = set(tiers) if tiers is not None else None
        for m in self._ns(namespace):
            if (st is None or m.status in st) and (ti is None or m.tier in ti):
                yield m

    def written_around(self, namespace: str, memory_id: str, n: int) -> list[str]:
        with self._lock:
            if n <= 0 or (namespace, memory_id) not in self._order:
                return []
            ids = sorted((o, i) for (ns, i), o in self._order.items() if ns == namespace)
            at = [i for _, i in ids].index(memory_id)
            before = [i for _, i in ids[max(0, at - n) : at]]
            return [*reversed(before), *(i for _, i in ids[at + 1 : at + 1 + n])]

    def count(self, namespace: str) -> dict[str, int]:
        ms = self._ns(namespace)
        out = {f"status:{s.value}": 0 for s in Status} | {f"tier:{t.value}": 0 for t in Tier}
        for m in ms:
            out[f"status:{m.status.value}"] += 1
            if m.is_active:
                out[f"tier:{m.tier.value}"] += 1
        out["total"] = len(ms)
        out["edges"] = sum(1 for k in self._edges if k[0] == namespace)
        return out

    def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        want = set(ids)
        return [
            Edge(s, d, t, w)
            for (ns, s, d, t), w in list(self._edges.items())
            if ns == namespace and (s in want or d in want)
        ]

    def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]:
        want = set(ids)
        deg: Counter[str] = Counter()
        for ns, s, d, _ in list(self._edges):
            if ns == namespace:
                if s in want:
                    deg[s] += 1
                if d in want:
                    deg[d] += 1
        return {i: deg.get(i, 0) for i in want}

    def namespaces(self) -> list[str]:
        return sorted({ns for ns, _ in self._mem})

    # -- meta, journal, lock
    def get_meta(self, name: str) -> str | None:
        return self._meta.get(name)

    def set_meta(self, name: str, value: str) -> None:
        self._meta[name] = value

    def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None:
        return self._journal.get((namespace, fingerprint))

    def journal_put(self, namespace: str, fingerprint: str, entry: Mapping[str, Any]) -> None:
        self._journal[(namespace, fingerprint)] = dict(entry)

    def journal_delete(self, namespace: str, fingerprints: Iterable[str]) -> None:
        for fp in fingerprints:
            self._journal.pop((namespace, fp), None)

    @contextlib.contextmanager
    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> Iterator[str]:
        token = uuid.uuid4().hex
        with self._lock:
            held = self._locks.get(namespace)
            if held is not None and held[1] > time.time():
                raise LockBusy(f"namespace {namespace!r} is locked")
            self._locks[namespace] = (token, time.time() + ttl_seconds)
        try:
            yield token
        finally:
            with self._lock:
                if self._locks.get(namespace, ("", 0))[0] == token:
                    del self._locks[namespace]

    def close(self) -> None:
        pass

    # -- LexicalIndex: plain BM25 (k1 = 1.2, b = 0.75) over active memories
    def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]:
        docs = [(m.id, _tokens(m.text)) for m in self._ns(namespace) if m.is_active]
        q = set(_tokens(query))
        if not docs or not q:
            return []
        n = len(docs)
        avg = sum(len(t) for _, t in docs) / n
        df = Counter(w for _, t in docs for w in set(t))
        hits = []
        for i, toks in docs:
            tf = Counter(toks)
            s = 0.0
            for w in q:
                if tf[w]:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * tf[w] * 2.2 / (tf[w] + 1.2 * (0.25 + 0.75 * len(toks) / avg))
            if s > 0:
                hits.append(LexicalHit(i, s))
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]


class InMemoryVectorIndex:
    """Exact cosine search in numpy; for core unit tests only."""

    def __init__(self) -> None:
        self._items: dict[str, dict[str, tuple[Vector, dict[str, Any]]]] = {}

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        for it in items:
            v = np.asarray(it.vector, dtype=np.float32)
            if not np.isfinite(v).all():
                raise InvalidVector(f"vector for {it.id} has NaN")
        space = self._items.setdefault(namespace, {})
        for it in items:
            space[it.id] = (np.asarray(it.vector, dtype=np.float32), dict(it.metadata))

    def query(
        self, namespace: str, vector: Vector, k: int, where: Mapping[str, Any] | None = None
    ) -> list[VectorHit]:
        space = self._items.get(namespace, {})
        hits = []
        for i, (v, meta) in list(space.items()):
            if where and any(meta.get(a) != b for a, b in where.items()):
                continue
            sim = float(np.dot(v, vector) / (np.linalg.norm(v) * np.linalg.norm(vector) + 1e-12))
            hits.append(VectorHit(i, sim))
        hits.sort(key=lambda h: (-h.similarity, h.id))
        return hits[:k]

    def similarities(self, namespace: str, vector: Vector, ids: Sequence[str]) -> dict[str, float]:
        space = self._items.get(namespace, {})
        q = np.asarray(vector, dtype=np.float32)
        return {
            i: float(np.dot(space[i][0], q) / (np.linalg.norm(space[i][0]) * np.linalg.norm(q)
                                               + 1e-12))
            for i in ids
            if i in space
        }

    def stored_vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vector]:
        space = self._items.get(namespace, {})
        return {i: space[i][0].copy() for i in ids if i in space}

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        space = self._items.get(namespace, {})
        for i, meta in zip(ids, metadata, strict=True):
            if i in space:
                space[i] = (space[i][0], {**space[i][1], **meta})

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        for i in ids:
            self._items.get(namespace, {}).pop(i, None)

    def ids(self, namespace: str) -> set[str]:
        return set(self._items.get(namespace, {}))

    def count(self, namespace: str) -> int:
        return len(self._items.get(namespace, {}))

    def drop_namespace(self, namespace: str) -> None:
        self._items.pop(namespace, None)

    def close(self) -> None:
        pass


class BagOfWordsEmbedder:
    """Hashed bag of words: texts sharing words are similar. Deterministic, for unit
    tests of the lifecycle; the real model is tested in tests/integration."""

    def __init__(self, dimension: int = 256, name: str = "test-bow") -> None:
        self._dim = dimension
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for tok in _tokens(text):
                h = int(hashlib.md5(tok.encode()).hexdigest(), 16)
                out[row, h % self._dim] += 1.0
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out
