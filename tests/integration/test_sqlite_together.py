"""`SQLiteStore.together()`: a burst of writes in one transaction, each still atomic on its
own. What a user relies on: a write that fails inside leaves nothing of itself and takes
nothing of the others with it; reads inside see the writes before them; other connections
see all of the burst or none of it; search ranks as if each had been committed alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.core import ConflictError
from reverie.core.ports import WriteBatch
from reverie.integrations.sqlite.store import SQLiteStore
from tests.contract.conftest import make_memory


def test_a_burst_commits_once_and_a_failed_write_rolls_back_alone(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store, SQLiteStore(path) as other:
        a = make_memory(namespace="ns", text="green tea in Lisbon")
        b = make_memory(namespace="ns", text="the cat by the sea")
        with store.together():
            store.commit(WriteBatch("ns", (a,)))
            assert store.get("ns", a.id) == a  # this connection reads its own burst
            assert [h.id for h in store.search("ns", "tea", 5)] == [a.id]
            with pytest.raises(ConflictError):  # a second active copy of a's text
                store.commit(WriteBatch("ns", (
                    make_memory(namespace="ns", text="tea by the sea"),
                    make_memory(namespace="ns", text="green tea in Lisbon"),
                )))
            store.commit(WriteBatch("ns", (b,)))
        assert other.count("ns")["total"] == 2
        assert [h.id for h in other.search("ns", "sea", 5)] == [b.id]  # not the refused one
        assert [h.id for h in other.search("ns", "tea", 5)] == [a.id]


def test_when_the_body_raises_the_completed_writes_stay(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        a = make_memory(namespace="ns", text="jazz night")
        with pytest.raises(RuntimeError), store.together():
            store.commit(WriteBatch("ns", (a,)))
            raise RuntimeError("the caller failed half-way")
    with SQLiteStore(path) as store:
        assert store.get("ns", a.id) == a
        assert [h.id for h in store.search("ns", "jazz", 5)] == [a.id]


def test_one_burst_and_single_writes_search_alike(tmp_path: Path) -> None:
    texts = [f"note {i} about {'tea' if i % 3 else 'cat'} and {'sea' if i % 5 else 'hill'}"
             for i in range(400)]
    with SQLiteStore(tmp_path / "one.db") as one, SQLiteStore(tmp_path / "many.db") as many:
        ms = [make_memory(namespace="ns", text=t) for t in texts]
        with one.together():
            for m in ms:
                one.commit(WriteBatch("ns", (m,)))
            one.commit(WriteBatch("ns", (ms[7].evolve(text="now about coffee"),)))
        for m in ms:
            many.commit(WriteBatch("ns", (m,)))
        many.commit(WriteBatch("ns", (ms[7].evolve(text="now about coffee"),)))
        for q in ("tea", "cat sea", "hill", "coffee", "note 7"):
            assert one.search("ns", q, 20) == many.search("ns", q, 20), q
