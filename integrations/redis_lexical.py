"""BM25 for the Redis tier, computed in Python over per-namespace postings kept in Redis.

Why this design (and not the Redis Query Engine):

- Redis 7 as Debian ships it has no modules, so FT.SEARCH is not there; a design that
  needs it would not run on the server the issue names. Redis 8 / Redis Stack have it,
  but one implementation that behaves the same everywhere is worth more than a faster
  path on some servers: recall must not change with the Redis build.
- The index is plain hashes under the namespace's hash tag (see `redis_keys`): one hash
  per term (memory id -> term frequency), one hash of document lengths and a two-field
  stats hash (document count, total length). They are written in the same MULTI/EXEC as
  the record, so a search never sees a half-written memory, and they live on the
  namespace's Cluster slot with everything else.
- Scoring happens in the client, not in Lua: a query reads at most `_MAX_QUERY_TERMS`
  posting hashes plus the lengths of the matched documents in one round trip, and the
  arithmetic (a few thousand multiply-adds) costs less than a Lua script would block
  the single Redis thread for every other worker.
- Terms and scores follow the SQLite tier: the same `core.text.lexical_terms` /
  `query_terms` (folded, Porter-stemmed) and FTS5's BM25 (k1 = 1.2, b = 0.75, idf floored
  at 1e-6), so recall on Redis matches recall on the embedded default;
  `tests/integration/test_redis_lexical.py` checks the scores against SQLite's bm25().
  One deliberate difference: document count and average length are per namespace here,
  whereas FTS5 pools them over every tenant in the file — tenants should not move each
  other's scores.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping

from reverie.core.text import lexical_terms

__all__ = ["BM25_B", "BM25_K1", "bm25_top", "term_frequencies"]

# FTS5's fixed BM25 parameters, mirrored (not tuned): the two tiers must rank alike.
BM25_K1 = 1.2
BM25_B = 0.75
# FTS5 replaces a non-positive idf (a term in more than half the rows) by this.
_IDF_FLOOR = 1e-6
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
            idf = _IDF_FLOOR
        for doc, tf in docs.items():
            dl = lengths.get(doc, 0)
            denom = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avg)
            scores[doc] = scores.get(doc, 0.0) + idf * (tf * (BM25_K1 + 1.0)) / denom
    rank = order or {}
    return heapq.nsmallest(
        k, ((doc, s) for doc, s in scores.items()),
        key=lambda item: (-item[1], rank.get(item[0], 0), item[0]),
    )
