"""The LlamaIndex face (extra `reverie[llamaindex]`): a memory block, a retriever and the ports.

`ReverieMemoryBlock` plugs long-term memory into `llama_index.core.memory.Memory`;
`ReverieRetriever` is a `BaseRetriever` over an engine; `LlamaIndexEmbedder` and
`LlamaIndexSynthesizer` turn a LlamaIndex embedding model and LLM into reverie's ports,
and `ReverieEmbedding` goes the other way. Names load on first use, so this package
imports without LlamaIndex installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.adapters.lazy import lazy_exports

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexSynthesizer",
    "ReverieEmbedding",
    "ReverieMemoryBlock",
    "ReverieRetriever",
    "hit_to_node",
]

if TYPE_CHECKING:  # mypy sees the real names; at run time they load on first use
    from reverie.adapters.llamaindex.memory import ReverieMemoryBlock
    from reverie.adapters.llamaindex.ports import (
        LlamaIndexEmbedder,
        LlamaIndexSynthesizer,
        ReverieEmbedding,
    )
    from reverie.adapters.llamaindex.retriever import ReverieRetriever, hit_to_node
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "LlamaIndexEmbedder": "ports",
            "LlamaIndexSynthesizer": "ports",
            "ReverieEmbedding": "ports",
            "ReverieMemoryBlock": "memory",
            "ReverieRetriever": "retriever",
            "hit_to_node": "retriever",
        },
    )
