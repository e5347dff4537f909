"""The one policy object: every tunable number of the lifecycle, with the seed defaults.

Nothing else in reverie hard-codes a number that changes behaviour; change it here
(`Policy(alpha=0.8)` or `policy.replace(...)`) and every component follows. The
object validates itself on construction so a bad number fails at start-up, not
months later inside a consolidation run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidPolicy

_SIGNED_FIELDS = frozenset({"cluster_recomb_p"})  # the only numbers allowed below zero
_FLAG_FIELDS = frozenset({"reinforce_async", "index_async", "index_outbox"})  # the switches (bool)


@dataclass(frozen=True, slots=True)
class Policy:
    # --- decay: S(t) = S0 * exp(-lambda * days since last access), lambda = ln2 / half-life
    half_life_episodic_days: float = 14.0
    half_life_semantic_days: float = 90.0
    half_life_procedural_days: float = 180.0
    high_importance: float = 0.8  # importance above this slows decay...
    high_importance_lambda_factor: float = 0.3  # ...to 0.3 lambda
    low_importance: float = 0.3  # importance below this speeds decay...
    low_importance_lambda_factor: float = 2.0  # ...to 2 lambda
    access_window: int = 32  # recent access times kept per memory

    # --- importance blend (weights sum to 1)
    weight_recency: float = 0.25
    weight_frequency: float = 0.20
    weight_centrality: float = 0.35
    weight_confidence: float = 0.20
    recency_rate_per_day: float = 0.02  # recency = exp(-0.02 * days since last access)
    frequency_window_days: float = 30.0
    frequency_saturation: int = 10  # accesses in the window that count as "maximal"
    centrality_saturation: int = 10  # edges that count as "maximal" degree

    # --- initial importance heuristic (write path, no LLM)
    base_importance: float = 0.5
    instruction_boost: float = 0.2
    entity_boost: float = 0.1
    date_boost: float = 0.1
    number_boost: float = 0.05
    filler_penalty: float = 0.3

    # --- funnel
    initial_confidence_trace: float = 0.5
    initial_confidence_unit: float = 0.6
    confidence_step: float = 0.15  # per further independent source
    confidence_cap: float = 0.95
    crystal_min_sources: int = 3
    crystal_min_importance: float = 0.3  # filler said 3 times ("ok thanks") stays a trace
    crystal_confidence: float = 0.90
    crystal_importance: float = 0.80
    correction_similarity: float = 0.55  # a correction supersedes a trace at least this similar
    entity_link_limit: int = 3  # entity edges to the most recent memories sharing an entity
    max_text_chars: int = 8000
    extraction_batch_size: int = 8  # traces per LLM call of the fact extractor (off the hot path)

    # --- retrieval
    # final = alpha * relevance + (1 - alpha) * decay. The seed had 0.7; on LoCoMo (months
    # of dialogue, questions about old turns) the recency term then outweighs relevance:
    # recall@10 0.616 at 0.8 and 0.626 at 0.9 (benchmarks/results/locomo.md).
    alpha: float = 0.9
    decay_floor: float = 0.05  # below this decay score a memory is not returned...
    # ...unless it is a strong match (relevance >= this; 1.0 turns the bypass off). A hard
    # floor hid old but asked-for memories: LoCoMo recall@10 0.257 (seed) vs 0.631 (these).
    floor_bypass_relevance: float = 0.3
    dense_weight: float = 0.5  # relevance = dense_weight * dense + (1 - dense_weight) * lexical
    lexical_floor: float = 1.0  # BM25 is divided by max(best BM25, this): weak matches stay weak
    candidate_pool: int = 50  # candidates fetched from each channel (at least k)
    hop_decay: float = 0.3  # relevance carried per graph hop (0.3 beat 0.5 on LoCoMo)
    max_hops: int = 1
    expansion_seeds: int = 5  # top fused hits whose neighbours are expanded
    # Conversation context: memories observed within `context_window_seconds` of one of the
    # `context_seeds` most relevant candidates gain context_weight * that seed's relevance
    # (summed over such seeds): the reply to a matching question is usually the answer.
    # LoCoMo recall@10 0.630 -> 0.675 at 0.1 / 120 s (benchmarks/results/locomo.md); 0 = off.
    context_weight: float = 0.1
    context_window_seconds: float = 120.0
    context_seeds: int = 20

    # --- consolidation (REM) and eviction; used by the maintenance cycle
    consolidation_tau: float = 0.3
    cluster_theta: float = 0.78
    cluster_knn: int = 8
    cluster_max_size: int = 12
    # clustering strategies (core/clustering.py). Defaults measured on COCO caption groups
    # (benchmarks/results/clustering.md): best B-cubed F1 with precision >= 0.8, since a wrong
    # merge loses information and a missed one only costs a node. The medoid guard is the knob
    # that matters: theta 0.6-0.82 all give F1 0.559-0.565 at medoid 0.7 (0.78 kept, 0.74 is
    # 0.001 better); with no guard theta 0.78 gives P 0.867 R 0.354, theta 0.6 P 0.41.
    # Entity links: with a 0.6 bar they cost precision (P 0.80 -> 0.66 at medoid 0.6); at 0.7
    # they add a little recall (R 0.429 -> 0.435) at the same precision.
    cluster_entity_theta: float = 0.7  # a shared entity links k-NN neighbours this similar
    cluster_medoid_theta: float = 0.7  # chaining guard: members this similar to the medoid
    # HDBSCAN 2/1 on the full space: P 0.832 R 0.477, the best recall at P >= 0.8 of the three,
    # but 10x slower than union-find at 10k points
    cluster_hdbscan_min_cluster_size: int = 2
    cluster_hdbscan_min_samples: int = 1
    cluster_pca_dims: int = 0  # HDBSCAN on the top PCA components; 0 = the full space (32: worse)
    # recombination p 0, R 0.7: P 0.838 R 0.397 (anti-kt p -1 at R 0.75: P 0.789 R 0.431)
    cluster_recomb_p: float = 0.0  # 0 Cambridge/Aachen, -1 anti-kt, 1 kt (may be negative)
    cluster_recomb_radius: float = 0.7  # R in d_ij = min(w_i^2p, w_j^2p) dist_ij^2 / R^2
    cluster_recomb_cut: float = 0.35  # cosine distance above which two points never merge
    cluster_recomb_weight_floor: float = 0.01  # importance floor so w^2p stays finite for p<0
    # REM k-NN from the vector index (HNSW, ~log n per memory) instead of the exact n^2 one,
    # when the index offers `neighbors`: cluster_knn * this many are asked per flagged memory,
    # since neighbours that are not flagged are dropped; 0 = always the exact k-NN. x4 found
    # 99.5 % of the exact k-NN with half the COCO set flagged, x2 92.9 %, x1 67.5 %, and the
    # B-cubed scores equal the exact path's (benchmarks/results/clustering_hnsw.md).
    cluster_neighbor_overfetch: int = 4
    # ... but only from this many flagged memories. Through Chroma (ef_search 200) a query
    # costs ~5 ms on this machine: exact vs HNSW 9.1 vs 50 s at 10k, 139 vs 268 s at 50k
    # (benchmarks/results/knn_speed.md); HNSW grows ~n^1.04, exact ~n^1.70, so they cross
    # near 135k by extrapolation (not measured). 0 = whenever the index offers it.
    cluster_index_knn_min: int = 135_000
    near_duplicate_similarity: float = 0.85
    near_duplicate_trigger: int = 6
    trigger_node_count: int = 5000
    trigger_mean_importance: float = 0.45
    trigger_contradiction_ratio: float = 0.08
    trigger_idle_hours: float = 24.0
    evict_salience: float = 0.15
    gc_salience: float = 0.01
    hard_cap_per_namespace: int = 100_000
    # the sweep distils decayed memories that share no meaning in time-ordered digests of
    # at most this many: an extractive digest's embedding blurs as it grows
    sweep_digest_size: int = 4
    # --- the REM cycle's own machinery (core/consolidation.py)
    synthesis_max_workers: int = 4  # concurrent LLM calls; an LLM call is slow, 200 clusters
    synthesis_retries: int = 2  # re-asks after an unusable answer, before the extractive fallback
    consolidation_lock_seconds: float = 900.0  # lease on the namespace during a cycle
    trigger_retrieval_window: int = 50  # recent top-k retrievals whose mean importance is watched
    trigger_duplicate_sample: int = 20  # newest memories checked for near-duplicates
    # --- access reinforcement (core/reinforcement.py): recall's touch is written behind the
    # caller by one worker thread; reads of a record wait for its queued touches first
    reinforce_async: bool = True  # False: recall writes its touch before returning
    reinforce_queue: int = 1024  # queued touches; a full queue makes recall touch inline
    reinforce_retries: int = 3  # re-tries of a failed background touch before it is logged
    # the worker waits this long after a recall for more, then writes them together (one
    # transaction where the store can): a burst of recalls is not slowed by one write each.
    # A read that needs a queued touch, flush() and close() cut the wait short.
    reinforce_linger_seconds: float = 0.02
    # the same wait on a networked record store (Redis: `remote` stores), where each write
    # costs round trips and client CPU beside the next recall, so fewer, larger bursts pay:
    # back-to-back recall at 10k 8.95 ms at 0.05 s against 10.06 at 0.02 in one
    # interleaved run (9.72 vs 11.17 at 0.1 in another); on SQLite 0.1 was slower (7.65 vs
    # 6.47 ms), hence two numbers
    reinforce_linger_shared_seconds: float = 0.05
    # --- write-behind vector indexing (core/indexing.py): observe returns once its record
    # is committed; one thread writes the queued vectors in batches. The engine's own reads
    # wait for them; other processes find the memory lexically until its batch lands
    index_async: bool = True  # False: observe writes its vectors before returning
    index_queue: int = 4096  # vectors queued at most; a full queue makes observe wait
    index_retries: int = 3  # re-tries of a failed background index write before it is logged
    # --- the shared tier's vector outbox (integrations/redis/outbox.py): with a Redis
    # store and a Chroma server, every worker's vector writes to a namespace queue in
    # Redis and whichever worker holds the namespace's drain lease writes them all in one
    # call, so N workers make one stream of large upserts instead of N of small ones
    index_outbox: bool = True  # False: each worker writes its own vectors to the server
    index_outbox_batch: int = 512  # queued writes applied in one drain call at most
    index_outbox_lease_seconds: float = 10.0  # a dead drainer's lease frees after this
    # a drainer that finds other workers' writes queued (they are writing too) waits this
    # long for more before it writes, so busy workers share fewer, larger upserts; a lone
    # writer never waits
    index_outbox_linger_seconds: float = 0.02
    index_outbox_wait_seconds: float = 120.0  # a writer waits this long for a drain, then
    # raises BackendUnavailable (the engine retries, then flags the index for repair)

    def __post_init__(self) -> None:
        problems: list[str] = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in _FLAG_FIELDS:
                if not isinstance(v, bool):
                    problems.append(f"{f.name} must be True or False, got {v!r}")
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                problems.append(f"{f.name} must be a finite number, got {v!r}")
            elif v < 0 and f.name not in _SIGNED_FIELDS:
                problems.append(f"{f.name} must be >= 0, got {v!r}")
            elif f.type == "int" and not isinstance(v, int):
                problems.append(f"{f.name} must be a whole number, got {v!r}")
        unit_interval = [
            "high_importance", "low_importance", "weight_recency", "weight_frequency",
            "weight_centrality", "weight_confidence", "base_importance", "initial_confidence_trace",
            "initial_confidence_unit", "confidence_cap", "crystal_confidence", "crystal_importance",
            "crystal_min_importance",
            "correction_similarity", "alpha", "decay_floor", "floor_bypass_relevance",
            "dense_weight", "hop_decay", "context_weight",
            "consolidation_tau", "cluster_theta", "near_duplicate_similarity",
            "cluster_entity_theta", "cluster_medoid_theta", "cluster_recomb_weight_floor",
            "trigger_mean_importance", "trigger_contradiction_ratio", "evict_salience",
            "gc_salience",
        ]
        for name in unit_interval:
            v = getattr(self, name)
            if isinstance(v, int | float) and not 0.0 <= v <= 1.0:
                problems.append(f"{name} must be within [0, 1], got {v!r}")
        for name in [
            "half_life_episodic_days", "half_life_semantic_days", "half_life_procedural_days",
            "access_window", "frequency_window_days", "frequency_saturation",
            "centrality_saturation", "crystal_min_sources", "max_text_chars", "candidate_pool",
            "extraction_batch_size",
            "cluster_knn", "cluster_max_size", "cluster_hdbscan_min_cluster_size",
            "cluster_hdbscan_min_samples", "cluster_recomb_radius", "cluster_recomb_weight_floor",
            "synthesis_max_workers", "trigger_retrieval_window", "trigger_duplicate_sample",
            "sweep_digest_size", "reinforce_queue", "index_queue", "index_outbox_batch",
            "index_outbox_lease_seconds", "index_outbox_wait_seconds",
        ]:
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be > 0")
        weights = (
            self.weight_recency + self.weight_frequency + self.weight_centrality
            + self.weight_confidence
        )
        if abs(weights - 1.0) > 1e-9:
            problems.append(f"importance weights must sum to 1, they sum to {weights:.6f}")
        if self.low_importance > self.high_importance:
            problems.append("low_importance must not exceed high_importance")
        if self.gc_salience > self.evict_salience:
            problems.append("gc_salience must not exceed evict_salience")
        if not 0.0 <= self.cluster_recomb_cut <= 2.0:
            problems.append("cluster_recomb_cut is a cosine distance: it must be within [0, 2]")
        if self.cluster_hdbscan_min_cluster_size < 2:
            problems.append("cluster_hdbscan_min_cluster_size must be >= 2")
        if problems:
            raise InvalidPolicy("invalid policy: " + "; ".join(problems))

    def replace(self, **changes: Any) -> Policy:
        """A copy with some numbers changed, validated like a new policy."""
        return dataclasses.replace(self, **changes)


DEFAULT_POLICY = Policy()
