"""The REM cycle clustering on the vector index's HNSW neighbours (ChromaIndex.neighbors)
finds the same clusters as on the exact k-NN, on real parts: a SQLite file, Chroma
(embedded and a real server) and the real all-MiniLM-L6-v2 model. Pinned memories sit
right next to flagged ones in the index, so the neighbours must be filtered to the
flagged set."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.core.policy import Policy
from reverie.integrations import open_engine

pytestmark = pytest.mark.slow
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

TOPICS = [
    [
        "We flew to Lisbon for the conference in May.",
        "The conference trip to Lisbon was in May.",
        "In May we travelled to Lisbon for a conference.",
    ],
    [
        "My sister adopted a grey cat named Pixel.",
        "Pixel is the grey cat my sister adopted.",
        "My sister's new cat, Pixel, is grey.",
    ],
    [
        "The kitchen tap has been leaking since Tuesday.",
        "Since Tuesday the kitchen tap keeps leaking.",
    ],
]
LONE = [
    "I prefer green tea to coffee in the afternoon.",
    "The quarterly report is due on the fifteenth.",
    "Our team switched the build system to Bazel.",
]
PINNED = [  # near-duplicates of flagged ones, never flagged themselves
    "We went to Lisbon for the May conference.",
    "My sister has a grey cat called Pixel.",
]


@pytest.mark.parametrize("where", ["embedded-chroma", "chroma-server"])
def test_hnsw_neighbours_give_the_exact_knn_clusters(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    vectors = request.getfixturevalue("chroma_server_url") if where == "chroma-server" else None
    home = tmp_path / "home"
    ns = f"t-{uuid.uuid4().hex[:12]}"  # the server is shared by the session
    later = ManualClock(T0 + timedelta(days=90))

    e = open_engine(home, vectors=vectors, clock=ManualClock(T0), namespace=ns)
    try:
        n = 0
        for text in [t for topic in TOPICS for t in topic] + LONE:
            e.observe(text, source=f"turn:{n}")
            n += 1
        for text in PINNED:
            e.observe(text, pinned=True, source=f"pin:{n}")
            n += 1
    finally:
        e.close()

    def clusters(policy: Policy) -> tuple[list[list[str]], list[tuple[Sequence[str], int]]]:
        e = open_engine(home, vectors=vectors, clock=later, namespace=ns, policy=policy)
        calls: list[tuple[Sequence[str], int]] = []
        real = getattr(e.vectors, "neighbors", None)
        if real is not None:

            def spy(namespace: str, ids: Sequence[str], k: int) -> Any:
                calls.append((list(ids), k))
                return real(namespace, ids, k)

            e.vectors.neighbors = spy  # type: ignore[attr-defined]
        try:
            report = e.consolidate(dry_run=True)
            texts = {m.id: m.text for m in e.memories()}
            return sorted(sorted(texts[i] for i in c.member_ids) for c in report.clusters), calls
        finally:
            if where == "chroma-server" and policy.maintenance.cluster_neighbor_overfetch == 0:
                e.forget_namespace(ns)
            e.close()

    hnsw, hnsw_calls = clusters(Policy(cluster_index_knn_min=0))
    exact, exact_calls = clusters(Policy(cluster_neighbor_overfetch=0))
    assert exact_calls == []  # the baseline really is the exact k-NN
    assert len(hnsw_calls) == 1  # one batched call for every flagged memory
    ids, k = hnsw_calls[0]
    assert len(ids) == len(TOPICS[0]) + len(TOPICS[1]) + len(TOPICS[2]) + len(LONE)
    assert k == Policy().maintenance.cluster_knn * Policy().maintenance.cluster_neighbor_overfetch
    assert hnsw == exact
    assert hnsw == sorted(sorted(t) for t in TOPICS)  # the paraphrase groups, pins left out
