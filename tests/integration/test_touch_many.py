"""SQLiteStore.touch_many: a burst of recalls' touches in one transaction must leave every
record exactly as the same touches one by one would (counts, last access, the window of
recent accesses, versions)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from reverie.core import InvalidInput
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite_store import SQLiteStore
from tests.contract.conftest import T0, make_memory


def test_touch_many_equals_the_same_touches_one_by_one(tmp_path: Path) -> None:
    memories = [make_memory() for _ in range(4)]
    a, b, c, d = (m.id for m in memories)
    events = [
        ([a, b], T0 + timedelta(hours=1)),
        ([a, a, c], T0 + timedelta(hours=2)),  # listed twice: one access
        (["unknown", b], T0 + timedelta(hours=3)),
        ([a], T0 + timedelta(hours=4)),
        ([a], T0 + timedelta(hours=5)),
    ]
    one_by_one, batched = SQLiteStore(tmp_path / "one.db"), SQLiteStore(tmp_path / "many.db")
    for store in (one_by_one, batched):
        store.commit(WriteBatch("ns", puts=memories))
    for ids, at in events:
        one_by_one.touch("ns", ids, at, 3)
    batched.touch_many("ns", events, 3)
    ids = [a, b, c, d]
    assert batched.get_many("ns", ids) == one_by_one.get_many("ns", ids)
    got = batched.get("ns", a)
    assert got is not None and got.access_count == 4 and got.version == 5
    assert got.recent_accesses == tuple(T0 + timedelta(hours=h) for h in (2, 4, 5))
    assert batched.get("ns", d) == memories[3]  # untouched
    one_by_one.close()
    batched.close()


def test_touch_many_writes_nothing_on_bad_input(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    m = make_memory()
    store.commit(WriteBatch("ns", puts=[m]))
    with pytest.raises(InvalidInput):
        store.touch_many("ns", [([m.id], T0)], 0)
    with pytest.raises(InvalidInput):
        store.touch_many("bad namespace!", [([m.id], T0)], 3)
    assert store.get("ns", m.id) == m
    store.touch_many("ns", [], 3)  # nothing to do
    assert store.get("ns", m.id) == m
    store.close()
