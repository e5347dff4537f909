"""Synthesis of a cluster of memories into one node: the prompt, the JSON schema, the
validation of what a model returns, and the extractive synthesizer that needs no model.

Core may not import pydantic, so the payload is checked in plain Python. The error text
is written for the model: consolidation shows it on the retry, so it says exactly which
field was wrong and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SynthesisFailed
from .models import Memory
from .text import DATE_PATTERN, normalize_text

SYNTHESIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "synthesis": {"type": "string"},
        "key_entities": {"type": "array", "items": {"type": "string"}},
        "causal_chains": {"type": "array", "items": {"type": "string"}},
        "temporal_anchors": {"type": "array", "items": {"type": "string"}},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["synthesis", "key_entities", "causal_chains", "temporal_anchors", "importance"],
    "additionalProperties": False,
}

_LIST_FIELDS = ("key_entities", "causal_chains", "temporal_anchors")

# One short worked example: the local test model (135M parameters) writes usable JSON
# with one and weak content without.
_EXAMPLE_IN = (
    "[2025-01-03] Sam adopted a dog named Rex.\n"
    "[2025-01-10] Rex chewed Sam's shoes, so Sam bought a crate.\n"
    "[2025-02-01] Actually the dog is called Rexy, not Rex."
)
_EXAMPLE_OUT = (
    '{"synthesis": "On 2025-01-03 Sam adopted a dog, first called Rex and since 2025-02-01 '
    "Rexy (the newer name wins). Because the dog chewed Sam's shoes, Sam bought a crate "
    '(2025-01-10).", "key_entities": ["Sam", "Rexy"], "causal_chains": ["dog chewed shoes -> '
    'Sam bought a crate"], "temporal_anchors": ["2025-01-03", "2025-01-10", "2025-02-01"], '
    '"importance": 0.4}'
)

_INSTRUCTIONS = """\
You merge related memory fragments into ONE dense memory.
Rules:
- Keep every fact, name, number and date from the fragments. Do not average or blur values.
- Keep time order, and keep cause and effect ("because", "so").
- If fragments contradict each other, the NEWEST fragment wins: state the new value and
  say it replaced the old one.
- Be shorter than the fragments together, and say more than any single fragment.
- importance: a number from 0 to 1 (how much this matters to the user later).
Answer with one JSON object only, with exactly these keys:
synthesis (string), key_entities (list of strings), causal_chains (list of strings),
temporal_anchors (list of strings), importance (number).

Example fragments:
{example_in}
Example answer:
{example_out}

Fragments (oldest first):
{fragments}
Answer:"""


def in_time_order(members: Sequence[Memory]) -> list[Memory]:
    """Oldest first; the id breaks ties so the order (and so the prompt) is deterministic."""
    return sorted(members, key=lambda m: (m.created_at, m.id))


def render_fragments(members: Sequence[Memory]) -> str:
    return "\n".join(
        f"[{m.created_at:%Y-%m-%d}] {' '.join(m.text.split())}" for m in in_time_order(members)
    )


def build_prompt(members: Sequence[Memory]) -> str:
    """The structured prompt for one cluster."""
    return _INSTRUCTIONS.format(
        example_in=_EXAMPLE_IN, example_out=_EXAMPLE_OUT, fragments=render_fragments(members)
    )


def retry_prompt(prompt: str, error: str) -> str:
    """The same prompt with the reason the last answer was refused, for the model to fix."""
    return (
        f"{prompt}\n\nYour previous answer was rejected: {error}\n"
        "Answer again with one corrected JSON object only."
    )


@dataclass(frozen=True, slots=True)
class SynthesisPayload:
    """A validated synthesis: what the node's text and metadata are made of."""

    synthesis: str
    key_entities: tuple[str, ...]
    causal_chains: tuple[str, ...]
    temporal_anchors: tuple[str, ...]
    importance: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "synthesis": self.synthesis,
            "key_entities": list(self.key_entities),
            "causal_chains": list(self.causal_chains),
            "temporal_anchors": list(self.temporal_anchors),
            "importance": self.importance,
        }


class InvalidPayload(SynthesisFailed):
    """The model answered JSON, but not the JSON the schema asks for."""


