"""How recall reads what it ranks: candidates' records, creation times, kept embeddings.

One seam separates the two deployments. With an index in this process, recall reads the
lexical hits' records while the vector query runs and the dense hits' only as far as
ranking needs them (`LocalReads`).
An index on a server (`remote`) keeps recall waiting on a round trip anyway, so recall
reads in bulk while the query is on the wire, and one bulk read on a networked store
beats two or three reads by need (`NetworkReads`). Both give the same records, times
and cosines, so both rank identically.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import numpy as np

from .context import EngineContext
from .errors import AuthFailed, BackendUnavailable, PermissionDenied
from .models import Memory
from .ports import LexicalHit, Vector, VectorHit
from .retrieval import Candidate, cosine_to

Admit = Callable[[Memory], bool]


log = logging.getLogger("reverie")


def index_outage(e: BackendUnavailable) -> bool:
    """A vector index that did not answer (down, stuck, past its deadline, its disk
    full), as against one that refused reverie's credentials or rights: recall then
    answers from the lexical channel alone rather than failing, since the records (the
    truth) are still readable. A refusal is a setting to fix, so it is raised."""
    return not isinstance(e, AuthFailed | PermissionDenied)


def lexical_alone(namespace: str, e: BackendUnavailable) -> None:
    log.warning(
        "recall in namespace %r answers from the lexical index alone: the vector index "
        "is unavailable (%s)", namespace, e,
    )


class LexicalSide(NamedTuple):
    """What the lexical channel learnt while the dense query ran."""

    hits: list[LexicalHit]
    cosines: dict[str, float]  # query cosine of hits whose embedding is kept
    early: dict[str, Memory]  # records already read
    degrees: dict[str, int]  # degrees already read
    vectors: dict[str, Vector]  # kept embeddings read (`caps.embeddings`), for arbitration


class ContextInputs(NamedTuple):
    """What conversation context needs: the seeds, every record read, every time."""

    seeds: list[Candidate]
    read: dict[str, Memory]
    times: dict[str, datetime]


def kept_cosines(qvec: Vector, vectors: Mapping[str, Vector]) -> dict[str, float]:
    """Cosine of the query to each kept vector of the query's shape (one of another
    model's shape is left out, to be asked of the index)."""
    fit = {i: v for i, v in vectors.items() if v.shape == qvec.shape}
    if not fit:
        return {}
    return dict(zip(fit, cosine_to(qvec, np.stack(list(fit.values()))), strict=True))


class CandidateReads:
    """The reads both deployments share; `for_context` picks the deployment's subclass."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    @staticmethod
    def for_context(ctx: EngineContext) -> CandidateReads:
        return NetworkReads(ctx) if ctx.caps.index_remote else LocalReads(ctx)

    def lexical_side(
        self, ns: str, query: str, k: int, qvec: Vector, context: bool
    ) -> LexicalSide:
        """The lexical channel's `k` best hits, and what they alone decide, done while the
        dense query runs: their cosines from the embeddings kept beside the records (a
        lexical-only candidate needs its cosine) and, for conversation context, when they
        were observed."""
        raise NotImplementedError

    def context_inputs(
        self,
        ns: str,
        candidates: Mapping[str, Candidate],
        dense: Sequence[VectorHit],
        admit: Admit,
        side: LexicalSide,
    ) -> ContextInputs:
        """The context seeds, and the creation time of every candidate."""
        raise NotImplementedError

    def _kept_cosines_of(
        self, ns: str, ids: Sequence[str], qvec: Vector, side: LexicalSide
    ) -> None:
        kept = self.ctx.caps.embeddings
        if kept is not None:
            side.vectors.update(kept(ns, ids))
            side.cosines.update(kept_cosines(qvec, side.vectors))

    def similarities(
        self, namespace: str, qvec: Vector, ids: Sequence[str], known: Mapping[str, float]
    ) -> dict[str, float]:
        """Cosine of the query to each id: `known` (computed from kept embeddings), then
        the vector index for the rest. The same formula as the index's, on the same
        float32 vectors, so every source agrees."""
        out = {i: known[i] for i in ids if i in known}
        rest = [i for i in ids if i not in out]
        if rest:
            try:
                out.update(self.ctx.vectors.similarities(namespace, qvec, rest))
            except BackendUnavailable as e:
                if not index_outage(e):
                    raise
                lexical_alone(namespace, e)  # the rest keep their lexical relevance
        return out

    def read_candidates(
        self, ns: str, ids: Sequence[str], degrees: dict[str, int]
    ) -> dict[str, Memory]:
        """Records for recall; where the store has `recall_reads`, their degrees come in
        the same round trip (into `degrees`), so the top hits need no read of their own."""
        together = self.ctx.caps.recall_reads
        if together is None or not ids:
            return self.ctx.read(ns, ids)
        self.ctx.reinforcer.settle(ns, ids)
        got = together(ns, ids, degrees=True)
        degrees.update(got.degrees)
        return dict(got.memories)

    def context_seeds(
        self,
        namespace: str,
        candidates: Mapping[str, Candidate],
        admit: Admit,
        read: Mapping[str, Memory] | None = None,
    ) -> tuple[list[Candidate], dict[str, Memory]]:
        """The most relevant admissible candidates (reading records only as far as needed;
        those in `read` are not read again). Returns them and every record read."""
        want = self.ctx.policy.retrieval.context_seeds
        order = sorted(candidates.values(), key=lambda c: (-c.relevance, c.id))
        known = dict(read or {})
        seeds: list[Candidate] = []
        for start in range(0, len(order), want):
            chunk = order[start : start + want]
            missing = [c.id for c in chunk if c.id not in known]
            if missing:
                known.update(self.ctx.read(namespace, missing))
            seeds.extend(c for c in chunk if c.id in known and admit(known[c.id]))
            if len(seeds) >= want:
                break
        return seeds[:want], known

    def created_times(
        self,
        namespace: str,
        candidates: Iterable[str],
        read: Mapping[str, Memory],
    ) -> dict[str, datetime]:
        """When each candidate was observed: from records already read, and the rest from
        the store's light `created_times` where it has one (else full records)."""
        times = {i: m.created_at for i, m in read.items()}
        rest = [i for i in candidates if i not in times]
        if rest:
            light = self.ctx.caps.created_times
            if light is not None:
                times.update(light(namespace, rest))
            else:
                full = self.ctx.store.get_many(namespace, rest)
                times.update((i, m.created_at) for i, m in full.items())
        return times


