"""Write-behind access reinforcement: recall returns before its touch is written.

A recall's answer does not depend on its own reinforcement (the touch only changes the
records for the *next* read), so the write need not sit on the caller's path. Recall
hands (namespace, ids, at) to a `Reinforcer`; one worker thread applies the touches in
order through the store's atomic `touch`, one event at a time, so every retrieval still
counts exactly once per id.

Read-your-writes is kept by the engine, not here: before a record is read, the engine
waits for queued touches of that record (`settle`), or of everything (`flush`). The queue
is bounded; a full queue makes the caller apply its touch inline (backpressure, never
loss). A touch that keeps failing is retried, then logged and kept in `failed`.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .background import BackgroundWriter

log = logging.getLogger("reverie")

Apply = Callable[[str, Sequence[str], datetime], None]


@dataclass(frozen=True, slots=True)
class Touch:
    """One retrieval's reinforcement: every id in `ids` gains one access at `at`."""

    namespace: str
    ids: tuple[str, ...]
    at: datetime


class Reinforcer(BackgroundWriter):
    """An ordered, bounded write-behind queue of touches with one worker thread."""

    _thread_name = "reverie-reinforce"

    def __init__(self, apply: Apply, *, capacity: int, retries: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._apply = apply
        self._capacity = capacity
        self._retries = retries
        self.failed: list[tuple[Touch, BaseException]] = []  # given up after the retries
        self.inline = 0  # touches applied by the caller because the queue was full
        super().__init__()

    def _reset_queue(self) -> None:
        self._queue: deque[Touch] = deque()
        self._busy: Touch | None = None  # the event the worker is applying now
        self._pending: Counter[tuple[str, str]] = Counter()  # queued + in flight, per id

    def submit(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Queue a touch and return; apply it inline when the queue is full or closed."""
        event = Touch(namespace, tuple(ids), at)
        if not event.ids:
            return
        self._after_fork()
        with self._cond:
            queued = not self._closed and len(self._queue) < self._capacity
            if queued:
                self._queue.append(event)
                self._pending.update((namespace, i) for i in event.ids)
                self._start_worker()
                self._cond.notify_all()
            else:
                self.inline += 1
        if not queued:  # backpressure: the caller pays for its own touch, nothing is dropped
            self._apply(event.namespace, event.ids, event.at)

    def settle(self, namespace: str, ids: Sequence[str]) -> None:
        """Wait until no queued or in-flight touch concerns these records."""
        self._after_fork()
        keys = [(namespace, i) for i in ids]
        with self._cond:
            while any(k in self._pending for k in keys):
                self._cond.wait()

    def flush(self) -> None:
        """Wait until every touch submitted so far is applied (or given up on)."""
        self._after_fork()
        with self._cond:
            while self._queue or self._busy is not None:
                self._cond.wait()

    @property
    def backlog(self) -> int:
        with self._cond:
            return len(self._queue) + (self._busy is not None)

    def _has_work(self) -> bool:
        return bool(self._queue)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._wait_for_work():  # closed and drained
                    return
                event = self._busy = self._queue.popleft()
            try:
                self._apply_with_retries(event)
            finally:
                with self._cond:
                    self._busy = None
                    self._pending.subtract((event.namespace, i) for i in event.ids)
                    for i in event.ids:
                        if self._pending[(event.namespace, i)] <= 0:
                            del self._pending[(event.namespace, i)]
                    self._cond.notify_all()

    def _apply_with_retries(self, event: Touch) -> None:
        """A failed touch wrote nothing (touch is atomic), so retrying cannot double-count."""
        for attempt in range(self._retries + 1):
            try:
                self._apply(event.namespace, event.ids, event.at)
                return
            except Exception as e:  # the worker must outlive a bad touch
                if attempt < self._retries:
                    log.warning("reinforcement touch failed (%s); retrying", e)
                    continue
                log.error(
                    "reinforcement touch of %d memories in namespace %r at %s failed after "
                    "%d attempts and was not applied: %s",
                    len(event.ids), event.namespace, event.at.isoformat(),
                    self._retries + 1, e,
                )
                self.failed.append((event, e))
