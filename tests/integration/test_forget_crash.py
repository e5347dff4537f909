"""A forget killed part way (SIGKILL) is finished by the next open: a real SQLite file or an
AOF-persisted redis-server, with embedded Chroma, 3,000 memories forgotten at once by a subprocess
(tests/integration/forget_worker.py) that is killed after the records were deleted and
before the vectors were (the state that used to leave every forgotten vector in the
index, unflagged), half way through the vectors, and at a moment the test picks while
the forget runs. After each kill, opening an engine on the files finishes the forget:
no record, no vector and no vector write in Chroma's log is left, the journal is empty,
and the memories that were not forgotten are all there.
"""

from __future__ import annotations

import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reverie.core.erasure import FORGET_JOURNAL
from reverie.integrations import open_engine
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.store import RedisStore
from tests.fakes import BagOfWordsEmbedder
from tests.integration.forget_worker import NAMESPACE
from tests.servers import start_redis, wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
FORGOTTEN = 3000
KEPT = 5


@pytest.fixture(scope="module")
def aof_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module alone, AOF on with fsync always."""
    server, url = start_redis(tmp_path_factory.mktemp("forget-crash-redis"), appendonly=True)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """A SQLite store with 3,000 memories to forget and 5 to keep, and their ids."""
    home = tmp_path_factory.mktemp("forget-crash") / "home"
    return (home, *_fill(home, None))


def _fill(home: Path, store: RedisStore | None) -> tuple[list[str], list[str]]:
    with open_engine(home, store=store, embedder=BagOfWordsEmbedder(),
                     namespace=NAMESPACE) as engine:
        doomed = engine.observe_many(
            [f"private note number {i} about account {i * 7919}" for i in range(FORGOTTEN)]
        )
        kept = engine.observe_many([f"kept memory {i} about the garden" for i in range(KEPT)])
        engine.flush()
        assert engine.vectors.count(NAMESPACE) == FORGOTTEN + KEPT
    return [m.id for m in doomed], [m.id for m in kept]


class Tier:
    """Where the records live: the copied SQLite file, or a Redis prefix of the test's own."""

    def __init__(self, home: Path, url: str | None) -> None:
        self.home, self.url = home, url
        self.prefix = f"t{uuid.uuid4().hex[:8]}"

    def store(self) -> RedisStore | None:
        return None if self.url is None else RedisStore.from_url(self.url, prefix=self.prefix)

    def records(self) -> int:
        if self.url is None:
            with sqlite3.connect(self.home / "memory.db", timeout=30) as db:
                return int(db.execute(
                    "SELECT count(*) FROM memories WHERE namespace = ?", (NAMESPACE,)
                ).fetchone()[0])
        with RedisStore.from_url(self.url, prefix=self.prefix) as store:
            return store.count(NAMESPACE).get("total", 0)

    def argv(self) -> list[str]:
        return [] if self.url is None else [self.url, self.prefix]


def _wait_for(proc: subprocess.Popen[str], line: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"the worker did not print {line!r} within {timeout:g}s")
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            got = proc.stdout.readline()
            if not got:
                raise AssertionError(f"the worker exited before {line!r}: {proc.wait()}")
            if got.strip() == line:
                return


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


def _start(tier: Tier, ids_file: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.forget_worker", str(tier.home),
         str(ids_file), mode, *tier.argv()],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


@pytest.mark.parametrize("tier_name", ["sqlite", "redis"])
@pytest.mark.parametrize("mode", ["records-gone", "half-vectors", "free"])
def test_a_forget_killed_part_way_is_finished_by_the_next_open(
    request: pytest.FixtureRequest, tmp_path: Path, mode: str, tier_name: str
) -> None:
    home = tmp_path / "home"
    if tier_name == "sqlite":
        source, doomed, kept = request.getfixturevalue("pristine")
        shutil.copytree(source, home)
        tier = Tier(home, None)
    else:
        tier = Tier(home, request.getfixturevalue("aof_redis"))
        doomed, kept = _fill(home, tier.store())
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(doomed))

    proc = _start(tier, ids_file, mode)
    try:
        if mode == "free":
            _wait_for(proc, "forgetting")
            # kill as soon as the records are gone
            wait_until(lambda: tier.records() <= KEPT, "the forget to delete the records", 300)
        else:
            _wait_for(proc, "blocked")
    finally:
        _kill(proc)

    assert tier.records() == KEPT
    if mode != "free":  # the kill left the forgotten vectors behind
        left = ChromaIndex.embedded(home / "vectors")
        behind = len(left.ids(NAMESPACE) - set(kept))
        left.close()
        assert behind == (FORGOTTEN if mode == "records-gone" else FORGOTTEN // 2)

    with open_engine(home, store=tier.store(), embedder=BagOfWordsEmbedder(),
                     namespace=NAMESPACE) as engine:
        assert {m.id for m in engine.memories()} == set(kept)
        assert engine.vectors.ids(NAMESPACE) == set(kept)
        assert engine.store.journal_get(NAMESPACE, FORGET_JOURNAL) == {"ids": []}
        assert engine.store.get_meta("forget_pending") == "[]"
        assert engine.gc().orphan_vectors == 0
    with sqlite3.connect(next(home.rglob("chroma.sqlite3"))) as log:
        doomed_writes = sum(
            log.execute(
                f"SELECT count(*) FROM embeddings_queue WHERE operation != 3 AND id IN "
                f"({','.join('?' * len(doomed[i:i + 500]))})", doomed[i:i + 500],
            ).fetchone()[0]
            for i in range(0, len(doomed), 500)
        )
    assert doomed_writes == 0
