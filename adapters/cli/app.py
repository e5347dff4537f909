"""The `reverie` command line: the memory engine for a person at a terminal.

Every command opens the engine from the global options (--home, --store, --vectors,
--namespace), does one thing, and closes it. Results go to stdout (tables, or JSON /
JSONL where a program reads them); progress, prompts and errors go to stderr, so
`reverie export > backup.jsonl` and `reverie recall --json ... | jq` stay clean.

A `ReverieError` is the user's to fix (bad input, unknown id, backend down): it is
printed as one red line, without a traceback, and the exit code is 2 (like a usage
error). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from reverie.adapters.cli.render import (
    fmt_sources,
    fmt_time,
    history_table,
    hits_table,
    quiet_model_loading,
    status_text,
    tier_text,
)
from reverie.core.clock import utc
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput, NotFound, ReverieError
from reverie.core.models import Kind, Memory, Status, Tier

__all__ = ["app", "main"]

P = ParamSpec("P")
R = TypeVar("R")

out = Console()
err = Console(stderr=True)

app = typer.Typer(
    name="reverie",
    help="Long-term memory for LLM agents that forgets on purpose: decay, promotion, "
    "supersession. Start with `reverie demo`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",  # paragraphs reflow to the terminal width
)


# ---------------------------------------------------------------------------- plumbing


@dataclass(frozen=True, slots=True)
class Settings:
    """The global options, as given (None = the engine's default)."""

    home: Path | None
    store: str | None
    vectors: str | None
    namespace: str
    vectors_token: str | None = None
    model: str | None = None


def _settings(ctx: typer.Context) -> Settings:
    obj = ctx.find_object(Settings)
    if obj is None:  # a command invoked without the callback (only in odd embeddings)
        return Settings(None, None, None, "default")
    return obj


def _open(ctx: typer.Context, *, model: bool, check_embedder: bool = True) -> MemoryEngine:
    """The engine for this invocation. `model=True` loads the embedding model up front,
    under a spinner, for commands that embed; the others get it lazily."""
    from reverie.integrations import open_engine

    s = _settings(ctx)
    quiet_model_loading()
    from reverie.integrations.embedders import LocalEmbedder

    embedder = LocalEmbedder(model=s.model)  # loads the model at its first use...
    if model:
        with err.status("Loading the embedding model..."):
            embedder.load()  # ...or now, for commands that embed
    return open_engine(
        s.home,
        store=s.store,
        vectors=s.vectors,
        vectors_token=s.vectors_token,
        embedder=embedder,
        namespace=s.namespace,
        check_embedder=check_embedder,
    )


def _handled(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a `ReverieError` into one red line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ReverieError as e:
            _fail(e)
        except KeyboardInterrupt:
            err.print("[red]interrupted[/red]")
            raise typer.Exit(130) from None

    return wrapper


def _fail(e: BaseException) -> NoReturn:
    message = " ".join(str(e).split()) or type(e).__name__
    err.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _progress(*, total_known: bool = True) -> Progress:
    columns: list[Any] = [SpinnerColumn(), TextColumn("[bold blue]{task.description}")]
    if total_known:
        columns += [BarColumn(), MofNCompleteColumn()]
    else:
        columns += [TextColumn("{task.completed} done")]
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=err, transient=False)


def _parse_time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        return utc(datetime.fromisoformat(value))
    except (ValueError, OverflowError):
        raise typer.BadParameter(
            f"{value!r} is not an ISO-8601 time (e.g. 2025-03-27 or 2025-03-27T09:00:00Z)",
            param_hint=option,
        ) from None


def _kind(value: str) -> Kind:
    try:
        kind = Kind(value)
    except ValueError:
        raise typer.BadParameter("use semantic or procedural", param_hint="--kind") from None
    if kind is Kind.EPISODIC:
        raise typer.BadParameter(
            "facts are semantic or procedural (episodes are observed, not remembered)",
            param_hint="--kind",
        )
    return kind


@contextmanager
def _open_text(path: str) -> Iterator[Iterator[str]]:
    """The lines of a UTF-8 file, or of stdin for '-' (left open: it is not ours to close).
    Bytes that are not UTF-8 (a binary file) stop the read with an `InvalidInput` naming
    the line, not a decoding traceback."""
    if path == "-":
        opened: AbstractContextManager[IO[str]] = nullcontext(sys.stdin)
    else:
        try:
            opened = Path(path).expanduser().open(encoding="utf-8")
        except OSError as e:
            raise InvalidInput(f"cannot read {path}: {e.strerror or e}") from None
    with opened as stream:
        yield _decoded(stream, "stdin" if path == "-" else path)


def _decoded(stream: IO[str], name: str) -> Iterator[str]:
    n = 0
    while True:
        try:
            line = stream.readline()
        except UnicodeDecodeError:
            raise InvalidInput(
                f"{name} is not UTF-8 text (undecodable bytes after line {n}): "
                "give a JSONL file saved as UTF-8"
            ) from None
        except OSError as e:
            raise InvalidInput(f"cannot read {name}: {e.strerror or e}") from None
        if not line:
            return
        n += 1
        yield line


def _count_lines(path: str) -> int | None:
    """Lines in a file, for a progress bar with an end; None for stdin."""
    if path == "-":
        return None
    try:
        with Path(path).expanduser().open("rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError as e:
        raise InvalidInput(f"cannot read {path}: {e.strerror or e}") from None


def _memory_panel(m: Memory, title: str, *, note: str | None = None) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    grid.add_row("id", m.id)
    grid.add_row("text", m.text)
    grid.add_row("kind / tier", Text.assemble(f"{m.kind.value} / ", tier_text(m.tier)))
    grid.add_row("status", status_text(m.status))
    grid.add_row("confidence", f"{m.confidence:.2f}")
    grid.add_row("importance", f"{m.importance:.2f}")
    grid.add_row("sources", fmt_sources(m.sources, 6))
    if m.pinned:
        grid.add_row("pinned", "yes (never decays)")
    if m.user_confirmed:
        grid.add_row("confirmed", "yes, by the user")
    if note:
        grid.add_row("", Text(note, style="italic"))
    return Panel(grid, title=title, title_align="left", border_style="cyan")


# ---------------------------------------------------------------------------- the app


@app.callback()
def _global(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Data directory (default: $REVERIE_HOME, else the per-user data dir).",
            file_okay=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Record store: a SQLite file path or sqlite:///path, redis://[:pw@]host:port/db "
            "(rediss:// for TLS), or redis+cluster://host:port.",
        ),
    ] = None,
    vectors: Annotated[
        str | None,
        typer.Option(
            "--vectors",
            help="Vector index: a directory (embedded Chroma) or http://host:port (server).",
        ),
    ] = None,
    namespace: Annotated[
        str,
        typer.Option("--namespace", "-n", help="Namespace (tenant) to work in."),
    ] = "default",
    vectors_token: Annotated[
        str | None,
        typer.Option(
            "--vectors-token",
            help="Token of a Chroma server behind one (default: $REVERIE_CHROMA_TOKEN).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Embedding model: all-MiniLM-L6-v2, or all-mpnet-base-v2 with the 'mpnet' "
            "extra (default: $REVERIE_EMBEDDING_MODEL, else all-MiniLM-L6-v2).",
        ),
    ] = None,
) -> None:
    """Long-term memory for LLM agents that forgets on purpose."""
    ctx.obj = Settings(home, store, vectors, namespace, vectors_token, model)


