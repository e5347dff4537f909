"""The inspector's pages: each a function of the engine and the request's parameters,
returning a `Response` (HTML) or raising `HttpError` (a 400, 403 or 404 page).

Every page reads a bounded amount: lists are pages of `page_size` read from the store's
streaming `scan` (which reads in keyset pages, so the first page of a namespace of a
million memories costs what it costs for a thousand), a filtered list stops after
`scan_limit` records and offers the next stretch, and a memory's page caps every list
it shows. Only the health page reads a whole namespace (the timeline, and the engine's
own `maintenance_due`), and it says so.

Reads never change memory: search runs `recall(..., reinforce=False)`. Changes (confirm,
forget, restore) exist only when the inspector was started with `allow_changes`, ask on
a confirmation page first, and are POSTs carrying the process's CSRF token.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.adapters.inspect.html import (
    attr,
    decay_svg,
    esc,
    fmt_num,
    fmt_time,
    kv_table,
    link,
    page,
    status_badge,
    table,
    tier_badge,
    timeline_svg,
    url,
)
from reverie.core.engine import MemoryEngine
from reverie.core.errors import InvalidInput, ReverieError
from reverie.core.models import EdgeType, Kind, Memory, Status, Tier, validate_namespace
from reverie.core.scoring import (
    accesses_in_window,
    days_between,
    decay_rate,
    decay_score,
    decay_value,
    half_life_days,
    importance_score,
    never_decays,
)
from reverie.core.triggers import Trigger

__all__ = ["HttpError", "Inspector", "Response"]

# What one page may show (each list says when it holds more than it shows).
MAX_QUERY_CHARS = 500
MAX_CHAIN = 200  # versions of one memory shown on its page
MAX_MEMBERS = 200  # members of a synthesis shown on its page
MAX_EDGES = 100  # edges shown on a memory's page
MAX_SOURCES = 100
MAX_NAMESPACES = 200  # namespaces on the front page, by name
MAX_K = 50  # recall hits on the search page
SNIPPET = 160  # characters of a memory's text in a list
ACTIONS = ("confirm", "forget", "restore")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: str
    headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@dataclass(slots=True)
class _HealthJob:
    """One background read of a namespace for its health page."""

    started: float  # time.monotonic()
    finished: bool = False
    read_at: datetime | None = None  # the engine's clock when the read began
    seconds: float = 0.0
    due: list[Trigger] | None = None
    buckets: list[tuple[str, dict[str, int]]] | None = None
    error: str | None = None


class HttpError(Exception):
    """A page that explains a bad request (400), a refused action (403) or an unknown
    namespace, memory or address (404)."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


Params = Mapping[str, Sequence[str]]


def _one(params: Params, name: str, default: str | None = None) -> str | None:
    values = params.get(name)
    if not values:
        return default
    if len(values) > 1:
        raise HttpError(400, "Bad request", f"the parameter {name!r} is given more than once")
    return values[0]


def _choice(params: Params, name: str, allowed: Sequence[str]) -> str | None:
    value = (_one(params, name) or "").strip()
    if value in ("", "any"):
        return None
    if value not in allowed:
        raise HttpError(
            400, "Bad request",
            f"{name} {value!r} is not one of: {', '.join(allowed)}",
        )
    return value


