"""JSONL in, memories out: the one reader behind `reverie ingest` and `reverie demo`.

A line is a message (`{"text": ..., "speaker": "user", ...}`), a fact
(`{"subject": ..., "predicate": ..., "object": ...}`), or either of them in the demo's
typed form (`{"type": "message" | "fact", "session": 1, ...}`). Messages go through
`MemoryEngine.observe`, facts through `remember`.

Every line is its own atomic write, in file order, so a bad line stops the run with
everything before it stored and nothing of it written; `IngestError` says which line
and how many came before. Lines without a `source` get a deterministic one (their
session, or the file name, plus the line number): provenance a user can trace back,
and a re-run of the same file folds into what is already there instead of adding
sources that would wrongly look like independent confirmations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reverie.core.clock import utc
from reverie.core.engine import MemoryEngine, Observation
from reverie.core.errors import InvalidInput, ReverieError
from reverie.core.models import Kind, Memory, Status, parse_kind, validate_namespace

__all__ = [
    "FactLine",
    "IngestError",
    "IngestSummary",
    "MessageLine",
    "ingest",
    "numbered_lines",
    "parse_line",
    "superseded_traces",
]

# Consecutive messages are embedded together: one model call per chunk is several
# times faster than one per line, and each message is still its own atomic write.
# observe_many's own default: a local model wastes less on padding in a larger call.
CHUNK = 256


@dataclass(frozen=True, slots=True)
class MessageLine:
    """One message to `observe`; `text` carries the speaker prefix, `said` is the
    message alone."""

    lineno: int
    text: str
    said: str
    source: str
    at: datetime | None = None
    kind: Kind = Kind.EPISODIC
    importance: float | None = None
    namespace: str | None = None
    session: str | None = None


@dataclass(frozen=True, slots=True)
class FactLine:
    """One fact to `remember`."""

    lineno: int
    subject: str
    predicate: str
    object: str
    source: str
    at: datetime | None = None
    kind: Kind = Kind.SEMANTIC
    namespace: str | None = None
    session: str | None = None


Line = MessageLine | FactLine


class IngestError(InvalidInput):
    """A line could not be ingested; the lines before it are stored, none of it is."""

    def __init__(self, lineno: int, ingested: int, cause: BaseException) -> None:
        self.lineno = lineno
        self.ingested = ingested
        self.cause = cause
        detail = (
            f"not valid JSON ({cause.msg} at column {cause.colno})"
            if isinstance(cause, json.JSONDecodeError)
            else str(cause)
        )
        super().__init__(
            f"line {lineno}: {type(cause).__name__}: {detail} "
            f"({ingested} line{'s' if ingested != 1 else ''} before it "
            f"{'were' if ingested != 1 else 'was'} ingested and stay stored; "
            f"nothing of line {lineno} was written)"
        )


@dataclass(slots=True)
class IngestSummary:
    lines: int = 0  # non-blank lines written
    messages: int = 0
    facts: int = 0
    stored: int = 0  # new memories
    folded: int = 0  # lines that added a source to an existing memory instead
    superseded: int = 0  # memories that became superseded during the run
    namespaces: list[str] = field(default_factory=list)
    memories: dict[int, Memory] = field(default_factory=dict)  # line -> memory, if kept

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "messages": self.messages,
            "facts": self.facts,
            "stored": self.stored,
            "folded": self.folded,
            "superseded": self.superseded,
            "namespaces": list(self.namespaces),
        }


# ---------------------------------------------------------------------------- parsing


def numbered_lines(stream: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number, text) for the non-blank lines of `stream`, numbered from 1."""
    for n, raw in enumerate(stream, 1):
        if raw.strip():
            yield n, raw


def _text(obj: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    v = obj.get(name)
    if v is None:
        if required:
            raise InvalidInput(f"missing field {name!r}")
        return None
    if not isinstance(v, str) or not v.strip():
        raise InvalidInput(f"field {name!r} must be non-empty text, got {v!r}")
    return v


def _time(obj: dict[str, Any]) -> datetime | None:
    v = obj.get("at")
    if v is None:
        return None
    if not isinstance(v, str):
        raise InvalidInput(f"field 'at' must be an ISO-8601 time, got {v!r}")
    try:
        return utc(datetime.fromisoformat(v))
    except ValueError:
        raise InvalidInput(f"field 'at' must be an ISO-8601 time, got {v!r}") from None


def _session(obj: dict[str, Any]) -> str | None:
    v = obj.get("session")
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | str) or not str(v).strip():
        raise InvalidInput(f"field 'session' must be a number or text, got {v!r}")
    return str(v)


