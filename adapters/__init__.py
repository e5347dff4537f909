"""reverie.adapters: the driving side, one face per audience (CLI, LangChain, LangGraph, LlamaIndex)."""
