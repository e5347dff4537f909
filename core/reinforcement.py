"""Write-behind access reinforcement: recall returns before its touch is written.

A recall's answer does not depend on its own reinforcement (the touch only changes the
records for the *next* read), so the write need not sit on the caller's path. Recall
hands (namespace, ids, at) to a `Reinforcer`; one worker thread applies the touches in
order, so every retrieval still counts exactly once per id. The worker lingers briefly
after a touch arrives and then writes every queued touch of a namespace together (through
the store's `touch_many` where it has one: one transaction), so recalls in quick
succession do not each pay for, and compete with, a write of their own.

Read-your-writes is kept by the engine, not here: before a record is read, the engine
waits for queued touches of that record (`settle`), or of everything (`flush`). The queue
is bounded; a full queue makes the caller apply its touch inline (backpressure, never
loss). A touch that keeps failing is retried, then logged and kept in `failed`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .background import BackgroundWriter

log = logging.getLogger("reverie")

Apply = Callable[[str, Sequence[str], datetime], None]
# (namespace, [(ids, at), ...]): apply these touches in order, all or nothing
ApplyMany = Callable[[str, Sequence[tuple[Sequence[str], datetime]]], None]


@dataclass(frozen=True, slots=True)
class Touch:
    """One retrieval's reinforcement: every id in `ids` gains one access at `at`."""

    namespace: str
    ids: tuple[str, ...]
    at: datetime


class Reinforcer(BackgroundWriter):
    """An ordered, bounded write-behind queue of touches with one worker thread."""

    _thread_name = "reverie-reinforce"

    def __init__(
        self,
        apply: Apply,
        *,
        capacity: int,
        retries: int,
        linger: float = 0.0,
        apply_many: ApplyMany | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._apply = apply
        self._apply_many = apply_many
        self._capacity = capacity
        self._retries = retries
        self._linger = linger
        self.failed: list[tuple[Touch, BaseException]] = []  # given up after the retries
        self.inline = 0  # touches applied by the caller because the queue was full
        super().__init__()

    def _reset_queue(self) -> None:
        self._queue: deque[Touch] = deque()
        self._busy: list[Touch] = []  # the events the worker is applying now
        self._pending: Counter[tuple[str, str]] = Counter()  # queued + in flight, per id
        self._waiting = 0  # callers in settle/flush: the worker stops lingering for them

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
            self._wait_until(lambda: not any(k in self._pending for k in keys))

    def flush(self) -> None:
        """Wait until every touch submitted so far is applied (or given up on)."""
        self._after_fork()
        with self._cond:
            self._wait_until(lambda: not self._queue and not self._busy)

    def _wait_until(self, done: Callable[[], bool]) -> None:
        """Wait (lock held) for `done`; while anyone waits, the worker does not linger."""
        if done():
            return
        self._waiting += 1
        self._cond.notify_all()
        try:
            while not done():
                self._cond.wait()
        finally:
            self._waiting -= 1

    @property
    def backlog(self) -> int:
        with self._cond:
            return len(self._queue) + len(self._busy)

    def _has_work(self) -> bool:
        return bool(self._queue)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._wait_for_work():  # closed and drained
                    return
                self._linger_for_more()
                events = self._busy = list(self._queue)
                self._queue.clear()
            try:
                for namespace, group in _by_namespace(events):
                    self._apply_with_retries(namespace, group)
            finally:
                with self._cond:
                    self._busy = []
                    for event in events:
                        self._pending.subtract((event.namespace, i) for i in event.ids)
                        for i in event.ids:
                            if self._pending[(event.namespace, i)] <= 0:
                                del self._pending[(event.namespace, i)]
                    self._cond.notify_all()

    def _linger_for_more(self) -> None:
        """Give later touches `linger` seconds to join this write (lock held); stop at once
        when someone waits for the queue, it closes, or it fills."""
        if self._linger <= 0:
            return
        deadline = time.monotonic() + self._linger
        while not self._closed and not self._waiting and len(self._queue) < self._capacity:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _apply_with_retries(self, namespace: str, events: Sequence[Touch]) -> None:
        """A failed write wrote nothing (touches are atomic: one event each, or one batch
        through `apply_many`), so retrying cannot double-count."""
        if self._apply_many is None or len(events) == 1:
            for event in events:
                self._retrying([event], functools.partial(
                    self._apply, event.namespace, event.ids, event.at
                ))
            return
        batch = [(e.ids, e.at) for e in events]
        apply_many = self._apply_many
        self._retrying(events, lambda: apply_many(namespace, batch))

    def _retrying(self, events: Sequence[Touch], attempt: Callable[[], None]) -> None:
        for n in range(self._retries + 1):
            try:
                attempt()
                return
            except Exception as e:  # the worker must outlive a bad touch
                if n < self._retries:
                    log.warning("reinforcement touch failed (%s); retrying", e)
                    continue
                for event in events:
                    log.error(
                        "reinforcement touch of %d memories in namespace %r at %s failed "
                        "after %d attempts and was not applied: %s",
                        len(event.ids), event.namespace, event.at.isoformat(),
                        self._retries + 1, e,
                    )
                    self.failed.append((event, e))


def _by_namespace(events: Sequence[Touch]) -> list[tuple[str, list[Touch]]]:
    """Runs of consecutive events of one namespace, in order (order matters only per id,
    and an id belongs to one namespace, so a run may be applied as one batch)."""
    runs: list[tuple[str, list[Touch]]] = []
    for event in events:
        if runs and runs[-1][0] == event.namespace:
            runs[-1][1].append(event)
        else:
            runs.append((event.namespace, [event]))
    return runs
