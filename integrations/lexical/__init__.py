"""BM25 as both record stores score it: the constants and the in-process mirror."""
