"""Properties that must hold for any input, not just the examples we thought of."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core import Kind, Policy, Status
from reverie.core.scoring import decay_value, final_score, importance_blend
from tests.unit.conftest import make_engine

P = Policy()
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
days = st.floats(min_value=0.0, max_value=10_000.0, allow_nan=False)
kinds = st.sampled_from(list(Kind))


@given(unit, kinds, days)
def test_decay_stays_in_unit_interval(s0: float, kind: Kind, t: float) -> None:
    assert 0.0 <= decay_value(s0, kind, t, P) <= s0 <= 1.0


@given(unit, kinds, days, days)
def test_decay_is_monotone_in_time(s0: float, kind: Kind, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert decay_value(s0, kind, hi, P) <= decay_value(s0, kind, lo, P)


@given(days, st.integers(0, 1000), st.integers(0, 1000), unit, unit, unit)
def test_blends_stay_in_unit_interval(
    d: float, acc: int, deg: int, conf: float, rel: float, dec: float
) -> None:
    assert 0.0 <= importance_blend(
        days_since_access=d, accesses=acc, degree=deg, confidence=conf, policy=P
    ) <= 1.0 + 1e-12
    assert 0.0 <= final_score(rel, dec, P) <= 1.0 + 1e-12


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ana", "ben"]),
            st.sampled_from(["Lisbon", "Porto", "Oslo"]),
            st.sampled_from(["s1", "s2", "s3", "s4"]),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_supersession_chains_never_fork(ops: list[tuple[str, str, str, int]]) -> None:
    engine = make_engine()
    for subject, city, source, step in ops:
        engine.clock.advance(days=step)  # type: ignore[attr-defined]
        engine.remember(subject, "lives in", city, source=source)
    for subject in ("ana", "ben"):
        versions = engine.history(subject, "lives in")
        if not versions:
            continue
        active = [v for v in versions if v.status is Status.ACTIVE]
        assert len(active) == 1
        successors = [v.superseded_by for v in versions if v.superseded_by]
        assert len(successors) == len(set(successors)) == len(versions) - 1
        # following superseded_by from the oldest visits every version and ends active
        by_id = {v.id: v for v in versions}
        node, seen = versions[0], 1
        while node.superseded_by:
            assert node.valid_to == by_id[node.superseded_by].valid_from
            node, seen = by_id[node.superseded_by], seen + 1
        assert node.is_active and seen == len(versions)


@settings(max_examples=40, deadline=None)
@given(st.permutations(["a", "b", "c", "d", "a", "b"]), st.booleans())
def test_fold_and_promote_is_order_independent(sources: list[str], as_fact: bool) -> None:
    engine = make_engine()
    for s in sources:
        if as_fact:
            m = engine.remember("kim", "prefers", "tea", source=s)
        else:
            m = engine.observe("Kim prefers green tea", source=s)
    reference = make_engine()
    for s in sorted(set(sources)):
        if as_fact:
            r = reference.remember("kim", "prefers", "tea", source=s)
        else:
            r = reference.observe("Kim prefers green tea", source=s)
    assert (m.sources, m.confidence, m.tier) == (r.sources, r.confidence, r.tier)
    assert engine.stats()["total"] == 1


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["t/a", "t/b", "t/c"]), st.sampled_from(["apple", "pear"])),
        min_size=1,
        max_size=15,
    )
)
def test_reads_never_cross_namespaces(writes: list[tuple[str, str]]) -> None:
    engine = make_engine()
    owner: dict[str, str] = {}
    for i, (ns, word) in enumerate(writes):
        m = engine.observe(f"{word} note {i}", namespace=ns)
        owner[m.id] = ns
    for ns in ("t/a", "t/b", "t/c"):
        for h in engine.recall("apple pear note", namespace=ns, k=50, reinforce=False):
            assert owner[h.id] == ns == h.memory.namespace
        assert all(m.namespace == ns for m in engine.store.scan(ns))


def test_time_moves_only_forward_in_history() -> None:
    engine = make_engine()
    engine.remember("ana", "works at", "Acme")
    engine.clock.advance(days=1)  # type: ignore[attr-defined]
    engine.remember("ana", "works at", "Initech", at=engine.clock.now() - timedelta(days=5))
    old, new = engine.history("ana", "works at")
    # a backdated change never makes a version end before it began
    assert old.valid_to is not None and old.valid_to >= old.valid_since
    assert new.valid_since == old.valid_to
