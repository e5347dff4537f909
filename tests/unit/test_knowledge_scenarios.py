"""The knowledge-update scenario generator: deterministic, large, covering, disjoint splits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from knowledge_scenarios import (
    FAMILIES,
    GAPS,
    KINDS,
    SEEDS,
    coverage,
    generate,
)


@pytest.fixture(scope="module")
def tune():
    return generate("tune")


@pytest.fixture(scope="module")
def report():
    return generate("report")


def test_deterministic_for_a_seed(tune):
    again = generate("tune")
    assert [s.signature() for s in again] == [s.signature() for s in tune]
    assert [s.probes for s in again] == [s.probes for s in tune]
    assert [s.turns for s in again] == [s.turns for s in tune]


def test_splits_have_their_own_seeds_and_share_no_scenario(tune, report):
    assert SEEDS["tune"] != SEEDS["report"]
    assert not {s.signature() for s in tune} & {s.signature() for s in report}
    assert len({s.signature() for s in report}) == len(report)
    assert {s.split for s in tune} == {"tune"} and {s.split for s in report} == {"report"}


def test_unknown_split_is_refused():
    with pytest.raises(ValueError):
        generate("test")


@pytest.mark.parametrize("split", ["tune", "report"])
def test_size_and_coverage(split, tune, report):
    scenarios = tune if split == "tune" else report
    assert len(scenarios) >= 300
    cov = coverage(scenarios)
    for family in FAMILIES:  # every phrasing of change, cue words and none
        assert cov.get(f"family:{family}", 0) >= 30, family
    assert cov["scenario:twin"] >= 30  # look-alike facts that must both stay current
    assert cov["scenario:incidental"] >= 20  # incidental cue words
    assert cov["assistant_turns"] >= 300
    for gap in GAPS:
        assert cov.get(f"gap:{gap}", 0) >= 20, gap
    for n in (1, 2, 3, 4):
        assert cov.get(f"updates_per_fact:{n}", 0) >= 10
    assert cov.get("facts_per_scenario:2", 0) + cov.get("facts_per_scenario:3", 0) >= 40
    assert cov["question:old"] >= 100 and cov["question:neutral"] >= 30
    assert len({k for k in cov if k.startswith("kind:")}) >= 20
    assert len(KINDS) >= 20


def test_templates_vary(report):
    updates = [t.text for s in report for t in s.turns if t.role == "update"]
    assert len(set(updates)) >= 0.9 * len(updates)
    distractors = [t.text for s in report for t in s.turns if t.role == "distractor"]
    assert len(set(distractors)) >= 150


def test_each_scenario_is_well_formed(report):
    for s in report:
        ids = [t.id for t in s.turns]
        assert len(set(ids)) == len(ids)
        assert len({t.text.casefold() for t in s.turns}) == len(s.turns)
        assert all(t.text.startswith(f"{t.speaker}: ") for t in s.turns)
        assert all(a.at <= b.at for a, b in zip(s.turns, s.turns[1:], strict=False))
        assert s.asked_at >= s.turns[-1].at
        by_id = {t.id: t for t in s.turns}
        for p in s.probes:
            cur = by_id[p.current_turn]
            assert p.current_turn in s.must_stay_current
            if s.kind == "update":
                assert cur.value == p.current_value and cur.fact == p.fact
                assert p.stale_turns and len(p.stale_turns) == len(p.stale_values)
                for tid, value in zip(p.stale_turns, p.stale_values, strict=True):
                    assert by_id[tid].value == value != p.current_value
                    assert by_id[tid].at < cur.at
                    assert tid not in s.must_stay_current
            else:
                assert p.negative and not p.stale_turns
        if s.kind != "update":  # negatives: nothing may be retired
            assert s.must_stay_current == frozenset(ids) and not s.retirable


def test_elliptical_updates_name_the_subject_earlier(report):
    seen = 0
    for s in report:
        for i, t in enumerate(s.turns):
            if t.family == "elliptical":
                seen += 1
                earlier = s.turns[max(0, i - 4):i]
                assert any(e.role == "intro" and e.fact == t.fact for e in earlier)
    assert seen >= 30


def test_assistant_never_states_a_value(report):
    for s in report:
        for t in s.turns:
            if t.speaker == "assistant" and s.kind == "update":
                assert t.role in {"reply", "distractor", "incidental"}
