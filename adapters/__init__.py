"""reverie.adapters: the driving side, one face per audience.

The CLI (`reverie`), and the LangChain, LangGraph and LlamaIndex faces, each an optional extra.
"""
