"""The stores' fast decoder must give exactly what the validating decoder gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import InvalidInput, Kind, Memory, Status, Tier
from reverie.core.codec import (
    DecodedRecords,
    memory_from_dict,
    memory_to_dict,
    stored_memory,
)
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


# --- the decoded-record memo the stores decode through ----------------------------------


def _raw(m: Memory) -> str:
    return json.dumps(memory_to_dict(m), separators=(",", ":"))


def _memory(i: int, **extra: object) -> Memory:
    return Memory(id=f"m{i}", namespace="ns", kind=Kind.EPISODIC, tier=Tier.TRACE,
                  text=f"text {i}", created_at=T0, **extra)  # type: ignore[arg-type]


@settings(max_examples=200)
@given(memories())
def test_the_memo_decodes_what_the_validating_decoder_decodes(m: Memory) -> None:
    memo = DecodedRecords(size=4)
    raw = _raw(m)
    first, again = memo.decode(raw), memo.decode(raw)
    assert first == again == memory_from_dict(json.loads(raw)) == m


def test_a_repeated_record_is_decoded_once_and_a_changed_one_afresh() -> None:
    memo = DecodedRecords(size=10)
    m = _memory(1)
    raw = _raw(m)
    assert memo.decode(raw) is memo.decode(raw)  # the second read decoded nothing
    touched = m.evolve(access_count=1, version=2)
    fresh = memo.decode(_raw(touched))
    assert fresh.access_count == 1 and fresh.version == 2  # never the stale decode
    assert memo.decode(raw).access_count == 0  # each text still decodes to itself


def test_the_memo_holds_at_most_its_size_and_drops_the_oldest_first() -> None:
    memo = DecodedRecords(size=3)
    raws = [_raw(_memory(i)) for i in range(5)]
    kept = [memo.decode(r) for r in raws]
    assert len(memo) == 3
    assert memo.decode(raws[4]) is kept[4] and memo.decode(raws[2]) is kept[2]
    assert memo.decode(raws[0]) is not kept[0]  # dropped, decoded again
    assert memo.decode(raws[0]) == kept[0]


def test_a_record_with_metadata_is_decoded_for_each_caller() -> None:
    """Metadata is the one mutable part of a Memory: a caller that edits the mapping it got
    must not change what the next reader sees."""
    memo = DecodedRecords(size=10)
    raw = _raw(_memory(1, metadata={"user": {"name": "Ada"}}))
    got = memo.decode(raw)
    got.metadata["user"]["name"] = "Bob"  # type: ignore[index]
    assert memo.decode(raw).metadata == {"user": {"name": "Ada"}}
    assert len(memo) == 0


def test_remember_serves_a_record_the_store_just_wrote() -> None:
    memo = DecodedRecords(size=10)
    m = _memory(1)
    memo.remember(_raw(m), m)
    assert memo.decode(_raw(m)) is m
    memo.remember(_raw(_memory(2, metadata={"k": 1})), _memory(2, metadata={"k": 1}))
    assert len(memo) == 1  # metadata: not kept


def test_size_zero_turns_the_memo_off_and_bad_sizes_are_refused() -> None:
    memo = DecodedRecords(size=0)
    raw = _raw(_memory(1))
    assert memo.decode(raw) is not memo.decode(raw) and len(memo) == 0
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(InvalidInput):
            DecodedRecords(size=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", ["{not json", b"\xff\xfe", json.dumps({"id": "x"})])
def test_an_undecodable_record_is_a_typed_error_and_is_not_kept(raw: str | bytes) -> None:
    memo = DecodedRecords(size=10)
    with pytest.raises(InvalidInput):
        memo.decode(raw)
    assert len(memo) == 0
