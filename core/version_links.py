"""Finding the earlier trace a new one is a newer version of, on the write path.

The judgement itself is core/updates.py (pure, text in, signals out); this module gathers
what it judges: the nearest earlier traces by the vector index, this engine's recent turns
(their vectors may still wait in the write-behind queue), and the intro turn before an
elliptical update ("About the dentist." ... "It's 4:30 now.").
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np

from . import updates
from .context import EngineContext
from .indexing import IndexWrite
from .models import Memory, Status, Tier
from .ports import Vector, VectorItem
from .text import content_hash

_RECENT_NAMESPACES = 1024  # namespaces whose recent turns are kept (least recent dropped)


class Turn(Protocol):
    """What the version search needs of a trace about to be written."""

    @property
    def memory(self) -> Memory: ...
    @property
    def digest(self) -> str: ...
    @property
    def when(self) -> datetime: ...
    @property
    def assistant(self) -> bool: ...
    @property
    def reading(self) -> updates.Reading: ...


@dataclass(frozen=True, slots=True)
class Recent:
    """A trace just written, kept for the update check of the turns after it: its vector
    (not yet in the index while it waits in the write-behind queue), as the context of an
    elliptical update after it or as the version an update replaces."""

    memory: Memory
    vector: Vector
    assistant: bool
    reading: updates.Reading
    speaker: str | None = None
    # why it was written as a newer version of an earlier trace, if it was
    link: updates.Signals | None = None


@dataclass(slots=True)
class ChunkSearch:
    """What the version search of one chunk of a bulk ingest knows beside the index: the
    index's answers asked ahead of the chunk (`VersionLinks.ask_ahead`), by the id of the
    memory whose vector was asked, and the chunk's own turns written so far, whose
    vectors reach the index's queue only after the chunk. With both, a bulk import links
    the versions that observing its turns one at a time links, however long the chunk."""

    namespace: str
    asked: dict[str, dict[str, float]] = field(default_factory=dict)
    items: list[VectorItem] = field(default_factory=list)
    _stacked: IndexWrite | None = None

    def written(self, memory_id: str, vec: Vector) -> None:
        self.items.append(VectorItem(memory_id, vec))
        self._stacked = None

    def unwritten(self) -> list[IndexWrite]:
        """The chunk's turns written so far, searched as the index's queue is."""
        if not self.items:
            return []
        if self._stacked is None:
            self._stacked = IndexWrite(self.namespace, tuple(self.items))
        return [self._stacked]


class VersionLinks:
    """The version search of one engine, with the recent turns it keeps per namespace."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self._recent: OrderedDict[str, deque[Recent]] = OrderedDict()

    def candidates(
        self, ns: str, p: Turn, vec: Vector, chunk: ChunkSearch | None = None
    ) -> tuple[dict[str, float], dict[str, float], dict[str, str]] | None:
        """The earlier traces this one may be a newer version of: by its own cosine, and by
        the cosine of the intro turn just before it (for an elliptical update), with the
        intro that lent each of the latter. Looked up only when the judgement could link
        anything at all (a change word, a preference, or an elliptical text after an
        intro turn), so a plain observe costs no query: the vector
        index's nearest (those indexed) and this engine's recent turns (their vectors may
        still wait in the write-behind queue). `chunk`: what a bulk ingest's chunk knows
        beside the index (`ChunkSearch`)."""
        policy = self.ctx.policy.updates
        if not policy.detect_updates or p.assistant or policy.neighbours <= 0:
            return None
        recent = list(self._recent.get(ns, ()))
        context: list[Recent] = []
        if len(p.reading.words) <= policy.elliptical_words and policy.context_turns > 0:
            turns = [r for r in recent if not r.assistant and r.memory.created_at <= p.when]
            window = turns[-policy.context_turns :]
            # an intro lends its subject to the update that answers it, not to the turns
            # after that update ("About my work computer." "It's an Asus Zenbook now."
            # ... "We relocated to Seattle for good." is about no computer); and an
            # update is no intro, though it may read as one ("It's an Asus Zenbook now.")
            context = [
                r for i, r in enumerate(window)
                if r.link is None and self._may_lend(r.reading, r.memory.created_at, p)
                and not any(t.link is not None and t.link.context > 0 for t in window[i + 1 :])
            ]
        if not (updates.may_update(p.reading, self.ctx.policy) or context):
            return None
        # The vector index is asked only with a change word, a preference or an intro
        # before: a plain statement of a value (most turns) is compared with the recent
        # turns kept in memory, at no query's cost; versions further back that only
        # restate a value are joined at recall (core/arbitration.py, implicit links).
        ask = p.reading.cue or p.reading.state or bool(context)
        # ...and without any of those, only a restated value can link, which needs
        # `typed_similarity`: nearer turns only, and most statements read no record
        floor = policy.min_similarity if ask else max(
            policy.min_similarity, policy.typed_similarity
        )
        own = self.near(ns, vec, recent, (), ask, floor, chunk, p.memory.id)
        lent: dict[str, float] = {}
        lenders: dict[str, str] = {}
        skip = {c.memory.id for c in context}
        for c in context:
            # one intro may lend to several turns after it: asked once per chunk
            near = self.near(ns, c.vector, recent, skip, ask, floor, chunk, c.memory.id)
            for mid, sim in near.items():
                if sim > lent.get(mid, 0.0):
                    lent[mid], lenders[mid] = sim, c.memory.id
        if not own and not lent:
            return None
        return own, lent, lenders

    def ask_ahead(self, ns: str, chunk: Sequence[tuple[Turn, Vector]]) -> ChunkSearch:
        """The index's answers a bulk ingest's chunk will ask for (`candidates`), asked
        in one call (`indexed_many`), by the id of the memory whose vector is asked: each
        turn with a change word or a preference, each short turn that may be an
        elliptical update, and the intro turns before it that may lend it a subject. A
        call into the index costs far more than one more query in it, and one intro
        lends to every short turn after it."""
        policy = self.ctx.policy.updates
        if not policy.detect_updates or policy.neighbours <= 0:
            return ChunkSearch(ns)
        wanted: dict[str, Vector] = {}
        earlier: list[tuple[str, Vector, updates.Reading, datetime]] = [
            (r.memory.id, r.vector, r.reading, r.memory.created_at)
            for r in self._recent.get(ns, ()) if not r.assistant
        ]
        for p, vec in chunk:
            if p.assistant:
                continue
            if updates.may_update(p.reading, self.ctx.policy) and (
                p.reading.cue or p.reading.state
            ):
                wanted[p.memory.id] = vec
            if len(p.reading.words) <= policy.elliptical_words and policy.context_turns > 0:
                lenders = [
                    (mid, v) for mid, v, reading, at in earlier[-policy.context_turns :]
                    if at <= p.when and self._may_lend(reading, at, p)
                ]
                if lenders:
                    wanted[p.memory.id] = vec
                    wanted.update(lenders)
            earlier.append((p.memory.id, vec, p.reading, p.when))
        ids = list(wanted)
        answers = self.indexed_many(ns, [wanted[i] for i in ids])
        return ChunkSearch(ns, asked=dict(zip(ids, answers, strict=True)))

    def _may_lend(self, reading: updates.Reading, at: datetime, p: Turn) -> bool:
        """Can a turn said at `at` name the subject of the elliptical update `p`: an
        intro (`updates.introduces`) within `context_seconds` before it, about the
        person the update is about."""
        policy = self.ctx.policy
        return (
            (p.when - at).total_seconds() <= policy.updates.context_seconds
            and updates.introduces(reading, policy)
            and updates.same_people(reading, p.reading)
        )

    def indexed_many(self, ns: str, vecs: Sequence[Vector]) -> list[dict[str, float]]:
        """The index's answer for each vector (as `near` takes it), in one call where
        the index can (`QueriesMany`). An answer asked before a chunk of a bulk ingest
        is written holds for the whole chunk: nothing the chunk writes is in the index
        or its queue yet, and every earlier chunk's vectors are in one or the other (the
        chunk's own earlier turns are compared beside it, `ChunkSearch`)."""
        if not vecs:
            return []
        policy = self.ctx.policy.updates
        unwritten = self.ctx.indexer.unwritten(ns)  # before the query: see `_with_unwritten`
        many = self.ctx.caps.query_many
        if many is not None:
            answers = many(ns, vecs, policy.neighbours)
        else:
            answers = [self.ctx.vectors.query(ns, v, policy.neighbours) for v in vecs]
        return [
            self._with_unwritten(v, {h.id: h.similarity for h in hits
                                     if h.similarity >= policy.min_similarity}, unwritten)
            for v, hits in zip(vecs, answers, strict=True)
        ]

    def _with_unwritten(
        self, vec: Vector, found: dict[str, float], unwritten: Sequence[IndexWrite]
    ) -> dict[str, float]:
        """The index's top k for `vec` merged with the vectors still queued behind earlier
        writes, as if they were written: which earlier turn an update is linked to must
        not hang on how far the writer thread has got (the index's top k plus every
        unwritten vector, cut to k, is the top k of the drained index). `unwritten` is
        read before the index is asked: a write that lands in between is then in the
        one or the other, where read after the query it could be in neither."""
        policy = self.ctx.policy.updates
        if not unwritten:
            return found
        q = np.asarray(vec, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        for w in unwritten:
            sims = w.units @ q
            for j in np.flatnonzero(sims >= policy.min_similarity):
                mid, sim = w.upserts[j].id, float(sims[j])
                found[mid] = max(found.get(mid, -1.0), sim)
        top = heapq.nlargest(policy.neighbours, found.items(), key=lambda kv: kv[1])
        return dict(top)

    def near(
        self, ns: str, vec: Vector, recent: Sequence[Recent], skip: Iterable[str],
        ask: bool = True,
        floor: float | None = None,
        chunk: ChunkSearch | None = None,
        key: str | None = None,
    ) -> dict[str, float]:
        policy = self.ctx.policy.updates
        least = policy.min_similarity if floor is None else floor
        out: dict[str, float] = {}
        if ask:
            indexed = chunk.asked.get(key) if chunk is not None and key is not None else None
            if indexed is None:
                # unfiltered, Chroma's fastest path (a `where` on status costs a metadata
                # read per hit, and a fallback that lists every id once few are current):
                # the records read in `link` are the truth, and drop retired versions
                unwritten = self.ctx.indexer.unwritten(ns)
                hits = self.ctx.vectors.query(ns, vec, policy.neighbours)
                indexed = self._with_unwritten(
                    vec, {h.id: h.similarity for h in hits
                          if h.similarity >= policy.min_similarity}, unwritten)
                if chunk is not None and key is not None:
                    chunk.asked[key] = indexed
            if chunk is not None and chunk.items:
                # the chunk's turns written so far count as queued, as they would be had
                # each been observed alone
                indexed = self._with_unwritten(vec, dict(indexed), chunk.unwritten())
            out.update((mid, sim) for mid, sim in indexed.items() if sim >= least)
        if recent:
            for r, sim in zip(recent, cosines(vec, [r.vector for r in recent]), strict=True):
                if sim >= least and sim > out.get(r.memory.id, -1.0):
                    out[r.memory.id] = sim
        for mid in skip:
            out.pop(mid, None)
        return out

    def link(
        self,
        ns: str,
        p: Turn,
        vec: Vector,
        neighbours: Mapping[str, float],
        lent: Mapping[str, float],
        lenders: Mapping[str, str] | None = None,
    ) -> tuple[Memory, updates.Signals, tuple[str, ...]] | None:
        """The earlier trace this one is a newer version of, with the signals that say so
        (core/updates.py), or None. An assistant's words are never a newer version.

        Also the other traces whose typed value it replaces at the supersede bar, which
        it outdates too: two versions of one fact the write path did not link ("My new
        workout days are lunchtimes on weekdays" after "My training days at the gym are
        Wednesdays and Sundays") are two groups of versions, and an update that replaces
        a typed value of both ("From now on, my gym schedule is Mondays and Thursdays")
        is the newest of each, so recall finds no older group's newest above it."""
        ctx = self.ctx
        policy = ctx.policy.updates
        recent = list(self._recent.get(ns, ()))
        ids = set(neighbours) | {i for i, s in lent.items() if s >= policy.min_similarity}
        ids.discard(p.memory.id)
        if not ids:
            return None
        known = {t.memory.id: t for t in recent}
        speakers = [t.reading.speaker for t in recent] + [p.reading.speaker]
        participants = frozenset(x for x in speakers if x is not None)
        # the records are read even for recent turns: a retired version is written
        # compare-and-set over its current version, and recall may have touched it since
        found = ctx.store.get_many(ns, sorted(ids))
        best: tuple[Memory, updates.Signals, _Rank] | None = None
        judged: list[tuple[Memory, updates.Signals]] = []
        for mid in sorted(ids):
            r: Recent | None = known.get(mid)
            m = found.get(mid)
            retired = m is not None and was_replaced(m, p.when)
            if m is None or not (retired or may_be_outdated(m, p.when, p.digest)):
                continue
            if r is not None:
                if r.assistant:
                    continue
                reading = r.reading
            else:
                if updates.is_assistant(m.text, m.metadata):
                    continue
                reading = updates.reading(m.text)
            if not (reading.values or reading.cue) and len(reading.words) < 3:
                # "About my pay.": it names a subject, it states nothing; a change it
                # tells in as few words ("I switched to commuting on foot.") states one
                continue
            own = neighbours.get(mid)
            if own is None:
                own = cosines(vec, [r.vector])[0] if r is not None else 0.0
            signals = updates.judge(
                p.reading, reading, own, lent.get(mid, 0.0), ctx.policy, participants
            )
            if signals.verdict is updates.Verdict.NONE:
                continue
            echoed = False
            if signals.context > 0 and lenders and mid in lenders:
                signals = dataclasses.replace(signals, intro=lenders[mid])
                intro = known.get(lenders[mid])
                # the intro names the subject in a word the older text holds ("About what
                # I eat." and "I've been eating keto"): nearer than any cosine
                echoed = intro is not None and bool(intro.reading.words & reading.words)
            if retired:
                # an earlier value of a fact that has a newer one since: the new text
                # speaks of that fact, so it is a version of the fact's current value.
                # Judged on the earlier text only, so it outdates and never retires.
                head = self._current_of(ns, m, p)
                if head is None:
                    continue
                m = head
                signals = dataclasses.replace(
                    signals, verdict=updates.Verdict.OUTDATES, through=mid
                )
            if m.tier is Tier.CRYSTAL and signals.verdict is updates.Verdict.SUPERSEDES:
                # what the user said often or confirmed is outdated, never retired: it
                # ranks below the newer text, and a link judged wrongly hides nothing
                signals = dataclasses.replace(signals, verdict=updates.Verdict.OUTDATES)
            judged.append((m, signals))
            rank = _rank(signals, echoed)
            if best is None or rank > best[2]:
                best = (m, signals, rank)
        if best is None:
            return None
        target = best[0]
        # an elliptical update speaks of the one thing its intro named: its own few words
        # ("Make that $90,000.") are near every amount, the pay's as the budget's
        also = () if best[1].context > 0 else tuple(sorted({
            m.id for m, s in judged
            if m.id != target.id
            and s.same_type is not None and s.score >= policy.supersede_score
        }))
        return target, best[1], also

    def _current_of(self, ns: str, m: Memory, p: Turn) -> Memory | None:
        """The current version a retired one was replaced by, following the chain of
        replacements (a few links at most), if the new trace may update it."""
        seen = {m.id}
        for _ in range(self.ctx.policy.updates.chain_hops):
            nxt = m.superseded_by
            if nxt is None or nxt in seen or nxt == p.memory.id:
                return None
            seen.add(nxt)
            found = self.ctx.store.get(ns, nxt)
            if found is None:
                return None
            m = found
            if m.is_active:
                return m if may_be_outdated(m, p.when, p.digest) else None
        return None

    def last(self, ns: str) -> Recent | None:
        """The trace this engine wrote last in the namespace, if it keeps it."""
        q = self._recent.get(ns)
        return q[-1] if q else None

    def remember(self, ns: str, item: Recent) -> None:
        size = self.ctx.policy.updates.recent_turns
        q = self._recent.get(ns)
        if q is None:
            q = self._recent[ns] = deque(maxlen=size)
            while len(self._recent) > _RECENT_NAMESPACES:
                self._recent.popitem(last=False)
        else:
            self._recent.move_to_end(ns)
        q.append(item)

    def forget_recent(self, ns: str | None = None) -> None:
        """Drop the recent turns kept for update checks (after a forget or a restore)."""
        if ns is None:
            self._recent.clear()
        else:
            self._recent.pop(ns, None)


# the order of candidate versions, best last (`_rank`)
_Rank = tuple[bool, bool, bool, float, float]


def _rank(signals: updates.Signals, echoed: bool) -> _Rank:
    """Which candidate a new trace is linked to: a confident version by its own words
    first ("the Boston flight is Monday at 5:55 AM" names its flight), then a version
    found through the intro just before an elliptical update ("It's 11:15 now"), whose
    own words say nothing: one that holds a word of the intro (`echoed`: "About what I
    eat." then "Going vegan now." is the diet's "I've been eating keto", though a
    craving for pizza reads more like the intro), else the one nearest the intro
    ("Quick note on the migration money." then "Make that $90,000." is the budget's,
    though the pay's amount reads more like it); then the higher score."""
    return (signals.verdict is updates.Verdict.SUPERSEDES, signals.context > 0, echoed,
            signals.context, signals.score)


def was_replaced(m: Memory, when: datetime) -> bool:
    """An earlier free-text trace retired by a newer version of it (not forgotten, not
    folded into a synthesis): evidence of what fact a new trace speaks of."""
    return (
        m.status is Status.SUPERSEDED and m.superseded_by is not None
        and _earlier_free_text(m, when)
    )


def may_be_outdated(m: Memory, when: datetime, digest: str) -> bool:
    """An earlier, current free-text memory with other words: what a new trace may update."""
    return m.is_active and _earlier_free_text(m, when) and content_hash(m.text) != digest


def _earlier_free_text(m: Memory, when: datetime) -> bool:
    """Said before `when`, in free text: a trace, or the crystal a trace became when said
    again from other sources or confirmed (a fact the user repeated still changes: "my
    laptop is a ThinkPad", said in three sessions, then "I switched to a MacBook Air").
    Not a keyed fact (`remember` replaces those by key) nor a synthesis."""
    return m.key is None and m.tier in (Tier.TRACE, Tier.CRYSTAL) and m.created_at <= when


def cosines(vec: Vector, rows: Sequence[Vector]) -> list[float]:
    if not rows:
        return []
    q = np.asarray(vec, dtype=np.float32)
    m = np.stack([np.asarray(r, dtype=np.float32) for r in rows])
    norms = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
    sims = (m @ q) / np.where(norms > 0, norms, 1.0)
    return [float(x) for x in sims]
