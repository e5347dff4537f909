"""A process that forgets a large set of memories and is killed part way (SIGKILL) by
tests/integration/test_forget_crash.py.

Usage: python -m tests.integration.forget_worker HOME IDS_FILE MODE [REDIS_URL PREFIX]

MODE `records-gone`: the vector index blocks on its first delete, after the records were
deleted (the kill then lands between the two halves); `half-vectors`: the index deletes
half the vectors, then blocks; `free`: nothing blocks (the test kills at a moment of its
choosing). The worker prints "blocked" when it waits to be killed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from reverie.integrations import open_engine
from reverie.integrations.chroma.index import ChromaIndex
from reverie.integrations.redis.store import RedisStore
from tests.fakes import BagOfWordsEmbedder

NAMESPACE = "crash"


class BlockingIndex(ChromaIndex):
    mode = "free"

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        if self.mode == "half-vectors":
            super().delete(namespace, list(ids)[: len(ids) // 2])
        if self.mode in ("records-gone", "half-vectors"):
            print("blocked", flush=True)
            time.sleep(3600)
        super().delete(namespace, ids)


def main(home: str, ids_file: str, mode: str, url: str = "", prefix: str = "") -> None:
    vectors = BlockingIndex.embedded(Path(home) / "vectors")
    vectors.mode = mode
    store = RedisStore.from_url(url, prefix=prefix) if url else None
    engine = open_engine(home, store=store, vectors=vectors, embedder=BagOfWordsEmbedder(),
                         namespace=NAMESPACE)
    ids = Path(ids_file).read_text().split()
    print("forgetting", flush=True)
    engine.forget(*ids)
    print("done", flush=True)
    engine.close()


if __name__ == "__main__":
    main(*sys.argv[1:6])