@app.command()
@_handled
def demo(
    ctx: typer.Context,
    transcript: Annotated[
        Path | None,
        typer.Option(
            "--transcript",
            help="A transcript in the demo's JSONL format (default: the bundled one).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    home_here: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Keep the demo's data in this directory (the same as the global --home).",
            file_okay=False,
        ),
    ] = None,
    namespace_here: Annotated[
        str | None,
        typer.Option(
            "--namespace", "-n", help="Namespace for the demo (the same as the global -n)."
        ),
    ] = None,
) -> None:
    """Replay two months of a user's sessions and show what reverie keeps, replaces,
    hardens and forgets.

    The clock is simulated and the demo runs offline, in a temporary home unless --home
    is given (before or after `demo`)."""
    from reverie.adapters.cli.demo import run_demo

    s = _settings(ctx)
    # The demo's closing hint says `reverie demo --home DIR`: the options work on either side.
    s = Settings(
        home_here or s.home, s.store, s.vectors, namespace_here or s.namespace, s.vectors_token,
        s.model,
    )
    from reverie.integrations.embedders import LocalEmbedder

    embedder = LocalEmbedder(model=s.model)  # --model, else $REVERIE_EMBEDDING_MODEL
    if s.home is not None:
        home = s.home.expanduser()
        home.mkdir(parents=True, exist_ok=True)
        # Explicit paths: $REVERIE_STORE / $REVERIE_VECTORS must not divert the demo
        # into someone's real memory.
        run_demo(
            out, home, transcript, namespace=s.namespace,
            store=s.store or str(home / "memory.db"),
            vectors=s.vectors or str(home / "vectors"), embedder=embedder,
        )
        return
    with tempfile.TemporaryDirectory(prefix="reverie-demo-", ignore_cleanup_errors=True) as tmp:
        home = Path(tmp)
        run_demo(
            out, home, transcript, namespace=s.namespace,
            store=s.store or str(home / "memory.db"),
            vectors=s.vectors or str(home / "vectors"), embedder=embedder,
        )