def validate_payload(
    raw: object, members: Sequence[Memory] = (), *, max_chars: int | None = None
) -> SynthesisPayload:
    """The payload as a typed result, or `InvalidPayload` listing every problem.

    Beyond the schema: the synthesis must not simply repeat one fragment (that is not
    a synthesis, and an active copy of a member's text would clash with the member).
    """
    if not isinstance(raw, Mapping):
        raise InvalidPayload(
            f"the answer must be a JSON object with keys {', '.join(SYNTHESIS_SCHEMA['required'])}"
            f", got {type(raw).__name__}"
        )
    problems: list[str] = []
    missing = [k for k in SYNTHESIS_SCHEMA["required"] if k not in raw]
    if missing:
        problems.append(f"missing key(s): {', '.join(missing)}")
    extra = sorted(str(k) for k in raw if k not in SYNTHESIS_SCHEMA["properties"])
    if extra:
        problems.append(f"unexpected key(s): {', '.join(extra)}")
    text = raw.get("synthesis")
    if "synthesis" in raw and (not isinstance(text, str) or not text.strip()):
        problems.append(f"'synthesis' must be a non-empty string, got {text!r:.80}")
    elif isinstance(text, str):
        if max_chars is not None and len(text) > max_chars:
            problems.append(f"'synthesis' has {len(text)} characters; keep it under {max_chars}")
        if members and normalize_text(text) in {normalize_text(m.text) for m in members}:
            problems.append("'synthesis' repeats one fragment verbatim; combine all fragments")
    lists: dict[str, tuple[str, ...]] = {}
    for name in _LIST_FIELDS:
        value = raw.get(name)
        if name not in raw:
            continue
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            problems.append(f"'{name}' must be a list of strings, got {value!r:.80}")
        else:
            lists[name] = tuple(dict.fromkeys(x.strip() for x in value if x.strip()))
    importance = raw.get("importance")
    if "importance" in raw and (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not math.isfinite(importance)
        or not 0.0 <= importance <= 1.0
    ):
        problems.append(f"'importance' must be a number from 0 to 1, got {importance!r:.40}")
    if problems:
        raise InvalidPayload("; ".join(problems))
    assert isinstance(text, str) and isinstance(importance, int | float)
    return SynthesisPayload(
        synthesis=text.strip(),
        key_entities=lists["key_entities"],
        causal_chains=lists["causal_chains"],
        temporal_anchors=lists["temporal_anchors"],
        importance=float(importance),
    )


_CAUSAL = re.compile(r"\b(?:because|so that|so|therefore|since|due to|caused|led to)\b", re.I)


class ExtractiveSynthesizer:
    """Deterministic synthesis without a model: no content is lost, nothing is invented.

    The node's text is every distinct fragment in time order, each with its date; a
    fragment whose normalised text is contained in another is dropped (its content
    survives in the longer one). Entities, dates and causal sentences are pulled out.
    Denser only in the sense that duplicates go: this is the honest floor when no LLM
    is configured, or when the LLM's answers were unusable.
    """

    name = "extractive"

    def synthesize_members(self, members: Sequence[Memory]) -> SynthesisPayload:
        if not members:
            raise SynthesisFailed("cannot synthesize an empty cluster")
        ordered = in_time_order(members)
        kept: list[Memory] = []
        norms: list[str] = []
        for m in ordered:
            n = normalize_text(m.text)
            if any(n in other for other in norms):
                continue
            # a later, longer fragment swallows earlier ones it contains
            keep = [i for i, other in enumerate(norms) if other not in n]
            kept = [kept[i] for i in keep] + [m]
            norms = [norms[i] for i in keep] + [n]
        lines = [f"[{m.created_at:%Y-%m-%d}] {' '.join(m.text.split())}" for m in kept]
        first, last = ordered[0].created_at, ordered[-1].created_at
        span = f"{first:%Y-%m-%d}" if first.date() == last.date() else (
            f"{first:%Y-%m-%d} to {last:%Y-%m-%d}"
        )
        header = f"Consolidated from {len(members)} memories ({span}):"
        entities = sorted({e for m in members for e in m.entities})
        anchors = list(
            dict.fromkeys(
                [f"{m.created_at:%Y-%m-%d}" for m in kept]
                + [d.group(0) for m in kept for d in DATE_PATTERN.finditer(m.text)]
            )
        )
        causal = [" ".join(m.text.split()) for m in kept if _CAUSAL.search(m.text)]
        return SynthesisPayload(
            synthesis="\n".join([header, *lines]),
            key_entities=tuple(entities),
            causal_chains=tuple(causal),
            temporal_anchors=tuple(anchors),
            importance=max(m.importance for m in members),
        )


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer: the whole answer, inside code fences, or the
    outermost {...} of a chatty answer. Anything else raises `SynthesisFailed` quoting the
    start of what came back, so the report (and the re-ask) shows what the model said.
    Every LLM port parses with this, so models are held to one rule."""
    raw = (text or "").strip()
    attempts = [raw, _FENCE.sub("", raw).strip()]
    start, end = raw.find("{"), raw.rfind("}")
    if 0 <= start < end:
        attempts.append(raw[start : end + 1])
    for candidate in dict.fromkeys(attempts):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        raise SynthesisFailed(
            f"the model answered JSON of type {type(value).__name__}, not an object: "
            f"{raw[:200]!r}"
        )
    raise SynthesisFailed(f"the model's answer is not a JSON object: {raw[:200]!r}")
