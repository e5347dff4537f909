"""The synthesis prompt, payload validation and the extractive synthesizer (no LLM)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from reverie.core.errors import SynthesisFailed
from reverie.core.models import Kind, Memory, Tier
from reverie.core.synthesis import (
    SYNTHESIS_SCHEMA,
    ExtractiveSynthesizer,
    InvalidPayload,
    build_prompt,
    retry_prompt,
    validate_payload,
)
from reverie.core.text import normalize_text
from tests.unit.conftest import T0


def mem(i: str, text: str, days: float, importance: float = 0.2, **kw: object) -> Memory:
    return Memory(
        id=i, namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
        created_at=T0 + timedelta(days=days), importance=importance,
        sources=frozenset({f"src-{i}"}), **kw,  # type: ignore[arg-type]
    )


GOOD = {
    "synthesis": "Ana moved to Lisbon in May, so she sold her car.",
    "key_entities": ["Ana", "Lisbon"],
    "causal_chains": ["moved to Lisbon -> sold the car"],
    "temporal_anchors": ["May"],
    "importance": 0.6,
}


def test_prompt_lists_fragments_oldest_first_with_dates_and_rules() -> None:
    members = [mem("b", "Ana sold her car.", 3), mem("a", "Ana moved to Lisbon.", 1)]
    prompt = build_prompt(members)
    first = prompt.index("[2025-03-02] Ana moved to Lisbon.")
    second = prompt.index("[2025-03-04] Ana sold her car.")
    assert first < second
    assert "NEWEST fragment wins" in prompt
    assert "Do not average" in prompt
    assert "Example answer" in prompt  # the one worked example the tiny model needs
    for key in SYNTHESIS_SCHEMA["required"]:
        assert key in prompt
    assert retry_prompt(prompt, "'importance' must be a number").endswith(
        "rejected: 'importance' must be a number\nAnswer again with one corrected JSON object only."
    )


def test_a_valid_payload_becomes_a_typed_result() -> None:
    p = validate_payload({**GOOD, "key_entities": ["Ana", "Ana ", "Lisbon"]})
    assert p.synthesis == GOOD["synthesis"]
    assert p.key_entities == ("Ana", "Lisbon")  # stripped, deduplicated, order kept
    assert p.importance == 0.6
    assert validate_payload({**GOOD, "importance": 1}).importance == 1.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not an object", "must be a JSON object"),
        ([GOOD], "must be a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "importance"}, "missing key(s): importance"),
        ({**GOOD, "synthesis": ""}, "'synthesis' must be a non-empty string"),
        ({**GOOD, "synthesis": 42}, "'synthesis' must be a non-empty string"),
        ({**GOOD, "key_entities": "Ana"}, "'key_entities' must be a list of strings"),
        ({**GOOD, "causal_chains": [1, 2]}, "'causal_chains' must be a list of strings"),
        ({**GOOD, "importance": 1.5}, "'importance' must be a number from 0 to 1"),
        ({**GOOD, "importance": "0.5"}, "'importance' must be a number from 0 to 1"),
        ({**GOOD, "importance": True}, "'importance' must be a number from 0 to 1"),
        ({**GOOD, "mood": "happy"}, "unexpected key(s): mood"),
    ],
)
def test_invalid_payloads_say_what_is_wrong(raw: object, message: str) -> None:
    with pytest.raises(InvalidPayload) as err:
        validate_payload(raw)
    assert message in str(err.value)
    assert isinstance(err.value, SynthesisFailed)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(InvalidPayload) as err:
        validate_payload({"synthesis": "", "importance": -1})
    text = str(err.value)
    assert "missing key(s): key_entities, causal_chains, temporal_anchors" in text
    assert "'synthesis'" in text and "'importance'" in text


def test_repeating_one_fragment_is_not_a_synthesis() -> None:
    members = [mem("a", "Ana moved to Lisbon.", 1), mem("b", "Ana sold her car.", 2)]
    with pytest.raises(InvalidPayload, match="repeats one fragment verbatim"):
        validate_payload({**GOOD, "synthesis": "ana moved to lisbon"}, members)


def test_too_long_a_synthesis_is_refused() -> None:
    with pytest.raises(InvalidPayload, match="keep it under 10"):
        validate_payload(GOOD, max_chars=10)


def test_extractive_conserves_every_member_in_time_order() -> None:
    members = [
        mem("c", "Ana sold her car because she moved.", 9, importance=0.25),
        mem("a", "Ana moved to Lisbon on 2025-05-01.", 1, importance=0.1, entities={"ana"}),
        mem("b", "The flat in Lisbon has a balcony.", 4, entities={"lisbon"}),
    ]
    p = ExtractiveSynthesizer().synthesize_members(members)
    text = normalize_text(p.synthesis)
    for m in members:
        assert normalize_text(m.text) in text
    assert p.synthesis.splitlines() == [
        "Consolidated from 3 memories (2025-03-02 to 2025-03-10):",
        "[2025-03-02] Ana moved to Lisbon on 2025-05-01.",
        "[2025-03-05] The flat in Lisbon has a balcony.",
        "[2025-03-10] Ana sold her car because she moved.",
    ]
    assert p.key_entities == ("ana", "lisbon")
    assert p.temporal_anchors == ("2025-03-02", "2025-03-05", "2025-03-10", "2025-05-01")
    assert p.causal_chains == ("Ana sold her car because she moved.",)
    assert p.importance == 0.25  # the highest member's


def test_extractive_drops_only_what_another_fragment_already_says() -> None:
    members = [
        mem("a", "Ana likes tea", 1),
        mem("b", "ana likes tea.", 2),  # the same after normalisation
        mem("c", "Ana likes tea with lemon", 3),  # contains the first
        mem("d", "Bo likes coffee", 4),
    ]
    p = ExtractiveSynthesizer().synthesize_members(members)
    lines = p.synthesis.splitlines()
    assert lines[0] == "Consolidated from 4 memories (2025-03-02 to 2025-03-05):"
    assert lines[1:] == ["[2025-03-04] Ana likes tea with lemon", "[2025-03-05] Bo likes coffee"]
    for m in members:  # nothing lost: every member's words survive in some line
        assert normalize_text(m.text) in normalize_text(p.synthesis)


def test_extractive_is_deterministic_whatever_the_input_order() -> None:
    members = [mem(str(i), f"fact number {i} about Ana", i % 3) for i in range(8)]
    shuffled = members[:]
    random.Random(7).shuffle(shuffled)
    a = ExtractiveSynthesizer().synthesize_members(members)
    b = ExtractiveSynthesizer().synthesize_members(shuffled)
    assert a == b


def test_extractive_refuses_an_empty_cluster() -> None:
    with pytest.raises(SynthesisFailed):
        ExtractiveSynthesizer().synthesize_members([])
