"""The Redis key layout of reverie, in one place.

Every key of a namespace starts with ``<prefix>:{<namespace>}:``. The braces are a Redis
Cluster hash tag: the whole namespace hashes to one slot, so a namespace lives on one node
and a MULTI/EXEC or Lua script over its keys stays atomic on a cluster too. The namespace
goes in raw: `core.models.validate_namespace` admits only letters, digits and ``._-@+=/``,
so it cannot hold ``{``, ``}``, ``:``, ``*``, spaces or glob characters and therefore can
neither end its own hash tag early nor forge another namespace's prefix. The prefix
(default ``rv``) is checked the same way, so two deployments can share one Redis.

===========================  =======  ======================================================
key (after the prefix)       type     holds
===========================  =======  ======================================================
{ns}:m:<id>                  string   the memory record, `core.codec` JSON (version inside)
{ns}:seq                     string   counter: insertion sequence numbers
{ns}:all                     zset     id -> seq, every memory (scan order)
{ns}:status:<status>         zset     id -> seq, memories with that status
{ns}:tier:<tier>             zset     id -> seq, ACTIVE memories of that tier
{ns}:hash:<sha256>           set      ids of active free-text memories with that text hash
{ns}:key:<fact key>          set      ids of every version of a fact key
{ns}:ent:<entity>            zset     id -> created_at (microseconds), ACTIVE memories
{ns}:edges                   hash     JSON [src, dst, type] -> weight
{ns}:adj:<id>                set      the edge fields touching <id>
{ns}:lex:t:<term>            hash     id -> term frequency (active memories only)
{ns}:lex:len                 hash     id -> document length in terms
{ns}:lex:doc                 hash     id -> JSON list of the document's distinct terms
{ns}:lex:stats               hash     docs, terms (document count and total length)
{ns}:lex:log                 stream   ids whose postings changed, for workers' BM25 mirrors
                                      (redis.lexical_mirror), capped near LOG_MAX entries
{ns}:emb                     hash     id -> base64 embedding (kept_vectors: half precision), for
                                      recall's lexical-only candidates; deleted with the record
{ns}:wrote                   zset     "last" -> the newest updated_at written (microseconds;
                                      ZADD GT): maintenance_due's idle signal, no scan
{ns}:journal                 hash     consolidation fingerprint -> JSON entry
{ns}:lock                    string   "<expires ms>|<token>|<holder>" with a PX expiry
{ns}:vq                      list     queued vector-index writes, JSON, oldest first
                                      (redis.outbox); trimmed as they are applied
{ns}:vq:pushed               string   counter: writes ever queued
{ns}:vq:done                 string   counter: writes applied (done + LLEN vq = pushed)
{ns}:vq:lease                string   the drain lease: a token with a PX expiry
{ns}:vq:waiters              set      tokens of writers waiting for the lease
{ns}:vq:wake:<token>         list     a waiting writer's wake-up call (BLPOP), expires
{ns}:keys                    set      every per-item key above (hash:, key:, ent:, adj:,
                                      lex:t:), so a namespace is deleted without SCAN
namespaces                   set      namespace names (listing never scans keys)
meta                         hash     store-wide settings (the embedder's name, ...)
===========================  =======  ======================================================
"""

from __future__ import annotations

import re

from reverie.core.errors import InvalidInput
from reverie.core.models import validate_namespace

__all__ = ["DEFAULT_PREFIX", "NamespaceKeys", "global_keys", "validate_prefix"]

DEFAULT_PREFIX = "rv"
_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def validate_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise InvalidInput(
            f"invalid Redis key prefix {prefix!r}: use 1-64 letters, digits and '._-'"
        )
    return prefix


def global_keys(prefix: str) -> tuple[str, str]:
    """(namespaces set, meta hash): the only keys outside every namespace."""
    return f"{prefix}:namespaces", f"{prefix}:meta"


class NamespaceKeys:
    """Key names of one namespace; every one carries the namespace hash tag."""

    __slots__ = (
        "adj_prefix", "all", "base", "doc", "doclen", "edges", "emb", "journal", "lexlog",
        "lock", "namespace", "outbox", "outbox_done", "outbox_lease", "outbox_pushed",
        "outbox_waiters", "registry", "seq", "stats", "wrote",
    )

    def __init__(self, prefix: str, namespace: str) -> None:
        ns = validate_namespace(namespace)
        self.namespace = ns
        self.base = f"{prefix}:{{{ns}}}:"
        self.seq = self.base + "seq"
        self.all = self.base + "all"
        self.edges = self.base + "edges"
        self.adj_prefix = self.base + "adj:"
        self.doclen = self.base + "lex:len"
        self.doc = self.base + "lex:doc"
        self.stats = self.base + "lex:stats"
        self.lexlog = self.base + "lex:log"
        self.emb = self.base + "emb"
        self.journal = self.base + "journal"
        self.wrote = self.base + "wrote"
        self.lock = self.base + "lock"
        self.outbox = self.base + "vq"
        self.outbox_pushed = self.base + "vq:pushed"
        self.outbox_done = self.base + "vq:done"
        self.outbox_lease = self.base + "vq:lease"
        self.outbox_waiters = self.base + "vq:waiters"
        self.registry = self.base + "keys"

    def record(self, memory_id: str) -> str:
        return f"{self.base}m:{memory_id}"

    def outbox_wake(self, token: str) -> str:
        return f"{self.base}vq:wake:{token}"

    def status(self, status: str) -> str:
        return f"{self.base}status:{status}"

    def tier(self, tier: str) -> str:
        return f"{self.base}tier:{tier}"

    def text_hash(self, digest: str) -> str:
        return f"{self.base}hash:{digest}"

    def fact_key(self, key: str) -> str:
        return f"{self.base}key:{key}"

    def entity(self, entity: str) -> str:
        return f"{self.base}ent:{entity}"

    def adjacency(self, memory_id: str) -> str:
        return f"{self.adj_prefix}{memory_id}"

    def term(self, term: str) -> str:
        return f"{self.base}lex:t:{term}"
