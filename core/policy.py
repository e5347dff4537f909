"""The one policy object: every tunable number of the lifecycle, grouped by the part it governs.

Nothing else in reverie hard-codes a number that changes behaviour; change it here and every
component follows. The numbers are grouped as the lifecycle is (decay, importance, the
funnel, free-text updates, retrieval, maintenance, background work), with the backends'
deadlines last, so a reader finds a knob beside its neighbours: `policy.retrieval.alpha`,
`policy.decay.half_life_episodic_days`.

Construction takes the groups (`Policy(retrieval=RetrievalPolicy(alpha=0.8))`) or, for
convenience, any field by its own name (`Policy(alpha=0.8)`, `policy.replace(alpha=0.8)`):
field names are unique across groups, so a flat name says which group it changes. Every group
validates itself on construction, so a bad number fails at start-up, not months later inside a
consolidation run.

The shared tier's vector outbox is not the lifecycle's business: its settings live beside it,
in `reverie.integrations.redis.outbox.OutboxSettings`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from .errors import InvalidPolicy

__all__ = [
    "DEFAULT_POLICY",
    "BackgroundPolicy",
    "DeadlinePolicy",
    "DecayPolicy",
    "FunnelPolicy",
    "ImportancePolicy",
    "MaintenancePolicy",
    "Policy",
    "RetrievalPolicy",
    "UpdatePolicy",
]

# How a field is checked, beyond "a finite number >= 0" (the default for every number).
_UNIT = "unit"  # within [0, 1]
_POSITIVE = "positive"  # > 0
_SIGNED = "signed"  # any finite number, negatives allowed
_FLAG = "flag"  # True or False


def _num(default: float, check: str | None = None) -> Any:
    return field(default=default, metadata={"check": check})


def _problems(group: object) -> list[str]:
    """What is wrong with one group's numbers, one sentence each."""
    problems: list[str] = []
    for f in dataclasses.fields(group):  # type: ignore[arg-type]
        v = getattr(group, f.name)
        check = f.metadata.get("check")
        if check == _FLAG:
            if not isinstance(v, bool):
                problems.append(f"{f.name} must be True or False, got {v!r}")
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            problems.append(f"{f.name} must be a finite number, got {v!r}")
            continue
        if f.type == "int" and not isinstance(v, int):
            problems.append(f"{f.name} must be a whole number, got {v!r}")
        elif v < 0 and check != _SIGNED:
            problems.append(f"{f.name} must be >= 0, got {v!r}")
        elif check == _UNIT and not 0.0 <= v <= 1.0:
            problems.append(f"{f.name} must be within [0, 1], got {v!r}")
        elif check == _POSITIVE and v <= 0:
            problems.append(f"{f.name} must be > 0")
    return problems


