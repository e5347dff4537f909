"""Recall reads `created_at` out of raw Redis records without parsing the JSON; it must
agree with a full parse for any record, whatever its text or metadata hold."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import Kind, Memory, StoreCorrupt, Tier
from reverie.core.codec import memory_to_dict
from reverie.integrations.redis.plan import dumps, load_created_at

T0 = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
TRAP = '"created_at":"1999-01-01T00:00:00+00:00"'
texts = st.one_of(
    st.text(min_size=1).filter(str.strip), st.just(TRAP), st.just(f"x {TRAP} y \\ \"")
)


@settings(max_examples=300)
@given(texts, st.integers(0, 10**12), st.dictionaries(st.sampled_from(["created_at", TRAP, "a"]),
                                                      st.text(), max_size=2))
def test_the_fast_read_equals_the_full_parse(text: str, us: int, meta: dict[str, str]) -> None:
    m = Memory(id="a", namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
               created_at=T0 + timedelta(microseconds=us), sources=frozenset({TRAP}),
               metadata=meta)
    raw = dumps(memory_to_dict(m), "memory")
    assert load_created_at(raw, "k") == m.created_at
    assert load_created_at(raw.encode(), "k") == datetime.fromisoformat(
        json.loads(raw)["created_at"]
    )


def test_a_damaged_record_is_store_corrupt() -> None:
    for raw in ('{"created_at":"yesterday"}', "not json", '{"text":"x"}'):
        with pytest.raises(StoreCorrupt):
            load_created_at(raw, "k")
