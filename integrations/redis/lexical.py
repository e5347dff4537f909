"""BM25 for the Redis tier, computed in Python over per-namespace postings kept in Redis.

Why this design (and not the Redis Query Engine):

- Redis 7 as Debian ships it has no modules, so FT.SEARCH is not there; a design that
  needs it would not run on a plain Redis server. Redis 8 / Redis Stack have it,
  but one implementation that behaves the same everywhere is worth more than a faster
  path on some servers: recall must not change with the Redis build.
- The index is plain hashes under the namespace's hash tag (see `redis.keys`): one hash
  per term (memory id -> term frequency), one hash of document lengths and a two-field
  stats hash (document count, total length). They are written in the same MULTI/EXEC as
  the record, so a search never sees a half-written memory, and they live on the
  namespace's Cluster slot with everything else.
- Scoring runs in a Lua script next to the postings (`BM25_SCRIPT`): one round trip, and
  only the k winners cross the wire. Shipping every posting of every query term to the
  client first (HGETALL of the postings, then the lengths) makes recall several times
  slower than on SQLite, nearly all of it parsing replies in Python, while the script
  costs the server little per posting. `bm25_top` is the same formula in Python,
  the reference the script is tested against
  (`reverie.integrations.lexical.bm25`, shared with the SQLite tier's mirror).
- Terms and scores follow the SQLite tier: the same `core.text.lexical_terms` /
  `query_terms` (folded, Porter-stemmed) and FTS5's BM25 (k1 = 1.2, b = 0.75, idf floored
  at 1e-6), so recall on Redis matches recall on the embedded default;
  `tests/integration/test_redis_lexical.py` checks the scores against SQLite's bm25().
  One deliberate difference: document count and average length are per namespace here,
  whereas FTS5 pools them over every tenant in the file — tenants should not move each
  other's scores.
"""

from __future__ import annotations

from reverie.integrations.lexical.bm25 import (
    BM25_B,
    BM25_K1,
    IDF_FLOOR,
    bm25_top,
    term_frequencies,
)

__all__ = ["BM25_ARGS", "BM25_SCRIPT", "SCRIPT_POSTINGS", "bm25_top", "term_frequencies"]

# Postings one server-side search may read (summed over the query's terms). The script
# runs while a worker's mirror fills, and Redis serves no other client while it runs: at a
# million memories a question of common words reads hundreds of thousands of postings, a
# second during which every worker's writes and reads wait. Over the budget, the commonest
# terms are left out (rarest kept first): until the mirror is filled, such a question's
# lexical half is scored on its rarer words only (the words that weigh most in BM25), in
# at most ~50 ms of the server's time on a 2-core machine. A question reaches it only when
# its words are common in a namespace of tens of thousands of texts or more.
SCRIPT_POSTINGS = 20_000

# KEYS: stats, doc lengths, scan order (id -> seq), then one postings hash per query term.
# ARGV: k, k1, b, idf floor, postings budget (0: none). Returns [id, score, id, score, ...]:
# best first, ties by seq then id (as SQLite).
BM25_SCRIPT = """
local st = redis.call('HMGET', KEYS[1], 'docs', 'terms')
local n_docs = tonumber(st[1]) or 0
local total = tonumber(st[2]) or 0
local k = tonumber(ARGV[1])
if n_docs <= 0 or k <= 0 then return {} end
local avg = 1.0
if total > 0 then avg = total / n_docs end
local k1, b, floor = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local budget = tonumber(ARGV[5]) or 0
local skip = {}
if budget > 0 then
  local sizes, order = {}, {}
  for t = 4, #KEYS do
    sizes[t] = redis.call('HLEN', KEYS[t])
    order[#order + 1] = t
  end
  table.sort(order, function(x, y)
    if sizes[x] ~= sizes[y] then return sizes[x] < sizes[y] end
    return x < y
  end)
  local used = 0
  for _, t in ipairs(order) do
    if used + sizes[t] > budget then skip[t] = true else used = used + sizes[t] end
  end
end
local scores, lengths, ids = {}, {}, {}
for t = 4, #KEYS do
  local p = {}
  if not skip[t] then p = redis.call('HGETALL', KEYS[t]) end
  local n = #p / 2
  if n > 0 then
    local idf = math.log((n_docs - n + 0.5) / (n + 0.5))
    if idf <= 0 then idf = floor end
    for j = 1, #p, 2 do
      local id = p[j]
      local tf = tonumber(p[j + 1])
      local dl = lengths[id]
      if dl == nil then
        dl = tonumber(redis.call('HGET', KEYS[2], id)) or 0
        lengths[id] = dl
      end
      if scores[id] == nil then
        scores[id] = 0
        ids[#ids + 1] = id
      end
      scores[id] = scores[id] + idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avg))
    end
  end
end
table.sort(ids, function(x, y)
  if scores[x] ~= scores[y] then return scores[x] > scores[y] end
  return x < y
end)
-- Everything tied with the k-th score, ordered by seq like SQLite.
local last = math.min(k, #ids)
while last < #ids and scores[ids[last + 1]] == scores[ids[last]] do last = last + 1 end
local top = {}
local seq = {}
for i = 1, last do
  top[i] = ids[i]
  seq[ids[i]] = tonumber(redis.call('ZSCORE', KEYS[3], ids[i])) or 0
end
table.sort(top, function(x, y)
  if scores[x] ~= scores[y] then return scores[x] > scores[y] end
  if seq[x] ~= seq[y] then return seq[x] < seq[y] end
  return x < y
end)
local out = {}
for i = 1, math.min(k, #top) do
  out[#out + 1] = top[i]
  out[#out + 1] = string.format('%.17g', scores[top[i]])
end
return out
"""
BM25_ARGS = (BM25_K1, BM25_B, IDF_FLOOR)
