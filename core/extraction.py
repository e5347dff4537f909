"""The LLM fact extractor: (subject, predicate, object) triples from recent traces.

Off the hot path: `observe` never calls an LLM; a maintenance job (or the user) runs
`MemoryEngine.extract_facts(synthesizer=...)` now and then, and each fact it finds is
written with `remember(..., source=<trace id>)`, so the funnel does the rest (a second
trace saying the same thing raises confidence, a different object supersedes).

This module holds the prompt, the JSON schema and the validation. The synthesizer only
parses; here a payload of the wrong shape is an unusable answer (retried with the
error shown to the model, `Policy.maintenance.synthesis_retries` times), while single facts that
are malformed or not grounded in their trace are dropped and counted. Grounding matters
with small models: a fact whose object does not occur in the trace it cites is an
invention, not an extraction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import SynthesisFailed
from .models import Memory, normalize_phrase
from .policy import Policy
from .ports import Synthesizer

__all__ = [
    "EXTRACTION_SCHEMA",
    "ExtractedFact",
    "ExtractionBatch",
    "ExtractionReport",
    "extract_from_traces",
    "extraction_prompt",
    "parse_facts",
]

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "trace": {"type": "integer"},
                    "subject": {"type": "string"},
                    "predicate": {"type": "string"},
                    "object": {"type": "string"},
                },
                "required": ["trace", "subject", "predicate", "object"],
            },
        }
    },
    "required": ["facts"],
}

# One worked example: small models copy its form far more reliably than they follow rules.
_EXAMPLE = (
    "Example.\n"
    "Messages:\n"
    "1. user: I moved to Lisbon last spring\n"
    "2. user: my daughter Ana plays the cello\n"
    "3. user: ok thanks\n"
    'Answer: {"facts": [{"trace": 1, "subject": "user", "predicate": "lives in", '
    '"object": "Lisbon"}, {"trace": 2, "subject": "Ana", "predicate": "plays", '
    '"object": "cello"}]}\n'
)


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    subject: str
    predicate: str
    object: str
    trace_id: str


@dataclass(slots=True)
class ExtractionBatch:
    """What one batch of traces gave: the facts kept, and why the rest were not."""

    facts: list[ExtractedFact] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # one reason per dropped fact
    attempts: int = 0
    failed: str | None = None  # the last error when no attempt gave a usable answer


@dataclass(slots=True)
class ExtractionReport:
    """One `extract_facts` run: how many traces were read, what was written, what failed."""

    traces: int = 0
    batches: int = 0
    facts: int = 0
    rejected: list[str] = field(default_factory=list)
    failed_batches: list[str] = field(default_factory=list)  # last error of each
    attempts: int = 0
    memories: list[Memory] = field(default_factory=list)  # the units written or reinforced

    def add(self, batch: ExtractionBatch) -> None:
        self.batches += 1
        self.attempts += batch.attempts
        self.facts += len(batch.facts)
        self.rejected += batch.rejected
        if batch.failed is not None:
            self.failed_batches.append(batch.failed)


def extraction_prompt(traces: Sequence[Memory], error: str | None = None) -> str:
    lines = [
        "Extract lasting facts from these messages as (subject, predicate, object) triples.",
        "Only facts stated in a message; cite its number as 'trace'. Skip small talk.",
        'Answer with JSON: {"facts": [{"trace": n, "subject": ..., "predicate": ..., '
        '"object": ...}]}',
        "",
        _EXAMPLE,
        "Messages:",
    ]
    lines += [f"{i}. {' '.join(t.text.split())}" for i, t in enumerate(traces, 1)]
    if error is not None:
        lines += ["", f"Your previous answer was unusable: {error}. Answer again, JSON only."]
    lines.append("Answer:")
    return "\n".join(lines)


def parse_facts(
    payload: Mapping[str, Any], traces: Sequence[Memory], policy: Policy
) -> tuple[list[ExtractedFact], list[str]]:
    """Valid, grounded facts and the reasons the others were dropped. A payload without
    a `facts` list is unusable as a whole: `SynthesisFailed`, so the caller retries."""
    if not isinstance(payload, Mapping):
        raise SynthesisFailed(f"expected a JSON object, got {type(payload).__name__}")
    items = payload.get("facts")
    if not isinstance(items, list):
        raise SynthesisFailed('the answer has no "facts" list')
    kept: list[ExtractedFact] = []
    rejected: list[str] = []
    seen: set[tuple[str, str, str, str]] = set()
    for n, item in enumerate(items, 1):
        reason = _problem(item, len(traces), policy)
        if reason is not None:
            rejected.append(f"fact {n}: {reason}")
            continue
        trace = traces[item["trace"] - 1]
        s, p, o = (" ".join(item[f].split()) for f in ("subject", "predicate", "object"))
        if normalize_phrase(o) not in normalize_phrase(trace.text):
            rejected.append(f"fact {n}: object {o!r} does not occur in trace {item['trace']}")
            continue
        key = (normalize_phrase(s), normalize_phrase(p), normalize_phrase(o), trace.id)
        if key in seen:
            continue
        seen.add(key)
        kept.append(ExtractedFact(s, p, o, trace.id))
    return kept, rejected


def _problem(item: object, n_traces: int, policy: Policy) -> str | None:
    if not isinstance(item, Mapping):
        return f"not an object but {type(item).__name__}"
    trace = item.get("trace")
    if isinstance(trace, bool) or not isinstance(trace, int) or not 1 <= trace <= n_traces:
        return f"trace must be a message number 1..{n_traces}, got {trace!r}"
    for name in ("subject", "predicate", "object"):
        v = item.get(name)
        if not isinstance(v, str) or not normalize_phrase(v):
            return f"{name} must be non-empty text, got {v!r}"
        if len(v) > policy.funnel.max_text_chars:
            return f"{name} is longer than {policy.funnel.max_text_chars} characters"
    return None


def extract_from_traces(
    traces: Sequence[Memory], synthesizer: Synthesizer, policy: Policy
) -> ExtractionBatch:
    """Ask once, then re-ask with the error shown up to `synthesis_retries` times."""
    out = ExtractionBatch()
    if not traces:
        return out
    error: str | None = None
    for _ in range(1 + policy.maintenance.synthesis_retries):
        out.attempts += 1
        try:
            payload = synthesizer.synthesize(extraction_prompt(traces, error), EXTRACTION_SCHEMA)
            out.facts, out.rejected = parse_facts(payload, traces, policy)
            out.failed = None
            return out
        except SynthesisFailed as e:
            error = str(e)
            out.failed = error
    return out
