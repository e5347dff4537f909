"""The read path: recall, from a query to ranked, explained hits.

The steps, in order: validate the request (`RecallRequest`), embed the query, run the
dense and lexical channels side by side, fuse them, lend relevance from the
conversation around the strongest matches (or fetch the cosines a lexical-only
candidate needs to reach the top), read records only as far as the top k needs,
lift the best hit's neighbouring turns toward it, expand over the graph, place newer
versions above older ones, explain each hit, pack into a token budget, then reinforce
what was recalled. How records are read (by need in-process, in bulk from a
networked tier) is one seam: core/recall_reads.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from .arbitration import (
    Arbitration,
    arbitrate,
    asks_about_past,
    implicit_links,
    intro_of,
    introduces_only,
    join_links,
    replies_below,
    version_links,
)
from .clock import utc
from .context import EngineContext
from .errors import BackendUnavailable, InvalidInput, InvalidVector
from .models import Kind, Memory, Status, Tier, parse_kind
from .packing import pack
from .policy import Policy
from .ports import SentQuery, Vector, VectorHit
from .recall_reads import CandidateReads, LexicalSide, index_outage, lexical_alone
from .restore import restored_note
from .results import Hit, RecallResult, render_hit
from .retrieval import (
    Candidate,
    Explanation,
    Ranked,
    best_possible,
    conversation_context,
    degrees_from,
    expand,
    fuse,
    fused_trust,
    needs_similarity,
    period_focus,
    rank,
    ranking_key,
    strong_lexical,
    unseen_similarity_bound,
)
from .scoring import importance_score
from .text import names_asked
from .time_refs import Period, named_period

# below a bound by this much per unit of their own relevance missing, so that neighbours
# held at one bound do not tie (an exact tie would be broken by random memory ids)
_AT_BOUND = 1e-9
_MIN_READ_STEP = 10  # candidates read per round trip at least, however small k is


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """A recall's arguments, validated, with the times it is asked at."""

    query: str
    k: int
    now: datetime  # the engine's clock: what reinforcement records
    when: datetime  # the time the answer is for (`as_of`, else now)
    as_of: datetime | None
    include_history: bool
    kinds: frozenset[Kind] | None
    token_budget: int | None
    reinforce: bool
    # the query's embedding when the caller already has it (several namespaces, one query)
    vector: Vector | None = field(default=None, compare=False)
    # the question asks about an earlier state ("where did I live before Lisbon?"):
    # retired versions may answer, and no newer version is ranked above an older one
    past: bool = False
    # the people the question names (`names_asked`): what they said scores higher
    # (`speaker_weight`)
    names: frozenset[str] = frozenset()
    # the calendar period the question names ("in December 2023"): what was observed
    # outside it ranks lower (`period_weight`)
    period: Period | None = None

    def speaker_bound(self, policy: Policy) -> float:
        """The weight a speaker the question names may add to a score (`with_speaker`)."""
        return policy.retrieval.speaker_weight if self.names else 0.0

    @property
    def historical(self) -> bool:
        """Superseded or consolidated memories may answer, so ask the index for more."""
        return self.as_of is not None or self.include_history

    def admit(self, m: Memory) -> bool:
        if self.kinds is not None and m.kind not in self.kinds:
            return False
        if self.as_of is not None:
            return m.status is not Status.ARCHIVED and m.valid_at(self.when)
        return self.include_history or self.past or m.is_active