@app.command()
@_handled
def ingest(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(help="JSONL file of messages and facts, or '-' for stdin.")
    ],
) -> None:
    """Store a JSONL file of messages (observed as traces) and facts (remembered as units).

    A message line: {"text": ..., "speaker"/"role", "source", "at", "session", "kind",
    "importance", "namespace"}; a fact line: {"subject", "predicate", "object", "source",
    "at", "kind"}; or the demo's typed lines. Each line is its own atomic write: a bad
    line stops the run, and the lines before it stay stored.
    """
    from reverie.adapters.cli.transcript import ingest as ingest_lines
    from reverie.adapters.cli.transcript import numbered_lines

    total = _count_lines(file)
    origin = "stdin" if file == "-" else Path(file).name
    with (
        _open(ctx, model=True) as engine,
        _open_text(file) as stream,
        _progress(total_known=total is not None) as bar,
    ):
        task = bar.add_task(f"ingesting {origin}", total=total)
        summary = ingest_lines(
            engine,
            numbered_lines(stream),
            origin=origin,
            progress=lambda n: bar.advance(task, n),
        )
    table = Table(title=f"ingested {origin}", title_justify="left")
    for col in ("lines", "stored", "folded (repeats)", "facts", "superseded"):
        table.add_column(col, justify="right")
    table.add_row(
        str(summary.lines), str(summary.stored), str(summary.folded), str(summary.facts),
        str(summary.superseded),
    )
    out.print(table)


