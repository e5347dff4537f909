"""LoCoMo through LlamaIndex: what a LlamaIndex user gains by switching memory blocks, and
what the adapter costs.

Same process, same data, same embedder (all-MiniLM-L6-v2, one `MemoEmbedder` shared by
every system; LlamaIndex gets it through `ReverieEmbedding`):
  llamaindex-vector-block - LlamaIndex's own `VectorMemoryBlock` over a `ChromaVectorStore`
                            on an embedded chromadb client (LlamaIndex's simple in-memory
                            store is refused by the block). Each turn is put as its own
                            message (one node per turn: the finest granularity the block
                            offers); its retrieved nodes are read off with a pass-through
                            node postprocessor, so the block's real `aget` path is measured.
  reverie (engine)        - `MemoryEngine.recall` directly.
  reverie (retriever)     - `ReverieRetriever.retrieve` (NodeWithScore), the same engine.
  reverie (memory block)  - `ReverieMemoryBlock`'s recall (`arecall`, what `aget` formats).
Adapter overhead: per question, the adapter call and the direct engine call alternate
(which goes first flips each question) and the medians are compared: the retriever
against `engine.recall`, the block's full `aget` (recall, packing, formatting) against
`engine.arecall` with the same budget. Nothing is reinforced, so every call sees the
same store.

Run: python benchmarks/locomo_llamaindex.py [--conversations N] [--out benchmarks/results]
Writes locomo_llamaindex.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MemoEmbedder
from locomo_data import DATA, KS, ROOT, Scores, load

from reverie.core.policy import DEFAULT_POLICY

K = max(KS)
BLOCK_BUDGET = 1_000_000  # the block's token limit here: no memory cut, recall@50 comparable


def timed(times: dict[str, list[float]], name: str, fn: Callable[[], Any]) -> Any:
    t = time.perf_counter()
    out = fn()
    times.setdefault(name, []).append(time.perf_counter() - t)
    return out


class _Replay:
    """Stands in for the engine to time what an adapter adds: it answers every recall
    with one precomputed result, instantly."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.token_counter = object()  # the block then asks the engine to pack (it did)
        self.policy = DEFAULT_POLICY

    def recall(self, *args: Any, **kwargs: Any) -> Any:
        return self.result

    async def arecall(self, *args: Any, **kwargs: Any) -> Any:
        return self.result


def _wrapped(text: str) -> str:
    """The text VectorMemoryBlock stores for one user message (see its `_aput`)."""
    return f"<message role='user'>{text}</message>"