class RecallPath:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.reads = CandidateReads.for_context(ctx)

    def request(
        self,
        query: str,
        *,
        k: int,
        as_of: datetime | None,
        include_history: bool,
        token_budget: int | None,
        reinforce: bool,
        kinds: Iterable[Kind | str] | None,
        query_vector: Iterable[float] | None = None,
    ) -> RecallRequest:
        """Every check of recall's arguments, before any I/O."""
        self.ctx.check_text(query, "query")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive integer, got {k!r}")
        if token_budget is not None and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int)
            or token_budget < 1
        ):
            raise InvalidInput(f"token_budget must be a positive integer, got {token_budget!r}")
        if token_budget is not None and self.ctx.token_counter is None:
            raise InvalidInput("token_budget needs an engine opened with a token_counter")
        vector = None
        if query_vector is not None:
            try:
                vector = np.asarray(query_vector, dtype=np.float32)
            except (TypeError, ValueError) as e:
                raise InvalidVector(f"query_vector must be a vector of numbers: {e}") from e
            want = (self.ctx.embedder.dimension,)
            if vector.shape != want or not np.isfinite(vector).all():
                raise InvalidVector(
                    f"query_vector must be {want[0]} finite numbers (the embedder "
                    f"{self.ctx.embedder.name!r}), got shape {vector.shape}"
                )
        now = self.ctx.clock.now()
        return RecallRequest(
            query=query,
            k=k,
            now=now,
            when=utc(as_of) if as_of is not None else now,
            as_of=as_of,
            include_history=include_history,
            kinds=frozenset(parse_kind(x) for x in kinds) if kinds is not None else None,
            token_budget=token_budget,
            reinforce=reinforce,
            vector=vector,
            past=asks_about_past(query),
            names=names_asked(query),
            period=named_period(query),
        )

    def recall(self, ns: str, req: RecallRequest) -> RecallResult:
        policy = self.ctx.policy
        qvec = req.vector if req.vector is not None else self.ctx.embed([req.query])[0]
        pool = max(req.k, policy.retrieval.candidate_pool)
        # No status filter in the vector tier: the records are the truth and `admit`
        # checks them, and an unfiltered query is Chroma's fastest path.
        asked = pool * (2 if req.historical else 1)
        context = policy.retrieval.context_weight > 0 and policy.retrieval.context_seeds > 0
        dense, side = self._channels(ns, req.query, qvec, pool, asked, context)
        candidates, memories, ranked, trust = self._first_ranking(
            ns, req, qvec, dense, side, asked, context
        )
        candidates, ranked = self._neighbours(ns, ranked, candidates, memories, req)
        candidates, ranked = self._introduced(ns, ranked, candidates, memories, req)
        ranked = self._expand(ns, ranked, candidates, memories, req)
        settled = self._arbitrate(ns, ranked, candidates, memories, req, side)
        replies = replies_below(settled.ranked, req.k, self.ctx.policy, req.query)
        if replies.notes:
            settled = Arbitration(replies.ranked, replies.notes | settled.notes)
        hits = self._hits(
            ns, settled.ranked[: max(req.k, 1)], side.degrees, req.when, settled.notes, trust
        )
        tokens = None
        if req.token_budget is not None:
            assert self.ctx.token_counter is not None
            hits, tokens = pack(hits, req.token_budget, render_hit, self.ctx.token_counter)
        self._after(ns, req, hits)
        return RecallResult(req.query, tuple(hits), tokens)

    def _channels(
        self, ns: str, query: str, qvec: Vector, pool: int, asked: int, context: bool
    ) -> tuple[list[VectorHit], LexicalSide]:
        """The dense and the lexical channel, overlapped: a server query is sent first
        and its answer read after the lexical side, with no thread between
        (`begin_query`); an in-process query runs on a worker thread. Embedded Chroma
        holds Python's global lock while it runs, so in process the two take turns
        (measured: no slower than one after the other, no faster either). An index
        that does not answer (`index_outage`) leaves the lexical channel alone, so
        recall still answers from the records."""
        ctx = self.ctx
        sent: SentQuery | None = None
        if ctx.caps.begin_query is not None:
            try:
                sent = ctx.caps.begin_query(ns, qvec, asked)
            except BackendUnavailable as e:
                if not index_outage(e):
                    raise
                lexical_alone(ns, e)
                return [], self.reads.lexical_side(ns, query, pool, qvec, context)
        dense_future: Future[list[VectorHit]] | None = None
        if sent is None:
            dense_future = ctx.pool.submit(ctx.vectors.query, ns, qvec, asked)
        try:
            side = self.reads.lexical_side(ns, query, pool, qvec, context)
        except BaseException:
            if sent is not None:
                sent.cancel()
            raise
        try:
            if sent is not None:
                return sent.result(), side
            assert dense_future is not None
            return dense_future.result(), side
        except BackendUnavailable as e:
            if not index_outage(e):
                raise
            lexical_alone(ns, e)
            return [], side

    def _first_ranking(
        self,
        ns: str,
        req: RecallRequest,
        qvec: Vector,
        dense: list[VectorHit],
        side: LexicalSide,
        asked: int,
        context: bool,
    ) -> tuple[dict[str, Candidate], dict[str, Memory], list[Ranked], float]:
        """Fused candidates, the records read, the ranking before graph expansion and the
        query's lexical trust (for the explanations).

        Lexical-only candidates enter with dense = 0; their stored vectors are fetched
        only for those an exact bound cannot rule out of the top (and the expansion
        seeds). Conversation context instead needs every candidate's true relevance (to
        pick the seeds) and time."""
        policy = self.ctx.policy
        lexical = side.hits
        in_dense = {h.id for h in dense}
        lexical_only = [h.id for h in lexical if h.id not in in_dense]
        places = max(req.k, policy.retrieval.expansion_seeds)
        if context:
            extra = (
                self.reads.similarities(ns, qvec, lexical_only, side.cosines)
                if lexical_only else {}
            )
            trust = fused_trust(dense, lexical, policy, extra)
            candidates = fuse(dense, lexical, policy, extra, trust)
            seeds, read, times = self.reads.context_inputs(
                ns, candidates, dense, req.admit, side
            )
            candidates = conversation_context(candidates, seeds, times, policy)
            candidates = self._in_period(ns, req, candidates, read, times)
            memories, ranked = self._fetch_ranked(ns, candidates, places, req, read)
            return candidates, memories, ranked, trust
        # the strong lexical-only matches' cosines decide how far the lexical half is
        # trusted (`lexical_trust`), so they are read first, whatever the bound says; the
        # cosines read later are of weak matches only, which leave the trust as it is
        strong = set(strong_lexical(lexical, policy)) - in_dense
        known = self.reads.similarities(ns, qvec, sorted(strong), side.cosines) if strong else {}
        trust = fused_trust(dense, lexical, policy, known)
        candidates = self._in_period(
            ns, req, fuse(dense, lexical, policy, known, trust), side.early
        )
        memories, ranked = self._fetch_ranked(ns, candidates, places, req, side.early)
        need = needs_similarity(
            [cid for cid in lexical_only if cid not in known],
            candidates,
            unseen_similarity_bound(dense, asked),
            ranked,
            places,
            policy,
            req.speaker_bound(policy),
        )
        extra = self.reads.similarities(ns, qvec, need, side.cosines) if need else {}
        if extra:
            extra.update(known)
            candidates = self._in_period(
                ns, req, fuse(dense, lexical, policy, extra, trust), memories
            )
            memories, ranked = self._fetch_ranked(ns, candidates, places, req, memories)
        return candidates, memories, ranked, trust

    def _in_period(
        self,
        ns: str,
        req: RecallRequest,
        candidates: dict[str, Candidate],
        read: Mapping[str, Memory],
        times: Mapping[str, datetime] | None = None,
    ) -> dict[str, Candidate]:
        """`period_focus` where the question names a period, with the candidates' times
        (read here unless the caller has them)."""
        if req.period is None or self.ctx.policy.retrieval.period_weight <= 0:
            return candidates
        if times is None:
            times = self.reads.created_times(ns, candidates, read)
        return period_focus(candidates, times, req.period, self.ctx.policy)

    def _fetch_ranked(
        self,
        namespace: str,
        candidates: Mapping[str, Candidate],
        k: int,
        req: RecallRequest,
        read: dict[str, Memory] | None = None,
    ) -> tuple[dict[str, Memory], list[Ranked]]:
        """Read candidate records best-relevance first, and stop as soon as no unread
        candidate can reach the k-th score: decay is at most 1, so a candidate of
        relevance r scores at most alpha * r + (1 - alpha). Exact, and most queries
        read a fraction of the pool. Records in `read` are not read again."""
        policy = self.ctx.policy
        order = sorted(candidates.values(), key=lambda c: (-c.relevance, c.id))
        step = max(2 * k, _MIN_READ_STEP)
        memories: dict[str, Memory] = dict(read or {})
        ranked: list[Ranked] = []
        bonus = req.speaker_bound(policy)
        for start in range(0, len(order), step):
            batch = order[start : start + step]
            unread = [c.id for c in batch if c.id not in memories]
            if unread:
                memories.update(self.ctx.read(namespace, unread))
            # each candidate's score is its own, so ranking a step's batch and merging
            # equals ranking everything fetched so far, without scoring anyone twice
            ranked += rank(
                {c.id: c for c in batch}, memories, req.when, policy, req.admit, req.names
            )
            ranked.sort(key=ranking_key)
            rest = order[start + step : start + step + 1]
            if len(ranked) >= k and (
                not rest
                or best_possible(rest[0].relevance, policy, bonus) < ranked[k - 1].score
            ):
                break
        return memories, ranked

    def _neighbours(
        self,
        ns: str,
        ranked: list[Ranked],
        candidates: dict[str, Candidate],
        memories: dict[str, Memory],
        req: RecallRequest,
    ) -> tuple[dict[str, Candidate], list[Ranked]]:
        """The turns written just before and after the best hit, observed within the
        context window of it (`Policy.retrieval.neighbour_turns`), close `neighbour_weight`
        of their relevance's distance to the best hit's: the answer to what the best hit
        tells of is often the next turn, which shares no word with the question. Their own
        relevance still orders them among themselves. The lent part is the hit's `context`
        in its explanation."""
        policy = self.ctx.policy.retrieval
        around = self.ctx.caps.written_around
        w = policy.neighbour_weight
        if around is None or policy.neighbour_turns <= 0 or w <= 0 or not ranked:
            return candidates, ranked
        best = ranked[0]
        top = best.candidate.relevance
        # a guess from position stays below the best matches: strictly below the
        # relevance of the `neighbour_below`-th hit
        below = policy.neighbour_below
        cap = math.nextafter(ranked[below - 1].candidate.relevance, 0.0) if (
            0 < below <= len(ranked)) else top
        ids = [i for i in around(ns, best.memory.id, policy.neighbour_turns)
               if i not in candidates or candidates[i].relevance < top]
        if not ids:
            return candidates, ranked
        unread = [i for i in ids if i not in memories]
        if unread:
            memories.update(self.ctx.read(ns, unread))
        window = timedelta(seconds=policy.context_window_seconds)
        lifted: dict[str, Candidate] = {}
        for i in ids:
            m = memories.get(i)
            if m is None or m.tier is not Tier.TRACE:
                continue
            if abs(m.created_at - best.memory.created_at) > window:
                continue
            own = candidates.get(i) or Candidate(i, 0.0, 0.0, 0.0)
            raised = own.relevance + w * (top - own.relevance)
            if raised >= cap:  # held at the bound, in the order of their own relevance
                raised = cap - _AT_BOUND * (1.0 - own.relevance)
            lent = raised - own.relevance
            if lent <= 0:
                continue
            lifted[i] = own.evolve(relevance=own.relevance + lent, context=own.context + lent)
        return self._replace(ranked, candidates, memories, req, lifted)

    def _replace(
        self,
        ranked: list[Ranked],
        candidates: dict[str, Candidate],
        memories: dict[str, Memory],
        req: RecallRequest,
        lifted: dict[str, Candidate],
    ) -> tuple[dict[str, Candidate], list[Ranked]]:
        """The ranking with the `lifted` candidates scored again and put in place."""
        if not lifted:
            return candidates, ranked
        placed = rank(lifted, memories, req.when, self.ctx.policy, req.admit, req.names)
        out = [r for r in ranked if r.memory.id not in lifted] + placed
        out.sort(key=ranking_key)
        return candidates | lifted, out

    def _introduced(
        self,
        ns: str,
        ranked: list[Ranked],
        candidates: dict[str, Candidate],
        memories: dict[str, Memory],
        req: RecallRequest,
    ) -> tuple[dict[str, Candidate], list[Ranked]]:
        """The update an intro announced, in the intro's place: "About the prod runtime."
        matches "What runtime is live?", and "Rolled out Python 3.14.", said a few turns
        later, is the answer and shares no word with the question. The write path
        recorded which intro lent the update its subject (`Signals.intro`); when the best
        hit is such an intro, the update takes the intro's relevance, so it ranks with it
        and, as a newer version, above the value it replaced."""
        around = self.ctx.caps.written_around
        turns = self.ctx.policy.updates.context_turns
        if around is None or turns <= 0 or not ranked or req.past:
            return candidates, ranked
        best = ranked[0]
        if not introduces_only(best.memory, self.ctx.policy):
            return candidates, ranked
        top = best.candidate.relevance
        # an update borrows from the last `context_turns` user turns before it; the
        # assistant's replies between them count among the turns written around
        ids = [i for i in around(ns, best.memory.id, 2 * turns)
               if i not in candidates or candidates[i].relevance < top]
        unread = [i for i in ids if i not in memories]
        if unread:
            memories.update(self.ctx.read(ns, unread))
        lifted: dict[str, Candidate] = {}
        for i in ids:
            m = memories.get(i)
            if m is None or m.status is not Status.ACTIVE or intro_of(m) != best.memory.id:
                continue
            own = candidates.get(i) or Candidate(i, 0.0, 0.0, 0.0)
            lent = top - own.relevance
            lifted[i] = own.evolve(relevance=top, context=own.context + lent)
        if lifted:
            # the intro states nothing itself: it yields its place to what it announced
            lifted[best.memory.id] = best.candidate.evolve(relevance=math.nextafter(top, 0.0))
        return self._replace(ranked, candidates, memories, req, lifted)

    def _expand(
        self,
        namespace: str,
        ranked: list[Ranked],
        candidates: dict[str, Candidate],
        memories: dict[str, Memory],
        req: RecallRequest,
    ) -> list[Ranked]:
        """Graph expansion: neighbours of the best hits join with decayed relevance.

        A neighbour scores at most alpha * relevance + (1 - alpha) (decay is at most 1), so
        once k memories are ranked, neighbours that cannot beat the k-th are neither read
        nor expanded further, and when even the best seed cannot lift one that high the
        edges are not read at all. Exact: the top k is what full expansion would give."""
        policy = self.ctx.policy
        k = req.k
        bonus = req.speaker_bound(policy)
        frontier = [r.candidate for r in ranked[: policy.retrieval.expansion_seeds]]
        cut = ranked[k - 1].score if len(ranked) >= k else None
        known = dict(candidates)
        added: dict[str, Candidate] = {}
        for hop in range(1, policy.retrieval.max_hops + 1):
            if cut is not None:
                frontier = [
                    c for c in frontier
                    if best_possible(c.relevance * policy.retrieval.hop_decay, policy, bonus)
                    >= cut
                ]
            if not frontier:
                break
            edges = self.ctx.store.edges(namespace, [c.id for c in frontier])
            found = expand(frontier, edges, known, policy, hop)
            if cut is not None:
                found = {
                    i: c for i, c in found.items()
                    if best_possible(c.relevance, policy, bonus) >= cut
                }
            if not found:
                break
            known.update(found)
            added.update(found)
            frontier = list(found.values())
        if not added:
            return ranked
        missing = [i for i in added if i not in memories]
        memories.update(self.ctx.read(namespace, missing))
        return rank(known, memories, req.when, policy, req.admit, req.names)

    def _arbitrate(
        self,
        ns: str,
        ranked: list[Ranked],
        candidates: Mapping[str, Candidate],
        memories: dict[str, Memory],
        req: RecallRequest,
        side: LexicalSide,
    ) -> Arbitration:
        """Newer versions above older ones (core/arbitration.py). The older versions
        looked at: the ranked memories that can reach the top k, and the retired ones
        among the candidates that could have (their newest version inherits their
        relevance). Their version links are read in one call per step of a chain; those
        edges also give the degrees of the memories they were read for (into
        `side.degrees`), and the embeddings the lexical side read are not read again."""
        policy = self.ctx.policy
        hops = policy.updates.arbitration_hops
        if hops <= 0 or not ranked or req.past:
            return Arbitration(ranked, {})
        window = ranked[: req.k + policy.retrieval.expansion_seeds]
        cut = ranked[req.k - 1].score if len(ranked) >= req.k else 0.0
        olders: dict[str, Candidate] = {r.memory.id: r.candidate for r in window}
        for cid, m in memories.items():
            c = candidates.get(cid)
            if cid in olders or m.superseded_by is None or c is None:
                continue
            # A retired version has left the lexical index (BM25 covers current texts), so
            # its relevance lacks the lexical half: its cosine stands for the whole.
            c = c.evolve(relevance=max(c.relevance, c.dense))
            if best_possible(c.relevance, policy, req.speaker_bound(policy)) >= cut:
                olders[cid] = c
        known = dict(memories)
        edges = self.ctx.store.edges(ns, list(olders))
        side.degrees.update(degrees_from(edges, olders.keys() - side.degrees.keys()))
        links = version_links(edges, {i: known[i] for i in olders if i in known})
        seen = set(olders)
        frontier = {n for i in olders for n in links.get(i, ())} - seen
        for step in range(hops):
            if not frontier:
                break
            missing = [i for i in frontier if i not in known]
            if missing:
                known.update(self.ctx.read(ns, missing))
            seen |= frontier
            if step == hops - 1:
                break
            more = version_links(self.ctx.store.edges(ns, list(frontier)),
                                 {i: known[i] for i in frontier if i in known})
            for k, v in more.items():
                links.setdefault(k, set()).update(v)
            frontier = {n for i in frontier for n in more.get(i, ())} - seen
        # versions the write path did not link, judged on the top hits' own texts. Two
        # hits that each have versions linked on write are not joined here: the write
        # path saw both with their context and made them versions of two things, and a
        # join would merge both chains, so that the newest of either (a flight's new
        # time) would be placed above the other's versions (a meeting's).
        top = ranked[: req.k]
        vectors = self._top_vectors(ns, [r.memory.id for r in top], side)
        stored = frozenset(i for i, v in links.items() if v)
        join_links(links, implicit_links(top, vectors, policy, req.query, stored), vectors)
        if not any(i in links for i in olders):
            return Arbitration(ranked, {})
        return arbitrate(ranked, olders, known, links, req.when, policy, req.admit,
                         chains=req.include_history)

    def _top_vectors(self, ns: str, ids: list[str], side: LexicalSide) -> dict[str, Vector]:
        """The stored vectors of the top hits: the kept embeddings the lexical side read
        already, the rest read now (from the index when no embedding is kept)."""
        kept = self.ctx.caps.embeddings
        if kept is not None:
            out = {i: side.vectors[i] for i in ids if i in side.vectors}
            rest = [i for i in ids if i not in out]
            return out | (kept(ns, rest) if rest else {})
        fetch = self.ctx.caps.stored_vectors
        return fetch(ns, ids) if fetch is not None else {}

    def _hits(
        self,
        ns: str,
        top: list[Ranked],
        known_degrees: dict[str, int],
        when: datetime,
        notes: Mapping[str, str] | None = None,
        trust: float = 1.0,
    ) -> list[Hit]:
        """Each ranked memory with every term of its score (the degrees read along the
        way are reused; the rest are read in one call)."""
        unknown = [r.memory.id for r in top if r.memory.id not in known_degrees]
        degrees = known_degrees | (self.ctx.store.degrees(ns, unknown) if unknown else {})
        return [
            Hit(
                r.memory,
                r.score,
                Explanation(
                    final=r.score,
                    relevance=r.candidate.relevance,
                    dense=r.candidate.dense,
                    lexical=r.candidate.lexical,
                    decay=r.decay,
                    importance=importance_score(
                        r.memory, degrees.get(r.memory.id, 0), when, self.ctx.policy
                    ),
                    tier=r.memory.tier,
                    hops=r.candidate.hops,
                    via=r.candidate.via,
                    context=r.candidate.context,
                    speaker=r.speaker,
                    period=r.candidate.period,
                    note=(notes or {}).get(r.memory.id) or restored_note(r.memory),
                    lexical_trust=trust,
                ),
            )
            for r in top
        ]

    def _after(self, ns: str, req: RecallRequest, hits: list[Hit]) -> None:
        """What a recall leaves behind: the hits' importance for the weak-retrievals
        trigger, and their access reinforcement (their decay clock restarts). A
        look into the past (`as_of`) leaves nothing."""
        if req.as_of is not None or not hits:
            return
        self.ctx.retrievals.note(ns, [h.explanation.importance for h in hits])
        if not req.reinforce:
            return
        if self.ctx.policy.background.reinforce_async:
            self.ctx.reinforcer.submit(ns, [h.id for h in hits], req.now)
        else:
            self.ctx.touch(ns, [h.id for h in hits], req.now)

