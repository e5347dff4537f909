"""BM25 for the Redis tier scored in the worker, from a mirror kept exact by a change log.

The Lua script (`redis.lexical.BM25_SCRIPT`) scores on the server: one round trip, but
every recall of every worker then spends the single-threaded server's time walking
postings (about a microsecond per posting; "a photo of ..." queries touch thousands).
Here each worker keeps a `Bm25Mirror` per namespace and asks Redis only what changed:

- Every write that changes a namespace's postings appends the memory id to the stream
  `{ns}:lex:log` in the same MULTI/EXEC (`redis.plan`), capped near `LOG_MAX` entries.
- A search reads the stream's last and first entry ids (one pipelined round trip). Same
  last id as the mirror: score locally. Otherwise replay: the ids logged after the mirror's
  position are re-read from their records (active ones re-added, the rest removed). When
  the mirror's position was trimmed away, or the namespace was deleted and re-created (a
  new stream starts after the old position), the mirror is rebuilt from the active records.
- A namespace with no stream (written by a reverie before the log) is scored by the Lua
  script, as before, until its next write starts the stream.

Positions only move forward, so concurrent searches of one worker can only bring a mirror
forward; the scores equal the Lua script's (same formula, same per-namespace statistics,
the same term rules), which `tests/integration/test_redis_lexical.py` checks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from reverie.core.models import Status
from reverie.core.ports import LexicalHit
from reverie.core.text import lexical_terms, query_terms
from reverie.integrations.lexical.mirror import Bm25Mirror
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.plan import LOG_MAX
from reverie.integrations.redis.reads import Pipelined, Steps, chunks, records, seqs, unique

__all__ = ["MirrorSet", "mirrored_search"]

_REPLAY_MAX = LOG_MAX  # a safeguard: the log never holds much more than this
_MIRRORS = 64  # namespaces mirrored per store (least recently used go)


def _position(entry_id: str) -> int:
    ms, _, seq = entry_id.partition("-")
    return (int(ms) << 32) | int(seq or 0)


def _entry_id(position: int) -> str:
    return f"{position >> 32}-{position & 0xFFFFFFFF}"


class MirrorSet:
    """The mirrors of one store, guarded by one lock (held only while no I/O runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mirrors: OrderedDict[str, Bm25Mirror] = OrderedDict()

    def position(self, ns: str) -> int | None:
        with self._lock:
            m = self._mirrors.get(ns)
            return None if m is None else m.generation

    def install(self, ns: str, fresh: Bm25Mirror) -> None:
        with self._lock:
            old = self._mirrors.get(ns)
            if old is None or old.generation <= fresh.generation:
                self._mirrors[ns] = fresh
                self._mirrors.move_to_end(ns)
            while len(self._mirrors) > _MIRRORS:
                self._mirrors.popitem(last=False)

    def apply(
        self, ns: str, since: int, changed: Sequence[str],
        docs: Iterable[tuple[int, str, str]], position: int,
    ) -> None:
        """Bring the mirror from `since` to `position`; skipped if another search already
        moved it (or it was replaced) meanwhile: it is then at least as new."""
        with self._lock:
            m = self._mirrors.get(ns)
            if m is None or m.generation != since:
                return
            for memory_id in changed:
                m.remove_id(memory_id)
            m.add_many(docs)
            m.generation = position

    def top(self, ns: str, terms: Sequence[str], k: int) -> list[LexicalHit]:
        with self._lock:
            m = self._mirrors.get(ns)
            if m is None:
                return []
            self._mirrors.move_to_end(ns)
            return [LexicalHit(i, s) for i, s in m.top(terms, k)]

    def drop(self, ns: str) -> None:
        with self._lock:
            self._mirrors.pop(ns, None)

    def forget(self, ns: str, ids: Iterable[str]) -> None:
        """Deleted memories leave this process's mirror at once (the log would remove them
        at the next search anyway; privacy should not wait for one)."""
        with self._lock:
            m = self._mirrors.get(ns)
            if m is not None:
                for memory_id in ids:
                    m.remove_id(memory_id)

    def clear(self) -> None:
        with self._lock:
            self._mirrors.clear()


def _documents(keys: NamespaceKeys, ids: Sequence[str]) -> Steps[list[tuple[int, str, str]]]:
    """(seq, id, terms) of the ids whose records are active now; the rest are absent."""
    found = yield from records(keys, ids)
    active = [i for i in ids if i in found and found[i].status is Status.ACTIVE]
    order = yield from seqs(keys, active)
    return [
        (order[i], i, " ".join(lexical_terms(found[i].text))) for i in active if i in order
    ]


def mirrored_search(
    mirrors: MirrorSet, keys: NamespaceKeys, ns: str, query: str, k: int
) -> Steps[list[LexicalHit] | None]:
    """BM25 top k from this worker's mirror of `ns`, brought up to date first; None when
    the namespace has no change log yet (the caller scores with the Lua script)."""
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    last, first = yield Pipelined(
        (("xrevrange", keys.lexlog, "+", "-", 1), ("xrange", keys.lexlog, "-", "+", 1)),
        atomic=False,
    )
    if not last:  # no log: never written since the log exists, or deleted by any worker
        mirrors.drop(ns)
        return None
    newest, oldest = _position(last[0][0]), _position(first[0][0])
    at = mirrors.position(ns)
    if at == newest:
        return mirrors.top(ns, terms, k)
    rebuild = at is None or oldest > at  # never mirrored, or its position was trimmed
    entries: list[tuple[str, dict[str, str]]] = []
    if not rebuild:
        assert at is not None
        entries = yield ("xrange", keys.lexlog, f"({_entry_id(at)}", "+", _REPLAY_MAX + 1)
        rebuild = len(entries) > _REPLAY_MAX
    if rebuild:
        ids: list[str] = yield ("zrange", keys.status(Status.ACTIVE.value), 0, -1)
        fresh = Bm25Mirror((0, 0), newest)
        for part in chunks(ids):
            fresh.add_many((yield from _documents(keys, part)))
        mirrors.install(ns, fresh)
    else:
        assert at is not None
        changed = unique(fields["id"] for _, fields in entries)
        docs = yield from _documents(keys, changed)
        moved = max([newest, *(_position(e) for e, _ in entries)])
        mirrors.apply(ns, at, changed, docs, moved)
    return mirrors.top(ns, terms, k)
