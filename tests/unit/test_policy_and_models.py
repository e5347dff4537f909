from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime

import pytest

from reverie.core import (
    Fact,
    InvalidInput,
    InvalidNamespace,
    InvalidPolicy,
    Kind,
    Memory,
    Policy,
    Tier,
    UnknownKind,
)
from reverie.core.codec import memory_from_dict, memory_to_dict
from reverie.core.models import fact_key, validate_namespace
from reverie.core.text import (
    content_hash,
    extract_entities,
    initial_importance,
    is_correction,
    strip_speaker,
)

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def test_seed_defaults() -> None:
    p = Policy()
    assert (p.decay.half_life_episodic_days, p.decay.half_life_semantic_days) == (14, 90)
    assert p.decay.half_life_procedural_days == 180
    assert (p.retrieval.alpha, p.retrieval.decay_floor) == (0.9, 0.05)
    assert p.funnel.confidence_cap == 0.95
    assert (p.retrieval.floor_bypass_relevance, p.retrieval.dense_weight) == (0.3, 0.5)
    m = p.maintenance
    assert (m.consolidation_tau, m.cluster_theta, m.cluster_knn) == (0.3, 0.78, 8)
    assert (p.maintenance.evict_salience, p.maintenance.gc_salience) == (0.15, 0.01)


@pytest.mark.parametrize(
    "change",
    [
        {"alpha": 1.5},
        {"decay_floor": -0.1},
        {"half_life_episodic_days": 0},
        {"weight_recency": 0.5},  # weights no longer sum to 1
        {"alpha": math.nan},
        {"max_text_chars": 0},
        {"gc_salience": 0.5},
    ],
)
def test_policy_rejects_bad_numbers(change: dict[str, float]) -> None:
    with pytest.raises(InvalidPolicy):
        Policy().replace(**change)


@pytest.mark.parametrize(
    "ns", ["", "a b", "a*", "a:b", "{x}", "x}", "/x", "x/", "a//b", "é", "x" * 129, None, 5]
)
def test_bad_namespaces(ns: object) -> None:
    with pytest.raises(InvalidNamespace):
        validate_namespace(ns)


@pytest.mark.parametrize("ns", ["default", "user/alice", "agent-7", "t.e_s+t=1@x", "x" * 128])
def test_good_namespaces(ns: str) -> None:
    assert validate_namespace(ns) == ns


def test_memory_validation() -> None:
    ok = dict(id="a", namespace="ns", kind="episodic", tier="trace", text="hi", created_at=T0)
    assert Memory(**ok).kind is Kind.EPISODIC  # type: ignore[arg-type]
    with pytest.raises(UnknownKind):
        Memory(**{**ok, "kind": "dream"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Memory(**{**ok, "text": "  "})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Memory(**{**ok, "importance": 1.2})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Memory(**{**ok, "confidence": math.nan})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Fact("alice", " ", "x")


def test_naive_times_are_utc_and_codec_round_trips() -> None:
    m = Memory(
        id="a", namespace="ns", kind=Kind.SEMANTIC, tier=Tier.UNIT, text="alice likes tea",
        created_at=datetime(2025, 1, 1, 12, 0, 0, 123456), fact=Fact("alice", "likes", "tea"),
        key=fact_key(Kind.SEMANTIC, "Alice", "likes"), sources=frozenset({"s1", "s2"}),
        recent_accesses=(T0,), valid_to=T0, metadata={"a": [1, 2], "b": None},
    )
    assert m.created_at.tzinfo is UTC
    assert memory_from_dict(memory_to_dict(m)) == m


def test_fact_key_is_stable_under_case_and_punctuation() -> None:
    assert fact_key(Kind.SEMANTIC, "Alice ", "lives in!") == fact_key(
        Kind.SEMANTIC, "alice", "Lives  in"
    )
    assert fact_key(Kind.SEMANTIC, "a", "b") != fact_key(Kind.PROCEDURAL, "a", "b")


def test_text_heuristics() -> None:
    assert content_hash("I like tea.") == content_hash("  i LIKE   tea ")
    assert content_hash("I like tea") != content_hash("I like coffee")
    assert extract_entities("Hey! Yesterday I met Melanie in Boston.") == {"melanie", "boston"}
    p = Policy()
    assert initial_importance("ok thanks", p) == pytest.approx(0.2)  # 0.5 - 0.3
    assert initial_importance("the weather is mild", p) == pytest.approx(0.5)
    # instruction + entity + date + number: 0.5 + 0.2 + 0.1 + 0.1 + 0.05
    assert initial_importance(
        "Remember: Dr. Patel moved my appointment to 3 May at 10", p
    ) == pytest.approx(0.95)
    # a speaker prefix is not content; an instruction prefix is
    assert initial_importance("user: ok thanks", p) == pytest.approx(0.2)
    assert strip_speaker("Caroline: I went to the group") == "I went to the group"
    assert strip_speaker("Note: buy milk") == "Note: buy milk"
    assert is_correction("Actually, I switched to oat milk")
    assert is_correction("I no longer work at Acme")
    assert not is_correction("I work at Acme")


def test_policy_counts_must_be_whole_numbers() -> None:
    with pytest.raises(InvalidPolicy, match="whole number"):
        Policy(max_hops=1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("switch", "queue"), [("reinforce_async", "reinforce_queue"),
                                               ("index_async", "index_queue")])
def test_write_behind_switches_are_validated(switch: str, queue: str) -> None:
    assert getattr(Policy().background, switch) is True  # written behind the caller by default
    with pytest.raises(InvalidPolicy):
        Policy(**{switch: 1})
    with pytest.raises(InvalidPolicy):
        Policy(**{queue: 0})


def test_policy_groups_take_flat_names_and_whole_groups() -> None:
    from reverie.core.policy import MaintenancePolicy, RetrievalPolicy

    p = Policy(alpha=0.8, cluster_knn=4)
    assert (p.retrieval.alpha, p.maintenance.cluster_knn) == (0.8, 4)
    assert p.retrieval.dense_weight == Policy().retrieval.dense_weight  # the rest keep defaults
    whole = Policy(retrieval=RetrievalPolicy(alpha=0.6), maintenance=MaintenancePolicy())
    assert whole.retrieval.alpha == 0.6
    # a flat name beside its own group changes that group
    assert Policy(retrieval=RetrievalPolicy(alpha=0.6), max_hops=2).retrieval == RetrievalPolicy(
        alpha=0.6, max_hops=2
    )
    assert p.replace(alpha=0.7).retrieval.alpha == 0.7
    assert p.replace(alpha=0.7).maintenance.cluster_knn == 4  # the copy keeps other changes
    assert p.replace(retrieval=RetrievalPolicy()).retrieval.alpha == 0.9
    assert Policy(alpha=0.8) == Policy(retrieval=RetrievalPolicy(alpha=0.8))
    assert p.flat()["alpha"] == 0.8 and len(p.flat()) == sum(
        len(dataclasses.fields(getattr(p, g))) for g in Policy.groups
    )


def test_policy_names_where_a_moved_or_unknown_number_went() -> None:
    with pytest.raises(InvalidPolicy, match="OutboxSettings"):
        Policy(index_outbox=False)
    with pytest.raises(InvalidPolicy, match="alhpa is not a policy number"):
        Policy(alhpa=0.8)
    with pytest.raises(InvalidPolicy, match="retrieval must be a RetrievalPolicy"):
        Policy(retrieval=Policy().decay)  # type: ignore[arg-type]
    with pytest.raises(InvalidPolicy, match="alpha must be within"):
        Policy().replace(alpha=2.0)
