"""The LangChain face (extra `reverie[langchain]`): a retriever, agent tools and the ports.

`ReverieRetriever` is a `BaseRetriever` over an engine; `memory_tools()` gives an agent
remember, recall and forget; `LangChainEmbedder` and `ChatModelSynthesizer` turn LangChain
`Embeddings` and chat models into reverie's embedder and LLM ports. The legacy
`BaseMemory` for old chains is `reverie.adapters.langchain.memory.ReverieMemory`
(extra `reverie[classic]`). Names load on first use, so this package imports without
LangChain installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.adapters.lazy import lazy_exports

__all__ = [
    "ChatModelSynthesizer",
    "LangChainEmbedder",
    "ReverieRetriever",
    "hit_metadata",
    "hit_to_document",
    "memory_tools",
]

if TYPE_CHECKING:  # mypy sees the real names; at run time they load on first use
    from reverie.adapters.langchain.ports import ChatModelSynthesizer, LangChainEmbedder
    from reverie.adapters.langchain.retriever import (
        ReverieRetriever,
        hit_metadata,
        hit_to_document,
    )
    from reverie.adapters.langchain.tools import memory_tools
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "ChatModelSynthesizer": "ports",
            "LangChainEmbedder": "ports",
            "ReverieRetriever": "retriever",
            "hit_metadata": "retriever",
            "hit_to_document": "retriever",
            "memory_tools": "tools",
        },
    )
