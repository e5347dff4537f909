"""Ranking: fuse dense and lexical candidates, expand over the graph, score, explain.

Pure functions over data the engine has already fetched, so the ranking can be
tested (and reasoned about) without any store.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .models import Edge, Memory, Tier
from .policy import Policy
from .ports import LexicalHit, VectorHit
from .scoring import decay_score, final_score, never_decays
from .text import speaker_name
from .time_refs import Period


def shown(x: float) -> float:
    """`x` to 4 decimals, as an explanation shows it: `round(x * 1e4) / 1e4`, a quarter of
    the cost of `round(x, 4)` (which goes through a decimal conversion; every face rounds
    every term of every hit). The two agree except near a tie (x * 1e4 within a rounding
    error of a half), where this may round up one unit in the fourth decimal. Values too
    large for an int, and NaN, pass unchanged."""
    return round(x * 10_000) / 10_000 if -1e15 < x < 1e15 else x


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a memory ranked where it did: every term of its score."""

    final: float
    relevance: float  # fused dense + lexical (or carried over the graph)
    dense: float  # cosine similarity to the query, clipped at 0
    # BM25 normalised by the best BM25 of this query, in [0, 1], times the query's lexical
    # trust (`lexical_trust`)
    lexical: float
    decay: float  # decayed salience at the time asked
    importance: float  # importance blend (recency, frequency, centrality, confidence)
    tier: Tier
    hops: int  # 0 = direct hit, n = reached over n graph edges
    via: str | None = None  # the memory it was reached from, when hops > 0
    context: float = 0.0  # relevance lent by strong matches observed at about the same time
    # a newer version placed above an older one (core/arbitration.py), or an older one
    # placed below its newer version: which, and when the newer was observed
    note: str | None = None
    speaker: float = 0.0  # added because the memory's speaker is someone the question names
    # relevance taken away because the memory was observed outside the calendar period
    # the question names ("in December 2023": `period_weight`)
    period: float = 0.0
    # the share of the lexical half this question kept (`lexical_trust`): below 1 when its
    # strong lexical matches were all far from it in meaning, words shared by accident
    lexical_trust: float = 1.0

    def as_dict(self) -> dict[str, object]:
        return {
            "final": shown(self.final),
            "relevance": shown(self.relevance),
            "dense": shown(self.dense),
            "lexical": shown(self.lexical),
            "decay": shown(self.decay),
            "importance": shown(self.importance),
            "tier": self.tier.value,
            "hops": self.hops,
            "via": self.via,
            "context": shown(self.context),
            "speaker": shown(self.speaker),
            "period": shown(self.period),
            "lexical_trust": shown(self.lexical_trust),
            "note": self.note,
        }


class Candidate(NamedTuple):
    """One memory in the running for a query, with where its relevance came from.

    A NamedTuple, not a frozen dataclass: recall builds a few hundred per query and the
    tuple is several times cheaper to build, equally immutable."""

    id: str
    dense: float
    lexical: float
    relevance: float
    hops: int = 0
    via: str | None = None
    context: float = 0.0
    period: float = 0.0  # relevance taken away: observed outside the period asked about

    def evolve(self, **changes: Any) -> Candidate:
        """A copy with some fields changed: every step after fusion keeps the terms the
        earlier ones set (context, period), which a fresh tuple would drop."""
        return self._replace(**changes)


def fuse(
    dense: Sequence[VectorHit],
    lexical: Sequence[LexicalHit],
    policy: Policy,
    extra_similarity: Mapping[str, float] | None = None,
    trust: float | None = None,
) -> dict[str, Candidate]:
    """Linear fusion of cosine similarity and max-normalised BM25, the lexical half
    scaled by the query's `trust` (`fused_trust` of the same inputs when not given).

    Max-normalising BM25 per query puts the best lexical match at 1.0, on the same
    footing as a near-identical embedding; rank-only fusion (RRF) would throw away
    how much better the best match is than the tenth. The divisor never goes below
    `lexical_floor`, so a query whose only lexical matches are words found in every
    memory (a speaker prefix, say: BM25 near 0) is not stretched into a perfect match.
    """
    dense_by_id = _similarities(dense, extra_similarity)
    lex_by_id = normalised_lexical(lexical, policy)
    if trust is None:
        trust = lexical_trust(lex_by_id, dense_by_id, policy)
    w = policy.retrieval.dense_weight
    out: dict[str, Candidate] = {}
    for cid in dense_by_id.keys() | lex_by_id.keys():
        d = dense_by_id.get(cid, 0.0)
        lx = trust * max(0.0, lex_by_id.get(cid, 0.0))
        out[cid] = Candidate(cid, d, lx, w * d + (1.0 - w) * lx)
    return out


