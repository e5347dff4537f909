"""Recall arbitration: when the candidates hold two versions of one thing, the newer wins.

A question often reuses the words of the old message ("which city do I live in?" after
"I live in Berlin", while the update says only "we moved to Lisbon"), so relevance alone
ranks the stale version first, and after weeks decay no longer separates the two. The
write path links versions (core/updates.py): a supersession (the older is retired) or an
"updates" edge (the older stays current, possibly outdated). Versions linked to versions
are versions of one thing. Here, for every older version among the candidates, the
newest version of its group is pulled in with at least the older one's relevance and
placed above it, with an explanation that says so. Pure: the recall path reads the
links and records, this decides.

Links stored on write are not the only ones: two hits of one recall that read as versions
of one thing (`implicit_links`, the write path's own judgement on the pair) are joined for
that recall, so versions the write path did not link (a chain told in several pieces) still
rank newest first; such a link only reorders hits already in the ranking. The newest
version also ranks above the turns around its versions that state nothing of their own
(an assistant's "Noted, your doctor.", an intro "About my pay."), and a question about the
past ("where did I live before Lisbon?") gets no arbitration at all.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from . import updates
from .models import Edge, EdgeType, Memory
from .policy import Policy
from .ports import Vector
from .retrieval import Candidate, Ranked, ranking_key
from .scoring import decay_score, final_score
from .updates import reading

# A newer version is placed just above the older one it replaces when its own score
# would not be higher; this only orders two scores, it weighs nothing.
_ABOVE = 1e-9
_SNIPPET = 60  # characters of the older text quoted in an explanation

VERSION_EDGES = (EdgeType.SUPERSEDES, EdgeType.UPDATES)

# A question about an earlier state: the older version is the answer, not the newer.
# Some words say so alone ("formerly", "used to"); others ("before", "previous") only in
# a question in the past tense ("where did I live before Lisbon?", not "when do I go to
# the gym before work?").
_PAST_ALONE = re.compile(
    r"\b(?:previously|formerly|former|used to|did \w+ use to|originally|in the past|"
    r"back then|(?:my|our) old)\b",
    re.IGNORECASE,
)
_PAST_WORD = re.compile(
    r"\b(?:before|previous|earlier|at first|prior to|any ?more|no longer)\b", re.IGNORECASE
)
_PAST_TENSE = re.compile(r"\b(?:did|was|were|had)\b", re.IGNORECASE)


def asks_about_past(query: str) -> bool:
    """'Where did I live before Lisbon?', 'What car did I use to drive?': the question
    wants an earlier version, so recall ranks by relevance alone and may return a
    retired version."""
    if _PAST_ALONE.search(query):
        return True
    return _PAST_WORD.search(query) is not None and _PAST_TENSE.search(query) is not None


def implicit_links(
    ranked: Sequence[Ranked],
    vectors: Mapping[str, Vector],
    policy: Policy,
    query: str = "",
    versioned: frozenset[str] = frozenset(),
) -> dict[str, set[str]]:
    """Pairs of hits that read as an older and a newer version of one thing, judged as
    the write path judges (core/updates.py) on their own texts and cosine, or as two
    answers of one type to the question (`updates.answers_alike`): newer id -> older
    ids. Only pairs whose older one ranks above the newer one are looked at, and only
    users' statements (never an assistant's words).

    A change told in other words than the question's ("the dish I like best is pho"
    for "what is my favourite meal?") shares no word with it; it answers alike when
    both texts are near each other and the question (`loose_*` in the policy). Such a
    link is a guess on likeness alone, so it only reaches an older hit that has no
    version yet: none linked on write (`versioned`) and none found here on evidence. A
    guess that joined two groups of versions would place the newest of either above
    the other's. A hit linked to nothing on write answers in place of an older hit that
    was (`versioned`: the write path chose its newest version) only when near both it
    and the question (`chain_answer_closeness`): a word of the question and a name for
    a name are what any later turn may share by chance."""
    out: dict[str, set[str]] = {}
    guesses: dict[str, set[str]] = {}  # loose links, kept only where nothing better is
    asked = reading(query).words if query else frozenset()
    p = policy.updates
    items = [
        r for r in ranked
        if r.memory.id in vectors and not updates.is_assistant(r.memory.text, r.memory.metadata)
    ]
    place = {r.memory.id: n for n, r in enumerate(ranked)}
    unit = {r.memory.id: _unit(vectors[r.memory.id]) for r in items}
    read = {r.memory.id: reading(r.memory.text) for r in items}
    updating = {i for i, r in read.items() if updates.may_update(r, policy)}
    for hi, lo in itertools.combinations(items, 2):  # hi ranks above lo
        old, new = hi.memory, lo.memory
        if new.id not in updating or (new.created_at, new.id) <= (old.created_at, old.id):
            continue
        r_new, r_old = read[new.id], read[old.id]
        # An older text with no typed value ("I follow a keto diet") is an earlier answer
        # in plain words only when the newer one says it changed, or both state a
        # preference that holds one value at a time: two plain events ("I'm editing the
        # wedding video", "the colour grading took all evening") are two things.
        plain_ok = bool(r_old.values) or r_new.cue or (r_new.state and r_old.state)
        answers = plain_ok and bool(query) and place[lo.memory.id] < p.answer_window
        if not answers and not r_old.values:
            continue  # "About my pay.": it names a subject, it states no value
        sim = float(unit[new.id] @ unit[old.id])
        if (
            answers and sim >= p.answer_similarity
            and lo.candidate.dense >= p.answer_relevance
            and (
                old.id not in versioned or new.id in versioned
                or sim + lo.candidate.dense >= p.chain_answer_closeness
            )
        ):
            if updates.answers_alike(r_new, r_old, asked, policy) is not None and (
                r_new.cue or sim >= p.loose_similarity
                or r_new.words & (r_old.words | asked)
            ):
                # a typed value alone, in a text that shares no word with the older one
                # or the question, answers only with a change word or a near text: "I'm
                # training for the Berlin marathon" names a city, yet says nothing of
                # where one lives
                out.setdefault(new.id, set()).add(old.id)
                continue
            if (
                r_new.cue and old.id not in versioned and sim >= p.loose_similarity
                and min(lo.candidate.dense, hi.candidate.dense) >= p.loose_relevance
                and updates.answers_alike(r_new, r_old, asked, policy, loose=True) is not None
            ):
                guesses.setdefault(new.id, set()).add(old.id)
                continue
        if sim < p.typed_similarity or not updates.shares_a_type(r_new, r_old):
            continue  # the write path's judgement links a typed value only
        signals = updates.judge(r_new, r_old, sim, 0.0, policy)
        # only a typed value replaced by one of its type: a looser link here would join
        # two things' versions into one group for this recall
        if signals.verdict is not updates.Verdict.NONE and signals.same_type is not None:
            out.setdefault(new.id, set()).add(old.id)
    # a guess yields to a link with evidence: an older hit that is a version by the
    # question's words keeps that group
    linked = set(out).union(*out.values())
    for newer, olders in guesses.items():
        kept = olders - linked
        if kept:
            out.setdefault(newer, set()).update(kept)
    return out


def join_links(
    links: dict[str, set[str]],
    implicit: Mapping[str, set[str]],
    vectors: Mapping[str, Vector],
) -> None:
    """Add the links found at recall (`implicit_links`: newer id -> older ids) to the
    links written on write (`links`, either way), the likest pair first, never joining two
    groups of versions the write path built: it saw each with its context and made them
    versions of two things, and a join would place the newest of either above the other's
    versions. A hit that belongs to no group joins the first group its likest link
    reaches; a later link that would carry that group into another is left out ("My pet
    is a husky named Storm" is the pets' newest; "Actually, my home city is Denver" then
    joins it to nothing, though it reads as a change of something near it)."""
    parent: dict[str, str] = {}

    def root(i: str) -> str:
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    for a, bs in links.items():  # the groups written on write
        for b in bs:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[ra] = rb
    built = {root(i) for i, bs in links.items() if bs}
    pairs = [(n, o) for n, olders in implicit.items() for o in olders]

    def likeness(pair: tuple[str, str]) -> float:
        a, b = pair
        if a not in vectors or b not in vectors:
            return 0.0
        return float(_unit(vectors[a]) @ _unit(vectors[b]))

    for newer, older in sorted(pairs, key=lambda p: (-likeness(p), p)):
        ra, rb = root(newer), root(older)
        if ra != rb:
            if ra in built and rb in built:
                continue
            parent[ra] = rb
            if ra in built:
                built.add(rb)
        links.setdefault(newer, set()).add(older)
        links.setdefault(older, set()).add(newer)


def introduces_only(m: Memory, policy: Policy) -> bool:
    """Does `m` read as an intro a later update may have borrowed its subject from: a
    user's short turn with no change word and no value but a name ("About the prod
    runtime.", "About our pet.")? Only such a best hit sends recall looking for the
    update it announced."""
    if updates.is_assistant(m.text, m.metadata):
        return False
    r = reading(m.text)
    return (
        not r.cue and len(r.sequence) <= policy.updates.echo_words
        and updates.introduces(r, policy)
    )


def intro_of(m: Memory) -> str | None:
    """The intro turn an elliptical update borrowed its subject from, as the write path
    recorded it."""
    link = m.metadata.get(updates.UPDATE_KEY)
    intro = link.get("intro") if isinstance(link, dict) else None
    return intro if isinstance(intro, str) else None


def _unit(v: Vector) -> Vector:
    """The vector at unit length (a zero vector stays zero): one norm per hit, so each
    pair's cosine is one dot product."""
    x = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(x))
    return x / n if n > 0 else x