def _int(params: Params, name: str, default: int, low: int, high: int) -> int:
    raw = _one(params, name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise HttpError(400, "Bad request", f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise HttpError(400, "Bad request", f"{name} must be between {low} and {high}, got {value}")
    return value


def _text(params: Params, name: str) -> str:
    value = (_one(params, name) or "").strip()
    if len(value) > MAX_QUERY_CHARS:
        raise HttpError(
            400, "Bad request", f"{name} is longer than {MAX_QUERY_CHARS} characters"
        )
    return value


def _snippet(text: str, n: int = SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


class Inspector:
    """The pages over one engine. `allow_changes` turns on the actions; `page_size` is the
    length of a list page; `scan_limit` the most records one filtered list page reads
    before it offers the next stretch."""

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        allow_changes: bool = False,
        page_size: int = 50,
        scan_limit: int = 20_000,
    ) -> None:
        if page_size < 1 or scan_limit < page_size:
            raise InvalidInput("page_size must be >= 1 and scan_limit >= page_size")
        self.engine = engine
        self.allow_changes = allow_changes
        self.page_size = page_size
        self.scan_limit = scan_limit
        self.token = secrets.token_urlsafe(32)  # this process's CSRF token
        self._health: dict[str, _HealthJob] = {}
        self._health_lock = threading.Lock()
        self._write_lock = threading.Lock()

    # ------------------------------------------------------------------ dispatch

    def get(self, path: str, params: Params) -> Response:
        routes = {
            "/": self.index,
            "/namespace": self.namespace_page,
            "/health": self.health,
            "/memories": self.memories,
            "/memory": self.memory,
            "/search": self.search,
            "/act": self.confirm_action,
        }
        handler = routes.get(path)
        if handler is None:
            raise HttpError(404, "Not found", f"there is no page at {path!r}")
        return handler(params)

    def post(self, path: str, form: Params) -> Response:
        if path != "/act":
            raise HttpError(404, "Not found", f"there is no action at {path!r}")
        return self.act(form)

    def _html(
        self, title: str, body: str, *, ns: str | None = None, query: str = "",
        refresh: int | None = None,
    ) -> Response:
        return Response(200, page(
            title, body, namespace=ns, query=query, allow_changes=self.allow_changes,
            refresh=refresh,
        ))

    def error_page(self, error: HttpError) -> Response:
        body = (
            f'<h1>{error.status} · {esc(error.title)}</h1>'
            f'<div class="error" id="error-message">{esc(error.message)}</div>'
            f'<p>{link("/", "back to the namespaces")}</p>'
        )
        return Response(
            error.status,
            page(f"{error.status} {error.title}", body, allow_changes=self.allow_changes),
        )

    # ------------------------------------------------------------------ reads

    @property
    def _store(self) -> Any:
        return self.engine.store

    def _namespace(self, params: Params) -> str:
        raw = _one(params, "ns")
        if raw is None or raw == "":
            raise HttpError(400, "Bad request", "name a namespace: ?ns=...")
        try:
            ns = validate_namespace(raw)
        except ReverieError as e:
            raise HttpError(400, "Bad request", str(e)) from None
        if not self._holds_any(ns):
            raise HttpError(404, "Unknown namespace", f"no namespace {ns!r} holds any memory")
        return ns

    def _memory(self, ns: str, memory_id: str | None) -> Memory:
        if not memory_id:
            raise HttpError(400, "Bad request", "name a memory: ?id=...")
        found = self._store.get(ns, memory_id)
        if found is None:
            raise HttpError(
                404, "Unknown memory", f"namespace {ns!r} holds no memory {memory_id!r}"
            )
        return found  # type: ignore[no-any-return]

    def _flash(self, params: Params) -> str:
        done = _one(params, "done")
        if done not in ACTIONS:
            return ""
        n = _one(params, "n") or ""
        what = {
            "confirm": "Confirmed: this memory is now a crystal (it no longer decays).",
            "restore": "Restored: this version is current again.",
            "forget": f"Forgotten: {int(n) if n.isdigit() else 0} record(s) deleted.",
        }[done]
        return f'<div class="flash" id="flash">{esc(what)}</div>'

    def index(self, params: Params) -> Response:
        names = self.engine.namespaces()
        shown = names[:MAX_NAMESPACES]
        rows = []
        for ns in shown:
            c = self._store.count(ns)
            rows.append([
                link(url("/namespace", ns=ns), ns),
                *(
                    link(url("/memories", ns=ns, status=s.value), c.get(f"status:{s.value}", 0))
                    for s in Status
                ),
                str(c.get("total", 0)),
            ])
        body = f"{self._flash(params)}<h1>Namespaces</h1>"
        if not names:
            body += '<p class="muted">The store holds no memory yet.</p>'
        else:
            body += table(
                ["namespace", *(s.value for s in Status), "total"], rows,
                num=range(1, 6), test_id="namespaces",
            )
        if len(names) > len(shown):
            body += f'<p class="note">{len(names) - len(shown)} more namespaces not shown.</p>'
        return self._html("Namespaces", body)

    def namespace_page(self, params: Params) -> Response:
        ns = self._namespace(params)
        st = self.engine.stats(namespace=ns)
        cards = "".join(
            f'<div class="card" id="count-{s.value}"><div class="muted">'
            f'{status_badge(s.value)}</div><div class="n">'
            f'{link(url("/memories", ns=ns, status=s.value), st.get(f"status:{s.value}", 0))}'
            "</div></div>"
            for s in Status
        )
        tiers = table(
            ["tier (active memories)", "count"],
            [
                [link(url("/memories", ns=ns, status="active", tier=t.value), t.value),
                 str(st.get(f"tier:{t.value}", 0))]
                for t in Tier
            ],
            num=[1], test_id="tiers",
        )
        facts = kv_table([
            ("memories, any status", esc(st.get("total", 0))),
            ("edges", esc(st.get("edges", 0))),
            ("vectors indexed", esc(st.get("vectors", 0))),
            ("embedder", esc(st.get("embedder", ""))),
        ])
        body = (
            f"{self._flash(params)}<h1>Namespace {esc(ns)}</h1>"
            f'<div class="grid" id="counts">{cards}</div>'
            f'<p>{link(url("/health", ns=ns), "Health: timeline and maintenance due →")}'
            ' <span class="muted">(reads the whole namespace, in the background)</span></p>'
            f"<h2>Tiers</h2>{tiers}<h2>Totals</h2>{facts}"
            f'<p>{link(url("/memories", ns=ns), "Browse the memories →")}</p>'
        )
        return self._html(f"Namespace {ns}", body, ns=ns)

    def health(self, params: Params) -> Response:
        """The counts at once; the timeline and `maintenance_due`, which read the whole
        namespace, from a background job whose page refreshes itself until it is done."""
        ns = self._namespace(params)
        counts = self._store.count(ns)
        job = self._health_job(ns, restart=(_one(params, "recompute") or "") == "1")
        body = (
            f"<h1>Health of {esc(ns)}</h1>"
            + kv_table(
                [(s.value, f"{status_badge(s.value)} {esc(counts.get(f'status:{s.value}', 0))}")
                 for s in Status] + [("total", esc(counts.get("total", 0)))],
                test_id="health-counts",
            )
        )
        if not job.finished:
            waited = time.monotonic() - job.started
            body += (
                '<p class="note" id="health-pending">Reading the whole namespace for the '
                f"timeline and the maintenance signals ({waited:.0f} s so far); this page "
                "refreshes itself.</p>"
            )
            return self._html(f"Health {ns}", body, ns=ns, refresh=2)
        if job.error is not None:
            body += f'<div class="error" id="health-error">{esc(job.error)}</div>'
            return self._html(f"Health {ns}", body, ns=ns)
        due, buckets = job.due or [], job.buckets or []
        if due:
            due_html = table(
                ["signal", "value", "threshold", "why"],
                [[esc(t.name), fmt_num(t.value, 3), fmt_num(t.threshold, 3), esc(t.reason)]
                 for t in due],
                num=[1, 2], test_id="maintenance-due",
            )
        else:
            due_html = '<p id="maintenance-due">No maintenance is due.</p>'
        statuses = [s.value for s in Status]
        rows = [
            [esc(label), *(str(c.get(s, 0)) for s in statuses), str(sum(c.values()))]
            for label, c in buckets
        ]
        body += (
            f'<p class="muted" id="health-computed">Read at {esc(fmt_time(job.read_at))} '
            f"in {job.seconds:.1f} s; "
            f'{link(url("/health", ns=ns, recompute=1), "read again")}</p>'
            f"<h2>Maintenance due</h2>{due_html}"
            "<h2>Timeline</h2>"
            '<p class="muted">Memories by the period they were created in, coloured by '
            "their status now.</p>"
            + timeline_svg(buckets)
            + "<details><summary>the numbers</summary>"
            + table(["period", *statuses, "total"], rows, num=range(1, 6), test_id="timeline-table")
            + "</details>"
        )
        return self._html(f"Health {ns}", body, ns=ns)

    def _health_job(self, ns: str, *, restart: bool) -> _HealthJob:
        """The namespace's health job: the last one, or a new one when there is none or
        a finished one is to be read again."""
        with self._health_lock:
            job = self._health.get(ns)
            if job is not None and not (restart and job.finished):
                return job
            job = self._health[ns] = _HealthJob(started=time.monotonic())
        threading.Thread(
            target=self._run_health, args=(ns, job), name="reverie-inspect-health", daemon=True
        ).start()
        return job

    def _run_health(self, ns: str, job: _HealthJob) -> None:
        try:
            job.read_at = self.engine.clock.now()
            job.due = self.engine.maintenance_due(ns)
            job.buckets = self._timeline(ns)
        except ReverieError as e:
            job.error = f"could not read the namespace: {e}"
        except Exception:
            traceback.print_exc(file=sys.stderr)
            job.error = "reading the namespace failed; the details are in the terminal"
        finally:
            job.seconds = time.monotonic() - job.started
            job.finished = True

    def _timeline(self, ns: str) -> list[tuple[str, dict[str, int]]]:
        """Created-per-period counts by status now, over every record of the namespace."""
        days: dict[datetime, Counter[str]] = {}
        for m in self._store.scan(ns):
            day = m.created_at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            days.setdefault(day, Counter())[m.status.value] += 1
        return _bucket(days)

    def memories(self, params: Params) -> Response:
        ns = self._namespace(params)
        status = _choice(params, "status", [s.value for s in Status])
        tier = _choice(params, "tier", [t.value for t in Tier])
        kind = _choice(params, "kind", [k.value for k in Kind])
        text = _text(params, "q")
        skip = _int(params, "skip", 0, 0, 10**12)
        found, next_skip, stopped = self._list(ns, status, tier, kind, text, skip)

        def options(name: str, values: Sequence[str], chosen: str | None) -> str:
            opts = ['<option value="">any</option>'] + [
                f'<option value="{attr(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>'
                for v in values
            ]
            return (
                f'<label>{esc(name)}<select name="{attr(name)}" id="filter-{attr(name)}">'
                f'{"".join(opts)}</select></label>'
            )

        form = (
            '<form class="filters" method="get" action="/memories" id="filters">'
            f'<input type="hidden" name="ns" value="{attr(ns)}">'
            + options("status", [s.value for s in Status], status)
            + options("tier", [t.value for t in Tier], tier)
            + options("kind", [k.value for k in Kind], kind)
            + '<label>text contains<input type="text" name="q" id="filter-q" '
            f'value="{attr(text)}" size="28"></label>'
            '<button type="submit" id="apply-filters">filter</button></form>'
        )
        rows = [
            [
                link(url("/memory", ns=ns, id=m.id), _snippet(m.text), cls="mem"),
                esc(m.kind.value), tier_badge(m.tier.value), status_badge(m.status.value),
                esc(fmt_time(m.created_at)), str(len(m.sources)),
            ]
            for m in found
        ]
        listing = (
            table(["memory", "kind", "tier", "status", "created", "sources"], rows,
                  num=[5], test_id="memory-list")
            if rows else '<p id="memory-list" class="muted">No memory matches.</p>'
        )
        base = dict(ns=ns, status=status, tier=tier, kind=kind, q=text or None)
        pager = [f'<span class="muted" id="range">'
                 f'{"showing " + str(len(found)) if found else "nothing to show"}'
                 f" (from position {skip + 1} in the order they were stored)</span>"]
        if skip:
            pager.insert(0, link(url("/memories", **base), "« first page"))
        if next_skip is not None:
            pager.append(link(url("/memories", **base, skip=next_skip), "next page »",
                              cls="next"))
        note = ""
        if stopped:
            note = (
                f'<p class="note">Read {self.scan_limit} records without filling the page; '
                "the next page reads on from there.</p>"
            )
        body = (
            f"<h1>Memories of {esc(ns)}</h1>{form}{note}"
            f'<div class="pager">{" ".join(pager)}</div>{listing}'
            f'<div class="pager">{" ".join(pager[-1:]) if next_skip is not None else ""}</div>'
        )
        return self._html(f"Memories {ns}", body, ns=ns)

    def _list(
        self,
        ns: str,
        status: str | None,
        tier: str | None,
        kind: str | None,
        text: str,
        skip: int,
    ) -> tuple[list[Memory], int | None, bool]:
        """One page: the memories after the first `skip` of the status- and tier-filtered
        scan that also match kind and text. Returns them, where the next page starts
        (None: no more), and whether the page stopped at `scan_limit`."""
        needle = text.casefold()
        filtered_here = bool(kind or needle)
        rows: Iterator[Memory] = self._store.scan(
            ns,
            statuses=None if status is None else [Status(status)],
            tiers=None if tier is None else [Tier(tier)],
            batch_size=500 if filtered_here or skip else self.page_size + 1,
        )
        found: list[Memory] = []
        position = skip
        try:
            for _ in range(skip):
                if next(rows, None) is None:
                    return [], None, False
            for read, m in enumerate(rows, 1):
                if (kind is None or m.kind.value == kind) and (
                    not needle or needle in m.text.casefold() or m.id == text
                ):
                    if len(found) == self.page_size:
                        return found, position, False
                    found.append(m)
                position += 1
                if read >= self.scan_limit:
                    return found, position, True
            return found, None, False
        finally:
            _close(rows)

    def _holds_any(self, ns: str) -> bool:
        """Whether the namespace holds a memory: one record read, whatever its size."""
        rows = self._store.scan(ns, batch_size=1)
        try:
            return next(rows, None) is not None
        finally:
            _close(rows)

    # ------------------------------------------------------------------ one memory

    def memory(self, params: Params) -> Response:
        ns = self._namespace(params)
        m = self._memory(ns, _one(params, "id"))
        now = self.engine.clock.now()
        degree = self._store.degrees(ns, [m.id]).get(m.id, 0)
        sections = [
            self._flash(params),
            f'<h1>{tier_badge(m.tier.value)} {status_badge(m.status.value)} '
            f'<span class="muted">memory</span> <code id="memory-id">{esc(m.id)}</code></h1>',
            f'<div class="memtext" id="memory-text">{esc(m.text)}</div>',
            self._actions(ns, m),
            "<h2>Record</h2>",
            kv_table(self._record_rows(m), test_id="record"),
            "<h2>Why it ranks as it does</h2>",
            self._explanation(m, degree, now),
            "<h2>Decay</h2>",
            self._decay(m, now),
            "<h2>Sources</h2>",
            self._sources(m),
            "<h2>Versions (oldest → newest)</h2>",
            self._chain(ns, m),
            "<h2>Consolidation lineage</h2>",
            self._lineage(ns, m),
            "<h2>Edges</h2>",
            self._edges(ns, m),
        ]
        if m.metadata:
            shown = json.dumps(m.metadata, ensure_ascii=False, indent=2, default=str)
            if len(shown) > 4000:
                shown = shown[:4000] + "\n…"
            sections.append(
                f'<h2>Metadata</h2><pre class="text" id="metadata">{esc(shown)}</pre>'
            )
        return self._html(f"Memory {m.id}", "".join(sections), ns=ns)

    def _record_rows(self, m: Memory) -> list[tuple[str, str]]:
        rows = [
            ("kind", esc(m.kind.value)),
            ("tier", esc(m.tier.value)),
            ("status", status_badge(m.status.value)),
            ("created", esc(fmt_time(m.created_at))),
            ("valid from", esc(fmt_time(m.valid_from))),
            ("valid to", esc(fmt_time(m.valid_to))),
            ("last accessed", esc(fmt_time(m.last_accessed_at))),
            ("accesses", esc(m.access_count)),
            ("importance (S0)", fmt_num(m.importance)),
            ("confidence", fmt_num(m.confidence)),
            ("pinned / confirmed / retention hold",
             esc(f"{'yes' if m.pinned else 'no'} / {'yes' if m.user_confirmed else 'no'} / "
                 f"{'yes' if m.retention_exempt else 'no'}")),
            ("version", esc(m.version)),
        ]
        if m.fact is not None:
            rows.insert(0, ("fact", esc(f"{m.fact.subject} · {m.fact.predicate} · "
                                        f"{m.fact.object}")))
        if m.entities:
            rows.append(("entities", esc(", ".join(sorted(m.entities)[:50]))))
        return rows

    def _explanation(self, m: Memory, degree: int, now: datetime) -> str:
        policy = self.engine.policy
        days = days_between(m.last_access, now)
        decay = decay_score(m, now, policy)
        importance = importance_score(m, degree, now, policy)
        alpha = policy.retrieval.alpha
        if never_decays(m):
            decay_why = "does not decay (a crystal or pinned): salience stays at S0"
        else:
            lam = decay_rate(m.kind, m.importance, policy)
            decay_why = (
                f"S0 · e^(−λ·t) = {m.importance:.4f} · e^(−{lam:.5f} · {days:.2f}) "
                f"(half-life {math.log(2) / lam:.1f} d)"
            )
        rows = [
            ("decay now", f'<span id="decay-now">{fmt_num(decay)}</span> '
                          f'<span class="muted">{esc(decay_why)}</span>'),
            ("days since the last access", fmt_num(days, 2)),
            ("importance blend", f'<span id="importance-now">{fmt_num(importance)}</span> '
             f'<span class="muted">{esc(self._importance_why(m, degree, now))}</span>'),
            ("degree (edges in + out)", esc(degree)),
            ("final score for a query",
             esc(f"{alpha:g} · relevance + {1 - alpha:.2f} · decay {decay:.4f}: relevance "
                 "depends on the query (use the search box to see it)")),
        ]
        floor = policy.retrieval.decay_floor
        notes = []
        if m.status is not Status.ACTIVE:
            notes.append(f"recall skips it ({m.status.value}) unless asked for history")
        elif decay < floor and not never_decays(m):
            notes.append(
                f"below the recall floor {floor:g}: recall returns it only for a strong match"
            )
        if (m.status is Status.ACTIVE and not never_decays(m)
                and decay < policy.maintenance.evict_salience):
            notes.append(
                f"below the eviction salience {policy.maintenance.evict_salience:g}: the next "
                "sweep distils and archives it"
            )
        out = kv_table(rows, test_id="explanation")
        if notes:
            out += "".join(f'<p class="note">{esc(n)}.</p>' for n in notes)
        return out

    def _importance_why(self, m: Memory, degree: int, now: datetime) -> str:
        p = self.engine.policy.importance
        days = days_between(m.last_access, now)
        return (
            f"{p.weight_recency:g}·recency e^(−{p.recency_rate_per_day:g}·{days:.1f} d) + "
            f"{p.weight_frequency:g}·frequency ({accesses_in_window(m, now, self.engine.policy)}"
            f" accesses in {p.frequency_window_days:g} d) + {p.weight_centrality:g}·centrality "
            f"({degree} edges) + {p.weight_confidence:g}·confidence {m.confidence:.2f}"
        )

    def _decay(self, m: Memory, now: datetime) -> str:
        policy = self.engine.policy
        days = days_between(m.last_access, now)
        value = decay_score(m, now, policy)
        if never_decays(m):
            horizon = max(30.0, days * 1.2)
            points = [(horizon * i / 60, m.importance) for i in range(61)]
        else:
            lam = decay_rate(m.kind, m.importance, policy)
            horizon = max(4 * math.log(2) / lam, days * 1.15, 1.0)
            points = [
                (horizon * i / 80, decay_value(m.importance, m.kind, horizon * i / 80, policy))
                for i in range(81)
            ]
        svg = decay_svg(
            points, now_days=days, now_value=value,
            thresholds={
                "evict": policy.maintenance.evict_salience,
                "recall floor": policy.retrieval.decay_floor,
            },
        )
        half = "none" if never_decays(m) else f"{half_life_days(m.kind, policy):g} d"
        return (
            f"{svg}<p class=muted>Base half-life for {esc(m.kind.value)}: {esc(half)}; the clock "
            "restarts at each access. The curve is the scoring formula from the policy "
            "in use.</p>"
        )

    def _sources(self, m: Memory) -> str:
        if not m.sources:
            return '<p class="muted" id="sources">No source recorded.</p>'
        items = sorted(m.sources)
        more = len(items) - MAX_SOURCES
        lis = "".join(f"<li>{esc(s)}</li>" for s in items[:MAX_SOURCES])
        tail = f'<p class="muted">{more} more not shown.</p>' if more > 0 else ""
        return f'<ul id="sources">{lis}</ul>{tail}'

    def _chain(self, ns: str, m: Memory) -> str:
        if m.fact is not None and m.key is not None:
            versions = self.engine.history(
                m.fact.subject, m.fact.predicate, namespace=ns, kind=m.kind
            )
        else:
            versions = self.engine.history(memory_id=m.id, namespace=ns)
        if len(versions) <= 1:
            return '<p class="muted" id="chain">No other version: nothing superseded it, ' \
                   "and it superseded nothing.</p>"
        shown = versions[:MAX_CHAIN]
        items = []
        for v in shown:
            span = f"{fmt_time(v.valid_from)} → {fmt_time(v.valid_to) if v.valid_to else 'now'}"
            here = v.id == m.id
            label = _snippet(v.text, 100)
            items.append(
                f'<li{" class=here" if here else ""} data-id="{attr(v.id)}">'
                f"{status_badge(v.status.value)} "
                + (esc(label) + " (this page)" if here
                   else link(url("/memory", ns=ns, id=v.id), label, cls="version"))
                + f' <span class="muted">{esc(span)}</span></li>'
            )
        more = len(versions) - len(shown)
        tail = f'<p class="muted">{more} more versions not shown.</p>' if more > 0 else ""
        return f'<ol class="chain" id="chain">{"".join(items)}</ol>{tail}'

    def _lineage(self, ns: str, m: Memory) -> str:
        parts = []
        if m.consolidated_into:
            synth = self._store.get(ns, m.consolidated_into)
            target = (
                link(url("/memory", ns=ns, id=m.consolidated_into), _snippet(synth.text, 100),
                     cls="synthesis")
                if synth is not None
                else esc(m.consolidated_into) + ' <span class="muted">(no longer stored)</span>'
            )
            parts.append(f'<p id="consolidated-into">Consolidated into the synthesis: {target}</p>')
        if m.derived_from:
            ids = sorted(m.derived_from)
            shown = ids[:MAX_MEMBERS]
            members = self._store.get_many(ns, shown)
            rows = []
            for i in sorted(shown, key=lambda i: (members[i].created_at, i) if i in members
                            else (datetime.max.replace(tzinfo=UTC), i)):
                got = members.get(i)
                if got is None:
                    rows.append([esc(i), '<span class="muted">no longer stored</span>', "", ""])
                else:
                    rows.append([
                        link(url("/memory", ns=ns, id=i), _snippet(got.text, 100), cls="member"),
                        status_badge(got.status.value), esc(fmt_time(got.created_at)),
                        esc(", ".join(sorted(got.sources)[:3])),
                    ])
            parts.append(
                f"<p>A synthesis of {len(ids)} members:</p>"
                + table(["member", "status", "created", "sources"], rows, test_id="members")
            )
            if len(ids) > len(shown):
                parts.append(f'<p class="muted">{len(ids) - len(shown)} more not shown.</p>')
        if not parts:
            return '<p class="muted" id="lineage">Not part of a consolidation.</p>'
        return f'<div id="lineage">{"".join(parts)}</div>'

    def _edges(self, ns: str, m: Memory) -> str:
        edges = self._store.edges(ns, [m.id])
        if not edges:
            return '<p class="muted" id="edges">No edges.</p>'
        edges.sort(key=lambda e: (e.type.value, -e.weight, e.src, e.dst))
        shown = edges[:MAX_EDGES]
        others = self._store.get_many(ns, [e.dst if e.src == m.id else e.src for e in shown])
        synthesis = m.tier is Tier.SYNTHESIS
        rows = []
        for e in shown:
            outgoing = e.src == m.id
            other = e.dst if outgoing else e.src
            got = others.get(other)
            target = (
                link(url("/memory", ns=ns, id=other), _snippet(got.text, 90), cls="edge")
                if got is not None else esc(other) + ' <span class="muted">(gone)</span>'
            )
            origin = ""
            if synthesis and e.type is not EdgeType.DERIVED_FROM:
                origin = "inherited from a member"
            rows.append([
                "→ to" if outgoing else "← from", esc(e.type.value), fmt_num(e.weight, 3),
                target, esc(origin),
            ])
        more = len(edges) - len(shown)
        tail = f'<p class="muted">{more} more edges not shown.</p>' if more > 0 else ""
        return table(["direction", "type", "weight", "memory", "note"], rows, num=[2],
                     test_id="edges") + tail

    def _actions(self, ns: str, m: Memory) -> str:
        if not self.allow_changes:
            return ""
        offered = []
        if m.status is Status.ACTIVE and not m.user_confirmed:
            offered.append(("confirm", "Confirm…"))
        if m.status is Status.SUPERSEDED and hasattr(self.engine, "restore"):
            offered.append(("restore", "Restore this version…"))
        offered.append(("forget", "Forget…"))
        buttons = "".join(
            link(url("/act", ns=ns, id=m.id, action=a), label, cls=f"action action-{a}")
            for a, label in offered
        )
        return f'<p class="actions" id="actions">{buttons}</p>'

    # ------------------------------------------------------------------ search

    def search(self, params: Params) -> Response:
        ns = self._namespace(params)
        q = _text(params, "q")
        k = _int(params, "k", 10, 1, MAX_K)
        history = (_one(params, "history") or "") in ("1", "on", "true")
        form = (
            '<form class="filters" method="get" action="/search" id="search-form">'
            f'<input type="hidden" name="ns" value="{attr(ns)}">'
            f'<label>query<input type="text" name="q" id="search-q" value="{attr(q)}" '
            'size="48"></label>'
            f'<label>hits<input type="text" name="k" value="{k}" size="3"></label>'
            '<label>history<input type="checkbox" name="history" value="1"'
            f'{" checked" if history else ""}></label>'
            '<button type="submit" id="search-go">recall</button></form>'
        )
        if not q:
            return self._html(f"Search {ns}", f"<h1>Recall in {esc(ns)}</h1>{form}", ns=ns)
        result = self.engine.recall(
            q, namespace=ns, k=k, include_history=history, reinforce=False
        )
        alpha = self.engine.policy.retrieval.alpha
        rows = []
        for rank, hit in enumerate(result.hits, 1):
            e, m = hit.explanation, hit.memory
            context = f", context {e.context:.3f}" if e.context else ""
            why = (
                f"{alpha:g}·relevance {e.relevance:.3f} (dense {e.dense:.3f}, lexical "
                f"{e.lexical:.3f}{context}) + {1 - alpha:.2f}·decay {e.decay:.3f}"
            )
            if e.speaker:
                why += f"; +{e.speaker:.3f} as said by someone the question names"
            if e.hops:
                why += f"; reached over {e.hops} edge(s)"
            if e.note:
                why += f"; {e.note}"
            rows.append([
                str(rank),
                link(url("/memory", ns=ns, id=m.id), _snippet(m.text), cls="hit"),
                tier_badge(e.tier.value) + " " + status_badge(m.status.value),
                f'<span class="final">{fmt_num(e.final)}</span>',
                fmt_num(e.relevance), fmt_num(e.decay), fmt_num(e.importance),
                esc(why),
            ])
        results = (
            table(["#", "memory", "tier", "score", "relevance", "decay", "importance", "why"],
                  rows, num=[0, 3, 4, 5, 6], test_id="hits")
            if rows else '<p id="hits" class="muted">Nothing recalled.</p>'
        )
        body = (
            f"<h1>Recall in {esc(ns)}</h1>{form}"
            f'<p class="muted">Read-only: recall here does not reinforce what it finds.</p>'
            f"{results}"
        )
        return self._html(f"Search {ns}", body, ns=ns, query=q)

    # ------------------------------------------------------------------ changes

    def _action_target(self, params: Params) -> tuple[str, Memory, str]:
        if not self.allow_changes:
            raise HttpError(
                403, "Read-only",
                "this inspector is read-only; start it with `reverie inspect --allow-changes` "
                "to confirm, forget or restore memories",
            )
        action = _choice(params, "action", list(ACTIONS))
        if action is None:
            raise HttpError(400, "Bad request", f"name an action: {', '.join(ACTIONS)}")
        if action == "restore" and not hasattr(self.engine, "restore"):
            raise HttpError(400, "Bad request", "this version of reverie cannot restore")
        ns = self._namespace(params)
        return ns, self._memory(ns, _one(params, "id")), action

    def confirm_action(self, params: Params) -> Response:
        ns, m, action = self._action_target(params)
        what = {
            "confirm": "Confirm this memory: you vouch for it, it becomes a crystal and no "
                       "longer decays or gets evicted.",
            "forget": "Forget this memory for good: the record, its edges, its vector and "
                      "every synthesis drawn from it are deleted (the synthesis's other "
                      "members become active again). This cannot be undone.",
            "restore": "Restore this superseded version: it becomes current again and the "
                       "version that replaced it is superseded by it.",
        }[action]
        body = (
            f"<h1>{esc(action.capitalize())} this memory?</h1>"
            f'<div class="memtext">{esc(m.text)}</div>'
            f'<p class="note" id="consequence">{esc(what)}</p>'
            '<form method="post" action="/act" id="confirm-form">'
            f'<input type="hidden" name="ns" value="{attr(ns)}">'
            f'<input type="hidden" name="id" value="{attr(m.id)}">'
            f'<input type="hidden" name="action" value="{attr(action)}">'
            f'<input type="hidden" name="token" value="{attr(self.token)}">'
            f'<button type="submit" class="danger" id="do-it">Yes, {esc(action)}</button> '
            f'{link(url("/memory", ns=ns, id=m.id), "cancel")}</form>'
        )
        return self._html(f"{action} {m.id}", body, ns=ns)

    def act(self, form: Params) -> Response:
        token = _one(form, "token") or ""
        if not self.allow_changes:
            self._action_target(form)  # raises the read-only page
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            raise HttpError(403, "Refused", "the form's token does not match this inspector; "
                            "reload the page and try again")
        ns, m, action = self._action_target(form)
        with self._write_lock:
            if action == "confirm":
                self.engine.confirm(m.id, namespace=ns)
                target = url("/memory", ns=ns, id=m.id, done="confirm")
            elif action == "restore":
                self.engine.restore(m.id, namespace=ns)
                target = url("/memory", ns=ns, id=m.id, done="restore")
            else:
                n = self.engine.forget(m.id, namespace=ns)
                target = (url("/namespace", ns=ns, done="forget", n=n)
                          if self._holds_any(ns)
                          else url("/", done="forget", n=n))
        return Response(303, "", (("Location", target),))


def _close(rows: Iterator[Memory]) -> None:
    """Stop a store's scan early (a generator holds its place until closed)."""
    close = getattr(rows, "close", None)
    if close is not None:
        close()


def _bucket(days: Mapping[datetime, Counter[str]]) -> list[tuple[str, dict[str, int]]]:
    """Group per-day counts into days, weeks or months, whichever gives at most ~60 bars."""
    if not days:
        return []
    first, last = min(days), max(days)
    span = (last - first).days + 1
    if span <= 60:
        def key(d: datetime) -> datetime:
            return d

        def label(d: datetime) -> str:
            return d.strftime("%Y-%m-%d")
        step = timedelta(days=1)
    elif span <= 60 * 7:
        def key(d: datetime) -> datetime:
            return d - timedelta(days=d.weekday())

        def label(d: datetime) -> str:
            return "wk " + d.strftime("%Y-%m-%d")
        step = timedelta(days=7)
    else:
        def key(d: datetime) -> datetime:
            return d.replace(day=1)

        def label(d: datetime) -> str:
            return d.strftime("%Y-%m")
        step = timedelta(days=0)
    grouped: dict[datetime, Counter[str]] = {}
    for d, c in days.items():
        grouped.setdefault(key(d), Counter()).update(c)
    # every period from the first to the last, empty ones too, so gaps show as gaps
    out: list[tuple[str, dict[str, int]]] = []
    cursor, end = key(first), key(last)
    while cursor <= end:
        out.append((label(cursor), dict(grouped.get(cursor, Counter()))))
        if step:
            cursor += step
        else:
            cursor = (cursor.replace(year=cursor.year + 1, month=1) if cursor.month == 12
                      else cursor.replace(month=cursor.month + 1))
    return out

