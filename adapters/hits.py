"""The JSON-ready parts of a recalled memory that every framework face puts in its
results' metadata, built cheaply: a face converts every hit of every recall, so this is
its hot path (measured in benchmarks/face_overhead.py).

Two costs dominate there and are avoided here without changing a value: an Enum's
`.value` (a descriptor call each time; a dict lookup is ~20x cheaper) and
`datetime.isoformat()` (the same memories come back recall after recall, and a datetime
is immutable, so its text is cached).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache

from reverie.core.models import Kind, Status, Tier
from reverie.core.retrieval import Explanation, shown

__all__ = ["KIND", "STATUS", "TIER", "explanation_dict", "iso"]

KIND: dict[Kind, str] = {k: k.value for k in Kind}
TIER: dict[Tier, str] = {t: t.value for t in Tier}
STATUS: dict[Status, str] = {s: s.value for s in Status}


def iso(moment: datetime) -> str:
    """`moment.isoformat()`, remembered for the few thousand most recent datetimes. Keyed
    with the UTC offset too: equal instants in two zones are equal datetimes, but their
    texts differ."""
    return _iso(moment, moment.utcoffset())


@lru_cache(maxsize=8192)
def _iso(moment: datetime, offset: timedelta | None) -> str:
    return moment.isoformat()


def explanation_dict(e: Explanation) -> dict[str, object]:
    """Exactly `Explanation.as_dict()` (tests hold them equal), with the tier looked up
    instead of asked of the Enum."""
    return {
        "final": shown(e.final),
        "relevance": shown(e.relevance),
        "dense": shown(e.dense),
        "lexical": shown(e.lexical),
        "decay": shown(e.decay),
        "importance": shown(e.importance),
        "tier": TIER[e.tier],
        "hops": e.hops,
        "via": e.via,
        "context": shown(e.context),
        "speaker": shown(e.speaker),
        "period": shown(e.period),
        "lexical_trust": shown(e.lexical_trust),
        "note": e.note,
    }