def _echoes(
    m: Memory,
    chain: Sequence[Memory],
    links: Mapping[str, set[str]],
    policy: Policy,
    said: Callable[[Memory], Memory | None],
) -> bool:
    """Does `m` speak around a version without stating anything itself: an assistant's
    reply to an older version, or to the newest one in words of it, or a user's short
    intro with no value of its own ("About my pay.", "About the Tuesday sync." when a
    version says Tuesday), said close to one of the versions, and no version of anything
    itself? `said` gives the user turn a reply answers (`_answered_by`)."""
    if m.id in links or m.id in {c.id for c in chain}:
        return False
    within = timedelta(seconds=policy.updates.context_seconds)
    if updates.is_assistant(m.text, m.metadata):
        # a reply to an older version, said just after it: the user turn it answers is
        # that version ("Thanks, I'll remember your yearly pay." after the pay, not
        # after the interviews said two turns before)
        before = said(m)
        newest = chain[-1]
        if before is not None and before.id == newest.id:
            # a reply to the newest version that speaks of it ("Okay, your usual coffee
            # order is noted." after "I changed my order to a double espresso.")
            return (
                timedelta(0) <= m.created_at - newest.created_at <= within
                and bool(reading(m.text).words & reading(newest.text).words)
            )
        if before is not None and before.id not in {c.id for c in chain[:-1]}:
            return False
        return any(
            timedelta(0) <= m.created_at - c.created_at <= within for c in chain[:-1]
        )
    # an intro said just before a newer version
    if not any(timedelta(0) <= c.created_at - m.created_at <= within for c in chain[1:]):
        return False
    r = reading(m.text)
    if r.cue or len(r.sequence) > policy.updates.echo_words:
        return False
    # a value it names is one a version states ("About the Tuesday sync."): nothing new
    held: dict[str, set[str]] = {}
    for c in chain:
        for kind, vals in reading(c.text).values.items():
            held.setdefault(kind, set()).update(vals)
    return all(vals <= held.get(kind, set()) for kind, vals in r.values.items())


