"""Rich renderings shared by the CLI commands and the demo, so a memory, a recall hit or
a fact's history looks the same wherever it appears."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from datetime import datetime

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from reverie.core.engine import Hit, RecallResult
from reverie.core.models import Memory, Status, Tier
from reverie.core.policy import Policy
from reverie.core.scoring import decay_rate

TIER_STYLE = {
    Tier.TRACE: "dim",
    Tier.UNIT: "cyan",
    Tier.CRYSTAL: "bold magenta",
    Tier.SYNTHESIS: "green",
}
STATUS_STYLE = {
    Status.ACTIVE: "green",
    Status.SUPERSEDED: "yellow",
    Status.CONSOLIDATED: "blue",
    Status.ARCHIVED: "dim",
}


def quiet_model_loading() -> None:
    """Keep the model hub's own progress bars ("Loading weights ...") out of our output;
    rich draws the progress that matters. A user's explicit setting wins."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def fmt_time(ts: datetime | None) -> str:
    """Minutes are enough to read a timeline; the export keeps the exact time."""
    return "-" if ts is None else ts.strftime("%Y-%m-%d %H:%M")


def fmt_date(ts: datetime | None) -> str:
    return "-" if ts is None else ts.strftime("%Y-%m-%d")


def fmt_sources(sources: Iterable[str], limit: int = 3) -> str:
    items = sorted(sources)
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit})" if len(items) > limit else "")


def tier_text(tier: Tier) -> Text:
    return Text(tier.value, style=TIER_STYLE.get(tier, ""))


def status_text(status: Status) -> Text:
    return Text(status.value, style=STATUS_STYLE.get(status, ""))


def hits_table(
    result: RecallResult | Sequence[Hit], *, title: str | None = None, show_ids: bool = False
) -> Table:
    """Recall hits, best first: the numbers a user needs to see why each ranked."""
    table = Table(title=title, title_justify="left", show_lines=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("score", justify="right")
    table.add_column("tier")
    table.add_column("decay", justify="right")
    table.add_column("memory", overflow="fold")
    if show_ids:
        table.add_column("id", style="dim", overflow="fold")
    hits = list(result)
    for i, h in enumerate(hits, 1):
        text = Text(h.memory.text)
        if not h.memory.is_active:
            text.append(f"  [{h.memory.status.value}]", style="yellow")
        row: list[str | Text] = [
            str(i),
            f"{h.score:.3f}",
            tier_text(h.memory.tier),
            f"{h.explanation.decay:.3f}",
            text,
        ]
        if show_ids:
            row.append(h.memory.id)
        table.add_row(*row)
    if not hits:
        table.add_row("", "", "", "", Text("(nothing recalled)", style="dim"))
    return table


def history_table(
    versions: Sequence[Memory], *, title: str | None = None, precise: bool = True
) -> Table:
    """Every version of a fact, oldest first, with the interval it was believed.
    `precise=False` shows days only, for narrow terminals."""
    when = fmt_time if precise else fmt_date
    table = Table(title=title, title_justify="left")
    table.add_column("object", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("tier")
    table.add_column("valid_from", no_wrap=True)
    table.add_column("valid_to", no_wrap=True)
    table.add_column("sources", overflow="fold")
    table.add_column("confidence", justify="right")
    for m in versions:
        table.add_row(
            m.fact.object if m.fact is not None else m.text,
            status_text(m.status),
            tier_text(m.tier),
            when(m.valid_from),
            when(m.valid_to) if m.valid_to is not None else "(current)",
            fmt_sources(m.sources),
            f"{m.confidence:.2f}",
        )
    return table


def explanation_panel(hit: Hit, policy: Policy, *, title: str = "Why this memory?") -> Panel:
    """Every term of a hit's score, and the formula that joins them."""
    e = hit.explanation
    m = hit.memory
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("memory", m.text)
    table.add_row(
        "relevance",
        f"{e.relevance:.3f}  = {policy.retrieval.dense_weight:.2f} x dense {e.dense:.3f}"
        f" + {1 - policy.retrieval.dense_weight:.2f} x lexical (BM25, normalised) {e.lexical:.3f}",
    )
    never = m.tier is Tier.CRYSTAL or m.pinned
    half_life = math.log(2.0) / decay_rate(m.kind, m.importance, policy)
    table.add_row(
        "decay",
        f"{e.decay:.3f}  (S0 = importance {m.importance:.2f}"
        + (
            ", never decays)"
            if never
            else f", half-life {half_life:.0f} days as a {m.kind.value} memory, "
            f"last used {fmt_time(m.last_access)})"
        ),
    )
    table.add_row(
        "importance",
        f"{e.importance:.3f}  (recency, access frequency, graph degree, confidence"
        f" {m.confidence:.2f})",
    )
    table.add_row("tier", tier_text(e.tier))
    table.add_row(
        "hops",
        "0 (direct match)" if e.hops == 0 else f"{e.hops} (reached over the graph from {e.via})",
    )
    table.add_row(
        "final",
        f"{e.final:.3f}  = {policy.retrieval.alpha:.2f} x relevance"
        f" + {1 - policy.retrieval.alpha:.2f} x decay"
        + (
            f", + {e.speaker:.3f} as said by someone the question names"
            f" ({policy.retrieval.speaker_weight:g} of the way to 1)"
            if e.speaker else ""
        ),
    )
    return Panel(table, title=title, title_align="left", border_style="cyan")
