"""Synthesis of a cluster of memories into one node: the prompt, the JSON schema, the
validation of what a model returns, and the extractive synthesizer that needs no model.

A cluster can hold versions of one thing that the write path linked without daring to
retire the older one (an "outdates" link, core/updates.py). For such a cluster the prompt
labels the fragments (F1, F2, ... oldest first), names the pairs left open, and asks the
model which older fragments a newer one really replaced ("outdated"). The answer may only
name fragments the write path flagged as possibly outdated, and the synthesis must then
state the newest value; anything else is refused and re-asked like any invalid answer,
so a malformed answer, or one naming fragments that do not exist, supersedes nothing.
The members it names are then superseded by the synthesis (core/commit.py).

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

from . import updates
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

OUTDATED = "outdated"  # the answer's key: labels of fragments a newer fragment replaced
SUPERSEDES = "supersedes"  # the journaled payload's key: the member ids those labels name
# metadata written by core/writing.py (not imported: writing depends on this module's
# neighbours): a newer version's link to the older one, and a user's restore
_UPDATE_KEY = "reverie_update"
_RESTORED_KEY = "reverie_restored"


@dataclass(frozen=True, slots=True)
class OpenVersions:
    """The versions the write path linked inside one cluster without retiring the older:
    `labels` maps each fragment label (F1 oldest) to its member id, `replaced_by` each
    older label that a newer fragment may replace to those newer labels."""

    labels: Mapping[str, str]
    replaced_by: Mapping[str, tuple[str, ...]]


def fragment_labels(members: Sequence[Memory]) -> dict[str, str]:
    """Label -> member id, F1 the oldest (the prompt's order)."""
    return {f"F{i}": m.id for i, m in enumerate(in_time_order(members), 1)}


def open_versions(members: Sequence[Memory]) -> OpenVersions | None:
    """The "outdates" links between members of a cluster (a newer member naming an older
    one under "reverie_update"), or None when there are none. A member the user restored
    is never offered for replacement again."""
    labels = fragment_labels(members)
    label_of = {mid: label for label, mid in labels.items()}
    by_id = {m.id: m for m in members}
    replaced: dict[str, list[str]] = {}
    for m in in_time_order(members):
        link = m.metadata.get(_UPDATE_KEY)
        if not isinstance(link, Mapping):
            continue
        old = by_id.get(str(link.get("of")))
        if old is None or old.id == m.id or _RESTORED_KEY in old.metadata:
            continue
        if (old.created_at, old.id) >= (m.created_at, m.id):
            continue  # only a newer fragment replaces an older one
        replaced.setdefault(label_of[old.id], []).append(label_of[m.id])
    if not replaced:
        return None
    return OpenVersions(labels, {k: tuple(v) for k, v in sorted(replaced.items())})


def synthesis_schema(members: Sequence[Memory]) -> dict[str, Any]:
    """The JSON schema for one cluster: `SYNTHESIS_SCHEMA`, plus "outdated" (the labels
    the model may choose from, as an enum) when the cluster holds open versions."""
    found = open_versions(members) if members else None
    if found is None:
        return SYNTHESIS_SCHEMA
    return {
        **SYNTHESIS_SCHEMA,
        "properties": {
            **SYNTHESIS_SCHEMA["properties"],
            OUTDATED: {"type": "array", "items": {"type": "string",
                                                  "enum": list(found.replaced_by)}},
        },
        "required": [*SYNTHESIS_SCHEMA["required"], OUTDATED],
    }

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


_VERSIONS_EXAMPLE_IN = (
    "F1 [2025-01-03] Sam's gym membership costs $40 a month.\n"
    "F2 [2025-01-10] Sam goes to the gym on Mondays after work.\n"
    "F3 [2025-02-01] Heads up, Sam's gym membership went up to $55 a month.\n"
    "Open versions (the newest value wins):\n"
    "- F1 may be replaced by F3, which says: Heads up, Sam's gym membership went up to $55 "
    "a month."
)
_VERSIONS_EXAMPLE_OUT = (
    '{"synthesis": "Sam goes to the gym on Mondays after work (2025-01-10). The membership '
    'cost $40 a month until 2025-02-01, when it went up to $55 a month (the newer price '
    'wins).", "key_entities": ["Sam"], "causal_chains": [], "temporal_anchors": '
    '["2025-01-03", "2025-01-10", "2025-02-01"], "importance": 0.4, "outdated": ["F1"]}'
)

_VERSIONS_INSTRUCTIONS = """\
You merge related memory fragments into ONE dense memory.
Some fragments give a new value for something an older fragment said.
Rules:
- Keep every fact, name, number and date from the fragments. Do not average or blur values.
- Keep time order, and keep cause and effect ("because", "so").
- When a newer fragment replaces an older one, the NEWEST value wins: state the new value
  and say it replaced the old one.
- outdated: the labels of the older fragments whose value a newer fragment really
  replaced, chosen from: {choices}. Use [] if none was replaced.
- importance: a number from 0 to 1 (how much this matters to the user later).
Answer with one JSON object only, with exactly these keys:
synthesis (string), key_entities (list of strings), causal_chains (list of strings),
temporal_anchors (list of strings), importance (number), outdated (list of labels).

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
    """The structured prompt for one cluster (with labelled fragments and the open
    version pairs when the cluster holds any, see `open_versions`)."""
    found = open_versions(members)
    if found is None:
        return _INSTRUCTIONS.format(
            example_in=_EXAMPLE_IN, example_out=_EXAMPLE_OUT,
            fragments=render_fragments(members),
        )
    lines = [
        f"{label} [{m.created_at:%Y-%m-%d}] {' '.join(m.text.split())}"
        for label, m in zip(found.labels, in_time_order(members), strict=True)
    ]
    by_label = dict(zip(found.labels, in_time_order(members), strict=True))
    lines.append("Open versions (the newest value wins):")
    lines += [  # the newer text last, where a small model looks for what to say
        f"- {older} may be replaced by {newer[-1]}, which says: "
        f"{' '.join(by_label[newer[-1]].text.split())}"
        for older, newer in found.replaced_by.items()
    ]
    return _VERSIONS_INSTRUCTIONS.format(
        choices=", ".join(found.replaced_by), example_in=_VERSIONS_EXAMPLE_IN,
        example_out=_VERSIONS_EXAMPLE_OUT, fragments="\n".join(lines),
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
    # members a newer member replaced, as the model judged them: superseded by the node
    supersedes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "synthesis": self.synthesis,
            "key_entities": list(self.key_entities),
            "causal_chains": list(self.causal_chains),
            "temporal_anchors": list(self.temporal_anchors),
            "importance": self.importance,
        }
        if self.supersedes:  # the journaled form (see `validate_payload`)
            out[SUPERSEDES] = list(self.supersedes)
        return out


class InvalidPayload(SynthesisFailed):
    """The model answered JSON, but not the JSON the schema asks for."""


def validate_payload(
    raw: object, members: Sequence[Memory] = (), *, max_chars: int | None = None
) -> SynthesisPayload:
    """The payload as a typed result, or `InvalidPayload` listing every problem.

    Beyond the schema: the synthesis must not simply repeat one fragment (that is not
    a synthesis, and an active copy of a member's text would clash with the member).
    For a cluster with open versions (`open_versions`), "outdated" may only name the
    fragments offered, and the synthesis must then state the newest value. Without
    `members` (a payload read back from the cycle's journal) the member ids under
    "supersedes" are taken as they were validated then.
    """
    schema = synthesis_schema(members)
    if not isinstance(raw, Mapping):
        raise InvalidPayload(
            f"the answer must be a JSON object with keys {', '.join(schema['required'])}"
            f", got {type(raw).__name__}"
        )
    problems: list[str] = []
    missing = [k for k in schema["required"] if k not in raw]
    if missing:
        problems.append(f"missing key(s): {', '.join(missing)}")
    allowed = set(schema["properties"]) | (set() if members else {SUPERSEDES})
    extra = sorted(str(k) for k in raw if k not in allowed)
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
    supersedes: tuple[str, ...] = ()
    found = open_versions(members) if members else None
    if found is not None and OUTDATED in raw:
        supersedes, why = _outdated(raw[OUTDATED], found, text, members)
        problems += why
    elif not members and SUPERSEDES in raw:
        ids = raw[SUPERSEDES]
        if not isinstance(ids, list) or not all(isinstance(x, str) and x for x in ids):
            problems.append(f"'{SUPERSEDES}' must be a list of member ids, got {ids!r:.80}")
        else:
            supersedes = tuple(dict.fromkeys(ids))
    if problems:
        raise InvalidPayload("; ".join(problems))
    assert isinstance(text, str) and isinstance(importance, int | float)
    return SynthesisPayload(
        synthesis=text.strip(),
        key_entities=lists["key_entities"],
        causal_chains=lists["causal_chains"],
        temporal_anchors=lists["temporal_anchors"],
        importance=float(importance),
        supersedes=supersedes,
    )


def _values(text: str) -> set[str]:
    return {v for vals in updates.reading(text).values.values() for v in vals}


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w:.$€£¥ ]", " ", text.casefold().replace(",", "")).split())


def _outdated(
    value: object, found: OpenVersions, text: object, members: Sequence[Memory]
) -> tuple[tuple[str, ...], list[str]]:
    """The member ids an answer's "outdated" names, or the problems with it."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        return (), [f"'{OUTDATED}' must be a list of fragment labels, got {value!r:.80}"]
    labels = list(dict.fromkeys(x.strip() for x in value if x.strip()))
    unknown = [x for x in labels if x not in found.labels]
    if unknown:
        return (), [
            f"'{OUTDATED}' names {', '.join(repr(x) for x in unknown)}, not among the "
            f"fragments ({', '.join(found.labels)})"
        ]
    closed = [x for x in labels if x not in found.replaced_by]
    if closed:
        return (), [
            f"'{OUTDATED}' may name only {', '.join(found.replaced_by)} (a fragment a newer "
            f"one may replace), not {', '.join(closed)}"
        ]
    problems: list[str] = []
    by_id = {m.id: m for m in members}
    plain = _plain(text) if isinstance(text, str) else ""
    for label in labels:
        newest = found.replaced_by[label][-1]
        fresh = _values(by_id[found.labels[newest]].text) - _values(
            by_id[found.labels[label]].text
        )
        if fresh and not any(v in plain for v in fresh):
            said = " ".join(by_id[found.labels[newest]].text.split())
            problems.append(
                f"'synthesis' must state the newest value ({', '.join(sorted(fresh))}), "
                f"which replaced {label}'s: {newest} says \"{said}\""
            )
    return tuple(found.labels[x] for x in labels), problems


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
