"""The vector tier on Chroma: embedded (a directory) or a Chroma server (a URL).

`ChromaIndex` (`chroma.index`) is the index; `chroma.collections` maps namespaces to
collections, `chroma.checks` checks what is written, `chroma.embeddings` reads stored
vectors, `chroma.hnsw` holds the HNSW parameters and `chroma.http` the lean query transport.
"""

from reverie.integrations.chroma.index import ChromaIndex

__all__ = ["ChromaIndex"]