class LocalReads(CandidateReads):
    """An in-process index: the lexical hits' records are read while the dense query
    runs (it takes longer than the lexical channel, so they cost no wall time, and most
    are read later anyway); the dense hits' records only as far as ranking needs them."""

    def lexical_side(
        self, ns: str, query: str, k: int, qvec: Vector, context: bool
    ) -> LexicalSide:
        search_kept = self.ctx.caps.search_kept
        if search_kept is not None:  # the hits' rows hold their embeddings
            found = search_kept(ns, query, k)
            side = LexicalSide(found.hits, {}, {}, {}, found.embeddings)
            side.cosines.update(kept_cosines(qvec, found.embeddings))
        else:
            side = LexicalSide(list(self.ctx.lexical.search(ns, query, k)), {}, {}, {}, {})
            self._kept_cosines_of(ns, [h.id for h in side.hits], qvec, side)
        if side.hits:
            side.early.update(self.ctx.read(ns, [h.id for h in side.hits]))
        return side

    def context_inputs(
        self,
        ns: str,
        candidates: Mapping[str, Candidate],
        dense: Sequence[VectorHit],
        admit: Admit,
        side: LexicalSide,
    ) -> ContextInputs:
        seeds, read = self.context_seeds(ns, candidates, admit, side.early)
        return ContextInputs(seeds, read, self.created_times(ns, candidates, read))


class NetworkReads(CandidateReads):
    """An index on a server: read whole records in bulk while its query is on the wire
    (most are read later anyway), and with `recall_reads` records, kept embeddings and
    degrees in one round trip."""

    def lexical_side(
        self, ns: str, query: str, k: int, qvec: Vector, context: bool
    ) -> LexicalSide:
        side = LexicalSide(list(self.ctx.lexical.search(ns, query, k)), {}, {}, {}, {})
        ids = [h.id for h in side.hits]
        if not ids:
            return side
        together = self.ctx.caps.recall_reads
        if together is not None:
            self.ctx.reinforcer.settle(ns, ids)
            got = together(ns, ids, embeddings=True, degrees=True)
            side.cosines.update(kept_cosines(qvec, got.embeddings))
            side.early.update(got.memories)
            side.degrees.update(got.degrees)
            return side
        self._kept_cosines_of(ns, ids, qvec, side)
        if context:
            side.early.update(self.ctx.read(ns, ids))
        return side

    def context_inputs(
        self,
        ns: str,
        candidates: Mapping[str, Candidate],
        dense: Sequence[VectorHit],
        admit: Admit,
        side: LexicalSide,
    ) -> ContextInputs:
        # The lexical hits' records are here already; reading the dense hits' in one
        # round trip too gives every time, seed and score, where reading by need would
        # take two or three more round trips to the shared store.
        unread = [h.id for h in dense if h.id not in side.early]
        read = side.early | self.read_candidates(ns, unread, side.degrees)
        seeds, read = self.context_seeds(ns, candidates, admit, read)
        return ContextInputs(seeds, read, {i: m.created_at for i, m in read.items()})
