"""reverie.integrations: the driven side (SQLite, Chroma, embedders, token counting)."""