@app.command()
@_handled
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember about.")],
    k: Annotated[int, typer.Option("-k", min=1, help="How many memories.")] = 5,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Answer with what was believed at this ISO time."),
    ] = None,
    history: Annotated[
        bool, typer.Option("--history", help="Include superseded and consolidated memories.")
    ] = False,
    budget: Annotated[
        int | None,
        typer.Option("--budget", min=1, help="Pack the hits into this many tokens."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the memories most useful for QUERY, best first, with why each ranked."""
    when = _parse_time(as_of, "--as-of")
    with _open(ctx, model=True) as engine:
        result = engine.recall(
            query, k=k, as_of=when, include_history=history, token_budget=budget
        )
    if as_json:
        payload = {
            "query": result.query,
            "namespace": _settings(ctx).namespace,
            "tokens": result.tokens,
            "hits": [
                {
                    "id": h.id,
                    "text": h.text,
                    "score": round(h.score, 6),
                    "kind": h.memory.kind.value,
                    "tier": h.memory.tier.value,
                    "status": h.memory.status.value,
                    "sources": sorted(h.sources),
                    "created_at": h.memory.created_at.isoformat(),
                    "explanation": h.explanation.as_dict(),
                }
                for h in result
            ],
        }
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    title = f"recall {query!r}" + (f" as of {fmt_time(when)}" if when else "")
    out.print(hits_table(result, title=title, show_ids=True))
    if result.tokens is not None:
        out.print(f"[dim]{result.tokens} of {budget} tokens used[/dim]")


@app.command()
@_handled
def remember(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Who or what the fact is about.")],
    predicate: Annotated[str, typer.Argument(help="The attribute, such as 'lives in'.")],
    object_: Annotated[str, typer.Argument(metavar="OBJECT", help="The value.")],
    source: Annotated[
        str | None, typer.Option("--source", help="Where the fact comes from.")
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="The kind of fact: semantic or procedural.")
    ] = "semantic",
) -> None:
    """Store a fact, keyed by its subject and predicate.

    The same object again adds a source (three sources make a crystal). A different object
    supersedes the current version, which stays in `reverie history`."""
    k = _kind(kind)
    with _open(ctx, model=True) as engine:
        before = engine.history(subject, predicate, kind=k)
        current = next((v for v in reversed(before) if v.is_active), None)
        unit = engine.remember(subject, predicate, object_, source=source, kind=k)
    if current is not None and current.id == unit.id:
        note = (
            f"already known from {fmt_sources(current.sources)}; nothing changed"
            if unit.version == current.version
            else f"confirmed: now {len(unit.sources)} sources"
        )
    elif current is not None and current.fact is not None:
        note = f"superseded {current.fact.object!r} (id {current.id})"
    else:
        note = "new fact"
    out.print(_memory_panel(unit, "remembered", note=note))


@app.command("history")
@_handled
def history_cmd(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Who or what the fact is about.")],
    predicate: Annotated[str, typer.Argument(help="The attribute, such as 'lives in'.")],
    kind: Annotated[
        str, typer.Option("--kind", help="The kind of fact: semantic or procedural.")
    ] = "semantic",
) -> None:
    """Show every version of a fact, oldest first, with when each was believed."""
    k = _kind(kind)
    with _open(ctx, model=False) as engine:
        versions = engine.history(subject, predicate, kind=k)
    if not versions:
        raise NotFound(f"no fact {subject!r} {predicate!r} ({k.value}) in this namespace")
    out.print(
        history_table(versions, title=f"{subject} {predicate}", precise=out.width >= 110)
    )


@app.command()
@_handled
def confirm(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
) -> None:
    """Mark a memory as vouched for by the user: it becomes a crystal and never decays."""
    with _open(ctx, model=False) as engine:
        m = engine.confirm(memory_id)
    out.print(_memory_panel(m, "confirmed"))


@app.command()
@_handled
def pin(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory's id.")],
    unpin: Annotated[bool, typer.Option("--unpin", help="Let it decay again.")] = False,
) -> None:
    """Pin a memory ('always remember') so it never decays out of recall."""
    with _open(ctx, model=False) as engine:
        m = engine.pin(memory_id, pinned=not unpin)
    out.print(_memory_panel(m, "unpinned" if unpin else "pinned"))


@app.command()
@_handled
def restore(
    ctx: typer.Context,
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help="The superseded version to make current.")
    ],
) -> None:
    """Undo a wrong supersession: make an older version current again.

    The version that replaced it is superseded by it (a consolidation summary is unlinked
    instead), in one write; both keep the reason, shown by `reverie recall --history`."""
    with _open(ctx, model=False) as engine:
        m = engine.restore(memory_id)
    over = m.metadata.get("reverie_restored", {})
    over_id = over.get("over") if isinstance(over, dict) else None
    note = f"current again; {over_id} is now superseded by it" if over_id else "current again"
    out.print(_memory_panel(m, "restored", note=note))


@app.command()
@_handled
def forget(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="The ids to delete.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    compact: Annotated[bool, typer.Option(
        "--compact", help="Also rewrite the Redis AOF, so no file keeps the text (slow)."
    )] = False,
) -> None:
    """Erase memories for good, for privacy requests.

    Each one goes with its other versions and what it was made from, their edges and index
    entries; a summary made from them is rebuilt without them. To undo a bad
    consolidation instead, see `reverie undo-consolidation`."""
    with _open(ctx, model=False) as engine:
        found: list[Memory] = []
        for i in memory_ids:
            try:
                found.append(engine.get(i))
            except NotFound:
                err.print(f"[yellow]no memory {escape(i)} in this namespace[/yellow]")
        if not found:
            raise NotFound("none of the given ids is in this namespace; nothing deleted")
        for m in found:
            err.print(f"  {m.id}  [dim]{escape(m.text)}[/dim]", soft_wrap=True)
        if not yes:
            typer.confirm(
                f"Delete {len(found)} memor{'y' if len(found) == 1 else 'ies'} for good?",
                abort=True,
                err=True,
            )
        n = engine.forget(*(m.id for m in found), compact=compact)
    out.print(f"forgot {n} memor{'y' if n == 1 else 'ies'}")


@app.command("forget-matching")
@_handled
def forget_matching(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The text (or a part of it) to erase.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    compact: Annotated[bool, typer.Option(
        "--compact", help="Also rewrite the Redis AOF, so no file keeps the text (slow)."
    )] = False,
) -> None:
    """Erase every memory holding TEXT, in any status, and report what went.

    Active, consolidated, archived and superseded memories, summaries, metadata and
    sources are searched. A member already garbage-collected is found by its whole text
    only."""
    with _open(ctx, model=False) as engine:
        if not yes:
            plan = engine.forget_matching(text, dry_run=True)
            for i in plan.erased:
                err.print(f"  {i}  [dim]{escape(engine.get(i).text)}[/dim]", soft_wrap=True)
            typer.confirm(
                f"Erase {len(plan.erased)} memories (and rebuild or drop "
                f"{len(plan.rebuilt)} summaries) for good?", abort=True, err=True,
            )
        report = engine.forget_matching(text, compact=compact)
    out.print(f"erased {len(report.erased)} memor{'y' if len(report.erased) == 1 else 'ies'}, "
              f"rebuilt {len(report.rebuilt)} and dropped {len(report.cascaded)} "
              f"synthes{'is' if len(report.cascaded) == 1 else 'es'}")
    for i in report.erased:
        out.print(f"  erased  {i}")


@app.command("undo-consolidation")
@_handled
def undo_consolidation(
    ctx: typer.Context,
    synthesis_id: Annotated[str, typer.Argument(help="The synthesis to take apart.")],
) -> None:
    """Undo a bad consolidation: the synthesis goes, its members are active again.

    Not a privacy call: the members keep their text (`forget` erases)."""
    with _open(ctx, model=False) as engine:
        report = engine.undo_consolidation(synthesis_id)
    out.print(f"restored {len(report.restored) + len(report.archived)} member(s)"
              + (f"; {len(report.lost)} were already collected by gc" if report.lost else ""))


@app.command()
@_handled
def purge(
    ctx: typer.Context,
    compact: Annotated[bool, typer.Option(
        "--compact/--no-compact",
        help="Rewrite the Redis AOF and RDB snapshot, vacuum a SQLite file.",
    )] = True,
) -> None:
    """Clean deleted bytes out of the store's files.

    SQLite's WAL is truncated; on Redis the AOF is rewritten (BGREWRITEAOF), so a
    forgotten text leaves the disk too."""
    with _open(ctx, model=False) as engine:
        done = engine.purge_residue(compact=compact)
    out.print(" ".join(f"{k}={v}" for k, v in sorted(done.items())))


def _locations(s: Settings) -> tuple[Path, str, str]:
    """Where the data lives, as open_engine resolves it (for `stats`), with every password
    and token masked."""
    from reverie.integrations.factory import (
        ENV_CHROMA_TOKEN,
        ENV_STORE,
        ENV_VECTORS,
        default_data_dir,
    )
    from reverie.integrations.urls import redact

    home = s.home.expanduser() if s.home is not None else default_data_dir()
    store = s.store or os.environ.get(ENV_STORE) or str(home / "memory.db")
    vectors = s.vectors or os.environ.get(ENV_VECTORS) or str(home / "vectors")
    secrets = (s.vectors_token, os.environ.get(ENV_CHROMA_TOKEN))
    return home, redact(store, secrets), redact(vectors, secrets)


@app.command()
@_handled
def stats(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show counts per status and tier, the vector index, the embedder and where data lives."""
    s = _settings(ctx)
    with _open(ctx, model=False) as engine:
        st = engine.stats()
        spaces = engine.namespaces()
    home, store, vectors = _locations(s)
    if as_json:
        payload = {**st, "data_dir": str(home), "store": store, "vector_index": vectors,
                   "namespaces": spaces}
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    table = Table(title=f"namespace {st['namespace']!r}", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    table.add_row("memories", str(st.get("total", 0)))
    for status in Status:
        table.add_row(f"  {status.value}", str(st.get(f"status:{status.value}", 0)))
    table.add_row("active by tier", "")
    for tier in Tier:
        table.add_row(Text(f"  {tier.value}"), str(st.get(f"tier:{tier.value}", 0)))
    table.add_row("edges", str(st.get("edges", 0)))
    table.add_row("vectors", str(st.get("vectors", 0)))
    if "vectors_queued" in st:  # the shared tier's vector outbox
        table.add_row("  queued for the index", str(st["vectors_queued"]))
    if st.get("vector_repair_needed"):
        table.add_row("", Text("the vector index is behind: run `reverie repair`", style="red"))
    table.add_row("embedder", str(st.get("embedder", "")))
    table.add_row("data dir", str(home))
    table.add_row("store", store)
    table.add_row("vector index", vectors)
    table.add_row("namespaces", ", ".join(spaces) or "(none)")
    out.print(table)


@app.command()
@_handled
def export(
    ctx: typer.Context,
    file: Annotated[
        Path | None, typer.Argument(help="Write here (default: stdout).", dir_okay=False)
    ] = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", help="Every namespace, not just -n.")
    ] = False,
) -> None:
    """Write everything in the namespace (every status, and edges) as JSONL.

    Use it for a backup or a move; `reverie import` reads it back."""
    s = _settings(ctx)
    counts = {"memory": 0, "edge": 0}
    with _open(ctx, model=False) as engine:
        records = engine.export(None if all_namespaces else s.namespace)
        if file is None:
            _write_jsonl(sys.stdout, records, counts)
        else:
            tmp = file.with_name(f".{file.name}.partial")
            try:
                with tmp.open("w", encoding="utf-8") as f:
                    _write_jsonl(f, records, counts)
                tmp.replace(file)  # no half-written backup under the real name
            except OSError as e:
                tmp.unlink(missing_ok=True)
                raise InvalidInput(f"cannot write {file}: {e.strerror or e}") from None
    where = "stdout" if file is None else str(file)
    err.print(f"exported {counts['memory']} memories and {counts['edge']} edges to {where}")


def _write_jsonl(
    stream: IO[str], records: Iterator[dict[str, Any]], counts: dict[str, int]
) -> None:
    for rec in records:
        counts[rec.get("type", "")] = counts.get(rec.get("type", ""), 0) + 1
        stream.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    stream.flush()


@app.command("import")
@_handled
def import_cmd(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="A `reverie export` JSONL file, or '-'.")],
) -> None:
    """Restore an export into the namespaces it names.

    It is safe to re-run: memories already present at the same or a newer version are
    skipped."""
    total = _count_lines(file)
    name = "stdin" if file == "-" else Path(file).name
    with (
        _open(ctx, model=True) as engine,
        _open_text(file) as stream,
        _progress(total_known=total is not None) as bar,
    ):
        task = bar.add_task(f"importing {name}", total=total)

        def records() -> Iterator[dict[str, Any]]:
            for n, raw in enumerate(stream, 1):
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw)
                except ValueError as e:
                    raise InvalidInput(f"line {n}: not JSON ({e})") from None
                if not isinstance(rec, dict):
                    raise InvalidInput(f"line {n}: expected a JSON object")
                yield rec
                bar.advance(task)

        counts = engine.import_(records())
    table = Table(title="imported", title_justify="left")
    for col in ("memories", "edges", "skipped (already there)"):
        table.add_column(col, justify="right")
    table.add_row(str(counts["memories"]), str(counts["edges"]), str(counts["skipped"]))
    out.print(table)


