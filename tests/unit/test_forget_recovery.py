"""Forgetting and recovery paths a user relies on without seeing them.

A memory forgotten while a REM cycle's plan is journaled but not yet committed must leave
the plan (its synthesis text drew on the memory) and must not come back when the cycle
resumes. `repair` removes vectors whose record is gone, and forgetting a synthesis node
restores its members (GC's orphan restore) or archives those a newer memory replaced.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reverie.core.consolidation import PLAN_KEY, fingerprint, synthesis_id
from reverie.core.engine import MemoryEngine
from reverie.core.models import Status
from reverie.core.ports import VectorItem
from tests.unit.test_consolidation import noisy_engine

NS = "default"


class Crash(Exception):
    """A process dying at a chosen step of the cycle."""


def crash_at(step: str) -> Any:
    def hook(at: str) -> None:
        if at == step:
            raise Crash(at)

    return hook


def every_record(engine: MemoryEngine) -> list[Any]:
    return list(engine.store.scan(NS))


def test_forget_during_a_journaled_cycle_keeps_the_memory_out_of_the_resumed_cycle() -> None:
    engine = noisy_engine()
    with pytest.raises(Crash):
        engine.consolidate(kill_hook=crash_at("plan:committing"))
    plan = engine.store.journal_get(NS, PLAN_KEY)
    assert plan is not None and plan["state"] == "committing"
    weather = next(c for c in plan["clusters"] if "paris" in json.dumps(c["payload"]))
    other = next(c for c in plan["clusters"] if c is not weather)
    victim = weather["members"][0]
    victim_text = engine.store.get(NS, victim).text  # type: ignore[union-attr]
    doomed_node = synthesis_id(fingerprint(weather["members"]))

    engine.forget(victim)

    scrubbed = engine.store.journal_get(NS, PLAN_KEY)
    assert scrubbed is not None
    held = json.dumps(dict(scrubbed))
    assert victim not in held, "the forgotten memory is still named in the journaled plan"
    assert [c["fingerprint"] for c in scrubbed["clusters"]] == [other["fingerprint"]]

    report = engine.consolidate()  # resumes the interrupted plan first
    assert report.resumed == 1
    records = every_record(engine)
    assert victim not in {m.id for m in records}
    assert doomed_node not in {m.id for m in records}
    assert all(victim not in m.derived_from for m in records)
    assert all(m.text != victim_text for m in records)
    # The other cluster of the plan was committed as planned.
    kept_node = engine.store.get(NS, synthesis_id(fingerprint(other["members"])))
    assert kept_node is not None and kept_node.status is Status.ACTIVE


def test_gc_restores_members_left_consolidated_into_a_missing_node() -> None:
    """A node gone while its members still point at it (a crash between the delete and the
    restore): GC makes them active again, or archives one whose text a newer active memory
    now holds, so no memory is left consolidated into nothing and none is duplicated."""
    engine = noisy_engine()
    report = engine.consolidate()
    weather = next(c for c in report.clusters if "paris" in c.preview)
    members = sorted(weather.member_ids)
    assert {engine.store.get(NS, m).status for m in members} == {  # type: ignore[union-attr]
        Status.CONSOLIDATED
    }
    duplicated = members[0]
    again = engine.observe(engine.store.get(NS, duplicated).text)  # type: ignore[union-attr]
    assert again.id != duplicated
    engine.store.delete(NS, [weather.synthesis_id])  # the node only: members left orphaned

    gc = engine.gc(NS)
    assert gc.orphans_restored == len(members)
    # The duplicate was archived, not restored, and being old and archived the same pass
    # collected it; the others are active again and point at nothing.
    assert gc.deleted_ids == [duplicated]
    assert engine.store.get(NS, duplicated) is None
    rest = [engine.store.get(NS, m) for m in members[1:]]
    assert all(m is not None and m.consolidated_into is None for m in rest)
    assert {m.status for m in rest if m is not None} == {Status.ACTIVE}
    assert engine.store.get(NS, again.id).status is Status.ACTIVE  # type: ignore[union-attr]
    assert engine.gc(NS).orphans_restored == 0


def test_repair_removes_vectors_whose_record_is_gone() -> None:
    engine = noisy_engine()
    keep = engine.observe("the garden gate squeaks")
    engine.flush()
    vector = engine.embedder.embed(["ghost text"])[0]
    ghosts = [VectorItem(f"ghost-{i}", vector, {}) for i in (1, 2)]
    engine.vectors.upsert(NS, ghosts)
    assert {"ghost-1", "ghost-2"} <= engine.vectors.ids(NS)
    report = engine.repair()
    assert report.removed == 2
    ids = engine.vectors.ids(NS)
    assert "ghost-1" not in ids and "ghost-2" not in ids and keep.id in ids
    assert engine.repair().removed == 0
