"""Free-text items stored as keyed units: a new item that updates an older one outranks it.

A LangGraph store item (and a memory a LangMem-style tool writes) is a unit keyed by its
item key, with the item's own words as text. Agents write a change as a *new* item under
a new key ("We finally moved to Lisbon" beside "I live in Berlin"), so the key cannot say
that one replaces the other, and the older item's words often match the question better.

Here a unit written with its own text for a key that had no version yet is judged as a
trace is (core/updates.py: a change word or a state word first, then similarity, a
value of the same type that differs, look-alike contrast, who spoke) against the active
earlier memories near it. A link is always "outdates": the newer item ranks above the
older one at recall (core/arbitration.py), and both stay current, because another key's
item is the caller's to delete: `get` on the older key still returns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from . import updates
from .models import Memory, Tier
from .ports import RecordStore, Vector
from .text import content_hash
from .version_links import VersionLinks

# A crystal (an item the user confirmed, a statement said from three sources) is an older
# item too: a link only outdates, so what the user established is never hidden. A
# synthesis, written by the REM cycle from many memories, is never an older item.
_LINKABLE = (Tier.TRACE, Tier.UNIT, Tier.CRYSTAL)


@dataclass(frozen=True, slots=True)
class ItemTurn:
    """A unit about to be written, in the shape the version search reads (`Turn`)."""

    memory: Memory
    digest: str
    when: datetime
    assistant: bool
    reading: updates.Reading


def older_item(
    store: RecordStore, versions: VersionLinks, ns: str, unit: Memory, vec: Vector,
    when: datetime,
) -> tuple[Memory, updates.Signals] | None:
    """The earlier active memory `unit` (a new key's first version, with text of its own)
    is a newer version of, with the signals that say so (verdict "outdates"), or None."""
    turn = ItemTurn(
        unit, content_hash(unit.text), when, updates.is_assistant(unit.text, unit.metadata),
        updates.reading(unit.text),
    )
    looked = versions.candidates(ns, turn, vec)
    if looked is None:
        return None
    own, lent, _lenders = looked
    policy = versions.ctx.policy
    ids = (set(own) | {i for i, s in lent.items() if s >= policy.updates.min_similarity}) - {
        unit.id
    }
    if not ids:
        return None
    found = store.get_many(ns, sorted(ids))
    best: tuple[Memory, updates.Signals] | None = None
    for mid in sorted(ids):
        m = found.get(mid)
        if (
            m is None or not m.is_active or m.tier not in _LINKABLE or m.created_at > when
            or (m.key is not None and m.key == unit.key)
            or content_hash(m.text) == turn.digest
            or updates.is_assistant(m.text, m.metadata)
        ):
            continue
        reading = updates.reading(m.text)
        if not reading.values and len(reading.words) < 3:
            continue  # it names a subject, it states nothing
        signals = updates.judge(
            turn.reading, reading, own.get(mid, 0.0), lent.get(mid, 0.0), policy
        )
        if signals.verdict is updates.Verdict.NONE:
            continue
        if best is None or signals.score > best[1].score:
            best = (m, signals)
    if best is None:
        return None
    old, signals = best
    # never retire another key's item: a link between items only ranks
    return old, _outdates(signals)


def _outdates(s: updates.Signals) -> updates.Signals:
    if s.verdict is updates.Verdict.OUTDATES:
        return s
    return updates.Signals(
        s.similarity, s.context, s.new_value, s.same_type, s.cue, s.contrast, s.score,
        updates.Verdict.OUTDATES, s.shared,
    )