def _by_assistant(m: Memory) -> bool:
    """`updates.is_assistant`, remembered per text when the metadata names no role (the
    speaker prefix is then all it reads)."""
    if m.metadata and any(k in m.metadata for k in updates.ROLE_KEYS):
        return updates.is_assistant(m.text, m.metadata)
    return _assistant_text(m.text)


@functools.lru_cache(maxsize=16_384)
def _assistant_text(text: str) -> bool:
    return updates.is_assistant(text)


def forget_cached_texts() -> None:
    """Drop the texts remembered for speed, after a forget (as `updates` does its own)."""
    _assistant_text.cache_clear()


def _answered_by(turns: Iterable[Memory]) -> Callable[[Memory], Memory | None]:
    """The turn an assistant's reply answers: the latest user turn among `turns` said at
    or before it (at one time, the last given)."""
    users = sorted((m for m in turns if not _by_assistant(m)), key=lambda m: m.created_at)
    times = [m.created_at for m in users]

    def answered(reply: Memory) -> Memory | None:
        at = bisect.bisect_right(times, reply.created_at) - 1
        return users[at] if at >= 0 else None

    return answered


def replies_below(
    ranked: list[Ranked], window: int, policy: Policy, query: str = ""
) -> Arbitration:
    """An assistant's reply that states nothing of its own ranks below the user's
    statement it replies to.

    "Thanks, I'll remember your pet." and "Okay, your coffee order is noted." repeat the
    words a question asks with ("What pet do we have?"), so they often outrank the
    statement that holds the answer, most of all a newer one told in other words. Such
    a reply is worth at most what it replies to: the latest user statement among the
    ranked hits said at most `context_seconds` before it. A reply to a question is left
    alone (it is the answer), and so is one that names a value the statement does not
    hold, or is longer than a statement (`max_words`): it says something itself. A value
    the question names is not one of its own: "Okay, the Boston flight is noted." after
    "Rebooked, boarding pass says Wednesday at 2:05 PM." tells nothing that "What time is
    my trip to Boston?" does not already hold. Only
    replies among the first `window` hits are looked at; a reply further down cannot
    enter them by ranking lower."""
    within = timedelta(seconds=policy.updates.context_seconds)
    said_by_assistant = [_by_assistant(r.memory) for r in ranked]
    if not any(said_by_assistant[:window]) or all(said_by_assistant):
        return Arbitration(ranked, {})
    answered = _answered_by(r.memory for r in ranked)
    asked = reading(query).values if query else {}
    by_id = {r.memory.id: r for r in ranked}
    capped: dict[str, Ranked] = {}
    notes: dict[str, str] = {}
    for n, r in enumerate(ranked[:window]):
        m = r.memory
        if not said_by_assistant[n]:
            continue
        before = answered(m)
        if before is None or m.created_at - before.created_at > within:
            continue
        prior = by_id[before.id]
        if r.score < prior.score:
            continue
        said, reply = reading(prior.memory.text), reading(m.text)
        if said.question or len(reply.sequence) > policy.updates.max_words:
            continue
        if any(
            vals - said.values.get(kind, frozenset()) - asked.get(kind, frozenset())
            for kind, vals in reply.values.items()
        ):
            continue
        capped[m.id] = Ranked(m, r.candidate, r.decay, prior.score - _ABOVE, r.speaker)
        notes[m.id] = _reply_note(prior.memory.id)
    if not capped:
        return Arbitration(ranked, {})
    out = [capped.get(r.memory.id, r) for r in ranked]
    out.sort(key=ranking_key)
    return Arbitration(out, notes)


