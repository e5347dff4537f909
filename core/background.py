"""What the two write-behind queues (reinforcement, vector indexing) share: one worker
thread started on first use, a condition guarding the queue, a fresh start in a forked
child, and draining on close and at interpreter exit. Each queue keeps its own order,
batching and read-your-writes rules."""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from abc import ABC, abstractmethod


class BackgroundWriter(ABC):
    """A bounded write-behind queue served by one daemon thread (`_run`)."""

    _thread_name = "reverie-writer"

    def __init__(self) -> None:
        self._closed = False
        self._reset()
        # a process that exits without close() still writes what it queued
        atexit.register(_close_at_exit, weakref.ref(self))

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._reset_queue()

    @abstractmethod
    def _reset_queue(self) -> None:
        """Empty queue state (called at start and in a forked child)."""

    @abstractmethod
    def _run(self) -> None:
        """The worker: apply queued writes until closed and drained."""

    def _after_fork(self) -> None:
        """A forked child has no worker thread: it starts afresh (the parent writes what
        it queued), so the child's waits do not hang on a thread that is not there."""
        if self._pid != os.getpid():
            self._reset()

    def _start_worker(self) -> None:
        """Start the worker if it is not running; called with the lock held."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=self._thread_name, daemon=True
            )
            self._thread.start()

    def _wait_for_work(self) -> bool:
        """The worker's wait, with the lock held: True when something is queued, False once
        closed and drained (the worker then ends)."""
        while not self._has_work() and not self._closed:
            self._cond.wait()
        return self._has_work()

    @abstractmethod
    def _has_work(self) -> bool:
        """Anything queued? Called with the lock held."""

    def close(self) -> None:
        """Drain the queue and stop the worker; later writes are applied inline."""
        self._after_fork()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()


def _close_at_exit(ref: weakref.ref[BackgroundWriter]) -> None:
    writer = ref()
    if writer is not None:
        writer.close()
