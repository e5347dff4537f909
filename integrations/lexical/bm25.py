"""FTS5's BM25, written once for every tier: its constants, the terms of a text, and the
reference scoring that the Redis script and the in-process mirror are tested against.

The parameters are FTS5's fixed ones, mirrored rather than tuned, so recall ranks alike on
SQLite and on Redis.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from reverie.core.text import lexical_terms

__all__ = ["BM25_B", "BM25_K1", "IDF_FLOOR", "bm25_top", "summed", "term_frequencies"]

BM25_K1 = 1.2
BM25_B = 0.75
# FTS5 replaces a non-positive idf (a term in more than half the rows) by this.
IDF_FLOOR = 1e-6


def term_frequencies(text: str) -> tuple[Counter[str], int]:
    """Term -> count and the document length, from the one text rule every tier shares."""
    tokens = lexical_terms(text)
    return Counter(tokens), len(tokens)


def bm25_top(
    postings: Mapping[str, Mapping[str, int]],
    lengths: Mapping[str, int],
    doc_count: int,
    total_length: int,
    k: int,
    order: Mapping[str, int] | None = None,
) -> list[tuple[str, float]]:
    """The k best documents by FTS5's BM25 (higher is better), ties by `order` (the
    insertion sequence, as the SQLite tier breaks them), then id.

    `postings` maps each query term to {document id: term frequency}; `lengths` holds
    the token count of every matched document.
    """
    if k <= 0 or doc_count <= 0:
        return []
    avg = total_length / doc_count if total_length > 0 else 1.0
    scores: dict[str, float] = {}
    for docs in postings.values():
        n = len(docs)
        if n == 0:
            continue
        idf = math.log((doc_count - n + 0.5) / (n + 0.5))
        if idf <= 0.0:
            idf = IDF_FLOOR
        for doc, tf in docs.items():
            dl = lengths.get(doc, 0)
            denom = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avg)
            scores[doc] = scores.get(doc, 0.0) + idf * (tf * (BM25_K1 + 1.0)) / denom
    rank = order or {}
    return heapq.nsmallest(
        k, ((doc, s) for doc, s in scores.items()),
        key=lambda item: (-item[1], rank.get(item[0], 0), item[0]),
    )


# Postings at or above this share of the document numbers (1/8) are summed in an array over
# every number instead of over the matched documents only: sorting the postings to find the
# documents (`np.unique`) costs ~50 ns a posting, one pass over an array of every number
# ~2 ns a number. At a million memories, a question of common words (300k postings) was
# summed in 17 ms the first way and 6 ms the second; with fewer postings the sort wins.
# Below the share the array would cost more than the postings, so a search still costs
# what its postings hold.
DENSE_SHARE = 8


def summed(
    docs: Sequence[np.ndarray], contribs: Sequence[np.ndarray], span: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The matched documents (ascending) and their scores, from each term's documents and
    contributions given in query order. A document's contributions are added in that order
    (`bincount` adds its weights in array order), as the reference does, so every tier's
    scores are the same to the last bit. `span`: the documents are numbered below it (the
    mirror's slots), which allows the array over every number (`DENSE_SHARE`)."""
    every = np.concatenate(docs)
    weights = np.concatenate(contribs)
    if span is not None and every.size * DENSE_SHARE >= span:
        dense = np.bincount(every, weights=weights, minlength=span)
        matched = np.flatnonzero(dense)
        return matched, dense[matched]
    matched, where = np.unique(every, return_inverse=True)
    return matched, np.bincount(where, weights=weights, minlength=len(matched))
