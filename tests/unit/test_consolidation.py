"""The REM cycle on the in-memory fakes: edge inheritance with a known answer, the
journaled commit (idempotent, convergent after an interruption at every step), a second
run that changes nothing, a dry run that writes nothing, LLM failures that lose nothing,
the bounded concurrent pool, and the triggers."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pytest

from reverie.core import ManualClock, Policy
from reverie.core.consolidation import (
    PLAN_KEY,
    ClusterStale,
    Trigger,
    commit_group,
    due_triggers,
    fingerprint,
    inherited_edges,
    synthesis_id,
    synthesize_group,
)
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput, LockBusy, SynthesisFailed
from reverie.core.models import Edge, EdgeType, Kind, Memory, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.core.synthesis import ExtractiveSynthesizer, SynthesisPayload
from reverie.core.text import normalize_text
from tests.fakes import InMemoryStore
from tests.unit.conftest import T0, make_engine

NS = "ns"
E = EdgeType


def mem(i: str, text: str, importance: float = 0.2, **kw: Any) -> Memory:
    return Memory(
        id=i, namespace=NS, kind=Kind.EPISODIC, tier=Tier.TRACE, text=text,
        created_at=T0, importance=importance, sources=frozenset({f"src-{i}"}), **kw,
    )


def graph_store() -> InMemoryStore:
    """Members a, b, c; outside x, y.  a->x (0.4) and b->x (0.9) collapse into one edge
    that keeps 0.9; y->c keeps its direction; a->b is inside; x->y is untouched."""
    store = InMemoryStore()
    ms = (
        mem("a", "alpha went to the market", 0.1),
        mem("b", "alpha bought apples", 0.25),
        mem("c", "alpha ate the apples", 0.2),
        mem("x", "xavier sells apples", 0.6),
        mem("y", "yara grows apples", 0.6),
    )
    edges = (
        Edge("a", "x", E.ENTITY, 0.4),
        Edge("b", "x", E.ENTITY, 0.9),
        Edge("y", "c", E.CAUSAL, 0.5),
        Edge("a", "b", E.TEMPORAL, 1.0),
        Edge("x", "y", E.ENTITY, 0.7),
    )
    store.commit(WriteBatch(NS, ms, edges))
    return store


def edge_set(store: InMemoryStore) -> set[tuple[str, str, str, float]]:
    edges = store.edges(NS, ["a", "b", "c", "x", "y"])
    return {(e.src, e.dst, e.type.value, e.weight) for e in edges}


def payload(
    text: str = "alpha went to market, bought apples, ate them", imp: float = 0.3
) -> SynthesisPayload:
    return SynthesisPayload(text, ("alpha",), ("bought -> ate",), ("2025-03-01",), imp)


SID = synthesis_id(fingerprint(["a", "b", "c"]))


def expected_edges() -> set[tuple[str, str, str, float]]:
    return {
        (SID, "x", "entity", 0.9),  # a->x 0.4 and b->x 0.9: one edge, the highest weight
        ("y", SID, "causal", 0.5),  # direction kept
        ("a", "b", "temporal", 1.0),  # inside the cluster: stays
        ("x", "y", "entity", 0.7),  # not the cluster's business
        (SID, "a", "derived_from", 1.0),
        (SID, "b", "derived_from", 1.0),
        (SID, "c", "derived_from", 1.0),
    }


def test_inherited_edges_pure_known_answer() -> None:
    edges = [
        Edge("a", "x", E.ENTITY, 0.4), Edge("b", "x", E.ENTITY, 0.9),
        Edge("y", "c", E.CAUSAL, 0.5), Edge("a", "b", E.TEMPORAL, 1.0),
        Edge("a", "old", E.DERIVED_FROM, 1.0),  # a is itself a synthesis: provenance stays
    ]
    moved, removed = inherited_edges(edges, ["a", "b", "c"], "S")
    assert moved == [Edge("S", "x", E.ENTITY, 0.9), Edge("y", "S", E.CAUSAL, 0.5)]
    assert removed == [("a", "x", E.ENTITY), ("b", "x", E.ENTITY), ("y", "c", E.CAUSAL)]


def test_commit_group_moves_edges_and_retires_members() -> None:
    store = graph_store()
    members = list(store.get_many(NS, ["a", "b", "c"]).values())
    now = T0 + timedelta(days=40)
    node = commit_group(store, NS, members, payload(imp=0.3), now, Policy())
    assert node.id == SID and node.tier is Tier.SYNTHESIS and node.is_active
    assert node.derived_from == {"a", "b", "c"}
    assert node.sources == {"src-a", "src-b", "src-c"}  # union: recall reports every turn
    assert node.importance == 0.3  # the synthesis rated itself above the best member (0.25)
    assert node.created_at == now and node.last_access == now  # a fresh clock
    assert edge_set(store) == expected_edges()
    for i in "abc":
        m = store.get(NS, i)
        assert m is not None and m.status is Status.CONSOLIDATED and m.consolidated_into == SID
        assert m.text == members["abc".index(i)].text  # soft: nothing hard-deleted
    assert store.journal_get(NS, fingerprint("abc"))["state"] == "done"  # type: ignore[index]


def test_highest_member_importance_wins_over_a_lower_llm_rating() -> None:
    store = graph_store()
    members = list(store.get_many(NS, ["a", "b", "c"]).values())
    node = commit_group(store, NS, members, payload(imp=0.05), T0, Policy())
    assert node.importance == 0.25


def snapshot(store: InMemoryStore) -> tuple[Any, ...]:
    return (
        copy.deepcopy(store._mem), dict(store._edges), copy.deepcopy(store._journal),
        dict(store._locks),
    )


class Crash(Exception):
    pass


def crash_at(n: int) -> Callable[[str], None]:
    """A kill hook that raises at the n-th step (a simulated crash; the subprocess test
    in tests/integration does it with SIGKILL on a real SQLite file)."""
    seen = 0

    def hook(step: str) -> None:
        nonlocal seen
        seen += 1
        if seen == n:
            raise Crash(step)

    return hook


def test_interrupted_at_every_step_a_rerun_converges_to_the_same_state() -> None:
    reference = graph_store()
    members = list(reference.get_many(NS, ["a", "b", "c"]).values())
    steps: list[str] = []
    commit_group(reference, NS, members, payload(), T0, Policy(), steps.append)
    assert len(steps) >= 6
    want = snapshot(reference)
    for i in range(len(steps)):
        store = graph_store()
        with pytest.raises(Crash):
            commit_group(store, NS, members, payload(), T0, Policy(), crash_at(i + 1))
        commit_group(store, NS, members, payload(), T0, Policy())
        assert snapshot(store)[:3] == want[:3], f"diverged after a crash at step {steps[i]}"


def test_commit_group_twice_changes_nothing() -> None:
    store = graph_store()
    members = list(store.get_many(NS, ["a", "b", "c"]).values())
    commit_group(store, NS, members, payload(), T0, Policy())
    before = snapshot(store)
    again = commit_group(store, NS, members, payload("something else"), T0, Policy())
    assert again.text == payload().synthesis
    assert snapshot(store) == before


def test_a_member_that_changed_meanwhile_skips_the_cluster_untouched() -> None:
    store = graph_store()
    members = list(store.get_many(NS, ["a", "b", "c"]).values())
    store.delete(NS, ["c"])
    before = snapshot(store)
    with pytest.raises(ClusterStale, match="c"):
        commit_group(store, NS, members, payload(), T0, Policy())
    assert snapshot(store)[:2] == before[:2]  # no memory or edge written
    with pytest.raises(InvalidInput):
        commit_group(store, NS, members[:1], payload(), T0, Policy())


# ----------------------------------------------------------------------------- the engine


def noisy_engine(policy: Policy | None = None) -> MemoryEngine:
    """Two topics of near-identical low-value traces, and an unrelated important one,
    aged four months so the weak ones fall below tau."""
    engine = make_engine(policy)
    for i in range(4):
        engine.observe(f"ok the weather in paris was rainy again {i}", at=T0, source=f"w{i}")
        engine.observe(f"ok lunch was a cheese sandwich again {i}", at=T0, source=f"l{i}")
    engine.observe("Remember: my passport number is X123", at=T0, source="p", pinned=True)
    assert isinstance(engine.clock, ManualClock)
    engine.clock.advance(days=120)
    return engine


def state(engine: MemoryEngine) -> tuple[Any, ...]:
    store = engine.store
    assert isinstance(store, InMemoryStore)
    return snapshot(store)


def test_cycle_consolidates_topics_and_recall_reports_every_source() -> None:
    engine = noisy_engine()
    report = engine.consolidate()
    assert report.flagged == 8 and len(report.clusters) == 2 and not report.fallbacks
    assert report.nodes_before == 9 and report.nodes_after == 3
    assert report.compression_ratio == 3.0
    assert report.consolidated == 8
    weather = next(c for c in report.clusters if "paris" in c.preview)
    node = engine.get(weather.synthesis_id)
    assert node.sources == {"w0", "w1", "w2", "w3"}
    hits = engine.recall("weather in paris rainy", k=1)
    assert hits[0].id == weather.synthesis_id
    assert hits[0].sources == {"w0", "w1", "w2", "w3"}
    assert engine.store.journal_get("default", PLAN_KEY)["state"] == "done"  # type: ignore[index]
    assert engine.vectors.ids("default") >= {c.synthesis_id for c in report.clusters}


def test_a_finished_cycle_leaves_only_its_closed_plan_in_the_journal() -> None:
    # the journal would otherwise grow by an entry per cluster, and keep every synthesis
    # text of the last cycle, for as long as the store lives
    engine = noisy_engine()
    report = engine.consolidate()
    assert len(report.committed) == 2
    for c in report.clusters:
        assert engine.store.journal_get("default", c.fingerprint) is None
    plan = engine.store.journal_get("default", PLAN_KEY)
    assert plan is not None and plan["state"] == "done" and plan["clusters"] == []
    assert not any(c.preview in str(plan) for c in report.clusters)


def test_a_crash_after_the_entries_are_cleared_converges_on_rerun() -> None:
    steps: list[str] = []
    noisy_engine().consolidate(kill_hook=steps.append)
    engine = noisy_engine()
    with pytest.raises(Crash, match="journal:cleared"):
        engine.consolidate(kill_hook=crash_at(steps.index("journal:cleared") + 1))
    pending = engine.store.journal_get("default", PLAN_KEY)
    assert pending is not None and pending["state"] == "indexing"
    committed = state(engine)
    rerun = engine.consolidate()
    # the rerun finds every cluster committed and without an entry, and changes nothing
    assert rerun.resumed == 2 and rerun.clusters == []
    assert state(engine)[:2] == committed[:2]
    assert engine.store.journal_get("default", PLAN_KEY)["clusters"] == []  # type: ignore[index]


def test_a_second_run_converges() -> None:
    engine = noisy_engine()
    first = engine.consolidate()
    after_first = state(engine)
    second = engine.consolidate()
    assert len(first.clusters) == 2
    assert second.clusters == [] and second.resumed == 0
    assert state(engine)[:2] == after_first[:2]


def test_dry_run_writes_nothing_and_previews_the_clusters() -> None:
    engine = noisy_engine()
    engine.flush()  # observe writes vectors behind the caller; this test reads the index itself
    before = state(engine)
    vectors_before = engine.vectors.ids("default")
    report = engine.consolidate(dry_run=True)
    assert state(engine) == before
    assert engine.vectors.ids("default") == vectors_before
    assert len(report.clusters) == 2 and not any(c.committed for c in report.clusters)
    assert all(c.preview.startswith("Consolidated from 4 memories") for c in report.clusters)
    assert report.nodes_after == report.nodes_before == 9


def test_the_cycle_holds_the_namespace_lock() -> None:
    engine = noisy_engine()
    with engine.store.lock("default"), pytest.raises(LockBusy):
        engine.consolidate()
    assert engine.consolidate().clusters  # released: the next cycle runs


# ----------------------------------------------------------------------------- LLM failures


class Scripted:
    """A Synthesizer test double that answers from a script, recording every prompt."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._lock:
            self.prompts.append(prompt)
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[return-value]


