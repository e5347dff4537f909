from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reverie.core import ManualClock, Policy
from reverie.core.engine import MemoryEngine
from tests.fakes import BagOfWordsEmbedder, InMemoryStore, InMemoryVectorIndex

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def make_engine(policy: Policy | None = None, store: InMemoryStore | None = None) -> MemoryEngine:
    store = store or InMemoryStore()
    return MemoryEngine(
        store,
        store,
        InMemoryVectorIndex(),
        BagOfWordsEmbedder(),
        policy=policy or Policy(),
        clock=ManualClock(T0),
        token_counter=lambda s: len(s.split()),
    )


@pytest.fixture
def engine() -> MemoryEngine:
    return make_engine()
