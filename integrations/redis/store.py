"""The shared tier's system of record: memories, edges, BM25, locks and a journal in Redis.

Why it looks the way it does:

- Works on plain Redis 7 (no modules) and on Redis Cluster. Every key of a namespace
  carries the namespace as a hash tag (layout in `redis.keys`), so a namespace sits on one
  slot and every multi-key write below is one MULTI/EXEC on one node.
- Writes are optimistic (see `redis.plan`): WATCH what decides the outcome, read, compute
  every command in Python, MULTI/EXEC; a concurrent change aborts the EXEC and the write is
  recomputed. Records, secondary indexes (status, tier, text hash, fact key, entity, scan
  order), lexical postings and edges change in the same EXEC, so they never disagree. A
  compare-and-set that loses raises `ConflictError`. `touch`, which changes records only,
  reads them and sets them in one Lua compare-and-set on their exact texts (two round
  trips, not three), re-read when another writer got there first: it never loses a count.
- Reads are request/reply generators in `redis.reads`, driven here: what a read asks and
  how its replies combine stays apart from the I/O, round trip for round trip.
- Any Redis failure (down, timeout, out of memory, a cluster failover) raises
  `BackendUnavailable`; MULTI/EXEC means a write interrupted by it applied nothing.
- Lexical search is BM25 over postings kept in Redis, scored in Python (`redis.lexical`
  says why); it matches the SQLite tier's ranking.
- The maintenance lock is a lease: a token, a holder and an expiry on Redis's own clock
  (TIME inside Lua, shared by every client), released only by the token's holder.
- Namespace listing reads a set of names; deleting a namespace reads its key registry.
  Nothing ever SCANs the key space, so no tenant's keys are walked for another.

Open it with `RedisStore.from_url("redis://[:password@]host:port/db")`, `rediss://` for
TLS, or `redis+cluster://host:port` (`rediss+cluster://` with TLS) for a cluster.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeVar, cast

import numpy as np

from reverie.core.clock import utc
from reverie.core.errors import (
    BackendUnavailable,
    InvalidInput,
    LockBusy,
    MissingExtra,
    ReverieError,
)
from reverie.core.models import Edge, Memory, Status, Tier, validate_namespace
from reverie.core.ports import LexicalHit, WriteBatch

try:
    import redis
    from redis.exceptions import RedisError, WatchError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("The Redis store (reverie.integrations.redis.store)", "redis") from e

import reverie.integrations.redis.reads as reads
import reverie.integrations.redis.residue as residue
from reverie.integrations.redis.connection import (
    LostRaces,
    client_from_url,
    is_redis_url,
    safe_url,
    translate,
)
from reverie.integrations.redis.keys import (
    DEFAULT_PREFIX,
    NamespaceKeys,
    global_keys,
    validate_prefix,
)
from reverie.integrations.redis.lexical import BM25_SCRIPT, SCRIPT_POSTINGS
from reverie.integrations.redis.lexical_mirror import (
    MirrorSet,
    filled_mirror,
    mirrored_search,
    up_to_date,
)
from reverie.integrations.redis.plan import (
    DECODED,
    LAST_WRITE,
    CheckedBatch,
    Command,
    check_batch,
    load_journal_entry,
    parse_doc,
    plan_commit,
    plan_delete,
    plan_drop_namespace,
)
from reverie.integrations.redis.reads import Lua, Pipelined, Request, Steps
from reverie.integrations.redis.reads import chunks as _chunks
from reverie.integrations.redis.reads import unique as _unique
from reverie.integrations.store_values import (
    Heartbeat,
    check_ttl,
    check_window,
    dumps,
    from_micros,
    holder_dead,
    lease_holder,
    micros,
)
from reverie.integrations.urls import redact

__all__ = ["RedisStore", "client_from_url", "is_redis_url"]

T = TypeVar("T")


# Lease = "<expires ms>|<token>|<holder>". Redis's clock decides expiry for every client.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('GET', KEYS[1])
if cur then
  local exp = tonumber(string.match(cur, '^(%d+)|'))
  if exp and exp > now then return {0, cur, tostring(now)} end
end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%d', now + ttl) .. '|' .. ARGV[1] .. '|' .. ARGV[3],
           'PX', math.max(ttl, 1))
return {1, '', tostring(now)}
"""
# A lease whose holder process is gone: replaced only if it is still the one judged dead.
_TAKE_OVER = """
if redis.call('GET', KEYS[1]) ~= ARGV[4] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%d', now + ttl) .. '|' .. ARGV[1] .. '|' .. ARGV[3],
           'PX', math.max(ttl, 1))
return 1
"""
# The heartbeat: the holder of the token pushes its expiry out by the lease's length.
_RENEW = """
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local tok, holder = string.match(cur, '^%d+|([^|]*)|(.*)$')
if tok ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%d', now + ttl) .. '|' .. tok .. '|' .. holder,
           'PX', math.max(ttl, 1))
return 1
"""
_RELEASE = """
local cur = redis.call('GET', KEYS[1])
if cur then
  local tok = string.match(cur, '^%d+|([^|]*)|')
  if tok == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
end
return 0
"""
_DEGREES = reads.DEGREES_SCRIPT
# KEYS: the edge hash, then adjacency sets. Every edge touching them, once: [field, weight, ...]
_EDGES = """
local seen, out = {}, {}
for i = 2, #KEYS do
  for _, f in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    if not seen[f] then
      seen[f] = true
      local w = redis.call('HGET', KEYS[1], f)
      if w then
        out[#out + 1] = f
        out[#out + 1] = w
      end
    end
  end
end
return out
"""


