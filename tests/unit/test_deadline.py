"""`deadline.Bounded`: a call into a library with no timeout of its own (embedded Chroma)
returns a typed error once it has run past its deadline; while it is still stuck, every
new call fails at once instead of queueing behind it, and calls work again once it
returns. Blocking is an `Event` the test holds, never a sleep."""

from __future__ import annotations

import threading

import pytest

from reverie.core.errors import BackendUnavailable, DeadlineExceeded, StorageFull
from reverie.integrations.deadline import Bounded
from tests.servers import wait_until


def test_a_stuck_call_is_a_deadline_error_and_the_next_fail_at_once_until_it_returns() -> None:
    bounded = Bounded(0.2, "embedded Chroma at /x")
    release = threading.Event()
    ran = threading.Event()

    def stuck() -> str:
        ran.set()
        release.wait(60)
        return "late"

    with pytest.raises(DeadlineExceeded, match=r"did not answer within 0\.2 s"):
        bounded.call(stuck)
    assert ran.is_set()
    called: list[int] = []
    with pytest.raises(DeadlineExceeded, match="still running past its deadline"):
        bounded.call(lambda: called.append(1))
    assert called == []  # refused, not queued behind the stuck call
    release.set()

    def works() -> bool:
        try:
            return bounded.call(lambda: 42) == 42
        except DeadlineExceeded:
            return False

    # the stuck call returns on its worker; then calls work again
    wait_until(works, "calls to work again after the stuck call returned", interval=0.05)


def test_results_and_errors_pass_through_and_a_full_disk_is_storage_full() -> None:
    bounded = Bounded(30.0, "embedded Chroma at /x")
    assert bounded.call(lambda: [1, 2]) == [1, 2]

    def fails() -> None:
        raise KeyError("nope")

    with pytest.raises(KeyError):
        bounded.call(fails)

    def full() -> None:
        raise RuntimeError("Query error: (code: 13) database or disk is full")

    with pytest.raises(StorageFull, match="cannot grow"):
        bounded.call(full)


def test_concurrent_calls_run_side_by_side() -> None:
    """Each waiting caller has a worker of its own: two calls that wait for each other
    both finish (one worker would deadlock them into two deadline errors)."""
    bounded = Bounded(30.0, "embedded Chroma at /x")
    both = threading.Barrier(2, timeout=20)
    out: list[int] = []

    def meet(i: int) -> int:
        both.wait()
        return i

    other = threading.Thread(target=lambda: out.append(bounded.call(lambda: meet(1))))
    other.start()
    out.append(bounded.call(lambda: meet(2)))
    other.join(30)
    assert sorted(out) == [1, 2]


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "reverie-index-call"]


def test_close_ends_its_workers_and_refuses_later_calls() -> None:
    """A process that opens and closes engines one after another must not keep one idle
    worker thread per closed engine."""
    before = set(_workers())
    bounded = Bounded(30.0, "embedded Chroma at /x")
    both = threading.Barrier(2, timeout=20)
    other = threading.Thread(target=lambda: bounded.call(both.wait))
    other.start()
    bounded.call(both.wait)  # two calls at once: two workers
    other.join(30)
    assert len(set(_workers()) - before) == 2
    bounded.close()
    wait_until(lambda: not set(_workers()) - before, "the closed workers to end",
               interval=0.02)
    with pytest.raises(BackendUnavailable, match="closed"):
        bounded.call(lambda: 1)


def test_a_worker_stuck_at_close_ends_once_its_call_returns() -> None:
    before = set(_workers())
    bounded = Bounded(0.1, "embedded Chroma at /x")
    release = threading.Event()
    with pytest.raises(DeadlineExceeded):
        bounded.call(lambda: release.wait(60))
    bounded.close()
    assert len(set(_workers()) - before) == 1  # still inside its call
    release.set()
    wait_until(lambda: not set(_workers()) - before, "the stuck worker to end",
               interval=0.02)