@app.command()
@_handled
def repair(
    ctx: typer.Context,
    reembed: Annotated[
        bool, typer.Option("--reembed", help="Re-embed everything (after a model change).")
    ] = False,
    all_namespaces: Annotated[
        bool,
        typer.Option(
            "--all-namespaces/--current-namespace",
            help="Repair every namespace (default) or only the one given with -n.",
        ),
    ] = True,
) -> None:
    """Rebuild the vector index (derived data) from the records.

    It indexes what is missing, drops what has no record and refreshes statuses."""
    s = _settings(ctx)
    if reembed and not all_namespaces:
        raise InvalidInput("--reembed re-embeds every namespace; drop --current-namespace")
    with _open(ctx, model=True, check_embedder=not reembed) as engine:
        spaces = engine.namespaces() if all_namespaces else [s.namespace]
        total = sum(engine.stats(namespace=ns)["total"] for ns in spaces)
        with _progress() as bar:
            task = bar.add_task("repairing the vector index", total=total)
            report = engine.repair(
                namespace=None if all_namespaces else s.namespace,
                reembed=reembed,
                progress=lambda n: bar.advance(task, n),
            )
    table = Table(title="repair", title_justify="left")
    for col, justify in (("namespace", "left"), ("checked", "right"), ("indexed", "right"),
                         ("removed", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for ns, st in report.per_namespace.items():
        table.add_row(ns, str(st["checked"]), str(st["indexed"]), str(st["removed"]))
    table.add_row(
        Text("total", style="bold"), str(report.checked), str(report.indexed),
        str(report.removed),
    )
    out.print(table)


@app.command()
@_handled
def sweep(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be distilled; write nothing.")
    ] = False,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", help="Sweep every namespace, not just -n.")
    ] = False,
) -> None:
    """Distil, then archive, memories whose salience decayed below the eviction threshold.

    Crystals and pinned memories are never swept. Over the hard cap, the sweep merges
    first and archives the lowest scores."""
    s = _settings(ctx)
    with _open(ctx, model=True) as engine, _progress(total_known=False) as bar:
        task = bar.add_task("distilling decayed memories", total=None)
        report = engine.sweep(
            None if all_namespaces else s.namespace,
            dry_run=dry_run,
            progress=lambda n: bar.advance(task, n),
        )
        if dry_run:
            previews = [
                (len(g), engine.get(g[0], namespace=ns).text)
                for ns in report.per_namespace
                for g in report.groups[:20]
                if engine.store.get(ns, g[0]) is not None
            ]
    table = Table(title="sweep (dry run: nothing written)" if dry_run else "sweep",
                  title_justify="left")
    cols = ("namespace", "active", "decayed", "syntheses", "archived", "kept alone",
            "evicted by cap")
    for col in cols:
        table.add_column(col, justify="left" if col == "namespace" else "right")
    for ns, st in report.per_namespace.items():
        table.add_row(ns, *(str(st[k]) for k in ("examined", "candidates", "syntheses",
                                                 "archived", "kept_lone", "evicted_by_cap")))
    out.print(table)
    if dry_run:
        for size, text in previews:
            out.print(f"  {size:>3} memories, from: [dim]{escape(text[:90])}[/dim]",
                      soft_wrap=True)
    if report.fallbacks:
        err.print(f"[yellow]{report.fallbacks} group(s) fell back to the extractive "
                  "synthesizer[/yellow]")