def run(n_conversations: int | None, out_dir: Path) -> dict[str, Any]:
    import chromadb
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory.memory_blocks import VectorMemoryBlock
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from reverie.adapters.llamaindex.memory import ReverieMemoryBlock
    from reverie.adapters.llamaindex.ports import ReverieEmbedding
    from reverie.adapters.llamaindex.retriever import ReverieRetriever
    from reverie.core import ManualClock
    from reverie.core.engine import Observation
    from reverie.integrations import open_engine
    from reverie.integrations.embedders import LocalEmbedder

    class Capture(BaseNodePostprocessor):
        """Pass-through: remembers the nodes the block retrieved, changes nothing."""

        seen: ClassVar[list[NodeWithScore]] = []

        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            Capture.seen = list(nodes)
            return nodes

    convs = load(DATA)[: n_conversations or None]
    embedder = MemoEmbedder(LocalEmbedder())
    li_embed = ReverieEmbedding(embedder)
    systems = [
        "llamaindex-vector-block",
        "reverie (engine)",
        "reverie (retriever)",
        "reverie (memory block)",
    ]
    scores = {s: Scores() for s in systems}
    times: dict[str, list[float]] = {}
    same_as_engine = {"retriever": 0, "block": 0}
    questions_total = 0
    turns_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        engine = open_engine(Path(tmp) / "reverie", embedder=embedder, clock=clock)
        client = chromadb.PersistentClient(path=str(Path(tmp) / "llamaindex-chroma"))
        loop = asyncio.new_event_loop()
        try:
            for n, (sample, turns, questions) in enumerate(convs, 1):
                ns = f"locomo/{sample}"
                clock.set(turns[-1].at)
                engine.observe_many(
                    [Observation(t.text, source=t.dia_id, at=t.at) for t in turns],
                    namespace=ns,
                )
                clock.set(turns[-1].at + timedelta(hours=1))
                turns_total += len(turns)
                questions_total += len(questions)

                # LlamaIndex's block: one node per turn, the turn id as its session id
                collection = client.create_collection(
                    f"li-{sample}".replace("_", "-"), metadata={"hnsw:space": "cosine"}
                )
                capture = Capture()
                vblock = VectorMemoryBlock(
                    vector_store=ChromaVectorStore(chroma_collection=collection),
                    embed_model=li_embed,
                    similarity_top_k=K,
                    node_postprocessors=[capture],
                )
                embedder.warm([_wrapped(t.text) for t in turns])  # batch, outside the timing
                embedder.warm([q.text for q in questions])
                for t in turns:
                    loop.run_until_complete(
                        vblock.aput([ChatMessage(role="user", content=t.text)],
                                    session_id=t.dia_id)
                    )

                retriever = ReverieRetriever(engine, namespace=ns, k=K, reinforce=False)
                rblock = ReverieMemoryBlock(
                    engine=engine, namespace=ns, k=K, token_limit=BLOCK_BUDGET,
                    reinforce=False, retrieval_context_window=1,
                )
                budget = BLOCK_BUDGET - len(rblock.tokenizer_fn(rblock.header)) - 1
                for qi, q in enumerate(questions):
                    messages = [ChatMessage(role="user", content=q.text)]
                    # LlamaIndex baseline through its real aget
                    timed(times, "vector_block.aget",
                          lambda vb=vblock, m=messages: loop.run_until_complete(vb.aget(m)))
                    scores["llamaindex-vector-block"].add(
                        q, [frozenset({n.node.metadata["session_id"]}) for n in capture.seen]
                    )

                    # sync: retriever vs engine, alternating which goes first
                    pair = [
                        ("engine.recall", lambda q=q, ns=ns: engine.recall(
                            q.text, namespace=ns, k=K, reinforce=False)),
                        ("retriever.retrieve", lambda q=q, r=retriever: r.retrieve(q.text)),
                    ]
                    out = {name: timed(times, name, fn) for name, fn in pair[:: -1 if qi % 2
                                                                             else 1]}
                    res, nodes = out["engine.recall"], out["retriever.retrieve"]
                    scores["reverie (engine)"].add(q, [h.memory.sources for h in res])
                    scores["reverie (retriever)"].add(
                        q, [frozenset(nd.node.metadata["sources"]) for nd in nodes]
                    )
                    same_as_engine["retriever"] += [nd.node.id_ for nd in nodes] == [
                        h.id for h in res
                    ]
                    # the adapter's own work, without the engine: the same result replayed
                    replay = ReverieRetriever(engine, k=K)  # checked against a real engine,
                    replay.engine = _Replay(res)  # type: ignore[assignment]  # then stood in for
                    timed(times, "retriever adapter work", lambda rp=replay, q=q: rp.retrieve(
                        q.text))

                    # async: the block's full aget vs engine.arecall with the same budget
                    apair = [
                        ("engine.arecall", lambda q=q, ns=ns, b=budget: engine.arecall(
                            q.text, namespace=ns, k=K, token_budget=b, reinforce=False)),
                        ("block.aget", lambda m=messages, rb=rblock: rb.aget(m)),
                    ]
                    for name, fn in apair[:: -1 if qi % 2 else 1]:
                        timed(times, name, lambda fn=fn: loop.run_until_complete(fn()))
                    packed = loop.run_until_complete(rblock.arecall(messages))
                    assert packed is not None
                    scores["reverie (memory block)"].add(q, [h.memory.sources for h in packed])
                    same_as_engine["block"] += [h.id for h in packed] == [h.id for h in res]
                    rb_replay = ReverieMemoryBlock.model_construct(
                        engine=_Replay(packed), k=K, token_limit=BLOCK_BUDGET,
                        retrieval_context_window=1, reinforce=False,
                    )
                    timed(times, "block adapter work",
                          lambda rb=rb_replay, m=messages: loop.run_until_complete(rb.aget(m)))
                print(f"[{n}/{len(convs)}] {sample}: {len(turns)} turns, "
                      f"{len(questions)} questions", file=sys.stderr)
        finally:
            loop.close()
            engine.close()

    med = {name: 1000 * float(np.median(v)) for name, v in times.items()}
    mean = {name: 1000 * float(np.mean(v)) for name, v in times.items()}
    result = {
        "conversations": len(convs),
        "turns": turns_total,
        "questions": questions_total,
        "k": K,
        "tables": {s: scores[s].table() for s in systems},
        "latency_ms_median": med,
        "latency_ms_mean": mean,
        "overhead": {
            "retriever_vs_engine_median": med["retriever.retrieve"] / med["engine.recall"] - 1,
            "block_vs_engine_median": med["block.aget"] / med["engine.arecall"] - 1,
            "retriever_vs_engine_mean": mean["retriever.retrieve"] / mean["engine.recall"] - 1,
            "block_vs_engine_mean": mean["block.aget"] / mean["engine.arecall"] - 1,
            "retriever_own_work_vs_engine_median": med["retriever adapter work"]
            / med["engine.recall"],
            "block_own_work_vs_engine_median": med["block adapter work"] / med["engine.arecall"],
        },
        "identical_rankings": {k: v / questions_total for k, v in same_as_engine.items()},
        "machine": "2 cores, CPU only",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "locomo_llamaindex.json").write_text(json.dumps(result, indent=2))
    text = render(result)
    (out_dir / "locomo_llamaindex.md").write_text(text)
    print(text)
    return result


