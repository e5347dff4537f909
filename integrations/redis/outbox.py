"""The shared tier's vector outbox: every worker's vector writes to a namespace queue in
one Redis list, and whichever worker holds the namespace's drain lease writes everyone's
queued writes to the vector index in one call.

Why: a Chroma server charges per add call, and much more when several clients add to
one collection at once, so many small concurrent upserts cost it far more per vector
than a few large ones made one at a time (benchmarks/results/latency_tiers.md).
Each engine already groups its own vectors (core/indexing.py), but N workers would still
make N streams of small concurrent upserts. Through the outbox they make one stream of
large ones, and nobody writes a batch of their own: a worker whose writes another worker
drained just returns. Several workers then observe faster together than when each
writes its own batches, and one worker is as fast either way
(benchmarks/results/latency_tiers.md).

The settings (batch, lease, linger, wait) are `OutboxSettings`; `open_engine(outbox=...)`
takes them.

The contract callers rely on is the index's own: `upsert`, `set_metadata` and `delete`
return once their writes are in the index, so a read afterwards sees them (the engine's
read-your-writes depends on it), and writes to a namespace are applied in the order they
were queued (an upsert queued after a delete of the same id wins, and the reverse). Bad
input is refused before it is queued (the index's own checks, `checked_items`), so a
queued write is one the index takes.

How (keys in `redis.keys`, all under the namespace's hash tag, so a Cluster keeps them
on one slot and every script below is atomic):

- a write appends JSON entries to ``{ns}:vq`` and adds their count to ``{ns}:vq:pushed``
  in one script, which also tries to take ``{ns}:vq:lease`` and, if it did, returns up to
  `batch` entries from the head, or nothing when the queue holds only what was just
  pushed (a lone writer applies what it has: one round trip, nothing read back);
- a holder that finds other workers' entries queued waits `linger_seconds` and reads the
  head again, so writes arriving meanwhile join its upsert;
- the holder writes them to the index (consecutive upserts and metadata updates merged,
  deletes in their place, `plan`), then one script checks it
  still holds the lease, trims what it applied and adds it to ``{ns}:vq:done``; it goes
  on until its own writes are applied, then releases the lease;
- a writer that finds the lease held joins ``{ns}:vq:waiters`` in the same script and
  blocks on a wake-up key of its own (BLPOP) until the holder lets go, then claims again;
  it is finished once ``done`` reaches its own count (`done + LLEN vq == pushed` always
  holds). Waiters sleep until woken rather than poll: polling spends CPU on every
  waiting worker for each observe;
- the lease expires (`lease_seconds`, renewed at every batch), so a drainer that dies
  holding it stalls the others for at most that long, and its entries, still at the
  head, are applied by the next holder: nothing queued is lost with a worker;
- an index that is down (`BackendUnavailable`) leaves the entries queued for the next
  drain and the caller gets the error (the engine retries, then flags `repair`); a batch
  the index refuses for any other reason is dropped from the queue, so it cannot wedge
  every worker, and the error goes to the caller (the engine flags `repair`, which
  rebuilds the index from the records);
- `drop_namespace` deletes the queue and its counters; a writer still waiting then sees
  `pushed` below its count and returns (its writes went with the namespace).

Reads (`query`, `begin_query`, `stored_vectors`, ...) go straight to the index.
"""

from __future__ import annotations

import base64
import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from reverie.core.errors import BackendUnavailable, InvalidInput, ReverieError
from reverie.core.models import validate_namespace
from reverie.core.ports import Vector, VectorHit, VectorIndex, VectorItem
from reverie.integrations.redis.connection import socket_timeout, translate
from reverie.integrations.redis.keys import DEFAULT_PREFIX, NamespaceKeys, validate_prefix

try:
    from redis.exceptions import RedisError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    from reverie.core.errors import MissingExtra

    raise MissingExtra("The vector outbox (reverie.integrations.redis.outbox)", "redis") from e

__all__ = ["OutboxIndex", "OutboxSettings"]


