"""Redis search through each worker's BM25 mirror: exact (equal to the Lua script beside
the postings) while other workers write, after the log is trimmed, after the namespace is
re-created, and for a namespace written before the log existed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from reverie.core import Status
from reverie.core.ports import WriteBatch
from reverie.integrations.redis import reads
from reverie.integrations.redis.store import RedisStore
from tests.contract.conftest import make_memory
from tests.integration.test_redis_lexical import QUERIES, demo_texts
from tests.servers import RedisCluster


@pytest.fixture(params=["redis", "redis-cluster"])
def workers(request: pytest.FixtureRequest) -> Iterator[tuple[RedisStore, RedisStore]]:
    """Two stores on one server under one prefix: two workers, each with its mirrors."""
    if request.param == "redis":
        url = str(request.getfixturevalue("redis_url"))
    else:
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        url = cluster.url
    prefix = f"t{uuid.uuid4().hex[:12]}"
    reader = RedisStore.from_url(url, prefix=prefix)
    writer = RedisStore.from_url(url, prefix=prefix)
    try:
        yield reader, writer
    finally:
        for ns in writer.namespaces():
            writer.delete_namespace(ns)
        reader.close()
        writer.close()


def lua(store: RedisStore, ns: str, query: str, k: int) -> list[tuple[str, float]]:
    """The reference: the Lua script scoring the postings on the server."""
    return [(h.id, h.score) for h in store._run(reads.search(store._keys(ns), query, k))]


def script_calls(store: RedisStore) -> int:
    """EVALSHA calls the server has carried out (every node's, on a cluster); a call
    refused with NOSCRIPT (then loaded and called again) is not one."""
    client = store.client
    if hasattr(client, "get_nodes"):  # a cluster: every primary's own counts
        nodes = [client.get_redis_connection(n).info("commandstats")
                 for n in client.get_primaries()]
    else:
        nodes = [client.info("commandstats")]
    calls = [n.get("cmdstat_evalsha", {}) for n in nodes]
    return sum(int(c.get("calls", 0)) - int(c.get("failed_calls", 0)) for c in calls)


def check(store: RedisStore, ns: str, k: int = 8) -> int:
    compared = 0
    for q in QUERIES:
        got = [(h.id, h.score) for h in store.search(ns, q, k)]
        want = lua(store, ns, q, k)
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12), q
        compared += len(want)
    return compared


def corpus(ns: str) -> list[Any]:
    return [make_memory(namespace=ns, text=t) for t in demo_texts()]


def test_a_worker_sees_another_workers_writes_exactly(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    reader, writer = workers
    ms = corpus("ns")
    writer.commit(WriteBatch("ns", tuple(ms)))
    assert reader.warm_lexical("ns", timeout=30)
    assert "ns" in reader._mirrors._mirrors  # served by the mirror, not the script
    assert check(reader, "ns") > 30  # the queries match things
    writer.commit(WriteBatch("ns", (
        ms[0].evolve(text="Maya now drinks black coffee in Porto"),
        ms[1].evolve(status=Status.SUPERSEDED),
        make_memory(namespace="ns", text="Caroline went to the LGBTQ support group again"),
    )))
    writer.delete("ns", [ms[2].id])
    check(reader, "ns")  # replayed from the log
    assert ms[1].id not in {h.id for h in reader.search("ns", ms[1].text, 50)}
    assert ms[2].id not in {h.id for h in reader.search("ns", ms[2].text, 50)}


def test_a_trimmed_log_or_a_recreated_namespace_rebuilds_the_mirror(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    reader, writer = workers
    ms = corpus("ns")
    writer.commit(WriteBatch("ns", tuple(ms)))
    assert reader.warm_lexical("ns", timeout=30)
    check(reader, "ns")
    filled = reader._mirrors._mirrors["ns"]
    extra = make_memory(namespace="ns", text="Melanie ran a charity race")
    writer.commit(WriteBatch("ns", (extra,)))
    # the reader's position is gone from the log
    writer._client.xtrim(writer._keys("ns").lexlog, maxlen=1, approximate=False)
    check(reader, "ns")  # the script scores while the mirror is filled again
    assert reader.warm_lexical("ns", timeout=30)
    assert reader._mirrors._mirrors["ns"] is not filled
    check(reader, "ns")
    writer.delete_namespace("ns")
    assert reader.search("ns", "Melanie painted a sunrise", 5) == []
    assert "ns" not in reader._mirrors._mirrors  # the deleted terms left this worker too
    writer.commit(WriteBatch("ns", (make_memory(namespace="ns", text="only jazz now"),)))
    assert [h.id for h in reader.search("ns", "Melanie jazz", 5)] == [
        h.id for h in writer.search("ns", "Melanie jazz", 5)
    ]
    assert len(reader.search("ns", "Melanie jazz sunrise", 50)) == 1


def test_a_namespace_without_a_log_is_scored_by_the_script(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    reader, writer = workers
    writer.commit(WriteBatch("ns", tuple(corpus("ns"))))
    writer._client.delete(writer._keys("ns").lexlog)  # as a reverie before the log wrote it
    assert check(reader, "ns") > 30
    assert "ns" not in reader._mirrors._mirrors
    writer.commit(WriteBatch("ns", (make_memory(namespace="ns", text="Melanie paints"),)))
    assert reader.warm_lexical("ns", timeout=30)  # the first write started a log
    assert "ns" in reader._mirrors._mirrors
    check(reader, "ns")


def test_delete_drops_the_text_from_this_workers_mirror_at_once(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    store, _ = workers
    ms = corpus("ns")
    store.commit(WriteBatch("ns", tuple(ms)))
    assert store.warm_lexical("ns", timeout=30)
    mirror = store._mirrors._mirrors["ns"]
    before = len(mirror)
    store.delete("ns", [ms[0].id])
    assert len(mirror) == before - 1
    store.delete_namespace("ns")
    assert "ns" not in store._mirrors._mirrors


def test_a_new_workers_first_search_does_not_wait_for_its_mirror(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    """A restarted worker answers at once (the script scores the postings on the server)
    while its mirror is filled beside it; the scores are the same either way."""
    reader, writer = workers
    writer.commit(WriteBatch("ns", tuple(corpus("ns"))))
    scripts_before = script_calls(reader)
    first = [(h.id, h.score) for h in reader.search("ns", "Melanie painted a sunrise", 8)]
    assert script_calls(reader) == scripts_before + 1  # scored on the server, not filled first
    assert first == lua(reader, "ns", "Melanie painted a sunrise", 8)
    assert reader._mirrors.wait("ns", timeout=30)  # the search started the fill
    assert "ns" in reader._mirrors._mirrors
    assert [(h.id, h.score) for h in reader.search("ns", "Melanie painted a sunrise", 8)] == (
        pytest.approx(first))
    check(reader, "ns")


def test_a_closed_store_installs_no_mirror_from_a_fill_still_running(
    workers: tuple[RedisStore, RedisStore], caplog: pytest.LogCaptureFixture,
) -> None:
    reader, writer = workers
    writer.commit(WriteBatch("ns", tuple(corpus("ns"))))
    reader.search("ns", "Melanie", 5)  # starts the fill
    reader.close()
    reader._mirrors.wait("ns", timeout=30)
    assert reader._mirrors._mirrors == {}
    assert not [r for r in caplog.records if "BM25 mirror" in r.getMessage()]