def _reply_note(statement_id: str) -> str:
    """The explanation of a reply ranked below the statement it answers, whichever step
    (`replies_below`, or `arbitrate` lifting a newest version above it) ranked it there."""
    return f"a reply to {statement_id} stating nothing of its own, ranked below it"


@dataclass(frozen=True, slots=True)
class Arbitration:
    """The ranking after arbitration, and a note per memory it moved or annotated."""

    ranked: list[Ranked]
    notes: dict[str, str]


def version_links(
    edges: Iterable[Edge], memories: Mapping[str, Memory]
) -> dict[str, set[str]]:
    """id -> the ids it shares a version link with, either way (version edges and
    superseded_by): versions of one thing form a connected group."""
    out: dict[str, set[str]] = {}

    def join(a: str, b: str) -> None:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)

    for e in edges:
        if e.type in VERSION_EDGES:
            join(e.src, e.dst)
    for m in memories.values():
        if m.superseded_by is not None:
            join(m.id, m.superseded_by)
    return out


def newest(
    start: str,
    links: Mapping[str, set[str]],
    memories: Mapping[str, Memory],
    admit: Callable[[Memory], bool],
    hops: int,
) -> tuple[Memory, list[Memory]] | None:
    """The newest admissible version within `hops` links of `start` (a version of a
    version is a version of the same thing), newer than `start`, and every version
    found, oldest first; None when there is no newer one. Links are followed forward in
    time, and back to an older version only through a firm link (`_firm`), so one weak
    link between two things' versions does not make the newest of one the other's."""
    origin = memories.get(start)
    if origin is None:
        return None
    group = {start: origin}
    frontier = [start]
    for _ in range(hops):
        nxt = []
        for mid in frontier:
            here = group[mid]
            for nid in sorted(links.get(mid, ())):
                m = memories.get(nid)
                if nid not in group and m is not None and (
                    (m.created_at, m.id) > (here.created_at, here.id) or _firm(here, m)
                ):
                    group[nid] = m
                    nxt.append(nid)
        frontier = nxt
        if not frontier:
            break
    chain = sorted(group.values(), key=lambda m: (m.created_at, m.id))
    later = [m for m in chain if admit(m) and (m.created_at, m.id) > (
        origin.created_at, origin.id)]
    if not later:
        return None
    return later[-1], chain