@app.command()
@_handled
def gc(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be deleted; delete nothing.")
    ] = False,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", help="Collect every namespace, not just -n.")
    ] = False,
) -> None:
    """Delete, for good, archived memories whose salience decayed below the GC threshold.

    Retention-exempt memories are kept."""
    s = _settings(ctx)
    with _open(ctx, model=False) as engine, _progress(total_known=False) as bar:
        task = bar.add_task("checking archived memories", total=None)
        report = engine.gc(
            None if all_namespaces else s.namespace,
            dry_run=dry_run,
            progress=lambda n: bar.advance(task, n),
        )
    table = Table(title="gc (dry run: nothing deleted)" if dry_run else "gc",
                  title_justify="left")
    for col in ("namespace", "archived", "deleted", "kept (retention-exempt)", "re-pointed"):
        table.add_column(col, justify="left" if col == "namespace" else "right")
    for ns, st in report.per_namespace.items():
        table.add_row(ns, str(st["examined"]), str(st["deleted"]), str(st["kept_exempt"]),
                      str(st["repointed"]))
    out.print(table)
    out.print(f"members collected {report.members_collected} (their summaries keep ids, "
              f"sources, times and text hashes); orphan vectors removed "
              f"{report.orphan_vectors}")


@app.command()
@_handled
def consolidate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the clusters and previews; write nothing."),
    ] = False,
    if_due: Annotated[
        bool,
        typer.Option("--if-due", help="Run only if a maintenance trigger fires (says which)."),
    ] = False,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy", help="Clustering: union-find (default), hdbscan or recombination."
        ),
    ] = "union-find",
    llm_url: Annotated[
        str | None,
        typer.Option(
            "--llm-url",
            help="OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1) for synthesis; "
            "without it the extractive synthesizer runs (no LLM).",
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="The model to ask at --llm-url.")
    ] = None,
    llm_timeout: Annotated[
        float, typer.Option("--llm-timeout", help="Seconds per LLM call.")
    ] = 120.0,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Concurrent LLM calls (default: the policy's)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")
    ] = False,
) -> None:
    """Run a REM cycle: replace each cluster of weak memories by one synthesis node.

    Members are retired, never deleted. The cycle is crash-safe: rerun it after an
    interruption."""
    import time as _time

    synthesizer = None
    if llm_url is not None or llm_model is not None:
        if not (llm_url and llm_model):
            raise InvalidInput("--llm-url and --llm-model go together")
        from reverie.integrations.llm import OpenAISynthesizer

        synthesizer = OpenAISynthesizer(llm_url, llm_model, timeout=llm_timeout)
    started = _time.perf_counter()
    with _open(ctx, model=False) as engine:
        if if_due:
            triggers = engine.maintenance_due()
            if not triggers:
                if as_json:
                    out.print_json(data={"due": False, "triggers": []})
                else:
                    out.print("no maintenance due: no trigger fired")
                return
            for t in triggers:
                err.print(f"[yellow]due[/yellow] {t.name}: {escape(t.reason)}")
        with _progress() as bar:
            tasks: dict[str, Any] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=max(total, 1))
                bar.update(tasks[phase], completed=done if total else 1, total=max(total, 1))

            report = engine.consolidate(
                synthesizer=synthesizer,
                strategy=strategy,
                dry_run=dry_run,
                max_workers=workers,
                progress=progress,
            )
    elapsed = _time.perf_counter() - started
    if as_json:
        out.print_json(
            data={
                "namespace": report.namespace,
                "dry_run": report.dry_run,
                "strategy": report.strategy,
                "flagged": report.flagged,
                "nodes_before": report.nodes_before,
                "nodes_after": report.nodes_after,
                "compression_ratio": report.compression_ratio,
                "resumed": report.resumed,
                "seconds": elapsed,
                "clusters": [
                    {
                        "synthesis_id": c.synthesis_id,
                        "members": list(c.member_ids),
                        "preview": c.preview,
                        "synthesizer": c.synthesizer,
                        "fell_back": c.fell_back,
                        "reason": c.reason,
                        "committed": c.committed,
                        "error": c.error,
                    }
                    for c in report.clusters
                ],
            }
        )
        return
    if dry_run:
        for n, c in enumerate(report.clusters, 1):
            out.print(
                Panel(
                    escape(c.preview[:600]),
                    title=f"cluster {n}: {len(c.member_ids)} memories -> {c.synthesis_id}",
                    subtitle=c.synthesizer + (" (fallback)" if c.fell_back else ""),
                    title_align="left",
                )
            )
    table = Table(
        title="consolidate (dry run: nothing written)" if dry_run else "consolidate",
        title_justify="left",
    )
    table.add_column("", style="bold")
    table.add_column("", justify="right")
    rows = [
        ("namespace", report.namespace),
        ("flagged (importance < tau)", str(report.flagged)),
        ("clusters", str(len(report.clusters))),
        ("active nodes before", str(report.nodes_before)),
    ]
    if dry_run:  # what a real run would do
        members = sum(len(c.member_ids) for c in report.clusters)
        after = report.nodes_before - members + len(report.clusters)
        rows += [
            ("memories to consolidate", str(members)),
            ("active nodes after (projected)", str(after)),
            ("compression ratio (projected)", f"{report.nodes_before / max(after, 1):.2f}x"),
        ]
    else:
        rows += [
            ("memories consolidated", str(report.consolidated)),
            ("active nodes after", str(report.nodes_after)),
            ("compression ratio", f"{report.compression_ratio:.2f}x"),
        ]
    rows += [
        ("fallbacks to extractive", str(len(report.fallbacks))),
        ("clusters skipped (changed meanwhile)", str(len(report.failed))),
        ("resumed from an interrupted cycle", str(report.resumed)),
        ("time", f"{elapsed:.1f} s"),
    ]
    for label, value in rows:
        table.add_row(label, value)
    out.print(table)
    for c in report.fallbacks:
        err.print(f"[yellow]fallback[/yellow] {c.synthesis_id}: {escape(c.reason or '')}",
                  soft_wrap=True)


