"""The state the engine's parts share, in one explicit object.

The ports, the policy, the clock, the resolved capabilities and the background workers.

`MemoryEngine` builds one `EngineContext` and hands it to each part (the write path,
recall, maintenance, administration); no part reaches into another's privates. The
context is frozen: when the engine's policy or embedder is replaced, the engine builds
a new context and new parts around the same ports and workers. The few helpers here
are the ones every part needs: which namespace a call means, the time, text and
vector checks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .capabilities import Capabilities
from .clock import utc
from .errors import EmptyText, InvalidVector, TextTooLong
from .indexing import IndexWriter
from .models import Memory, validate_namespace
from .policy import Policy
from .ports import Clock, Embedder, LexicalIndex, RecordStore, TokenCounter, Vector, VectorIndex
from .reinforcement import Reinforcer
from .triggers import RetrievalLog

_EMBED_BATCH = 256  # texts per embedder call when embedding many memories


@dataclass(frozen=True, slots=True)
class EngineContext:
    store: RecordStore
    lexical: LexicalIndex
    vectors: VectorIndex
    embedder: Embedder
    policy: Policy
    clock: Clock
    caps: Capabilities
    default_namespace: str
    token_counter: TokenCounter | None
    new_id: Callable[[], str]
    reinforcer: Reinforcer  # recall's access reinforcement, written behind the caller
    indexer: IndexWriter  # observe's new vectors, written behind the caller
    pool: ThreadPoolExecutor  # recall's in-process dense query, beside the lexical one
    retrievals: RetrievalLog  # importance of recent hits, for the weak-retrievals trigger

    def namespace(self, namespace: str | None, *, flush: bool = True, index: bool = True) -> str:
        """The namespace to use; first, every queued reinforcement is written, so reads
        see all earlier recalls' touches (recall itself waits only for its records'), and
        this engine's queued vectors of the namespace (observe, a writer, skips that)."""
        if flush:
            self.reinforcer.flush()
        ns = validate_namespace(self.default_namespace if namespace is None else namespace)
        if index:  # read-your-writes: this engine's queued vectors land first
            self.indexer.flush(ns)
        return ns

    def now(self, at: datetime | None = None) -> datetime:
        return utc(at) if at is not None else self.clock.now()

    def check_text(self, text: object, what: str = "text") -> str:
        if not isinstance(text, str) or not text.strip():
            raise EmptyText(f"{what} is empty: pass the words to remember")
        if len(text) > self.policy.funnel.max_text_chars:
            raise TextTooLong(
                f"{what} has {len(text)} characters, over the limit of "
                f"{self.policy.funnel.max_text_chars}: split it, or raise"
                " Policy.funnel.max_text_chars"
            )
        return text

    def embed(self, texts: Sequence[str]) -> Vector:
        """The embedder's vectors for `texts`, checked for shape and finiteness before
        anything derived from them is written."""
        vecs = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        want = (len(texts), self.embedder.dimension)
        if vecs.shape != want:
            raise InvalidVector(
                f"embedder {self.embedder.name!r} returned shape {vecs.shape}, expected {want}"
            )
        if not np.isfinite(vecs).all():
            raise InvalidVector(
                f"embedder {self.embedder.name!r} returned NaN or infinite values; "
                "nothing was written"
            )
        return vecs

    def embed_memories(self, memories: Sequence[Memory]) -> Vector:
        texts = [m.text for m in memories]
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.concatenate(
            [self.embed(texts[i : i + _EMBED_BATCH]) for i in range(0, len(texts), _EMBED_BATCH)]
        )

    def read(self, namespace: str, ids: Sequence[str]) -> dict[str, Memory]:
        """Records for recall, with every touch already queued for them applied."""
        self.reinforcer.settle(namespace, ids)
        return self.store.get_many(namespace, ids)

    def touch(self, namespace: str, ids: Sequence[str], at: datetime) -> None:
        """Access reinforcement written now (the background reinforcement's single write)."""
        self.store.touch(namespace, ids, at, self.policy.decay.access_window)

    def touch_many(
        self, namespace: str, events: Sequence[tuple[Sequence[str], datetime]]
    ) -> None:
        """Several recalls' touches in one atomic write (a `TouchesMany` store only)."""
        assert self.caps.touch_many is not None
        self.caps.touch_many(namespace, events, self.policy.decay.access_window)
