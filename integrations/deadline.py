"""A deadline for calls into a library that has none of its own (embedded Chroma).

Why: embedded Chroma runs in process, in Rust, on its own SQLite file, with a busy
timeout of 1000 s. After a write failed on a full disk, one of its pooled connections
can keep that file's lock, and every later read then waits the whole busy timeout
inside a call Python cannot interrupt. Such a call is run on a worker thread here and
waited for at most `seconds`; past that the caller gets a typed error and the worker is
left to finish (or not) on its own.

While a call is still running past its deadline, the library is taken as stuck: every
new call fails at once with the same error instead of queueing behind the stuck one,
until that call returns. Worker threads are daemons, so a stuck one never keeps the
process from exiting; `close` ends them (a stuck one once its call returns), so a
process that opens and closes many engines keeps no idle workers behind.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from reverie.core.errors import BackendUnavailable, DeadlineExceeded, StorageFull

__all__ = ["Bounded"]

T = TypeVar("T")

# The text of SQLite's SQLITE_FULL, as Chroma's Rust core reports it
# ("... (code: 13) database or disk is full").
_FULL_MARKERS = ("database or disk is full", "(code: 13)", "no space left on device")


def is_disk_full(e: BaseException) -> bool:
    text = str(e).lower()
    return any(m in text for m in _FULL_MARKERS)


class Bounded:
    """Runs calls on daemon worker threads and waits for each at most `seconds`."""

    def __init__(self, seconds: float, location: str) -> None:
        self.seconds = seconds
        self._location = location
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue())
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a task
        self._stuck = 0  # calls still running past their deadline
        self._full = False  # the last failure was a full disk
        self._workers = 0  # worker threads started and not yet told to end
        self._closed = False

    def call(self, fn: Callable[[], T]) -> T:
        """`fn()`, or `DeadlineExceeded` (`StorageFull` after a full disk) once it has
        run `seconds`, or at once while an earlier call is still stuck."""
        return self.wait(self.submit(fn))

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Start `fn()` on a worker now and return at once, so the caller does its own
        work meanwhile (recall's lexical side beside the dense query, with no thread of
        its own in between); `wait` reads the answer under the deadline. Raises at once
        while an earlier call is still stuck."""
        with self._lock:
            if self._closed:
                raise BackendUnavailable(f"the {self._location} is closed")
            if self._stuck:
                raise self._error(stuck=True)
            if self._idle:
                self._idle -= 1
                start = False
            else:
                start = True
                self._workers += 1
        future: Future[T] = Future()
        self._tasks.put((future, fn))
        if start:
            threading.Thread(target=self._work, name="reverie-index-call", daemon=True).start()
        return future

    def wait(self, future: Future[T]) -> T:
        """The answer of a `submit`ted call, waited for at most `seconds` from now."""
        try:
            return future.result(timeout=self.seconds)
        except FutureTimeout:
            with self._lock:
                self._stuck += 1
            future.add_done_callback(self._unstuck)
            raise self._error(stuck=False) from None

    def _unstuck(self, _: Future[Any]) -> None:
        with self._lock:
            self._stuck -= 1

    def close(self) -> None:
        """End every worker once the calls already queued have run; later calls raise
        `BackendUnavailable`. A worker stuck in a call ends when that call returns."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers, self._workers = self._workers, 0
        for _ in range(workers):
            self._tasks.put(None)

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, fn = task
            if future.set_running_or_notify_cancel():
                try:
                    result = fn()
                except BaseException as e:
                    full = is_disk_full(e)
                    self._full = full
                    future.set_exception(self._full_error(e) if full else e)
                else:
                    future.set_result(result)
            del future, fn  # a finished task's result must not outlive it here
            with self._lock:
                self._idle += 1

    def _full_error(self, e: BaseException) -> StorageFull:
        return StorageFull(
            f"the {self._location} cannot grow: {e}. The write was not applied; free disk "
            "space, then retry (and run `reverie repair` for the vectors it missed)"
        )

    def _error(self, *, stuck: bool) -> BackendUnavailable:
        why = (
            "an earlier call to it is still running past its deadline"
            if stuck
            else f"it did not answer within {self.seconds:g} s (Policy.index_call_seconds)"
        )
        if self._full:
            return StorageFull(
                f"the {self._location} is stuck after its disk filled: {why}. Free disk "
                "space and reopen the engine; records stay readable and recall answers "
                "from the lexical index meanwhile"
            )
        return DeadlineExceeded(
            f"the {self._location} is not answering: {why}. Retry later; if it persists, "
            "reopen the engine"
        )