def render(r: dict[str, Any]) -> str:
    o = r["overhead"]
    med, mean = r["latency_ms_median"], r["latency_ms_mean"]
    lines = [
        f"# LoCoMo through LlamaIndex, {r['machine']}",
        "",
        f"{r['conversations']} conversations, {r['turns']} turns, {r['questions']} questions "
        "(categories 1-4 with evidence). One process, one embedder (all-MiniLM-L6-v2) for "
        "every system. `benchmarks/locomo_llamaindex.py` says how each system is driven.",
        "",
        "## Recall (overall)",
        "",
        "| system | " + " | ".join(f"R@{k}" for k in KS) + " | "
        + " | ".join(f"all@{k}" for k in KS) + " |",
        "|---" * (1 + 2 * len(KS)) + "|",
    ]
    for name, table in r["tables"].items():
        row = table["overall"]
        lines.append(
            f"| {name} | " + " | ".join(f"{row[f'recall@{k}']:.3f}" for k in KS) + " | "
            + " | ".join(f"{row[f'all@{k}']:.3f}" for k in KS) + " |"
        )
    cats = [c for c in next(iter(r["tables"].values())) if c != "overall"]
    lines += ["", "## recall@10 / all@10 per category", "",
              "| system | " + " | ".join(cats) + " |", "|---" * (1 + len(cats)) + "|"]
    for name, table in r["tables"].items():
        lines.append(f"| {name} | " + " | ".join(
            f"{table[c]['recall@10']:.3f} / {table[c]['all@10']:.3f}" for c in cats) + " |")
    lines += [
        "",
        f"## Latency per question (k={r['k']}) and adapter overhead",
        "",
        "| call | median ms | mean ms |",
        "|---|---|---|",
        *(f"| {name} | {med[name]:.1f} | {mean[name]:.1f} |" for name in med),
        "",
        "Target: an adapter at most 10% slower than the engine directly.",
        "",
        "- `ReverieRetriever.retrieve` vs `engine.recall` (end to end, alternating): "
        f"{100 * o['retriever_vs_engine_median']:+.1f}% (median), "
        f"{100 * o['retriever_vs_engine_mean']:+.1f}% (mean).",
        "- `ReverieMemoryBlock.aget` vs `engine.arecall`, same budget (end to end, alternating): "
        f"{100 * o['block_vs_engine_median']:+.1f}% (median), "
        f"{100 * o['block_vs_engine_mean']:+.1f}% (mean).",
        "- The adapters' own work (the same call with the engine replaced by a stand-in that "
        "returns the engine's result instantly; isolates the adapter from the machine's noise): "
        f"retriever {100 * o['retriever_own_work_vs_engine_median']:.1f}% of the engine's "
        f"median recall, block {100 * o['block_own_work_vs_engine_median']:.1f}%.",
        "- Same ranking as the engine: retriever "
        f"{100 * r['identical_rankings']['retriever']:.1f}% of questions, block "
        f"{100 * r['identical_rankings']['block']:.1f}%.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    run(args.conversations, args.out)


if __name__ == "__main__":
    main()
