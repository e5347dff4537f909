"""The vector tier on Chroma: embedded (a directory) or a Chroma server (a URL)."""

from reverie.integrations.chroma.index import ChromaIndex

__all__ = ["ChromaIndex"]
