"""The embedded default record store: one SQLite file (`SQLiteStore`, in `sqlite.store`)."""

from reverie.integrations.sqlite.store import SCHEMA_VERSION, SQLiteStore

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]
