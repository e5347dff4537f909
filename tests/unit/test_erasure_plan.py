"""What a forget must reach, read straight from the store (core/erasure.py): the plan
covers every version of a fact even when no link joins them, the syntheses above come
members first and a damaged (cyclic) derivation still gives an order, and a collected
member is found by its exact text hash only."""

from __future__ import annotations

from typing import Any

from reverie.core.erasure import PROVENANCE_KEY, Derivation, bottom_up, holders, plan_erasure
from reverie.core.models import Kind, Memory, Status, Tier
from reverie.core.ports import WriteBatch
from reverie.core.text import content_hash
from tests.fakes import InMemoryStore
from tests.unit.conftest import T0

NS = "default"


def _memory(mid: str, text: str, **changes: Any) -> Memory:
    fields: dict[str, Any] = {
        "id": mid,
        "namespace": NS,
        "kind": Kind.SEMANTIC,
        "tier": Tier.TRACE,
        "text": text,
        "created_at": T0,
    }
    fields.update(changes)
    return Memory(**fields)


def _store(*memories: Memory) -> InMemoryStore:
    store = InMemoryStore()
    store.commit(WriteBatch(NS, memories))
    return store


def test_every_unit_of_a_fact_key_is_erased_even_without_a_version_link() -> None:
    # an older unit of the key with no superseded_by and no edge to the current one (as
    # an import of records written elsewhere can leave it): both are the fact forgotten
    key = "semantic|alice|password"
    store = _store(
        _memory(
            "u1", "alice password swordfish", tier=Tier.UNIT, key=key, status=Status.SUPERSEDED
        ),
        _memory("u2", "alice password tr0ub4dor", tier=Tier.UNIT, key=key),
        _memory("u3", "alice email alice@example.org", tier=Tier.UNIT, key="semantic|alice|email"),
    )
    plan = plan_erasure(store, NS, ["u2"])
    assert plan.erase == {"u1", "u2"}
    assert plan.requested == ("u2",)


def test_ids_that_are_empty_or_not_text_are_ignored_and_repeats_count_once() -> None:
    # a journal read back from a damaged store can hold anything
    store = _store(_memory("a", "a note"), _memory("b", "another note"))
    plan = plan_erasure(store, NS, ["a", "", 7, None, "a"])  # type: ignore[list-item]
    assert plan.requested == ("a",)
    assert plan.erase == {"a"}


def test_syntheses_come_after_the_syntheses_among_their_members() -> None:
    # "a-top" is made from "z-mid", "z-mid" from two traces: z-mid must be rebuilt before
    # a-top reads it, though its id sorts after
    graph = Derivation(
        {},
        {"a-top": {"z-mid", "t3"}, "z-mid": {"t1", "t2"}},
        {"z-mid": {"a-top"}, "t3": {"a-top"}, "t1": {"z-mid"}, "t2": {"z-mid"}},
    )
    assert bottom_up(graph, ["a-top", "z-mid"]) == ("z-mid", "a-top")
    # nodes on one level are ordered by id
    assert bottom_up(graph, ["a-top", "m-alone", "z-mid"]) == ("m-alone", "z-mid", "a-top")


def test_above_reaches_every_synthesis_over_the_ids_but_not_the_ids_themselves() -> None:
    graph = Derivation(
        {},
        {"a-top": {"z-mid", "t3"}, "z-mid": {"t1", "t2"}},
        {"z-mid": {"a-top"}, "t3": {"a-top"}, "t1": {"z-mid"}, "t2": {"z-mid"}},
    )
    assert graph.above(["t1"]) == {"z-mid", "a-top"}
    # z-mid is asked for itself: it is not "above" the request
    assert graph.above(["t1", "z-mid"]) == {"a-top"}
    assert graph.above(["t3"]) == {"a-top"}
    assert graph.above(["a-top"]) == set()


def test_a_cycle_in_a_damaged_derivation_still_gives_every_node_once() -> None:
    # a made from b and b from a cannot happen through the cycle, but a damaged or
    # hand-edited store can hold it; forget must still finish
    graph = Derivation({}, {"a": {"b"}, "b": {"a"}}, {"a": {"b"}, "b": {"a"}})
    order = bottom_up(graph, ["a", "b"])
    assert sorted(order) == ["a", "b"]


def test_a_collected_member_is_found_by_its_exact_text_hash_only() -> None:
    wanted = "The safe opens with zebra-4471."
    others = [f"note number {i}" for i in range(8)]
    prov = {"gone": {"text_hash": content_hash(wanted)}}
    prov.update({f"other{i}": {"text_hash": content_hash(t)} for i, t in enumerate(others)})
    # at least one other hash sorts below the wanted one, so an order comparison would
    # report it too
    assert any(content_hash(t) < content_hash(wanted) for t in others)
    node = _memory(
        "node",
        "a summary of a safe and some notes",
        tier=Tier.SYNTHESIS,
        metadata={PROVENANCE_KEY: prov},
    )
    found, collected = holders(_store(node), NS, wanted)
    assert collected == {"gone"}
    assert found == []


def test_text_outside_ascii_in_metadata_is_found_as_written() -> None:
    m = _memory("m", "lunch plans", metadata={"place": "Café Zoë on Rua Augusta"})
    found, _collected = holders(_store(m, _memory("n", "dinner plans")), NS, "café zoë")
    assert [x.id for x in found] == ["m"]


def test_only_a_synthesis_keeps_provenance() -> None:
    # a user's metadata with the same key on any other tier names no collected member
    wanted = "The safe opens with zebra-4471."
    prov = {PROVENANCE_KEY: {"ghost": {"text_hash": content_hash(wanted)}}}
    store = _store(
        *(
            _memory(
                f"m-{tier.value}",
                f"an unrelated {tier.value}",
                tier=tier,
                metadata=prov,
                key=f"semantic|x|{tier.value}" if tier is Tier.UNIT else None,
            )
            for tier in (Tier.TRACE, Tier.UNIT, Tier.CRYSTAL)
        )
    )
    _found, collected = holders(store, NS, wanted)
    assert collected == set()
