"""An in-process copy of one namespace's lexical index, scored with numpy: what the Redis
tier's workers keep (`redis.lexical_mirror`) so a search asks Redis only what changed.

It scores with the namespace's own statistics and the same formula and operation order as
the Redis script (`redis.lexical`) and the SQLite store's postings (`sqlite.lexical`), so
every tier ranks alike to the last bit. A search costs what the query terms' postings hold;
Redis stays the truth, and a mirror is rebuilt from it whenever it cannot be brought up to
date.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from reverie.integrations.lexical.bm25 import BM25_B, BM25_K1, IDF_FLOOR, summed

__all__ = ["Bm25Mirror"]



class Bm25Mirror:
    """Postings of one namespace's active documents, keyed by the store's record seq.

    Documents are slots in append-only arrays; removing one only marks its slot dead
    (postings keep dead entries and scoring masks them out), so updates cost what the
    changed document holds. `dead_fraction` tells the owner when a rebuild would pay.
    `generation` and `identity` are the owner's bookkeeping: which change-log position and
    which incarnation of the namespace this copy reflects.
    """

    def __init__(self, identity: tuple[int, int], generation: int) -> None:
        self.identity = identity
        self.generation = generation
        self._ids: list[str] = []
        self._seqs = array("q")
        self._lengths = array("d")
        self._alive = bytearray()
        self._slot_of: dict[int, int] = {}
        self._seq_of: dict[str, int] = {}
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        self._docs = 0
        self._total = 0.0

    def __len__(self) -> int:
        return self._docs

    @property
    def dead_fraction(self) -> float:
        slots = len(self._ids)
        return 0.0 if slots == 0 else (slots - self._docs) / slots

    def add(self, seq: int, memory_id: str, document: str) -> None:
        """Index one document (the stored, already tokenised FTS text), replacing any
        earlier version under the same seq or id."""
        self.remove(seq)
        self.remove_id(memory_id)
        terms = document.split()
        slot = len(self._ids)
        self._ids.append(memory_id)
        self._seqs.append(seq)
        self._lengths.append(float(len(terms)))
        self._alive.append(1)
        self._slot_of[seq] = slot
        self._seq_of[memory_id] = seq
        for term, tf in Counter(terms).items():
            entry = self._postings.get(term)
            if entry is None:
                entry = self._postings[term] = (array("i"), array("i"))
            entry[0].append(slot)
            entry[1].append(tf)
        self._docs += 1
        self._total += len(terms)

    def remove(self, seq: int) -> None:
        slot = self._slot_of.pop(seq, None)
        if slot is None:
            return
        if self._seq_of.get(self._ids[slot]) == seq:
            del self._seq_of[self._ids[slot]]
        self._alive[slot] = 0
        self._docs -= 1
        self._total -= self._lengths[slot]

    def remove_id(self, memory_id: str) -> None:
        """Remove by memory id (a store whose log names ids rather than seqs)."""
        seq = self._seq_of.get(memory_id)
        if seq is not None:
            self.remove(seq)

    def add_many(self, rows: Iterable[tuple[int, str, str]]) -> None:
        for seq, memory_id, document in rows:
            self.add(seq, memory_id, document)

    def top(self, terms: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The k best documents by FTS5's BM25 (higher is better); ties by seq, as the
        SQLite and Redis tiers break them. Summed term by term in query order, with the
        same operation order as `redis.lexical`, so the scores are identical. Costs what
        the query terms' postings hold, not the number of documents (an array over every
        slot is made only for postings of at least an eighth of them, `bm25.summed`)."""
        if k <= 0 or self._docs <= 0:
            return []
        n_docs = self._docs
        avg = self._total / n_docs if self._total > 0 else 1.0
        alive = np.frombuffer(self._alive, dtype=np.uint8)  # views, not copies
        lengths = np.frombuffer(self._lengths, dtype=np.float64)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for term in terms:
            entry = self._postings.get(term)
            if entry is None:
                continue
            slots = np.frombuffer(entry[0], dtype=np.int32)
            live = alive[slots] != 0
            slots = slots[live]
            n = int(slots.size)
            if n == 0:
                continue
            tf = np.frombuffer(entry[1], dtype=np.int32)[live].astype(np.float64)
            idf = math.log((n_docs - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            denom = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[slots] / avg)
            parts.append((slots, idf * (tf * (BM25_K1 + 1.0)) / denom))
        if not parts:
            return []
        matched, scores = summed([p[0] for p in parts], [p[1] for p in parts],
                                 span=len(self._ids))
        hit = np.flatnonzero(scores)
        if hit.size == 0:
            return []
        if hit.size > k:  # keep everything tied with the k-th score, then order by seq
            kth = -np.partition(-scores[hit], k - 1)[k - 1]
            hit = hit[scores[hit] >= kth]
        seqs = np.frombuffer(self._seqs, dtype=np.int64)[matched[hit]]
        order = hit[np.lexsort((seqs, -scores[hit]))][:k]
        return [(self._ids[int(matched[s])], float(scores[s])) for s in order]