def _lock_busy(ns: str, value: str, now_ms: int) -> LockBusy:
    expires, _, holder = value.split("|", 2)
    until_ms = int(expires)
    until = datetime.fromtimestamp(until_ms / 1000, UTC).isoformat(timespec="seconds")
    return LockBusy(
        f"namespace {ns!r} is locked for maintenance by {holder} until {until} "
        f"(in {(until_ms - now_ms) / 1000:.1f} s); wait for it to finish, or retry after that"
    )


class RedisStore:
    """RecordStore and LexicalIndex on Redis or Redis Cluster (see the module docstring).

    Thread-safe (redis-py pools connections) and process-safe (every write is atomic on
    the server). `client` is a `redis.Redis` or `redis.RedisCluster` with
    `decode_responses=True`; `from_url` builds one.
    """

    # writes cross a network: the engine batches background touches longer (core.ports)
    remote = True

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, name: str = "redis") -> None:
        self._client = client
        self._prefix = validate_prefix(prefix)
        self._name = redact(name)  # shown in repr and messages
        self._namespaces_key, self._meta_key = global_keys(self._prefix)
        self._closed = False
        self._cluster = isinstance(client, redis.RedisCluster)
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._take_over = client.register_script(_TAKE_OVER)
        self._renew = client.register_script(_RENEW)
        self._degrees = client.register_script(_DEGREES)
        self._edges = client.register_script(_EDGES)
        self._bm25 = client.register_script(BM25_SCRIPT)
        self._scripts = {
            "edges": self._edges, "degrees": self._degrees, "bm25": self._bm25,
            "keep": client.register_script(reads.KEEP_SCRIPT),
            "entity_top": client.register_script(reads.ENTITY_TOP_SCRIPT),
            "touch": client.register_script(reads.TOUCH_SCRIPT),
            "around": client.register_script(reads.AROUND_SCRIPT),
        }
        self._mirrors = MirrorSet()  # BM25 mirrors of the namespaces this store searches
        # postings a search scored on the server (before the mirror is filled) may read:
        # `redis.lexical.SCRIPT_POSTINGS`; 0 reads every one
        self.script_postings = SCRIPT_POSTINGS
        self._guard(client.ping)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX, **options: Any) -> RedisStore:
        client = client_from_url(url, **options)
        try:
            return cls(client, prefix=prefix, name=safe_url(url))
        except BaseException:
            client.close()
            raise

    @property
    def client(self) -> Any:
        return self._client

    @property
    def prefix(self) -> str:
        return self._prefix

    def _keys(self, namespace: str) -> NamespaceKeys:
        return NamespaceKeys(self._prefix, namespace)

    # --- plumbing -------------------------------------------------------------------------

    def _unavailable(self, e: Exception) -> BackendUnavailable:
        return translate(e, f"Redis at {self._name}", "running a store operation")

    def _guard(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise BackendUnavailable(f"the Redis store at {self._name} is closed")
        try:
            return fn(*args)
        except ReverieError:
            raise
        except RedisError as e:
            raise self._unavailable(e) from None

    def _transact(self, watch: Sequence[str], body: Callable[[Any], list[Command] | None]) -> Any:
        """WATCH `watch`, run `body(pipe)` (reads in immediate mode; returns the commands,
        or None for nothing to do), MULTI/EXEC them; rerun from scratch if a watched key
        changed. Exceptions from `body` (a conflict, bad input) propagate, nothing applied."""
        races = LostRaces(self._name)
        while True:
            with self._client.pipeline(transaction=True) as pipe:
                try:
                    if watch:
                        pipe.watch(*watch)
                    cmds = body(pipe)
                    if not cmds:
                        pipe.reset()
                        return []
                    pipe.multi()
                    for cmd in cmds:
                        pipe.execute_command(*cmd)
                    return pipe.execute()
                except WatchError:
                    pass
            time.sleep(races.lost())

    def _run(self, steps: Steps[T], conn: Any = None) -> T:
        """Drive a shared read (`redis.reads`) on `conn` (the client, or a pipeline under
        WATCH), blocking on each request."""
        reply: Any = None
        while True:
            try:
                request = steps.send(reply)
            except StopIteration as done:
                return cast(T, done.value)
            reply = self._ask(self._client if conn is None else conn, request)

    def _ask(self, conn: Any, request: Request) -> Any:
        if isinstance(request, Lua):
            return self._scripts[request.script](request.keys, request.args)
        if isinstance(request, Pipelined):
            with conn.pipeline(transaction=request.atomic) as pipe:
                for method, *args in request.calls:
                    getattr(pipe, method)(*args)
                return pipe.execute()
        method, *args = request
        return getattr(conn, method)(*args)

    def _read_records(
        self, pipe: Any, keys: NamespaceKeys, ids: Sequence[str]
    ) -> dict[str, Memory]:
        return self._run(reads.records(keys, ids), pipe)

    # --- RecordStore: writes --------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        """Apply a batch atomically; any conflict applies nothing (see `redis.plan`)."""
        checked = check_batch(batch, self._prefix)
        if not checked.ids and not checked.edges and not checked.removals:
            return
        register: list[Command] = []
        if checked.ids:
            if self._cluster:
                # Outside the namespace's slot, so before the write: a crash in between
                # leaves an empty name in the set, which `namespaces()` skips.
                self._guard(self._client.sadd, self._namespaces_key, checked.namespace)
            else:  # one server: in the same EXEC, one round trip fewer
                register.append(("SADD", self._namespaces_key, checked.namespace))

        def body(pipe: Any) -> list[Command]:
            return self._plan(checked) + register

        self._guard(self._transact, checked.watch_keys(), body)

    def _plan(self, batch: CheckedBatch) -> list[Command]:
        """Read what the write depends on (after its WATCH, on another connection of the
        pool: the server has the WATCH before it gets these reads, so a change after them
        still aborts the EXEC) and plan it."""
        stored, first_seq = self._run(reads.write_state(batch))
        return plan_commit(batch, stored, first_seq)

    def touch(self, namespace: str, ids: Sequence[str], at: datetime, window: int) -> None:
        """Reinforce under WATCH: a concurrent touch makes this one re-read and recount.

        Only the record changes (status and text do not), so no index is touched. An id
        listed twice is reinforced once (one retrieval is one access)."""
        self.touch_many(namespace, [(ids, at)], window)

    def touch_many(
        self,
        namespace: str,
        events: Sequence[tuple[Sequence[str], datetime]],
        window: int,
    ) -> None:
        """`touch` of each (ids, at) in order, each record read and written once per
        transaction however many events reinforce it (an optional capability, as on
        SQLite): the background reinforcement writes a burst of recalls' touches in one
        read and one compare-and-set (`redis.reads.touch_chunk`) instead of one each,
        which back-to-back recalls otherwise pay for beside the next recall. Atomic per
        chunk of ids, like `touch`."""
        keys = self._keys(namespace)
        check_window(window)
        steps = [(_unique(ids), utc(at)) for ids, at in events]
        wanted = _unique(i for ids, _ in steps for i in ids)
        for chunk in _chunks(wanted):
            races = LostRaces(self._name, "a touch")
            while True:
                done, written = self._guard(
                    self._run, reads.touch_chunk(keys, chunk, steps, window)
                )
                if done:
                    break
                time.sleep(races.lost())  # another writer changed one of them: read again
            for raw, m in written:  # committed: the next recall reads these back
                DECODED.remember(raw, m)

    def delete(self, namespace: str, ids: Iterable[str]) -> int:
        """Real deletion for privacy: no key keeps the text or the links."""
        keys = self._keys(namespace)
        wanted = _unique(ids)
        if not wanted:
            return 0
        deleted = 0
        for chunk in _chunks(wanted):
            found: list[int] = []

            def body(
                pipe: Any, chunk: Sequence[str] = chunk, found: list[int] = found
            ) -> list[Command]:
                records = self._read_records(pipe, keys, chunk)
                docs: dict[str, tuple[int, list[str]]] = {}
                if records:
                    present = list(records)
                    for memory_id, raw in zip(present, pipe.hmget(keys.doc, present), strict=True):
                        doc = parse_doc(raw)
                        if doc is not None:
                            docs[memory_id] = doc
                adjacency = {i: set(pipe.smembers(keys.adjacency(i))) for i in chunk}
                found[:] = [len(records)]
                return plan_delete(keys, records, docs, adjacency, chunk)

            watch = [keys.record(i) for i in chunk] + [keys.adjacency(i) for i in chunk]
            self._guard(self._transact, watch, body)
            deleted += found[0] if found else 0
            self._mirrors.forget(keys.namespace, chunk)
        DECODED.forget(keys.namespace, wanted)  # no deleted text stays decoded in this process
        return deleted

    def delete_namespace(self, namespace: str) -> int:
        """Everything of a tenant, journal included; a held lock is left to expire."""
        keys = self._keys(namespace)

        def body(pipe: Any) -> list[Command]:
            ids = pipe.zrange(keys.all, 0, -1)
            count[:] = [len(ids)]
            cmds = plan_drop_namespace(keys, ids, list(pipe.smembers(keys.registry)))
            if not self._cluster:
                cmds.append(("SREM", self._namespaces_key, ns))
            return cmds

        ns = validate_namespace(namespace)
        count: list[int] = [0]
        self._guard(self._transact, [keys.all, keys.registry], body)
        self._mirrors.drop(ns)
        DECODED.forget(ns)
        if self._cluster:  # the name set is on another slot: unlist, then re-list if a
            # writer re-created the namespace meanwhile
            self._guard(self._client.srem, self._namespaces_key, ns)
            if self._guard(self._client.zcard, keys.all):
                self._guard(self._client.sadd, self._namespaces_key, ns)
        return count[0]

    # --- RecordStore: reads ---------------------------------------------------------------

    def get(self, namespace: str, memory_id: str) -> Memory | None:
        return self._guard(self._run, reads.get(self._keys(namespace), memory_id))

    def get_many(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        return self._guard(self._run, reads.get_many(self._keys(namespace), ids))

    def recall_reads(
        self,
        namespace: str,
        ids: Iterable[str],
        *,
        embeddings: bool = False,
        degrees: bool = False,
    ) -> reads.RecallReads:
        """Records of `ids` (as `get_many`) with their kept embeddings and degrees if
        asked, in one round trip (an optional capability: recall on a store with it reads
        its candidates once instead of three times)."""
        return self._guard(
            self._run,
            reads.recall_reads(
                self._keys(namespace), ids, embeddings=embeddings, degrees=degrees
            ),
        )

    def put_embeddings(self, namespace: str, items: Mapping[str, Any]) -> int:
        """Keep embeddings beside the records (an optional capability, as on SQLite):
        recall then scores lexical-only candidates without asking the vector server. Ids
        without a record are skipped atomically; deleting a record deletes its vector."""
        return self._guard(self._run, reads.put_embeddings(self._keys(namespace), items))

    def embeddings(self, namespace: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The embeddings kept beside the records (one HMGET per chunk)."""
        return self._guard(self._run, reads.embeddings(self._keys(namespace), ids))

    def created_times(self, namespace: str, ids: Iterable[str]) -> dict[str, datetime]:
        """When each memory was created: one MGET per chunk, reading only `created_at` from
        each record (no Memory is built). Not part of the RecordStore port: recall uses it,
        where a store has it, to place candidates in time for conversation context."""
        return self._guard(self._run, reads.created_times(self._keys(namespace), ids))

    def find_by_hash(self, namespace: str, content_hash_: str) -> Memory | None:
        return self._guard(self._run, reads.find_by_hash(self._keys(namespace), content_hash_))

    def find_by_key(self, namespace: str, key: str) -> list[Memory]:
        return self._guard(self._run, reads.find_by_key(self._keys(namespace), key))

    def find_by_entity(self, namespace: str, entity: str, limit: int) -> list[Memory]:
        keys = self._keys(namespace)
        return self._guard(self._run, reads.find_by_entity(keys, entity, limit))

    def scan(
        self,
        namespace: str,
        *,
        statuses: Iterable[Status] | None = None,
        tiers: Iterable[Tier] | None = None,
        batch_size: int = 500,
    ) -> Iterator[Memory]:
        """Pages in insertion order (seq), merged over the wanted status sets."""
        pages = reads.scan(self._keys(namespace), statuses, tiers, batch_size)
        after = None if pages is None else 0.0
        while pages is not None and after is not None:
            found, after = self._guard(self._run, pages.page(after))
            yield from found

    def last_write(self, namespace: str) -> datetime | None:
        """When a record of the namespace was last written (its newest `updated_at`), from
        one stored value kept by every write (`KnowsRecentWrites`). A namespace written
        before that value existed is scanned once, and the result kept."""
        keys = self._keys(namespace)
        stamp = self._guard(self._run, reads.last_write(keys))
        if stamp is not None:
            return from_micros(stamp)
        latest = max((micros(m.updated_at or m.created_at) for m in self.scan(namespace)),
                     default=None)
        if latest is None:
            return None
        self._guard(lambda: self._client.zadd(keys.wrote, {LAST_WRITE: latest}, gt=True))
        return from_micros(latest)

    def written_around(self, namespace: str, memory_id: str, n: int) -> list[str]:
        """Up to `n` memories written before `memory_id` and `n` after it, any status,
        nearest first each way (`KnowsWriteOrder`)."""
        return self._guard(self._run, reads.written_around(self._keys(namespace), memory_id, n))

    def newest_active(self, namespace: str, limit: int) -> list[Memory]:
        """The `limit` most recently inserted active memories, oldest first, read from the
        end of the active set (`KnowsRecentWrites`)."""
        return self._guard(self._run, reads.newest_active(self._keys(namespace), limit))

    def count(self, namespace: str) -> dict[str, int]:
        return self._guard(self._run, reads.count(self._keys(namespace)))

    def edges(self, namespace: str, ids: Iterable[str]) -> list[Edge]:
        return self._guard(self._run, reads.edges(self._keys(namespace), ids))

    def degrees(self, namespace: str, ids: Iterable[str]) -> dict[str, int]:
        """Edges in plus out, for every requested id (0 when it has none)."""
        return self._guard(self._run, reads.degrees(self._keys(namespace), ids))

    def namespaces(self) -> list[str]:
        """Names from the namespace set, those that still hold a memory; never a SCAN."""
        return self._guard(self._run, reads.namespaces(self._prefix, self._namespaces_key))

    # --- LexicalIndex ---------------------------------------------------------------------

    def search(self, namespace: str, query: str, k: int) -> list[LexicalHit]:
        """BM25 over the namespace's active texts (postings hold nothing else), scored in
        this process by a mirror kept exact by the namespace's change log
        (`redis.lexical_mirror`). Until this process's mirror is filled (on a thread of
        its own, started by the first search) and for a namespace written before the log
        existed, the Lua script beside the postings scores (`redis.lexical`). Same scores
        either way, but for a question whose postings pass `script_postings`: until the
        mirror is filled, its commonest words are left out on the server."""
        keys = self._keys(namespace)
        hits = self._guard(
            self._run,
            mirrored_search(self._mirrors, keys, keys.namespace, query, k,
                            lambda: self._fill_mirror(keys)),
        )
        if hits is None:
            hits = self._guard(
                self._run, reads.search(keys, query, k, self.script_postings))
        return hits

    def warm_lexical(self, namespace: str, timeout: float | None = None) -> bool:
        """Fill this process's BM25 mirror of `namespace` now and wait for it (at most
        `timeout` seconds): for a worker that would rather pay the fill at start-up than
        have its first recalls scored by the Redis server. True when the mirror is up to
        date (or the namespace has no change log, so the script scores it)."""
        keys = self._keys(namespace)
        ns = keys.namespace
        ready = self._guard(self._run, up_to_date(self._mirrors, keys, ns))
        if ready is False:
            self._fill_mirror(keys)
            if not self._mirrors.wait(ns, timeout):
                return False
            ready = self._guard(self._run, up_to_date(self._mirrors, keys, ns))
        return ready is not False

    def _fill_mirror(self, keys: NamespaceKeys) -> None:
        self._mirrors.fill(keys.namespace, lambda: self._guard(self._run, filled_mirror(keys)))

    # --- meta, journal, lock --------------------------------------------------------------

    def get_meta(self, name: str) -> str | None:
        value = self._guard(self._client.hget, self._meta_key, name)
        return None if value is None else str(value)

    def set_meta(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidInput("meta names and values must be text")
        self._guard(self._client.hset, self._meta_key, name, value)

    def journal_get(self, namespace: str, fingerprint: str) -> Mapping[str, Any] | None:
        keys = self._keys(namespace)
        raw = self._guard(self._client.hget, keys.journal, fingerprint)
        return None if raw is None else load_journal_entry(raw, keys.journal)

    def journal_put(self, namespace: str, fingerprint: str, entry: Mapping[str, Any]) -> None:
        keys = self._keys(namespace)
        payload = dumps(dict(entry), "a journal entry")
        self._guard(self._client.hset, keys.journal, fingerprint, payload)

    def journal_delete(self, namespace: str, fingerprints: Iterable[str]) -> None:
        keys = self._keys(namespace)
        for part in _chunks(sorted(set(fingerprints))):
            self._guard(self._client.hdel, keys.journal, *part)

    def lock(self, namespace: str, ttl_seconds: float = 60.0) -> AbstractContextManager[str]:
        """A lease on Redis's clock: it expires, so a crashed holder cannot wedge
        maintenance, and only the holder of its token releases it. A heartbeat renews it
        every third of `ttl_seconds` while the block runs; a lease whose holder process is
        gone (on this host) is taken over at once."""
        keys = self._keys(namespace)
        ttl = check_ttl(ttl_seconds)
        return self._lease(namespace, keys.lock, ttl)

    @contextmanager
    def _lease(self, ns: str, key: str, ttl: float) -> Iterator[str]:
        token = secrets.token_hex(16)
        args = [token, str(int(ttl * 1000)), lease_holder()]
        ok, current, now = self._guard(self._acquire, [key], args)
        if not int(ok):
            holder = str(current).split("|", 2)[-1]
            if not (holder_dead(holder)
                    and int(self._guard(self._take_over, [key], [*args, str(current)]))):
                raise _lock_busy(ns, str(current), int(now))

        def renew() -> bool:
            return not self._closed and bool(
                int(self._guard(self._renew, [key], [token, str(int(ttl * 1000))]))
            )

        beat = Heartbeat(renew, ttl / 3, f"namespace {ns!r}")
        try:
            yield token
        finally:
            beat.stop()
            if not self._closed:
                self._guard(self._release, [key], [token])

    # --- erasure --------------------------------------------------------------------------

    def erase_residue(self, *, compact: bool = False, timeout: float = 600.0) -> dict[str, Any]:
        """Deleted records leave Redis's memory at once, but their writes stay in the AOF
        (and in an older RDB snapshot) until the server rewrites it. `compact=True` asks
        for that rewrite on every primary and waits for it (at most `timeout` seconds;
        `integrations/redis/residue.py`); without it nothing is sent, and the report says
        the files may still hold deleted values (docs/durability.md)."""
        if not compact:
            return {"store": "redis", "aof_rewritten": 0, "rdb_saved": 0,
                    "note": "the AOF may hold deleted values until it is rewritten"}
        return self._guard(lambda: residue.purge(self._client, timeout=timeout, where=self._name))

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        self._mirrors.clear()
        if not self._closed:
            self._closed = True
            with suppress(RedisError):
                self._client.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisStore({self._name!r}, prefix={self._prefix!r})"
