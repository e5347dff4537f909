"""The write path: observe traces, remember facts, and the small updates (confirm, pin).

No LLM call here; every write is one atomic, compare-and-set `WriteBatch` (retried on
a concurrent-write conflict), then the vector index is brought in step. An exact
repeat of a text adds a source to the memory that holds it; a trace that is a newer
version of an earlier one (core/updates.py) supersedes it or marks it outdated; a fact
with a new value for its key supersedes the current unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import updates, validation, vector_sync
from .cas import retry_conflicts
from .clock import utc
from .context import EngineContext
from .erasure import CONTEXT_KEY
from .errors import ConflictError, InvalidInput, NotFound
from .extraction import ExtractionReport, extract_from_traces
from .item_versions import older_item
from .models import (
    Edge,
    EdgeType,
    Fact,
    Kind,
    Memory,
    Status,
    Tier,
    check_unit,
    fact_key,
    normalize_phrase,
    parse_kind,
)
from .ports import Synthesizer, Vector, WriteBatch
from .scoring import next_confidence, qualifies_as_crystal
from .text import content_hash, extract_entities, initial_importance, strip_speaker
from .updates import UPDATE_KEY
from .version_links import ChunkSearch, Recent, VersionLinks

_ENTITIES_LINKED = 8  # entities of a new memory that get entity edges
SUPERSEDED_KEY = "reverie_superseded"  # metadata of a retired version: by which, and why


@dataclass(frozen=True, slots=True)
class Observation:
    """One item for `observe_many`; the fields mirror `observe`'s arguments."""

    text: str
    source: str | None = None
    at: datetime | None = None
    kind: Kind | str = Kind.EPISODIC
    importance: float | None = None
    entities: Iterable[str] | None = None
    metadata: Mapping[str, Any] | None = None
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Prepared:
    """An observation validated and turned into its trace, before anything is written."""

    memory: Memory
    digest: str
    source: str
    when: datetime
    assistant: bool  # an assistant's words: never a newer version of anything
    reading: updates.Reading
    speaker: str | None = None  # who said it, where the turn tells


def _phrase_entity(subject: str) -> frozenset[str]:
    """A fact's subject as an entity, when any word of it is left once punctuation is gone
    ("¡" names nothing, and an empty entity would tie unrelated facts together)."""
    phrase = normalize_phrase(subject)
    return frozenset([phrase]) if phrase else frozenset()


def with_statement(text: str, fact: Fact, limit: int) -> str:
    """A fact's text: the caller's words, then the fact they state, in parentheses.

    The words ("my home is in Berlin") state the value but seldom what it is the value
    of, and the fact (user, lives in, Berlin) is what a question asks about ("Which city
    does the user live in?"). Both recall channels read the text, so without the
    statement a keyed fact is found only by its value's words, and a crowd of memories
    sharing one of the question's words (every "the user asked ..." line) ranks above
    it. Only words that state the object get it (a text that does not name the object,
    such as a stored item under a digest, is left as it is), and only when they do not
    already say the whole fact, and the result still fits `limit`."""
    statement = f"{fact.subject} {fact.predicate} {fact.object}"
    said = f" {normalize_phrase(text)} "
    if f" {normalize_phrase(fact.object)} " not in said or (
        f" {normalize_phrase(statement)} " in said
    ):
        return text
    out = f"{text} ({statement})"
    return out if len(out) <= limit else text