def _raise(problems: list[str]) -> None:
    if problems:
        raise InvalidPolicy("invalid policy: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """S(t) = S0 * exp(-lambda * days since last access), lambda = ln 2 / half-life."""

    half_life_episodic_days: float = _num(14.0, _POSITIVE)
    half_life_semantic_days: float = _num(90.0, _POSITIVE)
    half_life_procedural_days: float = _num(180.0, _POSITIVE)
    high_importance: float = _num(0.8, _UNIT)  # importance above this slows decay...
    high_importance_lambda_factor: float = _num(0.3)  # ...to 0.3 lambda
    low_importance: float = _num(0.3, _UNIT)  # importance below this speeds decay...
    low_importance_lambda_factor: float = _num(2.0)  # ...to 2 lambda
    access_window: int = _num(32, _POSITIVE)  # recent access times kept per memory

    def __post_init__(self) -> None:
        problems = _problems(self)
        if not problems and self.low_importance > self.high_importance:
            problems.append("low_importance must not exceed high_importance")
        _raise(problems)


@dataclass(frozen=True, slots=True)
class ImportancePolicy:
    """The importance blend (weights sum to 1) and the write path's first guess at it."""

    weight_recency: float = _num(0.25, _UNIT)
    weight_frequency: float = _num(0.20, _UNIT)
    weight_centrality: float = _num(0.35, _UNIT)
    weight_confidence: float = _num(0.20, _UNIT)
    recency_rate_per_day: float = _num(0.02)  # recency = exp(-0.02 * days since last access)
    frequency_window_days: float = _num(30.0, _POSITIVE)
    frequency_saturation: int = _num(10, _POSITIVE)  # accesses in the window that count "maximal"
    centrality_saturation: int = _num(10, _POSITIVE)  # edges that count as "maximal" degree
    # initial importance heuristic (write path, no LLM)
    base_importance: float = _num(0.5, _UNIT)
    instruction_boost: float = _num(0.2)
    entity_boost: float = _num(0.1)
    date_boost: float = _num(0.1)
    number_boost: float = _num(0.05)
    filler_penalty: float = _num(0.3)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if not problems:
            weights = (
                self.weight_recency + self.weight_frequency + self.weight_centrality
                + self.weight_confidence
            )
            if abs(weights - 1.0) > 1e-9:
                problems.append(f"importance weights must sum to 1, they sum to {weights:.6f}")
        _raise(problems)


@dataclass(frozen=True, slots=True)
class FunnelPolicy:
    """Trace -> Unit -> Crystal: confidence from independent sources, promotion, corrections."""

    initial_confidence_trace: float = _num(0.5, _UNIT)
    initial_confidence_unit: float = _num(0.6, _UNIT)
    confidence_step: float = _num(0.15)  # per further independent source
    confidence_cap: float = _num(0.95, _UNIT)
    crystal_min_sources: int = _num(3, _POSITIVE)
    crystal_min_importance: float = _num(0.3, _UNIT)  # filler said 3 times stays a trace
    crystal_confidence: float = _num(0.90, _UNIT)
    crystal_importance: float = _num(0.80, _UNIT)
    entity_link_limit: int = _num(3)  # entity edges to the most recent memories sharing an entity
    max_text_chars: int = _num(8000, _POSITIVE)
    # Argument limits (core/validation.py): what one write may carry beside its text. Larger
    # limits let a caller store more per memory (a LangGraph item keeps its whole value in
    # metadata); each byte is read back by every recall that returns the memory, and a deep
    # structure costs a recursion in every encoder.
    max_metadata_bytes: int = _num(1_048_576, _POSITIVE)  # a memory's metadata as UTF-8 JSON
    max_metadata_depth: int = _num(32, _POSITIVE)  # nesting of dicts and lists in metadata
    max_entities: int = _num(256, _POSITIVE)  # entities given with one observation
    max_name_chars: int = _num(512, _POSITIVE)  # an entity, a source or a memory id
    extraction_batch_size: int = _num(8, _POSITIVE)  # traces per LLM call of the fact extractor

    def __post_init__(self) -> None:
        _raise(_problems(self))


@dataclass(frozen=True, slots=True)
class UpdatePolicy:
    """Free-text updates (core/updates.py): when a new trace is a newer version of an
    earlier one, and how recall ranks the two. A false supersession hides a valid memory,
    a missed one lets a stale value answer: the link has two strengths for that reason."""

    detect_updates: bool = _num(True, _FLAG)  # False: observe never links versions
    # Earlier traces considered per observe (one dense query, the turns just before it
    # included). Retired versions count among them (their records drop them), so a fact
    # corrected more often than this can hide its current version behind its retired
    # ones. More finds paraphrased versions further down, at the cost of reads, and
    # offers the judgement more look-alikes to link by mistake.
    neighbours: int = _num(8)
    # Below this cosine (of the texts, or of the turns just before the new one) nothing
    # is linked: two texts this far apart speak of different things.
    min_similarity: float = _num(0.3, _UNIT)
    # The user's turn said just before an update counts as its context (an elliptical
    # "it's 4:30 PM now" names its subject there): this many turns, within this many
    # seconds. More turns reach further back, and lend subjects to unrelated updates.
    context_turns: int = _num(3)
    context_seconds: float = _num(600.0)
    # ...and only for an update with at most this many content words of its own ("it's
    # 4:30 PM now" has none): one that names its subject is judged by its own words.
    elliptical_words: int = _num(3)
    # ...and at most this many before its value ("They gave us until May 3" has one, "My
    # gym is open on Thursday" two: it names its subject). Higher lends subjects to
    # updates that name their own.
    elliptical_subject_words: int = _num(1)
    # ...and of at most this many words in all: an elliptical update is a short reply
    # ("Make that Greek.", "They gave us until May 3."); a longer sentence with few
    # content words ("Lake Tahoe gets crowded, so we book the campsite in January") tells
    # something of its own. Higher lends subjects to more of them.
    elliptical_max_words: int = _num(8)
    # An intro turn that names something ("Travel update for Boston.") has at most this
    # many words; a longer turn with a name states a fact of its own ("My GP is Dr.
    # Nguyen at the clinic") and lends no subject. Higher lends more, and more wrongly.
    intro_words: int = _num(5)
    # At recall, the newest version ranks above the turns said around its versions that
    # state nothing (an assistant's "Noted, your pay.", a user's "About my pay."): a
    # user's turn of at most this many words with no value. Higher lifts the newest
    # version over more of the small talk near it.
    echo_words: int = _num(8)
    recent_turns: int = _num(16, _POSITIVE)  # recent traces per namespace kept for context
    # score = max(similarity, context) + the bonuses below. A value of the same type
    # replaced (a city by a city) is the strongest evidence; a cue word is weak evidence
    # (incidental "actually"); each shared content word (up to 3) a little.
    same_type_bonus: float = _num(0.15)
    cue_bonus: float = _num(0.1)
    # ...and a word that says outright a value was replaced ("moved", "switched", "no
    # longer") this much more: "we moved to Lisbon" and "I live in Berlin" share few words.
    strong_cue_bonus: float = _num(0.05)
    shared_word_bonus: float = _num(0.03)
    # ...and this when both name one thing of the user's after "my" or "our" ("my new
    # usual is a cappuccino" after "my usual coffee order is a flat white"; the words
    # of one hold all of the other's). Higher links more changes told in few words, and
    # more of what two texts say of one thing that are no two values of it.
    possessed_bonus: float = _num(0.05)
    # At this score the older is marked "possibly outdated": it stays current but ranks
    # below the newer. Lower links more versions, and more look-alikes by mistake.
    outdate_score: float = _num(0.6)
    # At this score, with a same-type value change and a cue, the older is retired
    # (superseded); without a cue it is only outdated ("ran 5 km today" after "ran 3 km
    # today" is a second event). Higher retires less by mistake and leaves more to the
    # weak link.
    supersede_score: float = _num(0.85)
    # With no typed value changed (a cue and words of its own: "I changed my commute to
    # the bus"), the weak link needs this score; it never retires anything. With a cue
    # (+0.1) and no shared word it asks a cosine of 0.4, against 0.35 for a typed value
    # replaced (whose score holds `same_type_bonus`). A preference restated with no cue
    # ("my favourite food is falafel" after "... is dumplings") needs `outdate_score`.
    # Lower links more changes told in other words ("the way I eat is paleo now" after
    # "I follow a keto diet") and more incidental cues ("use Ethernet instead of Wi-Fi").
    # Knowledge-update tuning split, 0.65 / 0.6 / 0.55 / 0.5 / 0.45: current value first
    # 0.869 / 0.875 / 0.883 / 0.888 / 0.886; from 0.65 to 0.5, 31 more links, 4 of them
    # joining two different facts.
    cue_only_score: float = _num(0.5)
    # A value of one type replaced by another of that type (a city for a city, an amount
    # for an amount) in two texts at least this similar is a newer version even with no
    # change word: outdated, never retired ("ran 5 km" after "ran 3 km" may be a second
    # event, so nothing is hidden). Lower links more restated values, and more look-alikes.
    typed_similarity: float = _num(0.5, _UNIT)
    # Two amounts or counts more than this factor apart are two quantities (a monthly
    # rent and a yearly salary), never versions of one. Lower misses big changes (a
    # budget cut to a tenth); higher links unrelated sums.
    max_value_ratio: float = _num(10.0, _POSITIVE)
    # A newer version is a statement of at most this many words: longer chat turns
    # carry change words and names by the way (LoCoMo's false links were all longer).
    max_words: int = _num(25)
    # At recall, two top hits that state two values of one type for what the question
    # names (core/updates.py, answers_alike) are read as versions and the newer one is
    # placed first, when the two texts are at least this similar... Such a link only
    # reorders hits already in the top k (nothing enters or leaves it). Lower reorders
    # more look-alikes; higher leaves more stale values first.
    answer_similarity: float = _num(0.25, _UNIT)
    # ...and the newer one is at least this close to the question (its cosine): a hit
    # that barely speaks of what is asked is no answer to it.
    answer_relevance: float = _num(0.1, _UNIT)
    # ...and both are among this many best hits, whatever k is asked: a weak link like
    # this reorders the first hits only and never moves a hit across this rank (a k=50
    # recall's top 10 stays the top 10 it was). Higher reaches answers ranked lower, and
    # lets chat turns that share a word with the question displace better hits.
    answer_window: int = _num(10, _POSITIVE)
    # ...and, for a newer hit the write path linked to nothing placed above a hit it did
    # link (a chain whose newest version it chose), the newer one's cosine to that hit
    # plus its cosine to the question reach this: a later turn that shares a stray word
    # with the question ("Our cat sleeps on the radiator all day" for "What do I drive
    # to work every day?") is far from both. Lower lets more such turns take over a
    # chain; higher leaves more changes told in other words below the stale value.
    chain_answer_closeness: float = _num(0.5, _UNIT)
    # Two answers that share no word of the question ("the dish I like best is pho" and
    # "my favourite meal is pad thai") are versions when the newer says it changed and
    # the two texts are at least this similar... Lower joins more look-alikes (a diet
    # and a favourite food); higher leaves more changes told in other words behind.
    loose_similarity: float = _num(0.35, _UNIT)
    # ...and both are at least this close to the question.
    loose_relevance: float = _num(0.3, _UNIT)
    # Recall follows version links this many steps to the newest version (a step costs
    # one read of links and records, only when a candidate has versions).
    arbitration_hops: int = _num(6)
    # A new trace whose evidence points at a retired version ("It's Chloe Martin from
    # now" after the intro "About who I report to.", nearest the first "I report to
    # Omar") outdates the version that replaced it, found by following replacements at
    # most this many steps (one read each, only when a retired version is a candidate).
    # 0 links to current versions only; more reaches the head of longer chains.
    chain_hops: int = _num(6)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if not problems and self.outdate_score > self.supersede_score:
            problems.append("outdate_score must not exceed supersede_score")
        _raise(problems)


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """How recall ranks: relevance from two channels and the graph, blended with decay."""

    # final = alpha * relevance + (1 - alpha) * decay. The seed had 0.7; on LoCoMo (months of
    # dialogue, questions about old turns) the recency term then outweighs relevance
    # (benchmarks/results/locomo.md).
    alpha: float = _num(0.9, _UNIT)
    decay_floor: float = _num(0.05, _UNIT)  # below this decay score a memory is not returned...
    # ...unless it is a strong match (relevance or cosine >= this; 1.0 turns the bypass
    # off): a hard floor hides old but asked-for memories. The cosine alone counts because
    # a question told in other words than the memory ("When do I fly out?", "my flight
    # leaves Tuesday") has no lexical half, which halves its relevance. Lower brings back
    # more faded memories, and more that only look like the question.
    floor_bypass_relevance: float = _num(0.3, _UNIT)
    dense_weight: float = _num(0.5, _UNIT)  # relevance = w * dense + (1 - w) * lexical
    lexical_floor: float = _num(1.0)  # BM25 is divided by max(best BM25, this): weak stays weak
    # A question whose strong lexical matches (at least half the best BM25) are all far from
    # it in meaning matched words by accident: "taste as you go" for "How is my job hunt
    # going?", "Vietnam is lovely" for "What do I love to eat?" (one stem; in a small
    # namespace one such word is the best match, so it counts as a perfect one). Its
    # lexical half is scaled by how near the nearest of those matches is: nothing below
    # `lexical_trust_low` cosine, all of it from `lexical_trust_high`, linear between.
    # Knowledge-update tuning split, current value first 0.918 -> 0.924 (the same at
    # 0.15-0.30 and 0.25-0.40); LoCoMo's halves R@10 0.783 / 0.746 -> 0.781 / 0.746 (its
    # questions name people and things, whose matches are near in meaning). Higher leaves
    # more of recall to the embedding: LoCoMo's tuning half 0.776 at 0.3-0.5, 0.745 at
    # 0.4-0.6. 0 and 0 turn it off.
    lexical_trust_low: float = _num(0.2, _UNIT)
    lexical_trust_high: float = _num(0.35, _UNIT)
    candidate_pool: int = _num(50, _POSITIVE)  # candidates fetched from each channel (at least k)
    hop_decay: float = _num(0.3, _UNIT)  # relevance carried per graph hop
    max_hops: int = _num(1)
    expansion_seeds: int = _num(5)  # top fused hits whose neighbours are expanded
    # Conversation context: memories observed within `context_window_seconds` of one of the
    # `context_seeds` most relevant candidates gain context_weight * that seed's relevance
    # (summed over such seeds): the reply to a matching question is usually the answer.
    # 0 turns it off.
    context_weight: float = _num(0.1, _UNIT)
    context_window_seconds: float = _num(120.0)
    context_seeds: int = _num(20)
    # Applied when a turn is written: the answer to another speaker's question observed
    # within `context_window_seconds` before it is indexed by its own vector plus this
    # share of the question's (then normalised), so a later question in the words of the
    # one it answered finds it ("Yes, with the kids!" after "Did you go camping?"). Turns
    # that tell no speaker (a prefix or a role) are never mixed. On LoCoMo's tuning half,
    # R@10 0.773 without it, 0.780 / 0.783 / 0.780 at 0.3 / 0.5 / 0.8; mixing every turn
    # that follows another speaker's, question or not, gave 0.785 there but put the
    # current value of a changed fact in the top 3 less often (0.956 -> 0.951 on the
    # knowledge-update tuning split). Changing it re-indexes nothing already written.
    reply_context_weight: float = _num(0.5, _UNIT)
    # The turns written just before and after the best hit, within the context window
    # (`neighbour_turns` each way), close `neighbour_weight` of their relevance's distance
    # to the best hit's, matched by a channel or not: the answer is often the next turn of
    # the same speaker ("We celebrated my daughter's birthday with a concert" / "It was
    # Matt Patterson"), which shares no word with the question. Higher puts them above
    # more of the other matches (LoCoMo's tuning half, unbounded: R@10 0.757 / 0.762 /
    # 0.761 at 0.5 / 0.7 / 0.8; one turn each way: 0.740); 0 turns it off.
    neighbour_turns: int = _num(2)
    neighbour_weight: float = _num(0.7, _UNIT)
    # ...but below the `neighbour_below` best hits: a guess from position does not push a
    # match out of the top few (without it, the current value of a changed fact leaves
    # the top 3 more often: 0.946 -> 0.916 on the knowledge-update tuning split, when the
    # older version's neighbours ranked next to it). 0: no such bound.
    neighbour_below: int = _num(3)
    # A question that names a person ("What do Melanie's kids like?") is answered by what
    # that person said more often than by what others said to them: a memory whose speaker
    # prefix ("Melanie: ...") names someone the question names closes this share of its
    # score's distance to 1 (0.5 -> 0.7 at 0.4). More ranks the person's small talk above
    # others' words about the asked thing; 0 turns it off. Every bound that stops recall
    # reading records counts it, so a question naming someone reads a few more records.
    speaker_weight: float = _num(0.4, _UNIT)
    # A question that names a calendar date with its year ("on 7 July, 2023", "in December
    # 2023", core/time_refs.py) asks about what was observed then, and the turn that told
    # it says "yesterday", not the date. A candidate observed outside the named period,
    # widened each side by `period_slack` of its length and at least
    # `period_min_slack_days` (an event is told days after it), keeps (1 - period_weight)
    # of its relevance. Higher trusts the date over the words: a memory of the asked thing
    # observed long after the date falls further (LoCoMo's tuning half, the 99 questions
    # naming a date, R@10: 0.716 / 0.778 / 0.795 / 0.798 / 0.768 at 0 / 0.3 / 0.5 / 0.7 /
    # 0.9); 0 turns it off.
    period_weight: float = _num(0.5, _UNIT)
    period_min_slack_days: float = _num(3.0)
    period_slack: float = _num(0.25)
    # The largest k and token budget recall accepts: a larger k reads and ranks more
    # candidates per call (each one a record read), so a typo'd 10**9 is refused, not run.
    max_recall_k: int = _num(10_000, _POSITIVE)
    max_token_budget: int = _num(10_000_000, _POSITIVE)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if not problems and self.lexical_trust_low > self.lexical_trust_high:
            problems.append("lexical_trust_low must not exceed lexical_trust_high")
        _raise(problems)


@dataclass(frozen=True, slots=True)
class MaintenancePolicy:
    """The REM cycle (flag, cluster, synthesize), its triggers, eviction and GC."""

    consolidation_tau: float = _num(0.3, _UNIT)
    cluster_theta: float = _num(0.78, _UNIT)
    cluster_knn: int = _num(8, _POSITIVE)
    cluster_max_size: int = _num(12, _POSITIVE)
    # Clustering strategies (core/clustering.py), chosen on COCO caption groups for the best
    # B-cubed F1 with precision >= 0.8, since a wrong merge loses information and a missed one
    # only costs a node (benchmarks/results/clustering.md). The medoid guard is the knob that
    # matters; a shared entity links only neighbours this similar, as a lower bar costs
    # precision.
    cluster_entity_theta: float = _num(0.7, _UNIT)
    cluster_medoid_theta: float = _num(0.7, _UNIT)  # chaining guard: members this near the medoid
    # HDBSCAN has the best recall at precision >= 0.8 of the three strategies, but is an order
    # of magnitude slower than union-find.
    cluster_hdbscan_min_cluster_size: int = _num(2, _POSITIVE)
    cluster_hdbscan_min_samples: int = _num(1, _POSITIVE)
    cluster_pca_dims: int = _num(0)  # HDBSCAN on the top PCA components; 0 = the full space
    cluster_recomb_p: float = _num(0.0, _SIGNED)  # 0 Cambridge/Aachen, -1 anti-kt, 1 kt
    cluster_recomb_radius: float = _num(0.7, _POSITIVE)  # R in min(w_i^2p, w_j^2p) d_ij^2 / R^2
    cluster_recomb_cut: float = _num(0.35)  # cosine distance above which two points never merge
    cluster_recomb_weight_floor: float = _num(0.01, _POSITIVE)  # keeps w^2p finite for p < 0
    # The REM k-NN comes from the vector index (HNSW, ~log n per memory) instead of the exact
    # n^2 one when the index offers `neighbors`: cluster_knn * this many are asked per flagged
    # memory, since neighbours that are not flagged are dropped; 0 = always the exact k-NN.
    # x4 finds nearly all of the exact k-NN (benchmarks/results/clustering.md).
    cluster_neighbor_overfetch: int = _num(4)
    # ...but only from this many flagged memories: below it the k-NN searched by cells
    # (below) is far cheaper than one index query per memory: embedded Chroma answers
    # a neighbour query in about 0.7 ms at 10k, the cells search costs about 0.1 ms a
    # memory up to 100k (benchmarks/results/knn_speed.md). 0 = whenever the index
    # offers it.
    cluster_index_knn_min: int = _num(1_000_000)
    # From this many flagged memories (and without the index's neighbours) the k-NN is
    # searched by cells: about n / cluster_cell_size k-means centres, each memory listed
    # in the cluster_cell_probe cells nearest it and compared with the memories listed in
    # its own nearest cell: n * probe * cell size dot products instead of n^2. 0 = always
    # exact. More probes find more of the exact k-NN's links at proportionally more cost:
    # 24 find 99% of them at 50k and 98% at 100k on the synthetic memories of
    # benchmarks/results/knn_speed.md, in a quarter and an eighth of the exact time.
    cluster_cells_min: int = _num(20_000)
    cluster_cell_size: int = _num(300, _POSITIVE)
    cluster_cell_probe: int = _num(24, _POSITIVE)
    near_duplicate_similarity: float = _num(0.85, _UNIT)
    near_duplicate_trigger: int = _num(6)
    trigger_node_count: int = _num(5000)
    trigger_mean_importance: float = _num(0.45, _UNIT)
    trigger_contradiction_ratio: float = _num(0.08, _UNIT)
    trigger_idle_hours: float = _num(24.0)
    trigger_retrieval_window: int = _num(50, _POSITIVE)  # recent retrievals watched
    trigger_duplicate_sample: int = _num(20, _POSITIVE)  # newest memories checked for repeats
    evict_salience: float = _num(0.15, _UNIT)
    gc_salience: float = _num(0.01, _UNIT)
    # GC collects a consolidated or archived member once its synthesis has stood this long
    # (and the member's own salience fell below gc_salience): the synthesis then holds the
    # member's content and keeps only its id, sources, time and text hash. Longer keeps
    # fragments around to undo a bad consolidation with; shorter shrinks the store sooner.
    gc_member_grace_days: float = _num(30.0)
    # After a GC or forget deletes vectors, a namespace whose vector index keeps at least this
    # share of its slots for deleted vectors (embedded Chroma's HNSW files never reuse them) is
    # rebuilt from its live vectors, with no model call. Lower keeps the files nearer the live
    # size but rebuilds more often, each rebuild costing about an indexing of the live vectors
    # with the index's other calls held meanwhile; higher lets the files reach 1 / (1 - this)
    # times the live size. 0 rebuilds after any delete; 1 only a namespace emptied of vectors.
    index_compact_deleted_fraction: float = _num(0.5, _UNIT)
    hard_cap_per_namespace: int = _num(100_000)
    # the sweep distils decayed memories that share no meaning in time-ordered digests of at
    # most this many: an extractive digest's embedding blurs as it grows
    sweep_digest_size: int = _num(4, _POSITIVE)
    # The cycle commits this many clusters per store transaction where the store groups
    # writes (`BatchesWrites`, SQLite): the batch is atomic (so its clusters journal
    # nothing), the postings of words shared by many members are rewritten once per
    # batch, and one commit serves the batch. Higher is faster; other writers wait for a
    # whole batch, and a process killed mid-batch redoes that batch's clusters on resume.
    # At 100k memories a batch of 64 holds the file about 140 ms (32: 70 ms) and the cycle
    # takes about 5% less time than with 32. 1 = one at a time.
    commit_batch_clusters: int = _num(64, _POSITIVE)
    synthesis_max_workers: int = _num(4, _POSITIVE)  # concurrent LLM calls: a call is slow
    synthesis_retries: int = _num(2)  # re-asks after an unusable answer, before the fallback
    # The maintenance lease on a namespace (a cycle, a sweep): its holder renews it every third
    # of this while it works, so this is how long a holder that died on another machine
    # keeps maintenance waiting (one that died on this machine loses it at once). Shorter
    # frees a dead holder's namespace sooner; too short for the store's round trip loses
    # a slow but live holder's lease.
    consolidation_lock_seconds: float = _num(60.0)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if not problems:
            if self.gc_salience > self.evict_salience:
                problems.append("gc_salience must not exceed evict_salience")
            if not 0.0 <= self.cluster_recomb_cut <= 2.0:
                problems.append(
                    "cluster_recomb_cut is a cosine distance: it must be within [0, 2]"
                )
            if self.cluster_recomb_weight_floor > 1.0:
                problems.append("cluster_recomb_weight_floor must be within (0, 1]")
            if self.cluster_hdbscan_min_cluster_size < 2:
                problems.append("cluster_hdbscan_min_cluster_size must be >= 2")
        _raise(problems)


@dataclass(frozen=True, slots=True)
class BackgroundPolicy:
    """Work done behind the caller: access reinforcement and vector indexing."""

    # Recall's touch is written behind the caller by one worker thread; reads of a record wait
    # for its queued touches first (core/reinforcement.py).
    reinforce_async: bool = _num(True, _FLAG)  # False: recall writes its touch before returning
    reinforce_queue: int = _num(1024, _POSITIVE)  # a full queue makes recall touch inline
    reinforce_retries: int = _num(3)  # re-tries of a failed background touch before it is logged
    # The worker waits this long after a recall for more, then writes them together (one
    # transaction where the store can): a burst of recalls is not slowed by one write each. A
    # read that needs a queued touch, flush() and close() cut the wait short.
    reinforce_linger_seconds: float = _num(0.02)
    # The same wait on a networked record store (Redis), where each write costs round trips and
    # client CPU beside the next recall, so fewer, larger bursts pay; on SQLite a longer wait
    # is slower, hence two numbers.
    reinforce_linger_shared_seconds: float = _num(0.05)
    # Write-behind vector indexing (core/indexing.py): observe returns once its record is
    # committed; one thread writes the queued vectors in batches. The engine's own reads wait
    # for them; other processes find the memory lexically until its batch lands.
    index_async: bool = _num(True, _FLAG)  # False: observe writes its vectors before returning
    index_queue: int = _num(4096, _POSITIVE)  # queued vectors; a full queue makes observe wait
    index_retries: int = _num(3)  # re-tries of a failed background index write before it is logged
    # On open, count each namespace's records against its vectors, so records a killed
    # process left without vectors are flagged (`stats()["vector_repair_needed"]`) and
    # repaired by the next maintenance run. Costs two counts per namespace at open; off
    # for a store with very many namespaces that opens often.
    check_vectors_on_open: bool = _num(True, _FLAG)
    # When the counts on open say some records lack vectors, look again at those records
    # after this long: a live writer elsewhere commits a record a moment before its vector,
    # and only what is still missing then was left behind by a crash. Longer waits out
    # slower writers; it is paid only by an open that finds a gap.
    vectors_settle_seconds: float = _num(2.0)

    def __post_init__(self) -> None:
        _raise(_problems(self))


@dataclass(frozen=True, slots=True)
class DeadlinePolicy:
    """How long one call into a backend may take before it fails with a typed error
    (`BackendUnavailable`, or `StorageFull` when the index's disk filled), so a stuck
    server, a full disk or a lock held elsewhere never hangs the caller. Each bounds a
    single call (one SQL transaction's wait for the lock, one Redis command, one Chroma
    request or batch), not a whole engine method made of several."""

    # Opening a connection to a server (Redis, a Chroma server). Shorter reports a server
    # that is down or unreachable sooner; too short fails over a slow network.
    connect_seconds: float = _num(5.0, _POSITIVE)
    # One call into the record store: SQLite's busy timeout (waiting for another
    # process's write lock) and a Redis command's socket timeout. Shorter reports a
    # stopped server or a long-held lock sooner; too short fails a live but slow call
    # (a large batch on a loaded machine, a lock held by another process's long write).
    store_call_seconds: float = _num(10.0, _POSITIVE)
    # One call into the vector index: a Chroma server request's connect-and-read timeout,
    # and for embedded Chroma (which has no timeout of its own) the wait for a call run on
    # a worker thread. Longer lets a large batch (up to Chroma's batch size) finish on a
    # loaded machine; shorter gives up sooner on an index that no longer answers (after a
    # full disk, embedded Chroma can keep its own lock: then recall answers from the
    # lexical channel alone, and the index's other calls fail at once until it answers).
    index_call_seconds: float = _num(30.0, _POSITIVE)

    def __post_init__(self) -> None:
        _raise(_problems(self))


_GROUPS: dict[str, type] = {
    "decay": DecayPolicy,
    "importance": ImportancePolicy,
    "funnel": FunnelPolicy,
    "retrieval": RetrievalPolicy,
    "maintenance": MaintenancePolicy,
    "background": BackgroundPolicy,
    "updates": UpdatePolicy,
    "deadlines": DeadlinePolicy,
}
# flat field name -> its group
_FIELD_GROUP: dict[str, str] = {
    f.name: group for group, cls in _GROUPS.items() for f in dataclasses.fields(cls)
}
# names that left the policy, and where they went
_MOVED: dict[str, str] = {
    name: (
        "the shared tier's vector outbox is configured beside it: pass "
        "open_engine(..., outbox=OutboxSettings(...)) from reverie.integrations.redis.outbox"
    )
    for name in (
        "index_outbox", "index_outbox_batch", "index_outbox_lease_seconds",
        "index_outbox_linger_seconds", "index_outbox_wait_seconds",
    )
}
_MOVED["correction_similarity"] = (
    "free-text updates are judged by several signals, not one similarity: see "
    "Policy.updates (min_similarity, outdate_score, supersede_score)"
)


@dataclass(frozen=True, slots=True, init=False)
class Policy:
    """Every tunable number of the lifecycle, in eight named groups (see the module docstring)."""

    decay: DecayPolicy
    importance: ImportancePolicy
    funnel: FunnelPolicy
    retrieval: RetrievalPolicy
    maintenance: MaintenancePolicy
    background: BackgroundPolicy
    updates: UpdatePolicy
    deadlines: DeadlinePolicy

    groups: ClassVar[tuple[str, ...]] = tuple(_GROUPS)

    def __init__(
        self,
        *,
        decay: DecayPolicy | None = None,
        importance: ImportancePolicy | None = None,
        funnel: FunnelPolicy | None = None,
        retrieval: RetrievalPolicy | None = None,
        maintenance: MaintenancePolicy | None = None,
        background: BackgroundPolicy | None = None,
        updates: UpdatePolicy | None = None,
        deadlines: DeadlinePolicy | None = None,
        **fields: float | int | bool,
    ) -> None:
        given: dict[str, Any] = {
            "decay": decay, "importance": importance, "funnel": funnel,
            "retrieval": retrieval, "maintenance": maintenance, "background": background,
            "updates": updates, "deadlines": deadlines,
        }
        changes = _by_group(fields)
        for name, cls in _GROUPS.items():
            group: Any = given[name]
            if group is None:
                group = cls(**changes.get(name, {}))
            elif not isinstance(group, cls):
                raise InvalidPolicy(
                    f"invalid policy: {name} must be a {cls.__name__}, got {type(group).__name__}"
                )
            elif name in changes:
                group = dataclasses.replace(cast(Any, group), **changes[name])
            object.__setattr__(self, name, group)

    def replace(self, **changes: Any) -> Policy:
        """A copy with some numbers (flat names) or whole groups changed, validated anew."""
        groups: dict[str, Any] = {name: getattr(self, name) for name in _GROUPS}
        flat: dict[str, Any] = {}
        for name, value in changes.items():
            if name in _GROUPS:
                groups[name] = value
            else:
                flat[name] = value
        return Policy(**groups, **flat)

    def flat(self) -> dict[str, float | int | bool]:
        """Every number by its own name (for reports and command-line overrides)."""
        return {
            f.name: getattr(getattr(self, group), f.name)
            for group, cls in _GROUPS.items()
            for f in dataclasses.fields(cls)
        }


def _by_group(fields: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Route flat field names to their groups; an unknown name is an error naming the fix."""
    out: dict[str, dict[str, Any]] = {}
    unknown: list[str] = []
    for name, value in fields.items():
        group = _FIELD_GROUP.get(name)
        if group is None:
            unknown.append(
                f"{name} is no longer a policy number: {_MOVED[name]}" if name in _MOVED
                else f"{name} is not a policy number"
            )
        else:
            out.setdefault(group, {})[name] = value
    if unknown:
        raise InvalidPolicy("invalid policy: " + "; ".join(unknown))
    return out


DEFAULT_POLICY = Policy()