def _similarities(
    dense: Sequence[VectorHit], extra: Mapping[str, float] | None
) -> dict[str, float]:
    """Each known candidate's cosine, clipped at 0: the dense hits', then the true cosine
    of lexical-only hits read beside them."""
    out = {h.id: max(0.0, h.similarity) for h in dense}
    for cid, sim in (extra or {}).items():
        out.setdefault(cid, max(0.0, sim))
    return out


def fused_trust(
    dense: Sequence[VectorHit],
    lexical: Sequence[LexicalHit],
    policy: Policy,
    extra_similarity: Mapping[str, float] | None = None,
) -> float:
    """The lexical trust `fuse` applies to the same inputs: computed once per recall,
    for every fusion of it and for the explanations."""
    return lexical_trust(
        normalised_lexical(lexical, policy), _similarities(dense, extra_similarity), policy
    )


STRONG_LEXICAL = 0.5  # a lexical match this close to the best one is a strong one


def normalised_lexical(lexical: Sequence[LexicalHit], policy: Policy) -> dict[str, float]:
    """Each hit's BM25 over max(best BM25, `lexical_floor`)."""
    top = max((h.score for h in lexical), default=0.0)
    scale = max(top, policy.retrieval.lexical_floor)
    return {h.id: (h.score / scale if scale > 0 else 0.0) for h in lexical}


def strong_lexical(lexical: Sequence[LexicalHit], policy: Policy) -> list[str]:
    """The hits `lexical_trust` judges the query's lexical half by."""
    return [cid for cid, lx in normalised_lexical(lexical, policy).items() if lx >= STRONG_LEXICAL]


def lexical_trust(
    lexical: Mapping[str, float], similarity: Mapping[str, float], policy: Policy
) -> float:
    """The share of the lexical half a question's matches keep: by the cosine of the
    nearest strong lexical match (`lexical_trust_low` / `_high`). Words shared by
    accident ("going" in "taste as you go") bring texts of other meaning; a question's
    real matches include at least one near it. A strong match whose cosine is not known
    (the vector index down) is trusted: no cosine, no evidence against it; so are matches
    none of which is strong (the best BM25 below half of `lexical_floor`: weak already)."""
    r = policy.retrieval
    near: float | None = None  # None: no strong match, nothing to judge
    for cid, lx in lexical.items():
        if lx >= STRONG_LEXICAL:
            if cid not in similarity:
                return 1.0
            near = max(near or 0.0, similarity[cid])
    if near is None or near >= r.lexical_trust_high:
        return 1.0
    if near <= r.lexical_trust_low:
        return 0.0
    return (near - r.lexical_trust_low) / (r.lexical_trust_high - r.lexical_trust_low)


def period_focus(
    candidates: Mapping[str, Candidate],
    times: Mapping[str, datetime],
    period: Period,
    policy: Policy,
) -> dict[str, Candidate]:
    """Keep (1 - period_weight) of the relevance of every candidate observed outside the
    period the question names (widened by the policy's slack); a candidate of unknown time
    keeps its own. Relative order inside and outside the period is unchanged. When no
    candidate was observed in the period, nothing changes: the question then asks about
    a time before the memory began ("where did I live in 2015?", told years later), and
    the date says nothing about when its answer was told."""
    r = policy.retrieval
    if r.period_weight <= 0:
        return dict(candidates)
    span = period.widened(timedelta(days=r.period_min_slack_days), r.period_slack)
    if not any(span.start <= times[c] < span.end for c in candidates if c in times):
        return dict(candidates)
    keep = 1.0 - r.period_weight
    out: dict[str, Candidate] = {}
    for cid, cand in candidates.items():
        at = times.get(cid)
        if at is None or span.start <= at < span.end:
            out[cid] = cand
        else:
            out[cid] = cand.evolve(
                relevance=cand.relevance * keep,
                period=cand.period + cand.relevance * r.period_weight,
            )
    return out