@app.command()
@_handled
def mcp(
    ctx: typer.Context,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            help="How clients connect: stdio (the client starts `reverie mcp` itself) or http "
            "(streamable HTTP at http://HOST:PORT/mcp).",
        ),
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (http only); loopback by default.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="Port to listen on (http only).")
    ] = 8000,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            "-n",
            envvar="REVERIE_NAMESPACE",
            show_envvar=True,
            help="Default namespace for calls that name none (else the global -n).",
        ),
    ] = None,
) -> None:
    """Serve the memory to MCP clients: tools observe, remember, recall, history, forget and
    confirm, and a stats resource.

    With stdio, nothing but the protocol goes to stdout; messages go to stderr. A client
    may name a namespace per call (or, over http, in a Reverie-Namespace header)."""
    import click

    from reverie.adapters.mcp import TRANSPORTS, serve

    if transport not in TRANSPORTS:
        raise typer.BadParameter(f"use one of {', '.join(TRANSPORTS)}", param_hint="--transport")
    s = _settings(ctx)
    parent = ctx.parent
    explicit_global = (
        parent is not None
        and parent.get_parameter_source("namespace") is not click.core.ParameterSource.DEFAULT
    )
    if explicit_global and ctx.get_parameter_source("namespace") in (
        None, click.core.ParameterSource.DEFAULT, click.core.ParameterSource.ENVIRONMENT,
    ):
        namespace = s.namespace  # `reverie -n NS mcp` beats $REVERIE_NAMESPACE
    with _open(ctx, model=True) as engine:
        if transport == "http":
            err.print(f"reverie MCP server on http://{host}:{port}/mcp "
                      f"(namespace {namespace or engine.default_namespace!r}); Ctrl-C stops it")
        serve(engine, transport=transport,  # type: ignore[arg-type]
              host=host, port=port, namespace=namespace)


