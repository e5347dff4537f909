"""Every formula against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import Kind, Memory, Policy, Tier
from reverie.core.scoring import (
    accesses_in_window,
    days_between,
    decay_rate,
    decay_score,
    decay_value,
    final_score,
    half_life_days,
    importance_blend,
    importance_score,
    next_confidence,
    qualifies_as_crystal,
    reinforce,
)
from tests.unit.test_codec import memories

P = Policy()
T0 = datetime(2025, 3, 1, tzinfo=UTC)


def mem(**kw: object) -> Memory:
    base: dict[str, object] = dict(
        id="m1", namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text="x", created_at=T0
    )
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


def test_one_half_life_halves_the_score() -> None:
    # S0 = 0.5 (no multiplier), 14 days at a 14-day half-life: 0.5 * 0.5 = 0.25
    assert decay_value(0.5, Kind.EPISODIC, 14, P) == pytest.approx(0.25)
    assert decay_value(0.5, Kind.SEMANTIC, 90, P) == pytest.approx(0.25)
    assert decay_value(0.5, Kind.PROCEDURAL, 180, P) == pytest.approx(0.25)
    # two half-lives: a quarter
    assert decay_value(0.4, Kind.EPISODIC, 28, P) == pytest.approx(0.1)


def test_importance_multipliers_on_lambda() -> None:
    base = math.log(2) / 14  # 0.049511 per day
    assert decay_rate(Kind.EPISODIC, 0.5, P) == pytest.approx(base)
    assert decay_rate(Kind.EPISODIC, 0.9, P) == pytest.approx(0.3 * base)  # 0.014853
    assert decay_rate(Kind.EPISODIC, 0.2, P) == pytest.approx(2.0 * base)  # 0.099021
    # the thresholds are strict: exactly 0.8 and 0.3 keep the plain rate
    assert decay_rate(Kind.EPISODIC, 0.8, P) == pytest.approx(base)
    assert decay_rate(Kind.EPISODIC, 0.3, P) == pytest.approx(base)
    # importance 0.9 after 14 days: 0.9 * 2^-0.3 = 0.9 * 0.812252 = 0.731027
    assert decay_value(0.9, Kind.EPISODIC, 14, P) == pytest.approx(0.731027, abs=1e-6)
    # importance 0.2 after 14 days: 0.2 * 2^-2 = 0.05, exactly the retrieval floor
    assert decay_value(0.2, Kind.EPISODIC, 14, P) == pytest.approx(0.05)


def test_decay_score_uses_last_access_and_spares_crystals_and_pins() -> None:
    m = mem(importance=0.5, last_accessed_at=T0 + timedelta(days=7))
    # 14 days after creation but only 7 after last access: 0.5 * 2^-0.5 = 0.353553
    assert decay_score(m, T0 + timedelta(days=14), P) == pytest.approx(0.353553, abs=1e-6)
    crystal = mem(importance=0.5, tier=Tier.CRYSTAL)
    pinned = mem(importance=0.5, pinned=True)
    far = T0 + timedelta(days=3650)
    assert decay_score(crystal, far, P) == 0.5
    assert decay_score(pinned, far, P) == 0.5
    # a clock that runs backwards is not negative decay
    assert decay_score(m, T0 - timedelta(days=30), P) == 0.5


def test_access_reinforcement_restarts_the_clock() -> None:
    m = mem(importance=0.5)
    day30 = T0 + timedelta(days=30)
    before = decay_score(m, day30, P)  # 0.5 * 2^(-30/14) = 0.113
    assert before == pytest.approx(0.5 * 2 ** (-30 / 14))
    r = reinforce(m, day30, window=3)
    assert r.access_count == 1 and r.version == 2 and r.last_access == day30
    assert decay_score(r, day30, P) == pytest.approx(0.5)
    # the window keeps only the newest `window` access times
    for d in (31, 32, 33):
        r = reinforce(r, T0 + timedelta(days=d), window=3)
    assert [t.day for t in r.recent_accesses] == [1, 2, 3]  # April 1, 2, 3
    assert r.access_count == 4


def test_importance_blend_by_hand() -> None:
    # fresh, never accessed, no edges, confidence 0.5: 0.25 * 1 + 0.20 * 0.5 = 0.35
    assert importance_blend(
        days_since_access=0, accesses=0, degree=0, confidence=0.5, policy=P
    ) == pytest.approx(0.35)
    # 10 days, 5 accesses (of 10), degree 5 (of 10), confidence 1:
    # 0.25 * e^-0.2 + 0.20 * 0.5 + 0.35 * 0.5 + 0.20 * 1
    # = 0.25 * 0.818731 + 0.1 + 0.175 + 0.2 = 0.679683
    assert importance_blend(
        days_since_access=10, accesses=5, degree=5, confidence=1.0, policy=P
    ) == pytest.approx(0.679683, abs=1e-6)
    # saturation: 50 accesses and 50 edges count like 10 and 10
    assert importance_blend(
        days_since_access=0, accesses=50, degree=50, confidence=1.0, policy=P
    ) == pytest.approx(1.0)


def test_importance_score_counts_accesses_in_the_30_day_window() -> None:
    now = T0 + timedelta(days=60)
    m = mem(
        confidence=0.5,
        last_accessed_at=now - timedelta(days=5),
        recent_accesses=(T0, now - timedelta(days=20), now - timedelta(days=5)),
    )
    assert accesses_in_window(m, now, P) == 2  # the one at T0 is 60 days old
    # 0.25 e^-0.1 + 0.20 * 0.2 + 0.35 * 0.3 + 0.20 * 0.5
    # = 0.226209 + 0.04 + 0.105 + 0.1 = 0.471209
    assert importance_score(m, 3, now, P) == pytest.approx(0.471209, abs=1e-6)


def test_confidence_steps_and_cap() -> None:
    assert next_confidence(0.6, P) == pytest.approx(0.75)
    assert next_confidence(0.75, P) == pytest.approx(0.9)
    assert next_confidence(0.9, P) == pytest.approx(0.95)  # capped
    assert next_confidence(0.95, P) == pytest.approx(0.95)
    assert next_confidence(0.99, P) == pytest.approx(0.99)  # never lowered


def test_crystal_rules() -> None:
    assert qualifies_as_crystal(mem(sources=frozenset("abc")), P)
    assert not qualifies_as_crystal(mem(sources=frozenset("ab")), P)
    assert qualifies_as_crystal(mem(sources=frozenset("abcd")), P)  # "at least", not "exactly"
    assert qualifies_as_crystal(mem(user_confirmed=True), P)
    assert qualifies_as_crystal(mem(confidence=0.9, importance=0.8), P)
    assert not qualifies_as_crystal(mem(confidence=0.9, importance=0.79), P)
    assert not qualifies_as_crystal(mem(confidence=0.89, importance=0.95), P)


def test_final_score_blend() -> None:
    # default alpha 0.9: 0.9 * 0.8 + 0.1 * 0.5 = 0.77; the seed's 0.7: 0.56 + 0.15 = 0.71
    assert final_score(0.8, 0.5, P) == pytest.approx(0.77)
    assert final_score(0.8, 0.5, P.replace(alpha=0.7)) == pytest.approx(0.71)
    assert final_score(0.8, 0.5, P.replace(alpha=1.0)) == pytest.approx(0.8)


@settings(max_examples=200)
@given(memories(), st.integers(0, 10**9), st.integers(1, 6))
def test_the_fast_reinforcement_equals_a_validated_evolve(
    m: Memory, later_us: int, window: int
) -> None:
    """`Memory.reinforced` skips re-validation; it must build exactly what `evolve` builds
    (naive and non-UTC times included)."""
    at = (T0 + timedelta(microseconds=later_us)).astimezone(timezone(timedelta(hours=-3)))
    expected = m.evolve(
        last_accessed_at=max(m.last_access, at),
        access_count=m.access_count + 1,
        recent_accesses=(*m.recent_accesses, at)[-window:],
    )
    got = reinforce(m, at, window)
    assert got == expected
    assert got.last_access.tzinfo is UTC and all(t.tzinfo is UTC for t in got.recent_accesses)
    assert got.metadata == m.metadata and got.metadata is not m.metadata


def test_days_between_keeps_fractions_and_never_goes_negative() -> None:
    t = datetime(2025, 1, 1, tzinfo=UTC)
    assert days_between(t, t + timedelta(hours=12)) == 0.5
    assert days_between(t, t + timedelta(days=2, hours=6)) == 2.25
    assert days_between(t + timedelta(hours=1), t) == 0.0  # clock skew: no negative decay


def test_half_life_per_kind() -> None:
    assert half_life_days(Kind.EPISODIC, P) == P.decay.half_life_episodic_days
    assert half_life_days(Kind.SEMANTIC, P) == P.decay.half_life_semantic_days
    assert half_life_days(Kind.PROCEDURAL, P) == P.decay.half_life_procedural_days