def conversation_context(
    candidates: Mapping[str, Candidate],
    seeds: Sequence[Candidate],
    times: Mapping[str, datetime],
    policy: Policy,
) -> dict[str, Candidate]:
    """Lend relevance to what was observed next to a strong match.

    A question's words often match the turn that asked it while the answer is the turn
    after ("How was the concert?" / "Amazing, we danced all night"). So every candidate
    observed within `context_window_seconds` of a seed (the `context_seeds` most relevant
    admissible candidates, chosen by the caller) gains context_weight * that seed's
    relevance, summed over such seeds. Only candidates already matched by a channel take
    part: context lifts a weak match, it does not bring in memories that match nothing.
    `times` maps candidate ids to when they were observed (created_at).
    """
    f, window = policy.retrieval.context_weight, policy.retrieval.context_window_seconds * 1e6
    if f <= 0:
        return dict(candidates)
    # Seeds in time order (whole microseconds, exact), with running sums of relevance: the
    # seeds within a candidate's window are a contiguous run found by bisection, so each
    # candidate costs O(log seeds) even when every memory was observed at once (an import).
    anchors = sorted((_micros(times[s.id]), s.id, s.relevance) for s in seeds if s.id in times)
    keys = [a[0] for a in anchors]
    running = [0.0]
    for _, _, rel in anchors:
        running.append(running[-1] + rel)
    own = {sid: rel for _, sid, rel in anchors}
    if not anchors:
        return dict(candidates)
    out: dict[str, Candidate] = {}
    for cid, cand in candidates.items():
        at = times.get(cid)
        if at is None:
            out[cid] = cand
            continue
        us = (at - _EPOCH) // _MICROSECOND
        total = running[bisect_right(keys, us + window)] - running[bisect_left(keys, us - window)]
        if cid in own:  # a seed lends nothing to itself
            total -= own[cid]
        if total > 1e-12:
            lent = f * total
            out[cid] = Candidate(cid, cand.dense, cand.lexical, cand.relevance + lent,
                                 cand.hops, cand.via, lent)
        else:
            out[cid] = cand
    return out


def cosine_to(query: NDArray[np.float32], rows: NDArray[np.float32]) -> list[float]:
    """Cosine of `query` to each row, clipped to [-1, 1]; a zero vector scores 0. One
    formula for every source of stored vectors, so a similarity does not depend on where
    the vector was read from."""
    q = np.asarray(query, dtype=np.float32)
    m = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
    sims = (m @ q) / np.where(norms > 0, norms, 1.0)
    out: list[float] = np.clip(sims, -1.0, 1.0).tolist()
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(t: datetime) -> int:
    return (t - _EPOCH) // _MICROSECOND


def best_possible(relevance: float, policy: Policy, speaker: float = 0.0) -> float:
    """The highest final score a candidate of this relevance can reach (decay <= 1, and
    a named speaker's `speaker` weight when one may apply)."""
    return with_speaker(policy.retrieval.alpha * relevance + (1.0 - policy.retrieval.alpha),
                        speaker)


def with_speaker(score: float, weight: float) -> float:
    """A score raised by a named speaker's weight: that share of its distance to 1, so a
    score stays within [0, 1] and keeps its order among the speaker's own words."""
    return score + weight * (1.0 - score)


def speaker_weight(m: Memory, names: frozenset[str], policy: Policy) -> float:
    """`speaker_weight` when the memory's speaker is someone the question names (by the
    first word of the speaker's name), else 0."""
    if not names:
        return 0.0
    who = speaker_name(m.text)
    return policy.retrieval.speaker_weight if who and who.split()[0] in names else 0.0


def unseen_similarity_bound(dense: Sequence[VectorHit], asked: int) -> float:
    """The highest cosine a memory outside the dense answer can have: the index returned
    its best `asked`, so any other vector is no closer than the last of them (as exact as
    the index itself). When fewer came back the whole namespace was returned, and an id
    outside it has no vector at all."""
    if len(dense) < asked or not dense:
        return 0.0
    return max(0.0, min(h.similarity for h in dense))


