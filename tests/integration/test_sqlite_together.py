"""`SQLiteStore.together()`: a burst of writes in one transaction, each still atomic on its
own. What a user relies on: a write that fails inside leaves nothing of itself and takes
nothing of the others with it; reads inside see the writes before them; other connections
see all of the burst or none of it; search ranks as if each had been committed alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.core import ConflictError, Kind, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
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


def test_stored_hashes_names_the_texts_find_by_hash_finds(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        held = make_memory(namespace="ns", text="green tea in Lisbon")
        retired = make_memory(namespace="ns", text="a flat in Alfama", status=Status.SUPERSEDED)
        fact = make_memory(
            namespace="ns", text="user lives in Porto", kind=Kind.SEMANTIC, tier=Tier.UNIT,
            key="semantic|user|lives in",
        )
        elsewhere = make_memory(namespace="other", text="the cat by the sea")
        for m in (held, retired, fact, elsewhere):
            store.commit(WriteBatch(m.namespace, (m,)))
        texts = [held.text, retired.text, fact.text, elsewhere.text, "never said"]
        digests = [content_hash(t.upper()) for t in texts]  # case does not make a text new
        assert store.stored_hashes("ns", digests) == {digests[0]}
        assert {d for d in digests if store.find_by_hash("ns", d) is not None} == {digests[0]}
        assert store.stored_hashes("other", digests) == {digests[3]}
        # more digests than one IN list holds
        many = [content_hash(f"filler {i}") for i in range(2500)] + digests
        assert store.stored_hashes("ns", many) == {digests[0]}
