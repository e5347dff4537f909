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
  the worker has no mirror yet, its position was trimmed away, or the namespace was
  deleted and re-created (a new stream starts after the old position), the mirror is
  filled from the active records on a thread of its own, and the Lua script scores the
  searches until it is in: reading a large namespace takes seconds to minutes, which a
  restarted worker's first recall should not wait for.
- A namespace with no stream (written by a reverie before the log) is scored by the Lua
  script, as before, until its next write starts the stream.

Positions only move forward, so concurrent searches of one worker can only bring a mirror
forward; the scores equal the Lua script's (same formula, same per-namespace statistics,
the same term rules), which `tests/integration/test_redis_lexical.py` checks.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from reverie.core.models import Status
from reverie.core.ports import LexicalHit
from reverie.core.text import lexical_terms, query_terms
from reverie.integrations.lexical.mirror import Bm25Mirror
from reverie.integrations.redis.keys import NamespaceKeys
from reverie.integrations.redis.plan import LOG_MAX
from reverie.integrations.redis.reads import Pipelined, Steps, chunks, records, seqs, unique

__all__ = ["MirrorSet", "filled_mirror", "mirrored_search", "up_to_date"]

_log = logging.getLogger(__name__)
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
        self._filling: dict[str, threading.Thread] = {}
        self._closed = False

    def fill(self, ns: str, read: Callable[[], Bm25Mirror | None]) -> None:
        """Fill the mirror of `ns` with `read()` on a thread of its own, unless one is at
        it already. A failed fill installs nothing (it is logged); the next search that
        finds no mirror starts another."""
        def work() -> None:
            try:
                fresh = read()
                if fresh is not None:
                    self.install(ns, fresh)
            except Exception:
                if not self._closed:  # a store closed under a fill is no failure
                    _log.warning("filling the BM25 mirror of %r failed; recall uses the "
                                 "script until a later fill succeeds", ns, exc_info=True)
            finally:
                with self._lock:
                    self._filling.pop(ns, None)

        with self._lock:
            if self._closed or ns in self._filling:
                return
            t = self._filling[ns] = threading.Thread(
                target=work, name="reverie-bm25-fill", daemon=True)
        t.start()

    def wait(self, ns: str, timeout: float | None = None) -> bool:
        """Wait for a fill of `ns` under way (at most `timeout` seconds); True when none
        is running any more."""
        with self._lock:
            t = self._filling.get(ns)
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def position(self, ns: str) -> int | None:
        with self._lock:
            m = self._mirrors.get(ns)
            return None if m is None else m.generation

    def install(self, ns: str, fresh: Bm25Mirror) -> None:
        with self._lock:
            if self._closed:
                return
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
        """The store is closing: every mirror goes, and a fill still running installs
        nothing."""
        with self._lock:
            self._closed = True
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
    mirrors: MirrorSet, keys: NamespaceKeys, ns: str, query: str, k: int,
    fill: Callable[[], None],
) -> Steps[list[LexicalHit] | None]:
    """BM25 top k from this worker's mirror of `ns`, brought up to date first; None when
    the caller should score with the Lua script instead: the namespace has no change log
    yet, or the mirror has to be filled from scratch, which `fill` starts in the
    background (a worker's first recall waits for a few postings, not for the namespace)."""
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    ready = yield from up_to_date(mirrors, keys, ns)
    if ready is None:
        return None
    if not ready:
        fill()
        return None
    return mirrors.top(ns, terms, k)


def up_to_date(mirrors: MirrorSet, keys: NamespaceKeys, ns: str) -> Steps[bool | None]:
    """Bring the mirror of `ns` up to the change log by replaying it; False when it has
    to be filled from scratch (never filled, or its position was trimmed from the log),
    None when the namespace has no log."""
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
        return True
    if at is None or oldest > at:
        return False
    entries: list[tuple[str, dict[str, str]]] = yield (
        "xrange", keys.lexlog, f"({_entry_id(at)}", "+", _REPLAY_MAX + 1)
    if len(entries) > _REPLAY_MAX:
        return False
    changed = unique(fields["id"] for _, fields in entries)
    docs = yield from _documents(keys, changed)
    moved = max([newest, *(_position(e) for e, _ in entries)])
    mirrors.apply(ns, at, changed, docs, moved)
    return True


def filled_mirror(keys: NamespaceKeys) -> Steps[Bm25Mirror | None]:
    """A mirror of the namespace's active texts, at the log position read before them
    (writes after it are replayed by the next search; replaying one already in is
    harmless). None when the namespace has no log."""
    last = yield ("xrevrange", keys.lexlog, "+", "-", 1)
    if not last:
        return None
    ids: list[str] = yield ("zrange", keys.status(Status.ACTIVE.value), 0, -1)
    fresh = Bm25Mirror((0, 0), _position(last[0][0]))
    for part in chunks(ids):
        fresh.add_many((yield from _documents(keys, part)))
    return fresh
