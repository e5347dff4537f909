"""The stores' fast decoder must give exactly what the validating decoder gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import InvalidInput, Kind, Memory, Status, Tier
from reverie.core.codec import memory_from_dict, memory_to_dict, stored_memory
from reverie.core.models import Fact

T0 = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
words = st.text(alphabet="abcdefgh xyz", min_size=1, max_size=20).filter(lambda s: s.strip())
times = st.integers(0, 10**9).map(lambda us: T0 + timedelta(microseconds=us))
# naive and non-UTC inputs are normalised to UTC by Memory; the decoder must agree
zones = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), None])


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    zone = draw(zones)
    created = draw(times)
    created = created.replace(tzinfo=None) if zone is None else created.astimezone(zone)
    fact = draw(st.none() | st.builds(Fact, words, words, words))
    return Memory(
        id=draw(words), namespace="ns", kind=draw(st.sampled_from(list(Kind))),
        tier=draw(st.sampled_from(list(Tier))), text=draw(words), created_at=created,
        status=draw(st.sampled_from(list(Status))), fact=fact,
        key=draw(st.none() | words), importance=draw(st.floats(0, 1)),
        confidence=draw(st.floats(0, 1)), sources=frozenset(draw(st.lists(words, max_size=3))),
        last_accessed_at=draw(st.none() | times), access_count=draw(st.integers(0, 99)),
        recent_accesses=tuple(draw(st.lists(times, max_size=3))),
        valid_from=draw(st.none() | times), valid_to=draw(st.none() | times),
        superseded_by=draw(st.none() | words), consolidated_into=draw(st.none() | words),
        derived_from=frozenset(draw(st.lists(words, max_size=2))),
        entities=frozenset(draw(st.lists(words, max_size=2))), pinned=draw(st.booleans()),
        retention_exempt=draw(st.booleans()), user_confirmed=draw(st.booleans()),
        metadata=draw(st.dictionaries(words, st.integers() | words, max_size=2)),
        version=draw(st.integers(1, 50)), updated_at=draw(st.none() | times),
    )


@settings(max_examples=300)
@given(memories())
def test_stored_records_decode_to_the_same_memory_either_way(m: Memory) -> None:
    record = json.loads(json.dumps(memory_to_dict(m)))  # as a store holds it
    fast = stored_memory(record)
    assert fast == memory_from_dict(record) == m
    assert fast.created_at.tzinfo is UTC and fast.last_access.tzinfo is UTC


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.pop("created_at"),
        lambda d: d.update(kind="dream"),
        lambda d: d.update(status="maybe"),
        lambda d: d.update(created_at="yesterday"),
        lambda d: d.update(importance="high"),
        lambda d: d.update(fact=["only", "two"]),
    ],
)
def test_a_damaged_record_is_a_typed_error(damage: object) -> None:
    m = Memory(id="a", namespace="ns", kind=Kind.SEMANTIC, tier=Tier.TRACE, text="tea",
               created_at=T0)
    record = memory_to_dict(m)
    damage(record)  # type: ignore[operator]
    with pytest.raises(InvalidInput):
        stored_memory(record)