GOOD = {
    "synthesis": "It rained in Paris on many days.",
    "key_entities": ["Paris"],
    "causal_chains": [],
    "temporal_anchors": [],
    "importance": 0.2,
}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("the weather was bad lol", "must be a JSON object"),  # garbage
        (SynthesisFailed("not JSON: Unterminated string at char 41"), "Unterminated string"),
        (TimeoutError("read timed out after 30 s"), "TimeoutError: read timed out"),
        ({"synthesis": "x"}, "missing key(s)"),
    ],
)
def test_unusable_llm_answers_fall_back_and_lose_nothing(answer: object, said: str) -> None:
    engine = noisy_engine()
    originals = {m.id: m for m in engine.memories()}
    llm = Scripted(answer)
    report = engine.consolidate(synthesizer=llm)
    assert len(report.clusters) == 2 and len(report.fallbacks) == 2
    assert len(llm.prompts) == 2 * 3  # first try + synthesis_retries (2) per cluster
    for c in report.fallbacks:
        assert c.synthesizer == "extractive" and c.attempts == 3
        assert c.reason is not None and said in c.reason
        node = engine.get(c.synthesis_id)
        for mid in c.member_ids:  # every member intact, its words inside the node
            m = engine.get(mid)
            assert m.text == originals[mid].text and m.sources == originals[mid].sources
            assert normalize_text(m.text) in normalize_text(node.text)
        assert node.sources == frozenset().union(*(originals[i].sources for i in c.member_ids))


