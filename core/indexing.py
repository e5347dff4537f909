"""Write-behind vector indexing: `observe` returns once its record is committed.

The vector index is derived from the records (`repair` rebuilds it from them), and a
Chroma server charges a fixed cost per add call whatever its size, far above the cost
of one more vector in the call. Observing one text at a time would spend most of its
time waiting on the server, and every worker process would queue behind the same
server, so more workers would observe no faster (benchmarks/results/latency_tiers.md
has the measurements). Here the engine hands
its new vectors to one thread, which writes everything queued so far in one call: while
one call is in flight the next batch gathers (group commit), so batches grow with load
and no timer delays a quiet engine.

Read-your-writes is kept by the engine, not here: every engine method waits for its
namespace's queued vectors before it reads (`flush`), so recall on the same engine
finds what that engine just observed; a write, which must not wait, reads the vectors
not yet written (`unwritten`) beside the index instead. Another process sees the vector
when the batch lands (milliseconds later); until then the memory's record and lexical
postings are already committed, so the lexical channel finds it.

Order: writes are applied in submission order; consecutive writes to one namespace are
merged into one upsert (a later write of an id wins). The index holds a vector and its
kind, which never change, so a memory's later changes of status write nothing here. A full
queue makes `submit` wait (backpressure, never reordering or loss). A write that keeps
failing is retried, then logged, reported to `on_failure` (the engine flags the index
for `repair`) and kept in `failed`. A process killed before its queue drains leaves
records without vectors; `reverie repair` indexes them (it compares records with the
index).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .background import BackgroundWriter
from .errors import DeadlineExceeded, StorageFull
from .ports import Vector, VectorItem

log = logging.getLogger("reverie")

# apply(namespace, upserts): one call per merged batch
Apply = Callable[[str, Sequence[VectorItem]], None]
OnFailure = Callable[[str, Sequence[str], BaseException], None]

_MAX_BATCH = 512  # vectors merged into one call at most, so one call stays bounded
_RETRY_PAUSE_S = 0.05


@dataclass(frozen=True, slots=True)
class IndexWrite:
    """New vectors for one namespace."""

    namespace: str
    upserts: tuple[VectorItem, ...]
    # the vectors as unit rows, for a write's search of what is not yet written
    # (`IndexWriter.unwritten`): stacked once here, not at every search
    units: Vector = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rows = np.array([i.vector for i in self.upserts], dtype=np.float32, ndmin=2)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        object.__setattr__(self, "units", rows / np.where(norms > 0, norms, 1.0))

    @property
    def size(self) -> int:
        return len(self.upserts)

    @property
    def ids(self) -> list[str]:
        return [i.id for i in self.upserts]


def merge(writes: Sequence[IndexWrite]) -> IndexWrite:
    """Consecutive writes to one namespace as one upsert: the last vector of an id wins,
    in the place of its last write."""
    upserts: dict[str, VectorItem] = {}
    for w in writes:
        for item in w.upserts:
            upserts.pop(item.id, None)
            upserts[item.id] = item
    return IndexWrite(writes[0].namespace, tuple(upserts.values()))


class IndexWriter(BackgroundWriter):
    """An ordered, bounded write-behind queue of vector-index writes with one thread."""

    _thread_name = "reverie-index"

    def __init__(
        self,
        apply: Apply,
        *,
        capacity: int,
        retries: int,
        on_failure: OnFailure | None = None,
        max_batch: int = _MAX_BATCH,
    ) -> None:
        if capacity < 1 or max_batch < 1:
            raise ValueError("capacity and max_batch must be >= 1")
        self._apply = apply
        self._capacity = capacity
        self._retries = retries
        self._on_failure = on_failure
        self._max_batch = max_batch
        self.failed: list[tuple[IndexWrite, BaseException]] = []  # given up after retries
        self.calls = 0  # merged writes applied (one upsert call each)
        super().__init__()

    def _reset_queue(self) -> None:
        self._queue: deque[IndexWrite] = deque()
        self._queued = 0  # vectors waiting in _queue
        self._flight: IndexWrite | None = None  # the write in flight
        self._pending: Counter[str] = Counter()  # queued + in-flight writes per namespace

    def submit(self, namespace: str, upserts: Sequence[VectorItem]) -> None:
        """Queue a write and return; wait for room when the queue is full; write it
        inline once the writer is closed."""
        write = IndexWrite(namespace, tuple(upserts))
        if not write.size:
            return
        self._after_fork()
        with self._cond:
            while not self._closed and self._queued and self._queued + write.size > self._capacity:
                self._cond.wait()  # backpressure: the caller waits, nothing is reordered
            if not self._closed:
                self._queue.append(write)
                self._queued += write.size
                self._pending[namespace] += 1
                self._start_worker()
                self._cond.notify_all()
                return
        self._apply_with_retries(write)

    def flush(self, namespace: str | None = None) -> None:
        """Wait until every write submitted so far (to `namespace`, or to any) is applied
        or given up on."""
        self._after_fork()
        with self._cond:
            if namespace is None:
                while self._queue or self._flight is not None:
                    self._cond.wait()
            else:
                while self._pending.get(namespace, 0) > 0:
                    self._cond.wait()

    def unwritten(self, namespace: str) -> list[IndexWrite]:
        """The namespace's writes queued or in flight, not yet known to be in the index:
        with the index's own answer, what a search would find once the queue drains."""
        self._after_fork()
        with self._cond:
            writes = [w for w in self._queue if w.namespace == namespace]
            if self._flight is not None and self._flight.namespace == namespace:
                writes.append(self._flight)
        return writes

    @property
    def backlog(self) -> int:
        """Vectors queued, not yet in flight."""
        with self._cond:
            return self._queued

    def _take(self) -> list[IndexWrite]:
        """The writes at the head of the queue that share its namespace, up to max_batch
        (always at least one). Called with the lock held."""
        first = self._queue.popleft()
        taken = [first]
        size = first.size
        while (
            self._queue
            and self._queue[0].namespace == first.namespace
            and size + self._queue[0].size <= self._max_batch
        ):
            nxt = self._queue.popleft()
            taken.append(nxt)
            size += nxt.size
        self._queued -= size
        return taken

    def _has_work(self) -> bool:
        return bool(self._queue)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._wait_for_work():  # closed and drained
                    return
                taken = self._take()
                self._flight = write = merge(taken)
                self._cond.notify_all()  # room in the queue for a waiting submit
            try:
                self._apply_with_retries(write)
            finally:
                with self._cond:
                    self._flight = None
                    ns = taken[0].namespace
                    self._pending[ns] -= len(taken)
                    if self._pending[ns] <= 0:
                        del self._pending[ns]
                    self._cond.notify_all()

    def _apply_with_retries(self, write: IndexWrite) -> None:
        """An upsert is idempotent, so a retry after a partial failure is safe."""
        for attempt in range(self._retries + 1):
            try:
                self._apply(write.namespace, write.upserts)
                self.calls += 1
                return
            except Exception as e:  # the writer must outlive a failing index
                # an index past its deadline or out of disk space would only make a
                # retry wait as long again, or fail the same way
                final = isinstance(e, DeadlineExceeded | StorageFull)
                if attempt < self._retries and not final:
                    log.warning("vector index write failed (%s); retrying", e)
                    time.sleep(_RETRY_PAUSE_S * (attempt + 1))
                    continue
                log.error(
                    "vector index write of %d memories in namespace %r failed after %d "
                    "attempts: %s; their records are stored, run `reverie repair`",
                    write.size, write.namespace, attempt + 1, e,
                )
                self.failed.append((write, e))
                if self._on_failure is not None:
                    try:
                        self._on_failure(write.namespace, write.ids, e)
                    except Exception as flag_error:
                        log.error("could not flag the vector index for repair: %s", flag_error)
