"""The fact extractor's validation and retry (core/extraction.py) and
`MemoryEngine.extract_facts`, on in-memory parts with a scripted synthesizer (the real
model's answers are covered by tests/cassette/test_langchain.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from reverie.core import Kind, Memory, SynthesisFailed, Tier
from reverie.core.extraction import (
    EXTRACTION_SCHEMA,
    extract_from_traces,
    extraction_prompt,
    parse_facts,
)
from reverie.core.policy import DEFAULT_POLICY
from tests.unit.conftest import T0, make_engine


def trace(i: int, text: str) -> Memory:
    return Memory(id=f"t{i}", namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
                  created_at=T0 + timedelta(minutes=i))


TRACES = [trace(1, "user: I moved to Lisbon last year"), trace(2, "user: my dog is called Rex")]


class Scripted:
    """Answers in order; an Exception in the script is raised instead."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        assert schema is EXTRACTION_SCHEMA
        self.prompts.append(prompt)
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a  # type: ignore[no-any-return]


def fact(t: Any, s: Any = "user", p: Any = "lives in", o: Any = "Lisbon") -> dict[str, Any]:
    return {"trace": t, "subject": s, "predicate": p, "object": o}


def test_valid_grounded_facts_are_kept_and_the_rest_say_why() -> None:
    payload = {"facts": [
        fact(1),
        fact(1),  # a repeat is kept once
        fact(2, "dog", "is called", "Rex"),
        fact(3),  # no such trace
        fact(True),  # a bool is not a message number
        fact(2, "dog", "is called", "Max"),  # not in the trace it cites
        fact(1, "", "lives in", "Lisbon"),
        "user lives in Lisbon",
    ]}
    kept, rejected = parse_facts(payload, TRACES, DEFAULT_POLICY)
    assert [(f.subject, f.predicate, f.object, f.trace_id) for f in kept] == [
        ("user", "lives in", "Lisbon", "t1"), ("dog", "is called", "Rex", "t2"),
    ]
    assert rejected == [
        "fact 4: trace must be a message number 1..2, got 3",
        "fact 5: trace must be a message number 1..2, got True",
        "fact 6: object 'Max' does not occur in trace 2",
        "fact 7: subject must be non-empty text, got ''",
        "fact 8: not an object but str",
    ]


@pytest.mark.parametrize("payload", [{}, {"facts": "none"}, {"fact": []}])
def test_a_payload_without_a_facts_list_is_unusable(payload: dict[str, Any]) -> None:
    with pytest.raises(SynthesisFailed, match="facts"):
        parse_facts(payload, TRACES, DEFAULT_POLICY)


def test_retries_show_the_error_then_succeed() -> None:
    synth = Scripted(SynthesisFailed("not valid JSON"), {"nope": 1}, {"facts": [fact(1)]})
    out = extract_from_traces(TRACES, synth, DEFAULT_POLICY)
    assert out.attempts == 3 and out.failed is None and len(out.facts) == 1
    assert "unusable" not in synth.prompts[0]
    assert "previous answer was unusable: not valid JSON" in synth.prompts[1]
    assert 'previous answer was unusable: the answer has no "facts" list' in synth.prompts[2]


def test_gives_up_after_the_policy_retries() -> None:
    synth = Scripted(*[SynthesisFailed("garbage")] * 2)
    out = extract_from_traces(TRACES, synth, DEFAULT_POLICY.replace(synthesis_retries=1))
    assert out.attempts == 2 and out.failed == "garbage" and out.facts == []


def test_prompt_numbers_the_traces_in_order() -> None:
    p = extraction_prompt(TRACES)
    assert "1. user: I moved to Lisbon last year\n2. user: my dog is called Rex" in p


def test_engine_extract_facts_writes_sourced_units_once_and_honours_since() -> None:
    e = make_engine()
    a = e.observe("user: I moved to Lisbon last year", source="chat")
    e.clock.advance(days=2)  # type: ignore[attr-defined]
    b = e.observe("user: my dog is called Rex", source="chat")
    synth = Scripted({"facts": [fact(1), fact(2, "dog", "is called", "Rex")]})
    report = e.extract_facts(synthesizer=synth)
    assert report.traces == 2 and report.facts == 2 and report.attempts == 1
    units = {m.fact.object: m for m in e.memories(tiers=["unit"]) if m.fact}
    assert units["Lisbon"].sources == {a.id} and units["Lisbon"].created_at == a.created_at
    assert units["Rex"].sources == {b.id} and units["Rex"].kind is Kind.SEMANTIC

    before = {(m.id, m.version) for m in e.memories()}
    e.extract_facts(synthesizer=Scripted({"facts": [fact(1), fact(2, "dog", "is called", "Rex")]}))
    assert {(m.id, m.version) for m in e.memories()} == before  # a replay changes nothing

    later = Scripted({"facts": []})
    assert e.extract_facts(synthesizer=later, since=b.created_at).traces == 1
    messages = later.prompts[0].rsplit("Messages:\n", 1)[1]  # after the worked example
    assert messages.startswith("1. user: my dog is called Rex\n") and "Lisbon" not in messages
