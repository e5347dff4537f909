"""reverie.adapters: the driving side (CLI now; LangChain, LangGraph, LlamaIndex later)."""
