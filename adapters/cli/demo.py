"""`reverie demo`: two months of a user's life with an assistant, replayed in seconds.

A newcomer's first command. It ingests a small multi-session transcript on a
`ManualClock` (so weeks pass instantly and the run is repeatable) into real
backends (SQLite, embedded Chroma, the local embedding model) and shows the four
things reverie does that a plain vector store does not: a changed fact replaces
the old one (supersession, with history), repeated facts harden into crystals,
trivia decays out of recall while what matters stays, and every hit explains its
rank. `run_demo` returns what it showed as data so tests assert on that, not on text.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from reverie.adapters.cli.render import (
    explanation_panel,
    fmt_sources,
    history_table,
    hits_table,
    quiet_model_loading,
    tier_text,
)
from reverie.adapters.cli.transcript import (
    MessageLine,
    ingest,
    numbered_lines,
    parse_line,
    superseded_traces,
)
from reverie.core.clock import ManualClock
from reverie.core.engine import Hit, MemoryEngine
from reverie.core.errors import InvalidInput
from reverie.core.models import Kind, Memory, Status, Tier, fact_key, normalize_phrase
from reverie.core.ports import Embedder
from reverie.core.scoring import decay_score

__all__ = ["DEMO_FILE", "WEEKS", "default_transcript", "run_demo"]

DEMO_FILE = "demo_sessions.jsonl"
WEEKS = (0, 1, 2, 4, 8, 12)
MAX_QUESTIONS = 3

# Natural questions for the predicates of the shipped transcript; a custom transcript
# gets a plain "<subject> <predicate> ...?" for its changed facts.
_QUESTION_TEMPLATES = {
    "lives in": "Where does {s} live?",
    "works as": "What does {s} do for work?",
    "follows": "What diet does {s} follow?",
    "is working towards": "What is {s}'s next deadline?",
}


def default_transcript() -> Path:
    """The packaged transcript (works after a non-editable install), else the repo copy."""
    try:
        packaged = resources.files("reverie.adapters.cli").joinpath("data", DEMO_FILE)
        if packaged.is_file():
            return Path(str(packaged))
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    repo_copy = Path(__file__).resolve().parents[2] / "examples" / DEMO_FILE
    if repo_copy.is_file():
        return repo_copy
    raise InvalidInput(
        f"cannot find the demo transcript {DEMO_FILE} (neither packaged in "
        "reverie.adapters.cli/data nor in examples/); pass one with --transcript"
    )


# ---------------------------------------------------------------------------- planning


def _read(path: Path) -> list[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as f:
            return list(numbered_lines(f))
    except OSError as e:
        raise InvalidInput(f"cannot read the transcript {path}: {e.strerror or e}") from None


def _plan(lines: Sequence[tuple[int, str]], origin: str) -> dict[str, Any]:
    """Read the transcript once ahead of the run: its sessions, where the first fact
    changes (the "before" checkpoint is just ahead of that session), and which facts
    change (the questions to ask)."""
    sessions: list[str] = []
    session_of: dict[int, str] = {}
    last_at: dict[str, datetime] = {}
    current: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    changed: dict[str, tuple[str, str, str]] = {}  # key -> subject, predicate, old object
    said: dict[int, str] = {}
    split: str | None = None
    for lineno, raw in lines:
        line = parse_line(raw, lineno, origin=origin)
        session = line.session or "1"
        if session not in sessions:
            sessions.append(session)
        session_of[lineno] = session
        if line.at is not None:
            last_at[session] = max(last_at.get(session, line.at), line.at)
        if isinstance(line, MessageLine):
            said[lineno] = line.said
            continue
        key = fact_key(line.kind, line.subject, line.predicate)
        first_seen.setdefault(key, lineno)
        old = current.get(key)
        if old is not None and normalize_phrase(old) != normalize_phrase(line.object):
            if split is None:
                split = session
            changed.setdefault(key, (line.subject, line.predicate, old))
        current[key] = line.object
    if len(sessions) < 2:
        raise InvalidInput("the demo transcript needs at least two sessions")
    if split is None or sessions.index(split) == 0:
        split = sessions[len(sessions) // 2]
    return {
        "sessions": sessions,
        "session_of": session_of,
        "last_at": last_at,
        "split": split,
        # the questions follow the order the facts were first told
        "changed": [
            (key, *changed[key]) for key in sorted(changed, key=first_seen.__getitem__)
        ][:MAX_QUESTIONS],
        "said": said,
    }


def _question(subject: str, predicate: str) -> str:
    template = _QUESTION_TEMPLATES.get(normalize_phrase(predicate))
    return template.format(s=subject) if template else f"{subject} {predicate} ...?"


def _fact_answer(hits: Sequence[Hit], key: str) -> str | None:
    """The object of the best-ranked version of the fact `key` among the hits."""
    for h in hits:
        if h.memory.key == key and h.memory.fact is not None:
            return h.memory.fact.object
    return None


# ---------------------------------------------------------------------------- the run


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold blue]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _ingest_phase(
    console: Console,
    engine: MemoryEngine,
    lines: Sequence[tuple[int, str]],
    label: str,
    origin: str,
) -> dict[str, Any]:
    with _progress(console) as bar:
        task = bar.add_task(label, total=len(lines))
        summary = ingest(
            engine, lines, origin=origin, progress=lambda n: bar.advance(task, n),
            keep_memories=True,
        )
    return summary.as_dict() | {"memories": summary.memories}


def _section(console: Console, n: int, title: str) -> None:
    console.print()
    console.rule(f"[bold]{n}. {title}", align="left")


def _pick_decay_memories(
    engine: MemoryEngine, memories: dict[int, Memory], last_lines: set[int]
) -> dict[str, Memory]:
    """Four memories whose fates differ: the most trivial, an ordinary and the most
    important message of the last session, and a crystal."""
    base = engine.policy.importance.base_importance
    traces = [
        engine.get(m.id)
        for n, m in sorted(memories.items())
        if n in last_lines and m.kind is Kind.EPISODIC and m.tier is Tier.TRACE
    ]
    traces = [m for m in traces if m.is_active]
    picked: dict[str, Memory] = {}
    if traces:
        picked["trivial"] = min(traces, key=lambda m: m.importance)
        # ties go to the latest, which the table measures from its own start
        normal = sorted(traces, key=lambda m: (abs(m.importance - base), -traces.index(m)))
        for m in normal:
            if m.id != picked["trivial"].id:
                picked["normal"] = m
                break
        important = max(traces, key=lambda m: m.importance)
        if important.id not in {p.id for p in picked.values()}:
            picked["important"] = important
    crystals = list(
        engine.memories(tiers=[Tier.CRYSTAL], statuses=[Status.ACTIVE])
    )
    if crystals:
        picked["crystal"] = max(crystals, key=lambda m: len(m.sources))
    return picked


def run_demo(
    console: Console,
    home: Path,
    transcript_path: Path | None = None,
    *,
    namespace: str = "default",
    store: str | None = None,
    vectors: str | None = None,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Replay the transcript into `home` and show what reverie made of it. Returns a
    summary of everything shown (answers before and after, history, tiers, decay,
    one explanation, timings) for tests and for anyone scripting around the demo."""
    from reverie.integrations import open_engine

    started = time.perf_counter()
    path = transcript_path or default_transcript()
    origin = path.stem
    lines = _read(path)
    plan = _plan(lines, origin)
    sessions: list[str] = plan["sessions"]
    split: str = plan["split"]
    cut = sessions.index(split)
    first = [ln for ln in lines if sessions.index(plan["session_of"][ln[0]]) < cut]
    rest = [ln for ln in lines if sessions.index(plan["session_of"][ln[0]]) >= cut]
    last_session = sessions[-1]
    before_sessions = sessions[: sessions.index(split)]

    console.print(
        Panel(
            Text.assemble(
                ("reverie demo\n", "bold"),
                f"{len(sessions)} sessions between a user and her assistant, "
                f"{len(lines)} lines from {path.name}, replayed on a simulated clock "
                "into real backends (SQLite, embedded Chroma, a local embedding model; "
                "no network).\n",
                (
                    "The 'fact' lines stand for what an LLM extractor will pull out of the "
                    "messages in a later release; today they are given.",
                    "dim",
                ),
            ),
            border_style="magenta",
        )
    )

    quiet_model_loading()
    clock = ManualClock(min(plan["last_at"].values(), default=None))
    t0 = time.perf_counter()
    if embedder is None:
        from reverie.integrations.embedders import LocalEmbedder

        embedder = LocalEmbedder()
    with console.status(f"Loading the embedding model ({embedder.name}, offline)..."):
        engine = open_engine(
            home, store=store, vectors=vectors, embedder=embedder, clock=clock,
            namespace=namespace,
        )
    model_seconds = time.perf_counter() - t0
    summary: dict[str, Any] = {"home": str(home), "namespace": namespace,
                               "transcript": str(path), "model_seconds": model_seconds}
    with closing(engine):
        if engine.stats(namespace=namespace)["total"]:
            raise InvalidInput(
                f"namespace {namespace!r} in {home} already holds memories; the demo needs "
                "an empty one: run it without --home, or with a fresh --home or --namespace"
            )
        console.print(
            f"[dim]Model and stores ready in {model_seconds:.1f}s; data in {home}[/dim]"
        )

        # 1. before and after a change ------------------------------------------------
        _section(console, 1, "A changed fact replaces the old one")
        p1 = _ingest_phase(
            console, engine, first,
            f"sessions {before_sessions[0]}-{before_sessions[-1]}", origin,
        )
        before_at = max(plan["last_at"][s] for s in before_sessions) + timedelta(days=1)
        clock.set(before_at)
        questions = [
            {"question": _question(s, p), "subject": s, "predicate": p, "key": key,
             "stale": old}
            for key, s, p, old in plan["changed"]
        ]
        for q in questions:
            earlier = engine.recall(q["question"], k=3).hits
            q["before"] = _fact_answer(earlier, q["key"])
            q["before_texts"] = [h.text for h in earlier]
        p2 = _ingest_phase(
            console, engine, rest, f"sessions {split}-{last_session}", origin
        )
        now = max(plan["last_at"].values()) + timedelta(hours=1)
        clock.set(now)
        after_hits: dict[str, list[Hit]] = {}
        for q in questions:
            hits = list(engine.recall(q["question"], k=3).hits)
            after_hits[q["question"]] = hits
            q["after"] = _fact_answer(hits, q["key"])
            q["after_texts"] = [h.text for h in hits]
            stale = normalize_phrase(q["stale"])
            q["stale_returned_after"] = any(stale in normalize_phrase(t) for t in q["after_texts"])
        summary["ingest"] = {
            k: p1[k] + p2[k] for k in ("lines", "messages", "facts", "stored", "folded",
                                       "superseded")
        }
        summary["questions"] = [{k: v for k, v in q.items() if k != "key"} for q in questions]

        table = Table(title_justify="left")
        table.add_column("question")
        table.add_column(f"after session {before_sessions[-1]} ({before_at:%b %d})")
        table.add_column(f"now, after session {last_session} ({now:%b %d})")
        table.add_column("old answer still returned?")
        for q in questions:
            table.add_row(
                q["question"],
                Text(q["before"] or "-", style="yellow"),
                Text(q["after"] or "-", style="bold green"),
                Text("yes", style="bold red") if q["stale_returned_after"]
                else Text("no", style="green"),
            )
        console.print(table)
        if questions:
            q0 = questions[0]
            console.print(hits_table(
                after_hits[q0["question"]],
                title=f"recall({q0['question']!r}, k=3) now: current facts only",
            ))

        # 2. history ------------------------------------------------------------------
        _section(console, 2, "History: the old version is superseded, not lost")
        summary["history"] = []
        if questions:
            q0 = questions[0]
            versions = engine.history(q0["subject"], q0["predicate"])
            console.print(history_table(
                versions,
                title=f"reverie history {q0['subject']!r} {q0['predicate']!r}",
                precise=console.width >= 110,
            ))
            summary["history"] = [
                {
                    "object": v.fact.object if v.fact else v.text,
                    "status": v.status.value,
                    "valid_from": v.valid_since.isoformat(),
                    "valid_to": v.valid_to.isoformat() if v.valid_to else None,
                    "sources": sorted(v.sources),
                    "confidence": v.confidence,
                }
                for v in versions
            ]
            past = engine.recall(q0["question"], k=5, as_of=before_at).hits
            summary["as_of_answer"] = _fact_answer(past, q0["key"])
            console.print(
                f"recall({q0['question']!r}, as_of={before_at:%Y-%m-%d}) still answers "
                f"[yellow]{summary['as_of_answer']}[/yellow]: what was believed then."
            )
        corrections = []
        for old in superseded_traces(engine):
            assert old.superseded_by is not None
            new = engine.get(old.superseded_by)
            corrections.append({"superseded": old.text, "by": new.text})
        summary["corrections"] = corrections
        if corrections:
            table = Table(
                title="Free-text corrections ('actually', 'switched to', 'moved to', ...)",
                title_justify="left",
            )
            table.add_column("said later", overflow="fold")
            table.add_column("superseded", overflow="fold", style="yellow")
            for c in corrections:
                table.add_row(c["by"], c["superseded"])
            console.print(table)

        # 3. crystals -------------------------------------------------------------------
        _section(console, 3, "Facts heard in 3 sessions harden into crystals")
        units = [
            m
            for m in engine.memories(namespace=namespace, statuses=[Status.ACTIVE])
            if m.key is not None
        ]
        table = Table(title_justify="left")
        table.add_column("fact")
        table.add_column("tier")
        table.add_column("sources")
        table.add_column("confidence", justify="right")
        for m in sorted(units, key=lambda m: (m.tier is not Tier.CRYSTAL, m.created_at)):
            table.add_row(m.text, tier_text(m.tier), fmt_sources(m.sources, 4),
                          f"{m.confidence:.2f}")
        console.print(table)
        console.print(
            "[dim]A crystal has >= 3 independent sources (or the user confirmed it); it "
            "never decays and is never evicted. Same object again = one more source; a "
            "different object = supersession.[/dim]"
        )
        summary["tiers"] = {m.text: m.tier.value for m in units}
        summary["crystals"] = [m.text for m in units if m.tier is Tier.CRYSTAL]

        # 4. decay ----------------------------------------------------------------------
        _section(console, 4, "Decay: weeks pass with no mention (simulated clock)")
        last_lines = {n for n, s in plan["session_of"].items() if s == last_session}
        memories = p1["memories"] | p2["memories"]
        picked = _pick_decay_memories(engine, memories, last_lines)
        decay: dict[str, Any] = {}
        for role, m in picked.items():
            decay[role] = {"id": m.id, "text": m.text, "tier": m.tier.value,
                           "importance": m.importance, "scores": {}, "recalled": {},
                           "faded": {}}
        # Probe with what the user said (without the "user: " prefix), as an agent
        # would when the topic comes up again; the crystal with its own text.
        probe = {m.id: plan["said"].get(n, m.text) for n, m in memories.items()}
        for w in WEEKS:
            clock.set(now + timedelta(weeks=w))
            for role, m in picked.items():
                cur = engine.get(m.id)
                found = engine.recall(probe.get(m.id, m.text), k=5, reinforce=False)
                score = decay_score(cur, clock.now(), engine.policy)
                decay[role]["scores"][w] = score
                decay[role]["recalled"][w] = any(h.id == m.id for h in found)
                decay[role]["faded"][w] = score < engine.policy.retrieval.decay_floor and not (
                    cur.tier is Tier.CRYSTAL or cur.pinned
                )
        clock.set(now)
        summary["decay"] = decay
        table = Table(
            title="decay score (* = faded: under the floor, it comes up only when asked "
            "about directly)",
            title_justify="left",
        )
        # six 6-wide week columns and the borders take 58 characters; the label gets the rest
        label_width = max(12, min(44, console.width - 58))
        table.add_column("memory", overflow="ellipsis", no_wrap=True, max_width=label_width)
        for w in WEEKS:
            table.add_column(f"wk {w}", justify="right", no_wrap=True, min_width=6)
        for role, d in decay.items():
            cells = []
            for w in WEEKS:
                faded = d["faded"][w]
                cells.append(Text(f"{d['scores'][w]:.2f}" + ("*" if faded else " "),
                                  style="red dim" if faded else "green"))
            table.add_row(
                Text.assemble((f"{role}, S0 {d['importance']:.2f}\n", "bold"), d["text"]),
                *cells,
            )
        console.print(table)
        decay, retrieval = engine.policy.decay, engine.policy.retrieval
        console.print(
            "[dim]S(t) = S0 * exp(-lambda t), lambda = ln 2 / half-life "
            f"({decay.half_life_episodic_days:g} days for episodes); "
            f"importance > {decay.high_importance} decays "
            f"{1 / decay.high_importance_lambda_factor:.1f}x slower, < {decay.low_importance} "
            f"{decay.low_importance_lambda_factor:g}x faster. Below {retrieval.decay_floor} "
            "a memory has faded: recall returns it only for a strong match (relevance >= "
            f"{retrieval.floor_bypass_relevance}); crystals and pinned memories never decay.[/dim]"
        )

        # 5. explanation ------------------------------------------------------------------
        _section(console, 5, "Every hit says why it ranked")
        summary["explanation"] = None
        if questions and after_hits[questions[0]["question"]]:
            hit = after_hits[questions[0]["question"]][0]
            console.print(explanation_panel(
                hit, engine.policy, title=f"recall({questions[0]['question']!r}): top hit"
            ))
            summary["explanation"] = {"text": hit.text, **hit.explanation.as_dict()}

    summary["seconds"] = time.perf_counter() - started
    console.print()
    console.print(Panel(
        Group(
            Text(f"Done in {summary['seconds']:.1f}s (model load {model_seconds:.1f}s).",
                 style="bold"),
            Text("Next: keep the data with `reverie demo --home DIR`, then try "
                 "`reverie --home DIR recall \"Where does Maya live?\"`, "
                 "`reverie --home DIR history Maya \"lives in\"` or `reverie --home DIR stats`. "
                 "(Outside the demo the real clock runs: by today most of the demo's memories "
                 "have decayed out of recall; its crystals have not.)"),
        ),
        border_style="magenta",
    ))
    return summary