class WritePath:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.versions = VersionLinks(ctx)

    # ------------------------------------------------------------------ traces

    def observe_many(
        self,
        items: Iterable[Observation | str],
        namespace: str | None,
        batch_size: int,
        progress: Callable[[int], None] | None,
    ) -> list[Memory]:
        """Chunk by chunk: the texts not held yet are embedded (a repeat is not embedded
        again), then the chunk is written while the next one is embedded on a worker
        thread (`EngineContext.pool`). A repeat inside one chunk folds into the memory
        written just before it: looked up inside the chunk's transaction where the store
        batches writes, else refused by the store's duplicate-text rule and folded."""
        ctx = self.ctx
        ns = ctx.namespace(namespace, index=False)  # a write: its vectors may stay queued
        given = [_observation(it, n) for n, it in enumerate(items, 1)]
        out: list[Memory] = []
        ahead: Future[tuple[list[Prepared], Vector]] | None = None
        try:
            # every item is validated before anything is written; the first chunk is
            # embedded meanwhile, so a large import's model starts at once instead of
            # after the whole input was read (an item that fails drops those vectors)
            prepared = [self.prepare(ns, o) for o in given[:batch_size]]
            if len(given) > batch_size:
                ahead = ctx.pool.submit(self._embedded, self._fresh(ns, prepared))
                prepared += [self.prepare(ns, o) for o in given[batch_size:]]
            chunks = [prepared[i : i + batch_size] for i in range(0, len(prepared), batch_size)]
            for n, chunk in enumerate(chunks):
                fresh, embedded = (
                    ahead.result() if ahead is not None else self._embedded(self._fresh(ns, chunk))
                )
                ahead = None
                if n + 1 < len(chunks):
                    # the next chunk is embedded while this one is written: an embedder that
                    # waits for an answer (an API) or computes outside Python's lock works
                    # beside the write path. Its repeats of this chunk's texts will be held
                    # by then: they are looked up when written.
                    writing = {p.digest for p in chunk}
                    nxt = [p for p in self._fresh(ns, chunks[n + 1]) if p.digest not in writing]
                    ahead = ctx.pool.submit(self._embedded, nxt)
                vecs = {id(p): v for p, v in zip(fresh, embedded, strict=True)}
                search = self.versions.ask_ahead(ns, [(p, vecs[id(p)]) for p in fresh])
                out += self._write_chunk(ns, chunk, vecs, search, progress)
        finally:
            if ahead is not None:  # a failed item or chunk: the vectors ahead are not wanted
                ahead.cancel()
        return out

    def _embedded(self, fresh: list[Prepared]) -> tuple[list[Prepared], Vector]:
        return fresh, self.ctx.embed_memories([p.memory for p in fresh])

    def _fresh(self, ns: str, chunk: Sequence[Prepared]) -> list[Prepared]:
        """The chunk's texts not held yet (one read where the store can, `KnowsHashes`)."""
        ctx = self.ctx
        if ctx.caps.stored_hashes is not None:
            held = ctx.caps.stored_hashes(ns, [p.digest for p in chunk])
            return [p for p in chunk if p.digest not in held]
        return [p for p in chunk if ctx.store.find_by_hash(ns, p.digest) is None]

    def _write_chunk(
        self,
        ns: str,
        chunk: Sequence[Prepared],
        vecs: Mapping[int, Vector],
        search: ChunkSearch,
        progress: Callable[[int], None] | None,
    ) -> list[Memory]:
        """One chunk's writes (a store that can commits them once, `BatchesWrites`, each
        write still atomic); the vectors are queued after it, outside, so the version
        search sees the chunk's own turns through `search`."""
        ctx = self.ctx
        out: list[Memory] = []
        pending: list[tuple[Memory, Vector]] = []
        batched = ctx.caps.together is not None
        with ctx.caps.together() if ctx.caps.together is not None else nullcontext():
            for p in chunk:
                vec = vecs.get(id(p))
                # inside a batched write the lookup reads the open transaction, no round
                # trip; elsewhere only a text that was held when the chunk began is looked up
                looked = batched or vec is None
                existing = ctx.store.find_by_hash(ns, p.digest) if looked else None
                if existing is not None:
                    out.append(self._fold(ns, existing.id, p.source, p.when))
                else:
                    if vec is None:  # its twin was forgotten since the chunk began
                        vec = ctx.embed([p.memory.text])[0]
                    indexed, question = self._in_context(ns, p, vec)
                    if question is not None:  # forgetting it re-indexes this one
                        p = dataclasses.replace(p, memory=dataclasses.replace(
                            p.memory, metadata={**p.memory.metadata,
                                                CONTEXT_KEY: {"of": question}}))
                    stored, _superseded, created = self._write_trace(ns, p, vec, search)
                    out.append(stored)
                    if created:
                        pending.append((stored, indexed))
                        search.written(stored.id, indexed)
                if progress is not None:
                    progress(1)
        vector_sync.index(ctx, ns, pending, behind=True)
        return out

    def _in_context(self, ns: str, p: Prepared, vec: Vector) -> tuple[Vector, str | None]:
        """The vector a turn is indexed by: the answer to another speaker's question just
        before it carries the question's meaning too ("Yes, with the kids!" after "Did you
        go camping?"), so a later question in the words of the one it answered finds it.
        The turns written after it compare their own vectors with its own (`Recent`).
        Returns the vector and the question's id, if it was mixed in: forgetting the
        question must find the reply (by write order, `KnowsWriteOrder`), so a store
        that does not know it mixes nothing."""
        policy = self.ctx.policy.retrieval
        prev = self.versions.last(ns)
        if (
            policy.reply_context_weight <= 0 or self.ctx.caps.written_around is None
            or prev is None or p.speaker is None
            or prev.speaker is None or prev.speaker == p.speaker
            or not prev.reading.question
            or not 0 <= (p.when - prev.memory.created_at).total_seconds()
            <= policy.context_window_seconds
        ):
            return vec, None
        return (vector_sync.reply_vector(vec, prev.vector, policy.reply_context_weight),
                prev.memory.id)

    def prepare(self, ns: str, item: Observation) -> Prepared:
        """Validate one observation and build its trace (nothing is written)."""
        ctx = self.ctx
        policy = ctx.policy
        text = ctx.check_text(validation.text(item.text, "text", policy))
        when = ctx.now(validation.when(item.at, "at"))
        src = (
            validation.identifier(item.source, "source", policy)
            if item.source is not None else f"observe:{ctx.new_id()}"
        )
        validation.unit(item.importance, "importance")
        given = validation.entities(item.entities, policy)
        meta = validation.metadata(item.metadata, policy) or {}
        pinned = validation.flag(item.pinned, "pinned")
        # a speaker prefix ("Caroline: ...") names who spoke, not what it is about: as an
        # entity it would tie every line of a speaker into one meaningless hub
        ents = given if given is not None else extract_entities(strip_speaker(text))
        memory = Memory(
            id=ctx.new_id(),
            namespace=ns,
            kind=parse_kind(item.kind),
            tier=Tier.TRACE,
            text=text,
            created_at=when,
            importance=item.importance
            if item.importance is not None
            else initial_importance(text, ctx.policy, ents),
            confidence=ctx.policy.funnel.initial_confidence_trace,
            sources=frozenset({src}),
            entities=ents,
            metadata=meta,
            pinned=pinned,
        )
        speaker = updates.speaker_of(text, meta)
        return Prepared(memory, content_hash(text), src, when, speaker == "assistant",
                        updates.read(text), speaker)

    def _write_trace(
        self, ns: str, p: Prepared, vec: Vector,
        chunk: ChunkSearch | None = None,
    ) -> tuple[Memory, Memory | None, bool]:
        store = self.ctx.store
        edges = self._entity_edges(ns, p.memory)
        looked = self.versions.candidates(ns, p, vec, chunk)
        judged: list[updates.Signals] = []  # the link's signals, of the attempt that wrote

        def attempt() -> tuple[Memory, Memory | None, bool]:
            memory = p.memory
            link = self.versions.link(ns, p, vec, *looked) if looked else None
            judged[:] = [link[1]] if link is not None else []
            puts: list[Memory] = []
            batch_edges = list(edges)
            superseded = None
            if link is not None:
                old, signals, also = link
                why: dict[str, object] = {"of": old.id, **signals.as_dict()}
                if also:
                    why["also"] = list(also)
                memory = dataclasses.replace(
                    memory, metadata={**memory.metadata, UPDATE_KEY: why},
                )
                # the newest of another group of versions of the same fact: outdated too
                batch_edges.extend(Edge(memory.id, o, EdgeType.UPDATES, 1.0) for o in also)
                if signals.verdict is updates.Verdict.SUPERSEDES:
                    superseded = old.evolve(
                        status=Status.SUPERSEDED, superseded_by=memory.id, valid_to=p.when,
                        updated_at=p.when,
                        metadata={**old.metadata, SUPERSEDED_KEY: {
                            "by": memory.id, **signals.as_dict()}},
                    )
                    puts.append(superseded)
                    batch_edges.append(Edge(memory.id, old.id, EdgeType.SUPERSEDES, 1.0))
                else:
                    batch_edges.append(Edge(memory.id, old.id, EdgeType.UPDATES, 1.0))
            store.commit(WriteBatch(ns, (memory, *puts), tuple(batch_edges)))
            return memory, superseded, True

        try:
            out = retry_conflicts(attempt)
        except ConflictError:
            # Someone stored the same text between our lookup and our write: fold into it.
            again = store.find_by_hash(ns, p.digest)
            if again is None:
                raise
            return self._fold(ns, again.id, p.source, p.when), None, False
        self.versions.remember(
            ns, Recent(out[0], vec, p.assistant, p.reading, p.speaker,
                   judged[-1] if judged else None)
        )
        return out

    def _fold(self, namespace: str, memory_id: str, source: str, when: datetime) -> Memory:
        """A repeat from another source: one more source, more confidence, a fresh clock."""
        store = self.ctx.store

        def attempt() -> Memory:
            cur = store.get(namespace, memory_id)
            if cur is None:
                raise NotFound(f"memory {memory_id} vanished while folding a repeat")
            if source in cur.sources:
                return cur
            nxt = self._with_source(cur, source, when)
            store.commit(WriteBatch(namespace, (nxt,)))
            return nxt

        return retry_conflicts(attempt)

    # ------------------------------------------------------------------ facts

    def remember(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        namespace: str | None,
        source: str | None,
        kind: Kind | str,
        at: datetime | None,
        importance: float | None,
        confidence: float | None,
        text: str | None,
        metadata: Mapping[str, Any] | None,
        index: bool,
    ) -> Memory:
        ctx = self.ctx
        policy = ctx.policy
        for name, part in (("subject", subject), ("predicate", predicate), ("object", object)):
            validation.text(part, name, policy)
        validation.optional_text(text, "text", policy)
        if source is not None:
            validation.identifier(source, "source", policy)
        at = validation.when(at, "at")
        metadata = validation.metadata(metadata, policy)
        validation.flag(index, "index")
        ns = ctx.namespace(namespace)
        k = parse_kind(kind)
        if k is Kind.EPISODIC:
            raise InvalidInput("facts are semantic or procedural; use observe() for episodes")
        fact = Fact(
            ctx.check_text(subject, "subject"),
            ctx.check_text(predicate, "predicate"),
            ctx.check_text(object, "object"),
        )
        body = ctx.check_text(text if text is not None else f"{subject} {predicate} {object}")
        if text is not None:
            body = with_statement(body, fact, ctx.policy.funnel.max_text_chars)
        when = ctx.now(at)
        src = source if source is not None else f"remember:{ctx.new_id()}"
        key = fact_key(k, subject, predicate)
        for name, v in (("importance", importance), ("confidence", confidence)):
            if v is not None:
                check_unit(name, v)
        vec: Vector | None = None

        def attempt() -> tuple[Memory, Memory | None, bool]:
            nonlocal vec
            versions = ctx.store.find_by_key(ns, key)
            current = next((v for v in reversed(versions) if v.is_active), None)
            wanted = normalize_phrase(object)
            for v in versions:  # a replay (this source already said this) changes nothing
                if v.fact is not None and src in v.sources and (
                    normalize_phrase(v.fact.object) == wanted
                ):
                    return v, None, False
            if current is not None and current.fact is not None and (
                normalize_phrase(current.fact.object) == wanted
            ):
                nxt = self._with_source(current, src, when)
                ctx.store.commit(WriteBatch(ns, (nxt,)))
                return nxt, None, False
            if vec is None and index:
                vec = ctx.embed([body])[0]
            start = max(when, current.valid_since) if current is not None else when
            unit = self._promote(
                Memory(
                    id=ctx.new_id(),
                    namespace=ns,
                    kind=k,
                    tier=Tier.UNIT,
                    text=body,
                    fact=fact,
                    key=key,
                    created_at=start,
                    importance=importance
                    if importance is not None
                    else initial_importance(body, ctx.policy),
                    confidence=confidence
                    if confidence is not None
                    else ctx.policy.funnel.initial_confidence_unit,
                    sources=frozenset({src}),
                    entities=extract_entities(f"{subject} {object}")
                    | _phrase_entity(subject),
                    metadata=dict(metadata or {}),
                )
            )
            edges = self._entity_edges(ns, unit)
            if current is None and text is not None and vec is not None:
                # an item in its own words (a LangGraph store item): a newer version of
                # an earlier item under another key ranks above it (core/item_versions.py)
                link = older_item(ctx.store, self.versions, ns, unit, vec, when)
                if link is not None:
                    prior, signals = link
                    unit = dataclasses.replace(unit, metadata={
                        **unit.metadata, UPDATE_KEY: {"of": prior.id, **signals.as_dict()}})
                    edges.append(Edge(unit.id, prior.id, EdgeType.UPDATES, 1.0))
            puts = [unit]
            old = None
            if current is not None:
                old = current.evolve(
                    status=Status.SUPERSEDED, superseded_by=unit.id, valid_to=start,
                    updated_at=start,
                )
                puts.append(old)
                edges.append(Edge(unit.id, current.id, EdgeType.SUPERSEDES, 1.0))
            ctx.store.commit(WriteBatch(ns, tuple(puts), tuple(edges)))
            return unit, old, True

        stored, _superseded, created = retry_conflicts(attempt)
        if created and vec is not None:
            vector_sync.index(ctx, ns, [(stored, vec)])
        return stored

    def extract_facts(
        self, synthesizer: Synthesizer, namespace: str | None, since: datetime | None
    ) -> ExtractionReport:
        ctx = self.ctx
        ns = ctx.namespace(namespace)
        start = utc(since) if since is not None else None
        traces = [
            m
            for m in ctx.store.scan(ns, statuses=[Status.ACTIVE], tiers=[Tier.TRACE])
            if start is None or m.created_at >= start
        ]
        traces.sort(key=lambda m: (m.created_at, m.id))
        report = ExtractionReport(traces=len(traces))
        size = ctx.policy.funnel.extraction_batch_size
        for i in range(0, len(traces), size):
            chunk = traces[i : i + size]
            batch = extract_from_traces(chunk, synthesizer, ctx.policy)
            report.add(batch)
            when = {t.id: t.created_at for t in chunk}
            for f in batch.facts:
                report.memories.append(
                    self.remember(
                        f.subject, f.predicate, f.object,
                        namespace=ns, source=f.trace_id, kind=Kind.SEMANTIC,
                        at=when[f.trace_id], importance=None, confidence=None, text=None,
                        metadata=None, index=True,
                    )
                )
        return report

    # ------------------------------------------------------------------ updates

    def confirm(self, memory_id: str, namespace: str | None) -> Memory:
        now = self.ctx.clock.now()
        return self._update(
            memory_id,
            namespace,
            lambda m: m
            if m.user_confirmed
            else self._promote(m.evolve(user_confirmed=True, updated_at=now)),
        )

    def pin(self, memory_id: str, namespace: str | None, pinned: bool) -> Memory:
        now = self.ctx.clock.now()
        return self._update(
            memory_id,
            namespace,
            lambda m: m if m.pinned == pinned else m.evolve(pinned=pinned, updated_at=now),
        )

    def _update(
        self, memory_id: str, namespace: str | None, change: Callable[[Memory], Memory]
    ) -> Memory:
        store = self.ctx.store
        ns = self.ctx.namespace(namespace)

        def attempt() -> Memory:
            cur = store.get(ns, memory_id)
            if cur is None:
                raise NotFound(f"no memory {memory_id!r} in namespace {ns!r}")
            nxt = change(cur)
            if nxt is not cur:
                store.commit(WriteBatch(ns, (nxt,)))
            return nxt

        return retry_conflicts(attempt)

    # ------------------------------------------------------------------ shared steps

    def _with_source(self, m: Memory, source: str, when: datetime) -> Memory:
        """One more independent source: a confidence step, a fresh clock, maybe a crystal."""
        return self._promote(
            m.evolve(
                sources=m.sources | {source},
                confidence=next_confidence(m.confidence, self.ctx.policy),
                last_accessed_at=max(m.last_access, when),
                updated_at=when,
            )
        )

    def _promote(self, m: Memory) -> Memory:
        if m.tier in (Tier.TRACE, Tier.UNIT) and qualifies_as_crystal(m, self.ctx.policy):
            return m.evolve(tier=Tier.CRYSTAL, version=m.version)
        return m

    def _entity_edges(self, namespace: str, memory: Memory) -> list[Edge]:
        limit = self.ctx.policy.funnel.entity_link_limit
        if limit <= 0:
            return []
        linked: dict[str, Edge] = {}
        for entity in sorted(memory.entities)[:_ENTITIES_LINKED]:
            for other in self.ctx.store.find_by_entity(namespace, entity, limit):
                if other.id != memory.id and other.id not in linked:
                    linked[other.id] = Edge(memory.id, other.id, EdgeType.ENTITY, 1.0)
        return list(linked.values())


def _observation(item: object, n: int) -> Observation:
    """An item of `observe_many`: an `Observation`, or a text to observe with defaults."""
    if isinstance(item, Observation):
        return item
    if isinstance(item, str):
        return Observation(item)
    raise InvalidInput(
        f"item {n} is a {type(item).__name__}: observe_many takes texts or Observation items"
    )
