"""Scoring, as pure functions of a memory, a time and the policy.

Every function takes `now` explicitly; nothing reads a clock. The tests check them
against values computed by hand (14 days at a 14-day half-life gives 0.5, ...).
"""

from __future__ import annotations

import math
from datetime import datetime

from .models import Kind, Memory, Tier
from .policy import Policy

SECONDS_PER_DAY = 86_400.0
_LN2 = math.log(2.0)


def days_between(earlier: datetime, later: datetime) -> float:
    """Days from `earlier` to `later`, never negative (a clock skew is not negative decay)."""
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def half_life_days(kind: Kind, policy: Policy) -> float:
    if kind is Kind.EPISODIC:
        return policy.decay.half_life_episodic_days
    if kind is Kind.SEMANTIC:
        return policy.decay.half_life_semantic_days
    if kind is Kind.PROCEDURAL:
        return policy.decay.half_life_procedural_days
    raise KeyError(kind)


def decay_rate(kind: Kind, importance: float, policy: Policy) -> float:
    """lambda per day: ln 2 / half-life, slowed for important and sped for trivial memories."""
    lam = _LN2 / half_life_days(kind, policy)
    if importance > policy.decay.high_importance:
        lam *= policy.decay.high_importance_lambda_factor
    elif importance < policy.decay.low_importance:
        lam *= policy.decay.low_importance_lambda_factor
    return lam


def decay_value(importance: float, kind: Kind, days: float, policy: Policy) -> float:
    """S(t) = S0 * exp(-lambda * t) for a memory that decays."""
    return importance * math.exp(-decay_rate(kind, importance, policy) * max(0.0, days))


def never_decays(memory: Memory) -> bool:
    return memory.tier is Tier.CRYSTAL or memory.pinned


def decay_score(memory: Memory, now: datetime, policy: Policy) -> float:
    """The memory's salience now. Crystals and pinned memories keep their S0."""
    if never_decays(memory):
        return memory.importance
    return decay_value(
        memory.importance, memory.kind, days_between(memory.last_access, now), policy
    )


def accesses_in_window(memory: Memory, now: datetime, policy: Policy) -> int:
    return sum(
        1 for t in memory.recent_accesses
        if t <= now and days_between(t, now) <= policy.importance.frequency_window_days
    )


def importance_blend(
    *, days_since_access: float, accesses: int, degree: int, confidence: float, policy: Policy
) -> float:
    """0.25 recency + 0.20 frequency + 0.35 centrality + 0.20 confidence, each in [0, 1].

    Frequency and degree saturate (10 accesses in 30 days, 10 edges) rather than being
    divided by the namespace size: a memory's importance must not fall because other,
    unrelated memories were added.
    """
    recency = math.exp(-policy.importance.recency_rate_per_day * max(0.0, days_since_access))
    frequency = min(1.0, accesses / policy.importance.frequency_saturation)
    centrality = min(1.0, degree / policy.importance.centrality_saturation)
    return (
        policy.importance.weight_recency * recency
        + policy.importance.weight_frequency * frequency
        + policy.importance.weight_centrality * centrality
        + policy.importance.weight_confidence * confidence
    )


def importance_score(memory: Memory, degree: int, now: datetime, policy: Policy) -> float:
    return importance_blend(
        days_since_access=days_between(memory.last_access, now),
        accesses=accesses_in_window(memory, now, policy),
        degree=degree,
        confidence=memory.confidence,
        policy=policy,
    )


def reinforce(memory: Memory, at: datetime, window: int) -> Memory:
    """Access reinforcement: the decay clock restarts at `at` and the access is counted."""
    return memory.reinforced(at, window)


def next_confidence(confidence: float, policy: Policy) -> float:
    """One more independent source: a fixed step up, never above the cap."""
    funnel = policy.funnel
    return max(confidence, min(funnel.confidence_cap, confidence + funnel.confidence_step))


def qualifies_as_crystal(memory: Memory, policy: Policy) -> bool:
    return (
        (
            len(memory.sources) >= policy.funnel.crystal_min_sources
            and memory.importance >= policy.funnel.crystal_min_importance
        )
        or memory.user_confirmed
        or (
            memory.confidence >= policy.funnel.crystal_confidence
            and memory.importance >= policy.funnel.crystal_importance
        )
    )


def final_score(relevance: float, decay: float, policy: Policy) -> float:
    return policy.retrieval.alpha * relevance + (1.0 - policy.retrieval.alpha) * decay