@app.command()
@_handled
def inspect(
    ctx: typer.Context,
    home_here: Annotated[
        Path | None,
        typer.Option("--home", help="Data directory (the same as the global --home).",
                     file_okay=False),
    ] = None,
    store_here: Annotated[
        str | None,
        typer.Option("--store", help="Record store URL or path (the same as the global --store)."),
    ] = None,
    redis: Annotated[
        str | None,
        typer.Option("--redis", help="A Redis record store: redis://[:pw@]host:port/db "
                     "(the same as --store with that URL)."),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: a free one).")
    ] = 0,
    host: Annotated[
        str, typer.Option("--host", help="Loopback address to listen on.")
    ] = "127.0.0.1",
    allow_changes: Annotated[
        bool,
        typer.Option("--allow-changes",
                     help="Offer confirm, forget and restore (each asks first)."),
    ] = False,
) -> None:
    """Serve a local web page to look at what the memory holds.

    The pages show each namespace's health, the memories by tier, status, kind and text,
    each memory's decay, versions and lineage, and recall with the reasons for each hit.
    It listens on loopback only, works offline and is read-only unless --allow-changes;
    Ctrl-C stops it."""
    from reverie.adapters.inspect import serve

    if redis is not None and store_here is not None:
        raise typer.BadParameter("give --store or --redis, not both", param_hint="--redis")
    s = _settings(ctx)
    ctx.obj = Settings(home_here or s.home, redis or store_here or s.store, s.vectors,
                       s.namespace, s.vectors_token, s.model)

    def ready(url: str) -> None:
        mode = "changes allowed" if allow_changes else "read-only"
        err.print(f"reverie inspector ({mode}) on {url} ; Ctrl-C stops it")
        typer.echo(url)
        sys.stdout.flush()

    with _open(ctx, model=False) as engine:
        try:
            serve(engine, host=host, port=port, allow_changes=allow_changes, ready=ready)
        except KeyboardInterrupt:
            err.print("inspector stopped")


def main() -> None:
    """Console-script entry point. Commands handle `ReverieError` themselves; this
    catches any raised outside a command (e.g. while resolving options)."""
    try:
        app()
    except ReverieError as e:
        try:
            _fail(e)
        except typer.Exit as done:
            sys.exit(done.exit_code)


if __name__ == "__main__":
    main()