def _firm(newer: Memory, older: Memory) -> bool:
    """Was `newer` written as a version of `older` on more than a typed value and a
    change word: it retired it, or shares a word with it, or borrowed its subject from an
    intro near it? Only such a link is followed back to an older version in search of a
    newer one beside it: "The person I report to changed to Tom Becker." outdated "Our
    new pet is a parrot named Kiwi." on a name and a change word alone, and the newest
    pet is no answer to who the manager is."""
    if older.superseded_by == newer.id:
        return True
    why = newer.metadata.get(updates.UPDATE_KEY)
    if not isinstance(why, dict):
        return False
    if older.id in (why.get("also") or ()):
        return True
    return why.get("of") == older.id and (
        why.get("verdict") == updates.Verdict.SUPERSEDES.value
        or bool(why.get("shared")) or float(why.get("context") or 0.0) > 0.0
    )


def arbitrate(
    ranked: list[Ranked],
    candidates: Mapping[str, Candidate],
    memories: Mapping[str, Memory],
    links: Mapping[str, set[str]],
    when: datetime,
    policy: Policy,
    admit: Callable[[Memory], bool],
    chains: bool = False,
) -> Arbitration:
    """Place each older version's newest version above it.

    `ranked` is the ranking so far; `candidates` every candidate with its relevance
    (a retired older version is a candidate though it cannot be a hit: its relevance is
    what the question says about the thing, and the newest version inherits it);
    `memories` holds the records of the candidates and of the versions linked to them.
    With `chains`, a newer version's note lists every version, oldest first."""
    hops = policy.updates.arbitration_hops
    by_id = {r.memory.id: r for r in ranked}
    notes: dict[str, str] = {}
    # what a reply answers, among every turn known here (ranked, candidates, versions)
    answered = _answered_by({**memories, **{r.memory.id: r.memory for r in ranked}}.values())
    olders = sorted(
        (cid for cid in candidates if cid in links and cid in memories),
        key=lambda cid: -candidates[cid].relevance,
    )
    for old_id in olders:
        found = newest(old_id, links, memories, admit, hops)
        if found is None:
            continue
        new, chain = found
        old = memories[old_id]
        old_cand = candidates[old_id]
        old_rank = by_id.get(old_id)
        cur = by_id.get(new.id)
        rel = max(old_cand.relevance, cur.candidate.relevance if cur else 0.0)
        decay = cur.decay if cur else decay_score(new, when, policy)
        score = final_score(rel, decay, policy)
        if cur is not None:
            score = max(score, cur.score)
        if old_rank is not None and score <= old_rank.score:
            score = old_rank.score + _ABOVE
        # the turns said around its versions, stating nothing themselves, rank below it,
        # whether the older version is a hit or was retired
        for r in by_id.values():
            if (
                r.score >= score and r.memory.id != new.id
                and _echoes(r.memory, chain, links, policy, answered)
            ):
                score = r.score + _ABOVE
                said = answered(r.memory) if _by_assistant(r.memory) else None
                if said is not None and said.id == new.id:  # it acknowledged this version
                    notes.setdefault(r.memory.id, _reply_note(new.id))
        base = cur.candidate if cur is not None else Candidate(new.id, 0.0, 0.0, rel)
        cand = base.evolve(id=new.id, relevance=rel)
        by_id[new.id] = Ranked(new, cand, decay, score, cur.speaker if cur else 0.0)
        snippet = old.text if len(old.text) <= _SNIPPET else old.text[: _SNIPPET - 1] + "…"
        note = (
            f"newer version of {old.id} (\"{snippet}\"), observed {new.created_at:%Y-%m-%d}"
        )
        if chains and len(chain) > 1:
            note += "; versions oldest to newest: " + " -> ".join(
                f"[{m.created_at:%Y-%m-%d}] {m.text}" for m in chain
            )
        notes.setdefault(new.id, note)
        if old_rank is not None:
            notes.setdefault(
                old_id,
                f"older version: {new.id} is newer, observed {new.created_at:%Y-%m-%d}",
            )
    out = sorted(by_id.values(), key=ranking_key)
    return Arbitration(out, notes)
