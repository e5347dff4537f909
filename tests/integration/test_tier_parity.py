"""The shared tier (Redis + a Chroma server, each recall's query sent before its lexical
side and its candidates read in one round trip) must recall exactly what the embedded
default recalls from the same history: same memories, same order, same scores and
explanations (degrees included), reinforcement and supersession included. A user moving
from one machine to many workers must not get a different memory."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder

pytestmark = pytest.mark.slow
T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)

HISTORY = (
    "Maria moved to Lisbon in March for her new job at the bank",
    "the boiler was serviced by Tomas in March",
    "Maria's cat Pixel hates the vet on Rua Augusta",
    "we talked about hiking in the Serra da Estrela with Maria",
    "Tomas recommended a new boiler brand, Vaillant",
    "the car needs new tyres before winter",
    "the dentist appointment moved to Friday at 3pm",
    "Maria prefers green tea, never coffee after noon",
    "the team offsite is in Porto next month",
    "Pixel the cat had her vaccination in April",
    "I promised to call Tomas about the boiler warranty",
    "the hiking boots from the Porto shop were too small",
)
FACTS = (  # (subject, predicate, object): the second supersedes the first
    ("Maria", "lives in", "Lisbon"),
    ("Maria", "lives in", "Porto"),
    ("the car", "has tyres", "winter tyres since November"),
)
QUERIES = (
    "where does Maria live?",
    "who serviced the boiler",
    "what does Maria drink",
    "cat vet",
    "hiking",
    "Porto",
)


def _explained(result: Any) -> list[tuple[Any, ...]]:
    out = []
    for h in result:
        x = h.explanation
        out.append((h.memory.text, h.memory.status.value, round(h.score, 6),
                    round(x.relevance, 6), round(x.decay, 6), round(x.importance, 6),
                    x.tier, x.hops, round(x.context, 6)))
    return out


def test_shared_tier_recalls_what_the_embedded_default_recalls(
    tmp_path: Path, redis_url: str, chroma_server_url: str
) -> None:
    embedder = LocalEmbedder()
    ns = f"parity-{uuid.uuid4().hex[:10]}"
    clocks = {t: ManualClock(T0) for t in ("embedded", "shared")}
    engines = {
        "embedded": open_engine(tmp_path / "embedded", embedder=embedder,
                                clock=clocks["embedded"], namespace=ns),
        "shared": open_engine(tmp_path / "shared", store=redis_url, vectors=chroma_server_url,
                              embedder=embedder, clock=clocks["shared"], namespace=ns),
    }
    assert getattr(engines["shared"].vectors, "remote", False)
    assert hasattr(engines["shared"].store, "recall_reads")
    try:
        for tier, e in engines.items():
            for i, text in enumerate(HISTORY):
                clocks[tier].advance(seconds=60 if i % 3 else 5400)
                e.observe(text, source=f"s{i % 4}")
            for subject, predicate, obj in FACTS:
                clocks[tier].advance(hours=5)
                e.remember(subject, predicate, obj)
            e.flush()
        answers: dict[str, list[Any]] = {t: [] for t in engines}
        for _round in range(2):  # the second round sees the first round's reinforcement
            for q in QUERIES:
                for tier, e in engines.items():
                    clocks[tier].advance(hours=3)
                    answers[tier].append(_explained(e.recall(q, k=5)))
                    e.flush()
                    answers[tier].append(
                        _explained(e.recall(q, k=4, include_history=True, reinforce=False))
                    )
        for got_embedded, got_shared in zip(answers["embedded"], answers["shared"],
                                            strict=True):
            assert got_shared == got_embedded
        assert any(row[1] == "superseded" for a in answers["shared"] for row in a)
        assert any(row[5] > 0 for a in answers["shared"] for row in a)  # degrees counted
    finally:
        shared = engines["shared"]
        shared.forget_namespace(ns)
        for e in engines.values():
            e.close()