@dataclass(frozen=True, slots=True)
class OutboxSettings:
    """How the shared tier's vector outbox batches and waits (module docstring), checked on
    construction. Every worker sharing a namespace should use the same settings."""

    # False: each worker writes its own vectors to the server (no queue in Redis)
    enabled: bool = True
    batch: int = 512  # queued writes applied in one drain call at most
    lease_seconds: float = 10.0  # a dead drainer's lease frees after this
    # a drainer that finds other workers' writes queued (they are writing too) waits this
    # long for more before it writes, so busy workers share fewer, larger upserts; a lone
    # writer never waits
    linger_seconds: float = 0.02
    # a writer waits this long for a drain, then raises BackendUnavailable (the engine
    # retries, then flags the index for repair)
    wait_seconds: float = 120.0

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not isinstance(self.enabled, bool):
            problems.append(f"enabled must be True or False, got {self.enabled!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch <= 0:
            problems.append(f"batch must be a whole number > 0, got {self.batch!r}")
        for name, least in (
            ("lease_seconds", None), ("linger_seconds", 0.0), ("wait_seconds", None)
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                problems.append(f"{name} must be a finite number, got {v!r}")
            elif least is None and v <= 0:
                problems.append(f"{name} must be > 0, got {v!r}")
            elif least is not None and v < least:
                problems.append(f"{name} must be >= 0, got {v!r}")
        if problems:
            raise InvalidInput("invalid outbox settings: " + "; ".join(problems))


DEFAULT_OUTBOX = OutboxSettings()

_MAX_BLOCK_S = 20.0  # one BLPOP at most (and at most half the client's socket timeout)

# Replies: {FINISHED, target} | {BUSY, target, lease ms left} | {CLAIMED, target, entry, ...}
# | {CLAIMED_OWN, target}: claimed, and the queue holds only the entries just pushed
# | {LOST, target}
_FINISHED, _BUSY, _CLAIMED, _CLAIMED_OWN, _LOST = 1, 0, 2, 3, -1

# Every script: KEYS = vq, pushed, done, lease, waiters;
# ARGV = token, lease ms, batch, target, wake-key prefix, then (CLAIM only) entries.
_WAKE_ALL = """
local function wake_all()
  local waiting = redis.call('SMEMBERS', KEYS[5])
  for _, t in ipairs(waiting) do
    local k = ARGV[5] .. t
    redis.call('RPUSH', k, '1')
    redis.call('PEXPIRE', k, tonumber(ARGV[2]) * 2)
  end
  if #waiting > 0 then redis.call('DEL', KEYS[5]) end
end
"""

# Queue the entries (RPUSH 1000 at a time: Lua's unpack limit; target is then the new
# `pushed`), then: finished, or take the lease and the head of the queue (or, when the
# queue holds only what was just pushed, the lease alone: the writer has it already), or
# join the waiters (woken when the holder lets go).
_CLAIM = """
local target = tonumber(ARGV[4])
if #ARGV > 5 then
  target = redis.call('INCRBY', KEYS[2], #ARGV - 5)
  for i = 6, #ARGV, 1000 do
    redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
end
local done = tonumber(redis.call('GET', KEYS[3]) or '0')
local pushed = tonumber(redis.call('GET', KEYS[2]) or '0')
if done >= target or pushed < target then return {1, target} end
if redis.call('SET', KEYS[4], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if #ARGV > 5 and redis.call('LLEN', KEYS[1]) == #ARGV - 5 then return {3, target} end
  local got = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
  table.insert(got, 1, target)
  table.insert(got, 1, 2)
  return got
end
redis.call('SADD', KEYS[5], ARGV[1])
redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[2]) * 2)
return {0, target, redis.call('PTTL', KEYS[4])}
"""

# ARGV[6] = entries applied. Trim them if the lease is still ours; let go (waking the
# waiters) once the holder's own target is reached, else hand it the next batch.
_ACK = _WAKE_ALL + """
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {-1, tonumber(ARGV[4])} end
local n = tonumber(ARGV[6])
redis.call('LTRIM', KEYS[1], n, -1)
local done = redis.call('INCRBY', KEYS[3], n)
local target = tonumber(ARGV[4])
local pushed = tonumber(redis.call('GET', KEYS[2]) or '0')
if done >= target or pushed < target then
  redis.call('DEL', KEYS[4])
  wake_all()
  return {1, target}
end
redis.call('PEXPIRE', KEYS[4], ARGV[2])
local got = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
table.insert(got, 1, target)
table.insert(got, 1, 2)
return got
"""

_RELEASE = _WAKE_ALL + """
if redis.call('GET', KEYS[4]) == ARGV[1] then
  redis.call('DEL', KEYS[4])
  wake_all()
  return 1
end
return 0
"""

# Still the holder: renew the lease and hand over the head of the queue again (after a
# linger, with what joined meanwhile).
_REFILL = """
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return {-1, tonumber(ARGV[4])} end
redis.call('PEXPIRE', KEYS[4], ARGV[2])
local got = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
table.insert(got, 1, tonumber(ARGV[4]))
table.insert(got, 1, 2)
return got
"""

_DROP = _WAKE_ALL + """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
wake_all()
return 1
"""

Meta = Mapping[str, str | int | float | bool]
# One queued write: ("u", id, VectorItem) | ("m", id, metadata) | ("d", id, None)
Op = tuple[str, str, Any]


def encode_upsert(op: Op) -> bytes:
    item: VectorItem = op[2]
    blob = base64.b64encode(np.asarray(item.vector, dtype="<f4").tobytes()).decode("ascii")
    return orjson.dumps(["u", item.id, dict(item.metadata), blob])


def encode_metadata(op: Op) -> bytes:
    return orjson.dumps(["m", op[1], dict(op[2])])


def encode_delete(op: Op) -> bytes:
    return orjson.dumps(["d", op[1]])


def decode(entry: str | bytes) -> Op:
    """(op, id, payload): an upsert's payload is its VectorItem, a metadata update's its
    mapping, a delete's None."""
    parts = orjson.loads(entry)
    op, memory_id = parts[0], parts[1]
    if op == "u":
        vec = np.frombuffer(base64.b64decode(parts[3]), dtype="<f4")
        return op, memory_id, VectorItem(memory_id, vec, parts[2])
    if op == "m":
        return op, memory_id, parts[2]
    return op, memory_id, None


def plan(ops: Sequence[Op]) -> list[tuple[str, Any]]:
    """The index calls that apply `ops` in order, as few as order allows: each run
    between deletes is one upsert plus one metadata update, each run of deletes one
    delete. Inside a run the last upsert of an id wins and drops earlier updates of it
    (an upsert replaces the metadata); updates of one id merge key by key, later keys
    winning, and are applied after the upserts, so an update that came after an upsert
    of the same id still lands on top of it."""
    calls: list[tuple[str, Any]] = []
    upserts: dict[str, VectorItem] = {}
    updates: dict[str, dict[str, Any]] = {}
    deletes: list[str] = []

    def flush_writes() -> None:
        if upserts:
            calls.append(("upsert", list(upserts.values())))
            upserts.clear()
        if updates:
            calls.append(("set_metadata", list(updates.items())))
            updates.clear()

    def flush_deletes() -> None:
        if deletes:
            calls.append(("delete", list(dict.fromkeys(deletes))))
            deletes.clear()

    for op, memory_id, payload in ops:
        if op == "d":
            flush_writes()
            deletes.append(memory_id)
            continue
        flush_deletes()
        if op == "u":
            upserts.pop(memory_id, None)
            upserts[memory_id] = payload
            updates.pop(memory_id, None)
        else:
            updates[memory_id] = {**updates.get(memory_id, {}), **payload}
    flush_writes()
    flush_deletes()
    return calls


class OutboxIndex:
    """A `VectorIndex` whose writes go through the namespace's Redis outbox (module
    docstring); reads and the rest are the wrapped index's.

    `client` is the record store's redis-py client (`RedisStore.client`, plain or
    Cluster, strings decoded); `prefix` must be the store's key prefix. The wrapped
    index's optional capabilities (`core.ports.VectorIndex`) are offered as it offers
    them: each is the wrapped index's own method, or None where it has none.
    """

    def __init__(
        self,
        inner: VectorIndex,
        client: Any,
        *,
        prefix: str = DEFAULT_PREFIX,
        outbox: OutboxSettings | None = None,
    ) -> None:
        settings = outbox if outbox is not None else DEFAULT_OUTBOX
        self.inner = inner
        self._client = client
        self._prefix = validate_prefix(prefix)
        self._batch = settings.batch
        self._lease_ms = str(max(1, int(settings.lease_seconds * 1000)))
        self._wait_s = settings.wait_seconds
        self._linger_s = settings.linger_seconds
        # a BLPOP blocks well inside the client's socket timeout, which would end it as
        # an outage (`Policy.deadlines.store_call_seconds`)
        read_timeout = socket_timeout(client)
        self._max_block_s = (
            _MAX_BLOCK_S if read_timeout is None else min(_MAX_BLOCK_S, read_timeout / 2)
        )
        self._claim = client.register_script(_CLAIM)
        self._ack = client.register_script(_ACK)
        self._release = client.register_script(_RELEASE)
        self._drop = client.register_script(_DROP)
        self._refill = client.register_script(_REFILL)
        self.drains = 0  # batches this process applied for the outbox (any worker's)
        # the wrapped index's optional capabilities, read straight from it
        self.remote: bool = bool(getattr(inner, "remote", False))
        self.begin_query: Callable[..., Any] | None = getattr(inner, "begin_query", None)
        self.stored_vectors: Callable[..., dict[str, Vector]] | None = getattr(
            inner, "stored_vectors", None
        )
        self.neighbors: Callable[..., dict[str, list[VectorHit]]] | None = getattr(
            inner, "neighbors", None
        )
        self.dimension: Callable[[str], int | None] | None = getattr(inner, "dimension", None)
        # the wrapped index's own input checks (ChromaIndex's `checked_*`), run before
        # anything is queued, so a queued write is one the index takes
        self._checked_items: Callable[..., list[VectorItem]] | None = getattr(
            inner, "checked_items", None
        )
        self._checked_metadata: Callable[..., Any] | None = getattr(
            inner, "checked_metadata", None
        )
        self._checked_ids: Callable[..., list[str]] | None = getattr(inner, "checked_ids", None)

    # --- writes: through the outbox ------------------------------------------------------

    def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        validate_namespace(namespace)
        check = self._checked_items
        checked = check(namespace, items) if check else list(items)
        self._write(namespace, [("u", i.id, i) for i in checked], encode_upsert)

    def set_metadata(
        self, namespace: str, ids: Sequence[str], metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        validate_namespace(namespace)
        check = self._checked_metadata
        pairs = check(namespace, ids, metadata) if check else zip(ids, metadata, strict=True)
        self._write(namespace, [("m", i, m) for i, m in pairs], encode_metadata)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        validate_namespace(namespace)
        check = self._checked_ids
        checked = check(namespace, ids) if check else list(ids)
        self._write(namespace, [("d", i, None) for i in checked], encode_delete)

    def drop_namespace(self, namespace: str) -> None:
        names, wake = self._names(namespace)
        self._redis(self._drop, names, ["", self._lease_ms, 0, 0, wake])
        self.inner.drop_namespace(namespace)

    def pending(self, namespace: str) -> int:
        """Writes queued in the namespace's outbox, not yet applied."""
        keys = NamespaceKeys(self._prefix, namespace)
        return int(self._redis(self._client.llen, keys.outbox))

    def _names(self, namespace: str) -> tuple[list[str], str]:
        keys = NamespaceKeys(self._prefix, namespace)
        names = [keys.outbox, keys.outbox_pushed, keys.outbox_done, keys.outbox_lease,
                 keys.outbox_waiters]
        return names, keys.outbox_wake("")

    def _write(self, namespace: str, ops: list[Op], encode: Callable[[Op], bytes]) -> None:
        names, wake = self._names(namespace)
        for start in range(0, len(ops), self._batch):
            token = secrets.token_hex(8)
            part = ops[start : start + self._batch]
            args = [token, self._lease_ms, self._batch, 0, wake]
            reply = self._redis(self._claim, names, [*args, *map(encode, part)])
            self._settle(namespace, names, args, reply, part)

    def _settle(
        self, namespace: str, names: list[str], args: list[Any], reply: list[Any],
        own: list[Op],
    ) -> None:
        """Until this writer's entries are applied: drain while holding the lease, else
        sleep until the holder lets go (BLPOP on this writer's wake-up key; bounded by the
        holder's lease, so a holder that died is outwaited, not waited on forever)."""
        deadline = time.monotonic() + self._wait_s
        wake = args[4] + args[0]
        lingered = False
        while True:
            state, target = int(reply[0]), int(reply[1])
            args[3] = target
            if state == _FINISHED:
                return
            if state == _LOST:  # the lease expired under us: queue for it again
                reply = self._redis(self._claim, names, args)
                continue
            if state == _CLAIMED and lingered is False and self._linger_s > 0:
                lingered = True
                if len(reply) - 2 < self._batch:
                    # others are writing too: let their next writes join this upsert
                    time.sleep(self._linger_s)
                    reply = self._redis(self._refill, names, args)
                    continue
            if state in (_CLAIMED, _CLAIMED_OWN):
                # the queue held only this writer's entries: apply them as they are, not
                # as the reply would bring them back (no transfer, no decoding)
                ops = own if state == _CLAIMED_OWN else [decode(e) for e in reply[2:]]
                self._apply(namespace, names, args, ops)
                reply = self._redis(self._ack, names, [*args, len(ops)])
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise BackendUnavailable(
                    f"the vector outbox of namespace {namespace!r} was not drained "
                    f"within {self._wait_s:g} s (OutboxSettings.wait_seconds): another "
                    "worker holds its lease and has not finished; the writes stay "
                    "queued for the next drain"
                )
            # until woken, or until the holder's lease runs out (it may have died)
            lease_left = int(reply[2]) / 1000 if int(reply[2]) > 0 else 0.0
            block = min(left, lease_left + 0.01, self._max_block_s)
            self._redis(self._client.blpop, [wake], max(block, 0.01))
            reply = self._redis(self._claim, names, args)

    def _apply(self, namespace: str, names: list[str], args: list[Any], ops: list[Op]) -> None:
        """Write a claimed batch to the index; on failure give the lease back first."""
        try:
            for call, payload in plan(ops):
                if call == "upsert":
                    self.inner.upsert(namespace, payload)
                elif call == "set_metadata":
                    self.inner.set_metadata(
                        namespace, [i for i, _ in payload], [m for _, m in payload]
                    )
                else:
                    self.inner.delete(namespace, payload)
            self.drains += 1
        except BackendUnavailable:
            self._give_back(names, args)  # the entries stay queued for the next drain
            raise
        except Exception as e:
            # refused: drop the batch so it cannot wedge every worker; repair restores it
            with suppress(BackendUnavailable):
                self._redis(self._ack, names, [args[0], args[1], 0, 0, args[4], len(ops)])
            self._give_back(names, args)
            if isinstance(e, ReverieError):
                raise
            raise BackendUnavailable(
                f"the vector index refused a batch of {len(ops)} queued writes in "
                f"namespace {namespace!r} ({type(e).__name__}: {e}); they were dropped from "
                "the outbox; run `reverie repair` to index them from the records"
            ) from e

    def _give_back(self, names: list[str], args: list[Any]) -> None:
        with suppress(RedisError):  # else it expires
            self._release(names, args)

    def _redis(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except RedisError as e:
            raise translate(e, "Redis", "queueing vector writes") from None

    # --- reads and the rest: the index's -------------------------------------------------

    def query(
        self,
        namespace: str,
        vector: Vector,
        k: int,
        where: Mapping[str, str | int | float | bool] | None = None,
    ) -> list[VectorHit]:
        return self.inner.query(namespace, vector, k, where)

    def similarities(self, namespace: str, vector: Vector, ids: Sequence[str]) -> dict[str, float]:
        return self.inner.similarities(namespace, vector, ids)

    def ids(self, namespace: str) -> set[str]:
        return self.inner.ids(namespace)

    def count(self, namespace: str) -> int:
        return self.inner.count(namespace)

    def close(self) -> None:
        self.inner.close()

    def __repr__(self) -> str:
        return f"OutboxIndex({self.inner!r}, prefix={self._prefix!r})"
