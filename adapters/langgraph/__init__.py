"""The LangGraph face (extra `reverie[langgraph]`): `ReverieStore`, a `BaseStore` on an engine.

Pass it as `create_agent(..., store=ReverieStore(engine))` and the agent's long-term items
get decay, supersession and consolidation. The name loads on first use, so this package
imports without LangGraph installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.adapters.lazy import lazy_exports

__all__ = ["ReverieStore"]

if TYPE_CHECKING:  # mypy sees the real names; at run time they load on first use
    from reverie.adapters.langgraph.store import ReverieStore
else:
    __getattr__, __dir__ = lazy_exports(__name__, {"ReverieStore": "store"})
