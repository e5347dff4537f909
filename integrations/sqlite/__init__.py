"""The embedded default record store: one SQLite file."""

from reverie.integrations.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