def parse_line(raw: str, lineno: int, *, origin: str = "stdin") -> Line:
    """One JSONL line as a message or a fact. `origin` names the file in default
    sources. Raises `InvalidInput` (or `json.JSONDecodeError`) on a bad line. A
    message's importance, unless given, is the engine's to judge (it looks past the
    speaker prefix)."""
    obj = json.loads(raw)
    if not isinstance(obj, dict):
        raise InvalidInput(f"expected a JSON object, got {type(obj).__name__}")
    typ = obj.get("type")
    if typ is None:
        typ = "fact" if "subject" in obj else "message" if "text" in obj else None
    if typ not in ("message", "fact"):
        raise InvalidInput(
            f"unknown line type {typ!r}: a line is a message (with 'text') or a fact "
            "(with 'subject', 'predicate', 'object')"
            if typ is not None
            else "neither a message (no 'text') nor a fact (no 'subject', 'predicate', 'object')"
        )
    session = _session(obj)
    ns = obj.get("namespace")
    namespace = validate_namespace(ns) if ns is not None else None
    at = _time(obj)
    given_source = _text(obj, "source", required=False)
    if typ == "fact":
        kind = parse_kind(obj.get("kind", Kind.SEMANTIC.value))
        if kind is Kind.EPISODIC:
            raise InvalidInput("a fact's kind is semantic or procedural, not episodic")
        subject, predicate, object_ = (_text(obj, f) for f in ("subject", "predicate", "object"))
        assert subject is not None and predicate is not None and object_ is not None
        # A fact is one claim per session, however many lines restate it there.
        source = given_source or (f"session-{session}" if session else f"{origin}:{lineno}")
        return FactLine(
            lineno, subject, predicate, object_, source, at, kind, namespace, session
        )
    text = _text(obj, "text")
    assert text is not None
    speaker = _text(obj, "speaker", required=False) or _text(obj, "role", required=False)
    importance = obj.get("importance")
    if importance is not None and (
        isinstance(importance, bool) or not isinstance(importance, int | float)
    ):
        raise InvalidInput(f"field 'importance' must be a number in [0, 1], got {importance!r}")
    stored_text = f"{speaker}: {text}" if speaker is not None else text
    kind = parse_kind(obj.get("kind", Kind.EPISODIC.value))
    source = given_source or (
        f"session-{session}:{lineno}" if session else f"{origin}:{lineno}"
    )
    return MessageLine(
        lineno,
        stored_text,
        text,
        source,
        at,
        kind,
        float(importance) if importance is not None else None,
        namespace,
        session,
    )


# ---------------------------------------------------------------------------- writing


class _Counter:
    """Memory and supersession counts per namespace, taken before the first write to
    it, so the summary reports what this run changed."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.before: dict[str, dict[str, int]] = {}

    def touch(self, ns: str) -> None:
        if ns not in self.before:
            self.before[ns] = self.engine.stats(namespace=ns)

    def deltas(self) -> tuple[int, int]:
        stored = superseded = 0
        for ns, before in self.before.items():
            now = self.engine.stats(namespace=ns)
            stored += now["total"] - before["total"]
            superseded += now["status:superseded"] - before["status:superseded"]
        return stored, superseded


def ingest(
    engine: MemoryEngine,
    lines: Iterable[tuple[int, str]],
    *,
    origin: str = "stdin",
    namespace: str | None = None,
    progress: Callable[[int], None] | None = None,
    on_line: Callable[[Line], None] | None = None,
    keep_memories: bool = False,
) -> IngestSummary:
    """Parse and write `lines` in order. Runs of messages are embedded in chunks; facts
    are written one by one. Raises `IngestError` at the first bad line, after writing
    every line before it. `on_line` sees each parsed line before it is written;
    `keep_memories` keeps each line's stored memory in the summary (off by default so
    a large file does not pile up in memory)."""
    default_ns = validate_namespace(namespace or engine.default_namespace)
    summary = IngestSummary()
    counter = _Counter(engine)
    pending: list[MessageLine] = []

    def ns_of(line: Line) -> str:
        return line.namespace or default_ns

    def flush() -> None:
        if not pending:
            return
        chunk = list(pending)
        pending.clear()
        ns = ns_of(chunk[0])
        items = [
            Observation(m.text, m.source, m.at, m.kind, m.importance) for m in chunk
        ]
        try:
            stored = engine.observe_many(items, namespace=ns)
        except ReverieError:
            # Find the bad line: one by one, each still atomic. Lines the failed batch
            # may already have written fold back into themselves (same source).
            stored = []
            for m, item in zip(chunk, items, strict=True):
                try:
                    stored.append(engine.observe_many([item], namespace=ns)[0])
                except ReverieError as e:
                    raise IngestError(m.lineno, summary.lines, e) from e
                summary.lines += 1
                summary.messages += 1
                if keep_memories:
                    summary.memories[m.lineno] = stored[-1]
                if progress is not None:
                    progress(1)
            return
        if keep_memories:
            for m, mem in zip(chunk, stored, strict=True):
                summary.memories[m.lineno] = mem
        summary.lines += len(chunk)
        summary.messages += len(chunk)
        if progress is not None:
            progress(len(chunk))

    try:
        for lineno, raw in lines:
            try:
                line = parse_line(raw, lineno, origin=origin)
            except (ReverieError, ValueError) as e:  # JSONDecodeError is a ValueError
                flush()
                raise IngestError(lineno, summary.lines, e) from e
            ns = ns_of(line)
            counter.touch(ns)
            if on_line is not None:
                on_line(line)
            if isinstance(line, MessageLine):
                if pending and (ns_of(pending[0]) != ns or len(pending) >= CHUNK):
                    flush()
                pending.append(line)
                continue
            flush()
            try:
                mem = engine.remember(
                    line.subject,
                    line.predicate,
                    line.object,
                    namespace=ns,
                    source=line.source,
                    kind=line.kind,
                    at=line.at,
                )
            except ReverieError as e:
                raise IngestError(line.lineno, summary.lines, e) from e
            if keep_memories:
                summary.memories[line.lineno] = mem
            summary.lines += 1
            summary.facts += 1
            if progress is not None:
                progress(1)
        flush()
    finally:
        summary.stored, summary.superseded = counter.deltas()
        summary.folded = max(0, summary.lines - summary.stored)
        summary.namespaces = sorted(counter.before)
    return summary


def superseded_traces(engine: MemoryEngine, namespace: str | None = None) -> list[Memory]:
    """Free-text memories (no fact key) that a later correction superseded."""
    ns = validate_namespace(namespace or engine.default_namespace)
    return [
        m
        for m in engine.memories(namespace=ns, statuses=[Status.SUPERSEDED])
        if m.key is None and m.superseded_by is not None
    ]