def test_retry_shows_the_model_its_error_and_then_succeeds() -> None:
    engine = make_engine()
    members = [engine.observe(f"it rained in paris on day {i}") for i in range(3)]
    llm = Scripted({**GOOD, "importance": 7}, GOOD)
    result = synthesize_group(members, llm, engine.policy)
    assert not result.fell_back and result.attempts == 2
    assert result.payload.synthesis == GOOD["synthesis"]
    assert "rejected: 'importance' must be a number from 0 to 1, got 7" in llm.prompts[1]
    assert "rejected" not in llm.prompts[0]


def test_no_synthesizer_means_extractive_without_any_call() -> None:
    engine = make_engine()
    members = [engine.observe(f"it rained in paris on day {i}") for i in range(2)]
    for synth in (None, ExtractiveSynthesizer()):
        result = synthesize_group(members, synth, engine.policy)
        assert result.synthesizer == "extractive" and result.attempts == 0
        assert not result.fell_back


def test_clusters_are_synthesized_concurrently_within_the_bound() -> None:
    """8 clusters, 4 workers: the double blocks until 4 calls are in flight together,
    which a serial loop could never reach (it would fall back after the barrier's timeout)."""
    engine = make_engine(Policy(synthesis_max_workers=4))
    topics = ["paris rain", "lunch sandwich", "train delay", "cat vet", "gym leg day",
              "piano lesson", "tax form", "garden tomato"]
    for t in topics:
        for i in range(2):
            engine.observe(f"ok {t} note {t} again {i}", at=T0)
    assert isinstance(engine.clock, ManualClock)
    engine.clock.advance(days=120)
    barrier = threading.Barrier(4, timeout=20)
    active = 0
    peak = 0
    lock = threading.Lock()

    class Blocking:
        def synthesize(self, prompt: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
            nonlocal active, peak
            with lock:
                active += 1
                peak = max(peak, active)
            try:
                barrier.wait()
            finally:
                with lock:
                    active -= 1
            fragment = prompt.rsplit("Fragments (oldest first):\n", 1)[1].split("\n")[0]
            return {**GOOD, "synthesis": f"summary of {fragment}"}

    report = engine.consolidate(synthesizer=Blocking())
    assert len(report.clusters) == 8
    assert not report.fallbacks
    assert peak == 4


# ----------------------------------------------------------------------------- triggers


def test_due_triggers_hand_computed() -> None:
    p = Policy(trigger_node_count=10, trigger_retrieval_window=4)
    quiet = due_triggers(
        p, active_nodes=10, recent_importance=[0.1, 0.1, 0.1], idle_hours=23.9,
        superseded=8, facts=92, largest_near_duplicate_group=6,
    )
    assert quiet == []  # each exactly at (or short of) its threshold
    fired = due_triggers(
        p, active_nodes=11, recent_importance=[0.9, 0.4, 0.4, 0.4, 0.4], idle_hours=24.0,
        superseded=9, facts=91, largest_near_duplicate_group=7,
    )
    assert [t.name for t in fired] == [
        "node_count", "weak_retrievals", "idle", "contradictions", "near_duplicates",
    ]
    by = {t.name: t for t in fired}
    assert by["weak_retrievals"].value == pytest.approx(0.4)  # the last 4 only
    assert by["contradictions"].value == pytest.approx(0.09)
    assert by["contradictions"] == Trigger(
        "contradictions", 0.09, 0.08, "9 of 100 facts were superseded (9.0%), above 8%"
    )


def test_engine_maintenance_due_reads_the_store() -> None:
    engine = make_engine(Policy(trigger_node_count=5, trigger_retrieval_window=3))
    assert isinstance(engine.clock, ManualClock)
    for i in range(8):
        engine.observe(f"ok coffee with milk and sugar in the morning {i}", at=T0)
    names = {t.name for t in engine.maintenance_due()}
    assert names == {"node_count", "near_duplicates"}  # 8 > 5; 7 neighbours > 6
    engine.remember("ana", "lives in", "Porto")
    engine.remember("ana", "lives in", "Lisbon")  # 1 superseded of 2 facts
    engine.clock.advance(hours=25)
    names = {t.name for t in engine.maintenance_due()}
    assert {"contradictions", "idle"} <= names
    for _ in range(3):
        engine.recall("coffee with milk", k=1)
    weak = [t for t in engine.maintenance_due() if t.name == "weak_retrievals"]
    assert weak and weak[0].value < 0.45 and "last 3 retrieved" in weak[0].reason


def test_near_duplicates_count_active_memories_only() -> None:
    """The vector index keeps no status: retired memories still have vectors there, and
    the trigger must not count them as repeats (the records decide)."""
    engine = make_engine(Policy(trigger_node_count=1000, trigger_retrieval_window=3))
    ns = engine.default_namespace
    olds = [engine.observe(f"ok coffee with milk and sugar in the morning {i}", at=T0)
            for i in range(8)]

    def due() -> set[str]:
        return {t.name for t in engine.maintenance_due()}

    assert "near_duplicates" in due()  # 7 active neighbours each, above 6
    keep, *rest = olds
    engine.store.commit(WriteBatch(ns, tuple(
        engine.get(m.id).evolve(status=Status.CONSOLIDATED, consolidated_into=keep.id)
        for m in rest
    )))
    assert len(engine.vectors.ids(ns)) == 8  # their vectors stay indexed
    assert "near_duplicates" not in due()  # but only `keep` is active


def test_facts_are_not_flagged_so_supersession_keeps_working() -> None:
    engine = noisy_engine()
    engine.clock.set(T0)  # type: ignore[attr-defined]
    for i in range(3):
        engine.remember(f"thing{i}", "colour is", "blue", source=f"s{i}")
    engine.clock.advance(days=120)  # type: ignore[attr-defined]
    report = engine.consolidate()
    keyed = [m for m in engine.memories() if m.key is not None]
    assert len(keyed) == 3 and all(m.is_active for m in keyed)
    assert report.flagged == 8  # the chatter only


def test_async_twin_runs_the_same_cycle() -> None:
    import asyncio

    engine = noisy_engine()
    report = asyncio.run(engine.aconsolidate(dry_run=True))
    assert len(report.clusters) == 2 and report.dry_run