def needs_similarity(
    lexical_only: Sequence[str],
    candidates: Mapping[str, Candidate],
    bound: float,
    ranked: Sequence[Ranked],
    places: int,
    policy: Policy,
    speaker: float = 0.0,
) -> list[str]:
    """The lexical-only candidates whose true cosine could still matter.

    They were fused with dense = 0, a lower bound; with dense at its upper bound a
    candidate scores at most alpha * (w * bound + (1 - w) * lexical) + (1 - alpha).
    Raising scores only raises the `places`-th best, so a candidate whose most is
    below the current `places`-th score can neither enter the top nor seed the graph
    expansion: its cosine need not be fetched. Exact, not a heuristic."""
    if len(ranked) < places:
        return list(lexical_only)
    cut = ranked[places - 1].score
    w = policy.retrieval.dense_weight
    out = []
    for cid in lexical_only:
        if best_possible(w * bound + (1.0 - w) * candidates[cid].lexical, policy, speaker) >= cut:
            out.append(cid)
    return out


def degrees_from(edges: Iterable[Edge], ids: Iterable[str]) -> dict[str, int]:
    """Edges in plus out of each of `ids` (0 when it has none), counted on `edges`, which
    must hold every edge of those ids (as `RecordStore.edges` returns them): recall then
    needs no read of its own for the degrees of memories whose edges it read. (An edge
    always joins two different memories, so no edge counts twice for one id.)"""
    out = dict.fromkeys(ids, 0)
    for e in edges:
        if e.src in out:
            out[e.src] += 1
        if e.dst in out:
            out[e.dst] += 1
    return out


def expand(
    seeds: Iterable[Candidate],
    edges: Iterable[Edge],
    known: Mapping[str, Candidate],
    policy: Policy,
    hop: int,
) -> dict[str, Candidate]:
    """Neighbours of the seeds, carrying relevance * hop_decay * edge weight, where that
    beats what the neighbour already has (a weak direct match can be lifted by a strong
    neighbour; its own dense and lexical terms are kept for the explanation)."""
    by_id = {s.id: s for s in seeds}
    found: dict[str, Candidate] = {}
    for e in edges:
        for here, there in ((e.src, e.dst), (e.dst, e.src)):
            seed = by_id.get(here)
            if seed is None:
                continue
            rel = seed.relevance * policy.retrieval.hop_decay * min(1.0, e.weight)
            prior = found.get(there) or known.get(there)
            if prior is None or rel > prior.relevance:
                dense, lexical = (prior.dense, prior.lexical) if prior else (0.0, 0.0)
                found[there] = Candidate(there, dense, lexical, rel, hop, seed.id)
    return found


class Ranked(NamedTuple):
    memory: Memory
    candidate: Candidate
    decay: float
    score: float
    speaker: float = 0.0  # what a speaker the question names added to the score


def ranking_key(r: Ranked) -> tuple[float, float, str]:
    """Best score first; at an equal score the hit more relevant to the question, then
    the id. Equal scores are not rare: arbitration places a newer version just above
    another hit (`arbitration._ABOVE`), and two versions placed above one reply tie
    exactly; an id alone (random) would order them differently from store to store."""
    return (-r.score, -r.candidate.relevance, r.memory.id)


def rank(
    candidates: Mapping[str, Candidate],
    memories: Mapping[str, Memory],
    at: datetime,
    policy: Policy,
    admit: Callable[[Memory], bool],
    names: frozenset[str] = frozenset(),
) -> list[Ranked]:
    """Score every admissible candidate. Below the decay floor only crystals, pins and
    matches at least `floor_bypass_relevance` strong (in relevance or in cosine) survive.
    A memory spoken by someone of `names` (the people the question names) closes
    `speaker_weight` of its score's distance to 1 (`with_speaker`)."""
    out: list[Ranked] = []
    for cid, cand in candidates.items():
        m = memories.get(cid)
        if m is None or not admit(m):
            continue
        d = decay_score(m, at, policy)
        faded = d < policy.retrieval.decay_floor and not never_decays(m)
        strong = policy.retrieval.floor_bypass_relevance < 1.0 and (
            max(cand.relevance, cand.dense) >= policy.retrieval.floor_bypass_relevance
        )
        if faded and not strong:
            continue
        base = final_score(cand.relevance, d, policy)
        score = with_speaker(base, speaker_weight(m, names, policy))
        out.append(Ranked(m, cand, d, score, score - base))
    out.sort(key=ranking_key)
    return out
