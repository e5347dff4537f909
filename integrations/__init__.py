"""reverie.integrations: the driven side (SQLite, Redis, Chroma, embedders, LLMs, tokens).

`open_engine()` opens the embedded default; backends are imported lazily so that
importing this package needs nothing beyond reverie's base dependencies.
"""

from reverie.integrations.factory import default_data_dir, open_engine

__all__ = ["default_data_dir", "open_engine"]
