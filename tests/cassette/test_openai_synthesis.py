"""`OpenAISynthesizer` (the official `openai` client) against recorded answers of the real
local LLM server (SmolLM2-135M behind llama.cpp's OpenAI-compatible API): a real cluster
synthesized in JSON mode, and a real answer cut off at max_tokens that core refuses,
re-asks with the error shown, and finally replaces with the extractive synthesis while
every member stays intact.

Replay needs neither the model nor the server; `scripts/record-cassettes
tests/cassette/test_openai_synthesis.py` re-records them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core.consolidation import commit_group, synthesize_group
from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.policy import DEFAULT_POLICY
from reverie.core.ports import WriteBatch
from reverie.core.synthesis import SYNTHESIS_SCHEMA, build_prompt
from reverie.core.text import normalize_text
from reverie.integrations.llm import OpenAISynthesizer
from reverie.integrations.sqlite.store import SQLiteStore
from tests.cassettes import LLM_MODEL, llm_base_url, use_cassette

pytestmark = pytest.mark.slow

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NS = "openai-synth"


def members() -> list[Memory]:
    texts = [
        "Tom adopted a puppy called Biscuit in March.",
        "Biscuit chewed Tom's sofa, so Tom bought a crate.",
        "Actually the puppy is called Cookie now, Tom renamed him.",
    ]
    return [
        Memory(
            id=f"m{i}", namespace=NS, kind=Kind.EPISODIC, tier=Tier.TRACE, text=t,
            created_at=T0 + timedelta(days=3 * i), importance=0.2,
            sources=frozenset({f"turn:{i}"}),
        )
        for i, t in enumerate(texts)
    ]


def synth(max_tokens: int = 250) -> OpenAISynthesizer:
    # a generous timeout: recording shares two loaded cores with other work
    return OpenAISynthesizer(llm_base_url(), LLM_MODEL, timeout=900.0, max_tokens=max_tokens)


def bodies(cassette: Any) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in cassette.requests]


@pytest.mark.timeout(2400)  # recording only: the shared machine makes the live call slow
def test_real_cluster_synthesis_in_json_mode() -> None:
    group = members()
    with use_cassette("openai_synthesis") as cassette:
        result = synthesize_group(group, synth(), DEFAULT_POLICY)
    sent = bodies(cassette)
    assert len(sent) == result.attempts
    first = sent[0]
    assert first["model"] == LLM_MODEL
    assert first["response_format"] == {"type": "json_object", "schema": SYNTHESIS_SCHEMA}
    assert first["messages"][1] == {"role": "user", "content": build_prompt(group)}
    # The real model rated importance 4.5, then 4.2: core refused both, showing the model
    # why, and the third answer passed validation.
    assert result.attempts == 3
    for body, got in zip(sent[1:], ("4.5", "4.2"), strict=True):
        assert body["messages"][1]["content"] == build_prompt(group) + (
            "\n\nYour previous answer was rejected: 'importance' must be a number from 0 to 1,"
            f" got {got}\nAnswer again with one corrected JSON object only."
        )
    assert not result.fell_back, result.reason
    assert result.synthesizer == f"openai:{LLM_MODEL}"
    payload = result.payload
    assert payload.synthesis.strip() and 0.0 <= payload.importance <= 1.0
    # Content is weak, as LOCAL_LLM.md warns for a 135M model: it copies names from the
    # prompt's worked example ("Sam") while keeping the fragments' newest name (Cookie).
    assert "Cookie" in payload.synthesis


@pytest.mark.timeout(1200)
def test_truncated_real_answer_falls_back_and_keeps_every_member(tmp_path: Path) -> None:
    group = members()
    policy = DEFAULT_POLICY.replace(synthesis_retries=1)
    with use_cassette("openai_truncated") as cassette:
        result = synthesize_group(group, synth(max_tokens=12), policy)
    sent = bodies(cassette)
    assert len(sent) == 2 and result.attempts == 2  # the first try and one re-ask
    assert result.fell_back and result.synthesizer == "extractive"
    assert result.reason is not None and "cut off at max_tokens=12" in result.reason
    # the re-ask showed the model why its answer was refused
    assert "rejected: the answer was cut off at max_tokens=12" in sent[1]["messages"][1]["content"]

    store = SQLiteStore(tmp_path / "memory.db")
    try:
        store.commit(WriteBatch(NS, tuple(group)))
        node = commit_group(store, NS, group, result.payload, T0 + timedelta(days=60), policy)
        for m in group:
            kept = store.get(NS, m.id)
            assert kept is not None and kept.text == m.text and kept.sources == m.sources
            assert kept.status is Status.CONSOLIDATED and kept.consolidated_into == node.id
            assert normalize_text(m.text) in normalize_text(node.text)
        assert node.sources == {"turn:0", "turn:1", "turn:2"}
    finally:
        store.close()
