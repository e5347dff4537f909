"""A forget killed part way (SIGKILL) is finished by the next open: a real SQLite file and
embedded Chroma, 3,000 memories forgotten at once by a subprocess
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
from pathlib import Path

import pytest

from reverie.core.erasure import FORGET_JOURNAL
from reverie.integrations import open_engine
from reverie.integrations.chroma.index import ChromaIndex
from tests.fakes import BagOfWordsEmbedder
from tests.integration.forget_worker import NAMESPACE

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
FORGOTTEN = 3000
KEPT = 5


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """A store with 3,000 memories to forget and 5 to keep, and their ids."""
    home = tmp_path_factory.mktemp("forget-crash") / "home"
    with open_engine(home, embedder=BagOfWordsEmbedder(), namespace=NAMESPACE) as engine:
        doomed = engine.observe_many(
            [f"private note number {i} about account {i * 7919}" for i in range(FORGOTTEN)]
        )
        kept = engine.observe_many([f"kept memory {i} about the garden" for i in range(KEPT)])
        engine.flush()
        assert engine.vectors.count(NAMESPACE) == FORGOTTEN + KEPT
    return home, [m.id for m in doomed], [m.id for m in kept]


def _records(home: Path) -> int:
    with sqlite3.connect(home / "memory.db", timeout=30) as db:
        return int(db.execute(
            "SELECT count(*) FROM memories WHERE namespace = ?", (NAMESPACE,)
        ).fetchone()[0])


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


def _start(home: Path, ids_file: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.forget_worker", str(home), str(ids_file), mode],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


@pytest.mark.parametrize("mode", ["records-gone", "half-vectors", "free"])
def test_a_forget_killed_part_way_is_finished_by_the_next_open(
    pristine: tuple[Path, list[str], list[str]], tmp_path: Path, mode: str
) -> None:
    source, doomed, kept = pristine
    home = tmp_path / "home"
    shutil.copytree(source, home)
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(doomed))

    proc = _start(home, ids_file, mode)
    try:
        if mode == "free":
            _wait_for(proc, "forgetting")
            deadline = time.monotonic() + 300
            while _records(home) > KEPT:  # kill as soon as the records are gone
                assert time.monotonic() < deadline, "the forget never deleted the records"
                time.sleep(0.001)
        else:
            _wait_for(proc, "blocked")
    finally:
        _kill(proc)

    assert _records(home) == KEPT
    if mode != "free":  # the kill left the forgotten vectors behind
        left = ChromaIndex.embedded(home / "vectors")
        behind = len(left.ids(NAMESPACE) - set(kept))
        left.close()
        assert behind == (FORGOTTEN if mode == "records-gone" else FORGOTTEN // 2)

    with open_engine(home, embedder=BagOfWordsEmbedder(), namespace=NAMESPACE) as engine:
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
