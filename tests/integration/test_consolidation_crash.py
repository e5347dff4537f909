"""Crash safety of the REM cycle on real parts: a SQLite file, embedded Chroma and the
real MiniLM model. A subprocess running a cycle is killed with SIGKILL at 30 different
journal steps; after each, a rerun converges to exactly the state of an uninterrupted
run, and the invariants hold: every original memory is active or consolidated into an
existing synthesis node, no edge points to a missing node, no memory belongs to two
syntheses, the sources are conserved, every active memory has its vector."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.core import ManualClock, Status, Tier
from reverie.core.codec import memory_to_dict
from reverie.core.engine import MemoryEngine
from reverie.integrations import open_engine
from reverie.integrations.embedders import LocalEmbedder
from tests.integration.consolidation_worker import NAMESPACE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=120)  # old enough for the chatter to fall below tau
KILL_POINTS = 30

# Pinned anchors (never flagged) that the chatter links to by entity: the edges the
# synthesis nodes must inherit.
ANCHORS = [
    "Remember: the Leeds office is at 1 Park Row.",
    "Remember: Dr Okafor is the cat's vet.",
    "Remember: Priya runs the Tuesday climbing group.",
]
TOPICS = [
    [
        "ugh the train to Leeds was late again this morning",
        "the train to Leeds was late again this morning, ugh",
        "this morning the Leeds train was late again",
    ],
    [
        "the cat threw up on the rug again, will call Dr Okafor",
        "cat threw up on the rug again, calling Dr Okafor",
    ],
    [
        "climbing with Priya was fun but my arms are sore",
        "my arms are sore after climbing with Priya, fun though",
        "fun climbing session with Priya, sore arms now",
    ],
    [
        "the coffee machine on the second floor is broken again",
        "second floor coffee machine broken again",
    ],
    [
        "forgot my umbrella and got soaked walking home",
        "got soaked walking home because I forgot my umbrella",
    ],
]
NOISE = ["lol ok", "hmm maybe later", "the printer jammed once"]


def open_at(home: Path, embedder: LocalEmbedder, when: datetime) -> MemoryEngine:
    return open_engine(home, clock=ManualClock(when), namespace=NAMESPACE, embedder=embedder)


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder().load()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> Path:
    home = tmp_path_factory.mktemp("pristine") / "home"
    engine = open_at(home, embedder, T0)
    try:
        for text in ANCHORS:
            engine.observe(text, pinned=True, source=f"anchor:{text[:12]}")
        n = 0
        for topic in TOPICS:
            for text in topic:
                engine.observe(text, source=f"turn:{n}")
                n += 1
        for text in NOISE:
            engine.observe(text, source=f"turn:{n}")
            n += 1
    finally:
        engine.close()
    return home


def copy_of(pristine: Path, dest: Path) -> Path:
    shutil.copytree(pristine, dest)
    return dest


def snapshot(engine: MemoryEngine) -> dict[str, Any]:
    memories = {m.id: m for m in engine.memories(namespace=NAMESPACE)}
    edges = engine.store.edges(NAMESPACE, list(memories))
    return {
        "memories": {i: memory_to_dict(m) for i, m in memories.items()},
        "edges": sorted({(e.src, e.dst, e.type.value, e.weight) for e in edges}),
        "vectors": sorted(engine.vectors.ids(NAMESPACE)),
        "objects": memories,
    }


def check_invariants(state: dict[str, Any], originals: dict[str, Any]) -> None:
    mems = state["objects"]
    syntheses = {i: m for i, m in mems.items() if m.tier is Tier.SYNTHESIS}
    for i in originals:
        m = mems[i]  # nothing hard-deleted
        assert m.status in (Status.ACTIVE, Status.CONSOLIDATED), (i, m.status)
        if m.status is Status.CONSOLIDATED:
            node = syntheses.get(m.consolidated_into or "")
            assert node is not None and node.is_active, f"{i} points to a missing synthesis"
            assert i in node.derived_from
    ids = set(mems)
    for src, dst, _, _ in state["edges"]:
        assert src in ids and dst in ids, f"edge {src} -> {dst} points to a missing node"
    membership = Counter(i for node in syntheses.values() for i in node.derived_from)
    assert all(n == 1 for n in membership.values()), "a memory belongs to two syntheses"
    active_sources = set().union(*(m.sources for m in mems.values() if m.is_active))
    original_sources = set().union(*(set(d["sources"]) for d in originals.values()))
    assert active_sources == original_sources  # conserved: no turn lost, none invented
    assert {i for i, m in mems.items() if m.is_active} <= set(state["vectors"])


@pytest.fixture(scope="module")
def reference(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder
) -> Iterator[tuple[dict[str, Any], list[str], dict[str, Any]]]:
    """An uninterrupted cycle (its steps recorded) and a second one, which must be a no-op."""
    home = copy_of(pristine, tmp_path_factory.mktemp("reference") / "home")
    engine = open_at(home, embedder, NOW)
    try:
        originals = snapshot(engine)["memories"]
        steps: list[str] = []
        first = engine.consolidate(kill_hook=steps.append)
        second = engine.consolidate()
        state = snapshot(engine)
    finally:
        engine.close()
    assert len(first.committed) >= 4, [c.member_ids for c in first.clusters]
    assert second.clusters == [] and second.resumed == 0
    yield state, steps, originals


def test_the_reference_cycle_keeps_the_invariants(
    reference: tuple[dict[str, Any], list[str], dict[str, Any]],
) -> None:
    state, steps, originals = reference
    assert steps[0] == "plan:committing" and steps[-1] == "plan:done"
    check_invariants(state, originals)
    syntheses = [m for m in state["objects"].values() if m.tier is Tier.SYNTHESIS]
    leeds = next(m for m in syntheses if "Leeds" in m.text)
    anchor = next(m for m in state["objects"].values() if m.text.startswith("Remember: the Leeds"))
    inherited = {(s, d) for s, d, t, _ in state["edges"] if t == "entity"}
    assert (leeds.id, anchor.id) in inherited  # the chatter's edge to the anchor moved


def kill_points(steps: list[str]) -> list[int]:
    """30 distinct step numbers, spread over every step up to (and including) the plan's
    switch to indexing: the vectors themselves are written by the rerun."""
    last = steps.index("plan:indexing") + 1
    assert last >= KILL_POINTS, f"only {last} journal steps; the data needs more clusters"
    return sorted({1 + round(i * (last - 1) / (KILL_POINTS - 1)) for i in range(KILL_POINTS)})


def test_sigkill_at_30_points_then_rerun_converges(
    pristine: Path,
    tmp_path: Path,
    embedder: LocalEmbedder,
    reference: tuple[dict[str, Any], list[str], dict[str, Any]],
) -> None:
    want, steps, originals = reference
    points = kill_points(steps)
    assert len(points) == KILL_POINTS
    for n in points:
        home = copy_of(pristine, tmp_path / f"kill-{n}")
        proc = subprocess.run(
            [sys.executable, "-m", "tests.integration.consolidation_worker",
             str(home), NOW.isoformat(), str(n)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == -9, (n, proc.returncode, proc.stdout, proc.stderr[-2000:])
        assert f"killed at step {n}: {steps[n - 1]}" in proc.stdout
        engine = open_at(home, embedder, NOW)
        try:
            report = engine.consolidate()
            state = snapshot(engine)
        finally:
            engine.close()
        assert report.resumed > 0, f"step {n}: the interrupted plan was not rolled forward"
        check_invariants(state, originals)
        for part in ("memories", "edges", "vectors"):
            assert state[part] == want[part], f"after a kill at step {n} ({steps[n - 1]})"
        shutil.rmtree(home)
